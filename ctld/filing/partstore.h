/* partstore.h - a multi-node job's parts on iostagectld, merged and filed.
 *
 * Every node of a multi-node job files its own part of the job's record
 * (`file`, ctld/filing/file_ops.c). The service keeps each part durably in the
 * history's "parts" column family, in the SAME WriteBatch as whatever
 * filing it causes, so a part acknowledged is never lost and a kill -9
 * mid-batch leaves either all of a filing or none of it:
 *
 *   j be32(job) 0x00        -> {"nodes":[...],"first":S,"filed":bool,
 *                               "filed_at":S}           the job's state
 *   j be32(job) 0x01 NODE   -> NODE's part (the record's JSON text)
 *   w be64(first) be32(job) -> ""   a job waiting for its parts
 *
 * (S: unix seconds of the service's clock; "first" is when the job's first
 * part arrived.) When the last part of the job's node list arrives, the
 * parts are merged (common/telemetry/recmerge.h: any order, a part given twice
 * counts once) and ONE record is filed. A job still missing parts
 * PartsDeadline= seconds after its first part is filed with what arrived,
 * the missing nodes named ("missing_nodes"). A part arriving after that
 * refiles the job with it: the history replaces the job's record, so
 * nothing is counted twice. The deadlines are the "w" keys, so a restarted
 * service picks up where it was (and a changed PartsDeadline applies to
 * the jobs already waiting).
 *
 * Idempotent by (job, node): the same part again (same "start" and "end")
 * is a duplicate and changes nothing. A part of the same node with another
 * "start", or a node list that differs from the stored one, is a new job
 * that reused the id (Slurm's ids wrap): the old parts are dropped.
 *
 * Library part (partstore_file ...): takes the history handle and the
 * time, so the tests drive it without a network or a clock; no logging.
 * Service part (partstore_start ...): the thread that files the jobs whose
 * deadline passed, over history_db(); it logs.
 */
#ifndef IOSTAGE_CTLD_PARTSTORE_H
#define IOSTAGE_CTLD_PARTSTORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cJSON.h>

#include "common/base/jsonbuf.h"
#include "common/config/conf.h"
#include "common/history/history.h"

struct partstore_result {
	bool filed;     /* this call filed (or refiled) the job's record */
	bool duplicate; /* this node's part was here already */
	bool late;      /* the job had been filed before (deadline passed) */
	unsigned have;  /* parts of the job now stored */
	unsigned want;  /* nodes of the job */
	double first;   /* when the job's first part came (unix s) */
};

/* File the part in ENTRY ({job, node, nodes (2 or more), record}; see
 * common/telemetry/outbox.h outbox_entry_check) at NOW (unix s) in H. Fills
 * *ret. 0, or -1 with one line in err (errno EINVAL: a bad entry or record, the
 * caller answers it; else the database's). */
int partstore_file(struct history *h, const cJSON *entry, double now,
		   struct partstore_result *ret, char *err, size_t errlen);

/* The same in two steps, so that many parts (and other records) go to
 * the history in one WriteBatch and one fsync (ctld/filing/file_batch.c):
 * partstore_prepare decides what the part in ENTRY writes, into *PLAN,
 * while the caller holds the job's lock (ctld/filing/joblock.h) and keeps
 * holding it until the plan's writes
 * are in the history or dropped: history_put_aux with PLAN->merged (when
 * not NULL) among the records and PLAN->aux among the parts writes; with
 * PLAN->res.duplicate there is nothing to write. Every PLAN prepared
 * successfully is released with partstore_plan_done (a failed one is
 * released already). Two plans in one WriteBatch must be of two jobs. */
#define PARTSTORE_META_KEY_LEN (HISTORY_PARTS_PREFIX_LEN + 1)
#define PARTSTORE_PART_KEY_MAX (HISTORY_PARTS_PREFIX_LEN + 1 + CONF_NODE_MAX)
#define PARTSTORE_WAIT_KEY_LEN 13
struct partstore_plan {
	struct partstore_result res;
	cJSON *merged; /* the record to file, or NULL */
	struct history_aux aux[6];
	size_t naux;
	/* private: what aux points into */
	char mkey[PARTSTORE_META_KEY_LEN], pkey[PARTSTORE_PART_KEY_MAX];
	char wkey[PARTSTORE_WAIT_KEY_LEN], wkey_old[PARTSTORE_WAIT_KEY_LEN];
	char from[HISTORY_PARTS_PREFIX_LEN], to[HISTORY_PARTS_PREFIX_LEN];
	char *mtext;         /* the meta, JSON */
	struct jsonbuf part; /* the part, a packed record */
};
int partstore_prepare(struct history *h, const cJSON *entry, double now,
		      struct partstore_plan *plan, char *err, size_t errlen);
void partstore_plan_done(struct partstore_plan *plan);

/* Called by partstore_expire for each job it filed: the merged RECORD
 * (its "missing_nodes" names who did not report). */
typedef void (*partstore_filed_fn)(uint32_t job, const cJSON *record,
				   void *arg);

/* File every waiting job whose first part arrived DEADLINE_S or more
 * before NOW with the parts that arrived. FN (may be NULL) hears of each.
 * *ret_filed (may be NULL) gets how many. 0, or -1 with err (jobs filed
 * before the error stay filed). */
int partstore_expire(struct history *h, unsigned deadline_s, double now,
		     partstore_filed_fn fn, void *arg, unsigned *ret_filed,
		     char *err, size_t errlen);

/* When the next waiting job is due (unix s: its first part + DEADLINE_S),
 * 0 when no job waits. *ret_waiting (may be NULL): how many wait (at
 * most PARTSTORE_COUNT_MAX are counted). -1 with err on a read error. */
#define PARTSTORE_COUNT_MAX 100000
double partstore_next_due(struct history *h, unsigned deadline_s,
			  size_t *ret_waiting, char *err, size_t errlen);

/* The parts stored for JOB, as an array of records (caller deletes; empty
 * when none), or NULL with err. */
cJSON *partstore_parts(struct history *h, uint32_t job, char *err,
		       size_t errlen);

/* --- the service's deadline thread ------------------------------------------ */

/* Start the thread over history_db() with CONF's PartsDeadline (CONF must
 * outlive it). Jobs already due are filed at once (a restart). 0, or -1
 * with err. */
int partstore_start(const struct conf *conf, char *err, size_t errlen);

/* A job started waiting, its first part at FIRST (unix s): the thread
 * wakes only when that deadline comes before the one it sleeps for. */
void partstore_wake(double first);

/* Stop the thread (before history_fini). No-op when not started. */
void partstore_stop(void);

#endif /* IOSTAGE_CTLD_PARTSTORE_H */
