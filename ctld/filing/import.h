/* import.h - `iostagectld --import PATH`: a node's old history into the
 * service's.
 *
 * A site going from per-node histories (iostaged without a service) to one
 * iostagectld keeps its recorded jobs: each node's StateDir/history is
 * copied to the service host and imported. Importing is idempotent: a job
 * the service already holds is kept as it is and counted, never replaced,
 * so importing a node twice, or a job also filed through the service,
 * changes nothing. The source is opened read-only and never changed.
 */
#ifndef IOSTAGE_CTLD_IMPORT_H
#define IOSTAGE_CTLD_IMPORT_H

#include <stddef.h>

#include "common/history/history.h"

struct ctld_import_stats {
	unsigned imported;   /* filed into the service's history */
	unsigned present;    /* already there, left alone */
	unsigned unreadable; /* records the source could not give back */
	unsigned invalid;    /* records the history refused (one line each
				logged) */
};

/* Import every job of the history database in SRC (a history directory,
 * or a StateDir holding history/) into DST. 0 with *ret_stats, or -1 with
 * one line in err (the source cannot be opened, is DST itself, DST cannot
 * be written). */
int ctld_import(struct history *dst, const char *dst_dir, const char *src,
		struct ctld_import_stats *ret_stats, char *err, size_t errlen);

/* `iostagectld --import PATH [-c CONF]`, the service stopped: open the
 * configured history and import PATH, with a report on stdout. Returns the
 * exit status. */
int ctld_import_main(int argc, char **argv);

#endif /* IOSTAGE_CTLD_IMPORT_H */
