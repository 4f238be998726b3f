/* stats.h - what iostaged has done since it started, for /metrics.
 *
 * Two kinds of figures:
 *  - node totals (counters since start): bytes, files and seconds staged,
 *    cache hits and misses, jobs staged and failed. The staging code adds
 *    to them with one call per dataset and one per job; they are atomics,
 *    so the staging threads never wait for a scrape.
 *  - per-job phase records (docs/RECORDS.md shape: {"job", "phases":[...]})
 *    for iostage_job_phase_* series. The daemon fills stage_in, run (its
 *    duration) and stage_out from what it knows; a full record from
 *    telemetry replaces them with stats_job_record(). A job's record is
 *    kept until a grace period after the job ended (stats_prune).
 */
#ifndef IOSTAGE_DAEMON_STATS_H
#define IOSTAGE_DAEMON_STATS_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#include <cJSON.h>

struct stats_totals {
	uint64_t staged_bytes; /* bytes made available to jobs (hit or built) */
	uint64_t staged_files;
	uint64_t copied_bytes; /* of which copied from the PFS */
	uint64_t copied_files;
	uint64_t linked_files; /* unchanged files linked from an old version */
	uint64_t cache_hits;   /* datasets served from the cache as they were */
	uint64_t cache_misses; /* datasets that needed a (re)build */
	uint64_t jobs_staged;  /* jobs (not warm-ups) whose staging succeeded */
	uint64_t jobs_failed;
	double stage_seconds; /* summed over jobs' staging */
};

struct stats;

/* Empty figures: every function below takes them first. NULL on ENOMEM.
 * The caller owns them: stats_destroy. The staging calls
 * (stats_dataset_served, stats_job_staged, stats_job_record) take a NULL
 * S as "no figures kept" and do nothing. */
struct stats *stats_create(void);

/* One dataset of a job (or a prestage) was served: HIT, or built by
 * copying COPIED_* and linking LINKED_FILES; it holds BYTES in FILES. */
void stats_dataset_served(struct stats *s, bool hit, uint64_t bytes,
			  uint64_t files, uint64_t copied_bytes,
			  uint64_t copied_files, uint64_t linked_files);

/* Staging of job ID (of user UID) ended (OK or not) after SECONDS, with
 * BYTES/FILES available, CACHED_BYTES of them served without a copy. A
 * PRESTAGE only counts in the totals. Starts the job's "run" phase when
 * OK. */
void stats_job_staged(struct stats *s, uint32_t id, uid_t uid, bool prestage,
		      bool ok, double seconds, uint64_t bytes, uint64_t files,
		      uint64_t cached_bytes);

/* Job ID's outputs: BYTES/FILES drained so far; END_SECONDS spent draining
 * after the run. Creates the job's entry if needed. */
void stats_job_drained(struct stats *s, uint32_t id, uint64_t bytes,
		       uint64_t files, double end_seconds);

/* Job ID is staging: BYTES so far, for SECONDS. */
void stats_job_staging(struct stats *s, uint32_t id, uint64_t bytes,
		       double seconds);

/* Job ID belongs to UID (for who may see its series). */
void stats_job_owner(struct stats *s, uint32_t id, uid_t uid);

/* Job ID left the daemon's table at NOW (finished); its series stay until
 * stats_prune drops them. Unknown ids are ignored. */
void stats_job_ended(struct stats *s, uint32_t id, time_t now);

/* Replace job ID's phases by RECORD's (a docs/RECORDS.md record; its
 * "phases" array is copied). 0, or -1 with errno. */
int stats_job_record(struct stats *s, uint32_t id, const cJSON *record);

/* Drop jobs that ended more than GRACE_S before NOW. */
void stats_prune(struct stats *s, time_t now, unsigned grace_s);

/* Is job ID known (running, or ended within the grace period)? */
bool stats_job_known(struct stats *s, uint32_t id);

/* Ids of the jobs known and not ended, up to MAX into IDS; returns how
 * many. */
size_t stats_active_jobs(struct stats *s, uint32_t *ids, size_t max);

/* A copy of the totals. */
void stats_get_totals(struct stats *s, struct stats_totals *ret);

/* The records of the known jobs as a new array ({"job", "phases"}; the
 * run phase's duration computed up to now while it runs), for
 * promtext_job_phases: every job with ALL, else only the jobs of VIEWER
 * (a job whose owner is not known yet is shown to ALL only). NULL on
 * ENOMEM. */
cJSON *stats_job_records(struct stats *s, bool all, uid_t viewer);

/* Forget everything and free S (shutdown). NULL is a no-op. */
void stats_destroy(struct stats *s);

#endif /* IOSTAGE_DAEMON_STATS_H */
