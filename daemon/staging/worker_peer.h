/* worker_peer.h - the stage worker's sessions to the node that holds a
 * version of the entry it builds (`--peer HOST:PORT --peer-entry
 * TIER/KEY.vN [--peer-job J]`; docs/STAGING.md, "Filling from another
 * node").
 *
 * The first session gives the version's manifest, which the copy engine
 * compares SRC with (its `previous`); files equal in it are fetched
 * through worker_peer_fetch (the engine's `fetch`), which draws on a pool
 * of sessions: at most one per copy thread, opened when a thread first
 * needs one, a broken one closed and replaced. A session the server
 * refuses while others are open (PeerFetchSessions) caps the pool at the
 * sessions it has, and the thread waits for one of them;
 * after WORKER_PEER_OPEN_TRIES failures to open in a row the peer is
 * gone, and every later fetch returns -1 at once: the engine copies
 * those files from SRC instead. Nothing here writes on stdout; the
 * worker says what happened from worker_peer_summary.
 */
#ifndef IOSTAGE_DAEMON_WORKER_PEER_H
#define IOSTAGE_DAEMON_WORKER_PEER_H

#include <stddef.h>
#include <stdint.h>

#include "common/fs/manifest.h"
#include "common/net/mauth.h"

/* Sessions one worker holds at most: a few streams fill the link between
 * two nodes, and the holder's PeerFetchSessions (default 8) is shared by
 * every node filling from it at once: a job's other nodes all fill from
 * its head. One worker taking them all left another a single session
 * (measured: the third node of a 3-node job staged 3 s after the second). */
#define WORKER_PEER_SESSIONS 4
#define WORKER_PEER_OPEN_TRIES 3  /* opens failed in a row: the peer is gone */
#define WORKER_PEER_OPEN_MS 10000 /* a session's open and its manifest */
#define WORKER_PEER_IO_MS 20000   /* each read of a file's bytes */
#define WORKER_PEER_BUSY_MS 100   /* between tries of a busy node */

/* Where the version is: --peer HOST:PORT, --peer-entry TIER/KEY.vN. */
struct worker_peer_target {
	char host[256];
	unsigned port;
	char tier[32];
	char key[33];
	unsigned version;
	const char *munge_socket; /* --munge-socket, NULL: libmunge's */
	/* --peer-job J: the job the sessions read for (a spread dataset's
	 * part is served only for its job); 0: none */
	uint32_t job;
};

struct worker_peer;

/* HOSTPORT ("n1:6826", "[fe80::1]:6826") and ENTRY ("nvme/K.v3") into
 * *ret (munge_socket NULL, job 0). 0, or -1 with what is wrong in err. */
int worker_peer_parse(const char *hostport, const char *entry,
		      struct worker_peer_target *ret, char *err, size_t errlen);

/* Open the first session to T (credentials from ENCODE, NULL: munged's)
 * for a pool of at most MAX_SESSIONS, and parse the manifest it sent.
 * 0 with *ret (worker_peer_close) and *ret_manifest (manifest_destroy;
 * valid as long as the caller keeps it), or -1 with one line in err. */
int worker_peer_open(const struct worker_peer_target *t, unsigned max_sessions,
		     mauth_encode_fn encode, struct worker_peer **ret,
		     struct manifest **ret_manifest, char *err, size_t errlen);

/* The copy engine's fetch (common/fs/copyengine.h; ARG is the pool):
 * REL into DST_FD, SIZE bytes. 0, or -1 (the file is then copied from
 * SRC). */
int worker_peer_fetch(const char *rel, int dst_fd, uint64_t size, void *arg);

/* One line saying what fell back and why, into BUF ("" when every fetch
 * worked): "peer n1:6826: 3 files copied from the source instead; first:
 * node n1:6826: 'a/b': ..." */
void worker_peer_summary(const struct worker_peer *p, char *buf, size_t len);

/* Close every session and free P. NULL: no-op. */
void worker_peer_close(struct worker_peer *p);

/* --- several nodes at once (--peers: a fill by parts) --------------------
 *
 * A fill by parts (docs/STAGING.md, "Filling by parts") takes each file
 * from the node whose part holds it: a set of pools, one per node, and
 * the manifests they sent. A file goes to the first pool whose manifest
 * lists it (the order of --peers); the copy engine's PREVIOUS is the
 * union of those manifests (worker_peers_merge), in the same order, so
 * that the entry it compared SRC with is the one the file is fetched by.
 */

/* Nodes a worker fills from at once, at most. */
#define WORKER_PEERS_MAX 64

struct worker_peers;

/* LIST ("HOST:PORT=TIER/KEY.vN[,...]", at most WORKER_PEERS_MAX) into
 * RET[WORKER_PEERS_MAX] (munge_socket NULL). The count, or -1 with what
 * is wrong in err. */
int worker_peers_parse(const char *list, struct worker_peer_target *ret,
		       char *err, size_t errlen);

/* Open a pool of at most MAX_SESSIONS for each of T[0..N). A node that
 * cannot be used is left out: NOTE (called with one line per node) says
 * why, and its files come from SRC. *ret (worker_peers_close) even when
 * none could be opened (every fetch then returns -1). 0, or -1 when out
 * of memory. */
int worker_peers_open(const struct worker_peer_target *t, size_t n,
		      unsigned max_sessions, mauth_encode_fn encode,
		      void (*note)(const char *line, void *arg), void *arg,
		      struct worker_peers **ret);

/* The union of BASE (NULL: none) and every open pool's manifest, the
 * first listing a path winning; BASE itself when no pool is open, a new
 * manifest otherwise (BASE then destroyed). NULL when out of memory (BASE
 * destroyed too). */
struct manifest *worker_peers_merge(const struct worker_peers *ps,
				    struct manifest *base);

/* The copy engine's fetch (ARG is the set): REL from the first pool whose
 * manifest lists it as a file. 0, or -1 (copied from SRC then). */
int worker_peers_fetch(const char *rel, int dst_fd, uint64_t size, void *arg);

/* Bytes of a chunk asked of a node at once (a range request each). */
#define WORKER_PEER_CHUNK_STEP (1u << 20)

/* worker_chunks_build's fetch (worker_chunks.h; ARG is the set): chunk
 * INDEX of REL, LEN bytes as of MTIME_NS, from the first pool that holds
 * it, asked in turn (no manifest lists chunks; a node that does not hold
 * one refuses it at once, and one that broke is counted in its summary).
 * 0, or -1 (copied from SRC then). */
int worker_peers_fetch_chunk(const char *rel, uint64_t index, uint64_t len,
			     int64_t mtime_ns, int dst_fd, void *arg);

/* Pools open. */
size_t worker_peers_count(const struct worker_peers *ps);

/* Each open pool's worker_peer_summary that is not empty, through NOTE. */
void worker_peers_summary(const struct worker_peers *ps,
			  void (*note)(const char *line, void *arg), void *arg);

/* Close every pool and free PS. NULL: no-op. */
void worker_peers_close(struct worker_peers *ps);

#endif /* IOSTAGE_DAEMON_WORKER_PEER_H */
