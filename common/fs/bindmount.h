/* bindmount.h - read-only bind mounts that root makes and removes inside
 * directories users can reach.
 *
 * iostaged serves a cached dataset to a job by bind-mounting the cache copy
 * read-only onto TIER/jobs/J/data/NAME, so the job sees a real directory
 * (find, du, rsync behave as on the source) that nobody can write through.
 * The job directory J belongs to the user, so no path below it is ever
 * handed to mount(2) or umount2(2) as a string the kernel resolves: the
 * source and the target are held as O_PATH fds opened one component at a
 * time with O_NOFOLLOW, and the syscalls are given /proc/self/fd/N, which
 * names exactly the object the fd holds. An unmount is made only on an fd
 * whose mount id (statx STATX_MNT_ID) is the one /proc/self/mountinfo
 * listed, so a user renaming directories under J between the two can make
 * an unmount fail, never hit another mount.
 */
#ifndef IOSTAGE_BINDMOUNT_H
#define IOSTAGE_BINDMOUNT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define BINDMOUNT_MOUNTINFO_MAX (64u << 20) /* bytes of mountinfo read */

/* One line of /proc/self/mountinfo, as far as we use it. */
struct bindmount_info {
	uint64_t id;     /* mount id (field 1) */
	uint64_t parent; /* parent's mount id (field 2) */
	char *point;     /* mount point, unescaped; points into the line */
};

/* The mount id of the object FD holds (any fd, O_PATH included).
 * Returns 0 with *ret_id, or -1 with errno (ENOSYS: the kernel does not
 * report mount ids, older than 5.8). */
int bindmount_id(int fd, uint64_t *ret_id);

/* Parse one line of /proc/self/mountinfo (without its newline) in place:
 * the mount point's octal escapes (\040 space, \011 tab, \012 newline,
 * \134 backslash) are decoded into LINE. Returns 0 with *ret, or -1 with
 * EINVAL on a malformed line. */
int bindmount_parse_line(char *line, struct bindmount_info *ret);

/* The part of PATH below the directory DIR ("a/b" for DIR "/x" and PATH
 * "/x/a/b"), or NULL when PATH is DIR itself or not below it. DIR has no
 * trailing slash (except "/"). */
const char *bindmount_below(const char *dir, const char *path);

/* Make NAME in the directory DIRFD a read-only bind mount of SRC_FD
 * (MS_BIND, then a remount with MS_RDONLY|MS_NOSUID|MS_NODEV). SRC_FD
 * (any fd, O_PATH is enough) holds a directory or a regular file; NAME is
 * created to match (a directory 0755, a file 0444) and must be a single
 * component. DIRFD must be a directory only root can write: NAME is
 * opened with O_NOFOLLOW and checked to be of the right type and not
 * mounted on; whatever was mounted there before is detached first, and a
 * NAME of the wrong type is removed. On failure nothing stays mounted.
 * Returns 0, or -1 with errno and a one-line reason in err. */
int bindmount_ro_at(int src_fd, int dirfd, const char *name, char *err,
		    size_t errlen);

/* Detach (MNT_DETACH) every mount stacked on NAME in the directory DIRFD.
 * Returns the number detached (0 when nothing was mounted or NAME is
 * missing), or -1 with errno and err. */
int bindmount_detach_at(int dirfd, const char *name, char *err, size_t errlen);

/* Detach every mount whose mount point lies below the directory BASE_FD
 * (found in /proc/self/mountinfo under the path BASE_FD has now) and, if
 * SELECT is given, for which SELECT(REL, ARG) is true, REL being the
 * mount point relative to BASE_FD. Mounts stacked on one another and
 * nested mounts are detached top and inner first. Each is reached from
 * BASE_FD with O_NOFOLLOW and must carry the listed mount id before it is
 * detached. Returns the number detached, or -1 with errno and err when
 * mountinfo cannot be read or a mount listed stays (then err names one). */
int bindmount_detach_under(int base_fd,
			   bool (*select)(const char *rel, void *arg),
			   void *arg, char *err, size_t errlen);

#endif /* IOSTAGE_BINDMOUNT_H */
