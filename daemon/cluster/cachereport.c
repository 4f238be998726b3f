/* cachereport.c - this node's cache, reported to iostagectld (see
 * cachereport.h).
 *
 * Why a full snapshot and not events: a report lost, repeated or arriving
 * after a restart of either side is healed by the next one, and the
 * service never has to order events from one node.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "common/net/ctlclient.h"
#include "common/base/deadline.h"
#include "common/base/log.h"
#include "daemon/staging/cache.h"
#include "daemon/cluster/cachereport.h"

/* How often the cache's generation is looked at: a new entry reaches the
 * service within this. */
#define POLL_MS 250
/* Wait after a failed report, doubling up to the interval. */
#define RETRY_MIN_S 1

static const struct conf *rep_conf;
static pthread_t thread;
static bool started;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cond = PTHREAD_COND_INITIALIZER;
static bool stopping;
/* cachereport_now() was called: the next turn sends */
static bool asked;

static const struct conf_tier *tier_named(const struct conf *conf,
					  const char *name)
{
	for (size_t i = 0; i < conf->ntiers; i++)
		if (!strcmp(conf->tiers[i].name, name))
			return &conf->tiers[i];
	return NULL;
}

cJSON *cachereport_entries(const struct conf *conf, const cJSON *ls)
{
	cJSON *arr = cJSON_CreateArray(), *o;
	const cJSON *e;

	if (!arr)
		return NULL;
	cJSON_ArrayForEach(e, ls)
	{
		const cJSON *tier = cJSON_GetObjectItemCaseSensitive(e, "tier");
		const cJSON *key = cJSON_GetObjectItemCaseSensitive(e, "key");
		const struct conf_tier *t;

		if (!cJSON_IsString(tier) || !cJSON_IsString(key) ||
		    !cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(e, "current")))
			continue;
		t = tier_named(conf, tier->valuestring);
		if (!t || t->shared)
			continue;
		o = cJSON_CreateObject();
		if (!o || !cJSON_AddItemToArray(arr, o)) {
			cJSON_Delete(o);
			cJSON_Delete(arr);
			return NULL;
		}
		cJSON_AddStringToObject(o, "key", key->valuestring);
		cJSON_AddStringToObject(o, "tier", tier->valuestring);
		cJSON_AddNumberToObject(
		    o, "bytes",
		    cJSON_GetNumberValue(
			cJSON_GetObjectItemCaseSensitive(e, "bytes")));
		cJSON_AddNumberToObject(
		    o, "last_used",
		    cJSON_GetNumberValue(
			cJSON_GetObjectItemCaseSensitive(e, "last_used")));
	}
	return arr;
}

/* One report. 0, or -1 (logged). */
static int send_report(struct cache *cache)
{
	char err[CONF_ERR_MAX];
	cJSON *ls, *req = NULL, *reply = NULL, *entries;
	int rc = -1;

	ls = cache_ls_json(cache, 0);
	entries = ls ? cachereport_entries(rep_conf, ls) : NULL;
	cJSON_Delete(ls);
	req = cJSON_CreateObject();
	if (!entries || !req) {
		cJSON_Delete(entries);
		goto out;
	}
	cJSON_AddStringToObject(req, "op", "cache_report");
	cJSON_AddStringToObject(req, "node", rep_conf->node_name);
	cJSON_AddItemToObject(req, "entries", entries);
	if (ctl_request(rep_conf, req, &reply, err, sizeof(err)) < 0) {
		log_debug("cache report: %s", err);
		goto out;
	}
	if (!cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(reply, "ok"))) {
		const cJSON *e = cJSON_GetObjectItemCaseSensitive(reply,
								  "error");

		log_warningx("cache report declined: %s",
			     cJSON_IsString(e) ? e->valuestring : "?");
		goto out;
	}
	rc = 0;
out:
	cJSON_Delete(req);
	cJSON_Delete(reply);
	return rc;
}

/* Sleep MS unless stopped or asked for a report; true when stopping. */
static bool nap(unsigned ms)
{
	struct timespec ts;
	bool s;

	deadline_after_ms(CLOCK_REALTIME, ms, &ts);
	pthread_mutex_lock(&mu);
	while (!stopping && !asked)
		if (pthread_cond_timedwait(&cond, &mu, &ts))
			break;
	s = stopping;
	pthread_mutex_unlock(&mu);
	return s;
}

static void *run(void *arg)
{
	struct cache *cache = arg;
	uint64_t sent_gen = 0, gen;
	time_t last = 0, retry_at = 0, now;
	unsigned backoff = RETRY_MIN_S;
	bool ever = false, failing = false, want;

	do {
		now = time(NULL);
		gen = cache_generation(cache);
		pthread_mutex_lock(&mu);
		want = asked;
		asked = false;
		pthread_mutex_unlock(&mu);
		if (want)
			retry_at = 0; /* the service is up: it just asked */
		if ((want || !ever || gen != sent_gen ||
		     now - last >= CACHEREPORT_INTERVAL_S) &&
		    now >= retry_at) {
			if (send_report(cache) == 0) {
				if (failing)
					log_info("cache report: iostagectld "
						 "reached again");
				sent_gen = gen;
				last = now;
				ever = true;
				failing = false;
				backoff = RETRY_MIN_S;
			} else {
				if (!failing)
					log_warningx("cache report: iostagectld "
						     "not reached; retrying");
				failing = true;
				retry_at = now + backoff;
				if (backoff < CACHEREPORT_INTERVAL_S)
					backoff *= 2;
			}
		}
	} while (!nap(POLL_MS));
	return NULL;
}

void cachereport_init(const struct conf *conf, struct cache *cache)
{
	int rc;

	if (!ctl_configured(conf))
		return;
	rep_conf = conf;
	stopping = false;
	asked = false;
	rc = pthread_create(&thread, NULL, run, cache);
	if (rc) {
		log_warningx("cache report: cannot start its thread: %s",
			     strerror(rc));
		return;
	}
	started = true;
}

void cachereport_now(void)
{
	pthread_mutex_lock(&mu);
	asked = true;
	pthread_cond_broadcast(&cond);
	pthread_mutex_unlock(&mu);
}

void cachereport_fini(void)
{
	if (!started)
		return;
	pthread_mutex_lock(&mu);
	stopping = true;
	pthread_cond_broadcast(&cond);
	pthread_mutex_unlock(&mu);
	pthread_join(thread, NULL);
	started = false;
}
