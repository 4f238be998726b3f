/* siteconf.h - iostage.conf as the plugin sees it: read once per process.
 *
 * SPANK runs the plugin in one process per context: sbatch, salloc or
 * srun at submit (allocator, local), one slurmstepd per step (remote).
 * Every callback in that process uses the same copy, read by the first one
 * that asks from plugstack.conf's conf=PATH (options.conf_path, set in
 * slurm_spank_init). A file that did not load stays failed for the
 * process, with the same message, and each caller says so in its own
 * words (submit fails the job, a step applies the job's policy, telemetry
 * and tracing stay quiet).
 */
#ifndef IOSTAGE_SPANK_SITECONF_H
#define IOSTAGE_SPANK_SITECONF_H

#include <stddef.h>

#include "common/config/conf.h"

/* The site configuration, or NULL with the one-line reason in err (size
 * errlen; err may be NULL) when it did not load. The plugin's, never
 * freed: valid until the process ends. Thread-safe. */
const struct conf *siteconf_get(char *err, size_t errlen);

#endif /* IOSTAGE_SPANK_SITECONF_H */
