/* worker_chunks.c - a part's chunks: which, checked, built (see
 * worker_chunks.h).
 *
 * Why one thread and not the copy engine's pool: a chunk is 1 to 64 MiB,
 * read in one stream of copy_file_range calls, so a few large chunks keep
 * one thread busy on the PFS where the engine's threads pay for many
 * small files' opens; and the engine's tree (one destination per source
 * path) has no place for the ranges of one file under other names.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <xxhash.h>

#include "common/fs/beneath.h"
#include "common/fs/copyengine.h"
#include "common/fs/partchunks.h"
#include "common/fs/ratelimit.h"
#include "common/fs/rmtree.h"
#include "daemon/staging/worker_chunks.h"

#define CHUNK_COPY_STEP RATELIMIT_STEP

/* --- which chunks ------------------------------------------------------------ */

/* The order chunks are taken in for the budget: the firmest first. */
static int by_score(const void *x, const void *y)
{
	const struct worker_chunk *a = *(const struct worker_chunk *const *)x;
	const struct worker_chunk *b = *(const struct worker_chunk *const *)y;
	int c;

	if (a->score != b->score)
		return a->score > b->score ? -1 : 1;
	c = strcmp(a->file->path, b->file->path);
	if (c)
		return c;
	return a->index < b->index ? -1 : a->index > b->index;
}

/* Keep the head of V (N, listing order) that BUDGET takes in score order;
 * the rest are counted out. 0, or -1 with ENOMEM. */
static int apply_budget(struct worker_chunks *c, uint64_t budget)
{
	struct worker_chunk **order = malloc(c->n * sizeof(*order));
	bool *keep = calloc(c->n, sizeof(*keep));
	uint64_t used = 0;
	size_t k = 0;
	bool full = false;

	if (!order || !keep) {
		free(order);
		free(keep);
		errno = ENOMEM;
		return -1;
	}
	for (size_t i = 0; i < c->n; i++)
		order[i] = &c->v[i];
	qsort(order, c->n, sizeof(*order), by_score);
	for (size_t i = 0; i < c->n; i++) {
		struct worker_chunk *w = order[i];

		/* the same head of the same order every time: no churn */
		if (!full && w->len <= budget - used) {
			used += w->len;
			keep[w - c->v] = true;
		} else {
			full = true;
			c->over_budget_chunks++;
			c->over_budget_bytes += w->len;
		}
	}
	for (size_t i = 0; i < c->n; i++)
		if (keep[i])
			c->v[k++] = c->v[i];
	c->n = k;
	c->bytes = used;
	free(order);
	free(keep);
	return 0;
}

static int add_chunk(struct worker_chunks *c, size_t *cap,
		     const struct worker_chunk *w)
{
	if (c->n == *cap) {
		size_t ncap = *cap ? *cap * 2 : 64;
		struct worker_chunk *v = realloc(c->v, ncap * sizeof(*v));

		if (!v) {
			errno = ENOMEM;
			return -1;
		}
		c->v = v;
		*cap = ncap;
	}
	c->v[c->n++] = *w;
	c->bytes += w->len;
	return 0;
}

int worker_chunks_plan(const struct manifest *listing,
		       const struct spread_plan *plan, unsigned self,
		       uint64_t budget, struct worker_chunks *ret)
{
	struct worker_chunks c = { 0 };
	size_t cap = 0;

	for (size_t i = 0; i < manifest_count(listing); i++) {
		const struct manifest_entry *e = manifest_get(listing, i);
		uint64_t n;

		if (e->type != MANIFEST_FILE ||
		    !spread_chunked(plan,
				    spread_owner(plan, e->path, e->path_len),
				    e->size))
			continue;
		c.files++;
		n = spread_chunk_count(e->size);
		for (uint64_t k = 0; k < n; k++) {
			struct worker_chunk w = { .file = e, .index = k };

			if (spread_chunk_owner(plan, e->path, e->path_len, k) !=
			    self)
				continue;
			partchunk_extent(e->size, k, &w.off, &w.len);
			w.score = spread_chunk_score(plan, self, e->path,
						     e->path_len, k);
			if (add_chunk(&c, &cap, &w) < 0) {
				worker_chunks_free(&c);
				return -1;
			}
		}
	}
	if (budget != WORKER_CHUNKS_NO_BUDGET && c.bytes > budget &&
	    apply_budget(&c, budget) < 0) {
		worker_chunks_free(&c);
		return -1;
	}
	*ret = c;
	return 0;
}

void worker_chunks_free(struct worker_chunks *c)
{
	free(c->v);
	memset(c, 0, sizeof(*c));
}

/* --- the source ------------------------------------------------------------- */

/* The source file of W, checked against the listing: fd or -1 with
 * err. */
static int open_checked(int src_dirfd, const struct worker_chunk *w, char *err,
			size_t errlen)
{
	const struct manifest_entry *e = w->file;
	struct stat st;
	/* no symlink on the way: the user may have swapped a directory
	 * for one since the walk */
	int fd = beneath_open(src_dirfd, e->path, O_RDONLY, 0);

	if (fd < 0) {
		snprintf(err, errlen, "cannot read %s: %s", e->path,
			 strerror(errno));
		return -1;
	}
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) ||
	    (uint64_t)st.st_size != e->size ||
	    copyengine_ts_ns(st.st_mtim.tv_sec, (uint32_t)st.st_mtim.tv_nsec) !=
		e->mtime_ns) {
		snprintf(err, errlen, "%s changed while it was staged",
			 e->path);
		close(fd);
		errno = ESTALE;
		return -1;
	}
	return fd;
}

/* The source's file of W, open in *SRC_FD (kept across the chunks of one
 * file: *SRC_OF says whose). 0, or -1 with err. */
static int source_of(const struct worker_chunk *w, int src_dirfd,
		     const struct manifest_entry **src_of, int *src_fd,
		     char *err, size_t errlen)
{
	if (*src_of == w->file)
		return 0;
	if (*src_fd >= 0)
		close(*src_fd);
	*src_of = NULL;
	*src_fd = open_checked(src_dirfd, w, err, errlen);
	if (*src_fd < 0)
		return -1;
	*src_of = w->file;
	return 0;
}

/* --- what a directory holds -------------------------------------------------- */

static bool holds(int dirfd, const struct worker_chunk *w, const char *name)
{
	struct stat st;

	return dirfd >= 0 &&
	       fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
	       S_ISREG(st.st_mode) && (uint64_t)st.st_size == w->len &&
	       copyengine_ts_ns(st.st_mtim.tv_sec,
				(uint32_t)st.st_mtim.tv_nsec) ==
		   w->file->mtime_ns;
}

/* The xxh3-128 of LEN bytes at OFF of FD into *RET, through BUF
 * (CHUNK_COPY_STEP bytes). 0, or -1 (a read failed or came short). */
static int hash_range(int fd, uint64_t off, uint64_t len, char *buf,
		      XXH3_state_t *xs, XXH128_hash_t *ret)
{
	if (XXH3_128bits_reset(xs) == XXH_ERROR)
		return -1;
	while (len) {
		size_t step = len < CHUNK_COPY_STEP ? (size_t)len
						    : CHUNK_COPY_STEP;
		ssize_t n = pread(fd, buf, step, (off_t)off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0 ||
		    XXH3_128bits_update(xs, buf, (size_t)n) == XXH_ERROR)
			return -1;
		off += (uint64_t)n;
		len -= (uint64_t)n;
	}
	*ret = XXH3_128bits_digest(xs);
	return 0;
}

/* Does chunk W's file NAME beneath DIRFD hold the bytes of its range of
 * the source file *SRC_FD (opened beneath SRC_DIRFD as the copy would,
 * kept across the chunks of one file)? */
static bool same_bytes(int dirfd, const struct worker_chunk *w,
		       const char *name, int src_dirfd,
		       const struct manifest_entry **src_of, int *src_fd,
		       char *buf, XXH3_state_t *xs)
{
	char err[256];
	XXH128_hash_t here, there;
	int fd;

	if (source_of(w, src_dirfd, src_of, src_fd, err, sizeof(err)) < 0)
		return false; /* the build then says why */
	fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return false;
	if (hash_range(fd, 0, w->len, buf, xs, &here) < 0 ||
	    hash_range(*src_fd, w->off, w->len, buf, xs, &there) < 0) {
		close(fd);
		return false;
	}
	close(fd);
	return XXH128_isEqual(here, there);
}

void worker_chunks_mark(struct worker_chunks *c, int dirfd, int src_dirfd)
{
	const struct manifest_entry *src_of = NULL;
	XXH3_state_t *xs = NULL;
	char *buf = NULL, name[PARTCHUNK_NAME_MAX];
	int src_fd = -1;

	c->marked = 0;
	c->marked_bytes = 0;
	if (src_dirfd >= 0) {
		xs = XXH3_createState();
		buf = malloc(CHUNK_COPY_STEP);
	}
	for (size_t i = 0; i < c->n; i++) {
		struct worker_chunk *w = &c->v[i];

		partchunk_name(w->file->path, w->file->path_len, w->index,
			       name);
		w->held = holds(dirfd, w, name);
		/* out of memory for the hashes: nothing is taken unseen */
		if (w->held && src_dirfd >= 0)
			w->held = xs && buf &&
				  same_bytes(dirfd, w, name, src_dirfd, &src_of,
					     &src_fd, buf, xs);
		if (w->held) {
			c->marked++;
			c->marked_bytes += w->len;
		}
	}
	if (src_fd >= 0)
		close(src_fd);
	XXH3_freeState(xs);
	free(buf);
}

/* --- building ---------------------------------------------------------------- */

/* LEN bytes at OFF of IN into OUT (at 0), at the rate RL allows; *BUF
 * (CHUNK_COPY_STEP bytes, allocated on first need: only where
 * copy_file_range is refused) for a plain copy. 0, or -1 with errno;
 * *ret_write says whether writing failed (else reading). */
static int copy_range(int in, int out, uint64_t off, uint64_t len,
		      struct ratelimit *rl, char **buf, bool *ret_write)
{
	loff_t ioff = (loff_t)off, ooff = 0;
	bool plain = false;

	*ret_write = false;
	while (len) {
		size_t step = len < CHUNK_COPY_STEP ? (size_t)len
						    : CHUNK_COPY_STEP;
		ssize_t n = -1;

		ratelimit_take(rl, step, NULL);
		if (!plain) {
			n = copy_file_range(in, &ioff, out, &ooff, step, 0);
			if (n < 0 && (errno == EXDEV || errno == EINVAL ||
				      errno == ENOSYS || errno == EOPNOTSUPP))
				plain =
				    true; /* the PFS or the kernel says no */
			else if (n < 0 && errno != EINTR) {
				/* ENOSPC and the like are the tier's */
				*ret_write = errno == ENOSPC ||
					     errno == EDQUOT || errno == EFBIG;
				return -1;
			}
		}
		if (plain && !*buf && !(*buf = malloc(CHUNK_COPY_STEP))) {
			errno = ENOMEM;
			return -1;
		}
		if (plain) {
			ssize_t w;

			n = pread(in, *buf, step, ioff);
			if (n < 0 && errno == EINTR)
				continue;
			if (n < 0)
				return -1;
			if (n == 0) {
				errno = EIO; /* cut short since the walk */
				return -1;
			}
			w = pwrite(out, *buf, (size_t)n, ooff);
			if (w != n) {
				*ret_write = true;
				if (w >= 0)
					errno = ENOSPC;
				return -1;
			}
			ioff += n;
			ooff += n;
		}
		if (n == 0) {
			errno = EIO;
			return -1;
		}
		if (n > 0)
			len -= (uint64_t)n;
	}
	return 0;
}

/* How place() got a chunk. */
enum placed { PLACED_LINKED, PLACED_FETCHED, PLACED_COPIED };

/* Another node's copy of W into OUT (new): true when it gave all of it;
 * else OUT is emptied again for the source. */
static bool fetched(const struct worker_chunks_from *from,
		    const struct worker_chunk *w, int out)
{
	struct stat st;

	if (!from->fetch)
		return false;
	if (from->fetch(w->file->path, w->index, w->len, w->file->mtime_ns, out,
			from->fetch_arg) == 0 &&
	    fstat(out, &st) == 0 && (uint64_t)st.st_size == w->len)
		return true;
	/* The source's bytes are written from 0 over whatever came; none
	 * may stay past them. */
	if (ftruncate(out, 0) < 0)
		(void)0; /* then they are all overwritten: no more came */
	return false;
}

/* Chunk W into CFD from the first of FROM that has it: *HOW says which.
 * 0, or -1 failed (err). */
static int place(const struct worker_chunk *w,
		 const struct worker_chunks_from *from, int cfd, bool public,
		 struct ratelimit *rl, char **buf,
		 const struct manifest_entry **src_of, int *src_fd,
		 enum placed *how, char *err, size_t errlen)
{
	char name[PARTCHUNK_NAME_MAX];
	struct timespec times[2];
	bool wfail;
	int out;

	partchunk_name(w->file->path, w->file->path_len, w->index, name);
	if (w->held && from->prev_dirfd >= 0 &&
	    linkat(from->prev_dirfd, name, cfd, name, 0) == 0) {
		*how = PLACED_LINKED;
		return 0;
	}
	out = openat(cfd, name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (out < 0) {
		snprintf(err, errlen, "cannot write %s/%s of %s: %s",
			 PARTCHUNKS_DIR, name, w->file->path, strerror(errno));
		return -1;
	}
	times[0] = times[1] = copyengine_ns_ts(w->file->mtime_ns);
	*how = PLACED_FETCHED;
	if (fetched(from, w, out))
		goto done;
	*how = PLACED_COPIED;
	if (source_of(w, from->src_dirfd, src_of, src_fd, err, errlen) < 0) {
		close(out);
		return -1;
	}
	if (copy_range(*src_fd, out, w->off, w->len, rl, buf, &wfail) < 0) {
		int e = errno;

		if (wfail)
			snprintf(err, errlen, "cannot write %s/%s of %s: %s",
				 PARTCHUNKS_DIR, name, w->file->path,
				 strerror(e));
		else
			snprintf(err, errlen, "cannot read %s: %s",
				 w->file->path, strerror(e));
		close(out);
		errno = e;
		return -1;
	}
done:
	if (futimens(out, times) < 0 || fchmod(out, public ? 0444 : 0400) < 0 ||
	    close(out) < 0) {
		snprintf(err, errlen, "cannot write %s/%s of %s: %s",
			 PARTCHUNKS_DIR, name, w->file->path, strerror(errno));
		return -1;
	}
	return 0;
}

int worker_chunks_build(const struct worker_chunks *c,
			const struct worker_chunks_from *from, int dst_dirfd,
			bool public,
			void (*progress)(uint64_t bytes, void *arg),
			void *progress_arg, struct worker_chunks_result *ret,
			char *err, size_t errlen)
{
	static const _Atomic uint64_t unlimited = RATELIMIT_UNLIMITED;
	struct worker_chunks_result res = { 0 };
	const struct manifest_entry *src_of = NULL;
	struct ratelimit rl;
	int cfd, src_fd = -1, e;
	char rmerr[256], *buf = NULL;

	ratelimit_init(&rl, from->rate ? from->rate : &unlimited);
	if (mkdirat(dst_dirfd, PARTCHUNKS_DIR, 0700) < 0) {
		snprintf(err, errlen, "cannot write %s: %s", PARTCHUNKS_DIR,
			 strerror(errno));
		return -1;
	}
	cfd = openat(dst_dirfd, PARTCHUNKS_DIR,
		     O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (cfd < 0) {
		e = errno;
		snprintf(err, errlen, "cannot write %s: %s", PARTCHUNKS_DIR,
			 strerror(e));
		goto fail;
	}
	for (size_t i = 0; i < c->n; i++) {
		const struct worker_chunk *w = &c->v[i];
		enum placed how;

		if (place(w, from, cfd, public, &rl, &buf, &src_of, &src_fd,
			  &how, err, errlen) < 0) {
			e = errno;
			goto fail;
		}
		if (how == PLACED_LINKED) {
			res.linked++;
			res.linked_bytes += w->len;
		} else if (how == PLACED_FETCHED) {
			res.fetched++;
			res.fetched_bytes += w->len;
		} else {
			res.copied++;
			res.copied_bytes += w->len;
		}
		if (progress)
			progress(res.linked_bytes + res.fetched_bytes +
				     res.copied_bytes,
				 progress_arg);
	}
	if (fchmod(cfd, public ? 0555 : 0500) < 0 || syncfs(cfd) < 0) {
		e = errno;
		snprintf(err, errlen, "cannot write %s: %s", PARTCHUNKS_DIR,
			 strerror(e));
		goto fail;
	}
	if (src_fd >= 0)
		close(src_fd);
	close(cfd);
	free(buf);
	*ret = res;
	return 0;
fail:
	free(buf);
	if (src_fd >= 0)
		close(src_fd);
	if (cfd >= 0)
		close(cfd);
	rmtree_at(dst_dirfd, PARTCHUNKS_DIR, rmerr, sizeof(rmerr));
	errno = e;
	return -1;
}
