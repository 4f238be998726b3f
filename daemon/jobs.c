/* jobs.c - the job table: the object, its jobs, references and lookups.
 *
 * How the table is split, its locking and its persistence: see
 * jobs_internal.h. The state file's format: jobs_state.c.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/base/log.h"
#include "common/config/joblayout.h"
#include "daemon/jobs.h"
#include "daemon/jobs_internal.h"
#include "daemon/staging/tiers.h"

static const char *const ds_result_names[] = {
	[JOB_DS_PENDING] = "pending",
	[JOB_DS_HIT] = "hit",
	[JOB_DS_BUILT] = "built",
	[JOB_DS_FAILED] = "failed",
};

const char *jobs_ds_result_name(enum job_ds_result r)
{
	if ((size_t)r < sizeof(ds_result_names) / sizeof(ds_result_names[0]))
		return ds_result_names[r];
	return "pending";
}

enum job_ds_result jobs_ds_result_from_name(const char *s)
{
	size_t i;

	for (i = 0;
	     s && i < sizeof(ds_result_names) / sizeof(ds_result_names[0]); i++)
		if (!strcmp(s, ds_result_names[i]))
			return (enum job_ds_result)i;
	return JOB_DS_PENDING;
}

static const char *const state_names[] = {
	[JOB_STAGING] = "staging",
	[JOB_STAGED] = "staged",
	[JOB_FAILED] = "failed",
};

const char *jobs_state_name(enum job_state state)
{
	if ((size_t)state < sizeof(state_names) / sizeof(state_names[0]))
		return state_names[state];
	return "unknown";
}

int jobs_state_from_name(const char *s, enum job_state *ret)
{
	size_t i;

	for (i = 0; s && i < sizeof(state_names) / sizeof(state_names[0]);
	     i++) {
		if (!strcmp(s, state_names[i])) {
			*ret = (enum job_state)i;
			return 0;
		}
	}
	return -1;
}

void jobs_deadline_in(unsigned seconds, struct timespec *ts)
{
	clock_gettime(CLOCK_MONOTONIC, ts);
	ts->tv_sec += seconds;
}

/* --- job objects
 * -------------------------------------------------------------- */

void jobs_job_free(struct job *job)
{
	if (!job)
		return;
	profile_destroy(job->profile);
	free(job->profile_json);
	for (size_t i = 0; i < job->nnodes; i++)
		free(job->nodes[i]);
	free(job->nodes);
	for (size_t i = 0; i < PROFILE_MAX_DATASETS; i++)
		free(job->ds[i].spread_plan);
	free(job);
}

/* Mark the tiers JOB's profile uses: datasets' tiers and the home tier. */
static void job_mark_tiers(struct job *job)
{
	struct jobs *js = job->table;
	const struct conf_tier *home;
	size_t i;
	int t;

	for (i = 0; i < job->profile->ndatasets; i++) {
		t = tiers_index(js->agent->tiers,
				job->profile->datasets[i].tier);
		if (t >= 0)
			job->tiers[t] = true;
	}
	home = joblayout_home_tier(js->conf, job->profile);
	t = tiers_index(js->agent->tiers, home->name);
	if (t >= 0)
		job->tiers[t] = true;
	/* drain.c: outputs live in TIER/jobs/J/out/NAME on their tier. */
	for (i = 0; i < job->profile->noutputs; i++) {
		t = tiers_index(js->agent->tiers,
				job->profile->outputs[i].tier);
		if (t >= 0)
			job->tiers[t] = true;
	}
}

int64_t jobs_now_us(void)
{
	struct timespec rt;

	clock_gettime(CLOCK_REALTIME, &rt);
	return (int64_t)rt.tv_sec * 1000000 + rt.tv_nsec / 1000;
}

struct job *jobs_new_job(struct jobs *js, uint32_t id, uid_t uid, gid_t gid,
			 const char *user, struct profile *profile, char *err,
			 size_t errlen)
{
	struct job *job = calloc(1, sizeof(*job));

	if (!job)
		goto nomem;
	job->table = js;
	if (!user || strlen(user) >= sizeof(job->user)) {
		snprintf(err, errlen, "key 'user': longer than %d bytes",
			 JOBS_USER_MAX - 1);
		free(job);
		return NULL;
	}
	job->profile_json = profile_to_json(profile);
	if (!job->profile_json) {
		free(job);
		goto nomem;
	}
	job->id = id;
	job->uid = uid;
	job->gid = gid;
	snprintf(job->user, sizeof(job->user), "%s", user);
	job->created_us = jobs_now_us();
	job->created = (time_t)(job->created_us / 1000000);
	clock_gettime(CLOCK_MONOTONIC, &job->t0);
	job->state = JOB_STAGING;
	job->running = true;
	job->refs = 1; /* the caller's */
	job->profile = profile;
	job_mark_tiers(job);
	return job;
nomem:
	snprintf(err, errlen, "out of memory");
	return NULL;
}

int jobs_set_nodes(struct job *job, const char *const *nodes, size_t n,
		   char *err, size_t errlen)
{
	char **v = calloc(n ? n : 1, sizeof(*v));
	size_t i;

	if (!v)
		goto nomem;
	for (i = 0; i < n; i++)
		if (!(v[i] = strdup(nodes[i])))
			goto nomem;
	job->nodes = v;
	job->nnodes = n;
	return 0;
nomem:
	for (i = 0; v && i < n; i++)
		free(v[i]);
	free(v);
	snprintf(err, errlen, "out of memory");
	return -1;
}

bool jobs_multi_node(const struct job *job)
{
	return job->nnodes > 1;
}

void jobs_discard(struct job *job)
{
	if (!job)
		return;
	/* The profile was not ours to free if creation failed; here it is. */
	jobs_job_free(job);
}

enum stage_failure_policy jobs_policy(const struct job *job)
{
	if (job->profile && job->profile->has_on_failure)
		return job->profile->on_failure;
	return job->table->conf->on_failure;
}

/* --- table
 * ---------------------------------------------------------------------- */

struct job *jobs_find_locked(struct jobs *js, uint32_t id)
{
	struct job *job;

	for (job = js->head; job; job = job->next)
		if (job->id == id)
			return job;
	return NULL;
}

void jobs_unlink_locked(struct jobs *js, struct job *job)
{
	struct job **pp;

	for (pp = &js->head; *pp; pp = &(*pp)->next) {
		if (*pp == job) {
			*pp = job->next;
			job->next = NULL;
			return;
		}
	}
}

struct job *jobs_get(struct jobs *js, uint32_t id)
{
	struct job *job;

	if (!js)
		return NULL; /* an agent without a table knows no job */
	pthread_mutex_lock(&js->lock);
	job = jobs_find_locked(js, id);
	if (job)
		job->refs++;
	pthread_mutex_unlock(&js->lock);
	return job;
}

bool jobs_known(struct jobs *js, uint32_t id)
{
	bool r;

	if (!js)
		return false;
	pthread_mutex_lock(&js->lock);
	r = jobs_find_locked(js, id) != NULL;
	pthread_mutex_unlock(&js->lock);
	return r;
}

bool jobs_known_arg(void *js, uint32_t id)
{
	return jobs_known(js, id);
}

uint32_t jobs_next_prestage_id(struct jobs *js)
{
	const struct job *job;
	uint32_t id;

	pthread_mutex_lock(&js->lock);
	/* After a restart the reloaded ones are taken into account. */
	for (job = js->head; job; job = job->next)
		if (job->id >= js->prestage_next)
			js->prestage_next = job->id + 1;
	if (js->prestage_next < JOBS_PRESTAGE_ID_MIN)
		js->prestage_next = JOBS_PRESTAGE_ID_MIN; /* wrapped */
	id = js->prestage_next++;
	pthread_mutex_unlock(&js->lock);
	return id;
}

void jobs_hold(struct job *job)
{
	struct jobs *js = job->table;

	pthread_mutex_lock(&js->lock);
	job->refs++;
	pthread_mutex_unlock(&js->lock);
}

void jobs_put(struct job *job)
{
	struct jobs *js;
	bool last;

	if (!job)
		return;
	js = job->table;
	pthread_mutex_lock(&js->lock);
	last = --job->refs == 0;
	pthread_mutex_unlock(&js->lock);
	if (last)
		jobs_job_free(job);
}

void jobs_view_locked(const struct job *job, struct job_view *ret)
{
	ret->state = job->state;
	snprintf(ret->error, sizeof(ret->error), "%s", job->error);
	ret->bytes = job->bytes;
	ret->files = job->files;
	ret->total_bytes = job->total_bytes;
	ret->total_files = job->total_files;
}

void jobs_view(struct job *job, struct job_view *ret)
{
	struct jobs *js = job->table;

	pthread_mutex_lock(&js->lock);
	jobs_view_locked(job, ret);
	pthread_mutex_unlock(&js->lock);
}

int jobs_insert(struct jobs *js, struct job *job, struct job **ret_existing,
		char *err, size_t errlen)
{
	struct job *old;

	pthread_mutex_lock(&js->lock);
	if (js->stopping) {
		pthread_mutex_unlock(&js->lock);
		snprintf(err, errlen, "iostaged is shutting down");
		errno = ESHUTDOWN;
		return -1;
	}
	old = jobs_find_locked(js, job->id);
	if (old) {
		old->refs++;
		pthread_mutex_unlock(&js->lock);
		*ret_existing = old;
		return 1;
	}
	job->refs++; /* the table's */
	job->next = js->head;
	js->head = job;
	pthread_mutex_unlock(&js->lock);

	if (jobs_persist(job) < 0) {
		int saved = errno;

		snprintf(err, errlen, "cannot write the state of job %u: %s",
			 job->id, strerror(saved));
		jobs_remove(job);
		errno = saved;
		return -1;
	}
	return 0;
}

void jobs_remove(struct job *job)
{
	struct jobs *js = job->table;

	pthread_mutex_lock(&js->lock);
	job->running = false;
	pthread_mutex_unlock(&js->lock);
	if (jobs_forget(job))
		jobs_put(job); /* the table's reference */
}

/* --- the object --------------------------------------------------------------
 */

void jobs_set_drain_hooks(struct jobs *js, jobs_drain_status_fn status,
			  jobs_drain_resume_fn resume, void *arg)
{
	pthread_mutex_lock(&js->lock);
	js->drain_status = status;
	js->drain_resume = resume;
	js->drain_arg = arg;
	pthread_mutex_unlock(&js->lock);
}

struct jobs *jobs_create(struct agent *a, uid_t owner, char *err, size_t errlen)
{
	struct jobs *js = calloc(1, sizeof(*js));
	pthread_condattr_t attr;

	if (!js) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	js->agent = a;
	js->conf = a->conf;
	js->owner = owner;
	js->prestage_next = JOBS_PRESTAGE_ID_MIN;
	pthread_mutex_init(&js->lock, NULL);
	pthread_mutex_init(&js->persist_lock, NULL);
	pthread_condattr_init(&attr);
	pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
	pthread_cond_init(&js->cond, &attr);
	pthread_condattr_destroy(&attr);
	js->state_fd = jobs_state_open(js, err, errlen);
	if (js->state_fd < 0) {
		jobs_destroy(js);
		return NULL;
	}
	return js;
}

int jobs_load(struct jobs *js, char *err, size_t errlen)
{
	return jobs_load_all(js, err, errlen);
}

bool jobs_shutdown(struct jobs *js, const char *reason, unsigned timeout_s)
{
	struct timespec deadline;
	struct job *job;
	bool busy;

	jobs_deadline_in(timeout_s, &deadline);
	pthread_mutex_lock(&js->lock);
	js->stopping = true;
	for (job = js->head; job; job = job->next)
		if (job->running)
			jobs_cancel_locked(job, reason);
	pthread_cond_broadcast(&js->cond);
	for (;;) {
		busy = false;
		for (job = js->head; job; job = job->next)
			busy |= job->running;
		if (!busy)
			break;
		if (pthread_cond_timedwait(&js->cond, &js->lock, &deadline) ==
		    ETIMEDOUT)
			break;
	}
	pthread_mutex_unlock(&js->lock);
	if (busy)
		log_warningx("staging threads still running after %u s; "
			     "exiting anyway",
			     timeout_s);
	return !busy;
}

void jobs_destroy(struct jobs *js)
{
	struct job *job, *next;

	if (!js)
		return;
	pthread_mutex_lock(&js->lock);
	job = js->head;
	js->head = NULL;
	pthread_mutex_unlock(&js->lock);
	for (; job; job = next) {
		next = job->next;
		if (--job->refs == 0)
			jobs_job_free(job);
	}
	if (js->state_fd >= 0)
		close(js->state_fd);
	pthread_cond_destroy(&js->cond);
	pthread_mutex_destroy(&js->persist_lock);
	pthread_mutex_destroy(&js->lock);
	free(js);
}
