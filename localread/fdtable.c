/* fdtable.c - which of the task's fds are cut files of a spread view
 * (see localread.h).
 *
 * A table indexed by fd, zero pages until touched, read without a lock
 * on every read() the task makes: an fd not in it costs one atomic load.
 * Entries are put in and taken out under a write lock; a read takes its
 * reference under the read lock, so a close in another thread cannot
 * free the file under it, and the file's last reference frees it.
 *
 * An fd can be closed where this library does not see it (fclose of an
 * fdopen'd stream, a raw close system call) and its number reused by a
 * socket or another file: each read checks with statx that the fd is
 * still the file remembered, and forgets it when it is not, so a read is
 * never served from another file's chunks.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "localread/localread.h"

bool lr_enabled;

static _Atomic(struct lr_file *) table[LR_MAX_FDS];
static pthread_rwlock_t table_lock = PTHREAD_RWLOCK_INITIALIZER;
static atomic_uint table_end; /* above every fd ever remembered */

/* What the fd is now: 0 with *ret, or -1. */
static int identify(int fd, struct statx *ret)
{
	return (int)syscall(SYS_statx, fd, "", AT_EMPTY_PATH,
			    STATX_TYPE | STATX_SIZE | STATX_INO, ret);
}

static dev_t dev_of(const struct statx *st)
{
	return makedev(st->stx_dev_major, st->stx_dev_minor);
}

static void file_free(struct lr_file *f)
{
	lr_release_chunks(f);
	if (f->dirfd >= 0)
		syscall(SYS_close, f->dirfd);
	pthread_mutex_destroy(&f->pos);
	pthread_mutex_destroy(&f->slots_mu);
	free(f->unusable);
	free(f->value);
	free(f);
}

void lr_put(struct lr_file *f)
{
	if (f && atomic_fetch_sub(&f->refs, 1) == 1)
		file_free(f);
}

/* The view's attribute of FD, NUL-terminated (malloc'd), or NULL. */
static char *chunks_attr(int fd, size_t *ret_len)
{
	ssize_t n = fgetxattr(fd, CHUNKXATTR_NAME, NULL, 0);
	char *v;

	if (n <= 0 || n > CHUNKXATTR_VALUE_MAX)
		return NULL;
	v = malloc((size_t)n + 1);
	if (!v)
		return NULL;
	n = fgetxattr(fd, CHUNKXATTR_NAME, v, (size_t)n);
	if (n <= 0) {
		free(v);
		return NULL;
	}
	v[n] = '\0';
	*ret_len = (size_t)n;
	return v;
}

/* FD as a cut file of a view, or NULL (not one, or not usable here). */
static struct lr_file *file_of(int fd)
{
	struct lr_file *f;
	struct statx st;
	size_t len;

	if (identify(fd, &st) < 0 || !S_ISREG(st.stx_mode) ||
	    st.stx_size < LR_MIN_SIZE)
		return NULL;
	f = calloc(1, sizeof(*f));
	if (!f)
		return NULL;
	f->dirfd = -1;
	for (unsigned k = 0; k < LR_SLOTS; k++)
		f->slots[k].fd = -1;
	pthread_mutex_init(&f->pos, NULL);
	pthread_mutex_init(&f->slots_mu, NULL);
	f->value = chunks_attr(fd, &len);
	/* the view's word must be of this very file */
	if (!f->value || chunkxattr_parse(f->value, len, &f->x) < 0 ||
	    f->x.size != st.stx_size)
		goto fail;
	f->unusable = calloc(f->x.nchunks, sizeof(*f->unusable));
	if (!f->unusable)
		goto fail;
	f->dirfd = (int)syscall(SYS_openat, AT_FDCWD, f->x.dir,
				O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (f->dirfd < 0)
		goto fail;
	f->dev = dev_of(&st);
	f->ino = st.stx_ino;
	atomic_init(&f->refs, 1);
	return f;
fail:
	file_free(f);
	return NULL;
}

/* Take FD's entry out of the table; the caller holds the write lock. */
static struct lr_file *take(unsigned fd)
{
	return atomic_exchange(&table[fd], NULL);
}

void lr_opened(int fd, int flags)
{
	struct lr_file *f = NULL, *old;
	int e = errno;

	if (fd < 0 || fd >= LR_MAX_FDS)
		return;
	/* Write-only, O_PATH and O_DIRECT opens are left alone: the view
	 * refuses writes, and O_DIRECT asks for the view's own reads. */
	if (lr_enabled && (flags & O_ACCMODE) == O_RDONLY &&
	    !(flags & (O_PATH | O_DIRECT | O_DIRECTORY)))
		f = file_of(fd);
	if (!f && !atomic_load_explicit(&table[fd], memory_order_relaxed)) {
		errno = e;
		return;
	}
	pthread_rwlock_wrlock(&table_lock);
	old = take((unsigned)fd);
	atomic_store(&table[fd], f);
	if (f && atomic_load(&table_end) <= (unsigned)fd)
		atomic_store(&table_end, (unsigned)fd + 1);
	pthread_rwlock_unlock(&table_lock);
	lr_put(old);
	errno = e;
}

void lr_closed_range(unsigned lo, unsigned hi)
{
	int e = errno;

	if (hi >= LR_MAX_FDS)
		hi = LR_MAX_FDS - 1;
	for (unsigned fd = lo; fd <= hi && lo < LR_MAX_FDS; fd++) {
		struct lr_file *old;

		if (!atomic_load_explicit(&table[fd], memory_order_relaxed))
			continue;
		pthread_rwlock_wrlock(&table_lock);
		old = take(fd);
		pthread_rwlock_unlock(&table_lock);
		lr_put(old);
	}
	errno = e;
}

void lr_closed(int fd)
{
	if (fd >= 0)
		lr_closed_range((unsigned)fd, (unsigned)fd);
}

struct lr_file *lr_get(int fd)
{
	struct lr_file *f;
	struct statx st;
	int e;

	if (fd < 0 || fd >= LR_MAX_FDS ||
	    !atomic_load_explicit(&table[fd], memory_order_relaxed))
		return NULL;
	pthread_rwlock_rdlock(&table_lock);
	f = atomic_load(&table[fd]);
	if (f)
		atomic_fetch_add(&f->refs, 1);
	pthread_rwlock_unlock(&table_lock);
	if (!f)
		return NULL;
	e = errno;
	if (identify(fd, &st) == 0 && dev_of(&st) == f->dev &&
	    st.stx_ino == f->ino) {
		errno = e;
		return f;
	}
	/* closed and reused where we did not see it: forget it */
	pthread_rwlock_wrlock(&table_lock);
	if (atomic_load(&table[fd]) == f) {
		take((unsigned)fd);
		lr_put(f); /* the table's */
	}
	pthread_rwlock_unlock(&table_lock);
	lr_put(f);
	errno = e;
	return NULL;
}

void lr_fork_prepare(void)
{
	pthread_rwlock_wrlock(&table_lock);
}

void lr_fork_parent(void)
{
	pthread_rwlock_unlock(&table_lock);
}

/* The child has one thread, this one: locks another thread held at the
 * fork would never be released, so every file's are made anew. The
 * references those threads held are never put: the files stay. */
void lr_fork_child(void)
{
	unsigned end = atomic_load(&table_end);

	pthread_rwlock_init(&table_lock, NULL);
	for (unsigned fd = 0; fd < end; fd++) {
		struct lr_file *f = atomic_load_explicit(&table[fd],
							 memory_order_relaxed);

		if (!f)
			continue;
		pthread_mutex_init(&f->pos, NULL);
		pthread_mutex_init(&f->slots_mu, NULL);
		for (unsigned k = 0; k < LR_SLOTS; k++)
			f->slots[k].users = 0;
	}
}
