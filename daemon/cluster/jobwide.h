/* jobwide.h - a multi-node job's staging outcome, the same on every node.
 *
 * Each node stages its own copy; the job's policy must apply to the whole
 * job. Once this node's staging has ended, jobwide_wait() asks the job's
 * other nodes (peer op stage_state) until every one is final or the
 * deadline passes: all staged -> staged; one failed -> this node's job
 * fails too, with "node N: reason" (jobs_fail_jobwide), so job_env, the
 * record and the policy agree on every node. A node that cannot be
 * reached for PEER_UNREACHABLE_S counts as failed ("iostaged
 * unreachable"); one that does not know the job yet (its Prolog has not
 * asked) is waited for. Single-node jobs never get here.
 */
#ifndef IOSTAGE_DAEMON_JOBWIDE_H
#define IOSTAGE_DAEMON_JOBWIDE_H

#include <stddef.h>

#include "common/config/conf.h"
#include "daemon/jobs.h"

#define JOBWIDE_UNREACHABLE_S 3 /* unreachable this long: failed */
#define JOBWIDE_POLL_MS 500     /* between rounds of stage_state */

/* For multi-node JOB whose local view *V is final (staged or failed):
 * wait until TIMEOUT_S for the job-wide outcome and update *V (state
 * "staging" if other nodes are still staging at the deadline). RET_NODE
 * (LEN) gets the node that failed the job ("" if none; this node's name
 * when it failed here), RET_WAITING a node still staging ("" if none). */
struct agent;

/* A is the agent whose peer channel asks the other nodes (none, or off:
 * this node's own outcome stands). */
void jobwide_wait(struct agent *a, struct job *job, unsigned timeout_s,
		  struct job_view *v, char *ret_node, char *ret_waiting,
		  size_t len);

#endif /* IOSTAGE_DAEMON_JOBWIDE_H */
