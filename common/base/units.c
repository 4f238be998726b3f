/* units.c - human-readable sizes and durations. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "common/base/units.h"

char *units_bytes(uint64_t bytes, char *buf, size_t buflen)
{
	static const char *const suffix[] = { "KiB", "MiB", "GiB",
					      "TiB", "PiB", "EiB" };
	double v = (double)bytes;
	int i = -1;

	if (bytes < 1024) {
		snprintf(buf, buflen, "%llu B", (unsigned long long)bytes);
		return buf;
	}
	while (v >= 1024 && i < 5) {
		v /= 1024;
		i++;
	}
	snprintf(buf, buflen, "%.1f %s", v, suffix[i]);
	return buf;
}

char *units_seconds(double seconds, char *buf, size_t buflen)
{
	unsigned long s;

	if (!(seconds >= 0))
		seconds = 0; /* negative (a clock set back) or NaN */
	if (seconds >= 1e12) {
		/* 30,000 years: a damaged record, shown as it is rather
		 * than converted to an integer (undefined out of range) */
		snprintf(buf, buflen, "%.3g s", seconds);
		return buf;
	}
	s = (unsigned long)(seconds + 0.5);
	if (seconds < 10)
		snprintf(buf, buflen, "%.1f s", seconds);
	else if (s < 60)
		snprintf(buf, buflen, "%lu s", s);
	else if (s < 3600)
		snprintf(buf, buflen, "%lum%02lus", s / 60, s % 60);
	else
		snprintf(buf, buflen, "%luh%02lum", s / 3600, s % 3600 / 60);
	return buf;
}

int units_parse_u64(const char *s, uint64_t *ret)
{
	char *end;
	unsigned long long v;

	if (!s || *s < '0' || *s > '9')
		return -1;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || *end)
		return -1;
	*ret = (uint64_t)v;
	return 0;
}
