/* publictree.h - is a dataset readable by everyone? (public datasets)
 *
 * A public cache entry is built once and served to every user who asks
 * for its source, so its source must be readable by anyone with their own
 * credentials, whoever they are. iostage asks more than "o+r": POSIX
 * checks the owner's bits for the owner and the group's for members, so a
 * file 0604 is unreadable by its owner and a directory 0705 by its group.
 * The rule, checked on modes, never on what the checking process happens
 * to be able to open:
 *   - every regular file: r for owner, group and other (a+r, 0444);
 *   - every directory, the top included: r and x for all (a+rx, 0555);
 *   - every directory above the source (the path as given, and the path
 *     with its symlinks resolved): x for all (a+x, 0111);
 *   - none of them carries an access ACL (system.posix_acl_access) or an
 *     NFSv4 ACL (system.nfs4_acl), which could deny a named user or group.
 * Symlinks inside the tree are copied as links and never followed, so
 * their own modes do not matter.
 */
#ifndef IOSTAGE_PUBLICTREE_H
#define IOSTAGE_PUBLICTREE_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/* Does an entry of type and mode MODE (st_mode) pass the rule? Regular
 * files need 0444, directories 0555, symlinks pass; anything else fails. */
bool publictree_mode_ok(mode_t mode);

/* Does NAME in the directory DIRFD (NAME NULL or "": DIRFD itself) carry
 * an ACL that could deny someone? 1 yes, 0 no (also on a file system
 * without extended attributes), -1 with errno when it cannot be told. */
int publictree_has_acl(int dirfd, const char *name);

/* The same for many entries of one file system: *UNSUPPORTED (in and
 * out) has bit 0 (system.posix_acl_access) and bit 1 (system.nfs4_acl)
 * set for the ACL kinds that file system answered "not supported" for;
 * those are not asked again. Whether a kind of ACL is supported is a
 * property of the file system, not of a file, and on a network file
 * system each question is a round trip (GlusterFS: ~2 ms each at +1 ms,
 * one per file of a public cache hit). Only pass one mask for entries of
 * one file system (one st_dev). */
#define PUBLICTREE_ACL_KINDS 2
int publictree_has_acl_on(int dirfd, const char *name, unsigned *unsupported);

/* Check the directories above PATH (absolute): for the path as given and
 * for its resolved form, every directory from "/" down to PATH's parent
 * must be a+x without an ACL. Returns 0, or -1 with errno (EACCES when
 * the rule fails) and one line in err, e.g. "/home/alice (mode 0750) is
 * not searchable by everyone". */
int publictree_check_above(const char *path, char *err, size_t errlen);

#endif /* IOSTAGE_PUBLICTREE_H */
