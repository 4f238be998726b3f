/* fusemount.h - root mounts a FUSE file system for a program that serves
 * it unprivileged (a spread dataset's view, view/).
 *
 * iostaged opens /dev/fuse and mounts it itself, with allow_other (the
 * job's tasks read it) and default_permissions (the kernel checks modes),
 * read-only, nosuid, nodev; then it hands the /dev/fuse fd to iostage-view
 * running as the job's user (libfuse takes "/dev/fd/N" as a mount point
 * to mean exactly that). The view never needs a privilege or fusermount.
 * The mount point is given as a directory fd and a name, as bindmount.h
 * does: no path a user could change is resolved.
 */
#ifndef IOSTAGE_FUSEMOUNT_H
#define IOSTAGE_FUSEMOUNT_H

#include <stddef.h>
#include <sys/types.h>

/* Mount a new FUSE connection on NAME (an existing directory) in DIRFD,
 * for a server running as UID:GID. Returns the /dev/fuse fd (O_CLOEXEC),
 * or -1 with errno and one line in err; nothing stays mounted on
 * failure. */
int fusemount_at(int dirfd, const char *name, uid_t uid, gid_t gid, char *err,
		 size_t errlen);

#endif /* IOSTAGE_FUSEMOUNT_H */
