/* peer_fetch.h - the server side of fetch sessions on the node channel:
 * another node's stage worker (running as a job's user) copies the files
 * of a cache version this node holds instead of reading the PFS
 * (common/net/peerfetch.h is the protocol and the client; docs/STAGING.md,
 * "Filling from another node").
 *
 * Unlike the channel's other ops, `fetch_open` is served to any user's
 * MUNGE credential and then authorized by the cache
 * (cache_open_served: the user's own entries, public ones; root any),
 * and it keeps its connection: the session answers on it until the
 * client is done (peerserve's PEERSERVE_TAKEN). PeerFetchSessions bounds
 * the sessions at once (one over it gets a one-line refusal, and its
 * worker reads the PFS instead), PeerFetchRate the bytes per second all
 * of them send (common/fs/ratelimit.h).
 */
#ifndef IOSTAGE_DAEMON_PEER_FETCH_H
#define IOSTAGE_DAEMON_PEER_FETCH_H

#include <stdint.h>

#include <cJSON.h>

#include "common/net/peernet.h"

struct agent;
struct peer_fetch;

/* What the sessions served so far add up to (status, /metrics). */
struct peer_fetch_counts {
	unsigned active;   /* sessions being served */
	uint64_t sessions; /* sessions opened */
	uint64_t refused;  /* fetch_open refused (any reason, bound included) */
	uint64_t files;    /* files sent whole */
	uint64_t bytes;    /* their bytes */
};

/* The fetch server of agent A (A->conf and A->cache must outlive it).
 * NULL on ENOMEM. */
struct peer_fetch *peer_fetch_create(struct agent *a);

/* Sessions end at their next step (a request, a slice of a file): call
 * before waiting for the connection threads. NULL: no-op. */
void peer_fetch_stop(struct peer_fetch *f);

/* Free F; no session may run. NULL: no-op. */
void peer_fetch_destroy(struct peer_fetch *f);

/* Op fetch_open REQ from PEER (its credential checked, any uid) on the
 * connection FD: either the refusal to send (caller deletes; NULL on
 * ENOMEM), or PEERSERVE_TAKEN once the session it served on FD is over
 * (FD is then only to be closed). Logs refusals. */
cJSON *peer_fetch_serve(struct peer_fetch *f, int fd,
			const struct peernet_peer *peer, const cJSON *req);

/* The counts so far into *ret (F NULL: zeros). */
void peer_fetch_counts(const struct peer_fetch *f,
		       struct peer_fetch_counts *ret);

#endif /* IOSTAGE_DAEMON_PEER_FETCH_H */
