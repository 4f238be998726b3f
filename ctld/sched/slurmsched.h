/* slurmsched.h - iostagectld's side of Slurm (docs/SCHEDULING.md).
 *
 * One thread talks to slurmctld through libslurm, as root on the
 * controller or an admin host (SLURM_CONF names the cluster):
 *   - publishes each node's dataset features (ctld/sched/placement.h) with
 *     `scontrol update NodeName=.. AvailableFeatures=.. ActiveFeatures=..`'s
 *     RPC, and re-publishes whenever Slurm lost them (slurmctld restart,
 *     reconfigure), since Slurm keeps such changes in memory only;
 *   - counts, for jobs that started, whether their --prefer was honoured.
 * Placement is given to submissions only while slurmctld runs with
 * SchedulerParameters=ignore_prefer_validation: without it a preference
 * Slurm cannot meet (a feature just withdrawn) would reject the job.
 */
#ifndef IOSTAGE_CTLD_SLURMSCHED_H
#define IOSTAGE_CTLD_SLURMSCHED_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "common/config/conf.h"

/* Seconds between two looks at Slurm's nodes and jobs (sooner when a
 * node's cache changed). */
#define SLURMSCHED_INTERVAL_S 2

/* Where libslurm looks without SLURM_CONF (Debian's build). */
#define SLURMSCHED_DEFAULT_CONF "/etc/slurm/slurm.conf"

/* Start the thread, when Slurm's configuration (SLURM_CONF, else the
 * default) is readable. CONF must outlive it. 0, or -1 with err. */
int slurmsched_start(const struct conf *conf, char *err, size_t errlen);

/* Stop and join it. Without a start: nothing. */
void slurmsched_stop(void);

/* Does slurmctld run with ignore_prefer_validation (as last seen)? */
bool slurmsched_prefer_safe(void);

/* Is placement on: Placement=yes (iostage.conf) and prefer_safe? */
bool slurmsched_placement_on(void);

/* PlacementHold= when placement is on, else 0 (no job is held). */
unsigned slurmsched_hold_s(void);

/* When slurmctld last answered the job table (0: never, or no thread),
 * and how many times it did not. */
void slurmsched_health(time_t *ret_ok_at, uint64_t *ret_errors);

#endif /* IOSTAGE_CTLD_SLURMSCHED_H */
