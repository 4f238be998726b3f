/* check_joblock.c - exclusive locks on job ids (ctld/filing/joblock.c).
 *
 * What must hold: a set is taken whole or not at all; a set that shares a
 * job with a holder waits for it, one that shares none does not; the same
 * job twice in a set is one lock; and under many threads taking
 * overlapping sets, no two ever hold one job at once (counted by a
 * per-job owner that a second holder would find taken).
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>

#include <check.h>

#include "ctld/filing/joblock.h"
#include "tests/unit/check_run.h"

START_TEST(test_whole_or_nothing)
{
	const uint32_t a[] = { 1, 2 }, b[] = { 2, 3 }, c[] = { 3, 4 },
		       three[] = { 3 };

	joblock_lock(a, 2);
	ck_assert(!joblock_trylock(b, 2)); /* shares 2 */
	/* b took nothing: 3 is still free */
	ck_assert(joblock_trylock(c, 2));
	ck_assert(!joblock_trylock(three, 1));
	joblock_unlock(c, 2);
	ck_assert(joblock_trylock(three, 1));
	joblock_unlock(three, 1);
	joblock_unlock(a, 2);
	ck_assert(joblock_trylock(b, 2));
	joblock_unlock(b, 2);
}
END_TEST

START_TEST(test_same_job_twice_is_one_lock)
{
	const uint32_t twice[] = { 7, 7, 8 }, seven[] = { 7 };

	joblock_lock(twice, 3); /* must not wait for itself */
	ck_assert(!joblock_trylock(seven, 1));
	joblock_unlock(twice, 3);
	ck_assert(joblock_trylock(seven, 1));
	joblock_unlock(seven, 1);
	joblock_lock(NULL, 0); /* nothing to take */
	joblock_unlock(NULL, 0);
}
END_TEST

/* --- many threads ------------------------------------------------------------ */

#define JOBS 16
#define THREADS 8
#define ROUNDS 20000

static atomic_int owner[JOBS]; /* 0 free, else the holding thread + 1 */
static atomic_int clashes;

static void *taker(void *arg)
{
	int me = (int)(intptr_t)arg + 1;
	unsigned seed = (unsigned)me;

	for (int r = 0; r < ROUNDS; r++) {
		uint32_t set[3];
		size_t n = 1 + (size_t)(rand_r(&seed) % 3);

		for (size_t i = 0; i < n; i++)
			set[i] = (uint32_t)(rand_r(&seed) % JOBS) + 1000;
		joblock_lock(set, n);
		for (size_t i = 0; i < n; i++) {
			int want = 0;

			/* a set may name a job twice: it owns it already */
			if (!atomic_compare_exchange_strong(
				&owner[set[i] - 1000], &want, me) &&
			    want != me)
				atomic_fetch_add(&clashes, 1);
		}
		for (size_t i = 0; i < n; i++)
			atomic_store(&owner[set[i] - 1000], 0);
		joblock_unlock(set, n);
	}
	return NULL;
}

START_TEST(test_overlapping_sets_never_share_a_job)
{
	pthread_t t[THREADS];

	for (intptr_t i = 0; i < THREADS; i++)
		ck_assert_int_eq(pthread_create(&t[i], NULL, taker, (void *)i),
				 0);
	int n;

	for (int i = 0; i < THREADS; i++)
		pthread_join(t[i], NULL);
	n = atomic_load(&clashes);
	ck_assert_int_eq(n, 0);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("joblock");
	TCase *tc = tcase_create("core");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_whole_or_nothing);
	tcase_add_test(tc, test_same_job_twice_is_one_lock);
	tcase_add_test(tc, test_overlapping_sets_never_share_a_job);
	suite_add_tcase(s, tc);
	return check_run(s);
}
