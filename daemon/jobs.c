/* jobs.c - the job table, its persistence and its condition variable.
 *
 * Locking. One mutex (jobs_lock) guards the table and every changing field
 * of every job; one condition variable (jobs_cond, CLOCK_MONOTONIC) is
 * broadcast on each change that someone may wait for (state, ->running).
 * Critical sections are short: no I/O happens under jobs_lock.
 *
 * Persistence takes a second mutex, persist_lock, *before* jobs_lock: the
 * job is snapshotted under both, then written with only persist_lock held.
 * Since writes are serialized and each writes the latest snapshot, the file
 * on disk always ends with the newest state, and a job marked ->gone (its
 * file deleted under persist_lock) is never written again.
 *
 * State file (StateDir/jobs/JOBID.json, root 0600):
 *   {"job":42,"uid":1001,"gid":1001,"user":"alice","created":1700000000,
 *    "state":"staged","error":null,"bytes":N,"files":N,"total_bytes":N,
 *    "total_files":N,"tiers":["nvme"],"tier_bytes":{"nvme":N},
 *    "prestage":false,"ended":T,"staged_s":S,
 *    "cache":[{"result":"hit","entry":"K.vN","copied_files":N,
 *              "copied_bytes":N,"linked_files":N,"bytes":N,"files":N}],
 *    (bytes/files: the dataset's size, once it is hit or built)
 *    "profile":{...normalized...},
 *    "nodes":["n1","n2"], "failed_node":"n2"}   (multi-node jobs only)
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/config/joblayout.h"
#include "common/base/jsonbuf.h"
#include "common/base/log.h"
#include "common/net/proto.h"
#include "common/base/smallfile.h"
#include "daemon/staging/cache.h"
#include "daemon/fsutil.h"
#include "daemon/jobs.h"
#include "daemon/staging/tiers.h"

#define JOBS_STATE_FILE_MAX (1024 * 1024) /* a state file we agree to read */
#define JOBS_CREATED_MAX 1000000000000LL /* seconds: 1e12, the year 33,658 */

static const struct conf *jobs_conf;
static struct cache *jobs_cache;
static struct job *jobs_head;
static pthread_mutex_t jobs_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t persist_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t jobs_cond;
static bool jobs_stopping;
static int state_fd = -1; /* StateDir/jobs */
static jobs_drain_status_fn drain_status; /* drain.c's, jobs_set_drain_hooks */
static jobs_drain_resume_fn drain_resume;

static const char *const ds_result_names[] = {
	[JOB_DS_PENDING] = "pending",
	[JOB_DS_HIT] = "hit",
	[JOB_DS_BUILT] = "built",
	[JOB_DS_FAILED] = "failed",
};

static const char *ds_result_name(enum job_ds_result r)
{
	if ((size_t)r < sizeof(ds_result_names) / sizeof(ds_result_names[0]))
		return ds_result_names[r];
	return "pending";
}

static enum job_ds_result ds_result_from_name(const char *s)
{
	size_t i;

	for (i = 0; s && i < sizeof(ds_result_names) / sizeof(ds_result_names[0]);
	     i++)
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

static int state_from_name(const char *s, enum job_state *ret)
{
	size_t i;

	for (i = 0; i < sizeof(state_names) / sizeof(state_names[0]); i++) {
		if (!strcmp(s, state_names[i])) {
			*ret = (enum job_state)i;
			return 0;
		}
	}
	return -1;
}

static void deadline_in(unsigned seconds, struct timespec *ts)
{
	clock_gettime(CLOCK_MONOTONIC, ts);
	ts->tv_sec += seconds;
}

/* --- job objects -------------------------------------------------------------- */

static void job_free(struct job *job)
{
	if (!job)
		return;
	profile_destroy(job->profile);
	free(job->profile_json);
	for (size_t i = 0; i < job->nnodes; i++)
		free(job->nodes[i]);
	free(job->nodes);
	free(job);
}

/* Mark the tiers JOB's profile uses: datasets' tiers and the home tier. */
static void job_mark_tiers(struct job *job)
{
	const struct conf_tier *home;
	size_t i;
	int t;

	for (i = 0; i < job->profile->ndatasets; i++) {
		t = tiers_index(job->profile->datasets[i].tier);
		if (t >= 0)
			job->tiers[t] = true;
	}
	home = joblayout_home_tier(jobs_conf, job->profile);
	t = tiers_index(home->name);
	if (t >= 0)
		job->tiers[t] = true;
	/* drain.c: outputs live in TIER/jobs/J/out/NAME on their tier. */
	for (i = 0; i < job->profile->noutputs; i++) {
		t = tiers_index(job->profile->outputs[i].tier);
		if (t >= 0)
			job->tiers[t] = true;
	}
}

/* Microseconds since the epoch. */
static int64_t now_us(void)
{
	struct timespec rt;

	clock_gettime(CLOCK_REALTIME, &rt);
	return (int64_t)rt.tv_sec * 1000000 + rt.tv_nsec / 1000;
}

struct job *jobs_create(uint32_t id, uid_t uid, gid_t gid, const char *user,
			struct profile *profile, char *err, size_t errlen)
{
	struct job *job = calloc(1, sizeof(*job));

	if (!job)
		goto nomem;
	if (strlen(user) >= sizeof(job->user)) {
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
	job->created_us = now_us();
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
	job_free(job);
}

enum stage_failure_policy jobs_policy(const struct job *job)
{
	if (job->profile && job->profile->has_on_failure)
		return job->profile->on_failure;
	return jobs_conf->on_failure;
}

/* --- table ---------------------------------------------------------------------- */

static struct job *find_locked(uint32_t id)
{
	struct job *job;

	for (job = jobs_head; job; job = job->next)
		if (job->id == id)
			return job;
	return NULL;
}

static void unlink_locked(struct job *job)
{
	struct job **pp;

	for (pp = &jobs_head; *pp; pp = &(*pp)->next) {
		if (*pp == job) {
			*pp = job->next;
			job->next = NULL;
			return;
		}
	}
}

struct job *jobs_get(uint32_t id)
{
	struct job *job;

	pthread_mutex_lock(&jobs_lock);
	job = find_locked(id);
	if (job)
		job->refs++;
	pthread_mutex_unlock(&jobs_lock);
	return job;
}

/* The last JOBS_FINISHED_KEEP jobs finished here, when, and what failed
 * them if they failed, a ring under jobs_lock. */
static struct finished {
	uint32_t id;
	int64_t at_us;
	char failed_node[CONF_NODE_MAX]; /* "" when it failed here, or not */
	char error[JOBS_FINISHED_ERR_MAX]; /* "" when staging did not fail */
} finished_jobs[JOBS_FINISHED_KEEP];
static size_t finished_next;

/* JOB finishes here now (jobs_finish, after its Epilog's work). */
static void remember_finished(struct job *job)
{
	struct finished *f;
	int64_t at = now_us();

	pthread_mutex_lock(&jobs_lock);
	f = &finished_jobs[finished_next++ % JOBS_FINISHED_KEEP];
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
	pthread_mutex_unlock(&jobs_lock);
}

bool jobs_finished_here(uint32_t id, int64_t since_us,
			struct jobs_finished *ret)
{
	bool r = false;

	pthread_mutex_lock(&jobs_lock);
	for (size_t i = 0; i < JOBS_FINISHED_KEEP && !r; i++) {
		const struct finished *f = &finished_jobs[i];

		r = id && f->id == id && f->at_us >= since_us;
		if (r && ret) {
			snprintf(ret->failed_node, sizeof(ret->failed_node),
				 "%s", f->failed_node);
			snprintf(ret->error, sizeof(ret->error), "%s",
				 f->error);
		}
	}
	pthread_mutex_unlock(&jobs_lock);
	return r;
}

bool jobs_known(uint32_t id)
{
	bool r;

	pthread_mutex_lock(&jobs_lock);
	r = find_locked(id) != NULL;
	pthread_mutex_unlock(&jobs_lock);
	return r;
}

uint32_t jobs_next_prestage_id(void)
{
	static uint32_t next = JOBS_PRESTAGE_ID_MIN;
	const struct job *job;
	uint32_t id;

	pthread_mutex_lock(&jobs_lock);
	/* After a restart the reloaded ones are taken into account. */
	for (job = jobs_head; job; job = job->next)
		if (job->id >= next)
			next = job->id + 1;
	if (next < JOBS_PRESTAGE_ID_MIN)
		next = JOBS_PRESTAGE_ID_MIN; /* wrapped */
	id = next++;
	pthread_mutex_unlock(&jobs_lock);
	return id;
}

void jobs_prune_prestage(void)
{
	char err[CONF_ERR_MAX];
	time_t now = time(NULL);
	uint32_t ids[64];
	const struct job *job;
	size_t n = 0, i;

	pthread_mutex_lock(&jobs_lock);
	for (job = jobs_head; job && n < 64; job = job->next)
		if (job->prestage && !job->running && job->ended &&
		    now - job->ended > JOBS_PRESTAGE_KEEP_S)
			ids[n++] = job->id;
	pthread_mutex_unlock(&jobs_lock);
	for (i = 0; i < n; i++)
		if (jobs_finish(ids[i], 1, err, sizeof(err)) < 0)
			log_warningx("%s", err);
}

void jobs_hold(struct job *job)
{
	pthread_mutex_lock(&jobs_lock);
	job->refs++;
	pthread_mutex_unlock(&jobs_lock);
}

void jobs_put(struct job *job)
{
	bool last;

	if (!job)
		return;
	pthread_mutex_lock(&jobs_lock);
	last = --job->refs == 0;
	pthread_mutex_unlock(&jobs_lock);
	if (last)
		job_free(job);
}

static void view_locked(const struct job *job, struct job_view *ret)
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
	pthread_mutex_lock(&jobs_lock);
	view_locked(job, ret);
	pthread_mutex_unlock(&jobs_lock);
}

/* --- persistence -------------------------------------------------------------- */

/* The "cache" array: how each dataset was served. */
static cJSON *cache_records_locked(const struct job *job)
{
	cJSON *arr = cJSON_CreateArray(), *o;
	size_t i, n = job->profile ? job->profile->ndatasets : 0;

	for (i = 0; arr && i < n; i++) {
		const struct job_ds *d = &job->ds[i];

		o = cJSON_CreateObject();
		if (!o)
			break;
		cJSON_AddStringToObject(o, "dataset",
					job->profile->datasets[i].name);
		cJSON_AddStringToObject(o, "tier",
					job->profile->datasets[i].tier);
		cJSON_AddStringToObject(o, "result", ds_result_name(d->result));
		if (d->entry[0])
			cJSON_AddStringToObject(o, "entry", d->entry);
		else
			cJSON_AddNullToObject(o, "entry");
		cJSON_AddNumberToObject(o, "copied_files",
					(double)d->copied_files);
		cJSON_AddNumberToObject(o, "copied_bytes",
					(double)d->copied_bytes);
		cJSON_AddNumberToObject(o, "linked_files",
					(double)d->linked_files);
		if (d->result == JOB_DS_HIT || d->result == JOB_DS_BUILT) {
			cJSON_AddNumberToObject(o, "bytes", (double)d->bytes);
			cJSON_AddNumberToObject(o, "files", (double)d->files);
		}
		cJSON_AddItemToArray(arr, o);
	}
	return arr;
}

/* State and counters: the same fields in the state file and in status. */
static void add_state_fields(cJSON *o, const struct job *job)
{
	cJSON_AddStringToObject(o, "state", jobs_state_name(job->state));
	if (job->error[0])
		cJSON_AddStringToObject(o, "error", job->error);
	else
		cJSON_AddNullToObject(o, "error");
	cJSON_AddNumberToObject(o, "bytes", (double)job->bytes);
	cJSON_AddNumberToObject(o, "files", (double)job->files);
	cJSON_AddNumberToObject(o, "total_bytes", (double)job->total_bytes);
	cJSON_AddNumberToObject(o, "total_files", (double)job->total_files);
}

static cJSON *job_json_locked(const struct job *job)
{
	cJSON *o = cJSON_CreateObject(), *tiers, *tb, *profile;
	size_t i;

	if (!o)
		return NULL;
	cJSON_AddNumberToObject(o, "job", job->id);
	cJSON_AddNumberToObject(o, "uid", job->uid);
	cJSON_AddNumberToObject(o, "gid", job->gid);
	cJSON_AddStringToObject(o, "user", job->user);
	cJSON_AddNumberToObject(o, "created", (double)job->created);
	cJSON_AddNumberToObject(o, "created_us", (double)job->created_us);
	add_state_fields(o, job);
	tiers = cJSON_AddArrayToObject(o, "tiers");
	tb = cJSON_AddObjectToObject(o, "tier_bytes");
	for (i = 0; i < jobs_conf->ntiers && tiers && tb; i++) {
		if (!job->tiers[i])
			continue;
		cJSON_AddItemToArray(tiers,
				     cJSON_CreateString(jobs_conf->tiers[i].name));
		cJSON_AddNumberToObject(tb, jobs_conf->tiers[i].name,
					(double)job->tier_bytes[i]);
	}
	cJSON_AddBoolToObject(o, "prestage", job->prestage);
	cJSON_AddNumberToObject(o, "ended", (double)job->ended);
	cJSON_AddNumberToObject(o, "staged_s", job->staged_s);
	cJSON_AddItemToObject(o, "cache", cache_records_locked(job));
	profile = job->profile_json ? cJSON_Parse(job->profile_json) : NULL;
	if (profile)
		cJSON_AddItemToObject(o, "profile", profile);
	else
		cJSON_AddNullToObject(o, "profile");
	if (job->nnodes > 1) {
		cJSON *nodes = cJSON_AddArrayToObject(o, "nodes");

		for (i = 0; nodes && i < job->nnodes; i++)
			cJSON_AddItemToArray(nodes,
					     cJSON_CreateString(job->nodes[i]));
		if (job->failed_node[0])
			cJSON_AddStringToObject(o, "failed_node",
						job->failed_node);
	}
	return o;
}

static void state_name(uint32_t id, char *buf, size_t len)
{
	snprintf(buf, len, "%" PRIu32 ".json", id);
}

/* Write JOB's current state to its file. 0 or -1 with errno. */
static int persist(struct job *job)
{
	char name[32], *text = NULL;
	cJSON *o = NULL;
	int r = -1;

	pthread_mutex_lock(&persist_lock);
	pthread_mutex_lock(&jobs_lock);
	if (job->gone) {
		pthread_mutex_unlock(&jobs_lock);
		r = 0;
		goto out;
	}
	o = job_json_locked(job);
	pthread_mutex_unlock(&jobs_lock);
	text = o ? jsonbuf_dup(o) : NULL;
	if (!text) {
		errno = ENOMEM;
		goto out;
	}
	state_name(job->id, name, sizeof(name));
	r = fsutil_write_atomic(state_fd, name, text, strlen(text), 0600);
out:
	pthread_mutex_unlock(&persist_lock);
	if (r < 0)
		log_warning("job %u: cannot write its state file", job->id);
	cJSON_Delete(o);
	free(text);
	return r;
}

/* Mark JOB gone, take it out of the table and delete its file. Returns true
 * if this call did it (false: someone else already had). */
static bool forget(struct job *job)
{
	char name[32];
	bool did;

	pthread_mutex_lock(&persist_lock);
	pthread_mutex_lock(&jobs_lock);
	did = !job->gone;
	if (did) {
		job->gone = true;
		unlink_locked(job);
		pthread_cond_broadcast(&jobs_cond);
	}
	pthread_mutex_unlock(&jobs_lock);
	if (did) {
		state_name(job->id, name, sizeof(name));
		if (unlinkat(state_fd, name, 0) < 0 && errno != ENOENT)
			log_warning("job %u: cannot remove its state file",
				    job->id);
	}
	pthread_mutex_unlock(&persist_lock);
	return did;
}

int jobs_insert(struct job *job, struct job **ret_existing, char *err,
		size_t errlen)
{
	struct job *old;

	pthread_mutex_lock(&jobs_lock);
	if (jobs_stopping) {
		pthread_mutex_unlock(&jobs_lock);
		snprintf(err, errlen, "iostaged is shutting down");
		errno = ESHUTDOWN;
		return -1;
	}
	old = find_locked(job->id);
	if (old) {
		old->refs++;
		pthread_mutex_unlock(&jobs_lock);
		*ret_existing = old;
		return 1;
	}
	job->refs++; /* the table's */
	job->next = jobs_head;
	jobs_head = job;
	pthread_mutex_unlock(&jobs_lock);

	if (persist(job) < 0) {
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
	pthread_mutex_lock(&jobs_lock);
	job->running = false;
	pthread_mutex_unlock(&jobs_lock);
	if (forget(job))
		jobs_put(job); /* the table's reference */
}

/* --- waiting, aborting, finishing --------------------------------------- */

void jobs_wait(struct job *job, unsigned timeout_s, struct job_view *ret)
{
	struct timespec deadline;

	deadline_in(timeout_s, &deadline);
	pthread_mutex_lock(&jobs_lock);
	/* On shutdown the staging threads are cancelled and end "failed"
	 * soon; waiters get that answer rather than a stale "staging". */
	while (job->state == JOB_STAGING && !job->gone) {
		if (pthread_cond_timedwait(&jobs_cond, &jobs_lock, &deadline) ==
		    ETIMEDOUT)
			break;
	}
	view_locked(job, ret);
	pthread_mutex_unlock(&jobs_lock);
}

/* Cancel JOB's staging with REASON, under jobs_lock. */
static void cancel_locked(struct job *job, const char *reason)
{
	if (!job->cancel) {
		job->cancel = true;
		snprintf(job->cancel_reason, sizeof(job->cancel_reason), "%s",
			 reason);
	}
	if (job->worker > 0)
		kill(job->worker, SIGKILL);
}

/* Wait (jobs_lock held) until JOB's staging thread ends; false on timeout. */
static bool wait_thread_locked(struct job *job, unsigned timeout_s)
{
	struct timespec deadline;

	deadline_in(timeout_s, &deadline);
	while (job->running) {
		if (pthread_cond_timedwait(&jobs_cond, &jobs_lock, &deadline) ==
		    ETIMEDOUT)
			return !job->running;
	}
	return true;
}

void jobs_abort(struct job *job, const char *reason, unsigned timeout_s,
		struct job_view *ret)
{
	bool changed = false;

	pthread_mutex_lock(&jobs_lock);
	if (job->running) {
		cancel_locked(job, reason);
		wait_thread_locked(job, timeout_s);
	} else if (job->state != JOB_FAILED) {
		job->state = JOB_FAILED;
		snprintf(job->error, sizeof(job->error), "%s", reason);
		changed = true;
		pthread_cond_broadcast(&jobs_cond);
	}
	view_locked(job, ret);
	pthread_mutex_unlock(&jobs_lock);
	if (changed)
		persist(job);
}

void jobs_fail_jobwide(struct job *job, const char *node, const char *reason,
		       struct job_view *ret)
{
	bool changed = false;

	pthread_mutex_lock(&jobs_lock);
	if (job->state == JOB_STAGED && !job->running) {
		job->state = JOB_FAILED;
		snprintf(job->error, sizeof(job->error), "node %s: %s", node,
			 reason);
		snprintf(job->failed_node, sizeof(job->failed_node), "%s",
			 node);
		changed = true;
		pthread_cond_broadcast(&jobs_cond);
	}
	view_locked(job, ret);
	pthread_mutex_unlock(&jobs_lock);
	if (changed)
		persist(job);
}

void jobs_failed_node(struct job *job, char *buf, size_t len)
{
	pthread_mutex_lock(&jobs_lock);
	snprintf(buf, len, "%s", job->failed_node);
	pthread_mutex_unlock(&jobs_lock);
}

int jobs_finish(uint32_t id, unsigned timeout_s, char *err, size_t errlen)
{
	struct job *job = jobs_get(id);
	char rmerr[CONF_ERR_MAX];
	bool stopped;
	size_t t, i;
	int r = -1;

	if (!job)
		return 0;
	pthread_mutex_lock(&jobs_lock);
	if (job->running)
		cancel_locked(job, "job finished during staging");
	stopped = wait_thread_locked(job, timeout_s);
	pthread_mutex_unlock(&jobs_lock);
	if (!stopped) {
		snprintf(err, errlen,
			 "job %u: the stage worker did not stop within %u s; "
			 "try again",
			 id, timeout_s);
		errno = EBUSY;
		goto out;
	}
	for (t = 0; t < jobs_conf->ntiers; t++) {
		if (!job->tiers[t])
			continue;
		if (tiers_remove_job_dir((int)t, id, rmerr, sizeof(rmerr)) < 0) {
			snprintf(err, errlen, "job %u: %s", id, rmerr);
			goto out;
		}
	}
	/* The links are gone with the directories: release the versions. */
	for (i = 0; job->profile && i < job->profile->ndatasets; i++) {
		const struct profile_dataset *ds = &job->profile->datasets[i];
		char key[CACHE_KEY_LEN + 1];
		int dt = tiers_index(ds->tier);

		if (dt < 0 || job->prestage)
			continue;
		cache_key(job->uid, ds->path, key);
		cache_unpin_job(jobs_cache, dt, key, job->id);
		/* It may have been served from the public entry instead
		 * (stage.c); unpinning an entry never pinned is a no-op. */
		cache_key_public(ds->path, key);
		cache_unpin_job(jobs_cache, dt, key, job->id);
	}
	remember_finished(job);
	if (forget(job))
		jobs_put(job); /* the table's reference */
	r = 0;
out:
	jobs_put(job);
	return r;
}

void jobs_cleanup_failed(struct job *job)
{
	char err[CONF_ERR_MAX];
	size_t t;

	for (t = 0; t < jobs_conf->ntiers; t++) {
		if (!job->tiers[t])
			continue;
		if (jobs_policy(job) == STAGE_FAILURE_FAIL) {
			/* The job will not run: nothing of it is kept. */
			if (tiers_remove_job_dir((int)t, job->id, err,
						 sizeof(err)) < 0)
				log_warningx("job %u: %s", job->id, err);
		} else if (tiers_remove_partial((int)t, job->id, NULL, err,
						sizeof(err)) < 0) {
			log_warningx("job %u: %s", job->id, err);
		}
	}
}

/* --- the staging thread's side ------------------------------------------------ */

int jobs_set_worker(struct job *job, pid_t pid)
{
	int r = 0;

	pthread_mutex_lock(&jobs_lock);
	if (job->cancel)
		r = -1;
	else
		job->worker = pid;
	pthread_mutex_unlock(&jobs_lock);
	return r;
}

void jobs_clear_worker(struct job *job)
{
	pthread_mutex_lock(&jobs_lock);
	job->worker = 0;
	pthread_mutex_unlock(&jobs_lock);
}

bool jobs_cancelled(struct job *job, char *reason, size_t len)
{
	bool r;

	pthread_mutex_lock(&jobs_lock);
	r = job->cancel;
	if (r && reason && len)
		snprintf(reason, len, "%s", job->cancel_reason);
	pthread_mutex_unlock(&jobs_lock);
	return r;
}

void jobs_progress(struct job *job, uint64_t bytes, uint64_t files)
{
	pthread_mutex_lock(&jobs_lock);
	job->bytes = bytes;
	job->files = files;
	pthread_mutex_unlock(&jobs_lock);
}

void jobs_add_totals(struct job *job, uint64_t bytes, uint64_t files)
{
	pthread_mutex_lock(&jobs_lock);
	job->total_bytes += bytes;
	job->total_files += files;
	pthread_mutex_unlock(&jobs_lock);
}

void jobs_dataset_done(struct job *job, size_t i, int tier, uint64_t bytes,
		       uint64_t files)
{
	pthread_mutex_lock(&jobs_lock);
	/* Held by a cache entry, which the tier accounts for. */
	job->tier_bytes[tier] += bytes;
	if (i < PROFILE_MAX_DATASETS) {
		job->ds[i].bytes = bytes;
		job->ds[i].files = files;
	}
	pthread_mutex_unlock(&jobs_lock);
}

void jobs_dataset_result(struct job *job, size_t i, enum job_ds_result result,
			 const char *entry, uint64_t copied_files,
			 uint64_t copied_bytes, uint64_t linked_files)
{
	struct job_ds *d;

	if (i >= PROFILE_MAX_DATASETS)
		return;
	pthread_mutex_lock(&jobs_lock);
	d = &job->ds[i];
	d->result = result;
	snprintf(d->entry, sizeof(d->entry), "%s", entry ? entry : "");
	d->copied_files = copied_files;
	d->copied_bytes = copied_bytes;
	d->linked_files = linked_files;
	pthread_mutex_unlock(&jobs_lock);
}

void jobs_staging_done(struct job *job, bool ok, const char *error)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	pthread_mutex_lock(&jobs_lock);
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
	pthread_mutex_unlock(&jobs_lock);
	/* Persist before anyone is told: a waiter that sees the new state
	 * may run "finish" at once. */
	persist(job);
	pthread_mutex_lock(&jobs_lock);
	job->running = false;
	job->worker = 0;
	pthread_cond_broadcast(&jobs_cond);
	pthread_mutex_unlock(&jobs_lock);
}

/* --- status ------------------------------------------------------------------- */

/* rate_bps: bytes done per second of staging (so far, or in all once
 * done); eta_s: seconds left at that rate while staging, else null. */
static void progress_locked(const struct job *job, cJSON *o)
{
	struct timespec now;
	double elapsed = job->staged_s, rate = 0, eta = -1;

	if (job->state == JOB_STAGING) {
		clock_gettime(CLOCK_MONOTONIC, &now);
		elapsed = (double)(now.tv_sec - job->t0.tv_sec) +
			  (double)(now.tv_nsec - job->t0.tv_nsec) / 1e9;
	}
	if (elapsed > 0.001)
		rate = (double)job->bytes / elapsed;
	/* whole bytes per second; a state file's staged_s of nearly 0
	 * gives a rate out of range: none */
	cJSON_AddNumberToObject(o, "rate_bps", (double)proto_u64_of(rate));
	if (job->state == JOB_STAGING && rate > 0 &&
	    job->total_bytes >= job->bytes)
		eta = (double)(job->total_bytes - job->bytes) / rate + 0.5;
	/* past 1e12 s (a crawl of bytes a second) is no estimate */
	if (eta >= 0 && eta < 1e12)
		cJSON_AddNumberToObject(o, "eta_s", (double)(uint64_t)eta);
	else
		cJSON_AddNullToObject(o, "eta_s");
}

static cJSON *job_status_locked(const struct job *job)
{
	cJSON *o = cJSON_CreateObject(), *ds, *drain;
	size_t i;

	if (!o)
		return NULL;
	cJSON_AddNumberToObject(o, "job", job->id);
	cJSON_AddStringToObject(o, "user", job->user);
	cJSON_AddNumberToObject(o, "uid", job->uid);
	/* drain.c: outputs drained during the run and at the end. */
	if (drain_status && (drain = drain_status(job->id)))
		cJSON_AddItemToObject(o, "drain", drain);
	add_state_fields(o, job);
	progress_locked(job, o);
	cJSON_AddBoolToObject(o, "prestage", job->prestage);
	ds = cJSON_AddArrayToObject(o, "datasets");
	for (i = 0; ds && job->profile && i < job->profile->ndatasets; i++)
		cJSON_AddItemToArray(
			ds, cJSON_CreateString(job->profile->datasets[i].name));
	cJSON_AddItemToObject(o, "cache", cache_records_locked(job));
	return o;
}

cJSON *jobs_status_json(uid_t peer_uid)
{
	cJSON *arr = cJSON_CreateArray(), *o;
	const struct job *job;

	if (!arr)
		return NULL;
	pthread_mutex_lock(&jobs_lock);
	for (job = jobs_head; job; job = job->next) {
		if (peer_uid != 0 && job->uid != peer_uid)
			continue;
		o = job_status_locked(job);
		if (!o) {
			cJSON_Delete(arr);
			arr = NULL;
			break;
		}
		cJSON_AddItemToArray(arr, o);
	}
	pthread_mutex_unlock(&jobs_lock);
	return arr;
}

void jobs_tier_counts(unsigned counts[CONF_MAX_TIERS])
{
	const struct job *job;
	size_t t;

	memset(counts, 0, sizeof(unsigned) * CONF_MAX_TIERS);
	pthread_mutex_lock(&jobs_lock);
	for (job = jobs_head; job; job = job->next)
		for (t = 0; t < CONF_MAX_TIERS; t++)
			if (job->tiers[t])
				counts[t]++;
	pthread_mutex_unlock(&jobs_lock);
}

/* --- start-up: the state directory and reloading --------------------------- */

/* Open StateDir/jobs, creating StateDir (0700) and jobs (0700) as needed. */
static int state_open(const char *dir, char *err, size_t errlen)
{
	char why[CONF_ERR_MAX];
	struct stat st;
	int fd = -1, jfd = -1;

	if (fsutil_mkdir_p(dir, 0700) < 0) {
		snprintf(err, errlen, "StateDir: cannot create %s: %s", dir,
			 strerror(errno));
		goto fail;
	}
	fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &st) < 0) {
		snprintf(err, errlen, "StateDir: cannot open %s: %s", dir,
			 strerror(errno));
		goto fail;
	}
	if (fsutil_check_root_dir(&st, dir, false, why, sizeof(why)) < 0) {
		snprintf(err, errlen, "StateDir: %s", why);
		goto fail;
	}
	if (mkdirat(fd, "jobs", 0700) < 0 && errno != EEXIST) {
		snprintf(err, errlen, "StateDir: cannot create %s/jobs: %s",
			 dir, strerror(errno));
		goto fail;
	}
	jfd = openat(fd, "jobs", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (jfd < 0 || fstat(jfd, &st) < 0) {
		snprintf(err, errlen, "StateDir: cannot open %s/jobs: %s", dir,
			 strerror(errno));
		goto fail;
	}
	if (fsutil_check_root_dir(&st, "StateDir/jobs", false, why,
				  sizeof(why)) < 0) {
		snprintf(err, errlen, "StateDir: %s", why);
		goto fail;
	}
	close(fd);
	return jfd;
fail:
	if (jfd >= 0)
		close(jfd);
	if (fd >= 0)
		close(fd);
	return -1;
}

/* Read the state file NAME (at most JOBS_STATE_FILE_MAX). */
static char *read_state_file(const char *name)
{
	char reason[128];

	return smallfile_read_at(state_fd, name, O_NOFOLLOW,
				 JOBS_STATE_FILE_MAX, NULL, reason,
				 sizeof(reason));
}

/* Rebuild the profile of a reloaded job; NULL with err if it no longer
 * passes the current configuration. */
static struct profile *reload_profile(const cJSON *obj, char *err,
				      size_t errlen)
{
	struct profile *p;
	char *text;

	if (!cJSON_IsObject(obj)) {
		snprintf(err, errlen, "no profile");
		return NULL;
	}
	text = jsonbuf_dup(obj);
	if (!text) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	p = profile_parse_json(text, "state file", err, errlen);
	free(text);
	if (p && (profile_normalize(p, jobs_conf, err, errlen) < 0 ||
		  profile_validate(p, jobs_conf, PROFILE_CHECK_STRUCTURE, err,
				   errlen) < 0)) {
		profile_destroy(p);
		p = NULL;
	}
	return p;
}

/* The per-dataset records of a state file. */
static void reload_records(struct job *job, const cJSON *arr)
{
	const cJSON *item;
	size_t i = 0;

	cJSON_ArrayForEach(item, arr)
	{
		const cJSON *entry = cJSON_GetObjectItemCaseSensitive(item,
								      "entry");
		const cJSON *res = cJSON_GetObjectItemCaseSensitive(item,
								    "result");
		struct job_ds *d;

		if (i >= PROFILE_MAX_DATASETS)
			break;
		d = &job->ds[i++];
		d->result = ds_result_from_name(
			cJSON_IsString(res) ? res->valuestring : NULL);
		if (cJSON_IsString(entry))
			snprintf(d->entry, sizeof(d->entry), "%s",
				 entry->valuestring);
		d->copied_files = proto_u64(item, "copied_files");
		d->copied_bytes = proto_u64(item, "copied_bytes");
		d->linked_files = proto_u64(item, "linked_files");
		d->bytes = proto_u64(item, "bytes");
		d->files = proto_u64(item, "files");
	}
}

/* A multi-node job's nodes and failed node; bad names are dropped. */
static void reload_nodes(struct job *job, const cJSON *o)
{
	const cJSON *arr = cJSON_GetObjectItemCaseSensitive(o, "nodes"), *e;
	const cJSON *fn = cJSON_GetObjectItemCaseSensitive(o, "failed_node");
	const char *names[JOBS_NODES_MAX];
	size_t n = 0;
	char err[64];

	cJSON_ArrayForEach(e, arr)
		if (n < JOBS_NODES_MAX && cJSON_IsString(e) &&
		    conf_is_node_name(e->valuestring))
			names[n++] = e->valuestring;
	if (n > 1 && jobs_set_nodes(job, names, n, err, sizeof(err)) < 0)
		log_warningx("job %u: its node list is lost: %s", job->id, err);
	if (cJSON_IsString(fn) && conf_is_node_name(fn->valuestring))
		snprintf(job->failed_node, sizeof(job->failed_node), "%s",
			 fn->valuestring);
}

/* Build a job from a parsed state file. NULL with err. */
static struct job *job_from_json(const cJSON *o, char *err, size_t errlen)
{
	const cJSON *user = cJSON_GetObjectItemCaseSensitive(o, "user");
	const cJSON *state = cJSON_GetObjectItemCaseSensitive(o, "state");
	const cJSON *error = cJSON_GetObjectItemCaseSensitive(o, "error");
	const cJSON *tiers = cJSON_GetObjectItemCaseSensitive(o, "tiers");
	const cJSON *tb = cJSON_GetObjectItemCaseSensitive(o, "tier_bytes");
	const cJSON *item;
	char perr[CONF_ERR_MAX];
	struct job *job;
	uint64_t id = proto_u64(o, "job");

	if (id == 0 || id > UINT32_MAX || !cJSON_IsString(user) ||
	    strlen(user->valuestring) >= JOBS_USER_MAX ||
	    !cJSON_IsString(state)) {
		snprintf(err, errlen, "missing or bad job/user/state");
		return NULL;
	}
	job = calloc(1, sizeof(*job));
	if (!job) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	job->id = (uint32_t)id;
	job->uid = (uid_t)proto_u64(o, "uid");
	job->gid = (gid_t)proto_u64(o, "gid");
	snprintf(job->user, sizeof(job->user), "%s", user->valuestring);
	job->created = (time_t)proto_u64(o, "created");
	/* A creation past the year 33,000 is damage: unknown (0), and never
	 * scaled to microseconds past int64 below. */
	if (job->created > JOBS_CREATED_MAX)
		job->created = 0;
	/* State written before created_us existed, or inconsistent: the
	 * whole second. */
	job->created_us = (int64_t)proto_u64(o, "created_us");
	if (job->created_us / 1000000 != (int64_t)job->created)
		job->created_us = (int64_t)job->created * 1000000;
	if (state_from_name(state->valuestring, &job->state) < 0) {
		snprintf(err, errlen, "unknown state '%.32s'",
			 state->valuestring);
		free(job);
		return NULL;
	}
	if (cJSON_IsString(error))
		snprintf(job->error, sizeof(job->error), "%s",
			 error->valuestring);
	job->bytes = proto_u64(o, "bytes");
	job->files = proto_u64(o, "files");
	job->total_bytes = proto_u64(o, "total_bytes");
	job->total_files = proto_u64(o, "total_files");
	cJSON_ArrayForEach(item, tiers)
	{
		int t = cJSON_IsString(item) ? tiers_index(item->valuestring)
					     : -1;

		if (t < 0) {
			log_warningx("job %u: tier '%.32s' is no longer "
				     "configured; its files there are not "
				     "managed any more",
				     job->id,
				     cJSON_IsString(item) ? item->valuestring
							  : "?");
			continue;
		}
		job->tiers[t] = true;
		job->tier_bytes[t] = proto_u64(tb, item->valuestring);
	}
	job->prestage = cJSON_IsTrue(
		cJSON_GetObjectItemCaseSensitive(o, "prestage"));
	job->ended = (time_t)proto_u64(o, "ended");
	item = cJSON_GetObjectItemCaseSensitive(o, "staged_s");
	if (cJSON_IsNumber(item) && item->valuedouble >= 0)
		job->staged_s = item->valuedouble;
	clock_gettime(CLOCK_MONOTONIC, &job->t0);
	reload_records(job, cJSON_GetObjectItemCaseSensitive(o, "cache"));
	reload_nodes(job, o);
	job->profile = reload_profile(
		cJSON_GetObjectItemCaseSensitive(o, "profile"), perr,
		sizeof(perr));
	if (job->profile) {
		job->profile_json = profile_to_json(job->profile);
	} else if (job->state != JOB_FAILED) {
		job->state = JOB_FAILED;
		snprintf(job->error, sizeof(job->error),
			 "cannot reload the job's profile after a restart: %.400s",
			 perr);
	}
	return job;
}

static int load_one(const char *name)
{
	char err[CONF_ERR_MAX], *text;
	cJSON *o = NULL;
	struct job *job;
	bool was_staging;
	size_t t;

	text = read_state_file(name);
	if (!text) {
		log_warning("cannot read state file %s", name);
		return -1;
	}
	o = cJSON_Parse(text);
	free(text);
	job = cJSON_IsObject(o) ? job_from_json(o, err, sizeof(err)) : NULL;
	if (!job) {
		log_warningx("state file %s ignored: %s", name,
			     o ? err : "not JSON");
		cJSON_Delete(o);
		return -1;
	}
	cJSON_Delete(o);
	if (find_locked(job->id)) {
		log_warningx("state file %s ignored: job %u loaded twice", name,
			     job->id);
		job_free(job);
		return -1;
	}
	was_staging = job->state == JOB_STAGING;
	if (was_staging) {
		job->state = JOB_FAILED;
		snprintf(job->error, sizeof(job->error),
			 "iostaged restarted during staging");
		job->bytes = 0;
		for (t = 0; t < CONF_MAX_TIERS; t++)
			job->bytes += job->tier_bytes[t];
	}
	job->refs = 1;
	job->next = jobs_head;
	jobs_head = job;
	if (was_staging) {
		jobs_cleanup_failed(job);
		persist(job);
		log_warningx("job %u: was staging when iostaged stopped; now "
			     "failed, partial copies removed",
			     job->id);
	} else {
		log_debug("job %u: reloaded (%s)", job->id,
			  jobs_state_name(job->state));
	}
	/* drain.c: a running job's outputs are watched again. */
	if (job->state == JOB_STAGED && job->profile && !job->prestage &&
	    drain_resume && drain_resume(job, err, sizeof(err)) < 0)
		log_warningx("job %u: outputs drain at finish only: %s",
			     job->id, err);
	return 0;
}

static int load_all(char *err, size_t errlen)
{
	struct dirent *de;
	unsigned loaded = 0;
	DIR *dir;
	int fd;

	fd = fcntl(state_fd, F_DUPFD_CLOEXEC, 0);
	dir = fd >= 0 ? fdopendir(fd) : NULL;
	if (!dir) {
		snprintf(err, errlen, "StateDir: cannot read jobs/: %s",
			 strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	while ((de = readdir(dir))) {
		const char *n = de->d_name;
		size_t len = strlen(n), digits = strspn(n, "0123456789");

		if (n[0] == '.' && len > 4 && !strcmp(n + len - 4, ".tmp")) {
			unlinkat(state_fd, n, 0); /* an interrupted write */
			continue;
		}
		if (digits == 0 || digits > 10 || strcmp(n + digits, ".json"))
			continue;
		if (load_one(n) == 0)
			loaded++;
	}
	closedir(dir);
	if (loaded)
		log_info("reloaded %u job%s from %s/jobs", loaded,
			 loaded == 1 ? "" : "s", jobs_conf->state_dir);
	return 0;
}

void jobs_set_drain_hooks(jobs_drain_status_fn status,
			  jobs_drain_resume_fn resume)
{
	drain_status = status;
	drain_resume = resume;
}

int jobs_init(const struct conf *conf, struct cache *cache, char *err,
	      size_t errlen)
{
	pthread_condattr_t attr;

	jobs_conf = conf;
	jobs_cache = cache;
	pthread_condattr_init(&attr);
	pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
	pthread_cond_init(&jobs_cond, &attr);
	pthread_condattr_destroy(&attr);
	state_fd = state_open(conf->state_dir, err, errlen);
	if (state_fd < 0)
		return -1;
	/* Single-threaded here; the lock keeps the helpers' contracts. */
	if (load_all(err, errlen) < 0) {
		close(state_fd);
		state_fd = -1;
		return -1;
	}
	return 0;
}

void jobs_shutdown(const char *reason, unsigned timeout_s)
{
	struct timespec deadline;
	struct job *job;
	bool busy;

	deadline_in(timeout_s, &deadline);
	pthread_mutex_lock(&jobs_lock);
	jobs_stopping = true;
	for (job = jobs_head; job; job = job->next)
		if (job->running)
			cancel_locked(job, reason);
	pthread_cond_broadcast(&jobs_cond);
	for (;;) {
		busy = false;
		for (job = jobs_head; job; job = job->next)
			busy |= job->running;
		if (!busy)
			break;
		if (pthread_cond_timedwait(&jobs_cond, &jobs_lock, &deadline) ==
		    ETIMEDOUT)
			break;
	}
	pthread_mutex_unlock(&jobs_lock);
	if (busy)
		log_warningx("staging threads still running after %u s; "
			     "exiting anyway",
			     timeout_s);
}

void jobs_fini(void)
{
	struct job *job, *next;

	pthread_mutex_lock(&jobs_lock);
	job = jobs_head;
	jobs_head = NULL;
	pthread_mutex_unlock(&jobs_lock);
	for (; job; job = next) {
		next = job->next;
		if (--job->refs == 0)
			job_free(job);
	}
	if (state_fd >= 0)
		close(state_fd);
	state_fd = -1;
}
