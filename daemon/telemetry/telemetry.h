/* telemetry.h - each iostage job's I/O record (docs/RECORDS.md), built while
 * the job runs and kept after it.
 *
 * A record is created the first time a job is seen by telemetry (a task
 * registration, a phase marker, a shim report, a query, or finish) from the job
 * table: stage_in comes from the staging accounting, the run phase from the
 * /proc sampler (daemon/telemetry/sampler.h) of the registered tasks,
 * sub-phases from markers and shim reports, stage_out from the drain accounting
 * at finish. Records are written to StateDir/telemetry/J.json (root 0600,
 * atomically) every few seconds while they change and at finish; a restarted
 * daemon reloads the unfinished ones and follows their live tasks again.
 * Finished records stay on disk for TELEMETRY_KEEP_DAYS and are answered from
 * there; older ones are removed at start-up.
 *
 * Users see only their own jobs' records; root sees all. Every function
 * here is safe from any thread; none blocks for long (reading /proc and a
 * small file).
 *
 * All of it is struct telemetry, one per agent (daemon/agent.h), made by
 * telemetry_create over a StateDir and passed first to every function; a
 * NULL one (an agent without telemetry) answers "telemetry is not
 * running" (telemetry_finish_job: NULL).
 */
#ifndef IOSTAGE_DAEMON_TELEMETRY_H
#define IOSTAGE_DAEMON_TELEMETRY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <cJSON.h>

#include "common/config/conf.h"
#include "common/telemetry/telrec.h"
#include "daemon/ops.h"

#define TELEMETRY_KEEP_DAYS 30
#define TELEMETRY_PROCS_MAX 1024 /* process entries per record */
#define TELEMETRY_MARKS_MAX 64   /* distinct sub-phase names per record */
#define TELEMETRY_FILES_MAX 4096 /* distinct output files per record */

/* The ops (telemetry_ops.c), listed in server.c's op_tables[]. */
extern op_table telemetry_ops;

/* Where a process's identity came from. */
struct telemetry_task {
	pid_t pid;
	pid_t parent;             /* slurmstepd, for the exit accounting; 0 */
	int64_t step;             /* Slurm's step id; -1: unknown */
	int64_t rank, local_rank; /* -1: unknown */
	char node[TELREC_NODE_MAX];
	char identity[8];   /* "pmix" | "slurm" */
	char job_name[128]; /* "" if unknown */
};

struct agent;
struct telemetry;

/* Agent A's telemetry (A may be NULL: it reaches no other part yet):
 * create StateDir/telemetry (0700), remove records older than
 * TELEMETRY_KEEP_DAYS, reload the unfinished ones and start the sampler
 * (conf->telemetry_interval_ms). CONF must outlive it. Call after
 * jobs_create. NULL with err; the caller owns it: telemetry_destroy. */
struct telemetry *telemetry_create(struct agent *a, const struct conf *conf,
				   char *err, size_t errlen);

/* Stop the sampler, write every live record, free TEL. NULL is a no-op. */
void telemetry_destroy(struct telemetry *tel);

/* Root (slurmstepd): follow task T->pid of job ID. 0, or -1 with err. */
int telemetry_task_register(struct telemetry *tel, uint32_t id,
			    const struct telemetry_task *t, char *err,
			    size_t errlen);

/* Root (slurmstepd, after reaping task PID): sample job ID now, while
 * slurmstepd still holds the task's final counters. 0, or -1 with err. */
int telemetry_task_exit(struct telemetry *tel, uint32_t id, pid_t pid,
			char *err, size_t errlen);

/* A phase marker from PEER_PID (uid PEER_UID; root or the job's owner):
 * BEGIN or end of sub-phase NAME at TS (unix seconds). T carries the
 * identity the sender found (PMIx or Slurm's environment); it is
 * attached to the registered task the sender descends from. 0 or -1. */
int telemetry_phase(struct telemetry *tel, uint32_t id, uid_t peer_uid,
		    pid_t peer_pid, const char *name, bool begin, double ts,
		    const struct telemetry_task *t, char *err, size_t errlen);

/* Merge a shim_report REQ (already checked with telrec_report_check) from
 * process PID. Root or the job's owner. 0 or -1. */
int telemetry_shim_report(struct telemetry *tel, uint32_t id, uid_t peer_uid,
			  pid_t pid, const cJSON *req, char *err,
			  size_t errlen);

/* Job ID's record (live, or finished from disk) for PEER_UID: a new
 * object (caller deletes) or NULL with err ("unknown job", "permission
 * denied: ..."). */
cJSON *telemetry_record(struct telemetry *tel, uint32_t id, uid_t peer_uid,
			char *err, size_t errlen);

/* At the Epilog, after drain_finish and before jobs_finish: close the run
 * phase (a last sample), fold in stage_out from the drain record, persist,
 * and return the complete record (caller deletes), or NULL if job ID is
 * unknown to both the job table and telemetry. */
cJSON *telemetry_finish_job(struct telemetry *tel, uint32_t id);

#endif /* IOSTAGE_DAEMON_TELEMETRY_H */
