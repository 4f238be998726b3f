/* conf_keys.h - the keys of iostage.conf as a table, one row per key.
 *
 * A row says everything about a key: its name, the type of its value
 * (which parser reads it and which formatter writes it back), the field of
 * struct conf it fills (offsetof), its default as the file would say it,
 * its bounds, who reads it and one line of help. The parser (conf.c), the
 * defaults (conf_set_defaults), `--check-config -v` (conf_dump) and the
 * key summary of iostage.conf(5) (conf_man.c, `make man`) all walk it, so
 * a new key is one row here plus the code that uses its field.
 *
 * For the conf*.c files, the unit tests and the man page generator; the
 * programs use conf.h.
 */
#ifndef IOSTAGE_CONF_KEYS_H
#define IOSTAGE_CONF_KEYS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "common/config/conf.h"

#define CONF_KEYS_MAX 64 /* rows in conf_keys[], checked at compile time */

/* The type of a key's value: how it is parsed and written back. */
enum conf_type {
	CONF_T_BOOL = 0, /* yes | no, any case -> bool */
	CONF_T_UINT,     /* decimal digits, min..max -> unsigned */
	CONF_T_DURATION, /* N[s|m|h|d|w], min..max seconds -> unsigned */
	CONF_T_MSEC, /* seconds, decimals allowed, min..max ms -> unsigned */
	CONF_T_SIZE, /* N[K|M|G|T|P][iB] (powers of 1024) -> uint64_t */
	CONF_T_BANDWIDTH, /* a size with an optional "/s" -> uint64_t */
	CONF_T_PATH,      /* absolute, normalized, fits the field -> char[] */
	CONF_T_LISTEN,    /* IPv4:PORT or [IPv6]:PORT -> char[] */
	CONF_T_NAME,      /* a word the row's predicate accepts -> char[] */
	CONF_T_ENUM,      /* one of the row's names, any case -> an enum */
	CONF_T_SPECIAL,   /* the row's own parse and format functions */
	CONF_T_LINE,      /* starts a line of its own kind (Tier=) */
	CONF_T_COUNT,
};

/* Row flags. */
enum conf_key_flag {
	/* "no" or "off" turns the feature off: the field's zero ("", 0). */
	CONF_F_OFF = 1U << 0,
	/* A value longer than the field is refused as such ("longer than N
	 * bytes") before any other check. */
	CONF_F_FITS = 1U << 1,
};

struct conf_parser; /* conf_parse.h */
struct conf_key;

/* After the type's parser took VAL into the field at BASE + offset: a
 * rule of this key alone. 0, or -1 with the message (conf_fail). */
typedef int conf_check_fn(struct conf_parser *cp, const struct conf_key *k,
			  const char *val, const void *base);
/* CONF_T_SPECIAL: parse VAL into BASE (a struct conf); 0 or -1 (conf_fail). */
typedef int conf_parse_fn(struct conf_parser *cp, const struct conf_key *k,
			  const char *val, void *base);
/* CONF_T_SPECIAL: the value at BASE as the file would say it, "" if none. */
typedef void conf_format_fn(const struct conf_key *k, const void *base,
			    char *buf, size_t buflen);
/* CONF_T_LINE: a whole line whose first pair is this key (TOKS[0]). */
typedef int conf_line_fn(struct conf_parser *cp, char **toks, size_t ntoks);
/* CONF_T_LINE: the lines of CONF for conf_dump. 0, or -1 with errno. */
typedef int conf_dump_fn(const struct conf *conf, FILE *f);

struct conf_key {
	const char *name; /* as iostage.conf and the man page spell it */
	enum conf_type type;
	unsigned scope;              /* enum conf_scope bits: who reads it */
	size_t offset, size;         /* the field in its struct (CONF_FIELD) */
	const char *def;             /* the default as the file would say it,
				      * parsed by conf_set_defaults; NULL: the
				      * field's zero, which the file cannot say */
	const char *def_doc;         /* the default for the man page when def is
				      * NULL or built in ("the first Tier") */
	unsigned long long min, max; /* UINT, DURATION (s), MSEC (ms) */
	const char *unit;            /* UINT: "seconds", "percent", ... */
	unsigned flags;              /* enum conf_key_flag */
	const char *help;            /* one line for the man page */
	const char *values;          /* the values taken, whole, for the man
				      * page, when the type's words do not
				      * say it (NAME, SPECIAL, extra rules) */
	/* CONF_T_NAME: the predicate and the refusal ("%s": the value,
	 * after "key 'K': "). */
	bool (*valid)(const char *s);
	const char *bad;
	/* CONF_T_ENUM: the names, in the enum's order; the noun of the
	 * refusal ("unknown medium 'x' (known: ...)"). */
	const char *const *names;
	size_t nnames;
	const char *noun;
	/* Characters refused anywhere in the value, and why ("holds ':'"). */
	const char *forbid, *forbid_why;
	conf_check_fn *check;
	conf_parse_fn *parse;       /* CONF_T_SPECIAL */
	conf_format_fn *format;     /* CONF_T_SPECIAL */
	conf_line_fn *line;         /* CONF_T_LINE */
	conf_dump_fn *dump;         /* CONF_T_LINE */
	void (*def_fn)(void *base); /* a default computed at run time */
};

/* .offset and .size of a member of struct S. */
#define CONF_FIELD_OF(S, m)                                                    \
	.offset = offsetof(struct S, m), .size = sizeof(((struct S *)0)->m)
#define CONF_FIELD(m) CONF_FIELD_OF(conf, m)

/* The global keys (and the Tier line's own row), in the man page's order. */
extern const struct conf_key conf_keys[];
extern const size_t conf_nkeys;

/* The attributes of a Tier line after Tier=NAME: fields of struct
 * conf_tier (conf_tiers.c). */
extern const struct conf_key conf_tier_attrs[];
extern const size_t conf_ntier_attrs;

/* The row of TABLE (N rows) named NAME, any case, or NULL. */
const struct conf_key *conf_key_find(const struct conf_key *table, size_t n,
				     const char *name);

/* The value of K's field at BASE as the file would say it (e.g. "90d",
 * "800G", "no"), or "" when it has none ("#Key=" in a dump). */
void conf_key_format(const struct conf_key *k, const void *base, char *buf,
		     size_t buflen);

/* What K takes, in words for the man page ("1..86400 seconds", "yes or
 * no", "an absolute path, or no"). */
void conf_key_values(const struct conf_key *k, char *buf, size_t buflen);

/* "node, service, user" for the bits of SCOPE. */
void conf_scope_names(unsigned scope, char *buf, size_t buflen);

/* Marks around the generated part of iostage.conf(5). */
#define CONF_MAN_BEGIN ".\\\" BEGIN KEY SUMMARY"
#define CONF_MAN_END ".\\\" END KEY SUMMARY"

/* Write the key summary of iostage.conf(5) (roff, marks included) to F.
 * 0, or -1 with errno. */
int conf_man_write(FILE *f);

/* PAGE (the man page's text) with its part between the marks replaced by
 * conf_man_write's: *RET_PAGE (the caller frees). Equal to PAGE when the
 * page is up to date. 0, or -1 with errno (EINVAL: the marks are missing
 * or out of order). */
int conf_man_splice(const char *page, char **ret_page);

#endif /* IOSTAGE_CONF_KEYS_H */
