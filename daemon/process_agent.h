/* process_agent.h - this process's agent, for the callers that are not
 * handed one yet.
 *
 * Issue 28 moves every part of iostaged into a struct reached through
 * struct agent (daemon/agent.h). While that lands module by module, some
 * callers of the parts already converted (telemetry, stats, bwgov) have
 * no agent in reach: the socket's op handlers, the stager, the fuzz
 * targets. They find it here. iostaged's main() points it at its agent;
 * it starts at an empty one (every part NULL), which the converted parts
 * take as "not running". A caller that is handed its agent stops using
 * this; when none does, it goes.
 */
#ifndef IOSTAGE_DAEMON_PROCESS_AGENT_H
#define IOSTAGE_DAEMON_PROCESS_AGENT_H

#include "daemon/agent.h"

/* Never NULL. */
extern struct agent *process_agent;

#endif /* IOSTAGE_DAEMON_PROCESS_AGENT_H */
