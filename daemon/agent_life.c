/* agent_life.c - a node agent's parts made and freed in their order
 * (agent_life.h). */
#include <stdio.h>
#include <unistd.h>

#include "common/config/conf.h"
#include "daemon/agent_life.h"
#include "daemon/cluster/parts.h"
#include "daemon/jobs.h"
#include "daemon/staging/cache.h"
#include "daemon/staging/drain.h"
#include "daemon/staging/spread_view.h"
#include "daemon/staging/stage.h"
#include "daemon/staging/tiers.h"
#include "daemon/telemetry/stats.h"
#include "daemon/telemetry/telemetry.h"

int agent_create(struct agent *a, uid_t owner, char *err, size_t errlen)
{
	struct cache_params params;

	a->owner = owner;
	a->tiers = tiers_create(a, owner, err, errlen);
	if (!a->tiers)
		goto fail;
	cache_params_tiers(a->tiers, a->conf, &params);
	if (owner != 0) { /* a test's: its own uid and group */
		params.owner_uid = owner;
		params.owner_gid = getegid();
	}
	a->cache = cache_create(&params, err, errlen);
	if (!a->cache)
		goto fail;
	a->stage = stage_create(a, err, errlen);
	if (!a->stage)
		goto fail;
	a->stats = stats_create();
	if (!a->stats) {
		snprintf(err, errlen, "stats: out of memory");
		goto fail;
	}
	return 0;
fail:
	agent_destroy(a);
	return -1;
}

int agent_load(struct agent *a, char *err, size_t errlen)
{
	a->jobs = jobs_create(a, a->owner, err, errlen);
	if (!a->jobs)
		return -1;
	a->drain = drain_create(a, err, errlen);
	if (!a->drain || jobs_load(a->jobs, err, errlen) < 0)
		return -1;
	tiers_detach_stale(a->tiers, jobs_known_arg, a->jobs);
	spread_view_stale(a, jobs_known_arg, a->jobs);
	if (cache_recover(a->cache, jobs_known_arg, a->jobs, err, errlen) < 0)
		return -1;
	a->telemetry = telemetry_create(a, a->conf, err, errlen);
	if (!a->telemetry)
		return -1;
	a->parts = parts_create(a, err, errlen);
	return a->parts ? 0 : -1;
}

void agent_destroy(struct agent *a)
{
	if (!a)
		return;
	parts_destroy(a->parts);
	a->parts = NULL;
	/* after the connections: they may hold records */
	telemetry_destroy(a->telemetry);
	a->telemetry = NULL;
	/* the drain gives the table's hooks back before the table goes */
	drain_destroy(a->drain);
	a->drain = NULL;
	jobs_destroy(a->jobs);
	a->jobs = NULL;
	stats_destroy(a->stats);
	a->stats = NULL;
	stage_destroy(a->stage);
	a->stage = NULL;
	cache_destroy(a->cache);
	a->cache = NULL;
	tiers_destroy(a->tiers);
	a->tiers = NULL;
}
