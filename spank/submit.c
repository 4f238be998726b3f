/* submit.c - validate --io-profile at submit time, in the user's process.
 *
 * Runs in sbatch/salloc (allocator context) and srun (local context) as the
 * submitting user, so "can this user read the dataset" is answered by the
 * kernel with the user's own credentials. What passes is normalized (every
 * default resolved against iostage.conf) so the nodes never read a user's
 * file or re-interpret the SPEC.
 */
#include <stdlib.h>

#include <slurm/spank.h>

#include "common/conf.h"
#include "common/profile.h"
#include "spank/options.h"
#include "spank/submit.h"

/* The job-control variable; the Prolog and Epilog see SPANK_ + this. */
#define SUBMIT_ENV_PROFILE "IOSTAGE_PROFILE"

int submit_init_post_opt(spank_t sp)
{
	static struct conf conf; /* ~20 KiB: keep it off the stack */
	struct profile *profile = NULL;
	char err[CONF_ERR_MAX];
	char *json = NULL;
	int rc = -1;

	if (!options.spec)
		return 0;
	if (conf_load(options.conf_path, &conf, err, sizeof(err)) < 0) {
		slurm_error("iostage: --io-profile: site configuration: %s",
			    err);
		return -1;
	}
	profile = profile_from_spec(options.spec, &conf, err, sizeof(err));
	if (!profile)
		goto report;
	if (profile->is_auto && profile->ndatasets == 0 &&
	    profile->noutputs == 0) {
		/* Until the history lands, auto has nothing to apply. */
		slurm_info("iostage: --io-profile=auto: no history yet for "
			   "this job; it runs without a profile");
		rc = 0;
		goto out;
	}
	if (profile_normalize(profile, &conf, err, sizeof(err)) < 0 ||
	    profile_validate(profile, &conf, PROFILE_CHECK_ACCESS, err,
			     sizeof(err)) < 0)
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
	rc = 0;
	goto out;
report:
	slurm_error("iostage: --io-profile: %s", err);
out:
	free(json);
	profile_destroy(profile);
	return rc;
}
