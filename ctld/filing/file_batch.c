/* file_batch.c - the `file_batch` op (see file_batch.h). */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/config/conf.h"
#include "common/history/history.h"
#include "common/history/jobfacts.h"
#include "common/net/proto.h"
#include "ctld/filing/file_batch.h"
#include "ctld/filing/file_ops.h"
#include "ctld/filing/joblock.h"
#include "ctld/filing/partstore.h"

/* What becomes of each entry. */
enum fate {
	FATE_ANSWERED, /* results[i] is set already */
	FATE_PUT,      /* a one-node record in the WriteBatch */
	FATE_PART,     /* a part, planned into the WriteBatch */
	FATE_ALONE,    /* filed on its own after the batch (its job is in
			 * the batch already: a job twice in one WriteBatch
			 * would wait for itself in the history's in-flight
			 * set) */
};

struct entry {
	const cJSON *req;
	uint32_t job;
	enum fate fate;
	struct partstore_plan plan; /* FATE_PART */
};

struct batch {
	const struct ctld_caller *c;
	struct history *h;
	struct entry *v;
	int n;
	cJSON *results;
	const cJSON **recs; /* the WriteBatch's records */
	size_t nrecs;
	struct history_aux *aux; /* and its parts-family writes */
	size_t naux;
	uint32_t *locked; /* the parts' jobs, locked over the */
	size_t nlocked;   /* write (ctld/filing/joblock.h) */
};

static cJSON *answer(bool filed, bool duplicate)
{
	cJSON *res = cJSON_CreateObject();

	cJSON_AddBoolToObject(res, "filed", filed);
	cJSON_AddBoolToObject(res, "duplicate", duplicate);
	return res;
}

static void set_result(struct batch *b, int i, cJSON *res)
{
	/* a failed replace leaves RES to us */
	if (res && !cJSON_ReplaceItemInArray(b->results, i, res))
		cJSON_Delete(res);
}

static void set_error(struct batch *b, int i, const char *err)
{
	cJSON *res = cJSON_CreateObject();

	cJSON_AddStringToObject(res, "error", err);
	set_result(b, i, res);
}

/* Is JOB in the WriteBatch already (as a record or a part)? */
static bool in_batch(const struct batch *b, uint32_t job)
{
	for (int k = 0; k < b->n; k++)
		if (b->v[k].job == job &&
		    (b->v[k].fate == FATE_PUT || b->v[k].fate == FATE_PART))
			return true;
	return false;
}

/* The file op's answer for REQ, as a results entry. */
static cJSON *file_one(const struct ctld_caller *c, const cJSON *req)
{
	cJSON *reply = ctld_op_file(c, req), *res;
	const cJSON *v;

	if (!reply)
		return NULL;
	if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(reply, "ok"))) {
		res = answer(
		    cJSON_IsTrue(
			cJSON_GetObjectItemCaseSensitive(reply, "filed")),
		    cJSON_IsTrue(
			cJSON_GetObjectItemCaseSensitive(reply, "duplicate")));
	} else {
		v = cJSON_GetObjectItemCaseSensitive(reply, "error");
		res = cJSON_CreateObject();
		cJSON_AddStringToObject(res, "error",
					cJSON_IsString(v) ? v->valuestring
							  : "not filed");
	}
	cJSON_Delete(reply);
	return res;
}

/* Entry I, one node's record: into the WriteBatch unless the service has
 * it from that node already. */
static void sort_record(struct batch *b, int i)
{
	struct entry *e = &b->v[i];
	const cJSON *rec = cJSON_GetObjectItemCaseSensitive(e->req, "record");
	char err[CONF_ERR_MAX];
	cJSON *old;

	if (in_batch(b, e->job)) {
		e->fate = FATE_ALONE;
		return;
	}
	old = history_get(b->h, e->job, err, sizeof(err));
	if (old) {
		bool dup = !strcmp(jobfacts_str(old, "node", ""),
				   jobfacts_str(e->req, "node", "")) &&
			   jobfacts_num(old, "end", -1) ==
			       jobfacts_num(rec, "end", -2);

		cJSON_Delete(old);
		if (dup) {
			set_result(b, i, answer(false, true));
			return;
		}
	} else if (errno != ENOENT) {
		set_error(b, i, err);
		return;
	}
	e->fate = FATE_PUT;
	b->recs[b->nrecs++] = rec;
}

/* Entry I, a part: planned into the WriteBatch (its job's lock held). */
static void plan_part(struct batch *b, int i, double now)
{
	struct entry *e = &b->v[i];
	struct partstore_plan *pl = &e->plan;
	char err[CONF_ERR_MAX];

	if (partstore_prepare(b->h, e->req, now, pl, err, sizeof(err)) < 0) {
		char line[CONF_ERR_MAX + 64];

		snprintf(line, sizeof(line), "file: job %u, node %s: %s",
			 e->job, jobfacts_str(e->req, "node", ""), err);
		e->fate = FATE_ANSWERED;
		set_error(b, i, line);
		return;
	}
	if (pl->res.duplicate) {
		set_result(b, i, answer(false, true));
		partstore_plan_done(pl);
		e->fate = FATE_ANSWERED;
		return;
	}
	if (pl->merged)
		b->recs[b->nrecs++] = pl->merged;
	memcpy(b->aux + b->naux, pl->aux, pl->naux * sizeof(*pl->aux));
	b->naux += pl->naux;
}

/* The WriteBatch failed: each entry on its own, so that one record the
 * history refuses does not fail the others. */
static void file_each(struct batch *b)
{
	for (int i = 0; i < b->n; i++) {
		struct entry *e = &b->v[i];

		if (e->fate == FATE_PART)
			partstore_plan_done(&e->plan);
		if (e->fate == FATE_PUT || e->fate == FATE_PART)
			e->fate = FATE_ALONE;
	}
}

cJSON *ctld_op_file_batch(const struct ctld_caller *c, const cJSON *req)
{
	const cJSON *files = cJSON_GetObjectItemCaseSensitive(req, "files");
	const cJSON *f;
	char err[CONF_ERR_MAX];
	struct batch b = { .c = c };
	double now = (double)time(NULL);
	cJSON *reply;
	int i;

	if (c->uid != 0)
		return proto_reply_error("permission denied: only root on a "
					 "cluster node files job records "
					 "(credential of uid %u)",
					 (unsigned)c->uid);
	b.n = cJSON_GetArraySize(files);
	if (!cJSON_IsArray(files) || b.n < 1 || b.n > FILE_BATCH_MAX)
		return proto_reply_error("key 'files': must be an array of 1 "
					 "to %d filings",
					 FILE_BATCH_MAX);
	b.h = history_db(err, sizeof(err));
	if (!b.h)
		return proto_reply_error("%s", err);
	b.v = calloc((size_t)b.n, sizeof(*b.v));
	b.recs = calloc((size_t)b.n, sizeof(*b.recs));
	b.aux = calloc((size_t)b.n, sizeof(*b.aux) * (sizeof(b.v->plan.aux) /
						      sizeof(*b.v->plan.aux)));
	b.locked = calloc((size_t)b.n, sizeof(*b.locked));
	b.results = cJSON_CreateArray();
	if (!b.v || !b.recs || !b.aux || !b.locked || !b.results)
		goto nomem;
	for (i = 0; i < b.n; i++)
		cJSON_AddItemToArray(b.results, cJSON_CreateNull());

	/* Checked and sorted in order. A part's job lock is taken below,
	 * once for the lot, and held until the write is done; a one-node
	 * record's duplicate check needs none. */
	i = 0;
	cJSON_ArrayForEach(f, files) {
		struct entry *e = &b.v[i];

		e->req = f;
		e->fate = FATE_ANSWERED;
		if (ctld_file_check(f, &e->job, err, sizeof(err)) < 0) {
			set_error(&b, i, err);
		} else if (!ctld_file_is_part(f)) {
			sort_record(&b, i);
		} else if (in_batch(&b, e->job)) {
			e->fate = FATE_ALONE;
		} else {
			e->fate = FATE_PART;
			b.locked[b.nlocked++] = e->job;
		}
		i++;
	}
	joblock_lock(b.locked, b.nlocked);
	for (i = 0; i < b.n; i++)
		if (b.v[i].fate == FATE_PART)
			plan_part(&b, i, now);
	/* One WriteBatch, one fsync for the lot. */
	if ((b.nrecs || b.naux) &&
	    history_put_aux(b.h, b.recs, b.nrecs, b.aux, b.naux,
			    HISTORY_PUT_SYNC, err, sizeof(err)) < 0)
		file_each(&b);
	joblock_unlock(b.locked, b.nlocked);
	for (i = 0; i < b.n; i++) {
		struct entry *e = &b.v[i];

		switch (e->fate) {
		case FATE_PUT:
			set_result(&b, i, answer(true, false));
			break;
		case FATE_PART:
			ctld_part_filed(c, e->job,
					jobfacts_str(e->req, "node", ""),
					&e->plan.res);
			set_result(&b, i, answer(e->plan.res.filed, false));
			partstore_plan_done(&e->plan);
			break;
		case FATE_ALONE: {
			cJSON *res = file_one(c, e->req);

			if (res)
				set_result(&b, i, res);
			else
				set_error(&b, i, "out of memory");
			break;
		}
		case FATE_ANSWERED:
			break;
		}
	}
	free(b.v);
	free(b.recs);
	free(b.aux);
	free(b.locked);
	reply = proto_reply_ok();
	if (!reply) {
		cJSON_Delete(b.results);
		return NULL;
	}
	cJSON_AddItemToObject(reply, "results", b.results);
	return reply;
nomem:
	free(b.v);
	free(b.recs);
	free(b.aux);
	free(b.locked);
	cJSON_Delete(b.results);
	return proto_reply_error("out of memory");
}
