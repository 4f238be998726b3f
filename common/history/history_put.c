/* history_put.c - filing records (one WriteBatch each call, concurrent
 * filers kept apart per job id) and expiring old ones.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include <rocksdb/c.h>

#include "common/base/errmsg.h"
#include "common/history/history_int.h"
#include "common/history/jobfacts.h"

/* --- filing -------------------------------------------------------------------- */

/* The apps, datasets and times keys of a job (the apps value is VAL, its
 * packed facts; a datasets value is the apps key), from its record or its
 * stored summary (the record without its phases: the same user,
 * job_name, end and dataset sources), so a replaced or expired job loses
 * exactly the keys it had. */
static int index_keys(rocksdb_writebatch_t *b, struct history *h, uint32_t job,
		      const cJSON *rec, const char *val, size_t vlen, bool del)
{
	const char *user = jobfacts_str(rec, "user", "");
	const char *name = jobfacts_str(rec, "job_name", "");
	uint64_t t = end_us(jobfacts_num(rec, "end", 0));
	const char *srcs[JOBFACTS_LIST_MAX];
	size_t nsrcs = jobfacts_sources(rec, srcs, JOBFACTS_LIST_MAX);
	struct key k = { 0 }, app = { 0 };

	if (key_str(&app, user) < 0 || key_str(&app, name) < 0 ||
	    key_time_job(&app, ~t, job) < 0)
		return -1;
	if (del)
		rocksdb_writebatch_delete_cf(b, h->cf[CF_APPS], app.buf,
					     app.len);
	else
		rocksdb_writebatch_put_cf(b, h->cf[CF_APPS], app.buf, app.len,
					  val, vlen);
	for (size_t i = 0; i < nsrcs; i++) {
		k.len = 0;
		if (key_str(&k, srcs[i]) < 0 || key_time_job(&k, ~t, job) < 0)
			continue; /* a path too long to index: not a dataset
				     the rules can name */
		/* The value is the job's apps key: its facts are stored
		 * once, and a dataset query looks them up from there. */
		if (del)
			rocksdb_writebatch_delete_cf(b, h->cf[CF_DATASETS],
						     k.buf, k.len);
		else
			rocksdb_writebatch_put_cf(b, h->cf[CF_DATASETS], k.buf,
						  k.len, app.buf, app.len);
	}
	k.len = 0;
	key_time_job(&k, t, job);
	if (del)
		rocksdb_writebatch_delete_cf(b, h->cf[CF_TIMES], k.buf, k.len);
	else
		rocksdb_writebatch_put_cf(b, h->cf[CF_TIMES], k.buf, k.len, "",
					  0);
	return 0;
}

/* Queue the deletion of every key of JOB (as stored in SUMMARY). */
static void delete_job(rocksdb_writebatch_t *b, struct history *h, uint32_t job,
		       const cJSON *summary)
{
	struct key k;

	key_job(&k, job);
	rocksdb_writebatch_delete_cf(b, h->cf[CF_JOBS], k.buf, k.len);
	rocksdb_writebatch_delete_cf(b, h->cf[CF_PHASES], k.buf, k.len);
	index_keys(b, h, job, summary, NULL, 0, true);
}

/* Queue the keys of RECORD (checked by jobfacts_check); J is scratch
 * space for the packed values. The caller has JOB registered in flight. */
static int queue_record(rocksdb_writebatch_t *b, struct history *h,
			const cJSON *record, uint32_t job, struct jsonbuf *j,
			char *err, size_t errlen)
{
	const cJSON *phases;
	cJSON *old;
	struct key k;

	phases = cJSON_GetObjectItemCaseSensitive(record, "phases");
	if (phases && !cJSON_IsArray(phases))
		return errmsg_fail(err, errlen, EINVAL,
				   "record %u: key 'phases': must be an array",
				   job);
	if (cJSON_GetArraySize(phases) > HISTORY_PHASES_MAX)
		return errmsg_fail(err, errlen, EINVAL,
				   "record %u: more than %d phases", job,
				   HISTORY_PHASES_MAX);
	old = hist_get_summary(h, job, NULL, NULL, err, errlen);
	if (!old && errno != ENOENT)
		return -1;
	if (old)
		delete_job(b, h, job, old);
	cJSON_Delete(old);
	/* One jobs value: the record without its phases, then the phases,
	 * packed (see hist_pack_jobs_value): a list or a replacement unpacks
	 * only the first part. */
	key_job(&k, job);
	if (hist_pack_jobs_value(j, record, phases) < 0)
		goto nomem;
	rocksdb_writebatch_put_cf(b, h->cf[CF_JOBS], k.buf, k.len, j->data,
				  j->len);
	if (jobfacts_pack_record(j, record, err, errlen) < 0)
		return -1;
	if (index_keys(b, h, job, record, j->data, j->len, false) < 0)
		return errmsg_fail(err, errlen, EINVAL,
				   "record %u: user or job name too long", job);
	return 0;
nomem:
	return errmsg_fail(err, errlen, ENOMEM, "record %u: out of memory",
			   job);
}

/* --- concurrent filers --------------------------------------------------------- */

static bool inflight_has(const struct history *h, uint32_t job)
{
	if (!h->inflight_count[job % INFLIGHT_FILTER])
		return false;
	for (const struct inflight *t = h->inflight; t; t = t->next)
		for (size_t i = 0; i < t->n; i++)
			if (t->jobs[i] == job)
				return true;
	return false;
}

/* Register T, the N ids in JOBS (h->mu held), once none of them is in
 * flight: a second filing of a job waits for the first. JOBS stays the
 * caller's and must outlive the registration. */
static void inflight_enter(struct history *h, struct inflight *t,
			   const uint32_t *jobs, size_t n)
{
	for (size_t i = 0; i < n;) {
		if (inflight_has(h, jobs[i])) {
			pthread_cond_wait(&h->idle, &h->mu);
			i = 0;
		} else {
			i++;
		}
	}
	t->jobs = jobs;
	t->n = n;
	t->next = h->inflight;
	h->inflight = t;
	for (size_t i = 0; i < n; i++)
		h->inflight_count[jobs[i] % INFLIGHT_FILTER]++;
}

/* Release T (h->mu held) and wake the waiters. */
static void inflight_leave(struct history *h, struct inflight *t)
{
	struct inflight **pp = &h->inflight;

	while (*pp && *pp != t)
		pp = &(*pp)->next;
	if (*pp) {
		*pp = t->next;
		for (size_t i = 0; i < t->n; i++)
			h->inflight_count[t->jobs[i] % INFLIGHT_FILTER]--;
	}
	pthread_cond_broadcast(&h->idle);
}

static struct put_slot *slot_get(struct history *h)
{
	struct put_slot *s;

	pthread_mutex_lock(&h->mu);
	s = h->free_slots;
	if (s)
		h->free_slots = s->next;
	pthread_mutex_unlock(&h->mu);
	if (s)
		return s;
	s = calloc(1, sizeof(*s));
	if (s && !(s->batch = rocksdb_writebatch_create())) {
		free(s);
		s = NULL;
	}
	return s;
}

static void slot_put(struct history *h, struct put_slot *s)
{
	rocksdb_writebatch_clear(s->batch);
	pthread_mutex_lock(&h->mu);
	s->next = h->free_slots;
	h->free_slots = s;
	pthread_mutex_unlock(&h->mu);
}

/* Filing runs in two stages that callers on other threads overlap: the
 * records reduced to facts (no lock), then, with the job ids registered
 * in flight, the old keys read, the JSON printed and the batch written.
 * RocksDB groups concurrent writes and inserts them into the memtables in
 * parallel, so two filers on two cores file nearly twice as fast as one
 * (bench/history.c -t). Nothing is shared but the in-flight set. */
static void queue_aux(rocksdb_writebatch_t *b, struct history *h,
		      const struct history_aux *a)
{
	rocksdb_column_family_handle_t *cf = h->cf[CF_PARTS];

	if (a->op == HISTORY_AUX_PUT)
		rocksdb_writebatch_put_cf(b, cf, a->key, a->klen, a->val,
					  a->vlen);
	else if (a->op == HISTORY_AUX_DELETE)
		rocksdb_writebatch_delete_cf(b, cf, a->key, a->klen);
	else
		rocksdb_writebatch_delete_range_cf(b, cf, a->key, a->klen,
						   a->val, a->vlen);
}

int history_put_aux(struct history *h, const cJSON *const *records, size_t n,
		    const struct history_aux *aux, size_t naux, unsigned flags,
		    char *err, size_t errlen)
{
	struct put_slot *slot = NULL;
	struct inflight ticket;
	uint32_t *jobs = NULL;
	bool entered = false;
	char *rerr = NULL;
	size_t i;
	int rc = -1;

	if (!h)
		return errmsg_fail(err, errlen, EINVAL, "history: not open");
	if (h->read_only)
		return errmsg_fail(
		    err, errlen, EROFS,
		    "history is read-only (damaged database opened "
		    "for reading only)");
	if (n == 0 && naux == 0)
		return 0;
	if (naux && !h->cf[CF_PARTS])
		return errmsg_fail(err, errlen, EROFS,
				   "history: no parts family");
	jobs = calloc(n + 1, sizeof(*jobs));
	slot = slot_get(h);
	if (!jobs || !slot) {
		errmsg_fail(err, errlen, ENOMEM, "history: out of memory");
		goto out;
	}
	for (i = 0; i < n; i++) {
		if (jobfacts_check(records[i], err, errlen) < 0)
			goto out;
		jobs[i] = (uint32_t)jobfacts_num(records[i], "job", 0);
	}
	pthread_mutex_lock(&h->mu);
	inflight_enter(h, &ticket, jobs, n);
	pthread_mutex_unlock(&h->mu);
	entered = true;
	for (i = 0; i < n; i++)
		if (queue_record(slot->batch, h, records[i], jobs[i],
				 &slot->json, err, errlen) < 0)
			goto out;
	/* After the records: the caller's parts keys win over nothing of
	 * theirs, and are written (or not) with them. */
	for (i = 0; i < naux; i++)
		queue_aux(slot->batch, h, &aux[i]);
	rocksdb_write(h->db, (flags & HISTORY_PUT_SYNC) ? h->wo_sync : h->wo,
		      slot->batch, &rerr);
	rc = hist_rocks_err(rerr, err, errlen, "write");
out:
	if (entered) {
		pthread_mutex_lock(&h->mu);
		inflight_leave(h, &ticket);
		pthread_mutex_unlock(&h->mu);
	}
	if (slot)
		slot_put(h, slot);
	free(jobs);
	return rc;
}

int history_put_many(struct history *h, const cJSON *const *records, size_t n,
		     unsigned flags, char *err, size_t errlen)
{
	return history_put_aux(h, records, n, NULL, 0, flags, err, errlen);
}

int history_put(struct history *h, const cJSON *record, unsigned flags,
		char *err, size_t errlen)
{
	return history_put_many(h, &record, 1, flags, err, errlen);
}

/* Queue the deletion of every parts key of JOB: [prefix(job),
 * prefix(job + 1)). */
static void delete_parts(rocksdb_writebatch_t *b, struct history *h,
			 uint32_t job)
{
	char from[HISTORY_PARTS_PREFIX_LEN], to[HISTORY_PARTS_PREFIX_LEN];
	size_t tolen = HISTORY_PARTS_PREFIX_LEN;

	history_parts_prefix(job, from);
	if (job < UINT32_MAX) {
		history_parts_prefix(job + 1, to);
	} else {
		to[0] = HISTORY_PARTS_TAG + 1;
		tolen = 1;
	}
	rocksdb_writebatch_delete_range_cf(b, h->cf[CF_PARTS], from,
					   HISTORY_PARTS_PREFIX_LEN, to, tolen);
}

int history_expire(struct history *h, double cutoff, unsigned max,
		   unsigned *ret_deleted, char *err, size_t errlen)
{
	uint64_t cut = end_us(cutoff);
	uint32_t held[HISTORY_EXPIRE_BATCH];
	unsigned deleted = 0;
	int rc = 0;

	if (!h)
		return errmsg_fail(err, errlen, EINVAL, "history: not open");
	if (h->read_only)
		return errmsg_fail(err, errlen, EROFS, "history is read-only");
	while (rc == 0 && deleted < max) {
		rocksdb_iterator_t *it;
		rocksdb_writebatch_t *b = rocksdb_writebatch_create();
		char *rerr = NULL;
		unsigned inbatch = 0;
		struct inflight ticket;
		bool busy;

		/* held[] fills as the batch goes: registered empty first */
		pthread_mutex_lock(&h->mu);
		inflight_enter(h, &ticket, held, 0);
		pthread_mutex_unlock(&h->mu);
		it = rocksdb_create_iterator_cf(h->db, h->ro, h->cf[CF_TIMES]);
		for (rocksdb_iter_seek_to_first(it);
		     rocksdb_iter_valid(it) && inbatch < HISTORY_EXPIRE_BATCH &&
		     deleted + inbatch < max;
		     rocksdb_iter_next(it)) {
			size_t klen;
			const char *key = rocksdb_iter_key(it, &klen);
			uint32_t job;
			cJSON *s;

			if (klen != 12 || get_be64(key) >= cut)
				break;
			job = get_be32(key + 8);
			/* A job being filed right now is left for the next
			 * pass: its old keys are that filer's to replace. */
			pthread_mutex_lock(&h->mu);
			busy = inflight_has(h, job);
			if (!busy) {
				held[ticket.n++] = job;
				h->inflight_count[job % INFLIGHT_FILTER]++;
			}
			pthread_mutex_unlock(&h->mu);
			if (busy)
				continue;
			s = hist_get_summary(h, job, NULL, NULL, NULL, 0);
			if (s && end_us(jobfacts_num(s, "end", 0)) ==
				     get_be64(key)) {
				delete_job(b, h, job, s);
				/* A multi-node job's parts go with it. */
				if (h->cf[CF_PARTS] &&
				    cJSON_HasObjectItem(s, "nodes"))
					delete_parts(b, h, job);
			} else {
				/* An index key without its job: drop it. */
				rocksdb_writebatch_delete_cf(b, h->cf[CF_TIMES],
							     key, klen);
			}
			cJSON_Delete(s);
			inbatch++;
		}
		rocksdb_iter_get_error(it, &rerr);
		rocksdb_iter_destroy(it);
		rc = hist_rocks_err(rerr, err, errlen, "expire scan");
		if (rc == 0 && inbatch > 0) {
			rocksdb_write(h->db, h->wo, b, &rerr);
			rc = hist_rocks_err(rerr, err, errlen, "expire");
		}
		rocksdb_writebatch_destroy(b);
		pthread_mutex_lock(&h->mu);
		inflight_leave(h, &ticket);
		pthread_mutex_unlock(&h->mu);
		deleted += inbatch;
		if (inbatch < HISTORY_EXPIRE_BATCH)
			break;
	}
	if (ret_deleted)
		*ret_deleted = deleted;
	return rc;
}
