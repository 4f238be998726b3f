/* conf.c - read the site configuration, /etc/slurm/iostage.conf.
 *
 * The format follows slurm.conf: whitespace-separated Key=Value pairs, keys
 * case-insensitive, '#' to end of line is a comment, values never contain
 * whitespace. A line whose first pair is a line key (Tier=NAME) is that
 * key's own (conf_tiers.c); every other line carries global settings,
 * several per line if one likes, each taken by its row of the key table
 * (conf_keys.c) with the parser of its type (conf_parse.c).
 *
 * The parser fills a private copy and hands it over only when the whole file
 * was good, so a failed reload leaves the running configuration alone.
 * Cross-key rules (DefaultTier names a tier, low < high watermark) are
 * checked after the last line, because the keys may come in any order.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/base/smallfile.h"
#include "common/config/conf.h"
#include "common/config/conf_keys.h"
#include "common/config/conf_parse.h"

#define CONF_FILE_MAX (1024 * 1024)
#define CONF_LINE_TOKENS 16

void conf_set_defaults(struct conf *conf)
{
	if (!conf)
		return;
	memset(conf, 0, sizeof(*conf));
	conf_keys_default(conf_keys, conf_nkeys, conf);
}

/* The row of the global key NAME and its index, or -1. */
static int conf_key_index(const char *name)
{
	const struct conf_key *k = conf_key_find(conf_keys, conf_nkeys, name);

	return k ? (int)(k - conf_keys) : -1;
}

/* The line key whose line TOK ("Tier=nvme", "tier") starts, or NULL. */
static const struct conf_key *conf_line_key(const char *tok)
{
	for (size_t i = 0; i < conf_nkeys; i++) {
		const struct conf_key *k = &conf_keys[i];
		size_t n = strlen(k->name);

		if (k->type == CONF_T_LINE &&
		    strncasecmp(tok, k->name, n) == 0 &&
		    (tok[n] == '=' || tok[n] == '\0'))
			return k;
	}
	return NULL;
}

/* One Key=Value of a line of global settings. */
static int conf_global(struct conf_parser *cp, char *tok)
{
	char show[CONF_SHOW_BUF];
	const struct conf_key *k;
	char *val;
	size_t idx;

	if (conf_split(cp, tok, &val) < 0)
		return -1;
	k = conf_key_find(conf_keys, conf_nkeys, tok);
	if (!k) {
		k = conf_key_find(conf_tier_attrs, conf_ntier_attrs, tok);
		if (k)
			return conf_fail(cp,
					 "key '%s': only valid on a Tier line",
					 k->name);
		return conf_fail(cp, "unknown key '%s'",
				 conf_show(tok, show, sizeof(show)));
	}
	if (k->type == CONF_T_LINE)
		return conf_fail(cp, "key '%s': must start its line", k->name);
	idx = (size_t)(k - conf_keys);
	if (cp->key_line[idx])
		return conf_fail(cp,
				 "key '%s': duplicate (first set on line %u)",
				 k->name, cp->key_line[idx]);
	cp->key_line[idx] = cp->line;
	return conf_key_set(cp, k, val, cp->conf);
}

static int conf_line(struct conf_parser *cp, char *line)
{
	char *toks[CONF_LINE_TOKENS];
	size_t ntoks = 0;
	char *save = NULL, *tok, *hash;
	const struct conf_key *k;

	hash = strchr(line, '#');
	if (hash)
		*hash = '\0';
	for (tok = strtok_r(line, " \t\r\v\f", &save); tok;
	     tok = strtok_r(NULL, " \t\r\v\f", &save)) {
		if (ntoks == CONF_LINE_TOKENS)
			return conf_fail(cp,
					 "more than %d Key=Value pairs on "
					 "one line",
					 CONF_LINE_TOKENS);
		toks[ntoks++] = tok;
	}
	if (ntoks == 0)
		return 0;

	/* The first pair decides what kind of line this is. */
	k = conf_line_key(toks[0]);
	if (k)
		return k->line(cp, toks, ntoks);
	for (size_t i = 0; i < ntoks; i++)
		if (conf_global(cp, toks[i]) < 0)
			return -1;
	return 0;
}

/* Rules that span keys, checked once every line has been read. */
static int conf_finish(struct conf_parser *cp)
{
	struct conf *c = cp->conf;
	char names[CONF_ERR_MAX];
	unsigned def_line = cp->key_line[conf_key_index("DefaultTier")];
	unsigned low_line = cp->key_line[conf_key_index("CacheLowWatermark")];
	unsigned high_line = cp->key_line[conf_key_index("CacheHighWatermark")];

	cp->line = 0;
	if (c->ntiers == 0)
		return conf_fail(cp, "key 'Tier': at least one Tier is "
				     "required");
	c->default_tier = 0;
	if (def_line) {
		const struct conf_tier *t = conf_find_tier(c, cp->default_tier);

		cp->line = def_line;
		if (!t) {
			conf_tier_names(c, names, sizeof(names));
			return conf_fail(cp,
					 "key 'DefaultTier': unknown tier '%s' "
					 "(known: %s)",
					 cp->default_tier, names);
		}
		c->default_tier = (size_t)(t - c->tiers);
	}
	if (c->cache_low_watermark >= c->cache_high_watermark) {
		if (low_line) {
			cp->line = low_line;
			return conf_fail(cp,
					 "key 'CacheLowWatermark': %u is not "
					 "below CacheHighWatermark (%u)",
					 c->cache_low_watermark,
					 c->cache_high_watermark);
		}
		cp->line = high_line;
		return conf_fail(cp,
				 "key 'CacheHighWatermark': %u is not above "
				 "CacheLowWatermark (%u)",
				 c->cache_high_watermark,
				 c->cache_low_watermark);
	}
	return 0;
}

int conf_parse(const char *text, const char *origin, struct conf *ret_conf,
	       char *err, size_t errlen)
{
	struct conf_parser cp;
	char *copy = NULL, *line, *next;
	int rc = -1, saved;

	memset(&cp, 0, sizeof(cp));
	cp.origin = origin ? origin : "(config)";
	cp.err = err;
	cp.errlen = errlen;
	if (!text || !ret_conf)
		return conf_fail(&cp, "no configuration text");

	cp.conf = malloc(sizeof(*cp.conf));
	copy = strdup(text);
	if (!cp.conf || !copy) {
		conf_fail(&cp, "out of memory");
		errno = ENOMEM;
		goto out;
	}
	conf_set_defaults(cp.conf);

	for (line = copy; line; line = next) {
		next = strchr(line, '\n');
		if (next)
			*next++ = '\0';
		cp.line++;
		if (conf_line(&cp, line) < 0)
			goto out;
	}
	if (conf_finish(&cp) < 0)
		goto out;
	*ret_conf = *cp.conf;
	rc = 0;
out:
	saved = errno;
	free(copy);
	free(cp.conf);
	errno = saved;
	return rc;
}

static void conf_msg(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void conf_msg(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	if (!err || errlen == 0)
		return;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
}

int conf_load(const char *path, struct conf *ret_conf, char *err, size_t errlen)
{
	char reason[256], *text;
	int rc, saved;

	if (!path)
		path = IOSTAGE_CONF_PATH;
	text = smallfile_read(path, CONF_FILE_MAX, reason, sizeof(reason));
	if (!text) {
		saved = errno;
		conf_msg(err, errlen, "%s: cannot read: %s", path, reason);
		errno = saved;
		return -1;
	}
	rc = conf_parse(text, path, ret_conf, err, errlen);
	saved = errno;
	free(text);
	errno = saved;
	return rc;
}

int conf_dump(const struct conf *conf, unsigned scope, FILE *f)
{
	char val[CONF_PATH_MAX];

	if (!conf || !f) {
		errno = EINVAL;
		return -1;
	}
	for (size_t i = 0; i < conf_nkeys; i++) {
		const struct conf_key *k = &conf_keys[i];

		if (!(k->scope & scope))
			continue;
		if (k->type == CONF_T_LINE) {
			if (k->dump(conf, f) < 0)
				return -1;
			continue;
		}
		/* A key with no value is written commented out: read back,
		 * it stays unset. */
		conf_key_format(k, conf, val, sizeof(val));
		if (fprintf(f, "%s%s=%s\n", val[0] ? "" : "#", k->name, val) <
		    0)
			return -1;
	}
	return 0;
}
