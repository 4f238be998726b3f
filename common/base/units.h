/* units.h - human-readable sizes and durations for messages and tables. */
#ifndef IOSTAGE_UNITS_H
#define IOSTAGE_UNITS_H

#include <stddef.h>
#include <stdint.h>

/* "0 B", "999 B", "1.2 KiB", "3.4 GiB" into buf; returns buf. */
char *units_bytes(uint64_t bytes, char *buf, size_t buflen);

/* "0.4 s", "12 s", "3m05s", "2h03m"; a negative or NaN duration is
 * "0.0 s", one past 1e12 s "1e+300 s"; returns buf. */
char *units_seconds(double seconds, char *buf, size_t buflen);

/* S as a whole decimal number (digits only, no sign, no blank, no
 * suffix) into *ret. 0, or -1 (untouched) when it is not one or does not
 * fit 64 bits. */
int units_parse_u64(const char *s, uint64_t *ret);

#endif /* IOSTAGE_UNITS_H */
