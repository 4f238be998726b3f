/* partchunks.h - where a spread dataset's chunks are kept in a part
 * (issue 29 item 3: files too large for one node; docs/STAGING.md,
 * "Chunks of files too large for one node").
 *
 * A file that common/sched/spread.h cuts into chunks (spread_chunked) is
 * in no node's part data: each node keeps the chunks it holds as files
 * of their own in the part version's PARTCHUNKS_DIR, beside data/ and
 * not in it, because the overlay the job reads (lowerdir = data) would
 * show them. A chunk's file is named from the file's relative path and
 * the chunk's index alone (partchunk_name): flat, one directory, no
 * path a user chose in it; its size is the chunk's length and its mtime
 * the file's, so a later job checks it by stat as a manifest checks a
 * file. Library code: no logging, no allocation.
 */
#ifndef IOSTAGE_PARTCHUNKS_H
#define IOSTAGE_PARTCHUNKS_H

#include <stddef.h>
#include <stdint.h>

#define PARTCHUNKS_DIR "chunks"
/* 32 hex digits, '.', up to 20 decimal digits, NUL */
#define PARTCHUNK_NAME_MAX 56

/* The name of chunk INDEX of the file at relative path REL (LEN bytes):
 * "<xxh3-128 of REL, 32 hex digits>.<INDEX>". */
void partchunk_name(const char *rel, size_t len, uint64_t index,
		    char ret[PARTCHUNK_NAME_MAX]);

/* Where chunk INDEX of a file of SIZE bytes lies in it (spread.h's
 * chunk size): *ret_off, and *ret_len bytes (0 past the last chunk). */
void partchunk_extent(uint64_t size, uint64_t index, uint64_t *ret_off,
		      uint64_t *ret_len);

#endif /* IOSTAGE_PARTCHUNKS_H */
