/* copyengine_copy.c - the copy engine's copy: data (whole files, chunks
 * of large ones, sparse files), the task plan shared out to the threads,
 * directories, links and the finish; the design is explained at the top of
 * copyengine.c. */
#define _GNU_SOURCE
#include "common/fs/copyengine_int.h"

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
				return copyengine_is_write_errno(errno)
					   ? copyengine_fail_write(ce, it->path,
								   errno)
					   : copyengine_fail_read(ce, it->path,
								  errno);
			/* 0 (some file systems say that instead of an
			 * error) or a fallback errno: read/write, which
			 * also tells a real EOF apart. */
			cfr = false;
		}
		if (copyengine_local_buf(ce, l, it->path) < 0)
			return -1;
		want = len < CE_BUF ? (size_t)len : CE_BUF;
		if (want > step)
			want = step;
		n = pread(in, l->buf, want, (off_t)off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return copyengine_fail_read(ce, it->path, errno);
		if (n == 0)
			return copyengine_fail_changed(ce, it->path);
		for (ssize_t done = 0; done < n;) {
			ssize_t w = pwrite(out, l->buf + done,
					   (size_t)(n - done),
					   (off_t)(off + (uint64_t)done));

			if (w < 0 && errno == EINTR)
				continue;
			if (w < 0)
				return copyengine_fail_write(ce, it->path,
							     errno);
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
			return copyengine_fail_read(ce, it->path, errno);
		if ((uint64_t)d >= end)
			break;
		h = lseek(in, d, SEEK_HOLE);
		if (h < 0)
			return copyengine_fail_read(ce, it->path, errno);
		if ((uint64_t)h > end)
			h = (off_t)end;
		atomic_fetch_add(&ce->bytes, (uint64_t)d - pos);
		if (copy_data(l, it, in, out, (uint64_t)d, (uint64_t)(h - d)) <
		    0)
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
		fd = copyengine_open_beneath(ce->dst_root, it->path,
					     O_WRONLY | O_CREAT | O_EXCL, mode);
	else
		fd = openat(ce->dst_dirfd, ce->dst_name,
			    O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW |
				O_CLOEXEC,
			    mode);
	if (fd < 0)
		return copyengine_fail_write(ce, it->path, errno);
	if (!it->path_len)
		atomic_store(&ce->top_made, true);
	return fd;
}

/* Mode and times of a finished file, then close it. */
static int finish_file(struct copyengine *ce, const struct ce_item *it, int out)
{
	struct timespec times[2] = { copyengine_ns_ts(it->atime_ns),
				     copyengine_ns_ts(it->mtime_ns) };

	if ((!mode_at_create(ce, it) && fchmod(out, file_mode(ce, it)) < 0) ||
	    futimens(out, times) < 0) {
		int e = errno;

		close(out);
		return copyengine_fail_write(ce, it->path, e);
	}
	if (close(out) < 0)
		return copyengine_fail_write(ce, it->path, errno);
	atomic_fetch_add(&ce->files, 1);
	return 0;
}

static int copy_whole(struct ce_local *l, const struct ce_item *it)
{
	struct copyengine *ce = l->ce;
	int in, out, r;

	in = copyengine_src_open(ce, it);
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
			? copyengine_fail_write(ce, it->path, errno)
			: copy_sparse(l, it, in, out, 0, it->size);
	else
		r = copy_data(l, it, in, out, 0, it->size);
	/* Changed while we copied? Small files are copied in a moment, and
	 * were checked when opened; a syscall per file is worth saving. */
	if (r == 0 && it->size >= CE_SEQ_MIN)
		r = copyengine_src_recheck(ce, it, in);
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
			copyengine_fail_write(ce, it->path, errno);
		b->failed = b->fd < 0;
	}
	out = b->fd;
	pthread_mutex_unlock(&b->mu);
	if (out < 0)
		return -1;
	in = copyengine_src_open(ce, it);
	if (in < 0)
		return -1;
	posix_fadvise(in, (off_t)off, (off_t)(end - off),
		      POSIX_FADV_SEQUENTIAL);
	if (is_sparse(it))
		r = copy_sparse(l, it, in, out, off, end);
	else
		r = copy_data(l, it, in, out, off, end - off);
	if (r == 0)
		r = copyengine_src_recheck(ce, it, in);
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
	} else if (ce->prev_root >= 0)
		r = linkat(ce->prev_root, it->path, ce->dst_root, it->path, 0);
	else
		r = -1;
	if (r < 0)
		return -1;
	atomic_fetch_add(&ce->bytes, it->size);
	atomic_fetch_add(&ce->files, 1);
	atomic_fetch_add(&ce->linked, 1);
	atomic_fetch_add(&ce->linked_bytes, it->size);
	return 0;
}

/* Remove IT's partial file from the copy: -1 (then it is fetched or
 * copied from the source), or 1 when even that failed (recorded). */
static int drop_partial(struct copyengine *ce, const struct ce_item *it,
			int out)
{
	close(out);
	if ((it->path_len ? unlinkat(ce->dst_root, it->path, 0)
			  : unlinkat(ce->dst_dirfd, ce->dst_name, 0)) < 0) {
		copyengine_fail_write(ce, it->path, errno);
		return 1;
	}
	return -1;
}

/* Copy IT from the previous copy, on this node's own disk, where it
 * cannot be linked: a public entry's files are root's, and
 * fs.protected_hardlinks keeps PublicUser from linking them. 0; -1 when
 * the previous copy has no such file of IT's size, or the copy failed
 * (the partial file removed: it is then fetched or read from SRC); 1
 * when the copy's error is recorded. */
static int copy_previous(struct ce_local *l, const struct ce_item *it)
{
	struct copyengine *ce = l->ce;
	uint64_t off = 0;
	struct stat st;
	int in, out;

	if (ce->prev_root < 0 || !it->path_len)
		return -1;
	in = copyengine_open_beneath(ce->prev_root, it->path,
				     O_RDONLY | O_NONBLOCK, 0);
	if (in < 0)
		return -1;
	if (fstat(in, &st) < 0 || !S_ISREG(st.st_mode) ||
	    (uint64_t)st.st_size != it->size) {
		close(in);
		return -1;
	}
	out = dst_create(ce, it);
	if (out < 0) {
		close(in);
		return 1;
	}
	/* in the kernel where it can; a buffer where it cannot */
	while (off < it->size) {
		ssize_t n = copy_file_range(in, NULL, out, NULL,
					    (size_t)(it->size - off), 0);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		off += (uint64_t)n;
	}
	while (off < it->size && copyengine_local_buf(ce, l, it->path) == 0) {
		size_t want = it->size - off < CE_BUF ? (size_t)(it->size - off)
						      : CE_BUF;
		ssize_t n = pread(in, l->buf, want, (off_t)off), w = 0;

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		while (w < n) {
			ssize_t k = pwrite(out, l->buf + w, (size_t)(n - w),
					   (off_t)(off + (uint64_t)w));

			if (k < 0 && errno == EINTR)
				continue;
			if (k <= 0)
				break;
			w += k;
		}
		if (w < n)
			break;
		off += (uint64_t)n;
	}
	close(in);
	if (off < it->size)
		return drop_partial(ce, it, out);
	if (finish_file(ce, it, out) < 0)
		return 1;
	atomic_fetch_add(&ce->bytes, it->size);
	atomic_fetch_add(&ce->copied_previous, 1);
	atomic_fetch_add(&ce->copied_previous_bytes, it->size);
	return 0;
}

/* Fetch IT through o.fetch (another node's copy). 0, or -1 when it
 * cannot be (the partial file removed; then it is copied from the
 * source). A write error on our side fails the copy as any would. */
static int fetch_previous(struct copyengine *ce, const struct ce_item *it)
{
	int out = dst_create(ce, it);

	if (out < 0)
		return 1; /* failed: the copy's error is recorded */
	if (ce->o.fetch(it->path_len ? it->path : "", out, it->size,
			ce->o.fetch_arg) == 0) {
		if (finish_file(ce, it, out) < 0)
			return 1;
		atomic_fetch_add(&ce->bytes, it->size);
		atomic_fetch_add(&ce->fetched, 1);
		atomic_fetch_add(&ce->fetched_bytes, it->size);
		return 0;
	}
	close(out);
	if ((it->path_len ? unlinkat(ce->dst_root, it->path, 0)
			  : unlinkat(ce->dst_dirfd, ce->dst_name, 0)) < 0) {
		copyengine_fail_write(ce, it->path, errno);
		return 1;
	}
	atomic_fetch_add(&ce->fetch_fallbacks, 1);
	return -1;
}

static int make_symlink(struct copyengine *ce, const struct ce_item *it)
{
	struct timespec times[2] = { copyengine_ns_ts(it->atime_ns),
				     copyengine_ns_ts(it->mtime_ns) };
	char target[PATH_MAX];

	if (copyengine_read_target(ce, it, target) < 0)
		return -1;
	if (symlinkat(target, ce->dst_root, it->path) < 0)
		return copyengine_fail_write(ce, it->path, errno);
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
			/* Linked where the previous copy has it, else
			 * fetched (the previous manifest may list other
			 * nodes' files: a fill by parts), else copied. */
			if (ce->o.previous_path && link_previous(ce, it) == 0)
				break;
			if (ce->o.previous_path && ce->o.fetch &&
			    copy_previous(l, it) >= 0)
				break;
			if (ce->o.fetch && fetch_previous(ce, it) >= 0)
				break;
			/* fall through - copy what cannot be linked */
		case CE_T_WHOLE:
			copy_whole(l, it);
			break;
		default:
			copy_chunk(l, it, t->chunk);
		}
	}
	copyengine_thread_done(ce);
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
	bool linking = ce->o.previous_path != NULL || ce->o.fetch != NULL;

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
			 !(it->flags & CE_SECONDARY) && (it->flags & CE_LINK) &&
			 linking)
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
			return copyengine_fail_write(ce, it->path, errno);
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
			return copyengine_fail_write(ce, it->path, errno);
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
		struct timespec times[2] = { copyengine_ns_ts(it->atime_ns),
					     copyengine_ns_ts(it->mtime_ns) };
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
				return copyengine_fail_write(ce, "", errno);
			continue;
		}
		if (ce->o.read_only)
			mode &= ~(mode_t)0222;
		if (fchmodat(ce->dst_root, it->path, mode, 0) < 0 ||
		    utimensat(ce->dst_root, it->path, times,
			      AT_SYMLINK_NOFOLLOW) < 0)
			return copyengine_fail_write(ce, it->path, errno);
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
		copyengine_msg_path(p, sizeof(p), ce->src, "");
		snprintf(buf, sizeof(buf),
			 "%s: %llu more special files skipped", p,
			 (unsigned long long)(ce->t.specials - ce->nnotes));
		ce->o.note(buf, ce->o.arg);
	}
}

int copyengine_copy(struct copyengine *ce, int dst_dirfd, const char *dst_name,
		    struct copyengine_result *ret, char *err, size_t errlen)
{
	int r = -1;

	if (!ce || !dst_name || !*dst_name || strchr(dst_name, '/') ||
	    !strcmp(dst_name, ".") || !strcmp(dst_name, "..") ||
	    ce->copy_started || ce->o.check_only) {
		if (err && errlen)
			snprintf(
			    err, errlen,
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
	copyengine_sort_items(ce);
	if (plan_tasks(ce) < 0) {
		copyengine_fail_write(ce, "", ENOMEM);
		goto out;
	}
	if (ce->src_dir) {
		if (mkdirat(dst_dirfd, dst_name, 0700) < 0) {
			copyengine_fail_write(ce, "", errno);
			goto out;
		}
		atomic_store(&ce->top_made, true);
		ce->dst_root = openat(dst_dirfd, dst_name,
				      O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
					  O_CLOEXEC);
		if (ce->dst_root < 0) {
			copyengine_fail_write(ce, "", errno);
			goto out;
		}
		if (ce->o.previous_path)
			ce->prev_root = open(ce->o.previous_path,
					     O_RDONLY | O_DIRECTORY |
						 O_CLOEXEC);
		if (make_dirs(ce) < 0)
			goto out;
	}
	emit_notes(ce);
	atomic_store(&ce->next, 0);
	if (ce->ntasks && copyengine_run_threads(ce, copy_main, true) < 0)
		goto out;
	if (ce->src_dir && (make_hardlinks(ce) < 0 || finish_dirs(ce) < 0))
		goto out;
	if (syncfs(ce->src_dir ? ce->dst_root : dst_dirfd) < 0) {
		copyengine_fail_write(ce, "", errno);
		goto out;
	}
	if (ret) {
		ret->bytes = atomic_load(&ce->bytes);
		ret->files = atomic_load(&ce->files);
		ret->linked = atomic_load(&ce->linked);
		ret->linked_bytes = atomic_load(&ce->linked_bytes);
		ret->copied_previous = atomic_load(&ce->copied_previous);
		ret->copied_previous_bytes = atomic_load(
		    &ce->copied_previous_bytes);
		ret->fetched = atomic_load(&ce->fetched);
		ret->fetched_bytes = atomic_load(&ce->fetched_bytes);
		ret->fetch_fallbacks = atomic_load(&ce->fetch_fallbacks);
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
		return copyengine_report(ce, err, errlen);
	}
	return 0;
}
