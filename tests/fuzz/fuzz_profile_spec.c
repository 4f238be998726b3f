/* fuzz_profile_spec.c - the --io-profile SPEC
 * (common/config/profile_spec.c): a site profile's name or a file, then
 * overrides ("dl-train,tier=nvme,..."), as sbatch's plugin parses it at
 * submit. The site profiles are the source
 * tree's slurm-conf/profiles/. */
#include "tests/fuzz/fuzz.h"

#include "common/config/profile.h"

static struct conf conf;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	fuzz_conf(&conf);
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char err[CONF_ERR_MAX], *spec = fuzz_str(data, size), *json;
	struct profile *p;

	p = profile_from_spec(spec, &conf, err, sizeof(err));
	free(spec);
	if (!p)
		return 0;
	if (profile_normalize(p, &conf, err, sizeof(err)) == 0 &&
	    profile_validate(p, &conf, PROFILE_CHECK_STRUCTURE, err,
			     sizeof(err)) == 0) {
		json = profile_to_json(p);
		if (!json)
			abort();
		free(json);
	}
	profile_destroy(p);
	return 0;
}
