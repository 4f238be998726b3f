/* bwgov.h - this node's share of the cluster's staging bandwidth.
 *
 * With StageBandwidth= set, every staging copy on the node is held to a
 * rate: the node's share of the budget divided among the copies running
 * now. The node's share comes from iostagectld (op stage_bw: a lease
 * renewed about every second while the node copies, given back when it
 * stops, ctld/sched/bw_ops.h); without ControllerHost= the node is the whole
 * cluster and takes the whole budget. While the service does not answer,
 * the node takes StageBandwidthFallback= (default an eighth of the
 * budget), says so in one log line, and one more when the service is
 * back.
 *
 * Each copy's rate is a word in a page of its own (a sealed memfd) that
 * the stage worker maps read-only (--rate-fd) and its copy engine reads
 * before each step (common/fs/ratelimit.h). The daemon only writes the word,
 * never reads the page back: a worker (the job's user) cannot make the
 * daemon act on anything it could write.
 */
#ifndef IOSTAGE_DAEMON_BWGOV_H
#define IOSTAGE_DAEMON_BWGOV_H

#include <stdbool.h>
#include <stdint.h>

#include "common/config/conf.h"

#define BWGOV_ASK_TIMEOUT_MS 1000
#define BWGOV_FALLBACK_RETRY_MS 2000
#define BWGOV_RENEW_MAX_MS 1000     /* half the service's 2 s lease */
#define BWGOV_IDLE_MS (3600 * 1000) /* no copies: until the first one */

struct agent;
struct bwgov;
struct bwgov_slot;

/* What /metrics shows (bytes per second). */
struct bwgov_status {
	bool bounded;        /* StageBandwidth= set */
	uint64_t budget;     /* the cluster's */
	uint64_t node_share; /* this node's now (0 while not copying) */
	unsigned copies;     /* copies held to it */
	bool fallback;       /* the service did not answer: local share */
};

/* The governor of agent A's copies (CONF outlives it; A may be NULL: it
 * reaches no other part). With StageBandwidth= unset: nothing to do;
 * with it and ControllerHost=, a thread asks for the lease. A node that
 * cannot ask copies at the fallback share. NULL only on ENOMEM. The
 * caller owns it: bwgov_destroy. */
struct bwgov *bwgov_create(struct agent *a, const struct conf *conf);

/* Stop the thread, give back the lease, free G (no copy may still run).
 * NULL is a no-op. */
void bwgov_destroy(struct bwgov *g);

/* A copy begins; PRESTAGE: one made on a prediction for a job still in the
 * queue (iostagectld's pre-stage), which weighs 1 to a starting job's copy's 4,
 * here and in the cluster's table (common/sched/bwshare.h). Returns the fd of
 * its rate page (to pass to the worker; the caller closes it after the spawn:
 * the slot keeps its mapping) and *ret_slot, or -1 when copies are unbounded
 * (StageBandwidth= unset, or the page could not be made: then logged, and the
 * copy runs unbounded rather than failing a job for it; *ret_slot = NULL).
 * G NULL (no governor on this agent): -1, unbounded. */
int bwgov_begin(struct bwgov *g, bool prestage, struct bwgov_slot **ret_slot);

/* The copy ended; a NULL G or SLOT is a no-op. */
void bwgov_end(struct bwgov *g, struct bwgov_slot *slot);

/* What /metrics shows; all zero for a NULL G. */
void bwgov_status(struct bwgov *g, struct bwgov_status *ret);

#endif /* IOSTAGE_DAEMON_BWGOV_H */
