/* check_promtext.c - Prometheus text exposition: names, escaping, values,
 * families, and the job phase series built from records. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <cJSON.h>
#include <check.h>

#include "common/telemetry/promtext.h"
#include "tests/unit/check_run.h"

static const struct {
	const char *name;
	bool valid;
} names[] = {
	{ "iostage_tier_used_bytes", true },
	{ "a:b_c9", true },
	{ "_x", true },
	{ "9abc", false },
	{ "", false },
	{ "with space", false },
	{ "dash-ed", false },
	{ "é", false },
	{ "x\n", false },
	{ "x{y}", false },
};

START_TEST(test_name_table)
{
	ck_assert_int_eq(promtext_valid_name(names[_i].name), names[_i].valid);
}
END_TEST

START_TEST(test_null_and_bad_input)
{
	struct promtext *pt = promtext_create();
	const char *bad_label[] = { "bad-name", "v", NULL };
	const char *null_value[] = { "k", NULL, NULL };

	ck_assert(!promtext_valid_name(NULL));
	ck_assert_int_eq(promtext_family(NULL, "a", "gauge", "h"), -1);
	errno = 0;
	ck_assert_int_eq(promtext_family(pt, "a", "histogram", "h"), -1);
	ck_assert_int_eq(errno, EINVAL);
	ck_assert_int_eq(promtext_family(pt, "a b", "gauge", "h"), -1);
	ck_assert_int_eq(promtext_sample(pt, "a", bad_label, 1), -1);
	ck_assert_int_eq(promtext_sample(pt, "a", null_value, 1), -1);
	ck_assert_int_eq(promtext_job_phases(pt, NULL), -1);
	/* Nothing was written by the refused calls. */
	ck_assert_str_eq(promtext_text(pt, NULL), "");
	promtext_destroy(pt);
	promtext_destroy(NULL);
}
END_TEST

START_TEST(test_family_escaping_and_values)
{
	struct promtext *pt = promtext_create();
	const char *labels[] = { "tier", "a\"b\\c\nd", "medium", "nvme", NULL };
	size_t len = 0;
	const char *text;

	ck_assert_int_eq(promtext_family(pt, "iostage_x", "counter",
					 "help with \\ and\nnewline"),
			 0);
	ck_assert_int_eq(promtext_sample(pt, "iostage_x", labels, 3), 0);
	ck_assert_int_eq(promtext_sample(pt, "iostage_x", NULL, 0.1), 0);
	ck_assert_int_eq(promtext_sample(pt, "iostage_x", NULL, NAN), 0);
	ck_assert_int_eq(promtext_sample(pt, "iostage_x", NULL, -INFINITY), 0);
	ck_assert_int_eq(promtext_sample(pt, "iostage_x", NULL,
					 9007199254740993.0 * 4),
			 0);
	ck_assert_int_eq(promtext_sample(pt, "iostage_x", NULL, 1130000000.0),
			 0);
	text = promtext_text(pt, &len);
	ck_assert_uint_eq(len, strlen(text));
	ck_assert_str_eq(
	    text, "# HELP iostage_x help with \\\\ and\\nnewline\n"
		  "# TYPE iostage_x counter\n"
		  "iostage_x{tier=\"a\\\"b\\\\c\\nd\",medium=\"nvme\"} 3\n"
		  "iostage_x 0.1\n"
		  "iostage_x NaN\n"
		  "iostage_x -Inf\n"
		  "iostage_x 36028797018963968\n"
		  "iostage_x 1130000000\n");
	promtext_destroy(pt);
}
END_TEST

/* iostagectld's scheduling families from a sched_status reply: one
 * HELP/TYPE per family, the values, and 0 for what the reply lacks. */
START_TEST(test_sched_status)
{
	struct promtext *pt = promtext_create();
	cJSON *r = cJSON_Parse(
	    "{\"ok\":true,\"placement\":{\"nodes_reporting\":3,"
	    "\"preferred\":5,\"honoured\":4,\"not_honoured\":1,"
	    "\"hold_s\":10,\"held\":6,\"held_started\":5,"
	    "\"hold_released\":1},"
	    "\"prestage\":{\"jobs_noted\":7,\"pending_jobs\":2,"
	    "\"requests\":3,\"staged\":2,\"failed\":1,"
	    "\"bytes\":1048576,\"hits\":1,\"late\":3,\"missed\":1,"
	    "\"seconds_saved\":2.5}}");
	const char *t, *p;
	int types = 0;

	ck_assert_int_eq(promtext_sched_status(pt, r), 0);
	t = promtext_text(pt, NULL);
	for (p = t; (p = strstr(p, "# TYPE ")); p++)
		types++;
	ck_assert_int_eq(types, 13);
	ck_assert_ptr_nonnull(
	    strstr(t, "iostage_ctld_placement_hold_seconds 10\n"));
	ck_assert_ptr_nonnull(strstr(t, "iostage_ctld_placement_holds_total"
					"{outcome=\"held\"} 6\n"
					"iostage_ctld_placement_holds_total"
					"{outcome=\"started\"} 5\n"
					"iostage_ctld_placement_holds_total"
					"{outcome=\"released\"} 1\n"));
	ck_assert_ptr_nonnull(strstr(t, "iostage_ctld_placements_total"
					"{outcome=\"honoured\"} 4\n"
					"iostage_ctld_placements_total"
					"{outcome=\"not_honoured\"} 1\n"));
	ck_assert_ptr_nonnull(strstr(t, "iostage_ctld_feature_updates_total"
					"{result=\"error\"} 0\n"));
	ck_assert_ptr_nonnull(strstr(t, "iostage_ctld_prestage_bytes_total "
					"1048576\n"));
	ck_assert_ptr_nonnull(
	    strstr(t, "iostage_ctld_prestage_pending_jobs 2\n"));
	ck_assert_ptr_nonnull(strstr(t, "iostage_ctld_prestage_predictions_"
					"total{outcome=\"late\"} 3\n"
					"iostage_ctld_prestage_predictions_"
					"total{outcome=\"missed\"} 1\n"));
	ck_assert_ptr_nonnull(strstr(t, "iostage_ctld_prestage_saved_"
					"seconds_total 2.5\n"));
	cJSON_Delete(r);
	promtext_destroy(pt);
}
END_TEST

static Suite *promtext_suite(void)
{
	Suite *s = suite_create("promtext");
	TCase *tc = tcase_create("core");

	tcase_add_loop_test(tc, test_name_table, 0,
			    sizeof(names) / sizeof(names[0]));
	tcase_add_test(tc, test_null_and_bad_input);
	tcase_add_test(tc, test_family_escaping_and_values);
	tcase_add_test(tc, test_sched_status);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return check_run(promtext_suite());
}
