/* partchunks.c - the names and extents of a part's chunks (partchunks.h). */
#include <inttypes.h>
#include <stdio.h>

#include <xxhash.h>

#include "common/fs/partchunks.h"
#include "common/sched/spread.h"

void partchunk_name(const char *rel, size_t len, uint64_t index,
		    char ret[PARTCHUNK_NAME_MAX])
{
	XXH128_hash_t h = XXH3_128bits(rel, len);

	snprintf(ret, PARTCHUNK_NAME_MAX,
		 "%016" PRIx64 "%016" PRIx64 ".%" PRIu64, (uint64_t)h.high64,
		 (uint64_t)h.low64, index);
}

void partchunk_extent(uint64_t size, uint64_t index, uint64_t *ret_off,
		      uint64_t *ret_len)
{
	uint64_t c = spread_chunk_bytes(size);

	if (index >= spread_chunk_count(size)) {
		*ret_off = size;
		*ret_len = 0;
		return;
	}
	*ret_off = index * c;
	*ret_len = size - *ret_off < c ? size - *ret_off : c;
}
