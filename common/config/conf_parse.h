/* conf_parse.h - the parser's state and the value parsers of iostage.conf,
 * shared by the conf*.c files (not the programs: they use conf.h).
 *
 * Every refusal goes through conf_fail, so each is one line starting with
 * "ORIGIN:LINE: "; every token a user wrote goes through conf_show before
 * it is quoted, so a message never carries a control character or more
 * than CONF_SHOW_MAX bytes of it.
 */
#ifndef IOSTAGE_CONF_PARSE_H
#define IOSTAGE_CONF_PARSE_H

#include <stdbool.h>
#include <stddef.h>

#include "common/config/conf.h"
#include "common/config/conf_keys.h"

#define CONF_SHOW_MAX 64 /* bytes of a user's token quoted in messages */
#define CONF_SHOW_BUF (CONF_SHOW_MAX + 8)

struct conf_parser {
	const char *origin; /* the file's name in messages */
	unsigned line;      /* 0: after the last line */
	char *err;          /* the message, may be NULL */
	size_t errlen;
	struct conf *conf;                /* the private copy being filled */
	unsigned key_line[CONF_KEYS_MAX]; /* 0 = not set by the file */
	unsigned tier_line[CONF_MAX_TIERS];
	char default_tier[CONF_NAME_MAX]; /* DefaultTier, resolved at the end */
};

/* "ORIGIN:LINE: " (or "ORIGIN: " after the last line) and the formatted
 * rest into cp->err; errno = EINVAL; returns -1. */
int conf_fail(struct conf_parser *cp, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* S made safe to quote on one line in BUF (CONF_SHOW_BUF bytes): control
 * characters become '?', a long token is cut with "...". Returns BUF. */
const char *conf_show(const char *s, char *buf, size_t buflen);

/* The medium, failure policy and NodeFill names, in their enums' order
 * (conf_keys.c). */
extern const char *const conf_media[];
extern const size_t conf_nmedia;
extern const char *const conf_policies[];
extern const size_t conf_npolicies;
extern const char *const conf_node_fills[];

/* The units of a duration, smallest first (conf_values.c). */
struct conf_duration_unit {
	char suffix;
	unsigned seconds;
};
extern const struct conf_duration_unit conf_duration_units[];
extern const size_t conf_nduration_units;

/* Split the token "Key=Value" in place: *RET_VAL is the value. 0, or -1
 * with the message ("expected Key=Value", "empty value"). */
int conf_split(struct conf_parser *cp, char *tok, char **ret_val);

/* Is VAL "no" or "off" (any case)? */
bool conf_is_off(const char *val);

/* [a-z0-9_-]{1,31}: a Tier's name. */
bool conf_is_tier_name(const char *s);

/* [A-Za-z0-9_-]{1,31}: a Slurm license name (slurm.conf Licenses=). */
bool conf_is_license_name(const char *s);

/* An IP address or "*": where PeerListen listens. */
bool conf_is_listen_addr(const char *s);

/* Take VAL for row K into its field at BASE + K->offset (a struct conf, or
 * a struct conf_tier for the Tier attributes): "no"/"off" for CONF_F_OFF,
 * the forbidden characters, the type's parser, then the row's check. 0, or
 * -1 with the message; the field may be half written then (the caller's
 * copy is private and thrown away). */
int conf_key_set(struct conf_parser *cp, const struct conf_key *k,
		 const char *val, void *base);

/* Set every row of TABLE (N rows) with a default to it in BASE (zeroed by
 * the caller): def parsed as the file's value would be, def_fn run. */
void conf_keys_default(const struct conf_key *table, size_t n, void *base);

#endif /* IOSTAGE_CONF_PARSE_H */
