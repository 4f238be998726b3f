/* conf_tiers.h - the Tier lines of iostage.conf (conf_tiers.c).
 *
 *   Tier=NAME Path=DIR [Capacity=SIZE] [Medium=nvme|ssd|hdd|pmem|ram]
 *        [Shared=yes|no]
 *
 * One tier per line; its attributes are rows of conf_tier_attrs[] parsed
 * like any key. conf_find_tier and conf_tier_names (conf.h) live here too.
 */
#ifndef IOSTAGE_CONF_TIERS_H
#define IOSTAGE_CONF_TIERS_H

#include <stddef.h>
#include <stdio.h>

#include "common/config/conf_parse.h"

/* A Tier line: TOKS[0] is "Tier=NAME" (NTOKS pairs). The tier is added to
 * cp->conf. 0, or -1 with the message. */
int conf_tier_line(struct conf_parser *cp, char **toks, size_t ntoks);

/* Every tier of CONF as a Tier line on F. 0, or -1 with errno. */
int conf_tier_dump(const struct conf *conf, FILE *f);

#endif /* IOSTAGE_CONF_TIERS_H */
