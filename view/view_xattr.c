/* view_xattr.c - where this node's chunks of a cut file are (see
 * view_xattr.h). */
#include <errno.h>
#include <string.h>

#include "common/fs/chunkxattr.h"
#include "common/fs/partchunks.h"
#include "view/view_xattr.h"

struct held {
	const struct view_xattr *x;
	const struct manifest_entry *e;
};

static bool held_here(void *arg, uint64_t index)
{
	const struct held *h = arg;

	return spread_chunk_owner(h->x->plan, h->e->path, h->e->path_len,
				  index) == h->x->self;
}

int view_xattr_get(const struct view_xattr *x, size_t i, const char *name,
		   char *buf, size_t size)
{
	const struct manifest_entry *e = view_tree_entry(x->tree, i);
	const struct held h = { .x = x, .e = e };
	char chunk0[PARTCHUNK_NAME_MAX];
	uint64_t k, count;
	long n;

	if (strcmp(name, CHUNKXATTR_NAME) != 0 || !x->chunks ||
	    e->type != MANIFEST_FILE ||
	    !spread_chunked(x->plan,
			    spread_owner(x->plan, e->path, e->path_len),
			    e->size))
		return -ENODATA;
	count = spread_chunk_count(e->size);
	for (k = 0; k < count && !held_here((void *)&h, k); k++)
		;
	if (k == count)
		return -ENODATA; /* nothing here to read but through us */
	/* the name's hex digits, before ".0" */
	partchunk_name(e->path, e->path_len, 0, chunk0);
	n = chunkxattr_format(size ? buf : NULL, size, e->size,
			      spread_chunk_bytes(e->size), chunk0, held_here,
			      (void *)&h, x->chunks);
	if (n < 0)
		return -ENODATA; /* too many chunks to say: read through us */
	if (size && (size_t)n > size)
		return -ERANGE;
	return (int)n;
}
