/* telemetry.c - tell iostaged which pids are the job's tasks (remote context).
 *
 * slurmstepd calls task_post_fork in the privileged parent right after it
 * forks each task (before the task execs), and task_exit after it reaped
 * one. We send task_register and task_exit to the node's iostaged, which
 * samples /proc/PID/io of the tasks and their descendants. In user_init
 * we tell the tasks which step they are in (IOSTAGE_STEP), so that what
 * the shim and libiostage report about any process under them carries the
 * same step as the task registered here. Telemetry must
 * never fail or slow a job: calls have a short timeout, failures are one
 * log line (once per step) and always return 0.
 */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/types.h>
#include <unistd.h>

#include <cJSON.h>
#include <slurm/spank.h>

#include "common/config/conf.h"
#include "common/net/proto.h"
#include "spank/options.h"
#include "spank/siteconf.h"
#include "spank/telemetry.h"

#define TELEMETRY_TIMEOUT_MS 2000

static bool conf_warned, warned;

/* The site configuration; without one, telemetry is off for the step
 * (said once). */
static const struct conf *get_conf(void)
{
	char err[CONF_ERR_MAX];
	const struct conf *c = siteconf_get(err, sizeof(err));

	if (!c && !conf_warned) {
		slurm_info("iostage: telemetry off for this step: %s", err);
		conf_warned = true;
	}
	return c;
}

/* Does this step belong to an iostage job (--io-profile given)? */
static bool iostage_job(spank_t sp)
{
	char buf[2];
	spank_err_t e;

	if (options.spec)
		return true;
	e = spank_getenv(sp, "SLURM_SPANK_IOSTAGE_PROFILE", buf, sizeof(buf));
	return e == ESPANK_NOSPACE || (e == ESPANK_SUCCESS && buf[0]);
}

static void call(cJSON *req)
{
	const struct conf *c = get_conf();
	char err[CONF_ERR_MAX];
	cJSON *reply;
	const cJSON *e;

	if (!c || !req)
		goto out;
	reply = proto_call(c->socket_path, req, TELEMETRY_TIMEOUT_MS, err,
			   sizeof(err));
	if (!reply) {
		if (!warned)
			slurm_info("iostage: telemetry: %s", err);
		warned = true;
		goto out;
	}
	e = cJSON_GetObjectItemCaseSensitive(reply, "error");
	if (!cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(reply, "ok")) &&
	    cJSON_IsString(e) && !warned) {
		slurm_info("iostage: telemetry: %s", e->valuestring);
		warned = true;
	}
	cJSON_Delete(reply);
out:
	cJSON_Delete(req);
}

/* IOSTAGE_STEP=JOB.STEP for the step's tasks: the one place that knows
 * the step on every Slurm release. Slurm's own SLURM_STEP_ID is missing
 * in the batch step before 26.05 and "-5" from 26.05 on, and a batch
 * script can inherit another step's from its submitter; the shim and
 * libiostage read this first (shim/slurmstep.h). */
static void export_step(spank_t sp)
{
	uint32_t job = 0, step = 0;
	char buf[32];

	if (spank_get_item(sp, S_JOB_ID, &job) != ESPANK_SUCCESS ||
	    spank_get_item(sp, S_JOB_STEPID, &step) != ESPANK_SUCCESS)
		return;
	snprintf(buf, sizeof(buf), "%u.%u", job, step);
	if (spank_setenv(sp, "IOSTAGE_STEP", buf, 1) != ESPANK_SUCCESS)
		slurm_info("iostage: cannot set IOSTAGE_STEP");
}

int telemetry_user_init(spank_t sp)
{
	const struct conf *c;

	if (!iostage_job(sp))
		return 0;
	export_step(sp);
	if (!(c = get_conf()))
		return 0;
	/* libiostage and `iostage phase` in the tasks find the daemon here
	 * (a site may use a non-default iostage.conf). */
	if (spank_setenv(sp, "IOSTAGE_SOCKET", c->socket_path, 1) !=
	    ESPANK_SUCCESS)
		slurm_info("iostage: cannot set IOSTAGE_SOCKET");
	return 0;
}

int telemetry_task_post_fork(spank_t sp)
{
	uint32_t job = 0, step = 0, rank = 0;
	int local = 0;
	pid_t pid = 0;
	char name[128] = "";
	const struct conf *c;
	cJSON *req;
	bool have_step;

	if (!iostage_job(sp) || !(c = get_conf()) ||
	    spank_get_item(sp, S_JOB_ID, &job) != ESPANK_SUCCESS ||
	    spank_get_item(sp, S_TASK_PID, &pid) != ESPANK_SUCCESS)
		return 0;
	have_step = spank_get_item(sp, S_JOB_STEPID, &step) == ESPANK_SUCCESS;
	spank_get_item(sp, S_TASK_GLOBAL_ID, &rank);
	spank_get_item(sp, S_TASK_ID, &local);
	if (spank_getenv(sp, "SLURM_JOB_NAME", name, sizeof(name)) !=
	    ESPANK_SUCCESS)
		name[0] = '\0';
	req = cJSON_CreateObject();
	if (!req)
		return 0;
	cJSON_AddStringToObject(req, "op", "task_register");
	cJSON_AddNumberToObject(req, "job", job);
	cJSON_AddNumberToObject(req, "pid", pid);
	/* We are the task's parent: the daemon reads our counters when the
	 * task is gone (see daemon/telemetry/sampler.h). */
	cJSON_AddNumberToObject(req, "parent", getpid());
	/* Absent, not 0, if Slurm would not say (the daemon records none). */
	if (have_step)
		cJSON_AddNumberToObject(req, "step", step);
	cJSON_AddNumberToObject(req, "rank", rank);
	cJSON_AddNumberToObject(req, "local_rank", local);
	cJSON_AddStringToObject(req, "node", c->node_name);
	cJSON_AddStringToObject(req, "identity", "slurm");
	cJSON_AddStringToObject(req, "job_name", name);
	call(req);
	return 0;
}

int telemetry_task_exit(spank_t sp)
{
	uint32_t job = 0;
	pid_t pid = 0;
	cJSON *req;

	if (!iostage_job(sp) || !get_conf() ||
	    spank_get_item(sp, S_JOB_ID, &job) != ESPANK_SUCCESS ||
	    spank_get_item(sp, S_TASK_PID, &pid) != ESPANK_SUCCESS)
		return 0;
	req = cJSON_CreateObject();
	if (!req)
		return 0;
	cJSON_AddStringToObject(req, "op", "task_exit");
	cJSON_AddNumberToObject(req, "job", job);
	cJSON_AddNumberToObject(req, "pid", pid);
	call(req);
	return 0;
}
