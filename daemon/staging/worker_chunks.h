/* worker_chunks.h - the chunks a node's part holds of a spread dataset's
 * files too large for one node (issue 29 item 3; docs/STAGING.md, "Chunks
 * of files too large for one node").
 *
 * The stage worker (--spread) leaves a file that spread_chunked() cuts
 * out of the part's data (no node holds it whole) and keeps the chunks
 * spread_chunk_owner() gives this node instead, each a file of the
 * version's PARTCHUNKS_DIR named by partchunk_name(), of the chunk's
 * length, read-only, with the file's mtime (common/fs/partchunks.h).
 * What the part's budget leaves after its whole files goes to the chunks
 * by descending score (ties: path, then index), as files are taken, so a
 * node short of room keeps the same chunks from one job to the next.
 *
 * Runs in the worker, as the job's user (or PublicUser). Nothing logs.
 */
#ifndef IOSTAGE_WORKER_CHUNKS_H
#define IOSTAGE_WORKER_CHUNKS_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/fs/manifest.h"
#include "common/sched/spread.h"

#define WORKER_CHUNKS_NO_BUDGET UINT64_MAX

struct worker_chunk {
	const struct manifest_entry *file; /* the listing's */
	uint64_t index, off, len;
	double score; /* this node's, spread_chunk_score */
	bool held;    /* in the directory compared (worker_chunks_mark) */
};

/* The chunks this node holds (in listing and index order) and what the
 * budget left out. */
struct worker_chunks {
	struct worker_chunk *v;
	size_t n;
	uint64_t bytes;
	size_t marked; /* held in the directory compared, and their bytes */
	uint64_t marked_bytes;
	uint64_t over_budget_chunks, over_budget_bytes;
	uint64_t files; /* chunked files of the dataset, whoever holds them */
};

/* What worker_chunks_build did. */
struct worker_chunks_result {
	uint64_t linked, linked_bytes;   /* from the previous version */
	uint64_t fetched, fetched_bytes; /* from another node */
	uint64_t copied, copied_bytes;   /* from the source */
};

/* Chunk INDEX of file REL, LEN bytes cut from it as of MTIME_NS, from
 * another node (worker_peers_fetch_chunk) into DST_FD at 0. 0, or -1:
 * the chunk is then copied from the source over whatever it wrote. */
typedef int (*worker_chunk_fetch_fn)(const char *rel, uint64_t index,
				     uint64_t len, int64_t mtime_ns, int dst_fd,
				     void *arg);

/* Where worker_chunks_build takes a chunk from, in this order. */
struct worker_chunks_from {
	int prev_dirfd; /* a previous version's chunks directory (hard
			 * links), -1: none */
	worker_chunk_fetch_fn fetch; /* another node, NULL: none */
	void *fetch_arg;
	/* the dataset's top on the PFS, opened beneath without a symlink;
	 * a chunk's file must still be a regular file of the listing's
	 * size and mtime */
	int src_dirfd;
	const _Atomic uint64_t *rate; /* the PFS's bytes/s at most (NULL:
				       * unlimited; common/fs/ratelimit.h) */
};

/* The chunks node SELF of PLAN holds of LISTING's (the whole dataset's)
 * chunked files, within BUDGET bytes (WORKER_CHUNKS_NO_BUDGET: all it
 * owns). 0 with *ret (worker_chunks_free), or -1 with ENOMEM. */
int worker_chunks_plan(const struct manifest *listing,
		       const struct spread_plan *plan, unsigned self,
		       uint64_t budget, struct worker_chunks *ret);

void worker_chunks_free(struct worker_chunks *c);

/* Mark (held) each chunk of C that the chunks directory DIRFD (-1: none)
 * holds: a regular file of its length and its file's mtime and, with
 * SRC_DIRFD >= 0 (verify=checksum: the dataset's top on the PFS), of the
 * same bytes as its range of the file there (both read and hashed,
 * xxh3-128: a file rewritten with its size and mtime kept shows so).
 * Sets marked and marked_bytes: the version checked holds the part's
 * chunks when every one is marked, and a build links the marked ones
 * from the previous version. A chunk that cannot be read either way is
 * not marked (the build then reads the PFS, and says what failed). */
void worker_chunks_mark(struct worker_chunks *c, int dirfd, int src_dirfd);

/* Make PARTCHUNKS_DIR under the directory DST_DIRFD (it must not exist)
 * with every chunk of C, each taken from the first of FROM that has it:
 * hard-linked from the previous version when worker_chunks_mark marked
 * it there, else fetched from another node, else copied from the
 * source. Chunk files get mode 0444 with PUBLIC, else 0400, and the
 * directory 0555 or 0500, once complete; synced. PROGRESS (may be NULL)
 * is called with the bytes placed so far after each chunk. 0 with *ret,
 * or -1 with errno and one line in err ("cannot write chunks/<name> of
 * big.bin: No space left on device"); on failure the directory is
 * removed again. */
int worker_chunks_build(const struct worker_chunks *c,
			const struct worker_chunks_from *from, int dst_dirfd,
			bool public,
			void (*progress)(uint64_t bytes, void *arg),
			void *progress_arg, struct worker_chunks_result *ret,
			char *err, size_t errlen);

#endif /* IOSTAGE_WORKER_CHUNKS_H */
