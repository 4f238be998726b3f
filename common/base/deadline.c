/* deadline.c - an absolute time some milliseconds from now (deadline.h). */
#include "common/base/deadline.h"

void deadline_after_ms(clockid_t clock, unsigned long ms, struct timespec *ret)
{
	clock_gettime(clock, ret);
	ret->tv_sec += (time_t)(ms / 1000);
	ret->tv_nsec += (long)(ms % 1000) * 1000000L;
	if (ret->tv_nsec >= 1000000000L) {
		ret->tv_sec++;
		ret->tv_nsec -= 1000000000L;
	}
}

long long deadline_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int deadline_left_ms(long long deadline)
{
	long long left = deadline - deadline_now_ms();

	return left > 0 ? (int)(left > 0x7fffffff ? 0x7fffffff : left) : 0;
}
