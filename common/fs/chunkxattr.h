/* chunkxattr.h - how the spread view tells a task where a cut file's
 * own chunks are (issue 29 item 3; docs/STAGING.md, "Reading a node's
 * own chunks").
 *
 * A file too large for one node (common/sched/spread.h, spread_chunked)
 * is read through the view, whose every byte crosses FUSE even when its
 * chunk is a file on this node's NVMe. libiostage-localread.so
 * (localread/), preloaded into the job's tasks, reads those chunks
 * straight from their files instead; it learns where they are from the
 * view, with fgetxattr(CHUNKXATTR_NAME) on the file the task opened (the
 * overlay passes user.* through to the FUSE file). The value is one line
 * of text, fields separated by one blank:
 *
 *     1 SIZE CHUNK PREFIX HELD DIR
 *
 *   1       the format's version
 *   SIZE    the file's bytes, decimal
 *   CHUNK   its chunk size (spread_chunk_bytes), decimal
 *   PREFIX  the 32 hex digits before '.' of its chunks' names
 *           (partchunk_name): chunk I is the file DIR/PREFIX.I
 *   HELD    the chunks this node holds by the job's plan, one hex digit
 *           per four (digit D, bit K: chunk 4D + K), ceil(chunks / 4)
 *           digits
 *   DIR     the part's chunks directory, absolute; last, for it may hold
 *           blanks
 *
 * The view answers only for a file it cuts and of which this node holds
 * a chunk; every other file and name has no such attribute (ENODATA).
 * Both sides build and read the value here, so the two cannot drift.
 * Library code: no logging, no allocation; built into the view and,
 * standalone, into the preloaded library.
 */
#ifndef IOSTAGE_CHUNKXATTR_H
#define IOSTAGE_CHUNKXATTR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define CHUNKXATTR_NAME "user.iostage.chunks"
#define CHUNKXATTR_VERSION 1
#define CHUNKXATTR_PREFIX_LEN 32
/* The kernel's bound on an attribute's value (XATTR_SIZE_MAX): a file
 * with more chunks than fit says nothing and is read through the view. */
#define CHUNKXATTR_VALUE_MAX 65536

/* A parsed value; its pointers point into the value parsed. */
struct chunkxattr {
	uint64_t size, chunk_bytes, nchunks;
	char prefix[CHUNKXATTR_PREFIX_LEN + 1];
	const char *held; /* ceil(nchunks / 4) hex digits */
	const char *dir;  /* NUL-terminated: the end of the value */
};

/* Is chunk INDEX held here by the plan? */
typedef bool (*chunkxattr_held_fn)(void *arg, uint64_t index);

/* The value for a file of SIZE bytes cut into chunks of CHUNK_BYTES whose
 * chunk names start with PREFIX (CHUNKXATTR_PREFIX_LEN hex digits), HELD
 * saying which chunks are here, in directory DIR (absolute), written into
 * BUF (LEN bytes; BUF may be NULL when LEN is 0), not NUL-terminated.
 * Returns the value's length (whether or not it fit, as snprintf does;
 * more than LEN: BUF holds nothing meaningful), or -1 with EINVAL (a
 * chunk size of 0, a bad prefix, a relative dir) or E2BIG (longer than
 * CHUNKXATTR_VALUE_MAX). */
long chunkxattr_format(char *buf, size_t len, uint64_t size,
		       uint64_t chunk_bytes, const char *prefix,
		       chunkxattr_held_fn held, void *arg, const char *dir);

/* Parse VALUE (NUL-terminated; LEN bytes before the NUL) into *ret.
 * 0, or -1 with EINVAL (not this format and version, fields out of
 * range, HELD of the wrong length or not hex, DIR not absolute);
 * *ret untouched on failure. */
int chunkxattr_parse(const char *value, size_t len, struct chunkxattr *ret);

/* Is chunk INDEX held here (false past the last)? */
bool chunkxattr_held(const struct chunkxattr *x, uint64_t index);

/* Where the bytes at OFF lie: chunk *ret_index, at *ret_at within it, and
 * how many of LEN bytes stay in that chunk (*ret_len; 0 at or past the
 * file's end). */
void chunkxattr_piece(const struct chunkxattr *x, uint64_t off, uint64_t len,
		      uint64_t *ret_index, uint64_t *ret_at, uint64_t *ret_len);

/* Chunk INDEX's length (0 past the last). */
uint64_t chunkxattr_chunk_len(const struct chunkxattr *x, uint64_t index);

/* Chunk INDEX's file name, beneath DIR, into BUF (at least
 * CHUNKXATTR_NAME_MAX bytes): "PREFIX.INDEX". */
#define CHUNKXATTR_NAME_MAX (CHUNKXATTR_PREFIX_LEN + 1 + 20 + 1)
void chunkxattr_chunk_name(const struct chunkxattr *x, uint64_t index,
			   char buf[CHUNKXATTR_NAME_MAX]);

#endif /* IOSTAGE_CHUNKXATTR_H */
