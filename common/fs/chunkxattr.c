/* chunkxattr.c - the view's word on a cut file's own chunks (see
 * chunkxattr.h). Parsed strictly: the value comes from whatever file
 * system the task opened a file on, so anything but this exact format is
 * not ours, and the file is read as it would be without us. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "common/fs/chunkxattr.h"

static const char hexdigits[] = "0123456789abcdef";

static uint64_t chunk_count(uint64_t size, uint64_t chunk_bytes)
{
	return size / chunk_bytes + (size % chunk_bytes != 0);
}

static bool prefix_ok(const char *p)
{
	for (size_t i = 0; i < CHUNKXATTR_PREFIX_LEN; i++)
		if (!p[i] || !strchr(hexdigits, p[i]))
			return false;
	return true;
}

long chunkxattr_format(char *buf, size_t len, uint64_t size,
		       uint64_t chunk_bytes, const char *prefix,
		       chunkxattr_held_fn held, void *arg, const char *dir)
{
	char head[96];
	uint64_t n, digits;
	size_t dlen, need;
	int h;

	if (!chunk_bytes || !prefix || strlen(prefix) < CHUNKXATTR_PREFIX_LEN ||
	    !prefix_ok(prefix) || !dir || dir[0] != '/') {
		errno = EINVAL;
		return -1;
	}
	n = chunk_count(size, chunk_bytes);
	digits = (n + 3) / 4;
	dlen = strlen(dir);
	h = snprintf(head, sizeof(head), "%d %" PRIu64 " %" PRIu64 " %.*s ",
		     CHUNKXATTR_VERSION, size, chunk_bytes,
		     CHUNKXATTR_PREFIX_LEN, prefix);
	if (digits > CHUNKXATTR_VALUE_MAX ||
	    (need = (size_t)h + digits + 1 + dlen) > CHUNKXATTR_VALUE_MAX) {
		errno = E2BIG;
		return -1;
	}
	if (need > len)
		return (long)need;
	memcpy(buf, head, (size_t)h);
	for (uint64_t d = 0; d < digits; d++) {
		unsigned v = 0;

		for (unsigned k = 0; k < 4 && 4 * d + k < n; k++)
			if (held(arg, 4 * d + k))
				v |= 1u << k;
		buf[(size_t)h + d] = hexdigits[v];
	}
	buf[(size_t)h + digits] = ' ';
	memcpy(buf + h + digits + 1, dir, dlen);
	return (long)need;
}

/* A decimal number of at most 20 digits at *P up to a blank; advances
 * *P past the blank. */
static int decimal(const char **p, uint64_t *ret)
{
	const char *s = *p;
	uint64_t v = 0;
	size_t i = 0;

	for (; s[i] >= '0' && s[i] <= '9'; i++) {
		unsigned d = (unsigned)(s[i] - '0');

		if (v > (UINT64_MAX - d) / 10)
			return -1;
		v = v * 10 + d;
	}
	if (i == 0 || i > 20 || s[i] != ' ' || (i > 1 && s[0] == '0'))
		return -1;
	*p = s + i + 1;
	*ret = v;
	return 0;
}

int chunkxattr_parse(const char *value, size_t len, struct chunkxattr *ret)
{
	struct chunkxattr x;
	const char *p = value, *end = value + len;
	uint64_t version, digits;

	if (!value || len > CHUNKXATTR_VALUE_MAX || value[len] != '\0' ||
	    memchr(value, '\0', len))
		goto bad;
	if (decimal(&p, &version) < 0 || version != CHUNKXATTR_VERSION ||
	    decimal(&p, &x.size) < 0 || decimal(&p, &x.chunk_bytes) < 0 ||
	    !x.chunk_bytes)
		goto bad;
	if ((size_t)(end - p) < CHUNKXATTR_PREFIX_LEN + 1 || !prefix_ok(p) ||
	    p[CHUNKXATTR_PREFIX_LEN] != ' ')
		goto bad;
	memcpy(x.prefix, p, CHUNKXATTR_PREFIX_LEN);
	x.prefix[CHUNKXATTR_PREFIX_LEN] = '\0';
	p += CHUNKXATTR_PREFIX_LEN + 1;
	x.nchunks = chunk_count(x.size, x.chunk_bytes);
	digits = (x.nchunks + 3) / 4;
	if ((uint64_t)(end - p) < digits + 2 || p[digits] != ' ')
		goto bad;
	for (uint64_t d = 0; d < digits; d++)
		if (!p[d] || !strchr(hexdigits, p[d]))
			goto bad;
	x.held = p;
	x.dir = p + digits + 1;
	if (x.dir[0] != '/')
		goto bad;
	*ret = x;
	return 0;
bad:
	errno = EINVAL;
	return -1;
}

bool chunkxattr_held(const struct chunkxattr *x, uint64_t index)
{
	const char *d;

	if (index >= x->nchunks)
		return false;
	d = strchr(hexdigits, x->held[index / 4]);
	return d && ((unsigned)(d - hexdigits) >> (index % 4)) & 1u;
}

void chunkxattr_piece(const struct chunkxattr *x, uint64_t off, uint64_t len,
		      uint64_t *ret_index, uint64_t *ret_at, uint64_t *ret_len)
{
	uint64_t in_chunk;

	*ret_index = off / x->chunk_bytes;
	*ret_at = off % x->chunk_bytes;
	if (off >= x->size) {
		*ret_len = 0;
		return;
	}
	in_chunk = chunkxattr_chunk_len(x, *ret_index) - *ret_at;
	if (len > x->size - off)
		len = x->size - off;
	*ret_len = len < in_chunk ? len : in_chunk;
}

uint64_t chunkxattr_chunk_len(const struct chunkxattr *x, uint64_t index)
{
	uint64_t off;

	if (index >= x->nchunks)
		return 0;
	off = index * x->chunk_bytes;
	return x->size - off < x->chunk_bytes ? x->size - off : x->chunk_bytes;
}

void chunkxattr_chunk_name(const struct chunkxattr *x, uint64_t index,
			   char buf[CHUNKXATTR_NAME_MAX])
{
	snprintf(buf, CHUNKXATTR_NAME_MAX, "%s.%" PRIu64, x->prefix, index);
}
