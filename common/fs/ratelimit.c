/* ratelimit.c - a token bucket fed by a rate another process sets (see
 * ratelimit.h). */
#include <errno.h>
#include <stdbool.h>
#include <time.h>

#include "common/fs/ratelimit.h"

uint64_t ratelimit_debit(struct ratelimit_state *st, uint64_t now_ns,
			 uint64_t rate, uint64_t bytes)
{
	double burst = (double)rate * RATELIMIT_BURST_S;

	if (st->last_ns == 0 || now_ns < st->last_ns) {
		st->tokens = burst; /* a fresh bucket starts full */
	} else {
		st->tokens += (double)(now_ns - st->last_ns) / 1e9 *
			      (double)rate;
		/* A lower rate: what was owed at the old one is kept, what
		 * was saved is cut to the new burst. */
		if (st->tokens > burst)
			st->tokens = burst;
	}
	st->last_ns = now_ns;
	st->rate = rate;
	st->tokens -= (double)bytes;
	if (st->tokens >= 0)
		return 0;
	return (uint64_t)(-st->tokens / (double)rate * 1e9);
}

void ratelimit_init(struct ratelimit *rl, const _Atomic uint64_t *rate)
{
	pthread_mutex_init(&rl->lock, NULL);
	rl->st = (struct ratelimit_state){ 0 };
	rl->rate = rate;
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static void nap(uint64_t ns)
{
	struct timespec ts = { .tv_sec = (time_t)(ns / 1000000000ULL),
			       .tv_nsec = (long)(ns % 1000000000ULL) };

	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

int ratelimit_take(struct ratelimit *rl, uint64_t bytes,
		   const _Atomic bool *stop)
{
	uint64_t rate, wait;

	for (;;) {
		rate = rl->rate ? atomic_load(rl->rate) : RATELIMIT_UNLIMITED;
		if (rate == RATELIMIT_UNLIMITED)
			return 0;
		if (rate)
			break;
		if (stop && atomic_load(stop))
			return -1;
		nap(RATELIMIT_PAUSE_NS);
	}
	pthread_mutex_lock(&rl->lock);
	wait = ratelimit_debit(&rl->st, now_ns(), rate, bytes);
	pthread_mutex_unlock(&rl->lock);
	if (wait)
		nap(wait);
	return 0;
}
