/* plan_fixture.h - a spread plan from its text, for the unit tests of
 * placement and of what reads a plan (tests/unit/check_spread.c,
 * check_view_ahead.c). A spec that does not parse fails the test with
 * the parser's line. Static inline, as the other fixtures. */
#ifndef IOSTAGE_TESTS_PLAN_FIXTURE_H
#define IOSTAGE_TESTS_PLAN_FIXTURE_H

#include <check.h>

#include "common/sched/spread.h"

static inline struct spread_plan plan_of(const char *spec)
{
	struct spread_plan p;
	char err[256];

	ck_assert_msg(spread_plan_parse(spec, &p, err, sizeof(err)) == 0,
		      "%s: %s", spec, err);
	return p;
}

#endif /* IOSTAGE_TESTS_PLAN_FIXTURE_H */
