/* copytree.c - the tree copier behind dataset staging.
 *
 * The walk is fd-relative on both sides: a source directory is opened with
 * O_NOFOLLOW relative to its parent's fd, and every destination entry is
 * created with mkdirat/openat(O_CREAT|O_EXCL|O_NOFOLLOW)/symlinkat relative
 * to the destination directory's fd. Nothing is resolved through a path that
 * another process could re-point while we work.
 *
 * Per entry the type comes from fstatat(AT_SYMLINK_NOFOLLOW); a regular file
 * is then opened with O_NOFOLLOW|O_NONBLOCK (so a file swapped for a fifo
 * cannot block us) and checked again with fstat on the open fd.
 *
 * Directory modes and times are applied after the directory's contents are
 * complete: a read-only source directory still gets filled, and writing the
 * entries does not disturb the copied mtime.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/copytree.h"

/* Source paths in messages: SRC (at most PATH_MAX) plus the relative part. */
#define CT_MSG_MAX (PATH_MAX + COPYTREE_PATH_MAX + 2)

struct ct {
	const struct copytree_opts *opts;
	struct copytree_stats st;
	bool measure;           /* walk and count only */
	char src[CT_MSG_MAX];   /* current source path, for messages */
	size_t srclen;
	char dst[CT_MSG_MAX];   /* current destination path, for messages */
	size_t dstlen;
	size_t rellen;          /* bytes of the relative part */
	char *buf;              /* read/write fallback, allocated on demand */
	char *err;
	size_t errlen;
};

static int copy_dir(struct ct *c, int sfd, int dfd, int depth);

/* --- messages --------------------------------------------------------- */

/* PATH for a message: a very long one keeps its head and tail, so the
 * reason after it still fits in the caller's buffer. */
static const char *shorten(const char *path, char *buf, size_t len)
{
	size_t n = strlen(path);

	if (n <= 300)
		return path;
	snprintf(buf, len, "%.100s...%s", path, path + n - 180);
	return buf;
}

static int fail_side(struct ct *c, const char *what, const char *path)
{
	int saved = errno;
	char buf[320];

	if (c->err && c->errlen)
		snprintf(c->err, c->errlen, "cannot %s %s: %s", what,
			 shorten(path, buf, sizeof(buf)), strerror(saved));
	errno = saved;
	return -1;
}

static int fail_read(struct ct *c)
{
	return fail_side(c, "read", c->src);
}

static int fail_write(struct ct *c)
{
	return fail_side(c, "write", c->dst);
}

/* Which side a copy_file_range error belongs to. */
static bool is_write_errno(int e)
{
	return e == ENOSPC || e == EDQUOT || e == EFBIG || e == EROFS;
}

/* --- path bookkeeping for messages -------------------------------------- */

struct ct_mark {
	size_t srclen, dstlen, rellen;
};

static int path_push(struct ct *c, const char *name, struct ct_mark *m)
{
	size_t n = strlen(name);

	m->srclen = c->srclen;
	m->dstlen = c->dstlen;
	m->rellen = c->rellen;
	if (c->rellen + n + 1 > COPYTREE_PATH_MAX ||
	    c->srclen + n + 2 > sizeof(c->src) ||
	    c->dstlen + n + 2 > sizeof(c->dst)) {
		errno = ENAMETOOLONG;
		return fail_read(c);
	}
	c->src[c->srclen++] = '/';
	memcpy(c->src + c->srclen, name, n + 1);
	c->srclen += n;
	c->dst[c->dstlen++] = '/';
	memcpy(c->dst + c->dstlen, name, n + 1);
	c->dstlen += n;
	c->rellen += n + 1;
	return 0;
}

static void path_pop(struct ct *c, const struct ct_mark *m)
{
	c->srclen = m->srclen;
	c->src[c->srclen] = '\0';
	c->dstlen = m->dstlen;
	c->dst[c->dstlen] = '\0';
	c->rellen = m->rellen;
}

static void progress(struct ct *c)
{
	if (c->opts && c->opts->progress)
		c->opts->progress(&c->st, c->opts->arg);
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

/* --- regular files -------------------------------------------------------- */

/* read/write from the current offsets to EOF. */
static int copy_rw(struct ct *c, int in, int out)
{
	if (!c->buf) {
		c->buf = malloc(COPYTREE_BUF_SIZE);
		if (!c->buf)
			return fail_read(c);
	}
	for (;;) {
		ssize_t n = read(in, c->buf, COPYTREE_BUF_SIZE);
		ssize_t off = 0;

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return fail_read(c);
		}
		if (n == 0)
			return 0;
		while (off < n) {
			ssize_t w = write(out, c->buf + off, (size_t)(n - off));

			if (w < 0) {
				if (errno == EINTR)
					continue;
				return fail_write(c);
			}
			off += w;
		}
		c->st.bytes += (uint64_t)n;
		progress(c);
	}
}

/* copy_file_range to EOF; falls back to read/write where the kernel or the
 * file systems cannot do it (EXDEV, EINVAL, ENOSYS, EOPNOTSUPP...). A zero
 * return before the size fstat reported is also double-checked with read(),
 * since some file systems answer 0 rather than an error. */
static int copy_data(struct ct *c, int in, int out, off_t size)
{
	off_t done = 0;

	for (;;) {
		ssize_t n = copy_file_range(in, NULL, out, NULL,
					    COPYTREE_BUF_SIZE, 0);

		if (n > 0) {
			done += n;
			c->st.bytes += (uint64_t)n;
			progress(c);
			continue;
		}
		if (n == 0 && done >= size)
			return 0;
		if (n == 0)
			return copy_rw(c, in, out);
		if (errno == EINTR)
			continue;
		if (errno == EXDEV || errno == EINVAL || errno == ENOSYS ||
		    errno == EOPNOTSUPP || errno == EBADF || errno == EPERM ||
		    errno == ETXTBSY)
			return copy_rw(c, in, out);
		if (is_write_errno(errno))
			return fail_write(c);
		return fail_read(c);
	}
}

/* Copy the open regular file IN (whose stat is ST) to NAME under DFD. */
static int copy_file(struct ct *c, int in, const struct stat *st, int dfd,
		     const char *name)
{
	struct timespec times[2] = { st->st_atim, st->st_mtim };
	int out, r = -1;

	out = openat(dfd, name,
		     O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (out < 0)
		return fail_write(c);
	if (copy_data(c, in, out, st->st_size) < 0)
		goto out;
	if (fchmod(out, st->st_mode & 07777) < 0 ||
	    futimens(out, times) < 0 || fsync(out) < 0) {
		fail_write(c);
		goto out;
	}
	r = 0;
out:
	if (close(out) < 0 && r == 0)
		r = fail_write(c);
	if (r == 0) {
		c->st.files++;
		progress(c);
	}
	return r;
}

/* Open a regular file NAME under SFD for reading; *st gets its fstat. */
static int open_regular(struct ct *c, int sfd, const char *name,
			struct stat *st)
{
	int fd = openat(sfd, name,
			O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);

	if (fd < 0)
		return fail_read(c);
	if (fstat(fd, st) < 0) {
		fail_read(c);
		close(fd);
		return -1;
	}
	if (!S_ISREG(st->st_mode)) {
		close(fd);
		errno = EAGAIN;  /* changed type under us */
		return fail_read(c);
	}
	return fd;
}

/* --- directories and entries ------------------------------------------ */

/* Apply ST's mode and times to the finished destination directory DFD. */
static int finish_dir(struct ct *c, int dfd, const struct stat *st)
{
	struct timespec times[2] = { st->st_atim, st->st_mtim };

	if (fchmod(dfd, st->st_mode & 07777) < 0 || futimens(dfd, times) < 0 ||
	    fsync(dfd) < 0)
		return fail_write(c);
	return 0;
}

/* Copy the source directory SUB (open, stat ST) to NAME under DFD; DFD < 0
 * in measure mode. */
static int copy_subdir(struct ct *c, int sub, const struct stat *st, int dfd,
		       const char *name, int depth)
{
	int out, r = -1;

	c->st.dirs++;
	if (c->measure)
		return copy_dir(c, sub, -1, depth);
	if (mkdirat(dfd, name, 0700) < 0)
		return fail_write(c);
	out = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (out < 0)
		return fail_write(c);
	if (copy_dir(c, sub, out, depth) == 0 && finish_dir(c, out, st) == 0)
		r = 0;
	close(out);
	return r;
}

static int copy_symlink(struct ct *c, int sfd, const char *name,
			const struct stat *st, int dfd)
{
	struct timespec times[2] = { st->st_atim, st->st_mtim };
	char target[PATH_MAX];
	ssize_t n;

	n = readlinkat(sfd, name, target, sizeof(target));
	if (n < 0)
		return fail_read(c);
	if ((size_t)n >= sizeof(target)) {
		errno = ENAMETOOLONG;
		return fail_read(c);
	}
	target[n] = '\0';
	if (!c->measure) {
		if (symlinkat(target, dfd, name) < 0)
			return fail_write(c);
		/* Times on the link itself; some file systems refuse, which
		 * is not worth failing a copy for. */
		(void)utimensat(dfd, name, times, AT_SYMLINK_NOFOLLOW);
	}
	c->st.symlinks++;
	progress(c);
	return 0;
}

static int copy_entry(struct ct *c, int sfd, int dfd, const char *name,
		      int depth)
{
	struct ct_mark mark;
	struct stat st;
	int fd, r = -1;

	if (path_push(c, name, &mark) < 0)
		return -1;
	if (fstatat(sfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
		fail_read(c);
		goto out;
	}
	if (S_ISREG(st.st_mode)) {
		if (c->measure) {
			c->st.files++;
			c->st.bytes += (uint64_t)st.st_size;
			r = 0;
			goto out;
		}
		fd = open_regular(c, sfd, name, &st);
		if (fd < 0)
			goto out;
		r = copy_file(c, fd, &st, dfd, name);
		close(fd);
	} else if (S_ISDIR(st.st_mode)) {
		if (depth + 1 > COPYTREE_MAX_DEPTH) {
			char buf[320];

			errno = ELOOP;
			if (c->err && c->errlen)
				snprintf(c->err, c->errlen,
					 "cannot read %s: directory tree deeper "
					 "than %d levels",
					 shorten(c->src, buf, sizeof(buf)),
					 COPYTREE_MAX_DEPTH);
			goto out;
		}
		fd = openat(sfd, name,
			    O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (fd < 0) {
			fail_read(c);
			goto out;
		}
		r = copy_subdir(c, fd, &st, dfd, name, depth + 1);
		close(fd);
	} else if (S_ISLNK(st.st_mode)) {
		r = copy_symlink(c, sfd, name, &st, dfd);
	} else {
		c->st.skipped++;
		if (!c->measure && c->opts && c->opts->note)
			c->opts->note(c->src, special_name(st.st_mode),
				      c->opts->arg);
		r = 0;
	}
out:
	path_pop(c, &mark);
	return r;
}

/* Copy every entry of the open source directory SFD into DFD. */
static int copy_dir(struct ct *c, int sfd, int dfd, int depth)
{
	struct dirent *de;
	DIR *dir;
	int dupfd, r = -1;

	dupfd = fcntl(sfd, F_DUPFD_CLOEXEC, 0);
	if (dupfd < 0)
		return fail_read(c);
	dir = fdopendir(dupfd);
	if (!dir) {
		fail_read(c);
		close(dupfd);
		return -1;
	}
	for (;;) {
		errno = 0;
		de = readdir(dir);
		if (!de)
			break;
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if (copy_entry(c, sfd, dfd, de->d_name, depth) < 0)
			goto out;
	}
	if (errno) {
		fail_read(c);
		goto out;
	}
	r = 0;
out:
	closedir(dir);
	return r;
}

/* --- entry points ------------------------------------------------------------ */

static int ct_init(struct ct *c, const char *src, const char *label,
		   char *err, size_t errlen)
{
	memset(c, 0, sizeof(*c));
	c->err = err;
	c->errlen = errlen;
	if (!src || src[0] != '/' || strlen(src) >= PATH_MAX) {
		errno = EINVAL;
		if (err && errlen)
			snprintf(err, errlen, "cannot read %s: not an absolute path",
				 src ? src : "(null)");
		return -1;
	}
	c->srclen = strlen(src);
	memcpy(c->src, src, c->srclen + 1);
	/* "/" alone: children become "//x" otherwise. */
	if (c->srclen == 1)
		c->srclen = 0;
	if (label) {
		c->dstlen = strnlen(label, PATH_MAX - 1);
		memcpy(c->dst, label, c->dstlen);
		c->dst[c->dstlen] = '\0';
	}
	return 0;
}

/* Open the top-level SRC (following a symlink there only); returns the fd
 * and *st, or -1. Special files are refused before they are opened. */
static int open_top(struct ct *c, const char *src, struct stat *st)
{
	struct stat before;
	int fd;

	if (stat(src, &before) < 0)
		return fail_read(c);
	if (!S_ISREG(before.st_mode) && !S_ISDIR(before.st_mode)) {
		if (c->err && c->errlen)
			snprintf(c->err, c->errlen,
				 "cannot read %s: not a regular file or directory",
				 src);
		errno = EINVAL;
		return -1;
	}
	fd = open(src, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	if (fd < 0)
		return fail_read(c);
	if (fstat(fd, st) < 0) {
		fail_read(c);
		close(fd);
		return -1;
	}
	if ((st->st_mode & S_IFMT) != (before.st_mode & S_IFMT)) {
		close(fd);
		errno = EAGAIN;
		return fail_read(c);
	}
	return fd;
}

int copytree_measure(const char *src, struct copytree_stats *ret, char *err,
		     size_t errlen)
{
	struct ct c;
	struct stat st;
	int fd, r = -1;

	if (ct_init(&c, src, NULL, err, errlen) < 0)
		return -1;
	c.measure = true;
	fd = open_top(&c, src, &st);
	if (fd < 0)
		return -1;
	if (S_ISDIR(st.st_mode)) {
		c.st.dirs++;
		if (copy_dir(&c, fd, -1, 0) < 0)
			goto out;
	} else {
		c.st.files = 1;
		c.st.bytes = (uint64_t)st.st_size;
	}
	*ret = c.st;
	r = 0;
out:
	close(fd);
	return r;
}

int copytree_copy(const char *src, int dst_dirfd, const char *dst_name,
		  const struct copytree_opts *opts,
		  struct copytree_stats *ret_stats, char *err, size_t errlen)
{
	struct ct c;
	struct stat st;
	int fd, out = -1, r = -1, saved;

	if (!dst_name || !*dst_name || strchr(dst_name, '/') ||
	    !strcmp(dst_name, ".") || !strcmp(dst_name, "..")) {
		if (err && errlen)
			snprintf(err, errlen,
				 "cannot write '%s': not a single path component",
				 dst_name ? dst_name : "(null)");
		errno = EINVAL;
		return -1;
	}
	if (ct_init(&c, src, opts && opts->dst_label ? opts->dst_label
						      : dst_name,
		    err, errlen) < 0)
		return -1;
	c.opts = opts;
	fd = open_top(&c, src, &st);
	if (fd < 0)
		return -1;
	if (S_ISREG(st.st_mode)) {
		r = copy_file(&c, fd, &st, dst_dirfd, dst_name);
		goto out;
	}
	c.st.dirs++;
	if (mkdirat(dst_dirfd, dst_name, 0700) < 0) {
		fail_write(&c);
		goto out;
	}
	out = openat(dst_dirfd, dst_name,
		     O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (out < 0) {
		fail_write(&c);
		goto out;
	}
	if (copy_dir(&c, fd, out, 0) < 0 || finish_dir(&c, out, &st) < 0)
		goto out;
	r = 0;
out:
	saved = errno;
	if (r == 0 && ret_stats)
		*ret_stats = c.st;
	if (out >= 0)
		close(out);
	close(fd);
	free(c.buf);
	errno = saved;
	return r;
}
