/* beneath.c - openat2 beneath a directory (beneath.h). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "common/fs/beneath.h"

int beneath_open(int dfd, const char *rel, int flags, uint64_t resolve)
{
	struct open_how how = {
		.flags = (uint64_t)flags | O_NOFOLLOW | O_CLOEXEC,
		.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS |
			   RESOLVE_NO_MAGICLINKS | resolve,
	};
	int fd, tries = 0;

	do
		fd = (int)syscall(SYS_openat2, dfd, rel, &how, sizeof(how));
	while (fd < 0 && (errno == EAGAIN || errno == EINTR) && ++tries < 64);
	return fd;
}
