/* partstore.c - a multi-node job's parts on the service (partstore.h).
 *
 * Locking: one mutex per job id (striped) around each read-decide-write
 * of a job's keys, so two parts of one job arriving at once, or a part
 * and the deadline thread, never both decide from the same old state.
 * Different jobs proceed in parallel; the history's own in-flight set
 * orders their record writes.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/base/errmsg.h"
#include "common/base/jsonbuf.h"
#include "common/base/jsonset.h"
#include "common/base/log.h"
#include "common/base/ticker.h"
#include "common/history/jobfacts.h"
#include "common/telemetry/outbox.h"
#include "common/telemetry/recmerge.h"
#include "ctld/filing/joblock.h"
#include "ctld/filing/partstore.h"

#define META_KEY_LEN PARTSTORE_META_KEY_LEN
#define PART_KEY_MAX PARTSTORE_PART_KEY_MAX
#define WAIT_TAG 'w'
#define WAIT_KEY_LEN PARTSTORE_WAIT_KEY_LEN
#define EXPIRE_BATCH 256
#define THREAD_IDLE_S 60  /* look again at least this often */
#define THREAD_ERROR_S 10 /* after a failed pass */

enum {
	KEY_META = 0x00,
	KEY_PART = 0x01,
};

static void put_be(char *p, uint64_t v, int bytes)
{
	for (int i = bytes - 1; i >= 0; i--) {
		p[i] = (char)(v & 0xff);
		v >>= 8;
	}
}

static uint64_t get_be(const char *p, int bytes)
{
	uint64_t v = 0;

	for (int i = 0; i < bytes; i++)
		v = (v << 8) | (unsigned char)p[i];
	return v;
}

static size_t meta_key(uint32_t job, char *buf)
{
	history_parts_prefix(job, buf);
	buf[HISTORY_PARTS_PREFIX_LEN] = KEY_META;
	return META_KEY_LEN;
}

static size_t part_key(uint32_t job, const char *node, char *buf)
{
	size_t n = strlen(node);

	history_parts_prefix(job, buf);
	buf[HISTORY_PARTS_PREFIX_LEN] = KEY_PART;
	memcpy(buf + HISTORY_PARTS_PREFIX_LEN + 1, node, n);
	return HISTORY_PARTS_PREFIX_LEN + 1 + n;
}

static size_t wait_key(uint64_t first, uint32_t job, char *buf)
{
	buf[0] = WAIT_TAG;
	put_be(buf + 1, first, 8);
	put_be(buf + 9, job, 4);
	return WAIT_KEY_LEN;
}

/* The JSON value at KEY, or NULL (errno ENOENT absent; else err). */
static cJSON *get_json(struct history *h, const char *key, size_t klen,
		       char *err, size_t errlen)
{
	size_t vlen = 0;
	char *val = history_aux_get(h, key, klen, &vlen, err, errlen);
	cJSON *o;

	if (!val)
		return NULL;
	/* a part is a packed record (history_unpack_record reads the JSON
	 * text parts were stored as before 2026-11-24 too); a meta is JSON */
	o = history_unpack_record(val, vlen);
	free(val);
	if (!cJSON_IsObject(o)) {
		cJSON_Delete(o);
		errmsg_fail(err, errlen, EIO,
			    "parts: a stored value is damaged");
		return NULL;
	}
	return o;
}

/* Distinct names of NODES (a JSON array of checked names) into *ret
 * (pointers into NODES; caller frees the array). Returns the count. */
static size_t node_list(const cJSON *nodes, const char ***ret)
{
	size_t n = 0, cap = (size_t)cJSON_GetArraySize(nodes);
	const char **v = calloc(cap ? cap : 1, sizeof(*v));
	const cJSON *e;

	*ret = v;
	if (!v)
		return 0;
	cJSON_ArrayForEach(e, nodes) {
		size_t i;

		for (i = 0; i < n && strcmp(v[i], e->valuestring); i++)
			;
		if (i == n)
			v[n++] = e->valuestring;
	}
	return n;
}

static bool same_nodes(const cJSON *a, const cJSON *b)
{
	int n = cJSON_GetArraySize(a);

	if (!cJSON_IsArray(a) || !cJSON_IsArray(b) ||
	    n != cJSON_GetArraySize(b))
		return false;
	for (int i = 0; i < n; i++) {
		const cJSON *x = cJSON_GetArrayItem(a, i);
		const cJSON *y = cJSON_GetArrayItem(b, i);

		if (!cJSON_IsString(x) || !cJSON_IsString(y) ||
		    strcmp(x->valuestring, y->valuestring))
			return false;
	}
	return true;
}

/* --- the parts of one job ------------------------------------------------------ */

/* Add the part VAL (VLEN bytes: a packed record, or JSON text) to ARR; a
 * damaged one counts as missing. */
static void add_part(cJSON *arr, const char *val, size_t vlen)
{
	cJSON *rec = history_unpack_record(val, vlen);

	if (!cJSON_IsObject(rec)) {
		cJSON_Delete(rec);
		return;
	}
	cJSON_AddItemToArray(arr, rec);
}

/* Add the part stored under KEY to ARR; a damaged one counts as missing.
 * 0 (absent or added), -1 with err on a read error. */
static int add_stored(struct history *h, const char *key, size_t klen,
		      cJSON *arr, char *err, size_t errlen)
{
	size_t vlen = 0;
	char *val = history_aux_get(h, key, klen, &vlen, err, errlen);

	if (!val)
		return errno == ENOENT ? 0 : -1;
	add_part(arr, val, vlen);
	free(val);
	return 0;
}

/* The stored parts of JOB from the N nodes NAMES but SKIP (may be NULL).
 * Point lookups: a part is only ever stored under a name of its job's
 * node list, and a lookup costs a bloom filter where a prefix scan costs
 * an iterator over every sorted run. NULL with err. */
static cJSON *stored_parts(struct history *h, uint32_t job,
			   const char *const *names, size_t n, const char *skip,
			   char *err, size_t errlen)
{
	char key[PART_KEY_MAX];
	cJSON *arr = cJSON_CreateArray();

	if (!arr) {
		errmsg_fail(err, errlen, ENOMEM, "parts: out of memory");
		return NULL;
	}
	for (size_t i = 0; i < n; i++) {
		if (skip && !strcmp(names[i], skip))
			continue;
		if (add_stored(h, key, part_key(job, names[i], key), arr, err,
			       errlen) < 0) {
			cJSON_Delete(arr);
			return NULL;
		}
	}
	return arr;
}

static int collect(const char *key, size_t klen, const char *val, size_t vlen,
		   void *arg)
{
	(void)key;
	(void)klen;
	add_part(arg, val, vlen);
	return 0;
}

cJSON *partstore_parts(struct history *h, uint32_t job, char *err,
		       size_t errlen)
{
	char prefix[META_KEY_LEN];
	cJSON *arr = cJSON_CreateArray();

	if (!arr) {
		errmsg_fail(err, errlen, ENOMEM, "parts: out of memory");
		return NULL;
	}
	history_parts_prefix(job, prefix);
	prefix[HISTORY_PARTS_PREFIX_LEN] = KEY_PART;
	if (history_aux_scan(h, prefix, sizeof(prefix), collect, arr, err,
			     errlen) < 0) {
		cJSON_Delete(arr);
		return NULL;
	}
	return arr;
}

/* How many of NODES (N distinct names) have a part in PARTS. */
static unsigned count_have(const cJSON *parts, const char *const *nodes,
			   size_t n)
{
	unsigned have = 0;

	for (size_t i = 0; i < n; i++) {
		const cJSON *p;

		cJSON_ArrayForEach(p, parts)
			if (!strcmp(jobfacts_str(p, "node", ""), nodes[i])) {
				have++;
				break;
			}
	}
	return have;
}

/* The merged record of PARTS on NODES, or NULL with err. */
static cJSON *merge(uint32_t job, const cJSON *parts, const char *const *nodes,
		    size_t n, char *err, size_t errlen)
{
	size_t k = (size_t)cJSON_GetArraySize(parts), i = 0;
	const cJSON **v = calloc(k ? k : 1, sizeof(*v));
	const cJSON *p;
	cJSON *r;

	if (!v) {
		errmsg_fail(err, errlen, ENOMEM, "parts: out of memory");
		return NULL;
	}
	cJSON_ArrayForEach(p, parts)
		v[i++] = p;
	r = recmerge_job(v, k, nodes, n);
	free(v);
	if (!r)
		errmsg_fail(err, errlen, errno,
			    "job %" PRIu32 ": cannot merge its "
			    "parts: %s",
			    job, strerror(errno));
	return r;
}

static char *print(const cJSON *o)
{
	char *s = jsonbuf_dup(o);

	if (!s)
		errno = ENOMEM;
	return s;
}

static bool same_time(const cJSON *a, const cJSON *b, const char *key)
{
	return jobfacts_num(a, key, -1) == jobfacts_num(b, key, -1);
}

static void add_aux(struct partstore_plan *pl, enum history_aux_op op,
		    const char *key, size_t klen, const char *val, size_t vlen)
{
	pl->aux[pl->naux++] = (struct history_aux){ op, key, klen, val, vlen };
}

void partstore_plan_done(struct partstore_plan *pl)
{
	cJSON_Delete(pl->merged);
	free(pl->mtext);
	jsonbuf_fini(&pl->part);
	*pl = (struct partstore_plan){ 0 };
}

int partstore_prepare(struct history *h, const cJSON *entry, double now,
		      struct partstore_plan *pl, char *err, size_t errlen)
{
	const cJSON *rec = cJSON_GetObjectItemCaseSensitive(entry, "record");
	const cJSON *nodes = cJSON_GetObjectItemCaseSensitive(entry, "nodes");
	struct partstore_result *res = &pl->res;
	const char **names = NULL, *node;
	cJSON *meta = NULL, *mine = NULL, *parts = NULL;
	cJSON *newmeta = NULL;
	size_t n, plen;
	uint64_t first;
	uint32_t job;
	bool filed_before = false, reset = false;
	int rc = -1;

	*pl = (struct partstore_plan){ 0 };
	if (outbox_entry_check(entry, err, errlen) < 0)
		return -1;
	job = (uint32_t)jobfacts_num(entry, "job", 0);
	node = jobfacts_str(entry, "node", "");
	n = node_list(nodes, &names);
	if (!names)
		return errmsg_fail(err, errlen, ENOMEM, "parts: out of memory");
	if (n < 2) {
		free(names);
		return errmsg_fail(err, errlen, EINVAL,
				   "key 'nodes': a multi-node "
				   "job names 2 nodes or more");
	}
	/* Checked now, so that no stored part can later stop its job's
	 * record from being filed. */
	if (jobfacts_check(rec, err, errlen) < 0) {
		free(names);
		return -1;
	}
	if (!cJSON_HasObjectItem(rec, "end")) {
		free(names);
		return errmsg_fail(err, errlen, EINVAL,
				   "key 'record': not a finished "
				   "part (no 'end')");
	}
	res->first = now;
	meta_key(job, pl->mkey);
	meta = get_json(h, pl->mkey, sizeof(pl->mkey), err, errlen);
	if (!meta && errno != ENOENT)
		goto out;
	plen = part_key(job, node, pl->pkey);
	mine = get_json(h, pl->pkey, plen, err, errlen);
	if (!mine && errno != ENOENT)
		goto out;
	/* The same id for another job: what is stored goes. */
	if (meta &&
	    !same_nodes(cJSON_GetObjectItemCaseSensitive(meta, "nodes"), nodes))
		reset = true;
	if (mine && !same_time(mine, rec, "start"))
		reset = true;
	if (!reset && mine && same_time(mine, rec, "end")) {
		res->duplicate = true;
		parts = stored_parts(h, job, names, n, NULL, err, errlen);
		if (!parts)
			goto out;
		res->have = count_have(parts, names, n);
		res->want = (unsigned)n;
		rc = 0;
		goto out;
	}
	if (reset) {
		history_parts_prefix(job, pl->from);
		if (job < UINT32_MAX) {
			history_parts_prefix(job + 1, pl->to);
			add_aux(pl, HISTORY_AUX_DELETE_RANGE, pl->from,
				sizeof(pl->from), pl->to, sizeof(pl->to));
		} else {
			pl->to[0] = HISTORY_PARTS_TAG + 1;
			add_aux(pl, HISTORY_AUX_DELETE_RANGE, pl->from,
				sizeof(pl->from), pl->to, 1);
		}
		if (meta && !cJSON_IsTrue(cJSON_GetObjectItem(meta, "filed"))) {
			wait_key((uint64_t)jobfacts_num(meta, "first", 0), job,
				 pl->wkey_old);
			add_aux(pl, HISTORY_AUX_DELETE, pl->wkey_old,
				sizeof(pl->wkey_old), NULL, 0);
		}
		cJSON_Delete(meta);
		meta = NULL;
		parts = cJSON_CreateArray();
	} else {
		parts = stored_parts(h, job, names, n, node, err, errlen);
	}
	if (!parts)
		goto out;
	cJSON_AddItemToArray(parts, cJSON_Duplicate(rec, true));
	res->have = count_have(parts, names, n);
	res->want = (unsigned)n;
	filed_before = meta && cJSON_IsTrue(cJSON_GetObjectItem(meta, "filed"));
	first = meta ? (uint64_t)jobfacts_num(meta, "first", now)
		     : (uint64_t)now;
	res->first = (double)first;
	newmeta = cJSON_CreateObject();
	if (!newmeta ||
	    !cJSON_AddItemToObject(newmeta, "nodes",
				   cJSON_Duplicate(nodes, true)) ||
	    !cJSON_AddNumberToObject(newmeta, "first", (double)first))
		goto nomem;
	wait_key(first, job, pl->wkey);
	if (res->have == res->want || filed_before) {
		pl->merged = merge(job, parts, names, n, err, errlen);
		if (!pl->merged)
			goto out;
		cJSON_AddBoolToObject(newmeta, "filed", true);
		cJSON_AddNumberToObject(newmeta, "filed_at", now);
		if (meta && !filed_before)
			add_aux(pl, HISTORY_AUX_DELETE, pl->wkey,
				sizeof(pl->wkey), NULL, 0);
		res->filed = true;
		res->late = filed_before;
	} else {
		cJSON_AddBoolToObject(newmeta, "filed", false);
		if (!meta)
			add_aux(pl, HISTORY_AUX_PUT, pl->wkey, sizeof(pl->wkey),
				"", 0);
	}
	pl->mtext = print(newmeta);
	if (!pl->mtext || history_pack_record(&pl->part, rec) < 0)
		goto nomem;
	add_aux(pl, HISTORY_AUX_PUT, pl->pkey, plen, pl->part.data,
		pl->part.len);
	add_aux(pl, HISTORY_AUX_PUT, pl->mkey, sizeof(pl->mkey), pl->mtext,
		strlen(pl->mtext));
	rc = 0;
	goto out;
nomem:
	errmsg_fail(err, errlen, ENOMEM, "parts: out of memory");
out:
	if (rc < 0)
		partstore_plan_done(pl);
	free(names);
	cJSON_Delete(meta);
	cJSON_Delete(mine);
	cJSON_Delete(parts);
	cJSON_Delete(newmeta);
	return rc;
}

int partstore_file(struct history *h, const cJSON *entry, double now,
		   struct partstore_result *ret, char *err, size_t errlen)
{
	uint32_t job = (uint32_t)jobfacts_num(entry, "job", 0);
	struct partstore_plan pl;
	int rc;

	joblock_lock(&job, 1);
	rc = partstore_prepare(h, entry, now, &pl, err, errlen);
	if (rc == 0 && !pl.res.duplicate) {
		const cJSON *recs[1] = { pl.merged };

		rc = history_put_aux(h, recs, pl.merged ? 1 : 0, pl.aux,
				     pl.naux, HISTORY_PUT_SYNC, err, errlen);
	}
	joblock_unlock(&job, 1);
	if (rc == 0)
		*ret = pl.res;
	partstore_plan_done(&pl);
	return rc;
}

/* --- deadlines ----------------------------------------------------------------- */

struct due {
	uint64_t first;
	uint32_t job;
};

struct due_scan {
	uint64_t cutoff; /* first <= cutoff is due */
	struct due *v;
	size_t n, max;
	bool counting; /* count only */
};

static int scan_due(const char *key, size_t klen, const char *val, size_t vlen,
		    void *arg)
{
	struct due_scan *d = arg;
	uint64_t first;

	(void)val;
	(void)vlen;
	if (klen != WAIT_KEY_LEN)
		return 0;
	first = get_be(key + 1, 8);
	if (d->counting) {
		if (d->n == 0 && d->v)
			d->v[0] = (struct due){ first, 0 };
		return ++d->n >= d->max ? 1 : 0;
	}
	if (first > d->cutoff)
		return 1;
	d->v[d->n++] = (struct due){ first, (uint32_t)get_be(key + 9, 4) };
	return d->n >= d->max ? 1 : 0;
}

double partstore_next_due(struct history *h, unsigned deadline_s,
			  size_t *ret_waiting, char *err, size_t errlen)
{
	struct due first = { 0, 0 };
	struct due_scan d = { 0, &first, 0, PARTSTORE_COUNT_MAX, true };
	char tag = WAIT_TAG;

	if (!ret_waiting)
		d.max = 1;
	if (history_aux_scan(h, &tag, 1, scan_due, &d, err, errlen) < 0)
		return -1;
	if (ret_waiting)
		*ret_waiting = d.n;
	return d.n ? (double)first.first + deadline_s : 0;
}

/* File job D->job with the parts it has; 1 filed, 0 nothing to do, -1. */
static int file_due(struct history *h, const struct due *d, double now,
		    cJSON **ret_merged, char *err, size_t errlen)
{
	char mkey[META_KEY_LEN], wkey[WAIT_KEY_LEN];
	struct history_aux aux[2];
	const char **names = NULL;
	cJSON *meta, *parts = NULL, *merged = NULL;
	const cJSON *recs[1];
	char *mtext = NULL;
	size_t n, naux = 0;
	int rc = -1;

	joblock_lock(&d->job, 1);
	wait_key(d->first, d->job, wkey);
	aux[naux++] = (struct history_aux){ HISTORY_AUX_DELETE, wkey,
					    sizeof(wkey), NULL, 0 };
	meta = get_json(h, mkey, meta_key(d->job, mkey), err, errlen);
	if (!meta && errno != ENOENT)
		goto out;
	if (!meta || cJSON_IsTrue(cJSON_GetObjectItem(meta, "filed")) ||
	    (uint64_t)jobfacts_num(meta, "first", 0) != d->first) {
		/* A stale waiting key (its job was filed or reset). */
		rc = history_put_aux(h, NULL, 0, aux, naux, 0, err, errlen);
		goto out;
	}
	n = node_list(cJSON_GetObjectItemCaseSensitive(meta, "nodes"), &names);
	parts = names ? stored_parts(h, d->job, names, n, NULL, err, errlen)
		      : NULL;
	if (!names || !parts) {
		if (!names)
			errmsg_fail(err, errlen, ENOMEM,
				    "parts: out of memory");
		goto out;
	}
	merged = merge(d->job, parts, names, n, err, errlen);
	if (!merged)
		goto out;
	json_set(meta, "filed", cJSON_CreateTrue());
	cJSON_AddNumberToObject(meta, "filed_at", now);
	mtext = print(meta);
	if (!mtext) {
		errmsg_fail(err, errlen, ENOMEM, "parts: out of memory");
		goto out;
	}
	aux[naux++] = (struct history_aux){ HISTORY_AUX_PUT, mkey, sizeof(mkey),
					    mtext, strlen(mtext) };
	recs[0] = merged;
	if (history_put_aux(h, recs, 1, aux, naux, HISTORY_PUT_SYNC, err,
			    errlen) < 0)
		goto out;
	*ret_merged = merged;
	merged = NULL;
	rc = 1;
out:
	joblock_unlock(&d->job, 1);
	free(mtext);
	free(names);
	cJSON_Delete(meta);
	cJSON_Delete(parts);
	cJSON_Delete(merged);
	return rc;
}

int partstore_expire(struct history *h, unsigned deadline_s, double now,
		     partstore_filed_fn fn, void *arg, unsigned *ret_filed,
		     char *err, size_t errlen)
{
	struct due v[EXPIRE_BATCH];
	unsigned filed = 0;
	char tag = WAIT_TAG, ferr[CONF_ERR_MAX] = "";
	int rc = 0;

	if (now < deadline_s) {
		if (ret_filed)
			*ret_filed = 0;
		return 0;
	}
	for (;;) {
		struct due_scan d = { (uint64_t)(now - deadline_s), v, 0,
				      EXPIRE_BATCH, false };
		size_t done = 0;

		if (history_aux_scan(h, &tag, 1, scan_due, &d, err, errlen) < 0)
			return -1;
		for (size_t i = 0; i < d.n; i++) {
			cJSON *merged = NULL;
			int r = file_due(h, &v[i], now, &merged, ferr,
					 sizeof(ferr));

			if (r < 0) {
				/* One job that cannot be filed must not hold
				 * up the others: reported at the end. */
				rc = -1;
				if (err && errlen)
					snprintf(err, errlen, "%s", ferr);
				continue;
			}
			done++;
			if (r == 1) {
				filed++;
				if (fn)
					fn(v[i].job, merged, arg);
				cJSON_Delete(merged);
			}
		}
		/* A failed job keeps its key: stop rather than loop on it. */
		if (d.n < EXPIRE_BATCH || done < d.n)
			break;
	}
	if (ret_filed)
		*ret_filed = filed;
	return rc;
}

/* --- the service's thread --------------------------------------------------------- */

static const struct conf *pconf;
/* The thread: a ticker whose turn says when it looks next. due_self is
 * the turn's own (set before the first turn, cleared after the last);
 * due_ticker, under due_lock, is partstore_wake's, cleared before the
 * stop (connection threads may still wake it). */
static struct ticker *due_self, *due_ticker;
/* Under due_lock: when the thread next looks (0: it is looking now), and
 * the earliest deadline of a job that began waiting since its last scan
 * (0: none). A new job's deadline is PartsDeadline from now, so it is
 * almost never earlier than the one the thread sleeps for: waking the
 * thread (and its scan) for every waiting job cost more than the filing. */
static double sleep_until, new_due;
static pthread_mutex_t due_lock = PTHREAD_MUTEX_INITIALIZER;

static void log_filed(uint32_t job, const cJSON *rec, void *arg)
{
	const cJSON *missing =
	    cJSON_GetObjectItemCaseSensitive(rec, "missing_nodes");
	char names[512] = "";
	size_t used = 0;
	const cJSON *e;

	(void)arg;
	cJSON_ArrayForEach(e, missing)
		if (cJSON_IsString(e) && used < sizeof(names))
			used += (size_t)snprintf(names + used,
						 sizeof(names) - used, "%s%s",
						 used ? "," : "",
						 e->valuestring);
	log_warningx("job %" PRIu32 ": filed after PartsDeadline=%us with "
		     "%d of %d parts; missing: %s",
		     job, pconf->parts_deadline,
		     cJSON_GetArraySize(cJSON_GetObjectItem(rec, "nodes")) -
			 cJSON_GetArraySize(missing),
		     cJSON_GetArraySize(cJSON_GetObjectItem(rec, "nodes")),
		     names[0] ? names : "none");
}

/* The ticker's turn: file what is due, then sleep until the next
 * deadline (the store's, or a job that began waiting meanwhile), at most
 * THREAD_IDLE_S, THREAD_ERROR_S after a failure. */
static void due_turn(void *arg, bool poked)
{
	char err[CONF_ERR_MAX];

	(void)arg;
	(void)poked;
	for (;;) {
		struct history *h = history_db(err, sizeof(err));
		double next = 0, now = (double)time(NULL), until;
		bool failed = false;

		pthread_mutex_lock(&due_lock);
		sleep_until = 0; /* looking now */
		new_due = 0;     /* the scan below sees every job waiting now */
		pthread_mutex_unlock(&due_lock);
		if (h) {
			next = partstore_next_due(h, pconf->parts_deadline,
						  NULL, err, sizeof(err));
			if (next < 0) {
				log_warningx("%s", err);
				failed = true;
				next = 0;
			} else if (next > 0 && next <= now) {
				if (partstore_expire(h, pconf->parts_deadline,
						     now, log_filed, NULL, NULL,
						     err, sizeof(err)) < 0) {
					log_warningx("parts: %s; retried in "
						     "%d s",
						     err, THREAD_ERROR_S);
					failed = true;
				} else if (!ticker_stopping(due_self)) {
					continue;
				} else {
					return;
				}
			}
		}
		until = (double)(time_t)now +
			(failed ? THREAD_ERROR_S : THREAD_IDLE_S);
		if (!failed && next > 0 && next < until)
			until = (double)(time_t)next;
		pthread_mutex_lock(&due_lock);
		/* a job that began waiting after the scan */
		if (new_due > 0 && new_due < until)
			until = (double)(time_t)new_due;
		sleep_until = until;
		pthread_mutex_unlock(&due_lock);
		now = (double)time(NULL);
		ticker_next(due_self,
			    until > now ? (unsigned)((until - now) * 1000) : 0);
		return;
	}
}

int partstore_start(const struct conf *conf, char *err, size_t errlen)
{
	struct ticker *t;

	pconf = conf;
	/* the first turn waits for due_self: it is set under the lock */
	pthread_mutex_lock(&due_lock);
	t = ticker_start(THREAD_IDLE_S * 1000, true, due_turn, NULL);
	due_self = due_ticker = t;
	pthread_mutex_unlock(&due_lock);
	if (!t)
		return errmsg_fail(err, errlen, errno,
				   "parts: cannot start the deadline "
				   "thread: %s",
				   strerror(errno));
	return 0;
}

void partstore_wake(double first)
{
	double due = first + (pconf ? pconf->parts_deadline : 0);

	pthread_mutex_lock(&due_lock);
	if (new_due == 0 || due < new_due)
		new_due = due;
	if (sleep_until > 0 && due < sleep_until && due_ticker) {
		sleep_until = 0;
		ticker_poke(due_ticker);
	}
	pthread_mutex_unlock(&due_lock);
}

void partstore_stop(void)
{
	pthread_mutex_lock(&due_lock);
	due_ticker = NULL;
	pthread_mutex_unlock(&due_lock);
	ticker_stop(due_self);
	due_self = NULL;
}
