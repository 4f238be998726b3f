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
 * printing progress and a final {"ok":true|false,...}.
 *
 * What to copy where (which entry, hit or build, the worker's arguments)
 * is decided by the planner (stage_plan.h); the worker's lines are read
 * by stage_proto.c; this file runs the threads and the workers.
 */
#ifndef IOSTAGE_DAEMON_STAGE_H
#define IOSTAGE_DAEMON_STAGE_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "common/config/conf.h"
#include "daemon/jobs.h"
#include "daemon/spawn.h"
#include "daemon/staging/cache.h"
#include "daemon/staging/stage_plan.h"

struct agent;
struct stage;

/* How a worker is started: spawn_as_user's contract (daemon/spawn.h),
 * with ARG first. A unit test puts its own here (stage_set_spawn). */
typedef int (*stage_spawn_fn)(void *arg, uid_t uid, gid_t gid, const char *user,
			      char *const argv[], char *const envp[],
			      const int *pass_fds, size_t npass,
			      const char *what, struct spawn_proc *ret,
			      char *err, size_t errlen);

/* Resolve PublicUser of CONF (when PublicDatasets=yes) for the public
 * entries' workers: the account must exist and not be root (uid or gid
 * 0). Called at start and by --check-config. Returns 0 with *RET filled
 * (RET may be NULL; ret->ok false when PublicDatasets=no), or -1 with one
 * line in err, e.g. "PublicUser=nobdy: no such user (PublicDatasets=no
 * turns public datasets off)". */
int stage_public_account(const struct conf *conf, struct stage_account *ret,
			 char *err, size_t errlen);

/* The stager of agent A (its conf, tiers, cache and jobs; A must outlive
 * it): the StageParallelism slots and PublicUser resolved. Workers are
 * started through daemon/spawn.c. NULL with err. */
struct stage *stage_create(struct agent *a, char *err, size_t errlen);

/* Free S (no staging thread may still run). NULL is a no-op. */
void stage_destroy(struct stage *s);

/* Start workers with FN(ARG, ...) instead of spawn_as_user (tests). */
void stage_set_spawn(struct stage *s, stage_spawn_fn fn, void *arg);

/* Start staging JOB (just inserted, ->running set): create TIER/jobs/JOBID
 * on every tier it uses (plus "local" on its home tier; nothing for a
 * prestage) and start its staging thread, which stages every dataset
 * through the cache, pins and links it (not for a prestage) and ends with
 * jobs_staging_done. Returns 0, or -1 with err; on failure nothing is left
 * on the tiers and no thread runs. */
int stage_start(struct stage *s, struct job *job, char *err, size_t errlen);

#endif /* IOSTAGE_DAEMON_STAGE_H */
