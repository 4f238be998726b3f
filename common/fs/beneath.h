/* beneath.h - opening a path a user chose beneath a directory, with no
 * symlink on the way nor at the end (openat2 RESOLVE_BENEATH |
 * RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS; Linux 5.6). Root, or a
 * worker reading a tree the user may change under it, resolving such a
 * path with openat alone could be led anywhere by a symlink swapped in.
 */
#ifndef IOSTAGE_BENEATH_H
#define IOSTAGE_BENEATH_H

#include <stdint.h>

/* Open REL beneath the directory DFD with FLAGS (O_NOFOLLOW and
 * O_CLOEXEC are added) and RESOLVE (more RESOLVE_ flags, e.g.
 * RESOLVE_NO_XDEV; 0: none), retried while the kernel asks (EAGAIN: a
 * rename raced the walk; EINTR). An fd, or -1 with errno (ELOOP: a
 * symlink; EXDEV: not beneath DFD, or another mount with
 * RESOLVE_NO_XDEV). */
int beneath_open(int dfd, const char *rel, int flags, uint64_t resolve);

#endif /* IOSTAGE_BENEATH_H */
