/* jobctl.c - update a job through libslurm (the Prolog runs as SlurmUser). */
#include <stdio.h>
#include <string.h>

#include <slurm/slurm.h>
#include <slurm/slurm_errno.h>

#include "prolog/jobctl.h"

int jobctl_set_comment(uint32_t jobid, const char *text, char *err,
		       size_t errlen)
{
	job_desc_msg_t desc;
	char comment[1024];
	int rc;

	snprintf(comment, sizeof(comment), "%s", text);
	slurm_init(NULL);
	slurm_init_job_desc_msg(&desc);
	desc.job_id = jobid;
	desc.comment = comment;
	rc = slurm_update_job(&desc);
	if (rc != SLURM_SUCCESS) {
		snprintf(err, errlen, "cannot set the comment of job %u: %s",
			 jobid, slurm_strerror(slurm_get_errno()));
		slurm_fini();
		return -1;
	}
	slurm_fini();
	return 0;
}
