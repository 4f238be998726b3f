/* process_agent.c - this process's agent, for the callers not handed one
 * yet (process_agent.h). */
#include "daemon/process_agent.h"

static struct agent empty_agent;

struct agent *process_agent = &empty_agent;
