/* fuzz_peer_request.c - one connection to iostaged's node-to-node
 * listener (daemon/cluster/peer.c, peer_ops.c): the line, the envelope, the
 * MUNGE credential's payload (munged replaced by mauth_stub.h: root,
 * a user, nobody, expired, replayed or invalid) and every peer op
 * (peer_ping, stage_state, telemetry_part, part_put, history_get) against
 * the modules started in the scratch directory as in fuzz_agent_request.
 * peer.c is included for its static serve_request. */
#include "tests/fuzz/fuzz.h"

#include <sys/socket.h>

#include "daemon/cluster/peer.c"

#include "common/history/history.h"
#include "daemon/staging/cache.h"
#include "daemon/staging/drain.h"
#include "daemon/jobs.h"
#include "daemon/cluster/parts.h"
#include "daemon/staging/stage.h"
#include "daemon/telemetry/telemetry.h"
#include "daemon/staging/tiers.h"
#include "tests/fuzz/spawn_stub.h"
#include "tests/fuzz/mauth_stub.h"


static struct conf conf;
static struct cache *cache;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	struct cache_params cp;
	char err[CONF_ERR_MAX];

	(void)argc;
	(void)argv;
	fuzz_conf(&conf);
	snprintf(conf.node_name, sizeof(conf.node_name), "node1");
	peer_conf = &conf;
	if (tiers_init(&conf, err, sizeof(err)) < 0)
		goto fail;
	cache_params_tiers(&conf, &cp);
	cache = cache_create(&cp, err, sizeof(err));
	if (!cache)
		goto fail;
	stage_init(&conf, cache);
	if (drain_init(&conf, err, sizeof(err)) < 0 ||
	    jobs_init(&conf, cache, err, sizeof(err)) < 0)
		goto fail;
	tiers_detach_stale(jobs_known);
	if (cache_recover(cache, jobs_known, err, sizeof(err)) < 0 ||
	    !(process_agent->telemetry = telemetry_create(process_agent, &conf, err, sizeof(err))) ||
	    parts_init(&conf, err, sizeof(err)) < 0)
		goto fail;
	history_init(&conf);
	return 0;
fail:
	fprintf(stderr, "fuzz: %s\n", err);
	exit(2);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	int sv[2];
	cJSON *reply;

	if (size > 128 * 1024)
		return 0; /* the socket buffer: the writer must not block */
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
		abort();
	if (size && write(sv[1], data, size) != (ssize_t)size)
		abort();
	shutdown(sv[1], SHUT_WR);
	reply = serve_request(sv[0], NULL);
	if (!reply || !cJSON_IsBool(cJSON_GetObjectItem(reply, "ok")))
		abort(); /* every request gets {"ok":...} */
	cJSON_Delete(reply);
	close(sv[0]);
	close(sv[1]);
	return 0;
}
