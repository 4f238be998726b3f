/* fuzz_conf.c - iostage.conf (common/config/conf.c), read by every program: the
 * plugin inside slurmd and sbatch, the Prolog, iostaged, iostagectld. */
#include "tests/fuzz/fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char err[CONF_ERR_MAX], *text = fuzz_str(data, size), names[512];
	static struct conf conf;

	log_init("fuzz", false, LOG_LEVEL_ERROR);
	conf_set_defaults(&conf);
	if (conf_parse(text, "fuzz.conf", &conf, err, sizeof(err)) == 0) {
		conf_tier_names(&conf, names, sizeof(names));
		for (size_t i = 0; i < conf.ntiers; i++)
			if (conf_find_tier(&conf, conf.tiers[i].name) !=
			    &conf.tiers[i])
				abort();
	} else if (!err[0]) {
		abort(); /* a refusal always says why */
	}
	free(text);
	return 0;
}
