/* localread.h - preload libiostage-localread.so into the tasks of a job
 * that reads a spread dataset (remote context; docs/STAGING.md, "Reading
 * a node's own chunks"). */
#ifndef IOSTAGE_SPANK_LOCALREAD_H
#define IOSTAGE_SPANK_LOCALREAD_H

#include <stdbool.h>

#include <slurm/spank.h>

/* In slurmstepd, after task_user_init: when SPREAD (task_spread) and the
 * node's LocalRead= is on, put LocalReadLibrary= first in the tasks'
 * LD_PRELOAD. A speed-up only: every problem is one line in slurmd's log
 * and the tasks read through the view as they would without it. Returns
 * 0. */
int localread_user_init(spank_t sp, bool spread);

#endif /* IOSTAGE_SPANK_LOCALREAD_H */
