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
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <slurm/slurm.h>
#include <slurm/slurm_errno.h>

#include "common/dsfeature.h"
#include "common/errmsg.h"
#include "common/log.h"
#include "ctld/placement.h"
#include "ctld/slurmsched.h"

/* A node that has not reported for this long (iostaged gone) loses its
 * features; the nodes report at least every CACHEREPORT_INTERVAL_S. */
#define STALE_REPORT_S 180
/* How often the SchedulerParameters are read again. */
#define CONF_CHECK_S 60
/* Jobs whose start was counted (a hash set; cleared when full). */
#define COUNTED_MAX 65536

static pthread_t thread;
static bool started;
static volatile bool stopping;
static bool prefer_safe;
static pthread_mutex_t safe_mu = PTHREAD_MUTEX_INITIALIZER;
static time_t t_start;
static uint32_t counted[COUNTED_MAX];
static size_t ncounted;

bool slurmsched_prefer_safe(void)
{
	bool r;

	pthread_mutex_lock(&safe_mu);
	r = prefer_safe;
	pthread_mutex_unlock(&safe_mu);
	return r;
}

static void check_sched_params(void)
{
	static bool warned;
	slurm_conf_t *c = NULL;
	bool safe;

	if (slurm_load_ctl_conf((time_t)0, &c) != SLURM_SUCCESS || !c) {
		log_warningx("placement: cannot read slurmctld's configuration: "
			     "%s", slurm_strerror(slurm_get_errno()));
		return;
	}
	safe = c->sched_params &&
	       strcasestr(c->sched_params, "ignore_prefer_validation");
	slurm_free_ctl_conf(c);
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

static bool reported_recently(const char *node, time_t now)
{
	char **names;
	size_t n;
	bool r = false;

	(void)now;
	names = placement_nodes(&n);
	for (size_t i = 0; i < n; i++) {
		if (!strcmp(names[i], node))
			r = true;
		free(names[i]);
	}
	free(names);
	return r;
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
	if (reported_recently(ni->name, now))
		n = placement_wanted(ni->name, want, PLACEMENT_NODE_FEATURES);
	else if (now - t_start < STALE_REPORT_S)
		return; /* the node may report soon: keep what it shows */
	for (size_t i = 0; i < n; i++)
		ptrs[i] = want[i];
	if (!slurmsched_prefer_safe())
		n = 0; /* nothing would use them */
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
			     ni->name, slurm_strerror(slurm_get_errno()));
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
			     slurm_strerror(slurm_get_errno()));
		return;
	}
	for (uint32_t i = 0; i < nodes->record_count && !stopping; i++)
		if (nodes->node_array[i].name)
			publish_node(&nodes->node_array[i], now);
	slurm_free_node_info_msg(nodes);
}

static bool counted_add(uint32_t id)
{
	size_t h = (id * 2654435761u) % COUNTED_MAX;

	if (ncounted >= COUNTED_MAX * 3 / 4) {
		memset(counted, 0, sizeof(counted));
		ncounted = 0;
	}
	while (counted[h]) {
		if (counted[h] == id)
			return false;
		h = (h + 1) % COUNTED_MAX;
	}
	counted[h] = id;
	ncounted++;
	return true;
}

/* "n[1-3],n5" -> "n1,n2,n3,n5" (new string, caller frees), NULL on
 * error. */
static char *expand_nodes(const char *list)
{
	hostlist_t hl = slurm_hostlist_create(list);
	char *h, *out = NULL;
	size_t len = 0;

	if (!hl)
		return NULL;
	while ((h = slurm_hostlist_shift(hl))) {
		size_t l = strlen(h);
		char *o = realloc(out, len + l + 2);

		if (!o) {
			free(h);
			break;
		}
		out = o;
		if (len)
			out[len++] = ',';
		memcpy(out + len, h, l + 1);
		len += l;
		free(h);
	}
	slurm_hostlist_destroy(hl);
	return out;
}

static void watch_jobs(void)
{
	job_info_msg_t *jobs = NULL;

	if (slurm_load_jobs((time_t)0, &jobs, SHOW_ALL) != SLURM_SUCCESS ||
	    !jobs)
		return;
	for (uint32_t i = 0; i < jobs->record_count; i++) {
		const slurm_job_info_t *j = &jobs->job_array[i];
		unsigned state = j->job_state & JOB_STATE_BASE;
		char *list;

		if (state == JOB_PENDING || !j->nodes || !j->nodes[0] ||
		    !j->prefer || !strstr(j->prefer, DSFEATURE_PREFIX) ||
		    j->start_time < t_start || !counted_add(j->job_id))
			continue;
		list = expand_nodes(j->nodes);
		if (list)
			placement_count_start(j->prefer, list);
		free(list);
	}
	slurm_free_job_info_msg(jobs);
}

static void *run(void *arg)
{
	time_t last_conf = 0, now;

	(void)arg;
	while (!stopping) {
		now = time(NULL);
		if (now - last_conf >= CONF_CHECK_S || !slurmsched_prefer_safe()) {
			check_sched_params();
			last_conf = now;
		}
		publish_all(now);
		watch_jobs();
		placement_wait_change(SLURMSCHED_INTERVAL_S * 1000);
	}
	return NULL;
}

int slurmsched_start(const struct conf *conf, char *err, size_t errlen)
{
	int rc;

	(void)conf;
	slurm_init(NULL);
	t_start = time(NULL);
	stopping = false;
	rc = pthread_create(&thread, NULL, run, NULL);
	if (rc)
		return errmsg_fail(err, errlen, rc, "cannot start the Slurm "
				   "thread: %s", strerror(rc));
	started = true;
	return 0;
}

void slurmsched_stop(void)
{
	if (!started)
		return;
	stopping = true;
	placement_wake();
	pthread_join(thread, NULL);
	started = false;
}
