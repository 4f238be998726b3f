/* view_source.h - where the bytes of a spread dataset's file come from,
 * in the spread view (docs/STAGING.md, "The spread view").
 *
 * A file's owner is spread_owner(plan, path): the node whose part holds
 * it. Its bytes come from, in order:
 *   - this node's part (--local), when it is the owner: the file opened
 *     beneath the part's data (openat2 RESOLVE_BENEATH |
 *     RESOLVE_NO_SYMLINKS), a regular file of the listing's size;
 *   - the owner's iostaged, when another node owns it: range reads on a
 *     fetch session (common/net/peerfetch.h) for the part's entry, TIER
 *     and KEY alike on every node, its current version (the version the
 *     node's first session found is then asked for by name);
 *   - the PFS: SRC/path opened beneath SRC the same way, of the
 *     listing's size.
 * A file too large for one node (spread_chunked) is in no part's data:
 * its chunks are, each owned by spread_chunk_owner(plan, path, I), and
 * it is read piece by piece, a piece per chunk, each from, in order,
 * this node's chunk file (--chunks: partchunk_name beneath CHUNKS,
 * opened as a part's file is, of the chunk's length), the owner's
 * iostaged (range reads of the chunk: peerfetch_chunk_range), the PFS
 * (at the file's offset). A chunk refused by its owner, or missing
 * here, is read from the PFS while the file is open, without asking
 * (view_chunks.h).
 * A source that fails gives the read to the next one, so no error
 * reaches the application while the PFS can serve the bytes. A node
 * that fails (no connection, no session, a broken or short transfer) is
 * not asked again for VIEW_SOURCE_BACKOFF_MS, so a dead node costs one
 * timeout, not one per read; a node that refuses one file (it does not
 * hold it at that size), or one chunk, is not asked for that file, or
 * that chunk, again while it is open. Each node gets at most VIEW_SOURCE_SESSIONS sessions from this
 * view (every node's view asks each peer, whose PeerFetchSessions bounds
 * them all), each used by one read at a time and kept idle between reads
 * for VIEW_SOURCE_IDLE_MS (the server ends an idle one at
 * PEERFETCH_IDLE_MS); a read that finds them all busy for
 * VIEW_SOURCE_WAIT_MS reads the PFS. A session refused at opening while
 * others to the node are alive (the node's bound) does not make the node
 * failed: the view makes do with those for VIEW_SOURCE_BACKOFF_MS. A
 * pooled session that breaks is retried once on a new one.
 *
 * Thread-safe: every call may come from any FUSE thread at once. Library
 * code: nothing logs; failures the application never sees are counted.
 */
#ifndef IOSTAGE_VIEW_SOURCE_H
#define IOSTAGE_VIEW_SOURCE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "common/net/mauth.h"
#include "common/sched/spread.h"
#include "view/view_tree.h"

#define VIEW_SOURCE_BACKOFF_MS 10000 /* a failed node is left alone */
#define VIEW_SOURCE_OPEN_MS 3000     /* connect, credential, fetch_open */
#define VIEW_SOURCE_READ_MS 10000    /* one range's reply */
#define VIEW_SOURCE_SESSIONS 4       /* sessions per node at most */
#define VIEW_SOURCE_WAIT_MS 1000     /* for one of them, else the PFS */
#define VIEW_SOURCE_IDLE_MS 20000    /* an idle one is closed after */

struct view_source_conf {
	const char *src;   /* the dataset on the PFS (a directory) */
	const char *local; /* this node's part data directory; NULL: none */
	/* this node's part's chunks directory (common/fs/partchunks.h,
	 * PARTCHUNKS_DIR beside data); NULL: none */
	const char *chunks;
	const struct spread_plan *plan;
	unsigned self;          /* this node's index in plan */
	const char *tier, *key; /* the part's cache entry, on every node */
	unsigned peer_port;     /* iostaged's PeerPort, on every node */
	/* The job the view serves: every session names it, the node
	 * holding a part serves it only to that job's nodes (0: none) */
	uint32_t job;
	const char *munge_socket; /* NULL: munged's default */
	/* The tests' stand-in for munged (NULL: mauth_encode). */
	mauth_encode_fn encode;
	/* Where node i is reached (NULL, or NULL at i: its name). */
	const char *const *hosts;
};

/* What the sources served (the --stats file). */
struct view_source_stats {
	uint64_t local_bytes, peer_bytes, pfs_bytes;
	uint64_t peer_failures; /* reads a peer could not serve */
	uint64_t pfs_reads;     /* reads served from the PFS */
	uint64_t ahead_bytes; /* our chunks' bytes read ahead (view_ahead.h) */
};

struct view_source;
struct view_file; /* an open file: a FUSE file handle */

/* Sources for tree T (which must outlive them) as CONF says (its strings
 * and plan must outlive them too). SRC, LOCAL and CHUNKS are opened here
 * (as the caller: the job's user). 0 with *ret (view_source_destroy), or -1 with
 * errno and one line in err ("--src /pfs/ds: No such file or
 * directory"). */
int view_source_create(const struct view_source_conf *conf,
		       const struct view_tree *t, struct view_source **ret,
		       char *err, size_t errlen);

/* Close every session and fd. NULL: no-op. No file may be open. */
void view_source_destroy(struct view_source *vs);

/* Open regular file I of the tree for reading. Returns 0 with *ret, or
 * a negative errno (-EISDIR, -EINVAL not a file; -ENOENT, -EIO... when it
 * is this node's, not in its part and not on the PFS either; a chunked
 * file opens without either, its sources are found read by read). */
int view_source_open(struct view_source *vs, size_t i, struct view_file **ret);

/* Read up to LEN bytes at OFF of F into BUF: exactly LEN unless the file
 * ends first. The bytes read, or a negative errno (-EIO: no source could
 * serve them). */
ssize_t view_source_read(struct view_source *vs, struct view_file *f, void *buf,
			 size_t len, uint64_t off);

/* Close F. NULL: no-op. */
void view_source_release(struct view_source *vs, struct view_file *f);

/* The target of symlink I into BUF (LEN bytes, NUL-terminated, cut to
 * fit): from the local part, else the PFS, never followed. 0 or a
 * negative errno. */
int view_source_readlink(struct view_source *vs, size_t i, char *buf,
			 size_t len);

/* The node of plan that owns entry I. */
unsigned view_source_owner(const struct view_source *vs, size_t i);

/* The counts so far. */
void view_source_stats(const struct view_source *vs,
		       struct view_source_stats *ret);

#endif /* IOSTAGE_VIEW_SOURCE_H */
