/* peer.h - iostaged to iostaged: the node-to-node channel.
 *
 * A multi-node job's nodes talk to each other over TCP (PeerListen,
 * PeerPort) with the framing of common/net/peernet.h: one request per
 * connection, inside a MUNGE credential. Only root's credentials are
 * served (iostaged runs as root; users talk to their own node's iostaged,
 * which checks them with SO_PEERCRED and asks its peers as root), but
 * for `fetch_open`: another node's stage worker, running as a job's
 * user, opens a fetch session on a cache version of that user's (or a
 * public one), which keeps the connection (daemon/cluster/peer_fetch.h).
 * A refused request gets one log line and a one-line error reply.
 *
 * The listener is common/net/peerserve.h's: one thread; each accepted
 * connection gets a short-lived thread (at most PEER_CONN_MAX at once,
 * plus PeerFetchSessions for the sessions, which hold theirs) that reads
 * one request within PEER_READ_MS, answers it and ends. The ops are
 * daemon/cluster/peer_ops.c's, fetch sessions peer_fetch.c's.
 */
#ifndef IOSTAGE_DAEMON_PEER_H
#define IOSTAGE_DAEMON_PEER_H

#include <stdbool.h>
#include <stddef.h>

#include <cJSON.h>

#include "common/config/conf.h"
#include "common/net/peernet.h"

#define PEER_CONN_MAX 64   /* connections served at once */
#define PEER_READ_MS 10000 /* a request must arrive within this */
#define PEER_CALL_MS 5000  /* one call to a peer, connect to reply */
#define PEER_FANOUT_MAX 16 /* calls in flight at once */

struct agent;
struct peer_channel;

/* A peer op: the agent whose channel took the request, the asker (its
 * address, the credential's uid: root), the request. */
typedef cJSON *(*peer_op_fn)(struct agent *a, const struct peernet_peer *peer,
			     const cJSON *req);

struct peer_op {
	const char *name;
	peer_op_fn fn;
};

/* An op's {"job":J,"dataset":I} (stage_entry, spread_plan): 0 with
 * *ret_id and *ret_i (< PROFILE_MAX_DATASETS), or -1 with one line in
 * err ("key 'job': missing", "OP: bad dataset index"). */
int peer_job_dataset(const cJSON *req, const char *op, uint32_t *ret_id,
		     size_t *ret_i, char *err, size_t errlen);

/* daemon/cluster/peer_ops.c, ended by { NULL, NULL }. */
extern const struct peer_op peer_ops[];

/* The channel of agent A (A->conf must outlive it): made, not yet
 * listening. NULL on ENOMEM. */
struct peer_channel *peer_create(struct agent *a);

/* The `prestage` op of the node's socket as root (any user's dataset,
 * named by "user"), which peer_ops.c's `prestage` (iostagectld's
 * pre-staging) runs: main() registers daemon/ops.h's ops_prestage_root
 * before peer_start, so the node channel never calls up into the
 * socket's code. Unset, `prestage` is refused. */
typedef cJSON *(*peer_prestage_fn)(struct agent *a, const cJSON *req);
void peer_set_prestage(struct peer_channel *pc, peer_prestage_fn fn);

/* Run the registered prestage for REQ: its reply, or NULL when none is
 * registered (PC NULL included). */
cJSON *peer_run_prestage(struct peer_channel *pc, const cJSON *req);

/* Listen on PeerListen:PeerPort and serve in a thread. PeerPort=0: off.
 * Never fatal: a failure is logged and multi-node jobs then see this node
 * as unreachable. */
void peer_start(struct peer_channel *pc);

/* Stop serving (waits up to a few seconds for connection threads); calls
 * to other nodes still work. NULL, or not started: a no-op. */
void peer_stop(struct peer_channel *pc);

/* Stop and free PC. Nothing may call through it any more. NULL: no-op. */
void peer_destroy(struct peer_channel *pc);

/* Is the channel on here (PeerPort != 0; PC NULL: no)? When it is off,
 * multi-node jobs behave as before it existed: each node applies its own
 * outcome and files its own part. */
bool peer_enabled(const struct peer_channel *pc);

/* This node's name (NodeName), as other nodes know it ("" for NULL). */
const char *peer_self(const struct peer_channel *pc);

/* One request REQ to NODE's iostaged within TIMEOUT_MS: the reply (caller
 * deletes; check "ok") or NULL with one line in err; *ret_unreachable
 * (may be NULL) says whether NODE could not be connected to at all. */
cJSON *peer_call(const struct peer_channel *pc, const char *node,
		 const cJSON *req, int timeout_ms, int *ret_unreachable,
		 char *err, size_t errlen);

/* REQ to each of NODES[N] at once (at most PEER_FANOUT_MAX in flight):
 * replies[i] (caller deletes) or NULL with errs[i] set and unreachable[i]
 * telling why. */
void peer_call_many(const struct peer_channel *pc, const char *const *nodes,
		    size_t n, const cJSON *req, int timeout_ms, cJSON **replies,
		    char (*errs)[256], int *unreachable);

/* What a connection thread does with connection FD: read one request
 * (framing, credential; not a byte past its line), serve fetch_open to
 * any uid, refuse another op whose credential is not root's, run the op.
 * A reply (caller deletes; NULL only on ENOMEM), or PEERSERVE_TAKEN
 * (common/net/peerserve.h) when a fetch session answered on FD itself.
 * Non-static for the unit tests and fuzz_peer_request. */
cJSON *peer_serve_fd(struct peer_channel *pc, int fd);

/* Decode credentials with DECODE instead of munged (NULL: munged's):
 * the unit tests' and fuzz_peer_request's stand-in. Before peer_start. */
void peer_set_decoder(struct peer_channel *pc, mauth_decode_fn decode);

/* The channel's fetch server, for its counts (NULL for NULL). */
struct peer_fetch;
const struct peer_fetch *peer_fetcher(const struct peer_channel *pc);

#endif /* IOSTAGE_DAEMON_PEER_H */
