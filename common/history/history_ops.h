/* history_ops.h - the history and recommendation ops: history_put,
 * history_get, history_list, recommend (common/net/proto.h has their fields).
 *
 * Answered from this process's history (common/history/history.h, history_db()):
 * iostagectld's for the cluster, or iostaged's own when the site runs no
 * service (ControllerHost= empty). Each transport says who the caller is
 * and calls these; a handler returns the reply, proto_reply_ok() plus
 * fields or proto_reply_error().
 */
#ifndef IOSTAGE_HISTORY_OPS_H
#define IOSTAGE_HISTORY_OPS_H

#include <stdbool.h>
#include <sys/types.h>

#include <cJSON.h>

/* Who asks, as the transport proved it (SO_PEERCRED or MUNGE). */
struct hist_caller {
	uid_t uid;
	gid_t gid;
	bool read_all; /* root, or a member of AdminGroup on the service */
};

/* history_put {record}: file one record as the Epilog does. The caller
 * checks that C may file (root); node-local history only. */
cJSON *hist_op_put(const struct hist_caller *c, const cJSON *req);

/* history_get {job}: {record}, to read_all or the job's owner; another
 * user's job answers like a missing one ("job N: not in your history"). */
cJSON *hist_op_get(const struct hist_caller *c, const cJSON *req);

/* history_list {[since] [user] [limit]}: {records:[summaries]}, newest
 * first; a user's own jobs, or anyone's for read_all. */
cJSON *hist_op_list(const struct hist_caller *c, const cJSON *req);

/* recommend {[user] [job_name] [script] [dataset]}: {query, runs,
 * recommendations, skipped, profile, hint}. */
cJSON *hist_op_recommend(const struct hist_caller *c, const cJSON *req);

#endif /* IOSTAGE_HISTORY_OPS_H */
