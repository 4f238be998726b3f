/* drain.h - a job's outputs, drained from the tier to the PFS.
 *
 * IOSTAGE_OUTPUT[_NAME] points at TIER/jobs/J/out/NAME (created here, owned
 * by the user, 0700). While the job runs, one inotify thread watches every
 * such directory (recursively; IN_CLOSE_WRITE and IN_MOVED_TO for files,
 * IN_CREATE/IN_MOVED_TO for new directories, a rescan on IN_Q_OVERFLOW);
 * a file closed after writing or moved in is queued, and after a short
 * settling delay (so that a file written under a temporary name and renamed
 * at once is copied only under its final name) a drain worker copies it to
 * the output's PFS path. Outputs with drain=end are not watched.
 *
 * The drain worker (`iostaged --drain-worker LOCALDIR PFSDIR`, see
 * drain_worker.h) is started per output when there is something to copy,
 * with the job user's uid, gid and groups (daemon/spawn.c): root never
 * opens a file under the output directory, it only watches it and passes
 * relative paths, which the worker checks again. Its output is untrusted.
 *
 * At finish (the Epilog), the rest is drained: queued files, then a final
 * scan of the whole directory that copies whatever differs from the PFS
 * copy (size, mtime, type, link target). Finish waits up to DrainTimeout.
 * If the deadline passes, a worker cannot run, or the final scan reports
 * failures, the job's TIER/jobs/J/out is moved to TIER/jobs/.undrained/J
 * (still the user's) instead of being removed with the job, and the log
 * and the record say so.
 *
 * Accounting per job: files and bytes drained during the run and at the
 * end, the end phase's duration, the backlog, failures. It is in `status`
 * (jobs[].drain) and in StateDir/drain/J.json (root 0600), rewritten while
 * the job runs and kept after finish (30 days) as the record of the drain;
 * one line is logged per job at finish:
 *   job 42: drained 3 files (1.2 GiB) during the run, 1 file (10 MiB) at
 *   the end in 0.4 s
 *
 * Locking: the drain's lock is taken after jobs.c's lock (status calls
 * drain_status_json with it held); nothing here calls into jobs.c with
 * the drain's lock held. The parts of the drain, one concern per file,
 * are listed in drain_internal.h.
 */
#ifndef IOSTAGE_DAEMON_DRAIN_H
#define IOSTAGE_DAEMON_DRAIN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cJSON.h>

#include "common/config/conf.h"
#include "daemon/jobs.h"

struct agent;
struct drain;

/* Make the drain of agent A (A->conf must outlive it): inotify,
 * StateDir/drain (root 0700; records older than 30 days are removed), the
 * drain thread; and give the job table its hooks (jobs_set_drain_hooks:
 * the status object, the resume of a reloaded job) when no other drain
 * holds them. Call after jobs_create (it hooks into the table), before jobs_load.
 * The drain, or NULL with err (nothing left running). */
struct drain *drain_create(struct agent *a, char *err, size_t errlen);

/* Stop D's thread: kill the workers, wake every drain_finish waiter (it
 * fails: the job keeps its directories). Call before waiting for the
 * connection threads. NULL is a no-op; so is a second call. */
void drain_shutdown(struct drain *d);

/* Stop D (drain_shutdown) and free it, giving the job table's hooks back
 * (only when no connection thread runs any more). NULL is a no-op. */
void drain_destroy(struct drain *d);

/* JOB's outputs (if any): create TIER/jobs/J/out/NAME (user, 0700; an
 * existing one must be a directory owned by the job's user) and start
 * watching. TIER/jobs/J must exist on each output's tier. With RESUME
 * (a job reloaded after a restart) the counters are read back from its
 * record. 0, or -1 with err (nothing registered). */
int drain_job_start(struct drain *d, const struct job *job, bool resume,
		    char *err, size_t errlen);

/* Forget job ID's drain without draining (its staging could not start). */
void drain_job_forget(struct drain *d, uint32_t id);

/* Finish: drain what is left of job ID's outputs, waiting up to
 * DrainTimeout, log the summary, write the record. A job without outputs,
 * or unknown, returns 0 at once. Returns 0 when the job's directories may
 * be removed (everything is on the PFS, or what is not was moved to
 * TIER/jobs/.undrained), or -1 with err when they must stay (results could
 * not be moved aside; iostaged stopping). Blocks; call from a connection
 * thread. */
int drain_finish(struct drain *d, uint32_t id, char *err, size_t errlen);

/* The "drain" object of job ID for status, or NULL (no outputs, or
 * ENOMEM): {phase, during_bytes, during_files, end_bytes, end_files,
 * end_seconds, backlog_files, failed_files, kept}. May be called with the
 * job table locked. The caller owns it. */
cJSON *drain_status_json(struct drain *d, uint32_t id);

#endif /* IOSTAGE_DAEMON_DRAIN_H */
