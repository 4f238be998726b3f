/* copyengine.h - stage a dataset fast: a parallel walk, then a parallel copy.
 *
 * The engine behind `iostaged --stage-worker` (daemon/staging/worker.c). It
 * runs as the job's user and assumes nothing about privileges.
 *
 * Two steps, so that the daemon can reserve space between them:
 *
 *   copyengine_walk   walks SRC with a pool of threads (an explicit queue of
 *                     directories, each opened below the source's top with
 *                     openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS), so no
 *                     fd is held per level and no symlink is ever followed),
 *                     stats every entry (statx, AT_SYMLINK_NOFOLLOW),
 *                     optionally hashes contents, and compares the result
 *                     with a previous manifest;
 *   copyengine_copy   makes the copy with the same number of threads: every
 *                     directory first, then files (large ones split into
 *                     chunks copied in parallel) and symlinks as tasks of a
 *                     pool, then hard links, then directory modes and times
 *                     deepest first, then one syncfs() of the destination.
 *
 * What a copy keeps: regular files byte for byte (copy_file_range, or
 * pread/pwrite when the kernel cannot: EXDEV, EINVAL, ENOSYS, EOPNOTSUPP),
 * holes of sparse files (SEEK_DATA/SEEK_HOLE), modes (07777) and atime/mtime
 * of files and directories (directories' after their contents), symlinks as
 * symlinks with the same target, hard links inside the dataset (one inode in
 * the copy for one (dev, ino) in the source). Fifos, sockets and devices
 * are skipped and named through ->note. Ownership is whoever copies.
 * Files are not fsynced one by one: the caller publishes the copy (rename)
 * only after copyengine_copy returned 0, and that ends with syncfs().
 *
 * A copy may hold only a part of SRC (opts.select: a node's part of a
 * spread dataset, docs/STAGING.md): every directory and symlink, and the
 * regular files the caller selects, up to a budget; copyengine_listing
 * then still lists the whole walk.
 *
 * Only the top SRC may be a symlink (it is followed, like `cp -r SRC`).
 * A file that changes between the walk and its copy (size, mtime, inode)
 * fails the copy: "cannot read SRC/x: changed while being staged".
 *
 * Messages are one line naming the file: "cannot read SRCPATH: REASON" for
 * the source side, "cannot write DSTPATH: REASON" for the destination
 * (errno is kept: ENOSPC/EDQUOT can be told apart), where DSTPATH starts with
 * opts->dst_label.
 */
#ifndef IOSTAGE_COPYENGINE_H
#define IOSTAGE_COPYENGINE_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "common/fs/manifest.h"

#define COPYENGINE_THREADS_DEFAULT 16
#define COPYENGINE_THREADS_MAX 256
/* A source on a network file system: every open and stat is a round trip
 * (two per open on GlusterFS), so more of them must be in flight to fill
 * the link; measured at +1 ms on the simulated PFS of bench/pfs.sh, 48
 * threads staged 4,000 small files 21% faster than 16. */
#define COPYENGINE_THREADS_REMOTE 48
#define COPYENGINE_MAX_DEPTH 256 /* directory levels below SRC */
#define COPYENGINE_NOTES_MAX 100 /* special files named, then counted */

struct copyengine_opts {
	unsigned threads; /* 0: copyengine_default_threads() of SRC */
	/* Hash every file's contents and every symlink's target (xxh3-128)
	 * during the walk; the manifest then carries hashes. */
	bool hash;
	/* Compare the walk with this manifest (the previous copy's), under
	 * VERIFY; NULL: no comparison, everything is copied. Not owned. */
	const struct manifest *previous;
	enum manifest_verify verify;
	/* The previous copy (a directory, or one file for a single-file
	 * dataset): files equal in PREVIOUS are hard-linked from here
	 * (linkat) instead of copied; one that cannot be linked is copied.
	 * NULL: copy everything. */
	const char *previous_path;
	/* And/or: files equal in PREVIOUS are fetched through FETCH
	 * (another node's copy, common/net/peerfetch.h) instead of read
	 * from SRC; with previous_path too, a file is linked where
	 * previous_path has it and fetched where it does not (PREVIOUS then
	 * lists several copies: this node's part and the others' parts of
	 * a fill by parts, docs/STAGING.md); one previous_path has but
	 * cannot be linked (another owner's: fs.protected_hardlinks) is
	 * copied from previous_path. Called from any copy thread with
	 * the file's path relative to SRC ("" when SRC is one file), an fd
	 * of the new empty file open for writing, and the size PREVIOUS
	 * gives; returns 0 once exactly SIZE bytes are written, or -1 to
	 * have the file copied from SRC instead (the partial one is removed
	 * first; FETCH keeps its reason to itself). NULL: no fetching. */
	int (*fetch)(const char *rel, int dst_fd, uint64_t size,
		     void *fetch_arg);
	void *fetch_arg;
	/* Only compare with PREVIOUS and count: nothing is kept per entry
	 * (a fast cache-hit check); copyengine_copy and
	 * copyengine_manifest then refuse (EINVAL). */
	bool check_only;
	/* Make the top of the copy private: a directory 0700, a file
	 * mode & 0700, whatever the source's top mode was. */
	bool private_top;
	/* Take every write bit off the copy's files and directories (the
	 * top included), so that a job cannot change a cached dataset by
	 * accident: the copy is shared with later jobs, and unchanged files
	 * are hard links shared with other versions. */
	bool read_only;
	/* Fail the walk (EACCES, "cannot share SRC/x: ...") at the first
	 * entry, the top included, that is not readable by everyone
	 * (common/fs/publictree: a+r files, a+rx directories, no ACL): a
	 * public cache entry is served to every user. */
	bool public_only;
	/* Never use copy_file_range (exercises the pread/pwrite path). */
	bool no_copy_file_range;
	/* How the destination is named in messages (e.g. "DSTDIR/data").
	 * NULL: the dst_name given to copyengine_copy. */
	const char *dst_label;
	/* Called from the thread that runs copyengine_copy, about every
	 * PROGRESS_MS ms (0: 250), with what is done so far: bytes and
	 * files placed in the copy, copied or linked. May be NULL. */
	void (*progress)(uint64_t bytes, uint64_t files, void *arg);
	unsigned progress_ms;
	/* Called from the thread that runs copyengine_copy, before copying,
	 * once per skipped special file ("SRC/x: fifo skipped"; after
	 * COPYENGINE_NOTES_MAX of them one line counts the rest). May be
	 * NULL. */
	void (*note)(const char *msg, void *arg);
	void *arg;
	/* Bytes per second the copy may read from the source, shared by
	 * all its threads (common/fs/ratelimit.h: RATELIMIT_UNLIMITED, or 0 to
	 * pause); read before each step of at most RATELIMIT_STEP bytes, so
	 * another process may change it at any time. NULL: unlimited. */
	const _Atomic uint64_t *rate;
	/* A part of the dataset: the regular files this copy holds (a node's
	 * part of a spread dataset, common/sched/spread.h). Called after the
	 * walk, from the thread that runs copyengine_walk, once per regular
	 * file path in path order, with REL (LEN bytes, NUL-terminated) and
	 * its size; returns true to keep the file, and may set *PRIORITY
	 * (preset to 0) for SELECT_BUDGET. Directories and symlinks are
	 * always kept: every part has the whole tree's skeleton. A file
	 * left out is out of everything that follows: the totals but
	 * dataset_*, the comparison with PREVIOUS (a file of PREVIOUS that
	 * the part no longer holds counts as removed), hashing, the copy,
	 * copyengine_manifest; copyengine_listing still lists it. Hard
	 * links are per path: a selected name whose inode's other names
	 * were left out is copied (one inode per (dev, ino) among the kept
	 * names). NULL: every file (with SELECT_BUDGET: priority 0, so
	 * path order). With SELECT or SELECT_BUDGET, SRC must be a
	 * directory: one file cannot be split (the walk fails, EINVAL). */
	bool (*select)(const char *rel, size_t len, uint64_t size,
		       double *priority, void *select_arg);
	void *select_arg;
	/* Only what fits: 0, or the bytes the kept files may take. The files
	 * SELECT keeps are taken by descending priority (ties: path order)
	 * until the next would take their bytes above SELECT_BUDGET (a
	 * hard-linked inode counts once, and a name of an inode already
	 * taken costs nothing); that one and every later one are left out
	 * (over_budget_* of the totals), so the part is always the same
	 * head of the same order: it does not churn between jobs. */
	uint64_t select_budget;
	/* Keep every entry of a check_only walk, so that copyengine_listing
	 * can list it (a check otherwise keeps nothing per entry). Implied
	 * by SELECT and SELECT_BUDGET. */
	bool keep_listing;
};

/* What the walk found. Files = regular files, counted per path; bytes =
 * their sizes, a hard-linked inode counted once. */
struct copyengine_totals {
	uint64_t total_bytes, total_files;
	/* What copyengine_copy has to copy: files that differ from the
	 * previous manifest (all when there is none), without the second
	 * and later names of a hard-linked inode. */
	uint64_t copy_bytes, copy_files;
	uint64_t dirs; /* directories, the top included */
	uint64_t symlinks;
	uint64_t specials;  /* skipped: fifos, sockets, devices */
	uint64_t hardlinks; /* file paths that are another's hard link */
	/* Against the previous manifest (all zero without one). */
	struct manifest_diff diff;
	bool unchanged; /* previous given and nothing differs */
	/* The whole walk's regular files, whatever opts.select kept (files
	 * per path, bytes a hard-linked inode once): total_* without a
	 * selection. */
	uint64_t dataset_bytes, dataset_files;
	/* Files SELECT kept that opts.select_budget left out, and their
	 * bytes (an inode once). */
	uint64_t over_budget_files, over_budget_bytes;
};

/* What copyengine_copy did. On success bytes == total_bytes and files ==
 * total_files of the walk. */
struct copyengine_result {
	uint64_t bytes;        /* regular-file bytes placed: copied or linked */
	uint64_t files;        /* regular files placed */
	uint64_t linked;       /* files hard-linked from previous_path */
	uint64_t linked_bytes; /* their bytes */
	/* files (and bytes) that could not be linked from previous_path and
	 * were copied from it (with FETCH set only: a fill by parts) */
	uint64_t copied_previous, copied_previous_bytes;
	uint64_t fetched, fetched_bytes; /* files and bytes FETCH placed */
	uint64_t fetch_fallbacks; /* files FETCH refused: copied from SRC */
};

struct copyengine;

/* Walk SRC (an absolute path: a directory tree or one file). OPTS may be
 * NULL (defaults); it is copied, but what it points to must outlive the
 * engine. Returns 0 with *ret set (free with copyengine_destroy), or -1
 * with errno and a one-line message in ERR; *ret untouched on failure. */
int copyengine_walk(const char *src, const struct copyengine_opts *opts,
		    struct copyengine **ret, char *err, size_t errlen);

/* The walk's totals. Valid until CE is destroyed. */
const struct copyengine_totals *copyengine_totals(const struct copyengine *ce);

/* Copy the walked SRC to the new entry DST_NAME (one path component, which
 * must not exist) under the directory DST_DIRFD, then syncfs(). Call at
 * most once. Returns 0 with *ret (may be NULL) filled, or -1 with errno and
 * a one-line message in ERR. On failure whatever it created as DST_NAME is
 * removed again (an existing DST_NAME is never touched). */
int copyengine_copy(struct copyengine *ce, int dst_dirfd, const char *dst_name,
		    struct copyengine_result *ret, char *err, size_t errlen);

/* The manifest of what was walked and kept (opts->select), with hashes
 * when opts->hash, sorted.
 * Returns 0 with *ret set (the caller's: manifest_destroy), or -1 with
 * errno. */
int copyengine_manifest(struct copyengine *ce, struct manifest **ret);

/* The manifest of the whole walk, whatever opts.select kept: every
 * directory, symlink and regular file of SRC, sorted, without hashes (a
 * node hashes only what it holds, and every node's listing of the same
 * SRC is the same). After a check_only walk only with opts.keep_listing
 * or a selection. Returns 0 with *ret set (the caller's:
 * manifest_destroy), or -1 with errno (EINVAL: no listing kept;
 * ENOMEM). */
int copyengine_listing(struct copyengine *ce, struct manifest **ret);

/* Free CE. NULL is a no-op. */
void copyengine_destroy(struct copyengine *ce);

/* A manifest's times (manifest_entry.mtime_ns) from a stat's seconds and
 * nanoseconds, and back to a timespec for futimens (a time before 1970
 * included: tv_nsec stays in 0..999999999). */
int64_t copyengine_ts_ns(int64_t sec, uint32_t nsec);
struct timespec copyengine_ns_ts(int64_t ns);

/* The thread count for a source whose statfs f_type is FTYPE when the
 * caller names none: COPYENGINE_THREADS_REMOTE for network file systems
 * (NFS, Lustre, GPFS, BeeGFS, CIFS/SMB, Ceph, FUSE clients such as
 * GlusterFS or sshfs), COPYENGINE_THREADS_DEFAULT otherwise. */
unsigned copyengine_default_threads(long ftype);

#endif /* IOSTAGE_COPYENGINE_H */
