/* view_chunks.h - an open file of the spread view that is cut into
 * chunks (common/sched/spread.h, spread_chunked: a file too large for
 * one node; docs/STAGING.md, "Where a file's bytes come from").
 *
 * A chunked file is in no node's part data: chunk I is held by
 * spread_chunk_owner(plan, path, I), as a file of its own in that node's
 * part's chunks directory (common/fs/partchunks.h). view_source.c reads
 * such a file piece by piece, one piece per chunk a read touches, each
 * from the chunk's owner; this module keeps what that needs per open
 * file: where the pieces of a read lie, which chunks go straight to the
 * PFS (a peer refused them, or this node's copy is missing or of
 * another size), and one local chunk file kept open, so that the
 * kernel's reads of a megabyte at most do not open a chunk each time.
 *
 * Thread-safe: FUSE threads read one open file at once. Library code:
 * nothing logs.
 */
#ifndef IOSTAGE_VIEW_CHUNKS_H
#define IOSTAGE_VIEW_CHUNKS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct view_chunks;

/* The part of a read that lies in one chunk. */
struct view_piece {
	uint64_t index;                /* the chunk */
	uint64_t chunk_off, chunk_len; /* where the chunk lies in the file */
	uint64_t at;                   /* where the piece starts in it */
	size_t len;                    /* the piece's bytes */
};

/* The chunks of a file of SIZE bytes (spread_chunk_count of them, none
 * marked). 0 with *ret (view_chunks_destroy), or -ENOMEM. */
int view_chunks_create(uint64_t size, struct view_chunks **ret);

/* Close the chunk file kept and free C. NULL: no-op. No read may be
 * under way. */
void view_chunks_destroy(struct view_chunks *c);

/* The piece of the bytes [OFF, OFF + LEN) of the file that lies in the
 * chunk holding OFF, into *ret. OFF within the file, LEN > 0. */
void view_chunks_piece(const struct view_chunks *c, uint64_t off, size_t len,
		       struct view_piece *ret);

/* Does chunk INDEX go straight to the PFS? */
bool view_chunks_to_pfs(const struct view_chunks *c, uint64_t index);

/* Chunk INDEX goes straight to the PFS from now on. */
void view_chunks_mark_pfs(struct view_chunks *c, uint64_t index);

/* The fd of chunk INDEX's local file when it is the one kept, held for
 * reading until view_chunks_unhold; -1 (nothing held) when it is not. */
int view_chunks_hold(struct view_chunks *c, uint64_t index);
void view_chunks_unhold(struct view_chunks *c);

/* Keep FD, chunk INDEX's local file just opened, in place of the one
 * kept (closed); FD is C's either way (closed at once when a read holds
 * the one kept). */
void view_chunks_keep(struct view_chunks *c, uint64_t index, int fd);

#endif /* IOSTAGE_VIEW_CHUNKS_H */
