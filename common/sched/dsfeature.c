/* dsfeature.c - "this node caches dataset X" as Slurm node features (see
 * dsfeature.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <xxhash.h>

#include "common/sched/dsfeature.h"

void dsfeature_name(const char *key, const char *tier,
		    char ret[DSFEATURE_LEN + 1])
{
	char buf[256];
	int n;

	n = snprintf(buf, sizeof(buf), "%s:%s", key ? key : "",
		     tier ? tier : "");
	if (n < 0)
		n = 0;
	if ((size_t)n >= sizeof(buf))
		n = (int)sizeof(buf) - 1;
	/* 32 bits: a collision makes two datasets share a feature, so a job
	 * may be drawn to a node that holds the other one. It costs a miss
	 * (the Prolog stages as without iostage), never a wrong dataset:
	 * the node checks its cache by the full K. */
	snprintf(ret, DSFEATURE_LEN + 1, DSFEATURE_PREFIX "%08x",
		 (unsigned)(XXH3_64bits(buf, (size_t)n) & 0xffffffffu));
}

bool dsfeature_is_ours(const char *name, size_t len)
{
	size_t p = strlen(DSFEATURE_PREFIX);

	if (!name || len != DSFEATURE_LEN || strncmp(name, DSFEATURE_PREFIX, p))
		return false;
	for (size_t i = p; i < len; i++)
		if (!((name[i] >= '0' && name[i] <= '9') ||
		      (name[i] >= 'a' && name[i] <= 'f')))
			return false;
	return true;
}

/* Does OURS[0..N) hold the LEN bytes at NAME? */
static bool listed(const char *name, size_t len, const char *const *ours,
		   size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (ours[i] && strlen(ours[i]) == len &&
		    !strncmp(ours[i], name, len))
			return true;
	return false;
}

/* Call FN for each comma-separated token of S; stop when it returns
 * false. */
static void each_token(const char *s,
		       bool (*fn)(const char *t, size_t len, void *arg),
		       void *arg)
{
	const char *p = s, *e;

	while (p && *p) {
		e = strchr(p, ',');
		if (!e)
			e = p + strlen(p);
		if (e > p && !fn(p, (size_t)(e - p), arg))
			return;
		p = *e ? e + 1 : e;
	}
}

struct same_ctx {
	const char *const *ours;
	size_t n, found;
	bool ok;
};

static bool same_tok(const char *t, size_t len, void *arg)
{
	struct same_ctx *c = arg;

	if (!dsfeature_is_ours(t, len))
		return true;
	if (!listed(t, len, c->ours, c->n)) {
		c->ok = false;
		return false;
	}
	return true;
}

struct has_ctx {
	const char *name;
	bool found;
};

static bool has_tok(const char *t, size_t len, void *arg)
{
	struct has_ctx *c = arg;

	if (strlen(c->name) == len && !strncmp(t, c->name, len)) {
		c->found = true;
		return false;
	}
	return true;
}

bool dsfeature_same(const char *current, const char *const *ours, size_t n)
{
	struct same_ctx c = { ours, n, 0, true };

	/* every ios_ feature present is wanted... */
	each_token(current, same_tok, &c);
	if (!c.ok)
		return false;
	/* ...and every wanted one is present */
	for (size_t i = 0; i < n; i++) {
		struct has_ctx h = { ours[i], false };

		if (!ours[i])
			continue;
		each_token(current, has_tok, &h);
		if (!h.found)
			return false;
	}
	return true;
}

struct merge_ctx {
	char *out;
	size_t len;
};

static bool merge_tok(const char *t, size_t len, void *arg)
{
	struct merge_ctx *c = arg;

	if (dsfeature_is_ours(t, len))
		return true;
	if (c->len)
		c->out[c->len++] = ',';
	memcpy(c->out + c->len, t, len);
	c->len += len;
	c->out[c->len] = '\0';
	return true;
}

char *dsfeature_merge(const char *current, const char *const *ours, size_t n)
{
	size_t cap = (current ? strlen(current) : 0) + 1;
	struct merge_ctx c;

	for (size_t i = 0; i < n; i++)
		cap += (ours[i] ? strlen(ours[i]) : 0) + 1;
	c.out = malloc(cap);
	if (!c.out) {
		errno = ENOMEM;
		return NULL;
	}
	c.out[0] = '\0';
	c.len = 0;
	each_token(current, merge_tok, &c);
	for (size_t i = 0; i < n; i++) {
		size_t l;

		if (!ours[i] || !dsfeature_is_ours(ours[i], strlen(ours[i])))
			continue;
		l = strlen(ours[i]);
		if (listed(ours[i], l, ours, i)) /* a duplicate */
			continue;
		if (c.len)
			c.out[c.len++] = ',';
		memcpy(c.out + c.len, ours[i], l);
		c.len += l;
		c.out[c.len] = '\0';
	}
	return c.out;
}
