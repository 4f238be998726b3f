/* cachereport.c - this node's cache, reported to iostagectld (see
 * cachereport.h).
 *
 * Why a full snapshot and not events: a report lost, repeated or arriving
 * after a restart of either side is healed by the next one, and the
 * service never has to order events from one node.
 *
 * The thread is a ticker (common/base/ticker.h) turning every POLL_MS: a
 * turn reports when the cache changed, the interval passed or the service
 * asked (a poke), and not before a failed report's retry time.
 */
#define _GNU_SOURCE
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/base/log.h"
#include "common/base/ticker.h"
#include "common/net/ctlclient.h"
#include "daemon/agent.h"
#include "daemon/cluster/cachereport.h"
#include "daemon/staging/cache.h"

/* How often the cache's generation is looked at: a new entry reaches the
 * service within this. */
#define POLL_MS 250
/* Wait after a failed report, doubling up to the interval. */
#define RETRY_MIN_S 1

struct cachereport {
	const struct conf *conf;
	struct cache *cache;
	struct ticker *ticker;
	/* The thread's own: what was sent, when, and the retry. */
	uint64_t sent_gen;
	time_t last, retry_at;
	unsigned backoff;
	bool ever, failing;
};

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
	cJSON_ArrayForEach(e, ls) {
		const cJSON *tier = cJSON_GetObjectItemCaseSensitive(e, "tier");
		const cJSON *key = cJSON_GetObjectItemCaseSensitive(e, "key");
		const struct conf_tier *t;

		if (!cJSON_IsString(tier) || !cJSON_IsString(key) ||
		    !cJSON_IsTrue(
			cJSON_GetObjectItemCaseSensitive(e, "current")))
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
static int send_report(const struct cachereport *cr)
{
	const struct conf *rep_conf = cr->conf;
	char err[CONF_ERR_MAX];
	cJSON *ls, *req = NULL, *reply = NULL, *entries;
	int rc = -1;

	ls = cache_ls_json(cr->cache, 0);
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

/* One turn; POKED: the service asked (or the first turn). */
static void turn(void *arg, bool poked)
{
	struct cachereport *cr = arg;
	time_t now = time(NULL);
	uint64_t gen = cache_generation(cr->cache);

	if (poked)
		cr->retry_at = 0; /* the service is up: it just asked */
	if (!(poked || !cr->ever || gen != cr->sent_gen ||
	      now - cr->last >= CACHEREPORT_INTERVAL_S) ||
	    now < cr->retry_at)
		return;
	if (send_report(cr) == 0) {
		if (cr->failing)
			log_info("cache report: iostagectld reached again");
		cr->sent_gen = gen;
		cr->last = now;
		cr->ever = true;
		cr->failing = false;
		cr->backoff = RETRY_MIN_S;
	} else {
		if (!cr->failing)
			log_warningx("cache report: iostagectld not reached; "
				     "retrying");
		cr->failing = true;
		cr->retry_at = now + cr->backoff;
		if (cr->backoff < CACHEREPORT_INTERVAL_S)
			cr->backoff *= 2;
	}
}

struct cachereport *cachereport_create(struct agent *a)
{
	struct cachereport *cr;

	if (!ctl_configured(a->conf))
		return NULL;
	cr = calloc(1, sizeof(*cr));
	if (!cr) {
		log_warningx("cache report: out of memory");
		return NULL;
	}
	cr->conf = a->conf;
	cr->cache = a->cache;
	cr->backoff = RETRY_MIN_S;
	cr->ticker = ticker_start(POLL_MS, true, turn, cr);
	if (!cr->ticker) {
		log_warning("cache report: cannot start its thread");
		free(cr);
		return NULL;
	}
	return cr;
}

void cachereport_now(struct cachereport *cr)
{
	if (cr)
		ticker_poke(cr->ticker);
}

void cachereport_destroy(struct cachereport *cr)
{
	if (!cr)
		return;
	ticker_stop(cr->ticker);
	free(cr);
}
