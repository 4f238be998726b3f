/* check_deadline.c - unit tests for common/base/deadline: the time MS from
 * now, on the clock asked for, with tv_nsec carried into seconds. */
#include <stdint.h>
#include <time.h>

#include <check.h>

#include "common/base/deadline.h"
#include "tests/unit/check_run.h"

static int64_t ns_of(const struct timespec *ts)
{
	return (int64_t)ts->tv_sec * 1000000000LL + ts->tv_nsec;
}

/* For each clock and span: before + MS <= deadline <= after + MS, and
 * tv_nsec a valid field (999 ms carries whatever the clock's now). */
START_TEST(test_after_ms_on_each_clock)
{
	static const clockid_t clocks[] = { CLOCK_REALTIME, CLOCK_MONOTONIC };
	static const unsigned long spans[] = {
		0, 1, 200, 999, 1000, 1500, 60000
	};

	for (size_t c = 0; c < 2; c++)
		for (size_t i = 0; i < sizeof(spans) / sizeof(spans[0]); i++) {
			struct timespec before, after, d;
			int64_t ms_ns = (int64_t)spans[i] * 1000000LL;

			clock_gettime(clocks[c], &before);
			deadline_after_ms(clocks[c], spans[i], &d);
			clock_gettime(clocks[c], &after);
			ck_assert_int_ge(d.tv_nsec, 0);
			ck_assert_int_lt(d.tv_nsec, 1000000000L);
			ck_assert_int_ge(ns_of(&d), ns_of(&before) + ms_ns);
			ck_assert_int_le(ns_of(&d), ns_of(&after) + ms_ns);
		}
}
END_TEST

static Suite *deadline_suite(void)
{
	Suite *s = suite_create("deadline");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, test_after_ms_on_each_clock);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return check_run(deadline_suite());
}
