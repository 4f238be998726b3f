/* fuzz_peer_request.c - one connection to iostaged's node-to-node
 * listener (daemon/cluster/peer.c, peer_ops.c): the line, the envelope, the
 * MUNGE credential's payload (munged replaced by mauth_stub.h: root,
 * a user, nobody, expired, replayed or invalid) and every peer op
 * (peer_ping, stage_state, telemetry_part, part_put, history_get) against
 * the modules started in the scratch directory as in fuzz_agent_request.
 * The connection goes through peer_serve_fd (daemon/cluster/peer.h) of a
 * channel made but not listening. */
#include "tests/fuzz/fuzz.h"

#include <sys/socket.h>
#include <unistd.h>

#include "common/history/history.h"
#include "daemon/agent_life.h"
#include "daemon/cluster/parts.h"
#include "daemon/cluster/peer.h"
#include "daemon/jobs.h"
#include "daemon/staging/cache.h"
#include "daemon/staging/drain.h"
#include "daemon/staging/stage.h"
#include "daemon/staging/tiers.h"
#include "daemon/telemetry/telemetry.h"
#include "tests/fuzz/mauth_stub.h"

static struct conf conf;
static struct agent agent;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	char err[CONF_ERR_MAX];

	(void)argc;
	(void)argv;
	fuzz_conf(&conf);
	snprintf(conf.node_name, sizeof(conf.node_name), "node1");
	agent.conf = &conf;
	/* as iostaged's main() makes its agent (daemon/agent.c), without
	 * spawn_init: no worker ever starts (spawn_as_user refuses) */
	if (agent_create(&agent, 0, err, sizeof(err)) < 0 ||
	    agent_load(&agent, err, sizeof(err)) < 0)
		goto fail;
	agent.peer = peer_create(&agent);
	if (!agent.peer) {
		snprintf(err, sizeof(err), "out of memory");
		goto fail;
	}
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
	reply = peer_serve_fd(agent.peer, sv[0]);
	if (!reply || !cJSON_IsBool(cJSON_GetObjectItem(reply, "ok")))
		abort(); /* every request gets {"ok":...} */
	cJSON_Delete(reply);
	close(sv[0]);
	close(sv[1]);
	return 0;
}
