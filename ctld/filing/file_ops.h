/* file_ops.h - the `file` op: a node's root files a job's record.
 *
 *   {"op":"file","job":N,"node":"n1","nodes":["n1",...],"record":{...}}
 *   -> {"ok":true,"filed":true|false,"duplicate":bool}
 *
 * Root only (the credential's uid). The record's job and node must be the
 * request's, and "nodes" (optional) must name the node. Idempotent by
 * (job, node): a record
 * this node already filed for this job (same node, same end time) is a
 * duplicate and not filed again, so a node may retry until it hears a
 * reply. A job whose "nodes" names several nodes is one part of the job:
 * ctld/filing/partstore.h keeps it, merges the parts when the last arrives (or
 * PartsDeadline= after the first) and files one record; its reply adds
 * "parts" (how many are in) and "nodes" (how many the job has).
 */
#ifndef IOSTAGE_CTLD_FILE_OPS_H
#define IOSTAGE_CTLD_FILE_OPS_H

#include <stdbool.h>
#include <stdint.h>

#include "ctld/filing/partstore.h"
#include "ctld/ops.h"

cJSON *ctld_op_file(const struct ctld_caller *c, const cJSON *req);

/* What the file op checks of a filing REQ before it touches the history
 * (the file_batch op checks each entry the same): 0 with *ret_job, or -1
 * with one line in err. */
int ctld_file_check(const cJSON *req, uint32_t *ret_job, char *err,
		    size_t errlen);

/* Is REQ (checked) a part of a multi-node job? */
bool ctld_file_is_part(const cJSON *req);

/* Log (and wake the deadline thread) for a part of JOB from NODE that the
 * parts store took with result RES. */
void ctld_part_filed(const struct ctld_caller *c, uint32_t job,
		     const char *node, const struct partstore_result *res);

#endif /* IOSTAGE_CTLD_FILE_OPS_H */
