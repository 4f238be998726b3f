/* sched_ops.c - the `sched_status` op (see sched_ops.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/net/proto.h"
#include "ctld/sched/hold.h"
#include "ctld/sched/pending.h"
#include "ctld/sched/placement.h"
#include "ctld/sched/sched_ops.h"
#include "ctld/sched/slurmsched.h"

/* Does Slurm show every feature of PREFER ("f1&f2") on NODE? */
static bool node_has_all(const char *node, const char *prefer)
{
	char f[DSFEATURE_LEN + 1];
	const char *p = prefer, *e;

	if (!prefer[0])
		return false;
	while (*p) {
		e = p + strcspn(p, "&");
		if ((size_t)(e - p) != DSFEATURE_LEN)
			return false;
		memcpy(f, p, DSFEATURE_LEN);
		f[DSFEATURE_LEN] = '\0';
		if (!placement_is_published(node, f))
			return false;
		p = *e ? e + 1 : e;
	}
	return true;
}

/* The nodes a job's --prefer points at now (a feature name says nothing
 * to a user): an array of names, into O. */
static void add_prefer_nodes(cJSON *o, const char *prefer)
{
	cJSON *arr = cJSON_AddArrayToObject(o, "prefer_nodes");
	size_t n = 0;
	char **names = arr && prefer[0] ? placement_nodes(&n) : NULL;

	for (size_t i = 0; i < n; i++) {
		if (node_has_all(names[i], prefer))
			cJSON_AddItemToArray(arr, cJSON_CreateString(names[i]));
		free(names[i]);
	}
	free(names);
}

/* One known job: what it prefers, when and where Slurm plans it, what
 * was pre-staged where. */
static cJSON *job_json(const struct pending_job *j)
{
	cJSON *o = cJSON_CreateObject(), *nodes, *n, *dss, *d;
	time_t until;

	if (!o)
		return NULL;
	cJSON_AddNumberToObject(o, "job", j->job);
	cJSON_AddNumberToObject(o, "uid", j->uid);
	cJSON_AddStringToObject(o, "user", j->user);
	cJSON_AddStringToObject(o, "prefer", j->prefer);
	add_prefer_nodes(o, j->prefer);
	cJSON_AddNumberToObject(o, "start_time", (double)j->start_time);
	cJSON_AddStringToObject(o, "sched_nodes", j->sched_nodes);
	cJSON_AddBoolToObject(o, "started", j->started);
	/* PlacementHold=: it waits for its preferred nodes until then */
	if (!j->started && hold_until(j->job, slurmsched_hold_s(), &until))
		cJSON_AddNumberToObject(o, "held_until", (double)until);
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
	struct hold_counts hc;
	cJSON *reply, *p, *jobs;
	bool list = !cJSON_IsFalse(
	    cJSON_GetObjectItemCaseSensitive(req, "jobs"));
	uint32_t *ids;
	size_t n, waiting = 0;

	placement_counts(&pc);
	pending_counts(&sc);
	reply = proto_reply_ok();
	if (!reply)
		return NULL;
	p = cJSON_AddObjectToObject(reply, "placement");
	if (!p)
		goto fail;
	cJSON_AddBoolToObject(p, "enabled", slurmsched_placement_on());
	if (!slurmsched_placement_on())
		cJSON_AddStringToObject(
		    p, "off_reason",
		    !slurmsched_prefer_safe()
			? "SchedulerParameters lacks ignore_prefer_validation"
			: "Placement=no in iostage.conf");
	cJSON_AddNumberToObject(p, "nodes_reporting", pc.nodes);
	cJSON_AddNumberToObject(p, "reports", (double)pc.reports);
	cJSON_AddNumberToObject(p, "queries", (double)pc.queries);
	cJSON_AddNumberToObject(p, "preferred", (double)pc.preferred);
	cJSON_AddNumberToObject(p, "honoured", (double)pc.honoured);
	cJSON_AddNumberToObject(p, "not_honoured", (double)pc.not_honoured);
	hold_counts(&hc);
	cJSON_AddNumberToObject(p, "hold_s", (double)slurmsched_hold_s());
	cJSON_AddNumberToObject(p, "held", (double)hc.held);
	cJSON_AddNumberToObject(p, "held_started", (double)hc.started_held);
	cJSON_AddNumberToObject(p, "hold_released", (double)hc.released);
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
	cJSON_AddNumberToObject(p, "late", (double)sc.late);
	cJSON_AddNumberToObject(p, "missed", (double)sc.missed);
	cJSON_AddNumberToObject(p, "seconds_saved", sc.seconds_saved);
	/* The caller's jobs (root and AdminGroup: all); not yet confirmed
	 * by Slurm: shown to whoever noted them only. "jobs":false (the
	 * /metrics page): the counters only. */
	jobs = cJSON_AddArrayToObject(reply, "jobs");
	if (!jobs)
		goto fail;
	ids = pending_ids(&n);
	for (size_t i = 0; i < n; i++) {
		struct pending_job j;
		cJSON *o;

		if (pending_get(ids[i], &j) < 0 || j.started)
			continue;
		waiting++;
		if ((!c->read_all && j.uid != c->uid) || !list)
			continue;
		o = job_json(&j);
		if (o && !cJSON_AddItemToArray(jobs, o))
			cJSON_Delete(o);
	}
	free(ids);
	/* every user's, as the counters: a number, no job */
	cJSON_AddNumberToObject(p, "pending_jobs", (double)waiting);
	return reply;
fail:
	cJSON_Delete(reply);
	return proto_reply_error("sched_status: out of memory");
}
