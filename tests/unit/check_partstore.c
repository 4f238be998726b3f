/* check_partstore.c - a multi-node job's parts on iostagectld
 * (ctld/filing/partstore.c), on a real RocksDB in a temp directory, with the
 * time given (no clock, no network).
 *
 * What must hold: the parts of a job make ONE record whatever their
 * order; a part sent twice counts once; a job missing a part is filed at
 * its deadline with the missing node named, and a late part refiles it
 * (replacing, never adding); the parts and the deadlines survive a
 * restart; a reused job id starts over; bad parts are refused and leave
 * nothing; the retention takes a job's parts with it; an old history
 * without the parts family still opens.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <check.h>
#include <rocksdb/c.h>

#include "common/history/history.h"
#include "ctld/filing/partstore.h"
#include "tests/unit/check_run.h"

#define DEADLINE 30
#define T0 1700000000.0

static char tmp[256], dbdir[300];
static const char *const n3[] = { "n1", "n2", "n3" };

static void setup(void)
{
	snprintf(tmp, sizeof(tmp), "/tmp/check_partstore.XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(tmp));
	snprintf(dbdir, sizeof(dbdir), "%s/history", tmp);
}

static void teardown(void)
{
	char cmd[400];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmp);
	if (system(cmd) != 0)
		fprintf(stderr, "cannot remove %s\n", tmp);
}

static struct history *open_rw(void)
{
	char err[512];
	struct history *h = history_open(dbdir, HISTORY_READ_WRITE, err,
					 sizeof(err));

	ck_assert_msg(h != NULL, "%s", err);
	return h;
}

/* NODE's finished part of JOB; it read K MiB in its run. */
static cJSON *part(unsigned job, const char *node, double start, double k)
{
	char buf[2048];
	cJSON *r;

	snprintf(
	    buf, sizeof(buf),
	    "{\"schema\":1,\"job\":%u,\"user\":\"alice\",\"uid\":1001,"
	    "\"job_name\":\"train\",\"node\":\"%s\",\"state\":\"completed\","
	    "\"start\":%.3f,\"end\":%.3f,\"datasets\":[],\"outputs\":[],"
	    "\"phases\":[{\"name\":\"stage_in\",\"seconds\":1},"
	    "{\"name\":\"run\",\"start\":%.3f,\"end\":%.3f,\"seconds\":50,"
	    "\"read_bytes\":%.0f,\"write_bytes\":0},"
	    "{\"name\":\"stage_out\",\"seconds\":0}]}",
	    job, node, start, start + 60, start + 1, start + 51, k * 1048576);
	r = cJSON_Parse(buf);
	ck_assert_ptr_nonnull(r);
	return r;
}

/* The `file` request of NODE for JOB on NODES. */
static cJSON *entry(unsigned job, const char *node, const char *const *nodes,
		    size_t n, double start, double k)
{
	cJSON *e = cJSON_CreateObject(), *arr, *p = part(job, node, start, k);

	cJSON_AddStringToObject(e, "op", "file");
	cJSON_AddNumberToObject(e, "job", job);
	cJSON_AddStringToObject(e, "node", node);
	arr = cJSON_AddArrayToObject(e, "nodes");
	for (size_t i = 0; i < n; i++)
		cJSON_AddItemToArray(arr, cJSON_CreateString(nodes[i]));
	cJSON_AddItemToObject(e, "record", p);
	return e;
}

static struct partstore_result file_at(struct history *h, unsigned job,
				       const char *node, double now, double k)
{
	struct partstore_result r;
	char err[512];
	cJSON *e = entry(job, node, n3, 3, T0, k);

	memset(&r, 0xff, sizeof(r));
	ck_assert_msg(partstore_file(h, e, now, &r, err, sizeof(err)) == 0,
		      "%s", err);
	cJSON_Delete(e);
	return r;
}

static double run_read(const cJSON *rec)
{
	const cJSON *p;

	cJSON_ArrayForEach(p, cJSON_GetObjectItem(rec, "phases"))
		if (!strcmp(cJSON_GetObjectItem(p, "name")->valuestring, "run"))
			return cJSON_GetObjectItem(p, "read_bytes")
			    ->valuedouble;
	return -1;
}

static cJSON *filed(struct history *h, unsigned job)
{
	char err[512];
	cJSON *r = history_get(h, job, err, sizeof(err));

	ck_assert_msg(r != NULL, "%s", err);
	return r;
}

static bool is_filed(struct history *h, unsigned job)
{
	cJSON *r = history_get(h, job, NULL, 0);
	bool yes = r != NULL;

	cJSON_Delete(r);
	return yes;
}

static void assert_missing(const cJSON *rec, const char *want)
{
	const cJSON *m = cJSON_GetObjectItem(rec, "missing_nodes"), *e;
	char got[256] = "";

	cJSON_ArrayForEach(e, m) {
		if (got[0])
			strcat(got, ",");
		strcat(got, e->valuestring);
	}
	ck_assert_str_eq(got, want);
}

static int64_t count(struct history *h)
{
	char err[512];
	int64_t n = history_count(h, err, sizeof(err));

	ck_assert_msg(n >= 0, "%s", err);
	return n;
}

/* Every order of three parts: one record, three nodes, the sums. */
static const int orders[6][3] = { { 0, 1, 2 }, { 0, 2, 1 }, { 1, 0, 2 },
				  { 1, 2, 0 }, { 2, 0, 1 }, { 2, 1, 0 } };

START_TEST(test_three_parts_any_order)
{
	struct history *h = open_rw();
	struct partstore_result r;
	cJSON *rec;

	for (int i = 0; i < 3; i++) {
		int k = orders[_i][i];

		r = file_at(h, 42, n3[k], T0 + 100 + i, k + 1);
		ck_assert(!r.duplicate);
		ck_assert(!r.late);
		ck_assert_uint_eq(r.have, (unsigned)i + 1);
		ck_assert_uint_eq(r.want, 3);
		ck_assert(r.filed == (i == 2));
		ck_assert(is_filed(h, 42) == (i == 2));
	}
	rec = filed(h, 42);
	ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItem(rec, "nodes")),
			 3);
	ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItem(rec, "parts")),
			 3);
	assert_missing(rec, "");
	ck_assert_str_eq(cJSON_GetObjectItem(rec, "node")->valuestring, "n1");
	ck_assert(run_read(rec) == 6.0 * 1048576);
	ck_assert_int_eq(count(h), 1);
	/* Nothing waits any more. */
	ck_assert(partstore_next_due(h, DEADLINE, NULL, NULL, 0) == 0);
	cJSON_Delete(rec);
	history_close(h);
}
END_TEST

START_TEST(test_duplicate_counts_once)
{
	struct history *h = open_rw();
	struct partstore_result r;
	cJSON *rec;

	file_at(h, 42, "n1", T0, 1);
	r = file_at(h, 42, "n1", T0 + 1, 1); /* a retry */
	ck_assert(r.duplicate);
	ck_assert(!r.filed);
	ck_assert_uint_eq(r.have, 1);
	file_at(h, 42, "n2", T0 + 2, 2);
	r = file_at(h, 42, "n3", T0 + 3, 3);
	ck_assert(r.filed);
	/* A retry after the job was filed: nothing changes. */
	r = file_at(h, 42, "n2", T0 + 4, 2);
	ck_assert(r.duplicate);
	ck_assert(!r.filed);
	ck_assert_uint_eq(r.have, 3);
	rec = filed(h, 42);
	ck_assert(run_read(rec) == 6.0 * 1048576);
	ck_assert_int_eq(count(h), 1);
	cJSON_Delete(rec);
	history_close(h);
}
END_TEST

/* Parts are stored packed; a part an older service stored as JSON text
 * still counts: as the node's own earlier filing (a retry is a
 * duplicate) and in the merge. */
START_TEST(test_part_stored_as_json_text_still_read)
{
	struct history *h = open_rw();
	struct partstore_result r;
	char key[HISTORY_PARTS_PREFIX_LEN + 8], err[512], *val, *text;
	size_t klen, vlen = 0;
	cJSON *p1 = part(42, "n1", T0, 1), *rec;
	struct history_aux put;

	file_at(h, 42, "n1", T0, 1);
	history_parts_prefix(42, key);
	key[HISTORY_PARTS_PREFIX_LEN] = 0x01; /* a part, then its node */
	memcpy(key + HISTORY_PARTS_PREFIX_LEN + 1, "n1", 2);
	klen = HISTORY_PARTS_PREFIX_LEN + 3;
	val = history_aux_get(h, key, klen, &vlen, err, sizeof(err));
	ck_assert_msg(val != NULL, "%s", err);
	ck_assert(vlen > 0 && val[0] != '{'); /* packed */
	free(val);
	/* the value as the service stored it before */
	text = cJSON_PrintUnformatted(p1);
	put = (struct history_aux){ HISTORY_AUX_PUT, key, klen, text,
				    strlen(text) };
	ck_assert_int_eq(history_put_aux(h, NULL, 0, &put, 1, 0, err,
					 sizeof(err)),
			 0);
	r = file_at(h, 42, "n1", T0 + 1, 1);
	ck_assert(r.duplicate);
	file_at(h, 42, "n2", T0 + 2, 2);
	r = file_at(h, 42, "n3", T0 + 3, 3);
	ck_assert(r.filed);
	rec = filed(h, 42);
	ck_assert(run_read(rec) == 6.0 * 1048576);
	ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItem(rec, "parts")),
			 3);
	cJSON_Delete(rec);
	cJSON_Delete(p1);
	free(text);
	history_close(h);
}
END_TEST

struct seen {
	unsigned n;
	unsigned job;
	char missing[64];
};

static void on_filed(uint32_t job, const cJSON *rec, void *arg)
{
	struct seen *s = arg;
	const cJSON *e;

	s->n++;
	s->job = job;
	s->missing[0] = '\0';
	cJSON_ArrayForEach(e, cJSON_GetObjectItem(rec, "missing_nodes"))
		strcat(s->missing, e->valuestring);
}

START_TEST(test_deadline_files_what_arrived_late_part_refiles)
{
	struct history *h = open_rw();
	struct partstore_result r;
	struct seen s = { 0, 0, "" };
	unsigned nfiled = 99;
	size_t waiting = 0;
	char err[512];
	cJSON *rec;

	file_at(h, 42, "n2", T0, 2);
	file_at(h, 42, "n1", T0 + 5, 1); /* the deadline counts from n2 */
	ck_assert(partstore_next_due(h, DEADLINE, &waiting, err, sizeof(err)) ==
		  T0 + DEADLINE);
	ck_assert_uint_eq(waiting, 1);
	ck_assert_int_eq(partstore_expire(h, DEADLINE, T0 + DEADLINE - 1,
					  on_filed, &s, &nfiled, err,
					  sizeof(err)),
			 0);
	ck_assert_uint_eq(nfiled, 0);
	ck_assert(!is_filed(h, 42));
	ck_assert_int_eq(partstore_expire(h, DEADLINE, T0 + DEADLINE, on_filed,
					  &s, &nfiled, err, sizeof(err)),
			 0);
	ck_assert_uint_eq(nfiled, 1);
	ck_assert_uint_eq(s.n, 1);
	ck_assert_uint_eq(s.job, 42);
	ck_assert_str_eq(s.missing, "n3");
	rec = filed(h, 42);
	assert_missing(rec, "n3");
	ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItem(rec, "nodes")),
			 3);
	ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItem(rec, "parts")),
			 2);
	ck_assert(run_read(rec) == 3.0 * 1048576);
	cJSON_Delete(rec);
	ck_assert(partstore_next_due(h, DEADLINE, &waiting, err, sizeof(err)) ==
		  0);
	ck_assert_uint_eq(waiting, 0);
	/* Expiring again files nothing twice. */
	ck_assert_int_eq(partstore_expire(h, DEADLINE, T0 + 1000, on_filed, &s,
					  &nfiled, err, sizeof(err)),
			 0);
	ck_assert_uint_eq(nfiled, 0);
	/* n3 reports late: the job is filed again with it, replacing. */
	r = file_at(h, 42, "n3", T0 + 100, 3);
	ck_assert(r.filed);
	ck_assert(r.late);
	ck_assert_uint_eq(r.have, 3);
	rec = filed(h, 42);
	assert_missing(rec, "");
	ck_assert(run_read(rec) == 6.0 * 1048576);
	ck_assert_int_eq(count(h), 1);
	cJSON_Delete(rec);
	r = file_at(h, 42, "n3", T0 + 101, 3);
	ck_assert(r.duplicate);
	history_close(h);
}
END_TEST

START_TEST(test_parts_and_deadline_survive_restart)
{
	struct history *h = open_rw();
	unsigned nfiled = 0;
	char err[512];
	cJSON *rec;

	file_at(h, 42, "n1", T0, 1);
	file_at(h, 43, "n1", T0 + 10, 1);
	file_at(h, 43, "n2", T0 + 11, 2);
	history_close(h); /* a restart */
	h = open_rw();
	ck_assert(partstore_next_due(h, DEADLINE, NULL, NULL, 0) ==
		  T0 + DEADLINE);
	/* A PartsDeadline changed across the restart applies. */
	ck_assert(partstore_next_due(h, 60, NULL, NULL, 0) == T0 + 60);
	/* Job 43's parts were kept: its last one completes it. */
	ck_assert(file_at(h, 43, "n3", T0 + 12, 3).filed);
	rec = filed(h, 43);
	assert_missing(rec, "");
	cJSON_Delete(rec);
	ck_assert_int_eq(partstore_expire(h, 60, T0 + 60, NULL, NULL, &nfiled,
					  err, sizeof(err)),
			 0);
	ck_assert_uint_eq(nfiled, 1);
	rec = filed(h, 42);
	assert_missing(rec, "n2,n3");
	cJSON_Delete(rec);
	ck_assert_int_eq(count(h), 2);
	history_close(h);
}
END_TEST

START_TEST(test_reused_job_id_starts_over)
{
	static const char *const n45[] = { "n4", "n5" };
	struct history *h = open_rw();
	struct partstore_result r;
	char err[512];
	cJSON *e, *rec, *parts;

	file_at(h, 42, "n1", T0, 1);
	file_at(h, 42, "n2", T0, 2);
	file_at(h, 42, "n3", T0, 3);
	/* Slurm's ids wrapped: job 42 again, on other nodes. */
	e = entry(42, "n4", n45, 2, T0 + 86400, 4);
	ck_assert_int_eq(partstore_file(h, e, T0 + 86500, &r, err, sizeof(err)),
			 0);
	cJSON_Delete(e);
	ck_assert(!r.filed);
	ck_assert(!r.duplicate);
	ck_assert_uint_eq(r.have, 1);
	ck_assert_uint_eq(r.want, 2);
	parts = partstore_parts(h, 42, err, sizeof(err));
	ck_assert_int_eq(cJSON_GetArraySize(parts), 1);
	cJSON_Delete(parts);
	e = entry(42, "n5", n45, 2, T0 + 86400, 5);
	ck_assert_int_eq(partstore_file(h, e, T0 + 86501, &r, err, sizeof(err)),
			 0);
	cJSON_Delete(e);
	ck_assert(r.filed);
	rec = filed(h, 42);
	ck_assert_str_eq(cJSON_GetArrayItem(cJSON_GetObjectItem(rec, "nodes"),
					    0)
			     ->valuestring,
			 "n4");
	ck_assert(run_read(rec) == 9.0 * 1048576);
	ck_assert_int_eq(count(h), 1);
	cJSON_Delete(rec);
	/* The same node with another start: also a new job. */
	e = entry(42, "n4", n45, 2, T0 + 2 * 86400, 1);
	ck_assert_int_eq(partstore_file(h, e, T0 + 2 * 86400, &r, err,
					sizeof(err)),
			 0);
	cJSON_Delete(e);
	ck_assert(!r.filed);
	ck_assert_uint_eq(r.have, 1);
	ck_assert(partstore_next_due(h, DEADLINE, NULL, NULL, 0) ==
		  T0 + 2 * 86400 + DEADLINE);
	history_close(h);
}
END_TEST

static const struct {
	const char *what;
	const char *json; /* a `file` request */
	const char *want;
} bad[] = {
	{ "one node",
	  "{\"job\":7,\"node\":\"n1\",\"nodes\":[\"n1\"],"
	  "\"record\":{\"job\":7,\"node\":\"n1\",\"user\":\"a\","
	  "\"uid\":1,\"end\":5}}",
	  "2 nodes or more" },
	{ "twice one node",
	  "{\"job\":7,\"node\":\"n1\",\"nodes\":[\"n1\","
	  "\"n1\"],\"record\":{\"job\":7,\"node\":\"n1\","
	  "\"user\":\"a\",\"uid\":1,\"end\":5}}",
	  "2 nodes or more" },
	{ "not its node",
	  "{\"job\":7,\"node\":\"n1\",\"nodes\":[\"n1\","
	  "\"n2\"],\"record\":{\"job\":7,\"node\":\"n2\","
	  "\"user\":\"a\",\"uid\":1,\"end\":5}}",
	  "key 'record'" },
	{ "not in nodes",
	  "{\"job\":7,\"node\":\"n9\",\"nodes\":[\"n1\","
	  "\"n2\"],\"record\":{\"job\":7,\"node\":\"n9\","
	  "\"user\":\"a\",\"uid\":1,\"end\":5}}",
	  "key 'nodes'" },
	{ "no end",
	  "{\"job\":7,\"node\":\"n1\",\"nodes\":[\"n1\",\"n2\"],"
	  "\"record\":{\"job\":7,\"node\":\"n1\",\"user\":\"a\","
	  "\"uid\":1}}",
	  "'end'" },
	{ "no user",
	  "{\"job\":7,\"node\":\"n1\",\"nodes\":[\"n1\",\"n2\"],"
	  "\"record\":{\"job\":7,\"node\":\"n1\",\"uid\":1,"
	  "\"end\":5}}",
	  "key 'user'" },
	{ "job 0",
	  "{\"job\":0,\"node\":\"n1\",\"nodes\":[\"n1\",\"n2\"],"
	  "\"record\":{\"job\":0,\"node\":\"n1\"}}",
	  "key 'job'" },
	{ "bad node name",
	  "{\"job\":7,\"node\":\"../n1\",\"nodes\":[\"n1\","
	  "\"n2\"],\"record\":{}}",
	  "key 'node'" },
};

START_TEST(test_bad_parts_refused_nothing_kept)
{
	struct history *h = open_rw();
	struct partstore_result r = { 0 };
	char err[512] = "";
	cJSON *e = cJSON_Parse(bad[_i].json), *parts;

	ck_assert_ptr_nonnull(e);
	ck_assert_int_eq(partstore_file(h, e, T0, &r, err, sizeof(err)), -1);
	ck_assert_int_eq(errno, EINVAL);
	ck_assert_msg(strstr(err, bad[_i].want), "%s: got '%s'", bad[_i].what,
		      err);
	ck_assert_ptr_null(strchr(err, '\n'));
	parts = partstore_parts(h, 7, err, sizeof(err));
	ck_assert_int_eq(cJSON_GetArraySize(parts), 0);
	ck_assert(partstore_next_due(h, DEADLINE, NULL, NULL, 0) == 0);
	ck_assert_int_eq(count(h), 0);
	cJSON_Delete(parts);
	cJSON_Delete(e);
	history_close(h);
}
END_TEST

START_TEST(test_many_waiting_all_filed)
{
	struct history *h = open_rw();
	unsigned nfiled = 0;
	size_t waiting = 0;
	char err[512];

	for (unsigned j = 1; j <= 600; j++)
		file_at(h, j, "n2", T0 + j % 7, 1);
	ck_assert(partstore_next_due(h, DEADLINE, &waiting, NULL, 0) ==
		  T0 + DEADLINE);
	ck_assert_uint_eq(waiting, 600);
	/* Only those due: first part at T0..T0+3. */
	ck_assert_int_eq(partstore_expire(h, DEADLINE, T0 + DEADLINE + 3, NULL,
					  NULL, &nfiled, err, sizeof(err)),
			 0);
	{
		unsigned due = 0;

		for (unsigned j = 1; j <= 600; j++)
			due += j % 7 <= 3;
		ck_assert_uint_eq(nfiled, due);
	}
	ck_assert_int_eq(partstore_expire(h, DEADLINE, T0 + 1000, NULL, NULL,
					  &nfiled, err, sizeof(err)),
			 0);
	ck_assert_int_eq(count(h), 600);
	ck_assert(partstore_next_due(h, DEADLINE, &waiting, NULL, 0) == 0);
	ck_assert_uint_eq(waiting, 0);
	history_close(h);
}
END_TEST

START_TEST(test_retention_takes_the_parts)
{
	struct history *h = open_rw();
	unsigned deleted = 0;
	char err[512];
	cJSON *parts;

	file_at(h, 42, "n1", T0, 1);
	file_at(h, 42, "n2", T0, 2);
	file_at(h, 42, "n3", T0, 3);
	parts = partstore_parts(h, 42, err, sizeof(err));
	ck_assert_int_eq(cJSON_GetArraySize(parts), 3);
	cJSON_Delete(parts);
	ck_assert_int_eq(history_expire(h, T0 + 1000, 1000, &deleted, err,
					sizeof(err)),
			 0);
	ck_assert_uint_eq(deleted, 1);
	parts = partstore_parts(h, 42, err, sizeof(err));
	ck_assert_int_eq(cJSON_GetArraySize(parts), 0);
	cJSON_Delete(parts);
	history_close(h);
}
END_TEST

/* A history from before the parts family (a node's, for --import). */
START_TEST(test_old_history_without_parts_family)
{
	static const char *const names[] = { "default", "jobs",     "phases",
					     "apps",    "datasets", "times" };
	const rocksdb_options_t *cfo[6];
	rocksdb_column_family_handle_t *cf[6];
	rocksdb_options_t *o = rocksdb_options_create();
	struct history *h;
	char *rerr = NULL, err[512];
	rocksdb_t *db;
	cJSON *rec, *parts;

	rocksdb_options_set_create_if_missing(o, 1);
	rocksdb_options_set_create_missing_column_families(o, 1);
	for (int i = 0; i < 6; i++)
		cfo[i] = o;
	db = rocksdb_open_column_families(o, dbdir, 6, names, cfo, cf, &rerr);
	ck_assert_msg(db != NULL, "%s", rerr);
	for (int i = 0; i < 6; i++)
		rocksdb_column_family_handle_destroy(cf[i]);
	rocksdb_close(db);
	rocksdb_options_destroy(o);
	/* Read-only: opens without it, and has no parts. */
	h = history_open(dbdir, HISTORY_READ_ONLY, err, sizeof(err));
	ck_assert_msg(h != NULL, "%s", err);
	parts = partstore_parts(h, 42, err, sizeof(err));
	ck_assert_int_eq(cJSON_GetArraySize(parts), 0);
	cJSON_Delete(parts);
	history_close(h);
	/* Read-write: it gets the family and takes parts. */
	h = open_rw();
	ck_assert(file_at(h, 42, "n1", T0, 1).have == 1);
	history_close(h);
	h = history_open(dbdir, HISTORY_READ_ONLY, err, sizeof(err));
	ck_assert_msg(h != NULL, "%s", err);
	parts = partstore_parts(h, 42, err, sizeof(err));
	ck_assert_int_eq(cJSON_GetArraySize(parts), 1);
	cJSON_Delete(parts);
	rec = history_get(h, 42, NULL, 0);
	ck_assert_ptr_null(rec);
	history_close(h);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("partstore");
	TCase *tc = tcase_create("core");

	tcase_set_timeout(tc, 60);
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_loop_test(tc, test_three_parts_any_order, 0, 6);
	tcase_add_test(tc, test_duplicate_counts_once);
	tcase_add_test(tc, test_part_stored_as_json_text_still_read);
	tcase_add_test(tc, test_deadline_files_what_arrived_late_part_refiles);
	tcase_add_test(tc, test_parts_and_deadline_survive_restart);
	tcase_add_test(tc, test_reused_job_id_starts_over);
	tcase_add_loop_test(tc, test_bad_parts_refused_nothing_kept, 0,
			    sizeof(bad) / sizeof(bad[0]));
	tcase_add_test(tc, test_many_waiting_all_filed);
	tcase_add_test(tc, test_retention_takes_the_parts);
	tcase_add_test(tc, test_old_history_without_parts_family);
	suite_add_tcase(s, tc);
	return check_run(s);
}
