/* cachereport.h - telling iostagectld what this node's cache holds
 * (docs/SCHEDULING.md, Placement).
 *
 * With a service configured, one thread sends `cache_report` (as root, so
 * MUNGE proves it): every current entry of the node-local tiers (key,
 * tier, bytes, last use), a full snapshot, whenever an entry was built or
 * removed (cache_generation moved) and at least every
 * CACHEREPORT_INTERVAL_S, so a restarted service learns it again, and at
 * once when the service asks (peer op cache_report, which a restarted
 * service sends every node it has no report from). Shared
 * tiers are left out: every node sees them, so they say nothing about
 * where a job should run.
 */
#ifndef IOSTAGE_DAEMON_CACHEREPORT_H
#define IOSTAGE_DAEMON_CACHEREPORT_H

#include <stddef.h>

#include <cJSON.h>

#include "common/config/conf.h"

#define CACHEREPORT_INTERVAL_S 60

struct agent;
struct cachereport;

/* Start the thread (nothing without ControllerHost=: NULL), which
 * reports what A->cache holds. A->conf and A->cache must outlive it.
 * Never fatal: failures are logged (NULL) and retried. */
struct cachereport *cachereport_create(struct agent *a);

/* Send a report now, whatever the generation and the interval (the
 * service asked: it restarted and knows nothing of this node). Returns at
 * once; a failed send is retried as any other. NULL: no-op. */
void cachereport_now(struct cachereport *cr);

/* Stop and join its thread, free CR. NULL is a no-op. */
void cachereport_destroy(struct cachereport *cr);

/* The report's "entries" from a cache_ls entries array (pure; tests):
 * current versions on tiers of CONF that are not Shared. NULL on ENOMEM. */
cJSON *cachereport_entries(const struct conf *conf, const cJSON *ls);

#endif /* IOSTAGE_DAEMON_CACHEREPORT_H */
