/* jobs_status.c - the job table as the status op and the metrics see it:
 * every job's state, progress (rate and ETA), datasets and how the cache
 * served them, and drain.c's "drain" object; how many jobs use each tier.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <string.h>
#include <time.h>

#include "common/net/proto.h"
#include "daemon/jobs.h"
#include "daemon/jobs_internal.h"

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

static cJSON *job_status_locked(const struct jobs *js, const struct job *job)
{
	cJSON *o = cJSON_CreateObject(), *ds, *drain;
	size_t i;

	if (!o)
		return NULL;
	cJSON_AddNumberToObject(o, "job", job->id);
	cJSON_AddStringToObject(o, "user", job->user);
	cJSON_AddNumberToObject(o, "uid", job->uid);
	/* drain.c: outputs drained during the run and at the end. */
	if (js->drain_status &&
	    (drain = js->drain_status(js->drain_arg, job->id)))
		cJSON_AddItemToObject(o, "drain", drain);
	jobs_add_state_fields(o, job);
	progress_locked(job, o);
	cJSON_AddBoolToObject(o, "prestage", job->prestage);
	ds = cJSON_AddArrayToObject(o, "datasets");
	for (i = 0; ds && job->profile && i < job->profile->ndatasets; i++)
		cJSON_AddItemToArray(ds, cJSON_CreateString(
					     job->profile->datasets[i].name));
	cJSON_AddItemToObject(o, "cache", jobs_cache_records_locked(job));
	return o;
}

cJSON *jobs_status_json(struct jobs *js, uid_t peer_uid)
{
	cJSON *arr = cJSON_CreateArray(), *o;
	const struct job *job;

	if (!arr || !js)
		return arr; /* no table: no jobs */
	pthread_mutex_lock(&js->lock);
	for (job = js->head; job; job = job->next) {
		if (peer_uid != 0 && job->uid != peer_uid)
			continue;
		o = job_status_locked(js, job);
		if (!o) {
			cJSON_Delete(arr);
			arr = NULL;
			break;
		}
		cJSON_AddItemToArray(arr, o);
	}
	pthread_mutex_unlock(&js->lock);
	return arr;
}

void jobs_tier_counts(struct jobs *js, unsigned counts[CONF_MAX_TIERS])
{
	const struct job *job;
	size_t t;

	memset(counts, 0, sizeof(unsigned) * CONF_MAX_TIERS);
	if (!js)
		return;
	pthread_mutex_lock(&js->lock);
	for (job = js->head; job; job = job->next)
		for (t = 0; t < CONF_MAX_TIERS; t++)
			if (job->tiers[t])
				counts[t]++;
	pthread_mutex_unlock(&js->lock);
}
