/* preload.h - the inside of libiostage-preload.so, the LD_PRELOAD I/O shim.
 *
 * The shim is several small modules that share this header; nothing here is
 * exported from the library (it is built with -fvisibility=hidden and only
 * the interposed libc functions plus iostage_shim_phase are SHIM_EXPORT).
 *
 *   preload.c          the interposers, start-up, fork, exec, exit
 *   preload_counters.c per-thread counter blocks, busy (unoverlapped) time,
 *                      the clock
 *   preload_fds.c      the per-fd table and the files written under outputs
 *   preload_classes.c  file classes from IOSTAGE_TRACE_CLASSES, the cwd
 *   preload_phases.c   phase names, markers and automatic phases
 *   preload_report.c   the one-line JSON summary, to iostaged or a file
 *
 * Rules every module keeps (docs/SHIM.md): no locks (a signal handler may
 * call write() at any moment); no malloc after start-up; never change errno
 * or a return value the application sees; on an internal failure call
 * shim_disable() and let every call pass through.
 */
#ifndef IOSTAGE_SHIM_PRELOAD_H
#define IOSTAGE_SHIM_PRELOAD_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define SHIM_EXPORT __attribute__((visibility("default")))

/* Bounds: everything the shim keeps is sized at build time. */
#define SHIM_MAX_FDS 4096  /* fds above: class other, no offsets */
#define SHIM_MAX_PHASES 16 /* the last one is "other" (overflow) */
#define SHIM_PHASE_NAME_MAX 32
#define SHIM_MAX_PREFIXES 64
#define SHIM_MAX_FILES 256 /* output files listed in the summary */
#define SHIM_FILE_ARENA (64 * 1024)
#define SHIM_MAX_BLOCKS 4096 /* per-thread counter blocks, recycled */

enum shim_class {
	SHIM_CLASS_DATASET = 0,
	SHIM_CLASS_OUTPUT,
	SHIM_CLASS_OTHER,
	SHIM_NCLASSES,
};

/* The phases every process has; markers add more after these. */
enum shim_fixed_phase {
	SHIM_PHASE_RUN = 0,
	SHIM_PHASE_READ,
	SHIM_PHASE_CHECKPOINT,
	SHIM_PHASE_WRITE,
	SHIM_PHASE_FIRST_MARKER,
	SHIM_PHASE_OVERFLOW = SHIM_MAX_PHASES - 1,
};

/* Darshan-named counters (docs/RECORDS.md). Times are in clock ticks
 * (shim_clock_*) until the summary converts them to seconds.
 *
 * A row of them (one phase, one class) is 40 counters, five cache lines,
 * ordered so that one call adds to as few lines as it can: a read to line
 * 0 and its size bucket, a write to line 1, line 0 and its bucket, a
 * metadata call to lines 0 and 2. After a system call the caches and
 * predictors are cold, and each extra line is time the application sees
 * (bench/shim.sh); the summary prints them in Darshan's order. */
enum shim_counter {
	/* line 0: a read's counters, and every call's busy time */
	SHIM_READS = 0,
	SHIM_BYTES_READ,
	SHIM_F_READ_TIME,
	SHIM_CONSEC_READS,
	SHIM_SEQ_READS,
	SHIM_MAX_BYTE_READ, /* highest byte offset + 1 (0 = none) */
	SHIM_BUSY_CLASS,    /* busy spans of this class closed here */
	SHIM_BUSY_ALL,      /* busy spans (any class) closed by a call
				 * of this class: summed over classes, the
				 * phase's unoverlapped time */
	/* line 1: a write's counters */
	SHIM_WRITES,
	SHIM_BYTES_WRITTEN,
	SHIM_F_WRITE_TIME,
	SHIM_CONSEC_WRITES,
	SHIM_SEQ_WRITES,
	SHIM_MAX_BYTE_WRITTEN, /* same; the summary prints offset - 1 */
	SHIM_RW_SWITCHES,
	SHIM_FSYNCS,
	/* line 2: metadata calls, then the read sizes (small ones here) */
	SHIM_OPENS,
	SHIM_SEEKS,
	SHIM_STATS,
	SHIM_F_META_TIME,
	SHIM_SIZE_READ_0, /* + bucket index, 10 buckets */
	SHIM_SIZE_WRITE_0 = SHIM_SIZE_READ_0 + 10,
	SHIM_NCOUNTERS = SHIM_SIZE_WRITE_0 + 10,
};

#define SHIM_NBUCKETS 10

/* What one call was, for shim_count. */
enum shim_op {
	SHIM_OP_OPEN = 0,
	SHIM_OP_READ,  /* read, pread, readv, fread */
	SHIM_OP_WRITE, /* write, pwrite, writev, fwrite */
	SHIM_OP_SEEK,
	SHIM_OP_STAT,
	SHIM_OP_FSYNC,
	SHIM_OP_CLOSE,
};

/* ---- preload.c ---------------------------------------------------------- */

/* Is the shim counting? False before start-up and after shim_disable. */
bool shim_enabled(void);

/* Stop counting for good in this process (an internal failure). Calls keep
 * passing through. REASON (static string) goes into the summary. */
void shim_disable(const char *reason);

/* The reason given to shim_disable, or NULL. */
const char *shim_disabled_reason(void);

/* ---- preload_counters.c -------------------------------------------------- */

typedef uint64_t shim_ticks;

/* Now, in ticks: the TSC on x86-64 (about 20 ns to read here, half of
 * clock_gettime), CLOCK_MONOTONIC nanoseconds elsewhere. Constant-rate
 * TSC on every x86-64 this runs on; the rate is not assumed but measured
 * over the process's life (shim_clock_seconds_per_tick). Inline: it is on
 * every call's path. */
#if defined(__x86_64__)
static inline shim_ticks shim_clock_now(void)
{
	return __builtin_ia32_rdtsc();
}
#else
shim_ticks shim_clock_now(void);
#endif

/* Start the clock's calibration (at start-up and in a forked child). */
void shim_clock_start(void);

/* Seconds per tick, measured between shim_clock_start and now. */
double shim_clock_seconds_per_tick(void);

typedef uint64_t shim_row[SHIM_NCLASSES][SHIM_NCOUNTERS];

/* The calling thread's counters once it has a block (initial-exec: a
 * preloaded library is in the static TLS block, and this model never calls
 * __tls_get_addr, which may allocate). */
extern __thread shim_row *shim_my_counters
    __attribute__((tls_model("initial-exec")));

/* Claim a block for the calling thread: shim_counters_mine's slow path. */
shim_row *shim_counters_claim(void);

/* The calling thread's counters [phase][class][counter], or NULL when none
 * can be had (the shim is then disabled). Never blocks. Inline: it is on
 * every call's path. */
static inline shim_row *shim_counters_mine(void)
{
	if (__builtin_expect(shim_my_counters != NULL, 1))
		return shim_my_counters;
	return shim_counters_claim();
}

/* Create the thread-exit hook that recycles blocks; at start-up. 0 or -1. */
int shim_counters_init(void);

/* Sum every block into OUT (max for the MAX_BYTE counters). */
void shim_counters_merge(
    uint64_t out[SHIM_MAX_PHASES][SHIM_NCLASSES][SHIM_NCOUNTERS]);

/* Zero every block and the busy time; in a forked child, or after a
 * summary went out before an exec that failed. */
void shim_counters_reset(void);

/* Busy time: wall time during which at least one thread of the process is
 * inside an I/O call, overall and per class. enter/leave bracket a call;
 * leave returns the spans the call closed (0 when others are still in
 * I/O), which the caller credits to its phase in its own counters. */
void shim_busy_enter(enum shim_class cls, shim_ticks now);
void shim_busy_leave(enum shim_class cls, shim_ticks now, uint64_t *ret_all,
		     uint64_t *ret_cls);

/* The Darshan bucket (0..9) of a request of N bytes: 0-100, 101-1K, ...,
 * 1G+. Compares summed rather than a loop: no branch to mispredict. */
static inline unsigned shim_size_bucket(uint64_t n)
{
	return (unsigned)(n > 100) + (n > 1024) + (n > 10240) + (n > 102400) +
	       (n > 1048576) + (n > 4194304) + (n > 10485760) +
	       (n > 104857600) + (n > 1073741824);
}

/* ---- preload_fds.c -------------------------------------------------------- */

/* What the shim knows an fd to be. Only file I/O is counted (as Darshan
 * counts it): calls on regular files and directories. Pipes, sockets,
 * FIFOs, character and block devices, and anything under /proc, /sys or
 * /dev are not, and their calls pass through uncounted. The kind is
 * decided once per fd, when it is opened (or first used, for an fd the
 * shim did not see opened), never per read or write. */
enum shim_fd_kind {
	SHIM_FD_UNKNOWN = 0, /* closed, or not seen opened: look once */
	SHIM_FD_FILE,        /* counted */
	SHIM_FD_NOTFILE,     /* passed through */
};

struct shim_fd {
	uint8_t cls;       /* enum shim_class */
	uint8_t ckpt;      /* an output whose path says checkpoint */
	uint8_t last_op;   /* 0 none, SHIM_OP_READ, SHIM_OP_WRITE */
	uint8_t kind;      /* enum shim_fd_kind; UNKNOWN: no live fd
				 * described */
	uint8_t append;    /* O_APPEND: writes go to the end, wherever */
	int16_t file;      /* index into the files list, -1 none */
	uint16_t file_gen; /* the list's generation when indexed */
	int64_t pos;       /* the fd's offset as we followed it */
	int64_t read_end;  /* end of the last read (CONSEC/SEQ) */
	int64_t write_end; /* end of the last write */
};

extern struct shim_fd shim_fds[SHIM_MAX_FDS];

/* The entry of FD, or NULL for fds outside the table. */
static inline struct shim_fd *shim_fd_get(int fd)
{
	return fd >= 0 && fd < SHIM_MAX_FDS ? &shim_fds[fd] : NULL;
}

/* The class of a path about to be opened or stat'ed: relative to DIRFD
 * (AT_FDCWD for the cwd; a directory fd gives its own class), whether it
 * names a checkpoint, and (for outputs) its absolute path in *ret_abs,
 * valid until this thread's next call. */
enum shim_class shim_fd_classify(int dirfd, const char *path, bool *ret_ckpt,
				 const char **ret_abs);

/* FD was opened with FLAGS on a path classified as CLS/CKPT (ABS: its
 * absolute path for an output, else NULL) and found to be KIND: reset its
 * offsets. */
void shim_fd_opened(int fd, enum shim_fd_kind kind, enum shim_class cls,
		    bool ckpt, const char *abs, int flags);

/* What FD, just opened on PATH (relative to DIRFD; ABS: its normalized
 * absolute form, or NULL when unknown) in class CLS, is. Dataset and
 * output paths are taken as files without a system call: an fstat on
 * every open would cost more than the shim's whole budget on small-file
 * workloads (docs/SHIM.md "Cost"), and staged trees and the PFS trees
 * behind them hold regular files. Any other path is fstat'ed once. */
enum shim_fd_kind shim_fd_kind_at_open(int fd, int dirfd, const char *abs,
				       enum shim_class cls);

/* FD, which the shim did not see opened (inherited across exec, opened
 * inside libc, or by a call the shim does not interpose), is looked at
 * once: fstat for its kind, /proc/self/fd for its path and class, its
 * offset and flags. Its entry is filled in and returned; NULL when FD is
 * not open (the call will fail) or outside the table. errno is kept. */
struct shim_fd *shim_fd_learn(int fd);

/* Is FD, which has no entry (beyond SHIM_MAX_FDS), file I/O? One fstat
 * per call: such fds are rare. errno is kept. */
bool shim_fd_is_file_untracked(int fd);

/* FD is a pipe, socket or other non-file an interposed call created. */
void shim_fd_notfile(int fd);

/* NEWFD is a duplicate of OLDFD (dup, dup2, dup3). */
void shim_fd_dup(int oldfd, int newfd);

/* FD was closed. */
void shim_fd_closed(int fd);

/* Every fd from FIRST to LAST (inclusive) was closed (close_range). */
void shim_fd_closed_range(unsigned first, unsigned last);

/* Empty the files list (a forked child, a failed exec): fds indexed into
 * the old list stop adding to it; the fd table itself is kept, as the fds
 * are, and left untouched (no copy-on-write of it at every fork). */
void shim_fd_reset_files(void);

/* Bytes written to an output file through FD. */
void shim_fd_file_written(const struct shim_fd *e, uint64_t n);

/* The files list, for the summary: number of entries, then each one. */
size_t shim_files_count(void);
bool shim_files_get(size_t i, const char **ret_path, enum shim_class *ret_cls,
		    uint64_t *ret_written);

/* ---- preload_classes.c ---------------------------------------------------- */

/* Parse IOSTAGE_TRACE_CLASSES (at start-up). 0, or -1 with a static reason
 * in *ret_reason (the shim then disables itself). */
int shim_classes_init(const char *spec, const char **ret_reason);

/* The class of PATH (relative paths are taken against the cwd, then the
 * path is normalized lexically: no "//", "/./", "/../"; links are not
 * followed), whether it names a checkpoint (ckpt/checkpoint in an output's
 * path), and its normalized absolute path in *ret_abs (PATH itself when
 * already normal, else a per-thread buffer; valid until the call returns;
 * NULL when it cannot be had, e.g. a relative path without a cwd). */
enum shim_class shim_classify(const char *path, bool *ret_ckpt,
			      const char **ret_abs);

/* Is ABS (absolute) under /proc, /sys or /dev, whose files are not file
 * I/O (kernel interfaces and devices; Darshan excludes them too)? */
bool shim_path_pseudo(const char *abs);

/* The cwd changed (chdir, fchdir succeeded): forget the cached one. */
void shim_classes_cwd_changed(void);

/* Was a "pfs=" prefix given (an observed job)? */
bool shim_classes_observing(void);

/* Is the normalized absolute ABS under a "pfs=" prefix (and under no
 * longer prefix of another class)? */
bool shim_classes_observed(const char *abs);

/* ---- preload_observe.c ---------------------------------------------------- */

/* An observed job (a "pfs=" class) learns which tree it reads from the
 * PFS: the deepest directory holding every file opened for reading there,
 * and how many distinct files (device, inode) of how many bytes. Set up
 * at start-up (maps the inode table; -1 when it cannot: nothing is noted). */
int shim_observe_init(void);

/* FD was opened at ABS (normalized, absolute; class dataset) with FLAGS. */
void shim_observe_open(int fd, const char *abs, int flags);

/* What was noted: false when nothing. *ret_root is valid until exit. */
bool shim_observe_get(const char **ret_root, size_t *ret_root_len,
		      uint64_t *ret_files, uint64_t *ret_bytes,
		      uint64_t *ret_missed);

/* ---- preload_phases.c ----------------------------------------------------- */

/* The innermost active marker's phase, -1 when none. */
extern atomic_int shim_phase_marked;

/* The phase a call belongs to: a marker's if one is active, else the
 * automatic one for its class and kind (docs/SHIM.md). Inline: it is on
 * every call's path. */
static inline unsigned shim_phase_for(enum shim_class cls, bool ckpt,
				      enum shim_op op)
{
	int marked = atomic_load_explicit(&shim_phase_marked,
					  memory_order_relaxed);

	if (marked >= 0)
		return (unsigned)marked;
	switch (cls) {
	case SHIM_CLASS_DATASET:
		return op == SHIM_OP_WRITE ? SHIM_PHASE_RUN : SHIM_PHASE_READ;
	case SHIM_CLASS_OUTPUT:
		if (op == SHIM_OP_READ)
			return SHIM_PHASE_RUN;
		return ckpt ? SHIM_PHASE_CHECKPOINT : SHIM_PHASE_WRITE;
	default:
		return SHIM_PHASE_RUN;
	}
}

/* Phase I's name, or NULL for an unused slot. */
const char *shim_phase_name(unsigned i);

/* Markers dropped because the table was full (folded into "other"). */
unsigned shim_phases_folded(void);

/* Forget markers (fork child keeps names; exec starts afresh anyway). */
void shim_phases_reset(void);

/* ---- preload_report.c ----------------------------------------------------- */

/* Read the identity and destination from the environment (start-up). */
void shim_report_init(void);

/* Build the summary and send it (REASON: "exit", "exec"); a process that
 * made no counted call (only closes, say) sends nothing. Returns 0 or -1;
 * never blocks longer than the report timeout; errno is preserved. */
int shim_report_send(const char *reason);

/* Where the process started, as unix seconds (for "start"). */
void shim_report_mark_start(void);

#endif /* IOSTAGE_SHIM_PRELOAD_H */
