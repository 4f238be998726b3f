/* ops.c - what every family of ops shares (daemon/ops.h): here, making a
 * client's string safe to log or echo. Its own file so that the op
 * families (ops_job.c, telemetry_ops.c, cluster/peer*.c, ...) need not
 * reach into the socket's code for it. */
#include <stdio.h>

#include "daemon/ops.h"

const char *ops_printable(const char *s, char *buf, size_t len)
{
	size_t i;

	snprintf(buf, len, "%s", s);
	for (i = 0; buf[i]; i++)
		if ((unsigned char)buf[i] < 0x20 || buf[i] == 0x7f)
			buf[i] = '?';
	return buf;
}
