/* jobinfo.h - what slurmd tells a Prolog/Epilog about the job. */
#ifndef IOSTAGE_PROLOG_JOBINFO_H
#define IOSTAGE_PROLOG_JOBINFO_H

#include <stdint.h>
#include <sys/types.h>

struct jobinfo {
	uint32_t jobid;
	uid_t uid;
	gid_t gid;
	const char *user;
	const char *profile_json; /* SPANK_IOSTAGE_PROFILE, NULL if none */
	const char *nodelist;     /* SLURM_JOB_NODELIST or SLURM_NODELIST
				   * ("n[1-3]"), or NULL */
	const char *node;         /* SLURMD_NODENAME: this node, or NULL */
};

/* Read SLURM_JOB_ID/UID/GID/USER, SPANK_IOSTAGE_PROFILE, and (optional)
 * SLURM_JOB_NODELIST (or SLURM_NODELIST) and SLURMD_NODENAME. Returns 1 for an
 * iostage job, 0 for a job without --io-profile (nothing to do), -1 with a
 * one-line reason in err if Slurm's variables are missing or malformed. */
int jobinfo_from_env(struct jobinfo *ret, char *err, size_t errlen);

#endif /* IOSTAGE_PROLOG_JOBINFO_H */
