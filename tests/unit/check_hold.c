/* check_hold.c - the bounded hold (PlacementHold=): a job that prefers
 * only our features is held once, for at most the bound, then released;
 * a job the user constrained, or one waiting on something else than
 * nodes, is never held; a hold found after a restart is released; a
 * switched-off hold releases what it holds. Times are given, not
 * waited for. */
#include <stdlib.h>

#include <check.h>

#include "ctld/sched/hold.h"
#include "tests/unit/check_run.h"

#define F1 "ios_0123abcd"
#define F2 "ios_89abcdef"

START_TEST(test_hold_then_release)
{
	struct hold_counts c;

	hold_reset();
	/* no preference, or one that is not only ours: nothing */
	ck_assert_int_eq(hold_decide(1, NULL, NULL, true, 0, 5, 100),
			 HOLD_NONE);
	ck_assert_int_eq(hold_decide(1, "gpu&" F1, "", true, 0, 5, 100),
			 HOLD_NONE);
	/* ours, nothing constrained: held */
	ck_assert_int_eq(hold_decide(1, F1 "&" F2, "", true, 0, 5, 100),
			 HOLD_SET);
	hold_applied(1, HOLD_SET, 100);
	/* within the bound: left alone */
	ck_assert_int_eq(hold_decide(1, F1 "&" F2, F1 "&" F2, true, 0, 5, 104),
			 HOLD_NONE);
	/* at the bound: released, and never held again */
	ck_assert_int_eq(hold_decide(1, F1 "&" F2, F1 "&" F2, true, 0, 5, 105),
			 HOLD_RELEASE);
	hold_applied(1, HOLD_RELEASE, 105);
	ck_assert_int_eq(hold_decide(1, F1 "&" F2, "", true, 0, 5, 106),
			 HOLD_NONE);
	ck_assert_int_eq(hold_done(1), false);
	hold_counts(&c);
	ck_assert_uint_eq(c.held, 1);
	ck_assert_uint_eq(c.released, 1);
	ck_assert_uint_eq(c.started_held, 0);
}
END_TEST

START_TEST(test_started_within_hold)
{
	struct hold_counts c;

	hold_reset();
	ck_assert_int_eq(hold_decide(2, F1, NULL, true, 0, 30, 10), HOLD_SET);
	hold_applied(2, HOLD_SET, 10);
	ck_assert(hold_done(2));
	/* gone from the table: a second call says so */
	ck_assert(!hold_done(2));
	hold_counts(&c);
	ck_assert_uint_eq(c.held, 1);
	ck_assert_uint_eq(c.started_held, 1);
	ck_assert_uint_eq(c.released, 0);
}
END_TEST

START_TEST(test_never_held)
{
	hold_reset();
	/* PlacementHold=0 */
	ck_assert_int_eq(hold_decide(3, F1, "", true, 0, 0, 10), HOLD_NONE);
	/* the user's own constraint */
	ck_assert_int_eq(hold_decide(3, F1, "bigmem", true, 0, 5, 10),
			 HOLD_NONE);
	/* waiting on a dependency or a begin time, not on nodes */
	ck_assert_int_eq(hold_decide(3, F1, "", false, 0, 5, 10), HOLD_NONE);
}
END_TEST

START_TEST(test_restart_and_switch_off)
{
	hold_reset();
	/* our constraint on a job this service did not hold: a hold of a
	 * service that restarted, released at once */
	ck_assert_int_eq(hold_decide(4, F1, F1, true, 0, 5, 10), HOLD_RELEASE);
	hold_applied(4, HOLD_RELEASE, 10);
	ck_assert_int_eq(hold_decide(4, F1, "", true, 0, 5, 11), HOLD_NONE);
	/* held, then PlacementHold=0 (or placement off): released */
	ck_assert_int_eq(hold_decide(5, F1, "", true, 0, 60, 10), HOLD_SET);
	hold_applied(5, HOLD_SET, 10);
	ck_assert_int_eq(hold_decide(5, F1, F1, true, 0, 0, 11), HOLD_RELEASE);
	/* held, then an admin set another constraint: theirs, left alone
	 * and not held again */
	ck_assert_int_eq(hold_decide(6, F1, "", true, 0, 60, 10), HOLD_SET);
	hold_applied(6, HOLD_SET, 10);
	ck_assert_int_eq(hold_decide(6, F1, "bigmem", true, 0, 60, 11),
			 HOLD_NONE);
	ck_assert_int_eq(hold_decide(6, F1, "", true, 0, 60, 12), HOLD_NONE);
	/* a clock that went back does not extend a hold */
	ck_assert_int_eq(hold_decide(7, F1, "", true, 0, 60, 100), HOLD_SET);
	hold_applied(7, HOLD_SET, 100);
	ck_assert_int_eq(hold_decide(7, F1, F1, true, 0, 60, 50), HOLD_RELEASE);
}
END_TEST

/* Constrained at submission (job_submit.lua): held since its submit
 * time, released HOLD_S after it; one submitted longer ago than that (a
 * restart's) goes at once, and a submit time ahead of this clock (slurmctld
 * on another host) holds from now, still bounded. */
START_TEST(test_held_from_submission)
{
	struct hold_counts c;

	hold_reset();
	ck_assert_int_eq(hold_decide(9, F1, F1, true, 100, 10, 103), HOLD_NONE);
	{
		time_t until = 0;

		ck_assert(hold_until(9, 10, &until));
		ck_assert_int_eq(until, 110);
		ck_assert(!hold_until(9, 0, &until));
		ck_assert(!hold_until(99, 10, &until));
	}
	ck_assert_int_eq(hold_decide(9, F1, F1, true, 100, 10, 109), HOLD_NONE);
	ck_assert_int_eq(hold_decide(9, F1, F1, true, 100, 10, 110),
			 HOLD_RELEASE);
	hold_applied(9, HOLD_RELEASE, 110);
	ck_assert_int_eq(hold_decide(9, F1, "", true, 100, 10, 111), HOLD_NONE);
	/* started within: counted as a held job that found its node */
	ck_assert_int_eq(hold_decide(10, F1, F1, true, 100, 10, 102),
			 HOLD_NONE);
	ck_assert(hold_done(10));
	/* PlacementHold=0 now: released at once */
	ck_assert_int_eq(hold_decide(11, F1, F1, true, 100, 0, 101),
			 HOLD_RELEASE);
	/* submitted in the future: held from now, for the bound only */
	ck_assert_int_eq(hold_decide(12, F1, F1, true, 500, 10, 200),
			 HOLD_NONE);
	ck_assert_int_eq(hold_decide(12, F1, F1, true, 500, 10, 210),
			 HOLD_RELEASE);
	hold_counts(&c);
	ck_assert_uint_eq(c.held, 3);
	ck_assert_uint_eq(c.started_held, 1);
	ck_assert_uint_eq(c.released, 1); /* 12's release not applied yet */
}
END_TEST

START_TEST(test_expire)
{
	hold_reset();
	ck_assert_int_eq(hold_decide(8, F1, "", true, 0, 5, 10), HOLD_SET);
	hold_applied(8, HOLD_SET, 10);
	hold_expire(10 + HOLD_FORGET_S + 1);
	/* forgotten: its constraint looks like a restart's, released */
	ck_assert_int_eq(hold_decide(8, F1, F1, true, 0, 5, 700), HOLD_RELEASE);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("hold");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, test_hold_then_release);
	tcase_add_test(tc, test_started_within_hold);
	tcase_add_test(tc, test_never_held);
	tcase_add_test(tc, test_restart_and_switch_off);
	tcase_add_test(tc, test_held_from_submission);
	tcase_add_test(tc, test_expire);
	suite_add_tcase(s, tc);
	return check_run(s);
}
