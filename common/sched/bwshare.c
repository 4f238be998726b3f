/* bwshare.c - one bandwidth budget shared by leases (see bwshare.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/sched/bwshare.h"

void bwshare_init(struct bwshare *s, uint64_t budget, double lease_s)
{
	memset(s, 0, sizeof(*s));
	s->budget = budget;
	s->lease_s = lease_s > 0 ? lease_s : BWSHARE_LEASE_S;
}

void bwshare_fini(struct bwshare *s)
{
	if (!s)
		return;
	free(s->leases);
	s->leases = NULL;
	s->n = s->cap = 0;
}

/* Drop the leases that ran out by NOW (order does not matter). */
static void expire(struct bwshare *s, double now)
{
	for (size_t i = 0; i < s->n;) {
		if (s->leases[i].expires <= now)
			s->leases[i] = s->leases[--s->n];
		else
			i++;
	}
}

static struct bwshare_lease *find(struct bwshare *s, const char *node)
{
	for (size_t i = 0; i < s->n; i++)
		if (!strcmp(s->leases[i].node, node))
			return &s->leases[i];
	return NULL;
}

int bwshare_ask(struct bwshare *s, const char *node, bool want, unsigned weight,
		double now, uint64_t *ret_grant, double *ret_renew_s)
{
	struct bwshare_lease *l;
	uint64_t others = 0, weights, fair, free_bw, grant;

	if (!node || !conf_is_node_name(node)) {
		errno = EINVAL;
		return -1;
	}
	expire(s, now);
	l = find(s, node);
	if (!want) {
		if (l)
			*l = s->leases[--s->n];
		*ret_grant = 0;
		*ret_renew_s = s->lease_s / 2;
		return 0;
	}
	if (!l && s->n == s->cap) {
		size_t cap = s->cap ? s->cap * 2 : 16;
		struct bwshare_lease *v;

		if (s->n >= BWSHARE_NODES_MAX) {
			errno = ENOSPC;
			return -1;
		}
		v = realloc(s->leases, cap * sizeof(*v));
		if (!v)
			return -1;
		s->leases = v;
		s->cap = cap;
	}
	if (weight < 1)
		weight = 1;
	if (weight > BWSHARE_WEIGHT_MAX)
		weight = BWSHARE_WEIGHT_MAX;
	weights = weight;
	for (size_t i = 0; i < s->n; i++)
		if (&s->leases[i] != l) {
			others += s->leases[i].grant;
			weights += s->leases[i].weight;
		}
	/* At most 65,536 leases of weight <= 16: the product fits in 64
	 * bits for any budget below 2^44 bytes/s (16 TiB/s); divide first
	 * beyond that. */
	fair = s->budget < ((uint64_t)1 << 44) ? s->budget * weight / weights
					       : s->budget / weights * weight;
	free_bw = others < s->budget ? s->budget - others : 0;
	grant = fair < free_bw ? fair : free_bw;
	if (!l) {
		l = &s->leases[s->n++];
		memset(l, 0, sizeof(*l));
		strcpy(l->node, node); /* checked: shorter than CONF_NODE_MAX */
	}
	l->grant = grant;
	l->weight = weight;
	l->expires = now + s->lease_s;
	*ret_grant = grant;
	*ret_renew_s = grant < fair ? BWSHARE_RETRY_S : s->lease_s / 2;
	return 0;
}

void bwshare_usage(struct bwshare *s, double now, struct bwshare_usage *ret)
{
	uint64_t granted = 0;

	expire(s, now);
	for (size_t i = 0; i < s->n; i++)
		granted += s->leases[i].grant;
	ret->budget = s->budget;
	ret->granted = granted;
	ret->nodes = s->n;
}

uint64_t bwshare_grant_of(struct bwshare *s, const char *node, double now)
{
	struct bwshare_lease *l;

	expire(s, now);
	l = node ? find(s, node) : NULL;
	return l ? l->grant : 0;
}
