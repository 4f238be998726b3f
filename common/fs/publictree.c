/* publictree.c - the "readable by everyone" rule of public datasets (see
 * publictree.h). Pure checks of modes and attributes: the caller decides
 * what a failure means (for iostaged: stage the dataset per user).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "common/fs/publictree.h"

static const char *const acl_names[] = {
	"system.posix_acl_access",
	"system.nfs4_acl",
};
_Static_assert(sizeof(acl_names) / sizeof(acl_names[0]) == PUBLICTREE_ACL_KINDS,
	       "publictree.h numbers the ACL kinds");

bool publictree_mode_ok(mode_t mode)
{
	if (S_ISREG(mode))
		return (mode & 0444) == 0444;
	if (S_ISDIR(mode))
		return (mode & 0555) == 0555;
	return S_ISLNK(mode);
}

int publictree_has_acl(int dirfd, const char *name)
{
	unsigned unsupported = 0;

	return publictree_has_acl_on(dirfd, name, &unsupported);
}

int publictree_has_acl_on(int dirfd, const char *name, unsigned *unsupported)
{
	char path[PATH_MAX];
	size_t i;

	/* No *at() form of getxattr before Linux 6.13: the fd's name in
	 * /proc, and lgetxattr so that a symlink is never followed. */
	if (snprintf(path, sizeof(path), "/proc/self/fd/%d%s%s", dirfd,
		     name && *name ? "/" : "",
		     name ? name : "") >= (int)sizeof(path)) {
		errno = ENAMETOOLONG;
		return -1;
	}
	for (i = 0; i < sizeof(acl_names) / sizeof(acl_names[0]); i++) {
		if (*unsupported & (1u << i))
			continue;
		ssize_t n = name && *name
				? lgetxattr(path, acl_names[i], NULL, 0)
				: getxattr(path, acl_names[i], NULL, 0);

		if (n >= 0)
			return 1;
		if (errno == ENOTSUP || errno == EOPNOTSUPP) {
			*unsupported |= 1u << i;
			continue;
		}
		if (errno != ENODATA)
			return -1;
	}
	return 0;
}

/* The directories above PATH (absolute, no trailing '/'), one by one. */
static int check_prefixes(const char *path, char *err, size_t errlen)
{
	char buf[PATH_MAX];
	size_t len = strlen(path), i;

	if (len >= sizeof(buf)) {
		snprintf(err, errlen, "%s: path too long", path);
		errno = ENAMETOOLONG;
		return -1;
	}
	for (i = 0; i < len; i++) {
		struct stat st;
		int acl;

		if (path[i] != '/' || (i == 0 && len == 1))
			continue;
		/* The prefix before this '/': "/" for i == 0. */
		if (i == 0) {
			buf[0] = '/';
			buf[1] = '\0';
		} else {
			memcpy(buf, path, i);
			buf[i] = '\0';
		}
		if (lstat(buf, &st) < 0) {
			snprintf(err, errlen, "%s: %s", buf, strerror(errno));
			return -1;
		}
		if (S_ISLNK(st.st_mode))
			continue; /* the resolved path is checked too */
		if (!S_ISDIR(st.st_mode) || (st.st_mode & 0111) != 0111) {
			snprintf(err, errlen,
				 "%s (mode %04o) is not searchable by everyone",
				 buf, (unsigned)(st.st_mode & 07777));
			errno = EACCES;
			return -1;
		}
		acl = getxattr(buf, "system.posix_acl_access", NULL, 0) >= 0 ||
		      getxattr(buf, "system.nfs4_acl", NULL, 0) >= 0;
		if (acl) {
			snprintf(err, errlen,
				 "%s has an ACL: it may deny someone", buf);
			errno = EACCES;
			return -1;
		}
	}
	return 0;
}

int publictree_check_above(const char *path, char *err, size_t errlen)
{
	char *real;
	int r;

	if (!path || path[0] != '/') {
		snprintf(err, errlen, "'%s' is not an absolute path",
			 path ? path : "(null)");
		errno = EINVAL;
		return -1;
	}
	if (check_prefixes(path, err, errlen) < 0)
		return -1;
	real = realpath(path, NULL);
	if (!real) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return -1;
	}
	r = strcmp(real, path) ? check_prefixes(real, err, errlen) : 0;
	free(real);
	return r;
}
