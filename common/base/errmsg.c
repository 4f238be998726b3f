/* errmsg.c - see errmsg.h. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>

#include "common/base/errmsg.h"

int errmsg_fail(char *err, size_t errlen, int errnum, const char *fmt, ...)
{
	va_list ap;

	if (err && errlen > 0) {
		va_start(ap, fmt);
		vsnprintf(err, errlen, fmt, ap);
		va_end(ap);
	}
	errno = errnum;
	return -1;
}
