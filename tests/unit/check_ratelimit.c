/* check_ratelimit.c - unit tests for common/fs/ratelimit: the token bucket.
 *
 * The clock is a parameter: no test sleeps. What matters: over any span
 * the bytes let through are at most rate x span plus one burst; a rate
 * that drops cuts what was saved; what is owed is paid by waiting.
 */
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>

#include <check.h>

#include "common/fs/ratelimit.h"
#include "tests/unit/check_run.h"

#define S 1000000000ULL
#define MiB (1ULL << 20)

START_TEST(test_fresh_bucket_burst_then_wait)
{
	struct ratelimit_state st = { 0 };
	uint64_t rate = 100 * MiB, burst = (uint64_t)(rate * RATELIMIT_BURST_S);

	/* A fresh bucket holds one burst: that much goes at once. */
	ck_assert_uint_eq(ratelimit_debit(&st, 1 * S, rate, burst), 0);
	/* 10 MiB more: owed, paid in 0.1 s. */
	ck_assert_uint_eq(ratelimit_debit(&st, 1 * S, rate, 10 * MiB), S / 10);
}
END_TEST

/* Threads that each take 1 MiB and wait what they are told: the bytes
 * done by time T never exceed rate x T + burst. */
START_TEST(test_long_run_holds_rate)
{
	struct ratelimit_state st = { 0 };
	uint64_t rate = 30 * MiB, t[4] = { 0 }, bytes = 0;
	double burst = (double)rate * RATELIMIT_BURST_S;
	uint64_t start = 5 * S;

	for (int i = 0; i < 4; i++)
		t[i] = start;
	for (int step = 0; step < 4000; step++) {
		int k = 0; /* the thread that is earliest goes next */

		for (int i = 1; i < 4; i++)
			if (t[i] < t[k])
				k = i;
		t[k] += ratelimit_debit(&st, t[k], rate, RATELIMIT_STEP);
		bytes += RATELIMIT_STEP;
		/* It moves its bytes at t[k]: check the bound there. */
		ck_assert((double)bytes <=
			  (double)rate * (double)(t[k] - start) / 1e9 + burst +
			      RATELIMIT_STEP * 4.0);
	}
	/* And it is not much slower than the rate either. */
	uint64_t end = t[0];

	for (int i = 1; i < 4; i++)
		if (t[i] > end)
			end = t[i];
	ck_assert((double)bytes >=
		  (double)rate * (double)(end - start) / 1e9 * 0.95);
}
END_TEST

START_TEST(test_rate_drop_cuts_savings)
{
	struct ratelimit_state st = { 0 };

	ck_assert_uint_eq(ratelimit_debit(&st, 1 * S, 1000 * MiB, 0), 0);
	/* Idle 10 s at a high rate, then the rate drops to 10 MiB/s: the
	 * bucket holds only the new burst, 0.5 MiB, not 10 s of 1000. */
	ck_assert_uint_eq(ratelimit_debit(&st, 11 * S, 10 * MiB, 512 * 1024),
			  0);
	ck_assert_uint_eq(ratelimit_debit(&st, 11 * S, 10 * MiB, 1 * MiB),
			  S / 10);
}
END_TEST

START_TEST(test_clock_backwards_is_a_fresh_start)
{
	struct ratelimit_state st = { 0 };

	ratelimit_debit(&st, 10 * S, MiB, 100 * MiB); /* owes 100 s */
	/* A clock that went back does not make the owing endless or
	 * negative: the bucket starts over. */
	ck_assert_uint_eq(ratelimit_debit(&st, 1 * S, MiB, 1024), 0);
}
END_TEST

START_TEST(test_take_unlimited_and_stop)
{
	struct ratelimit rl;
	_Atomic uint64_t rate = RATELIMIT_UNLIMITED;
	_Atomic bool stop = true;

	ratelimit_init(&rl, &rate);
	ck_assert_int_eq(ratelimit_take(&rl, 1ULL << 40, NULL), 0);
	/* Paused (0) and told to stop: returns -1 without waiting for a
	 * rate that will never come. */
	atomic_store(&rate, 0);
	ck_assert_int_eq(ratelimit_take(&rl, 1, &stop), -1);
	/* No rate word at all: unlimited. */
	ratelimit_init(&rl, NULL);
	ck_assert_int_eq(ratelimit_take(&rl, 1ULL << 40, NULL), 0);
}
END_TEST

static Suite *ratelimit_suite(void)
{
	Suite *s = suite_create("ratelimit");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, test_fresh_bucket_burst_then_wait);
	tcase_add_test(tc, test_long_run_holds_rate);
	tcase_add_test(tc, test_rate_drop_cuts_savings);
	tcase_add_test(tc, test_clock_backwards_is_a_fresh_start);
	tcase_add_test(tc, test_take_unlimited_and_stop);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return check_run(ratelimit_suite());
}
