/* view_xattr.h - the view's answer to getxattr(CHUNKXATTR_NAME): where
 * this node's chunks of a cut file are, for libiostage-localread.so in
 * the job's tasks (common/fs/chunkxattr.h; docs/STAGING.md, "Reading a
 * node's own chunks").
 *
 * Only a file the plan cuts (spread_chunked) of which this node holds at
 * least one chunk has the attribute: for any other file, reading through
 * the view is all there is. Library code: no logging.
 */
#ifndef IOSTAGE_VIEW_XATTR_H
#define IOSTAGE_VIEW_XATTR_H

#include <stddef.h>

#include "common/sched/spread.h"
#include "view/view_tree.h"

/* What the attribute speaks of. */
struct view_xattr {
	const struct view_tree *tree;
	const struct spread_plan *plan;
	unsigned self;      /* this node's index in plan */
	const char *chunks; /* this node's part's chunks directory (absolute;
			       NULL: no part here, no attribute) */
};

/* getxattr's answer for entry I and attribute NAME into BUF (SIZE bytes;
 * SIZE 0: only the length): the value's length, or a negative errno
 * (-ENODATA: no such attribute here; -ERANGE: SIZE too small). */
int view_xattr_get(const struct view_xattr *x, size_t i, const char *name,
		   char *buf, size_t size);

#endif /* IOSTAGE_VIEW_XATTR_H */
