/* jobs_staging.c - what a job's staging thread (stage.c) records in the
 * table: its running worker (so that abort and finish can kill it), the
 * progress and totals of its copies, how each dataset was served, and the
 * end of staging (persisted before any waiter is told).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "daemon/jobs.h"
#include "daemon/jobs_internal.h"

int jobs_set_worker(struct job *job, pid_t pid)
{
	struct jobs *js = job->table;
	int r = 0;

	pthread_mutex_lock(&js->lock);
	if (job->cancel)
		r = -1;
	else
		job->worker = pid;
	pthread_mutex_unlock(&js->lock);
	return r;
}

void jobs_clear_worker(struct job *job)
{
	struct jobs *js = job->table;
	pthread_mutex_lock(&js->lock);
	job->worker = 0;
	pthread_mutex_unlock(&js->lock);
}

bool jobs_cancelled(struct job *job, char *reason, size_t len)
{
	struct jobs *js = job->table;
	bool r;

	pthread_mutex_lock(&js->lock);
	r = job->cancel;
	if (r && reason && len)
		snprintf(reason, len, "%s", job->cancel_reason);
	pthread_mutex_unlock(&js->lock);
	return r;
}

void jobs_progress(struct job *job, uint64_t bytes, uint64_t files)
{
	struct jobs *js = job->table;
	pthread_mutex_lock(&js->lock);
	job->bytes = bytes;
	job->files = files;
	pthread_mutex_unlock(&js->lock);
}

void jobs_add_totals(struct job *job, uint64_t bytes, uint64_t files)
{
	struct jobs *js = job->table;
	pthread_mutex_lock(&js->lock);
	job->total_bytes += bytes;
	job->total_files += files;
	pthread_mutex_unlock(&js->lock);
}

void jobs_dataset_done(struct job *job, size_t i, int tier, uint64_t bytes,
		       uint64_t files)
{
	struct jobs *js = job->table;
	pthread_mutex_lock(&js->lock);
	/* Held by a cache entry, which the tier accounts for. */
	job->tier_bytes[tier] += bytes;
	if (i < PROFILE_MAX_DATASETS) {
		job->ds[i].bytes = bytes;
		job->ds[i].files = files;
	}
	pthread_mutex_unlock(&js->lock);
}

void jobs_dataset_result(struct job *job, size_t i, enum job_ds_result result,
			 const char *entry, uint64_t copied_files,
			 uint64_t copied_bytes, uint64_t linked_files)
{
	struct jobs *js = job->table;
	struct job_ds *d;

	if (i >= PROFILE_MAX_DATASETS)
		return;
	pthread_mutex_lock(&js->lock);
	d = &job->ds[i];
	d->result = result;
	snprintf(d->entry, sizeof(d->entry), "%s", entry ? entry : "");
	d->copied_files = copied_files;
	d->copied_bytes = copied_bytes;
	d->linked_files = linked_files;
	pthread_mutex_unlock(&js->lock);
}

int jobs_set_spread_plan(struct job *job, size_t i, const char *plan)
{
	struct jobs *js = job->table;
	char *copy;

	if (i >= PROFILE_MAX_DATASETS || !plan) {
		errno = EINVAL;
		return -1;
	}
	copy = strdup(plan);
	if (!copy)
		return -1;
	pthread_mutex_lock(&js->lock);
	free(job->ds[i].spread_plan);
	job->ds[i].spread_plan = copy;
	pthread_mutex_unlock(&js->lock);
	return 0;
}

int jobs_spread_plan(struct job *job, size_t i, char *buf, size_t len)
{
	struct jobs *js = job->table;
	int r = 0;

	if (i >= PROFILE_MAX_DATASETS)
		return 0;
	pthread_mutex_lock(&js->lock);
	if (job->ds[i].spread_plan) {
		int n = snprintf(buf, len, "%s", job->ds[i].spread_plan);

		r = n >= 0 && (size_t)n < len ? 1 : -1;
	}
	pthread_mutex_unlock(&js->lock);
	return r;
}

bool jobs_spread(struct job *job)
{
	struct jobs *js = job->table;
	bool any = false;

	pthread_mutex_lock(&js->lock);
	for (size_t i = 0; i < PROFILE_MAX_DATASETS && !any; i++)
		any = job->ds[i].spread_plan != NULL;
	pthread_mutex_unlock(&js->lock);
	return any;
}

void jobs_set_part_entry(struct job *job, size_t i, const char *entry)
{
	struct jobs *js = job->table;

	if (i >= PROFILE_MAX_DATASETS)
		return;
	pthread_mutex_lock(&js->lock);
	snprintf(job->ds[i].part_entry, sizeof(job->ds[i].part_entry), "%s",
		 entry);
	pthread_mutex_unlock(&js->lock);
}

void jobs_part_entry(struct job *job, size_t i, char *buf, size_t len)
{
	struct jobs *js = job->table;

	if (!len)
		return;
	buf[0] = '\0';
	if (i >= PROFILE_MAX_DATASETS)
		return;
	pthread_mutex_lock(&js->lock);
	snprintf(buf, len, "%s", job->ds[i].part_entry);
	pthread_mutex_unlock(&js->lock);
}

void jobs_set_spread_dataset_bytes(struct job *job, size_t i, uint64_t bytes)
{
	struct jobs *js = job->table;

	if (i >= PROFILE_MAX_DATASETS)
		return;
	pthread_mutex_lock(&js->lock);
	job->ds[i].spread_dataset_bytes = bytes;
	pthread_mutex_unlock(&js->lock);
}

void jobs_set_view_pid(struct job *job, size_t i, pid_t pid)
{
	struct jobs *js = job->table;

	if (i >= PROFILE_MAX_DATASETS)
		return;
	pthread_mutex_lock(&js->lock);
	job->ds[i].view_pid = pid;
	pthread_mutex_unlock(&js->lock);
}

pid_t jobs_take_view_pid(struct job *job, size_t i)
{
	struct jobs *js = job->table;
	pid_t pid;

	if (i >= PROFILE_MAX_DATASETS)
		return 0;
	pthread_mutex_lock(&js->lock);
	pid = job->ds[i].view_pid;
	job->ds[i].view_pid = 0;
	pthread_mutex_unlock(&js->lock);
	return pid;
}

enum job_ds_result jobs_dataset_entry(struct job *job, size_t i, char *entry,
				      size_t len)
{
	struct jobs *js = job->table;
	enum job_ds_result r;

	if (i >= PROFILE_MAX_DATASETS) {
		snprintf(entry, len, "%s", "");
		return JOB_DS_FAILED;
	}
	pthread_mutex_lock(&js->lock);
	r = job->ds[i].result;
	snprintf(entry, len, "%s", job->ds[i].entry);
	pthread_mutex_unlock(&js->lock);
	return r;
}

/* jobs_staging_done, and with PUT the staging thread's reference dropped
 * in the critical section that clears ->running: once jobs_shutdown or a
 * finish sees the thread gone, it touches neither the job nor the table. */
static void staging_end(struct job *job, bool ok, const char *error, bool put)
{
	struct jobs *js = job->table;
	struct timespec now;
	bool last = false;

	clock_gettime(CLOCK_MONOTONIC, &now);
	pthread_mutex_lock(&js->lock);
	job->ended = time(NULL);
	job->staged_s = (double)(now.tv_sec - job->t0.tv_sec) +
			(double)(now.tv_nsec - job->t0.tv_nsec) / 1e9;
	if (job->cancel) {
		job->state = JOB_FAILED;
		snprintf(job->error, sizeof(job->error), "%s",
			 job->cancel_reason);
	} else if (ok) {
		job->state = JOB_STAGED;
		job->error[0] = '\0';
	} else {
		job->state = JOB_FAILED;
		snprintf(job->error, sizeof(job->error), "%s",
			 error && *error ? error : "staging failed");
	}
	pthread_mutex_unlock(&js->lock);
	/* Persist before anyone is told: a waiter that sees the new state
	 * may run "finish" at once. */
	jobs_persist(job);
	pthread_mutex_lock(&js->lock);
	job->running = false;
	job->worker = 0;
	if (put)
		last = --job->refs == 0;
	pthread_cond_broadcast(&js->cond);
	pthread_mutex_unlock(&js->lock);
	if (last)
		jobs_job_free(job);
}

void jobs_staging_done(struct job *job, bool ok, const char *error)
{
	staging_end(job, ok, error, false);
}

void jobs_staging_exit(struct job *job, bool ok, const char *error)
{
	staging_end(job, ok, error, true);
}
