/* agent_bridge.h - the process's one agent, for the modules not yet
 * converted to take theirs (issue 28).
 *
 * server.c, the cluster ops, drain.c and telemetry/ still keep their state
 * in file-scope variables and are created without an agent; their calls
 * into the job table, the stager and the tiers (which take their struct
 * first) reach them through this pointer, set by main() once the agent's
 * parts exist (and by the fuzz targets that drive those modules). It goes
 * when the last of them takes its agent: nothing new may use it.
 */
#ifndef IOSTAGE_DAEMON_AGENT_BRIDGE_H
#define IOSTAGE_DAEMON_AGENT_BRIDGE_H

#include "daemon/agent.h"

#include <stdbool.h>
#include <stdint.h>

extern struct agent *agent_bridge;

/* jobs_known(agent_bridge->jobs, ID), for cache_recover's callback. */
bool agent_bridge_job_known(uint32_t id);

#endif /* IOSTAGE_DAEMON_AGENT_BRIDGE_H */
