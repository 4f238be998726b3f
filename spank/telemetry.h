/* telemetry.h - task pids for iostaged's I/O sampling (remote context). */
#ifndef IOSTAGE_SPANK_TELEMETRY_H
#define IOSTAGE_SPANK_TELEMETRY_H

#include <slurm/spank.h>

/* In slurmstepd before the tasks start: export IOSTAGE_STEP=JOB.STEP (the
 * step as S_JOB_STEPID gives it: 4294967291 in the batch step) and
 * IOSTAGE_SOCKET (where libiostage and `iostage phase` find the daemon).
 * Always 0. */
int telemetry_user_init(spank_t sp);

/* In slurmstepd after forking a task: register its pid, rank and node with
 * iostaged (task_register). Always 0: telemetry never fails a job. */
int telemetry_task_post_fork(spank_t sp);

/* In slurmstepd after reaping a task: task_exit, so iostaged takes its
 * last counters while slurmstepd still holds them. Always 0. */
int telemetry_task_exit(spank_t sp);

#endif /* IOSTAGE_SPANK_TELEMETRY_H */
