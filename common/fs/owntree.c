/* owntree.c - take a tree over through directory fds (see owntree.h).
 *
 * Why the directory first: its entries can be swapped only by someone
 * who may write it. Once it is root's and without write bits, the names
 * we read from it stay what we stat()ed, so fchownat/fchmodat by name are
 * safe for its entries (fchmodat cannot refuse to follow a symlink, which
 * is why symlinks are only ever chowned, with AT_SYMLINK_NOFOLLOW).
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
#include "common/fs/owntree.h"

#define OWNTREE_MSG_PATH 1024
#define OWNTREE_KEEP 0555 /* the mode bits a taken entry may keep */

struct own_ctx {
	uid_t uid;
	gid_t gid;
	dev_t dev;
	uint64_t mnt_id; /* 0: unknown */
	char path[OWNTREE_MSG_PATH];
	size_t len;
	char *err;
	size_t errlen;
};

static size_t path_push(struct own_ctx *c, const char *name)
{
	size_t old = c->len, room = sizeof(c->path) - old;
	int n = snprintf(c->path + old, room, "%s%s", old ? "/" : "", name);

	c->len = n < 0 || (size_t)n >= room ? sizeof(c->path) - 1
					    : old + (size_t)n;
	return old;
}

static void path_pop(struct own_ctx *c, size_t old)
{
	c->len = old;
	c->path[old] = '\0';
}

static int own_fail(struct own_ctx *c, int errnum, const char *what)
{
	if (c->err && c->errlen)
		snprintf(c->err, c->errlen, "%s: %s", c->len ? c->path : ".",
			 what ? what : strerror(errnum));
	errno = errnum;
	return -1;
}

static int take_dir(struct own_ctx *c, int dfd, int depth);

/* Take the entry NAME of the (already taken) directory DFD. */
static int take_entry(struct own_ctx *c, int dfd, const char *name, int depth)
{
	size_t mark = path_push(c, name);
	struct stat st;
	int sub, r = -1;

	if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
		own_fail(c, errno, NULL);
		goto out;
	}
	if (st.st_dev != c->dev) {
		own_fail(c, EXDEV, "is a mount point");
		goto out;
	}
	if (S_ISLNK(st.st_mode)) {
		if (fchownat(dfd, name, c->uid, c->gid, AT_SYMLINK_NOFOLLOW) <
		    0)
			own_fail(c, errno, NULL);
		else
			r = 0;
		goto out;
	}
	if (S_ISREG(st.st_mode)) {
		/* chown first: it clears set-id bits, fchmodat then fixes
		 * what is left. */
		if (fchownat(dfd, name, c->uid, c->gid, AT_SYMLINK_NOFOLLOW) <
			0 ||
		    fchmodat(dfd, name, st.st_mode & OWNTREE_KEEP, 0) < 0)
			own_fail(c, errno, NULL);
		else
			r = 0;
		goto out;
	}
	if (!S_ISDIR(st.st_mode)) {
		own_fail(c, EINVAL,
			 "neither a file, a directory nor a symlink");
		goto out;
	}
	if (depth >= OWNTREE_MAX_DEPTH) {
		errno = ELOOP;
		if (c->err && c->errlen)
			snprintf(c->err, c->errlen,
				 "deeper than %d levels: %.200s/...",
				 OWNTREE_MAX_DEPTH, c->path);
		goto out;
	}
	sub = openat(dfd, name,
		     O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC |
			 O_NONBLOCK);
	if (sub < 0) {
		own_fail(c, errno, NULL);
		goto out;
	}
	r = take_dir(c, sub, depth + 1);
	close(sub);
out:
	path_pop(c, mark);
	return r;
}

/* Take the directory DFD itself, then every entry in it. */
static int take_dir(struct own_ctx *c, int dfd, int depth)
{
	struct stat st;
	struct dirent *de;
	uint64_t id;
	DIR *dir;
	int dup, r = 0;

	if (fstat(dfd, &st) < 0)
		return own_fail(c, errno, NULL);
	if (st.st_dev != c->dev ||
	    (c->mnt_id && (bindmount_id(dfd, &id) < 0 || id != c->mnt_id)))
		return own_fail(c, EXDEV, "is a mount point");
	if (fchown(dfd, c->uid, c->gid) < 0 ||
	    fchmod(dfd, st.st_mode & OWNTREE_KEEP) < 0)
		return own_fail(c, errno, NULL);
	dup = fcntl(dfd, F_DUPFD_CLOEXEC, 0);
	dir = dup >= 0 ? fdopendir(dup) : NULL;
	if (!dir) {
		int e = errno;

		if (dup >= 0)
			close(dup);
		return own_fail(c, e, NULL);
	}
	for (;;) {
		errno = 0;
		de = readdir(dir);
		if (!de)
			break;
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if (take_entry(c, dfd, de->d_name, depth) < 0) {
			r = -1;
			break;
		}
	}
	if (r == 0 && errno)
		r = own_fail(c, errno, NULL);
	closedir(dir);
	return r;
}

int owntree_take(int dirfd, const char *name, uid_t uid, gid_t gid, char *err,
		 size_t errlen)
{
	struct own_ctx c;
	struct stat st;

	memset(&c, 0, sizeof(c));
	c.uid = uid;
	c.gid = gid;
	c.err = err;
	c.errlen = errlen;
	if (!name || !*name || strchr(name, '/') || !strcmp(name, ".") ||
	    !strcmp(name, ".."))
		return own_fail(&c, EINVAL, "not a single path component");
	if (fstat(dirfd, &st) < 0)
		return own_fail(&c, errno, NULL);
	c.dev = st.st_dev;
	if (bindmount_id(dirfd, &c.mnt_id) < 0)
		c.mnt_id = 0;
	return take_entry(&c, dirfd, name, 0);
}
