/* fuzz_shim_report.c - the shim's reports (shim/preload_report.c ->
 * op shim_report, daemon/telemetry_ops.c): the line is decoded as the
 * daemon decodes it (common/proto.c), checked (telrec_report_check) and,
 * when it passes, merged into the live record of a running job 42 of
 * uid 1000 (telemetry_shim_report) from pid 1000 + the input's first
 * byte; every input then reads the record back (telemetry_record), which
 * folds what the reports left. */
#include "tests/fuzz/fuzz.h"

#include "common/profile.h"
#include "common/proto.h"
#include "ctld/history.h"
#include "daemon/cache.h"
#include "daemon/drain.h"
#include "daemon/jobs.h"
#include "daemon/journal.h"
#include "daemon/parts.h"
#include "daemon/stage.h"
#include "daemon/telemetry.h"
#include "daemon/tiers.h"
#include "tests/fuzz/spawn_stub.h"


static struct conf conf;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	struct telemetry_task t = { .pid = getpid(), .rank = 0,
				    .local_rank = 0, .identity = "slurm",
				    .node = "node1" };
	char err[CONF_ERR_MAX];
	struct profile *p;
	struct job *job, *old;

	(void)argc;
	(void)argv;
	fuzz_conf(&conf);
	stage_init(&conf);
	if (tiers_init(&conf, err, sizeof(err)) < 0 ||
	    drain_init(&conf, err, sizeof(err)) < 0 ||
	    jobs_init(&conf, err, sizeof(err)) < 0 ||
	    telemetry_init(&conf, err, sizeof(err)) < 0)
		goto fail;
	p = profile_parse_json("{\"datasets\":[]}", "fuzz", err, sizeof(err));
	if (!p || profile_normalize(p, &conf, err, sizeof(err)) < 0)
		goto fail;
	job = jobs_create(42, 1000, 1000, "alice", p, err, sizeof(err));
	if (!job || jobs_insert(job, &old, err, sizeof(err)) != 0)
		goto fail;
	jobs_staging_done(job, true, NULL);
	jobs_put(job);
	if (telemetry_task_register(42, &t, err, sizeof(err)) < 0)
		goto fail;
	return 0;
fail:
	fprintf(stderr, "fuzz: %s\n", err);
	exit(2);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char err[CONF_ERR_MAX], *line;
	const char *op;
	cJSON *req, *rec;

	if (size < 1)
		return 0;
	line = fuzz_str(data + 1, size - 1);
	req = proto_parse_request(line, &op, err, sizeof(err));
	free(line);
	if (req && telrec_report_check(req, err, sizeof(err)) == 0 &&
	    telemetry_shim_report(42, 1000, 1000 + data[0], req, err,
				  sizeof(err)) < 0) {
		fprintf(stderr, "a checked report was refused: %s\n", err);
		abort();
	}
	cJSON_Delete(req);
	rec = telemetry_record(42, 1000, err, sizeof(err));
	if (!rec)
		abort();
	cJSON_Delete(rec);
	return 0;
}
