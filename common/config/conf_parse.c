/* conf_parse.c - the values of iostage.conf: one parser, one formatter and
 * one description per type of value (enum conf_type), over the checks of
 * conf_values.c.
 *
 * A row of the key table (conf_keys.c) names its type; conf_key_set takes
 * a value for it in a fixed order: "no"/"off" when the row allows it, the
 * length and the forbidden characters, the type's parser, then the row's
 * own check. The messages are the ones users and tests have always seen:
 * "key 'K': ..." after the "FILE:LINE: " of conf_fail.
 */
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/config/conf.h"
#include "common/config/conf_keys.h"
#include "common/config/conf_parse.h"
#include "common/config/pathsafe.h"

#define CONF_ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))
#define CONF_BANDWIDTH_MAX 64 /* bytes of a bandwidth value */

int conf_fail(struct conf_parser *cp, const char *fmt, ...)
{
	va_list ap;
	int n = 0;

	if (cp->err && cp->errlen > 0) {
		if (cp->line > 0)
			n = snprintf(cp->err, cp->errlen, "%s:%u: ", cp->origin,
				     cp->line);
		else
			n = snprintf(cp->err, cp->errlen, "%s: ", cp->origin);
		if (n >= 0 && (size_t)n < cp->errlen) {
			va_start(ap, fmt);
			vsnprintf(cp->err + n, cp->errlen - (size_t)n, fmt, ap);
			va_end(ap);
		}
	}
	errno = EINVAL;
	return -1;
}

const char *conf_show(const char *s, char *buf, size_t buflen)
{
	size_t i;

	for (i = 0; s[i] && i + 1 < buflen; i++) {
		if (i >= CONF_SHOW_MAX && buflen > i + 4) {
			memcpy(buf + i, "...", 4);
			return buf;
		}
		buf[i] = ((unsigned char)s[i] < 0x20 || s[i] == 0x7f) ? '?'
								      : s[i];
	}
	buf[i] = '\0';
	return buf;
}

int conf_split(struct conf_parser *cp, char *tok, char **ret_val)
{
	char show[CONF_SHOW_BUF];
	char *eq = strchr(tok, '=');

	if (!eq)
		return conf_fail(cp, "key '%s': expected Key=Value",
				 conf_show(tok, show, sizeof(show)));
	*eq = '\0';
	if (!*tok)
		return conf_fail(cp, "key '': expected Key=Value");
	if (!eq[1])
		return conf_fail(cp, "key '%s': empty value",
				 conf_show(tok, show, sizeof(show)));
	*ret_val = eq + 1;
	return 0;
}

/* ---- writing values back ---------------------------------------------- */

/* Seconds in the largest unit that says them exactly: 7776000 -> "90d",
 * 90 -> "90", 0 -> "0". */
static void format_duration(unsigned long long s, char *buf, size_t buflen)
{
	for (size_t i = conf_nduration_units; i-- > 1;) {
		unsigned u = conf_duration_units[i].seconds;

		if (s > 0 && s % u == 0) {
			snprintf(buf, buflen, "%llu%c", s / u,
				 conf_duration_units[i].suffix);
			return;
		}
	}
	snprintf(buf, buflen, "%llu", s);
}

/* Bytes in the largest power of 1024 that says them exactly: "800G". */
static void format_size(uint64_t v, char *buf, size_t buflen)
{
	static const char units[] = "KMGTP";

	for (size_t i = sizeof(units) - 1; i-- > 0;) {
		unsigned shift = 10 * (unsigned)(i + 1);

		if (v > 0 && (v & ((1ULL << shift) - 1)) == 0) {
			snprintf(buf, buflen, "%llu%c",
				 (unsigned long long)(v >> shift), units[i]);
			return;
		}
	}
	snprintf(buf, buflen, "%llu", (unsigned long long)v);
}

/* Milliseconds as seconds: 1000 -> "1", 250 -> "0.25". */
static void format_msec(unsigned long long ms, char *buf, size_t buflen)
{
	int n;

	if (ms % 1000 == 0) {
		snprintf(buf, buflen, "%llu", ms / 1000);
		return;
	}
	n = snprintf(buf, buflen, "%llu.%03llu", ms / 1000, ms % 1000);
	while (n > 0 && (size_t)n < buflen && buf[n - 1] == '0')
		buf[--n] = '\0';
}

/* ---- the types -------------------------------------------------------- */

/* Each type: take a value into the field (0, or -1 with conf_fail), write
 * the field back as the file would say it, describe its values. */
struct conf_type_ops {
	int (*parse)(struct conf_parser *cp, const struct conf_key *k,
		     const char *val, void *field);
	void (*format)(const struct conf_key *k, const void *field, char *buf,
		       size_t buflen);
	void (*values)(const struct conf_key *k, char *buf, size_t buflen);
	bool (*zero)(const struct conf_key *k, const void *field);
};

static bool zero_str(const struct conf_key *k, const void *field)
{
	(void)k;
	return ((const char *)field)[0] == '\0';
}

static bool zero_uint(const struct conf_key *k, const void *field)
{
	(void)k;
	return *(const unsigned *)field == 0;
}

static bool zero_u64(const struct conf_key *k, const void *field)
{
	(void)k;
	return *(const uint64_t *)field == 0;
}

static bool zero_never(const struct conf_key *k, const void *field)
{
	(void)k;
	(void)field;
	return false;
}

static int parse_bool(struct conf_parser *cp, const struct conf_key *k,
		      const char *val, void *field)
{
	char show[CONF_SHOW_BUF];

	if (strcasecmp(val, "yes") == 0)
		*(bool *)field = true;
	else if (strcasecmp(val, "no") == 0)
		*(bool *)field = false;
	else
		return conf_fail(cp, "key '%s': expected yes or no, not '%s'",
				 k->name, conf_show(val, show, sizeof(show)));
	return 0;
}

static void format_bool(const struct conf_key *k, const void *field, char *buf,
			size_t buflen)
{
	(void)k;
	snprintf(buf, buflen, "%s", *(const bool *)field ? "yes" : "no");
}

static void values_bool(const struct conf_key *k, char *buf, size_t buflen)
{
	(void)k;
	snprintf(buf, buflen, "yes or no");
}

/* Decimal digits only, min..max. */
static int parse_uint(struct conf_parser *cp, const struct conf_key *k,
		      const char *val, void *field)
{
	char show[CONF_SHOW_BUF];
	unsigned long long v = 0;
	const char *p;

	for (p = val; *p; p++) {
		if (!isdigit((unsigned char)*p))
			return conf_fail(cp, "key '%s': '%s' is not a number",
					 k->name,
					 conf_show(val, show, sizeof(show)));
		if (v <= k->max)
			v = v * 10 + (unsigned long long)(*p - '0');
	}
	if (v < k->min || v > k->max)
		return conf_fail(cp, "key '%s': %s out of range %llu..%llu",
				 k->name, conf_show(val, show, sizeof(show)),
				 k->min, k->max);
	*(unsigned *)field = (unsigned)v;
	return 0;
}

static void format_uint(const struct conf_key *k, const void *field, char *buf,
			size_t buflen)
{
	(void)k;
	snprintf(buf, buflen, "%u", *(const unsigned *)field);
}

static void values_uint(const struct conf_key *k, char *buf, size_t buflen)
{
	snprintf(buf, buflen, "%llu..%llu%s%s", k->min, k->max,
		 k->unit ? " " : "", k->unit ? k->unit : "");
}

/* N[s|m|h|d|w], then min..max seconds. The refusals of the bounds are
 * those of the keys that first had them: "must be longer than 0 seconds"
 * (no upper bound), "at most 1h, not '2h'" (no lower one), "must be 1s to
 * 3600s" (both). */
static int parse_duration(struct conf_parser *cp, const struct conf_key *k,
			  const char *val, void *field)
{
	char show[CONF_SHOW_BUF], max[32];
	unsigned v;

	if (conf_parse_duration(val, &v) < 0)
		return conf_fail(cp,
				 "key '%s': %s '%s' (want N[s|m|h|d|w], e.g. "
				 "90d)",
				 k->name,
				 errno == ERANGE ? "duration too long"
						 : "invalid duration",
				 conf_show(val, show, sizeof(show)));
	if (v >= k->min && v <= k->max) {
		*(unsigned *)field = v;
		return 0;
	}
	if (k->max >= UINT_MAX)
		return conf_fail(cp,
				 "key '%s': must be longer than %llu "
				 "seconds",
				 k->name, k->min - 1);
	if (k->min == 0) {
		format_duration(k->max, max, sizeof(max));
		return conf_fail(cp, "key '%s': at most %s, not '%s'", k->name,
				 max, conf_show(val, show, sizeof(show)));
	}
	return conf_fail(cp, "key '%s': must be %llus to %llus", k->name,
			 k->min, k->max);
}

static void format_duration_field(const struct conf_key *k, const void *field,
				  char *buf, size_t buflen)
{
	(void)k;
	format_duration(*(const unsigned *)field, buf, buflen);
}

/* A bound in words: "1s", "1h", "0". */
static void duration_bound(unsigned long long s, char *buf, size_t buflen)
{
	format_duration(s, buf, buflen);
	if (s > 0 && isdigit((unsigned char)buf[strlen(buf) - 1]))
		strncat(buf, "s", buflen - strlen(buf) - 1);
}

static void values_duration(const struct conf_key *k, char *buf, size_t buflen)
{
	char lo[32], hi[32];

	duration_bound(k->min, lo, sizeof(lo));
	duration_bound(k->max, hi, sizeof(hi));
	if (k->max >= UINT_MAX)
		snprintf(buf, buflen, "a duration N[s|m|h|d|w]%s%s",
			 k->min ? " of at least " : "", k->min ? lo : "");
	else
		snprintf(buf, buflen, "a duration N[s|m|h|d|w], %s to %s", lo,
			 hi);
}

/* Seconds with decimals (sampling below a second is useful), kept in
 * milliseconds; min and max are milliseconds. */
static int parse_msec(struct conf_parser *cp, const struct conf_key *k,
		      const char *val, void *field)
{
	char show[CONF_SHOW_BUF], lo[32], hi[32];
	char *end;
	double v = strtod(val, &end);

	if (end == val || *end ||
	    !(v >= (double)k->min / 1000 && v <= (double)k->max / 1000)) {
		format_msec(k->min, lo, sizeof(lo));
		format_msec(k->max, hi, sizeof(hi));
		return conf_fail(cp,
				 "key '%s': '%s' is not a number of seconds "
				 "from %s to %s",
				 k->name, conf_show(val, show, sizeof(show)),
				 lo, hi);
	}
	*(unsigned *)field = (unsigned)(v * 1000 + 0.5);
	return 0;
}

static void format_msec_field(const struct conf_key *k, const void *field,
			      char *buf, size_t buflen)
{
	(void)k;
	format_msec(*(const unsigned *)field, buf, buflen);
}

static void values_msec(const struct conf_key *k, char *buf, size_t buflen)
{
	char lo[32], hi[32];

	format_msec(k->min, lo, sizeof(lo));
	format_msec(k->max, hi, sizeof(hi));
	snprintf(buf, buflen, "seconds, %s to %s, decimals allowed", lo, hi);
}

static int parse_size(struct conf_parser *cp, const struct conf_key *k,
		      const char *val, void *field)
{
	char show[CONF_SHOW_BUF];

	if (conf_parse_size(val, field) < 0)
		return conf_fail(cp, "key '%s': %s '%s'", k->name,
				 errno == ERANGE ? "size too large"
						 : "invalid size",
				 conf_show(val, show, sizeof(show)));
	return 0;
}

static void format_size_field(const struct conf_key *k, const void *field,
			      char *buf, size_t buflen)
{
	(void)k;
	format_size(*(const uint64_t *)field, buf, buflen);
}

static void values_size(const struct conf_key *k, char *buf, size_t buflen)
{
	(void)k;
	snprintf(buf, buflen,
		 "bytes, or a number with K, M, G, T or P "
		 "(powers of 1024)");
}

/* A size ("400M", "1G") with an optional "/s". */
static int parse_bandwidth(struct conf_parser *cp, const struct conf_key *k,
			   const char *val, void *field)
{
	char buf[CONF_BANDWIDTH_MAX], show[CONF_SHOW_BUF];
	size_t n = strlen(val);

	if (n >= sizeof(buf))
		return conf_fail(cp, "key '%s': '%s' is too long", k->name,
				 conf_show(val, show, sizeof(show)));
	memcpy(buf, val, n + 1);
	if (n > 2 && !strcmp(buf + n - 2, "/s"))
		buf[n - 2] = '\0';
	if (conf_parse_size(buf, field) < 0)
		return conf_fail(cp,
				 "key '%s': '%s' is not a bandwidth (bytes per "
				 "second, e.g. 400M or 1G/s)",
				 k->name, conf_show(val, show, sizeof(show)));
	return 0;
}

static void format_bandwidth(const struct conf_key *k, const void *field,
			     char *buf, size_t buflen)
{
	uint64_t v = *(const uint64_t *)field;

	(void)k;
	format_size(v, buf, buflen);
	if (v)
		strncat(buf, "/s", buflen - strlen(buf) - 1);
}

static void values_bandwidth(const struct conf_key *k, char *buf, size_t buflen)
{
	(void)k;
	snprintf(buf, buflen,
		 "bytes per second: a size (K, M, G, T, P: "
		 "powers of 1024), /s optional");
}

static int parse_path(struct conf_parser *cp, const struct conf_key *k,
		      const char *val, void *field)
{
	char reason[128], show[CONF_SHOW_BUF];

	if (pathsafe_normalize(val, field, k->size, reason, sizeof(reason)) < 0)
		return conf_fail(cp, "key '%s': %s: %s", k->name,
				 conf_show(val, show, sizeof(show)), reason);
	return 0;
}

static void format_str(const struct conf_key *k, const void *field, char *buf,
		       size_t buflen)
{
	(void)k;
	snprintf(buf, buflen, "%s", (const char *)field);
}

static void values_path(const struct conf_key *k, char *buf, size_t buflen)
{
	snprintf(buf, buflen, "an absolute path (at most %zu bytes)",
		 k->size - 1);
}

/* An HTTP listen address "ADDR:PORT", kept as written. */
static int parse_listen(struct conf_parser *cp, const struct conf_key *k,
			const char *val, void *field)
{
	char show[CONF_SHOW_BUF], addr[CONF_LISTEN_MAX];
	unsigned port;

	if (conf_parse_listen(val, addr, sizeof(addr), &port) < 0 ||
	    strlen(val) >= k->size)
		return conf_fail(cp,
				 "key '%s': '%s' is not ADDR:PORT (an IP "
				 "address such as 127.0.0.1:9464 or "
				 "[::1]:9464, port 1..65535) or 'no'",
				 k->name, conf_show(val, show, sizeof(show)));
	snprintf(field, k->size, "%s", val);
	return 0;
}

static void values_listen(const struct conf_key *k, char *buf, size_t buflen)
{
	(void)k;
	snprintf(buf, buflen, "IPv4:PORT or [IPv6]:PORT");
}

/* A word the row's predicate accepts, kept as written. */
static int parse_name(struct conf_parser *cp, const struct conf_key *k,
		      const char *val, void *field)
{
	char show[CONF_SHOW_BUF], why[CONF_ERR_MAX];

	if (!k->valid(val) || strlen(val) >= k->size) {
		snprintf(why, sizeof(why), k->bad,
			 conf_show(val, show, sizeof(show)));
		return conf_fail(cp, "key '%s': %s", k->name, why);
	}
	snprintf(field, k->size, "%s", val);
	return 0;
}

static void values_row(const struct conf_key *k, char *buf, size_t buflen)
{
	snprintf(buf, buflen, "%s", k->values ? k->values : "");
}

/* "a, b, c" (SEP ", ") or "a or b" of K's names. */
static void join_names(const struct conf_key *k, const char *sep,
		       const char *last, char *buf, size_t buflen)
{
	size_t off = 0;

	buf[0] = '\0';
	for (size_t i = 0; i < k->nnames && off < buflen; i++) {
		int n = snprintf(buf + off, buflen - off, "%s%s",
				 i == 0               ? ""
				 : i + 1 == k->nnames ? last
						      : sep,
				 k->names[i]);

		if (n < 0)
			return;
		off += (size_t)n;
	}
}

static int parse_enum(struct conf_parser *cp, const struct conf_key *k,
		      const char *val, void *field)
{
	char show[CONF_SHOW_BUF], known[256];

	for (size_t i = 0; i < k->nnames; i++) {
		if (strcasecmp(val, k->names[i]) == 0) {
			*(unsigned *)field = (unsigned)i;
			return 0;
		}
	}
	join_names(k, ", ", ", ", known, sizeof(known));
	return conf_fail(cp, "key '%s': unknown %s '%s' (known: %s)", k->name,
			 k->noun, conf_show(val, show, sizeof(show)), known);
}

static void format_enum(const struct conf_key *k, const void *field, char *buf,
			size_t buflen)
{
	unsigned v = *(const unsigned *)field;

	snprintf(buf, buflen, "%s", v < k->nnames ? k->names[v] : "");
}

static void values_enum(const struct conf_key *k, char *buf, size_t buflen)
{
	join_names(k, ", ", " or ", buf, buflen);
}

/* CONF_T_SPECIAL: the row's own functions, with the whole struct. */
static int parse_special(struct conf_parser *cp, const struct conf_key *k,
			 const char *val, void *field)
{
	return k->parse(cp, k, val, (char *)field - k->offset);
}

static void format_special(const struct conf_key *k, const void *field,
			   char *buf, size_t buflen)
{
	k->format(k, (const char *)field - k->offset, buf, buflen);
}

/* CONF_T_LINE: never a value of its own (conf.c gives it the line). */
static int parse_line(struct conf_parser *cp, const struct conf_key *k,
		      const char *val, void *field)
{
	(void)val;
	(void)field;
	return conf_fail(cp, "key '%s': must start its line", k->name);
}

static void format_none(const struct conf_key *k, const void *field, char *buf,
			size_t buflen)
{
	(void)k;
	(void)field;
	if (buflen)
		buf[0] = '\0';
}

static const struct conf_type_ops conf_types[CONF_T_COUNT] = {
	[CONF_T_BOOL] = { parse_bool, format_bool, values_bool, zero_never },
	[CONF_T_UINT] = { parse_uint, format_uint, values_uint, zero_uint },
	[CONF_T_DURATION] = { parse_duration, format_duration_field,
			      values_duration, zero_uint },
	[CONF_T_MSEC] = { parse_msec, format_msec_field, values_msec,
			  zero_uint },
	[CONF_T_SIZE] = { parse_size, format_size_field, values_size,
			  zero_u64 },
	[CONF_T_BANDWIDTH] = { parse_bandwidth, format_bandwidth,
			       values_bandwidth, zero_u64 },
	[CONF_T_PATH] = { parse_path, format_str, values_path, zero_str },
	[CONF_T_LISTEN] = { parse_listen, format_str, values_listen, zero_str },
	[CONF_T_NAME] = { parse_name, format_str, values_row, zero_str },
	[CONF_T_ENUM] = { parse_enum, format_enum, values_enum, zero_never },
	[CONF_T_SPECIAL] = { parse_special, format_special, values_row,
			     zero_never },
	[CONF_T_LINE] = { parse_line, format_none, values_row, zero_never },
};

int conf_key_set(struct conf_parser *cp, const struct conf_key *k,
		 const char *val, void *base)
{
	char show[CONF_SHOW_BUF];
	void *field = (char *)base + k->offset;

	if ((k->flags & CONF_F_OFF) && conf_is_off(val)) {
		memset(field, 0, k->size);
	} else {
		if ((k->flags & CONF_F_FITS) && strlen(val) >= k->size)
			return conf_fail(cp, "key '%s': longer than %zu bytes",
					 k->name, k->size - 1);
		if (k->forbid && strpbrk(val, k->forbid))
			return conf_fail(cp, "key '%s': '%s' %s", k->name,
					 conf_show(val, show, sizeof(show)),
					 k->forbid_why);
		if (conf_types[k->type].parse(cp, k, val, field) < 0)
			return -1;
	}
	return k->check ? k->check(cp, k, val, base) : 0;
}

void conf_key_format(const struct conf_key *k, const void *base, char *buf,
		     size_t buflen)
{
	const void *field = (const char *)base + k->offset;

	if (!buflen)
		return;
	if (k->type != CONF_T_SPECIAL && k->type != CONF_T_LINE &&
	    conf_types[k->type].zero(k, field) &&
	    (!k->def || (k->flags & CONF_F_OFF))) {
		/* A zero the file cannot say is no value; one it says
		 * with "no" is that. */
		snprintf(buf, buflen, "%s", k->def ? "no" : "");
		return;
	}
	conf_types[k->type].format(k, field, buf, buflen);
}

void conf_key_values(const struct conf_key *k, char *buf, size_t buflen)
{
	size_t n;

	if (!buflen)
		return;
	/* A row's own words are whole; the type's say "no" is taken. */
	if (k->values) {
		snprintf(buf, buflen, "%s", k->values);
		return;
	}
	conf_types[k->type].values(k, buf, buflen);
	n = strlen(buf);
	if (k->flags & CONF_F_OFF)
		snprintf(buf + n, buflen - n, ", or no");
}

void conf_keys_default(const struct conf_key *table, size_t n, void *base)
{
	struct conf_parser cp;

	memset(&cp, 0, sizeof(cp));
	cp.origin = "(defaults)";
	for (size_t i = 0; i < n; i++) {
		const struct conf_key *k = &table[i];

		/* A default that does not parse leaves the field zero;
		 * check_conf's test_defaults_parse says which. */
		if (k->def && k->type != CONF_T_LINE)
			(void)conf_key_set(&cp, k, k->def, base);
		if (k->def_fn)
			k->def_fn(base);
	}
}

void conf_scope_names(unsigned scope, char *buf, size_t buflen)
{
	static const char *const names[] = { "node", "service", "user" };
	size_t off = 0;

	if (!buflen)
		return;
	buf[0] = '\0';
	for (size_t i = 0; i < CONF_ARRAY_LEN(names); i++) {
		int n;

		if (!(scope & (1U << i)) || off >= buflen)
			continue;
		n = snprintf(buf + off, buflen - off, "%s%s", off ? ", " : "",
			     names[i]);
		if (n < 0)
			return;
		off += (size_t)n;
	}
}
