/* check_promtext.c - Prometheus text exposition: names, escaping, values,
 * families, and the job phase series built from records. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <check.h>

#include "common/promtext.h"

static const struct {
	const char *name;
	bool valid;
} names[] = {
	{ "iostage_tier_used_bytes", true }, { "a:b_c9", true },
	{ "_x", true },                      { "9abc", false },
	{ "", false },                       { "with space", false },
	{ "dash-ed", false },                { "é", false },
	{ "x\n", false },                    { "x{y}", false },
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
					 9007199254740993.0 * 4), 0);
	ck_assert_int_eq(promtext_sample(pt, "iostage_x", NULL,
					 1130000000.0), 0);
	text = promtext_text(pt, &len);
	ck_assert_uint_eq(len, strlen(text));
	ck_assert_str_eq(text,
			 "# HELP iostage_x help with \\\\ and\\nnewline\n"
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

static Suite *promtext_suite(void)
{
	Suite *s = suite_create("promtext");
	TCase *tc = tcase_create("core");

	tcase_add_loop_test(tc, test_name_table, 0,
			    sizeof(names) / sizeof(names[0]));
	tcase_add_test(tc, test_null_and_bad_input);
	tcase_add_test(tc, test_family_escaping_and_values);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(promtext_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
