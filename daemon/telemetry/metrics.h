/* metrics.h - iostaged's Prometheus metrics: rendering, the textfile, and
 * the sampler that keeps per-job series current.
 *
 * metrics_render() is the /metrics page (common/net/httpmetrics.c serves it)
 * and the content of MetricsTextfile, written every MetricsInterval seconds as
 * NAME.prom.PID then renamed over NAME.prom (node_exporter's textfile collector
 * never reads a half-written file). A thread samples the job table every
 * second: staging progress and drained bytes go into daemon/telemetry/stats.c,
 * jobs that left the table are marked ended (their drain record's final figures
 * taken from StateDir/drain/J.json), and their series are dropped
 * MetricsJobGrace seconds later.
 *
 * Families (all iostage_*; see iostaged(8) for the list with meanings):
 * tiers, staging totals, cache hits/misses, drain backlog, jobs by state,
 * per-job phase bytes/seconds (jobid label).
 */
#ifndef IOSTAGE_DAEMON_METRICS_H
#define IOSTAGE_DAEMON_METRICS_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "common/config/conf.h"

struct agent;
struct metrics;

/* Agent A's metrics: start the sampler thread (and the textfile writer if
 * configured) and the HTTP server if MetricsListen is set. Nothing here
 * stops the daemon: a failure (port in use, textfile directory missing)
 * is logged once, in one line, and the rest goes on. A (its cache,
 * stats, bwgov, telemetry: each may be NULL, then left out) and CONF
 * must outlive the metrics; call after agent_load. NULL only on ENOMEM.
 * The caller owns it: metrics_destroy. */
struct metrics *metrics_create(struct agent *a, const struct conf *conf);

/* Stop the HTTP server and the thread, free M. NULL is a no-op. */
void metrics_destroy(struct metrics *m);

/* The exposition text now (caller frees), its length in *ret_len. Node
 * figures always; per-job series of every job with ALL_JOBS, else only
 * of VIEWER's jobs (as the socket's status op: a user sees their own
 * jobs). NULL on ENOMEM. Safe from any thread. */
char *metrics_render(struct metrics *m, bool all_jobs, uid_t viewer,
		     size_t *ret_len);

/* Write PATH atomically: PATH.PID (O_EXCL, 0644) written and fsynced,
 * then renamed over PATH. 0, or -1 with errno. */
int metrics_write_textfile(const char *path, const char *text, size_t len);

#endif /* IOSTAGE_DAEMON_METRICS_H */
