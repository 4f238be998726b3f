/* view_tree.h - the whole dataset as the spread view lists it: every
 * entry of its manifest by path, and the children of each directory
 * (docs/STAGING.md, "The spread view").
 *
 * Built once from the listing iostaged hands the view (the dataset's
 * manifest, manifest_read format) and read-only afterwards, so any number
 * of FUSE threads may look things up at once. Entries are the manifest's,
 * by index (manifest order: the top "" is 0); each directory's children
 * are an index range of one array, in path order. About 8 bytes per
 * entry beyond the manifest's own.
 */
#ifndef IOSTAGE_VIEW_TREE_H
#define IOSTAGE_VIEW_TREE_H

#include <stddef.h>
#include <stdint.h>

#include "common/fs/manifest.h"

struct view_tree;

/* The tree of M (taken: freed with the tree, also on failure). The top
 * must be a directory (a spread dataset is one) and every other entry's
 * parent a directory of M. Returns 0 with *ret (view_tree_destroy), or
 * -1 with errno (EINVAL, ENOMEM) and one line in err ("listing: 'a/b':
 * its directory 'a' is not listed"). */
int view_tree_create(struct manifest *m, struct view_tree **ret, char *err,
		     size_t errlen);

/* Free T and its manifest. NULL: no-op. */
void view_tree_destroy(struct view_tree *t);

/* Number of entries (the top included). */
size_t view_tree_count(const struct view_tree *t);

/* The index of PATH (LEN bytes, relative, "" the top; a FUSE path without
 * its leading '/'), or -1. */
long view_tree_find(const struct view_tree *t, const char *path, size_t len);

/* Entry I (< view_tree_count). */
const struct manifest_entry *view_tree_entry(const struct view_tree *t,
					     size_t i);

/* The last component of entry I's path ("" for the top). */
const char *view_tree_name(const struct view_tree *t, size_t i);

/* The children of directory I: *ret_n of them, their indexes at
 * *ret_first[0..n) (valid as long as T). A non-directory has none. */
void view_tree_children(const struct view_tree *t, size_t i,
			const uint32_t **ret_first, size_t *ret_n);

/* How many of directory I's children are directories (its st_nlink is
 * that plus 2). */
size_t view_tree_subdirs(const struct view_tree *t, size_t i);

#endif /* IOSTAGE_VIEW_TREE_H */
