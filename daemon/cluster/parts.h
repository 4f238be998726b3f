/* parts.h - a multi-node job's record: its parts, gathered at the head.
 *
 * Every node of a multi-node job keeps its own part of the job's record
 * (daemon/telemetry/telemetry.c). At the Epilog the other nodes send their
 * closed part to the head node (the first of the job's node list), retrying
 * with backoff up to PeerPartsTimeout; the head waits as long for them, then
 * files ONE record in its history: common/telemetry/recmerge.h's merge of the
 * parts that arrived, naming the nodes whose part did not ("missing_nodes").
 * Parts are kept in StateDir/parts/J.NODE.json (root 0600): a second copy of a
 * node's part replaces the first, so a retry never counts twice, and a part
 * that arrives after the record was filed makes the head merge and file it
 * again (the history replaces a job's record). StateDir/parts/ J.filed
 * remembers the job's nodes once it was filed. Files older than
 * TELEMETRY_KEEP_DAYS are removed at start-up.
 *
 * `telemetry` for a multi-node job shows the whole job: parts_job_record()
 * asks the other nodes for their parts and merges, or, once the job is
 * finished, returns the head's filed record.
 */
#ifndef IOSTAGE_DAEMON_PARTS_H
#define IOSTAGE_DAEMON_PARTS_H

#include <stddef.h>
#include <stdint.h>

#include <cJSON.h>

#include "common/config/conf.h"

struct agent;
struct parts;

/* The parts of agent A (A->conf must outlive them; A->peer, when there
 * is one, carries them between nodes): create StateDir/parts (root
 * 0700) and remove old files. The parts, or NULL with err. */
struct parts *parts_create(struct agent *a, char *err, size_t errlen);

/* Close and free P. No call may be in progress. NULL is a no-op. */
void parts_destroy(struct parts *p);

/* NODE's part REC of job ID arrived (peer op part_put). 0, or -1 with
 * err (bad part, not a node of the job, cannot be written; P NULL: not
 * ready). */
int parts_put(struct parts *p, uint32_t id, const char *node, const cJSON *rec,
	      char *err, size_t errlen);

/* finish, for a job whose closed record REC names several "nodes": the
 * head waits for the other parts and files the merged record; another
 * node sends REC to the head. Logs what happened; never fails the
 * Epilog. Returns 1 if REC was a multi-node part (handled here: the
 * caller must not file it), 0 for a single-node record (or P NULL, or
 * the peer channel off). */
int parts_finish(struct parts *p, uint32_t id, const cJSON *rec);

/* The whole job's record for `telemetry`, given this node's part LOCAL
 * (taken; returned as is for a single-node job, or when no other node
 * can add anything, or P NULL). Caller deletes the result. */
cJSON *parts_job_record(struct parts *p, uint32_t id, cJSON *local);

/* A record or part must fit in a credential (to the head node, or to
 * iostagectld): a huge job's process list is cut to 64 entries
 * ("processes_total" says how many there were), as `telemetry` does. */
void parts_fit_record(cJSON *rec);

/* The node names of record REC's "nodes" (pointers into REC) into
 * RET (room for MAX). Returns how many (0 when absent or bad). */
size_t parts_record_nodes(const cJSON *rec, const char **ret, size_t max);

#endif /* IOSTAGE_DAEMON_PARTS_H */
