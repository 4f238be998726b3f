/* fusemount.c - /dev/fuse mounted on a directory held as an fd (see
 * fusemount.h).
 *
 * Why not fusermount3 or libfuse's fuse_session_mount: both take the
 * mount point as a path and resolve it, and fusermount checks the caller
 * against /etc/fuse.conf (user_allow_other) as a setuid helper would.
 * Root needs none of that; it needs the one mount(2) call, on the object
 * its fd holds.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/fs/fusemount.h"

int fusemount_at(int dir_fd, uid_t uid, gid_t gid, char *err, size_t errlen)
{
	char target[64], opts[160];
	struct stat st;
	int fd, e;

	e = fstat(dir_fd, &st) < 0 ? errno : !S_ISDIR(st.st_mode) ? ENOTDIR : 0;
	if (e) {
		snprintf(err, errlen, "fuse mount on fd %d: %s", dir_fd,
			 e == ENOTDIR ? "not a directory" : strerror(e));
		errno = e;
		return -1;
	}
	fd = open("/dev/fuse", O_RDWR | O_CLOEXEC);
	if (fd < 0) {
		e = errno;
		snprintf(err, errlen, "fuse mount: /dev/fuse: %s", strerror(e));
		errno = e;
		return -1;
	}
	snprintf(target, sizeof(target), "/proc/self/fd/%d", dir_fd);
	snprintf(opts, sizeof(opts),
		 "fd=%d,rootmode=40000,user_id=%u,group_id=%u,allow_other,"
		 "default_permissions",
		 fd, (unsigned)uid, (unsigned)gid);
	if (mount(FUSEMOUNT_SOURCE, target, FUSEMOUNT_FSTYPE,
		  MS_RDONLY | MS_NOSUID | MS_NODEV, opts) < 0) {
		e = errno;
		snprintf(err, errlen, "fuse mount on fd %d: %s", dir_fd,
			 strerror(e));
		close(fd);
		errno = e;
		return -1;
	}
	return fd;
}
