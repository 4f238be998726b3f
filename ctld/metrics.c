/* metrics.c - iostagectld's /metrics page (see metrics.h). */
#define _GNU_SOURCE
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "common/base/log.h"
#include "common/history/history.h"
#include "common/net/httpmetrics.h"
#include "common/telemetry/promtext.h"
#include "ctld/metrics.h"
#include "ctld/sched/bw_ops.h"
#include "ctld/sched/sched_ops.h"
#include "ctld/sched/slurmsched.h"
#include "ctld/service.h"

#define METRICS_OPS_MAX 64

static struct httpmetrics *http;
static time_t started_at;

static int family1(struct promtext *pt, const char *name, const char *type,
		   const char *help, double v)
{
	return promtext_family(pt, name, type, help) < 0 ||
		       promtext_sample(pt, name, NULL, v) < 0
		   ? -1
		   : 0;
}

/* The number at KEY of O, 0 when absent. */
static double num(const cJSON *o, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);

	return cJSON_IsNumber(v) ? v->valuedouble : 0;
}

/* process_* as Prometheus' client libraries name them, from /proc. */
static int process_families(struct promtext *pt)
{
	struct rusage ru;
	double cpu = 0, rss = 0;
	long pages = 0, page = sysconf(_SC_PAGESIZE);
	unsigned fds = 0;
	FILE *f = fopen("/proc/self/statm", "re");
	DIR *d;
	struct dirent *e;

	if (getrusage(RUSAGE_SELF, &ru) == 0)
		cpu = (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 +
		      (double)ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6;
	if (f) {
		if (fscanf(f, "%*s %ld", &pages) == 1 && page > 0)
			rss = (double)pages * (double)page;
		fclose(f);
	}
	d = opendir("/proc/self/fd");
	while (d && (e = readdir(d)))
		if (e->d_name[0] != '.')
			fds++;
	if (d) {
		closedir(d);
		fds--; /* the directory's own */
	}
	return family1(pt, "process_start_time_seconds", "gauge",
		       "Start time of the process since the epoch, seconds",
		       (double)started_at) < 0 ||
		       family1(pt, "process_cpu_seconds_total", "counter",
			       "User and system CPU time, seconds", cpu) < 0 ||
		       family1(pt, "process_resident_memory_bytes", "gauge",
			       "Resident memory, bytes", rss) < 0 ||
		       family1(pt, "process_open_fds", "gauge",
			       "Open file descriptors", fds) < 0
		   ? -1
		   : 0;
}

/* The service itself: version, requests per op, Slurm and history. */
static int service_families(struct promtext *pt)
{
	static const char *const version[] = { "version", IOSTAGE_VERSION,
					       NULL };
	struct ctld_op_count c[METRICS_OPS_MAX];
	uint64_t refused, slurm_errors;
	size_t n = ctld_service_counts(c, METRICS_OPS_MAX, &refused);
	char why[CONF_ERR_MAX];
	struct history *h = history_db(why, sizeof(why));
	time_t slurm_ok;

	slurmsched_health(&slurm_ok, &slurm_errors);
	if (promtext_family(pt, "iostage_ctld_build_info", "gauge",
			    "Always 1; the iostagectld version as a label") <
		0 ||
	    promtext_sample(pt, "iostage_ctld_build_info", version, 1) < 0 ||
	    promtext_family(pt, "iostage_ctld_requests_total", "counter",
			    "Requests answered, by op and whether the op "
			    "answered ok or declined") < 0)
		return -1;
	for (size_t i = 0; i < n; i++) {
		const char *ok[] = { "op", c[i].op, "result", "ok", NULL };
		const char *no[] = { "op", c[i].op, "result", "declined",
				     NULL };

		if (promtext_sample(pt, "iostage_ctld_requests_total", ok,
				    (double)c[i].ok) < 0 ||
		    promtext_sample(pt, "iostage_ctld_requests_total", no,
				    (double)c[i].declined) < 0)
			return -1;
	}
	return family1(pt, "iostage_ctld_requests_refused_total", "counter",
		       "Requests refused before any op (missing, forged, "
		       "replayed or expired MUNGE credential)",
		       (double)refused) < 0 ||
		       family1(pt, "iostage_ctld_history_writable", "gauge",
			       "1 when the history database is open "
			       "for filing, 0 when read-only or "
			       "disabled",
			       h && !history_is_read_only(h)) < 0 ||
		       family1(pt, "iostage_ctld_slurm_last_ok_seconds",
			       "gauge",
			       "When slurmctld last answered the job "
			       "table, seconds since the epoch (0: "
			       "never)",
			       (double)slurm_ok) < 0 ||
		       family1(pt, "iostage_ctld_slurm_errors_total", "counter",
			       "Reads of slurmctld's job table that "
			       "failed",
			       (double)slurm_errors) < 0
		   ? -1
		   : 0;
}

/* StageBandwidth leases (stage_bw_status, as anyone may ask it). */
static int bandwidth_families(struct promtext *pt)
{
	struct ctld_caller root = {
		.uid = 0, .gid = 0, .read_all = true, .addr = "metrics"
	};
	cJSON *r = ctld_op_stage_bw_status(&root, NULL);
	int rc;

	if (!r)
		return -1;
	rc = family1(pt, "iostage_ctld_stage_bandwidth_budget_bytes_per_second",
		     "gauge",
		     "StageBandwidth= all nodes' staging copies share (0: "
		     "unbounded)",
		     num(r, "budget")) < 0 ||
		     family1(pt,
			     "iostage_ctld_stage_bandwidth_granted_"
			     "bytes_per_second",
			     "gauge", "Staging bandwidth leased to nodes now",
			     num(r, "granted")) < 0 ||
		     family1(pt, "iostage_ctld_stage_bandwidth_nodes", "gauge",
			     "Nodes holding a staging bandwidth lease",
			     num(r, "nodes")) < 0
		 ? -1
		 : 0;
	cJSON_Delete(r);
	return rc;
}

/* Placement and pre-staging: sched_status's counters, without the job
 * list. */
static int sched_families(struct promtext *pt)
{
	struct ctld_caller root = {
		.uid = 0, .gid = 0, .read_all = true, .addr = "metrics"
	};
	cJSON *req = cJSON_Parse("{\"op\":\"sched_status\",\"jobs\":false}");
	cJSON *r = req ? sched_op_status(&root, req) : NULL;
	int rc = -1;

	if (r && cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(r, "ok")))
		rc = family1(pt, "iostage_ctld_placement_enabled", "gauge",
			     "1 while placement is on (Placement=yes and "
			     "slurmctld runs with ignore_prefer_validation)",
			     slurmsched_placement_on()) < 0
			 ? -1
			 : promtext_sched_status(pt, r);
	cJSON_Delete(req);
	cJSON_Delete(r);
	return rc;
}

char *ctld_metrics_render(size_t *ret_len)
{
	struct promtext *pt = promtext_create();
	const char *text;
	char *out = NULL;
	size_t len = 0;

	if (pt && service_families(pt) == 0 && process_families(pt) == 0 &&
	    sched_families(pt) == 0 && bandwidth_families(pt) == 0 &&
	    (text = promtext_text(pt, &len)))
		out = strndup(text, len);
	promtext_destroy(pt);
	if (out && ret_len)
		*ret_len = len;
	return out;
}

/* httpmetrics_render_fn: one page for every viewer. */
static char *render_page(void *arg, bool all, uid_t viewer, size_t *ret_len)
{
	(void)arg;
	(void)all;
	(void)viewer;
	return ctld_metrics_render(ret_len);
}

void ctld_metrics_start(const struct conf *conf)
{
	char err[CONF_ERR_MAX];

	if (!started_at)
		started_at = time(NULL);
	if (!conf->controller_metrics_listen[0] || http)
		return;
	/* /metrics is for watching; a port in use must not stop the
	 * service the nodes file to. */
	http = httpmetrics_start("ControllerMetricsListen",
				 conf->controller_metrics_listen, render_page,
				 NULL, err, sizeof(err));
	if (!http) {
		log_warningx("%s; serving without /metrics", err);
		return;
	}
	log_info("metrics: serving http://%s/metrics",
		 conf->controller_metrics_listen);
}

void ctld_metrics_stop(void)
{
	httpmetrics_stop(http);
	http = NULL;
}
