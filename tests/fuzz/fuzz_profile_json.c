/* fuzz_profile_json.c - profile JSON (common/config/profile_json.c): a user's
 * --io-profile=FILE.json, a site profile, the "profile" of a stage request
 * and of a reloaded job state file. A profile that parses, normalizes and
 * validates must print to JSON that parses back to the same JSON (the
 * daemon stores that form and reloads it after a restart). */
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
	char err[CONF_ERR_MAX], *text = fuzz_str(data, size), *json, *again;
	struct profile *p, *q;

	p = profile_parse_json(text, "fuzz", err, sizeof(err));
	free(text);
	if (!p)
		return 0;
	if (profile_normalize(p, &conf, err, sizeof(err)) < 0 ||
	    profile_validate(p, &conf, PROFILE_CHECK_STRUCTURE, err,
			     sizeof(err)) < 0) {
		profile_destroy(p);
		return 0;
	}
	json = profile_to_json(p);
	profile_destroy(p);
	if (!json)
		abort();
	q = profile_parse_json(json, "fuzz", err, sizeof(err));
	if (!q) {
		fprintf(stderr,
			"a valid profile's JSON does not parse back: "
			"%s\n%s\n",
			err, json);
		abort();
	}
	if (profile_normalize(q, &conf, err, sizeof(err)) < 0) {
		fprintf(stderr, "reparsed profile: %s\n", err);
		abort();
	}
	again = profile_to_json(q);
	if (!again || strcmp(json, again)) {
		fprintf(stderr,
			"profile JSON changes on a round trip:\n%s\n%s\n", json,
			again ? again : "(null)");
		abort();
	}
	free(again);
	free(json);
	profile_destroy(q);
	return 0;
}
