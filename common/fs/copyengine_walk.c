/* copyengine_walk.c - the copy engine's walk of the source (a pool of
 * threads over a LIFO queue of directories, each opened beneath the top
 * without following a symlink) and the hashing of what it found; the
 * design is explained at the top of copyengine.c. */
#define _GNU_SOURCE
#include "common/fs/copyengine_int.h"

/* --- the walk ------------------------------------------------------------------ */

static struct ce_item *local_push(struct ce_local *l)
{
	if (l->n == l->cap) {
		size_t cap = l->cap ? l->cap * 2 : 1024;
		struct ce_item *v = realloc(l->v, cap * sizeof(*v));

		if (!v)
			return NULL;
		l->v = v;
		l->cap = cap;
	}
	memset(&l->v[l->n], 0, sizeof(l->v[0]));
	return &l->v[l->n++];
}

static const char *special_name(mode_t mode)
{
	if (S_ISFIFO(mode))
		return "fifo skipped";
	if (S_ISSOCK(mode))
		return "socket skipped";
	if (S_ISCHR(mode))
		return "character device skipped";
	if (S_ISBLK(mode))
		return "block device skipped";
	return "special file skipped";
}

static void add_special(struct copyengine *ce, const char *dir, size_t dlen,
			const char *name, mode_t mode)
{
	char rel[MANIFEST_PATH_MAX + 1], p[600], note[CE_NOTE_MAX];

	snprintf(rel, sizeof(rel), "%.*s%s%s", (int)dlen, dir, dlen ? "/" : "",
		 name);
	copyengine_msg_path(p, sizeof(p), ce->src, rel);
	snprintf(note, sizeof(note), "%s: %s", p, special_name(mode));
	pthread_mutex_lock(&ce->mu);
	if (ce->nnotes < COPYENGINE_NOTES_MAX) {
		char *s = copyengine_arena_alloc(&ce->arena, strlen(note) + 1);

		if (s) {
			strcpy(s, note);
			ce->notes[ce->nnotes++] = s;
		}
	}
	ce->t.specials++;
	pthread_mutex_unlock(&ce->mu);
}

/* Fill IT from SX (and its type). */
void copyengine_item_stat(struct ce_item *it, const struct statx *sx)
{
	mode_t m = sx->stx_mode;

	it->type = S_ISDIR(m)   ? MANIFEST_DIR
		   : S_ISLNK(m) ? MANIFEST_SYMLINK
				: MANIFEST_FILE;
	it->mode = m;
	it->size = it->type == MANIFEST_DIR ? 0 : sx->stx_size;
	it->ino = sx->stx_ino;
	it->dev = makedev(sx->stx_dev_major, sx->stx_dev_minor);
	it->blocks = sx->stx_blocks;
	it->nlink = sx->stx_nlink;
	it->mtime_ns = copyengine_ts_ns(sx->stx_mtime.tv_sec,
					sx->stx_mtime.tv_nsec);
	it->atime_ns = copyengine_ts_ns(sx->stx_atime.tv_sec,
					sx->stx_atime.tv_nsec);
}

int copyengine_push_jobs(struct copyengine *ce, const struct ce_dirjob *jobs,
			 size_t n)
{
	pthread_mutex_lock(&ce->mu);
	if (ce->qn + n > ce->qcap) {
		size_t cap = ce->qcap ? ce->qcap : 256;
		struct ce_dirjob *q;

		while (cap < ce->qn + n)
			cap *= 2;
		q = realloc(ce->q, cap * sizeof(*q));
		if (!q) {
			pthread_mutex_unlock(&ce->mu);
			return -1;
		}
		ce->q = q;
		ce->qcap = cap;
	}
	memcpy(ce->q + ce->qn, jobs, n * sizeof(*jobs));
	ce->qn += n;
	pthread_cond_broadcast(&ce->cv);
	pthread_mutex_unlock(&ce->mu);
	return 0;
}

/* Read one directory: an item per entry, subdirectories queued. */
static int walk_dir(struct ce_local *l, const struct ce_dirjob *job,
		    struct ce_dirjob **subs, size_t *subcap)
{
	struct copyengine *ce = l->ce;
	struct dirent *de;
	size_t nsubs = 0;
	DIR *d;
	int fd;

	fd = copyengine_open_beneath(ce->src_root, job->path,
				     O_RDONLY | O_DIRECTORY, 0);
	if (fd < 0)
		return copyengine_fail_read(ce, job->path, errno);
	d = fdopendir(fd);
	if (!d) {
		int e = errno;

		close(fd);
		return copyengine_fail_read(ce, job->path, e);
	}
	for (;;) {
		char pbuf[MANIFEST_PATH_MAX + 1];
		struct ce_item tmp, *it;
		struct statx sx;
		size_t nlen, plen;
		char *p;

		if (atomic_load_explicit(&ce->failed, memory_order_relaxed))
			goto fail;
		errno = 0;
		de = readdir(d);
		if (!de)
			break;
		if (de->d_name[0] == '.' &&
		    (!de->d_name[1] ||
		     (de->d_name[1] == '.' && !de->d_name[2])))
			continue;
		nlen = strlen(de->d_name);
		plen = job->len ? job->len + 1 + nlen : nlen;
		if (plen > MANIFEST_PATH_MAX) {
			char rel[MANIFEST_PATH_MAX + 1];

			snprintf(rel, sizeof(rel), "%s/%s", job->path,
				 de->d_name);
			copyengine_fail_read(ce, rel, ENAMETOOLONG);
			goto fail;
		}
		if (statx(fd, de->d_name, AT_SYMLINK_NOFOLLOW | AT_NO_AUTOMOUNT,
			  STATX_BASIC_STATS, &sx) < 0) {
			char rel[MANIFEST_PATH_MAX + 1];
			int e = errno;

			if (e == ENOENT)
				continue; /* gone since readdir: not there */
			snprintf(rel, sizeof(rel), "%s%s%s", job->path,
				 job->len ? "/" : "", de->d_name);
			copyengine_fail_read(ce, rel, e);
			goto fail;
		}
		if (!S_ISREG(sx.stx_mode) && !S_ISDIR(sx.stx_mode) &&
		    !S_ISLNK(sx.stx_mode)) {
			add_special(ce, job->path, job->len, de->d_name,
				    sx.stx_mode);
			continue;
		}
		if (ce->o.public_only) {
			char rel[MANIFEST_PATH_MAX + 1];

			snprintf(rel, sizeof(rel), "%s%s%s", job->path,
				 job->len ? "/" : "", de->d_name);
			if (copyengine_public_check(ce, fd, de->d_name, rel,
						    &sx) < 0)
				goto fail;
		}
		if (atomic_fetch_add(&ce->nentries, 1) + 1 >=
		    MANIFEST_MAX_ENTRIES) {
			copyengine_failf(ce, E2BIG,
					 "cannot read %s: more than %u entries",
					 ce->src, MANIFEST_MAX_ENTRIES - 1);
			goto fail;
		}
		if (job->len) {
			memcpy(pbuf, job->path, job->len);
			pbuf[job->len] = '/';
			memcpy(pbuf + job->len + 1, de->d_name, nlen + 1);
		} else {
			memcpy(pbuf, de->d_name, nlen + 1);
		}
		memset(&tmp, 0, sizeof(tmp));
		tmp.path = pbuf;
		tmp.path_len = (uint16_t)plen;
		copyengine_item_stat(&tmp, &sx);
		if (ce->lean && ce->o.hash && tmp.type != MANIFEST_DIR &&
		    copyengine_hash_item_at(l, &tmp, fd, de->d_name) < 0)
			goto fail;
		/* A check keeps nothing per entry but hard-linked files
		 * (counted once, at the end) and directories (queued). */
		if (ce->lean && !(tmp.type == MANIFEST_FILE && tmp.nlink > 1)) {
			copyengine_account(ce, &tmp, &l->acc);
			if (tmp.type != MANIFEST_DIR)
				continue;
		}
		p = copyengine_arena_alloc(&l->arena, plen + 1);
		if (!p) {
			copyengine_fail_read(ce, job->path, ENOMEM);
			goto fail;
		}
		memcpy(p, pbuf, plen + 1);
		tmp.path = p;
		if (!ce->lean || tmp.type == MANIFEST_FILE) {
			it = local_push(l);
			if (!it) {
				copyengine_fail_read(ce, job->path, ENOMEM);
				goto fail;
			}
			*it = tmp;
		}
		if (tmp.type != MANIFEST_DIR)
			continue;
		if (job->depth + 1 > COPYENGINE_MAX_DEPTH) {
			char m[600];

			copyengine_msg_path(m, sizeof(m), ce->src, p);
			copyengine_failf(
			    ce, ELOOP,
			    "cannot read %s: directory tree deeper than "
			    "%d levels",
			    m, COPYENGINE_MAX_DEPTH);
			goto fail;
		}
		if (nsubs == *subcap) {
			size_t cap = *subcap ? *subcap * 2 : 64;
			struct ce_dirjob *s = realloc(*subs, cap * sizeof(*s));

			if (!s) {
				copyengine_fail_read(ce, p, ENOMEM);
				goto fail;
			}
			*subs = s;
			*subcap = cap;
		}
		(*subs)[nsubs++] = (struct ce_dirjob){
			.path = p,
			.len = (uint16_t)plen,
			.depth = (uint16_t)(job->depth + 1),
		};
	}
	if (errno) {
		copyengine_fail_read(ce, job->path, errno);
		goto fail;
	}
	closedir(d);
	if (nsubs && copyengine_push_jobs(ce, *subs, nsubs) < 0)
		return copyengine_fail_read(ce, job->path, ENOMEM);
	return 0;
fail:
	closedir(d);
	return -1;
}

void *copyengine_walk_main(void *arg)
{
	struct ce_local *l = arg;
	struct copyengine *ce = l->ce;
	struct ce_dirjob *subs = NULL;
	size_t subcap = 0;

	pthread_mutex_lock(&ce->mu);
	while (!atomic_load(&ce->failed)) {
		if (ce->qn) {
			struct ce_dirjob job = ce->q[--ce->qn];

			ce->busy++;
			pthread_mutex_unlock(&ce->mu);
			walk_dir(l, &job, &subs, &subcap);
			pthread_mutex_lock(&ce->mu);
			ce->busy--;
			if (!ce->qn && !ce->busy)
				pthread_cond_broadcast(&ce->cv);
			continue;
		}
		if (!ce->busy)
			break;
		pthread_cond_wait(&ce->cv, &ce->mu);
	}
	ce->running--;
	pthread_cond_broadcast(&ce->cv);
	pthread_mutex_unlock(&ce->mu);
	free(subs);
	return NULL;
}

/* --- hashing --------------------------------------------------------------------- */

/* Open the source file of IT for reading and check it is still what the
 * walk saw. Returns the fd or -1 (error recorded). */
static int src_open_at(struct copyengine *ce, const struct ce_item *it,
		       int dirfd, const char *name)
{
	struct stat st;
	int fd;

	if (dirfd >= 0)
		fd = openat(dirfd, name,
			    O_RDONLY | O_NONBLOCK | O_NOCTTY | O_NOFOLLOW |
				O_CLOEXEC);
	else if (it->path_len)
		fd = copyengine_open_beneath(ce->src_root, it->path,
					     O_RDONLY | O_NONBLOCK | O_NOCTTY,
					     0);
	else
		fd = open(ce->src,
			  O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	if (fd < 0)
		return copyengine_fail_read(ce, it->path, errno);
	if (fstat(fd, &st) < 0) {
		int e = errno;

		close(fd);
		return copyengine_fail_read(ce, it->path, e);
	}
	if (!S_ISREG(st.st_mode) || (uint64_t)st.st_ino != it->ino ||
	    (uint64_t)st.st_size != it->size ||
	    copyengine_ts_ns(st.st_mtim.tv_sec, (uint32_t)st.st_mtim.tv_nsec) !=
		it->mtime_ns) {
		close(fd);
		return copyengine_fail_changed(ce, it->path);
	}
	return fd;
}

int copyengine_src_open(struct copyengine *ce, const struct ce_item *it)
{
	return src_open_at(ce, it, -1, NULL);
}

/* Is the open source file still the one the walk saw? */
int copyengine_src_recheck(struct copyengine *ce, const struct ce_item *it,
			   int fd)
{
	struct stat st;

	if (fstat(fd, &st) < 0)
		return copyengine_fail_read(ce, it->path, errno);
	if ((uint64_t)st.st_size != it->size ||
	    copyengine_ts_ns(st.st_mtim.tv_sec, (uint32_t)st.st_mtim.tv_nsec) !=
		it->mtime_ns)
		return copyengine_fail_changed(ce, it->path);
	return 0;
}

int copyengine_local_buf(struct copyengine *ce, struct ce_local *l,
			 const char *rel)
{
	if (!l->buf) {
		l->buf = malloc(CE_BUF);
		if (!l->buf)
			return copyengine_fail_read(ce, rel, ENOMEM);
	}
	return 0;
}

/* A symlink's target into BUF (PATH_MAX). Returns its length or -1. */
ssize_t copyengine_read_target(struct copyengine *ce, const struct ce_item *it,
			       char *buf)
{
	ssize_t n;
	int fd;

	fd = copyengine_open_beneath(ce->src_root, it->path,
				     O_PATH | O_NOFOLLOW, 0);
	if (fd < 0)
		return copyengine_fail_read(ce, it->path, errno);
	n = readlinkat(fd, "", buf, PATH_MAX);
	if (n < 0) {
		int e = errno;

		close(fd);
		return copyengine_fail_read(ce, it->path, e);
	}
	close(fd);
	if (n >= PATH_MAX)
		return copyengine_fail_read(ce, it->path, ENAMETOOLONG);
	buf[n] = '\0';
	if ((uint64_t)n != it->size)
		return copyengine_fail_changed(ce, it->path);
	return n;
}

/* Hash IT's contents (a symlink: its target), opened below the top, or
 * as NAME under DIRFD when DIRFD >= 0. */
int copyengine_hash_item_at(struct ce_local *l, struct ce_item *it, int dirfd,
			    const char *name)
{
	struct copyengine *ce = l->ce;
	XXH128_canonical_t c;
	uint64_t left = it->size;
	int fd;

	if (!l->xs) {
		l->xs = XXH3_createState();
		if (!l->xs)
			return copyengine_fail_read(ce, it->path, ENOMEM);
	}
	if (it->type == MANIFEST_SYMLINK) {
		char target[PATH_MAX];
		ssize_t n;

		if (dirfd >= 0) {
			n = readlinkat(dirfd, name, target, sizeof(target));
			if (n < 0)
				return copyengine_fail_read(ce, it->path,
							    errno);
			if ((uint64_t)n != it->size)
				return copyengine_fail_changed(ce, it->path);
		} else {
			n = copyengine_read_target(ce, it, target);
		}
		if (n < 0)
			return -1;
		XXH128_canonicalFromHash(&c, XXH3_128bits(target, (size_t)n));
		memcpy(it->hash, c.digest, sizeof(it->hash));
		it->flags |= CE_HASHED;
		return 0;
	}
	if (copyengine_local_buf(ce, l, it->path) < 0)
		return -1;
	fd = src_open_at(ce, it, dirfd, name);
	if (fd < 0)
		return -1;
	if (it->size >= CE_SEQ_MIN)
		posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
	XXH3_128bits_reset(l->xs);
	while (left) {
		ssize_t n = read(fd, l->buf, left < CE_BUF ? left : CE_BUF);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			int e = errno;

			close(fd);
			return copyengine_fail_read(ce, it->path, e);
		}
		if (n == 0) {
			close(fd);
			return copyengine_fail_changed(ce, it->path);
		}
		XXH3_128bits_update(l->xs, l->buf, (size_t)n);
		left -= (uint64_t)n;
		if (atomic_load_explicit(&ce->failed, memory_order_relaxed))
			break;
	}
	if (copyengine_src_recheck(ce, it, fd) < 0) {
		close(fd);
		return -1;
	}
	close(fd);
	XXH128_canonicalFromHash(&c, XXH3_128bits_digest(l->xs));
	memcpy(it->hash, c.digest, sizeof(it->hash));
	it->flags |= CE_HASHED;
	return 0;
}

static int hash_item(struct ce_local *l, struct ce_item *it)
{
	return copyengine_hash_item_at(l, it, -1, NULL);
}

void *copyengine_hash_main(void *arg)
{
	struct ce_local *l = arg;
	struct copyengine *ce = l->ce;

	while (!atomic_load_explicit(&ce->failed, memory_order_relaxed)) {
		size_t i = atomic_fetch_add(&ce->next, 1);

		if (i >= ce->n)
			break;
		if (ce->items[i].type != MANIFEST_DIR &&
		    !(ce->items[i].flags & CE_HASHED))
			hash_item(l, &ce->items[i]);
	}
	copyengine_thread_done(ce);
	return NULL;
}
