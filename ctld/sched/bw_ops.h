/* bw_ops.h - the stage-bandwidth budget (StageBandwidth=) on iostagectld.
 *
 *   {"op":"stage_bw","node":"n1","want":true|false}
 *   -> {"ok":true,"grant":BYTES_PER_S,"renew_ms":N,"lease_ms":N,
 *       "budget":BYTES_PER_S}
 *   root only: a node's iostaged takes, renews ("want":true) or gives back
 *   ("want":false) its share of the budget (common/sched/bwshare.h). With no
 *   budget configured ("budget":0) the grant is 0 and means unbounded.
 *
 *   {"op":"stage_bw_status"}
 *   -> {"ok":true,"budget":B,"granted":G,"nodes":N,"leases":[{"node",
 *       "grant"}...]}
 *   anyone: the budget and what is leased now (nothing about users).
 */
#ifndef IOSTAGE_CTLD_BW_OPS_H
#define IOSTAGE_CTLD_BW_OPS_H

#include "common/config/conf.h"
#include "ctld/ops.h"

/* The budget from CONF (StageBandwidth=); call before serving. */
void ctld_bw_init(const struct conf *conf);

cJSON *ctld_op_stage_bw(const struct ctld_caller *c, const cJSON *req);
cJSON *ctld_op_stage_bw_status(const struct ctld_caller *c, const cJSON *req);

#endif /* IOSTAGE_CTLD_BW_OPS_H */
