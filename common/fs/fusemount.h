/* fusemount.h - a FUSE file system mounted by root for a program that
 * serves it unprivileged (the spread view, view/: docs/STAGING.md, "The
 * spread view").
 *
 * Root opens /dev/fuse and mounts it at a directory it holds as an fd;
 * the program it then starts as the job's user inherits the /dev/fuse fd
 * and serves it (libfuse 3.3+: the mount point "/dev/fd/N"), so the
 * program needs no privilege and no fusermount. As bindmount.h does, the
 * mount point is never a path the kernel resolves from a name a user
 * could change: it is given as an fd and handed to mount(2) as
 * /proc/self/fd/N. Unmounting is bindmount_detach_at's (MNT_DETACH on the
 * name in a root-owned directory); the serving program then sees its
 * session end and exits.
 */
#ifndef IOSTAGE_FUSEMOUNT_H
#define IOSTAGE_FUSEMOUNT_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#define FUSEMOUNT_FSTYPE "fuse.iostage-view" /* as /proc/mounts shows it */
#define FUSEMOUNT_SOURCE "iostage-view"
/* The largest read request the serving program takes (bytes): the view
 * asks the kernel for it (max_write, max_readahead), and iostaged sets
 * the mount's readahead to it, so the kernel asks a file's pages that
 * many at a time. */
#define FUSEMOUNT_IO_MAX (1u << 20)

/* Open /dev/fuse and mount it read-only (MS_RDONLY | MS_NOSUID |
 * MS_NODEV) on the directory DIR_FD holds (any fd, O_PATH is enough),
 * with fd=N,rootmode=40000,user_id=UID,group_id=GID,allow_other,
 * default_permissions: the kernel checks each access against the modes
 * the file system reports, and every user may look (the job's tasks run
 * as UID, but so might a step's other processes under another uid the
 * modes allow). Needs CAP_SYS_ADMIN. Returns the /dev/fuse fd (O_RDWR,
 * O_CLOEXEC: clear FD_CLOEXEC in the child that serves it), or -1 with
 * errno and one line in err; nothing is left mounted on failure. Until a
 * program serves the fd, accesses to the mount wait for it. */
int fusemount_at(int dir_fd, uid_t uid, gid_t gid, char *err, size_t errlen);

/* Set the kernel's readahead for the FUSE file system whose root
 * ROOT_FD holds (any fd, O_PATH is enough) to KIB KiB: its backing
 * device's /sys/class/bdi/MAJ:MIN/read_ahead_kb. Why: the kernel starts
 * a FUSE mount at 128 KiB whatever the server's max_readahead, so it
 * asks for a file's pages 128 KiB per request; only root may raise it.
 * Call once the server has answered INIT (the kernel lowers it to the
 * server's max_readahead then). Returns 0, or -1 with errno and one line
 * in err. */
int fusemount_readahead(int root_fd, unsigned kib, char *err, size_t errlen);

/* A bound on a call that may wait on the server: root's own calls into
 * the mount (an overlay's mount(2) asks it for its root) wait as long as
 * the server does, and the server is the user's, who may stop it
 * (SIGSTOP) or never answer. */
struct fusemount_watch;

/* Start a thread that aborts the FUSE connection of the file system
 * whose root ROOT_FD holds (any fd, O_PATH is enough; the caller's, open
 * until fusemount_watch_stop) if fusemount_watch_stop is not called
 * within MS milliseconds: umount2(MNT_FORCE), whose abort ends every
 * request waiting on the server with ENOTCONN. 0 with *ret, or -errno. */
int fusemount_watch_start(int root_fd, unsigned ms,
			  struct fusemount_watch **ret);

/* Stop the watch and free W: true if it fired (the connection was
 * aborted, and the watched call failed or will). NULL: false. */
bool fusemount_watch_stop(struct fusemount_watch *w);

#endif /* IOSTAGE_FUSEMOUNT_H */
