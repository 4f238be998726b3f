/* file_ops.c - the `file` op (see file_ops.h).
 *
 * The duplicate check and the filing of one job id take turns (its lock,
 * ctld/filing/joblock.h): two retries of the same (job, node) arriving at once
 * file it once. Filings of different jobs run in parallel, as
 * history_put_many allows.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "common/base/errmsg.h"
#include "common/base/log.h"
#include "common/config/conf.h"
#include "common/history/history.h"
#include "common/history/jobfacts.h"
#include "common/net/proto.h"
#include "ctld/filing/file_ops.h"
#include "ctld/filing/joblock.h"
#include "ctld/filing/partstore.h"

/* Is OLD (the recorded job) what NODE already filed as RECORD? */
static bool same_filing(const cJSON *old, const char *node, const cJSON *record)
{
	return !strcmp(jobfacts_str(old, "node", ""), node) &&
	       jobfacts_num(old, "end", -1) == jobfacts_num(record, "end", -2);
}

static bool in_nodes(const cJSON *nodes, const char *node)
{
	const cJSON *n;

	cJSON_ArrayForEach(n, nodes)
		if (cJSON_IsString(n) && !strcmp(n->valuestring, node))
			return true;
	return false;
}

void ctld_part_filed(const struct ctld_caller *c, uint32_t job,
		     const char *node, const struct partstore_result *res)
{
	if (res->filed && res->late)
		log_info("job %u: late part from node %s (%s): record filed "
			 "again with %u of %u parts",
			 job, node, c->addr, res->have, res->want);
	else if (res->filed)
		log_info("job %u: all %u parts in (the last from node %s): "
			 "one record filed",
			 job, res->want, node);
	else if (!res->duplicate && res->have == 1)
		partstore_wake(res->first); /* a new job waits */
}

/* A part of a multi-node job: kept, merged and filed by partstore.c. */
static cJSON *file_part(const struct ctld_caller *c, struct history *h,
			uint32_t job, const char *node, const cJSON *req)
{
	struct partstore_result res;
	char err[CONF_ERR_MAX];
	cJSON *reply;

	if (partstore_file(h, req, (double)time(NULL), &res, err, sizeof(err)) <
	    0)
		return proto_reply_error("file: job %u, node %s: %s", job, node,
					 err);
	ctld_part_filed(c, job, node, &res);
	reply = proto_reply_ok();
	if (!reply)
		return NULL;
	cJSON_AddBoolToObject(reply, "filed", res.filed);
	cJSON_AddBoolToObject(reply, "duplicate", res.duplicate);
	cJSON_AddNumberToObject(reply, "parts", res.have);
	cJSON_AddNumberToObject(reply, "nodes", res.want);
	return reply;
}

int ctld_file_check(const cJSON *req, uint32_t *ret_job, char *err,
		    size_t errlen)
{
	const cJSON *rec = cJSON_GetObjectItemCaseSensitive(req, "record");
	const cJSON *nodes = cJSON_GetObjectItemCaseSensitive(req, "nodes");
	const char *node = jobfacts_str(req, "node", NULL);
	uint32_t job;

	if (!cJSON_IsObject(req))
		return errmsg_fail(err, errlen, EINVAL, "not an object");
	if (proto_get_u32(req, "job", &job, err, errlen) < 0)
		return -1;
	if (job == 0)
		return errmsg_fail(err, errlen, EINVAL,
				   "key 'job': must be > 0");
	if (!node || !conf_is_node_name(node))
		return errmsg_fail(err, errlen, EINVAL,
				   "key 'node': missing or not a node name");
	if (!cJSON_IsObject(rec))
		return errmsg_fail(err, errlen, EINVAL,
				   "key 'record': missing or not an object");
	if (jobfacts_num(rec, "job", 0) != (double)job)
		return errmsg_fail(err, errlen, EINVAL,
				   "key 'record': its job is not %u", job);
	if (nodes && (!cJSON_IsArray(nodes) || cJSON_GetArraySize(nodes) < 1))
		return errmsg_fail(err, errlen, EINVAL,
				   "key 'nodes': must be a non-empty array of "
				   "node names");
	if (strcmp(jobfacts_str(rec, "node", node), node))
		return errmsg_fail(err, errlen, EINVAL,
				   "key 'record': filed by node '%s' but its "
				   "node is another",
				   node);
	if (nodes && !in_nodes(nodes, node))
		return errmsg_fail(err, errlen, EINVAL,
				   "key 'nodes': does not name node '%s'",
				   node);
	*ret_job = job;
	return 0;
}

bool ctld_file_is_part(const cJSON *req)
{
	return cJSON_GetArraySize(
		   cJSON_GetObjectItemCaseSensitive(req, "nodes")) > 1;
}

cJSON *ctld_op_file(const struct ctld_caller *c, const cJSON *req)
{
	const cJSON *rec = cJSON_GetObjectItemCaseSensitive(req, "record");
	const char *node = jobfacts_str(req, "node", NULL);
	char err[CONF_ERR_MAX];
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
	if (ctld_file_check(req, &job, err, sizeof(err)) < 0)
		return proto_reply_error("%s", err);
	h = history_db(err, sizeof(err));
	if (!h)
		return proto_reply_error("%s", err);
	if (ctld_file_is_part(req))
		return file_part(c, h, job, node, req);
	joblock_lock(&job, 1);
	old = history_get(h, job, err, sizeof(err));
	if (old)
		duplicate = same_filing(old, node, rec);
	rc = old || errno == ENOENT ? 0 : -1;
	if (rc == 0 && !duplicate)
		rc = history_record_job(rec, err, sizeof(err));
	joblock_unlock(&job, 1);
	cJSON_Delete(old);
	if (rc < 0)
		return proto_reply_error("file: job %u: %s", job, err);
	reply = proto_reply_ok();
	cJSON_AddBoolToObject(reply, "filed", !duplicate);
	cJSON_AddBoolToObject(reply, "duplicate", duplicate);
	return reply;
}
