/* bwgov.c - this node's share of the staging bandwidth (see bwgov.h).
 *
 * One thread asks iostagectld for the node's lease while copies run and
 * writes each copy's rate; begin/end redistribute at once under the same
 * lock, so a new copy starts at its share of what the node holds (or
 * paused, rate 0, until the node's first lease arrives). The thread is a
 * ticker (common/base/ticker.h) whose turn says when the next is due.
 * Everything lives in struct bwgov, one per agent (daemon/agent.h).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <cJSON.h>

#include "common/base/log.h"
#include "common/base/ticker.h"
#include "common/base/units.h"
#include "common/fs/ratelimit.h"
#include "common/net/ctlclient.h"
#include "common/net/proto.h"
#include "common/sched/bwshare.h"
#include "daemon/staging/bwgov.h"

struct bwgov_slot {
	_Atomic uint64_t *rate; /* the shared page */
	unsigned weight;        /* BWSHARE_WEIGHT_STAGING or _PRESTAGE */
	struct bwgov_slot *next;
};

struct bwgov {
	const struct conf *conf;
	struct ticker *ticker; /* the lease's; NULL: no service to ask */
	pthread_mutex_t lock;  /* everything below */
	struct bwgov_slot *slots;
	unsigned ncopies;
	uint64_t node_share; /* bytes/s this node holds */
	bool holding;        /* a lease to give back */
	bool fallback;
};

static uint64_t fallback_share(const struct conf *conf)
{
	uint64_t f = conf->stage_bandwidth_fallback;

	if (!f)
		f = conf->stage_bandwidth / 8;
	if (f > conf->stage_bandwidth)
		f = conf->stage_bandwidth;
	return f ? f : 1;
}

/* Every copy gets its weight's part of the node's share: a pre-stage one
 * part, a starting job's copy four. Lock held. */
static void distribute(struct bwgov *g)
{
	uint64_t weights = 0;

	for (struct bwgov_slot *s = g->slots; s; s = s->next)
		weights += s->weight;
	for (struct bwgov_slot *s = g->slots; s; s = s->next)
		atomic_store(s->rate,
			     weights ? g->node_share / weights * s->weight : 0);
}

/* The node's weight in the cluster's table: that of its heaviest copy
 * (a node that only pre-stages yields to nodes starting jobs). Lock
 * held. */
static unsigned node_weight(const struct bwgov *g)
{
	unsigned w = BWSHARE_WEIGHT_PRESTAGE;

	for (struct bwgov_slot *s = g->slots; s; s = s->next)
		if (s->weight > w)
			w = s->weight;
	return w;
}

/* Ask the service: WANT takes/renews with WEIGHT, !WANT gives back. 0 with
 * the grant and when to ask again, or -1 with err. */
static int ask(const struct conf *gov_conf, bool want, unsigned weight,
	       uint64_t *ret_grant, long *ret_renew_ms, char *err,
	       size_t errlen)
{
	cJSON *req = cJSON_CreateObject(), *reply = NULL;
	const cJSON *ok, *e;
	int rc = -1;

	if (!req || !cJSON_AddStringToObject(req, "op", "stage_bw") ||
	    !cJSON_AddStringToObject(req, "node", gov_conf->node_name) ||
	    !cJSON_AddBoolToObject(req, "want", want) ||
	    !cJSON_AddNumberToObject(req, "weight", weight)) {
		snprintf(err, errlen, "out of memory");
		goto out;
	}
	if (ctl_request_timeout(gov_conf, req, BWGOV_ASK_TIMEOUT_MS, &reply,
				err, errlen) < 0)
		goto out;
	ok = cJSON_GetObjectItemCaseSensitive(reply, "ok");
	if (!cJSON_IsTrue(ok)) {
		e = cJSON_GetObjectItemCaseSensitive(reply, "error");
		snprintf(err, errlen, "%s",
			 cJSON_IsString(e) ? e->valuestring : "refused");
		goto out;
	}
	if (!proto_u64(reply, "budget")) {
		/* The service has no StageBandwidth=: its iostage.conf and
		 * ours differ. Ours holds: take the fallback. */
		snprintf(err, errlen,
			 "iostagectld has no StageBandwidth= (its "
			 "iostage.conf differs from this node's)");
		goto out;
	}
	/* Never more than our own budget, whatever the reply says; renew
	 * within the lease's period. */
	*ret_grant = proto_u64(reply, "grant");
	if (*ret_grant > gov_conf->stage_bandwidth)
		*ret_grant = gov_conf->stage_bandwidth;
	*ret_renew_ms = (long)proto_u64(reply, "renew_ms");
	if (*ret_renew_ms < 50)
		*ret_renew_ms = 50;
	if (*ret_renew_ms > BWGOV_RENEW_MAX_MS)
		*ret_renew_ms = BWGOV_RENEW_MAX_MS;
	rc = 0;
out:
	cJSON_Delete(req);
	cJSON_Delete(reply);
	return rc;
}

/* One turn of the lease's ticker: while copies run (or a lease is held),
 * ask and redistribute, next when the service says to renew; idle, wait
 * for a poke (the first copy). */
static void gov_turn(void *arg, bool poked)
{
	struct bwgov *g = arg;
	char err[CONF_ERR_MAX], b1[32], b2[32];
	uint64_t grant = 0;
	long renew_ms = BWGOV_FALLBACK_RETRY_MS;
	bool want;
	unsigned weight;
	int r;

	(void)poked;
	pthread_mutex_lock(&g->lock);
	want = g->ncopies > 0;
	weight = node_weight(g);
	if (!want && !g->holding) {
		pthread_mutex_unlock(&g->lock);
		ticker_next(g->ticker, BWGOV_IDLE_MS);
		return;
	}
	pthread_mutex_unlock(&g->lock);
	r = ask(g->conf, want, weight, &grant, &renew_ms, err, sizeof(err));
	pthread_mutex_lock(&g->lock);
	if (!want) {
		g->holding = false; /* given back, or it expires */
		pthread_mutex_unlock(&g->lock);
		ticker_next(g->ticker, BWGOV_IDLE_MS);
		return;
	}
	g->holding = true;
	if (r < 0) {
		if (!g->fallback)
			log_warningx("stage bandwidth: no share from "
				     "iostagectld (%s): copies on this "
				     "node limited to %s/s, a "
				     "conservative local share, until "
				     "it answers",
				     err,
				     units_bytes(fallback_share(g->conf), b1,
						 sizeof(b1)));
		g->fallback = true;
		grant = fallback_share(g->conf);
		renew_ms = BWGOV_FALLBACK_RETRY_MS;
	} else if (g->fallback) {
		g->fallback = false;
		log_info("stage bandwidth: iostagectld answers again: "
			 "this node's share is %s/s of %s/s",
			 units_bytes(grant, b1, sizeof(b1)),
			 units_bytes(g->conf->stage_bandwidth, b2, sizeof(b2)));
	}
	g->node_share = grant;
	distribute(g);
	pthread_mutex_unlock(&g->lock);
	/* Poked early by the first copy or the last one's end. */
	ticker_next(g->ticker, (unsigned)renew_ms);
}

struct bwgov *bwgov_create(struct agent *a, const struct conf *conf)
{
	struct bwgov *g = calloc(1, sizeof(*g));
	char b[32];

	(void)a;
	if (!g)
		return NULL;
	g->conf = conf;
	pthread_mutex_init(&g->lock, NULL);
	if (!conf->stage_bandwidth)
		return g;
	if (!ctl_configured(conf)) {
		/* No service: this node is the cluster. */
		g->node_share = conf->stage_bandwidth;
		log_info("stage bandwidth: %s/s for this node's copies "
			 "(StageBandwidth=, no ControllerHost=)",
			 units_bytes(conf->stage_bandwidth, b, sizeof(b)));
		return g;
	}
	g->ticker = ticker_start(BWGOV_IDLE_MS, false, gov_turn, g);
	if (!g->ticker) {
		log_warning("stage bandwidth: cannot start the lease thread; "
			    "copies take the fallback share");
		g->fallback = true;
		g->node_share = fallback_share(conf);
	}
	return g;
}

void bwgov_destroy(struct bwgov *g)
{
	char err[CONF_ERR_MAX];
	uint64_t grant;
	long ms;

	if (!g)
		return;
	if (g->ticker) {
		ticker_stop(g->ticker);
		if (g->holding)
			(void)ask(g->conf, false, BWSHARE_WEIGHT_PRESTAGE,
				  &grant, &ms, err, sizeof(err));
	}
	pthread_mutex_destroy(&g->lock);
	free(g);
}

int bwgov_begin(struct bwgov *g, bool prestage, struct bwgov_slot **ret_slot)
{
	struct bwgov_slot *s;
	void *page;
	int fd;

	*ret_slot = NULL;
	if (!g || !g->conf->stage_bandwidth)
		return -1;
	s = calloc(1, sizeof(*s));
	fd = memfd_create("iostage-rate", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (!s || fd < 0 || ftruncate(fd, sysconf(_SC_PAGESIZE)) < 0)
		goto fail;
	page = mmap(NULL, (size_t)sysconf(_SC_PAGESIZE), PROT_READ | PROT_WRITE,
		    MAP_SHARED, fd, 0);
	if (page == MAP_FAILED)
		goto fail;
	/* Our mapping stays writable; nobody else can ever write it. */
	if (fcntl(fd, F_ADD_SEALS,
		  F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_FUTURE_WRITE |
		      F_SEAL_SEAL) < 0) {
		munmap(page, (size_t)sysconf(_SC_PAGESIZE));
		goto fail;
	}
	s->rate = page;
	s->weight = prestage ? BWSHARE_WEIGHT_PRESTAGE : BWSHARE_WEIGHT_STAGING;
	pthread_mutex_lock(&g->lock);
	s->next = g->slots;
	g->slots = s;
	g->ncopies++;
	distribute(g);
	pthread_mutex_unlock(&g->lock);
	if (g->ticker)
		ticker_poke(g->ticker);
	*ret_slot = s;
	return fd;
fail:
	log_warning("stage bandwidth: cannot make a rate page; this copy "
		    "runs unbounded");
	if (fd >= 0)
		close(fd);
	free(s);
	return -1;
}

void bwgov_end(struct bwgov *g, struct bwgov_slot *slot)
{
	bool last;

	if (!g || !slot)
		return;
	pthread_mutex_lock(&g->lock);
	for (struct bwgov_slot **p = &g->slots; *p; p = &(*p)->next)
		if (*p == slot) {
			*p = slot->next;
			break;
		}
	g->ncopies--;
	distribute(g);
	last = !g->ncopies && g->ticker;
	if (last)
		g->node_share = 0;
	pthread_mutex_unlock(&g->lock);
	if (last)
		ticker_poke(g->ticker);
	munmap((void *)slot->rate, (size_t)sysconf(_SC_PAGESIZE));
	free(slot);
}

void bwgov_status(struct bwgov *g, struct bwgov_status *ret)
{
	memset(ret, 0, sizeof(*ret));
	if (!g)
		return;
	pthread_mutex_lock(&g->lock);
	ret->bounded = g->conf->stage_bandwidth != 0;
	ret->budget = g->conf->stage_bandwidth;
	ret->node_share = g->ncopies ? g->node_share : 0;
	ret->copies = g->ncopies;
	ret->fallback = g->fallback;
	pthread_mutex_unlock(&g->lock);
}
