/* sched_ops.c - the `sched_status` op (see sched_ops.h). */
#include <stdio.h>
#include <stdlib.h>

#include "common/proto.h"
#include "ctld/pending.h"
#include "ctld/placement.h"
#include "ctld/sched_ops.h"
#include "ctld/slurmsched.h"

/* One known job: what it prefers, when and where Slurm plans it, what
 * was pre-staged where. */
static cJSON *job_json(const struct pending_job *j)
{
	cJSON *o = cJSON_CreateObject(), *nodes, *n, *dss, *d;

	if (!o)
		return NULL;
	cJSON_AddNumberToObject(o, "job", j->job);
	cJSON_AddNumberToObject(o, "uid", j->uid);
	cJSON_AddStringToObject(o, "user", j->user);
	cJSON_AddStringToObject(o, "prefer", j->prefer);
	cJSON_AddNumberToObject(o, "start_time", (double)j->start_time);
	cJSON_AddStringToObject(o, "sched_nodes", j->sched_nodes);
	cJSON_AddBoolToObject(o, "started", j->started);
	nodes = cJSON_AddArrayToObject(o, "nodes");
	for (size_t k = 0; nodes && k < j->nnodes; k++) {
		n = cJSON_CreateObject();
		if (!n || !cJSON_AddItemToArray(nodes, n)) {
			cJSON_Delete(n);
			break;
		}
		cJSON_AddStringToObject(n, "node", j->nodes[k].name);
		dss = cJSON_AddArrayToObject(n, "datasets");
		for (size_t i = 0; dss && i < j->nds; i++) {
			const struct pending_stage *st = &j->nodes[k].ds[i];

			d = cJSON_CreateObject();
			if (!d || !cJSON_AddItemToArray(dss, d)) {
				cJSON_Delete(d);
				break;
			}
			cJSON_AddStringToObject(d, "path", j->ds[i].path);
			cJSON_AddStringToObject(d, "tier", j->ds[i].tier);
			cJSON_AddStringToObject(d, "state",
						st->state == PENDING_STAGED &&
							!st->id
						    ? "cached already"
						    : pending_state_name(
							  st->state));
			if (st->state == PENDING_STAGED && st->id)
				cJSON_AddNumberToObject(d, "seconds",
							st->seconds);
			cJSON_AddStringToObject(d, "error", st->error);
		}
	}
	return o;
}

cJSON *sched_op_status(const struct ctld_caller *c, const cJSON *req)
{
	struct placement_counts pc;
	struct pending_counts sc;
	cJSON *reply, *p, *jobs;
	uint32_t *ids;
	size_t n;

	(void)req;
	placement_counts(&pc);
	pending_counts(&sc);
	reply = proto_reply_ok();
	if (!reply)
		return NULL;
	p = cJSON_AddObjectToObject(reply, "placement");
	if (!p)
		goto fail;
	cJSON_AddBoolToObject(p, "enabled", slurmsched_prefer_safe());
	cJSON_AddNumberToObject(p, "nodes_reporting", pc.nodes);
	cJSON_AddNumberToObject(p, "reports", (double)pc.reports);
	cJSON_AddNumberToObject(p, "queries", (double)pc.queries);
	cJSON_AddNumberToObject(p, "preferred", (double)pc.preferred);
	cJSON_AddNumberToObject(p, "honoured", (double)pc.honoured);
	cJSON_AddNumberToObject(p, "not_honoured", (double)pc.not_honoured);
	cJSON_AddNumberToObject(p, "feature_updates", (double)pc.publishes);
	cJSON_AddNumberToObject(p, "feature_update_errors",
				(double)pc.publish_errors);
	p = cJSON_AddObjectToObject(reply, "prestage");
	if (!p)
		goto fail;
	cJSON_AddNumberToObject(p, "jobs_noted", (double)sc.jobs_noted);
	cJSON_AddNumberToObject(p, "requests", (double)sc.requests);
	cJSON_AddNumberToObject(p, "staged", (double)sc.staged);
	cJSON_AddNumberToObject(p, "failed", (double)sc.failed);
	cJSON_AddNumberToObject(p, "bytes", (double)sc.bytes);
	cJSON_AddNumberToObject(p, "hits", (double)sc.hits);
	cJSON_AddNumberToObject(p, "missed", (double)sc.missed);
	cJSON_AddNumberToObject(p, "seconds_saved", sc.seconds_saved);
	/* The caller's jobs (root and AdminGroup: all); not yet confirmed
	 * by Slurm: shown to whoever noted them only. */
	jobs = cJSON_AddArrayToObject(reply, "jobs");
	if (!jobs)
		goto fail;
	ids = pending_ids(&n);
	for (size_t i = 0; i < n; i++) {
		struct pending_job j;
		cJSON *o;

		if (pending_get(ids[i], &j) < 0 ||
		    (!c->read_all && j.uid != c->uid) || j.started)
			continue;
		o = job_json(&j);
		if (o && !cJSON_AddItemToArray(jobs, o))
			cJSON_Delete(o);
	}
	free(ids);
	return reply;
fail:
	cJSON_Delete(reply);
	return proto_reply_error("sched_status: out of memory");
}
