/* spreadplan.h - how the nodes of a job agree on a spread dataset's plan
 * (issue 29 item 3; docs/STAGING.md, "Spread datasets").
 *
 * A plan names every node of the job with a weight (common/sched/spread.h):
 * every node, and every node's view, must place each file with the very
 * same plan, so exactly one node decides it: the job's head (its first
 * node). It asks every node of the job at once for the free space of the
 * dataset's tier (peer op tier_space), weighs each node by it (MiB, at
 * least 1: a node that does not answer keeps a weight of 1 and so almost
 * nothing, and whatever it would have held is read from the PFS through
 * the views), and keeps the plan with the job. The other nodes ask the
 * head for it (peer op spread_plan, every 250 ms while it plans).
 *
 * A node whose head does not know the job within 10 s, or failed it,
 * fails the dataset: the job's on-failure policy applies, the same on
 * every node (a node that guessed a plan of its own would place files
 * where no other node looks). One node (a one-node job, or PeerPort=0):
 * that node alone, which holds everything.
 */
#ifndef IOSTAGE_DAEMON_SPREADPLAN_H
#define IOSTAGE_DAEMON_SPREADPLAN_H

#include <stddef.h>

#include <cJSON.h>

#include "common/net/peernet.h"
#include "daemon/cluster/fill.h"

struct agent;
struct job;

#define SPREADPLAN_ASK_MS 2000 /* one round of tier_space */
#define SPREADPLAN_POLL_MS 250
#define SPREADPLAN_HEAD_UNKNOWN_MS 10000

/* Dataset I of JOB (on node-local tier TIER): its plan into RET (LEN
 * bytes; SPREAD_SPEC_MAX is always enough), decided here (the head, or a
 * node alone) or asked of the head. 0, or -1 with one line in err (STOP
 * said so, the head failed or does not know the job, a malformed plan). */
int spreadplan_get(struct agent *a, struct job *job, size_t i, const char *tier,
		   fill_stop_fn stop, void *arg, char *ret, size_t len,
		   char *err, size_t errlen);

/* What a spread dataset could take on tier T of this node: its free
 * space plus what cache entries hold there (evicted for it if need be). */
uint64_t spreadplan_room(struct agent *a, int t);

/* This node's name in plans (NodeName). */
const char *spreadplan_self(const struct agent *a);

/* peer op tier_space {tier}: {"free":BYTES} of this node's tier. */
cJSON *spreadplan_op_tier_space(struct agent *a, const struct peernet_peer *p,
				const cJSON *req);

/* peer op spread_plan {job, dataset}: {"state":"ready","plan":SPEC}, or
 * state "planning" (the head has not decided yet), "failed" or
 * "unknown" (no such job here). */
cJSON *spreadplan_op_plan(struct agent *a, const struct peernet_peer *p,
			  const cJSON *req);

#endif /* IOSTAGE_DAEMON_SPREADPLAN_H */
