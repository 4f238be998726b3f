/* pathsafe.c - checks on paths and names that came from users.
 *
 * Everything here is pure string work: nothing touches the file system, so
 * the answers do not depend on who runs them or on what exists yet. Symlinks
 * are the caller's business (openat/O_NOFOLLOW in the daemon); what this file
 * guarantees is that a path means what it says textually: absolute, no "."
 * or ".." to climb out of a root, no control characters to forge log lines.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "common/base/errmsg.h"
#include "common/config/pathsafe.h"

static bool pathsafe_is_control(unsigned char c)
{
	return c < 0x20 || c == 0x7f;
}

int pathsafe_normalize(const char *path, char *out, size_t outlen, char *err,
		       size_t errlen)
{
	const char *p, *q;
	size_t n = 0;
	char *w;

	if (!out || outlen == 0)
		return errmsg_fail(err, errlen, EINVAL, "no output buffer");
	if (!path || !*path)
		return errmsg_fail(err, errlen, EINVAL, "empty path");
	for (p = path; *p; p++)
		if (pathsafe_is_control((unsigned char)*p))
			return errmsg_fail(err, errlen, EINVAL,
					   "contains a control character");
	if (path[0] != '/')
		return errmsg_fail(err, errlen, EINVAL, "not an absolute path");

	/* First pass: check every component and measure the result, so that
	 * out is only written once we know the whole path is acceptable. */
	for (p = path; *p;) {
		while (*p == '/')
			p++;
		if (!*p)
			break;
		for (q = p; *q && *q != '/'; q++)
			;
		if (q - p == 1 && p[0] == '.')
			return errmsg_fail(err, errlen, EINVAL,
					   "contains a '.' component");
		if (q - p == 2 && p[0] == '.' && p[1] == '.')
			return errmsg_fail(err, errlen, EINVAL,
					   "contains a '..' component");
		n += 1 + (size_t)(q - p);
		p = q;
	}
	if (n == 0)
		n = 1; /* "/" */
	if (n >= outlen)
		return errmsg_fail(err, errlen, ENAMETOOLONG,
				   "longer than %zu bytes", outlen - 1);

	w = out;
	for (p = path; *p;) {
		while (*p == '/')
			p++;
		if (!*p)
			break;
		*w++ = '/';
		while (*p && *p != '/')
			*w++ = *p++;
	}
	if (w == out)
		*w++ = '/';
	*w = '\0';
	return 0;
}

int pathsafe_is_component(const char *name, size_t maxlen)
{
	size_t n;

	if (!name || maxlen < 2)
		return 0;
	n = strnlen(name, maxlen);
	if (n == 0 || n >= maxlen)
		return 0;
	if (strcmp(name, ".") == 0 || strcmp(name, "..") == 0)
		return 0;
	for (size_t i = 0; i < n; i++) {
		char c = name[i];

		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		      (c >= '0' && c <= '9') || c == '_' || c == '.' ||
		      c == '-'))
			return 0;
	}
	return 1;
}

int pathsafe_is_relative(const char *rel, size_t maxlen)
{
	size_t n;

	if (!rel || maxlen < 2)
		return 0;
	n = strnlen(rel, maxlen);
	if (n == 0 || n >= maxlen || rel[0] == '/')
		return 0;
	for (const char *c = rel; *c;) {
		const char *q;

		for (q = c; *q && *q != '/'; q++)
			if (pathsafe_is_control((unsigned char)*q))
				return 0;
		if (q == c) /* "//" or a trailing '/' */
			return 0;
		if ((q - c == 1 && c[0] == '.') ||
		    (q - c == 2 && c[0] == '.' && c[1] == '.'))
			return 0;
		c = *q ? q + 1 : q;
		if (*q && !*c) /* trailing '/' */
			return 0;
	}
	return 1;
}

/* Is P already in the form pathsafe_normalize() produces? */
static bool pathsafe_is_normalized(const char *p)
{
	if (!p || p[0] != '/')
		return false;
	if (p[1] == '\0')
		return true;
	for (const char *c = p; *c;) {
		const char *q;

		if (*c != '/')
			return false;
		c++;
		for (q = c; *q && *q != '/'; q++)
			if (pathsafe_is_control((unsigned char)*q))
				return false;
		if (q == c) /* "//" or a trailing '/' */
			return false;
		if ((q - c == 1 && c[0] == '.') ||
		    (q - c == 2 && c[0] == '.' && c[1] == '.'))
			return false;
		c = q;
	}
	return true;
}

int pathsafe_is_under(const char *path, const char *root)
{
	size_t rl;

	if (!pathsafe_is_normalized(path) || !pathsafe_is_normalized(root))
		return 0;
	if (strcmp(root, "/") == 0)
		return 1;
	rl = strlen(root);
	return strncmp(path, root, rl) == 0 &&
	       (path[rl] == '\0' || path[rl] == '/');
}
