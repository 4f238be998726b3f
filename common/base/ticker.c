/* ticker.c - a background thread that runs one function every period, or
 * when poked, until stopped (ticker.h). */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <time.h>

#include "common/base/ticker.h"

struct ticker {
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t cond; /* on CLOCK_MONOTONIC */
	unsigned period_ms;
	ticker_fn fn;
	void *arg;
	bool stopping; /* under lock */
	bool poked;    /* under lock */
	bool has_next; /* under lock: ticker_next() set next_ms */
	unsigned next_ms;
};

/* Add MS to *TS (tv_nsec kept below 1e9). */
static void add_ms(struct timespec *ts, unsigned ms)
{
	ts->tv_sec += ms / 1000;
	ts->tv_nsec += (long)(ms % 1000) * 1000000L;
	if (ts->tv_nsec >= 1000000000L) {
		ts->tv_sec++;
		ts->tv_nsec -= 1000000000L;
	}
}

/* Whether A is at or after B. */
static bool reached(const struct timespec *a, const struct timespec *b)
{
	return a->tv_sec > b->tv_sec ||
	       (a->tv_sec == b->tv_sec && a->tv_nsec >= b->tv_nsec);
}

static void *ticker_main(void *arg)
{
	struct ticker *t = arg;
	struct timespec due, now;

	pthread_mutex_lock(&t->lock);
	clock_gettime(CLOCK_MONOTONIC, &due);
	if (!t->poked)
		add_ms(&due, t->period_ms);
	while (!t->stopping) {
		bool poked;

		/* Sleep until due, poked or stopping; spurious wakeups and
		 * a poke during the previous turn are both covered by
		 * re-reading the flags under the lock. */
		while (!t->stopping && !t->poked) {
			clock_gettime(CLOCK_MONOTONIC, &now);
			if (reached(&now, &due))
				break;
			pthread_cond_timedwait(&t->cond, &t->lock, &due);
		}
		if (t->stopping)
			break;
		poked = t->poked;
		t->poked = false;
		pthread_mutex_unlock(&t->lock);
		t->fn(t->arg, poked);
		pthread_mutex_lock(&t->lock);
		/* The next turn one period after this one ended: a slow
		 * turn never makes the loop run back to back. */
		clock_gettime(CLOCK_MONOTONIC, &due);
		add_ms(&due, t->has_next ? t->next_ms : t->period_ms);
		t->has_next = false;
	}
	pthread_mutex_unlock(&t->lock);
	return NULL;
}

struct ticker *ticker_start(unsigned period_ms, bool first_now, ticker_fn fn,
			    void *arg)
{
	struct ticker *t = calloc(1, sizeof(*t));
	pthread_condattr_t attr;
	int r;

	if (!t)
		return NULL;
	t->period_ms = period_ms ? period_ms : 1000;
	t->fn = fn;
	t->arg = arg;
	t->poked = first_now;
	pthread_mutex_init(&t->lock, NULL);
	pthread_condattr_init(&attr);
	pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
	pthread_cond_init(&t->cond, &attr);
	pthread_condattr_destroy(&attr);
	r = pthread_create(&t->thread, NULL, ticker_main, t);
	if (r) {
		pthread_cond_destroy(&t->cond);
		pthread_mutex_destroy(&t->lock);
		free(t);
		errno = r;
		return NULL;
	}
	return t;
}

void ticker_poke(struct ticker *t)
{
	pthread_mutex_lock(&t->lock);
	t->poked = true;
	pthread_cond_broadcast(&t->cond);
	pthread_mutex_unlock(&t->lock);
}

void ticker_next(struct ticker *t, unsigned ms)
{
	pthread_mutex_lock(&t->lock);
	t->has_next = true;
	t->next_ms = ms;
	pthread_mutex_unlock(&t->lock);
}

bool ticker_stopping(struct ticker *t)
{
	bool s;

	pthread_mutex_lock(&t->lock);
	s = t->stopping;
	pthread_mutex_unlock(&t->lock);
	return s;
}

void ticker_stop(struct ticker *t)
{
	if (!t)
		return;
	pthread_mutex_lock(&t->lock);
	t->stopping = true;
	pthread_cond_broadcast(&t->cond);
	pthread_mutex_unlock(&t->lock);
	pthread_join(t->thread, NULL);
	pthread_cond_destroy(&t->cond);
	pthread_mutex_destroy(&t->lock);
	free(t);
}
