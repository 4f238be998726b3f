/* netpeer.c - the local owner of a TCP peer, from /proc/net/tcp (netpeer.h).
 *
 * The kernel prints each address as 32-bit words in the host's byte order
 * ("%08X" of the raw word) and ports in host order, so a word read back
 * with %X compares equal to the raw word of a sockaddr on any endianness.
 */
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/net/netpeer.h"

#define NETPEER_LINE_MAX 512

/* Read N hex words of WORDS chars each at *P into OUT; advance *P. */
static bool hex_words(const char **p, unsigned n, uint32_t *out)
{
	for (unsigned i = 0; i < n; i++) {
		uint32_t v = 0;

		for (int k = 0; k < 8; k++, (*p)++) {
			char c = **p;

			v <<= 4;
			if (c >= '0' && c <= '9')
				v |= (uint32_t)(c - '0');
			else if (c >= 'A' && c <= 'F')
				v |= (uint32_t)(c - 'A' + 10);
			else if (c >= 'a' && c <= 'f')
				v |= (uint32_t)(c - 'a' + 10);
			else
				return false;
		}
		out[i] = v;
	}
	return true;
}

/* "ADDR:PORT" at *P: N address words and a port; advance *P. */
static bool endpoint(const char **p, unsigned n, uint32_t *addr, unsigned *port)
{
	char *end;
	unsigned long v;

	while (**p == ' ')
		(*p)++;
	if (!hex_words(p, n, addr) || **p != ':')
		return false;
	(*p)++;
	v = strtoul(*p, &end, 16);
	if (end == *p || v > 65535)
		return false;
	*port = (unsigned)v;
	*p = end;
	return true;
}

int netpeer_match_line(const char *line, int family,
		       const struct sockaddr *peer, unsigned server_port,
		       uid_t *ret_uid)
{
	unsigned n = family == AF_INET6 ? 4 : 1, lport, rport;
	uint32_t laddr[4], raddr[4], want[4];
	unsigned want_port;
	const char *p = strchr(line ? line : "", ':');
	unsigned long uid;
	char *end;
	int i;

	if (!p || !peer || peer->sa_family != family)
		return 0;
	if (family == AF_INET) {
		const struct sockaddr_in *s = (const void *)peer;

		want[0] = s->sin_addr.s_addr;
		want_port = ntohs(s->sin_port);
	} else if (family == AF_INET6) {
		const struct sockaddr_in6 *s = (const void *)peer;

		memcpy(want, &s->sin6_addr, sizeof(s->sin6_addr));
		want_port = ntohs(s->sin6_port);
	} else {
		return 0;
	}
	p++; /* after "sl:" */
	if (!endpoint(&p, n, laddr, &lport) || !endpoint(&p, n, raddr, &rport))
		return 0;
	if (lport != want_port || rport != server_port ||
	    memcmp(laddr, want, n * sizeof(uint32_t)))
		return 0;
	/* st tx_queue:rx_queue tr:tm->when retrnsmt uid */
	for (i = 0; i < 4; i++) {
		while (*p == ' ')
			p++;
		while (*p && *p != ' ')
			p++;
	}
	uid = strtoul(p, &end, 10);
	if (end == p || uid > (uid_t)-1)
		return 0;
	*ret_uid = (uid_t)uid;
	return 1;
}

int netpeer_uid(const struct sockaddr *peer, unsigned server_port,
		uid_t *ret_uid)
{
	const char *path;
	char line[NETPEER_LINE_MAX];
	int family, found = 0;
	FILE *f;

	if (!peer ||
	    (peer->sa_family != AF_INET && peer->sa_family != AF_INET6)) {
		errno = EAFNOSUPPORT;
		return -1;
	}
	family = peer->sa_family;
	path = family == AF_INET6 ? "/proc/net/tcp6" : "/proc/net/tcp";
	f = fopen(path, "re");
	if (!f)
		return -1;
	while (!found && fgets(line, sizeof(line), f))
		found = netpeer_match_line(line, family, peer, server_port,
					   ret_uid);
	fclose(f);
	return found;
}
