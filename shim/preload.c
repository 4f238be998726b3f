/* preload.c - libiostage-preload.so: count a process's POSIX and stdio I/O.
 *
 * Injected with LD_PRELOAD by the SPANK plugin in deep mode (trace=true,
 * spank/trace.c). Every interposer here has the same shape:
 *
 *     if not counting, or this thread is already inside the shim:
 *             return the real call
 *     note the class and the clock            (guarded, see below)
 *     make the real call
 *     count it: ops, bytes, size bucket, offsets, time, busy time
 *     restore errno and return the real result
 *
 * The guard is a per-thread flag held only while the shim does its own
 * bookkeeping, never across the real call: a signal handler that does I/O
 * during the bookkeeping passes straight through, one that does I/O during
 * the real call is counted like any call. There are no locks, so nothing
 * can deadlock; counters are per thread (preload_counters.c).
 *
 * The real functions are found with dlsym(RTLD_NEXT) once, at start-up or
 * on the first call that comes before it (another library's constructor);
 * dlsym does not call any function interposed here, so the resolution does
 * not recurse. One summary per process: at exit (destructor, _exit), and
 * before an exec replaces the image (the new image loads the shim again:
 * LD_PRELOAD is put back into an exec's environment if the caller dropped
 * it). A forked child starts from zero and sends its own.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sendfile.h>
#include <sys/single_threaded.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include "shim/preload.h"

/* <bits/stdio.h> makes these macros when optimizing; we define them. */
#undef fread_unlocked
#undef fwrite_unlocked

/* glibc's compatibility and fortify entry points have no prototypes in
 * the headers any more; programs built against older or fortified headers
 * still call them. */
SHIM_EXPORT int __open_2(const char *path, int flags);
SHIM_EXPORT int __open64_2(const char *path, int flags);
SHIM_EXPORT int __openat_2(int dirfd, const char *path, int flags);
SHIM_EXPORT int __openat64_2(int dirfd, const char *path, int flags);
SHIM_EXPORT ssize_t __read_chk(int fd, void *buf, size_t n, size_t buflen);
SHIM_EXPORT ssize_t __pread_chk(int fd, void *buf, size_t n, off_t off,
				size_t buflen);
SHIM_EXPORT ssize_t __pread64_chk(int fd, void *buf, size_t n, off64_t off,
				  size_t buflen);
SHIM_EXPORT size_t __fread_chk(void *ptr, size_t ptrlen, size_t size, size_t n,
			       FILE *fp);
SHIM_EXPORT size_t __fread_unlocked_chk(void *ptr, size_t ptrlen, size_t size,
					size_t n, FILE *fp);
SHIM_EXPORT int __xstat(int ver, const char *path, struct stat *st);
SHIM_EXPORT int __xstat64(int ver, const char *path, struct stat64 *st);
SHIM_EXPORT int __lxstat(int ver, const char *path, struct stat *st);
SHIM_EXPORT int __lxstat64(int ver, const char *path, struct stat64 *st);
SHIM_EXPORT int __fxstat(int ver, int fd, struct stat *st);
SHIM_EXPORT int __fxstat64(int ver, int fd, struct stat64 *st);
SHIM_EXPORT int __fxstatat(int ver, int dirfd, const char *path,
			   struct stat *st, int flags);
SHIM_EXPORT int __fxstatat64(int ver, int dirfd, const char *path,
			     struct stat64 *st, int flags);

extern char **environ;

/* ---- the real functions ---------------------------------------------------- */

#define REAL_LIST(X)                                                           \
	X(open, int, (const char *, int, ...))                                 \
	X(open64, int, (const char *, int, ...))                               \
	X(openat, int, (int, const char *, int, ...))                          \
	X(openat64, int, (int, const char *, int, ...))                        \
	X(creat, int, (const char *, mode_t))                                  \
	X(creat64, int, (const char *, mode_t))                                \
	X(__open_2, int, (const char *, int))                                  \
	X(__open64_2, int, (const char *, int))                                \
	X(__openat_2, int, (int, const char *, int))                           \
	X(__openat64_2, int, (int, const char *, int))                         \
	X(read, ssize_t, (int, void *, size_t))                                \
	X(__read_chk, ssize_t, (int, void *, size_t, size_t))                  \
	X(pread, ssize_t, (int, void *, size_t, off_t))                        \
	X(pread64, ssize_t, (int, void *, size_t, off64_t))                    \
	X(__pread_chk, ssize_t, (int, void *, size_t, off_t, size_t))          \
	X(__pread64_chk, ssize_t, (int, void *, size_t, off64_t, size_t))      \
	X(readv, ssize_t, (int, const struct iovec *, int))                    \
	X(preadv, ssize_t, (int, const struct iovec *, int, off_t))            \
	X(write, ssize_t, (int, const void *, size_t))                         \
	X(pwrite, ssize_t, (int, const void *, size_t, off_t))                 \
	X(pwrite64, ssize_t, (int, const void *, size_t, off64_t))             \
	X(writev, ssize_t, (int, const struct iovec *, int))                   \
	X(pwritev, ssize_t, (int, const struct iovec *, int, off_t))           \
	X(copy_file_range, ssize_t,                                            \
	  (int, off64_t *, int, off64_t *, size_t, unsigned))                  \
	X(sendfile, ssize_t, (int, int, off_t *, size_t))                      \
	X(sendfile64, ssize_t, (int, int, off64_t *, size_t))                  \
	X(lseek, off_t, (int, off_t, int))                                     \
	X(lseek64, off64_t, (int, off64_t, int))                               \
	X(stat, int, (const char *, struct stat *))                            \
	X(stat64, int, (const char *, struct stat64 *))                        \
	X(lstat, int, (const char *, struct stat *))                           \
	X(lstat64, int, (const char *, struct stat64 *))                       \
	X(fstat, int, (int, struct stat *))                                    \
	X(fstat64, int, (int, struct stat64 *))                                \
	X(fstatat, int, (int, const char *, struct stat *, int))               \
	X(fstatat64, int, (int, const char *, struct stat64 *, int))           \
	X(statx, int, (int, const char *, int, unsigned, struct statx *))      \
	X(__xstat, int, (int, const char *, struct stat *))                    \
	X(__xstat64, int, (int, const char *, struct stat64 *))                \
	X(__lxstat, int, (int, const char *, struct stat *))                   \
	X(__lxstat64, int, (int, const char *, struct stat64 *))               \
	X(__fxstat, int, (int, int, struct stat *))                            \
	X(__fxstat64, int, (int, int, struct stat64 *))                        \
	X(__fxstatat, int, (int, int, const char *, struct stat *, int))       \
	X(__fxstatat64, int, (int, int, const char *, struct stat64 *, int))   \
	X(fsync, int, (int))                                                   \
	X(fdatasync, int, (int))                                               \
	X(close, int, (int))                                                   \
	X(dup, int, (int))                                                     \
	X(dup2, int, (int, int))                                               \
	X(dup3, int, (int, int, int))                                          \
	X(fcntl, int, (int, int, ...))                                         \
	X(fcntl64, int, (int, int, ...))                                       \
	X(pipe, int, (int[2]))                                                 \
	X(pipe2, int, (int[2], int))                                           \
	X(socket, int, (int, int, int))                                        \
	X(socketpair, int, (int, int, int, int[2]))                            \
	X(accept, int, (int, struct sockaddr *, socklen_t *))                  \
	X(accept4, int, (int, struct sockaddr *, socklen_t *, int))            \
	X(chdir, int, (const char *))                                          \
	X(fchdir, int, (int))                                                  \
	X(fopen, FILE *, (const char *, const char *))                         \
	X(fopen64, FILE *, (const char *, const char *))                       \
	X(fclose, int, (FILE *))                                               \
	X(fseek, int, (FILE *, long, int))                                     \
	X(fseeko, int, (FILE *, off_t, int))                                   \
	X(fseeko64, int, (FILE *, off64_t, int))                               \
	X(rewind, void, (FILE *))                                              \
	X(close_range, int, (unsigned, unsigned, int))                         \
	X(closefrom, void, (int))                                              \
	X(fread, size_t, (void *, size_t, size_t, FILE *))                     \
	X(fread_unlocked, size_t, (void *, size_t, size_t, FILE *))            \
	X(__fread_chk, size_t, (void *, size_t, size_t, size_t, FILE *))       \
	X(__fread_unlocked_chk, size_t,                                        \
	  (void *, size_t, size_t, size_t, FILE *))                            \
	X(fwrite, size_t, (const void *, size_t, size_t, FILE *))              \
	X(fwrite_unlocked, size_t, (const void *, size_t, size_t, FILE *))     \
	X(execve, int, (const char *, char *const[], char *const[]))           \
	X(execvpe, int, (const char *, char *const[], char *const[]))          \
	X(fexecve, int, (int, char *const[], char *const[]))                   \
	X(execveat, int,                                                       \
	  (int, const char *, char *const[], char *const[], int))              \
	X(_exit, void, (int))                                                  \
	X(_Exit, void, (int))

#define REAL_FIELD(name, ret, args) ret(*name) args;
static struct {
	REAL_LIST(REAL_FIELD)
} real;

static atomic_int resolved; /* 0 no, 1 in progress, 2 done */
static __thread int resolving __attribute__((tls_model("initial-exec")));

/* Resolve every real function once. Another thread that needs one while
 * the resolution is under way waits for it (it takes microseconds, once);
 * the resolving thread itself, re-entered from inside dlsym, cannot wait
 * and gets NULL. */
static void resolve_all(void)
{
	int expect = 0;

	if (!atomic_compare_exchange_strong(&resolved, &expect, 1)) {
		while (!resolving && atomic_load(&resolved) != 2)
			sched_yield();
		return;
	}
	resolving = 1;
#define REAL_RESOLVE(name, ret, args)                                          \
	real.name = (ret(*) args)dlsym(RTLD_NEXT, #name);
	REAL_LIST(REAL_RESOLVE)
	resolving = 0;
	atomic_store(&resolved, 2);
}

/* The real NAME, resolving on first use; a call we cannot forward (dlsym
 * re-entering us mid-resolution; a libc without NAME) fails with ENOSYS
 * rather than crash. */
#define REAL(name)                                                             \
	({                                                                     \
		if (__builtin_expect(!real.name, 0))                           \
			resolve_all();                                         \
		real.name;                                                     \
	})

#define CALL_REAL(fail, name, ...)                                             \
	({                                                                     \
		__typeof__(real.name) fn_ = REAL(name);                        \
		if (!fn_) {                                                    \
			errno = ENOSYS;                                        \
			return fail;                                           \
		}                                                              \
		fn_(__VA_ARGS__);                                              \
	})

/* ---- state ------------------------------------------------------------------- */

enum shim_state {
	SHIM_STARTING = 0, /* before the constructor: pass through */
	SHIM_COUNTING,
	SHIM_DISABLED, /* failure: pass through, summary says why */
	SHIM_DONE,     /* summary sent: pass through */
};

static atomic_int state;
static const char *disabled_reason;
static pid_t my_pid;
static atomic_flag reporting = ATOMIC_FLAG_INIT;
static char self_path[4096]; /* this library, for exec */
static char *exec_env[8];    /* NAME=value to carry across exec */
static size_t nexec_env;

static __thread int guard __attribute__((tls_model("initial-exec")));

bool shim_enabled(void)
{
	return atomic_load_explicit(&state, memory_order_relaxed) ==
	       SHIM_COUNTING;
}

void shim_disable(const char *reason)
{
	if (!disabled_reason)
		disabled_reason = reason;
	atomic_store(&state, SHIM_DISABLED);
}

const char *shim_disabled_reason(void)
{
	return disabled_reason;
}

/* ---- counting -------------------------------------------------------------- */

struct call {
	struct shim_fd *fd; /* NULL: untracked */
	enum shim_class cls;
	bool ckpt;
	bool shared;     /* other threads may be in I/O too */
	const char *abs; /* the path, absolute, or NULL (opens) */
	int dirfd;       /* what a relative path is under (opens) */
	shim_ticks t0;
};

/* Start a call on a known class (the caller has seen that the shim counts
 * and that this thread is not inside it). Returns true, for the callers'
 * "begin or pass through" form.
 *
 * While the process has never had a second thread (glibc's own
 * __libc_single_threaded, which also sees threads started before us), no
 * other call can overlap this one, so its busy span is simply its duration
 * and the shared busy word is left alone: two atomic operations saved per
 * call, a third of the shim's cost on small-file workloads. Only this
 * thread could start a second one, and it is not inside a call when it
 * does, so a call never straddles the switch. */
static inline bool begin(struct call *c)
{
	c->t0 = shim_clock_now();
	c->shared = !__libc_single_threaded;
	if (c->shared) {
		guard = 1;
		shim_busy_enter(c->cls, c->t0);
		guard = 0;
	}
	return true;
}

/* begin_fd for an fd not known to be a file: one the shim did not see
 * opened is looked at once (shim_fd_learn), a pipe, socket or device
 * passes through uncounted, and an fd beyond the table is counted (class
 * other, no offsets) only if it is a file. Out of line: the usual call is
 * on a known file. */
static __attribute__((noinline)) bool begin_fd_slow(struct call *c, int fd,
						    struct shim_fd *e)
{
	bool file;

	guard = 1;
	if (e && e->kind == SHIM_FD_UNKNOWN)
		e = shim_fd_learn(fd); /* NULL: not open, the call fails */
	if (e)
		file = e->kind == SHIM_FD_FILE;
	else
		file = fd >= SHIM_MAX_FDS && shim_fd_is_file_untracked(fd);
	guard = 0;
	if (!file)
		return false;
	c->fd = e;
	c->cls = e ? (enum shim_class)e->cls : SHIM_CLASS_OTHER;
	c->ckpt = e ? e->ckpt : false;
	return begin(c);
}

/* Start a call on FD, or return false to pass it through (not counting,
 * or not file I/O). On the path of every read and write: one load of the
 * fd's kind decides. */
static inline bool begin_fd(struct call *c, int fd)
{
	struct shim_fd *e;

	if (__builtin_expect(!shim_enabled() || guard, 0))
		return false;
	e = shim_fd_get(fd);
	if (__builtin_expect(!e || e->kind != SHIM_FD_FILE, 0))
		return begin_fd_slow(c, fd, e);
	c->fd = e;
	c->cls = (enum shim_class)e->cls;
	c->ckpt = e->ckpt;
	return begin(c);
}

static inline bool begin_path(struct call *c, int dirfd, const char *path)
{
	if (__builtin_expect(!shim_enabled() || guard, 0))
		return false;
	c->fd = NULL;
	c->dirfd = dirfd;
	if (!path) {
		c->cls = SHIM_CLASS_OTHER;
		c->ckpt = false;
		c->abs = NULL;
	} else {
		guard = 1;
		c->cls = shim_fd_classify(dirfd, path, &c->ckpt, &c->abs);
		guard = 0;
	}
	return begin(c);
}

/* Where a finished call's counts go: its clock, busy time and phase. The
 * row to add to, or NULL when there are no counters (the shim is then
 * disabled). Called with the guard held.
 *
 * Nothing from here to the end of a call's counting can set errno (the
 * only libc call, the first block's mmap, keeps it), so it is neither
 * saved nor restored; and the code is kept short and nearly branch-free:
 * after a system call the caches and branch predictors are cold, and on a
 * small-file workload that, not the arithmetic, is what the shim costs. */
static inline uint64_t *count_start(struct call *c, enum shim_op op,
				    shim_ticks *ret_t1)
{
	shim_ticks t1 = shim_clock_now();
	uint64_t busy_all, busy_cls, *k;
	shim_row *ctr;

	/* Leave the busy count even when there is nowhere to count. */
	if (c->shared)
		shim_busy_leave(c->cls, t1, &busy_all, &busy_cls);
	else
		busy_all = busy_cls = t1 - c->t0;
	ctr = shim_counters_mine();
	if (!ctr)
		return NULL;
	k = ctr[shim_phase_for(c->cls, c->ckpt, op)][c->cls];
	k[SHIM_BUSY_ALL] += busy_all;
	k[SHIM_BUSY_CLASS] += busy_cls;
	*ret_t1 = t1;
	return k;
}

/* Count a finished read (RD) or write: RET bytes (< 0: failed) at offset
 * OFF (-1: the fd's position, which then moves). Inlined into end_read and
 * end_write, so that RD is a constant in each. */
static inline __attribute__((always_inline)) void
end_io(struct call *c, bool rd, long long ret, long long off)
{
	struct shim_fd *e = c->fd;
	enum shim_op op = rd ? SHIM_OP_READ : SHIM_OP_WRITE;
	shim_ticks t1;
	uint64_t *k;
	int64_t *last;

	guard = 1;
	k = count_start(c, op, &t1);
	if (!k)
		goto out;
	k[rd ? SHIM_F_READ_TIME : SHIM_F_WRITE_TIME] += t1 - c->t0;
	if (ret < 0)
		goto out;
	k[rd ? SHIM_READS : SHIM_WRITES]++;
	k[rd ? SHIM_BYTES_READ : SHIM_BYTES_WRITTEN] += (uint64_t)ret;
	k[(rd ? SHIM_SIZE_READ_0 : SHIM_SIZE_WRITE_0) +
	  shim_size_bucket((uint64_t)ret)]++;
	if (!e)
		goto out;
	if (!rd)
		shim_fd_file_written(e, (uint64_t)ret);
	k[SHIM_RW_SWITCHES] += e->last_op && e->last_op != op;
	e->last_op = (uint8_t)op;
	if (off < 0 && !rd && e->append) {
		/* O_APPEND: each write lands at the end, after the last;
		 * where that is the shim does not know. */
		k[SHIM_CONSEC_WRITES]++;
		k[SHIM_SEQ_WRITES]++;
		goto out;
	}
	if (off < 0) {
		off = e->pos;
		e->pos = off + ret;
	}
	last = rd ? &e->read_end : &e->write_end;
	k[rd ? SHIM_CONSEC_READS : SHIM_CONSEC_WRITES] += off == *last;
	k[rd ? SHIM_SEQ_READS : SHIM_SEQ_WRITES] += off >= *last;
	*last = off + ret;
	if (ret > 0) {
		uint64_t *max =
		    &k[rd ? SHIM_MAX_BYTE_READ : SHIM_MAX_BYTE_WRITTEN];

		*max = (uint64_t)(off + ret) > *max ? (uint64_t)(off + ret)
						    : *max;
	}
out:
	guard = 0;
}

static void end_read(struct call *c, long long ret, long long off)
{
	end_io(c, true, ret, off);
}

static void end_write(struct call *c, long long ret, long long off)
{
	end_io(c, false, ret, off);
}

/* Count a finished open, seek, stat, fsync or close (OP) that returned RET
 * (< 0: failed). */
static void end_meta(struct call *c, enum shim_op op, long long ret)
{
	shim_ticks t1;
	uint64_t *k;

	guard = 1;
	k = count_start(c, op, &t1);
	if (!k)
		goto out;
	if (op == SHIM_OP_FSYNC) {
		/* Darshan counts fsync time as write time. */
		k[SHIM_F_WRITE_TIME] += t1 - c->t0;
		k[SHIM_FSYNCS] += ret == 0;
		goto out;
	}
	k[SHIM_F_META_TIME] += t1 - c->t0;
	if (ret < 0)
		goto out;
	k[SHIM_OPENS] += op == SHIM_OP_OPEN;
	k[SHIM_SEEKS] += op == SHIM_OP_SEEK;
	k[SHIM_STATS] += op == SHIM_OP_STAT;
out:
	guard = 0;
}

/* ---- opens and closes ------------------------------------------------------- */

/* A call that turned out not to be file I/O (an open of /dev/null, a
 * FIFO, /proc): leave the busy count, count nothing. */
static void drop(struct call *c)
{
	uint64_t all, cls;

	if (c->shared) {
		guard = 1;
		shim_busy_leave(c->cls, shim_clock_now(), &all, &cls);
		guard = 0;
	}
}

/* The open of FD (< 0: failed) with FLAGS is done: what FD is is decided
 * here, once, and only a file's open is counted. */
static int opened(struct call *c, int fd, int flags)
{
	if (fd >= 0) {
		enum shim_fd_kind kind;

		guard = 1;
		kind = shim_fd_kind_at_open(fd, c->dirfd, c->abs, c->cls);
		shim_fd_opened(fd, kind, c->cls, c->ckpt, c->abs, flags);
		if (kind == SHIM_FD_FILE && c->cls == SHIM_CLASS_DATASET)
			shim_observe_open(fd, c->abs, flags);
		guard = 0;
		if (kind != SHIM_FD_FILE) {
			drop(c);
			return fd;
		}
	}
	end_meta(c, SHIM_OP_OPEN, fd);
	return fd;
}

static mode_t open_mode(int flags, va_list ap)
{
	return (flags & O_CREAT) || (flags & O_TMPFILE) == O_TMPFILE
		   ? (mode_t)va_arg(ap, int)
		   : 0;
}

#define OPEN_WRAPPER(name)                                                     \
	SHIM_EXPORT int name(const char *path, int flags, ...)                 \
	{                                                                      \
		struct call c;                                                 \
		va_list ap;                                                    \
		mode_t mode;                                                   \
                                                                               \
		va_start(ap, flags);                                           \
		mode = open_mode(flags, ap);                                   \
		va_end(ap);                                                    \
		if (!begin_path(&c, AT_FDCWD, path))                           \
			return CALL_REAL(-1, name, path, flags, mode);         \
		return opened(&c, CALL_REAL(-1, name, path, flags, mode),      \
			      flags);                                          \
	}
OPEN_WRAPPER(open)
OPEN_WRAPPER(open64)

#define OPENAT_WRAPPER(name)                                                   \
	SHIM_EXPORT int name(int dirfd, const char *path, int flags, ...)      \
	{                                                                      \
		struct call c;                                                 \
		va_list ap;                                                    \
		mode_t mode;                                                   \
                                                                               \
		va_start(ap, flags);                                           \
		mode = open_mode(flags, ap);                                   \
		va_end(ap);                                                    \
		if (!begin_path(&c, dirfd, path))                              \
			return CALL_REAL(-1, name, dirfd, path, flags, mode);  \
		return opened(&c,                                              \
			      CALL_REAL(-1, name, dirfd, path, flags, mode),   \
			      flags);                                          \
	}
OPENAT_WRAPPER(openat)
OPENAT_WRAPPER(openat64)

#define CREAT_WRAPPER(name)                                                    \
	SHIM_EXPORT int name(const char *path, mode_t mode)                    \
	{                                                                      \
		struct call c;                                                 \
                                                                               \
		if (!begin_path(&c, AT_FDCWD, path))                           \
			return CALL_REAL(-1, name, path, mode);                \
		return opened(&c, CALL_REAL(-1, name, path, mode),             \
			      O_WRONLY | O_CREAT | O_TRUNC);                   \
	}
CREAT_WRAPPER(creat)
CREAT_WRAPPER(creat64)

#define OPEN2_WRAPPER(name)                                                    \
	SHIM_EXPORT int name(const char *path, int flags)                      \
	{                                                                      \
		struct call c;                                                 \
                                                                               \
		if (!begin_path(&c, AT_FDCWD, path))                           \
			return CALL_REAL(-1, name, path, flags);               \
		return opened(&c, CALL_REAL(-1, name, path, flags), flags);    \
	}
OPEN2_WRAPPER(__open_2)
OPEN2_WRAPPER(__open64_2)

#define OPENAT2_WRAPPER(name)                                                  \
	SHIM_EXPORT int name(int dirfd, const char *path, int flags)           \
	{                                                                      \
		struct call c;                                                 \
                                                                               \
		if (!begin_path(&c, dirfd, path))                              \
			return CALL_REAL(-1, name, dirfd, path, flags);        \
		return opened(&c, CALL_REAL(-1, name, dirfd, path, flags),     \
			      flags);                                          \
	}
OPENAT2_WRAPPER(__openat_2)
OPENAT2_WRAPPER(__openat64_2)

SHIM_EXPORT int close(int fd)
{
	struct shim_fd *e = shim_fd_get(fd);
	struct call c;
	int ret;

	/* Only a file's close is counted (an fd not known yet is not looked
	 * at just to close it); every close forgets the fd. */
	if (!e || e->kind != SHIM_FD_FILE || !begin_fd(&c, fd)) {
		ret = CALL_REAL(-1, close, fd);
		if (e && e->kind)
			e->kind = SHIM_FD_UNKNOWN;
		return ret;
	}
	ret = CALL_REAL(-1, close, fd);
	/* Linux releases the fd even when close fails. */
	shim_fd_closed(fd);
	c.fd = NULL;
	end_meta(&c, SHIM_OP_CLOSE, ret);
	return ret;
}

static void dup_done(int oldfd, int newfd)
{
	if (newfd >= 0 && shim_enabled() && !guard) {
		int saved = errno;

		shim_fd_dup(oldfd, newfd);
		errno = saved;
	}
}

SHIM_EXPORT int dup(int fd)
{
	int ret = CALL_REAL(-1, dup, fd);

	dup_done(fd, ret);
	return ret;
}

SHIM_EXPORT int dup2(int fd, int fd2)
{
	int ret = CALL_REAL(-1, dup2, fd, fd2);

	if (ret >= 0 && ret != fd)
		dup_done(fd, ret);
	return ret;
}

SHIM_EXPORT int dup3(int fd, int fd2, int flags)
{
	int ret = CALL_REAL(-1, dup3, fd, fd2, flags);

	dup_done(fd, ret);
	return ret;
}

/* fcntl's third argument is an int or a pointer; glibc itself reads it as
 * a pointer, whatever the command. Only F_DUPFD* are looked at. */
#define FCNTL_WRAPPER(name)                                                    \
	SHIM_EXPORT int name(int fd, int cmd, ...)                             \
	{                                                                      \
		va_list ap;                                                    \
		void *arg;                                                     \
		int ret;                                                       \
                                                                               \
		va_start(ap, cmd);                                             \
		arg = va_arg(ap, void *);                                      \
		va_end(ap);                                                    \
		ret = CALL_REAL(-1, name, fd, cmd, arg);                       \
		if (cmd == F_DUPFD || cmd == F_DUPFD_CLOEXEC)                  \
			dup_done(fd, ret);                                     \
		return ret;                                                    \
	}
FCNTL_WRAPPER(fcntl)
FCNTL_WRAPPER(fcntl64)

/* Pipes and sockets are not file I/O. Their fds are marked as such when
 * made, so that an fd number left stale by a close the shim did not see
 * (inside libc) is not taken for the file it was. */
SHIM_EXPORT int pipe(int fds[2])
{
	int ret = CALL_REAL(-1, pipe, fds);

	if (ret == 0) {
		shim_fd_notfile(fds[0]);
		shim_fd_notfile(fds[1]);
	}
	return ret;
}

SHIM_EXPORT int pipe2(int fds[2], int flags)
{
	int ret = CALL_REAL(-1, pipe2, fds, flags);

	if (ret == 0) {
		shim_fd_notfile(fds[0]);
		shim_fd_notfile(fds[1]);
	}
	return ret;
}

SHIM_EXPORT int socket(int domain, int type, int protocol)
{
	int ret = CALL_REAL(-1, socket, domain, type, protocol);

	shim_fd_notfile(ret);
	return ret;
}

SHIM_EXPORT int socketpair(int domain, int type, int protocol, int sv[2])
{
	int ret = CALL_REAL(-1, socketpair, domain, type, protocol, sv);

	if (ret == 0) {
		shim_fd_notfile(sv[0]);
		shim_fd_notfile(sv[1]);
	}
	return ret;
}

SHIM_EXPORT int accept(int fd, struct sockaddr *addr, socklen_t *len)
{
	int ret = CALL_REAL(-1, accept, fd, addr, len);

	shim_fd_notfile(ret);
	return ret;
}

SHIM_EXPORT int accept4(int fd, struct sockaddr *addr, socklen_t *len,
			int flags)
{
	int ret = CALL_REAL(-1, accept4, fd, addr, len, flags);

	shim_fd_notfile(ret);
	return ret;
}

SHIM_EXPORT int close_range(unsigned first, unsigned last, int flags)
{
	int ret = CALL_REAL(-1, close_range, first, last, flags);

	/* CLOSE_RANGE_CLOEXEC (4) only marks them; they stay open. */
	if (ret == 0 && !(flags & 4) && shim_enabled() && !guard)
		shim_fd_closed_range(first, last);
	return ret;
}

SHIM_EXPORT void closefrom(int lowfd)
{
	if (REAL(closefrom))
		real.closefrom(lowfd);
	if (lowfd >= 0 && shim_enabled() && !guard)
		shim_fd_closed_range((unsigned)lowfd, ~0U);
}

SHIM_EXPORT int chdir(const char *path)
{
	int ret = CALL_REAL(-1, chdir, path);

	if (ret == 0)
		shim_classes_cwd_changed();
	return ret;
}

SHIM_EXPORT int fchdir(int fd)
{
	int ret = CALL_REAL(-1, fchdir, fd);

	if (ret == 0)
		shim_classes_cwd_changed();
	return ret;
}

/* ---- reads and writes ------------------------------------------------------ */

#define RW_WRAPPER(name, end_fn, buftype)                                      \
	SHIM_EXPORT ssize_t name(int fd, buftype buf, size_t n)                \
	{                                                                      \
		struct call c;                                                 \
		ssize_t ret;                                                   \
                                                                               \
		if (!begin_fd(&c, fd))                                         \
			return CALL_REAL(-1, name, fd, buf, n);                \
		ret = CALL_REAL(-1, name, fd, buf, n);                         \
		end_fn(&c, ret, -1);                                           \
		return ret;                                                    \
	}
RW_WRAPPER(read, end_read, void *)
RW_WRAPPER(write, end_write, const void *)

SHIM_EXPORT ssize_t __read_chk(int fd, void *buf, size_t n, size_t buflen)
{
	struct call c;
	ssize_t ret;

	if (!begin_fd(&c, fd))
		return CALL_REAL(-1, __read_chk, fd, buf, n, buflen);
	ret = CALL_REAL(-1, __read_chk, fd, buf, n, buflen);
	end_read(&c, ret, -1);
	return ret;
}

#define PRW_WRAPPER(name, end_fn, buftype, offtype)                            \
	SHIM_EXPORT ssize_t name(int fd, buftype buf, size_t n, offtype off)   \
	{                                                                      \
		struct call c;                                                 \
		ssize_t ret;                                                   \
                                                                               \
		if (!begin_fd(&c, fd))                                         \
			return CALL_REAL(-1, name, fd, buf, n, off);           \
		ret = CALL_REAL(-1, name, fd, buf, n, off);                    \
		end_fn(&c, ret, off < 0 ? 0 : (long long)off);                 \
		return ret;                                                    \
	}
PRW_WRAPPER(pread, end_read, void *, off_t)
PRW_WRAPPER(pread64, end_read, void *, off64_t)
PRW_WRAPPER(pwrite, end_write, const void *, off_t)
PRW_WRAPPER(pwrite64, end_write, const void *, off64_t)

#define PRW_CHK_WRAPPER(name, offtype)                                         \
	SHIM_EXPORT ssize_t name(int fd, void *buf, size_t n, offtype off,     \
				 size_t buflen)                                \
	{                                                                      \
		struct call c;                                                 \
		ssize_t ret;                                                   \
                                                                               \
		if (!begin_fd(&c, fd))                                         \
			return CALL_REAL(-1, name, fd, buf, n, off, buflen);   \
		ret = CALL_REAL(-1, name, fd, buf, n, off, buflen);            \
		end_read(&c, ret, off < 0 ? 0 : (long long)off);               \
		return ret;                                                    \
	}
PRW_CHK_WRAPPER(__pread_chk, off_t)
PRW_CHK_WRAPPER(__pread64_chk, off64_t)

#define RWV_WRAPPER(name, end_fn)                                              \
	SHIM_EXPORT ssize_t name(int fd, const struct iovec *iov, int cnt)     \
	{                                                                      \
		struct call c;                                                 \
		ssize_t ret;                                                   \
                                                                               \
		if (!begin_fd(&c, fd))                                         \
			return CALL_REAL(-1, name, fd, iov, cnt);              \
		ret = CALL_REAL(-1, name, fd, iov, cnt);                       \
		end_fn(&c, ret, -1);                                           \
		return ret;                                                    \
	}
RWV_WRAPPER(readv, end_read)
RWV_WRAPPER(writev, end_write)

#define PRWV_WRAPPER(name, end_fn)                                             \
	SHIM_EXPORT ssize_t name(int fd, const struct iovec *iov, int cnt,     \
				 off_t off)                                    \
	{                                                                      \
		struct call c;                                                 \
		ssize_t ret;                                                   \
                                                                               \
		if (!begin_fd(&c, fd))                                         \
			return CALL_REAL(-1, name, fd, iov, cnt, off);         \
		ret = CALL_REAL(-1, name, fd, iov, cnt, off);                  \
		end_fn(&c, ret, off < 0 ? 0 : (long long)off);                 \
		return ret;                                                    \
	}
PRWV_WRAPPER(preadv, end_read)
PRWV_WRAPPER(pwritev, end_write)

/* In-kernel copies (cp and cat of coreutils 9 copy files this way): a
 * read of IN and a write of OUT of the bytes copied, each counted only if
 * its fd is a file. The call's time goes to the read once: the write is
 * started when the read is counted, so it adds no time and no busy span
 * of its own. IN_OFF/OUT_OFF: the offsets given (-1: the fd's, which
 * moves). */
static void copied(struct call *in, bool rin, long long in_off,
		   struct call *out, bool rout, long long out_off,
		   long long ret)
{
	if (rin)
		end_read(in, ret, in_off);
	if (rout) {
		if (rin)
			out->t0 = shim_clock_now();
		end_write(out, ret, out_off);
	}
}

SHIM_EXPORT ssize_t copy_file_range(int in, off64_t *in_off, int out,
				    off64_t *out_off, size_t n, unsigned flags)
{
	long long io = in_off ? (long long)*in_off : -1;
	long long oo = out_off ? (long long)*out_off : -1;
	struct call ci, co;
	bool rin, rout;
	ssize_t ret;

	rin = begin_fd(&ci, in);
	rout = begin_fd(&co, out);
	ret = CALL_REAL(-1, copy_file_range, in, in_off, out, out_off, n,
			flags);
	copied(&ci, rin, io, &co, rout, oo, ret);
	return ret;
}

#define SENDFILE_WRAPPER(name, offtype)                                        \
	SHIM_EXPORT ssize_t name(int out, int in, offtype *off, size_t n)      \
	{                                                                      \
		long long io = off ? (long long)*off : -1;                     \
		struct call ci, co;                                            \
		bool rin, rout;                                                \
		ssize_t ret;                                                   \
                                                                               \
		rin = begin_fd(&ci, in);                                       \
		rout = begin_fd(&co, out);                                     \
		ret = CALL_REAL(-1, name, out, in, off, n);                    \
		copied(&ci, rin, io, &co, rout, -1, ret);                      \
		return ret;                                                    \
	}
SENDFILE_WRAPPER(sendfile, off_t)
SENDFILE_WRAPPER(sendfile64, off64_t)

#define SEEK_WRAPPER(name, offtype)                                            \
	SHIM_EXPORT offtype name(int fd, offtype off, int whence)              \
	{                                                                      \
		struct call c;                                                 \
		offtype ret;                                                   \
                                                                               \
		if (!begin_fd(&c, fd))                                         \
			return CALL_REAL(-1, name, fd, off, whence);           \
		ret = CALL_REAL(-1, name, fd, off, whence);                    \
		if (ret >= 0 && c.fd)                                          \
			c.fd->pos = ret;                                       \
		end_meta(&c, SHIM_OP_SEEK, ret < 0 ? -1 : 0);                  \
		return ret;                                                    \
	}
SEEK_WRAPPER(lseek, off_t)
SEEK_WRAPPER(lseek64, off64_t)

#define SYNC_WRAPPER(name)                                                     \
	SHIM_EXPORT int name(int fd)                                           \
	{                                                                      \
		struct call c;                                                 \
		int ret;                                                       \
                                                                               \
		if (!begin_fd(&c, fd))                                         \
			return CALL_REAL(-1, name, fd);                        \
		ret = CALL_REAL(-1, name, fd);                                 \
		end_meta(&c, SHIM_OP_FSYNC, ret);                              \
		return ret;                                                    \
	}
SYNC_WRAPPER(fsync)
SYNC_WRAPPER(fdatasync)

/* ---- the stat family -------------------------------------------------------- */

#define STAT_WRAPPER(name, sttype)                                             \
	SHIM_EXPORT int name(const char *path, sttype *st)                     \
	{                                                                      \
		struct call c;                                                 \
		int ret;                                                       \
                                                                               \
		if (!begin_path(&c, AT_FDCWD, path))                           \
			return CALL_REAL(-1, name, path, st);                  \
		ret = CALL_REAL(-1, name, path, st);                           \
		end_meta(&c, SHIM_OP_STAT, ret);                               \
		return ret;                                                    \
	}
STAT_WRAPPER(stat, struct stat)
STAT_WRAPPER(stat64, struct stat64)
STAT_WRAPPER(lstat, struct stat)
STAT_WRAPPER(lstat64, struct stat64)

#define FSTAT_WRAPPER(name, sttype)                                            \
	SHIM_EXPORT int name(int fd, sttype *st)                               \
	{                                                                      \
		struct call c;                                                 \
		int ret;                                                       \
                                                                               \
		if (!begin_fd(&c, fd))                                         \
			return CALL_REAL(-1, name, fd, st);                    \
		ret = CALL_REAL(-1, name, fd, st);                             \
		end_meta(&c, SHIM_OP_STAT, ret);                               \
		return ret;                                                    \
	}
FSTAT_WRAPPER(fstat, struct stat)
FSTAT_WRAPPER(fstat64, struct stat64)

/* fstatat and statx on "" with AT_EMPTY_PATH are an fstat of DIRFD. */
static bool begin_at(struct call *c, int dirfd, const char *path, int flags)
{
	if (path && !path[0] && (flags & AT_EMPTY_PATH))
		return begin_fd(c, dirfd);
	return begin_path(c, dirfd, path);
}

#define FSTATAT_WRAPPER(name, sttype)                                          \
	SHIM_EXPORT int name(int dirfd, const char *path, sttype *st,          \
			     int flags)                                        \
	{                                                                      \
		struct call c;                                                 \
		int ret;                                                       \
                                                                               \
		if (!begin_at(&c, dirfd, path, flags))                         \
			return CALL_REAL(-1, name, dirfd, path, st, flags);    \
		ret = CALL_REAL(-1, name, dirfd, path, st, flags);             \
		end_meta(&c, SHIM_OP_STAT, ret);                               \
		return ret;                                                    \
	}
FSTATAT_WRAPPER(fstatat, struct stat)
FSTATAT_WRAPPER(fstatat64, struct stat64)

SHIM_EXPORT int statx(int dirfd, const char *path, int flags, unsigned mask,
		      struct statx *st)
{
	struct call c;
	int ret;

	if (!begin_at(&c, dirfd, path, flags))
		return CALL_REAL(-1, statx, dirfd, path, flags, mask, st);
	ret = CALL_REAL(-1, statx, dirfd, path, flags, mask, st);
	end_meta(&c, SHIM_OP_STAT, ret);
	return ret;
}

#define XSTAT_WRAPPER(name, sttype)                                            \
	SHIM_EXPORT int name(int ver, const char *path, sttype *st)            \
	{                                                                      \
		struct call c;                                                 \
		int ret;                                                       \
                                                                               \
		if (!begin_path(&c, AT_FDCWD, path))                           \
			return CALL_REAL(-1, name, ver, path, st);             \
		ret = CALL_REAL(-1, name, ver, path, st);                      \
		end_meta(&c, SHIM_OP_STAT, ret);                               \
		return ret;                                                    \
	}
XSTAT_WRAPPER(__xstat, struct stat)
XSTAT_WRAPPER(__xstat64, struct stat64)
XSTAT_WRAPPER(__lxstat, struct stat)
XSTAT_WRAPPER(__lxstat64, struct stat64)

#define FXSTAT_WRAPPER(name, sttype)                                           \
	SHIM_EXPORT int name(int ver, int fd, sttype *st)                      \
	{                                                                      \
		struct call c;                                                 \
		int ret;                                                       \
                                                                               \
		if (!begin_fd(&c, fd))                                         \
			return CALL_REAL(-1, name, ver, fd, st);               \
		ret = CALL_REAL(-1, name, ver, fd, st);                        \
		end_meta(&c, SHIM_OP_STAT, ret);                               \
		return ret;                                                    \
	}
FXSTAT_WRAPPER(__fxstat, struct stat)
FXSTAT_WRAPPER(__fxstat64, struct stat64)

#define FXSTATAT_WRAPPER(name, sttype)                                         \
	SHIM_EXPORT int name(int ver, int dirfd, const char *path, sttype *st, \
			     int flags)                                        \
	{                                                                      \
		struct call c;                                                 \
		int ret;                                                       \
                                                                               \
		if (!begin_at(&c, dirfd, path, flags))                         \
			return CALL_REAL(-1, name, ver, dirfd, path, st,       \
					 flags);                               \
		ret = CALL_REAL(-1, name, ver, dirfd, path, st, flags);        \
		end_meta(&c, SHIM_OP_STAT, ret);                               \
		return ret;                                                    \
	}
FXSTATAT_WRAPPER(__fxstatat, struct stat)
FXSTATAT_WRAPPER(__fxstatat64, struct stat64)

/* ---- stdio: counted per FILE call; glibc's stdio reaches the kernel
 * through internal entry points, never through the wrappers above, so
 * nothing is counted twice. ------------------------------------------------ */

static int mode_flags(const char *mode)
{
	if (!mode)
		return O_RDONLY;
	int append = mode[0] == 'a' ? O_APPEND : 0;

	if (strchr(mode, '+'))
		return O_RDWR | append;
	return mode[0] == 'r' ? O_RDONLY : O_WRONLY | append;
}

#define FOPEN_WRAPPER(name)                                                    \
	SHIM_EXPORT FILE *name(const char *path, const char *mode)             \
	{                                                                      \
		struct call c;                                                 \
		FILE *fp;                                                      \
		int saved;                                                     \
                                                                               \
		if (!begin_path(&c, AT_FDCWD, path))                           \
			return CALL_REAL(NULL, name, path, mode);              \
		fp = CALL_REAL(NULL, name, path, mode);                        \
		saved = errno;                                                 \
		opened(&c, fp ? fileno(fp) : -1, mode_flags(mode));            \
		errno = saved;                                                 \
		return fp;                                                     \
	}
FOPEN_WRAPPER(fopen)
FOPEN_WRAPPER(fopen64)

/* fileno() without touching errno (it sets EBADF on a closed stream). */
static int stream_fd(FILE *fp)
{
	int saved = errno, fd = fp ? fileno(fp) : -1;

	errno = saved;
	return fd;
}

SHIM_EXPORT int fclose(FILE *fp)
{
	struct shim_fd *e;
	struct call c;
	int fd, ret;
	/* glibc 2.41 declares fp nonnull, so GCC would drop a plain test;
	 * a program may still pass NULL, and then the real fclose decides */
	FILE *volatile given = fp;

	if (!given)
		return CALL_REAL(EOF, fclose, fp);
	fd = stream_fd(fp);
	e = shim_fd_get(fd);
	/* As close: only a file's is counted, every one forgets the fd. */
	if (!e || e->kind != SHIM_FD_FILE || !begin_fd(&c, fd)) {
		ret = CALL_REAL(EOF, fclose, fp);
		if (e && e->kind)
			e->kind = SHIM_FD_UNKNOWN;
		return ret;
	}
	ret = CALL_REAL(EOF, fclose, fp);
	shim_fd_closed(fd);
	c.fd = NULL;
	end_meta(&c, SHIM_OP_CLOSE, ret == 0 ? 0 : -1);
	return ret;
}

/* After a stdio seek, the stream's position is where its next fread or
 * fwrite starts (ftello flushes nothing and changes no errno on success). */
static void stream_seeked(struct call *c, FILE *fp, int ret)
{
	int saved = errno;

	if (ret == 0 && c->fd) {
		off_t pos = ftello(fp);

		if (pos >= 0)
			c->fd->pos = pos;
	}
	errno = saved;
	end_meta(c, SHIM_OP_SEEK, ret == 0 ? 0 : -1);
}

#define FSEEK_WRAPPER(name, offtype)                                           \
	SHIM_EXPORT int name(FILE *fp, offtype off, int whence)                \
	{                                                                      \
		struct call c;                                                 \
		int ret;                                                       \
                                                                               \
		if (!begin_fd(&c, stream_fd(fp)))                              \
			return CALL_REAL(-1, name, fp, off, whence);           \
		ret = CALL_REAL(-1, name, fp, off, whence);                    \
		stream_seeked(&c, fp, ret);                                    \
		return ret;                                                    \
	}
FSEEK_WRAPPER(fseek, long)
FSEEK_WRAPPER(fseeko, off_t)
FSEEK_WRAPPER(fseeko64, off64_t)

SHIM_EXPORT void rewind(FILE *fp)
{
	struct call c;

	if (!begin_fd(&c, stream_fd(fp))) {
		if (REAL(rewind))
			real.rewind(fp);
		return;
	}
	if (REAL(rewind))
		real.rewind(fp);
	stream_seeked(&c, fp, 0);
}

#define FREAD_WRAPPER(name, end_fn, buftype)                                   \
	SHIM_EXPORT size_t name(buftype ptr, size_t size, size_t n, FILE *fp)  \
	{                                                                      \
		struct call c;                                                 \
		size_t ret;                                                    \
                                                                               \
		if (!begin_fd(&c, stream_fd(fp)))                              \
			return CALL_REAL(0, name, ptr, size, n, fp);           \
		ret = CALL_REAL(0, name, ptr, size, n, fp);                    \
		end_fn(&c, (long long)(ret * size), -1);                       \
		return ret;                                                    \
	}
FREAD_WRAPPER(fread, end_read, void *)
FREAD_WRAPPER(fread_unlocked, end_read, void *)
FREAD_WRAPPER(fwrite, end_write, const void *)
FREAD_WRAPPER(fwrite_unlocked, end_write, const void *)

#define FREAD_CHK_WRAPPER(name)                                                \
	SHIM_EXPORT size_t name(void *ptr, size_t ptrlen, size_t size,         \
				size_t n, FILE *fp)                            \
	{                                                                      \
		struct call c;                                                 \
		size_t ret;                                                    \
                                                                               \
		if (!fp || !begin_fd(&c, stream_fd(fp)))                       \
			return CALL_REAL(0, name, ptr, ptrlen, size, n, fp);   \
		ret = CALL_REAL(0, name, ptr, ptrlen, size, n, fp);            \
		end_read(&c, (long long)(ret * size), -1);                     \
		return ret;                                                    \
	}
FREAD_CHK_WRAPPER(__fread_chk)
FREAD_CHK_WRAPPER(__fread_unlocked_chk)

/* ---- the summary: exit, _exit, exec ---------------------------------------- */

/* Send this process's summary once. Not from a vfork child (it shares our
 * memory and has another pid: the parent will report) nor from inside the
 * shim's own bookkeeping (a signal handler that interrupted it). */
static void report(const char *reason)
{
	int st = atomic_load(&state), saved = errno;

	if ((st != SHIM_COUNTING &&
	     !(st == SHIM_DISABLED && disabled_reason)) ||
	    guard || (pid_t)syscall(SYS_getpid) != my_pid ||
	    atomic_flag_test_and_set(&reporting))
		return;
	guard = 1;
	shim_report_send(reason);
	atomic_store(&state, SHIM_DONE);
	guard = 0;
	errno = saved;
}

/* An exec failed after its summary went out: count afresh from here. */
static void exec_failed(void)
{
	int saved = errno;

	if (atomic_load(&state) == SHIM_DONE && !disabled_reason &&
	    (pid_t)syscall(SYS_getpid) == my_pid) {
		shim_counters_reset();
		shim_fd_reset_files();
		shim_report_mark_start();
		atomic_flag_clear(&reporting);
		atomic_store(&state, SHIM_COUNTING);
	}
	errno = saved;
}

static bool env_has(char *const envp[], const char *entry)
{
	const char *eq = strchr(entry, '=');
	size_t n = (size_t)(eq - entry) + 1;

	for (size_t i = 0; envp && envp[i]; i++)
		if (strncmp(envp[i], entry, n) == 0)
			return true;
	return false;
}

/* ENVP with the shim kept in LD_PRELOAD and the trace settings kept, for
 * an exec whose caller built its own environment. Returns ENVP itself when
 * nothing is missing or on any failure (then the new image is untraced:
 * never worse than passing the caller's environment through). */
static char *const *exec_envp(char *const envp[], char **to_free,
			      char **preload_free)
{
	size_t n = 0, i, j = 0;
	const char *old = NULL;
	char **out;

	*to_free = NULL;
	*preload_free = NULL;
	if (!self_path[0] || atomic_load(&state) == SHIM_STARTING ||
	    env_has(envp, "IOSTAGE_SHIM_OFF="))
		return envp; /* the caller opted the new image out */
	/* A vfork or clone child shares our memory with threads that may
	 * hold malloc's locks: no allocation there (its pid is not ours;
	 * fork children get theirs from atfork_child). */
	if ((pid_t)syscall(SYS_getpid) != my_pid)
		return envp;
	for (n = 0; envp && envp[n]; n++)
		if (strncmp(envp[n], "LD_PRELOAD=", 11) == 0)
			old = envp[n] + 11;
	if (old && strstr(old, self_path)) {
		bool missing = false;

		for (i = 0; i < nexec_env; i++)
			missing = missing || !env_has(envp, exec_env[i]);
		if (!missing)
			return envp;
	}
	out = malloc((n + nexec_env + 2) * sizeof(*out));
	if (!out)
		return envp;
	for (i = 0; i < n; i++)
		if (strncmp(envp[i], "LD_PRELOAD=", 11) != 0)
			out[j++] = envp[i];
	if (old && strstr(old, self_path)) {
		out[j++] = (char *)(old - 11);
	} else {
		size_t len = 11 + strlen(self_path) + 1 +
			     (old ? strlen(old) : 0);
		char *pre = malloc(len + 1);

		if (!pre) {
			free(out);
			return envp;
		}
		snprintf(pre, len + 1, "LD_PRELOAD=%s%s%s", self_path,
			 old && *old ? ":" : "", old ? old : "");
		out[j++] = pre;
		*preload_free = pre;
	}
	for (i = 0; i < nexec_env; i++)
		if (!env_has(envp, exec_env[i]))
			out[j++] = exec_env[i];
	out[j] = NULL;
	*to_free = (char *)out;
	return out;
}

#define EXEC_PROLOGUE(envp)                                                    \
	char *to_free_, *pre_free_;                                            \
	char *const *env_ = exec_envp(envp, &to_free_, &pre_free_);            \
	report("exec")

#define EXEC_EPILOGUE()                                                        \
	do {                                                                   \
		int saved_ = errno;                                            \
		free(to_free_);                                                \
		free(pre_free_);                                               \
		exec_failed();                                                 \
		errno = saved_;                                                \
	} while (0)

SHIM_EXPORT int execve(const char *path, char *const argv[], char *const envp[])
{
	int ret;
	EXEC_PROLOGUE(envp);

	ret = CALL_REAL(-1, execve, path, argv, env_);
	EXEC_EPILOGUE();
	return ret;
}

SHIM_EXPORT int execvpe(const char *file, char *const argv[],
			char *const envp[])
{
	int ret;
	EXEC_PROLOGUE(envp);

	ret = CALL_REAL(-1, execvpe, file, argv, env_);
	EXEC_EPILOGUE();
	return ret;
}

SHIM_EXPORT int execv(const char *path, char *const argv[])
{
	return execve(path, argv, environ);
}

SHIM_EXPORT int execvp(const char *file, char *const argv[])
{
	return execvpe(file, argv, environ);
}

SHIM_EXPORT int fexecve(int fd, char *const argv[], char *const envp[])
{
	int ret;
	EXEC_PROLOGUE(envp);

	ret = CALL_REAL(-1, fexecve, fd, argv, env_);
	EXEC_EPILOGUE();
	return ret;
}

SHIM_EXPORT int execveat(int dirfd, const char *path, char *const argv[],
			 char *const envp[], int flags)
{
	int ret;
	EXEC_PROLOGUE(envp);

	ret = CALL_REAL(-1, execveat, dirfd, path, argv, env_, flags);
	EXEC_EPILOGUE();
	return ret;
}

/* The execl family: gather the variadic arguments (ARG0 ... NULL
 * [, envp]) into an array on the stack, as glibc's own execl does. */
#define EXECL_GATHER(arg0, argv, n)                                            \
	va_list ap;                                                            \
	size_t n = 1;                                                          \
	va_start(ap, arg0);                                                    \
	while (va_arg(ap, char *))                                             \
		n++;                                                           \
	va_end(ap);                                                            \
	char *argv[n + 1];                                                     \
	argv[0] = (char *)arg0;                                                \
	va_start(ap, arg0);                                                    \
	for (size_t i_ = 1; i_ <= n; i_++)                                     \
		argv[i_] = i_ < n ? va_arg(ap, char *) : NULL;

SHIM_EXPORT int execl(const char *path, const char *arg, ...)
{
	EXECL_GATHER(arg, argv, n)
	va_end(ap);
	return execve(path, argv, environ);
}

SHIM_EXPORT int execlp(const char *file, const char *arg, ...)
{
	EXECL_GATHER(arg, argv, n)
	va_end(ap);
	return execvpe(file, argv, environ);
}

SHIM_EXPORT int execle(const char *path, const char *arg, ...)
{
	char *const *envp;

	EXECL_GATHER(arg, argv, n)
	(void)va_arg(ap, char *); /* the NULL that ends the arguments */
	envp = va_arg(ap, char *const *);
	va_end(ap);
	return execve(path, argv, envp);
}

SHIM_EXPORT void _exit(int status)
{
	report("exit");
	if (REAL(_exit))
		real._exit(status);
	syscall(SYS_exit_group, status);
	__builtin_unreachable();
}

SHIM_EXPORT void _Exit(int status)
{
	report("exit");
	if (REAL(_Exit))
		real._Exit(status);
	syscall(SYS_exit_group, status);
	__builtin_unreachable();
}

/* ---- start-up, fork, exit ------------------------------------------------------ */

static void atfork_child(void)
{
	if (atomic_load(&state) != SHIM_COUNTING)
		return;
	my_pid = (pid_t)syscall(SYS_getpid);
	guard = 0;
	shim_counters_reset();
	shim_fd_reset_files();
	shim_clock_start();
	shim_report_mark_start();
	atomic_flag_clear(&reporting);
}

/* Remember what an exec must carry into the next image. */
static void save_exec_env(void)
{
	static const char *const names[] = {
		"IOSTAGE_TRACE_CLASSES", "IOSTAGE_SOCKET",
		"IOSTAGE_SHIM_REPORT",   "IOSTAGE_SHIM_TIMEOUT_MS",
		"IOSTAGE_STEP",
	};
	Dl_info info;

	if (dladdr((void *)save_exec_env, &info) && info.dli_fname &&
	    info.dli_fname[0] == '/' &&
	    strlen(info.dli_fname) < sizeof(self_path) &&
	    !strchr(info.dli_fname, ':'))
		memcpy(self_path, info.dli_fname, strlen(info.dli_fname) + 1);
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		const char *v = getenv(names[i]);
		size_t len;

		if (!v)
			continue;
		len = strlen(names[i]) + 1 + strlen(v) + 1;
		exec_env[nexec_env] = malloc(len);
		if (!exec_env[nexec_env])
			continue;
		snprintf(exec_env[nexec_env], len, "%s=%s", names[i], v);
		nexec_env++;
	}
}

__attribute__((constructor)) static void shim_init(void)
{
	const char *reason = NULL;
	int saved = errno;

	guard = 1;
	resolve_all();
	my_pid = (pid_t)syscall(SYS_getpid);
	shim_clock_start();
	shim_report_init();
	save_exec_env();
	if (getenv("IOSTAGE_SHIM_OFF"))
		atomic_store(&state, SHIM_DONE); /* opted out: pass through */
	else if (shim_counters_init() < 0 ||
		 pthread_atfork(NULL, NULL, atfork_child) != 0)
		shim_disable("cannot set up thread and fork hooks");
	else if (shim_classes_init(getenv("IOSTAGE_TRACE_CLASSES"), &reason) <
		 0)
		shim_disable(reason);
	else if (shim_observe_init() < 0)
		shim_disable("cannot map the observed files' table");
	else
		atomic_store(&state, SHIM_COUNTING);
	guard = 0;
	errno = saved;
}

__attribute__((destructor)) static void shim_fini(void)
{
	report("exit");
}
