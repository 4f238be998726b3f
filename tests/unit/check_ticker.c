/* check_ticker.c - unit tests for common/base/ticker: turns run on the
 * period and on a poke (and say which), a stop is never missed and no
 * turn starts after it, a turn that pokes itself runs again. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <time.h>

#include <check.h>

#include "common/base/ticker.h"
#include "tests/unit/check_run.h"

struct counts {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	unsigned turns, poked_turns;
	unsigned self_pokes; /* turns left that poke again */
	struct ticker *self;
	atomic_bool stopped; /* set by the test after ticker_stop() */
	atomic_bool late;    /* a turn ran after the stop */
};

static void counts_init(struct counts *c)
{
	pthread_mutex_init(&c->lock, NULL);
	pthread_cond_init(&c->cond, NULL);
	c->turns = c->poked_turns = c->self_pokes = 0;
	c->self = NULL;
	atomic_store(&c->stopped, false);
	atomic_store(&c->late, false);
}

static void turn(void *arg, bool poked)
{
	struct counts *c = arg;

	if (atomic_load(&c->stopped))
		atomic_store(&c->late, true);
	pthread_mutex_lock(&c->lock);
	c->turns++;
	if (poked)
		c->poked_turns++;
	if (c->self_pokes && c->self) {
		c->self_pokes--;
		ticker_poke(c->self);
	}
	pthread_cond_broadcast(&c->cond);
	pthread_mutex_unlock(&c->lock);
}

/* Wait (up to 10 s, so a broken ticker fails rather than hangs) until
 * at least N turns ran. True when they did. */
static bool wait_turns(struct counts *c, unsigned n)
{
	struct timespec until;
	bool ok;

	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += 10;
	pthread_mutex_lock(&c->lock);
	while (c->turns < n &&
	       pthread_cond_timedwait(&c->cond, &c->lock, &until) == 0)
		;
	ok = c->turns >= n;
	pthread_mutex_unlock(&c->lock);
	return ok;
}

START_TEST(test_period_runs_turns)
{
	struct counts c;
	struct ticker *t;

	counts_init(&c);
	t = ticker_start(5, false, turn, &c);
	ck_assert_ptr_nonnull(t);
	ck_assert(wait_turns(&c, 3));
	ticker_stop(t);
	ck_assert_uint_eq(c.poked_turns, 0);
}
END_TEST

/* A period far longer than the test: only a poke makes the turn. */
START_TEST(test_poke_runs_now)
{
	struct counts c;
	struct ticker *t;

	counts_init(&c);
	t = ticker_start(3600 * 1000, false, turn, &c);
	ck_assert_ptr_nonnull(t);
	ticker_poke(t);
	ck_assert(wait_turns(&c, 1));
	ticker_poke(t);
	ck_assert(wait_turns(&c, 2));
	ticker_stop(t);
	ck_assert_uint_eq(c.turns, 2);
	ck_assert_uint_eq(c.poked_turns, 2);
}
END_TEST

START_TEST(test_first_now)
{
	struct counts c;
	struct ticker *t;

	counts_init(&c);
	t = ticker_start(3600 * 1000, true, turn, &c);
	ck_assert_ptr_nonnull(t);
	ck_assert(wait_turns(&c, 1));
	ticker_stop(t);
	ck_assert_uint_eq(c.turns, 1);
}
END_TEST

/* A poke from inside a turn is not lost: the loop runs again at once. */
START_TEST(test_poke_from_turn)
{
	struct counts c;
	struct ticker *t;

	counts_init(&c);
	c.self_pokes = 4;
	t = ticker_start(3600 * 1000, false, turn, &c);
	ck_assert_ptr_nonnull(t);
	pthread_mutex_lock(&c.lock);
	c.self = t;
	pthread_mutex_unlock(&c.lock);
	ticker_poke(t);
	ck_assert(wait_turns(&c, 5));
	ticker_stop(t);
	ck_assert_uint_eq(c.turns, 5);
}
END_TEST

/* A turn that sets the next one an hour away on a 1 ms period: only the
 * poke runs the second turn; the third is back on the period. */
struct next_counts {
	struct counts c;
	struct ticker *self;
};

static void turn_next(void *arg, bool poked)
{
	struct next_counts *n = arg;

	pthread_mutex_lock(&n->c.lock);
	if (n->c.turns == 0 && n->self)
		ticker_next(n->self, 3600 * 1000);
	pthread_mutex_unlock(&n->c.lock);
	turn(&n->c, poked);
}

START_TEST(test_next_sets_one_wait)
{
	struct next_counts n;
	struct timespec pause = { 0, 50 * 1000000L };
	struct ticker *t;

	counts_init(&n.c);
	n.self = NULL;
	pthread_mutex_lock(&n.c.lock);
	t = ticker_start(1, false, turn_next, &n);
	ck_assert_ptr_nonnull(t);
	n.self = t;
	pthread_mutex_unlock(&n.c.lock);
	ck_assert(wait_turns(&n.c, 1));
	/* a broken ticker_next would run period turns meanwhile */
	nanosleep(&pause, NULL);
	pthread_mutex_lock(&n.c.lock);
	ck_assert_uint_eq(n.c.turns, 1);
	pthread_mutex_unlock(&n.c.lock);
	ticker_poke(t);
	ck_assert(wait_turns(&n.c, 3)); /* the poked one, then the period */
	ticker_stop(t);
	ck_assert_uint_ge(n.c.poked_turns, 1);
}
END_TEST

/* Stopping a ticker whose period is an hour returns (the wait is woken),
 * and a busy ticker runs no turn once stop has returned. */
START_TEST(test_stop_is_not_missed)
{
	for (int i = 0; i < 200; i++) {
		struct counts c;
		struct ticker *t;

		counts_init(&c);
		t = ticker_start(i % 2 ? 3600 * 1000 : 1, i % 3 == 0, turn, &c);
		ck_assert_ptr_nonnull(t);
		if (i % 5 == 0)
			ticker_poke(t);
		ck_assert(!ticker_stopping(t));
		ticker_stop(t);
		atomic_store(&c.stopped, true);
		ck_assert(!atomic_load(&c.late));
	}
	ticker_stop(NULL);
}
END_TEST

static Suite *ticker_suite(void)
{
	Suite *s = suite_create("ticker");
	TCase *tc = tcase_create("core");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_period_runs_turns);
	tcase_add_test(tc, test_poke_runs_now);
	tcase_add_test(tc, test_first_now);
	tcase_add_test(tc, test_poke_from_turn);
	tcase_add_test(tc, test_stop_is_not_missed);
	tcase_add_test(tc, test_next_sets_one_wait);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return check_run(ticker_suite());
}
