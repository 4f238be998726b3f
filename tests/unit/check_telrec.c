/* check_telrec.c - the telemetry record's pure parts: timeline folding and
 * sums, counter vocabulary and merging, strict shim_report checks. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <check.h>

#include "common/telrec.h"

static struct telrec_timeline *tl;

static void setup(void)
{
	tl = malloc(sizeof(*tl));
	ck_assert_ptr_nonnull(tl);
	telrec_timeline_init(tl, 1.0);
}

static void teardown(void)
{
	free(tl);
}

static struct telrec_io io(uint64_t r, uint64_t w)
{
	struct telrec_io d = { .rchar = r, .wchar = w, .syscr = 1,
			       .syscw = 1 };
	return d;
}

START_TEST(test_timeline_appends_one_sample_per_interval)
{
	struct telrec_io d = io(10, 20);

	for (int i = 1; i <= 5; i++)
		telrec_timeline_add(tl, 100.0 + i, &d);
	ck_assert_uint_eq(tl->n, 5);
	ck_assert_uint_eq(tl->s[4].rb, 10);
	ck_assert_uint_eq(tl->s[4].wb, 20);
	ck_assert(tl->interval == 1.0);
}
END_TEST

START_TEST(test_timeline_folds_without_losing_bytes)
{
	uint64_t rb = 0, wb = 0;
	const int n = 5 * TELREC_TIMELINE_MAX + 3;

	for (int i = 1; i <= n; i++) {
		struct telrec_io d = io((uint64_t)i, 2 * (uint64_t)i);

		telrec_timeline_add(tl, 1000.0 + i, &d);
	}
	ck_assert_uint_le(tl->n, TELREC_TIMELINE_MAX);
	ck_assert(tl->interval >= 4.0);
	for (size_t i = 0; i < tl->n; i++) {
		rb += tl->s[i].rb;
		wb += tl->s[i].wb;
		if (i)
			ck_assert(tl->s[i].t > tl->s[i - 1].t);
	}
	ck_assert_uint_eq(rb, (uint64_t)n * (n + 1) / 2);
	ck_assert_uint_eq(wb, (uint64_t)n * (n + 1));
	/* After folding, samples still span about one interval each (up to
	 * the quarter of slack that absorbs sampling jitter). */
	ck_assert(tl->s[tl->n - 1].t - tl->s[0].t <=
		  1.25 * tl->interval * (double)tl->n);
	ck_assert(tl->s[tl->n - 1].t - tl->s[0].t >=
		  0.5 * tl->interval * (double)(tl->n - 1));
}
END_TEST

START_TEST(test_timeline_same_time_merges)
{
	struct telrec_io d = io(1, 1);

	telrec_timeline_add(tl, 5.0, &d);
	telrec_timeline_add(tl, 5.0, &d);
	telrec_timeline_add(tl, 4.0, &d); /* clock stepped back */
	ck_assert_uint_eq(tl->n, 1);
	ck_assert_uint_eq(tl->s[0].rb, 3);
}
END_TEST

START_TEST(test_timeline_sum_counts_overlapping_samples)
{
	struct telrec_io sum;

	for (int i = 1; i <= 10; i++) {
		struct telrec_io d = io(100, (uint64_t)i);

		telrec_timeline_add(tl, (double)i, &d);
	}
	/* Samples cover (i-1, i]: [2.5, 4.2] overlaps samples 3, 4, 5. */
	telrec_timeline_sum(tl, 2.5, 4.2, &sum);
	ck_assert_uint_eq(sum.rchar, 300);
	ck_assert_uint_eq(sum.wchar, 3 + 4 + 5);
	telrec_timeline_sum(tl, 20, 30, &sum);
	ck_assert_uint_eq(sum.rchar, 0);
	telrec_timeline_sum(tl, 0, 100, &sum);
	ck_assert_uint_eq(sum.rchar, 1000);
}
END_TEST

START_TEST(test_timeline_json_round_trip)
{
	struct telrec_timeline *back = malloc(sizeof(*back));
	cJSON *j, *bad;

	for (int i = 1; i <= 7; i++) {
		struct telrec_io d = io(1000u * (unsigned)i, 7);

		telrec_timeline_add(tl, 1763860000.25 + i, &d);
	}
	j = telrec_timeline_to_json(tl);
	ck_assert_int_eq(cJSON_GetArraySize(j), 7);
	/* Bad entries (from a damaged file) are skipped. */
	bad = cJSON_Parse("[1,2]");
	cJSON_AddItemToArray(j, bad);
	cJSON_AddItemToArray(j, cJSON_CreateString("x"));
	telrec_timeline_from_json(back, j, 2.0);
	ck_assert_uint_eq(back->n, 7);
	ck_assert(back->interval == 2.0);
	ck_assert_uint_eq(back->s[6].rb, 7000);
	ck_assert(back->s[6].t > 1763860007.2 && back->s[6].t < 1763860007.3);
	telrec_timeline_from_json(back, NULL, 1.0);
	ck_assert_uint_eq(back->n, 0);
	cJSON_Delete(j);
	free(back);
}
END_TEST

static const struct {
	const char *name;
	bool known;
} counters[] = {
	{ "POSIX_READS", true },
	{ "POSIX_BYTES_WRITTEN", true },
	{ "POSIX_SIZE_READ_1K_10K", true },
	{ "POSIX_SIZE_WRITE_1G_PLUS", true },
	{ "POSIX_F_META_TIME", true },
	{ "IOSTAGE_UNOVERLAPPED_IO_TIME", true },
	{ "POSIX_SIZE_READ_1K_10", false },
	{ "posix_reads", false },
	{ "", false },
	{ NULL, false },
	{ "POSIX_READSPOSIX_READSPOSIX_READSPOSIX_READSPOSIX_READS", false },
};

START_TEST(test_counter_vocabulary)
{
	ck_assert_int_eq(telrec_counter_known(counters[_i].name),
			 counters[_i].known);
}
END_TEST

static const struct {
	const char *name;
	bool ok;
} phase_names[] = {
	{ "checkpoint", true },
	{ "epoch-1.read_2", true },
	{ "a", true },
	{ "0123456789012345678901234567890", true },  /* 31 */
	{ "01234567890123456789012345678901", false }, /* 32 */
	{ "", false },
	{ NULL, false },
	{ "bad name", false },
	{ "../x", false },
	{ "x\n", false },
	{ "caf\xc3\xa9", false },
};

START_TEST(test_phase_names)
{
	ck_assert_int_eq(telrec_phase_name_ok(phase_names[_i].name),
			 phase_names[_i].ok);
}
END_TEST

START_TEST(test_counters_merge_sums_and_max)
{
	cJSON *dst = cJSON_Parse("{\"POSIX_READS\":2,"
				 "\"POSIX_MAX_BYTE_READ\":100}");
	cJSON *src = cJSON_Parse("{\"POSIX_READS\":3,\"POSIX_MAX_BYTE_READ\":"
				 "50,\"POSIX_WRITES\":1,\"EVIL\":9,"
				 "\"POSIX_SEEKS\":\"x\",\"POSIX_OPENS\":-1}");

	ck_assert_int_eq(telrec_counters_merge(dst, src), 0);
	ck_assert_int_eq(cJSON_GetObjectItem(dst, "POSIX_READS")->valueint, 5);
	ck_assert_int_eq(
		cJSON_GetObjectItem(dst, "POSIX_MAX_BYTE_READ")->valueint, 100);
	ck_assert_int_eq(cJSON_GetObjectItem(dst, "POSIX_WRITES")->valueint, 1);
	ck_assert_ptr_null(cJSON_GetObjectItem(dst, "EVIL"));
	ck_assert_ptr_null(cJSON_GetObjectItem(dst, "POSIX_SEEKS"));
	ck_assert_ptr_null(cJSON_GetObjectItem(dst, "POSIX_OPENS"));
	cJSON_Delete(src);
	src = cJSON_Parse("{\"POSIX_MAX_BYTE_READ\":500}");
	telrec_counters_merge(dst, src);
	ck_assert_int_eq(
		cJSON_GetObjectItem(dst, "POSIX_MAX_BYTE_READ")->valueint, 500);
	cJSON_Delete(src);
	cJSON_Delete(dst);
}
END_TEST

static const struct {
	const char *json;
	const char *err; /* NULL: accepted; else a part of the message */
} reports[] = {
	{ "{\"op\":\"shim_report\",\"job\":1,\"pid\":5,\"rank\":0,"
	  "\"counters\":{\"run\":{\"dataset\":{\"POSIX_READS\":1}},"
	  "\"checkpoint\":{\"output\":{\"POSIX_BYTES_WRITTEN\":4096,"
	  "\"POSIX_F_WRITE_TIME\":0.5}}},\"io_seconds\":{\"run\":1.5},"
	  "\"unoverlapped\":{\"run\":0.5},\"files\":[{\"path_class\":"
	  "\"output\",\"written\":4096,\"shared\":true}]}",
	  NULL },
	{ "{\"op\":\"shim_report\",\"job\":1}", NULL },
	{ "{\"op\":\"shim_report\",\"job\":1,\"uid\":0}", "unknown key 'uid'" },
	{ "{\"job\":1,\"counters\":[]}", "key 'counters': must be an object" },
	{ "{\"job\":1,\"counters\":{\"run\":{\"etc\":{}}}}",
	  "unknown file class 'etc'" },
	{ "{\"job\":1,\"counters\":{\"run\":{\"dataset\":{\"X\":1}}}}",
	  "unknown counter 'X'" },
	{ "{\"job\":1,\"counters\":{\"run\":{\"dataset\":{\"POSIX_READS\":-1}}}}",
	  "must be a number >= 0" },
	{ "{\"job\":1,\"counters\":{\"run\":{\"dataset\":{\"POSIX_READS\":1e30}}}}",
	  "must be a number >= 0" },
	{ "{\"job\":1,\"counters\":{\"run\":{\"dataset\":{\"POSIX_READS\":\"1\"}}}}",
	  "must be a number >= 0" },
	{ "{\"job\":1,\"counters\":{\"bad name\":{}}}", "bad phase name" },
	{ "{\"job\":1,\"counters\":{\"run\":5}}", "must be an object" },
	{ "{\"job\":1,\"io_seconds\":{\"run\":-2}}", "seconds >= 0" },
	{ "{\"job\":1,\"unoverlapped\":[]}", "must be an object" },
	{ "{\"job\":1,\"files\":{}}", "must be an array" },
	{ "{\"job\":1,\"files\":[{\"path\":\"/etc/shadow\"}]}",
	  "unknown key 'path'" },
	{ "{\"job\":1,\"files\":[{\"path_class\":\"home\"}]}",
	  "path_class must be" },
	{ "{\"job\":1,\"files\":[{\"shared\":1}]}", "true or false" },
	{ "{\"job\":1,\"node\":5}", "key 'node': must be a string" },
	{ "{\"job\":1,\"node\":\"0123456789012345678901234567890123456789"
	  "012345678901234567890123\"}",
	  "at most 63 bytes" },
	{ "{\"job\":1,\"pid\":-3}", "key 'pid': must be a number" },
	{ "[1]", "must be an object" },
};

START_TEST(test_report_check_table)
{
	cJSON *req = cJSON_Parse(reports[_i].json);
	char err[256] = "";
	int r;

	ck_assert_ptr_nonnull(req);
	r = telrec_report_check(req, err, sizeof(err));
	if (!reports[_i].err) {
		ck_assert_msg(r == 0, "refused: %s", err);
	} else {
		ck_assert_int_eq(r, -1);
		ck_assert_msg(strstr(err, reports[_i].err), "got '%s', want '%s'",
			      err, reports[_i].err);
		ck_assert_ptr_null(strchr(err, '\n'));
	}
	cJSON_Delete(req);
}
END_TEST

/* Bounded: 33 phases and 257 files are refused. */
START_TEST(test_report_check_limits)
{
	cJSON *req = cJSON_CreateObject(), *c = cJSON_AddObjectToObject(req,
								      "counters");
	cJSON *files;
	char err[256], name[16];

	for (int i = 0; i < 33; i++) {
		snprintf(name, sizeof(name), "p%d", i);
		cJSON_AddObjectToObject(c, name);
	}
	ck_assert_int_eq(telrec_report_check(req, err, sizeof(err)), -1);
	ck_assert_ptr_nonnull(strstr(err, "more than 32 phases"));
	cJSON_DeleteItemFromObject(req, "counters");
	files = cJSON_AddArrayToObject(req, "files");
	for (int i = 0; i < 257; i++)
		cJSON_AddItemToArray(files, cJSON_CreateObject());
	ck_assert_int_eq(telrec_report_check(req, err, sizeof(err)), -1);
	ck_assert_ptr_nonnull(strstr(err, "more than 256 entries"));
	cJSON_DeleteItemFromArray(files, 0);
	ck_assert_int_eq(telrec_report_check(req, err, sizeof(err)), 0);
	ck_assert_int_eq(telrec_report_check(NULL, err, sizeof(err)), -1);
	cJSON_Delete(req);
}
END_TEST

static Suite *telrec_suite(void)
{
	Suite *s = suite_create("telrec");
	TCase *tc = tcase_create("core");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_timeline_appends_one_sample_per_interval);
	tcase_add_test(tc, test_timeline_folds_without_losing_bytes);
	tcase_add_test(tc, test_timeline_same_time_merges);
	tcase_add_test(tc, test_timeline_sum_counts_overlapping_samples);
	tcase_add_test(tc, test_timeline_json_round_trip);
	tcase_add_loop_test(tc, test_counter_vocabulary, 0,
			    sizeof(counters) / sizeof(counters[0]));
	tcase_add_loop_test(tc, test_phase_names, 0,
			    sizeof(phase_names) / sizeof(phase_names[0]));
	tcase_add_test(tc, test_counters_merge_sums_and_max);
	tcase_add_loop_test(tc, test_report_check_table, 0,
			    sizeof(reports) / sizeof(reports[0]));
	tcase_add_test(tc, test_report_check_limits);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(telrec_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
