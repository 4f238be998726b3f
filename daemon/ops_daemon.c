/* ops_daemon.c - the daemon's own ops: ping (is it there, which
 * version) and status (the daemon, its tiers, the caller's jobs: every
 * job for root). */
#include <stdio.h>
#include <time.h>
#include <unistd.h>

#include <cJSON.h>

#include "common/config/conf.h"
#include "common/net/proto.h"
#include "daemon/agent.h"
#include "daemon/cluster/forward.h"
#include "daemon/cluster/peer.h"
#include "daemon/cluster/peer_fetch.h"
#include "daemon/jobs.h"
#include "daemon/ops.h"
#include "daemon/server.h"
#include "daemon/staging/cache.h"
#include "daemon/staging/tiers.h"

static cJSON *op_ping(struct agent *a, const struct ops_caller *c,
		      const cJSON *req)
{
	cJSON *r = proto_reply_ok();

	(void)a;
	(void)c;
	(void)req;
	if (r) {
		cJSON_AddStringToObject(r, "version", IOSTAGE_VERSION);
		cJSON_AddNumberToObject(r, "pid", getpid());
	}
	return r;
}

/* What fetch sessions took from this node's cache (sent to other
 * nodes' stage workers). */
static void add_peer_fetch(cJSON *d, const struct agent *a)
{
	struct peer_fetch_counts c;
	cJSON *o = cJSON_AddObjectToObject(d, "peer_fetch");

	if (!o)
		return;
	peer_fetch_counts(peer_fetcher(a->peer), &c);
	cJSON_AddNumberToObject(o, "active", c.active);
	cJSON_AddNumberToObject(o, "sessions", (double)c.sessions);
	cJSON_AddNumberToObject(o, "refused", (double)c.refused);
	cJSON_AddNumberToObject(o, "served_files", (double)c.files);
	cJSON_AddNumberToObject(o, "served_bytes", (double)c.bytes);
}

static cJSON *op_status(struct agent *a, const struct ops_caller *c,
			const cJSON *req)
{
	unsigned counts[CONF_MAX_TIERS];
	cJSON *r, *d, *tiers, *jobs;
	size_t i;

	(void)req;
	jobs_prune_prestage(a->jobs);
	r = proto_reply_ok();
	if (!r)
		return NULL;
	d = cJSON_AddObjectToObject(r, "daemon");
	if (d) {
		cJSON_AddStringToObject(d, "version", IOSTAGE_VERSION);
		cJSON_AddNumberToObject(d, "pid", getpid());
		cJSON_AddNumberToObject(d, "uptime_s",
					(double)(time(NULL) -
						 server_started(a->server)));
		cJSON_AddStringToObject(d, "config", a->conf_path);
		if (forward_enabled(
			a->forward)) /* records not yet on iostagectld */
			cJSON_AddNumberToObject(d, "outbox",
						(double)forward_pending(
						    a->forward));
		add_peer_fetch(d, a);
	}
	jobs_tier_counts(a->jobs, counts);
	tiers = cJSON_AddArrayToObject(r, "tiers");
	for (i = 0; tiers && i < a->conf->ntiers; i++) {
		const struct conf_tier *t = &a->conf->tiers[i];
		struct tiers_usage u = { 0, 0, 0, 0, 0 };
		cJSON *o = cJSON_CreateObject();
		unsigned entries = 0;

		if (!o)
			break;
		(void)tiers_usage(a->tiers, (int)i, &u);
		cJSON_AddStringToObject(o, "name", t->name);
		cJSON_AddStringToObject(o, "path", t->path);
		cJSON_AddStringToObject(o, "medium",
					conf_medium_name(t->medium));
		cJSON_AddBoolToObject(o, "shared", t->shared);
		cJSON_AddNumberToObject(o, "capacity_bytes",
					(double)u.capacity);
		cJSON_AddNumberToObject(o, "used_bytes", (double)u.used);
		cJSON_AddNumberToObject(o, "free_bytes", (double)u.free);
		cJSON_AddNumberToObject(o, "jobs", counts[i]);
		cache_tier_counts(a->cache, (int)i, &entries, NULL);
		cJSON_AddNumberToObject(o, "cache_entries", entries);
		cJSON_AddNumberToObject(o, "cache_bytes", (double)u.cache);
		cJSON_AddNumberToObject(o, "reserved_bytes",
					(double)u.reserved);
		cJSON_AddItemToArray(tiers, o);
	}
	jobs = jobs_status_json(a->jobs, c->uid);
	if (!jobs) {
		cJSON_Delete(r);
		return proto_reply_error("out of memory");
	}
	cJSON_AddItemToObject(r, "jobs", jobs);
	return r;
}

op_table ops_daemon_table = {
	{ "ping", op_ping, false },
	{ "status", op_status, false },
	{ NULL, NULL, false },
};
