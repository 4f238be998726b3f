/* smallfile.c - read a small regular file whole, with a size limit. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/base/smallfile.h"

char *smallfile_read(const char *path, size_t max, char *reason,
		     size_t reasonlen)
{
	return smallfile_read_at(AT_FDCWD, path, 0, max, NULL, reason,
				 reasonlen);
}

char *smallfile_read_at(int dirfd, const char *path, int open_flags, size_t max,
			struct stat *ret_st, char *reason, size_t reasonlen)
{
	struct stat st;
	char *buf = NULL;
	size_t len = 0, cap;
	int fd, saved;

	/* O_NONBLOCK: opening a fifo must not hang us. */
	fd = openat(dirfd, path,
		    O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK | open_flags);
	if (fd < 0)
		goto fail_errno;
	if (fstat(fd, &st) < 0)
		goto fail_errno;
	if (S_ISDIR(st.st_mode)) {
		errno = EISDIR;
		goto fail_errno;
	}
	if (!S_ISREG(st.st_mode)) {
		snprintf(reason, reasonlen, "not a regular file");
		errno = EINVAL;
		goto fail;
	}
	if ((unsigned long long)st.st_size > max)
		goto too_big;
	/* A buffer of the size fstat gave, plus one byte: the read that
	 * finds the end (or that the file grew after fstat) needs room. It
	 * grows, up to one byte past the limit, when the file does. (It was
	 * MAX bytes for any file: 8 MiB for each telemetry record read.) */
	cap = (size_t)st.st_size + 1;
	buf = malloc(cap + 1);
	if (!buf)
		goto fail_errno;
	while (len <= max) {
		ssize_t n;

		if (len == cap) {
			char *grown;

			cap = cap > max + 1 - cap ? max + 1 : 2 * cap;
			grown = realloc(buf, cap + 1);
			if (!grown)
				goto fail_errno;
			buf = grown;
		}
		n = read(fd, buf + len, cap - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			goto fail_errno;
		if (n == 0)
			break;
		len += (size_t)n;
	}
	if (len > max)
		goto too_big;
	buf[len] = '\0';
	if (memchr(buf, '\0', len)) {
		snprintf(reason, reasonlen, "contains a NUL byte");
		errno = EINVAL;
		goto fail;
	}
	close(fd);
	if (ret_st)
		*ret_st = st;
	return buf;

too_big:
	snprintf(reason, reasonlen, "larger than %zu bytes", max);
	errno = EFBIG;
	goto fail;
fail_errno:
	snprintf(reason, reasonlen, "%s", strerror(errno));
fail:
	saved = errno;
	if (fd >= 0)
		close(fd);
	free(buf);
	errno = saved;
	return NULL;
}
