/* chunkread.c - a read of a cut file, piece by piece (see localread.h).
 *
 * A read is cut where chunks end. A piece in a chunk this node holds
 * (the view said so) is read from the chunk's file, PREFIX.I beneath the
 * directory the view named, opened with openat2 RESOLVE_BENEATH |
 * RESOLVE_NO_SYMLINKS and used only when it is a regular file of the
 * chunk's length, as the view itself checks it. The pieces in between,
 * other nodes' chunks and any chunk that could not be read here, go to
 * the view in one read each run, so a file with no chunk here costs no
 * more reads than without this library. A chunk that fails here once is
 * not tried again while the file is open: the view serves it (and reads
 * the PFS when this node's copy is broken).
 *
 * A few chunk files are kept open per file (LR_SLOTS), the least
 * recently opened one reused: a reader in order needs one at a time, and
 * a task with many cut files open must not run out of fds because of us.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "common/fs/beneath.h"
#include "localread/localread.h"

/* N bytes at OFF of FD, retrying short reads: the bytes read (fewer at
 * the end of the file), or -1 with errno. */
static ssize_t pread_full(int fd, char *buf, size_t n, uint64_t off)
{
	size_t done = 0;

	while (done < n) {
		ssize_t r = (ssize_t)syscall(SYS_pread64, fd, buf + done,
					     n - done, (off_t)(off + done));

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return done ? (ssize_t)done : -1;
		if (r == 0)
			break;
		done += (size_t)r;
	}
	return (ssize_t)done;
}

/* Chunk INDEX's file, checked, or -1. */
static int open_chunk(struct lr_file *f, uint64_t index)
{
	char name[CHUNKXATTR_NAME_MAX];
	struct statx st;
	int fd;

	chunkxattr_chunk_name(&f->x, index, name);
	fd = beneath_open(f->dirfd, name, O_RDONLY, 0);
	if (fd < 0)
		return -1;
	if (syscall(SYS_statx, fd, "", AT_EMPTY_PATH, STATX_TYPE | STATX_SIZE,
		    &st) < 0 ||
	    !S_ISREG(st.stx_mode) ||
	    st.stx_size != chunkxattr_chunk_len(&f->x, index)) {
		syscall(SYS_close, fd);
		return -1;
	}
	return fd;
}

/* A slot holding chunk INDEX's file, in use by the caller (slot_done),
 * or NULL: the chunk cannot be read here. A chunk whose file is missing
 * or wrong is marked unusable; one that finds every slot in use is read
 * through the view this time only. */
static struct lr_slot *slot_for(struct lr_file *f, uint64_t index)
{
	struct lr_slot *s = NULL;
	int fd;

	pthread_mutex_lock(&f->slots_mu);
	for (unsigned k = 0; k < LR_SLOTS; k++)
		if (f->slots[k].fd >= 0 && f->slots[k].index == index) {
			s = &f->slots[k];
			s->users++;
			pthread_mutex_unlock(&f->slots_mu);
			return s;
		}
	for (unsigned k = 0; k < LR_SLOTS && !s; k++) {
		struct lr_slot *c = &f->slots[(f->next_slot + k) % LR_SLOTS];

		if (!c->users)
			s = c;
	}
	if (!s) {
		pthread_mutex_unlock(&f->slots_mu);
		return NULL;
	}
	f->next_slot = (unsigned)(s - f->slots + 1) % LR_SLOTS;
	if (s->fd >= 0)
		syscall(SYS_close, s->fd);
	s->fd = -1;
	/* opened under the lock: a few microseconds, once per chunk */
	fd = open_chunk(f, index);
	if (fd < 0) {
		if (errno != EMFILE && errno != ENFILE && errno != ENOMEM)
			atomic_store(&f->unusable[index], 1);
		pthread_mutex_unlock(&f->slots_mu);
		return NULL;
	}
	s->fd = fd;
	s->index = index;
	s->users = 1;
	pthread_mutex_unlock(&f->slots_mu);
	return s;
}

static void slot_done(struct lr_file *f, struct lr_slot *s)
{
	pthread_mutex_lock(&f->slots_mu);
	s->users--;
	pthread_mutex_unlock(&f->slots_mu);
}

/* Is chunk INDEX to be read here? */
static bool here(const struct lr_file *f, uint64_t index)
{
	return chunkxattr_held(&f->x, index) &&
	       !atomic_load_explicit(&f->unusable[index], memory_order_relaxed);
}

/* LEN bytes at AT of chunk INDEX from its file: true when all were. */
static bool local_piece(struct lr_file *f, uint64_t index, uint64_t at,
			char *buf, size_t len)
{
	struct lr_slot *s = slot_for(f, index);
	ssize_t r;

	if (!s)
		return false;
	r = pread_full(s->fd, buf, len, at);
	slot_done(f, s);
	if (r == (ssize_t)len)
		return true;
	/* cut short or failing under us: the view's copy from now on */
	atomic_store(&f->unusable[index], 1);
	return false;
}

ssize_t lr_pread(struct lr_file *f, int fd, char *buf, size_t n, uint64_t off)
{
	size_t done = 0;
	int e = errno;

	if (off >= f->x.size)
		return 0;
	if (n > f->x.size - off)
		n = (size_t)(f->x.size - off);
	while (done < n) {
		uint64_t index, at, len, span;
		ssize_t r;

		chunkxattr_piece(&f->x, off + done, n - done, &index, &at,
				 &len);
		if (here(f, index) &&
		    local_piece(f, index, at, buf + done, (size_t)len)) {
			done += (size_t)len;
			continue;
		}
		/* this piece and the next ones not here: one read of the
		 * view */
		for (span = len; done + span < n; span += len) {
			chunkxattr_piece(&f->x, off + done + span,
					 n - done - span, &index, &at, &len);
			if (here(f, index))
				break;
		}
		r = pread_full(fd, buf + done, (size_t)span, off + done);
		if (r < 0) {
			if (done)
				break;
			return -1; /* the view's error, as without us */
		}
		done += (size_t)r;
		if ((uint64_t)r < span)
			break; /* the view's file ended early */
	}
	errno = e;
	return (ssize_t)done;
}

void lr_release_chunks(struct lr_file *f)
{
	for (unsigned k = 0; k < LR_SLOTS; k++)
		if (f->slots[k].fd >= 0) {
			syscall(SYS_close, f->slots[k].fd);
			f->slots[k].fd = -1;
		}
}
