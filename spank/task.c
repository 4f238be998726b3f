/* task.c - give the job's tasks the paths of their staged data.
 *
 * slurmstepd runs this for every step. The answer comes from the node's
 * iostaged (job_env op): the staged paths, the PFS paths when the job fell
 * back, or the reason staging failed. When the daemon cannot answer, the
 * job's own profile decides: fallback runs on the PFS paths, fail fails.
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cJSON.h>
#include <slurm/spank.h>

#include "common/config/conf.h"
#include "common/config/joblayout.h"
#include "common/config/profile.h"
#include "common/net/proto.h"
#include "spank/siteconf.h"
#include "spank/stepprofile.h"
#include "spank/task.h"

#define TASK_DAEMON_TIMEOUT_MS 30000

/* Set in user_init, read in task_init (the same slurmstepd process). */
static char *staging_failure; /* why the job must fail, or NULL */
static char *fallback_notice; /* printed once when running on the PFS */
static bool job_spread;       /* its tasks read a spread dataset's view */

static int set_env_var(spank_t sp, const char *name, const char *value)
{
	/* Only our own namespace: a confused daemon can't set LD_PRELOAD. */
	if (strncmp(name, "IOSTAGE_", 8) != 0)
		return 0;
	if (spank_setenv(sp, name, value, 1) != ESPANK_SUCCESS) {
		slurm_error("iostage: cannot set %s", name);
		return -1;
	}
	return 0;
}

static void set_failure(char **slot, const char *fmt, const char *reason)
{
	char buf[1200];

	snprintf(buf, sizeof(buf), fmt, reason);
	free(*slot);
	*slot = strdup(buf);
}

/* The daemon could not tell us: apply the job's policy ourselves. */
static int apply_policy_locally(spank_t sp, const char *profile_json,
				uint32_t jobid, const char *reason)
{
	static struct joblayout_env env;
	const struct conf *conf = siteconf_get(NULL, 0);
	struct profile *profile;
	char err[CONF_ERR_MAX];
	int rc = 0;

	profile = profile_parse_json(profile_json, "job", err, sizeof(err));
	if (!profile || !conf ||
	    profile_normalize(profile, conf, err, sizeof(err)) < 0) {
		set_failure(&staging_failure, "%s", reason);
		goto out;
	}
	if (profile->on_failure != STAGE_FAILURE_FALLBACK) {
		set_failure(&staging_failure, "%s", reason);
		goto out;
	}
	if (joblayout_env(conf, profile, jobid, true, &env) < 0) {
		set_failure(&staging_failure, "%s", reason);
		goto out;
	}
	for (size_t i = 0; i < env.n; i++)
		if (set_env_var(sp, env.vars[i].name, env.vars[i].value) < 0)
			rc = -1;
	set_failure(&fallback_notice, "%s", reason);
out:
	profile_destroy(profile);
	return rc;
}

static int apply_reply(spank_t sp, const cJSON *reply)
{
	const cJSON *state = cJSON_GetObjectItemCaseSensitive(reply, "state");
	const cJSON *error = cJSON_GetObjectItemCaseSensitive(reply, "error");
	const cJSON *env = cJSON_GetObjectItemCaseSensitive(reply, "env");
	const cJSON *var;
	int fallback = cJSON_IsTrue(
	    cJSON_GetObjectItemCaseSensitive(reply, "fallback"));
	const char *reason = cJSON_IsString(error) ? error->valuestring
						   : "staging failed";
	int rc = 0;

	job_spread = cJSON_IsTrue(
	    cJSON_GetObjectItemCaseSensitive(reply, "spread"));
	cJSON_ArrayForEach(var, env) {
		if (cJSON_IsString(var) &&
		    set_env_var(sp, var->string, var->valuestring) < 0)
			rc = -1;
	}
	if (cJSON_IsString(state) && strcmp(state->valuestring, "staged") == 0)
		return rc;
	if (fallback)
		set_failure(&fallback_notice, "%s", reason);
	else if (cJSON_IsString(state) &&
		 strcmp(state->valuestring, "staging") == 0)
		set_failure(&staging_failure, "%s",
			    "staging had not finished when the job started");
	else
		set_failure(&staging_failure, "%s", reason);
	return rc;
}

int task_user_init(spank_t sp)
{
	const struct conf *conf;
	char err[CONF_ERR_MAX], reason[CONF_ERR_MAX + 64];
	char *profile_json = step_profile_json(sp);
	cJSON *req = NULL, *reply = NULL;
	uint32_t jobid;
	int rc = 0;

	if (!profile_json)
		return 0; /* not an iostage job */
	if (spank_get_item(sp, S_JOB_ID, &jobid) != ESPANK_SUCCESS) {
		slurm_error("iostage: cannot get the job id");
		goto out;
	}
	conf = siteconf_get(err, sizeof(err));
	if (!conf) {
		snprintf(reason, sizeof(reason), "%s", err);
		rc = apply_policy_locally(sp, profile_json, jobid, reason);
		goto out;
	}
	req = cJSON_CreateObject();
	if (!req || !cJSON_AddStringToObject(req, "op", "job_env") ||
	    !cJSON_AddNumberToObject(req, "job", jobid)) {
		slurm_error("iostage: out of memory");
		goto out;
	}
	reply = proto_call(conf->socket_path, req, TASK_DAEMON_TIMEOUT_MS, err,
			   sizeof(err));
	if (reply &&
	    cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(reply, "ok"))) {
		rc = apply_reply(sp, reply);
		goto out;
	}
	if (reply) {
		const cJSON *e = cJSON_GetObjectItemCaseSensitive(reply,
								  "error");
		snprintf(err, sizeof(err), "%s",
			 cJSON_IsString(e) ? e->valuestring : "refused");
	}
	snprintf(reason, sizeof(reason), "%s", err);
	rc = apply_policy_locally(sp, profile_json, jobid, reason);
out:
	cJSON_Delete(req);
	cJSON_Delete(reply);
	free(profile_json);
	return rc;
}

int task_init(spank_t sp)
{
	uint32_t task_id = 0;

	spank_get_item(sp, S_TASK_GLOBAL_ID, &task_id);
	if (staging_failure) {
		/* This runs in the task with the job's stdio: the user sees
		 * it in the job's error file. */
		fprintf(stderr,
			"iostage: staging failed, job not run "
			"(on-failure=fail): %s\n",
			staging_failure);
		fflush(stderr);
		return -1;
	}
	if (fallback_notice && task_id == 0) {
		fprintf(stderr,
			"iostage: staging failed: %s; running on the PFS "
			"paths (on-failure=fallback, IOSTAGE_FALLBACK=1)\n",
			fallback_notice);
		fflush(stderr);
	}
	return 0;
}

bool task_spread(void)
{
	return job_spread;
}

void task_fini(void)
{
	job_spread = false;
	free(staging_failure);
	free(fallback_notice);
	staging_failure = fallback_notice = NULL;
}
