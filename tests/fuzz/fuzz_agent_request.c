/* fuzz_agent_request.c - a request line to iostaged (daemon/server.c):
 * the decode (common/net/proto.c), the dispatch with its root-only check, and
 * every op of every table (staging, cache, telemetry with shim_report,
 * history), run in process against a tier and a StateDir in the scratch
 * directory, as root, as a user (uid 1000) or as nobody: the first byte
 * of the input picks the peer, the rest is the line. Workers are never
 * started: spawn_init is never called, so the real spawn_as_user refuses
 * and a stage or prestage request runs up to the fork and takes its failure
 * path (what a node out of processes does); a prestage's job is then
 * finished as main()'s prune finishes it. The line goes through
 * server_dispatch (daemon/server.h), with an agent made as main() makes
 * iostaged's (no socket, no peer channel, no service). */
#include "tests/fuzz/fuzz.h"

#include "common/history/history.h"
#include "daemon/agent_life.h"
#include "daemon/cluster/parts.h"
#include "daemon/jobs.h"
#include "daemon/server.h"
#include "daemon/staging/cache.h"
#include "daemon/staging/drain.h"
#include "daemon/staging/stage.h"
#include "daemon/staging/tiers.h"
#include "daemon/telemetry/telemetry.h"
#include "tests/fuzz/history_renew.h"

static struct conf conf;
static struct agent agent;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	char err[CONF_ERR_MAX];

	(void)argc;
	(void)argv;
	fuzz_conf(&conf);
	agent.conf = &conf;
	agent.conf_path = "/etc/slurm/iostage.conf";
	/* as iostaged's main() makes its agent (daemon/agent.c), but for
	 * spawn_init: without it spawn_as_user refuses, so a stage, prestage
	 * or drain runs up to the fork and takes its failure path (what a
	 * node out of processes does), and no worker ever starts */
	if (agent_create(&agent, 0, err, sizeof(err)) < 0 ||
	    agent_load(&agent, err, sizeof(err)) < 0)
		goto fail;
	history_init(&conf);
	return 0;
fail:
	fprintf(stderr, "fuzz: %s\n", err);
	exit(2);
}

/* A prestage's job stays in the table after it ended, until main()'s
 * periodic jobs_prune_prestage finishes it (JOBS_PRESTAGE_KEEP_S later).
 * The prune does not run in the target: finish the job here as it would,
 * once its stage thread failed at the fork. Before, every prestage left a
 * job behind and a stage thread running past the input: the table grew
 * with the run (each status longer than the last), and libFuzzer, seeing
 * more mallocs than frees, took each such input for a leak suspect and
 * scanned the whole heap (most of the target's time). */
static void finish_prestage(const cJSON *reply)
{
	const cJSON *idj = cJSON_GetObjectItem(reply, "id");
	char err[CONF_ERR_MAX];
	struct job_view v;
	struct job *job;
	uint32_t id;

	if (!cJSON_IsNumber(idj))
		return;
	id = (uint32_t)idj->valuedouble;
	job = jobs_get(agent.jobs, id);
	if (!job)
		return;
	if (!job->prestage) {
		jobs_put(job);
		return;
	}
	jobs_wait(job, 10, &v);
	jobs_put(job);
	if (v.state == JOB_STAGING ||
	    jobs_finish(agent.jobs, id, 10, err, sizeof(err)) < 0) {
		fprintf(stderr, "fuzz: prestage %u did not end: %s\n", id,
			v.state == JOB_STAGING ? "still staging" : err);
		abort();
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const uid_t uids[] = { 0, 1000, 65534 };
	struct ops_caller p = { .pid = getpid() };
	cJSON *reply;
	char *line;

	if (size < 1)
		return 0;
	fuzz_history_renew(&conf);
	p.uid = p.gid = uids[data[0] % 3];
	line = fuzz_str(data + 1, size - 1);
	reply = server_dispatch(&agent, &p, line);
	free(line);
	if (!reply || !cJSON_IsBool(cJSON_GetObjectItem(reply, "ok")))
		abort(); /* every request gets {"ok":...} */
	finish_prestage(reply);
	cJSON_Delete(reply);
	return 0;
}
