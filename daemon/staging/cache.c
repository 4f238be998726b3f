/* cache.c - the cache as an object: made, measured, destroyed.
 *
 * Why an object and not the module's statics it used to be: iostaged has
 * one cache, but a test wants two (two nodes on one Shared tier, a crash
 * and a fresh start on the same directories) in one process, without
 * root, Slurm or a socket. So everything the cache knows lives in struct
 * cache (cache_internal.h), which its callers get passed; its tiers'
 * directories and space, and who owns its files, come in through struct
 * cache_params. The rest of the cache is one concern per file (the list
 * is in cache_internal.h).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/staging/cache_internal.h"

struct cache *cache_create(const struct cache_params *p, char *err,
			   size_t errlen)
{
	struct cache *c;
	size_t t;

	if (!p || !p->conf || p->conf->ntiers > CONF_MAX_TIERS ||
	    !p->space.usage || !p->space.reserve || !p->space.account) {
		snprintf(err, errlen, "cache: incomplete parameters");
		errno = EINVAL;
		return NULL;
	}
	for (t = 0; t < p->conf->ntiers; t++) {
		if (p->cache_fd[t] < 0) {
			snprintf(err, errlen,
				 "cache: tier '%s' has no cache "
				 "directory",
				 p->conf->tiers[t].name);
			errno = EINVAL;
			return NULL;
		}
	}
	c = calloc(1, sizeof(*c));
	if (!c) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	c->conf = p->conf;
	c->space = p->space;
	c->owner_uid = p->owner_uid;
	c->owner_gid = p->owner_gid;
	memcpy(c->cache_fd, p->cache_fd, sizeof(c->cache_fd));
	memcpy(c->jobs_fd, p->jobs_fd, sizeof(c->jobs_fd));
	pthread_mutex_init(&c->mu, NULL);
	pthread_mutex_init(&c->evict_mu, NULL);
	return c;
}

void cache_destroy(struct cache *c)
{
	struct cache_entry *e, *next;

	if (!c)
		return;
	for (e = c->entries; e; e = next) {
		next = e->next;
		cache_entry_free(e);
	}
	journal_close(c->journal);
	pthread_mutex_destroy(&c->mu);
	pthread_mutex_destroy(&c->evict_mu);
	free(c);
}

uint64_t cache_generation(struct cache *c)
{
	uint64_t g;

	pthread_mutex_lock(&c->mu);
	g = c->gen;
	pthread_mutex_unlock(&c->mu);
	return g;
}

void cache_tier_counts(struct cache *c, int tier, unsigned *ret_entries,
		       unsigned *ret_pinned)
{
	const struct cache_entry *e;
	unsigned n = 0;

	pthread_mutex_lock(&c->mu);
	for (e = c->entries; e; e = e->next)
		if (e->tier == tier)
			n++;
	pthread_mutex_unlock(&c->mu);
	*ret_entries = n;
	if (ret_pinned)
		*ret_pinned = 0;
}
