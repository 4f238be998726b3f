/* deadline.h - an absolute time some milliseconds from now, for
 * pthread_cond_timedwait: on CLOCK_REALTIME for a condition variable made
 * with default attributes, on CLOCK_MONOTONIC for one made with
 * pthread_condattr_setclock(CLOCK_MONOTONIC); and deadlines as
 * CLOCK_MONOTONIC milliseconds, for poll(). */
#ifndef IOSTAGE_DEADLINE_H
#define IOSTAGE_DEADLINE_H

#include <time.h>

/* Now on CLOCK plus MS milliseconds into *ret (tv_nsec kept below 1e9). */
void deadline_after_ms(clockid_t clock, unsigned long ms, struct timespec *ret);

/* CLOCK_MONOTONIC now, in milliseconds: deadlines are this plus a wait. */
long long deadline_now_ms(void);

/* Milliseconds left before DEADLINE (deadline_now_ms() based), 0 when it
 * has passed, at most INT_MAX: poll()'s timeout. */
int deadline_left_ms(long long deadline);

#endif /* IOSTAGE_DEADLINE_H */
