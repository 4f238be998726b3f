/* jobctl.c - update a job through libslurm (the Prolog runs as SlurmUser). */
#include <stdio.h>
#include <string.h>

#include <slurm/slurm.h>

#include "common/slurm/slurmcompat.h"
#include "prolog/jobctl.h"

int jobctl_set_comment(uint32_t jobid, const char *text, char *err,
		       size_t errlen)
{
	struct slurmcompat_job_update u = { 0 };
	char comment[1024];
	int rc;

	snprintf(comment, sizeof(comment), "%s", text);
	u.comment = comment;
	slurm_init(NULL);
	rc = slurmcompat_update_job(jobid, &u);
	if (rc != SLURM_SUCCESS)
		snprintf(err, errlen, "cannot set the comment of job %u: %s",
			 jobid, slurmcompat_last_error());
	slurm_fini();
	return rc == SLURM_SUCCESS ? 0 : -1;
}
