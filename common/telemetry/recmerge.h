/* recmerge.h - one record for a multi-node job, from its nodes' parts.
 *
 * Each node of a job keeps its own part of the job's record (a complete
 * single-node record, docs/RECORDS.md, naming its "node"). recmerge_job()
 * makes the job's record from them: the top level reads like a single-node
 * record with the job's totals (so every reader of records works on it
 * unchanged), and it adds "nodes" (every node of the job), "missing_nodes"
 * (those whose part is absent) and "parts" (a summary per node: its
 * stage_in, run and sub-phase figures, stage_out, datasets, outputs,
 * processes and ranks). Pure: no I/O, no clock, no logging.
 *
 * The result does not depend on the order the parts come in, and a part
 * given twice counts once: parts are keyed by node, and of two parts of
 * one node the more complete is kept (a finished one over a live one,
 * then the later end, then the larger text), whatever their order.
 */
#ifndef IOSTAGE_RECMERGE_H
#define IOSTAGE_RECMERGE_H

#include <stdbool.h>
#include <stddef.h>

#include <cJSON.h>

#define RECMERGE_NODES_MAX 4096 /* nodes of one job we merge */
#define RECMERGE_PROCS_MAX 4096 /* process entries in a merged record */

/* Merge PARTS (NPARTS records, any order, duplicates allowed, NULL
 * entries and parts without a valid "node" ignored) of a job running on
 * NODES (NNODES names, the head node first; a part of a node not listed
 * is ignored). With NNODES 0 the nodes are those of the parts, sorted.
 * Returns the merged record (caller deletes), or NULL with errno EINVAL
 * (no node at all) or ENOMEM. */
cJSON *recmerge_job(const cJSON *const *parts, size_t nparts,
		    const char *const *nodes, size_t nnodes);

/* Is REC a merged record (it has "parts")? */
bool recmerge_is_merged(const cJSON *rec);

#endif /* IOSTAGE_RECMERGE_H */
