/* stage.h - staging a job's datasets: one thread per job, one worker
 * process per dataset, running as the job's user.
 *
 * The worker is this same binary (opened once at start through
 * /proc/self/exe and run with fexecve, so an upgrade on disk cannot swap it
 * under a running daemon) started as
 *     iostaged --stage-worker SRC DSTDIR NAME
 * with the job's uid, gid and supplementary groups, a clean environment and
 * two pipes. It walks SRC and prints {"total_bytes":N,"total_files":N};
 * the staging thread checks the tier's space and answers "go" on the
 * worker's stdin (or closes it); then the worker copies, printing
 * {"bytes":N,"files":N} progress and a final {"ok":true|false,...}.
 */
#ifndef IOSTAGE_DAEMON_STAGE_H
#define IOSTAGE_DAEMON_STAGE_H

#include <stddef.h>

#include "common/conf.h"
#include "daemon/jobs.h"

/* Open our own executable for the workers. CONF must outlive the daemon.
 * 0, or -1 with err. */
int stage_init(const struct conf *conf, char *err, size_t errlen);

/* Close what stage_init opened. */
void stage_fini(void);

/* Start staging JOB (just inserted, ->running set): create TIER/jobs/JOBID
 * on every tier it uses (plus "local" on its home tier) and start its
 * staging thread, which ends with jobs_staging_done. Returns 0, or -1 with
 * err; on failure nothing is left on the tiers and no thread runs. */
int stage_start(struct job *job, char *err, size_t errlen);

#endif /* IOSTAGE_DAEMON_STAGE_H */
