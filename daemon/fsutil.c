/* fsutil.c - small file-system helpers shared by iostaged's modules. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "daemon/fsutil.h"

int fsutil_mkdir_p(const char *path, mode_t leaf_mode)
{
	char buf[4096];
	char *p;

	if (!path || path[0] != '/') {
		errno = EINVAL;
		return -1;
	}
	if (snprintf(buf, sizeof(buf), "%s", path) >= (int)sizeof(buf)) {
		errno = ENAMETOOLONG;
		return -1;
	}
	for (p = buf + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(buf, 0755) < 0 && errno != EEXIST)
			return -1;
		*p = '/';
	}
	if (mkdir(buf, leaf_mode) < 0 && errno != EEXIST)
		return -1;
	return 0;
}

int fsutil_check_root_dir(const struct stat *st, const char *path,
			  bool allow_sticky, char *err, size_t errlen)
{
	return fsutil_check_owned_dir(st, path, 0, allow_sticky, err, errlen);
}

int fsutil_check_owned_dir(const struct stat *st, const char *path, uid_t owner,
			   bool allow_sticky, char *err, size_t errlen)
{
	if (!S_ISDIR(st->st_mode)) {
		snprintf(err, errlen, "%s is not a directory", path);
		errno = ENOTDIR;
		return -1;
	}
	if (st->st_uid != owner) {
		if (owner == 0)
			snprintf(err, errlen,
				 "%s is owned by uid %u, must be root", path,
				 (unsigned)st->st_uid);
		else
			snprintf(err, errlen,
				 "%s is owned by uid %u, must be uid %u", path,
				 (unsigned)st->st_uid, (unsigned)owner);
		errno = EPERM;
		return -1;
	}
	if ((st->st_mode & (S_IWGRP | S_IWOTH)) &&
	    !(allow_sticky && (st->st_mode & S_ISVTX))) {
		snprintf(err, errlen,
			 "%s is group/other-writable (mode %04o), must be "
			 "writable by %s only",
			 path, (unsigned)(st->st_mode & 07777),
			 owner ? "its owner" : "root");
		errno = EPERM;
		return -1;
	}
	return 0;
}

int fsutil_write_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;

	while (len > 0) {
		ssize_t n = write(fd, p, len);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

int fsutil_write_atomic(int dirfd, const char *name, const char *data,
			size_t len, mode_t mode)
{
	char tmp[256];
	int fd, saved;

	if (snprintf(tmp, sizeof(tmp), ".%s.tmp", name) >= (int)sizeof(tmp)) {
		errno = ENAMETOOLONG;
		return -1;
	}
	/* A leftover (or planted) temporary file is not ours to trust. */
	if (unlinkat(dirfd, tmp, 0) < 0 && errno != ENOENT)
		return -1;
	fd = openat(dirfd, tmp,
		    O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
	if (fd < 0)
		return -1;
	if (fsutil_write_all(fd, data, len) < 0 || fsync(fd) < 0)
		goto fail;
	if (close(fd) < 0) {
		fd = -1;
		goto fail;
	}
	fd = -1;
	if (renameat(dirfd, tmp, dirfd, name) < 0)
		goto fail;
	(void)fsync(dirfd);
	return 0;
fail:
	saved = errno;
	if (fd >= 0)
		close(fd);
	unlinkat(dirfd, tmp, 0);
	errno = saved;
	return -1;
}
