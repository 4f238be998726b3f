/* joblayout.h - where a job's staged data lives, and what its tasks see.
 *
 * On each tier a job uses:   TIER/jobs/JOBID/             (user, 0700)
 *                            (TIER/jobs/JOBID.NODE/ on a Shared=yes tier)
 *                            TIER/jobs/JOBID/data/NAME    (a staged dataset)
 *                            TIER/jobs/JOBID/out/NAME     (an output, user
 *                                      0700, drained to its PFS path)
 * and on the job's default tier: TIER/jobs/JOBID/local    (private scratch)
 * TIER and TIER/jobs are root's (0755), so users cannot plant links there.
 *
 * Task environment (DESIGN.md): IOSTAGE_DATA (first dataset),
 * IOSTAGE_DATA_<NAME>, IOSTAGE_LOCAL, IOSTAGE_OUTPUT (first output) and
 * IOSTAGE_OUTPUT_<NAME>, IOSTAGE_JOB_DIR; in fallback every data/output
 * variable names the PFS path and IOSTAGE_FALLBACK=1 is added.
 */
#ifndef IOSTAGE_JOBLAYOUT_H
#define IOSTAGE_JOBLAYOUT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/config/conf.h"
#include "common/config/profile.h"

#define JOBLAYOUT_ENV_MAX (2 * (PROFILE_MAX_DATASETS + PROFILE_MAX_OUTPUTS) + 8)
#define JOBLAYOUT_ENV_NAME_MAX 64

struct joblayout_var {
	char name[JOBLAYOUT_ENV_NAME_MAX];
	char value[CONF_PATH_MAX + 64];
};

struct joblayout_env {
	struct joblayout_var vars[JOBLAYOUT_ENV_MAX];
	size_t n;
};

/* The job directory's name below TIER/jobs: "JOBID", or "JOBID.NODE"
 * (conf's NodeName) on a Shared=yes tier. A tier that several nodes see
 * holds one directory per node of a multi-node job, so that each node's
 * iostaged makes, links and removes its own: a node's Prolog or Epilog
 * never touches what another node's tasks are using. 0, or -1
 * (ENAMETOOLONG); buf untouched on failure. */
#define JOBLAYOUT_JOB_NAME_MAX (CONF_NODE_MAX + 16)
int joblayout_job_name(const struct conf *conf, const struct conf_tier *tier,
		       uint32_t jobid, char *buf, size_t buflen);

/* TIER/jobs/NAME (NAME from joblayout_job_name) into buf. Returns 0, or -1
 * (ENAMETOOLONG); buf untouched on failure. */
int joblayout_job_dir(const struct conf *conf, const struct conf_tier *tier,
		      uint32_t jobid, char *buf, size_t buflen);

/* TIER/jobs/JOBID/data/NAME for dataset DS of a normalized profile. */
int joblayout_dataset_path(const struct conf *conf,
			   const struct profile_dataset *ds, uint32_t jobid,
			   char *buf, size_t buflen);

/* The directory holding a job's outputs on a tier, below its job dir. */
#define JOBLAYOUT_OUT_DIR "out"

/* TIER/jobs/JOBID/out/NAME for output OUT of a normalized profile: where its
 * tasks write (IOSTAGE_OUTPUT_<NAME>); daemon/staging/drain.c copies it to
 * OUT->path. 0, or -1 (ENAMETOOLONG, ENOENT for an unknown tier); buf is
 * untouched on failure. */
int joblayout_output_path(const struct conf *conf,
			  const struct profile_output *out, uint32_t jobid,
			  char *buf, size_t buflen);

/* The job's default tier: the first dataset's tier, else the profile's tier,
 * else conf's DefaultTier. Never NULL for a normalized profile. */
const struct conf_tier *joblayout_home_tier(const struct conf *conf,
					    const struct profile *profile);

/* The environment for a job whose datasets were staged (fallback = false)
 * or that runs on the PFS paths (fallback = true). 0 or -1 (ENAMETOOLONG,
 * ENOENT for an unknown tier). *ret untouched on failure. */
int joblayout_env(const struct conf *conf, const struct profile *profile,
		  uint32_t jobid, bool fallback, struct joblayout_env *ret);

#endif /* IOSTAGE_JOBLAYOUT_H */
