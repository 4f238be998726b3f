/* preload_fds.c - what the shim knows about each open file descriptor.
 *
 * A fixed table indexed by fd (SHIM_MAX_FDS entries, zero pages until
 * touched): whether the fd is file I/O at all (its kind), the file's
 * class, whether it is a checkpoint, and the offsets that tell
 * consecutive and sequential accesses apart. Entries are written by
 * whichever thread opens, reads or closes the fd; two threads using one
 * fd at once may blur its CONSEC/SEQ counts, never the byte counts.
 *
 * The kind is decided when the fd is opened, or, for an fd the shim did
 * not see opened (stdin/stdout inherited across exec, a shell's
 * redirection, an fd libc opened internally), the first time a counted
 * call uses it: one fstat and one readlink of /proc/self/fd/N, once per
 * fd, after which the entry is known like any other. Reads and writes
 * only look at the entry. The table outlives neither an exec (the new
 * image starts empty and learns its inherited fds) nor a close the shim
 * does not see (libc's internal closes): an fd closed that way and
 * reused by a call the shim does not interpose keeps a stale entry.
 * pipe, socket, accept and the dup family are interposed for that reason.
 *
 * Output files written through the shim are also listed by path (bounded:
 * SHIM_MAX_FILES paths in a SHIM_FILE_ARENA arena, claimed with atomic
 * bumps), for the daemon's shared vs file-per-process counts.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "shim/preload.h"

struct shim_fd shim_fds[SHIM_MAX_FDS];

struct shim_file {
	uint32_t path_off;
	uint32_t path_len;
	uint8_t cls;
	atomic_bool ready; /* path copied: readable */
	_Atomic uint64_t written;
};

static struct shim_file files[SHIM_MAX_FILES];
static atomic_uint nfiles;
static atomic_ushort files_gen;
static char arena[SHIM_FILE_ARENA];
static atomic_uint arena_used;

static int16_t file_entry(const char *path, enum shim_class cls)
{
	size_t len = strlen(path);
	unsigned n = atomic_load(&nfiles), off, i;

	if (n > SHIM_MAX_FILES)
		n = SHIM_MAX_FILES;
	for (i = 0; i < n; i++)
		if (atomic_load(&files[i].ready) && files[i].path_len == len &&
		    memcmp(arena + files[i].path_off, path, len) == 0)
			return (int16_t)i;
	if (len >= SHIM_FILE_ARENA)
		return -1;
	i = atomic_fetch_add(&nfiles, 1);
	if (i >= SHIM_MAX_FILES)
		return -1;
	off = atomic_fetch_add(&arena_used, (unsigned)len + 1);
	if (off + len + 1 > SHIM_FILE_ARENA) {
		/* No room for the path: the slot stays unready (skipped). */
		return -1;
	}
	memcpy(arena + off, path, len + 1);
	files[i].path_off = off;
	files[i].path_len = (uint32_t)len;
	files[i].cls = (uint8_t)cls;
	atomic_store(&files[i].ready, true);
	return (int16_t)i;
}

enum shim_class shim_fd_classify(int dirfd, const char *path, bool *ret_ckpt,
				 const char **ret_abs)
{
	const struct shim_fd *dir;

	*ret_ckpt = false;
	*ret_abs = NULL;
	if (path[0] == '/' || dirfd == AT_FDCWD)
		return shim_classify(path, ret_ckpt, ret_abs);
	/* openat(dirfd, "rel"): the directory's class, if we saw it open. */
	dir = shim_fd_get(dirfd);
	if (!dir || dir->kind == SHIM_FD_UNKNOWN)
		return SHIM_CLASS_OTHER;
	*ret_ckpt = dir->ckpt;
	return (enum shim_class)dir->cls;
}

/* Is the file of ST, at ABS (NULL: unknown), file I/O? */
static enum shim_fd_kind kind_of(const struct stat *st, const char *abs)
{
	if (abs && shim_path_pseudo(abs))
		return SHIM_FD_NOTFILE;
	return S_ISREG(st->st_mode) || S_ISDIR(st->st_mode) ? SHIM_FD_FILE
							    : SHIM_FD_NOTFILE;
}

/* fstat without the interposed wrapper (and its counting). */
static int raw_fstat(int fd, struct stat *st)
{
	return (int)syscall(SYS_fstat, fd, st);
}

enum shim_fd_kind shim_fd_kind_at_open(int fd, int dirfd, const char *abs,
				       enum shim_class cls)
{
	const struct shim_fd *dir;
	struct stat st;
	int saved;

	if (cls != SHIM_CLASS_OTHER)
		return SHIM_FD_FILE;
	if (abs && shim_path_pseudo(abs))
		return SHIM_FD_NOTFILE;
	/* openat(dirfd, "rel") under a directory that is not file I/O
	 * (/proc/self, say) is not either. */
	dir = abs ? NULL : shim_fd_get(dirfd);
	if (dir && dir->kind == SHIM_FD_NOTFILE)
		return SHIM_FD_NOTFILE;
	saved = errno;
	if (raw_fstat(fd, &st) < 0) {
		errno = saved;
		return SHIM_FD_NOTFILE;
	}
	errno = saved;
	return kind_of(&st, abs);
}

void shim_fd_notfile(int fd)
{
	struct shim_fd *e = shim_fd_get(fd);

	if (e) {
		memset(e, 0, sizeof(*e));
		e->kind = SHIM_FD_NOTFILE;
	}
}

struct shim_fd *shim_fd_learn(int fd)
{
	struct shim_fd *e = shim_fd_get(fd);
	enum shim_class cls = SHIM_CLASS_OTHER;
	const char *abs = NULL;
	char link[32], path[4096];
	struct stat st;
	bool ckpt = false;
	long flags, pos;
	ssize_t n;
	int saved = errno;

	if (!e || raw_fstat(fd, &st) < 0)
		goto out;
	snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
	n = (ssize_t)syscall(SYS_readlinkat, AT_FDCWD, link, path,
			     sizeof(path) - 1);
	if (n > 0 && path[0] == '/') {
		path[n] = '\0';
		/* " (deleted)" after the name of an unlinked file: the name
		 * still says where it was. */
		cls = shim_classify(path, &ckpt, &abs);
	}
	flags = syscall(SYS_fcntl, fd, F_GETFL);
	/* A memfd is a regular file in memory, not on a file system. */
	shim_fd_opened(fd,
		       n > 7 && strncmp(path, "/memfd:", 7) == 0
			   ? SHIM_FD_NOTFILE
			   : kind_of(&st, abs),
		       cls, ckpt, abs, flags < 0 ? 0 : (int)flags);
	/* Carry on from where the fd is: reading an inherited file on from
	 * its offset is consecutive, as after an open. */
	pos = S_ISREG(st.st_mode) ? syscall(SYS_lseek, fd, 0L, SEEK_CUR) : -1;
	if (pos > 0)
		e->pos = e->read_end = e->write_end = pos;
	errno = saved;
	return e;
out:
	errno = saved;
	return NULL;
}

bool shim_fd_is_file_untracked(int fd)
{
	struct stat st;
	int saved = errno;
	bool file = raw_fstat(fd, &st) == 0 &&
		    kind_of(&st, NULL) == SHIM_FD_FILE;

	errno = saved;
	return file;
}

void shim_fd_opened(int fd, enum shim_fd_kind kind, enum shim_class cls,
		    bool ckpt, const char *abs, int flags)
{
	struct shim_fd *e = shim_fd_get(fd);

	if (!e)
		return;
	e->cls = (uint8_t)cls;
	e->ckpt = ckpt;
	e->last_op = 0;
	e->pos = 0;
	e->read_end = 0;
	e->write_end = 0;
	e->append = (flags & O_APPEND) != 0;
	e->file = -1;
	e->file_gen = atomic_load(&files_gen);
	if (kind == SHIM_FD_FILE && cls == SHIM_CLASS_OUTPUT && abs &&
	    (flags & (O_WRONLY | O_RDWR)))
		e->file = file_entry(abs, cls);
	e->kind = (uint8_t)kind;
}

void shim_fd_dup(int oldfd, int newfd)
{
	struct shim_fd *from = shim_fd_get(oldfd), *to = shim_fd_get(newfd);

	if (!to)
		return;
	if (from && from->kind != SHIM_FD_UNKNOWN)
		*to = *from;
	else
		memset(to, 0, sizeof(*to));
}

void shim_fd_closed(int fd)
{
	struct shim_fd *e = shim_fd_get(fd);

	if (e)
		e->kind = SHIM_FD_UNKNOWN;
}

void shim_fd_closed_range(unsigned first, unsigned last)
{
	for (unsigned fd = first; fd <= last && fd < SHIM_MAX_FDS; fd++)
		if (shim_fds[fd].kind) /* read first: no needless page copy */
			shim_fds[fd].kind = SHIM_FD_UNKNOWN;
}

void shim_fd_reset_files(void)
{
	atomic_store(&nfiles, 0);
	atomic_store(&arena_used, 0);
	atomic_fetch_add(&files_gen, 1);
	for (unsigned i = 0; i < SHIM_MAX_FILES; i++) {
		atomic_store(&files[i].ready, false);
		atomic_store(&files[i].written, 0);
	}
}

void shim_fd_file_written(const struct shim_fd *e, uint64_t n)
{
	if (e->file >= 0 && e->file < SHIM_MAX_FILES &&
	    e->file_gen ==
		atomic_load_explicit(&files_gen, memory_order_relaxed))
		atomic_fetch_add_explicit(&files[e->file].written, n,
					  memory_order_relaxed);
}

size_t shim_files_count(void)
{
	unsigned n = atomic_load(&nfiles);

	return n > SHIM_MAX_FILES ? SHIM_MAX_FILES : n;
}

bool shim_files_get(size_t i, const char **ret_path, enum shim_class *ret_cls,
		    uint64_t *ret_written)
{
	if (i >= SHIM_MAX_FILES || !atomic_load(&files[i].ready))
		return false;
	*ret_path = arena + files[i].path_off;
	*ret_cls = (enum shim_class)files[i].cls;
	*ret_written = atomic_load(&files[i].written);
	return true;
}
