/* trace.c - turn on deep mode (docs/SHIM.md) in a job step's tasks.
 *
 * Runs after task.c in user_init, in slurmstepd, with the job's env about to
 * become the tasks' env. The decision and the values come from
 * common/config/traceenv.c; this file only reads the job's profile and the
 * node's config and calls spank_setenv. Tracing is an observer: nothing here
 * may fail the job, so every problem is logged and the job runs untraced.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <slurm/spank.h>

#include "common/config/conf.h"
#include "common/config/profile.h"
#include "common/config/traceenv.h"
#include "spank/siteconf.h"
#include "spank/stepprofile.h"
#include "spank/trace.h"

#define TRACE_PRELOAD_MAX 8192

/* The job's normalized profile (stepprofile.c), checked against this
 * node's config, or NULL for a job without --io-profile. */
static struct profile *job_profile(spank_t sp, const struct conf *conf)
{
	char err[CONF_ERR_MAX];
	char *json = step_profile_json(sp);
	struct profile *profile = NULL;

	if (json)
		profile = profile_parse_json(json, "job", err, sizeof(err));
	free(json);
	/* The job's JSON is resolved already, also when its origin says
	 * "auto" (submit.c applied the advice; step_profile_json gives no
	 * unresolved one): an auto job is traced like any other. */
	if (profile && profile_normalize(profile, conf, err, sizeof(err)) < 0) {
		profile_destroy(profile);
		profile = NULL;
	}
	return profile;
}

static int set_env(spank_t sp, const char *name, const char *value)
{
	if (spank_setenv(sp, name, value, 1) != ESPANK_SUCCESS) {
		slurm_error("iostage: trace: cannot set %s; job runs untraced",
			    name);
		return -1;
	}
	return 0;
}

int trace_user_init(spank_t sp)
{
	const struct conf *conf = siteconf_get(NULL, 0);
	char *classes = NULL, *preload = NULL, *old = NULL;
	struct profile *profile = NULL;
	size_t skipped = 0;
	uint32_t jobid;

	if (!conf)
		return 0; /* task.c reports a broken config */
	profile = job_profile(sp, conf);
	if (!traceenv_wanted(conf, profile))
		goto out;
	if (spank_get_item(sp, S_JOB_ID, &jobid) != ESPANK_SUCCESS) {
		slurm_error("iostage: trace: cannot get the job id; job runs "
			    "untraced");
		goto out;
	}
	/* Checked here so a missing library is one clear line in slurmd's
	 * log instead of a loader warning in every task's stderr. */
	if (access(conf->trace_library, R_OK) < 0) {
		slurm_error("iostage: trace: TraceLibrary %s: %s; job %u runs "
			    "untraced",
			    conf->trace_library, strerror(errno), jobid);
		goto out;
	}
	classes = malloc(TRACEENV_CLASSES_MAX);
	preload = malloc(TRACE_PRELOAD_MAX);
	old = malloc(TRACE_PRELOAD_MAX);
	if (!classes || !preload || !old) {
		slurm_error("iostage: trace: out of memory; job %u runs "
			    "untraced",
			    jobid);
		goto out;
	}
	if (traceenv_classes(conf, profile, jobid, classes,
			     TRACEENV_CLASSES_MAX, &skipped) < 0) {
		slurm_error("iostage: trace: job %u: file classes: %s; job "
			    "runs untraced",
			    jobid, strerror(errno));
		goto out;
	}
	if (skipped)
		slurm_info("iostage: trace: job %u: %zu path(s) holding ':' "
			   "are counted as class other",
			   jobid, skipped);
	if (spank_getenv(sp, "LD_PRELOAD", old, TRACE_PRELOAD_MAX) !=
	    ESPANK_SUCCESS)
		old[0] = '\0';
	if (traceenv_preload(conf->trace_library, old, preload,
			     TRACE_PRELOAD_MAX) < 0) {
		slurm_error("iostage: trace: job %u: LD_PRELOAD: %s; job runs "
			    "untraced",
			    jobid, strerror(errno));
		goto out;
	}
	/* The classes and the socket first: a task that gets the library
	 * without them would count everything as "other". */
	if (set_env(sp, "IOSTAGE_TRACE_CLASSES", classes) < 0 ||
	    set_env(sp, "IOSTAGE_SOCKET", conf->socket_path) < 0)
		goto out;
	set_env(sp, "LD_PRELOAD", preload);
out:
	free(classes);
	free(preload);
	free(old);
	profile_destroy(profile);
	return 0;
}
