/* joballoc.c - op job_nodes (see joballoc.h). */
#include <stdio.h>

#include "common/net/proto.h"
#include "ctld/sched/joballoc.h"

static joballoc_source_fn source;

void joballoc_set_source(joballoc_source_fn fn)
{
	__atomic_store_n(&source, fn, __ATOMIC_RELEASE);
}

cJSON *joballoc_op(const struct ctld_caller *c, const cJSON *req)
{
	joballoc_source_fn fn = __atomic_load_n(&source, __ATOMIC_ACQUIRE);
	const cJSON *j = cJSON_GetObjectItemCaseSensitive(req, "job");
	char err[256];
	cJSON *reply, *nodes;
	bool running = false;
	uid_t uid = 0;
	uint32_t job;

	if (c->uid != 0)
		return proto_reply_error("job_nodes: permission denied: only "
					 "root on a node asks for a job's "
					 "nodes");
	if (!cJSON_IsNumber(j) || j->valuedouble < 1 ||
	    j->valuedouble > 4294967295.0 ||
	    j->valuedouble != (double)(uint32_t)j->valuedouble)
		return proto_reply_error("job_nodes: 'job' must be a job id "
					 "(1 to 4294967295)");
	job = (uint32_t)j->valuedouble;
	if (!fn)
		return proto_reply_error("job_nodes: no Slurm here to ask "
					 "for job %u",
					 (unsigned)job);
	reply = proto_reply_ok();
	nodes = cJSON_CreateArray();
	if (!reply || !nodes) {
		cJSON_Delete(reply);
		cJSON_Delete(nodes);
		return NULL;
	}
	if (fn(job, &running, &uid, nodes, err, sizeof(err)) < 0) {
		cJSON_Delete(reply);
		cJSON_Delete(nodes);
		return proto_reply_error("job_nodes: job %u: %s", (unsigned)job,
					 err);
	}
	cJSON_AddNumberToObject(reply, "job", job);
	cJSON_AddBoolToObject(reply, "running", running);
	cJSON_AddNumberToObject(reply, "uid", (double)uid);
	cJSON_AddItemToObject(reply, "nodes", nodes);
	return reply;
}
