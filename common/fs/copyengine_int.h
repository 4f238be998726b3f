/* copyengine_int.h - what the files of the copy engine share
 * (copyengine.c, copyengine_walk.c, copyengine_copy.c): its limits, its
 * items and per-thread state, struct copyengine, and the functions one file
 * uses of another's. Not for use outside them; the engine's interface is
 * copyengine.h. */

#ifndef IOSTAGE_COPYENGINE_INT_H
#define IOSTAGE_COPYENGINE_INT_H

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <float.h>
#include <limits.h>
#include <linux/openat2.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

#include <xxhash.h>

#include "common/fs/copyengine.h"
#include "common/fs/publictree.h"
#include "common/fs/ratelimit.h"
#include "common/fs/rmtree.h"

#define CE_BUF (1u << 20)             /* pread/pwrite and hash buffer */
#define CE_CHUNK ((uint64_t)32 << 20) /* a large file's unit of work */
#define CE_CFR_STEP ((size_t)8 << 20) /* per copy_file_range call */
#define CE_ARENA (256u << 10)
#define CE_STACK ((size_t)256 << 10)
#define CE_ERR_MAX 1024
#define CE_NOTE_MAX 1024
#define CE_SEQ_MIN ((uint64_t)1 << 20) /* fadvise SEQUENTIAL from here */

enum ce_flag {
	CE_SECONDARY = 1, /* another path of a hard-linked inode */
	CE_LINK = 2,      /* equal in the previous manifest */
	CE_HASHED = 4,
	CE_OUT = 8, /* a file opts.select (or its budget) left out */
};

/* Task kinds besides a chunk index. */
enum ce_task_kind {
	CE_T_WHOLE = UINT32_MAX,
	CE_T_LINK = UINT32_MAX - 1,
	CE_T_SYMLINK = UINT32_MAX - 2,
};

struct ce_item {
	char *path;          /* relative; "" = the top */
	const char *primary; /* CE_SECONDARY: the first path of the inode */
	uint64_t size, ino, dev, blocks;
	int64_t mtime_ns, atime_ns;
	uint32_t mode; /* st_mode, type included */
	uint32_t nlink;
	uint32_t big; /* chunked file: index in ce->big */
	uint16_t path_len;
	uint8_t type;  /* enum manifest_type */
	uint8_t flags; /* enum ce_flag */
	uint8_t hash[MANIFEST_HASH_LEN];
};

struct ce_block {
	struct ce_block *next;
	size_t used, size;
	char data[];
};

struct ce_arena {
	struct ce_block *head;
};

/* Counts of a walk, per thread while it runs. */
struct ce_acc {
	struct copyengine_totals t;
	size_t matched; /* entries found in the previous manifest */
};

/* Per thread: what the walk found, and buffers. */
struct ce_local {
	struct ce_item *v; /* lean: only files with nlink > 1 */
	size_t n, cap;
	struct ce_acc acc; /* lean: everything else */
	struct ce_arena arena;
	unsigned char *buf; /* CE_BUF, on demand */
	XXH3_state_t *xs;   /* on demand */
	struct copyengine *ce;
};

struct ce_dirjob {
	const char *path; /* an item's path */
	uint16_t len;
	uint16_t depth;
};

struct ce_task {
	uint32_t item;
	uint32_t chunk; /* a chunk index or enum ce_task_kind */
};

/* A large file copied in chunks: whichever chunk comes first creates the
 * destination; the last one to finish sets its mode and times. */
struct ce_big {
	pthread_mutex_t mu;
	int fd;
	bool failed;
	atomic_uint left;
};

struct copyengine {
	struct copyengine_opts o;
	char src[PATH_MAX]; /* as given, for messages and the top */
	int src_root;       /* the top: a directory or the file */
	bool src_dir;
	struct ce_item *items; /* what the copy holds (opts.select) */
	size_t n;
	/* The files opts.select left out, in path order: only for
	 * copyengine_listing. */
	struct ce_item *out;
	size_t nout;
	/* A check that keeps nothing per entry (check_only, no listing,
	 * no selection): walkers count as they go. */
	bool lean;
	bool sorted, copy_started;
	/* Counted before the selection (count_totals keeps them). */
	uint64_t dataset_bytes, dataset_files;
	uint64_t over_budget_files, over_budget_bytes;
	struct ce_local *locals;
	unsigned nthreads;
	struct ce_arena arena; /* the top's item, notes; under mu */
	struct copyengine_totals t;
	char *notes[COPYENGINE_NOTES_MAX];
	size_t nnotes;

	pthread_mutex_t mu;
	pthread_cond_t cv;
	atomic_bool failed;
	int err_no;
	char err[CE_ERR_MAX];
	unsigned running;

	/* walk */
	struct ce_dirjob *q;
	size_t qn, qcap, busy;
	atomic_size_t nentries;
	/* public_only: the ACL kinds the top's file system does not support
	 * (publictree_has_acl_on), not asked again of its entries. */
	dev_t top_dev;
	atomic_uint acl_unsupported;
	atomic_size_t next; /* hash and copy: next item or task */

	/* copy */
	int dst_dirfd, dst_root, prev_root;
	const char *dst_name;
	char dst_label[PATH_MAX];
	struct ce_task *tasks;
	size_t ntasks;
	struct ce_big *big;
	size_t nbig;
	atomic_uint_fast64_t bytes, files, linked, linked_bytes;
	atomic_uint_fast64_t copied_previous, copied_previous_bytes;
	atomic_uint_fast64_t fetched, fetched_bytes, fetch_fallbacks;
	atomic_bool cfr_off;
	atomic_bool top_made; /* DST_NAME exists because of us */
	mode_t umask;         /* the process's, read before copying */
	struct ratelimit rl;  /* o.rate, shared by the threads */
};

/* --- copyengine.c ------------------------------------------------------ */

char *copyengine_arena_alloc(struct ce_arena *a, size_t len);
int copyengine_open_beneath(int root, const char *path, int flags, mode_t mode);
void copyengine_msg_path(char *buf, size_t len, const char *base,
			 const char *rel);
int copyengine_public_check(struct copyengine *ce, int dirfd, const char *name,
			    const char *rel, const struct statx *sx);
void copyengine_failf(struct copyengine *ce, int errnum, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
int copyengine_fail_read(struct copyengine *ce, const char *rel, int errnum);
int copyengine_fail_write(struct copyengine *ce, const char *rel, int errnum);
int copyengine_fail_changed(struct copyengine *ce, const char *rel);
int copyengine_report(struct copyengine *ce, char *err, size_t errlen);
bool copyengine_is_write_errno(int e);
int copyengine_run_threads(struct copyengine *ce, void *(*fn)(void *),
			   bool with_progress);
void copyengine_thread_done(struct copyengine *ce);
void copyengine_account(const struct copyengine *ce, struct ce_item *it,
			struct ce_acc *a);
int copyengine_sort_items(struct copyengine *ce);

/* --- copyengine_walk.c ------------------------------------------------- */

void copyengine_item_stat(struct ce_item *it, const struct statx *sx);
int copyengine_push_jobs(struct copyengine *ce, const struct ce_dirjob *jobs,
			 size_t n);
void *copyengine_walk_main(void *arg);
int copyengine_src_open(struct copyengine *ce, const struct ce_item *it);
int copyengine_src_recheck(struct copyengine *ce, const struct ce_item *it,
			   int fd);
int copyengine_local_buf(struct copyengine *ce, struct ce_local *l,
			 const char *rel);
ssize_t copyengine_read_target(struct copyengine *ce, const struct ce_item *it,
			       char *buf);
int copyengine_hash_item_at(struct ce_local *l, struct ce_item *it, int dirfd,
			    const char *name);
void *copyengine_hash_main(void *arg);

#endif /* IOSTAGE_COPYENGINE_INT_H */
