/* agent_life.h - a node agent's parts made and freed in their order.
 *
 * iostaged's main(), the unit tests (tests/unit/check_agent.c: two agents
 * in one process) and the fuzz targets that start the daemon's modules
 * make their agents here, so that the order that matters (the drain
 * before the jobs are loaded, the views detached before the cache is
 * reconciled) is written once. The struct is in daemon/agent.h.
 */
#ifndef IOSTAGE_DAEMON_AGENT_LIFE_H
#define IOSTAGE_DAEMON_AGENT_LIFE_H

#include <stddef.h>
#include <sys/types.h>

#include "daemon/agent.h"

/* The parts that hold no job state yet, over A->conf (set by the
 * caller, with conf_path): the tiers, the cache over them, the stager and
 * the figures. OWNER owns the tiers' roots, StateDir and the cache (root in
 * iostaged; a unit test's own uid). 0, or -1 with err and whatever was
 * made freed (the fields NULL again). */
int agent_create(struct agent *a, uid_t owner, char *err, size_t errlen);

/* Then the state the last run left, read back in this order: the job
 * table (StateDir/jobs), the drain (before the jobs are loaded: it
 * resumes their outputs), the jobs, the views of jobs no longer known
 * detached, the cache reconciled against the jobs, telemetry's live
 * records, a multi-node job's parts. iostaged claims its socket between
 * agent_create and this, so that a second daemon stops at "already
 * running" before it touches the first one's state. 0, or -1 with err
 * (what was made stays, for agent_destroy). The owner is agent_create's. */
int agent_load(struct agent *a, char *err, size_t errlen);

/* Free what agent_create and agent_load made, in the reverse order, and
 * set those fields to NULL. The parts the caller made (socket, peer,
 * forward, metrics, bandwidth, cache report) must be gone; so must every
 * connection thread. */
void agent_destroy(struct agent *a);

#endif /* IOSTAGE_DAEMON_AGENT_LIFE_H */
