/* slurmsched.c - publishing node features and watching jobs through
 * libslurm (see slurmsched.h).
 *
 * Why one thread: libslurm's RPCs are synchronous and each reads the
 * whole node or job table; one caller at a fixed pace bounds what the
 * service costs slurmctld, whatever the number of submissions.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <slurm/slurm.h>

#include <pwd.h>

#include "common/base/errmsg.h"
#include "common/base/log.h"
#include "common/base/ticker.h"
#include "common/net/peernet.h"
#include "common/net/proto.h"
#include "common/sched/cachekey.h"
#include "common/sched/dsfeature.h"
#include "common/slurm/slurmcompat.h"
#include "ctld/sched/hold.h"
#include "ctld/sched/joballoc.h"
#include "ctld/sched/pending.h"
#include "ctld/sched/placement.h"
#include "ctld/sched/slurmsched.h"

/* A node that has not reported for this long (iostaged gone) loses its
 * features; the nodes report at least every CACHEREPORT_INTERVAL_S. */
#define STALE_REPORT_S 180
/* How often the SchedulerParameters are read again. */
#define CONF_CHECK_S 60
/* Jobs whose start was counted (a hash set; cleared when full). */
#define COUNTED_MAX 65536

/* Jobs expected to start within this are pre-staged; later ones wait:
 * the plan changes, and the cache space is better spent on sooner jobs. */
#define PRESTAGE_HORIZON_S 3600
/* One call to a node's iostaged. */
#define PRESTAGE_CALL_MS 5000
/* Asking a node for its cache report: short, the sweep is serial. */
#define ASK_REPORT_CALL_MS 1000

static const struct conf *sched_conf;
/* The thread: a turn every SLURMSCHED_INTERVAL_S, or at once when a
 * cache report changes a node's features (placement_on_change). */
static struct ticker *sched_ticker;
static time_t last_conf; /* the turn's: when it last read the parameters */
static bool prefer_safe;
static pthread_mutex_t safe_mu = PTHREAD_MUTEX_INITIALIZER;
static time_t t_start;
static uint32_t counted[COUNTED_MAX];
static size_t ncounted;
/* slurmctld answering the job table: for /metrics */
static int64_t slurm_ok_at;
static uint64_t slurm_errors;

void slurmsched_health(time_t *ret_ok_at, uint64_t *ret_errors)
{
	*ret_ok_at = (time_t)__atomic_load_n(&slurm_ok_at, __ATOMIC_RELAXED);
	*ret_errors = __atomic_load_n(&slurm_errors, __ATOMIC_RELAXED);
}

bool slurmsched_prefer_safe(void)
{
	bool r;

	pthread_mutex_lock(&safe_mu);
	r = prefer_safe;
	pthread_mutex_unlock(&safe_mu);
	return r;
}

bool slurmsched_placement_on(void)
{
	return sched_conf && sched_conf->placement && slurmsched_prefer_safe();
}

unsigned slurmsched_hold_s(void)
{
	return slurmsched_placement_on() ? sched_conf->placement_hold : 0;
}

static void check_sched_params(void)
{
	static bool warned;
	slurm_conf_t *c = NULL;
	bool safe;

	if (slurm_load_ctl_conf((time_t)0, &c) != SLURM_SUCCESS || !c) {
		log_warningx(
		    "placement: cannot read slurmctld's configuration: "
		    "%s",
		    slurmcompat_last_error());
		return;
	}
	safe = c->sched_params &&
	       strcasestr(c->sched_params, "ignore_prefer_validation");
	slurmcompat_free_conf(c);
	pthread_mutex_lock(&safe_mu);
	prefer_safe = safe;
	pthread_mutex_unlock(&safe_mu);
	if (!safe && !warned)
		log_warningx("placement: off: slurm.conf SchedulerParameters "
			     "lacks ignore_prefer_validation, without which a "
			     "--prefer Slurm cannot meet rejects the job; "
			     "jobs get no preference");
	if (safe && warned)
		log_info("placement: on (ignore_prefer_validation set)");
	warned = !safe;
}

/* Nodes asked for their cache report since the service started. */
static char **asked;
static size_t nasked;

static bool asked_add(const char *node)
{
	char **a;

	for (size_t i = 0; i < nasked; i++)
		if (!strcmp(asked[i], node))
			return false;
	a = realloc(asked, (nasked + 1) * sizeof(*a));
	if (!a)
		return false;
	asked = a;
	if (!(asked[nasked] = strdup(node)))
		return false;
	nasked++;
	return true;
}

static cJSON *node_call(const char *node, cJSON *req, char *err, size_t errlen,
			unsigned timeout_ms);

/* A node this service has no report from yet (it just started: the
 * node's last report went to the service before it): ask its iostaged
 * once to send one now rather than at its next interval, so placement
 * and pre-staging know the node's cache within seconds of a restart.
 * Down nodes are skipped; a node not answering reports on its own. */
static void ask_report(const node_info_t *ni)
{
	char err[CONF_ERR_MAX];
	cJSON *req, *reply;

	if (!sched_conf->peer_port || placement_reported_at(ni->name) ||
	    (ni->node_state & NODE_STATE_BASE) == NODE_STATE_DOWN ||
	    (ni->node_state & NODE_STATE_NO_RESPOND) || !asked_add(ni->name))
		return;
	if (!(req = cJSON_CreateObject()))
		return;
	cJSON_AddStringToObject(req, "op", "cache_report");
	reply = node_call(ni->name, req, err, sizeof(err), ASK_REPORT_CALL_MS);
	if (!reply)
		log_debug("placement: asking node %s for its cache report: %s",
			  ni->name, err);
	cJSON_Delete(req);
	cJSON_Delete(reply);
}

static bool reported_recently(const char *node, time_t now)
{
	time_t t = placement_reported_at(node);

	return t && now - t <= STALE_REPORT_S;
}

/* One node: make Slurm show what placement wants, keep the site's own
 * features. */
static void publish_node(const node_info_t *ni, time_t now)
{
	char want[PLACEMENT_NODE_FEATURES][DSFEATURE_LEN + 1];
	const char *ptrs[PLACEMENT_NODE_FEATURES];
	const char *avail = ni->features, *act = ni->features_act;
	update_node_msg_t m;
	char *new_avail = NULL, *new_act = NULL;
	size_t n = 0;

	if (!act)
		act = avail;
	ask_report(ni);
	if (!sched_conf->placement)
		n = 0; /* Placement=no: withdraw at once, reports or not */
	else if (reported_recently(ni->name, now))
		n = placement_wanted(ni->name, want, PLACEMENT_NODE_FEATURES,
				     now);
	else if (now - t_start < STALE_REPORT_S &&
		 !placement_reported_at(ni->name))
		return; /* the node may report soon: keep what it shows */
	for (size_t i = 0; i < n; i++)
		ptrs[i] = want[i];
	if (!slurmsched_placement_on())
		n = 0; /* nothing would use them, or the site said no */
	if (dsfeature_same(avail, ptrs, n) && dsfeature_same(act, ptrs, n)) {
		placement_set_published(ni->name, act);
		return;
	}
	new_avail = dsfeature_merge(avail, ptrs, n);
	new_act = dsfeature_merge(act, ptrs, n);
	if (!new_avail || !new_act)
		goto out;
	slurm_init_update_node_msg(&m);
	m.node_names = ni->name;
	m.features = new_avail;
	m.features_act = new_act;
	if (slurm_update_node(&m) == SLURM_SUCCESS) {
		placement_set_published(ni->name, new_act);
		placement_count_publish(true);
		log_info("placement: node %s shows %s", ni->name,
			 new_act[0] ? new_act : "no features");
	} else {
		placement_set_published(ni->name, act);
		placement_count_publish(false);
		log_warningx("placement: cannot set the features of node %s: "
			     "%s",
			     ni->name, slurmcompat_last_error());
	}
out:
	free(new_avail);
	free(new_act);
}

static void publish_all(time_t now)
{
	node_info_msg_t *nodes = NULL;

	if (slurm_load_node((time_t)0, &nodes, SHOW_ALL) != SLURM_SUCCESS ||
	    !nodes) {
		log_warningx("placement: cannot read Slurm's nodes: %s",
			     slurmcompat_last_error());
		return;
	}
	for (uint32_t i = 0;
	     i < nodes->record_count && !ticker_stopping(sched_ticker); i++)
		if (nodes->node_array[i].name)
			publish_node(&nodes->node_array[i], now);
	slurm_free_node_info_msg(nodes);
}

static bool set_add(uint32_t *set, size_t *n, uint32_t id);

static bool counted_add(uint32_t id)
{
	return set_add(counted, &ncounted, id);
}

struct joined {
	char *out;
	size_t len;
};

static int join_host(const char *h, void *arg)
{
	struct joined *j = arg;
	size_t l = strlen(h);
	char *o = realloc(j->out, j->len + l + 2);

	if (!o)
		return 1;
	j->out = o;
	if (j->len)
		j->out[j->len++] = ',';
	memcpy(j->out + j->len, h, l + 1);
	j->len += l;
	return 0;
}

/* "n[1-3],n5" -> "n1,n2,n3,n5" (new string, caller frees), NULL on
 * error. */
static char *expand_nodes(const char *list)
{
	struct joined j = { NULL, 0 };

	if (slurmcompat_hostlist_each(list, join_host, &j) != 0) {
		free(j.out);
		return NULL;
	}
	return j.out;
}

static const char *munge_socket(void)
{
	return sched_conf->munge_socket[0] ? sched_conf->munge_socket : NULL;
}

/* One request to NODE's iostaged over the node channel (root's MUNGE
 * credential: the service runs as root). The reply, or NULL with err. */
static cJSON *node_call(const char *node, cJSON *req, char *err, size_t errlen,
			unsigned timeout_ms)
{
	if (!sched_conf->peer_port) {
		snprintf(err, errlen, "PeerPort=0: the nodes cannot be asked");
		return NULL;
	}
	return peernet_call(node, sched_conf->peer_port, munge_socket(), req,
			    timeout_ms, NULL, err, errlen);
}

/* Ask NODE to stage dataset D of job J into its cache. */
static void prestage_send(struct pending_job *j, struct pending_node *pn,
			  size_t d, struct pending_counts *dc)
{
	struct pending_stage *st = &pn->ds[d];
	char err[CONF_ERR_MAX];
	cJSON *req = cJSON_CreateObject(), *reply = NULL;
	const cJSON *id;

	if (!req)
		return;
	cJSON_AddStringToObject(req, "op", "prestage");
	cJSON_AddNumberToObject(req, "for_job", j->job);
	cJSON_AddStringToObject(req, "user", j->user);
	cJSON_AddStringToObject(req, "path", j->ds[d].path);
	cJSON_AddStringToObject(req, "tier", j->ds[d].tier);
	if (j->ds[d].verify[0])
		cJSON_AddStringToObject(req, "verify", j->ds[d].verify);
	reply = node_call(pn->name, req, err, sizeof(err), PRESTAGE_CALL_MS);
	st->sent = time(NULL);
	dc->requests++;
	id = cJSON_GetObjectItemCaseSensitive(reply, "id");
	if (reply &&
	    cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(reply, "ok")) &&
	    cJSON_IsNumber(id) && id->valuedouble >= 1 &&
	    id->valuedouble <= UINT32_MAX) {
		st->state = PENDING_SENT;
		st->id = (uint32_t)id->valuedouble;
		log_info("prestage: job %u: %s on %s (tier '%s', expected "
			 "start in %lds)",
			 j->job, j->ds[d].path, pn->name, j->ds[d].tier,
			 (long)(j->start_time - st->sent));
	} else {
		const cJSON *e = cJSON_GetObjectItemCaseSensitive(reply,
								  "error");

		st->state = PENDING_FAILED;
		dc->failed++;
		snprintf(st->error, sizeof(st->error), "%.150s",
			 reply ? (cJSON_IsString(e) ? e->valuestring : "?")
			       : err);
		log_warningx("prestage: job %u: %s on %s: %s", j->job,
			     j->ds[d].path, pn->name, st->error);
	}
	cJSON_Delete(req);
	cJSON_Delete(reply);
}

/* The bytes NODE's cache holds of dataset D (either entry). */
static uint64_t cached_bytes(const char *node, uid_t uid,
			     const struct pending_ds *d)
{
	char k[CACHEKEY_LEN + 1];
	uint64_t b;

	cachekey_public(d->path, k);
	b = placement_entry_bytes(node, k, d->tier);
	if (b)
		return b;
	cachekey_user(uid, d->path, k);
	return placement_entry_bytes(node, k, d->tier);
}

/* How a dataset being built on a node is doing (stage_state of its
 * prestage id). */
static void prestage_poll(struct pending_job *j, struct pending_node *pn,
			  size_t d, struct pending_counts *dc)
{
	struct pending_stage *st = &pn->ds[d];
	char err[CONF_ERR_MAX];
	cJSON *req = cJSON_CreateObject(), *reply;
	const char *state;

	if (!req)
		return;
	cJSON_AddStringToObject(req, "op", "stage_state");
	cJSON_AddNumberToObject(req, "job", st->id);
	reply = node_call(pn->name, req, err, sizeof(err), PRESTAGE_CALL_MS);
	cJSON_Delete(req);
	if (!reply)
		return; /* asked again next time */
	state = cJSON_GetStringValue(
	    cJSON_GetObjectItemCaseSensitive(reply, "state"));
	if (state && !strcmp(state, "staged")) {
		const cJSON *secs =
		    cJSON_GetObjectItemCaseSensitive(reply, "staged_s");
		const cJSON *copied =
		    cJSON_GetObjectItemCaseSensitive(reply, "copied_bytes");

		st->state = PENDING_STAGED;
		/* the node's own figure; else ours (to a poll interval) */
		st->seconds = cJSON_IsNumber(secs)
				  ? secs->valuedouble
				  : difftime(time(NULL), st->sent);
		dc->staged++;
		/* the node's count of what it copied; a node without it
		 * (older iostaged): the entry's size in its last report,
		 * which may not have come yet (then 0) */
		dc->bytes += cJSON_IsNumber(copied)
				 ? proto_u64(reply, "copied_bytes")
				 : cached_bytes(pn->name, j->uid, &j->ds[d]);
		log_info("prestage: job %u: %s staged on %s", j->job,
			 j->ds[d].path, pn->name);
	} else if (state &&
		   (!strcmp(state, "failed") || !strcmp(state, "finished") ||
		    !strcmp(state, "unknown"))) {
		const char *e = cJSON_GetStringValue(
		    cJSON_GetObjectItemCaseSensitive(reply, "error"));

		st->state = PENDING_FAILED;
		dc->failed++;
		snprintf(st->error, sizeof(st->error), "%.150s",
			 e ? e : "the node forgot it (restarted?)");
		log_warningx("prestage: job %u: %s on %s: %s", j->job,
			     j->ds[d].path, pn->name, st->error);
	}
	cJSON_Delete(reply);
}

static struct pending_node *node_of(struct pending_job *j, const char *name)
{
	for (size_t i = 0; i < j->nnodes; i++)
		if (!strcmp(j->nodes[i].name, name))
			return &j->nodes[i];
	if (j->nnodes >= PENDING_NODES_MAX)
		return NULL;
	memset(&j->nodes[j->nnodes], 0, sizeof(j->nodes[0]));
	snprintf(j->nodes[j->nnodes].name, sizeof(j->nodes[0].name), "%s",
		 name);
	return &j->nodes[j->nnodes++];
}

/* Is PREFER (a job's --prefer) empty or only ours: may we set it? */
static bool prefer_ours(const char *prefer)
{
	const char *p = prefer, *e;

	while (p && *p) {
		e = p + strcspn(p, "&");
		if (!dsfeature_is_ours(p, (size_t)(e - p)))
			return false;
		p = *e ? e + 1 : e;
	}
	return true;
}

/* The feature under which NODE shows dataset D of J (the public entry
 * or J's user's), into ret; false when Slurm does not show it yet. */
static bool shown_feature(const struct pending_job *j, const char *node,
			  const struct pending_ds *d,
			  char ret[DSFEATURE_LEN + 1])
{
	char k[CACHEKEY_LEN + 1];

	cachekey_public(d->path, k);
	if (!placement_entry_bytes(node, k, d->tier))
		cachekey_user(j->uid, d->path, k);
	dsfeature_name(k, d->tier, ret);
	return placement_is_published(node, ret);
}

/* Once a node holds all of J's datasets, make the job prefer it: the
 * prediction then helps itself come true when that node frees up, and
 * the job still starts at once anywhere else when it does not (a
 * preference, as at submit). A --prefer the user gave stays. */
static void prefer_prestaged(struct pending_job *j, const char *current)
{
	char want[256] = "", f[DSFEATURE_LEN + 1];
	struct slurmcompat_job_update u = { 0 };

	if (j->prefer_set || !prefer_ours(current) ||
	    !slurmsched_placement_on())
		return;
	for (size_t k = 0; k < j->nnodes && !want[0]; k++) {
		bool all = true;

		for (size_t d = 0; d < j->nds && all; d++)
			all = j->nodes[k].ds[d].state == PENDING_STAGED &&
			      shown_feature(j, j->nodes[k].name, &j->ds[d], f);
		for (size_t d = 0; all && d < j->nds; d++) {
			shown_feature(j, j->nodes[k].name, &j->ds[d], f);
			if (!strstr(want, f))
				snprintf(want + strlen(want),
					 sizeof(want) - strlen(want), "%s%s",
					 want[0] ? "&" : "", f);
		}
	}
	if (!want[0] || (current && !strcmp(current, want)))
		return;
	u.prefer = want;
	if (slurmcompat_update_job(j->job, &u) == SLURM_SUCCESS) {
		j->prefer_set = true;
		snprintf(j->prefer, sizeof(j->prefer), "%s", want);
		log_info("prestage: job %u now prefers %s", j->job, want);
	} else {
		log_warningx("prestage: job %u: cannot set --prefer=%s: %s",
			     j->job, want, slurmcompat_last_error());
		j->prefer_set = true; /* do not insist */
	}
}

/* A pending job the service knows: stage its datasets on the nodes
 * Slurm plans for it, one dataset at a time per node. */
static void prestage_pending(struct pending_job *j, const char *prefer,
			     bool names_nodes, time_t now,
			     struct pending_counts *dc)
{
	char *list, *p, *save = NULL;

	if (!sched_conf->prestage || !j->start_time || !j->sched_nodes[0] ||
	    j->start_time - now > PRESTAGE_HORIZON_S)
		return;
	list = expand_nodes(j->sched_nodes);
	for (p = list ? strtok_r(list, ",", &save) : NULL; p;
	     p = strtok_r(NULL, ",", &save)) {
		struct pending_node *pn = node_of(j, p);

		if (!pn)
			break;
		for (size_t d = 0; d < j->nds; d++) {
			if (pn->ds[d].state == PENDING_SENT)
				prestage_poll(j, pn, d, dc);
			if (pn->ds[d].state != PENDING_NONE)
				continue;
			/* already there: nothing to do, nothing to count */
			if (cached_bytes(pn->name, j->uid, &j->ds[d])) {
				pn->ds[d].state = PENDING_STAGED;
				pn->ds[d].sent = now;
				continue;
			}
			/* the node's bounded share: one build at a time */
			pending_put(j);
			if (pending_node_busy(pn->name))
				continue;
			prestage_send(j, pn, d, dc);
			pending_put(j);
		}
	}
	free(list);
	/* A job that names its nodes (-w) gets no preference: it cannot
	 * help, and Slurm 24.11 leaves such a job pending for good
	 * ("Requested node configuration is not available") when the
	 * preferred feature is on none of them. */
	if (!names_nodes)
		prefer_prestaged(j, prefer);
}

/* A known job started on NODES: did it find what was staged for it? */
static void prestage_started(struct pending_job *j, const char *nodes,
			     struct pending_counts *dc)
{
	char *list = expand_nodes(nodes), *p, *save = NULL;
	bool any = false, hit = false, late = false;
	double saved = 0;

	/* a prediction: something was sent to a node for this job (built
	 * there, or still being built) */
	for (size_t k = 0; k < j->nnodes; k++)
		for (size_t d = 0; d < j->nds; d++)
			if ((j->nodes[k].ds[d].state == PENDING_STAGED ||
			     j->nodes[k].ds[d].state == PENDING_SENT) &&
			    j->nodes[k].ds[d].id)
				any = true;
	for (p = list ? strtok_r(list, ",", &save) : NULL; p;
	     p = strtok_r(NULL, ",", &save))
		for (size_t k = 0; k < j->nnodes; k++) {
			if (strcmp(j->nodes[k].name, p))
				continue;
			for (size_t d = 0; d < j->nds; d++) {
				const struct pending_stage *st =
				    &j->nodes[k].ds[d];

				if (st->state == PENDING_STAGED && st->id) {
					hit = true;
					saved += st->seconds;
				} else if (st->state == PENDING_SENT) {
					late = true;
				}
			}
		}
	free(list);
	j->started = true;
	if (!hit && late) {
		/* right node, but the copy was not done: the Prolog waits
		 * for the rest of it (no time saved is counted) */
		dc->late++;
		log_info("prestage: job %u started on %s while its data was "
			 "still being pre-staged there",
			 j->job, nodes);
	} else if (hit) {
		dc->hits++;
		dc->seconds_saved += saved;
		log_info("prestage: job %u started on %s, where its data was "
			 "staged while it waited (%.2f s of staging saved)",
			 j->job, nodes, saved);
	} else if (any) {
		dc->missed++;
		log_info("prestage: job %u started on %s, not where its data "
			 "was staged: that cache space is LRU's again",
			 j->job, nodes);
	}
}

/* The jobs iostagectld was told about, against Slurm's table. */
static void prestage_jobs(const job_info_msg_t *jobs, time_t now)
{
	struct pending_counts dc;
	size_t n;
	uint32_t *ids = pending_ids(&n);

	memset(&dc, 0, sizeof(dc));
	for (size_t i = 0; i < n && !ticker_stopping(sched_ticker); i++) {
		const slurm_job_info_t *sj = NULL;
		struct pending_job j;

		for (uint32_t k = 0; jobs && k < jobs->record_count; k++)
			if (jobs->job_array[k].job_id == ids[i]) {
				sj = &jobs->job_array[k];
				break;
			}
		if (pending_get(ids[i], &j) < 0)
			continue;
		if (!sj) {
			/* not (yet) in Slurm's table: a note can come
			 * before the table is read; forget it later */
			if (now - j.seen > 600)
				pending_drop(j.job);
			continue;
		}
		j.seen = now;
		/* the ticket proved who noted it; Slurm proves whose job
		 * it is */
		if (sj->user_id != j.uid) {
			log_warningx("prestage: job %u is not uid %u's: note "
				     "ignored",
				     j.job, (unsigned)j.uid);
			pending_drop(j.job);
			continue;
		}
		j.verified = true;
		if (!j.user[0]) {
			struct passwd pw, *res = NULL;
			char buf[4096];

			if (getpwuid_r(j.uid, &pw, buf, sizeof(buf), &res) ||
			    !res) {
				log_warningx("prestage: job %u: uid %u has no "
					     "name here: not pre-staged",
					     j.job, (unsigned)j.uid);
				pending_drop(j.job);
				continue;
			}
			snprintf(j.user, sizeof(j.user), "%s", pw.pw_name);
		}
		if ((sj->job_state & JOB_STATE_BASE) == JOB_PENDING) {
			j.start_time = sj->start_time;
			snprintf(j.sched_nodes, sizeof(j.sched_nodes), "%s",
				 sj->sched_nodes ? sj->sched_nodes : "");
			prestage_pending(&j, sj->prefer,
					 sj->req_nodes && sj->req_nodes[0], now,
					 &dc);
		} else if (!j.started && sj->nodes && sj->nodes[0]) {
			prestage_started(&j, sj->nodes, &dc);
		} else if (!j.started) {
			/* ended without running (cancelled while it
			 * waited): what was staged is LRU's again */
			pending_drop(j.job);
			continue;
		} else if (j.started &&
			   (sj->job_state & JOB_STATE_BASE) > JOB_RUNNING &&
			   now - sj->end_time > 300) {
			pending_drop(j.job);
			continue;
		}
		pending_put(&j);
	}
	free(ids);
	pending_count(&dc);
}

/* Jobs seen pending with one of our features in their --prefer (a job
 * that starts without it shows its constraint, not its preference). */
static uint32_t preferring[COUNTED_MAX];
static size_t npreferring;

static bool set_add(uint32_t *set, size_t *n, uint32_t id)
{
	size_t h = (id * 2654435761u) % COUNTED_MAX;

	if (*n >= COUNTED_MAX * 3 / 4) {
		memset(set, 0, sizeof(uint32_t) * COUNTED_MAX);
		*n = 0;
	}
	while (set[h]) {
		if (set[h] == id)
			return false;
		h = (h + 1) % COUNTED_MAX;
	}
	set[h] = id;
	(*n)++;
	return true;
}

static bool set_has(const uint32_t *set, uint32_t id)
{
	size_t h = (id * 2654435761u) % COUNTED_MAX;

	while (set[h]) {
		if (set[h] == id)
			return true;
		h = (h + 1) % COUNTED_MAX;
	}
	return false;
}

/* Placements: Slurm shows a started job's features as those it was
 * scheduled with (features_use): our features there mean it ran where
 * its data was (honoured); a job known to have preferred them that
 * started without them ran elsewhere (not honoured: the nodes were busy,
 * or the data was gone). */
static void count_placement(const slurm_job_info_t *j)
{
	struct pending_job pj;
	bool used, had;

	if (j->start_time < t_start || !j->nodes || !j->nodes[0])
		return;
	used = j->features && strstr(j->features, DSFEATURE_PREFIX);
	had = used || set_has(preferring, j->job_id) ||
	      (pending_get(j->job_id, &pj) == 0 && pj.prefer[0]);
	if (!had || !counted_add(j->job_id))
		return;
	placement_count_outcome(used);
}

/* The bounded hold (ctld/sched/hold.h): a pending job that prefers our
 * features is constrained to them for at most PlacementHold= seconds
 * from its submission, then given back its empty constraint. Only
 * one-node jobs: a constraint must hold on every node of the
 * allocation, and the data is usually on fewer. */
static void hold_job(const slurm_job_info_t *j, time_t now)
{
	unsigned hold_s = slurmsched_hold_s();
	bool eligible = (j->state_reason == WAIT_NO_REASON ||
			 j->state_reason == WAIT_PRIORITY ||
			 j->state_reason == WAIT_RESOURCES) &&
			j->num_nodes <= 1;
	enum hold_action a = hold_decide(j->job_id, j->prefer, j->features,
					 eligible, j->submit_time, hold_s, now);
	struct slurmcompat_job_update u = { 0 };

	if (a == HOLD_NONE)
		return;
	u.features = a == HOLD_SET ? j->prefer : "";
	if (slurmcompat_update_job(j->job_id, &u) != SLURM_SUCCESS) {
		log_warningx("placement: job %u: cannot %s: %s", j->job_id,
			     a == HOLD_SET ? "hold it for its data's nodes"
					   : "release its hold",
			     slurmcompat_last_error());
		hold_applied(j->job_id, HOLD_RELEASE, now);
		return;
	}
	hold_applied(j->job_id, a, now);
	if (a == HOLD_SET)
		log_info("placement: job %u waits up to %u s for a node with "
			 "%s",
			 j->job_id, hold_s, j->prefer);
	else
		log_info("placement: job %u released: it may start on any "
			 "node",
			 j->job_id);
}

static void watch_jobs(void)
{
	job_info_msg_t *jobs = NULL;

	if (slurm_load_jobs((time_t)0, &jobs, SHOW_ALL) != SLURM_SUCCESS ||
	    !jobs) {
		__atomic_add_fetch(&slurm_errors, 1, __ATOMIC_RELAXED);
		return;
	}
	__atomic_store_n(&slurm_ok_at, (int64_t)time(NULL), __ATOMIC_RELAXED);
	for (uint32_t i = 0; i < jobs->record_count; i++) {
		const slurm_job_info_t *j = &jobs->job_array[i];

		if ((j->job_state & JOB_STATE_BASE) == JOB_PENDING) {
			if (j->prefer && strstr(j->prefer, DSFEATURE_PREFIX))
				set_add(preferring, &npreferring, j->job_id);
			hold_job(j, time(NULL));
			continue;
		}
		hold_done(j->job_id);
		count_placement(j);
	}
	hold_expire(time(NULL));
	prestage_jobs(jobs, time(NULL));
	slurmcompat_free_jobs(jobs);
}

/* The ticker's turn: Slurm's parameters now and then, the node features,
 * the jobs. */
static void run(void *arg, bool poked)
{
	time_t now = time(NULL);

	(void)arg;
	(void)poked;
	if (now - last_conf >= CONF_CHECK_S || !slurmsched_prefer_safe()) {
		check_sched_params();
		last_conf = now;
	}
	placement_set_hold(slurmsched_hold_s());
	publish_all(now);
	watch_jobs();
}

/* placement_on_change: the features go out now. */
static void poke(void *arg)
{
	ticker_poke(arg);
}

/* pending_owner_fn: whose job J is, asked of slurmctld (a connection
 * thread of the service calls it; libslurm's RPCs are reentrant). */
static int job_owner(uint32_t job, uid_t *ret_uid)
{
	job_info_msg_t *m = NULL;
	int rc = -1;

	if (slurmcompat_load_job(job, &m) == SLURM_SUCCESS && m &&
	    m->record_count >= 1) {
		*ret_uid = m->job_array[0].user_id;
		rc = 0;
	}
	slurmcompat_free_jobs(m);
	return rc;
}

/* slurmcompat_host_fn: HOST onto the cJSON array ARG. */
static int add_host(const char *host, void *arg)
{
	return cJSON_AddItemToArray(arg, cJSON_CreateString(host)) ? 0 : -1;
}

/* joballoc_source_fn: job J's state, user and nodes, asked of slurmctld
 * (a connection thread of the service calls it). */
static int job_allocation(uint32_t job, bool *ret_running, uid_t *ret_uid,
			  cJSON *nodes, char *err, size_t errlen)
{
	job_info_msg_t *m = NULL;
	const slurm_job_info_t *j;
	int rc = -1;

	if (slurmcompat_load_job(job, &m) != SLURM_SUCCESS || !m ||
	    m->record_count < 1) {
		snprintf(err, errlen, "slurmctld does not know it (%s)",
			 slurmcompat_last_error());
		slurmcompat_free_jobs(m);
		return -1;
	}
	j = &m->job_array[0];
	*ret_running = (j->job_state & JOB_STATE_BASE) == JOB_RUNNING;
	*ret_uid = j->user_id;
	if (!*ret_running || !j->nodes || !j->nodes[0] ||
	    slurmcompat_hostlist_each(j->nodes, add_host, nodes) == 0)
		rc = 0;
	else
		snprintf(err, errlen, "its node list '%.64s' does not read",
			 j->nodes);
	slurmcompat_free_jobs(m);
	return rc;
}

int slurmsched_start(const struct conf *conf, char *err, size_t errlen)
{
	const char *sc = getenv("SLURM_CONF");

	sched_conf = conf;
	/* libslurm ends the process (fatal) when it cannot read slurm.conf:
	 * a service without Slurm's configuration only files and answers */
	if (!sc || !sc[0])
		sc = SLURMSCHED_DEFAULT_CONF;
	if (access(sc, R_OK) != 0)
		return errmsg_fail(err, errlen, errno,
				   "cannot read Slurm's "
				   "configuration %s (set SLURM_CONF): %s",
				   sc, strerror(errno));
	slurm_init(NULL);
	pending_set_owner_check(job_owner);
	joballoc_set_source(job_allocation);
	if (!conf->placement)
		log_info("placement: off (Placement=no): no node features, "
			 "no --prefer");
	if (!conf->prestage)
		log_info("prestage: off (Prestage=no): pending jobs are not "
			 "pre-staged");
	t_start = time(NULL);
	last_conf = 0;
	/* The first turn at once, by a poke: the turns read sched_ticker,
	 * set before the poke. */
	sched_ticker = ticker_start(SLURMSCHED_INTERVAL_S * 1000, false, run,
				    NULL);
	if (!sched_ticker)
		return errmsg_fail(err, errlen, errno,
				   "cannot start the Slurm "
				   "thread: %s",
				   strerror(errno));
	placement_on_change(poke, sched_ticker);
	ticker_poke(sched_ticker);
	return 0;
}

void slurmsched_stop(void)
{
	if (!sched_ticker)
		return;
	placement_on_change(NULL, NULL);
	ticker_stop(sched_ticker);
	sched_ticker = NULL;
	for (size_t i = 0; i < nasked; i++)
		free(asked[i]);
	free(asked);
	asked = NULL;
	nasked = 0;
}
