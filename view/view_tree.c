/* view_tree.c - the dataset's entries and each directory's children
 * (see view_tree.h).
 *
 * The manifest sorts paths by strcmp, which keeps a directory's subtree
 * together but not its children alone ("a/b", "a/b/c", "a/d"): a child
 * list per directory is built once instead, two passes over the entries
 * (count per parent, then place), parents found by the manifest's hash
 * index.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "view/view_tree.h"

struct view_tree {
	struct manifest *m;
	size_t n;
	uint32_t *parent;  /* [n]: entry i's directory (the top: 0) */
	uint32_t *start;   /* [n + 1]: directory i's children are */
	uint32_t *child;   /* child[start[i] .. start[i + 1]) */
	uint32_t *subdirs; /* [n]: children that are directories */
};

static int fail(struct view_tree *t, int e, char *err, size_t errlen,
		const char *why, const char *path)
{
	snprintf(err, errlen, "listing: '%.200s': %s", path, why);
	view_tree_destroy(t);
	errno = e;
	return -1;
}

int view_tree_create(struct manifest *m, struct view_tree **ret, char *err,
		     size_t errlen)
{
	struct view_tree *t = calloc(1, sizeof(*t));
	const struct manifest_entry *e, *p;
	uint32_t *fill = NULL;

	if (!t) {
		manifest_destroy(m);
		snprintf(err, errlen, "listing: out of memory");
		errno = ENOMEM;
		return -1;
	}
	t->m = m;
	t->n = manifest_count(m);
	if (!t->n || (e = manifest_get(m, 0))->path_len)
		return fail(t, EINVAL, err, errlen, "no top entry", "");
	if (e->type != MANIFEST_DIR)
		return fail(t, EINVAL, err, errlen,
			    "the dataset is one file: a spread dataset is a "
			    "directory",
			    "");
	t->parent = calloc(t->n, sizeof(*t->parent));
	t->start = calloc(t->n + 1, sizeof(*t->start));
	t->child = calloc(t->n, sizeof(*t->child));
	t->subdirs = calloc(t->n, sizeof(*t->subdirs));
	fill = calloc(t->n, sizeof(*fill));
	if (!t->parent || !t->start || !t->child || !t->subdirs || !fill) {
		free(fill);
		return fail(t, ENOMEM, err, errlen, "out of memory", "");
	}
	for (size_t i = 1; i < t->n; i++) {
		const char *slash;
		size_t plen;

		e = manifest_get(m, i);
		slash = memrchr(e->path, '/', e->path_len);
		plen = slash ? (size_t)(slash - e->path) : 0;
		p = manifest_find(m, e->path, plen);
		if (!p || p->type != MANIFEST_DIR) {
			free(fill);
			return fail(t, EINVAL, err, errlen,
				    p ? "its directory is not a directory"
				      : "its directory is not listed",
				    e->path);
		}
		t->parent[i] = (uint32_t)manifest_index(m, p);
		t->start[t->parent[i] + 1]++;
		if (e->type == MANIFEST_DIR)
			t->subdirs[t->parent[i]]++;
	}
	for (size_t i = 0; i < t->n; i++)
		t->start[i + 1] += t->start[i];
	/* in manifest order, so each directory's children are in path
	 * order */
	for (size_t i = 1; i < t->n; i++) {
		uint32_t d = t->parent[i];

		t->child[t->start[d] + fill[d]++] = (uint32_t)i;
	}
	free(fill);
	*ret = t;
	return 0;
}

void view_tree_destroy(struct view_tree *t)
{
	if (!t)
		return;
	manifest_destroy(t->m);
	free(t->parent);
	free(t->start);
	free(t->child);
	free(t->subdirs);
	free(t);
}

size_t view_tree_count(const struct view_tree *t)
{
	return t->n;
}

long view_tree_find(const struct view_tree *t, const char *path, size_t len)
{
	const struct manifest_entry *e = manifest_find(t->m, path, len);

	return e ? (long)manifest_index(t->m, e) : -1;
}

const struct manifest_entry *view_tree_entry(const struct view_tree *t,
					     size_t i)
{
	return manifest_get(t->m, i);
}

const char *view_tree_name(const struct view_tree *t, size_t i)
{
	const struct manifest_entry *e = manifest_get(t->m, i);
	const char *slash = memrchr(e->path, '/', e->path_len);

	return slash ? slash + 1 : e->path;
}

void view_tree_children(const struct view_tree *t, size_t i,
			const uint32_t **ret_first, size_t *ret_n)
{
	*ret_first = t->child + t->start[i];
	*ret_n = t->start[i + 1] - t->start[i];
}

size_t view_tree_subdirs(const struct view_tree *t, size_t i)
{
	return t->subdirs[i];
}
