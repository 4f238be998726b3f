/* spreadplan.c - the head decides a spread dataset's plan; the job's other
 * nodes ask it (see spreadplan.h). */
#define _GNU_SOURCE
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cJSON.h>

#include "common/base/deadline.h"
#include "common/base/log.h"
#include "common/net/proto.h"
#include "common/sched/spread.h"
#include "daemon/agent.h"
#include "daemon/cluster/peer.h"
#include "daemon/cluster/spreadplan.h"
#include "daemon/jobs.h"
#include "daemon/staging/tiers.h"

static void sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

/* What a spread dataset could take on tier T here: its free space plus
 * what cache entries hold (they are evicted for it if need be; counting
 * them keeps the weights, and so the plan, the same from one job to the
 * next while the parts stay cached). */
uint64_t spreadplan_room(struct agent *a, int t)
{
	struct tiers_usage u;

	if (!a->tiers || t < 0 || tiers_usage(a->tiers, t, &u) < 0)
		return 0;
	/* Never more than the tier: the cache's figure is the sum of its
	 * versions' sizes, and a fill by parts' share counts again in the
	 * copy that links its files (a part sized to that sum did not fit,
	 * "tier 'small' full", after a fill by parts on the same tier). */
	return u.free + u.cache < u.capacity ? u.free + u.cache : u.capacity;
}

const char *spreadplan_self(const struct agent *a)
{
	const char *self = peer_self(a->peer);

	return *self ? self : a->conf->node_name;
}

/* The head's decision: every node of the job weighed by its room. */
static int decide(struct agent *a, struct job *job, int t, const char *tier,
		  char *ret, size_t len, char *err, size_t errlen)
{
	struct spread_plan *plan = calloc(1, sizeof(*plan));
	size_t n = job->nnodes > 1 && peer_enabled(a->peer) ? job->nnodes : 1;
	cJSON **replies = calloc(n, sizeof(*replies));
	char(*errs)[256] = calloc(n, sizeof(*errs));
	int *unreachable = calloc(n, sizeof(*unreachable));
	const char *self = spreadplan_self(a);
	cJSON *req = cJSON_CreateObject();
	int r = -1;

	if (!plan || !replies || !errs || !unreachable || !req ||
	    !cJSON_AddStringToObject(req, "op", "tier_space") ||
	    !cJSON_AddStringToObject(req, "tier", tier)) {
		snprintf(err, errlen, "out of memory");
		goto out;
	}
	if (n > SPREAD_NODES_MAX) {
		snprintf(err, errlen,
			 "%zu nodes: a dataset is spread over at most %d", n,
			 SPREAD_NODES_MAX);
		goto out;
	}
	if (n > 1)
		peer_call_many(a->peer, (const char *const *)job->nodes, n, req,
			       SPREADPLAN_ASK_MS, replies, errs, unreachable);
	plan->n = (unsigned)n;
	for (size_t k = 0; k < n; k++) {
		const char *name = n > 1 ? job->nodes[k] : self;
		uint64_t room;

		snprintf(plan->nodes[k].name, sizeof(plan->nodes[k].name), "%s",
			 name);
		if (!strcmp(name, self))
			room = spreadplan_room(a, t);
		else if (replies[k] &&
			 cJSON_IsTrue(
			     cJSON_GetObjectItemCaseSensitive(replies[k],
							      "ok")))
			room = proto_u64(replies[k], "free");
		else {
			log_warningx("job %u: node %s cannot say how much "
				     "tier '%s' holds (%s): it gets (almost) "
				     "no part of the spread dataset",
				     job->id, name, tier, errs[k]);
			room = 0;
		}
		plan->nodes[k].weight = spread_weight_of_bytes(room);
	}
	if (spread_plan_format(plan, ret, len) < 0) {
		snprintf(err, errlen, "the spread plan is too long");
		goto out;
	}
	r = 0;
out:
	for (size_t k = 0; replies && k < n; k++)
		cJSON_Delete(replies[k]);
	cJSON_Delete(req);
	free(replies);
	free(errs);
	free(unreachable);
	free(plan);
	return r;
}

/* Ask the head until it has decided. */
static int ask_head(struct agent *a, struct job *job, size_t i, char *ret,
		    size_t len, fill_stop_fn stop, void *arg, char *err,
		    size_t errlen)
{
	const char *head = job->nodes[0];
	long long t0 = deadline_now_ms();
	cJSON *req = cJSON_CreateObject();
	char e[256];
	int r = -1;

	if (!req || !cJSON_AddStringToObject(req, "op", "spread_plan") ||
	    !cJSON_AddNumberToObject(req, "job", job->id) ||
	    !cJSON_AddNumberToObject(req, "dataset", (double)i)) {
		snprintf(err, errlen, "out of memory");
		goto out;
	}
	for (;;) {
		cJSON *rep = peer_call(a->peer, head, req, SPREADPLAN_ASK_MS,
				       NULL, e, sizeof(e));
		const cJSON *st = cJSON_GetObjectItemCaseSensitive(rep,
								   "state");
		const cJSON *pl = cJSON_GetObjectItemCaseSensitive(rep, "plan");
		bool answered = rep != NULL;
		char state[16];

		/* Copied: REP goes before the state is looked at again. */
		snprintf(state, sizeof(state), "%s",
			 cJSON_IsString(st) ? st->valuestring : "");

		if (rep &&
		    cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(rep, "ok")) &&
		    !strcmp(state, "ready") && cJSON_IsString(pl)) {
			int n = snprintf(ret, len, "%s", pl->valuestring);

			cJSON_Delete(rep);
			if (n < 0 || (size_t)n >= len) {
				snprintf(err, errlen,
					 "the head %s sent a plan too long",
					 head);
				goto out;
			}
			r = 0;
			goto out;
		}
		cJSON_Delete(rep);
		if (!strcmp(state, "failed")) {
			snprintf(err, errlen,
				 "the job's head %s failed the spread "
				 "dataset before deciding where its files go",
				 head);
			goto out;
		}
		if (strcmp(state, "planning") &&
		    deadline_now_ms() - t0 > SPREADPLAN_HEAD_UNKNOWN_MS) {
			snprintf(err, errlen,
				 "the job's head %s gave no spread plan in "
				 "%d s (%s)",
				 head, SPREADPLAN_HEAD_UNKNOWN_MS / 1000,
				 answered ? "it does not know the job" : e);
			goto out;
		}
		if (stop(arg, err, errlen))
			goto out;
		sleep_ms(SPREADPLAN_POLL_MS);
	}
out:
	cJSON_Delete(req);
	return r;
}

int spreadplan_get(struct agent *a, struct job *job, size_t i, const char *tier,
		   fill_stop_fn stop, void *arg, char *ret, size_t len,
		   char *err, size_t errlen)
{
	struct spread_plan check;
	char why[256];
	bool alone = job->nnodes <= 1 || !peer_enabled(a->peer);
	int t = a->tiers ? tiers_index(a->tiers, tier) : -1;

	if (jobs_spread_plan(job, i, ret, len) == 1)
		return 0;
	if (alone || !strcmp(job->nodes[0], spreadplan_self(a))) {
		if (decide(a, job, t, tier, ret, len, err, errlen) < 0)
			return -1;
		if (jobs_set_spread_plan(job, i, ret) < 0) {
			snprintf(err, errlen, "out of memory");
			return -1;
		}
		log_info("job %u: dataset %zu: spread over %s", job->id, i,
			 ret);
	} else if (ask_head(a, job, i, ret, len, stop, arg, err, errlen) < 0) {
		return -1;
	} else if (jobs_set_spread_plan(job, i, ret) < 0) {
		/* kept for this node's record, and for a second attempt
		 * (the user's own entry after the public one) */
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	/* The head's plan must name us, or our view would serve nothing. */
	if (spread_plan_parse(ret, &check, why, sizeof(why)) < 0) {
		snprintf(err, errlen, "%s", why);
		return -1;
	}
	if (spread_plan_find(&check, spreadplan_self(a)) < 0) {
		snprintf(err, errlen,
			 "the spread plan (%s) does not name this "
			 "node (%s)",
			 ret, spreadplan_self(a));
		return -1;
	}
	return 0;
}

/* --- the ops other nodes ask ------------------------------------------- */

cJSON *spreadplan_op_tier_space(struct agent *a, const struct peernet_peer *p,
				const cJSON *req)
{
	char err[CONF_ERR_MAX];
	const char *tier;
	int t;
	cJSON *r;

	(void)p;
	if (proto_get_string(req, "tier", &tier, err, sizeof(err)) < 0)
		return proto_reply_error("tier_space: %s", err);
	t = a->tiers ? tiers_index(a->tiers, tier) : -1;
	if (t < 0 || a->conf->tiers[t].shared)
		return proto_reply_error("tier_space: no node-local tier "
					 "'%.*s' here",
					 CONF_NAME_MAX, tier);
	r = proto_reply_ok();
	if (r && !cJSON_AddNumberToObject(r, "free",
					  (double)spreadplan_room(a, t))) {
		cJSON_Delete(r);
		r = NULL;
	}
	return r;
}

cJSON *spreadplan_op_plan(struct agent *a, const struct peernet_peer *p,
			  const cJSON *req)
{
	char err[CONF_ERR_MAX], entry[JOBS_ENTRY_MAX];
	char *plan = NULL;
	const char *state = "unknown";
	struct job_view v;
	struct job *job;
	uint32_t id;
	size_t i;
	cJSON *r;

	(void)p;
	if (peer_job_dataset(req, "spread_plan", &id, &i, err, sizeof(err)) < 0)
		return proto_reply_error("%s", err);
	job = jobs_get(a->jobs, id);
	if (job) {
		plan = malloc(SPREAD_SPEC_MAX);
		jobs_view(job, &v);
		if (plan &&
		    jobs_spread_plan(job, i, plan, SPREAD_SPEC_MAX) == 1)
			state = "ready";
		else if (jobs_dataset_entry(job, i, entry, sizeof(entry)) ==
			     JOB_DS_FAILED ||
			 v.state != JOB_STAGING)
			state = "failed";
		else
			state = "planning";
		jobs_put(job);
	}
	r = proto_reply_ok();
	if (r && (!cJSON_AddStringToObject(r, "state", state) ||
		  (!strcmp(state, "ready") &&
		   !cJSON_AddStringToObject(r, "plan", plan)))) {
		cJSON_Delete(r);
		r = NULL;
	}
	free(plan);
	return r;
}
