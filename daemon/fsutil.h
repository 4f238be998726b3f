/* fsutil.h - small file-system helpers shared by iostaged's modules. */
#ifndef IOSTAGE_DAEMON_FSUTIL_H
#define IOSTAGE_DAEMON_FSUTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/stat.h>
#include <sys/types.h>

/* mkdir -p PATH (absolute): missing parents are created 0755, PATH itself
 * LEAF_MODE. Existing directories are left as they are. 0 or -1 with errno
 * (on failure, parents already created stay). */
int fsutil_mkdir_p(const char *path, mode_t leaf_mode);

/* Is ST (of PATH) a directory owned by root that only root can write? With
 * ALLOW_STICKY a root-owned sticky directory writable by others (like /tmp)
 * passes too. Returns 0, or -1 with errno and a reason in err, e.g.
 * "/run/x is owned by uid 1000, must be root". */
int fsutil_check_root_dir(const struct stat *st, const char *path,
			  bool allow_sticky, char *err, size_t errlen);

/* The same for a directory OWNER must own (root: fsutil_check_root_dir;
 * a unit test's own uid for a StateDir in a temporary directory). */
int fsutil_check_owned_dir(const struct stat *st, const char *path, uid_t owner,
			   bool allow_sticky, char *err, size_t errlen);

/* write(2) until LEN bytes are written. 0 or -1 with errno. */
int fsutil_write_all(int fd, const void *buf, size_t len);

/* Replace NAME under DIRFD with DATA atomically: write ".NAME.tmp"
 * (O_EXCL|O_NOFOLLOW, MODE), fsync, rename over NAME, fsync the directory.
 * A reader sees the old or the new file, never a part. 0 or -1 with errno;
 * the temporary file is removed on failure. */
int fsutil_write_atomic(int dirfd, const char *name, const char *data,
			size_t len, mode_t mode);

#endif /* IOSTAGE_DAEMON_FSUTIL_H */
