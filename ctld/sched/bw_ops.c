/* bw_ops.c - the stage-bandwidth budget's ops (see bw_ops.h).
 *
 * One table for the cluster under one lock: every node asks about once a
 * second while it copies, so the lock is never held for long.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <time.h>

#include "common/base/log.h"
#include "common/net/proto.h"
#include "common/sched/bwshare.h"
#include "ctld/sched/bw_ops.h"

static pthread_mutex_t bw_lock = PTHREAD_MUTEX_INITIALIZER;
static struct bwshare bw;

void ctld_bw_init(const struct conf *conf)
{
	pthread_mutex_lock(&bw_lock);
	bwshare_fini(&bw);
	bwshare_init(&bw, conf->stage_bandwidth, BWSHARE_LEASE_S);
	pthread_mutex_unlock(&bw_lock);
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

cJSON *ctld_op_stage_bw(const struct ctld_caller *c, const cJSON *req)
{
	const cJSON *node = cJSON_GetObjectItemCaseSensitive(req, "node");
	const cJSON *want = cJSON_GetObjectItemCaseSensitive(req, "want");
	const cJSON *weight = cJSON_GetObjectItemCaseSensitive(req, "weight");
	uint64_t grant = 0, budget;
	double renew = BWSHARE_LEASE_S / 2;
	cJSON *reply;
	int r = 0;

	if (c->uid != 0)
		return proto_reply_error("stage_bw: only root (a node's "
					 "iostaged) takes a share of the "
					 "staging bandwidth");
	if (!cJSON_IsString(node) || !conf_is_node_name(node->valuestring))
		return proto_reply_error("stage_bw: 'node': expected a node "
					 "name");
	if (want && !cJSON_IsBool(want))
		return proto_reply_error("stage_bw: 'want': expected true or "
					 "false");
	/* A node that sends none (an older iostaged) copies for jobs. */
	if (weight && (!cJSON_IsNumber(weight) || weight->valuedouble < 1 ||
		       weight->valuedouble > BWSHARE_WEIGHT_MAX))
		return proto_reply_error("stage_bw: 'weight': expected 1 to "
					 "%d",
					 BWSHARE_WEIGHT_MAX);
	pthread_mutex_lock(&bw_lock);
	budget = bw.budget;
	if (budget)
		r = bwshare_ask(&bw, node->valuestring,
				!want || cJSON_IsTrue(want),
				weight ? (unsigned)weight->valuedouble
				       : BWSHARE_WEIGHT_STAGING,
				now_s(), &grant, &renew);
	pthread_mutex_unlock(&bw_lock);
	if (r < 0)
		return proto_reply_error("stage_bw: node %s: cannot take a "
					 "lease: %s",
					 node->valuestring,
					 errno == ENOSPC ? "too many nodes"
							 : "out of memory");
	reply = proto_reply_ok();
	if (!reply)
		return NULL;
	cJSON_AddNumberToObject(reply, "grant", (double)grant);
	cJSON_AddNumberToObject(reply, "renew_ms", renew * 1000);
	cJSON_AddNumberToObject(reply, "lease_ms", BWSHARE_LEASE_S * 1000);
	cJSON_AddNumberToObject(reply, "budget", (double)budget);
	return reply;
}

cJSON *ctld_op_stage_bw_status(const struct ctld_caller *c, const cJSON *req)
{
	struct bwshare_usage u;
	cJSON *reply = proto_reply_ok(), *arr;

	(void)c;
	(void)req;
	if (!reply)
		return NULL;
	pthread_mutex_lock(&bw_lock);
	bwshare_usage(&bw, now_s(), &u);
	arr = cJSON_AddArrayToObject(reply, "leases");
	for (size_t i = 0; arr && i < bw.n; i++) {
		cJSON *o = cJSON_CreateObject();

		if (!o)
			break;
		cJSON_AddStringToObject(o, "node", bw.leases[i].node);
		cJSON_AddNumberToObject(o, "grant", (double)bw.leases[i].grant);
		cJSON_AddItemToArray(arr, o);
	}
	pthread_mutex_unlock(&bw_lock);
	cJSON_AddNumberToObject(reply, "budget", (double)u.budget);
	cJSON_AddNumberToObject(reply, "granted", (double)u.granted);
	cJSON_AddNumberToObject(reply, "nodes", (double)u.nodes);
	return reply;
}
