/* history_ops.h - the history and recommendation op family:
 * history_put, history_get, history_list, recommend (common/proto.h). */
#ifndef IOSTAGE_DAEMON_HISTORY_OPS_H
#define IOSTAGE_DAEMON_HISTORY_OPS_H

#include "daemon/ops.h"

extern op_table history_ops;

#endif /* IOSTAGE_DAEMON_HISTORY_OPS_H */
