/* telemetry.c - the per-job record: made, followed, sampled, destroyed.
 *
 * Everything telemetry knows lives in struct telemetry (one per agent,
 * telemetry_internal.h): its StateDir/telemetry fd, the live records and
 * the lock that guards them, and the sampler (a ticker, common/base/
 * ticker.h) that takes the lock once per turn for all jobs. Only live
 * (unfinished) records are in memory; finished ones are read back from
 * StateDir/telemetry on request. Lock order: the lock may be taken with
 * nothing else held, and calls into jobs.c (jobs_get/jobs_view, which take
 * the job table's lock) happen with it held; jobs.c never calls us, so
 * there is no cycle.
 *
 * This file: the record's life from the job table, the events (tasks,
 * markers) and the sampler. The rest, one concern per file:
 * telemetry_build.c (the record as RECORDS.md shows it),
 * telemetry_store.c (its file, and the restart), telemetry_shim.c (shim
 * reports), telemetry_finish.c (queries and the Epilog's finish).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/base/jsonset.h"
#include "common/base/log.h"
#include "common/base/ticker.h"
#include "common/net/proto.h"
#include "common/telemetry/outfiles.h"
#include "daemon/agent.h"
#include "daemon/fsutil.h"
#include "daemon/jobs.h"
#include "daemon/telemetry/telemetry_internal.h"

double telemetry_now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

double telemetry_num(const cJSON *o, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);

	return cJSON_IsNumber(v) ? v->valuedouble : 0;
}

const char *telemetry_str(const cJSON *o, const char *key, const char *dflt)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);

	return cJSON_IsString(v) ? v->valuestring : dflt;
}

/* A task's (local) rank from a record or a report, -1 if none: a rank is
 * an int, and a damaged 1e300 would not even convert. */
int64_t telemetry_rank_of(const cJSON *v)
{
	return cJSON_IsNumber(v) && v->valuedouble >= 0 &&
		       v->valuedouble <= INT32_MAX
		   ? (int64_t)v->valuedouble
		   : -1;
}

/* A step id (Slurm's uint32: 4294967291 is the batch step), or -1 when V
 * is absent or not one: an unknown step is left out, never read as 0. */
int64_t telemetry_step_of(const cJSON *v)
{
	return cJSON_IsNumber(v) && v->valuedouble >= 0 &&
		       v->valuedouble <= UINT32_MAX &&
		       v->valuedouble == (double)(int64_t)v->valuedouble
		   ? (int64_t)v->valuedouble
		   : -1;
}

/* --- building
 * ------------------------------------------------------------------- */

struct tjob *telemetry_find_locked(struct telemetry *tel, uint32_t id)
{
	for (struct tjob *t = tel->jobs; t; t = t->next)
		if (t->id == id)
			return t;
	return NULL;
}

void telemetry_tjob_free(struct tjob *t)
{
	if (!t)
		return;
	cJSON_Delete(t->base);
	cJSON_Delete(t->stage_in);
	cJSON_Delete(t->stage_out);
	cJSON_Delete(t->run_counters);
	cJSON_Delete(t->observed);
	outfiles_destroy(t->files);
	for (size_t i = 0; i < t->nmarks; i++)
		cJSON_Delete(t->marks[i].counters);
	sampler_tree_clear(&t->tree);
	free(t->tl);
	free(t->procs);
	free(t);
}

static const char *ds_result_name(enum job_ds_result r, bool fallback)
{
	switch (r) {
	case JOB_DS_HIT:
		return "hit";
	case JOB_DS_BUILT:
		return "built";
	case JOB_DS_FAILED:
		return fallback ? "fallback" : "failed";
	default:
		return "pending";
	}
}

/* The record's state from the job table's. */
static const char *record_state(const struct job *job, const struct job_view *v)
{
	if (v->state != JOB_FAILED)
		return "completed";
	return jobs_policy(job) == STAGE_FAILURE_FALLBACK ? "fallback"
							  : "stage_failed";
}

/* A spread dataset's entry E (docs/RECORDS.md): this node holds a part
 * of it (bytes and files above are the part's); what the view served
 * from other nodes and the PFS is added at finish
 * (telemetry_finish.c). */
static void add_spread(const struct job *job, size_t i, cJSON *e)
{
	const struct job_ds *r = &job->ds[i];
	cJSON *sp = cJSON_AddObjectToObject(e, "spread");

	if (!sp)
		return;
	cJSON_AddNumberToObject(sp, "part_bytes", (double)r->bytes);
	cJSON_AddNumberToObject(sp, "part_files", (double)r->files);
	if (r->spread_dataset_bytes) {
		cJSON_AddNumberToObject(sp, "dataset_bytes",
					(double)r->spread_dataset_bytes);
		/* what of the dataset this node holds */
		cJSON_AddNumberToObject(sp, "held_fraction",
					round((double)r->bytes /
					      (double)r->spread_dataset_bytes *
					      1000) /
					    1000);
	}
	if (r->spread_plan)
		cJSON_AddStringToObject(sp, "plan", r->spread_plan);
}

/* When JOB was created (its Prolog's stage request), in seconds to the
 * microsecond: the record's start and stage_in's. */
static double job_start_s(const struct job *job)
{
	return (double)job->created_us / 1e6;
}

/* Job-level keys and stage_in from the job table. stage_in only once
 * staging is over: the fields it reads are no longer written then (the
 * state change we saw through jobs_view was made under the table lock
 * after them). */
static void refresh_from_job(struct tjob *t, struct job *job)
{
	struct job_view v;
	cJSON *ds, *outs, *ph;
	uint64_t copied = 0;
	double rate;
	bool fallback;

	jobs_view(job, &v);
	json_set(t->base, "state", cJSON_CreateString(record_state(job, &v)));
	if (v.state == JOB_STAGING || t->stage_in)
		return;
	fallback = v.state == JOB_FAILED &&
		   jobs_policy(job) == STAGE_FAILURE_FALLBACK;
	ds = cJSON_CreateArray();
	for (size_t i = 0; ds && job->profile && i < job->profile->ndatasets;
	     i++) {
		const struct profile_dataset *d = &job->profile->datasets[i];
		const struct job_ds *r = &job->ds[i];
		cJSON *e = cJSON_CreateObject();

		if (!e)
			break;
		cJSON_AddStringToObject(e, "name", d->name);
		cJSON_AddStringToObject(e, "source", d->path);
		cJSON_AddStringToObject(e, "tier", d->tier ? d->tier : "");
		/* The dataset's size, once it was hit or built (staging
		 * of a failed job may have served some datasets). */
		if ((r->result == JOB_DS_HIT || r->result == JOB_DS_BUILT) &&
		    (r->bytes || r->files || job->profile->ndatasets > 1)) {
			cJSON_AddNumberToObject(e, "bytes", (double)r->bytes);
			cJSON_AddNumberToObject(e, "files", (double)r->files);
		} else if (job->profile->ndatasets == 1 &&
			   v.state == JOB_STAGED) {
			/* A job staged by an older daemon: its totals. */
			cJSON_AddNumberToObject(e, "bytes", (double)v.bytes);
			cJSON_AddNumberToObject(e, "files", (double)v.files);
		}
		cJSON_AddStringToObject(e, "result",
					ds_result_name(r->result, fallback));
		cJSON_AddNumberToObject(e, "copied_bytes",
					(double)r->copied_bytes);
		cJSON_AddNumberToObject(e, "copied_files",
					(double)r->copied_files);
		cJSON_AddNumberToObject(e, "linked_files",
					(double)r->linked_files);
		if (r->result == JOB_DS_HIT)
			cJSON_AddNumberToObject(
			    e, "cached_bytes",
			    (double)(r->bytes || job->profile->ndatasets > 1
					 ? r->bytes
					 : v.bytes));
		if (d->spread == PROFILE_SPREAD_YES)
			add_spread(job, i, e);
		copied += r->copied_bytes;
		cJSON_AddItemToArray(ds, e);
	}
	json_set(t->base, "datasets", ds);
	outs = cJSON_CreateArray();
	for (size_t i = 0; outs && job->profile && i < job->profile->noutputs;
	     i++) {
		const struct profile_output *o = &job->profile->outputs[i];
		cJSON *e = cJSON_CreateObject();

		if (!e)
			break;
		cJSON_AddStringToObject(e, "name", o->name);
		cJSON_AddStringToObject(e, "dest", o->path);
		cJSON_AddStringToObject(e, "tier", o->tier ? o->tier : "");
		cJSON_AddItemToArray(outs, e);
	}
	json_set(t->base, "outputs", outs);

	ph = cJSON_CreateObject();
	if (!ph)
		return;
	cJSON_AddStringToObject(ph, "name", "stage_in");
	cJSON_AddNumberToObject(ph, "start", job_start_s(job));
	cJSON_AddNumberToObject(ph, "end", job_start_s(job) + job->staged_s);
	cJSON_AddNumberToObject(ph, "seconds", job->staged_s);
	cJSON_AddNumberToObject(ph, "bytes", (double)v.bytes);
	cJSON_AddNumberToObject(ph, "files", (double)v.files);
	cJSON_AddNumberToObject(ph, "copied_bytes", (double)copied);
	cJSON_AddNumberToObject(ph, "cached_bytes",
				(double)(v.bytes > copied ? v.bytes - copied
							  : 0));
	rate = job->staged_s > 0 ? (double)v.bytes / job->staged_s : 0;
	/* whole bytes per second; out of range (a duration of nearly 0)
	 * is none */
	cJSON_AddNumberToObject(ph, "rate_bps", (double)proto_u64_of(rate));
	if (v.state == JOB_FAILED)
		cJSON_AddStringToObject(ph, "error", v.error);
	t->stage_in = ph;
	t->dirty = true;
}

/* A new live record for JOB (a reference the caller holds). */
static struct tjob *tjob_create(struct telemetry *tel, struct job *job)
{
	struct tjob *t = calloc(1, sizeof(*t));
	cJSON *b;

	if (!t || !(t->tl = malloc(sizeof(*t->tl))) ||
	    !(t->base = cJSON_CreateObject())) {
		telemetry_tjob_free(t);
		return NULL;
	}
	telrec_timeline_init(t->tl, tel->conf->telemetry_interval_ms / 1000.0);
	t->id = job->id;
	t->uid = job->uid;
	b = t->base;
	cJSON_AddNumberToObject(b, "schema", 1);
	cJSON_AddNumberToObject(b, "job", job->id);
	cJSON_AddStringToObject(b, "user", job->user);
	cJSON_AddNumberToObject(b, "uid", job->uid);
	cJSON_AddStringToObject(b, "job_name", "");
	cJSON_AddStringToObject(b, "node", tel->conf->node_name);
	cJSON_AddStringToObject(b, "profile_origin",
				job->profile && job->profile->origin
				    ? job->profile->origin
				    : "");
	cJSON_AddItemToObject(b, "profile",
			      job->profile_json ? cJSON_Parse(job->profile_json)
						: cJSON_CreateObject());
	cJSON_AddStringToObject(b, "state", "completed");
	cJSON_AddNumberToObject(b, "start", job_start_s(job));
	cJSON_AddItemToObject(b, "datasets", cJSON_CreateArray());
	cJSON_AddItemToObject(b, "outputs", cJSON_CreateArray());
	if (jobs_multi_node(job)) {
		/* This record is one part of the job's
		 * (daemon/cluster/parts.c). */
		cJSON *nodes = cJSON_AddArrayToObject(b, "nodes");

		for (size_t i = 0; nodes && i < job->nnodes; i++)
			cJSON_AddItemToArray(nodes,
					     cJSON_CreateString(job->nodes[i]));
	}
	refresh_from_job(t, job);
	t->dirty = true;
	t->tel = tel;
	t->next = tel->jobs;
	tel->jobs = t;
	return t;
}

/* Was JOB's record finished already? Between telemetry_finish_job and
 * jobs_finish the job is still in the table: a request then (a /metrics
 * scrape, a query, a late shim report) must not start a new, empty live
 * record that nothing would ever finish. The same start tells this job
 * from an earlier one that had its id. */
static bool finished_on_disk(struct telemetry *tel, const struct job *job)
{
	cJSON *rec = telemetry_read_record(tel, job->id);
	bool done = rec && cJSON_GetObjectItemCaseSensitive(rec, "end") &&
		    telemetry_num(rec, "start") == job_start_s(job);

	cJSON_Delete(rec);
	return done;
}

/* The live record of job ID, created from the job table if needed; NULL
 * with err when the job is unknown or not PEER_UID's (root: 0), or with
 * errno EALREADY when its record is finished (read it from disk). */
struct tjob *telemetry_get_locked(struct telemetry *tel, uint32_t id,
				  uid_t peer_uid, char *err, size_t errlen)
{
	struct tjob *t = telemetry_find_locked(tel, id);
	/* an agent without a job table (a test's) knows no job */
	struct job *job = tel->agent && tel->agent->jobs
			      ? jobs_get(tel->agent->jobs, id)
			      : NULL;

	if (job && job->prestage) {
		jobs_put(job);
		job = NULL;
	}
	if (!t && job && finished_on_disk(tel, job)) {
		jobs_put(job);
		snprintf(err, errlen, "job %u: already finished", id);
		errno = EALREADY;
		return NULL;
	}
	errno = 0;
	if (!t && job)
		t = tjob_create(tel, job);
	else if (t && job)
		refresh_from_job(t, job);
	jobs_put(job);
	if (!t) {
		snprintf(err, errlen, "unknown job %u", id);
		return NULL;
	}
	if (peer_uid != 0 && peer_uid != t->uid) {
		snprintf(err, errlen,
			 "permission denied: job %u belongs to another user "
			 "(peer uid %u)",
			 id, (unsigned)peer_uid);
		return NULL;
	}
	return t;
}

/* get_locked, for what only a running job takes (tasks, markers, shim
 * reports): NULL with err once its run has ended. */
struct tjob *telemetry_running_locked(struct telemetry *tel, uint32_t id,
				      uid_t peer_uid, char *err, size_t errlen)
{
	struct tjob *t = telemetry_get_locked(tel, id, peer_uid, err, errlen);

	if (t && t->run_end > 0) {
		snprintf(err, errlen, "job %u: already finished", id);
		return NULL;
	}
	return t;
}

struct tproc *telemetry_find_proc(struct tjob *t, pid_t pid)
{
	for (size_t i = 0; i < t->nprocs; i++)
		if (t->procs[i].id.pid == pid)
			return &t->procs[i];
	return NULL;
}

struct tproc *telemetry_add_proc(struct tjob *t,
				 const struct telemetry_task *id)
{
	struct tproc *p;

	if (t->nprocs >= TELEMETRY_PROCS_MAX)
		return NULL;
	p = realloc(t->procs, (t->nprocs + 1) * sizeof(*p));
	if (!p)
		return NULL;
	t->procs = p;
	p = &t->procs[t->nprocs++];
	memset(p, 0, sizeof(*p));
	p->id = *id;
	p->start = telemetry_now_s();
	return p;
}

/* Sampler callback: growth D of task PID. */
static void on_task_io(void *arg, pid_t pid, bool exited,
		       const struct telrec_io *d)
{
	struct tjob *t = arg;
	struct tproc *p = telemetry_find_proc(t, pid);

	if (!p)
		return;
	telrec_io_add(&p->io, d);
	if (exited && !p->end)
		p->end = telemetry_now_s();
}

void telemetry_sample_locked(struct tjob *t)
{
	struct telrec_io d = { 0 };
	double now;

	if (!t->tree.nprocs && !t->tree.ncarriers)
		return;
	sampler_tree_sample(&t->tree, on_task_io, t, &d);
	now = telemetry_now_s();
	telrec_io_add(&t->run_io, &d);
	telrec_timeline_add(t->tl, now, &d);
	if (d.rchar || d.wchar || d.syscr || d.syscw)
		t->dirty = true;
}

/* *ACC += NOW - THEN, for the /proc counters (each only grows). */
void telemetry_io_add_since(struct telrec_io *acc, const struct telrec_io *now,
			    const struct telrec_io *then)
{
	acc->rchar += now->rchar - then->rchar;
	acc->wchar += now->wchar - then->wchar;
	acc->syscr += now->syscr - then->syscr;
	acc->syscw += now->syscw - then->syscw;
}

/* --- life and the sampler
 * ------------------------------------------------------- */

/* The sampler's turn: every live record sampled, and written when it
 * changed and was not for TEL_PERSIST_EVERY_S. */
static void tick(void *arg, bool poked)
{
	struct telemetry *tel = arg;
	time_t now = time(NULL);

	(void)poked;
	pthread_mutex_lock(&tel->lock);
	for (struct tjob *t = tel->jobs; t; t = t->next) {
		telemetry_sample_locked(t);
		if (t->dirty && now - t->persisted >= TEL_PERSIST_EVERY_S)
			telemetry_persist_locked(t);
	}
	pthread_mutex_unlock(&tel->lock);
}

struct telemetry *telemetry_create(struct agent *a, const struct conf *conf,
				   char *err, size_t errlen)
{
	char path[CONF_PATH_MAX + 16];
	struct telemetry *tel = calloc(1, sizeof(*tel));

	if (!tel) {
		snprintf(err, errlen, "telemetry: out of memory");
		return NULL;
	}
	tel->agent = a;
	tel->conf = conf;
	pthread_mutex_init(&tel->lock, NULL);
	snprintf(path, sizeof(path), "%s/telemetry", conf->state_dir);
	if (fsutil_mkdir_p(path, 0700) < 0 ||
	    (tel->dir_fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
					  O_CLOEXEC)) < 0) {
		snprintf(err, errlen, "telemetry: %s: %s", path,
			 strerror(errno));
		pthread_mutex_destroy(&tel->lock);
		free(tel);
		return NULL;
	}
	pthread_mutex_lock(&tel->lock);
	telemetry_load_records(tel);
	pthread_mutex_unlock(&tel->lock);
	tel->sampler = ticker_start(conf->telemetry_interval_ms, false, tick,
				    tel);
	if (!tel->sampler) {
		snprintf(err, errlen, "telemetry: cannot start the sampler: %s",
			 strerror(errno));
		telemetry_destroy(tel);
		return NULL;
	}
	return tel;
}

void telemetry_destroy(struct telemetry *tel)
{
	struct tjob *t, *next;

	if (!tel)
		return;
	ticker_stop(tel->sampler);
	pthread_mutex_lock(&tel->lock);
	for (t = tel->jobs; t; t = next) {
		next = t->next;
		telemetry_persist_locked(t);
		telemetry_tjob_free(t);
	}
	tel->jobs = NULL;
	pthread_mutex_unlock(&tel->lock);
	close(tel->dir_fd);
	pthread_mutex_destroy(&tel->lock);
	free(tel);
}

/* --- events
 * ------------------------------------------------------------------------ */

int telemetry_task_register(struct telemetry *tel, uint32_t id,
			    const struct telemetry_task *task, char *err,
			    size_t errlen)
{
	struct tjob *t;
	struct tproc *p;
	int rc = -1;

	if (!tel) {
		snprintf(err, errlen, "telemetry is not running");
		return -1;
	}
	pthread_mutex_lock(&tel->lock);
	t = telemetry_running_locked(tel, id, 0, err, errlen);
	if (!t)
		goto out;
	if (!t->run_start)
		t->run_start = telemetry_now_s();
	if (task->job_name[0])
		json_set(t->base, "job_name",
			 cJSON_CreateString(task->job_name));
	p = telemetry_find_proc(t, task->pid);
	if (!p && !(p = telemetry_add_proc(t, task))) {
		snprintf(err, errlen, "job %u: too many processes (max %d)", id,
			 TELEMETRY_PROCS_MAX);
		goto out;
	}
	/* slurmstepd's S_JOB_STEPID is exact, whoever named the pid first. */
	if (task->step >= 0)
		p->id.step = task->step;
	if (sampler_tree_add_task(&t->tree, task->pid, task->parent) < 0) {
		snprintf(err, errlen, "job %u: cannot follow pid %d: %s", id,
			 (int)task->pid,
			 errno == ESRCH ? "no such process" : strerror(errno));
		goto out;
	}
	p->sampled = true;
	t->dirty = true;
	rc = 0;
out:
	pthread_mutex_unlock(&tel->lock);
	return rc;
}

int telemetry_task_exit(struct telemetry *tel, uint32_t id, pid_t pid,
			char *err, size_t errlen)
{
	struct tjob *t;
	struct tproc *p;

	if (!tel) {
		snprintf(err, errlen, "telemetry is not running");
		return -1;
	}
	pthread_mutex_lock(&tel->lock);
	t = telemetry_find_locked(tel, id);
	if (!t) {
		pthread_mutex_unlock(&tel->lock);
		snprintf(err, errlen, "unknown job %u", id);
		return -1;
	}
	telemetry_sample_locked(t);
	p = telemetry_find_proc(t, pid);
	if (p && !p->end && !sampler_tree_has(&t->tree, pid))
		p->end = telemetry_now_s();
	t->dirty = true;
	pthread_mutex_unlock(&tel->lock);
	return 0;
}

/* The registered task PID descends from (walking /proc up a few levels),
 * or NULL. */
static struct tproc *ancestor_task(struct tjob *t, pid_t pid)
{
	for (int depth = 0; pid > 1 && depth < 32; depth++) {
		unsigned long long start;
		struct tproc *p = telemetry_find_proc(t, pid);

		if (p)
			return p;
		if (sampler_read_stat(pid, &start, &pid) < 0)
			return NULL;
	}
	return NULL;
}

struct tmark *telemetry_mark_get(struct tjob *t, const char *name,
				 const char *source)
{
	struct tmark *m;

	for (size_t i = 0; i < t->nmarks; i++)
		if (!strcmp(t->marks[i].name, name))
			return &t->marks[i];
	if (t->nmarks == TELEMETRY_MARKS_MAX)
		return NULL;
	m = &t->marks[t->nmarks++];
	memset(m, 0, sizeof(*m));
	snprintf(m->name, sizeof(m->name), "%s", name);
	m->source = source;
	return m;
}

int telemetry_phase(struct telemetry *tel, uint32_t id, uid_t peer_uid,
		    pid_t peer_pid, const char *name, bool begin, double ts,
		    const struct telemetry_task *task, char *err, size_t errlen)
{
	struct tproc *p;
	struct tmark *m;
	struct tjob *t;
	int rc = -1;

	if (!tel) {
		snprintf(err, errlen, "telemetry is not running");
		return -1;
	}
	pthread_mutex_lock(&tel->lock);
	t = telemetry_running_locked(tel, id, peer_uid, err, errlen);
	if (!t)
		goto out;
	m = telemetry_mark_get(t, name, "marker");
	if (!m) {
		snprintf(err, errlen, "job %u: too many phase names (max %d)",
			 id, TELEMETRY_MARKS_MAX);
		goto out;
	}
	if (!t->run_start)
		t->run_start = ts;
	/* Sample now, so the marker's I/O starts and stops here. */
	telemetry_sample_locked(t);
	if (!m->start)
		m->exact = true; /* from its first event on */
	if (begin) {
		if (!m->start || ts < m->start)
			m->start = ts;
		if (m->open++ == 0)
			m->at_open = t->run_io;
	} else {
		if (!m->start)
			m->start = ts; /* an end without a begin: empty */
		if (ts > m->end)
			m->end = ts;
		if (m->open > 0 && --m->open == 0 && m->exact)
			telemetry_io_add_since(&m->io, &t->run_io, &m->at_open);
	}
	if (task->rank >= 0) {
		size_t i;

		for (i = 0; i < m->nranks; i++)
			if (m->ranks[i] == task->rank)
				break;
		if (i == m->nranks && m->nranks < TEL_RANKS_MAX)
			m->ranks[m->nranks++] = task->rank;
	}
	/* The identity the process found (PMIx) is better than the one the
	 * plugin registered (Slurm's environment): keep it on the task. */
	p = ancestor_task(t, peer_pid);
	if (!p) {
		struct telemetry_task id2 = *task;

		id2.pid = peer_pid;
		p = telemetry_add_proc(t, &id2);
	} else if (!strcmp(task->identity, "pmix") ||
		   strcmp(p->id.identity, "pmix")) {
		if (p->id.step < 0)
			p->id.step = task->step;
		p->id.rank = task->rank >= 0 ? task->rank : p->id.rank;
		p->id.local_rank = task->local_rank >= 0 ? task->local_rank
							 : p->id.local_rank;
		if (task->node[0])
			snprintf(p->id.node, sizeof(p->id.node), "%s",
				 task->node);
		snprintf(p->id.identity, sizeof(p->id.identity), "%s",
			 task->identity);
	}
	t->dirty = true;
	rc = 0;
out:
	pthread_mutex_unlock(&tel->lock);
	return rc;
}
