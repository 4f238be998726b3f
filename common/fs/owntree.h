/* owntree.h - take a tree over: root's, with no write or set-id bits.
 *
 * A public cache entry is built by an unprivileged account (PublicUser),
 * then served read-only to every user. Before it is published, iostaged
 * makes every entry of the copy root's and takes off every write bit and
 * the set-uid, set-gid and sticky bits, so that neither the builder nor
 * anyone else can change what other users will read. The walk goes only
 * through directory fds (openat O_NOFOLLOW|O_DIRECTORY relative to the
 * parent), changes a symlink itself (never what it points to), and never
 * crosses into another file system or mount. A directory is taken (owner
 * and mode) before its entries are read, so that from then on nobody but
 * root can add, remove or swap an entry in it.
 */
#ifndef IOSTAGE_OWNTREE_H
#define IOSTAGE_OWNTREE_H

#include <stddef.h>
#include <sys/types.h>

#define OWNTREE_MAX_DEPTH 256

/* Take NAME (one path component) under the directory DIRFD, and
 * everything below it, over for UID:GID: owner and group set, modes
 * & 0555 (files and directories; symlinks keep theirs). NAME may be a
 * directory or a regular file; anything else below (fifos, sockets,
 * devices) is refused. Returns 0, or -1 with errno and a one-line reason
 * in err naming the entry, e.g. "a/b: is a mount point" (EXDEV),
 * "a/f: a fifo" (EINVAL), "deeper than 256 levels: a/..." (ELOOP). On
 * failure part of the tree may already be taken. */
int owntree_take(int dirfd, const char *name, uid_t uid, gid_t gid, char *err,
		 size_t errlen);

#endif /* IOSTAGE_OWNTREE_H */
