/* fuzz_agent_request.c - a request line to iostaged (daemon/server.c):
 * the decode (common/proto.c), the dispatch with its root-only check, and
 * every op of every table (staging, cache, telemetry with shim_report,
 * history), run in process against a tier and a StateDir in the scratch
 * directory, as root, as a user (uid 1000) or as nobody: the first byte
 * of the input picks the peer, the rest is the line. Workers are never
 * started: spawn_as_user is tests/fuzz/spawn_stub.h's, which refuses, so a
 * stage or prestage request runs up to the fork and takes its failure
 * path (what a node out of processes does). server.c is included for its
 * static dispatch(). */
#include "tests/fuzz/fuzz.h"

#include "daemon/server.c"

#include "ctld/history.h"
#include "tests/fuzz/spawn_stub.h"


static struct conf conf;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	char err[CONF_ERR_MAX];

	(void)argc;
	(void)argv;
	fuzz_conf(&conf);
	server_conf = &conf;
	server_conf_path = "/etc/slurm/iostage.conf";
	started = time(NULL);
	stage_init(&conf);
	if (tiers_init(&conf, err, sizeof(err)) < 0 ||
	    drain_init(&conf, err, sizeof(err)) < 0 ||
	    jobs_init(&conf, err, sizeof(err)) < 0 ||
	    journal_init(&conf, err, sizeof(err)) < 0 ||
	    cache_init(&conf, jobs_known, err, sizeof(err)) < 0 ||
	    telemetry_init(&conf, err, sizeof(err)) < 0 ||
	    parts_init(&conf, err, sizeof(err)) < 0) {
		fprintf(stderr, "fuzz: %s\n", err);
		exit(2);
	}
	history_init(&conf);
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const uid_t uids[] = { 0, 1000, 65534 };
	struct peer p = { .pid = getpid() };
	cJSON *reply;
	char *line;

	if (size < 1)
		return 0;
	p.uid = p.gid = uids[data[0] % 3];
	line = fuzz_str(data + 1, size - 1);
	reply = dispatch(&p, line);
	free(line);
	if (!reply || !cJSON_IsBool(cJSON_GetObjectItem(reply, "ok")))
		abort(); /* every request gets {"ok":...} */
	cJSON_Delete(reply);
	return 0;
}
