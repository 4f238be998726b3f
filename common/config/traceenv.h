/* traceenv.h - the environment that turns on deep mode in a job's tasks.
 *
 * Deep mode (trace=true in the profile, or Trace=yes in iostage.conf)
 * preloads libiostage-preload.so (docs/SHIM.md) into every task. The shim
 * learns which trees are datasets and outputs from IOSTAGE_TRACE_CLASSES:
 * "CLASS=PATH" entries joined by ':', CLASS dataset or output, with both
 * the staged paths (TIER/jobs/J/data/NAME, .../out/NAME) and the PFS paths
 * (a dataset's source, an output's destination), so the classes hold
 * whether the job runs staged or fell back to the PFS.
 */
#ifndef IOSTAGE_TRACEENV_H
#define IOSTAGE_TRACEENV_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/config/conf.h"
#include "common/config/profile.h"

/* Room for IOSTAGE_TRACE_CLASSES: every dataset and output twice. */
#define TRACEENV_CLASSES_MAX                                                   \
	(2 * (PROFILE_MAX_DATASETS + PROFILE_MAX_OUTPUTS) *                    \
	 (CONF_PATH_MAX + 16))

/* Is deep mode on for a job with this normalized profile? */
bool traceenv_wanted(const struct conf *conf, const struct profile *profile);

/* IOSTAGE_TRACE_CLASSES for job JOBID of a normalized PROFILE into buf
 * (size buflen). Paths holding ':' cannot be expressed and are left out;
 * *ret_skipped (may be NULL) counts the entries left out (IOSTAGE_DATA
 * and IOSTAGE_DATA_<NAME> are two). An observed profile
 * (profile_observe) adds "pfs=" conf PfsPath: the shim counts reads there
 * as the dataset class and notes the tree they hit. Returns 0, or -1 with errno
 * (ENAMETOOLONG: buf too small; ENOENT: a tier the conf lacks); buf is
 * untouched on failure. */
int traceenv_classes(const struct conf *conf, const struct profile *profile,
		     uint32_t jobid, char *buf, size_t buflen,
		     size_t *ret_skipped);

/* LD_PRELOAD with LIB first and the user's OLD value (NULL or "" when
 * unset) kept after it; OLD unchanged if it already preloads LIB.
 * Returns 0, or -1 (EINVAL: LIB empty or holding ':' or a blank;
 * ENAMETOOLONG); buf untouched on failure. */
int traceenv_preload(const char *lib, const char *old, char *buf,
		     size_t buflen);

#endif /* IOSTAGE_TRACEENV_H */
