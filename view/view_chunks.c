/* view_chunks.c - an open chunked file's pieces, chunks sent to the PFS
 * and local chunk file kept (see view_chunks.h).
 *
 * Why a read-write lock around the one fd kept: reads of the same chunk
 * (the kernel's readahead runs several at once) share it under the read
 * side; replacing it takes the write side, and only if no read holds it
 * (trywrlock): a reader that opened another chunk then uses its own fd
 * once rather than wait.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <unistd.h>

#include "common/fs/partchunks.h"
#include "common/sched/spread.h"
#include "view/view_chunks.h"

struct view_chunks {
	uint64_t size, chunk_bytes, count;
	_Atomic uint64_t *to_pfs; /* a bit per chunk */
	pthread_rwlock_t lock;    /* fd and fd_index */
	int fd;                   /* a local chunk file, or -1 */
	uint64_t fd_index;
};

int view_chunks_create(uint64_t size, struct view_chunks **ret)
{
	struct view_chunks *c = calloc(1, sizeof(*c));
	uint64_t words;

	if (!c)
		return -ENOMEM;
	c->size = size;
	c->chunk_bytes = spread_chunk_bytes(size);
	c->count = spread_chunk_count(size);
	words = c->count / 64 + 1;
	if (words > SIZE_MAX / sizeof(*c->to_pfs) ||
	    !(c->to_pfs = calloc((size_t)words, sizeof(*c->to_pfs)))) {
		free(c);
		return -ENOMEM;
	}
	for (uint64_t w = 0; w < words; w++)
		atomic_init(&c->to_pfs[w], 0);
	pthread_rwlock_init(&c->lock, NULL);
	c->fd = -1;
	*ret = c;
	return 0;
}

void view_chunks_destroy(struct view_chunks *c)
{
	if (!c)
		return;
	if (c->fd >= 0)
		close(c->fd);
	pthread_rwlock_destroy(&c->lock);
	free(c->to_pfs);
	free(c);
}

void view_chunks_piece(const struct view_chunks *c, uint64_t off, size_t len,
		       struct view_piece *ret)
{
	ret->index = off / c->chunk_bytes;
	partchunk_extent(c->size, ret->index, &ret->chunk_off, &ret->chunk_len);
	ret->at = off - ret->chunk_off;
	ret->len = ret->chunk_len - ret->at < len
		       ? (size_t)(ret->chunk_len - ret->at)
		       : len;
}

bool view_chunks_to_pfs(const struct view_chunks *c, uint64_t index)
{
	if (index >= c->count)
		return true;
	return atomic_load(&c->to_pfs[index / 64]) &
	       (UINT64_C(1) << (index % 64));
}

void view_chunks_mark_pfs(struct view_chunks *c, uint64_t index)
{
	if (index < c->count)
		atomic_fetch_or(&c->to_pfs[index / 64], UINT64_C(1)
							    << (index % 64));
}

int view_chunks_hold(struct view_chunks *c, uint64_t index)
{
	pthread_rwlock_rdlock(&c->lock);
	if (c->fd >= 0 && c->fd_index == index)
		return c->fd;
	pthread_rwlock_unlock(&c->lock);
	return -1;
}

void view_chunks_unhold(struct view_chunks *c)
{
	pthread_rwlock_unlock(&c->lock);
}

void view_chunks_keep(struct view_chunks *c, uint64_t index, int fd)
{
	int old = fd;

	if (pthread_rwlock_trywrlock(&c->lock) == 0) {
		old = c->fd;
		c->fd = fd;
		c->fd_index = index;
		pthread_rwlock_unlock(&c->lock);
	}
	if (old >= 0)
		close(old);
}
