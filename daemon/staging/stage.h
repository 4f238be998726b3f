/* stage.h - staging a job's datasets through the cache: one thread per
 * job, one worker process at a time per dataset, running as the job's user.
 *
 * The worker is this same binary (opened once at start through
 * /proc/self/exe and run with fexecve, so an upgrade on disk cannot swap it
 * under a running daemon), started with the job's uid, gid and
 * supplementary groups, a clean environment and two pipes, as described in
 * docs/STAGING.md ("The worker"):
 *     iostaged --stage-worker --verify V --check --manifest-in 3 SRC DIR
 *     iostaged --stage-worker --verify V [--previous DIR/data
 *              --manifest-in 3] --manifest-out 4 SRC BUILDDIR
 * The copy worker prints its totals after the walk; the staging thread
 * reserves copy_bytes on the tier (evicting cache entries if needed) and
 * answers "go" on the worker's stdin (or closes it); then the worker copies,
 * printing progress and a final {"ok":true|false,...}. A worker built
 * before that interface ("SRC DSTDIR NAME") is detected at start and still
 * used: every version is then rebuilt rather than checked.
 */
#ifndef IOSTAGE_DAEMON_STAGE_H
#define IOSTAGE_DAEMON_STAGE_H

#include <stddef.h>

#include "common/config/conf.h"
#include "daemon/staging/cache.h"
#include "daemon/jobs.h"

/* Remember CONF and CACHE (both must outlive the daemon; the cache may be
 * NULL where nothing is staged) and set up the StageParallelism slots.
 * Workers are started through daemon/spawn.c. */
void stage_init(const struct conf *conf, struct cache *cache);

/* Resolve PublicUser of CONF (when PublicDatasets=yes) for the public
 * entries' workers: the account must exist and not be root (uid or gid
 * 0). Called at start and by --check-config. Returns 0, or -1 with one
 * line in err, e.g. "PublicUser=nobdy: no such user (PublicDatasets=no
 * turns public datasets off)". */
int stage_public_account(const struct conf *conf, char *err, size_t errlen);

/* Start staging JOB (just inserted, ->running set): create TIER/jobs/JOBID
 * on every tier it uses (plus "local" on its home tier; nothing for a
 * prestage) and start its staging thread, which stages every dataset
 * through the cache, pins and links it (not for a prestage) and ends with
 * jobs_staging_done. Returns 0, or -1 with err; on failure nothing is left
 * on the tiers and no thread runs. */
int stage_start(struct job *job, char *err, size_t errlen);

#endif /* IOSTAGE_DAEMON_STAGE_H */
