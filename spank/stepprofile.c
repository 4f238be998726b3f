/* stepprofile.c - see stepprofile.h. */
#include <stdlib.h>

#include <slurm/spank.h>

#include "common/config/conf.h"
#include "common/config/profile.h"
#include "spank/options.h"
#include "spank/siteconf.h"
#include "spank/stepprofile.h"

/* The job's normalized profile, or NULL for a job without --io-profile.
 * Batch jobs and salloc carry the submit-time JSON into their steps as
 * SLURM_SPANK_IOSTAGE_PROFILE; a bare srun does not, but Slurm hands every
 * step the option itself, so re-resolve it here (user_init runs with the
 * user's euid, so a user's profile file is read as the user). */
char *step_profile_json(spank_t sp)
{
	const struct conf *conf;
	struct profile *profile;
	char err[CONF_ERR_MAX];
	char *buf = malloc(PROFILE_JSON_MAX);

	if (buf &&
	    spank_getenv(sp, "SLURM_SPANK_IOSTAGE_PROFILE", buf,
			 PROFILE_JSON_MAX) == ESPANK_SUCCESS &&
	    buf[0])
		return buf;
	free(buf);
	if (!options.spec)
		return NULL;
	conf = siteconf_get(err, sizeof(err));
	if (!conf)
		return NULL;
	profile = profile_from_spec(options.spec, conf, err, sizeof(err));
	if (!profile || profile->is_auto ||
	    profile_normalize(profile, conf, err, sizeof(err)) < 0) {
		profile_destroy(profile);
		return NULL;
	}
	buf = profile_to_json(profile);
	profile_destroy(profile);
	return buf;
}
