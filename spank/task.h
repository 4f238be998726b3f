/* task.h - the job's environment in its tasks (remote context). */
#ifndef IOSTAGE_SPANK_TASK_H
#define IOSTAGE_SPANK_TASK_H

#include <stdbool.h>

#include <slurm/spank.h>

/* In slurmstepd, before the tasks start: ask iostaged where the job's data
 * is and export IOSTAGE_* into the job environment. Records a staging
 * failure for task_init. Returns 0; errors are reported, not fatal here. */
int task_user_init(spank_t sp);

/* In each task just before exec: if staging failed and the job's policy is
 * `fail`, print the reason to the task's stderr and return -1 so the task
 * exits non-zero (the job ends FAILED; the node is not drained). */
int task_init(spank_t sp);

/* After task_user_init: did iostaged say the job's tasks read a spread
 * dataset's view on this node? */
bool task_spread(void);

void task_fini(void);

#endif /* IOSTAGE_SPANK_TASK_H */
