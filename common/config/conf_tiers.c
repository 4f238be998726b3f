/* conf_tiers.c - the Tier lines of iostage.conf (conf_tiers.h).
 *
 * A line whose first pair is Tier=NAME describes one tier and may only
 * carry its attributes, the rows of conf_tier_attrs[] (Path, Capacity,
 * Medium, Shared), each parsed like any key into struct conf_tier. The
 * rules between tiers are checked as each line ends: names unique, at
 * most CONF_MAX_TIERS, roots never nested.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "common/config/conf.h"
#include "common/config/conf_keys.h"
#include "common/config/conf_parse.h"
#include "common/config/conf_tiers.h"
#include "common/config/pathsafe.h"

/* The message for a key that is not a tier attribute. */
static int tier_misplaced(struct conf_parser *cp, const char *key)
{
	char show[CONF_SHOW_BUF];
	const struct conf_key *k = conf_key_find(conf_keys, conf_nkeys, key);

	if (k && k->type == CONF_T_LINE)
		return conf_fail(cp, "key '%s': one tier per line", k->name);
	if (k)
		return conf_fail(cp,
				 "key '%s': not valid on a Tier line (put it "
				 "on its own line)",
				 k->name);
	return conf_fail(cp, "unknown key '%s'",
			 conf_show(key, show, sizeof(show)));
}

int conf_tier_line(struct conf_parser *cp, char **toks, size_t ntoks)
{
	struct conf *c = cp->conf;
	struct conf_tier t;
	char show[CONF_SHOW_BUF];
	char *name, *val;
	bool seen[CONF_KEYS_MAX] = { false };
	const struct conf_key *path = conf_key_find(conf_tier_attrs,
						    conf_ntier_attrs, "Path");

	memset(&t, 0, sizeof(t));
	conf_keys_default(conf_tier_attrs, conf_ntier_attrs, &t);
	if (conf_split(cp, toks[0], &name) < 0)
		return -1;
	if (!conf_is_tier_name(name))
		return conf_fail(cp,
				 "key 'Tier': invalid tier name '%s' (want "
				 "[a-z0-9_-]{1,31})",
				 conf_show(name, show, sizeof(show)));
	for (size_t i = 0; i < c->ntiers; i++)
		if (strcmp(c->tiers[i].name, name) == 0)
			return conf_fail(cp,
					 "key 'Tier': duplicate tier '%s' "
					 "(first on line %u)",
					 name, cp->tier_line[i]);
	if (c->ntiers >= CONF_MAX_TIERS)
		return conf_fail(cp, "key 'Tier': more than %d tiers",
				 CONF_MAX_TIERS);
	snprintf(t.name, sizeof(t.name), "%s", name);

	for (size_t i = 1; i < ntoks; i++) {
		const struct conf_key *k;
		size_t idx;

		if (conf_split(cp, toks[i], &val) < 0)
			return -1;
		k = conf_key_find(conf_tier_attrs, conf_ntier_attrs, toks[i]);
		if (!k)
			return tier_misplaced(cp, toks[i]);
		idx = (size_t)(k - conf_tier_attrs);
		if (seen[idx])
			return conf_fail(cp,
					 "key '%s': given twice for tier '%s'",
					 k->name, t.name);
		seen[idx] = true;
		if (conf_key_set(cp, k, val, &t) < 0)
			return -1;
	}
	if (!seen[path - conf_tier_attrs])
		return conf_fail(cp, "key 'Path': required for tier '%s'",
				 t.name);
	/* Nested tier roots would let one tier's eviction or cleanup reach
	 * into another's jobs. */
	for (size_t i = 0; i < c->ntiers; i++)
		if (pathsafe_is_under(t.path, c->tiers[i].path) ||
		    pathsafe_is_under(c->tiers[i].path, t.path))
			return conf_fail(cp,
					 "key 'Path': %s overlaps tier '%s' "
					 "(%s, line %u)",
					 t.path, c->tiers[i].name,
					 c->tiers[i].path, cp->tier_line[i]);
	cp->tier_line[c->ntiers] = cp->line;
	c->tiers[c->ntiers++] = t;
	return 0;
}

int conf_tier_dump(const struct conf *conf, FILE *f)
{
	char val[CONF_PATH_MAX];

	for (size_t i = 0; i < conf->ntiers && i < CONF_MAX_TIERS; i++) {
		const struct conf_tier *t = &conf->tiers[i];

		if (fprintf(f, "Tier=%s", t->name) < 0)
			return -1;
		for (size_t a = 0; a < conf_ntier_attrs; a++) {
			conf_key_format(&conf_tier_attrs[a], t, val,
					sizeof(val));
			if (fprintf(f, " %s=%s", conf_tier_attrs[a].name, val) <
			    0)
				return -1;
		}
		if (fputc('\n', f) == EOF)
			return -1;
	}
	return 0;
}

const struct conf_tier *conf_find_tier(const struct conf *conf,
				       const char *name)
{
	if (!conf || !name)
		return NULL;
	for (size_t i = 0; i < conf->ntiers && i < CONF_MAX_TIERS; i++)
		if (strcmp(conf->tiers[i].name, name) == 0)
			return &conf->tiers[i];
	return NULL;
}

void conf_tier_names(const struct conf *conf, char *buf, size_t buflen)
{
	size_t off = 0;

	if (!buf || buflen == 0)
		return;
	buf[0] = '\0';
	if (!conf)
		return;
	for (size_t i = 0; i < conf->ntiers && i < CONF_MAX_TIERS; i++) {
		int n = snprintf(buf + off, buflen - off, "%s%s", i ? ", " : "",
				 conf->tiers[i].name);

		if (n < 0 || (size_t)n >= buflen - off)
			return; /* truncated, still NUL-terminated */
		off += (size_t)n;
	}
}
