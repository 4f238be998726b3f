/* fill.h - where a new cache version's files come from: the parallel file
 * system, or another node that holds the same entry (issue 29; docs/
 * STAGING.md, "Filling from another node").
 *
 * Two ways a node learns of a copy it can fill from, both over the node
 * channel (root's MUNGE credential; daemon/cluster/peer.h):
 *
 *   - The job's head. On a multi-node job every node but the head waits
 *     for the head's outcome of the dataset (peer op stage_entry) and
 *     fills from the version the head staged: the PFS is read once per
 *     job, by the head, and the other nodes read the head's NVMe.
 *   - Another job's node. A node with no version of the entry asks
 *     iostagectld which nodes hold it (cache_holders, from the nodes'
 *     cache reports) and asks each in turn for its current version (peer
 *     op entry_current).
 *
 *
 * With NodeFill=parts (the default) a multi-node job's nodes do not wait
 * for a head: each stages its share of the dataset (the files
 * rendezvous hashing gives it over the job's nodes, equal weights: a
 * cache entry of the part's key, as a spread dataset's part), publishes
 * it (peer op stage_entry says "part"), and then builds its whole copy
 * from its own share (hard links) and every other node's share (fetch
 * sessions to all of them at once): the PFS is read once per job and by
 * every node at once, and no node waits for one reader's whole copy.
 *
 * Either way the worker compares the PFS with the holder's manifest, as
 * it would with a local previous version: only the files equal there are
 * taken from the holder, any it cannot give come from the PFS, and the
 * new version is built, checked and published as any other. A holder
 * that is gone or says no leaves the PFS, as before.
 */
#ifndef IOSTAGE_DAEMON_FILL_H
#define IOSTAGE_DAEMON_FILL_H

#include <stdbool.h>
#include <stddef.h>

#include <cJSON.h>

#include "common/config/conf.h"
#include "common/net/peernet.h"
#include "daemon/staging/cache.h"

struct agent;
struct job;

/* Between two questions to the head while it still stages. */
#define FILL_HEAD_POLL_MS 250
/* How long a head that does not know the job yet (its Prolog has not
 * asked) is waited for before this node reads the PFS itself. */
#define FILL_HEAD_UNKNOWN_MS 10000
/* A question to another node or the service. */
#define FILL_ASK_MS 3000
/* Holders asked for their version, at most, and how long the whole
 * search for one may take: a holder that does not answer must not hold
 * up the job more than the PFS would. */
#define FILL_HOLDERS_MAX 8
#define FILL_HOLDERS_MS 3000

/* Nodes of a job that fills by parts, at most (the worker's
 * WORKER_PEERS_MAX); a larger job fills from its head. */
#define FILL_PARTS_MAX 64

/* A copy to fill from. */
struct fill_source {
	char node[CONF_NODE_MAX];
	char peer[CONF_NODE_MAX + 8];   /* "NODE:PORT", the worker's --peer */
	char entry[CONF_NAME_MAX + 96]; /* "TIER/KEY.vN", its --peer-entry */
	unsigned version;
	bool head; /* the job's head (else a holder from iostagectld) */
};

/* Keep waiting? false with a reason (cancelled, out of time) ends the
 * search: the caller fails with it. */
typedef bool (*fill_stop_fn)(void *arg, char *why, size_t len);

/* The copy dataset I of JOB (entry KEY on node-local tier TIER) can fill
 * from. 1 with *ret, 0 when there is none (the PFS it is), -1 when STOP
 * said so (its reason in err). Waits for the head while it stages. */
int fill_find(struct agent *a, struct job *job, size_t i, const char *tier,
	      const char *key, fill_stop_fn stop, void *arg,
	      struct fill_source *ret, char *err, size_t errlen);

/* Every other node's share of a fill by parts. */
struct fill_parts {
	size_t n;
	struct fill_source src[FILL_PARTS_MAX];
};

/* Does dataset I of JOB on TIER fill by parts? NodeFill=parts, a
 * multi-node job of at most FILL_PARTS_MAX nodes (not a pre-stage), the
 * node channel on, a node-local tier. */
bool fill_by_parts(const struct agent *a, const struct job *job,
		   const char *tier);

/* The shares of a fill by parts: every node of JOB with the same weight,
 * in spread_plan_format's form ("n1=1,n2=1"), into BUF. 0, or -1 when it
 * does not fit or memory is short. */
int fill_parts_plan(const struct job *job, char *buf, size_t len);

/* Wait until every other node of JOB has published its share of dataset
 * I (entry KEY on TIER; the share's key is cachekey_part(KEY)) or its
 * whole copy, and put each in *ret. A node that failed the dataset,
 * cannot be reached, names another entry or does not know the job after
 * FILL_HEAD_UNKNOWN_MS is left out (a log line says so): its share comes
 * from the PFS. 0, or -1 when STOP said so (its reason in err). */
int fill_parts_wait(struct agent *a, struct job *job, size_t i,
		    const char *tier, const char *key, fill_stop_fn stop,
		    void *arg, struct fill_parts *ret, char *err,
		    size_t errlen);

/* How long the other nodes of a spread dataset's job are asked for the
 * parts they hold (they answer at once, or are down). */
#define FILL_PARTS_ASK_MS 1000
/* Versions of an entry entry_current lists, at most. */
#define FILL_VERSIONS_MAX 4

/* A spread dataset's part about to be built (key PART on TIER): the
 * versions each other node of JOB holds of its own part, and then each
 * node outside JOB that iostagectld says holds one (cache_holders, at
 * most FILL_HOLDERS_MAX: a node of an earlier job on the dataset), into
 * *ret (peer op entry_current, all asked at once; every published
 * version, since a node may have replaced its old part for this job
 * already). Under another plan (the job's nodes or their room changed)
 * they hold files and chunks this node now holds: those come from them,
 * not from the PFS (issue 29 item 5). A node outside the job serves
 * them only once Slurm, through iostagectld, says the job runs, is the
 * asker's and has the asking node (daemon/cluster/peer_fetch.c). A node
 * without a part, or that does not answer within FILL_PARTS_ASK_MS, is
 * left out. 0, or -1 when memory is short (*ret empty either way on
 * failure). */
int fill_job_parts(struct agent *a, struct job *job, const char *tier,
		   const char *part, struct fill_parts *ret);

/* peer op stage_entry {job, dataset}: this node's outcome of dataset
 * DATASET (its index) of job JOB: {"state":"staging"|"done"|"failed"|
 * "unknown","tier":T,"entry":"K.vN","part":"P.vN"}; PART is its share of
 * a fill by parts once published ("" before, or without one). */
cJSON *fill_op_stage_entry(struct agent *a, const struct peernet_peer *p,
			   const cJSON *req);

/* peer op entry_current {tier, key}: {"version":N,"versions":[N,...]}:
 * this node's current version of KEY on node-local TIER and every
 * published one (newest first, at most FILL_VERSIONS_MAX), or an error. */
cJSON *fill_op_entry_current(struct agent *a, const struct peernet_peer *p,
			     const cJSON *req);

#endif /* IOSTAGE_DAEMON_FILL_H */
