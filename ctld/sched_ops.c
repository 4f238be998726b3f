/* sched_ops.c - the `sched_status` op (see sched_ops.h). */
#include <stdio.h>

#include "common/proto.h"
#include "ctld/placement.h"
#include "ctld/sched_ops.h"
#include "ctld/slurmsched.h"

cJSON *sched_op_status(const struct ctld_caller *c, const cJSON *req)
{
	struct placement_counts pc;
	cJSON *reply, *p;

	(void)c;
	(void)req;
	placement_counts(&pc);
	reply = proto_reply_ok();
	if (!reply)
		return NULL;
	p = cJSON_AddObjectToObject(reply, "placement");
	if (!p)
		goto fail;
	cJSON_AddBoolToObject(p, "enabled", slurmsched_prefer_safe());
	cJSON_AddNumberToObject(p, "nodes_reporting", pc.nodes);
	cJSON_AddNumberToObject(p, "reports", (double)pc.reports);
	cJSON_AddNumberToObject(p, "queries", (double)pc.queries);
	cJSON_AddNumberToObject(p, "preferred", (double)pc.preferred);
	cJSON_AddNumberToObject(p, "honoured", (double)pc.honoured);
	cJSON_AddNumberToObject(p, "not_honoured", (double)pc.not_honoured);
	cJSON_AddNumberToObject(p, "feature_updates", (double)pc.publishes);
	cJSON_AddNumberToObject(p, "feature_update_errors",
				(double)pc.publish_errors);
	return reply;
fail:
	cJSON_Delete(reply);
	return proto_reply_error("sched_status: out of memory");
}
