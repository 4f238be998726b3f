/* rmtree.c - fd-relative recursive removal that never follows a symlink.
 *
 * The whole walk is made of three calls, always relative to an fd of a
 * directory we already hold:
 *
 *   unlinkat(dir, name, 0)              removes files, symlinks, fifos...;
 *                                       on a directory Linux says EISDIR
 *   openat(dir, name, O_DIRECTORY |     descends; O_NOFOLLOW makes a symlink
 *          O_NOFOLLOW)                  fail with ELOOP/ENOTDIR, never opened
 *   unlinkat(dir, name, AT_REMOVEDIR)   removes the emptied directory
 *
 * A user racing us can swap an entry between these calls. Every such swap
 * leads to one of: ENOENT (gone: fine), ELOOP/ENOTDIR (it became a link or a
 * file: unlink it as such), ENOTEMPTY (something was added: empty it again).
 * We retry a bounded number of times, so a racing user can make the removal
 * fail but never redirect it. No path string is ever resolved by the kernel;
 * the names we build are for error messages only.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/fs/bindmount.h"
#include "common/fs/rmtree.h"

#define RMTREE_RETRIES 8     /* per entry, against racing writers */
#define RMTREE_PASSES 16     /* readdir passes per directory */
#define RMTREE_MSG_PATH 1024 /* path kept for messages (truncated) */

struct rm_ctx {
	dev_t dev;                  /* stay on this file system */
	uint64_t mnt_id;            /* and on this mount (0: unknown) */
	char path[RMTREE_MSG_PATH]; /* relative path, for messages only */
	size_t len;
	char *err;
	size_t errlen;
};

static int rm_contents(struct rm_ctx *c, int dfd, int depth);

static size_t path_push(struct rm_ctx *c, const char *name)
{
	size_t old = c->len;
	size_t room = sizeof(c->path) - old;
	int n = snprintf(c->path + old, room, "%s%s", old ? "/" : "", name);

	if (n < 0 || (size_t)n >= room)
		c->len = sizeof(c->path) - 1;
	else
		c->len = old + (size_t)n;
	return old;
}

static void path_pop(struct rm_ctx *c, size_t old)
{
	c->len = old;
	c->path[old] = '\0';
}

/* Record the failure for the current path; keeps errno. */
static int rm_fail(struct rm_ctx *c, const char *what)
{
	int saved = errno;

	if (c->err && c->errlen)
		snprintf(c->err, c->errlen, "%s %s: %s", what,
			 c->len ? c->path : ".", strerror(saved));
	errno = saved;
	return -1;
}

/* Give the owner u+rwx on the directory DFD so its entries can be removed.
 * Returns 0 if the mode changed, -1 if nothing could be done. */
static int fix_dir_mode(int dfd)
{
	struct stat st;

	if (fstat(dfd, &st) < 0 || (st.st_mode & S_IRWXU) == S_IRWXU)
		return -1;
	return fchmod(dfd, (st.st_mode & 07777) | S_IRWXU);
}

/* Remove the directory NAME under DFD after emptying it. 1 = retry NAME as a
 * non-directory (it was swapped), 0 = removed, -1 = error. */
static int rm_dir(struct rm_ctx *c, int dfd, const char *name, int depth)
{
	struct stat st;
	uint64_t id;
	int sub, r;

	if (depth >= RMTREE_MAX_DEPTH) {
		errno = ELOOP;
		/* The reason first: the path is long here. */
		if (c->err && c->errlen)
			snprintf(c->err, c->errlen,
				 "deeper than %d levels: %.200s/...",
				 RMTREE_MAX_DEPTH, c->path);
		return -1;
	}
	sub = openat(dfd, name,
		     O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC |
			 O_NONBLOCK);
	if (sub < 0) {
		if (errno == ENOENT)
			return 0;
		if (errno == ELOOP || errno == ENOTDIR)
			return 1;
		return rm_fail(c, "cannot open");
	}
	if (fstat(sub, &st) < 0) {
		r = rm_fail(c, "cannot stat");
		close(sub);
		return r;
	}
	/* A bind mount of the same file system has the same st_dev: only
	 * the mount id tells it (a job's read-only view of a cache entry
	 * left mounted must never make root empty the entry). */
	if (st.st_dev != c->dev ||
	    (c->mnt_id && (bindmount_id(sub, &id) < 0 || id != c->mnt_id))) {
		close(sub);
		errno = EXDEV;
		if (c->err && c->errlen)
			snprintf(c->err, c->errlen,
				 "%s: is a mount point, not removed", c->path);
		return -1;
	}
	r = rm_contents(c, sub, depth + 1);
	close(sub);
	return r;
}

/* Remove the entry NAME under DFD, whatever it is. */
static int rm_entry(struct rm_ctx *c, int dfd, const char *name, int depth)
{
	size_t mark = path_push(c, name);
	bool fixed = false;
	int tries, r = -1;

	for (tries = 0; tries < RMTREE_RETRIES; tries++) {
		if (unlinkat(dfd, name, 0) == 0 || errno == ENOENT) {
			r = 0;
			goto out;
		}
		if (errno == EISDIR) {
			int d = rm_dir(c, dfd, name, depth);

			if (d < 0)
				goto out;
			if (d == 1)
				continue;
			if (unlinkat(dfd, name, AT_REMOVEDIR) == 0 ||
			    errno == ENOENT) {
				r = 0;
				goto out;
			}
			if (errno == ENOTEMPTY || errno == EEXIST ||
			    errno == ENOTDIR)
				continue;
		}
		if ((errno == EACCES || errno == EPERM) && !fixed) {
			int saved = errno;

			fixed = true;
			if (fix_dir_mode(dfd) == 0)
				continue;
			errno = saved;
		}
		rm_fail(c, "cannot remove");
		goto out;
	}
	if (tries == RMTREE_RETRIES) {
		errno = EBUSY;
		rm_fail(c, "cannot remove (changing while removed)");
	}
out:
	path_pop(c, mark);
	return r;
}

/* Remove every entry of the open directory DFD. */
static int rm_contents(struct rm_ctx *c, int dfd, int depth)
{
	struct dirent *de;
	DIR *dir;
	int dupfd, pass, r = -1;

	dupfd = fcntl(dfd, F_DUPFD_CLOEXEC, 0);
	if (dupfd < 0)
		return rm_fail(c, "cannot open");
	dir = fdopendir(dupfd);
	if (!dir) {
		rm_fail(c, "cannot read");
		close(dupfd);
		return -1;
	}
	/* Removing entries while reading may make readdir skip some, so read
	 * again until a pass finds nothing. */
	for (pass = 0; pass < RMTREE_PASSES; pass++) {
		size_t seen = 0;

		rewinddir(dir);
		for (;;) {
			errno = 0;
			de = readdir(dir);
			if (!de)
				break;
			if (!strcmp(de->d_name, ".") ||
			    !strcmp(de->d_name, ".."))
				continue;
			seen++;
			if (rm_entry(c, dfd, de->d_name, depth) < 0)
				goto out;
		}
		if (errno) {
			rm_fail(c, "cannot read");
			goto out;
		}
		if (seen == 0) {
			r = 0;
			goto out;
		}
	}
	errno = EBUSY;
	rm_fail(c, "cannot empty (changing while removed)");
out:
	closedir(dir);
	return r;
}

static int rm_init(struct rm_ctx *c, int dirfd, char *err, size_t errlen)
{
	struct stat st;

	memset(c, 0, sizeof(*c));
	c->err = err;
	c->errlen = errlen;
	if (fstat(dirfd, &st) < 0)
		return rm_fail(c, "cannot stat");
	if (!S_ISDIR(st.st_mode)) {
		if (err && errlen)
			snprintf(err, errlen, "the base fd is not a directory");
		errno = ENOTDIR;
		return -1;
	}
	c->dev = st.st_dev;
	if (bindmount_id(dirfd, &c->mnt_id) < 0)
		c->mnt_id = 0; /* no mount ids here: st_dev only */
	return 0;
}

int rmtree_at(int dirfd, const char *name, char *err, size_t errlen)
{
	struct rm_ctx c;

	if (!name || !*name || strchr(name, '/') || !strcmp(name, ".") ||
	    !strcmp(name, "..")) {
		if (err && errlen)
			snprintf(err, errlen,
				 "'%s' is not a single path component",
				 name ? name : "(null)");
		errno = EINVAL;
		return -1;
	}
	if (rm_init(&c, dirfd, err, errlen) < 0)
		return -1;
	return rm_entry(&c, dirfd, name, 0);
}

int rmtree_contents(int dirfd, char *err, size_t errlen)
{
	struct rm_ctx c;

	if (rm_init(&c, dirfd, err, errlen) < 0)
		return -1;
	return rm_contents(&c, dirfd, 0);
}
