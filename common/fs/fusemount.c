/* fusemount.c - mount a FUSE connection for an unprivileged server (see
 * fusemount.h). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/fs/fusemount.h"

int fusemount_at(int dirfd, const char *name, uid_t uid, gid_t gid, char *err,
		 size_t errlen)
{
	char target[32], opts[160];
	int dev, tfd, saved;

	dev = open("/dev/fuse", O_RDWR | O_CLOEXEC);
	if (dev < 0) {
		saved = errno;
		snprintf(err, errlen, "cannot open /dev/fuse: %s",
			 strerror(saved));
		errno = saved;
		return -1;
	}
	tfd = openat(dirfd, name,
		     O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (tfd < 0) {
		saved = errno;
		snprintf(err, errlen, "cannot open %s: %s", name,
			 strerror(saved));
		goto fail;
	}
	snprintf(target, sizeof(target), "/proc/self/fd/%d", tfd);
	snprintf(opts, sizeof(opts),
		 "fd=%d,rootmode=40000,user_id=%u,group_id=%u,allow_other,"
		 "default_permissions",
		 dev, (unsigned)uid, (unsigned)gid);
	if (mount("iostage-view", target, "fuse.iostage-view",
		  MS_RDONLY | MS_NOSUID | MS_NODEV, opts) < 0) {
		saved = errno;
		close(tfd);
		snprintf(err, errlen, "cannot mount FUSE on %s: %s", name,
			 strerror(saved));
		goto fail;
	}
	close(tfd);
	return dev;
fail:
	close(dev);
	errno = saved;
	return -1;
}
