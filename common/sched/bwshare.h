/* bwshare.h - one bandwidth budget shared by leases (StageBandwidth=).
 *
 * iostagectld keeps one table for the cluster: each node that is copying
 * from the PFS holds a lease, a share of the budget for a short period,
 * and renews it while it copies. The sum of the unexpired leases never
 * exceeds the budget, so the nodes' copies, each held to its lease by its
 * copy engine (common/fs/ratelimit.h), stay within it together.
 *
 * A node's share is its weight's part of the budget (the budget times its
 * weight over the sum of the holders' weights: a node copying for jobs
 * that are starting weighs BWSHARE_WEIGHT_STAGING, one that only copies
 * on a prediction, pre-staging, BWSHARE_WEIGHT_PRESTAGE), but never more
 * than what the others leave free: a node that arrives while
 * the others hold everything gets what is free (maybe nothing) and asks
 * again soon; the others shrink to their fair share at their next
 * renewal, and then it gets its own. Leases expire on their own, so a
 * node that died gives its share back after one period.
 *
 * Pure: time is a parameter (seconds, any monotonic origin), no locking
 * (the caller's), no I/O. Unit-tested in tests/unit/check_bwshare.c.
 */
#ifndef IOSTAGE_BWSHARE_H
#define IOSTAGE_BWSHARE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/config/conf.h"

#define BWSHARE_NODES_MAX 65536 /* leases held at once */
#define BWSHARE_LEASE_S 2.0     /* a lease's period */
#define BWSHARE_RETRY_S 0.25    /* ask again this soon when short */
/* Weights: a starting job's Prolog waits for its copy, a pre-stage's job
 * is still in the queue, so the first takes four parts to one. */
#define BWSHARE_WEIGHT_PRESTAGE 1
#define BWSHARE_WEIGHT_STAGING 4
#define BWSHARE_WEIGHT_MAX 16

struct bwshare_lease {
	char node[CONF_NODE_MAX];
	uint64_t grant;  /* bytes/s */
	unsigned weight; /* 1..BWSHARE_WEIGHT_MAX */
	double expires;
};

struct bwshare {
	uint64_t budget; /* bytes/s; 0 = unbounded */
	double lease_s;
	struct bwshare_lease *leases;
	size_t n, cap;
};

/* What the table holds now. */
struct bwshare_usage {
	uint64_t budget;  /* bytes/s */
	uint64_t granted; /* sum of the unexpired leases */
	size_t nodes;     /* nodes holding one */
};

/* An empty table for BUDGET bytes/s, leases of LEASE_S seconds (<= 0:
 * BWSHARE_LEASE_S). Cannot fail. */
void bwshare_init(struct bwshare *s, uint64_t budget, double lease_s);

/* Frees the leases; NULL is a no-op. */
void bwshare_fini(struct bwshare *s);

/* NODE (a valid NodeName) asks at NOW: WANT takes or renews its lease with
 * WEIGHT (0 counts as 1, more than BWSHARE_WEIGHT_MAX as that), !WANT gives
 * it back (then *ret_grant = 0). On success *ret_grant is the
 * node's bytes/s until NOW + lease period, *ret_renew_s when to ask again
 * (half the period, or BWSHARE_RETRY_S while the node has less than its
 * fair share). A budget of 0 grants nothing and means unbounded: callers
 * check s->budget. Returns 0, or -1 with errno EINVAL (bad node name) or
 * ENOSPC (BWSHARE_NODES_MAX leases held) or ENOMEM; nothing changes on
 * failure. */
int bwshare_ask(struct bwshare *s, const char *node, bool want, unsigned weight,
		double now, uint64_t *ret_grant, double *ret_renew_s);

/* The table at NOW (expired leases are dropped first). */
void bwshare_usage(struct bwshare *s, double now, struct bwshare_usage *ret);

/* The lease of NODE at NOW, or 0 when it holds none. */
uint64_t bwshare_grant_of(struct bwshare *s, const char *node, double now);

#endif /* IOSTAGE_BWSHARE_H */
