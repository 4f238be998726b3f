/* rmtree.h - remove a directory tree without ever following a symlink.
 *
 * iostaged removes job directories as root inside trees their users could
 * write. A user who swaps a directory for a symlink ("data" -> "/etc") must
 * not be able to make root delete outside the tree, so the walk is done only
 * through directory fds: every directory is opened with openat(O_NOFOLLOW |
 * O_DIRECTORY) relative to its already-open parent, every entry is removed
 * with unlinkat() relative to the directory that holds it, and a symlink is
 * always removed as a link. The walk does not cross into other file systems
 * nor into other mounts (a bind mount of the same file system is told by
 * its mount id), and stops at RMTREE_MAX_DEPTH levels, so memory and fds
 * stay bounded. A file bind-mounted over is not removed either (EBUSY).
 */
#ifndef IOSTAGE_RMTREE_H
#define IOSTAGE_RMTREE_H

#include <stddef.h>

#define RMTREE_MAX_DEPTH 256

/* Remove NAME (one path component, no '/') under the directory DIRFD, and
 * everything below it. NAME may be a file or a symlink (removed itself) or a
 * directory (removed recursively). An entry that is already gone counts as
 * removed, so the call is idempotent: a missing NAME returns 0.
 *
 * When unlinking fails with EACCES/EPERM inside a directory the caller owns
 * (e.g. a copied read-only directory), the directory is made u+rwx once and
 * the removal retried, so an unprivileged owner can remove its own tree.
 *
 * Returns 0, or -1 with errno and a one-line reason in err (size errlen)
 * naming the entry, e.g. "cannot remove a/b: Permission denied",
 * "deeper than 256 levels: a/b/..." (ELOOP), "a/m: is a mount point, not
 * removed" (EXDEV). On failure part of the tree may already be removed. */
int rmtree_at(int dirfd, const char *name, char *err, size_t errlen);

/* Remove every entry below the directory DIRFD but keep the directory
 * itself. Same rules and return convention as rmtree_at. DIRFD is not
 * closed. */
int rmtree_contents(int dirfd, char *err, size_t errlen);

#endif /* IOSTAGE_RMTREE_H */
