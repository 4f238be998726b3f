/* jobs_internal.h - what the parts of the job table share (jobs.h is the
 * API).
 *
 * The table is split by concern, one file each:
 *   jobs.c          the object (create, load, shutdown, destroy), job
 *                   objects, references, lookups and insertion
 *   jobs_state.c    the persisted state: StateDir/jobs/JOBID.json written
 *                   on each change and read back after a restart
 *   jobs_end.c      how a job ends: wait, abort, fail job-wide, finish,
 *                   the finished ring, prestage ids and their pruning
 *   jobs_staging.c  what the staging thread (stage.c) records: its worker,
 *                   progress, per-dataset results, the end of staging
 *   jobs_status.c   the "jobs" array of status, per-tier counts
 *
 * Locking. One mutex (lock) guards the table and every changing field of
 * every job; one condition variable (cond, CLOCK_MONOTONIC) is broadcast
 * on each change that someone may wait for (state, ->running). Critical
 * sections are short: no I/O happens under lock.
 *
 * Persistence takes a second mutex, persist_lock, *before* lock: the job
 * is snapshotted under both, then written with only persist_lock held.
 * Since writes are serialized and each writes the latest snapshot, the
 * file on disk always ends with the newest state, and a job marked ->gone
 * (its file deleted under persist_lock) is never written again.
 *
 * Unit tests (tests/unit/check_jobs*.c) include this header to read a
 * table's state and to parse a state file (jobs_job_from_json).
 */
#ifndef IOSTAGE_DAEMON_JOBS_INTERNAL_H
#define IOSTAGE_DAEMON_JOBS_INTERNAL_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#include <cJSON.h>

#include "daemon/agent.h"
#include "daemon/jobs.h"

#define JOBS_STATE_FILE_MAX (1024 * 1024) /* a state file we agree to read */
#define JOBS_CREATED_MAX 1000000000000LL  /* seconds: 1e12, the year 33,658 */

/* One job finished here: when, and what failed it if it failed. */
struct jobs_finished_rec {
	uint32_t id;
	int64_t at_us;
	char failed_node[CONF_NODE_MAX];   /* "" when it failed here, or not */
	char error[JOBS_FINISHED_ERR_MAX]; /* "" when staging did not fail */
};

struct jobs {
	struct agent *agent; /* ->conf, ->tiers, ->cache */
	const struct conf *conf;
	uid_t owner; /* who must own StateDir: root in iostaged */
	pthread_mutex_t lock;
	pthread_mutex_t persist_lock; /* taken before lock */
	pthread_cond_t cond;
	struct job *head;
	bool stopping; /* jobs_shutdown: no new job */
	int state_fd;  /* StateDir/jobs */
	/* drain.c's, jobs_set_drain_hooks */
	jobs_drain_status_fn drain_status;
	jobs_drain_resume_fn drain_resume;
	void *drain_arg; /* the drain, given to both */
	/* The last JOBS_FINISHED_KEEP jobs finished here, a ring under
	 * lock. */
	struct jobs_finished_rec finished[JOBS_FINISHED_KEEP];
	size_t finished_next;
	uint32_t prestage_next; /* the next prestage id to try */
};

/* --- jobs.c ----------------------------------------------------------------
 */

const char *jobs_ds_result_name(enum job_ds_result r);
enum job_ds_result jobs_ds_result_from_name(const char *s);
/* "staging" -> JOB_STAGING...; -1 for an unknown name. */
int jobs_state_from_name(const char *s, enum job_state *ret);
/* CLOCK_MONOTONIC now + SECONDS into *TS. */
void jobs_deadline_in(unsigned seconds, struct timespec *ts);
/* Microseconds since the epoch (CLOCK_REALTIME). */
int64_t jobs_now_us(void);
void jobs_job_free(struct job *job);
/* Lock held. */
struct job *jobs_find_locked(struct jobs *js, uint32_t id);
void jobs_unlink_locked(struct jobs *js, struct job *job);
void jobs_view_locked(const struct job *job, struct job_view *ret);

/* --- jobs_state.c ----------------------------------------------------------
 */

/* The "cache" array of JOB (lock held): how each dataset was served. */
cJSON *jobs_cache_records_locked(const struct job *job);
/* State and counters: the same fields in the state file and in status. */
void jobs_add_state_fields(cJSON *o, const struct job *job);
/* JOB's state file as JSON (lock held). NULL on ENOMEM. */
cJSON *jobs_job_json_locked(const struct job *job);
/* Write JOB's current state to its file. 0 or -1 with errno. */
int jobs_persist(struct job *job);
/* Mark JOB gone, take it out of the table and delete its file. True if
 * this call did it (false: someone else already had). */
bool jobs_forget(struct job *job);
/* Open StateDir/jobs of JS, creating what is missing. fd or -1 with err. */
int jobs_state_open(struct jobs *js, char *err, size_t errlen);
/* A job of JS from a parsed state file (not in the table, no reference
 * taken: refs 0). NULL with err. */
struct job *jobs_job_from_json(struct jobs *js, const cJSON *o, char *err,
			       size_t errlen);
/* Reload every state file of StateDir/jobs. 0, or -1 with err. */
int jobs_load_all(struct jobs *js, char *err, size_t errlen);

/* --- jobs_end.c ------------------------------------------------------------
 */

/* Cancel JOB's staging with REASON (lock held): its worker is killed. */
void jobs_cancel_locked(struct job *job, const char *reason);
/* Wait (lock held) until JOB's staging thread ends; false on timeout. */
bool jobs_wait_thread_locked(struct job *job, unsigned timeout_s);

#endif /* IOSTAGE_DAEMON_JOBS_INTERNAL_H */
