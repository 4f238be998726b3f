/* bwgov.c - this node's share of the staging bandwidth (see bwgov.h).
 *
 * One thread asks iostagectld for the node's lease while copies run and
 * writes each copy's rate; begin/end redistribute at once under the same
 * lock, so a new copy starts at its share of what the node holds (or
 * paused, rate 0, until the node's first lease arrives).
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

#include "common/net/ctlclient.h"
#include "common/base/deadline.h"
#include "common/base/log.h"
#include "common/net/proto.h"
#include "common/fs/ratelimit.h"
#include "common/sched/bwshare.h"
#include "common/base/units.h"
#include "daemon/staging/bwgov.h"

struct bwgov_slot {
	_Atomic uint64_t *rate; /* the shared page */
	unsigned weight;        /* BWSHARE_WEIGHT_STAGING or _PRESTAGE */
	struct bwgov_slot *next;
};

static const struct conf *gov_conf;
static pthread_mutex_t gov_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t gov_cond = PTHREAD_COND_INITIALIZER;
static pthread_t gov_thread;
static bool gov_running, gov_stop;
static struct bwgov_slot *slots;
static unsigned ncopies;
static uint64_t node_share;   /* bytes/s this node holds */
static bool holding;          /* a lease to give back */
static bool fallback;

static uint64_t fallback_share(void)
{
	uint64_t f = gov_conf->stage_bandwidth_fallback;

	if (!f)
		f = gov_conf->stage_bandwidth / 8;
	if (f > gov_conf->stage_bandwidth)
		f = gov_conf->stage_bandwidth;
	return f ? f : 1;
}

/* Every copy gets its weight's part of the node's share: a pre-stage one
 * part, a starting job's copy four. Lock held. */
static void distribute(void)
{
	uint64_t weights = 0;

	for (struct bwgov_slot *s = slots; s; s = s->next)
		weights += s->weight;
	for (struct bwgov_slot *s = slots; s; s = s->next)
		atomic_store(s->rate, weights ? node_share / weights * s->weight
					      : 0);
}

/* The node's weight in the cluster's table: that of its heaviest copy
 * (a node that only pre-stages yields to nodes starting jobs). Lock
 * held. */
static unsigned node_weight(void)
{
	unsigned w = BWSHARE_WEIGHT_PRESTAGE;

	for (struct bwgov_slot *s = slots; s; s = s->next)
		if (s->weight > w)
			w = s->weight;
	return w;
}

/* Ask the service: WANT takes/renews with WEIGHT, !WANT gives back. 0 with
 * the grant and when to ask again, or -1 with err. */
static int ask(bool want, unsigned weight, uint64_t *ret_grant,
	       long *ret_renew_ms, char *err, size_t errlen)
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

static void *gov_main(void *arg)
{
	char err[CONF_ERR_MAX], b1[32], b2[32];
	struct timespec until;

	(void)arg;
	pthread_mutex_lock(&gov_lock);
	while (!gov_stop) {
		uint64_t grant = 0;
		long renew_ms = BWGOV_FALLBACK_RETRY_MS;
		bool want = ncopies > 0;
		unsigned weight = node_weight();
		int r;

		if (!want && !holding) {
			pthread_cond_wait(&gov_cond, &gov_lock);
			continue;
		}
		pthread_mutex_unlock(&gov_lock);
		r = ask(want, weight, &grant, &renew_ms, err, sizeof(err));
		pthread_mutex_lock(&gov_lock);
		if (!want) {
			holding = false; /* given back, or it expires */
			continue;
		}
		holding = true;
		if (r < 0) {
			if (!fallback)
				log_warningx("stage bandwidth: no share from "
					     "iostagectld (%s): copies on this "
					     "node limited to %s/s, a "
					     "conservative local share, until "
					     "it answers",
					     err,
					     units_bytes(fallback_share(), b1,
							 sizeof(b1)));
			fallback = true;
			grant = fallback_share();
			renew_ms = BWGOV_FALLBACK_RETRY_MS;
		} else if (fallback) {
			fallback = false;
			log_info("stage bandwidth: iostagectld answers again: "
				 "this node's share is %s/s of %s/s",
				 units_bytes(grant, b1, sizeof(b1)),
				 units_bytes(gov_conf->stage_bandwidth, b2,
					     sizeof(b2)));
		}
		node_share = grant;
		distribute();
		deadline_after_ms(CLOCK_MONOTONIC, renew_ms, &until);
		/* Woken early by the first copy or the last one's end. */
		pthread_cond_timedwait(&gov_cond, &gov_lock, &until);
	}
	pthread_mutex_unlock(&gov_lock);
	return NULL;
}

void bwgov_init(const struct conf *conf)
{
	pthread_condattr_t ca;
	char b[32];

	gov_conf = conf;
	if (!conf->stage_bandwidth)
		return;
	if (!ctl_configured(conf)) {
		/* No service: this node is the cluster. */
		node_share = conf->stage_bandwidth;
		log_info("stage bandwidth: %s/s for this node's copies "
			 "(StageBandwidth=, no ControllerHost=)",
			 units_bytes(conf->stage_bandwidth, b, sizeof(b)));
		return;
	}
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&gov_cond, &ca);
	pthread_condattr_destroy(&ca);
	if (pthread_create(&gov_thread, NULL, gov_main, NULL) != 0) {
		log_warning("stage bandwidth: cannot start the lease thread; "
			    "copies take the fallback share");
		fallback = true;
		node_share = fallback_share();
		return;
	}
	gov_running = true;
}

void bwgov_fini(void)
{
	char err[CONF_ERR_MAX];
	uint64_t g;
	long ms;

	if (!gov_running)
		return;
	pthread_mutex_lock(&gov_lock);
	gov_stop = true;
	pthread_cond_broadcast(&gov_cond);
	pthread_mutex_unlock(&gov_lock);
	pthread_join(gov_thread, NULL);
	gov_running = false;
	if (holding)
		(void)ask(false, BWSHARE_WEIGHT_PRESTAGE, &g, &ms, err,
			  sizeof(err));
}

int bwgov_begin(bool prestage, struct bwgov_slot **ret_slot)
{
	struct bwgov_slot *s;
	void *page;
	int fd;

	*ret_slot = NULL;
	if (!gov_conf || !gov_conf->stage_bandwidth)
		return -1;
	s = calloc(1, sizeof(*s));
	fd = memfd_create("iostage-rate", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (!s || fd < 0 || ftruncate(fd, sysconf(_SC_PAGESIZE)) < 0)
		goto fail;
	page = mmap(NULL, (size_t)sysconf(_SC_PAGESIZE),
		    PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
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
	pthread_mutex_lock(&gov_lock);
	s->next = slots;
	slots = s;
	ncopies++;
	distribute();
	pthread_cond_broadcast(&gov_cond);
	pthread_mutex_unlock(&gov_lock);
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

void bwgov_end(struct bwgov_slot *slot)
{
	if (!slot)
		return;
	pthread_mutex_lock(&gov_lock);
	for (struct bwgov_slot **p = &slots; *p; p = &(*p)->next)
		if (*p == slot) {
			*p = slot->next;
			break;
		}
	ncopies--;
	distribute();
	if (!ncopies && gov_running) {
		node_share = 0;
		pthread_cond_broadcast(&gov_cond);
	}
	pthread_mutex_unlock(&gov_lock);
	munmap((void *)slot->rate, (size_t)sysconf(_SC_PAGESIZE));
	free(slot);
}

void bwgov_status(struct bwgov_status *ret)
{
	pthread_mutex_lock(&gov_lock);
	ret->bounded = gov_conf && gov_conf->stage_bandwidth;
	ret->budget = gov_conf ? gov_conf->stage_bandwidth : 0;
	ret->node_share = ncopies ? node_share : 0;
	ret->copies = ncopies;
	ret->fallback = fallback;
	pthread_mutex_unlock(&gov_lock);
}
