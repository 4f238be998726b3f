/* peer.h - iostaged to iostaged: the node-to-node channel.
 *
 * A multi-node job's nodes talk to each other over TCP (PeerListen,
 * PeerPort) with the framing of common/net/peernet.h: one request per
 * connection, inside a MUNGE credential. Only root's credentials are
 * served (iostaged runs as root; users talk to their own node's iostaged,
 * which checks them with SO_PEERCRED and asks its peers as root). A
 * refused request gets one log line and a one-line error reply.
 *
 * The listener is common/net/peerserve.h's: one thread; each accepted
 * connection gets a short-lived thread (at most PEER_CONN_MAX at once)
 * that reads one request within PEER_READ_MS, answers it and ends. The
 * ops are daemon/cluster/peer_ops.c's.
 */
#ifndef IOSTAGE_DAEMON_PEER_H
#define IOSTAGE_DAEMON_PEER_H

#include <stdbool.h>
#include <stddef.h>

#include <cJSON.h>

#include "common/config/conf.h"
#include "common/net/peernet.h"

#define PEER_CONN_MAX 64       /* connections served at once */
#define PEER_READ_MS 10000     /* a request must arrive within this */
#define PEER_CALL_MS 5000      /* one call to a peer, connect to reply */
#define PEER_FANOUT_MAX 16     /* calls in flight at once */

typedef cJSON *(*peer_op_fn)(const struct peernet_peer *peer,
			     const cJSON *req);

struct peer_op {
	const char *name;
	peer_op_fn fn;
};

/* daemon/cluster/peer_ops.c, ended by { NULL, NULL }. */
extern const struct peer_op peer_ops[];

/* The `prestage` op of the node's socket as root (any user's dataset,
 * named by "user"), which peer_ops.c's `prestage` (iostagectld's
 * pre-staging) runs: server.c registers it at server_init, so the node
 * channel never calls up into the socket's code. Unset, `prestage` is
 * refused. */
typedef cJSON *(*peer_prestage_fn)(const cJSON *req);
void peer_set_prestage(peer_prestage_fn fn);

/* Listen on PeerListen:PeerPort and serve in a thread. PeerPort=0: off.
 * Never fatal: a failure is logged and multi-node jobs then see this node
 * as unreachable. CONF must outlive the channel. */
void peer_init(const struct conf *conf);

/* Stop serving (waits up to a few seconds for connection threads). */
void peer_fini(void);

/* Is the channel on here (PeerPort != 0)? When it is off, multi-node jobs
 * behave as before it existed: each node applies its own outcome and
 * files its own part. */
bool peer_enabled(void);

/* This node's name (NodeName), as other nodes know it. */
const char *peer_self(void);

/* One request REQ to NODE's iostaged within TIMEOUT_MS: the reply (caller
 * deletes; check "ok") or NULL with one line in err; *ret_unreachable
 * (may be NULL) says whether NODE could not be connected to at all. */
cJSON *peer_call(const char *node, const cJSON *req, int timeout_ms,
		 int *ret_unreachable, char *err, size_t errlen);

/* REQ to each of NODES[N] at once (at most PEER_FANOUT_MAX in flight):
 * replies[i] (caller deletes) or NULL with errs[i] set and unreachable[i]
 * telling why. */
void peer_call_many(const char *const *nodes, size_t n, const cJSON *req,
		    int timeout_ms, cJSON **replies, char (*errs)[256],
		    int *unreachable);

#endif /* IOSTAGE_DAEMON_PEER_H */
