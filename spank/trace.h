/* trace.h - deep mode: the LD_PRELOAD I/O shim in a job's tasks. */
#ifndef IOSTAGE_SPANK_TRACE_H
#define IOSTAGE_SPANK_TRACE_H

#include <slurm/spank.h>

/* In slurmstepd (remote context, user_init), for a job whose profile says
 * trace=true or on a node whose iostage.conf says Trace=yes: put
 * libiostage-preload.so first in the tasks' LD_PRELOAD (keeping the
 * user's), and set IOSTAGE_TRACE_CLASSES and IOSTAGE_SOCKET for it.
 * Returns 0 always: a job whose tracing cannot be set up runs untraced
 * (the reason is logged with slurm_error). */
int trace_user_init(spank_t sp);

#endif /* IOSTAGE_SPANK_TRACE_H */
