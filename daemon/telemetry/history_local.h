/* history_local.h - the history op family on iostaged's socket:
 * history_put, history_get, history_list, recommend (common/net/proto.h). */
#ifndef IOSTAGE_DAEMON_HISTORY_LOCAL_H
#define IOSTAGE_DAEMON_HISTORY_LOCAL_H

#include "daemon/ops.h"

extern op_table history_ops;

#endif /* IOSTAGE_DAEMON_HISTORY_LOCAL_H */
