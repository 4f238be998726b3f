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
 *
 * The engine is split by concern: this file (its life, errors, threads,
 * what follows the walk, the interface), copyengine_walk.c (the walk and
 * hashing), copyengine_copy.c (the copy); copyengine_int.h is what they
 * share.
 */
#define _GNU_SOURCE
#include "common/fs/copyengine_int.h"

/* --- small helpers ---------------------------------------------------------- */

char *copyengine_arena_alloc(struct ce_arena *a, size_t len)
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

int64_t copyengine_ts_ns(int64_t sec, uint32_t nsec)
{
	return sec * 1000000000LL + (int64_t)nsec;
}

struct timespec copyengine_ns_ts(int64_t ns)
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
int copyengine_open_beneath(int root, const char *path, int flags, mode_t mode)
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
void copyengine_msg_path(char *buf, size_t len, const char *base,
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

/* opts.public_only: does entry REL (NAME in the directory DIRFD; NULL:
 * DIRFD itself) with mode MODE keep the tree public? -1 (failure
 * recorded, EACCES) when not. */
int copyengine_public_check(struct copyengine *ce, int dirfd, const char *name,
			    const char *rel, const struct statx *sx)
{
	mode_t mode = sx->stx_mode;
	char m[600];
	int acl;

	if (!ce->o.public_only)
		return 0;
	copyengine_msg_path(m, sizeof(m), ce->src, rel);
	if (!publictree_mode_ok(mode)) {
		copyengine_failf(
		    ce, EACCES,
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
		copyengine_failf(ce, EACCES, "cannot share %s: %s", m,
				 acl > 0
				     ? "it has an ACL, which may deny someone"
				     : strerror(errno));
		return -1;
	}
	return 0;
}

/* Record the first failure (later ones are consequences) and stop. */
void copyengine_failf(struct copyengine *ce, int errnum, const char *fmt, ...)
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

int copyengine_fail_read(struct copyengine *ce, const char *rel, int errnum)
{
	char p[600];

	copyengine_msg_path(p, sizeof(p), ce->src, rel);
	copyengine_failf(ce, errnum, "cannot read %s: %s", p, strerror(errnum));
	return -1;
}

int copyengine_fail_write(struct copyengine *ce, const char *rel, int errnum)
{
	char p[600];

	copyengine_msg_path(p, sizeof(p), ce->dst_label, rel);
	copyengine_failf(ce, errnum, "cannot write %s: %s", p,
			 strerror(errnum));
	return -1;
}

int copyengine_fail_changed(struct copyengine *ce, const char *rel)
{
	char p[600];

	copyengine_msg_path(p, sizeof(p), ce->src, rel);
	copyengine_failf(ce, EAGAIN,
			 "cannot read %s: changed while being staged", p);
	return -1;
}

/* Copy the engine's first error out to the caller. */
int copyengine_report(struct copyengine *ce, char *err, size_t errlen)
{
	if (err && errlen)
		snprintf(err, errlen, "%s", ce->err);
	errno = ce->err_no ? ce->err_no : EIO;
	return -1;
}

/* Which side a copy_file_range error belongs to. */
bool copyengine_is_write_errno(int e)
{
	return e == ENOSPC || e == EDQUOT || e == EFBIG || e == EROFS;
}

/* --- threads ------------------------------------------------------------------ */

/* Run FN on N threads (each with its own ce_local) and wait for them; while
 * waiting, call the progress callback when WITH_PROGRESS. Fewer threads
 * than asked is fine; none is an error. */
int copyengine_run_threads(struct copyengine *ce, void *(*fn)(void *),
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
		copyengine_failf(ce, EAGAIN, "cannot start threads: %s",
				 strerror(EAGAIN));
		return -1;
	}
	while (ce->running) {
		struct timespec dl;

		clock_gettime(CLOCK_REALTIME, &dl);
		dl.tv_nsec += (long)(ms % 1000) * 1000000L;
		dl.tv_sec += ms / 1000 + dl.tv_nsec / 1000000000L;
		dl.tv_nsec %= 1000000000L;
		if (pthread_cond_timedwait(&ce->cv, &ce->mu, &dl) ==
			ETIMEDOUT &&
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

void copyengine_thread_done(struct copyengine *ce)
{
	pthread_mutex_lock(&ce->mu);
	ce->running--;
	pthread_cond_broadcast(&ce->cv);
	pthread_mutex_unlock(&ce->mu);
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
		if (ce->items[i].type == MANIFEST_FILE &&
		    ce->items[i].nlink > 1)
			n++;
	if (n < 2)
		return 0;
	v = malloc(n * sizeof(*v));
	if (!v)
		return -1;
	n = 0;
	for (size_t i = 0; i < ce->n; i++)
		if (ce->items[i].type == MANIFEST_FILE &&
		    ce->items[i].nlink > 1)
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
			v[i]->primary =
			    ((const struct ce_item *)v[i]->primary)->path;
	free(v);
	return 0;
}

/* Forget what find_hardlinks found (before it runs again on a part). */
static void clear_hardlinks(struct copyengine *ce)
{
	for (size_t i = 0; i < ce->n; i++) {
		ce->items[i].flags &= (uint8_t)~CE_SECONDARY;
		ce->items[i].primary = NULL;
	}
}

/* --- a part of the dataset (opts.select, opts.select_budget) ------------ */

struct ce_sel {
	struct ce_item *it;
	double priority;
	size_t rank;  /* place in the budget's order */
	size_t first; /* rank of the first name of its inode in that order */
};

/* Budget order: higher priority first, then path order (the items are
 * sorted, so their addresses follow their paths). */
static int cmp_sel_priority(const void *a, const void *b)
{
	const struct ce_sel *x = a, *y = b;

	if (x->priority != y->priority)
		return x->priority > y->priority ? -1 : 1;
	return x->it < y->it ? -1 : x->it > y->it;
}

static int cmp_sel_inode(const void *a, const void *b)
{
	const struct ce_sel *x = *(struct ce_sel *const *)a;
	const struct ce_sel *y = *(struct ce_sel *const *)b;

	if (x->it->dev != y->it->dev)
		return x->it->dev < y->it->dev ? -1 : 1;
	if (x->it->ino != y->it->ino)
		return x->it->ino < y->it->ino ? -1 : 1;
	return x->rank < y->rank ? -1 : x->rank > y->rank;
}

/* Mark with CE_OUT the files of SEL (N, selected) that the budget leaves
 * out: taken in budget order until the next would go above it; a name
 * of an inode already taken is free, one of an inode left out is out. */
static int apply_budget(struct copyengine *ce, struct ce_sel *sel, size_t n)
{
	struct ce_sel **links;
	size_t nlinks = 0;
	uint64_t used = 0;
	bool full = false;

	qsort(sel, n, sizeof(*sel), cmp_sel_priority);
	for (size_t i = 0; i < n; i++) {
		sel[i].rank = sel[i].first = i;
		if (sel[i].it->nlink > 1)
			nlinks++;
	}
	if (nlinks > 1) {
		links = malloc(nlinks * sizeof(*links));
		if (!links)
			return -1;
		nlinks = 0;
		for (size_t i = 0; i < n; i++)
			if (sel[i].it->nlink > 1)
				links[nlinks++] = &sel[i];
		qsort(links, nlinks, sizeof(*links), cmp_sel_inode);
		for (size_t i = 1; i < nlinks; i++)
			if (links[i]->it->dev == links[i - 1]->it->dev &&
			    links[i]->it->ino == links[i - 1]->it->ino)
				links[i]->first = links[i - 1]->first;
		free(links);
	}
	for (size_t i = 0; i < n; i++) {
		struct ce_item *it = sel[i].it;

		if (sel[i].first != i) {
			/* Another name of an inode already decided. */
			if (sel[sel[i].first].it->flags & CE_OUT) {
				it->flags |= CE_OUT;
				ce->over_budget_files++;
			}
			continue;
		}
		if (!full && it->size <= ce->o.select_budget - used) {
			used += it->size;
			continue;
		}
		full = true;
		it->flags |= CE_OUT;
		ce->over_budget_files++;
		ce->over_budget_bytes += it->size;
	}
	return 0;
}

/* Split the walk into what the copy holds (ce->items) and the files
 * opts.select or its budget left out (ce->out), both in path order;
 * count the whole dataset first. Directories and symlinks stay. */
static int select_part(struct copyengine *ce)
{
	struct ce_sel *sel;
	size_t nfiles = 0, nsel = 0, k = 0;

	if (!ce->src_dir) {
		copyengine_failf(ce, EINVAL,
				 "cannot read %s: one file cannot be split "
				 "into parts",
				 ce->src);
		return -1;
	}
	copyengine_sort_items(ce);
	if (find_hardlinks(ce) < 0)
		return copyengine_fail_read(ce, "", ENOMEM);
	for (size_t i = 0; i < ce->n; i++) {
		const struct ce_item *it = &ce->items[i];

		if (it->type != MANIFEST_FILE)
			continue;
		nfiles++;
		if (!(it->flags & CE_SECONDARY))
			ce->dataset_bytes += it->size;
	}
	ce->dataset_files = nfiles;
	clear_hardlinks(ce);
	sel = malloc((nfiles ? nfiles : 1) * sizeof(*sel));
	if (!sel)
		return copyengine_fail_read(ce, "", ENOMEM);
	for (size_t i = 0; i < ce->n; i++) {
		struct ce_item *it = &ce->items[i];
		double priority = 0;

		if (it->type != MANIFEST_FILE)
			continue;
		if (ce->o.select &&
		    !ce->o.select(it->path, it->path_len, it->size, &priority,
				  ce->o.select_arg)) {
			it->flags |= CE_OUT;
			continue;
		}
		if (priority != priority) /* NaN: would break the sort */
			priority = -DBL_MAX;
		sel[nsel++] = (struct ce_sel){ .it = it, .priority = priority };
	}
	if (ce->o.select_budget && apply_budget(ce, sel, nsel) < 0) {
		free(sel);
		return copyengine_fail_read(ce, "", ENOMEM);
	}
	free(sel);
	for (size_t i = 0; i < ce->n; i++)
		if (ce->items[i].flags & CE_OUT)
			ce->nout++;
	ce->out = malloc((ce->nout ? ce->nout : 1) * sizeof(*ce->out));
	if (!ce->out)
		return copyengine_fail_read(ce, "", ENOMEM);
	ce->nout = 0;
	for (size_t i = 0; i < ce->n; i++) {
		if (ce->items[i].flags & CE_OUT)
			ce->out[ce->nout++] = ce->items[i];
		else
			ce->items[k++] = ce->items[i];
	}
	ce->n = k;
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
void copyengine_account(const struct copyengine *ce, struct ce_item *it,
			struct ce_acc *a)
{
	const struct manifest *prev = ce->o.previous;
	struct copyengine_totals *t = &a->t;

	if (prev) {
		const struct manifest_entry *old = manifest_find(prev, it->path,
								 it->path_len);
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
		copyengine_account(ce, &ce->items[i], &a);
	ce->t = a.t;
	ce->t.specials = specials;
	if (ce->o.select || ce->o.select_budget) {
		ce->t.dataset_bytes = ce->dataset_bytes;
		ce->t.dataset_files = ce->dataset_files;
		ce->t.over_budget_files = ce->over_budget_files;
		ce->t.over_budget_bytes = ce->over_budget_bytes;
	} else {
		ce->t.dataset_bytes = ce->t.total_bytes;
		ce->t.dataset_files = ce->t.total_files;
	}
	if (ce->o.previous) {
		ce->t.diff.removed = manifest_count(ce->o.previous) - a.matched;
		ce->t.unchanged = !ce->t.diff.added && !ce->t.diff.removed &&
				  !ce->t.diff.changed;
	}
}

int copyengine_sort_items(struct copyengine *ce)
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
		return copyengine_fail_read(ce, "", errno);
	if (!S_ISREG(before.st_mode) && !S_ISDIR(before.st_mode)) {
		copyengine_failf(
		    ce, EINVAL,
		    "cannot read %s: not a regular file or directory", ce->src);
		return -1;
	}
	/* Before opening: say why a private top is not shared rather than
	 * "Permission denied". */
	if (ce->o.public_only && !publictree_mode_ok(before.st_mode)) {
		copyengine_failf(
		    ce, EACCES,
		    "cannot share %s: mode %04o is not readable by "
		    "everyone",
		    ce->src, (unsigned)(before.st_mode & 07777));
		return -1;
	}
	fd = open(ce->src, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC |
			       (S_ISDIR(before.st_mode) ? O_DIRECTORY : 0));
	if (fd < 0)
		return copyengine_fail_read(ce, "", errno);
	if (statx(fd, "", AT_EMPTY_PATH, STATX_BASIC_STATS, &sx) < 0) {
		int e = errno;

		close(fd);
		return copyengine_fail_read(ce, "", e);
	}
	if ((sx.stx_mode & S_IFMT) != (before.st_mode & S_IFMT)) {
		close(fd);
		return copyengine_fail_changed(ce, "");
	}
	ce->top_dev = makedev(sx.stx_dev_major, sx.stx_dev_minor);
	if (copyengine_public_check(ce, fd, NULL, "", &sx) < 0) {
		close(fd);
		return -1;
	}
	ce->src_root = fd;
	ce->src_dir = S_ISDIR(sx.stx_mode);
	it->path = copyengine_arena_alloc(&ce->arena, 1);
	if (!it->path)
		return copyengine_fail_read(ce, "", ENOMEM);
	it->path[0] = '\0';
	copyengine_item_stat(it, &sx);
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
	ce->nthreads = ce->o.threads ? ce->o.threads
		       : statfs(src, &sfs) == 0
			   ? copyengine_default_threads((long)sfs.f_type)
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
	ce->lean = ce->o.check_only && !ce->o.keep_listing && !ce->o.select &&
		   !ce->o.select_budget;
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
		return copyengine_fail_read(ce, "", ENOMEM);
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
		struct ce_dirjob root = { .path = top.path,
					  .len = 0,
					  .depth = 0 };

		if (copyengine_push_jobs(ce, &root, 1) < 0) {
			copyengine_fail_read(ce, "", ENOMEM);
			goto fail;
		}
		if (copyengine_run_threads(ce, copyengine_walk_main, false) < 0)
			goto fail;
	}
	if (merge_items(ce, &top) < 0 ||
	    ((ce->o.select || ce->o.select_budget) && select_part(ce) < 0) ||
	    (find_hardlinks(ce) < 0 &&
	     copyengine_fail_read(ce, "", ENOMEM) < 0))
		goto fail;
	if (ce->o.hash) {
		atomic_store(&ce->next, 0);
		if (copyengine_run_threads(ce, copyengine_hash_main, false) < 0)
			goto fail;
	}
	count_totals(ce);
	*ret = ce;
	return 0;
fail:
	copyengine_report(ce, err, errlen);
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
	copyengine_sort_items(ce);
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

/* The next entry of the listing: the kept items and the left-out files
 * merged in path order. */
static const struct ce_item *listing_next(const struct copyengine *ce,
					  size_t *i, size_t *j)
{
	if (*i < ce->n && (*j >= ce->nout ||
			   strcmp(ce->items[*i].path, ce->out[*j].path) < 0))
		return &ce->items[(*i)++];
	if (*j < ce->nout)
		return &ce->out[(*j)++];
	return NULL;
}

int copyengine_listing(struct copyengine *ce, struct manifest **ret)
{
	const struct ce_item *it;
	struct manifest *m;
	size_t i = 0, j = 0;

	if (!ce || !ret || ce->lean) {
		errno = EINVAL;
		return -1;
	}
	copyengine_sort_items(ce);
	m = manifest_create();
	if (!m)
		return -1;
	while ((it = listing_next(ce, &i, &j))) {
		struct manifest_entry e;

		item_entry(it, &e);
		e.has_hash = 0;
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
	free(ce->out);
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
