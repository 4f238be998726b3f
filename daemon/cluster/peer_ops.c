/* peer_ops.c - what one node's iostaged asks another's (daemon/cluster/peer.h).
 *
 * Every op here is served to root's MUNGE credential only (peer.c checks
 * it before dispatch): the asking node has already checked its own user.
 *   peer_ping                     -> node version
 *   stage_state    job since_us?  -> node state("staging"|"staged"|
 *                                    "failed"|"finished"|"unknown") error
 *                                    failed_node? (finished: the node
 *                                    whose staging failed the job)
 *                                    (this node's own staging of job J;
 *                                    "finished": its Epilog ran here at
 *                                    or after SINCE_US, when the asker
 *                                    began staging it; without it, never)
 *   telemetry_part job            -> record (this node's part, live or
 *                                    finished)
 *   part_put       job node record -> (the head keeps NODE's closed part)
 *   history_get    job            -> record (this node's history: the
 *                                    head's merged record)
 *   prestage       user path tier verify? for_job
 *                                 -> id (iostagectld: stage a pending
 *                                    job's dataset into this node's cache
 *                                    before the job starts; its progress
 *                                    is stage_state of job ID)
 *   cache_report                  -> (iostagectld, just started: send it
 *                                    this node's cache report now rather
 *                                    than at the next interval)
 *   stage_entry    job dataset    -> state tier entry (how this node
 *                                    staged dataset I of job J: the head
 *                                    of a job, asked by its other nodes;
 *                                    daemon/cluster/fill.h)
 *   entry_current  tier key       -> version (this node's current
 *                                    version of an entry, for a node
 *                                    that fills from it)
 *   tier_space     tier           -> free (what a spread dataset could
 *                                    take on this node's tier; the head
 *                                    weighs the nodes by it)
 *   spread_plan    job dataset    -> state plan (the head's plan of a
 *                                    spread dataset, for the job's other
 *                                    nodes; daemon/cluster/spreadplan.h)
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <cJSON.h>

#include "common/base/log.h"
#include "common/history/history.h"
#include "common/net/proto.h"
#include "daemon/agent.h"
#include "daemon/cluster/cachereport.h"
#include "daemon/cluster/fill.h"
#include "daemon/cluster/parts.h"
#include "daemon/cluster/peer.h"
#include "daemon/cluster/spreadplan.h"
#include "daemon/jobs.h"
#include "daemon/ops.h"
#include "daemon/telemetry/telemetry.h"

static cJSON *op_peer_ping(struct agent *a, const struct peernet_peer *p,
			   const cJSON *req)
{
	cJSON *r = proto_reply_ok();

	(void)p;
	(void)req;
	if (r) {
		cJSON_AddStringToObject(r, "node", peer_self(a->peer));
		cJSON_AddStringToObject(r, "version", IOSTAGE_VERSION);
	}
	return r;
}

static cJSON *op_stage_state(struct agent *a, const struct peernet_peer *p,
			     const cJSON *req)
{
	char err[CONF_ERR_MAX], failed_node[CONF_NODE_MAX];
	struct job_view v;
	struct job *job;
	uint32_t id;
	cJSON *r;

	(void)p;
	if (proto_get_job_id(req, &id, err, sizeof(err)) < 0)
		return proto_reply_error("%s", err);
	r = proto_reply_ok();
	if (!r)
		return NULL;
	cJSON_AddStringToObject(r, "node", peer_self(a->peer));
	job = jobs_get(a->jobs, id);
	if (!job) {
		/* Over here (the job ended while the asker still stages: this
		 * node's Prolog failed and its script ran), or its Prolog has
		 * not asked yet. */
		const cJSON *since =
		    cJSON_GetObjectItemCaseSensitive(req, "since_us");
		struct jobs_finished f;
		/* a time out of range is no time (and would not convert) */
		bool finished = cJSON_IsNumber(since) &&
				since->valuedouble >= 0 &&
				since->valuedouble <= 1e18 &&
				jobs_finished_here(a->jobs, id,
						   (int64_t)since->valuedouble,
						   &f);

		cJSON_AddStringToObject(r, "state",
					finished ? "finished" : "unknown");
		/* what failed it, if staging did: the asker names that node
		 * and reason rather than "ended there" (jobwide.c) */
		if (finished && f.error[0]) {
			cJSON_AddStringToObject(r, "failed_node",
						f.failed_node[0]
						    ? f.failed_node
						    : peer_self(a->peer));
			cJSON_AddStringToObject(r, "error", f.error);
		}
		return r;
	}
	jobs_view(job, &v);
	jobs_failed_node(job, failed_node, sizeof(failed_node));
	/* how long it took: iostagectld counts it as time saved when the
	 * job it was pre-staged for starts here */
	if (v.state == JOB_STAGED) {
		cJSON_AddNumberToObject(r, "staged_s", job->staged_s);
		/* what it copied from the PFS (0 if it found the data
		 * cached): the service's pre-staged bytes */
		cJSON_AddNumberToObject(r, "copied_bytes", (double)v.bytes);
	}
	jobs_put(job);
	if (v.state == JOB_FAILED && failed_node[0] &&
	    strcmp(failed_node, peer_self(a->peer))) {
		/* Staged here, then failed job-wide because of another node:
		 * this node's own staging is what the asker wants. Were it
		 * told "failed", it would name this node instead of the one
		 * that failed. */
		cJSON_AddStringToObject(r, "state", "staged");
		return r;
	}
	cJSON_AddStringToObject(r, "state", jobs_state_name(v.state));
	if (v.error[0])
		cJSON_AddStringToObject(r, "error", v.error);
	return r;
}

static cJSON *op_telemetry_part(struct agent *a, const struct peernet_peer *p,
				const cJSON *req)
{
	char err[CONF_ERR_MAX];
	uint32_t id;
	cJSON *rec, *r;

	(void)p;
	if (proto_get_job_id(req, &id, err, sizeof(err)) < 0)
		return proto_reply_error("%s", err);
	rec = telemetry_record(a->telemetry, id, 0, err, sizeof(err));
	if (!rec)
		return proto_reply_error("%s", err);
	r = proto_reply_ok();
	if (!r) {
		cJSON_Delete(rec);
		return NULL;
	}
	cJSON_AddItemToObject(r, "record", rec);
	return r;
}

static cJSON *op_part_put(struct agent *a, const struct peernet_peer *p,
			  const cJSON *req)
{
	const cJSON *rec = cJSON_GetObjectItemCaseSensitive(req, "record");
	char err[CONF_ERR_MAX];
	const char *node;
	uint32_t id;

	if (proto_get_job_id(req, &id, err, sizeof(err)) < 0 ||
	    proto_get_string(req, "node", &node, err, sizeof(err)) < 0 ||
	    parts_put(a->parts, id, node, rec, err, sizeof(err)) < 0) {
		char shown[CONF_ERR_MAX];

		log_warningx("peer %s: part_put refused: %s", p->addr,
			     ops_printable(err, shown, sizeof(shown)));
		return proto_reply_error("part_put refused: %s", err);
	}
	return proto_reply_ok();
}

static cJSON *op_peer_history_get(struct agent *a, const struct peernet_peer *p,
				  const cJSON *req)
{
	char err[CONF_ERR_MAX];
	struct history *h;
	uint32_t id;
	cJSON *rec, *r;

	(void)a;
	(void)p;
	if (proto_get_job_id(req, &id, err, sizeof(err)) < 0)
		return proto_reply_error("%s", err);
	h = history_db(err, sizeof(err));
	if (!h)
		return proto_reply_error("%s", err);
	rec = history_get(h, id, err, sizeof(err));
	if (!rec)
		return proto_reply_error("%s", errno == ENOENT
						   ? "not in the history"
						   : err);
	r = proto_reply_ok();
	if (!r) {
		cJSON_Delete(rec);
		return NULL;
	}
	cJSON_AddItemToObject(r, "record", rec);
	return r;
}

/* Pre-staging for a pending job (ctld/sched/slurmsched.c): the same as root's
 * `iostage stage --user`, so the copy runs as that user, within the
 * tier's capacity and evicting only unpinned entries that one job used
 * (a prediction: cache_reserve's speculative). */
static cJSON *op_peer_prestage(struct agent *a, const struct peernet_peer *p,
			       const cJSON *req)
{
	const cJSON *j = cJSON_GetObjectItemCaseSensitive(req, "for_job");
	cJSON *r;

	/* ops_prestage_root, which main() registered (peer_set_prestage) */
	r = peer_run_prestage(a->peer, req);
	if (!r)
		return proto_reply_error("prestage: not served by this node");
	if (cJSON_IsNumber(j))
		log_info("prestage for pending job %.0f asked by %s: %s",
			 j->valuedouble, p->addr,
			 cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(r, "ok"))
			     ? "started"
			     : "refused");
	return r;
}

/* The report itself goes the usual way (cachereport.c): this only wakes
 * its thread, so the reply never waits on the service. */
static cJSON *op_peer_cache_report(struct agent *a,
				   const struct peernet_peer *p,
				   const cJSON *req)
{
	(void)req;
	log_info("cache report asked by %s", p->addr);
	cachereport_now(a->cachereport);
	return proto_reply_ok();
}

const struct peer_op peer_ops[] = {
	{ "peer_ping", op_peer_ping },
	{ "stage_state", op_stage_state },
	{ "telemetry_part", op_telemetry_part },
	{ "part_put", op_part_put },
	{ "history_get", op_peer_history_get },
	{ "prestage", op_peer_prestage },
	{ "cache_report", op_peer_cache_report },
	{ "stage_entry", fill_op_stage_entry },
	{ "entry_current", fill_op_entry_current },
	{ "tier_space", spreadplan_op_tier_space },
	{ "spread_plan", spreadplan_op_plan },
	{ NULL, NULL },
};
