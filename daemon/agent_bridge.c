/* agent_bridge.c - the process's one agent for the modules not yet
 * converted (see agent_bridge.h). */
#include "daemon/agent_bridge.h"
#include "daemon/jobs.h"

struct agent *agent_bridge;

bool agent_bridge_job_known(uint32_t id)
{
	return agent_bridge && jobs_known(agent_bridge->jobs, id);
}
