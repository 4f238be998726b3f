/* fuzz_conf.c - iostage.conf (common/config/conf*.c), read by every program:
 * the plugin inside slurmd and sbatch, the Prolog, iostaged, iostagectld.
 * A file that parses is also written back (conf_dump, --check-config -v)
 * and must read back to the same text: what the key table's formatters
 * write, its parsers take. */
#include "tests/fuzz/fuzz.h"

/* CONF as conf_dump writes it (the caller frees), or NULL. */
static char *dump(const struct conf *conf)
{
	char *out = NULL;
	size_t outlen = 0;
	FILE *f = open_memstream(&out, &outlen);

	if (!f)
		return NULL;
	if (conf_dump(conf, CONF_SCOPE_ALL, f) < 0)
		abort(); /* a memory stream does not fail */
	fclose(f);
	return out;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char err[CONF_ERR_MAX], *text = fuzz_str(data, size), names[512];
	char *once, *twice;
	static struct conf conf, back;

	log_init("fuzz", false, LOG_LEVEL_ERROR);
	conf_set_defaults(&conf);
	if (conf_parse(text, "fuzz.conf", &conf, err, sizeof(err)) == 0) {
		conf_tier_names(&conf, names, sizeof(names));
		for (size_t i = 0; i < conf.ntiers; i++)
			if (conf_find_tier(&conf, conf.tiers[i].name) !=
			    &conf.tiers[i])
				abort();
		once = dump(&conf);
		if (once) {
			if (conf_parse(once, "dump", &back, err, sizeof(err)) <
			    0)
				abort(); /* a dump that does not read back */
			twice = dump(&back);
			if (twice && strcmp(once, twice) != 0)
				abort(); /* nor to the same settings */
			free(twice);
		}
		free(once);
	} else if (!err[0]) {
		abort(); /* a refusal always says why */
	}
	free(text);
	return 0;
}
