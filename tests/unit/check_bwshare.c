/* check_bwshare.c - unit tests for common/sched/bwshare: leases on one budget.
 *
 * What matters: the unexpired leases never sum above the budget, whatever
 * the order of arrivals, renewals, returns and expiries; a node alone
 * gets the whole budget; nodes that renew converge to equal shares; a
 * lease that is not renewed expires and its share goes back.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <check.h>

#include "common/sched/bwshare.h"
#include "tests/unit/check_run.h"

#define MB (1000000ULL)

static uint64_t ask_w(struct bwshare *s, const char *node, bool want,
		      unsigned weight, double now)
{
	uint64_t g = 12345;
	double renew = -1;

	ck_assert_int_eq(bwshare_ask(s, node, want, weight, now, &g, &renew),
			 0);
	ck_assert(renew > 0);
	return g;
}

/* Nodes copying for starting jobs, all of one weight. */
static uint64_t ask(struct bwshare *s, const char *node, bool want, double now)
{
	return ask_w(s, node, want, BWSHARE_WEIGHT_STAGING, now);
}

static uint64_t granted(struct bwshare *s, double now)
{
	struct bwshare_usage u;

	bwshare_usage(s, now, &u);
	ck_assert_uint_le(u.granted, u.budget);
	return u.granted;
}

START_TEST(test_alone_gets_all)
{
	struct bwshare s;
	double renew;
	uint64_t g;

	bwshare_init(&s, 300 * MB, 0);
	ck_assert(s.lease_s == BWSHARE_LEASE_S);
	ck_assert_int_eq(bwshare_ask(&s, "n1", true, BWSHARE_WEIGHT_STAGING, 10,
				     &g, &renew),
			 0);
	ck_assert_uint_eq(g, 300 * MB);
	ck_assert(renew == BWSHARE_LEASE_S / 2);
	ck_assert_uint_eq(bwshare_grant_of(&s, "n1", 10.5), 300 * MB);
	/* Returned: all free again. */
	ck_assert_uint_eq(ask(&s, "n1", false, 11), 0);
	ck_assert_uint_eq(granted(&s, 11), 0);
	bwshare_fini(&s);
	bwshare_fini(&s); /* twice is fine */
	bwshare_fini(NULL);
}
END_TEST

START_TEST(test_newcomer_waits_then_equal_shares)
{
	struct bwshare s;
	double renew;
	uint64_t g;

	bwshare_init(&s, 300 * MB, 2);
	ck_assert_uint_eq(ask(&s, "n1", true, 0), 300 * MB);
	/* n2 arrives while n1 holds everything: nothing free yet, and it is
	 * told to ask again soon. */
	ck_assert_int_eq(bwshare_ask(&s, "n2", true, BWSHARE_WEIGHT_STAGING,
				     0.1, &g, &renew),
			 0);
	ck_assert_uint_eq(g, 0);
	ck_assert(renew == BWSHARE_RETRY_S);
	ck_assert_uint_le(granted(&s, 0.1), 300 * MB);
	/* n1 renews: its fair share is half. */
	ck_assert_uint_eq(ask(&s, "n1", true, 1.0), 150 * MB);
	ck_assert_uint_eq(ask(&s, "n2", true, 1.1), 150 * MB);
	ck_assert_uint_eq(granted(&s, 1.1), 300 * MB);
	/* n3: the same dance, to thirds. */
	ck_assert_uint_eq(ask(&s, "n3", true, 1.2), 0);
	ck_assert_uint_eq(ask(&s, "n1", true, 1.3), 100 * MB);
	ck_assert_uint_eq(ask(&s, "n3", true, 1.4), 50 * MB); /* n2 holds 150 */
	ck_assert_uint_eq(ask(&s, "n2", true, 1.5), 100 * MB);
	ck_assert_uint_eq(ask(&s, "n3", true, 1.6), 100 * MB);
	ck_assert_uint_eq(granted(&s, 1.6), 300 * MB);
	/* n1 and n2 end: n3 grows to the whole budget at its renewal. */
	ck_assert_uint_eq(ask(&s, "n1", false, 2.0), 0);
	ck_assert_uint_eq(ask(&s, "n2", false, 2.0), 0);
	ck_assert_uint_eq(ask(&s, "n3", true, 2.1), 300 * MB);
	bwshare_fini(&s);
}
END_TEST

START_TEST(test_expiry_returns_share)
{
	struct bwshare s;
	struct bwshare_usage u;

	bwshare_init(&s, 100 * MB, 2);
	ck_assert_uint_eq(ask(&s, "n1", true, 0), 100 * MB);
	/* n1 dies: at 2 s its lease is gone and n2 gets it all. */
	ck_assert_uint_eq(ask(&s, "n2", true, 1.9), 0);
	ck_assert_uint_eq(ask(&s, "n2", true, 2.0), 100 * MB);
	bwshare_usage(&s, 2.0, &u);
	ck_assert_uint_eq(u.nodes, 1);
	ck_assert_uint_eq(u.granted, 100 * MB);
	ck_assert_uint_eq(bwshare_grant_of(&s, "n1", 2.0), 0);
	bwshare_usage(&s, 10, &u);
	ck_assert_uint_eq(u.nodes, 0);
	ck_assert_uint_eq(u.granted, 0);
	bwshare_fini(&s);
}
END_TEST

/* A node that only pre-stages weighs 1 against a starting job's 4: it
 * gets a fifth beside one, and all of it alone. */
START_TEST(test_prestage_weighs_less)
{
	struct bwshare s;

	bwshare_init(&s, 100 * MB, 2);
	ck_assert_uint_eq(ask_w(&s, "n1", true, BWSHARE_WEIGHT_PRESTAGE, 0),
			  100 * MB);
	/* n2 starts a job: nothing free until n1 renews at its share. */
	ck_assert_uint_eq(ask(&s, "n2", true, 0.1), 0);
	ck_assert_uint_eq(ask_w(&s, "n1", true, BWSHARE_WEIGHT_PRESTAGE, 1.0),
			  20 * MB);
	ck_assert_uint_eq(ask(&s, "n2", true, 1.1), 80 * MB);
	ck_assert_uint_eq(granted(&s, 1.1), 100 * MB);
	/* n1's pre-stage becomes a job's staging (weight 4): halves. */
	ck_assert_uint_eq(ask(&s, "n1", true, 1.2), 20 * MB);
	ck_assert_uint_eq(ask(&s, "n2", true, 1.3), 50 * MB);
	ck_assert_uint_eq(ask(&s, "n1", true, 1.4), 50 * MB);
	/* n2 ends: n1 gets all, whatever its weight. */
	ck_assert_uint_eq(ask(&s, "n2", false, 1.5), 0);
	ck_assert_uint_eq(ask_w(&s, "n1", true, BWSHARE_WEIGHT_PRESTAGE, 1.6),
			  100 * MB);
	bwshare_fini(&s);
}
END_TEST

/* Any interleaving: the sum stays within the budget at every step. */
START_TEST(test_never_above_budget)
{
	struct bwshare s;
	unsigned seed = 7;
	char node[8];
	double now = 0;

	bwshare_init(&s, 1000 * MB + 7, 2);
	for (int i = 0; i < 20000; i++) {
		int r = rand_r(&seed);

		snprintf(node, sizeof(node), "n%d", r % 13);
		now += (double)(r % 100) / 400.0;
		/* weights out of range too: they are clamped */
		ask_w(&s, node, (r >> 8) % 5 != 0, (unsigned)(r >> 12) % 20,
		      now);
		granted(&s, now);
	}
	bwshare_fini(&s);
}
END_TEST

START_TEST(test_bad_input)
{
	static const char *const bad[] = { "", ".n1", "n 1", "n1/..", NULL };
	struct bwshare s;
	uint64_t g = 42;
	double renew = 3;

	bwshare_init(&s, 10 * MB, 2);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		errno = 0;
		ck_assert_int_eq(bwshare_ask(&s, bad[i], true, 1, 0, &g,
					     &renew),
				 -1);
		ck_assert_int_eq(errno, EINVAL);
		ck_assert_uint_eq(g, 42); /* untouched */
	}
	char longname[CONF_NODE_MAX + 8];

	memset(longname, 'a', sizeof(longname) - 1);
	longname[sizeof(longname) - 1] = '\0';
	ck_assert_int_eq(bwshare_ask(&s, longname, true, 1, 0, &g, &renew), -1);
	ck_assert_uint_eq(granted(&s, 0), 0);
	/* Giving back a lease never held is fine. */
	ck_assert_uint_eq(ask(&s, "n9", false, 0), 0);
	bwshare_fini(&s);
}
END_TEST

START_TEST(test_many_nodes)
{
	struct bwshare s;
	char node[16];

	bwshare_init(&s, 1000 * MB, 2);
	for (int i = 0; i < 1000; i++) {
		snprintf(node, sizeof(node), "node%04d", i);
		ask(&s, node, true, 0);
	}
	ck_assert_uint_le(granted(&s, 0), 1000 * MB);
	/* Everyone renews twice: all converge to budget / 1000. */
	for (int round = 0; round < 2; round++)
		for (int i = 0; i < 1000; i++) {
			snprintf(node, sizeof(node), "node%04d", i);
			ask(&s, node, true, 0.5 + round * 0.5);
		}
	ck_assert_uint_eq(bwshare_grant_of(&s, "node0999", 1.0), 1 * MB);
	ck_assert_uint_eq(granted(&s, 1.0), 1000 * MB);
	bwshare_fini(&s);
}
END_TEST

static Suite *bwshare_suite(void)
{
	Suite *s = suite_create("bwshare");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, test_alone_gets_all);
	tcase_add_test(tc, test_newcomer_waits_then_equal_shares);
	tcase_add_test(tc, test_expiry_returns_share);
	tcase_add_test(tc, test_prestage_weighs_less);
	tcase_add_test(tc, test_never_above_budget);
	tcase_add_test(tc, test_bad_input);
	tcase_add_test(tc, test_many_nodes);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return check_run(bwshare_suite());
}
