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
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/base/deadline.h"
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

/* Why statx with AT_STATX_DONT_SYNC: the device is the kernel's (the
 * superblock's), never the server's answer, so a user's view cannot
 * point root's write at another device; and the kernel then asks the
 * server nothing, so root does not wait on a view the user stopped. */
int fusemount_readahead(int root_fd, unsigned kib, char *err, size_t errlen)
{
	char path[64], val[16];
	struct statx stx;
	ssize_t w = -1;
	int fd, n, e;

	if (statx(root_fd, "", AT_EMPTY_PATH | AT_STATX_DONT_SYNC, 0, &stx) <
	    0) {
		e = errno;
		snprintf(err, errlen, "fuse readahead on fd %d: %s", root_fd,
			 strerror(e));
		errno = e;
		return -1;
	}
	snprintf(path, sizeof(path), "/sys/class/bdi/%u:%u/read_ahead_kb",
		 stx.stx_dev_major, stx.stx_dev_minor);
	n = snprintf(val, sizeof(val), "%u\n", kib);
	fd = open(path, O_WRONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd >= 0)
		w = write(fd, val, (size_t)n);
	if (w != n) {
		/* a short write sets no errno: EIO, not a stale one */
		e = w < 0 ? errno : EIO;
		snprintf(err, errlen, "cannot set %s to %u: %s", path, kib,
			 strerror(e));
		if (fd >= 0)
			close(fd);
		errno = e;
		return -1;
	}
	close(fd);
	return 0;
}

struct fusemount_watch {
	int root_fd;
	struct timespec until; /* CLOCK_MONOTONIC */
	pthread_t thread;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	bool done, fired; /* under mu */
};

/* Why MNT_FORCE and not /sys/fs/fuse/connections/N/abort: the control
 * file system is often not mounted (never in a node's own mount
 * namespace), and FUSE's umount_begin aborts the connection before the
 * unmount looks at whether the mount is busy (it is: the waiting call
 * holds it), so the abort happens either way. */
static void *watch_main(void *arg)
{
	struct fusemount_watch *w = arg;
	char path[32];
	int e = 0;

	pthread_mutex_lock(&w->mu);
	while (!w->done && e != ETIMEDOUT)
		e = pthread_cond_timedwait(&w->cv, &w->mu, &w->until);
	w->fired = !w->done;
	pthread_mutex_unlock(&w->mu);
	if (w->fired) {
		snprintf(path, sizeof(path), "/proc/self/fd/%d", w->root_fd);
		(void)umount2(path, MNT_FORCE);
	}
	return NULL;
}

int fusemount_watch_start(int root_fd, unsigned ms,
			  struct fusemount_watch **ret)
{
	struct fusemount_watch *w = calloc(1, sizeof(*w));
	pthread_condattr_t ca;
	int e;

	if (!w)
		return -ENOMEM;
	w->root_fd = root_fd;
	deadline_after_ms(CLOCK_MONOTONIC, ms, &w->until);
	pthread_mutex_init(&w->mu, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&w->cv, &ca);
	pthread_condattr_destroy(&ca);
	e = pthread_create(&w->thread, NULL, watch_main, w);
	if (e) {
		pthread_cond_destroy(&w->cv);
		pthread_mutex_destroy(&w->mu);
		free(w);
		return -e;
	}
	*ret = w;
	return 0;
}

bool fusemount_watch_stop(struct fusemount_watch *w)
{
	bool fired;

	if (!w)
		return false;
	pthread_mutex_lock(&w->mu);
	w->done = true;
	pthread_cond_signal(&w->cv);
	pthread_mutex_unlock(&w->mu);
	pthread_join(w->thread, NULL);
	fired = w->fired;
	pthread_cond_destroy(&w->cv);
	pthread_mutex_destroy(&w->mu);
	free(w);
	return fired;
}
