/* metrics.c - iostaged's Prometheus metrics (metrics.h).
 *
 * Everything is read from the daemon's own state at render time: tiers
 * from tiers.c and cache.c (as op_status does), progress and drain
 * accounting from the job table (jobs_status_json: one consistent view
 * under its lock), totals and per-job phases from stats.c. Rendering
 * never blocks on a staging thread or the PFS.
 *
 * Its state is struct metrics, one per agent; the other parts it reads
 * (stats, bwgov, telemetry, the cache) it reaches through the agent. The
 * sampler is a ticker (common/base/ticker.h).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <libgen.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cJSON.h>

#include "common/base/log.h"
#include "common/base/smallfile.h"
#include "common/base/ticker.h"
#include "common/net/httpmetrics.h"
#include "common/net/proto.h"
#include "common/telemetry/promtext.h"
#include "daemon/agent.h"
#include "daemon/cluster/peer.h"
#include "daemon/cluster/peer_fetch.h"
#include "daemon/fsutil.h"
#include "daemon/jobs.h"
#include "daemon/staging/bwgov.h"
#include "daemon/staging/cache.h"
#include "daemon/staging/tiers.h"
#include "daemon/telemetry/metrics.h"
#include "daemon/telemetry/stats.h"
#include "daemon/telemetry/telemetry.h"

#define METRICS_TICK_S 1        /* sampling period */
#define METRICS_ACTIVE_MAX 4096 /* jobs checked for "ended" per tick */
#define METRICS_DRAIN_RECORD_MAX (64 * 1024)

struct metrics {
	struct agent *agent; /* its cache, stats, bwgov and telemetry */
	const struct conf *conf;
	struct ticker *ticker; /* the sampler */
	unsigned ticks;        /* the ticker's turns (the textfile's period) */
	struct httpmetrics *http;
	bool textfile_warned;        /* the ticker's only */
	pthread_mutex_t sample_lock; /* one sample_jobs at a time: */
	uint32_t present[METRICS_ACTIVE_MAX], active[METRICS_ACTIVE_MAX];
};

/* What one sample of the job table found, for the gauges. */
struct sample {
	unsigned staging, staged, failed;
	uint64_t backlog_files, failed_files;
};

/* --- sampling the job table -------------------------------------------------
 */

static bool listed(const uint32_t *ids, size_t n, uint32_t id)
{
	for (size_t i = 0; i < n; i++)
		if (ids[i] == id)
			return true;
	return false;
}

/* The non-negative finite number at KEY of O, else 0. */
static double number(const cJSON *o, const char *key)
{
	double v = cJSON_GetNumberValue(
	    cJSON_GetObjectItemCaseSensitive(o, key));

	return v == v && v > 0 && v < 1e18 ? v : 0;
}

/* A finished job's last drain figures, from StateDir/drain/J.json (root's,
 * written by drain.c; read leniently). */
static void final_drain(struct metrics *m, uint32_t id)
{
	char path[CONF_PATH_MAX + 32], reason[128], *text;
	cJSON *o;

	snprintf(path, sizeof(path), "%s/drain/%" PRIu32 ".json",
		 m->conf->state_dir, id);
	text = smallfile_read(path, METRICS_DRAIN_RECORD_MAX, reason,
			      sizeof(reason));
	if (!text)
		return; /* no outputs */
	o = cJSON_Parse(text);
	if (o && proto_u64(o, "job") == id)
		stats_job_drained(m->agent->stats, id,
				  proto_u64(o, "during_bytes") +
				      proto_u64(o, "end_bytes"),
				  proto_u64(o, "during_files") +
				      proto_u64(o, "end_files"),
				  number(o, "end_seconds"));
	cJSON_Delete(o);
	free(text);
}

/* Bring stats.c up to date with the job table; fill *ret. */
/* A running job's phases from its telemetry record (the run's bytes so
 * far, its sub-phases), replacing what the job table alone tells. */
static void run_phases(struct metrics *m, uint32_t id)
{
	char err[256];
	cJSON *record = telemetry_record(m->agent->telemetry, id, 0, err,
					 sizeof(err));

	if (record)
		stats_job_record(m->agent->stats, id, record);
	cJSON_Delete(record);
}

/* Under M's sample_lock (its present[] and active[]). */
static void sample_jobs(struct metrics *m, struct sample *ret)
{
	uint32_t *present = m->present, *active = m->active;
	struct stats *stats = m->agent->stats;
	cJSON *jobs, *j;
	size_t npresent = 0, nactive, i;
	time_t now = time(NULL);

	memset(ret, 0, sizeof(*ret));
	if (!stats)
		return; /* an agent without figures: nothing to follow */
	jobs = jobs_status_json(m->agent->jobs, 0);
	if (!jobs)
		return; /* ENOMEM: try again next tick */
	cJSON_ArrayForEach(j, jobs) {
		const cJSON *st = cJSON_GetObjectItem(j, "state");
		const cJSON *drain = cJSON_GetObjectItem(j, "drain");
		uint32_t id = (uint32_t)proto_u64(j, "job");
		uint64_t bytes = proto_u64(j, "bytes");
		double rate = number(j, "rate_bps");

		if (cJSON_IsTrue(cJSON_GetObjectItem(j, "prestage")) || !id)
			continue;
		if (npresent < METRICS_ACTIVE_MAX)
			present[npresent++] = id;
		if (cJSON_IsString(st) && !strcmp(st->valuestring, "staging")) {
			ret->staging++;
			stats_job_staging(stats, id, bytes,
					  rate > 0 ? (double)bytes / rate : 0);
		} else if (cJSON_IsString(st) &&
			   !strcmp(st->valuestring, "staged")) {
			ret->staged++;
			run_phases(m, id);
		} else {
			ret->failed++;
		}
		if (cJSON_IsObject(drain)) {
			ret->backlog_files += proto_u64(drain, "backlog_files");
			ret->failed_files += proto_u64(drain, "failed_files");
			stats_job_drained(stats, id,
					  proto_u64(drain, "during_bytes") +
					      proto_u64(drain, "end_bytes"),
					  proto_u64(drain, "during_files") +
					      proto_u64(drain, "end_files"),
					  number(drain, "end_seconds"));
		}
		/* After the calls above may have created its entry. */
		stats_job_owner(stats, id, (uid_t)proto_u64(j, "uid"));
	}
	cJSON_Delete(jobs);
	/* A job stats.c follows that is no longer in the table has finished
	 * (an overflowing table is never declared finished). */
	nactive = stats_active_jobs(stats, active, METRICS_ACTIVE_MAX);
	for (i = 0; i < nactive && npresent < METRICS_ACTIVE_MAX; i++) {
		if (listed(present, npresent, active[i]))
			continue;
		final_drain(m, active[i]);
		stats_job_ended(stats, active[i], now);
	}
	stats_prune(stats, now, m->conf->metrics_job_grace);
}

/* --- rendering
 * ------------------------------------------------------------------ */

static int tier_families(struct metrics *m, struct promtext *pt)
{
	const struct conf *mconf = m->conf;
	static const struct {
		const char *name, *help;
	} fams[] = {
		{ "iostage_tier_capacity_bytes",
		  "Tier size: Capacity, or its file system's size" },
		{ "iostage_tier_used_bytes",
		  "Bytes in use on the tier (cache, jobs, reservations)" },
		{ "iostage_tier_free_bytes",
		  "Bytes a new dataset may still take on the tier" },
		{ "iostage_tier_reserved_bytes",
		  "Bytes promised to copies in flight" },
		{ "iostage_tier_cache_bytes",
		  "Bytes held by cached datasets on the tier" },
		{ "iostage_tier_cached_datasets",
		  "Cache entries (dataset versions) on the tier" },
		{ "iostage_tier_jobs", "Jobs with a directory on the tier" },
	};
	struct tiers_usage u[CONF_MAX_TIERS];
	unsigned entries[CONF_MAX_TIERS], counts[CONF_MAX_TIERS];
	size_t f, t, n = mconf->ntiers;

	jobs_tier_counts(m->agent->jobs, counts);
	for (t = 0; t < n; t++) {
		memset(&u[t], 0, sizeof(u[t]));
		(void)tiers_usage(m->agent->tiers, (int)t, &u[t]);
		entries[t] = 0;
		if (m->agent->cache)
			cache_tier_counts(m->agent->cache, (int)t, &entries[t],
					  NULL);
	}
	for (f = 0; f < sizeof(fams) / sizeof(fams[0]); f++) {
		if (promtext_family(pt, fams[f].name, "gauge", fams[f].help) <
		    0)
			return -1;
		for (t = 0; t < n; t++) {
			const char *labels[] = {
				"tier", mconf->tiers[t].name, "medium",
				conf_medium_name(mconf->tiers[t].medium), NULL
			};
			double v[] = {
				(double)u[t].capacity, (double)u[t].used,
				(double)u[t].free,     (double)u[t].reserved,
				(double)u[t].cache,    (double)entries[t],
				(double)counts[t]
			};

			if (promtext_sample(pt, fams[f].name, labels, v[f]) < 0)
				return -1;
		}
	}
	return 0;
}

static int counter(struct promtext *pt, const char *name, const char *help,
		   double v)
{
	if (promtext_family(pt, name, "counter", help) < 0 ||
	    promtext_sample(pt, name, NULL, v) < 0)
		return -1;
	return 0;
}

static int gauge(struct promtext *pt, const char *name, const char *help,
		 double v)
{
	if (promtext_family(pt, name, "gauge", help) < 0 ||
	    promtext_sample(pt, name, NULL, v) < 0)
		return -1;
	return 0;
}

/* StageBandwidth=: the cluster's budget, this node's share of it now,
 * the copies held to it, and whether the share is the local fallback
 * (iostagectld did not answer). Only when a budget is set. */
static int bandwidth_families(struct metrics *m, struct promtext *pt)
{
	struct bwgov_status b;

	bwgov_status(m->agent->bwgov, &b);
	if (!b.bounded)
		return 0;
	if (gauge(pt, "iostage_stage_bandwidth_budget_bytes_per_second",
		  "StageBandwidth=: what all nodes' staging copies share",
		  (double)b.budget) < 0 ||
	    gauge(pt, "iostage_stage_bandwidth_share_bytes_per_second",
		  "This node's share of the staging bandwidth now (0 while "
		  "it copies nothing)",
		  (double)b.node_share) < 0 ||
	    gauge(pt, "iostage_stage_bandwidth_copies",
		  "Staging copies on this node held to its share",
		  (double)b.copies) < 0 ||
	    gauge(pt, "iostage_stage_bandwidth_fallback",
		  "1 while iostagectld does not answer and the node takes "
		  "StageBandwidthFallback=",
		  b.fallback ? 1 : 0) < 0)
		return -1;
	return 0;
}

/* What this node sent other nodes' stage workers (fetch sessions). */
static int peer_fetch_families(struct metrics *m, struct promtext *pt)
{
	struct peer_fetch_counts c;

	peer_fetch_counts(peer_fetcher(m->agent->peer), &c);
	if (counter(pt, "iostage_peer_fetch_served_bytes_total",
		    "Bytes of cache versions sent to other nodes' stage "
		    "workers",
		    (double)c.bytes) < 0 ||
	    counter(pt, "iostage_peer_fetch_served_files_total",
		    "Files of cache versions sent to other nodes' stage "
		    "workers",
		    (double)c.files) < 0 ||
	    counter(pt, "iostage_peer_fetch_sessions_total",
		    "Fetch sessions other nodes opened here",
		    (double)c.sessions) < 0 ||
	    counter(pt, "iostage_peer_fetch_refused_total",
		    "Fetch sessions refused (not found, not the user's, over "
		    "PeerFetchSessions)",
		    (double)c.refused) < 0 ||
	    gauge(pt, "iostage_peer_fetch_sessions",
		  "Fetch sessions being served now", (double)c.active) < 0)
		return -1;
	return 0;
}

static int total_families(struct metrics *m, struct promtext *pt,
			  const struct sample *s)
{
	struct stats_totals t;
	const char *staged[] = { "result", "staged", NULL };
	const char *failed[] = { "result", "failed", NULL };
	const char *st_staging[] = { "state", "staging", NULL };
	const char *st_staged[] = { "state", "staged", NULL };
	const char *st_failed[] = { "state", "failed", NULL };

	memset(&t, 0, sizeof(t));
	if (m->agent->stats)
		stats_get_totals(m->agent->stats, &t);
	if (counter(pt, "iostage_stage_bytes_total",
		    "Bytes of datasets made available to jobs and warm-ups "
		    "(cache hits and builds)",
		    (double)t.staged_bytes) < 0 ||
	    counter(pt, "iostage_stage_files_total",
		    "Files of datasets made available to jobs and warm-ups",
		    (double)t.staged_files) < 0 ||
	    counter(pt, "iostage_stage_copied_bytes_total",
		    "Bytes copied from the PFS to build cache versions",
		    (double)t.copied_bytes) < 0 ||
	    counter(pt, "iostage_stage_copied_files_total",
		    "Files copied from the PFS to build cache versions",
		    (double)t.copied_files) < 0 ||
	    counter(pt, "iostage_stage_linked_files_total",
		    "Unchanged files linked from a previous cache version",
		    (double)t.linked_files) < 0 ||
	    counter(pt, "iostage_stage_seconds_total",
		    "Seconds spent staging, summed over jobs and warm-ups",
		    t.stage_seconds) < 0 ||
	    counter(pt, "iostage_cache_hits_total",
		    "Datasets served from the cache without a copy",
		    (double)t.cache_hits) < 0 ||
	    counter(pt, "iostage_cache_misses_total",
		    "Datasets that needed a cache build (new or changed)",
		    (double)t.cache_misses) < 0)
		return -1;
	if (promtext_family(pt, "iostage_stage_jobs_total", "counter",
			    "Jobs whose staging ended, by result") < 0 ||
	    promtext_sample(pt, "iostage_stage_jobs_total", staged,
			    (double)t.jobs_staged) < 0 ||
	    promtext_sample(pt, "iostage_stage_jobs_total", failed,
			    (double)t.jobs_failed) < 0)
		return -1;
	if (promtext_family(pt, "iostage_jobs", "gauge",
			    "Jobs the daemon holds now, by staging state") <
		0 ||
	    promtext_sample(pt, "iostage_jobs", st_staging, s->staging) < 0 ||
	    promtext_sample(pt, "iostage_jobs", st_staged, s->staged) < 0 ||
	    promtext_sample(pt, "iostage_jobs", st_failed, s->failed) < 0)
		return -1;
	if (gauge(pt, "iostage_drain_backlog_files",
		  "Output files waiting to be drained to the PFS",
		  (double)s->backlog_files) < 0 ||
	    gauge(pt, "iostage_drain_failed_files",
		  "Output files of current jobs that could not be drained",
		  (double)s->failed_files) < 0)
		return -1;
	return peer_fetch_families(m, pt) < 0 ? -1 : bandwidth_families(m, pt);
}

char *metrics_render(struct metrics *m, bool all_jobs, uid_t viewer,
		     size_t *ret_len)
{
	const char *version[] = { "version", IOSTAGE_VERSION, NULL };
	struct promtext *pt = promtext_create();
	struct sample s;
	cJSON *records = NULL;
	const char *text;
	char *copy = NULL;
	size_t len;

	if (!pt)
		return NULL;
	pthread_mutex_lock(&m->sample_lock);
	sample_jobs(m, &s);
	pthread_mutex_unlock(&m->sample_lock);
	records = m->agent->stats
		      ? stats_job_records(m->agent->stats, all_jobs, viewer)
		      : cJSON_CreateArray();
	if (!records ||
	    promtext_family(pt, "iostage_build_info", "gauge",
			    "Always 1; the iostaged version as a label") < 0 ||
	    promtext_sample(pt, "iostage_build_info", version, 1) < 0 ||
	    tier_families(m, pt) < 0 || total_families(m, pt, &s) < 0 ||
	    promtext_job_phases(pt, records) < 0)
		goto out;
	text = promtext_text(pt, &len);
	if (text && (copy = malloc(len + 1))) {
		memcpy(copy, text, len + 1);
		*ret_len = len;
	}
out:
	cJSON_Delete(records);
	promtext_destroy(pt);
	return copy;
}

/* --- the textfile
 * ------------------------------------------------------------------ */

int metrics_write_textfile(const char *path, const char *text, size_t len)
{
	char dir[CONF_PATH_MAX], base[CONF_PATH_MAX], tmp[CONF_PATH_MAX + 32];
	int dfd, fd = -1, saved;

	snprintf(dir, sizeof(dir), "%s", path);
	snprintf(base, sizeof(base), "%s", path);
	dfd = open(dirname(dir), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return -1;
	/* NAME.prom.PID: not *.prom, so the collector never reads it. */
	snprintf(tmp, sizeof(tmp), "%s.%d", basename(base), (int)getpid());
	(void)unlinkat(dfd, tmp, 0); /* left by a crash of this pid */
	fd = openat(dfd, tmp,
		    O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
	if (fd < 0)
		goto fail;
	if (fchmod(fd, 0644) < 0 || fsutil_write_all(fd, text, len) < 0 ||
	    fsync(fd) < 0)
		goto fail;
	if (close(fd) < 0) {
		fd = -1;
		goto fail;
	}
	fd = -1;
	if (renameat(dfd, tmp, dfd, basename(base)) < 0)
		goto fail;
	close(dfd);
	return 0;
fail:
	saved = errno;
	if (fd >= 0)
		close(fd);
	(void)unlinkat(dfd, tmp, 0);
	close(dfd);
	errno = saved;
	return -1;
}

static void write_textfile(struct metrics *m)
{
	size_t len = 0;
	/* The textfile is for node_exporter, which serves it to whoever
	 * scrapes it: every job (iostage.conf(5) says so). */
	char *text = metrics_render(m, true, 0, &len);

	if (!text)
		return;
	if (metrics_write_textfile(m->conf->metrics_textfile, text, len) < 0) {
		if (!m->textfile_warned)
			log_warning("MetricsTextfile %s: cannot write (will "
				    "keep trying, warning once)",
				    m->conf->metrics_textfile);
		m->textfile_warned = true;
	} else if (m->textfile_warned) {
		log_info("MetricsTextfile %s: written again",
			 m->conf->metrics_textfile);
		m->textfile_warned = false;
	}
	free(text);
}

/* The ticker's turn, every second (so that ended jobs and the grace
 * period are timely without scrapes); the textfile every MetricsInterval
 * turns. */
static void sampler_turn(void *arg, bool poked)
{
	struct metrics *m = arg;

	(void)poked;
	if (m->conf->metrics_textfile[0] &&
	    m->ticks % m->conf->metrics_interval == 0) {
		write_textfile(m); /* samples too */
	} else {
		struct sample s;

		pthread_mutex_lock(&m->sample_lock);
		sample_jobs(m, &s);
		pthread_mutex_unlock(&m->sample_lock);
	}
	m->ticks++;
}

/* httpmetrics_render_fn: the page, per-job series as its viewer may
 * see them (a user their own jobs, root and remote Prometheus all). */
static char *render_page(void *arg, bool all, uid_t viewer, size_t *ret_len)
{
	return metrics_render(arg, all, viewer, ret_len);
}

struct metrics *metrics_create(struct agent *a, const struct conf *conf)
{
	struct metrics *m = calloc(1, sizeof(*m));
	char err[CONF_ERR_MAX];

	if (!m)
		return NULL;
	m->agent = a;
	m->conf = conf;
	pthread_mutex_init(&m->sample_lock, NULL);
	m->ticker = ticker_start(METRICS_TICK_S * 1000, true, sampler_turn, m);
	if (!m->ticker)
		log_warningx("metrics: cannot start the sampler thread; "
			     "per-job series will not expire");
	if (!conf->metrics_listen[0])
		return m;
	/* Staging is what jobs need; metrics are for watching it. A port
	 * in use must not keep a node from running jobs. */
	m->http = httpmetrics_start("MetricsListen", conf->metrics_listen,
				    render_page, m, err, sizeof(err));
	if (!m->http) {
		log_warningx("%s; serving without /metrics", err);
		return m;
	}
	log_info("metrics: serving http://%s/metrics", conf->metrics_listen);
	return m;
}

void metrics_destroy(struct metrics *m)
{
	if (!m)
		return;
	httpmetrics_stop(m->http);
	ticker_stop(m->ticker);
	pthread_mutex_destroy(&m->sample_lock);
	free(m);
}
