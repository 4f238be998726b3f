/* view_stats.c - the --stats file written now and then (see
 * view_stats.h). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/base/ticker.h"
#include "view/view_stats.h"

#define VIEW_STATS_PERIOD_MS 1000

struct view_stats {
	const char *path;
	struct view_source *vs;
	struct view_source_stats last; /* as written */
	struct ticker *ticker;
};

int view_stats_write(const char *path, const struct view_source_stats *s)
{
	char tmp[PATH_MAX], text[256];
	int fd, n, e;

	if (snprintf(tmp, sizeof(tmp), "%s.tmp", path) >= (int)sizeof(tmp)) {
		errno = ENAMETOOLONG;
		return -1;
	}
	n = snprintf(text, sizeof(text),
		     "{\"local_bytes\":%" PRIu64 ",\"peer_bytes\":%" PRIu64
		     ",\"pfs_bytes\":%" PRIu64 ",\"peer_failures\":%" PRIu64
		     ",\"pfs_reads\":%" PRIu64 ",\"ahead_bytes\":%" PRIu64
		     "}\n",
		     s->local_bytes, s->peer_bytes, s->pfs_bytes,
		     s->peer_failures, s->pfs_reads, s->ahead_bytes);
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC,
		  0644);
	if (fd < 0)
		return -1;
	if (write(fd, text, (size_t)n) != n) {
		e = errno ? errno : ENOSPC;
		close(fd);
		unlink(tmp);
		errno = e;
		return -1;
	}
	if (close(fd) < 0 || rename(tmp, path) < 0) {
		e = errno;
		unlink(tmp);
		errno = e;
		return -1;
	}
	return 0;
}

static void turn(void *arg, bool poked)
{
	struct view_stats *st = arg;
	struct view_source_stats now;

	(void)poked;
	view_source_stats(st->vs, &now);
	if (!memcmp(&now, &st->last, sizeof(now)))
		return;
	/* A failed write is tried again at the next turn. */
	if (view_stats_write(st->path, &now) == 0)
		st->last = now;
}

struct view_stats *view_stats_start(const char *path, struct view_source *vs)
{
	struct view_stats *st = calloc(1, sizeof(*st));
	int e;

	if (!st)
		return NULL;
	st->path = path;
	st->vs = vs;
	view_source_stats(vs, &st->last);
	if (view_stats_write(path, &st->last) < 0)
		goto fail;
	st->ticker = ticker_start(VIEW_STATS_PERIOD_MS, false, turn, st);
	if (!st->ticker)
		goto fail;
	return st;
fail:
	e = errno;
	free(st);
	errno = e;
	return NULL;
}

int view_stats_stop(struct view_stats *st)
{
	struct view_source_stats now;
	int r;

	if (!st)
		return 0;
	ticker_stop(st->ticker);
	view_source_stats(st->vs, &now);
	r = view_stats_write(st->path, &now);
	free(st);
	return r;
}
