/* file_ops.h - the `file` op: a node's root files a job's record.
 *
 *   {"op":"file","job":N,"node":"n1","nodes":["n1",...],"record":{...}}
 *   -> {"ok":true,"filed":true|false,"duplicate":bool}
 *
 * Root only (the credential's uid). Idempotent by (job, node): a record
 * this node already filed for this job (same node, same end time) is a
 * duplicate and not filed again, so a node may retry until it hears a
 * reply. This version files single-node jobs; a job whose "nodes" names
 * several nodes is refused until the parts are merged here (issue 12
 * item 4, which extends this file).
 */
#ifndef IOSTAGE_CTLD_FILE_OPS_H
#define IOSTAGE_CTLD_FILE_OPS_H

#include "ctld/ops.h"

cJSON *ctld_op_file(const struct ctld_caller *c, const cJSON *req);

#endif /* IOSTAGE_CTLD_FILE_OPS_H */
