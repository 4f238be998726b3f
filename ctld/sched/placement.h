/* placement.h - which nodes hold which cached datasets, and the --prefer
 * a new job gets from it (docs/SCHEDULING.md, Placement).
 *
 * Each node's iostaged reports what its node-local tiers hold
 * (`cache_report`, root only, a full snapshot each time, so a lost or
 * repeated report heals by the next). From those snapshots the service
 * keeps, per node, the dataset features it wants Slurm to show
 * (common/sched/dsfeature.h: at most PLACEMENT_NODE_FEATURES, the most recently
 * used); ctld/sched/slurmsched.c publishes them and records here what Slurm
 * really shows (placement_set_published). A submission asks `placement`
 * with its datasets and is answered with a --prefer made only of features
 * Slurm already shows, so the preference is never for something Slurm
 * does not know.
 *
 * Everything is in memory: after a restart the nodes' next reports (every
 * CACHEREPORT_INTERVAL_S at the latest) rebuild it.
 *
 * Thread safety: every function may be called from any thread.
 */
#ifndef IOSTAGE_CTLD_PLACEMENT_H
#define IOSTAGE_CTLD_PLACEMENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#include <cJSON.h>

#include "common/config/conf.h"
#include "common/sched/dsfeature.h"
#include "ctld/ops.h"

/* Features per node: slurmctld keeps every name in one list, and a node
 * with hundreds of features slows every feature match. */
#define PLACEMENT_NODE_FEATURES 16
/* Entries taken from one report (the rest are ignored: old ones). */
#define PLACEMENT_REPORT_MAX 4096
/* Nodes the service keeps (a report from more is refused). */
#define PLACEMENT_NODES_MAX 65536
/* Datasets of one placement query. */
#define PLACEMENT_DATASETS_MAX 64

/* A job's dataset, as the query gives it. */
struct placement_ds {
	const char *path;
	const char *tier;
	/* Spread over the job's nodes (docs/STAGING.md): the nodes that
	 * hold a part of it (cachekey_part) are preferred, and it is not
	 * pre-staged (a node alone would stage all of it). */
	bool spread;
};

/* Counters, for status and metrics. */
struct placement_counts {
	uint64_t reports;   /* cache_report ops taken */
	uint64_t queries;   /* placement ops answered */
	uint64_t preferred; /* ... with a --prefer */
	uint64_t honoured;  /* jobs with our --prefer that ran where it said */
	uint64_t not_honoured; /* ... that ran elsewhere */
	uint64_t publishes;    /* node feature updates sent to Slurm */
	uint64_t publish_errors;
	unsigned nodes; /* nodes with a report */
};

/* op cache_report (root): {"node":N,"entries":[{"key":K,"tier":T,
 * "bytes":B,"last_used":S},...]}; replaces N's snapshot. */
cJSON *placement_op_report(const struct ctld_caller *c, const cJSON *req);

/* op placement (anyone): {"datasets":[{"path":P,"tier":T},...]} for the
 * caller's uid -> {"ok":true,"prefer":"ios_..&ios_..","nodes":[...]}
 * ("" and [] when no node holds them), with "hold":true when there is a
 * preference and PlacementHold= is on. */
cJSON *placement_op_query(const struct ctld_caller *c, const cJSON *req);

/* The --prefer for UID's datasets DS[0..N) into ret ("" if none), and the
 * nodes it points at (comma-separated) into ret_nodes (may be NULL). */
void placement_prefer(uid_t uid, const struct placement_ds *ds, size_t n,
		      char *ret, size_t retlen, char *ret_nodes,
		      size_t nodeslen);

/* Replace NODE's snapshot by ENTRIES (the report's array) at NOW. 0, or
 * -1 with err (bad node name, bad entry, too many nodes). */
int placement_report(const char *node, const cJSON *entries, time_t now,
		     char *err, size_t errlen);

/* The features NODE should show into ret[0..max) (each DSFEATURE_LEN+1
 * chars); their count. A node without a report: 0. After its report's
 * own, any feature NODE shows now that a held submission was given
 * within PLACEMENT_LINGER_S of NOW, though NODE no longer holds it: see
 * placement_set_hold. */
size_t placement_wanted(const char *node, char ret[][DSFEATURE_LEN + 1],
			size_t max, time_t now);

/* PlacementHold= now (0: off). While it is on, a placement answer with a
 * preference also says "hold": true, and job_submit.lua makes that
 * preference the job's constraint at submission (ctld/sched/hold.h). slurmctld
 * refuses a submission whose constraint names a feature no node shows,
 * and the answer reaches slurmctld a moment after it left: a feature
 * handed out so is kept on the nodes showing it for PLACEMENT_LINGER_S,
 * even when their cache drops it meanwhile (a job held for it waits at
 * most its hold, then starts anywhere). */
void placement_set_hold(unsigned hold_s);
#define PLACEMENT_LINGER_S 60
/* Features remembered as handed out (beyond: overwritten in turn). */
#define PLACEMENT_HANDED_MAX 256

/* Record the "ios_" features Slurm shows on NODE (its feature string):
 * only those are given to submissions. */
void placement_set_published(const char *node, const char *features);

/* Does NODE show FEATURE in Slurm now? */
bool placement_is_published(const char *node, const char *feature);

/* The bytes of entry KEY on TIER in NODE's last report, 0 if it has none
 * (among the entries it shows). */
uint64_t placement_entry_bytes(const char *node, const char *key,
			       const char *tier);

/* The nodes whose last report holds entry KEY on TIER, the most recently
 * used first, into RET[0..MAX) (MAX at most PLACEMENT_HOLDERS_MAX); their
 * count. Only the entries a node reports as its features are known
 * (its PLACEMENT_NODE_FEATURES most recently used). */
#define PLACEMENT_HOLDERS_MAX 16
size_t placement_holders(const char *key, const char *tier,
			 char (*ret)[CONF_NODE_MAX], size_t max);

/* op cache_holders (root): {"key":K,"tier":T} -> {"ok":true,
 * "nodes":[...]}: where a node looks for a copy to fill from
 * (daemon/cluster/fill.h). */
cJSON *placement_op_holders(const struct ctld_caller *c, const cJSON *req);

/* When NODE last reported (0: never). */
time_t placement_reported_at(const char *node);

/* Names of the nodes with a report, into a new array of N strings
 * (caller frees each and the array). NULL with *ret_n 0 when none. */
char **placement_nodes(size_t *ret_n);

/* Placements: a job that preferred our features started where they
 * are (HONOURED) or elsewhere. */
void placement_count_outcome(bool honoured);

/* Slurm told us (or refused) a feature update. */
void placement_count_publish(bool ok);

/* Now-values of the counters. */
void placement_counts(struct placement_counts *ret);

/* Forget everything (tests). */
void placement_reset(void);

/* Call FN(ARG) whenever a report changes what some node should show
 * (iostagectld's Slurm thread pokes its ticker: the features go out at
 * once). FN is called with placement's lock held: it must not call back
 * into placement. NULL: nobody. */
void placement_on_change(void (*fn)(void *arg), void *arg);

#endif /* IOSTAGE_CTLD_PLACEMENT_H */
