/* fuzz_agent_state.c - the state iostaged reads back when it starts
 * (daemon/jobs.c, journal.c, drain.c, telemetry.c, cache_reconcile.c): a
 * file left by a crash, a full disk or a hand is put in place, then the
 * modules start as main() starts them and stop as it stops them. Whatever the
 * file holds, the start must not crash, and the stop must free all (the
 * leak check runs on every input). The first byte of the input picks the
 * file, the rest is its content:
 *   0  StateDir/jobs/77.json            a job's state
 *   1  StateDir/journal/nvme.build...   a build in flight
 *   2  StateDir/drain/77.json           a drain's record (with a staged
 *                                       job 77 whose outputs it resumes)
 *   3  StateDir/telemetry/77.json       a live telemetry record
 *   4  TIER/cache/K.v1/meta.json        a cache version's summary
 * Between start and stop, root asks for the node's status (`iostage
 * status` right after a restart): what was read back is shown too.
 * Workers are never started (spawn_as_user refuses, as in
 * fuzz_agent_request). */
#include "tests/fuzz/fuzz.h"

#include <fcntl.h>

#include "common/history/history.h"
#include "daemon/agent_life.h"
#include "daemon/cluster/parts.h"
#include "daemon/jobs.h"
#include "daemon/staging/cache.h"
#include "daemon/staging/drain.h"
#include "daemon/staging/stage.h"
#include "daemon/staging/tiers.h"
#include "daemon/telemetry/telemetry.h"

#define KEY "0123456789abcdef0123456789abcdef"

/* Job 77, staged, with an output: what makes drain.c read its record. */
static const char staged_job[] =
    "{\"job\":77,\"uid\":1000,\"gid\":1000,\"user\":\"alice\","
    "\"state\":\"staged\",\"created\":1763860000,\"tiers\":[\"nvme\"],"
    "\"tier_bytes\":{\"nvme\":10},\"profile\":{\"datasets\":[],"
    "\"outputs\":[{\"name\":\"ckpt\",\"path\":\"/tmp/iostage-fuzz-out\","
    "\"tier\":\"nvme\",\"drain\":\"end\"}]}}";

static struct conf conf;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	fuzz_conf(&conf);
	return 0;
}

static void put(const char *path, const void *data, size_t size)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);

	if (fd < 0 || write(fd, data, size) != (ssize_t)size) {
		perror(path);
		abort();
	}
	close(fd);
}

static void start_stop(void)
{
	struct agent agent = { .conf = &conf };
	char err[CONF_ERR_MAX];

	/* as iostaged's main() makes its agent (daemon/agent.c) */
	if (agent_create(&agent, 0, err, sizeof(err)) < 0 ||
	    agent_load(&agent, err, sizeof(err)) < 0)
		goto fail;
	cJSON_Delete(jobs_status_json(agent.jobs, 0));
	jobs_shutdown(agent.jobs, "fuzz", 1);
	drain_shutdown(agent.drain);
	agent_destroy(&agent);
	return;
fail:
	/* the fixed parts of the state are fine: a start that fails on one
	 * bad file would stop a node for nothing */
	fprintf(stderr, "fuzz: start failed: %s\n", err);
	abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char path[CONF_PATH_MAX + 128];

	if (size < 1)
		return 0;
	/* what the directories must hold before the modules create them */
	snprintf(path, sizeof(path), "%s/jobs", conf.state_dir);
	mkdir(path, 0700);
	snprintf(path, sizeof(path), "%s/journal", conf.state_dir);
	mkdir(path, 0700);
	snprintf(path, sizeof(path), "%s/drain", conf.state_dir);
	mkdir(path, 0700);
	snprintf(path, sizeof(path), "%s/telemetry", conf.state_dir);
	mkdir(path, 0700);
	snprintf(path, sizeof(path), "%s/cache", conf.tiers[0].path);
	mkdir(path, 0755);
	switch (data[0] % 5) {
	case 0:
		snprintf(path, sizeof(path), "%s/jobs/77.json", conf.state_dir);
		break;
	case 1:
		snprintf(path, sizeof(path),
			 "%s/journal/nvme.build." KEY ".v1.node1",
			 conf.state_dir);
		break;
	case 2:
		snprintf(path, sizeof(path), "%s/jobs/77.json", conf.state_dir);
		put(path, staged_job, sizeof(staged_job) - 1);
		snprintf(path, sizeof(path), "%s/drain/77.json",
			 conf.state_dir);
		break;
	case 3:
		snprintf(path, sizeof(path), "%s/telemetry/77.json",
			 conf.state_dir);
		break;
	default:
		snprintf(path, sizeof(path), "%s/cache/" KEY ".v1",
			 conf.tiers[0].path);
		mkdir(path, 0755);
		snprintf(path, sizeof(path), "%s/cache/" KEY ".v1/data",
			 conf.tiers[0].path);
		mkdir(path, 0755);
		snprintf(path, sizeof(path), "%s/cache/" KEY ".v1/manifest",
			 conf.tiers[0].path);
		put(path, "", 0);
		snprintf(path, sizeof(path), "%s/cache/" KEY ".v1/meta.json",
			 conf.tiers[0].path);
		break;
	}
	put(path, data + 1, size - 1);
	start_stop();
	/* a clean slate for the next input */
	fuzz_rmtree(conf.state_dir);
	mkdir(conf.state_dir, 0755);
	snprintf(path, sizeof(path), "%s/cache", conf.tiers[0].path);
	fuzz_rmtree(path);
	return 0;
}
