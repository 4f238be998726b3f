/* conf_values.c - the checks and parsers of single values that iostage.conf
 * is made of, and that other modules use too: names (nodes, hosts, users,
 * groups, tiers, licenses), sizes, durations, listen addresses, the enums'
 * names. Pure functions of their arguments; nothing here knows a key.
 * (The key-aware parsers over them are conf_parse.c's.)
 */
#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>

#include "common/config/conf.h"
#include "common/config/conf_parse.h"

#define CONF_ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

/* ---- names ---------------------------------------------------------- */

bool conf_is_off(const char *val)
{
	return strcasecmp(val, "no") == 0 || strcasecmp(val, "off") == 0;
}

bool conf_is_node_name(const char *s)
{
	size_t n;

	if (!s)
		return false;
	n = strlen(s);
	if (n == 0 || n >= CONF_NODE_MAX || s[0] == '.')
		return false;
	for (size_t i = 0; i < n; i++)
		if (!isalnum((unsigned char)s[i]) && s[i] != '_' &&
		    s[i] != '-' && s[i] != '.')
			return false;
	return true;
}

bool conf_is_host(const char *s)
{
	unsigned char buf[16];
	size_t n;

	if (!s)
		return false;
	n = strlen(s);
	if (n == 0 || n >= CONF_HOST_MAX)
		return false;
	if (inet_pton(AF_INET, s, buf) == 1 || inet_pton(AF_INET6, s, buf) == 1)
		return true;
	/* RFC 1123 labels: letters, digits, '-' inside, '.' between. */
	if (s[0] == '.' || s[0] == '-' || s[n - 1] == '-' || strstr(s, ".."))
		return false;
	for (size_t i = 0; i < n; i++)
		if (!isalnum((unsigned char)s[i]) && s[i] != '-' &&
		    s[i] != '.' && s[i] != '_')
			return false;
	return true;
}

bool conf_is_group_name(const char *s)
{
	size_t n;

	if (!s)
		return false;
	n = strlen(s);
	if (n == 0 || n >= CONF_GROUP_MAX || s[0] == '-' || s[0] == '.')
		return false;
	for (size_t i = 0; i < n; i++)
		if (!isalnum((unsigned char)s[i]) && s[i] != '_' &&
		    s[i] != '-' && s[i] != '.')
			return false;
	return true;
}

bool conf_is_user_name(const char *s)
{
	size_t i;

	if (!s || !((s[0] >= 'a' && s[0] <= 'z') || s[0] == '_'))
		return false;
	for (i = 1; s[i]; i++)
		if (!((s[i] >= 'a' && s[i] <= 'z') ||
		      (s[i] >= '0' && s[i] <= '9') || s[i] == '_' ||
		      s[i] == '.' || s[i] == '-'))
			return false;
	return i < CONF_USER_MAX;
}

bool conf_is_tier_name(const char *s)
{
	size_t n = strlen(s);

	if (n == 0 || n >= CONF_NAME_MAX)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!((s[i] >= 'a' && s[i] <= 'z') ||
		      (s[i] >= '0' && s[i] <= '9') || s[i] == '_' ||
		      s[i] == '-'))
			return false;
	return true;
}

/* The characters that -L separates on (',', ':', '@', '|') are never in
 * one. */
bool conf_is_license_name(const char *s)
{
	size_t i;

	for (i = 0; s[i]; i++)
		if (!isalnum((unsigned char)s[i]) && s[i] != '_' && s[i] != '-')
			return false;
	return i > 0 && i < CONF_NAME_MAX;
}

bool conf_is_listen_addr(const char *s)
{
	unsigned char buf[16];

	return strcmp(s, "*") == 0 || inet_pton(AF_INET, s, buf) == 1 ||
	       inet_pton(AF_INET6, s, buf) == 1;
}

const char *conf_medium_name(enum tier_medium medium)
{
	if ((unsigned)medium >= conf_nmedia)
		return "unknown";
	return conf_media[medium];
}

const char *conf_policy_name(enum stage_failure_policy policy)
{
	if ((unsigned)policy >= conf_npolicies)
		return "unknown";
	return conf_policies[policy];
}

int conf_parse_policy(const char *s, enum stage_failure_policy *ret)
{
	if (s && ret) {
		for (size_t i = 0; i < conf_npolicies; i++) {
			if (strcmp(s, conf_policies[i]) == 0) {
				*ret = (enum stage_failure_policy)i;
				return 0;
			}
		}
	}
	errno = EINVAL;
	return -1;
}

/* ---- numbers ---------------------------------------------------------- */

int conf_parse_size(const char *s, uint64_t *ret)
{
	uint64_t v = 0;
	unsigned shift = 0;
	static const char units[] = "KMGTP"; /* powers of 1024 */
	const char *p = s, *unit;

	if (!s || !ret || !isdigit((unsigned char)*s)) {
		errno = EINVAL;
		return -1;
	}
	for (; isdigit((unsigned char)*p); p++) {
		unsigned d = (unsigned)(*p - '0');

		if (v > (UINT64_MAX - d) / 10) {
			/* Still insist the rest is well formed: "9...9Q" is
			 * EINVAL, not ERANGE. */
			while (isdigit((unsigned char)*p))
				p++;
			v = UINT64_MAX;
			shift = 64;
			break;
		}
		v = v * 10 + d;
	}
	unit = strchr(units, toupper((unsigned char)*p));
	if (*p && unit) {
		shift += 10 * (unsigned)(unit - units + 1);
		p++;
		if (toupper((unsigned char)*p) == 'I' &&
		    toupper((unsigned char)p[1]) == 'B')
			p++;
	}
	if (toupper((unsigned char)*p) == 'B')
		p++;
	if (*p) {
		errno = EINVAL;
		return -1;
	}
	if (shift >= 64 || (shift > 0 && v > (UINT64_MAX >> shift))) {
		errno = ERANGE;
		return -1;
	}
	*ret = v << shift;
	return 0;
}

const struct conf_duration_unit conf_duration_units[] = { { 's', 1 },
							  { 'm', 60 },
							  { 'h', 3600 },
							  { 'd', 86400 },
							  { 'w', 7 * 86400 } };
const size_t conf_nduration_units = CONF_ARRAY_LEN(conf_duration_units);

int conf_parse_duration(const char *s, unsigned *ret)
{
	unsigned long long v = 0, mult = 1;
	const char *p = s;

	if (!s || !ret || !isdigit((unsigned char)*s)) {
		errno = EINVAL;
		return -1;
	}
	for (; isdigit((unsigned char)*p); p++) {
		if (v > UINT_MAX) {
			errno = ERANGE;
			return -1;
		}
		v = v * 10 + (unsigned)(*p - '0');
	}
	if (*p) {
		size_t i;

		for (i = 0; i < conf_nduration_units; i++)
			if (tolower((unsigned char)*p) ==
			    conf_duration_units[i].suffix)
				break;
		if (i == conf_nduration_units || p[1]) {
			errno = EINVAL;
			return -1;
		}
		mult = conf_duration_units[i].seconds;
	}
	if (v > UINT_MAX || v * mult > UINT_MAX) {
		errno = ERANGE;
		return -1;
	}
	*ret = (unsigned)(v * mult);
	return 0;
}

int conf_parse_listen(const char *s, char *ret_addr, size_t addrlen,
		      unsigned *ret_port)
{
	char addr[CONF_LISTEN_MAX], buf[sizeof(struct in6_addr)];
	const char *colon, *p;
	unsigned long port = 0;
	size_t n;
	int af = AF_INET;

	if (!s || !ret_addr || !ret_port || strlen(s) >= CONF_LISTEN_MAX)
		goto bad;
	if (s[0] == '[') {
		const char *close = strchr(s, ']');

		if (!close || close[1] != ':')
			goto bad;
		n = (size_t)(close - s - 1);
		colon = close + 1;
		memcpy(addr, s + 1, n);
		af = AF_INET6;
	} else {
		colon = strrchr(s, ':');
		if (!colon)
			goto bad;
		n = (size_t)(colon - s);
		memcpy(addr, s, n);
	}
	addr[n] = '\0';
	if (inet_pton(af, addr, buf) != 1 || !colon[1])
		goto bad;
	for (p = colon + 1; *p; p++) {
		if (!isdigit((unsigned char)*p) || port > 65535)
			goto bad;
		port = port * 10 + (unsigned long)(*p - '0');
	}
	if (port == 0 || port > 65535 || n >= addrlen)
		goto bad;
	memcpy(ret_addr, addr, n + 1);
	*ret_port = (unsigned)port;
	return 0;
bad:
	errno = EINVAL;
	return -1;
}
