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
};

/* Read SLURM_JOB_ID/UID/GID/USER and SPANK_IOSTAGE_PROFILE. Returns 1 for an
 * iostage job, 0 for a job without --io-profile (nothing to do), -1 with a
 * one-line reason in err if Slurm's variables are missing or malformed. */
int jobinfo_from_env(struct jobinfo *ret, char *err, size_t errlen);

#endif /* IOSTAGE_PROLOG_JOBINFO_H */
