/* stats.c - node totals and per-job phase records for /metrics (stats.h).
 *
 * Totals are relaxed atomics: a scrape may see one counter a dataset ahead
 * of another, which Prometheus counters tolerate, and staging never takes
 * a lock for them. The per-job list is short (the jobs of one node plus
 * those ended within the grace period) and guarded by one mutex that is
 * never held while calling out of this file.
 *
 * All of it lives in struct stats, one per agent (daemon/agent.h): a test
 * holds as many as it likes.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "daemon/telemetry/stats.h"

#define STATS_JOBS_MAX 4096 /* bound: a flood of job ids cannot grow us */

struct sjob {
	uint32_t id;
	bool has_uid;
	uid_t uid;
	bool ended;
	time_t ended_at;
	double first_seen; /* wall clock: when staging was first seen */
	bool staged_ok;
	double staged_at; /* wall clock: end of staging (run starts) */
	double run_end;   /* wall clock: when the job left the table */
	bool has_in, has_out;
	uint64_t in_bytes, in_files, in_cached;
	double in_seconds;
	uint64_t out_bytes, out_files;
	double out_end_seconds;
	cJSON *phases; /* from a full record, replaces the above */
	struct sjob *next;
};

struct stats {
	struct {
		uint64_t staged_bytes, staged_files, copied_bytes, copied_files;
		uint64_t linked_files, cache_hits, cache_misses, jobs_staged;
		uint64_t jobs_failed, stage_ns;
	} totals; /* atomics */

	pthread_mutex_t lock; /* the jobs' list */
	struct sjob *jobs;
	size_t njobs;
};

#define ADD(field, v)                                                          \
	__atomic_add_fetch(&s->totals.field, (v), __ATOMIC_RELAXED)
#define GET(field) __atomic_load_n(&s->totals.field, __ATOMIC_RELAXED)

struct stats *stats_create(void)
{
	struct stats *s = calloc(1, sizeof(*s));

	if (!s)
		return NULL;
	pthread_mutex_init(&s->lock, NULL);
	return s;
}

static double wall_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

void stats_dataset_served(struct stats *s, bool hit, uint64_t bytes,
			  uint64_t files, uint64_t copied_bytes,
			  uint64_t copied_files, uint64_t linked_files)
{
	if (!s)
		return;
	ADD(staged_bytes, bytes);
	ADD(staged_files, files);
	ADD(copied_bytes, copied_bytes);
	ADD(copied_files, copied_files);
	ADD(linked_files, linked_files);
	if (hit)
		ADD(cache_hits, 1);
	else
		ADD(cache_misses, 1);
}

/* The entry of job ID, created when CREATE; under S's lock. */
static struct sjob *find_locked(struct stats *s, uint32_t id, bool create)
{
	struct sjob *j;

	for (j = s->jobs; j; j = j->next) {
		if (j->id != id)
			continue;
		/* A requeued job comes back with the same id: a new run. */
		if (create && j->ended) {
			struct sjob *next = j->next;

			cJSON_Delete(j->phases);
			memset(j, 0, sizeof(*j));
			j->id = id;
			j->first_seen = wall_now();
			j->next = next;
		}
		return j;
	}
	if (!create || s->njobs >= STATS_JOBS_MAX)
		return NULL;
	j = calloc(1, sizeof(*j));
	if (!j)
		return NULL;
	j->id = id;
	j->first_seen = wall_now();
	j->next = s->jobs;
	s->jobs = j;
	s->njobs++;
	return j;
}

void stats_job_staged(struct stats *s, uint32_t id, uid_t uid, bool prestage,
		      bool ok, double seconds, uint64_t bytes, uint64_t files,
		      uint64_t cached_bytes)
{
	struct sjob *j;

	if (!s)
		return;
	if (seconds > 0)
		ADD(stage_ns, (uint64_t)(seconds * 1e9));
	if (prestage)
		return;
	if (ok)
		ADD(jobs_staged, 1);
	else
		ADD(jobs_failed, 1);
	pthread_mutex_lock(&s->lock);
	j = find_locked(s, id, true);
	if (j) {
		j->uid = uid;
		j->has_uid = true;
		j->has_in = true;
		j->in_bytes = bytes;
		j->in_files = files;
		j->in_cached = cached_bytes;
		j->in_seconds = seconds;
		j->staged_ok = ok;
		j->staged_at = wall_now();
	}
	pthread_mutex_unlock(&s->lock);
}

void stats_job_staging(struct stats *s, uint32_t id, uint64_t bytes,
		       double seconds)
{
	struct sjob *j;

	pthread_mutex_lock(&s->lock);
	j = find_locked(s, id, true);
	if (j && !j->staged_at) {
		j->has_in = true;
		j->in_bytes = bytes;
		j->in_seconds = seconds;
	}
	pthread_mutex_unlock(&s->lock);
}

void stats_job_drained(struct stats *s, uint32_t id, uint64_t bytes,
		       uint64_t files, double end_seconds)
{
	struct sjob *j;

	pthread_mutex_lock(&s->lock);
	j = find_locked(s, id, true);
	if (j) {
		j->has_out = true;
		j->out_bytes = bytes;
		j->out_files = files;
		j->out_end_seconds = end_seconds;
	}
	pthread_mutex_unlock(&s->lock);
}

void stats_job_owner(struct stats *s, uint32_t id, uid_t uid)
{
	struct sjob *j;

	pthread_mutex_lock(&s->lock);
	j = find_locked(s, id, false);
	if (j) {
		j->uid = uid;
		j->has_uid = true;
	}
	pthread_mutex_unlock(&s->lock);
}

void stats_job_ended(struct stats *s, uint32_t id, time_t now)
{
	struct sjob *j;

	pthread_mutex_lock(&s->lock);
	j = find_locked(s, id, false);
	if (j && !j->ended) {
		j->ended = true;
		j->ended_at = now;
		j->run_end = wall_now();
	}
	pthread_mutex_unlock(&s->lock);
}

int stats_job_record(struct stats *s, uint32_t id, const cJSON *record)
{
	const cJSON *ph = cJSON_GetObjectItemCaseSensitive(record, "phases");
	cJSON *copy;
	struct sjob *j;

	if (!s)
		return 0;
	if (!cJSON_IsArray(ph)) {
		errno = EINVAL;
		return -1;
	}
	copy = cJSON_Duplicate(ph, true);
	if (!copy) {
		errno = ENOMEM;
		return -1;
	}
	pthread_mutex_lock(&s->lock);
	j = find_locked(s, id, true);
	if (j) {
		cJSON_Delete(j->phases);
		j->phases = copy;
		copy = NULL;
	}
	pthread_mutex_unlock(&s->lock);
	if (copy) {
		cJSON_Delete(copy);
		errno = ENOMEM;
		return -1;
	}
	return 0;
}

void stats_prune(struct stats *s, time_t now, unsigned grace_s)
{
	struct sjob **pp, *j;

	pthread_mutex_lock(&s->lock);
	for (pp = &s->jobs; (j = *pp);) {
		if (j->ended && now - j->ended_at >= (time_t)grace_s) {
			*pp = j->next;
			cJSON_Delete(j->phases);
			free(j);
			s->njobs--;
		} else {
			pp = &j->next;
		}
	}
	pthread_mutex_unlock(&s->lock);
}

bool stats_job_known(struct stats *s, uint32_t id)
{
	bool known;

	pthread_mutex_lock(&s->lock);
	known = find_locked(s, id, false) != NULL;
	pthread_mutex_unlock(&s->lock);
	return known;
}

size_t stats_active_jobs(struct stats *s, uint32_t *ids, size_t max)
{
	struct sjob *j;
	size_t n = 0;

	pthread_mutex_lock(&s->lock);
	for (j = s->jobs; j && n < max; j = j->next)
		if (!j->ended)
			ids[n++] = j->id;
	pthread_mutex_unlock(&s->lock);
	return n;
}

void stats_get_totals(struct stats *s, struct stats_totals *ret)
{
	ret->staged_bytes = GET(staged_bytes);
	ret->staged_files = GET(staged_files);
	ret->copied_bytes = GET(copied_bytes);
	ret->copied_files = GET(copied_files);
	ret->linked_files = GET(linked_files);
	ret->cache_hits = GET(cache_hits);
	ret->cache_misses = GET(cache_misses);
	ret->jobs_staged = GET(jobs_staged);
	ret->jobs_failed = GET(jobs_failed);
	ret->stage_seconds = (double)GET(stage_ns) / 1e9;
}

/* J's phases in the record shape; under stats_lock. */
/* The stage_out phase from the drain figures, appended to ARR. */
static void add_stage_out_locked(const struct sjob *j, cJSON *arr)
{
	cJSON *p = cJSON_CreateObject();

	if (!p)
		return;
	cJSON_AddStringToObject(p, "name", "stage_out");
	cJSON_AddNumberToObject(p, "seconds", j->out_end_seconds);
	cJSON_AddNumberToObject(p, "bytes", (double)j->out_bytes);
	cJSON_AddNumberToObject(p, "files", (double)j->out_files);
	cJSON_AddItemToArray(arr, p);
}

static bool has_phase(const cJSON *phases, const char *name)
{
	const cJSON *p;

	cJSON_ArrayForEach(p, phases) {
		const cJSON *n = cJSON_GetObjectItemCaseSensitive(p, "name");

		if (cJSON_IsString(n) && !strcmp(n->valuestring, name))
			return true;
	}
	return false;
}

static cJSON *phases_locked(const struct sjob *j, double now)
{
	cJSON *arr, *p;

	/* A telemetry record knows more, except what is drained while the
	 * job runs: its stage_out comes only at finish. */
	if (j->phases) {
		arr = cJSON_Duplicate(j->phases, true);
		if (arr && j->has_out && !has_phase(arr, "stage_out"))
			add_stage_out_locked(j, arr);
		return arr;
	}
	arr = cJSON_CreateArray();
	if (!arr)
		return NULL;
	if (j->has_in && (p = cJSON_CreateObject())) {
		cJSON_AddStringToObject(p, "name", "stage_in");
		cJSON_AddNumberToObject(p, "seconds", j->in_seconds);
		cJSON_AddNumberToObject(p, "bytes", (double)j->in_bytes);
		cJSON_AddNumberToObject(p, "files", (double)j->in_files);
		cJSON_AddNumberToObject(p, "cached_bytes",
					(double)j->in_cached);
		cJSON_AddItemToArray(arr, p);
	}
	/* The run phase is the time between staged and finished; its bytes
	 * come with telemetry's record. */
	if (j->staged_ok && j->staged_at > 0 && (p = cJSON_CreateObject())) {
		double end = j->ended ? j->run_end : now;

		cJSON_AddStringToObject(p, "name", "run");
		cJSON_AddNumberToObject(p, "start", j->staged_at);
		cJSON_AddNumberToObject(p, "seconds",
					end > j->staged_at ? end - j->staged_at
							   : 0);
		cJSON_AddItemToArray(arr, p);
	}
	if (j->has_out)
		add_stage_out_locked(j, arr);
	return arr;
}

cJSON *stats_job_records(struct stats *s, bool all, uid_t viewer)
{
	cJSON *arr = cJSON_CreateArray(), *rec, *ph;
	struct sjob *j;

	if (!arr)
		return NULL;
	pthread_mutex_lock(&s->lock);
	for (j = s->jobs; j; j = j->next) {
		if (!all && (!j->has_uid || j->uid != viewer))
			continue;
		rec = cJSON_CreateObject();
		ph = phases_locked(j, wall_now());
		if (!rec || !ph) {
			cJSON_Delete(rec);
			cJSON_Delete(ph);
			cJSON_Delete(arr);
			arr = NULL;
			break;
		}
		cJSON_AddNumberToObject(rec, "job", j->id);
		cJSON_AddItemToObject(rec, "phases", ph);
		cJSON_AddItemToArray(arr, rec);
	}
	pthread_mutex_unlock(&s->lock);
	return arr;
}

void stats_destroy(struct stats *s)
{
	struct sjob *j;

	if (!s)
		return;
	while ((j = s->jobs)) {
		s->jobs = j->next;
		cJSON_Delete(j->phases);
		free(j);
	}
	pthread_mutex_destroy(&s->lock);
	free(s);
}
