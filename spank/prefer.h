/* prefer.h - the job's placement preference, asked of iostagectld at
 * submit (docs/SCHEDULING.md, Placement).
 *
 * Allocator context (and srun creating its own allocation), as the user,
 * after the profile is validated: the service answers which of the nodes'
 * published dataset features the job should prefer, and the answer goes
 * into the job-control environment as IOSTAGE_PREFER, where
 * slurm-conf/job_submit.lua on slurmctld turns it into the job's
 * --prefer (and, with IOSTAGE_HOLD when PlacementHold= is on, its
 * constraint too). sbatch and salloc also register the datasets for pre-staging
 * and get a ticket (PREFER_TICKET_ENV). Never fails or delays a
 * submission beyond PREFER_TIMEOUT_MS.
 */
#ifndef IOSTAGE_SPANK_PREFER_H
#define IOSTAGE_SPANK_PREFER_H

#include <slurm/spank.h>

#include "common/config/conf.h"
#include "common/config/profile.h"

#define PREFER_TIMEOUT_MS 1000
/* The job-control variable job_submit.lua reads. */
#define PREFER_ENV "IOSTAGE_PREFER"
/* "1" when the service also asks to hold the job for those nodes
 * (PlacementHold=): job_submit.lua makes the preference its constraint. */
#define PREFER_HOLD_ENV "IOSTAGE_HOLD"
/* sbatch's own environment: the ticket cli_filter.lua's post_submit
 * hands to `iostage job-note` with the job id (ctld/sched/pending.h). */
#define PREFER_TICKET_ENV "IOSTAGE_TICKET"

/* Ask and set PREFER_ENV when there is a preference; logs at most one
 * debug line; nothing happens without ControllerHost=. */
void prefer_apply(spank_t sp, const struct profile *profile,
		  const struct conf *conf);

#endif /* IOSTAGE_SPANK_PREFER_H */
