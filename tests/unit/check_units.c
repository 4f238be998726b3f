/* check_units.c - unit tests for common/base/units: sizes and durations as
 * tables and messages show them, and durations out of range (a damaged
 * record) shown without an integer conversion that would be undefined. */
#include <math.h>
#include <stdlib.h>

#include <check.h>

#include "common/base/units.h"
#include "tests/unit/check_run.h"

START_TEST(test_bytes)
{
	char b[32];

	ck_assert_str_eq(units_bytes(0, b, sizeof(b)), "0 B");
	ck_assert_str_eq(units_bytes(1023, b, sizeof(b)), "1023 B");
	ck_assert_str_eq(units_bytes(1536, b, sizeof(b)), "1.5 KiB");
	ck_assert_str_eq(units_bytes(3ULL << 30, b, sizeof(b)), "3.0 GiB");
	ck_assert_str_eq(units_bytes(UINT64_MAX, b, sizeof(b)), "16.0 EiB");
}
END_TEST

START_TEST(test_seconds)
{
	char b[32];

	ck_assert_str_eq(units_seconds(0.42, b, sizeof(b)), "0.4 s");
	ck_assert_str_eq(units_seconds(12.4, b, sizeof(b)), "12 s");
	ck_assert_str_eq(units_seconds(185, b, sizeof(b)), "3m05s");
	ck_assert_str_eq(units_seconds(7380, b, sizeof(b)), "2h03m");
}
END_TEST

START_TEST(test_seconds_out_of_range)
{
	char b[32];

	ck_assert_str_eq(units_seconds(-5, b, sizeof(b)), "0.0 s");
	ck_assert_str_eq(units_seconds(NAN, b, sizeof(b)), "0.0 s");
	ck_assert_str_eq(units_seconds(1e300, b, sizeof(b)), "1e+300 s");
	ck_assert_str_eq(units_seconds(INFINITY, b, sizeof(b)), "inf s");
	/* the largest shown in hours and minutes */
	ck_assert_str_eq(units_seconds(999999999999.0, b, sizeof(b)),
			 "277777777h46m");
}
END_TEST

/* Whole decimal numbers only; anything else leaves *ret as it was. */
START_TEST(test_parse_u64)
{
	static const char *const bad[] = {
		"", "-1", "+1", " 1", "1 ", "1x", "0x10", "18446744073709551616"
	};
	uint64_t v = 7;

	ck_assert_int_eq(units_parse_u64("0", &v), 0);
	ck_assert_uint_eq(v, 0);
	ck_assert_int_eq(units_parse_u64("21474836480", &v), 0);
	ck_assert_uint_eq(v, 21474836480ULL);
	ck_assert_int_eq(units_parse_u64("18446744073709551615", &v), 0);
	ck_assert_uint_eq(v, UINT64_MAX);
	v = 7;
	for (size_t k = 0; k < sizeof(bad) / sizeof(bad[0]); k++) {
		ck_assert_msg(units_parse_u64(bad[k], &v) == -1, "'%s'",
			      bad[k]);
		ck_assert_uint_eq(v, 7);
	}
	ck_assert_int_eq(units_parse_u64(NULL, &v), -1);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("units");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, test_bytes);
	tcase_add_test(tc, test_seconds);
	tcase_add_test(tc, test_seconds_out_of_range);
	tcase_add_test(tc, test_parse_u64);
	suite_add_tcase(s, tc);
	return check_run(s);
}
