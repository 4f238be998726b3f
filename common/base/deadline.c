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
