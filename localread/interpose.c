/* interpose.c - libiostage-localread.so's exported libc functions (see
 * localread.h).
 *
 * Opens are passed on and their fd shown to the table; reads of an fd
 * the table knows are served by lr_pread, every other call is the real
 * one untouched. read() has an offset to keep: it is read and advanced
 * with lseek on the fd itself (no FUSE request: the kernel keeps it), so
 * a later lseek, readv or read through the view sees it where a plain
 * read would have left it; the file's pos lock keeps two threads' read()
 * on one fd from interleaving. The real functions are found with
 * dlsym(RTLD_NEXT) on first use.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/close_range.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "localread/localread.h"

/* glibc's fortify entry points have no prototypes in the headers;
 * programs built with _FORTIFY_SOURCE call them. */
LR_EXPORT int __open_2(const char *path, int flags);
LR_EXPORT int __open64_2(const char *path, int flags);
LR_EXPORT int __openat_2(int dirfd, const char *path, int flags);
LR_EXPORT int __openat64_2(int dirfd, const char *path, int flags);
LR_EXPORT ssize_t __read_chk(int fd, void *buf, size_t n, size_t buflen);
LR_EXPORT ssize_t __pread_chk(int fd, void *buf, size_t n, off_t off,
			      size_t buflen);
LR_EXPORT ssize_t __pread64_chk(int fd, void *buf, size_t n, off64_t off,
				size_t buflen);
LR_EXPORT void closefrom(int lowfd);
LR_EXPORT int close_range(unsigned lo, unsigned hi, int flags);

/* The next definition of NAME, found once; a libc without it makes the
 * call fail with ENOSYS. */
#define REAL(name, fail, ...)                                                  \
	({                                                                     \
		static __typeof__(&name) _Atomic real_;                        \
		__typeof__(&name) fn_ =                                        \
		    atomic_load_explicit(&real_, memory_order_relaxed);        \
		if (!fn_) {                                                    \
			fn_ = (__typeof__(&name))dlsym(RTLD_NEXT, #name);      \
			atomic_store_explicit(&real_, fn_,                     \
					      memory_order_relaxed);           \
		}                                                              \
		fn_ ? fn_(__VA_ARGS__) : (errno = ENOSYS, fail);               \
	})

__attribute__((constructor)) static void lr_start(void)
{
	const char *v = getenv("IOSTAGE_LOCALREAD");

	lr_enabled = !v || strcmp(v, "0") != 0;
	pthread_atfork(lr_fork_prepare, lr_fork_parent, lr_fork_child);
}

static mode_t mode_arg(int flags, va_list ap)
{
	return (flags & O_CREAT) || (flags & O_TMPFILE) == O_TMPFILE
		   ? (mode_t)va_arg(ap, int)
		   : 0;
}

static int opened(int fd, int flags)
{
	if (fd >= 0)
		lr_opened(fd, flags);
	return fd;
}

LR_EXPORT int open(const char *path, int flags, ...)
{
	va_list ap;
	mode_t mode;

	va_start(ap, flags);
	mode = mode_arg(flags, ap);
	va_end(ap);
	return opened(REAL(open, -1, path, flags, mode), flags);
}

LR_EXPORT int open64(const char *path, int flags, ...)
{
	va_list ap;
	mode_t mode;

	va_start(ap, flags);
	mode = mode_arg(flags, ap);
	va_end(ap);
	return opened(REAL(open64, -1, path, flags, mode), flags);
}

LR_EXPORT int openat(int dirfd, const char *path, int flags, ...)
{
	va_list ap;
	mode_t mode;

	va_start(ap, flags);
	mode = mode_arg(flags, ap);
	va_end(ap);
	return opened(REAL(openat, -1, dirfd, path, flags, mode), flags);
}

LR_EXPORT int openat64(int dirfd, const char *path, int flags, ...)
{
	va_list ap;
	mode_t mode;

	va_start(ap, flags);
	mode = mode_arg(flags, ap);
	va_end(ap);
	return opened(REAL(openat64, -1, dirfd, path, flags, mode), flags);
}

LR_EXPORT int __open_2(const char *path, int flags)
{
	return opened(REAL(__open_2, -1, path, flags), flags);
}

LR_EXPORT int __open64_2(const char *path, int flags)
{
	return opened(REAL(__open64_2, -1, path, flags), flags);
}

LR_EXPORT int __openat_2(int dirfd, const char *path, int flags)
{
	return opened(REAL(__openat_2, -1, dirfd, path, flags), flags);
}

LR_EXPORT int __openat64_2(int dirfd, const char *path, int flags)
{
	return opened(REAL(__openat64_2, -1, dirfd, path, flags), flags);
}

/* read() of F on FD at the fd's offset, which it advances. */
static ssize_t read_here(struct lr_file *f, int fd, void *buf, size_t n)
{
	int e = errno;
	off_t off;
	ssize_t r;

	pthread_mutex_lock(&f->pos);
	off = (off_t)syscall(SYS_lseek, fd, (off_t)0, SEEK_CUR);
	if (off < 0) {
		pthread_mutex_unlock(&f->pos);
		lr_put(f);
		errno = e;
		return REAL(read, -1, fd, buf, n);
	}
	r = lr_pread(f, fd, buf, n, (uint64_t)off);
	if (r > 0)
		syscall(SYS_lseek, fd, off + r, SEEK_SET);
	pthread_mutex_unlock(&f->pos);
	lr_put(f);
	if (r >= 0)
		errno = e;
	return r;
}

static ssize_t pread_here(struct lr_file *f, int fd, void *buf, size_t n,
			  off_t off)
{
	ssize_t r = lr_pread(f, fd, buf, n, (uint64_t)off);

	lr_put(f);
	return r;
}

LR_EXPORT ssize_t read(int fd, void *buf, size_t n)
{
	struct lr_file *f = n ? lr_get(fd) : NULL;

	return f ? read_here(f, fd, buf, n) : REAL(read, -1, fd, buf, n);
}

LR_EXPORT ssize_t __read_chk(int fd, void *buf, size_t n, size_t buflen)
{
	struct lr_file *f = n && n <= buflen ? lr_get(fd) : NULL;

	/* n > buflen: the real one reports the overflow */
	return f ? read_here(f, fd, buf, n)
		 : REAL(__read_chk, -1, fd, buf, n, buflen);
}

LR_EXPORT ssize_t pread(int fd, void *buf, size_t n, off_t off)
{
	struct lr_file *f = n && off >= 0 ? lr_get(fd) : NULL;

	return f ? pread_here(f, fd, buf, n, off)
		 : REAL(pread, -1, fd, buf, n, off);
}

LR_EXPORT ssize_t pread64(int fd, void *buf, size_t n, off64_t off)
{
	struct lr_file *f = n && off >= 0 ? lr_get(fd) : NULL;

	return f ? pread_here(f, fd, buf, n, off)
		 : REAL(pread64, -1, fd, buf, n, off);
}

LR_EXPORT ssize_t __pread_chk(int fd, void *buf, size_t n, off_t off,
			      size_t buflen)
{
	struct lr_file *f = n && n <= buflen && off >= 0 ? lr_get(fd) : NULL;

	return f ? pread_here(f, fd, buf, n, off)
		 : REAL(__pread_chk, -1, fd, buf, n, off, buflen);
}

LR_EXPORT ssize_t __pread64_chk(int fd, void *buf, size_t n, off64_t off,
				size_t buflen)
{
	struct lr_file *f = n && n <= buflen && off >= 0 ? lr_get(fd) : NULL;

	return f ? pread_here(f, fd, buf, n, off)
		 : REAL(__pread64_chk, -1, fd, buf, n, off, buflen);
}

LR_EXPORT int close(int fd)
{
	lr_closed(fd);
	return REAL(close, -1, fd);
}

LR_EXPORT int dup2(int from, int to)
{
	int r = REAL(dup2, -1, from, to);

	if (r >= 0 && from != to)
		lr_closed(to);
	return r;
}

LR_EXPORT int dup3(int from, int to, int flags)
{
	int r = REAL(dup3, -1, from, to, flags);

	if (r >= 0)
		lr_closed(to);
	return r;
}

LR_EXPORT int close_range(unsigned lo, unsigned hi, int flags)
{
	/* CLOSE_RANGE_CLOEXEC closes nothing now */
	if (!(flags & CLOSE_RANGE_CLOEXEC))
		lr_closed_range(lo, hi);
	return REAL(close_range, -1, lo, hi, flags);
}

LR_EXPORT void closefrom(int lowfd)
{
	if (lowfd >= 0)
		lr_closed_range((unsigned)lowfd, ~0u);
	REAL(closefrom, (void)0, lowfd);
}
