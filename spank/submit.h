/* submit.h - --io-profile at submission (sbatch, salloc, srun). */
#ifndef IOSTAGE_SPANK_SUBMIT_H
#define IOSTAGE_SPANK_SUBMIT_H

#include <slurm/spank.h>

/* Validate the job's --io-profile as the submitting user and hand the
 * normalized profile to the Prolog through the job-control environment
 * (SPANK_IOSTAGE_PROFILE). A bad SPEC is reported in one slurm_error line
 * and returns -1, which makes sbatch/salloc/srun exit without queueing. */
int submit_init_post_opt(spank_t sp);

#endif /* IOSTAGE_SPANK_SUBMIT_H */
