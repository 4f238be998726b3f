/* file_ops.c - the `file` op (see file_ops.h).
 *
 * The duplicate check and the filing of one job id take turns (a lock per
 * job id, striped): two retries of the same (job, node) arriving at once
 * file it once. Filings of different jobs run in parallel, as
 * history_put_many allows.
 */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "common/conf.h"
#include "common/proto.h"
#include "ctld/file_ops.h"
#include "ctld/history.h"
#include "ctld/jobfacts.h"

#define FILE_LOCKS 64

static pthread_mutex_t file_locks[FILE_LOCKS] = {
	[0 ... FILE_LOCKS - 1] = PTHREAD_MUTEX_INITIALIZER
};

/* Is OLD (the recorded job) what NODE already filed as RECORD? */
static bool same_filing(const cJSON *old, const char *node,
			const cJSON *record)
{
	return !strcmp(jobfacts_str(old, "node", ""), node) &&
	       jobfacts_num(old, "end", -1) == jobfacts_num(record, "end", -2);
}

cJSON *ctld_op_file(const struct ctld_caller *c, const cJSON *req)
{
	const cJSON *rec = cJSON_GetObjectItemCaseSensitive(req, "record");
	const cJSON *nodes = cJSON_GetObjectItemCaseSensitive(req, "nodes");
	const char *node = jobfacts_str(req, "node", NULL);
	char err[CONF_ERR_MAX];
	pthread_mutex_t *lock;
	struct history *h;
	cJSON *old, *reply;
	bool duplicate = false;
	uint32_t job;
	int rc;

	if (c->uid != 0)
		return proto_reply_error("permission denied: only root on a "
					 "cluster node files job records "
					 "(credential of uid %u)",
					 (unsigned)c->uid);
	if (proto_get_u32(req, "job", &job, err, sizeof(err)) < 0)
		return proto_reply_error("%s", err);
	if (job == 0)
		return proto_reply_error("key 'job': must be > 0");
	if (!node || !conf_is_node_name(node))
		return proto_reply_error("key 'node': missing or not a node "
					 "name");
	if (!cJSON_IsObject(rec))
		return proto_reply_error("key 'record': missing or not an "
					 "object");
	if (jobfacts_num(rec, "job", 0) != (double)job)
		return proto_reply_error("key 'record': its job is not %u",
					 job);
	if (nodes && (!cJSON_IsArray(nodes) ||
		      cJSON_GetArraySize(nodes) < 1))
		return proto_reply_error("key 'nodes': must be a non-empty "
					 "array of node names");
	if (nodes && cJSON_GetArraySize(nodes) > 1)
		return proto_reply_error("file: job %u spans %d nodes: merging "
					 "the parts of a multi-node job is not "
					 "done by this service yet",
					 job, cJSON_GetArraySize(nodes));
	h = history_db(err, sizeof(err));
	if (!h)
		return proto_reply_error("%s", err);
	lock = &file_locks[job % FILE_LOCKS];
	pthread_mutex_lock(lock);
	old = history_get(h, job, err, sizeof(err));
	if (old)
		duplicate = same_filing(old, node, rec);
	rc = old || errno == ENOENT ? 0 : -1;
	if (rc == 0 && !duplicate)
		rc = history_record_job(rec, err, sizeof(err));
	pthread_mutex_unlock(lock);
	cJSON_Delete(old);
	if (rc < 0)
		return proto_reply_error("file: job %u: %s", job, err);
	reply = proto_reply_ok();
	cJSON_AddBoolToObject(reply, "filed", !duplicate);
	cJSON_AddBoolToObject(reply, "duplicate", duplicate);
	return reply;
}
