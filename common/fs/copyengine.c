/* copyengine.c - the parallel walker and copier behind dataset staging.
 *
 * Why it is shaped like this: on a PFS or a virtual disk a single reader
 * waits on one request at a time, and a dataset of many small files is
 * mostly waiting. Keeping many reads in flight is what makes staging fast,
 * so both the walk and the copy run on a pool of threads (16 by default),
 * and nothing waits on the disk per file: no fsync per file, one syncfs()
 * at the end. Crash safety comes from the caller, which publishes the copy
 * by rename only after this returned 0.
 *
 * The walk: a LIFO queue of directories (relative paths, not fds, so a deep
 * or wide tree costs memory, never file descriptors). A thread pops a
 * directory, opens it below the source's top with openat2(RESOLVE_BENEATH |
 * RESOLVE_NO_SYMLINKS) - a directory swapped for a symlink while we walk
 * makes the open fail, it is never followed - reads it and statx()es each
 * entry relative to that fd. Entries go into per-thread vectors whose paths
 * live in per-thread arenas; they are merged when the walk ends.
 *
 * The copy: directories are made first (in path order, so parents exist),
 * then a fixed list of tasks is shared out through an atomic index: chunks
 * of large files first (the longest work; each chunk opens the source on
 * its own so each has its own readahead state), then whole small files in
 * inode order (close to their order on disk), then links and symlinks.
 * Hard links inside the dataset are made after all data, directory modes
 * and times last, deepest first, so a read-only directory is filled before
 * it becomes read-only and writing entries does not disturb its mtime.
 * Files are created with their final mode when the umask allows, so most
 * need no fchmod; only futimens follows the data.
 *
 * A cache-hit check (check_only) keeps nothing per entry: each walker
 * compares what it stats with the previous manifest at once and only
 * counts. On a virtual machine a syscall costs about a microsecond and a
 * page touched for the first time costs a fault, so one statx per entry is
 * the floor and everything else is kept off the per-entry path.
 *
 * Measured on a 2-vCPU VM and rejected, so nobody tries them blindly
 * again: O_DIRECT for small files or for chunks, a thread calling syncfs()
 * every 128 MB to start writeback early, sync_file_range per chunk, dealing
 * directories out across threads instead of inode order, 8 or 32 threads
 * instead of 16, io_uring for statx (punted to io-wq: slower). None was
 * faster; several were slower. The copy there is CPU-bound in the kernel
 * (page-cache copy and one read request per small file).
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
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

#define CE_BUF (1u << 20)                 /* pread/pwrite and hash buffer */
#define CE_CHUNK ((uint64_t)32 << 20)     /* a large file's unit of work */
#define CE_CFR_STEP ((size_t)8 << 20)     /* per copy_file_range call */
#define CE_ARENA (256u << 10)
#define CE_STACK ((size_t)256 << 10)
#define CE_ERR_MAX 1024
#define CE_NOTE_MAX 1024
#define CE_SEQ_MIN ((uint64_t)1 << 20)    /* fadvise SEQUENTIAL from here */

enum ce_flag {
	CE_SECONDARY = 1,  /* another path of a hard-linked inode */
	CE_LINK = 2,       /* equal in the previous manifest */
	CE_HASHED = 4,
};

/* Task kinds besides a chunk index. */
enum ce_task_kind {
	CE_T_WHOLE = UINT32_MAX,
	CE_T_LINK = UINT32_MAX - 1,
	CE_T_SYMLINK = UINT32_MAX - 2,
};

struct ce_item {
	char *path;              /* relative; "" = the top */
	const char *primary;     /* CE_SECONDARY: the first path of the inode */
	uint64_t size, ino, dev, blocks;
	int64_t mtime_ns, atime_ns;
	uint32_t mode;           /* st_mode, type included */
	uint32_t nlink;
	uint32_t big;            /* chunked file: index in ce->big */
	uint16_t path_len;
	uint8_t type;            /* enum manifest_type */
	uint8_t flags;           /* enum ce_flag */
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
	size_t matched;          /* entries found in the previous manifest */
};

/* Per thread: what the walk found, and buffers. */
struct ce_local {
	struct ce_item *v;       /* check_only: only files with nlink > 1 */
	size_t n, cap;
	struct ce_acc acc;       /* check_only: everything else */
	struct ce_arena arena;
	unsigned char *buf;      /* CE_BUF, on demand */
	XXH3_state_t *xs;        /* on demand */
	struct copyengine *ce;
};

struct ce_dirjob {
	const char *path;        /* an item's path */
	uint16_t len;
	uint16_t depth;
};

struct ce_task {
	uint32_t item;
	uint32_t chunk;          /* a chunk index or enum ce_task_kind */
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
	char src[PATH_MAX];      /* as given, for messages and the top */
	int src_root;            /* the top: a directory or the file */
	bool src_dir;
	struct ce_item *items;
	size_t n;
	bool sorted, copy_started;
	struct ce_local *locals;
	unsigned nthreads;
	struct ce_arena arena;   /* the top's item, notes; under mu */
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
	atomic_size_t next;      /* hash and copy: next item or task */

	/* copy */
	int dst_dirfd, dst_root, prev_root;
	const char *dst_name;
	char dst_label[PATH_MAX];
	struct ce_task *tasks;
	size_t ntasks;
	struct ce_big *big;
	size_t nbig;
	atomic_uint_fast64_t bytes, files, linked;
	atomic_bool cfr_off;
	atomic_bool top_made;    /* DST_NAME exists because of us */
	mode_t umask;            /* the process's, read before copying */
	struct ratelimit rl;     /* o.rate, shared by the threads */
};

static int hash_item_at(struct ce_local *l, struct ce_item *it, int dirfd,
			const char *name);
static void account(const struct copyengine *ce, struct ce_item *it,
		    struct ce_acc *a);

/* --- small helpers ---------------------------------------------------------- */

static char *arena_alloc(struct ce_arena *a, size_t len)
{
	struct ce_block *b = a->head;

	if (!b || b->size - b->used < len) {
		size_t size = len > CE_ARENA ? len : CE_ARENA;

		b = malloc(sizeof(*b) + size);
		if (!b)
			return NULL;
		b->size = size;
		b->used = 0;
		b->next = a->head;
		a->head = b;
	}
	b->used += len;
	return b->data + b->used - len;
}

static void arena_free(struct ce_arena *a)
{
	while (a->head) {
		struct ce_block *next = a->head->next;

		free(a->head);
		a->head = next;
	}
}

static int64_t ts_ns(int64_t sec, uint32_t nsec)
{
	return sec * 1000000000LL + (int64_t)nsec;
}

static struct timespec ns_ts(int64_t ns)
{
	struct timespec ts;

	ts.tv_sec = (time_t)(ns / 1000000000LL);
	ts.tv_nsec = (long)(ns % 1000000000LL);
	if (ts.tv_nsec < 0) {
		ts.tv_sec--;
		ts.tv_nsec += 1000000000L;
	}
	return ts;
}

/* Open PATH (relative; "" = ROOT itself) below ROOT without following any
 * symlink on the way. openat2 where the kernel has it (5.6+); elsewhere
 * only the last component is guarded (O_NOFOLLOW). */
static int open_beneath(int root, const char *path, int flags, mode_t mode)
{
	static atomic_bool no_openat2;
	struct open_how how;
	int fd, tries = 0;

	if (!*path)
		path = ".";
	if (!atomic_load_explicit(&no_openat2, memory_order_relaxed)) {
		memset(&how, 0, sizeof(how));
		how.flags = (uint64_t)(flags | O_CLOEXEC | O_NOFOLLOW);
		how.mode = (flags & O_CREAT) ? mode : 0;
		how.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS |
			      RESOLVE_NO_MAGICLINKS;
		do {
			fd = (int)syscall(SYS_openat2, root, path, &how,
					  sizeof(how));
		} while (fd < 0 && (errno == EAGAIN || errno == EINTR) &&
			 ++tries < 64);
		if (fd >= 0 || errno != ENOSYS)
			return fd;
		atomic_store(&no_openat2, true);
	}
	return openat(root, path, flags | O_CLOEXEC | O_NOFOLLOW, mode);
}

/* --- errors ----------------------------------------------------------------- */

/* "BASE/REL" for a message; a very long one keeps its head and tail so the
 * reason after it still fits. */
static void msg_path(char *buf, size_t len, const char *base,
		     const char *rel)
{
	char full[PATH_MAX + MANIFEST_PATH_MAX + 2];
	size_t n;

	snprintf(full, sizeof(full), "%s%s%s", base, *rel ? "/" : "", rel);
	n = strlen(full);
	if (n <= 400)
		snprintf(buf, len, "%s", full);
	else
		snprintf(buf, len, "%.150s...%s", full, full + n - 240);
}

static void ce_failf(struct copyengine *ce, int errnum, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* opts.public_only: does entry REL (NAME in the directory DIRFD; NULL:
 * DIRFD itself) with mode MODE keep the tree public? -1 (failure
 * recorded, EACCES) when not. */
static int public_check(struct copyengine *ce, int dirfd, const char *name,
			const char *rel, const struct statx *sx)
{
	mode_t mode = sx->stx_mode;
	char m[600];
	int acl;

	if (!ce->o.public_only)
		return 0;
	msg_path(m, sizeof(m), ce->src, rel);
	if (!publictree_mode_ok(mode)) {
		ce_failf(ce, EACCES,
			 "cannot share %s: mode %04o is not readable by "
			 "everyone",
			 m, (unsigned)(mode & 07777));
		return -1;
	}
	if (S_ISLNK(mode))
		return 0;
	if (makedev(sx->stx_dev_major, sx->stx_dev_minor) == ce->top_dev) {
		unsigned unsupported = atomic_load(&ce->acl_unsupported);

		acl = publictree_has_acl_on(dirfd, name, &unsupported);
		atomic_fetch_or(&ce->acl_unsupported, unsupported);
	} else {
		acl = publictree_has_acl(dirfd, name);
	}
	if (acl != 0) {
		ce_failf(ce, EACCES, "cannot share %s: %s", m,
			 acl > 0 ? "it has an ACL, which may deny someone"
				 : strerror(errno));
		return -1;
	}
	return 0;
}

/* Record the first failure (later ones are consequences) and stop. */
static void ce_failf(struct copyengine *ce, int errnum, const char *fmt, ...)
{
	va_list ap;

	pthread_mutex_lock(&ce->mu);
	if (!ce->err_no) {
		ce->err_no = errnum ? errnum : EIO;
		va_start(ap, fmt);
		vsnprintf(ce->err, sizeof(ce->err), fmt, ap);
		va_end(ap);
	}
	atomic_store(&ce->failed, true);
	pthread_cond_broadcast(&ce->cv);
	pthread_mutex_unlock(&ce->mu);
}

static int fail_read(struct copyengine *ce, const char *rel, int errnum)
{
	char p[600];

	msg_path(p, sizeof(p), ce->src, rel);
	ce_failf(ce, errnum, "cannot read %s: %s", p, strerror(errnum));
	return -1;
}

static int fail_write(struct copyengine *ce, const char *rel, int errnum)
{
	char p[600];

	msg_path(p, sizeof(p), ce->dst_label, rel);
	ce_failf(ce, errnum, "cannot write %s: %s", p, strerror(errnum));
	return -1;
}

static int fail_changed(struct copyengine *ce, const char *rel)
{
	char p[600];

	msg_path(p, sizeof(p), ce->src, rel);
	ce_failf(ce, EAGAIN, "cannot read %s: changed while being staged", p);
	return -1;
}

/* Copy the engine's first error out to the caller. */
static int report(struct copyengine *ce, char *err, size_t errlen)
{
	if (err && errlen)
		snprintf(err, errlen, "%s", ce->err);
	errno = ce->err_no ? ce->err_no : EIO;
	return -1;
}

/* Which side a copy_file_range error belongs to. */
static bool is_write_errno(int e)
{
	return e == ENOSPC || e == EDQUOT || e == EFBIG || e == EROFS;
}

/* --- threads ------------------------------------------------------------------ */

/* Run FN on N threads (each with its own ce_local) and wait for them; while
 * waiting, call the progress callback when WITH_PROGRESS. Fewer threads
 * than asked is fine; none is an error. */
static int run_threads(struct copyengine *ce, void *(*fn)(void *),
		       bool with_progress)
{
	pthread_t tids[COPYENGINE_THREADS_MAX];
	pthread_attr_t attr;
	unsigned started = 0;
	unsigned ms = ce->o.progress_ms ? ce->o.progress_ms : 250;

	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, CE_STACK);
	pthread_mutex_lock(&ce->mu);
	ce->running = 0;
	for (unsigned i = 0; i < ce->nthreads; i++) {
		if (pthread_create(&tids[started], &attr, fn, &ce->locals[i]))
			break;
		started++;
		ce->running++;
	}
	pthread_attr_destroy(&attr);
	if (!started) {
		pthread_mutex_unlock(&ce->mu);
		ce_failf(ce, EAGAIN, "cannot start threads: %s",
			 strerror(EAGAIN));
		return -1;
	}
	while (ce->running) {
		struct timespec dl;

		clock_gettime(CLOCK_REALTIME, &dl);
		dl.tv_nsec += (long)(ms % 1000) * 1000000L;
		dl.tv_sec += ms / 1000 + dl.tv_nsec / 1000000000L;
		dl.tv_nsec %= 1000000000L;
		if (pthread_cond_timedwait(&ce->cv, &ce->mu, &dl) == ETIMEDOUT &&
		    with_progress && ce->o.progress && ce->running) {
			pthread_mutex_unlock(&ce->mu);
			ce->o.progress(atomic_load(&ce->bytes),
				       atomic_load(&ce->files), ce->o.arg);
			pthread_mutex_lock(&ce->mu);
		}
	}
	pthread_mutex_unlock(&ce->mu);
	for (unsigned i = 0; i < started; i++)
		pthread_join(tids[i], NULL);
	return atomic_load(&ce->failed) ? -1 : 0;
}

static void thread_done(struct copyengine *ce)
{
	pthread_mutex_lock(&ce->mu);
	ce->running--;
	pthread_cond_broadcast(&ce->cv);
	pthread_mutex_unlock(&ce->mu);
}

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
	msg_path(p, sizeof(p), ce->src, rel);
	snprintf(note, sizeof(note), "%s: %s", p, special_name(mode));
	pthread_mutex_lock(&ce->mu);
	if (ce->nnotes < COPYENGINE_NOTES_MAX) {
		char *s = arena_alloc(&ce->arena, strlen(note) + 1);

		if (s) {
			strcpy(s, note);
			ce->notes[ce->nnotes++] = s;
		}
	}
	ce->t.specials++;
	pthread_mutex_unlock(&ce->mu);
}

/* Fill IT from SX (and its type). */
static void item_stat(struct ce_item *it, const struct statx *sx)
{
	mode_t m = sx->stx_mode;

	it->type = S_ISDIR(m) ? MANIFEST_DIR :
		   S_ISLNK(m) ? MANIFEST_SYMLINK : MANIFEST_FILE;
	it->mode = m;
	it->size = it->type == MANIFEST_DIR ? 0 : sx->stx_size;
	it->ino = sx->stx_ino;
	it->dev = makedev(sx->stx_dev_major, sx->stx_dev_minor);
	it->blocks = sx->stx_blocks;
	it->nlink = sx->stx_nlink;
	it->mtime_ns = ts_ns(sx->stx_mtime.tv_sec, sx->stx_mtime.tv_nsec);
	it->atime_ns = ts_ns(sx->stx_atime.tv_sec, sx->stx_atime.tv_nsec);
}

static int push_jobs(struct copyengine *ce, const struct ce_dirjob *jobs,
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

	fd = open_beneath(ce->src_root, job->path, O_RDONLY | O_DIRECTORY, 0);
	if (fd < 0)
		return fail_read(ce, job->path, errno);
	d = fdopendir(fd);
	if (!d) {
		int e = errno;

		close(fd);
		return fail_read(ce, job->path, e);
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
			fail_read(ce, rel, ENAMETOOLONG);
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
			fail_read(ce, rel, e);
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
			if (public_check(ce, fd, de->d_name, rel, &sx) < 0)
				goto fail;
		}
		if (atomic_fetch_add(&ce->nentries, 1) + 1 >=
		    MANIFEST_MAX_ENTRIES) {
			ce_failf(ce, E2BIG,
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
		item_stat(&tmp, &sx);
		if (ce->o.check_only && ce->o.hash &&
		    tmp.type != MANIFEST_DIR &&
		    hash_item_at(l, &tmp, fd, de->d_name) < 0)
			goto fail;
		/* A check keeps nothing per entry but hard-linked files
		 * (counted once, at the end) and directories (queued). */
		if (ce->o.check_only &&
		    !(tmp.type == MANIFEST_FILE && tmp.nlink > 1)) {
			account(ce, &tmp, &l->acc);
			if (tmp.type != MANIFEST_DIR)
				continue;
		}
		p = arena_alloc(&l->arena, plen + 1);
		if (!p) {
			fail_read(ce, job->path, ENOMEM);
			goto fail;
		}
		memcpy(p, pbuf, plen + 1);
		tmp.path = p;
		if (!ce->o.check_only || tmp.type == MANIFEST_FILE) {
			it = local_push(l);
			if (!it) {
				fail_read(ce, job->path, ENOMEM);
				goto fail;
			}
			*it = tmp;
		}
		if (tmp.type != MANIFEST_DIR)
			continue;
		if (job->depth + 1 > COPYENGINE_MAX_DEPTH) {
			char m[600];

			msg_path(m, sizeof(m), ce->src, p);
			ce_failf(ce, ELOOP,
				 "cannot read %s: directory tree deeper than "
				 "%d levels",
				 m, COPYENGINE_MAX_DEPTH);
			goto fail;
		}
		if (nsubs == *subcap) {
			size_t cap = *subcap ? *subcap * 2 : 64;
			struct ce_dirjob *s = realloc(*subs, cap * sizeof(*s));

			if (!s) {
				fail_read(ce, p, ENOMEM);
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
		fail_read(ce, job->path, errno);
		goto fail;
	}
	closedir(d);
	if (nsubs && push_jobs(ce, *subs, nsubs) < 0)
		return fail_read(ce, job->path, ENOMEM);
	return 0;
fail:
	closedir(d);
	return -1;
}

static void *walk_main(void *arg)
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
		fd = openat(dirfd, name, O_RDONLY | O_NONBLOCK | O_NOCTTY |
						 O_NOFOLLOW | O_CLOEXEC);
	else if (it->path_len)
		fd = open_beneath(ce->src_root, it->path,
				  O_RDONLY | O_NONBLOCK | O_NOCTTY, 0);
	else
		fd = open(ce->src, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	if (fd < 0)
		return fail_read(ce, it->path, errno);
	if (fstat(fd, &st) < 0) {
		int e = errno;

		close(fd);
		return fail_read(ce, it->path, e);
	}
	if (!S_ISREG(st.st_mode) || (uint64_t)st.st_ino != it->ino ||
	    (uint64_t)st.st_size != it->size ||
	    ts_ns(st.st_mtim.tv_sec, (uint32_t)st.st_mtim.tv_nsec) !=
		    it->mtime_ns) {
		close(fd);
		return fail_changed(ce, it->path);
	}
	return fd;
}

static int src_open(struct copyengine *ce, const struct ce_item *it)
{
	return src_open_at(ce, it, -1, NULL);
}

/* Is the open source file still the one the walk saw? */
static int src_recheck(struct copyengine *ce, const struct ce_item *it,
		       int fd)
{
	struct stat st;

	if (fstat(fd, &st) < 0)
		return fail_read(ce, it->path, errno);
	if ((uint64_t)st.st_size != it->size ||
	    ts_ns(st.st_mtim.tv_sec, (uint32_t)st.st_mtim.tv_nsec) !=
		    it->mtime_ns)
		return fail_changed(ce, it->path);
	return 0;
}

static int local_buf(struct copyengine *ce, struct ce_local *l,
		     const char *rel)
{
	if (!l->buf) {
		l->buf = malloc(CE_BUF);
		if (!l->buf)
			return fail_read(ce, rel, ENOMEM);
	}
	return 0;
}

/* A symlink's target into BUF (PATH_MAX). Returns its length or -1. */
static ssize_t read_target(struct copyengine *ce, const struct ce_item *it,
			   char *buf)
{
	ssize_t n;
	int fd;

	fd = open_beneath(ce->src_root, it->path, O_PATH | O_NOFOLLOW, 0);
	if (fd < 0)
		return fail_read(ce, it->path, errno);
	n = readlinkat(fd, "", buf, PATH_MAX);
	if (n < 0) {
		int e = errno;

		close(fd);
		return fail_read(ce, it->path, e);
	}
	close(fd);
	if (n >= PATH_MAX)
		return fail_read(ce, it->path, ENAMETOOLONG);
	buf[n] = '\0';
	if ((uint64_t)n != it->size)
		return fail_changed(ce, it->path);
	return n;
}

/* Hash IT's contents (a symlink: its target), opened below the top, or
 * as NAME under DIRFD when DIRFD >= 0. */
static int hash_item_at(struct ce_local *l, struct ce_item *it, int dirfd,
			const char *name)
{
	struct copyengine *ce = l->ce;
	XXH128_canonical_t c;
	uint64_t left = it->size;
	int fd;

	if (!l->xs) {
		l->xs = XXH3_createState();
		if (!l->xs)
			return fail_read(ce, it->path, ENOMEM);
	}
	if (it->type == MANIFEST_SYMLINK) {
		char target[PATH_MAX];
		ssize_t n;

		if (dirfd >= 0) {
			n = readlinkat(dirfd, name, target, sizeof(target));
			if (n < 0)
				return fail_read(ce, it->path, errno);
			if ((uint64_t)n != it->size)
				return fail_changed(ce, it->path);
		} else {
			n = read_target(ce, it, target);
		}
		if (n < 0)
			return -1;
		XXH128_canonicalFromHash(&c, XXH3_128bits(target, (size_t)n));
		memcpy(it->hash, c.digest, sizeof(it->hash));
		it->flags |= CE_HASHED;
		return 0;
	}
	if (local_buf(ce, l, it->path) < 0)
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
			return fail_read(ce, it->path, e);
		}
		if (n == 0) {
			close(fd);
			return fail_changed(ce, it->path);
		}
		XXH3_128bits_update(l->xs, l->buf, (size_t)n);
		left -= (uint64_t)n;
		if (atomic_load_explicit(&ce->failed, memory_order_relaxed))
			break;
	}
	if (src_recheck(ce, it, fd) < 0) {
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
	return hash_item_at(l, it, -1, NULL);
}

static void *hash_main(void *arg)
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
	thread_done(ce);
	return NULL;
}

/* --- after the walk ----------------------------------------------------------------- */

static int cmp_path(const void *a, const void *b)
{
	return strcmp(((const struct ce_item *)a)->path,
		      ((const struct ce_item *)b)->path);
}

static int cmp_inode(const void *a, const void *b)
{
	const struct ce_item *x = *(struct ce_item *const *)a;
	const struct ce_item *y = *(struct ce_item *const *)b;

	if (x->dev != y->dev)
		return x->dev < y->dev ? -1 : 1;
	if (x->ino != y->ino)
		return x->ino < y->ino ? -1 : 1;
	return strcmp(x->path, y->path);
}

/* Group the paths of each hard-linked inode: the first path (strcmp order)
 * is copied, the others become links to it. */
static int find_hardlinks(struct copyengine *ce)
{
	struct ce_item **v;
	size_t n = 0;

	for (size_t i = 0; i < ce->n; i++)
		if (ce->items[i].type == MANIFEST_FILE && ce->items[i].nlink > 1)
			n++;
	if (n < 2)
		return 0;
	v = malloc(n * sizeof(*v));
	if (!v)
		return -1;
	n = 0;
	for (size_t i = 0; i < ce->n; i++)
		if (ce->items[i].type == MANIFEST_FILE && ce->items[i].nlink > 1)
			v[n++] = &ce->items[i];
	qsort(v, n, sizeof(*v), cmp_inode);
	for (size_t i = 1; i < n; i++) {
		struct ce_item *first = v[i - 1];

		while (first->flags & CE_SECONDARY)
			first = (struct ce_item *)first->primary;
		if (v[i]->dev == first->dev && v[i]->ino == first->ino) {
			v[i]->flags |= CE_SECONDARY;
			/* Points at the item for now; paths are filled
			 * below, once every item has its place. */
			v[i]->primary = (const char *)first;
		}
	}
	for (size_t i = 0; i < n; i++)
		if (v[i]->flags & CE_SECONDARY)
			v[i]->primary = ((const struct ce_item *)v[i]->primary)->path;
	free(v);
	return 0;
}

static void item_entry(const struct ce_item *it, struct manifest_entry *e)
{
	memset(e, 0, sizeof(*e));
	e->path = it->path;
	e->path_len = it->path_len;
	e->type = it->type;
	e->size = it->size;
	e->mtime_ns = it->mtime_ns;
	e->mode = it->mode & 07777;
	e->has_hash = (it->flags & CE_HASHED) ? 1 : 0;
	if (e->has_hash)
		memcpy(e->hash, it->hash, sizeof(e->hash));
}

/* Compare IT with the previous manifest (marking it CE_LINK when an equal
 * file is there) and count it into A. */
static void account(const struct copyengine *ce, struct ce_item *it,
		    struct ce_acc *a)
{
	const struct manifest *prev = ce->o.previous;
	struct copyengine_totals *t = &a->t;

	if (prev) {
		const struct manifest_entry *old =
			manifest_find(prev, it->path, it->path_len);
		struct manifest_entry cur;

		item_entry(it, &cur);
		if (!old) {
			t->diff.added++;
		} else if (a->matched++,
			   manifest_entry_same(old, &cur, ce->o.verify)) {
			t->diff.same++;
			if (it->type == MANIFEST_FILE)
				it->flags |= CE_LINK;
		} else {
			t->diff.changed++;
		}
	}
	switch (it->type) {
	case MANIFEST_DIR:
		t->dirs++;
		break;
	case MANIFEST_SYMLINK:
		t->symlinks++;
		break;
	default:
		t->total_files++;
		if (it->flags & CE_SECONDARY) {
			t->hardlinks++;
			break;
		}
		t->total_bytes += it->size;
		if (!(it->flags & CE_LINK)) {
			t->copy_files++;
			t->copy_bytes += it->size;
		}
	}
}

static void acc_add(struct ce_acc *to, const struct ce_acc *a)
{
	to->matched += a->matched;
	to->t.total_bytes += a->t.total_bytes;
	to->t.total_files += a->t.total_files;
	to->t.copy_bytes += a->t.copy_bytes;
	to->t.copy_files += a->t.copy_files;
	to->t.dirs += a->t.dirs;
	to->t.symlinks += a->t.symlinks;
	to->t.hardlinks += a->t.hardlinks;
	to->t.diff.added += a->t.diff.added;
	to->t.diff.changed += a->t.diff.changed;
	to->t.diff.same += a->t.diff.same;
}

/* The walk's totals: what the threads counted on the fly (check_only)
 * plus every item kept. */
static void count_totals(struct copyengine *ce)
{
	struct ce_acc a;
	uint64_t specials = ce->t.specials;

	memset(&a, 0, sizeof(a));
	for (unsigned i = 0; i < ce->nthreads; i++)
		acc_add(&a, &ce->locals[i].acc);
	for (size_t i = 0; i < ce->n; i++)
		account(ce, &ce->items[i], &a);
	ce->t = a.t;
	ce->t.specials = specials;
	if (ce->o.previous) {
		ce->t.diff.removed = manifest_count(ce->o.previous) - a.matched;
		ce->t.unchanged = !ce->t.diff.added && !ce->t.diff.removed &&
				  !ce->t.diff.changed;
	}
}

static int sort_items(struct copyengine *ce)
{
	if (!ce->sorted) {
		/* Secondaries point at their primary's path string, which
		 * does not move: sorting the items is safe. */
		qsort(ce->items, ce->n, sizeof(*ce->items), cmp_path);
		ce->sorted = true;
	}
	return 0;
}

/* Open the top SRC (following a symlink there only) and make its item. */
static int open_top(struct copyengine *ce, struct ce_item *it)
{
	struct statx sx;
	struct stat before;
	int fd;

	if (stat(ce->src, &before) < 0)
		return fail_read(ce, "", errno);
	if (!S_ISREG(before.st_mode) && !S_ISDIR(before.st_mode)) {
		ce_failf(ce, EINVAL,
			 "cannot read %s: not a regular file or directory",
			 ce->src);
		return -1;
	}
	/* Before opening: say why a private top is not shared rather than
	 * "Permission denied". */
	if (ce->o.public_only && !publictree_mode_ok(before.st_mode)) {
		ce_failf(ce, EACCES,
			 "cannot share %s: mode %04o is not readable by "
			 "everyone",
			 ce->src, (unsigned)(before.st_mode & 07777));
		return -1;
	}
	fd = open(ce->src, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC |
				   (S_ISDIR(before.st_mode) ? O_DIRECTORY : 0));
	if (fd < 0)
		return fail_read(ce, "", errno);
	if (statx(fd, "", AT_EMPTY_PATH, STATX_BASIC_STATS, &sx) < 0) {
		int e = errno;

		close(fd);
		return fail_read(ce, "", e);
	}
	if ((sx.stx_mode & S_IFMT) != (before.st_mode & S_IFMT)) {
		close(fd);
		return fail_changed(ce, "");
	}
	ce->top_dev = makedev(sx.stx_dev_major, sx.stx_dev_minor);
	if (public_check(ce, fd, NULL, "", &sx) < 0) {
		close(fd);
		return -1;
	}
	ce->src_root = fd;
	ce->src_dir = S_ISDIR(sx.stx_mode);
	it->path = arena_alloc(&ce->arena, 1);
	if (!it->path)
		return fail_read(ce, "", ENOMEM);
	it->path[0] = '\0';
	item_stat(it, &sx);
	return 0;
}

unsigned copyengine_default_threads(long ftype)
{
	switch ((unsigned long)ftype & 0xffffffffUL) {
	case 0x6969:     /* NFS */
	case 0x0bd00bd0: /* Lustre */
	case 0x47504653: /* GPFS */
	case 0x19830326: /* BeeGFS */
	case 0xff534d42: /* CIFS */
	case 0xfe534d42: /* SMB2 */
	case 0x00c36400: /* CephFS */
	case 0x65735546: /* FUSE (GlusterFS, sshfs, ...) */
		return COPYENGINE_THREADS_REMOTE;
	default:
		return COPYENGINE_THREADS_DEFAULT;
	}
}

static struct copyengine *ce_new(const char *src,
				 const struct copyengine_opts *opts)
{
	struct statfs sfs;
	struct copyengine *ce = calloc(1, sizeof(*ce));
	size_t len;

	if (!ce)
		return NULL;
	if (opts)
		ce->o = *opts;
	/* The source is opened safely later; statfs here only picks a
	 * default, and a failure just keeps the local one. */
	ce->nthreads = ce->o.threads		 ? ce->o.threads
		       : statfs(src, &sfs) == 0 ? copyengine_default_threads((long)sfs.f_type)
						 : COPYENGINE_THREADS_DEFAULT;
	if (ce->nthreads > COPYENGINE_THREADS_MAX)
		ce->nthreads = COPYENGINE_THREADS_MAX;
	ce->locals = calloc(ce->nthreads, sizeof(*ce->locals));
	if (!ce->locals) {
		free(ce);
		return NULL;
	}
	for (unsigned i = 0; i < ce->nthreads; i++)
		ce->locals[i].ce = ce;
	pthread_mutex_init(&ce->mu, NULL);
	pthread_cond_init(&ce->cv, NULL);
	ratelimit_init(&ce->rl, ce->o.rate);
	ce->src_root = ce->dst_root = ce->prev_root = -1;
	ce->dst_dirfd = -1;
	/* "/data/" and "/data" name the same thing; "/" stays "/". */
	len = strlen(src);
	while (len > 1 && src[len - 1] == '/')
		len--;
	memcpy(ce->src, src, len);
	ce->src[len] = '\0';
	return ce;
}

/* Merge the threads' items into one array, the top first. */
static int merge_items(struct copyengine *ce, const struct ce_item *top)
{
	size_t n = 1;

	for (unsigned i = 0; i < ce->nthreads; i++)
		n += ce->locals[i].n;
	ce->items = malloc(n * sizeof(*ce->items));
	if (!ce->items)
		return fail_read(ce, "", ENOMEM);
	ce->items[0] = *top;
	ce->n = 1;
	for (unsigned i = 0; i < ce->nthreads; i++) {
		struct ce_local *l = &ce->locals[i];

		if (l->n)
			memcpy(ce->items + ce->n, l->v, l->n * sizeof(*l->v));
		ce->n += l->n;
		free(l->v);
		l->v = NULL;
		l->n = l->cap = 0;
	}
	return 0;
}

int copyengine_walk(const char *src, const struct copyengine_opts *opts,
		    struct copyengine **ret, char *err, size_t errlen)
{
	struct copyengine *ce;
	struct ce_item top;

	if (!src || src[0] != '/' || strlen(src) >= PATH_MAX || !ret) {
		if (err && errlen)
			snprintf(err, errlen,
				 "cannot read %s: not an absolute path",
				 src ? src : "(null)");
		errno = EINVAL;
		return -1;
	}
	ce = ce_new(src, opts);
	if (!ce) {
		if (err && errlen)
			snprintf(err, errlen, "cannot read %s: %s", src,
				 strerror(ENOMEM));
		errno = ENOMEM;
		return -1;
	}
	memset(&top, 0, sizeof(top));
	if (open_top(ce, &top) < 0)
		goto fail;
	if (ce->src_dir) {
		struct ce_dirjob root = { .path = top.path, .len = 0, .depth = 0 };

		if (push_jobs(ce, &root, 1) < 0) {
			fail_read(ce, "", ENOMEM);
			goto fail;
		}
		if (run_threads(ce, walk_main, false) < 0)
			goto fail;
	}
	if (merge_items(ce, &top) < 0 || (find_hardlinks(ce) < 0 &&
					  fail_read(ce, "", ENOMEM) < 0))
		goto fail;
	if (ce->o.hash) {
		atomic_store(&ce->next, 0);
		if (run_threads(ce, hash_main, false) < 0)
			goto fail;
	}
	count_totals(ce);
	*ret = ce;
	return 0;
fail:
	report(ce, err, errlen);
	{
		int saved = errno;

		copyengine_destroy(ce);
		errno = saved;
	}
	return -1;
}

const struct copyengine_totals *copyengine_totals(const struct copyengine *ce)
{
	return &ce->t;
}

int copyengine_manifest(struct copyengine *ce, struct manifest **ret)
{
	struct manifest *m;

	if (!ce || !ret || ce->o.check_only) {
		errno = EINVAL;
		return -1;
	}
	sort_items(ce);
	m = manifest_create();
	if (!m)
		return -1;
	for (size_t i = 0; i < ce->n; i++) {
		struct manifest_entry e;

		item_entry(&ce->items[i], &e);
		if (manifest_add(m, &e) < 0) {
			int saved = errno;

			manifest_destroy(m);
			errno = saved;
			return -1;
		}
	}
	*ret = m;
	return 0;
}

/* --- copying data ---------------------------------------------------------------- */

/* LEN bytes at OFF from IN to OUT (same offset). copy_file_range first,
 * pread/pwrite when the kernel or the file systems cannot. */
static int copy_data(struct ce_local *l, const struct ce_item *it, int in,
		     int out, uint64_t off, uint64_t len)
{
	struct copyengine *ce = l->ce;
	bool cfr = !ce->o.no_copy_file_range &&
		   !atomic_load_explicit(&ce->cfr_off, memory_order_relaxed);

	while (len) {
		ssize_t n;
		size_t want, step;

		if (atomic_load_explicit(&ce->failed, memory_order_relaxed))
			return -1;
		/* Held to a rate (StageBandwidth=): small steps, each paid
		 * for before it is read. */
		step = ce->o.rate ? RATELIMIT_STEP : SIZE_MAX;
		if (ce->o.rate &&
		    ratelimit_take(&ce->rl, len < step ? len : step,
				   &ce->failed) < 0)
			return -1;
		if (cfr) {
			loff_t oi = (loff_t)off, oo = (loff_t)off;

			want = len < CE_CFR_STEP ? (size_t)len : CE_CFR_STEP;
			if (want > step)
				want = step;
			n = copy_file_range(in, &oi, out, &oo, want, 0);
			if (n > 0) {
				off += (uint64_t)n;
				len -= (uint64_t)n;
				atomic_fetch_add(&ce->bytes, (uint64_t)n);
				continue;
			}
			if (n < 0 && errno == EINTR)
				continue;
			if (n < 0 && (errno == EXDEV || errno == ENOSYS ||
				      errno == EOPNOTSUPP))
				atomic_store(&ce->cfr_off, true);
			else if (n < 0 && errno != EINVAL && errno != EBADF &&
				 errno != EPERM && errno != ETXTBSY)
				return is_write_errno(errno)
					       ? fail_write(ce, it->path, errno)
					       : fail_read(ce, it->path, errno);
			/* 0 (some file systems say that instead of an
			 * error) or a fallback errno: read/write, which
			 * also tells a real EOF apart. */
			cfr = false;
		}
		if (local_buf(ce, l, it->path) < 0)
			return -1;
		want = len < CE_BUF ? (size_t)len : CE_BUF;
		if (want > step)
			want = step;
		n = pread(in, l->buf, want, (off_t)off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return fail_read(ce, it->path, errno);
		if (n == 0)
			return fail_changed(ce, it->path);
		for (ssize_t done = 0; done < n;) {
			ssize_t w = pwrite(out, l->buf + done,
					   (size_t)(n - done),
					   (off_t)(off + (uint64_t)done));

			if (w < 0 && errno == EINTR)
				continue;
			if (w < 0)
				return fail_write(ce, it->path, errno);
			done += w;
		}
		off += (uint64_t)n;
		len -= (uint64_t)n;
		atomic_fetch_add(&ce->bytes, (uint64_t)n);
	}
	return 0;
}

/* Like copy_data for [OFF, END) but only the data regions: holes stay
 * holes (OUT already has the full size). Holes count as done bytes. */
static int copy_sparse(struct ce_local *l, const struct ce_item *it, int in,
		       int out, uint64_t off, uint64_t end)
{
	struct copyengine *ce = l->ce;
	uint64_t pos = off;

	while (pos < end) {
		off_t d = lseek(in, (off_t)pos, SEEK_DATA), h;

		if (d < 0 && errno == ENXIO)
			break;
		if (d < 0)
			return fail_read(ce, it->path, errno);
		if ((uint64_t)d >= end)
			break;
		h = lseek(in, d, SEEK_HOLE);
		if (h < 0)
			return fail_read(ce, it->path, errno);
		if ((uint64_t)h > end)
			h = (off_t)end;
		atomic_fetch_add(&ce->bytes, (uint64_t)d - pos);
		if (copy_data(l, it, in, out, (uint64_t)d,
			      (uint64_t)(h - d)) < 0)
			return -1;
		pos = (uint64_t)h;
	}
	atomic_fetch_add(&ce->bytes, end - pos);
	return 0;
}

static bool is_sparse(const struct ce_item *it)
{
	return it->blocks * 512 < it->size;
}

/* The mode a copied file ends with. */
static mode_t file_mode(const struct copyengine *ce, const struct ce_item *it)
{
	mode_t mode = it->mode & 07777;

	if (!it->path_len && ce->o.private_top)
		mode &= 0700;
	if (ce->o.read_only)
		mode &= ~(mode_t)0222;
	return mode;
}

/* Can IT be created with its final mode, saving an fchmod per file? Not
 * with setuid/setgid/sticky bits (writing clears some of them) or when the
 * umask would take bits away. The fd stays writable whatever the mode. */
static bool mode_at_create(const struct copyengine *ce,
			   const struct ce_item *it)
{
	mode_t mode = file_mode(ce, it);

	return !(mode & 07000) && !(mode & ce->umask);
}

static int dst_create(struct copyengine *ce, const struct ce_item *it)
{
	mode_t mode = mode_at_create(ce, it) ? file_mode(ce, it) : 0600;
	int fd;

	if (it->path_len)
		fd = open_beneath(ce->dst_root, it->path,
				  O_WRONLY | O_CREAT | O_EXCL, mode);
	else
		fd = openat(ce->dst_dirfd, ce->dst_name,
			    O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
			    mode);
	if (fd < 0)
		return fail_write(ce, it->path, errno);
	if (!it->path_len)
		atomic_store(&ce->top_made, true);
	return fd;
}

/* Mode and times of a finished file, then close it. */
static int finish_file(struct copyengine *ce, const struct ce_item *it,
		       int out)
{
	struct timespec times[2] = { ns_ts(it->atime_ns), ns_ts(it->mtime_ns) };

	if ((!mode_at_create(ce, it) && fchmod(out, file_mode(ce, it)) < 0) ||
	    futimens(out, times) < 0) {
		int e = errno;

		close(out);
		return fail_write(ce, it->path, e);
	}
	if (close(out) < 0)
		return fail_write(ce, it->path, errno);
	atomic_fetch_add(&ce->files, 1);
	return 0;
}

static int copy_whole(struct ce_local *l, const struct ce_item *it)
{
	struct copyengine *ce = l->ce;
	int in, out, r;

	in = src_open(ce, it);
	if (in < 0)
		return -1;
	out = dst_create(ce, it);
	if (out < 0) {
		close(in);
		return -1;
	}
	if (it->size >= CE_SEQ_MIN)
		posix_fadvise(in, 0, 0, POSIX_FADV_SEQUENTIAL);
	if (!it->size)
		r = 0;
	else if (is_sparse(it))
		r = ftruncate(out, (off_t)it->size) < 0
			    ? fail_write(ce, it->path, errno)
			    : copy_sparse(l, it, in, out, 0, it->size);
	else
		r = copy_data(l, it, in, out, 0, it->size);
	/* Changed while we copied? Small files are copied in a moment, and
	 * were checked when opened; a syscall per file is worth saving. */
	if (r == 0 && it->size >= CE_SEQ_MIN)
		r = src_recheck(ce, it, in);
	close(in);
	if (r < 0) {
		close(out);
		return -1;
	}
	return finish_file(ce, it, out);
}

static int copy_chunk(struct ce_local *l, const struct ce_item *it,
		      uint32_t chunk)
{
	struct copyengine *ce = l->ce;
	struct ce_big *b = &ce->big[it->big];
	uint64_t off = (uint64_t)chunk * CE_CHUNK;
	uint64_t end = off + CE_CHUNK < it->size ? off + CE_CHUNK : it->size;
	int in, r, out;

	pthread_mutex_lock(&b->mu);
	if (b->fd < 0 && !b->failed) {
		b->fd = dst_create(ce, it);
		if (b->fd >= 0 && ftruncate(b->fd, (off_t)it->size) < 0)
			fail_write(ce, it->path, errno);
		b->failed = b->fd < 0;
	}
	out = b->fd;
	pthread_mutex_unlock(&b->mu);
	if (out < 0)
		return -1;
	in = src_open(ce, it);
	if (in < 0)
		return -1;
	posix_fadvise(in, (off_t)off, (off_t)(end - off),
		      POSIX_FADV_SEQUENTIAL);
	if (is_sparse(it))
		r = copy_sparse(l, it, in, out, off, end);
	else
		r = copy_data(l, it, in, out, off, end - off);
	if (r == 0)
		r = src_recheck(ce, it, in);
	close(in);
	if (r < 0)
		return -1;
	if (atomic_fetch_sub(&b->left, 1) != 1)
		return 0;
	pthread_mutex_lock(&b->mu);
	b->fd = -1;
	pthread_mutex_unlock(&b->mu);
	return finish_file(ce, it, out);
}

/* Hard-link IT from the previous copy. 0, or -1 when it cannot be (then
 * it is copied instead): nothing is recorded as an error. */
static int link_previous(struct copyengine *ce, const struct ce_item *it)
{
	int r;

	if (!it->path_len) {
		r = linkat(AT_FDCWD, ce->o.previous_path, ce->dst_dirfd,
			   ce->dst_name, 0);
		if (r == 0)
			atomic_store(&ce->top_made, true);
	}
	else if (ce->prev_root >= 0)
		r = linkat(ce->prev_root, it->path, ce->dst_root, it->path, 0);
	else
		r = -1;
	if (r < 0)
		return -1;
	atomic_fetch_add(&ce->bytes, it->size);
	atomic_fetch_add(&ce->files, 1);
	atomic_fetch_add(&ce->linked, 1);
	return 0;
}

static int make_symlink(struct copyengine *ce, const struct ce_item *it)
{
	struct timespec times[2] = { ns_ts(it->atime_ns), ns_ts(it->mtime_ns) };
	char target[PATH_MAX];

	if (read_target(ce, it, target) < 0)
		return -1;
	if (symlinkat(target, ce->dst_root, it->path) < 0)
		return fail_write(ce, it->path, errno);
	/* Times on the link itself; a file system that refuses is not worth
	 * failing a copy for. */
	(void)utimensat(ce->dst_root, it->path, times, AT_SYMLINK_NOFOLLOW);
	return 0;
}

static void *copy_main(void *arg)
{
	struct ce_local *l = arg;
	struct copyengine *ce = l->ce;

	while (!atomic_load_explicit(&ce->failed, memory_order_relaxed)) {
		size_t i = atomic_fetch_add(&ce->next, 1);
		const struct ce_task *t;
		const struct ce_item *it;

		if (i >= ce->ntasks)
			break;
		t = &ce->tasks[i];
		it = &ce->items[t->item];
		switch (t->chunk) {
		case CE_T_SYMLINK:
			make_symlink(ce, it);
			break;
		case CE_T_LINK:
			if (link_previous(ce, it) == 0)
				break;
			/* fall through - copy what cannot be linked */
		case CE_T_WHOLE:
			copy_whole(l, it);
			break;
		default:
			copy_chunk(l, it, t->chunk);
		}
	}
	thread_done(ce);
	return NULL;
}

/* --- planning and finishing the copy ------------------------------------------------ */

static int cmp_task_inode(const void *a, const void *b, void *arg)
{
	const struct ce_item *items = arg;
	const struct ce_item *x = &items[((const struct ce_task *)a)->item];
	const struct ce_item *y = &items[((const struct ce_task *)b)->item];

	if (x->ino != y->ino)
		return x->ino < y->ino ? -1 : 1;
	return 0;
}

static int plan_tasks(struct copyengine *ce)
{
	size_t ntasks = 0, nbig = 0, k = 0, whole_start;
	bool linking = ce->o.previous_path != NULL;

	for (size_t i = 0; i < ce->n; i++) {
		struct ce_item *it = &ce->items[i];

		if (it->type == MANIFEST_SYMLINK) {
			ntasks++;
		} else if (it->type == MANIFEST_FILE &&
			   !(it->flags & CE_SECONDARY)) {
			if ((it->flags & CE_LINK) && linking) {
				ntasks++;
			} else if (it->size >= 2 * CE_CHUNK) {
				ntasks += (it->size + CE_CHUNK - 1) / CE_CHUNK;
				nbig++;
			} else {
				ntasks++;
			}
		}
	}
	ce->tasks = malloc((ntasks ? ntasks : 1) * sizeof(*ce->tasks));
	ce->big = calloc(nbig ? nbig : 1, sizeof(*ce->big));
	if (!ce->tasks || !ce->big)
		return -1;
	/* Chunks of large files first: the longest work starts early. */
	for (size_t i = 0; i < ce->n; i++) {
		struct ce_item *it = &ce->items[i];
		uint32_t chunks;

		if (it->type != MANIFEST_FILE || (it->flags & CE_SECONDARY) ||
		    ((it->flags & CE_LINK) && linking) ||
		    it->size < 2 * CE_CHUNK)
			continue;
		chunks = (uint32_t)((it->size + CE_CHUNK - 1) / CE_CHUNK);
		it->big = (uint32_t)ce->nbig;
		pthread_mutex_init(&ce->big[ce->nbig].mu, NULL);
		ce->big[ce->nbig].fd = -1;
		atomic_init(&ce->big[ce->nbig].left, chunks);
		ce->nbig++;
		for (uint32_t c = 0; c < chunks; c++)
			ce->tasks[k++] = (struct ce_task){ (uint32_t)i, c };
	}
	/* Then whole files, in inode order: near their order on disk. */
	whole_start = k;
	for (size_t i = 0; i < ce->n; i++) {
		struct ce_item *it = &ce->items[i];

		if (it->type == MANIFEST_FILE && !(it->flags & CE_SECONDARY) &&
		    !((it->flags & CE_LINK) && linking) &&
		    it->size < 2 * CE_CHUNK)
			ce->tasks[k++] = (struct ce_task){ (uint32_t)i,
							   CE_T_WHOLE };
	}
	qsort_r(ce->tasks + whole_start, k - whole_start, sizeof(*ce->tasks),
		cmp_task_inode, ce->items);
	/* Then what costs no data: links and symlinks. */
	for (size_t i = 0; i < ce->n; i++) {
		struct ce_item *it = &ce->items[i];

		if (it->type == MANIFEST_SYMLINK)
			ce->tasks[k++] = (struct ce_task){ (uint32_t)i,
							   CE_T_SYMLINK };
		else if (it->type == MANIFEST_FILE &&
			 !(it->flags & CE_SECONDARY) &&
			 (it->flags & CE_LINK) && linking)
			ce->tasks[k++] = (struct ce_task){ (uint32_t)i,
							   CE_T_LINK };
	}
	ce->ntasks = k;
	return 0;
}

/* Every directory below the top, parents first (path order). */
static int make_dirs(struct copyengine *ce)
{
	for (size_t i = 1; i < ce->n; i++) {
		const struct ce_item *it = &ce->items[i];

		if (it->type == MANIFEST_DIR &&
		    mkdirat(ce->dst_root, it->path, 0700) < 0)
			return fail_write(ce, it->path, errno);
	}
	return 0;
}

/* Second and later names of hard-linked inodes. */
static int make_hardlinks(struct copyengine *ce)
{
	for (size_t i = 0; i < ce->n; i++) {
		const struct ce_item *it = &ce->items[i];

		if (!(it->flags & CE_SECONDARY))
			continue;
		if (linkat(ce->dst_root, it->primary, ce->dst_root, it->path,
			   0) < 0)
			return fail_write(ce, it->path, errno);
		atomic_fetch_add(&ce->files, 1);
	}
	return 0;
}

/* Directory modes and times, deepest first (reverse path order puts every
 * "a/..." before "a"), the top last. */
static int finish_dirs(struct copyengine *ce)
{
	for (size_t i = ce->n; i-- > 0;) {
		const struct ce_item *it = &ce->items[i];
		struct timespec times[2] = { ns_ts(it->atime_ns),
					     ns_ts(it->mtime_ns) };
		mode_t mode = it->mode & 07777;

		if (it->type != MANIFEST_DIR)
			continue;
		if (!it->path_len) {
			if (ce->o.private_top)
				mode = 0700;
			if (ce->o.read_only)
				mode &= ~(mode_t)0222;
			if (fchmod(ce->dst_root, mode) < 0 ||
			    futimens(ce->dst_root, times) < 0)
				return fail_write(ce, "", errno);
			continue;
		}
		if (ce->o.read_only)
			mode &= ~(mode_t)0222;
		if (fchmodat(ce->dst_root, it->path, mode, 0) < 0 ||
		    utimensat(ce->dst_root, it->path, times,
			      AT_SYMLINK_NOFOLLOW) < 0)
			return fail_write(ce, it->path, errno);
	}
	return 0;
}

static void emit_notes(struct copyengine *ce)
{
	char buf[CE_NOTE_MAX], p[600];

	if (!ce->o.note)
		return;
	for (size_t i = 0; i < ce->nnotes; i++)
		ce->o.note(ce->notes[i], ce->o.arg);
	if (ce->t.specials > ce->nnotes) {
		msg_path(p, sizeof(p), ce->src, "");
		snprintf(buf, sizeof(buf),
			 "%s: %llu more special files skipped", p,
			 (unsigned long long)(ce->t.specials - ce->nnotes));
		ce->o.note(buf, ce->o.arg);
	}
}

int copyengine_copy(struct copyengine *ce, int dst_dirfd,
		    const char *dst_name, struct copyengine_result *ret,
		    char *err, size_t errlen)
{
	int r = -1;

	if (!ce || !dst_name || !*dst_name || strchr(dst_name, '/') ||
	    !strcmp(dst_name, ".") || !strcmp(dst_name, "..") ||
	    ce->copy_started || ce->o.check_only) {
		if (err && errlen)
			snprintf(err, errlen,
				 "cannot write '%s': not a single path component",
				 dst_name ? dst_name : "(null)");
		errno = EINVAL;
		return -1;
	}
	ce->copy_started = true;
	/* umask() can only be read by setting it: done before any thread
	 * of ours runs (the caller should not change it meanwhile). */
	ce->umask = umask(022);
	umask(ce->umask);
	ce->dst_dirfd = dst_dirfd;
	ce->dst_name = dst_name;
	snprintf(ce->dst_label, sizeof(ce->dst_label), "%s",
		 ce->o.dst_label ? ce->o.dst_label : dst_name);
	sort_items(ce);
	if (plan_tasks(ce) < 0) {
		fail_write(ce, "", ENOMEM);
		goto out;
	}
	if (ce->src_dir) {
		if (mkdirat(dst_dirfd, dst_name, 0700) < 0) {
			fail_write(ce, "", errno);
			goto out;
		}
		atomic_store(&ce->top_made, true);
		ce->dst_root = openat(dst_dirfd, dst_name,
				      O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
					      O_CLOEXEC);
		if (ce->dst_root < 0) {
			fail_write(ce, "", errno);
			goto out;
		}
		if (ce->o.previous_path)
			ce->prev_root = open(ce->o.previous_path,
					     O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (make_dirs(ce) < 0)
			goto out;
	}
	emit_notes(ce);
	atomic_store(&ce->next, 0);
	if (ce->ntasks && run_threads(ce, copy_main, true) < 0)
		goto out;
	if (ce->src_dir &&
	    (make_hardlinks(ce) < 0 || finish_dirs(ce) < 0))
		goto out;
	if (syncfs(ce->src_dir ? ce->dst_root : dst_dirfd) < 0) {
		fail_write(ce, "", errno);
		goto out;
	}
	if (ret) {
		ret->bytes = atomic_load(&ce->bytes);
		ret->files = atomic_load(&ce->files);
		ret->linked = atomic_load(&ce->linked);
	}
	r = 0;
out:
	for (size_t i = 0; i < ce->nbig; i++)
		if (ce->big[i].fd >= 0) {
			close(ce->big[i].fd);
			ce->big[i].fd = -1;
		}
	if (r < 0) {
		/* Nothing half-made stays behind. */
		if (atomic_load(&ce->top_made)) {
			char rmerr[256];

			if (ce->dst_root >= 0) {
				close(ce->dst_root);
				ce->dst_root = -1;
			}
			rmtree_at(dst_dirfd, dst_name, rmerr, sizeof(rmerr));
		}
		return report(ce, err, errlen);
	}
	return 0;
}

void copyengine_destroy(struct copyengine *ce)
{
	if (!ce)
		return;
	for (unsigned i = 0; i < ce->nthreads; i++) {
		struct ce_local *l = &ce->locals[i];

		free(l->v);
		arena_free(&l->arena);
		free(l->buf);
		if (l->xs)
			XXH3_freeState(l->xs);
	}
	for (size_t i = 0; i < ce->nbig; i++)
		pthread_mutex_destroy(&ce->big[i].mu);
	free(ce->locals);
	arena_free(&ce->arena);
	free(ce->items);
	free(ce->q);
	free(ce->tasks);
	free(ce->big);
	if (ce->src_root >= 0)
		close(ce->src_root);
	if (ce->dst_root >= 0)
		close(ce->dst_root);
	if (ce->prev_root >= 0)
		close(ce->prev_root);
	pthread_mutex_destroy(&ce->mu);
	pthread_cond_destroy(&ce->cv);
	free(ce);
}
