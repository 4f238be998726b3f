/* view_stats.h - the spread view's --stats file: what its sources served,
 * for iostaged's telemetry (bytes served locally, from peers, from the
 * PFS, per node; docs/STAGING.md, "The spread view").
 *
 * The file is one JSON object,
 *   {"local_bytes":N,"peer_bytes":N,"pfs_bytes":N,"peer_failures":N,
 *    "pfs_reads":N,"ahead_bytes":N}
 * replaced whole (a temporary file beside it, then rename), about every
 * second while the counts change and once more at exit, so a reader
 * never sees half of one.
 */
#ifndef IOSTAGE_VIEW_STATS_H
#define IOSTAGE_VIEW_STATS_H

#include "view/view_source.h"

struct view_stats;

/* Write S to PATH now (PATH.tmp, then renamed over PATH). 0, or -1 with
 * errno. */
int view_stats_write(const char *path, const struct view_source_stats *s);

/* Write VS's counts to PATH now and then every second they changed, from
 * a thread of its own. The writer, or NULL with errno. */
struct view_stats *view_stats_start(const char *path, struct view_source *vs);

/* Stop the thread and write the counts a last time; the result of that
 * write (0, or -1 with errno). NULL: 0. */
int view_stats_stop(struct view_stats *st);

#endif /* IOSTAGE_VIEW_STATS_H */
