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

/* peer op stage_entry {job, dataset}: this node's outcome of dataset
 * DATASET (its index) of job JOB: {"state":"staging"|"done"|"failed"|
 * "unknown","tier":T,"entry":"K.vN"}. */
cJSON *fill_op_stage_entry(struct agent *a, const struct peernet_peer *p,
			   const cJSON *req);

/* peer op entry_current {tier, key}: {"version":N} of this node's
 * current version of KEY on node-local TIER, or an error. */
cJSON *fill_op_entry_current(struct agent *a, const struct peernet_peer *p,
			     const cJSON *req);

#endif /* IOSTAGE_DAEMON_FILL_H */
