/* ratelimit.h - hold a copy to a rate that another process sets.
 *
 * The copy engine's threads take bytes from one token bucket before each
 * read from the source; the rate comes from a word iostaged writes (a
 * shared page the stage worker maps read-only, daemon/staging/bwgov.c) and may
 * change at any time: RATELIMIT_UNLIMITED lets everything through, 0
 * pauses until the rate is raised (the node has no lease yet). The
 * bucket holds at most RATELIMIT_BURST_S seconds of the rate, so a
 * paused or slowed copy cannot save up and then exceed its share.
 *
 * ratelimit_debit is the arithmetic, with the clock as a parameter
 * (unit-tested); ratelimit_take applies it with the real clock and
 * sleeps.
 */
#ifndef IOSTAGE_RATELIMIT_H
#define IOSTAGE_RATELIMIT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#define RATELIMIT_UNLIMITED UINT64_MAX
#define RATELIMIT_BURST_S 0.05         /* tokens the bucket keeps, in seconds */
#define RATELIMIT_PAUSE_NS 50000000ULL /* re-read a rate of 0 this often */
#define RATELIMIT_STEP (1u << 20)      /* bytes taken at a time by the engine */

/* The bucket: tokens (bytes, negative = owed) at LAST_NS. */
struct ratelimit_state {
	double tokens;
	uint64_t last_ns;
	uint64_t rate; /* the rate the tokens were counted at */
};

struct ratelimit {
	pthread_mutex_t lock;
	struct ratelimit_state st;
	const _Atomic uint64_t *rate; /* bytes/s; not owned */
};

/* Take BYTES at NOW_NS at RATE bytes/s (not 0, not unlimited). Returns
 * the nanoseconds the caller must wait before it moves them (0: go). The
 * bytes are owed from now, so callers that wait in turn share the rate. */
uint64_t ratelimit_debit(struct ratelimit_state *st, uint64_t now_ns,
			 uint64_t rate, uint64_t bytes);

/* A limiter reading its rate from *RATE. */
void ratelimit_init(struct ratelimit *rl, const _Atomic uint64_t *rate);

/* Wait until BYTES may be moved at the current rate (returns at once when
 * unlimited); while the rate is 0, waits for it to change, checking
 * *STOP (may be NULL) between naps: returns -1 when it became true. */
int ratelimit_take(struct ratelimit *rl, uint64_t bytes,
		   const _Atomic bool *stop);

#endif /* IOSTAGE_RATELIMIT_H */
