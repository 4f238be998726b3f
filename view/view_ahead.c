/* view_ahead.c - this node's chunks read ahead of an in-order reader
 * (see view_ahead.h).
 *
 * Why the window is counted in this node's bytes, not the file's: a
 * node's chunks are one in N of the file's, so a window of file bytes
 * would hold N times fewer of them on a job of N nodes; and the other
 * nodes' chunks in between are theirs to read, not this disk's.
 *
 * Why the window is asked for at its half: the disk then has half a
 * window (8 MiB, 5 ms of this machine's disk) still to give while it
 * reads the next, so the reader rarely finds it idle or waits for it.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/fs/beneath.h"
#include "common/fs/partchunks.h"
#include "view/view_ahead.h"

void view_ahead_window_init(struct view_ahead_window *w)
{
	memset(w, 0, sizeof(*w));
	pthread_mutex_init(&w->mu, NULL);
	w->mark = UINT64_MAX;
}

void view_ahead_window_fini(struct view_ahead_window *w)
{
	pthread_mutex_destroy(&w->mu);
}

/* VIEW_AHEAD_BYTES of FILE's local bytes from file offset POS on, as
 * pieces into RET; the window's end and mark into W. Their count. */
static size_t walk(struct view_ahead_window *w,
		   const struct view_ahead_file *file, uint64_t pos,
		   struct view_ahead_piece *ret)
{
	uint64_t cb = spread_chunk_bytes(file->size);
	uint64_t count = spread_chunk_count(file->size);
	uint64_t k = pos / cb, at = pos % cb, taken = 0, skipped = 0;
	const uint64_t half = VIEW_AHEAD_BYTES / 2;
	size_t n = 0;

	w->mark = UINT64_MAX; /* a short window: no next one */
	w->end = file->size;
	/* n stays below VIEW_AHEAD_PIECES by the window's arithmetic
	 * (chunks but the last are SPREAD_CHUNK_MIN or more); the bound
	 * only keeps RET safe */
	for (; k < count && n < VIEW_AHEAD_PIECES; k++, at = 0) {
		uint64_t off, len, take;

		if (spread_chunk_owner(file->plan, file->rel, file->rel_len,
				       k) != file->self) {
			if (++skipped > VIEW_AHEAD_SCAN) {
				w->end = k * cb;
				break;
			}
			continue;
		}
		skipped = 0;
		partchunk_extent(file->size, k, &off, &len);
		if (at >= len)
			continue;
		take = len - at;
		if (take > VIEW_AHEAD_BYTES - taken)
			take = VIEW_AHEAD_BYTES - taken;
		ret[n++] = (struct view_ahead_piece){ k, at, take };
		if (taken < half && taken + take >= half)
			w->mark = off + at + (half - taken);
		taken += take;
		if (taken == VIEW_AHEAD_BYTES) {
			w->end = off + at + take;
			break;
		}
	}
	return n;
}

size_t view_ahead_next(struct view_ahead_window *w,
		       const struct view_ahead_file *file, uint64_t off,
		       uint64_t len, struct view_ahead_piece *ret)
{
	uint64_t end = off + len;
	bool inside, begins;
	size_t n = 0;

	pthread_mutex_lock(&w->mu);
	inside = w->end > w->start && off >= w->start && off < w->end;
	begins = off % spread_chunk_bytes(file->size) == 0 ||
		 (w->last_end && off == w->last_end);
	/* A stream's window runs from where it began, so that the reads
	 * still coming in behind the window's newest part (the kernel's
	 * run several at once) are inside it, not a stream of their own. */
	if (inside) {
		if (end > w->mark)
			n = walk(w, file, w->end, ret);
	} else if (begins) {
		w->start = off;
		n = walk(w, file, end, ret);
	}
	w->last_end = end;
	pthread_mutex_unlock(&w->mu);
	return n;
}

/* A range waiting for the reader thread. */
struct ahead_item {
	char name[PARTCHUNK_NAME_MAX];
	uint64_t at, len;
};

struct view_ahead {
	int chunks_fd;
	pthread_t thread;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	struct ahead_item queue[VIEW_AHEAD_QUEUE];
	unsigned head, count; /* under mu */
	bool stop;            /* under mu */
	_Atomic uint64_t asked, bytes;
};

static void *reader_main(void *arg)
{
	struct view_ahead *a = arg;

	for (;;) {
		struct ahead_item it;
		int fd;

		pthread_mutex_lock(&a->mu);
		while (!a->stop && !a->count)
			pthread_cond_wait(&a->cv, &a->mu);
		if (a->stop) {
			pthread_mutex_unlock(&a->mu);
			return NULL;
		}
		it = a->queue[a->head];
		a->head = (a->head + 1) % VIEW_AHEAD_QUEUE;
		a->count--;
		pthread_mutex_unlock(&a->mu);
		/* O_NONBLOCK: whatever a name turned out to be, opening it
		 * never waits; posix_fadvise refuses what is not a file */
		fd = beneath_open(a->chunks_fd, it.name, O_RDONLY | O_NONBLOCK,
				  0);
		if (fd < 0)
			continue; /* not held (yet): the read will see */
		if (posix_fadvise(fd, (off_t)it.at, (off_t)it.len,
				  POSIX_FADV_WILLNEED) == 0)
			atomic_fetch_add(&a->bytes, it.len);
		close(fd);
	}
}

int view_ahead_start(int chunks_fd, struct view_ahead **ret)
{
	struct view_ahead *a = calloc(1, sizeof(*a));
	int e;

	if (!a)
		return -ENOMEM;
	a->chunks_fd = chunks_fd;
	pthread_mutex_init(&a->mu, NULL);
	pthread_cond_init(&a->cv, NULL);
	e = pthread_create(&a->thread, NULL, reader_main, a);
	if (e) {
		pthread_cond_destroy(&a->cv);
		pthread_mutex_destroy(&a->mu);
		free(a);
		return -e;
	}
	*ret = a;
	return 0;
}

void view_ahead_stop(struct view_ahead *a)
{
	if (!a)
		return;
	pthread_mutex_lock(&a->mu);
	a->stop = true;
	pthread_cond_signal(&a->cv);
	pthread_mutex_unlock(&a->mu);
	pthread_join(a->thread, NULL);
	pthread_cond_destroy(&a->cv);
	pthread_mutex_destroy(&a->mu);
	free(a);
}

bool view_ahead_ask(struct view_ahead *a, const char *rel, size_t rel_len,
		    const struct view_ahead_piece *p)
{
	struct ahead_item *it;

	pthread_mutex_lock(&a->mu);
	if (a->count == VIEW_AHEAD_QUEUE) {
		pthread_mutex_unlock(&a->mu);
		return false;
	}
	it = &a->queue[(a->head + a->count) % VIEW_AHEAD_QUEUE];
	partchunk_name(rel, rel_len, p->index, it->name);
	it->at = p->at;
	it->len = p->len;
	a->count++;
	atomic_fetch_add(&a->asked, 1);
	pthread_cond_signal(&a->cv);
	pthread_mutex_unlock(&a->mu);
	return true;
}

void view_ahead_counts(struct view_ahead *a, uint64_t *ret_asked,
		       uint64_t *ret_bytes)
{
	*ret_asked = atomic_load(&a->asked);
	*ret_bytes = atomic_load(&a->bytes);
}
