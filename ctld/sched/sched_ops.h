/* sched_ops.h - `sched_status`: what iostagectld did for Slurm's
 * scheduling (docs/SCHEDULING.md): placement and pre-staging counters,
 * and per pending job what was pre-staged where and which placement it
 * prefers (the caller's jobs; root and AdminGroup: all). */
#ifndef IOSTAGE_CTLD_SCHED_OPS_H
#define IOSTAGE_CTLD_SCHED_OPS_H

#include <cJSON.h>

#include "ctld/ops.h"

cJSON *sched_op_status(const struct ctld_caller *c, const cJSON *req);

#endif /* IOSTAGE_CTLD_SCHED_OPS_H */
