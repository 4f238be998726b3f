/* metrics.h - iostagectld's /metrics (docs/SCHEDULING.md, "Seeing it").
 *
 * Served over HTTP by common/net/httpmetrics.c on ControllerMetricsListen
 * (loopback by default) as Prometheus text: what the service did for
 * Slurm's scheduling (placements honoured or not, pre-stage bytes,
 * predictions that missed, time saved at start: the same families as
 * `iostage status --prom`, common/telemetry/promtext.h), the staging bandwidth
 * leases, and the service's own basics (version, start time, CPU and
 * memory, requests per op, slurmctld and history health). Everything is
 * read at render time from the modules' own counters; nothing here
 * blocks on Slurm or a node. No per-user series: any viewer gets the
 * same page.
 */
#ifndef IOSTAGE_CTLD_METRICS_H
#define IOSTAGE_CTLD_METRICS_H

#include <stddef.h>

#include "common/config/conf.h"

/* Start serving when CONF sets ControllerMetricsListen. A failure (port
 * in use) is logged in one line and the service goes on without it.
 * CONF must outlive it. */
void ctld_metrics_start(const struct conf *conf);

/* Stop serving. Safe without a start. */
void ctld_metrics_stop(void);

/* The page now (caller frees), its length in *ret_len; NULL on ENOMEM. */
char *ctld_metrics_render(size_t *ret_len);

#endif /* IOSTAGE_CTLD_METRICS_H */
