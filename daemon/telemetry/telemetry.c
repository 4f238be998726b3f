/* telemetry.c - the per-job record: built live, persisted, finished.
 *
 * One lock (tel_lock) guards the list of live records; the sampler thread
 * takes it once per tick for all jobs. Only live (unfinished) records are in
 * memory; finished ones are read back from StateDir/telemetry on request.
 * Lock order: tel_lock may be taken with nothing else held, and calls into
 * jobs.c (jobs_get/jobs_view, which take the job table's lock) happen with
 * tel_lock held; jobs.c never calls us, so there is no cycle.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/config/joblayout.h"
#include "common/base/jsonbuf.h"
#include "common/base/jsonset.h"
#include "common/base/log.h"
#include "common/telemetry/outfiles.h"
#include "common/net/proto.h"
#include "common/base/smallfile.h"
#include "daemon/agent_bridge.h"
#include "daemon/fsutil.h"
#include "daemon/jobs.h"
#include "daemon/telemetry/sampler.h"
#include "daemon/telemetry/telemetry.h"

#define TEL_RECORD_MAX (8 * 1024 * 1024) /* a record file we read back */
#define TEL_PERSIST_EVERY_S 5
#define TEL_RANKS_MAX 64                 /* ranks listed per sub-phase */

struct tproc {
	struct telemetry_task id;
	double start, end;       /* end 0: running */
	struct telrec_io io;
	bool traced;
	bool shim_disabled;      /* its shim gave up (report says why) */
	bool sampled;            /* a registered task: io is /proc's */
	bool has_file_bytes;     /* it sent shim counters: */
	uint64_t file_rb, file_wb; /* their file I/O */
};

struct tmark {
	char name[TELREC_PHASE_NAME_MAX];
	const char *source;      /* "marker" | "auto" */
	double start, end;
	int open;                /* begins not yet ended */
	/* A marker's I/O, exact: the job is sampled at every begin and end,
	 * so the phase gets what the job did between its first open begin
	 * and its last end, not whole sampling intervals. */
	bool exact;
	struct telrec_io io;     /* closed stretches so far */
	struct telrec_io at_open; /* run_io when it last opened */
	int64_t ranks[TEL_RANKS_MAX];
	size_t nranks;
	cJSON *counters;         /* {class:{...}} from the shim, or NULL */
	double io_s, unov_s;
	bool has_io_s;
};

struct tjob {
	uint32_t id;
	uid_t uid;
	cJSON *base;             /* the record's job-level keys */
	cJSON *stage_in, *stage_out;
	double run_start, run_end;
	struct telrec_io run_io;
	struct telrec_timeline *tl;
	cJSON *run_counters;     /* shim totals of phase "run" */
	double run_io_s, run_unov_s;
	bool has_run_io_s;
	struct tproc *procs;
	size_t nprocs;
	struct tmark marks[TELEMETRY_MARKS_MAX];
	size_t nmarks;
	struct outfiles *files;  /* output files and their writers */
	bool has_files;
	cJSON *observed;         /* an observed job's tree (telrec), or NULL */
	/* Counts a restarted daemon found in the record: its file table
	 * is gone, later reports add to these. [PROFILE_MAX_OUTPUTS]:
	 * the job's. */
	uint64_t base_shared[PROFILE_MAX_OUTPUTS + 1];
	uint64_t base_fpp[PROFILE_MAX_OUTPUTS + 1];
	struct sampler_tree tree;
	bool dirty;
	time_t persisted;
	struct tjob *next;
};

static const struct conf *tel_conf;
static pthread_mutex_t tel_lock = PTHREAD_MUTEX_INITIALIZER;
static struct tjob *tjobs;

static int dir_fd = -1;

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static double num(const cJSON *o, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);

	return cJSON_IsNumber(v) ? v->valuedouble : 0;
}

static const char *str(const cJSON *o, const char *key, const char *dflt)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);

	return cJSON_IsString(v) ? v->valuestring : dflt;
}

/* A task's (local) rank from a record or a report, -1 if none: a rank is
 * an int, and a damaged 1e300 would not even convert. */
static int64_t rank_of(const cJSON *v)
{
	return cJSON_IsNumber(v) && v->valuedouble >= 0 &&
			       v->valuedouble <= INT32_MAX
		       ? (int64_t)v->valuedouble
		       : -1;
}

/* A step id (Slurm's uint32: 4294967291 is the batch step), or -1 when V
 * is absent or not one: an unknown step is left out, never read as 0. */
static int64_t step_of(const cJSON *v)
{
	return cJSON_IsNumber(v) && v->valuedouble >= 0 &&
			       v->valuedouble <= UINT32_MAX &&
			       v->valuedouble == (double)(int64_t)v->valuedouble
		       ? (int64_t)v->valuedouble
		       : -1;
}

/* --- building ------------------------------------------------------------------- */

static struct tjob *find_locked(uint32_t id)
{
	for (struct tjob *t = tjobs; t; t = t->next)
		if (t->id == id)
			return t;
	return NULL;
}

static void tjob_free(struct tjob *t)
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
static const char *record_state(const struct job *job,
				const struct job_view *v)
{
	if (v->state != JOB_FAILED)
		return "completed";
	return jobs_policy(job) == STAGE_FAILURE_FALLBACK ? "fallback"
							  : "stage_failed";
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
static struct tjob *tjob_create(struct job *job)
{
	struct tjob *t = calloc(1, sizeof(*t));
	cJSON *b;

	if (!t || !(t->tl = malloc(sizeof(*t->tl))) ||
	    !(t->base = cJSON_CreateObject())) {
		tjob_free(t);
		return NULL;
	}
	telrec_timeline_init(t->tl, tel_conf->telemetry_interval_ms / 1000.0);
	t->id = job->id;
	t->uid = job->uid;
	b = t->base;
	cJSON_AddNumberToObject(b, "schema", 1);
	cJSON_AddNumberToObject(b, "job", job->id);
	cJSON_AddStringToObject(b, "user", job->user);
	cJSON_AddNumberToObject(b, "uid", job->uid);
	cJSON_AddStringToObject(b, "job_name", "");
	cJSON_AddStringToObject(b, "node", tel_conf->node_name);
	cJSON_AddStringToObject(b, "profile_origin",
				job->profile && job->profile->origin
					? job->profile->origin
					: "");
	cJSON_AddItemToObject(b, "profile",
			      job->profile_json
				      ? cJSON_Parse(job->profile_json)
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
	t->next = tjobs;
	tjobs = t;
	return t;
}

static cJSON *read_record(uint32_t id);

/* Was JOB's record finished already? Between telemetry_finish_job and
 * jobs_finish the job is still in the table: a request then (a /metrics
 * scrape, a query, a late shim report) must not start a new, empty live
 * record that nothing would ever finish. The same start tells this job
 * from an earlier one that had its id. */
static bool finished_on_disk(const struct job *job)
{
	cJSON *rec = read_record(job->id);
	bool done = rec && cJSON_GetObjectItemCaseSensitive(rec, "end") &&
		    num(rec, "start") == job_start_s(job);

	cJSON_Delete(rec);
	return done;
}

/* The live record of job ID, created from the job table if needed; NULL
 * with err when the job is unknown or not PEER_UID's (root: 0), or with
 * errno EALREADY when its record is finished (read it from disk). */
static struct tjob *get_locked(uint32_t id, uid_t peer_uid, char *err,
			       size_t errlen)
{
	struct tjob *t = find_locked(id);
	struct job *job = jobs_get(agent_bridge->jobs, id);

	if (job && job->prestage) {
		jobs_put(job);
		job = NULL;
	}
	if (!t && job && finished_on_disk(job)) {
		jobs_put(job);
		snprintf(err, errlen, "job %u: already finished", id);
		errno = EALREADY;
		return NULL;
	}
	errno = 0;
	if (!t && job)
		t = tjob_create(job);
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
static struct tjob *running_locked(uint32_t id, uid_t peer_uid, char *err,
				   size_t errlen)
{
	struct tjob *t = get_locked(id, peer_uid, err, errlen);

	if (t && t->run_end > 0) {
		snprintf(err, errlen, "job %u: already finished", id);
		return NULL;
	}
	return t;
}

static struct tproc *find_proc(struct tjob *t, pid_t pid)
{
	for (size_t i = 0; i < t->nprocs; i++)
		if (t->procs[i].id.pid == pid)
			return &t->procs[i];
	return NULL;
}

static struct tproc *add_proc(struct tjob *t, const struct telemetry_task *id)
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
	p->start = now_s();
	return p;
}

/* Sampler callback: growth D of task PID. */
static void on_task_io(void *arg, pid_t pid, bool exited,
		       const struct telrec_io *d)
{
	struct tjob *t = arg;
	struct tproc *p = find_proc(t, pid);

	if (!p)
		return;
	telrec_io_add(&p->io, d);
	if (exited && !p->end)
		p->end = now_s();
}

static void sample_locked(struct tjob *t)
{
	struct telrec_io d = {0};
	double now;

	if (!t->tree.nprocs && !t->tree.ncarriers)
		return;
	sampler_tree_sample(&t->tree, on_task_io, t, &d);
	now = now_s();
	telrec_io_add(&t->run_io, &d);
	telrec_timeline_add(t->tl, now, &d);
	if (d.rchar || d.wchar || d.syscr || d.syscw)
		t->dirty = true;
}

/* *ACC += NOW - THEN, for the /proc counters (each only grows). */
static void io_add_since(struct telrec_io *acc, const struct telrec_io *now,
			 const struct telrec_io *then)
{
	acc->rchar += now->rchar - then->rchar;
	acc->wchar += now->wchar - then->wchar;
	acc->syscr += now->syscr - then->syscr;
	acc->syscw += now->syscw - then->syscw;
}

static cJSON *ranks_json(const struct tmark *m)
{
	cJSON *a = cJSON_CreateArray();

	for (size_t i = 0; a && i < m->nranks; i++)
		cJSON_AddItemToArray(a, cJSON_CreateNumber((double)m->ranks[i]));
	return a;
}

/* A phase's bytes (RECORDS.md "bytes_source"): a phase with shim
 * COUNTERS has the shim's file I/O as read_bytes/write_bytes; one without
 * (an untraced job; a marker the shim did not see, as `iostage phase`
 * from another process) has /proc's rchar/wchar, which count every
 * read(2) and write(2), pipes, sockets and devices included. Either way
 * the /proc figures stay under their own names. */
static void add_io_fields(cJSON *ph, const struct tjob *t,
			  const struct telrec_io *io, const cJSON *counters)
{
	if (telrec_phase_bytes(ph, io, counters) < 0)
		log_warning("job %u: out of memory building its record",
			    t->id);
}

/* shared_files/fpp_files per output of record R (a file belongs to the
 * output whose node-local directory TIER/jobs/J/out/NAME or PFS
 * destination holds it), and the job's totals (files under no output
 * included) on the run phase RUN. */
static void add_file_counts(const struct tjob *t, cJSON *r, cJSON *run)
{
	struct outfiles_count c[PROFILE_MAX_OUTPUTS + 1];
	const char *pfx[2 * PROFILE_MAX_OUTPUTS];
	cJSON *outs = cJSON_GetObjectItemCaseSensitive(r, "outputs"), *o;
	char (*local)[CONF_PATH_MAX + 64];
	uint64_t shared = 0, fpp = 0;
	size_t n = 0, i;

	if (!t->has_files)
		return;
	local = malloc(PROFILE_MAX_OUTPUTS * sizeof(*local));
	if (!local)
		return;
	cJSON_ArrayForEach(o, outs)
	{
		struct profile_output po = { 0 };

		if (n == PROFILE_MAX_OUTPUTS)
			break;
		po.name = (char *)str(o, "name", "");
		po.tier = (char *)str(o, "tier", "");
		if (joblayout_output_path(tel_conf, &po, t->id, local[n],
					  sizeof(local[n])) < 0)
			local[n][0] = '\0';
		pfx[2 * n] = local[n];
		pfx[2 * n + 1] = str(o, "dest", "");
		n++;
	}
	outfiles_count(t->files, pfx, n, c);
	i = 0;
	cJSON_ArrayForEach(o, outs)
	{
		if (i == n)
			break;
		json_set_number(o, "shared_files",
				(double)(c[i].shared + t->base_shared[i]));
		json_set_number(o, "fpp_files",
				(double)(c[i].fpp + t->base_fpp[i]));
		i++;
	}
	for (i = 0; i <= n; i++) {
		shared += c[i].shared;
		fpp += c[i].fpp;
	}
	cJSON_AddNumberToObject(
		run, "shared_files",
		(double)(shared + t->base_shared[PROFILE_MAX_OUTPUTS]));
	cJSON_AddNumberToObject(
		run, "fpp_files",
		(double)(fpp + t->base_fpp[PROFILE_MAX_OUTPUTS]));
	if (outfiles_dropped(t->files))
		cJSON_AddNumberToObject(run, "untracked_file_reports",
					(double)outfiles_dropped(t->files));
	free(local);
}

/* The whole record as RECORDS.md describes it. NULL on ENOMEM. */
static cJSON *build_locked(struct tjob *t, bool finished, double end)
{
	cJSON *r = cJSON_Duplicate(t->base, true), *phases, *procs, *ph;
	double now = now_s(), run_end;

	if (!r)
		return NULL;
	if (finished)
		cJSON_AddNumberToObject(r, "end", end);
	phases = cJSON_AddArrayToObject(r, "phases");
	if (t->stage_in)
		cJSON_AddItemToArray(phases, cJSON_Duplicate(t->stage_in, true));
	if (t->run_start > 0) {
		run_end = t->run_end > 0 ? t->run_end : now;
		ph = cJSON_CreateObject();
		cJSON_AddStringToObject(ph, "name", "run");
		cJSON_AddNumberToObject(ph, "start", t->run_start);
		cJSON_AddNumberToObject(ph, "end", run_end);
		cJSON_AddNumberToObject(ph, "seconds", run_end - t->run_start);
		add_io_fields(ph, t, &t->run_io, t->run_counters);
		cJSON_AddNumberToObject(ph, "storage_read_bytes",
					(double)t->run_io.read_bytes);
		cJSON_AddNumberToObject(ph, "storage_write_bytes",
					(double)t->run_io.write_bytes);
		cJSON_AddNumberToObject(ph, "interval_s", t->tl->interval);
		cJSON_AddItemToObject(ph, "timeline",
				      telrec_timeline_to_json(t->tl));
		if (t->run_counters)
			cJSON_AddItemToObject(
				ph, "counters",
				cJSON_Duplicate(t->run_counters, true));
		if (t->has_run_io_s) {
			cJSON_AddNumberToObject(ph, "io_seconds", t->run_io_s);
			cJSON_AddNumberToObject(ph, "unoverlapped_io_seconds",
						t->run_unov_s);
		}
		add_file_counts(t, r, ph);
		if (!t->run_end)
			cJSON_AddBoolToObject(ph, "live", true);
		cJSON_AddItemToArray(phases, ph);
		for (size_t i = 0; i < t->nmarks; i++) {
			const struct tmark *m = &t->marks[i];
			double mend = m->end > m->start ? m->end : run_end;
			struct telrec_io io;

			if (m->open && !t->run_end)
				mend = now;
			ph = cJSON_CreateObject();
			cJSON_AddStringToObject(ph, "name", m->name);
			cJSON_AddStringToObject(ph, "parent", "run");
			cJSON_AddStringToObject(ph, "source", m->source);
			cJSON_AddNumberToObject(ph, "start", m->start);
			cJSON_AddNumberToObject(ph, "end", mend);
			cJSON_AddNumberToObject(ph, "seconds", mend - m->start);
			if (m->exact) {
				io = m->io;
				if (m->open && !t->run_end)
					io_add_since(&io, &t->run_io,
						     &m->at_open);
			} else {
				telrec_timeline_sum(t->tl, m->start, mend,
						    &io);
			}
			add_io_fields(ph, t, &io, m->counters);
			cJSON_AddItemToObject(ph, "ranks", ranks_json(m));
			if (m->counters)
				cJSON_AddItemToObject(
					ph, "counters",
					cJSON_Duplicate(m->counters, true));
			if (m->has_io_s) {
				cJSON_AddNumberToObject(ph, "io_seconds",
							m->io_s);
				cJSON_AddNumberToObject(
					ph, "unoverlapped_io_seconds",
					m->unov_s);
			}
			cJSON_AddItemToArray(phases, ph);
		}
	}
	if (t->stage_out)
		cJSON_AddItemToArray(phases, cJSON_Duplicate(t->stage_out, true));
	if (t->observed && cJSON_GetObjectItemCaseSensitive(t->observed, "source"))
		cJSON_AddItemToObject(r, "observed",
				      cJSON_Duplicate(t->observed, true));
	procs = cJSON_AddArrayToObject(r, "processes");
	for (size_t i = 0; procs && i < t->nprocs; i++) {
		const struct tproc *p = &t->procs[i];
		cJSON *o = cJSON_CreateObject();

		if (!o)
			break;
		cJSON_AddNumberToObject(o, "pid", p->id.pid);
		if (p->id.step >= 0)
			cJSON_AddNumberToObject(o, "step", (double)p->id.step);
		if (p->id.rank >= 0)
			cJSON_AddNumberToObject(o, "rank", (double)p->id.rank);
		if (p->id.local_rank >= 0)
			cJSON_AddNumberToObject(o, "local_rank",
						(double)p->id.local_rank);
		cJSON_AddStringToObject(o, "node", p->id.node);
		cJSON_AddStringToObject(o, "identity", p->id.identity);
		cJSON_AddNumberToObject(o, "start", p->start);
		if (p->end > 0)
			cJSON_AddNumberToObject(o, "end", p->end);
		/* File I/O only from the process's own shim counters. */
		if (p->has_file_bytes) {
			cJSON_AddNumberToObject(o, "read_bytes",
						(double)p->file_rb);
			cJSON_AddNumberToObject(o, "write_bytes",
						(double)p->file_wb);
		}
		/* /proc's, for the tasks sampled (with their descendants);
		 * a process known only from its shim summary has none. */
		if (p->sampled) {
			cJSON_AddNumberToObject(o, "rchar", (double)p->io.rchar);
			cJSON_AddNumberToObject(o, "wchar", (double)p->io.wchar);
		}
		cJSON_AddBoolToObject(o, "traced", p->traced);
		if (p->shim_disabled)
			cJSON_AddBoolToObject(o, "shim_disabled", true);
		cJSON_AddItemToArray(procs, o);
	}
	return r;
}

/* --- persistence ------------------------------------------------------------------ */

static int write_record(uint32_t id, const cJSON *rec)
{
	char name[32], *text;
	int r;

	if (dir_fd < 0)
		return -1;
	text = jsonbuf_dup(rec);
	if (!text)
		return -1;
	snprintf(name, sizeof(name), "%" PRIu32 ".json", id);
	r = fsutil_write_atomic(dir_fd, name, text, strlen(text), 0600);
	free(text);
	return r;
}

static void persist_locked(struct tjob *t)
{
	cJSON *rec = build_locked(t, false, 0);

	if (!rec || write_record(t->id, rec) < 0)
		log_warning("job %u: cannot write its telemetry record", t->id);
	else
		t->dirty = false;
	t->persisted = time(NULL);
	cJSON_Delete(rec);
}

static cJSON *read_record(uint32_t id)
{
	char name[32], reason[128], *text;
	cJSON *o;

	if (dir_fd < 0)
		return NULL;
	snprintf(name, sizeof(name), "%" PRIu32 ".json", id);
	text = smallfile_read_at(dir_fd, name, O_NOFOLLOW, TEL_RECORD_MAX, NULL,
				 reason, sizeof(reason));
	if (!text)
		return NULL;
	o = cJSON_Parse(text);
	free(text);
	if (!cJSON_IsObject(o)) {
		cJSON_Delete(o);
		return NULL;
	}
	return o;
}

/* A live record back from its file (after a restart): its tasks are
 * followed again from their current counters (what they did while we were
 * down is lost). Takes REC. */
static void resume_record(cJSON *rec)
{
	struct tjob *t = calloc(1, sizeof(*t));
	const cJSON *ph, *p;
	bool new_rec = false; /* written with bytes_source (RECORDS.md) */

	if (!t || !(t->tl = malloc(sizeof(*t->tl)))) {
		tjob_free(t);
		cJSON_Delete(rec);
		return;
	}
	t->id = (uint32_t)proto_u64(rec, "job");
	t->uid = (uid_t)proto_u64(rec, "uid");
	telrec_timeline_init(t->tl, tel_conf->telemetry_interval_ms / 1000.0);
	cJSON_ArrayForEach(ph, cJSON_GetObjectItemCaseSensitive(rec, "phases"))
	{
		const char *name = str(ph, "name", "");

		/* A damaged file may name a phase twice: the last one is
		 * taken, for these as for every field below (the first's
		 * copies leaked, found by fuzz_agent_state). */
		if (!strcmp(name, "stage_in")) {
			cJSON_Delete(t->stage_in);
			t->stage_in = cJSON_Duplicate(ph, true);
		} else if (!strcmp(name, "run")) {
			new_rec = cJSON_GetObjectItemCaseSensitive(
					  ph, "bytes_source") != NULL;
			t->run_start = num(ph, "start");
			telrec_rchar_from_json(ph, &t->run_io);
			t->run_io.syscr = proto_u64(ph, "read_syscalls");
			t->run_io.syscw = proto_u64(ph, "write_syscalls");
			t->run_io.read_bytes = proto_u64(ph, "storage_read_bytes");
			t->run_io.write_bytes =
				proto_u64(ph, "storage_write_bytes");
			telrec_timeline_from_json(
				t->tl,
				cJSON_GetObjectItemCaseSensitive(ph, "timeline"),
				num(ph, "interval_s"));
			cJSON_Delete(t->run_counters);
			t->run_counters = NULL;
			if (cJSON_GetObjectItemCaseSensitive(ph, "counters"))
				t->run_counters = cJSON_Duplicate(
					cJSON_GetObjectItemCaseSensitive(
						ph, "counters"),
					true);
			if (cJSON_GetObjectItemCaseSensitive(ph, "io_seconds")) {
				t->has_run_io_s = true;
				t->run_io_s = num(ph, "io_seconds");
				t->run_unov_s =
					num(ph, "unoverlapped_io_seconds");
			}
			if (cJSON_GetObjectItemCaseSensitive(ph,
							     "shared_files")) {
				t->has_files = true;
				t->base_shared[PROFILE_MAX_OUTPUTS] =
					proto_u64(ph, "shared_files");
				t->base_fpp[PROFILE_MAX_OUTPUTS] =
					proto_u64(ph, "fpp_files");
			}
		} else if (cJSON_IsString(
				   cJSON_GetObjectItemCaseSensitive(ph,
								    "parent")) &&
			   t->nmarks < TELEMETRY_MARKS_MAX &&
			   telrec_phase_name_ok(name)) {
			struct tmark *m = &t->marks[t->nmarks++];
			const cJSON *rk;

			snprintf(m->name, sizeof(m->name), "%s", name);
			m->source = strcmp(str(ph, "source", ""), "auto")
					    ? "marker"
					    : "auto";
			m->start = num(ph, "start");
			m->end = num(ph, "end");
			/* What it had when persisted; I/O while iostaged was
			 * down is lost, as for the run. */
			if (!strcmp(m->source, "marker")) {
				m->exact = true;
				telrec_rchar_from_json(ph, &m->io);
				m->io.syscr = proto_u64(ph, "read_syscalls");
				m->io.syscw = proto_u64(ph, "write_syscalls");
			}
			if (cJSON_GetObjectItemCaseSensitive(ph, "counters"))
				m->counters = cJSON_Duplicate(
					cJSON_GetObjectItemCaseSensitive(
						ph, "counters"),
					true);
			if (cJSON_GetObjectItemCaseSensitive(ph, "io_seconds")) {
				m->has_io_s = true;
				m->io_s = num(ph, "io_seconds");
				m->unov_s = num(ph, "unoverlapped_io_seconds");
			}
			cJSON_ArrayForEach(rk, cJSON_GetObjectItemCaseSensitive(
						       ph, "ranks"))
				if (rank_of(rk) >= 0 &&
				    m->nranks < TEL_RANKS_MAX)
					m->ranks[m->nranks++] = rank_of(rk);
		}
	}
	cJSON_ArrayForEach(p, cJSON_GetObjectItemCaseSensitive(rec, "processes"))
	{
		struct telemetry_task id = { .rank = -1, .local_rank = -1 };
		struct tproc *tp;

		id.pid = (pid_t)proto_u64(p, "pid");
		id.step = step_of(cJSON_GetObjectItemCaseSensitive(p, "step"));
		id.rank = rank_of(cJSON_GetObjectItemCaseSensitive(p, "rank"));
		id.local_rank =
		    rank_of(cJSON_GetObjectItemCaseSensitive(p, "local_rank"));
		snprintf(id.node, sizeof(id.node), "%s", str(p, "node", ""));
		snprintf(id.identity, sizeof(id.identity), "%s",
			 str(p, "identity", "slurm"));
		tp = add_proc(t, &id);
		if (!tp)
			break;
		tp->start = num(p, "start");
		tp->end = num(p, "end");
		/* Since bytes_source, a process's read_bytes is its shim's
		 * file I/O and rchar its /proc figure (when sampled); before,
		 * read_bytes was rchar. */
		if (new_rec) {
			tp->sampled = cJSON_GetObjectItemCaseSensitive(
					      p, "rchar") != NULL;
			if (tp->sampled)
				telrec_rchar_from_json(p, &tp->io);
			if (cJSON_GetObjectItemCaseSensitive(p, "read_bytes")) {
				tp->has_file_bytes = true;
				tp->file_rb = proto_u64(p, "read_bytes");
				tp->file_wb = proto_u64(p, "write_bytes");
			}
		} else {
			tp->sampled = true;
			telrec_rchar_from_json(p, &tp->io);
		}
		tp->traced = cJSON_IsTrue(
			cJSON_GetObjectItemCaseSensitive(p, "traced"));
		tp->shim_disabled = cJSON_IsTrue(
			cJSON_GetObjectItemCaseSensitive(p, "shim_disabled"));
		if (!tp->end && id.pid > 0 &&
		    sampler_tree_add_task(&t->tree, id.pid, 0) == 0) {
			/* Counted up to the record: start from now. */
			for (size_t i = 0; i < t->tree.nprocs; i++)
				if (t->tree.procs[i].pid == id.pid)
					sampler_read_io(id.pid,
							&t->tree.procs[i].last);
		} else if (!tp->end) {
			tp->end = now_s(); /* ended while we were down */
		}
	}
	cJSON_DeleteItemFromObjectCaseSensitive(rec, "phases");
	cJSON_DeleteItemFromObjectCaseSensitive(rec, "processes");
	/* The output file table is not persisted: what was counted before
	 * the restart stays, later reports add to it (a file written both
	 * before and after counts twice). */
	{
		size_t i = 0;

		cJSON_ArrayForEach(p, cJSON_GetObjectItemCaseSensitive(
					      rec, "outputs"))
		{
			if (i == PROFILE_MAX_OUTPUTS)
				break;
			t->base_shared[i] = proto_u64(p, "shared_files");
			t->base_fpp[i] = proto_u64(p, "fpp_files");
			i++;
		}
	}
	t->base = rec;
	t->next = tjobs;
	tjobs = t;
	log_info("job %u: telemetry resumed (%zu processes)", t->id, t->nprocs);
}

/* StateDir/telemetry: old records removed, live ones resumed. */
static void load_records(void)
{
	time_t cutoff = time(NULL) - (time_t)TELEMETRY_KEEP_DAYS * 86400;
	struct dirent *de;
	int fd = dup(dir_fd);
	DIR *d = fd < 0 ? NULL : fdopendir(fd);

	if (!d) {
		if (fd >= 0)
			close(fd);
		return;
	}
	while ((de = readdir(d))) {
		struct stat st;
		char *end;
		unsigned long id;
		cJSON *rec;

		if (de->d_name[0] == '.' && strstr(de->d_name, ".tmp")) {
			unlinkat(dir_fd, de->d_name, 0);
			continue;
		}
		id = strtoul(de->d_name, &end, 10);
		if (!id || id > UINT32_MAX || strcmp(end, ".json") ||
		    fstatat(dir_fd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 ||
		    !S_ISREG(st.st_mode))
			continue;
		if (st.st_mtime < cutoff) {
			unlinkat(dir_fd, de->d_name, 0);
			continue;
		}
		rec = read_record((uint32_t)id);
		if (!rec || cJSON_GetObjectItemCaseSensitive(rec, "end") ||
		    proto_u64(rec, "job") != id) {
			cJSON_Delete(rec);
			continue;
		}
		resume_record(rec);
	}
	closedir(d);
}

/* --- the sampler's tick ---------------------------------------------------------- */

static void tick(void)
{
	time_t now = time(NULL);

	pthread_mutex_lock(&tel_lock);
	for (struct tjob *t = tjobs; t; t = t->next) {
		sample_locked(t);
		if (t->dirty && now - t->persisted >= TEL_PERSIST_EVERY_S)
			persist_locked(t);
	}
	pthread_mutex_unlock(&tel_lock);
}

int telemetry_init(const struct conf *conf, char *err, size_t errlen)
{
	char path[CONF_PATH_MAX + 16];

	tel_conf = conf;
	snprintf(path, sizeof(path), "%s/telemetry", conf->state_dir);
	if (fsutil_mkdir_p(path, 0700) < 0 ||
	    (dir_fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
					 O_CLOEXEC)) < 0) {
		snprintf(err, errlen, "telemetry: %s: %s", path,
			 strerror(errno));
		return -1;
	}
	pthread_mutex_lock(&tel_lock);
	load_records();
	pthread_mutex_unlock(&tel_lock);
	if (sampler_start(conf->telemetry_interval_ms, tick) < 0) {
		snprintf(err, errlen, "telemetry: cannot start the sampler: %s",
			 strerror(errno));
		return -1;
	}
	return 0;
}

void telemetry_fini(void)
{
	struct tjob *t, *next;

	sampler_stop();
	pthread_mutex_lock(&tel_lock);
	for (t = tjobs; t; t = next) {
		next = t->next;
		if (dir_fd >= 0)
			persist_locked(t);
		tjob_free(t);
	}
	tjobs = NULL;
	pthread_mutex_unlock(&tel_lock);
	if (dir_fd >= 0)
		close(dir_fd);
	dir_fd = -1;
}

/* --- events ------------------------------------------------------------------------ */

int telemetry_task_register(uint32_t id, const struct telemetry_task *task,
			    char *err, size_t errlen)
{
	struct tjob *t;
	struct tproc *p;
	int rc = -1;

	pthread_mutex_lock(&tel_lock);
	t = running_locked(id, 0, err, errlen);
	if (!t)
		goto out;
	if (!t->run_start)
		t->run_start = now_s();
	if (task->job_name[0])
		json_set(t->base, "job_name",
			 cJSON_CreateString(task->job_name));
	p = find_proc(t, task->pid);
	if (!p && !(p = add_proc(t, task))) {
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
	pthread_mutex_unlock(&tel_lock);
	return rc;
}

int telemetry_task_exit(uint32_t id, pid_t pid, char *err, size_t errlen)
{
	struct tjob *t;
	struct tproc *p;

	pthread_mutex_lock(&tel_lock);
	t = find_locked(id);
	if (!t) {
		pthread_mutex_unlock(&tel_lock);
		snprintf(err, errlen, "unknown job %u", id);
		return -1;
	}
	sample_locked(t);
	p = find_proc(t, pid);
	if (p && !p->end && !sampler_tree_has(&t->tree, pid))
		p->end = now_s();
	t->dirty = true;
	pthread_mutex_unlock(&tel_lock);
	return 0;
}

/* The registered task PID descends from (walking /proc up a few levels),
 * or NULL. */
static struct tproc *ancestor_task(struct tjob *t, pid_t pid)
{
	for (int depth = 0; pid > 1 && depth < 32; depth++) {
		unsigned long long start;
		struct tproc *p = find_proc(t, pid);

		if (p)
			return p;
		if (sampler_read_stat(pid, &start, &pid) < 0)
			return NULL;
	}
	return NULL;
}

static struct tmark *mark_get(struct tjob *t, const char *name,
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

int telemetry_phase(uint32_t id, uid_t peer_uid, pid_t peer_pid,
		    const char *name, bool begin, double ts,
		    const struct telemetry_task *task, char *err,
		    size_t errlen)
{
	struct tproc *p;
	struct tmark *m;
	struct tjob *t;
	int rc = -1;

	pthread_mutex_lock(&tel_lock);
	t = running_locked(id, peer_uid, err, errlen);
	if (!t)
		goto out;
	m = mark_get(t, name, "marker");
	if (!m) {
		snprintf(err, errlen,
			 "job %u: too many phase names (max %d)", id,
			 TELEMETRY_MARKS_MAX);
		goto out;
	}
	if (!t->run_start)
		t->run_start = ts;
	/* Sample now, so the marker's I/O starts and stops here. */
	sample_locked(t);
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
			io_add_since(&m->io, &t->run_io, &m->at_open);
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
		p = add_proc(t, &id2);
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
	pthread_mutex_unlock(&tel_lock);
	return rc;
}

/* Add one phase's {class:{...}} counters into *SLOT (created). */
static void merge_class_counters(cJSON **slot, const cJSON *by_class)
{
	if (!*slot && !(*slot = cJSON_CreateObject()))
		return;
	if (telrec_class_counters_merge(*slot, by_class) < 0)
		log_warning("telemetry: out of memory merging shim counters");
}

/* A shim_report's counters and times: each process sends one summary per
 * exec image (and one after a failed exec), so everything adds up. The
 * shim counts a call in one phase: "run" when no marker or automatic
 * phase applies, else the sub-phase. The run phase's counters and times
 * are the totals over all of them (RECORDS.md: the run covers its
 * sub-phases); each sub-phase keeps its own. */
static void merge_report_locked(struct tjob *t, const cJSON *req)
{
	const cJSON *counters = cJSON_GetObjectItemCaseSensitive(req,
								 "counters");
	const cJSON *io = cJSON_GetObjectItemCaseSensitive(req, "io_seconds");
	const cJSON *unov = cJSON_GetObjectItemCaseSensitive(req,
							     "unoverlapped");
	const cJSON *ph;

	if (counters && !t->run_counters)
		t->run_counters = cJSON_CreateObject();
	if (t->run_counters && telrec_counters_fold(t->run_counters,
						    counters) < 0)
		log_warning("job %u: out of memory merging shim counters",
			    t->id);
	cJSON_ArrayForEach(ph, counters)
	{
		struct tmark *m;

		if (!strcmp(ph->string, "run"))
			continue;
		m = mark_get(t, ph->string, "auto");
		if (!m)
			continue;
		/* The shim says when the process ran; without that, the
		 * phase spans the run so far. */
		if (!m->start) {
			m->start = num(req, "start") > 0 ? num(req, "start")
							 : t->run_start;
			m->end = num(req, "end") > m->start ? num(req, "end")
							    : 0;
		} else if (!strcmp(m->source, "auto")) {
			/* An automatic phase spans the processes that
			 * reported it. */
			if (num(req, "start") > 0 && num(req, "start") < m->start)
				m->start = num(req, "start");
			if (num(req, "end") > m->end)
				m->end = num(req, "end");
		}
		merge_class_counters(&m->counters, ph);
	}
	if (io || unov) {
		t->run_io_s += telrec_seconds_total(io);
		t->run_unov_s += telrec_seconds_total(unov);
		t->has_run_io_s = true;
	}
	/* Per sub-phase: a phase with only unoverlapped time (or only I/O
	 * time) still gets both keys. */
	for (int pass = 0; pass < 2; pass++) {
		const cJSON *secs = pass ? unov : io;

		cJSON_ArrayForEach(ph, secs)
		{
			struct tmark *m;

			if (!strcmp(ph->string, "run") || !cJSON_IsNumber(ph))
				continue;
			m = mark_get(t, ph->string, "auto");
			if (!m)
				continue;
			if (!m->start)
				m->start = num(req, "start") > 0
						   ? num(req, "start")
						   : t->run_start;
			if (pass)
				m->unov_s += ph->valuedouble;
			else
				m->io_s += ph->valuedouble;
			m->has_io_s = true;
		}
	}
}

/* The output files PID wrote: who else wrote them decides shared/fpp. */
static void merge_files_locked(struct tjob *t, pid_t pid, const cJSON *req)
{
	const cJSON *files = cJSON_GetObjectItemCaseSensitive(req, "files");
	const cJSON *f;

	if (!files)
		return;
	if (!t->files && !(t->files = outfiles_create(TELEMETRY_FILES_MAX))) {
		log_warning("job %u: out of memory for its output files",
			    t->id);
		return;
	}
	t->has_files = true;
	cJSON_ArrayForEach(f, files)
	{
		const char *path = str(f, "path", NULL);

		/* files[] lists output files; the class says so (a path
		 * under no output is still counted for the job). */
		if (!path || strcmp(str(f, "class", "output"), "output"))
			continue;
		if (outfiles_add(t->files, path, pid,
				 proto_u64(f, "written")) == 1 &&
		    outfiles_dropped(t->files) == 1)
			log_info("job %u: more than %d distinct output files "
				 "reported: further ones are not counted as "
				 "shared or file-per-process",
				 t->id, TELEMETRY_FILES_MAX);
	}
}

int telemetry_shim_report(uint32_t id, uid_t peer_uid, pid_t pid,
			  const cJSON *req, char *err, size_t errlen)
{
	struct tproc *p;
	struct tjob *t;
	int rc = -1;

	pthread_mutex_lock(&tel_lock);
	t = running_locked(id, peer_uid, err, errlen);
	if (!t)
		goto out;
	if (!t->run_start)
		t->run_start = num(req, "start") > 0 ? num(req, "start")
						     : now_s();
	merge_report_locked(t, req);
	merge_files_locked(t, pid, req);
	if (cJSON_GetObjectItemCaseSensitive(req, "observed") &&
	    ((!t->observed && !(t->observed = cJSON_CreateObject())) ||
	     telrec_observed_merge(t->observed,
				   cJSON_GetObjectItemCaseSensitive(req,
								    "observed"),
				   tel_conf->pfs_path) < 0))
		log_warning("job %u: out of memory noting the tree it read",
			    t->id);
	p = find_proc(t, pid);
	if (!p) {
		struct telemetry_task id2 = { .pid = pid, .rank = -1,
					      .local_rank = -1 };

		id2.step =
		    step_of(cJSON_GetObjectItemCaseSensitive(req, "step"));
		id2.rank = rank_of(cJSON_GetObjectItemCaseSensitive(req, "rank"));
		id2.local_rank =
		    rank_of(cJSON_GetObjectItemCaseSensitive(req, "local_rank"));
		snprintf(id2.node, sizeof(id2.node), "%s",
			 str(req, "node", tel_conf->node_name));
		snprintf(id2.identity, sizeof(id2.identity), "%s",
			 strcmp(str(req, "identity", "slurm"), "pmix")
				 ? "slurm"
				 : "pmix");
		p = add_proc(t, &id2);
	}
	if (p) {
		const cJSON *counters =
			cJSON_GetObjectItemCaseSensitive(req, "counters");

		/* A registered task keeps the step slurmstepd gave it. */
		if (p->id.step < 0)
			p->id.step = step_of(
				cJSON_GetObjectItemCaseSensitive(req, "step"));
		p->traced = true;
		if (cJSON_GetObjectItemCaseSensitive(req, "disabled"))
			p->shim_disabled = true;
		if (counters) {
			uint64_t rb, wb;

			telrec_report_bytes(counters, &rb, &wb);
			p->file_rb += rb;
			p->file_wb += wb;
			p->has_file_bytes = true;
		}
	}
	t->dirty = true;
	rc = 0;
out:
	pthread_mutex_unlock(&tel_lock);
	return rc;
}

cJSON *telemetry_record(uint32_t id, uid_t peer_uid, char *err,
			size_t errlen)
{
	struct tjob *t;
	cJSON *rec = NULL;

	pthread_mutex_lock(&tel_lock);
	t = find_locked(id);
	if (t || jobs_known(agent_bridge->jobs, id)) {
		t = get_locked(id, peer_uid, err, errlen);
		if (t || errno != EALREADY) {
			if (t)
				rec = build_locked(t, false, 0);
			pthread_mutex_unlock(&tel_lock);
			if (t && !rec)
				snprintf(err, errlen, "out of memory");
			return rec;
		}
		/* Finished, the job not yet out of the table: from disk. */
	}
	pthread_mutex_unlock(&tel_lock);
	rec = read_record(id);
	if (!rec) {
		snprintf(err, errlen, "unknown job %u", id);
		return NULL;
	}
	if (peer_uid != 0 && proto_u64(rec, "uid") != peer_uid) {
		snprintf(err, errlen,
			 "permission denied: job %u belongs to another user "
			 "(peer uid %u)",
			 id, (unsigned)peer_uid);
		cJSON_Delete(rec);
		return NULL;
	}
	return rec;
}

/* Per-output drain figures of drain record D into the record's outputs[]
 * (by name). */
static void outputs_from_drain(struct tjob *t, const cJSON *d)
{
	static const char *const keys[] = {
		"files", "bytes", "during_files", "during_bytes",
		"end_files", "end_bytes", "failed_files",
	};
	cJSON *outs = cJSON_GetObjectItemCaseSensitive(t->base, "outputs"), *o;
	const cJSON *e;

	cJSON_ArrayForEach(e, cJSON_GetObjectItemCaseSensitive(d, "outputs"))
	{
		const char *name = str(e, "name", NULL);
		const cJSON *hist;

		if (!name)
			continue;
		cJSON_ArrayForEach(o, outs)
			if (!strcmp(str(o, "name", ""), name))
				break;
		/* Figures are there only from a drain that counts them. */
		if (!o || !cJSON_GetObjectItemCaseSensitive(e, "files"))
			continue;
		for (size_t k = 0; k < sizeof(keys) / sizeof(keys[0]); k++)
			json_set_number(o, keys[k],
					(double)proto_u64(e, keys[k]));
		/* The largest file: only from a drain that records it. */
		if (cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(
			e, "max_file_bytes")))
			json_set_number(o, "max_file_bytes",
					(double)proto_u64(e, "max_file_bytes"));
		hist = cJSON_GetObjectItemCaseSensitive(e, "size_hist");
		if (cJSON_IsObject(hist)) {
			uint64_t h[TELREC_NBUCKETS];

			telrec_size_hist_from_json(h, hist);
			cJSON_DeleteItemFromObjectCaseSensitive(o, "size_hist");
			cJSON_AddItemToObject(o, "size_hist",
					      telrec_size_hist_json(h));
		}
	}
}

/* stage_out from StateDir/drain/J.json, written by drain.c at finish; its
 * per-output figures go to T's outputs[]. */
static cJSON *stage_out_phase(struct tjob *t, uint32_t id, double run_start,
			      double end)
{
	char path[CONF_PATH_MAX + 48], reason[128], *text;
	cJSON *d, *ph;
	double end_s;
	uint64_t db, df, eb, ef;

	snprintf(path, sizeof(path), "%s/drain/%" PRIu32 ".json",
		 tel_conf->state_dir, id);
	text = smallfile_read(path, 1024 * 1024, reason, sizeof(reason));
	d = text ? cJSON_Parse(text) : NULL;
	free(text);
	ph = cJSON_CreateObject();
	if (!ph) {
		cJSON_Delete(d);
		return NULL;
	}
	db = proto_u64(d, "during_bytes");
	df = proto_u64(d, "during_files");
	eb = proto_u64(d, "end_bytes");
	ef = proto_u64(d, "end_files");
	end_s = num(d, "end_seconds");
	cJSON_AddStringToObject(ph, "name", "stage_out");
	/* Outputs drain from the start of the run (overlapped with it). */
	cJSON_AddNumberToObject(ph, "start", run_start > 0 ? run_start : end);
	cJSON_AddNumberToObject(ph, "end", end);
	cJSON_AddNumberToObject(ph, "seconds",
				end - (run_start > 0 ? run_start : end));
	cJSON_AddNumberToObject(ph, "bytes", (double)(db + eb));
	cJSON_AddNumberToObject(ph, "files", (double)(df + ef));
	cJSON_AddNumberToObject(ph, "during_bytes", (double)db);
	cJSON_AddNumberToObject(ph, "during_files", (double)df);
	cJSON_AddNumberToObject(ph, "end_bytes", (double)eb);
	cJSON_AddNumberToObject(ph, "end_files", (double)ef);
	cJSON_AddNumberToObject(ph, "end_seconds", end_s);
	if (d)
		cJSON_AddNumberToObject(ph, "failed_files",
					(double)proto_u64(d, "failed_files"));
	outputs_from_drain(t, d);
	cJSON_Delete(d);
	return ph;
}

cJSON *telemetry_finish_job(uint32_t id)
{
	char err[CONF_ERR_MAX];
	struct tjob *t, **pp;
	cJSON *rec = NULL;
	double end = now_s();

	if (id >= JOBS_PRESTAGE_ID_MIN)
		return NULL;
	pthread_mutex_lock(&tel_lock);
	t = get_locked(id, 0, err, sizeof(err));
	if (!t) {
		pthread_mutex_unlock(&tel_lock);
		return read_record(id); /* finished before (a retried finish) */
	}
	sample_locked(t);
	/* A job whose tasks were never registered still ran: from the end
	 * of staging to now. */
	if (!t->run_start && t->stage_in)
		t->run_start = num(t->stage_in, "end");
	/* A job whose staging failed (and did not fall back) did not run:
	 * its record has only stage_in. */
	if (!strcmp(str(t->base, "state", ""), "stage_failed"))
		t->run_start = 0;
	if (t->run_start > 0)
		t->run_end = end;
	for (size_t i = 0; i < t->nprocs; i++)
		if (!t->procs[i].end)
			t->procs[i].end = end;
	if (strcmp(str(t->base, "state", ""), "stage_failed")) {
		cJSON_Delete(t->stage_out);
		t->stage_out = stage_out_phase(t, id, t->run_start, end);
	}
	rec = build_locked(t, true, end);
	if (!rec || write_record(id, rec) < 0)
		log_warning("job %u: cannot write its telemetry record", id);
	for (pp = &tjobs; *pp; pp = &(*pp)->next)
		if (*pp == t) {
			*pp = t->next;
			break;
		}
	pthread_mutex_unlock(&tel_lock);
	tjob_free(t);
	return rec;
}
