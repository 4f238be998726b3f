/* fill.c - where a new cache version's files come from (see fill.h). */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cJSON.h>

#include "common/base/deadline.h"
#include "common/base/log.h"
#include "common/net/ctlclient.h"
#include "common/net/proto.h"
#include "common/sched/cachekey.h"
#include "common/sched/spread.h"
#include "daemon/agent.h"
#include "daemon/cluster/fill.h"
#include "daemon/cluster/peer.h"
#include "daemon/jobs.h"
#include "daemon/staging/tiers.h"

static const char *str(const cJSON *o, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);

	return cJSON_IsString(v) ? v->valuestring : "";
}

static void sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

/* Is TIER one of ours and node-local (a Shared tier has one copy for
 * every node already)? Its index, or -1. */
static int local_tier(const struct agent *a, const char *tier)
{
	int t = a->tiers ? tiers_index(a->tiers, tier) : -1;

	return t >= 0 && !a->conf->tiers[t].shared ? t : -1;
}

static void set_source(const struct agent *a, const char *node,
		       const char *tier, const char *key, unsigned version,
		       bool head, struct fill_source *ret)
{
	memset(ret, 0, sizeof(*ret));
	snprintf(ret->node, sizeof(ret->node), "%s", node);
	snprintf(ret->peer, sizeof(ret->peer), "%s:%u", node,
		 a->conf->peer_port);
	snprintf(ret->entry, sizeof(ret->entry), "%s/%s.v%u", tier, key,
		 version);
	ret->version = version;
	ret->head = head;
}

/* "K.vN" naming KEY: N, or 0 when it names another key or nothing. */
static unsigned entry_version(const char *entry, const char *key)
{
	size_t klen = strlen(key);
	char *end;
	unsigned long v;

	if (strncmp(entry, key, klen) || strncmp(entry + klen, ".v", 2))
		return 0;
	errno = 0;
	v = strtoul(entry + klen + 2, &end, 10);
	return errno || *end || !v || v > 0xffffffffUL ? 0 : (unsigned)v;
}

/* peer op stage_entry's request for dataset I of JOB, or NULL (memory). */
static cJSON *stage_entry_request(const struct job *job, size_t i)
{
	cJSON *req = cJSON_CreateObject();

	if (!req || !cJSON_AddStringToObject(req, "op", "stage_entry") ||
	    !cJSON_AddNumberToObject(req, "job", job->id) ||
	    !cJSON_AddNumberToObject(req, "dataset", (double)i)) {
		cJSON_Delete(req);
		return NULL;
	}
	return req;
}

/* --- the job's head ---------------------------------------------------- */

/* Wait for the head's outcome of dataset I; 1 with *ret when it staged
 * the same entry, 0 for the PFS, -1 when STOP said so. */
static int from_head(struct agent *a, struct job *job, size_t i,
		     const char *tier, const char *key, fill_stop_fn stop,
		     void *arg, struct fill_source *ret, char *err,
		     size_t errlen)
{
	const char *head = job->nodes[0];
	long long t0 = deadline_now_ms();
	char e[256];
	cJSON *req = stage_entry_request(job, i);
	int found = 0;

	if (!req)
		return 0;
	for (;;) {
		cJSON *r = peer_call(a->peer, head, req, FILL_ASK_MS, NULL, e,
				     sizeof(e));
		const char *state = r ? str(r, "state") : "";
		bool failed, staging;
		unsigned v;

		if (!r ||
		    !cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(r, "ok"))) {
			log_info("job %u: dataset %zu: the head %s cannot "
				 "say (%s); reading the PFS",
				 job->id, i, head, r ? str(r, "error") : e);
			cJSON_Delete(r);
			break;
		}
		if (!strcmp(state, "done")) {
			v = entry_version(str(r, "entry"), key);
			if (v && !strcmp(str(r, "tier"), tier)) {
				set_source(a, head, tier, key, v, true, ret);
				found = 1;
			} else {
				log_info("job %u: dataset %zu: the head %s "
					 "staged another entry (%s); reading "
					 "the PFS",
					 job->id, i, head, str(r, "entry"));
			}
			cJSON_Delete(r);
			break;
		}
		/* STATE is R's: read it before R goes. (Read after, the
		 * freed "staging" no longer said so, and every node gave up
		 * on a head still staging after FILL_HEAD_UNKNOWN_MS.) */
		failed = !strcmp(state, "failed");
		staging = !strcmp(state, "staging");
		cJSON_Delete(r);
		if (failed || (!staging &&
			       deadline_now_ms() - t0 > FILL_HEAD_UNKNOWN_MS)) {
			log_info("job %u: dataset %zu: the head %s %s; reading "
				 "the PFS",
				 job->id, i, head,
				 failed ? "failed it"
					: "does not know the job");
			break;
		}
		if (stop(arg, err, errlen)) {
			found = -1;
			break;
		}
		sleep_ms(FILL_HEAD_POLL_MS);
	}
	cJSON_Delete(req);
	return found;
}

/* --- another job's node ------------------------------------------------ */

/* NODE's current version of KEY on TIER, or 0, within TIMEOUT_MS. */
static unsigned ask_current(struct agent *a, const char *node, const char *tier,
			    const char *key, int timeout_ms)
{
	cJSON *req = cJSON_CreateObject(), *r = NULL;
	char e[256];
	unsigned v = 0;

	if (req && cJSON_AddStringToObject(req, "op", "entry_current") &&
	    cJSON_AddStringToObject(req, "tier", tier) &&
	    cJSON_AddStringToObject(req, "key", key))
		r = peer_call(a->peer, node, req, timeout_ms, NULL, e,
			      sizeof(e));
	if (r && cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(r, "ok"))) {
		uint64_t n = proto_u64(r, "version");

		v = n <= 0xffffffffu ? (unsigned)n : 0;
	}
	cJSON_Delete(req);
	cJSON_Delete(r);
	return v;
}

/* iostagectld's answer to cache_holders for KEY on TIER (caller
 * deletes; "nodes" lists them), or NULL: no service, or no answer within
 * FILL_HOLDERS_MS. */
static cJSON *holders_of(struct agent *a, const char *tier, const char *key)
{
	cJSON *req, *reply = NULL;
	char e[CONF_ERR_MAX];

	if (!ctl_configured(a->conf))
		return NULL;
	req = cJSON_CreateObject();
	if (!req || !cJSON_AddStringToObject(req, "op", "cache_holders") ||
	    !cJSON_AddStringToObject(req, "tier", tier) ||
	    !cJSON_AddStringToObject(req, "key", key) ||
	    ctl_request_timeout(a->conf, req, FILL_HOLDERS_MS, &reply, e,
				sizeof(e)) < 0)
		reply = NULL;
	cJSON_Delete(req);
	return reply;
}

static int from_holders(struct agent *a, struct job *job, const char *tier,
			const char *key, struct fill_source *ret)
{
	cJSON *reply;
	const cJSON *nodes, *n;
	size_t asked = 0;
	long long t0 = deadline_now_ms(), left;
	int found = 0;

	reply = holders_of(a, tier, key);
	if (!reply)
		return 0;
	nodes = cJSON_GetObjectItemCaseSensitive(reply, "nodes");
	cJSON_ArrayForEach(n, nodes) {
		unsigned v;

		if (!cJSON_IsString(n) ||
		    !strcmp(n->valuestring, peer_self(a->peer)))
			continue;
		left = FILL_HOLDERS_MS - (deadline_now_ms() - t0);
		if (asked >= FILL_HOLDERS_MAX || left < 100)
			break;
		asked++;
		v = ask_current(a, n->valuestring, tier, key, (int)left);
		if (v) {
			set_source(a, n->valuestring, tier, key, v, false, ret);
			found = 1;
			break;
		}
	}
	if (!found && asked)
		log_info("job %u: no node of %zu asked has %s on tier '%s' "
			 "any more; reading the PFS",
			 job->id, asked, key, tier);
	cJSON_Delete(reply);
	return found;
}

int fill_find(struct agent *a, struct job *job, size_t i, const char *tier,
	      const char *key, fill_stop_fn stop, void *arg,
	      struct fill_source *ret, char *err, size_t errlen)
{
	if (a->conf->node_fill == NODE_FILL_NO || !peer_enabled(a->peer) ||
	    local_tier(a, tier) < 0)
		return 0;
	if (jobs_multi_node(job) && strcmp(job->nodes[0], peer_self(a->peer)))
		return from_head(a, job, i, tier, key, stop, arg, ret, err,
				 errlen);
	return from_holders(a, job, tier, key, ret);
}

/* --- a fill by parts -------------------------------------------------- */

bool fill_by_parts(const struct agent *a, const struct job *job,
		   const char *tier)
{
	return a->conf->node_fill == NODE_FILL_PARTS && jobs_multi_node(job) &&
	       job->nnodes <= FILL_PARTS_MAX && !job->prestage &&
	       peer_enabled(a->peer) && local_tier(a, tier) >= 0;
}

int fill_parts_plan(const struct job *job, char *buf, size_t len)
{
	struct spread_plan *plan = calloc(1, sizeof(*plan));
	int r = -1;

	if (!plan || job->nnodes > SPREAD_NODES_MAX)
		goto out;
	/* Equal shares: the dataset fits every node (else it would be
	 * spread), and every node reads the PFS at once. */
	plan->n = (unsigned)job->nnodes;
	for (size_t k = 0; k < job->nnodes; k++) {
		snprintf(plan->nodes[k].name, sizeof(plan->nodes[k].name), "%s",
			 job->nodes[k]);
		plan->nodes[k].weight = 1;
	}
	r = spread_plan_format(plan, buf, len) < 0 ? -1 : 0;
out:
	free(plan);
	return r;
}

/* What a node of the job has to give for a fill by parts. */
enum part_state { PART_WAITING = 0, PART_GOT, PART_GONE };

/* Ask NODE once: PART_GOT with a source added to RET, PART_GONE (with a
 * log line) or PART_WAITING. */
static enum part_state ask_part(struct agent *a, struct job *job, size_t i,
				const char *node, const char *tier,
				const char *key, const char *part,
				const cJSON *req, long long t0,
				struct fill_parts *ret)
{
	char e[256];
	cJSON *r = peer_call(a->peer, node, req, FILL_ASK_MS, NULL, e,
			     sizeof(e));
	enum part_state st = PART_WAITING;
	const char *state;
	unsigned v;

	if (!r || !cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(r, "ok"))) {
		log_info("job %u: dataset %zu: node %s cannot say (%s); its "
			 "share comes from the PFS",
			 job->id, i, node, r ? str(r, "error") : e);
		cJSON_Delete(r);
		return PART_GONE;
	}
	state = str(r, "state");
	if (!strcmp(state, "done") || str(r, "part")[0]) {
		/* its whole copy (a hit there, or it finished), else its
		 * share */
		bool whole = !strcmp(state, "done");
		const char *k = whole ? key : part;

		v = entry_version(str(r, whole ? "entry" : "part"), k);
		if (v && !strcmp(str(r, "tier"), tier) &&
		    ret->n < FILL_PARTS_MAX) {
			set_source(a, node, tier, k, v, false,
				   &ret->src[ret->n++]);
			st = PART_GOT;
		} else {
			log_info("job %u: dataset %zu: node %s has another "
				 "entry (%s); its share comes from the PFS",
				 job->id, i, node,
				 str(r, whole ? "entry" : "part"));
			st = PART_GONE;
		}
	} else if (!strcmp(state, "failed") ||
		   (strcmp(state, "staging") &&
		    deadline_now_ms() - t0 > FILL_HEAD_UNKNOWN_MS)) {
		log_info("job %u: dataset %zu: node %s %s; its share comes "
			 "from the PFS",
			 job->id, i, node,
			 !strcmp(state, "failed") ? "failed it"
						  : "does not know the job");
		st = PART_GONE;
	}
	cJSON_Delete(r);
	return st;
}

int fill_parts_wait(struct agent *a, struct job *job, size_t i,
		    const char *tier, const char *key, fill_stop_fn stop,
		    void *arg, struct fill_parts *ret, char *err, size_t errlen)
{
	enum part_state st[FILL_PARTS_MAX];
	const char *self = peer_self(a->peer);
	char part[CACHE_KEY_LEN + 1];
	long long t0 = deadline_now_ms();
	size_t waiting = 0;
	cJSON *req = stage_entry_request(job, i);
	int r = 0;

	ret->n = 0;
	cachekey_part(key, part);
	if (!req)
		return 0; /* the PFS it is */
	for (size_t k = 0; k < job->nnodes && k < FILL_PARTS_MAX; k++) {
		st[k] = strcmp(job->nodes[k], self) ? PART_WAITING : PART_GONE;
		waiting += st[k] == PART_WAITING;
	}
	while (waiting) {
		for (size_t k = 0; k < job->nnodes && k < FILL_PARTS_MAX; k++) {
			if (st[k] != PART_WAITING)
				continue;
			st[k] = ask_part(a, job, i, job->nodes[k], tier, key,
					 part, req, t0, ret);
			waiting -= st[k] != PART_WAITING;
		}
		if (!waiting)
			break;
		if (stop(arg, err, errlen)) {
			r = -1;
			break;
		}
		sleep_ms(FILL_HEAD_POLL_MS);
	}
	cJSON_Delete(req);
	return r;
}

/* Is NODE one of JOB's nodes? */
static bool job_node(const struct job *job, const char *node)
{
	for (size_t k = 0; k < job->nnodes; k++)
		if (!strcmp(job->nodes[k], node))
			return true;
	return false;
}

/* The nodes iostagectld says hold PART on TIER (their cache reports)
 * that are not JOB's, at most FILL_HOLDERS_MAX, appended to NAMES (of
 * room for FILL_PARTS_MAX; each name in HOLD[FILL_HOLDERS_MAX]). The
 * new count. */
static size_t outside_holders(struct agent *a, const struct job *job,
			      const char *tier, const char *part,
			      const char **names, size_t n,
			      char (*hold)[CONF_NODE_MAX])
{
	cJSON *reply;
	const cJSON *nodes, *h;
	size_t added = 0;

	reply = holders_of(a, tier, part);
	if (!reply)
		return n;
	nodes = cJSON_GetObjectItemCaseSensitive(reply, "nodes");
	cJSON_ArrayForEach(h, nodes) {
		if (added >= FILL_HOLDERS_MAX || n >= FILL_PARTS_MAX)
			break;
		if (!cJSON_IsString(h) || !h->valuestring[0] ||
		    strlen(h->valuestring) >= CONF_NODE_MAX ||
		    job_node(job, h->valuestring) ||
		    !strcmp(h->valuestring, peer_self(a->peer)))
			continue;
		snprintf(hold[added], CONF_NODE_MAX, "%s", h->valuestring);
		names[n++] = hold[added++];
	}
	cJSON_Delete(reply);
	return n;
}

int fill_job_parts(struct agent *a, struct job *job, const char *tier,
		   const char *part, struct fill_parts *ret)
{
	size_t n = job->nnodes < FILL_PARTS_MAX ? job->nnodes : FILL_PARTS_MAX;
	const char **names = calloc(FILL_PARTS_MAX, sizeof(*names));
	char(*hold)[CONF_NODE_MAX] = calloc(FILL_HOLDERS_MAX, sizeof(*hold));
	cJSON **replies = calloc(FILL_PARTS_MAX, sizeof(*replies));
	char(*errs)[256] = calloc(FILL_PARTS_MAX, sizeof(*errs));
	int *unreachable = calloc(FILL_PARTS_MAX, sizeof(*unreachable));
	const char *self = peer_self(a->peer);
	cJSON *req = cJSON_CreateObject();
	int r = -1;

	ret->n = 0;
	if (!names || !hold || !replies || !errs || !unreachable || !req ||
	    !cJSON_AddStringToObject(req, "op", "entry_current") ||
	    !cJSON_AddStringToObject(req, "tier", tier) ||
	    !cJSON_AddStringToObject(req, "key", part))
		goto out;
	r = 0;
	if (!jobs_multi_node(job) || !peer_enabled(a->peer) ||
	    local_tier(a, tier) < 0)
		goto out;
	for (size_t k = 0; k < n; k++)
		names[k] = job->nodes[k];
	/* The job's nodes first, then those outside it that held a part
	 * for an earlier job (they check the job with Slurm before they
	 * serve it: daemon/cluster/peer_fetch.c). */
	n = outside_holders(a, job, tier, part, names, n, hold);
	peer_call_many(a->peer, names, n, req, FILL_PARTS_ASK_MS, replies, errs,
		       unreachable);
	for (size_t k = 0; k < n; k++) {
		const cJSON *vs, *v;

		if (!strcmp(names[k], self) || !replies[k] ||
		    !cJSON_IsTrue(
			cJSON_GetObjectItemCaseSensitive(replies[k], "ok")))
			continue;
		/* Every version it has: the one it holds now may already
		 * be this job's, without the files that moved here. */
		vs = cJSON_GetObjectItemCaseSensitive(replies[k], "versions");
		cJSON_ArrayForEach(v, vs) {
			if (!cJSON_IsNumber(v) || v->valuedouble < 1 ||
			    v->valuedouble > CACHE_VERSION_MAX ||
			    ret->n >= FILL_PARTS_MAX)
				continue;
			set_source(a, names[k], tier, part,
				   (unsigned)v->valuedouble, false,
				   &ret->src[ret->n++]);
		}
	}
out:
	for (size_t k = 0; replies && k < FILL_PARTS_MAX; k++)
		cJSON_Delete(replies[k]);
	free(replies);
	free(errs);
	free(unreachable);
	free(names);
	free(hold);
	cJSON_Delete(req);
	return r;
}

/* --- the ops other nodes ask ------------------------------------------- */

cJSON *fill_op_stage_entry(struct agent *a, const struct peernet_peer *p,
			   const cJSON *req)
{
	char err[CONF_ERR_MAX], entry[JOBS_ENTRY_MAX], part[JOBS_ENTRY_MAX];
	const char *state = "unknown", *tier = "";
	struct job_view v;
	struct job *job;
	uint32_t id;
	size_t i;
	cJSON *r;

	(void)p;
	if (peer_job_dataset(req, "stage_entry", &id, &i, err, sizeof(err)) < 0)
		return proto_reply_error("%s", err);
	entry[0] = part[0] = '\0';
	job = jobs_get(a->jobs, id);
	if (job) {
		jobs_view(job, &v);
		jobs_part_entry(job, i, part, sizeof(part));
		if (!job->profile || i >= job->profile->ndatasets) {
			state = "failed";
		} else {
			switch (
			    jobs_dataset_entry(job, i, entry, sizeof(entry))) {
			case JOB_DS_HIT:
			case JOB_DS_BUILT:
				state = "done";
				tier = job->profile->datasets[i].tier;
				break;
			case JOB_DS_FAILED:
				state = "failed";
				break;
			default:
				state = v.state == JOB_STAGING ? "staging"
							       : "failed";
			}
			if (part[0])
				tier = job->profile->datasets[i].tier;
		}
	}
	r = proto_reply_ok();
	if (r && (!cJSON_AddStringToObject(r, "state", state) ||
		  !cJSON_AddStringToObject(r, "tier", tier) ||
		  !cJSON_AddStringToObject(r, "entry", entry) ||
		  !cJSON_AddStringToObject(r, "part", part))) {
		cJSON_Delete(r);
		r = NULL;
	}
	if (job)
		jobs_put(job);
	return r;
}

cJSON *fill_op_entry_current(struct agent *a, const struct peernet_peer *p,
			     const cJSON *req)
{
	struct cache_version cur;
	char err[CONF_ERR_MAX];
	const char *tier, *key;
	unsigned next, all[FILL_VERSIONS_MAX];
	size_t n;
	int t;
	cJSON *r, *vs;

	(void)p;
	if (proto_get_string(req, "tier", &tier, err, sizeof(err)) < 0 ||
	    proto_get_string(req, "key", &key, err, sizeof(err)) < 0)
		return proto_reply_error("entry_current: %s", err);
	t = local_tier(a, tier);
	if (t < 0)
		return proto_reply_error("entry_current: no node-local tier "
					 "'%.*s' here",
					 CONF_NAME_MAX, tier);
	if (!cache_is_key(key, strlen(key)))
		return proto_reply_error("entry_current: bad key");
	if (cache_current(a->cache, t, key, &cur, &next) != 1)
		return proto_reply_error("entry_current: no version of %s "
					 "here",
					 key);
	r = proto_reply_ok();
	vs = r ? cJSON_AddArrayToObject(r, "versions") : NULL;
	if (!vs || !cJSON_AddNumberToObject(r, "version", cur.version)) {
		cJSON_Delete(r);
		return NULL;
	}
	/* every published one, newest first: a version being replaced
	 * now still holds what its node held under an older plan */
	n = cache_versions_of(a->cache, t, key, all, FILL_VERSIONS_MAX);
	for (size_t k = 0; k < n; k++) {
		cJSON *num = cJSON_CreateNumber(all[k]);

		if (!num || !cJSON_AddItemToArray(vs, num)) {
			cJSON_Delete(num);
			cJSON_Delete(r);
			return NULL;
		}
	}
	return r;
}
