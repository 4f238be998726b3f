/* jobs.h - iostaged's job table: states, persistence, waiting.
 *
 * A job is created by a "stage" request and lives until "finish". Its state
 * moves staging -> staged | failed, exactly once; waiters block on one
 * condition variable that every change broadcasts. Each state change is
 * written to StateDir/jobs/JOBID.json (write a temporary file, fsync,
 * rename), and a restarted daemon reloads those files: a job that was
 * still staging becomes failed ("iostaged restarted during staging") and
 * its half-copied datasets are removed.
 *
 * Jobs are reference counted: jobs_get() returns a reference that the
 * caller gives back with jobs_put(), so a job found by one client stays
 * valid while another finishes it.
 *
 * A table is made by jobs_create and freed by jobs_destroy; the functions
 * about the table take it first, those about one job take the job (which
 * knows its table). The parts of the table: jobs_internal.h.
 */
#ifndef IOSTAGE_DAEMON_JOBS_H
#define IOSTAGE_DAEMON_JOBS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#include <cJSON.h>

#include "common/config/conf.h"
#include "common/config/profile.h"

#define JOBS_USER_MAX 256 /* login names, LOGIN_NAME_MAX */
#define JOBS_ENTRY_MAX 48 /* "K.vN", a cache version's name */
/* Ids of prestage requests: above every Slurm job id (MAX_JOB_ID is
 * 0x03ffffff), so the two never meet in the table. */
#define JOBS_PRESTAGE_ID_MIN 0x80000000U
#define JOBS_PRESTAGE_KEEP_S 600 /* a finished prestage stays this long */
#define JOBS_NODES_MAX 4096      /* nodes of a multi-node job */

enum job_state {
	JOB_STAGING = 0,
	JOB_STAGED,
	JOB_FAILED,
};

/* How one dataset of a job was served from the cache. */
enum job_ds_result {
	JOB_DS_PENDING = 0,
	JOB_DS_HIT,   /* an existing version matched: nothing copied */
	JOB_DS_BUILT, /* a new version was built (unchanged files linked) */
	JOB_DS_FAILED,
};

struct job_ds {
	enum job_ds_result result;
	char entry[JOBS_ENTRY_MAX]; /* "K.vN" on the dataset's tier */
	uint64_t copied_files, copied_bytes, linked_files;
	uint64_t bytes, files; /* the dataset's size, once staged */
	/* A spread dataset (docs/STAGING.md, "Spread datasets"): the plan
	 * the job's head decided (spread_plan_parse's form; malloc'd, NULL
	 * until decided), and this node's view of it (its iostage-view, 0:
	 * none). Not persisted: a restarted iostaged leaves the view
	 * serving the job, and unmounts it at finish. */
	char *spread_plan;
	pid_t view_pid;
	uint64_t spread_dataset_bytes; /* the whole dataset (bytes: the part) */
	/* A fill by parts (daemon/cluster/fill.h): this node's share, once
	 * published ("K.vN" of the part's key; "" until then), for the
	 * other nodes, which fill the rest of their copies from it. */
	char part_entry[JOBS_ENTRY_MAX];
};

struct job {
	/* Set before the job is inserted, read-only afterwards. */
	uint32_t id;
	uid_t uid;
	gid_t gid;
	char user[JOBS_USER_MAX];
	struct profile *profile;    /* NULL: a reloaded profile is invalid */
	char *profile_json;         /* normalized, as persisted */
	bool tiers[CONF_MAX_TIERS]; /* tiers holding TIER/jobs/JOBID */
	bool prestage;              /* a cache warm-up: no dirs, no pins */
	/* A pre-stage for a pending job (iostagectld's prediction): it may
	 * only evict versions that one job used (cache_reserve). */
	bool speculative;
	time_t created;
	/* The same instant in microseconds (CLOCK_REALTIME): the record's
	 * start and its stage_in phase's, which the run phase (a task's own
	 * clock) is compared with; whole seconds would move stage_in up to
	 * 1 s early. Microseconds, not ns: a double (JSON, the record)
	 * holds them exactly, so a reloaded job's start equals its record's. */
	int64_t created_us;
	struct timespec t0; /* CLOCK_MONOTONIC at creation */
	/* A multi-node job's nodes (the head first), from the Prolog's
	 * stage request; 0 or 1: a single-node job (no peer traffic). */
	char **nodes;
	size_t nnodes;

	/* Under the table lock; use the functions below. */
	enum job_state state;
	char error[CONF_ERR_MAX];
	uint64_t bytes, files;                  /* copied so far */
	uint64_t total_bytes, total_files;      /* measured so far */
	uint64_t tier_bytes[CONF_MAX_TIERS];    /* staged bytes per tier */
	struct job_ds ds[PROFILE_MAX_DATASETS]; /* per dataset, in order */
	double staged_s; /* how long staging took, once done */
	time_t ended;    /* when staging ended, 0 = not yet */
	pid_t worker;    /* running stage worker, 0 = none */
	bool running;    /* a staging thread owns the job */
	bool cancel;     /* abort, finish or shutdown asked */
	char cancel_reason[CONF_ERR_MAX];
	bool gone; /* finished: out of the table */
	/* The node whose staging failed the whole job (jobs_fail_jobwide),
	 * "" when it failed here or did not fail. */
	char failed_node[CONF_NODE_MAX];
	unsigned refs;
	struct job *next;
	struct jobs *table; /* the table it was made for */
};

/* A consistent copy of the changing part of a job, for replies. */
struct job_view {
	enum job_state state;
	char error[CONF_ERR_MAX];
	uint64_t bytes, files, total_bytes, total_files;
};

struct agent;
struct jobs;

/* The queries (jobs_get, jobs_known, jobs_finished_here, jobs_status_json,
 * jobs_tier_counts) take a NULL table: an agent without one (a unit
 * test's telemetry, metrics or ops) knows no job. */

/* A job table for agent A (its conf, tiers and cache: where a finished
 * job's directories go and its versions are unpinned; A must outlive the
 * table): create StateDir/jobs (0700) owned by OWNER (root in iostaged; a
 * unit test's own uid), and open it. Nothing is loaded yet (jobs_load).
 * NULL with err. */
struct jobs *jobs_create(struct agent *a, uid_t owner, char *err,
			 size_t errlen);

/* Load the jobs persisted in StateDir/jobs (after jobs_set_drain_hooks:
 * a reloaded staged job's outputs are watched again). 0, or -1 with
 * err. */
int jobs_load(struct jobs *js, char *err, size_t errlen);

/* What the drain (daemon/staging/drain.c) adds to the table, registered by
 * drain_create, so that the table never calls up into it: STATUS gives job
 * ID's "drain" object for status, or NULL (called with the table locked);
 * RESUME watches the outputs of a job reloaded staged after a restart
 * again (0, or -1 with err). Both get ARG (the drain). Call before
 * jobs_load; unset (NULLs), status has no "drain" and a reloaded job's
 * outputs drain at finish only. */
typedef cJSON *(*jobs_drain_status_fn)(void *arg, uint32_t id);
typedef int (*jobs_drain_resume_fn)(void *arg, const struct job *job, char *err,
				    size_t errlen);
void jobs_set_drain_hooks(struct jobs *js, jobs_drain_status_fn status,
			  jobs_drain_resume_fn resume, void *arg);

/* Stop: refuse new jobs (jobs_insert fails), cancel every staging job
 * with REASON (its worker is killed and its partial copies removed by its
 * staging thread), wake every waiter, and wait up to TIMEOUT_S for the
 * staging threads. True when none runs any more (the table and the
 * stager may then be destroyed). */
bool jobs_shutdown(struct jobs *js, const char *reason, unsigned timeout_s);

/* Free the table (only when no thread uses it any more). NULL is a
 * no-op. */
void jobs_destroy(struct jobs *js);

const char *jobs_state_name(enum job_state state);

/* A new job in state staging, not yet in the table, holding one reference
 * for the caller; takes ownership of PROFILE (normalized and validated) on
 * success. NULL with err on failure (PROFILE then still the caller's).
 * For a prestage request set ->prestage before jobs_insert. */
struct job *jobs_new_job(struct jobs *js, uint32_t id, uid_t uid, gid_t gid,
			 const char *user, struct profile *profile, char *err,
			 size_t errlen);

/* Give a job not yet inserted its node list (NODES[N], valid node names,
 * copied). 0, or -1 with err. */
int jobs_set_nodes(struct job *job, const char *const *nodes, size_t n,
		   char *err, size_t errlen);

/* Is JOB a multi-node job (more than one node)? */
bool jobs_multi_node(const struct job *job);

/* A staged job fails because node NODE failed with REASON: it ends
 * "failed" with error "node NODE: REASON" (persisted), its policy then
 * applies here as on NODE. A job that already failed keeps its first
 * error. Fills *ret. */
void jobs_fail_jobwide(struct job *job, const char *node, const char *reason,
		       struct job_view *ret);

/* JOB's failed_node (copied into BUF of LEN), "" if none. */
void jobs_failed_node(struct job *job, char *buf, size_t len);

/* Free a job that never made it into the table. NULL is a no-op. */
void jobs_discard(struct job *job);

/* Insert JOB and persist it. Returns 0 (inserted; the caller keeps its
 * reference and the table holds one), 1 if a job with that id exists
 * (*ret_existing gets a reference to it; JOB is untouched: jobs_discard
 * it), or -1 with err (JOB is not in the table: drop the caller's
 * reference with jobs_put). */
int jobs_insert(struct jobs *js, struct job *job, struct job **ret_existing,
		char *err, size_t errlen);

/* A free prestage id (JOBS_PRESTAGE_ID_MIN and up). */
uint32_t jobs_next_prestage_id(struct jobs *js);

/* Is a job with id ID in the table? (For the cache's pin check.) */
bool jobs_known(struct jobs *js, uint32_t id);
/* The same with the table as a void * (tiers_detach_stale's callback). */
bool jobs_known_arg(void *js, uint32_t id);

/* Whether job ID was finished here (its Epilog ran), among the last
 * JOBS_FINISHED_KEEP finishes, at or after SINCE_US (microseconds since
 * the epoch: when the asking node began staging it, so that a job
 * requeued under the same id is not taken for its earlier run). Another
 * node still staging the job asks (stage_state): "unknown" would keep it
 * waiting for a job that is over. Kept in memory only. */
#define JOBS_FINISHED_KEEP 1024
#define JOBS_FINISHED_ERR_MAX 256
/* What a finished job's staging ended with, for the nodes still asking:
 * a job failed job-wide by another node names that node, so that every
 * node of the job names the one that failed, not the first to finish. */
struct jobs_finished {
	char failed_node[CONF_NODE_MAX];   /* "" when it failed here, or not */
	char error[JOBS_FINISHED_ERR_MAX]; /* "" when staging did not fail */
};
/* RET (may be NULL) gets the finished job's outcome when it returns
 * true. */
bool jobs_finished_here(struct jobs *js, uint32_t id, int64_t since_us,
			struct jobs_finished *ret);

/* Forget prestage jobs that ended more than JOBS_PRESTAGE_KEEP_S ago. */
void jobs_prune_prestage(struct jobs *js);

/* Take JOB out of the table, delete its state file and drop the table's
 * reference; used when setting up staging failed right after jobs_insert
 * (no staging thread exists). The caller still holds its own reference. */
void jobs_remove(struct job *job);

/* The job with id ID (a new reference), or NULL. */
struct job *jobs_get(struct jobs *js, uint32_t id);

/* Take one more reference to JOB (which the caller already holds). */
void jobs_hold(struct job *job);

/* Drop a reference; the last one frees a job that is out of the table.
 * NULL is a no-op. */
void jobs_put(struct job *job);

void jobs_view(struct job *job, struct job_view *ret);

/* Block until JOB leaves "staging" (or is finished) or TIMEOUT_S passes;
 * then fill *ret. On shutdown staging jobs are cancelled, so waiters see
 * them fail. */
void jobs_wait(struct job *job, unsigned timeout_s, struct job_view *ret);

/* Abort JOB with REASON: kill its worker; it ends "failed" with REASON as
 * its error (a staged job too; a failed job keeps its first error). Waits
 * up to TIMEOUT_S for the staging thread to clean up; fills *ret. */
void jobs_abort(struct job *job, const char *reason, unsigned timeout_s,
		struct job_view *ret);

/* Finish job ID: stop staging (waiting up to TIMEOUT_S), remove
 * TIER/jobs/ID on every tier it used, unpin its cache versions, delete its
 * state file, forget it.
 * An unknown job is success. 0 or -1 with err (the job stays known so that
 * finish can be retried). */
int jobs_finish(struct jobs *js, uint32_t id, unsigned timeout_s, char *err,
		size_t errlen);

/* The stage-failure policy that applies to JOB. */
enum stage_failure_policy jobs_policy(const struct job *job);

/* After a failed staging: remove half-copied datasets and, when the job's
 * policy is "fail" (it will not run), its directories on every tier. Logs
 * what it cannot remove. */
void jobs_cleanup_failed(struct job *job);

/* --- for the staging thread (stage.c) ------------------------------------ */

/* Record PID as JOB's running worker. Returns -1 when JOB was cancelled
 * meanwhile: the caller must kill PID itself. */
int jobs_set_worker(struct job *job, pid_t pid);
void jobs_clear_worker(struct job *job);

/* Whether JOB was cancelled; with REASON (size len) the reason. */
bool jobs_cancelled(struct job *job, char *reason, size_t len);

/* Progress of the current dataset, added to the datasets done so far. */
void jobs_progress(struct job *job, uint64_t bytes, uint64_t files);
void jobs_add_totals(struct job *job, uint64_t bytes, uint64_t files);

/* Dataset I, on TIER, is complete: BYTES/FILES (its size) become
 * permanent and are kept as dataset I's. */
void jobs_dataset_done(struct job *job, size_t i, int tier, uint64_t bytes,
		       uint64_t files);

/* How dataset I has been served so far, and its entry ("K.vN", "" while
 * pending) into ENTRY. */
enum job_ds_result jobs_dataset_entry(struct job *job, size_t i, char *entry,
				      size_t len);

/* Dataset I's spread plan (as the head decided it): set PLAN (copied;
 * 0, or -1 with ENOMEM), or copy it into BUF (1, or 0 when none is
 * decided yet, -1 when it does not fit). */
int jobs_set_spread_plan(struct job *job, size_t i, const char *plan);
int jobs_spread_plan(struct job *job, size_t i, char *buf, size_t len);
/* Is any dataset of the job spread (its plan decided)? */
bool jobs_spread(struct job *job);

/* Dataset I's share of a fill by parts: set ENTRY ("K.vN" of the part's
 * key), or read it into BUF ("" until set). */
void jobs_set_part_entry(struct job *job, size_t i, const char *entry);
void jobs_part_entry(struct job *job, size_t i, char *buf, size_t len);

/* Dataset I's whole size, when it is spread (its bytes are this node's
 * part). */
void jobs_set_spread_dataset_bytes(struct job *job, size_t i, uint64_t bytes);

/* Dataset I's view process: set PID (0: none), or take it (returns it
 * and sets 0, so that one caller reaps it). */
void jobs_set_view_pid(struct job *job, size_t i, pid_t pid);
pid_t jobs_take_view_pid(struct job *job, size_t i);

/* Record how dataset I was served (entry "K.vN", counts). */
void jobs_dataset_result(struct job *job, size_t i, enum job_ds_result result,
			 const char *entry, uint64_t copied_files,
			 uint64_t copied_bytes, uint64_t linked_files);

/* End of staging: state staged, or failed with ERROR (a cancelled job
 * always fails with its cancel reason). Persists, wakes waiters and
 * clears ->running. */
void jobs_staging_done(struct job *job, bool ok, const char *error);

/* The staging thread's last word: jobs_staging_done, then its reference
 * to JOB dropped as ->running is cleared. After it the thread may touch
 * neither JOB nor its table (both may be gone once jobs_shutdown or
 * jobs_finish saw the thread end). */
void jobs_staging_exit(struct job *job, bool ok, const char *error);

/* --- for status ----------------------------------------------------------- */

/* The "jobs" array of a status reply: every job for root (PEER_UID 0),
 * else only PEER_UID's. Each carries its progress (bytes/files done of
 * total_bytes/total_files, rate_bps, eta_s) and a "cache" array telling
 * how each dataset was served. NULL on ENOMEM. */
cJSON *jobs_status_json(struct jobs *js, uid_t peer_uid);

/* Number of known jobs using each tier, into counts[CONF_MAX_TIERS]. */
void jobs_tier_counts(struct jobs *js, unsigned counts[CONF_MAX_TIERS]);

#endif /* IOSTAGE_DAEMON_JOBS_H */
