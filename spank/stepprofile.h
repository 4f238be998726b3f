/* stepprofile.h - the job's profile as a step (remote context) sees it. */
#ifndef IOSTAGE_SPANK_STEPPROFILE_H
#define IOSTAGE_SPANK_STEPPROFILE_H

#include <slurm/spank.h>

/* The job's normalized profile JSON (caller frees), or NULL for a job
 * without --io-profile (or one that cannot be resolved here). */
char *step_profile_json(spank_t sp);

#endif /* IOSTAGE_SPANK_STEPPROFILE_H */
