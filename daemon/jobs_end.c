/* jobs_end.c - how a job ends: waiting for it, aborting it, failing it
 * job-wide, finishing it (its directories, pins and state file gone); the
 * ring of jobs finished here that other nodes ask about; prestage ids and
 * the pruning of old prestages.
 *
 * A job's staging thread owns it while ->running: abort and finish cancel
 * it (its worker killed) and wait on the table's condition variable for
 * the thread to record the end (jobs_staging_done).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "common/base/log.h"
#include "common/sched/cachekey.h"
#include "daemon/jobs.h"
#include "daemon/jobs_internal.h"
#include "daemon/staging/cache.h"
#include "daemon/staging/spread_view.h"
#include "daemon/staging/tiers.h"

/* --- finished here
 * ------------------------------------------------------------- */

/* JOB finishes here now (jobs_finish, after its Epilog's work). */
static void remember_finished(struct job *job)
{
	struct jobs *js = job->table;
	struct jobs_finished_rec *f;
	int64_t at = jobs_now_us();

	pthread_mutex_lock(&js->lock);
	f = &js->finished[js->finished_next++ % JOBS_FINISHED_KEEP];
	memset(f, 0, sizeof(*f));
	f->id = job->id;
	f->at_us = at;
	if (job->state == JOB_FAILED) {
		snprintf(f->failed_node, sizeof(f->failed_node), "%s",
			 job->failed_node);
		/* the reason's start is enough to name it */
		snprintf(f->error, sizeof(f->error), "%.*s",
			 (int)sizeof(f->error) - 1, job->error);
	}
	pthread_mutex_unlock(&js->lock);
}

bool jobs_finished_here(struct jobs *js, uint32_t id, int64_t since_us,
			struct jobs_finished *ret)
{
	bool r = false;

	if (!js)
		return false;
	pthread_mutex_lock(&js->lock);
	for (size_t i = 0; i < JOBS_FINISHED_KEEP && !r; i++) {
		const struct jobs_finished_rec *f = &js->finished[i];

		r = id && f->id == id && f->at_us >= since_us;
		if (r && ret) {
			snprintf(ret->failed_node, sizeof(ret->failed_node),
				 "%s", f->failed_node);
			snprintf(ret->error, sizeof(ret->error), "%s",
				 f->error);
		}
	}
	pthread_mutex_unlock(&js->lock);
	return r;
}

/* --- waiting, aborting, finishing ------------------------------------------
 */

/* Unmount JOB's spread dataset views (spread_view.h) and reap their
 * processes. 0, or -1 with err (a mount that stays). */
static int stop_views(struct job *job, char *err, size_t errlen)
{
	struct jobs *js = job->table;

	if (spread_view_stop(js->agent, job->id, err, errlen) < 0)
		return -1;
	for (size_t i = 0; i < PROFILE_MAX_DATASETS; i++)
		spread_view_reap(jobs_take_view_pid(job, i));
	return 0;
}

void jobs_wait(struct job *job, unsigned timeout_s, struct job_view *ret)
{
	struct jobs *js = job->table;
	struct timespec deadline;

	jobs_deadline_in(timeout_s, &deadline);
	pthread_mutex_lock(&js->lock);
	/* On shutdown the staging threads are cancelled and end "failed"
	 * soon; waiters get that answer rather than a stale "staging". */
	while (job->state == JOB_STAGING && !job->gone) {
		if (pthread_cond_timedwait(&js->cond, &js->lock, &deadline) ==
		    ETIMEDOUT)
			break;
	}
	jobs_view_locked(job, ret);
	pthread_mutex_unlock(&js->lock);
}

void jobs_cancel_locked(struct job *job, const char *reason)
{
	if (!job->cancel) {
		job->cancel = true;
		snprintf(job->cancel_reason, sizeof(job->cancel_reason), "%s",
			 reason);
	}
	if (job->worker > 0)
		kill(job->worker, SIGKILL);
}

bool jobs_wait_thread_locked(struct job *job, unsigned timeout_s)
{
	struct jobs *js = job->table;
	struct timespec deadline;

	jobs_deadline_in(timeout_s, &deadline);
	while (job->running) {
		if (pthread_cond_timedwait(&js->cond, &js->lock, &deadline) ==
		    ETIMEDOUT)
			return !job->running;
	}
	return true;
}

void jobs_abort(struct job *job, const char *reason, unsigned timeout_s,
		struct job_view *ret)
{
	struct jobs *js = job->table;
	bool changed = false;

	pthread_mutex_lock(&js->lock);
	if (job->running) {
		jobs_cancel_locked(job, reason);
		jobs_wait_thread_locked(job, timeout_s);
	} else if (job->state != JOB_FAILED) {
		job->state = JOB_FAILED;
		snprintf(job->error, sizeof(job->error), "%s", reason);
		changed = true;
		pthread_cond_broadcast(&js->cond);
	}
	jobs_view_locked(job, ret);
	pthread_mutex_unlock(&js->lock);
	if (changed)
		jobs_persist(job);
}

void jobs_fail_jobwide(struct job *job, const char *node, const char *reason,
		       struct job_view *ret)
{
	struct jobs *js = job->table;
	bool changed = false;

	pthread_mutex_lock(&js->lock);
	if (job->state == JOB_STAGED && !job->running) {
		job->state = JOB_FAILED;
		snprintf(job->error, sizeof(job->error), "node %s: %s", node,
			 reason);
		snprintf(job->failed_node, sizeof(job->failed_node), "%s",
			 node);
		changed = true;
		pthread_cond_broadcast(&js->cond);
	}
	jobs_view_locked(job, ret);
	pthread_mutex_unlock(&js->lock);
	if (changed)
		jobs_persist(job);
}

void jobs_failed_node(struct job *job, char *buf, size_t len)
{
	struct jobs *js = job->table;

	pthread_mutex_lock(&js->lock);
	snprintf(buf, len, "%s", job->failed_node);
	pthread_mutex_unlock(&js->lock);
}

int jobs_finish(struct jobs *js, uint32_t id, unsigned timeout_s, char *err,
		size_t errlen)
{
	struct job *job = jobs_get(js, id);
	char rmerr[CONF_ERR_MAX];
	bool stopped;
	size_t t, i;
	int r = -1;

	if (!job)
		return 0;
	pthread_mutex_lock(&js->lock);
	if (job->running)
		jobs_cancel_locked(job, "job finished during staging");
	stopped = jobs_wait_thread_locked(job, timeout_s);
	pthread_mutex_unlock(&js->lock);
	if (!stopped) {
		snprintf(err, errlen,
			 "job %u: the stage worker did not stop within %u s; "
			 "try again",
			 id, timeout_s);
		errno = EBUSY;
		goto out;
	}
	for (t = 0; t < js->conf->ntiers; t++) {
		if (!job->tiers[t])
			continue;
		if (tiers_remove_job_dir(js->agent->tiers, (int)t, id, rmerr,
					 sizeof(rmerr)) < 0) {
			snprintf(err, errlen, "job %u: %s", id, rmerr);
			goto out;
		}
	}
	/* A spread dataset's view: its bind mount went with the job's
	 * directory; its overlay and FUSE mounts go now, and so does its
	 * process. */
	if (stop_views(job, err, errlen) < 0)
		goto out;
	/* The links are gone with the directories: release the versions. */
	for (i = 0; job->profile && i < job->profile->ndatasets; i++) {
		const struct profile_dataset *ds = &job->profile->datasets[i];
		char key[CACHE_KEY_LEN + 1], part[CACHE_KEY_LEN + 1];
		int dt = tiers_index(js->agent->tiers, ds->tier);

		if (dt < 0 || job->prestage)
			continue;
		cache_key(job->uid, ds->path, key);
		cache_unpin_job(js->agent->cache, dt, key, job->id);
		cachekey_part(key, part);
		cache_unpin_job(js->agent->cache, dt, part, job->id);
		/* It may have been served from the public entry instead
		 * (stage.c); unpinning an entry never pinned is a no-op. */
		cache_key_public(ds->path, key);
		cache_unpin_job(js->agent->cache, dt, key, job->id);
		cachekey_part(key, part);
		cache_unpin_job(js->agent->cache, dt, part, job->id);
	}
	remember_finished(job);
	if (jobs_forget(job))
		jobs_put(job); /* the table's reference */
	r = 0;
out:
	jobs_put(job);
	return r;
}

void jobs_cleanup_failed(struct job *job)
{
	struct jobs *js = job->table;
	char err[CONF_ERR_MAX];
	size_t t;

	/* Before the directories: a failed job's views (the datasets
	 * staged before the one that failed) serve nothing any more. The
	 * bind mounts go with the job directory, or stay (fallback) over
	 * views that are gone: reads there fail, the job uses the PFS. */
	if (stop_views(job, err, sizeof(err)) < 0)
		log_warningx("%s", err);

	for (t = 0; t < js->conf->ntiers; t++) {
		if (!job->tiers[t])
			continue;
		if (jobs_policy(job) == STAGE_FAILURE_FAIL) {
			/* The job will not run: nothing of it is kept. */
			if (tiers_remove_job_dir(js->agent->tiers, (int)t,
						 job->id, err, sizeof(err)) < 0)
				log_warningx("job %u: %s", job->id, err);
		} else if (tiers_remove_partial(js->agent->tiers, (int)t,
						job->id, NULL, err,
						sizeof(err)) < 0) {
			log_warningx("job %u: %s", job->id, err);
		}
	}
}

/* --- prestages
 * ---------------------------------------------------------------- */

void jobs_prune_prestage(struct jobs *js)
{
	char err[CONF_ERR_MAX];
	time_t now = time(NULL);
	uint32_t ids[64];
	const struct job *job;
	size_t n = 0, i;

	pthread_mutex_lock(&js->lock);
	for (job = js->head; job && n < 64; job = job->next)
		if (job->prestage && !job->running && job->ended &&
		    now - job->ended > JOBS_PRESTAGE_KEEP_S)
			ids[n++] = job->id;
	pthread_mutex_unlock(&js->lock);
	for (i = 0; i < n; i++)
		if (jobs_finish(js, ids[i], 1, err, sizeof(err)) < 0)
			log_warningx("%s", err);
}
