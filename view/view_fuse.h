/* view_fuse.h - the spread view's FUSE file system: the whole dataset,
 * read-only, from its listing (view_tree.h) and its sources
 * (view_source.h) (docs/STAGING.md, "The spread view").
 *
 * libfuse 3's high-level API over a /dev/fuse fd root mounted already
 * (common/fs/fusemount.h): nothing here mounts or unmounts. Attributes
 * come from the listing (type, mode without write bits, size, mtime; the
 * serving process's uid and gid), with long timeouts and the page cache
 * kept across opens (keep_cache): the dataset does not change during a
 * job. Not direct_io, so mmap works. Every request that would write is
 * refused with EROFS (the mount is read-only too). One attribute,
 * user.iostage.chunks, tells the job's tasks where this node's chunks of
 * a cut file are (view_xattr.h).
 */
#ifndef IOSTAGE_VIEW_FUSE_H
#define IOSTAGE_VIEW_FUSE_H

#include <stdbool.h>
#include <stddef.h>

#include "common/fs/fusemount.h"
#include "view/view_source.h"
#include "view/view_tree.h"
#include "view/view_xattr.h"

#define VIEW_FUSE_TIMEOUT_S 86400.0       /* entries and attributes cached */
#define VIEW_FUSE_IO_MAX FUSEMOUNT_IO_MAX /* bytes of one read request */

/* Serve tree T from sources VS on FUSE_FD (an open, mounted /dev/fuse) on
 * libfuse's threads until the file system is unmounted or, with
 * SIGNALS, SIGTERM, SIGINT or SIGHUP arrives. Returns 0 then, or -1 with
 * one line in err when the session could not start or failed. FUSE_FD
 * is closed on return. XATTR (NULL: none) answers getxattr. */
int view_fuse_run(int fuse_fd, const struct view_tree *t,
		  struct view_source *vs, const struct view_xattr *xattr,
		  bool signals, char *err, size_t errlen);

#endif /* IOSTAGE_VIEW_FUSE_H */
