/* history_query.c - reading the history: one job, lists, the runs the
 * rules weigh (facts by app, dataset or user), counts, a walk over every
 * job, and the parts family's keys.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

#include <rocksdb/c.h>

#include "common/base/errmsg.h"
#include "common/history/history_int.h"
#include "common/history/jobfacts.h"

/* --- reading -------------------------------------------------------------------- */

cJSON *hist_get_summary(struct history *h, uint32_t job, cJSON **ret_phases,
			bool *ret_inline, char *err, size_t errlen)
{
	struct key k;
	char *rerr = NULL, *val;
	size_t vlen;
	cJSON *j;

	key_job(&k, job);
	val = rocksdb_get_cf(h->db, h->ro, h->cf[CF_JOBS], k.buf, k.len, &vlen,
			     &rerr);
	if (hist_rocks_err(rerr, err, errlen, "read") < 0)
		return NULL;
	if (!val) {
		errno = ENOENT;
		return NULL;
	}
	j = hist_unpack_jobs_value(val, vlen, ret_phases, ret_inline);
	free(val);
	if (!j)
		errmsg_fail(err, errlen, EIO,
			    "history: job %u: stored record is "
			    "damaged",
			    job);
	return j;
}

cJSON *history_get(struct history *h, uint32_t job, char *err, size_t errlen)
{
	cJSON *rec, *phases = NULL;
	bool inline_phases = false;
	struct key k;
	char *rerr = NULL, *val;
	size_t vlen;

	if (!h) {
		errmsg_fail(err, errlen, EINVAL, "history: not open");
		return NULL;
	}
	rec = hist_get_summary(h, job, &phases, &inline_phases, err, errlen);
	if (!rec) {
		if (errno == ENOENT)
			errmsg_fail(err, errlen, ENOENT,
				    "job %u: not in the history", job);
		return NULL;
	}
	if (inline_phases)
		goto done;
	/* filed before 2026-11-23: the phases under their own key */
	key_job(&k, job);
	val = rocksdb_get_cf(h->db, h->ro, h->cf[CF_PHASES], k.buf, k.len,
			     &vlen, &rerr);
	if (hist_rocks_err(rerr, err, errlen, "read phases") < 0) {
		cJSON_Delete(rec);
		return NULL;
	}
	if (val)
		phases = cJSON_ParseWithLength(val, vlen);
	free(val);
done:
	cJSON_AddItemToObject(rec, "phases",
			      phases ? phases : cJSON_CreateArray());
	return rec;
}

/* The list form of a stored summary. */
static cJSON *list_entry(const cJSON *s)
{
	static const char *const keys[] = {
		"job",   "user",           "uid",   "job_name", "node",
		"state", "profile_origin", "start", "end"
	};
	cJSON *e = cJSON_CreateObject(), *ds, *d;
	const cJSON *src;

	if (!e)
		return NULL;
	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
		const cJSON *v = cJSON_GetObjectItemCaseSensitive(s, keys[i]);

		if (v)
			cJSON_AddItemToObject(e, keys[i],
					      cJSON_Duplicate(v, 1));
	}
	ds = cJSON_AddArrayToObject(e, "datasets");
	cJSON_ArrayForEach(src,
			   cJSON_GetObjectItemCaseSensitive(s, "datasets")) {
		d = cJSON_CreateObject();
		if (!d || !ds)
			break;
		cJSON_AddItemToArray(ds, d);
		cJSON_AddStringToObject(d, "source",
					jobfacts_str(src, "source", ""));
		cJSON_AddNumberToObject(d, "bytes",
					jobfacts_num(src, "bytes", 0));
		cJSON_AddNumberToObject(d, "files",
					jobfacts_num(src, "files", 0));
		cJSON_AddStringToObject(d, "result",
					jobfacts_str(src, "result", ""));
	}
	return e;
}

struct found {
	uint64_t t;
	uint32_t job;
};

static int found_newest_first(const void *a, const void *b)
{
	const struct found *x = a, *y = b;

	if (x->t != y->t)
		return x->t < y->t ? 1 : -1;
	return x->job < y->job ? 1 : x->job > y->job ? -1 : 0;
}

/* Jobs (time, id) of the times index, newest first, or of USER's apps
 * keys; at most LIMIT with t >= SINCE. Returns the count or -1. */
static ssize_t find_jobs(struct history *h, const char *user, uint64_t since,
			 unsigned limit, struct found **ret, char *err,
			 size_t errlen)
{
	rocksdb_iterator_t *it;
	struct found *f;
	size_t n = 0, cap = user ? 1024 : limit, scanned = 0;
	char *rerr = NULL;
	struct key k = { 0 };

	f = malloc((cap ? cap : 1) * sizeof(*f));
	if (!f)
		return errmsg_fail(err, errlen, ENOMEM,
				   "history: out of memory");
	if (!user) {
		it = rocksdb_create_iterator_cf(h->db, h->ro, h->cf[CF_TIMES]);
		for (rocksdb_iter_seek_to_last(it);
		     rocksdb_iter_valid(it) && n < limit;
		     rocksdb_iter_prev(it)) {
			size_t klen;
			const char *key = rocksdb_iter_key(it, &klen);

			if (klen != 12)
				continue;
			if (get_be64(key) < since)
				break;
			f[n].t = get_be64(key);
			f[n++].job = get_be32(key + 8);
		}
	} else {
		key_str(&k, user);
		it = rocksdb_create_iterator_cf(h->db, h->ro, h->cf[CF_APPS]);
		for (rocksdb_iter_seek(it, k.buf, k.len);
		     rocksdb_iter_valid(it) && scanned < HISTORY_SCAN_MAX;
		     rocksdb_iter_next(it), scanned++) {
			size_t klen;
			const char *key = rocksdb_iter_key(it, &klen);
			uint64_t t;

			if (klen < k.len + 13 || memcmp(key, k.buf, k.len))
				break;
			t = ~get_be64(key + klen - 12);
			if (t < since)
				continue;
			if (n == cap) {
				struct found *g = realloc(f,
							  2 * cap * sizeof(*f));
				if (!g)
					break;
				f = g;
				cap *= 2;
			}
			f[n].t = t;
			f[n++].job = get_be32(key + klen - 4);
		}
	}
	rocksdb_iter_get_error(it, &rerr);
	rocksdb_iter_destroy(it);
	if (hist_rocks_err(rerr, err, errlen, "scan") < 0) {
		free(f);
		return -1;
	}
	qsort(f, n, sizeof(*f), found_newest_first);
	if (n > limit)
		n = limit;
	*ret = f;
	return (ssize_t)n;
}

cJSON *history_list(struct history *h, const char *user, double since,
		    unsigned limit, char *err, size_t errlen)
{
	struct found *f = NULL;
	cJSON *arr;
	ssize_t n;

	if (!h) {
		errmsg_fail(err, errlen, EINVAL, "history: not open");
		return NULL;
	}
	if (limit > HISTORY_LIST_MAX)
		limit = HISTORY_LIST_MAX;
	n = find_jobs(h, user, end_us(since), limit, &f, err, errlen);
	if (n < 0)
		return NULL;
	arr = cJSON_CreateArray();
	for (ssize_t i = 0; arr && i < n; i++) {
		cJSON *s = hist_get_summary(h, f[i].job, NULL, NULL, err,
					    errlen),
		      *e;

		if (!s)
			continue; /* replaced between scan and read */
		e = list_entry(s);
		cJSON_Delete(s);
		if (e)
			cJSON_AddItemToArray(arr, e);
	}
	free(f);
	if (!arr)
		errmsg_fail(err, errlen, ENOMEM, "history: out of memory");
	return arr;
}

/* Facts under PREFIX (newest first by key), UID-filtered when UID >= 0,
 * in an arena (history_runs_free). */
static cJSON *scan_facts(struct history *h, enum history_cf cf,
			 const struct key *prefix, int64_t uid, double since,
			 unsigned max, char *err, size_t errlen)
{
	uint64_t since_us = end_us(since);
	rocksdb_iterator_t *it;
	size_t scanned = 0;
	unsigned found = 0;
	char *rerr = NULL;
	cJSON *arr;

	if (!h) {
		errmsg_fail(err, errlen, EINVAL, "history: not open");
		return NULL;
	}
	if (max > HISTORY_RUNS_MAX)
		max = HISTORY_RUNS_MAX;
	arr = jsonbuf_arena_array();
	if (!arr) {
		errmsg_fail(err, errlen, ENOMEM, "history: out of memory");
		return NULL;
	}
	it = rocksdb_create_iterator_cf(h->db, h->ro, h->cf[cf]);
	for (rocksdb_iter_seek(it, prefix->buf, prefix->len);
	     rocksdb_iter_valid(it) && found < max &&
	     scanned < HISTORY_SCAN_MAX;
	     rocksdb_iter_next(it), scanned++) {
		size_t klen, vlen;
		const char *key = rocksdb_iter_key(it, &klen);
		const char *val;
		cJSON *f;

		if (klen < prefix->len + 12 ||
		    memcmp(key, prefix->buf, prefix->len))
			break;
		/* by_app and by_dataset prefixes end right before the time:
		 * keys are newest first, the first old one ends the scan. */
		if (klen == prefix->len + 12 &&
		    ~get_be64(key + klen - 12) < since_us)
			break;
		if (~get_be64(key + klen - 12) < since_us)
			continue;
		val = rocksdb_iter_value(it, &vlen);
		if (cf == CF_DATASETS) {
			/* the value names the apps key holding the facts */
			char *fv = rocksdb_get_cf(h->db, h->ro, h->cf[CF_APPS],
						  val, vlen, &vlen, &rerr);

			if (rerr)
				break;
			f = fv ? jobfacts_unpack_into(arr, fv, vlen) : NULL;
			free(fv);
		} else {
			f = jobfacts_unpack_into(arr, val, vlen);
		}
		if (!f)
			continue;
		if (uid >= 0 && jobfacts_num(f, "uid", -1) != (double)uid) {
			cJSON_DetachItemViaPointer(arr, f); /* the arena's */
			continue;
		}
		found++;
	}
	rocksdb_iter_get_error(it, &rerr);
	rocksdb_iter_destroy(it);
	if (hist_rocks_err(rerr, err, errlen, "scan") < 0) {
		jsonbuf_arena_free(arr);
		return NULL;
	}
	return arr;
}

void history_runs_free(cJSON *runs)
{
	jsonbuf_arena_free(runs);
}

cJSON *history_runs_by_app(struct history *h, const char *user,
			   const char *job_name, double since, unsigned max,
			   char *err, size_t errlen)
{
	struct key k = { 0 };

	if (!user || !job_name || key_str(&k, user) < 0 ||
	    key_str(&k, job_name) < 0) {
		errmsg_fail(err, errlen, EINVAL,
			    "history: user or job name too long");
		return NULL;
	}
	return scan_facts(h, CF_APPS, &k, -1, since, max, err, errlen);
}

cJSON *history_runs_by_dataset(struct history *h, const char *source,
			       int64_t uid, double since, unsigned max,
			       char *err, size_t errlen)
{
	struct key k = { 0 };

	if (!source || key_str(&k, source) < 0) {
		errmsg_fail(err, errlen, EINVAL,
			    "history: dataset path too long");
		return NULL;
	}
	return scan_facts(h, CF_DATASETS, &k, uid, since, max, err, errlen);
}

cJSON *history_runs_by_user(struct history *h, const char *user, double since,
			    unsigned max, char *err, size_t errlen)
{
	struct key k = { 0 };

	if (!user || key_str(&k, user) < 0) {
		errmsg_fail(err, errlen, EINVAL, "history: user name too long");
		return NULL;
	}
	return scan_facts(h, CF_APPS, &k, -1, since, max, err, errlen);
}

int64_t history_count(struct history *h, char *err, size_t errlen)
{
	rocksdb_iterator_t *it;
	char *rerr = NULL;
	int64_t n = 0;

	if (!h)
		return errmsg_fail(err, errlen, EINVAL, "history: not open");
	it = rocksdb_create_iterator_cf(h->db, h->ro, h->cf[CF_TIMES]);
	for (rocksdb_iter_seek_to_first(it); rocksdb_iter_valid(it);
	     rocksdb_iter_next(it))
		n++;
	rocksdb_iter_get_error(it, &rerr);
	rocksdb_iter_destroy(it);
	if (hist_rocks_err(rerr, err, errlen, "count") < 0)
		return -1;
	return n;
}

int history_foreach(struct history *h, int (*fn)(cJSON *record, void *arg),
		    void *arg, unsigned *ret_unreadable, char *err,
		    size_t errlen)
{
	rocksdb_iterator_t *it;
	char *rerr = NULL;
	unsigned bad = 0;
	int rc = 0;

	if (!h || !fn)
		return errmsg_fail(err, errlen, EINVAL, "history: not open");
	/* The times index holds every job once; the record is read by its id,
	 * so old histories' separate phases come with it. */
	it = rocksdb_create_iterator_cf(h->db, h->ro, h->cf[CF_TIMES]);
	for (rocksdb_iter_seek_to_first(it); rc == 0 && rocksdb_iter_valid(it);
	     rocksdb_iter_next(it)) {
		size_t klen;
		const char *key = rocksdb_iter_key(it, &klen);
		cJSON *rec;

		if (klen != 12) {
			bad++;
			continue;
		}
		rec = history_get(h, get_be32(key + 8), NULL, 0);
		if (!rec) {
			bad++;
			continue;
		}
		rc = fn(rec, arg);
		if (rc < 0)
			errmsg_fail(err, errlen, errno ? errno : EIO,
				    "history: stopped at job %u",
				    get_be32(key + 8));
	}
	if (rc == 0) {
		rocksdb_iter_get_error(it, &rerr);
		rc = hist_rocks_err(rerr, err, errlen, "walk");
	}
	rocksdb_iter_destroy(it);
	if (ret_unreadable)
		*ret_unreadable = bad;
	return rc < 0 ? -1 : 0;
}

/* --- the parts family ------------------------------------------------------------ */

char *history_aux_get(struct history *h, const char *key, size_t klen,
		      size_t *ret_vlen, char *err, size_t errlen)
{
	char *rerr = NULL, *val;

	if (!h || !h->cf[CF_PARTS]) {
		errmsg_fail(err, errlen, ENOENT, "history: no parts family");
		return NULL;
	}
	val = rocksdb_get_cf(h->db, h->ro, h->cf[CF_PARTS], key, klen, ret_vlen,
			     &rerr);
	if (hist_rocks_err(rerr, err, errlen, "read") < 0)
		return NULL;
	if (!val)
		errno = ENOENT;
	return val;
}

int history_aux_scan(struct history *h, const char *prefix, size_t plen,
		     int (*fn)(const char *key, size_t klen, const char *val,
			       size_t vlen, void *arg),
		     void *arg, char *err, size_t errlen)
{
	rocksdb_iterator_t *it;
	char *rerr = NULL;
	int rc = 0;

	if (!h || !fn)
		return errmsg_fail(err, errlen, EINVAL, "history: not open");
	if (!h->cf[CF_PARTS])
		return 0; /* an old history, read-only: no parts */
	it = rocksdb_create_iterator_cf(h->db, h->ro, h->cf[CF_PARTS]);
	for (rocksdb_iter_seek(it, prefix, plen); rocksdb_iter_valid(it);
	     rocksdb_iter_next(it)) {
		size_t klen, vlen;
		const char *key = rocksdb_iter_key(it, &klen);
		const char *val;

		if (klen < plen || memcmp(key, prefix, plen))
			break;
		val = rocksdb_iter_value(it, &vlen);
		if ((rc = fn(key, klen, val, vlen, arg)) != 0)
			break;
	}
	rocksdb_iter_get_error(it, &rerr);
	rocksdb_iter_destroy(it);
	if (hist_rocks_err(rerr, err, errlen, "parts scan") < 0)
		return -1;
	return rc < 0 ? -1 : 0;
}
