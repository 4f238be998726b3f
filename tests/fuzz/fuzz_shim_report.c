/* fuzz_shim_report.c - the shim's reports (shim/preload_report.c ->
 * op shim_report, daemon/telemetry/telemetry_ops.c): the line is decoded as the
 * daemon decodes it (common/net/proto.c), checked (telrec_report_check) and,
 * when it passes, merged into the live record of a running job of
 * uid 1000 (telemetry_shim_report) from pid 1000 + the input's first
 * byte; every input then reads the record back (telemetry_record), which
 * folds what the reports left.
 *
 * The job ends, as at its Epilog (telemetry_finish_job, jobs_finish), and
 * a new one starts every FUZZ_JOB_INPUTS inputs: one job's record fills up
 * to its bounds (1,024 timeline samples, every pid's files) and reading
 * it back each input then cost some 4 ms, a tenth of the rate at start.
 * A real job's record is read at a query, not at each report. */
#include "tests/fuzz/fuzz.h"

#include "common/config/profile.h"
#include "common/history/history.h"
#include "common/net/proto.h"
#include "daemon/agent_life.h"
#include "daemon/cluster/parts.h"
#include "daemon/jobs.h"
#include "daemon/staging/cache.h"
#include "daemon/staging/drain.h"
#include "daemon/staging/stage.h"
#include "daemon/staging/tiers.h"
#include "daemon/telemetry/telemetry.h"
#include "tests/fuzz/fuzz_job.h"

#define FUZZ_JOB_INPUTS 5000

static struct conf conf;
static struct agent agent;
static uint32_t job_id = 42;

/* Job JOB_ID of uid 1000, staged, with this process as its task. */
static void start_job(void)
{
	struct telemetry_task t = { .pid = getpid(),
				    .rank = 0,
				    .local_rank = 0,
				    .identity = "slurm",
				    .node = "node1" };
	char err[CONF_ERR_MAX];
	struct job *job = fuzz_job(agent.jobs, &conf, job_id);

	jobs_staging_done(job, true, NULL);
	jobs_put(job);
	if (telemetry_task_register(agent.telemetry, job_id, &t, err,
				    sizeof(err)) < 0) {
		fprintf(stderr, "fuzz: job %u: %s\n", job_id, err);
		exit(2);
	}
}

/* End the job as its Epilog does, and start the next one. */
static void next_job(void)
{
	char err[CONF_ERR_MAX];

	cJSON_Delete(telemetry_finish_job(agent.telemetry, job_id));
	if (jobs_finish(agent.jobs, job_id, 10, err, sizeof(err)) < 0) {
		fprintf(stderr, "fuzz: job %u: %s\n", job_id, err);
		abort();
	}
	job_id++;
	start_job();
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	char err[CONF_ERR_MAX];

	(void)argc;
	(void)argv;
	fuzz_conf(&conf);
	agent.conf = &conf;
	/* as iostaged's main() makes its agent (daemon/agent.c), without
	 * spawn_init: no worker ever starts (spawn_as_user refuses) */
	if (agent_create(&agent, 0, err, sizeof(err)) < 0 ||
	    agent_load(&agent, err, sizeof(err)) < 0) {
		fprintf(stderr, "fuzz: %s\n", err);
		exit(2);
	}
	start_job();
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char err[CONF_ERR_MAX], *line;
	const char *op;
	cJSON *req, *rec;

	static unsigned long inputs;

	if (size < 1)
		return 0;
	if (++inputs % FUZZ_JOB_INPUTS == 0)
		next_job();
	line = fuzz_str(data + 1, size - 1);
	req = proto_parse_request(line, &op, err, sizeof(err));
	free(line);
	if (req && telrec_report_check(req, err, sizeof(err)) == 0 &&
	    telemetry_shim_report(agent.telemetry, job_id, 1000, 1000 + data[0],
				  req, err, sizeof(err)) < 0) {
		fprintf(stderr, "a checked report was refused: %s\n", err);
		abort();
	}
	cJSON_Delete(req);
	rec = telemetry_record(agent.telemetry, job_id, 1000, err, sizeof(err));
	if (!rec)
		abort();
	cJSON_Delete(rec);
	return 0;
}
