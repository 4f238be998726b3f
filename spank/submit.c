/* submit.c - validate --io-profile at submit time, in the user's process.
 *
 * Runs in sbatch/salloc (allocator context) and srun (local context) as the
 * submitting user, so "can this user read the dataset" is answered by the
 * kernel with the user's own credentials. What passes is normalized (every
 * default resolved against iostage.conf) so the nodes never read a user's
 * file or re-interpret the SPEC.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cJSON.h>
#include <slurm/spank.h>

#include "common/base/units.h"
#include "common/config/conf.h"
#include "common/config/profile.h"
#include "common/net/proto.h"
#include "spank/auto.h"
#include "spank/options.h"
#include "spank/prefer.h"
#include "spank/siteconf.h"
#include "spank/submit.h"

/* The job-control variable; the Prolog and Epilog see SPANK_ + this. */
#define SUBMIT_ENV_PROFILE "IOSTAGE_PROFILE"

/* A login node usually runs no iostaged: don't make sbatch wait for one. */
#define SUBMIT_DAEMON_TIMEOUT_MS 2000

/* The size iostaged's cache knows for SOURCE (the user's own entries,
 * current version), or 0 when it knows none. */
static double known_size(const cJSON *entries, const char *source)
{
	const cJSON *e, *src, *bytes;

	cJSON_ArrayForEach(e, entries) {
		src = cJSON_GetObjectItemCaseSensitive(e, "source");
		bytes = cJSON_GetObjectItemCaseSensitive(e, "bytes");
		if (cJSON_IsString(src) &&
		    strcmp(src->valuestring, source) == 0 &&
		    cJSON_IsTrue(
			cJSON_GetObjectItemCaseSensitive(e, "current")) &&
		    cJSON_IsNumber(bytes))
			return bytes->valuedouble;
	}
	return 0;
}

/* Refuse now a dataset whose size is already known (this node's iostaged
 * has staged it before) and that cannot fit its tier even when the tier is
 * empty, rather than let the job wait in the queue to fail at staging.
 * Without a reachable daemon there is nothing to know: 0. */
static int check_known_sizes(const struct profile *profile,
			     const struct conf *conf, char *err, size_t errlen)
{
	char ignored[CONF_ERR_MAX], need[32], cap[32];
	cJSON *req = cJSON_CreateObject(), *reply = NULL;
	const cJSON *entries;
	int rc = 0;

	if (!req || !cJSON_AddStringToObject(req, "op", "cache_ls"))
		goto out;
	reply = proto_call(conf->socket_path, req, SUBMIT_DAEMON_TIMEOUT_MS,
			   ignored, sizeof(ignored));
	if (!reply ||
	    !cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(reply, "ok")))
		goto out;
	entries = cJSON_GetObjectItemCaseSensitive(reply, "entries");
	for (size_t i = 0; i < profile->ndatasets; i++) {
		const struct profile_dataset *ds = &profile->datasets[i];
		const struct conf_tier *tier = conf_find_tier(conf, ds->tier);
		double size = known_size(entries, ds->path);

		if (!tier || !tier->capacity || size <= (double)tier->capacity)
			continue;
		snprintf(err, errlen,
			 "key 'data': %s needs %s, more than tier '%s' holds "
			 "(Capacity=%s)",
			 ds->path,
			 units_bytes((uint64_t)size, need, sizeof(need)),
			 tier->name,
			 units_bytes(tier->capacity, cap, sizeof(cap)));
		rc = -1;
		break;
	}
out:
	cJSON_Delete(req);
	cJSON_Delete(reply);
	return rc;
}

int submit_init_post_opt(spank_t sp)
{
	const struct conf *conf;
	struct profile *profile = NULL;
	char err[CONF_ERR_MAX];
	char *json = NULL;
	int rc = -1;

	if (!options.spec) {
		/* no configuration here, no hint: nothing to say */
		if (spank_context() == S_CTX_ALLOCATOR &&
		    (conf = siteconf_get(NULL, 0)))
			auto_hint(conf);
		return 0;
	}
	conf = siteconf_get(err, sizeof(err));
	if (!conf) {
		slurm_error("iostage: --io-profile: site configuration: %s",
			    err);
		return -1;
	}
	profile = profile_from_spec(options.spec, conf, err, sizeof(err));
	if (!profile)
		goto report;
	if (profile->is_auto) {
		int r = auto_apply(profile, conf, err, sizeof(err));

		if (r < 0)
			goto report;
		if (r == 0) { /* nothing to stage: no profile at all */
			rc = 0;
			goto out;
		}
	}
	if (profile_normalize(profile, conf, err, sizeof(err)) < 0 ||
	    profile_validate(profile, conf, PROFILE_CHECK_ACCESS, err,
			     sizeof(err)) < 0 ||
	    check_known_sizes(profile, conf, err, sizeof(err)) < 0)
		goto report;
	json = profile_to_json(profile);
	if (!json) {
		slurm_error("iostage: --io-profile: out of memory");
		goto out;
	}
	if (spank_job_control_setenv(sp, SUBMIT_ENV_PROFILE, json, 1) !=
	    ESPANK_SUCCESS) {
		slurm_error("iostage: --io-profile: cannot pass the profile "
			    "to the job");
		goto out;
	}
	prefer_apply(sp, profile, conf);
	rc = 0;
	goto out;
report:
	slurm_error("iostage: --io-profile: %s", err);
out:
	free(json);
	profile_destroy(profile);
	return rc;
}
