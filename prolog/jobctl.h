/* jobctl.h - tell the user, through Slurm, what happened to staging. */
#ifndef IOSTAGE_PROLOG_JOBCTL_H
#define IOSTAGE_PROLOG_JOBCTL_H

#include <stddef.h>
#include <stdint.h>

/* Set the job's Comment (shown by `scontrol show job` and squeue %k) to
 * TEXT. Returns 0, or -1 with a reason in err. Needs SlurmUser rights. */
int jobctl_set_comment(uint32_t jobid, const char *text, char *err,
		       size_t errlen);

#endif /* IOSTAGE_PROLOG_JOBCTL_H */
