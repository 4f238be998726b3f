/* jobinfo.c - read the job's identity from the Prolog/Epilog environment. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>

#include "prolog/jobinfo.h"

static int env_u32(const char *name, uint32_t *ret, char *err, size_t errlen)
{
	const char *s = getenv(name);
	unsigned long v;
	char *end;

	if (!s || !*s) {
		snprintf(err, errlen, "%s is not set (not run by slurmd?)",
			 name);
		return -1;
	}
	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno || *end || v > UINT32_MAX) {
		snprintf(err, errlen, "%s='%s' is not a number", name, s);
		return -1;
	}
	*ret = (uint32_t)v;
	return 0;
}

int jobinfo_from_env(struct jobinfo *ret, char *err, size_t errlen)
{
	struct jobinfo info = { 0 };
	uint32_t uid, gid;

	info.profile_json = getenv("SPANK_IOSTAGE_PROFILE");
	if (!info.profile_json || !*info.profile_json)
		return 0;
	if (env_u32("SLURM_JOB_ID", &info.jobid, err, errlen) < 0 ||
	    env_u32("SLURM_JOB_UID", &uid, err, errlen) < 0 ||
	    env_u32("SLURM_JOB_GID", &gid, err, errlen) < 0)
		return -1;
	info.uid = uid;
	info.gid = gid;
	/* slurmd 22.05 gives a Prolog SLURM_NODELIST; later versions also
	 * SLURM_JOB_NODELIST. */
	info.nodelist = getenv("SLURM_JOB_NODELIST");
	if (!info.nodelist || !*info.nodelist)
		info.nodelist = getenv("SLURM_NODELIST");
	if (info.nodelist && !*info.nodelist)
		info.nodelist = NULL;
	info.node = getenv("SLURMD_NODENAME");
	if (info.node && !*info.node)
		info.node = NULL;
	info.user = getenv("SLURM_JOB_USER");
	if (!info.user || !*info.user) {
		snprintf(err, errlen, "SLURM_JOB_USER is not set");
		return -1;
	}
	*ret = info;
	return 1;
}
