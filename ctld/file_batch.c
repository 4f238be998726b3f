/* file_batch.c - the `file_batch` op (see file_batch.h). */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/conf.h"
#include "common/proto.h"
#include "ctld/file_batch.h"
#include "ctld/file_ops.h"
#include "ctld/history.h"
#include "ctld/jobfacts.h"

/* Entry E's shape, as the file op checks it: 0 with *ret_job, or -1 with
 * the reason in err. */
static int entry_check(const cJSON *e, uint32_t *ret_job, char *err,
		       size_t errlen)
{
	const cJSON *rec = cJSON_GetObjectItemCaseSensitive(e, "record");
	const cJSON *nodes = cJSON_GetObjectItemCaseSensitive(e, "nodes");
	const char *node = jobfacts_str(e, "node", NULL);
	uint32_t job;

	if (!cJSON_IsObject(e)) {
		snprintf(err, errlen, "not an object");
		return -1;
	}
	if (proto_get_u32(e, "job", &job, err, errlen) < 0)
		return -1;
	if (job == 0 || !node || !conf_is_node_name(node) ||
	    !cJSON_IsObject(rec) || jobfacts_num(rec, "job", 0) != (double)job ||
	    (nodes && (!cJSON_IsArray(nodes) ||
		       cJSON_GetArraySize(nodes) < 1))) {
		snprintf(err, errlen, "job %u: not a filing (job > 0, node, "
			 "record of that job, nodes)", job);
		return -1;
	}
	*ret_job = job;
	return 0;
}

static bool multi_node(const cJSON *e)
{
	return cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(e,
								   "nodes")) > 1;
}

/* Is JOB among the N records to put? */
static bool in_put(const cJSON *const *put, size_t n, uint32_t job)
{
	for (size_t k = 0; k < n; k++)
		if (jobfacts_num(put[k], "job", 0) == (double)job)
			return true;
	return false;
}

/* The file op's answer for E, as a results entry. */
static cJSON *file_one(const struct ctld_caller *c, const cJSON *e)
{
	cJSON *reply = ctld_op_file(c, e), *res = cJSON_CreateObject();
	const cJSON *v;

	if (!reply || !res) {
		cJSON_Delete(reply);
		cJSON_Delete(res);
		return NULL;
	}
	if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(reply, "ok"))) {
		v = cJSON_GetObjectItemCaseSensitive(reply, "filed");
		cJSON_AddBoolToObject(res, "filed", cJSON_IsTrue(v));
		v = cJSON_GetObjectItemCaseSensitive(reply, "duplicate");
		cJSON_AddBoolToObject(res, "duplicate", cJSON_IsTrue(v));
	} else {
		v = cJSON_GetObjectItemCaseSensitive(reply, "error");
		cJSON_AddStringToObject(res, "error", cJSON_IsString(v)
						      ? v->valuestring
						      : "not filed");
	}
	cJSON_Delete(reply);
	return res;
}

static void set_result(cJSON *results, int i, cJSON *res)
{
	cJSON_ReplaceItemInArray(results, i, res);
}

cJSON *ctld_op_file_batch(const struct ctld_caller *c, const cJSON *req)
{
	const cJSON *files = cJSON_GetObjectItemCaseSensitive(req, "files");
	const cJSON **put = NULL, *e;
	char err[CONF_ERR_MAX];
	int *put_at = NULL, n, i = 0;
	size_t nput = 0;
	struct history *h;
	cJSON *results = NULL, *reply;

	if (c->uid != 0)
		return proto_reply_error("permission denied: only root on a "
					 "cluster node files job records "
					 "(credential of uid %u)",
					 (unsigned)c->uid);
	n = cJSON_GetArraySize(files);
	if (!cJSON_IsArray(files) || n < 1 || n > FILE_BATCH_MAX)
		return proto_reply_error("key 'files': must be an array of 1 "
					 "to %d filings", FILE_BATCH_MAX);
	h = history_db(err, sizeof(err));
	if (!h)
		return proto_reply_error("%s", err);
	put = calloc((size_t)n, sizeof(*put));
	put_at = calloc((size_t)n, sizeof(*put_at));
	results = cJSON_CreateArray();
	if (!put || !put_at || !results)
		goto nomem;
	for (i = 0; i < n; i++)
		cJSON_AddItemToArray(results, cJSON_CreateNull());
	i = 0;
	cJSON_ArrayForEach(e, files)
	{
		const cJSON *rec = cJSON_GetObjectItemCaseSensitive(e, "record");
		cJSON *res = NULL, *old;
		uint32_t job;

		if (entry_check(e, &job, err, sizeof(err)) < 0) {
			res = cJSON_CreateObject();
			cJSON_AddStringToObject(res, "error", err);
		} else if (multi_node(e) || in_put(put, nput, job)) {
			/* a job twice in one WriteBatch would wait for
			 * itself in the history's in-flight set */
			res = file_one(c, e);
		} else if ((old = history_get(h, job, err, sizeof(err)))) {
			bool dup = !strcmp(jobfacts_str(old, "node", ""),
					   jobfacts_str(e, "node", "")) &&
				   jobfacts_num(old, "end", -1) ==
					   jobfacts_num(rec, "end", -2);

			cJSON_Delete(old);
			if (dup) {
				res = cJSON_CreateObject();
				cJSON_AddBoolToObject(res, "filed", false);
				cJSON_AddBoolToObject(res, "duplicate", true);
			}
		} else if (errno != ENOENT) {
			res = cJSON_CreateObject();
			cJSON_AddStringToObject(res, "error", err);
		}
		if (res) {
			set_result(results, i, res);
		} else {
			put[nput] = rec;
			put_at[nput++] = i;
		}
		i++;
	}
	/* One WriteBatch, one fsync for the lot; a record the history
	 * refuses fails the batch, so then each gets its own answer. */
	if (nput && history_put_many(h, put, nput, HISTORY_PUT_SYNC, err,
				     sizeof(err)) < 0) {
		for (size_t k = 0; k < nput; k++) {
			cJSON *res = cJSON_CreateObject();

			if (history_put(h, put[k], HISTORY_PUT_SYNC, err,
					sizeof(err)) < 0) {
				cJSON_AddStringToObject(res, "error", err);
			} else {
				cJSON_AddBoolToObject(res, "filed", true);
				cJSON_AddBoolToObject(res, "duplicate", false);
			}
			set_result(results, put_at[k], res);
		}
		nput = 0;
	}
	for (size_t k = 0; k < nput; k++) {
		cJSON *res = cJSON_CreateObject();

		cJSON_AddBoolToObject(res, "filed", true);
		cJSON_AddBoolToObject(res, "duplicate", false);
		set_result(results, put_at[k], res);
	}
	free(put);
	free(put_at);
	reply = proto_reply_ok();
	if (!reply) {
		cJSON_Delete(results);
		return NULL;
	}
	cJSON_AddItemToObject(reply, "results", results);
	return reply;
nomem:
	free(put);
	free(put_at);
	cJSON_Delete(results);
	return proto_reply_error("out of memory");
}
