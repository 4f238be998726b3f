/* history_local.c - the node's history ops on iostaged's socket: the handlers
 * of common/history/history_ops.c, with the caller from SO_PEERCRED. Root reads
 * every job of the node, a user their own. With a service configured
 * (ControllerHost=) the node keeps no history and these answer "history
 * disabled: ..." (history_init_remote). */
#include "daemon/telemetry/history_local.h"
#include "common/history/history_ops.h"

static struct hist_caller caller(const struct ops_caller *p)
{
	return (struct hist_caller){ .uid = p->uid,
				     .gid = p->gid,
				     .read_all = p->uid == 0 };
}

static cJSON *op_put(struct agent *a, const struct ops_caller *p,
		     const cJSON *req)
{
	struct hist_caller c = caller(p);

	(void)a;
	return hist_op_put(&c, req);
}

static cJSON *op_get(struct agent *a, const struct ops_caller *p,
		     const cJSON *req)
{
	struct hist_caller c = caller(p);

	(void)a;
	return hist_op_get(&c, req);
}

static cJSON *op_list(struct agent *a, const struct ops_caller *p,
		      const cJSON *req)
{
	struct hist_caller c = caller(p);

	(void)a;
	return hist_op_list(&c, req);
}

static cJSON *op_recommend(struct agent *a, const struct ops_caller *p,
			   const cJSON *req)
{
	struct hist_caller c = caller(p);

	(void)a;
	return hist_op_recommend(&c, req);
}

op_table history_ops = {
	{ "history_put", op_put, true },
	{ "history_get", op_get, false },
	{ "history_list", op_list, false },
	{ "recommend", op_recommend, false },
	{ NULL, NULL, false },
};
