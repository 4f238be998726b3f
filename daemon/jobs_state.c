/* jobs_state.c - the job table's persisted state: StateDir/jobs.
 *
 * Each change of a job is written to StateDir/jobs/JOBID.json (root 0600;
 * a temporary file, fsync, rename: fsutil_write_atomic), and a restarted
 * iostaged reads them back (jobs_load): a job that was still staging
 * becomes failed ("iostaged restarted during staging") and its
 * half-copied datasets are removed; a file that does not parse, or names
 * a job twice, is ignored with a warning. Everything read is checked:
 * the directory is the daemon's own, but a file may be cut short or
 * damaged.
 *
 * State file:
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
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/base/jsonbuf.h"
#include "common/base/log.h"
#include "common/base/smallfile.h"
#include "common/net/proto.h"
#include "daemon/fsutil.h"
#include "daemon/jobs.h"
#include "daemon/jobs_internal.h"
#include "daemon/staging/tiers.h"

/* --- writing
 * ------------------------------------------------------------------ */

/* The "cache" array: how each dataset was served. */
cJSON *jobs_cache_records_locked(const struct job *job)
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
		cJSON_AddStringToObject(o, "result",
					jobs_ds_result_name(d->result));
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
void jobs_add_state_fields(cJSON *o, const struct job *job)
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

cJSON *jobs_job_json_locked(const struct job *job)
{
	const struct jobs *js = job->table;
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
	jobs_add_state_fields(o, job);
	tiers = cJSON_AddArrayToObject(o, "tiers");
	tb = cJSON_AddObjectToObject(o, "tier_bytes");
	for (i = 0; i < js->conf->ntiers && tiers && tb; i++) {
		if (!job->tiers[i])
			continue;
		cJSON_AddItemToArray(tiers, cJSON_CreateString(
						js->conf->tiers[i].name));
		cJSON_AddNumberToObject(tb, js->conf->tiers[i].name,
					(double)job->tier_bytes[i]);
	}
	cJSON_AddBoolToObject(o, "prestage", job->prestage);
	cJSON_AddNumberToObject(o, "ended", (double)job->ended);
	cJSON_AddNumberToObject(o, "staged_s", job->staged_s);
	cJSON_AddItemToObject(o, "cache", jobs_cache_records_locked(job));
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

int jobs_persist(struct job *job)
{
	struct jobs *js = job->table;
	char name[32], *text = NULL;
	cJSON *o = NULL;
	int r = -1;

	pthread_mutex_lock(&js->persist_lock);
	pthread_mutex_lock(&js->lock);
	if (job->gone) {
		pthread_mutex_unlock(&js->lock);
		r = 0;
		goto out;
	}
	o = jobs_job_json_locked(job);
	pthread_mutex_unlock(&js->lock);
	text = o ? jsonbuf_dup(o) : NULL;
	if (!text) {
		errno = ENOMEM;
		goto out;
	}
	state_name(job->id, name, sizeof(name));
	r = fsutil_write_atomic(js->state_fd, name, text, strlen(text), 0600);
out:
	pthread_mutex_unlock(&js->persist_lock);
	if (r < 0)
		log_warning("job %u: cannot write its state file", job->id);
	cJSON_Delete(o);
	free(text);
	return r;
}

bool jobs_forget(struct job *job)
{
	struct jobs *js = job->table;
	char name[32];
	bool did;

	pthread_mutex_lock(&js->persist_lock);
	pthread_mutex_lock(&js->lock);
	did = !job->gone;
	if (did) {
		job->gone = true;
		jobs_unlink_locked(js, job);
		pthread_cond_broadcast(&js->cond);
	}
	pthread_mutex_unlock(&js->lock);
	if (did) {
		state_name(job->id, name, sizeof(name));
		if (unlinkat(js->state_fd, name, 0) < 0 && errno != ENOENT)
			log_warning("job %u: cannot remove its state file",
				    job->id);
	}
	pthread_mutex_unlock(&js->persist_lock);
	return did;
}

/* --- reading: the state directory and reloading ------------------------------
 */

/* Open StateDir/jobs, creating StateDir (0700) and jobs (0700) as needed. */
int jobs_state_open(struct jobs *js, char *err, size_t errlen)
{
	const char *dir = js->conf->state_dir;
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
	if (fsutil_check_owned_dir(&st, dir, js->owner, false, why,
				   sizeof(why)) < 0) {
		snprintf(err, errlen, "StateDir: %s", why);
		goto fail;
	}
	if (mkdirat(fd, "jobs", 0700) < 0 && errno != EEXIST) {
		snprintf(err, errlen, "StateDir: cannot create %s/jobs: %s",
			 dir, strerror(errno));
		goto fail;
	}
	jfd = openat(fd, "jobs",
		     O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (jfd < 0 || fstat(jfd, &st) < 0) {
		snprintf(err, errlen, "StateDir: cannot open %s/jobs: %s", dir,
			 strerror(errno));
		goto fail;
	}
	if (fsutil_check_owned_dir(&st, "StateDir/jobs", js->owner, false, why,
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
static char *read_state_file(struct jobs *js, const char *name)
{
	char reason[128];

	return smallfile_read_at(js->state_fd, name, O_NOFOLLOW,
				 JOBS_STATE_FILE_MAX, NULL, reason,
				 sizeof(reason));
}

/* Rebuild the profile of a reloaded job; NULL with err if it no longer
 * passes the current configuration. */
static struct profile *reload_profile(struct jobs *js, const cJSON *obj,
				      char *err, size_t errlen)
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
	if (p && (profile_normalize(p, js->conf, err, errlen) < 0 ||
		  profile_validate(p, js->conf, PROFILE_CHECK_STRUCTURE, err,
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

	cJSON_ArrayForEach(item, arr) {
		const cJSON *entry = cJSON_GetObjectItemCaseSensitive(item,
								      "entry");
		const cJSON *res = cJSON_GetObjectItemCaseSensitive(item,
								    "result");
		struct job_ds *d;

		if (i >= PROFILE_MAX_DATASETS)
			break;
		d = &job->ds[i++];
		d->result = jobs_ds_result_from_name(
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

struct job *jobs_job_from_json(struct jobs *js, const cJSON *o, char *err,
			       size_t errlen)
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
	job->table = js;
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
	if (jobs_state_from_name(state->valuestring, &job->state) < 0) {
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
	cJSON_ArrayForEach(item, tiers) {
		int t = cJSON_IsString(item)
			    ? tiers_index(js->agent->tiers, item->valuestring)
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
	job->profile =
	    reload_profile(js, cJSON_GetObjectItemCaseSensitive(o, "profile"),
			   perr, sizeof(perr));
	if (job->profile) {
		job->profile_json = profile_to_json(job->profile);
	} else if (job->state != JOB_FAILED) {
		job->state = JOB_FAILED;
		snprintf(
		    job->error, sizeof(job->error),
		    "cannot reload the job's profile after a restart: %.400s",
		    perr);
	}
	return job;
}

static int load_one(struct jobs *js, const char *name)
{
	char err[CONF_ERR_MAX], *text;
	cJSON *o = NULL;
	struct job *job;
	bool was_staging;
	size_t t;

	text = read_state_file(js, name);
	if (!text) {
		log_warning("cannot read state file %s", name);
		return -1;
	}
	o = cJSON_Parse(text);
	free(text);
	/* JSON that is not an object (e.g. "[7]") has no reason in err */
	snprintf(err, sizeof(err), "%s", o ? "not a JSON object" : "not JSON");
	job = cJSON_IsObject(o) ? jobs_job_from_json(js, o, err, sizeof(err))
				: NULL;
	if (!job) {
		log_warningx("state file %s ignored: %s", name, err);
		cJSON_Delete(o);
		return -1;
	}
	cJSON_Delete(o);
	if (jobs_find_locked(js, job->id)) {
		log_warningx("state file %s ignored: job %u loaded twice", name,
			     job->id);
		jobs_job_free(job);
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
	job->next = js->head;
	js->head = job;
	if (was_staging) {
		jobs_cleanup_failed(job);
		jobs_persist(job);
		log_warningx("job %u: was staging when iostaged stopped; now "
			     "failed, partial copies removed",
			     job->id);
	} else {
		log_debug("job %u: reloaded (%s)", job->id,
			  jobs_state_name(job->state));
	}
	/* drain.c: a running job's outputs are watched again. */
	if (job->state == JOB_STAGED && job->profile && !job->prestage &&
	    js->drain_resume &&
	    js->drain_resume(js->drain_arg, job, err, sizeof(err)) < 0)
		log_warningx("job %u: outputs drain at finish only: %s",
			     job->id, err);
	return 0;
}

int jobs_load_all(struct jobs *js, char *err, size_t errlen)
{
	struct dirent *de;
	unsigned loaded = 0;
	DIR *dir;
	int fd;

	fd = fcntl(js->state_fd, F_DUPFD_CLOEXEC, 0);
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
			unlinkat(js->state_fd, n, 0); /* an interrupted write */
			continue;
		}
		if (digits == 0 || digits > 10 || strcmp(n + digits, ".json"))
			continue;
		if (load_one(js, n) == 0)
			loaded++;
	}
	closedir(dir);
	if (loaded)
		log_info("reloaded %u job%s from %s/jobs", loaded,
			 loaded == 1 ? "" : "s", js->conf->state_dir);
	return 0;
}
