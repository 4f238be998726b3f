/* spread.c - weighted rendezvous hashing of a dataset's files over a job's
 * nodes (spread.h). */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include <xxhash.h>

#include "common/sched/spread.h"

static int name_char_ok(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	       (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-';
}

int spread_plan_parse(const char *spec, struct spread_plan *ret, char *err,
		      size_t errlen)
{
	struct spread_plan plan; /* 18 KB: fine on any thread's stack */
	struct spread_plan *p = &plan;
	const char *s = spec;
	unsigned i;

	if (!spec || !ret || !*spec) {
		snprintf(err, errlen, "spread plan: empty");
		errno = EINVAL;
		return -1;
	}
	for (i = 0;; i++) {
		const char *name = s, *eq, *end;
		size_t nlen;
		uint64_t w = 0;
		const char *d;

		if (i >= SPREAD_NODES_MAX) {
			snprintf(err, errlen, "spread plan: more than %u nodes",
				 SPREAD_NODES_MAX);
			goto bad;
		}
		end = strchr(s, ',');
		if (!end)
			end = s + strlen(s);
		eq = memchr(s, '=', (size_t)(end - s));
		if (!eq) {
			snprintf(err, errlen,
				 "spread plan: node %u: no '=WEIGHT'", i + 1);
			goto bad;
		}
		nlen = (size_t)(eq - name);
		if (nlen == 0 || nlen >= SPREAD_NAME_MAX) {
			snprintf(err, errlen,
				 "spread plan: node %u: name of %zu bytes is "
				 "not 1..%d",
				 i + 1, nlen, SPREAD_NAME_MAX - 1);
			goto bad;
		}
		for (d = name; d < eq; d++)
			if (!name_char_ok(*d)) {
				snprintf(err, errlen,
					 "spread plan: node %u: bad character "
					 "in name",
					 i + 1);
				goto bad;
			}
		if (eq + 1 == end)
			goto bad_weight;
		for (d = eq + 1; d < end; d++) {
			if (*d < '0' || *d > '9' || w > SPREAD_WEIGHT_MAX / 10)
				goto bad_weight;
			w = w * 10 + (uint64_t)(*d - '0');
		}
		if (w == 0 || w > SPREAD_WEIGHT_MAX)
			goto bad_weight;
		for (unsigned j = 0; j < i; j++)
			if (strlen(p->nodes[j].name) == nlen &&
			    !memcmp(p->nodes[j].name, name, nlen)) {
				snprintf(err, errlen,
					 "spread plan: node %u: '%.*s' given "
					 "twice",
					 i + 1, (int)nlen, name);
				goto bad;
			}
		memcpy(p->nodes[i].name, name, nlen);
		p->nodes[i].name[nlen] = '\0';
		p->nodes[i].weight = w;
		if (!*end) {
			p->n = i + 1;
			*ret = plan;
			return 0;
		}
		s = end + 1;
		continue;
bad_weight:
		snprintf(err, errlen,
			 "spread plan: node %u: weight '%.*s' is not 1..2^40",
			 i + 1, (int)(end - eq - 1), eq + 1);
		goto bad;
	}
bad:
	errno = EINVAL;
	return -1;
}

int spread_plan_format(const struct spread_plan *plan, char *buf, size_t len)
{
	size_t off = 0;

	if (!plan || !buf || len == 0) {
		errno = EINVAL;
		return -1;
	}
	buf[0] = '\0';
	for (unsigned i = 0; i < plan->n; i++) {
		int n = snprintf(buf + off, len - off, "%s%s=%llu",
				 i ? "," : "", plan->nodes[i].name,
				 (unsigned long long)plan->nodes[i].weight);

		if (n < 0 || (size_t)n >= len - off) {
			buf[0] = '\0';
			errno = ENOSPC;
			return -1;
		}
		off += (size_t)n;
	}
	return (int)off;
}

int spread_plan_find(const struct spread_plan *plan, const char *name)
{
	if (!plan || !name)
		return -1;
	for (unsigned i = 0; i < plan->n; i++)
		if (!strcmp(plan->nodes[i].name, name))
			return (int)i;
	return -1;
}

/* Node I's score from H, a 64-bit hash drawn for it. */
static double score_of(const struct spread_plan *plan, unsigned i, uint64_t h)
{
	/* 53 bits into (0,1), never 0 or 1: ln(u) is finite and < 0. */
	double u = ((double)(h >> 11) + 0.5) / 9007199254740992.0;

	return -(double)plan->nodes[i].weight / log(u);
}

static uint64_t node_seed(const struct spread_plan *plan, unsigned i)
{
	return XXH3_64bits(plan->nodes[i].name, strlen(plan->nodes[i].name));
}

double spread_score(const struct spread_plan *plan, unsigned i,
		    const char *path, size_t len)
{
	/* The hash of the node's name seeds the path's hash: every node
	 * draws its own independent score for each file. */
	return score_of(plan, i,
			XXH3_64bits_withSeed(path, len, node_seed(plan, i)));
}

double spread_chunk_score(const struct spread_plan *plan, unsigned i,
			  const char *path, size_t len, uint64_t index)
{
	/* The chunk's index, hashed with the node's seed, seeds the path's
	 * hash: a draw of its own per (node, file, chunk), and none a
	 * file's (whose seed is the node's alone). The index is hashed as
	 * little-endian bytes, the same on every node. */
	unsigned char le[8];
	uint64_t seed;

	for (int b = 0; b < 8; b++)
		le[b] = (unsigned char)(index >> (8 * b));
	seed = XXH3_64bits_withSeed(le, sizeof(le), node_seed(plan, i));
	return score_of(plan, i, XXH3_64bits_withSeed(path, len, seed));
}

/* The highest of PLAN's scores (ties: the lower index, the same on every
 * node), for a file (CHUNK false) or its chunk INDEX. */
static unsigned best_of(const struct spread_plan *plan, const char *path,
			size_t len, bool chunk, uint64_t index)
{
	unsigned best = 0;
	double best_score = -1.0;

	for (unsigned i = 0; i < plan->n; i++) {
		double s = chunk ? spread_chunk_score(plan, i, path, len, index)
				 : spread_score(plan, i, path, len);

		/* Ties (practically never) go to the lower index, the same
		 * on every node. */
		if (s > best_score) {
			best_score = s;
			best = i;
		}
	}
	return best;
}

unsigned spread_owner(const struct spread_plan *plan, const char *path,
		      size_t len)
{
	return best_of(plan, path, len, false, 0);
}

unsigned spread_chunk_owner(const struct spread_plan *plan, const char *path,
			    size_t len, uint64_t index)
{
	return best_of(plan, path, len, true, index);
}

bool spread_chunked(const struct spread_plan *plan, unsigned owner,
		    uint64_t size)
{
	/* weight <= 2^40 MiB: the half room fits 64 bits */
	return owner < plan->n && size > (plan->nodes[owner].weight << 19);
}

uint64_t spread_chunk_bytes(uint64_t size)
{
	uint64_t c = SPREAD_CHUNK_MIN;

	while (c < SPREAD_CHUNK_MAX && c * 2 <= size / 64)
		c *= 2;
	return c;
}

uint64_t spread_chunk_count(uint64_t size)
{
	uint64_t c = spread_chunk_bytes(size);

	return size / c + (size % c ? 1 : 0);
}

uint64_t spread_weight_of_bytes(uint64_t free_bytes)
{
	uint64_t w = free_bytes >> 20;

	if (w < 1)
		return 1;
	return w > SPREAD_WEIGHT_MAX ? SPREAD_WEIGHT_MAX : w;
}
