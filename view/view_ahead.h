/* view_ahead.h - this node's chunks of a file read from its disk ahead of
 * a reader that goes through them in order (docs/STAGING.md, "Reading a
 * node's own chunks").
 *
 * Why: the kernel asks the view for a file's pages a request at a time
 * (128 KiB at its default readahead, 1 MiB as iostaged sets it), one or
 * two in flight, and each request waits for the view's read of the
 * chunk file; the chunk file's own readahead does not reach
 * past the chunk, and a reader of this node's chunks skips the other
 * nodes' chunks between them. So cold, the disk and the FUSE transfer
 * took turns, and the view read a node's own chunks at 0.45-0.82x of
 * the chunk files' speed. Asking the disk for the next VIEW_AHEAD_BYTES
 * of this node's chunks (across chunk ends, over the others' chunks)
 * keeps it a window ahead of the transfer.
 *
 * Two pieces:
 *   - a window per open file (struct view_ahead_window): after each read
 *     of this node's bytes, which ranges of its chunks to ask for next.
 *     A stream starts at a read that begins a chunk or carries on from
 *     the last one; a read past the window's half asks the next window.
 *     Random reads ask for nothing, so a reader of scattered records
 *     costs the disk no more than it reads.
 *   - a reader thread (struct view_ahead) that takes those ranges off a
 *     bounded queue and asks the kernel to read them (POSIX_FADV_WILLNEED
 *     on the chunk's file), so that no FUSE thread waits on the disk for
 *     bytes it was not asked. A full queue drops the range: a hint.
 *
 * Thread-safe. Library code: nothing logs.
 */
#ifndef IOSTAGE_VIEW_AHEAD_H
#define IOSTAGE_VIEW_AHEAD_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/sched/spread.h"

#define VIEW_AHEAD_BYTES (UINT64_C(16) << 20) /* a window of local bytes */
#define VIEW_AHEAD_QUEUE 64  /* ranges waiting for the reader thread */
#define VIEW_AHEAD_SCAN 1024 /* chunks looked past for the next of ours */
/* ranges in one window at most: chunks are SPREAD_CHUNK_MIN or more */
#define VIEW_AHEAD_PIECES (VIEW_AHEAD_BYTES / SPREAD_CHUNK_MIN + 1)

/* The file a window walks: this node's chunks are those whose
 * spread_chunk_owner is SELF. */
struct view_ahead_file {
	const struct spread_plan *plan;
	unsigned self;
	const char *rel;
	size_t rel_len;
	uint64_t size;
};

/* A range of one of the file's chunks to read ahead. */
struct view_ahead_piece {
	uint64_t index;   /* the chunk */
	uint64_t at, len; /* within it */
};

/* One open file's window, in file offsets: this node's bytes in
 * [START, END) are asked for; a read past MARK asks for the next
 * window; LAST_END is where the last read ended. */
struct view_ahead_window {
	pthread_mutex_t mu;
	uint64_t start, end, mark, last_end;
};

void view_ahead_window_init(struct view_ahead_window *w);
void view_ahead_window_fini(struct view_ahead_window *w);

/* After a read of this node's bytes [OFF, OFF + LEN) of FILE (LEN > 0,
 * within one of its chunks, which is ours): the ranges to ask for next,
 * into RET (VIEW_AHEAD_PIECES of room), in file order. Their count; 0:
 * none (a random read, or the window is far enough ahead). */
size_t view_ahead_next(struct view_ahead_window *w,
		       const struct view_ahead_file *file, uint64_t off,
		       uint64_t len, struct view_ahead_piece *ret);

struct view_ahead;

/* The reader thread, opening chunk files beneath CHUNKS_FD (an O_PATH
 * directory, the caller's, open until view_ahead_stop). 0 with *ret, or
 * -errno. */
int view_ahead_start(int chunks_fd, struct view_ahead **ret);

/* Stop the thread (ranges still queued are dropped) and free A. NULL:
 * no-op. */
void view_ahead_stop(struct view_ahead *a);

/* Queue piece P of the file at REL (REL_LEN bytes) for the thread:
 * true, or false when the queue is full (dropped). */
bool view_ahead_ask(struct view_ahead *a, const char *rel, size_t rel_len,
		    const struct view_ahead_piece *p);

/* Ranges asked and read ahead (handed to the kernel) so far. */
void view_ahead_counts(struct view_ahead *a, uint64_t *ret_asked,
		       uint64_t *ret_bytes);

#endif /* IOSTAGE_VIEW_AHEAD_H */
