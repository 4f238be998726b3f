/* check_file_batch.c - unit tests for ctld/filing/file_batch: many filings
 * under one credential, each answered as the `file` op would answer it. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <check.h>

#include "common/config/conf.h"
#include "common/history/history.h"
#include "ctld/filing/file_batch.h"
#include "ctld/filing/partstore.h"
#include "tests/unit/check_run.h"

static char tmp[256];
static struct conf conf;
static const struct ctld_caller root = {
	.uid = 0, .gid = 0, .read_all = true, .addr = "test"
};

static void setup(void)
{
	snprintf(tmp, sizeof(tmp), "/tmp/check_file_batch.XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(tmp));
	memset(&conf, 0, sizeof(conf));
	snprintf(conf.state_dir, sizeof(conf.state_dir), "%s", tmp);
	history_init(&conf);
}

static void teardown(void)
{
	char cmd[400];

	history_fini();
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmp);
	if (system(cmd) != 0)
		fprintf(stderr, "cannot remove %s\n", tmp);
}

/* {"job":JOB,"node":NODE,"record":{...}} of a single-node job */
static cJSON *entry(unsigned job, const char *node, double end)
{
	char buf[1024];
	cJSON *e;

	snprintf(buf, sizeof(buf),
		 "{\"job\":%u,\"node\":\"%s\",\"nodes\":[\"%s\"],\"record\":"
		 "{\"schema\":1,\"job\":%u,\"user\":\"u\",\"uid\":1000,"
		 "\"job_name\":\"a\",\"node\":\"%s\",\"start\":%.0f,"
		 "\"end\":%.0f,\"state\":\"completed\",\"datasets\":[],"
		 "\"outputs\":[],\"phases\":[]}}",
		 job, node, node, job, node, end - 60, end);
	e = cJSON_Parse(buf);
	ck_assert_ptr_nonnull(e);
	return e;
}

static cJSON *batch(cJSON *files)
{
	cJSON *req = cJSON_CreateObject();

	cJSON_AddStringToObject(req, "op", "file_batch");
	cJSON_AddItemToObject(req, "files", files);
	return req;
}

static const cJSON *result(const cJSON *reply, int i)
{
	return cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(reply,
								   "results"),
				  i);
}

static bool is_true(const cJSON *o, const char *key)
{
	return cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(o, key));
}

START_TEST(test_files_all_then_duplicates)
{
	cJSON *files = cJSON_CreateArray(), *req, *reply, *rec;
	struct history *h;
	char err[256];

	for (unsigned j = 1; j <= 5; j++)
		cJSON_AddItemToArray(files, entry(j, "n1", 1.7e9 + j));
	req = batch(files);
	reply = ctld_op_file_batch(&root, req);
	ck_assert(is_true(reply, "ok"));
	ck_assert_int_eq(cJSON_GetArraySize(
			     cJSON_GetObjectItemCaseSensitive(reply,
							      "results")),
			 5);
	for (int i = 0; i < 5; i++) {
		ck_assert(is_true(result(reply, i), "filed"));
		ck_assert(!is_true(result(reply, i), "duplicate"));
	}
	cJSON_Delete(reply);
	h = history_db(err, sizeof(err));
	ck_assert_ptr_nonnull(h);
	for (unsigned j = 1; j <= 5; j++) {
		rec = history_get(h, j, err, sizeof(err));
		ck_assert_ptr_nonnull(rec);
		cJSON_Delete(rec);
	}
	/* the same batch again (a retry): every entry a duplicate */
	reply = ctld_op_file_batch(&root, req);
	ck_assert(is_true(reply, "ok"));
	for (int i = 0; i < 5; i++) {
		ck_assert(!is_true(result(reply, i), "filed"));
		ck_assert(is_true(result(reply, i), "duplicate"));
	}
	cJSON_Delete(reply);
	cJSON_Delete(req);
}
END_TEST

/* A bad entry gets its own error; the others are filed. A job twice in
 * one batch is filed (once) without waiting for itself. */
START_TEST(test_bad_entry_and_repeated_job)
{
	cJSON *files = cJSON_CreateArray(), *req, *reply, *bad;
	struct history *h;
	char err[256];

	cJSON_AddItemToArray(files, entry(11, "n1", 1.7e9));
	bad = entry(12, "n1", 1.7e9);
	cJSON_ReplaceItemInObjectCaseSensitive(bad, "job",
					       cJSON_CreateNumber(99));
	cJSON_AddItemToArray(files, bad);
	cJSON_AddItemToArray(files, entry(13, "bad node!", 1.7e9));
	cJSON_AddItemToArray(files, entry(11, "n1", 1.7e9));
	cJSON_AddItemToArray(files, cJSON_CreateString("x"));
	req = batch(files);
	reply = ctld_op_file_batch(&root, req);
	ck_assert(is_true(reply, "ok"));
	ck_assert(is_true(result(reply, 0), "filed"));
	ck_assert_ptr_nonnull(
	    cJSON_GetObjectItemCaseSensitive(result(reply, 1), "error"));
	ck_assert_ptr_nonnull(
	    cJSON_GetObjectItemCaseSensitive(result(reply, 2), "error"));
	ck_assert_ptr_null(
	    cJSON_GetObjectItemCaseSensitive(result(reply, 3), "error"));
	ck_assert_ptr_nonnull(
	    cJSON_GetObjectItemCaseSensitive(result(reply, 4), "error"));
	cJSON_Delete(reply);
	cJSON_Delete(req);
	h = history_db(err, sizeof(err));
	ck_assert_ptr_nonnull(h);
	cJSON_Delete(history_get(h, 11, err, sizeof(err)));
	ck_assert_ptr_null(history_get(h, 12, err, sizeof(err)));
	ck_assert_ptr_null(history_get(h, 13, err, sizeof(err)));
}
END_TEST

/* A 2-node job's two parts in one batch: the file op's merge files it. */
START_TEST(test_multi_node_parts)
{
	cJSON *files = cJSON_CreateArray(), *req, *reply, *e, *rec;
	struct history *h;
	char err[256];
	const char *node[2] = { "n1", "n2" };

	for (int i = 0; i < 2; i++) {
		e = entry(31, node[i], 1.7e9);
		cJSON_ReplaceItemInObjectCaseSensitive(e, "nodes",
						       cJSON_Parse(
							   "[\"n1\",\"n2\"]"));
		cJSON_AddItemToArray(files, e);
	}
	req = batch(files);
	reply = ctld_op_file_batch(&root, req);
	ck_assert(is_true(reply, "ok"));
	for (int i = 0; i < 2; i++)
		ck_assert_ptr_null(
		    cJSON_GetObjectItemCaseSensitive(result(reply, i),
						     "error"));
	cJSON_Delete(reply);
	cJSON_Delete(req);
	h = history_db(err, sizeof(err));
	ck_assert_ptr_nonnull(h);
	rec = history_get(h, 31, err, sizeof(err));
	ck_assert_msg(rec != NULL, "job 31 not filed: %s", err);
	ck_assert_int_eq(cJSON_GetArraySize(
			     cJSON_GetObjectItemCaseSensitive(rec, "nodes")),
			 2);
	cJSON_Delete(rec);
}
END_TEST

static cJSON *part(unsigned job, const char *node, const char *nodes)
{
	cJSON *e = entry(job, node, 1.7e9);

	cJSON_ReplaceItemInObjectCaseSensitive(e, "nodes", cJSON_Parse(nodes));
	return e;
}

static int nodes_of(struct history *h, unsigned job)
{
	char err[256];
	cJSON *rec = history_get(h, job, err, sizeof(err));
	int n;

	ck_assert_msg(rec != NULL, "job %u not filed: %s", job, err);
	n = cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(rec, "nodes"));
	cJSON_Delete(rec);
	return n;
}

/* Records and parts of several jobs in one batch, the parts completing
 * their jobs in a second one; a record the history refuses fails only
 * itself. */
START_TEST(test_parts_and_records_together)
{
	cJSON *files = cJSON_CreateArray(), *req, *reply, *bad;
	struct history *h;
	size_t waiting = 0;
	char err[256];

	cJSON_AddItemToArray(files, entry(41, "n1", 1.7e9));
	cJSON_AddItemToArray(files, part(51, "n1", "[\"n1\",\"n2\"]"));
	cJSON_AddItemToArray(files, part(52, "n2", "[\"n1\",\"n2\"]"));
	cJSON_AddItemToArray(files, entry(42, "n1", 1.7e9));
	req = batch(files);
	reply = ctld_op_file_batch(&root, req);
	ck_assert(is_true(reply, "ok"));
	ck_assert(is_true(result(reply, 0), "filed"));
	ck_assert(is_true(result(reply, 3), "filed"));
	for (int i = 1; i <= 2; i++) {
		ck_assert_ptr_null(
		    cJSON_GetObjectItemCaseSensitive(result(reply, i),
						     "error"));
		ck_assert(!is_true(result(reply, i), "filed"));
		ck_assert(!is_true(result(reply, i), "duplicate"));
	}
	cJSON_Delete(reply);
	cJSON_Delete(req);
	h = history_db(err, sizeof(err));
	ck_assert_ptr_nonnull(h);
	ck_assert_ptr_null(history_get(h, 51, err, sizeof(err)));
	ck_assert(partstore_next_due(h, 300, &waiting, err, sizeof(err)) > 0);
	ck_assert_uint_eq(waiting, 2);

	/* the other halves, a retry of one part, and a refused record */
	files = cJSON_CreateArray();
	cJSON_AddItemToArray(files, part(52, "n1", "[\"n1\",\"n2\"]"));
	cJSON_AddItemToArray(files, part(51, "n1", "[\"n1\",\"n2\"]"));
	cJSON_AddItemToArray(files, part(51, "n2", "[\"n1\",\"n2\"]"));
	bad = entry(43, "n1", 1.7e9);
	cJSON_ReplaceItemInObjectCaseSensitive(
	    cJSON_GetObjectItemCaseSensitive(bad, "record"), "uid",
	    cJSON_CreateNumber(-5));
	cJSON_AddItemToArray(files, bad);
	cJSON_AddItemToArray(files, entry(44, "n1", 1.7e9));
	req = batch(files);
	reply = ctld_op_file_batch(&root, req);
	ck_assert(is_true(reply, "ok"));
	ck_assert(is_true(result(reply, 0), "filed"));
	ck_assert(is_true(result(reply, 1), "duplicate"));
	ck_assert(is_true(result(reply, 2), "filed"));
	ck_assert_ptr_nonnull(
	    cJSON_GetObjectItemCaseSensitive(result(reply, 3), "error"));
	ck_assert(is_true(result(reply, 4), "filed"));
	cJSON_Delete(reply);
	cJSON_Delete(req);
	ck_assert_int_eq(nodes_of(h, 51), 2);
	ck_assert_int_eq(nodes_of(h, 52), 2);
	for (unsigned j = 41; j <= 44; j += 3) {
		cJSON *rec = history_get(h, j, err, sizeof(err));

		ck_assert_msg(rec != NULL, "job %u not filed: %s", j, err);
		cJSON_Delete(rec);
	}
	ck_assert_ptr_null(history_get(h, 43, err, sizeof(err)));
	ck_assert_double_eq(partstore_next_due(h, 300, &waiting, err,
					       sizeof(err)),
			    0);
	ck_assert_uint_eq(waiting, 0);
}
END_TEST

START_TEST(test_refused)
{
	const struct ctld_caller user = { .uid = 1000,
					  .gid = 1000,
					  .addr = "test" };
	cJSON *files = cJSON_CreateArray(), *req, *reply;
	const cJSON *e;

	cJSON_AddItemToArray(files, entry(21, "n1", 1.7e9));
	req = batch(files);
	reply = ctld_op_file_batch(&user, req);
	ck_assert(!is_true(reply, "ok"));
	e = cJSON_GetObjectItemCaseSensitive(reply, "error");
	ck_assert(cJSON_IsString(e));
	ck_assert_ptr_nonnull(strstr(e->valuestring, "only root"));
	cJSON_Delete(reply);
	cJSON_Delete(req);

	/* none, empty, not an array, over the cap */
	req = cJSON_CreateObject();
	reply = ctld_op_file_batch(&root, req);
	ck_assert(!is_true(reply, "ok"));
	cJSON_Delete(reply);
	cJSON_AddItemToObject(req, "files", cJSON_CreateArray());
	reply = ctld_op_file_batch(&root, req);
	ck_assert(!is_true(reply, "ok"));
	cJSON_Delete(reply);
	cJSON_ReplaceItemInObjectCaseSensitive(req, "files",
					       cJSON_CreateString("x"));
	reply = ctld_op_file_batch(&root, req);
	ck_assert(!is_true(reply, "ok"));
	cJSON_Delete(reply);
	files = cJSON_CreateArray();
	for (unsigned j = 1; j <= FILE_BATCH_MAX + 1; j++)
		cJSON_AddItemToArray(files, entry(100 + j, "n1", 1.7e9));
	cJSON_ReplaceItemInObjectCaseSensitive(req, "files", files);
	reply = ctld_op_file_batch(&root, req);
	ck_assert(!is_true(reply, "ok"));
	cJSON_Delete(reply);
	cJSON_Delete(req);
}
END_TEST

static Suite *file_batch_suite(void)
{
	Suite *s = suite_create("file_batch");
	TCase *tc = tcase_create("core");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_files_all_then_duplicates);
	tcase_add_test(tc, test_bad_entry_and_repeated_job);
	tcase_add_test(tc, test_multi_node_parts);
	tcase_add_test(tc, test_parts_and_records_together);
	tcase_add_test(tc, test_refused);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return check_run(file_batch_suite());
}
