/* cache_reconcile.c - start-up: bring the tiers' caches and what the node
 * knows back in line after a crash (docs/STAGING.md, "After a crash").
 *
 * In this order: every build the journal lists is removed (this node was
 * building it when it died: never published, never served); on a tier no
 * other node uses, any other leftover build or removal is removed too (on
 * a Shared tier only this node's: another node may be building); a version
 * without meta.json, manifest or data is removed; this node's pins of jobs
 * it no longer knows are dropped; then the index is complete, and K.lock
 * files of keys with no version (node-local tiers) and versions older than
 * their key's current one that nobody pins go. So the cache and the tiers
 * agree, and a half-copied dataset is never served.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/base/log.h"
#include "common/fs/rmtree.h"
#include "daemon/staging/cache_internal.h"

static int replay_remove(int tier, const char *build, void *arg)
{
	struct cache *c = arg;
	char rmerr[CONF_ERR_MAX];

	if (rmtree_at(c->cache_fd[tier], build, rmerr, sizeof(rmerr)) < 0) {
		log_warningx("tier '%s': journaled build cache/%s: %s",
			     cache_tier_name(c, tier), build, rmerr);
		return -1;
	}
	log_warningx("tier '%s': removed cache/%s, an unfinished build",
		     cache_tier_name(c, tier), build);
	return 0;
}

/* Reconcile one tier's cache directory with what we know. */
static void reconcile_tier(struct cache *c, int tier,
			   cache_job_known_fn job_known, void *arg)
{
	bool shared = cache_tier_shared(c, tier);
	const char *tn = cache_tier_name(c, tier);
	int cfd = c->cache_fd[tier];
	char key[CACHE_KEY_LEN + 1], why[CONF_ERR_MAX], rmerr[CONF_ERR_MAX];
	struct cache_entry *e;
	struct dirent *de;
	unsigned version;
	DIR *dir;

	dir = cache_open_listing(c, tier);
	if (!dir)
		return;
	while ((de = readdir(dir))) {
		const char *n = de->d_name;

		if (cache_is_temp_name(c, n, ".build.", shared) ||
		    cache_is_temp_name(c, n, ".evict.", shared)) {
			if (rmtree_at(cfd, n, rmerr, sizeof(rmerr)) < 0)
				log_warningx("tier '%s': cache/%s: %s", tn, n,
					     rmerr);
			else
				log_info("tier '%s': removed leftover cache/%s",
					 tn, n);
			continue;
		}
		if (!cache_parse_version_name(n, key, &version))
			continue;
		e = cache_index_load(c, tier, n, why, sizeof(why));
		if (!e) {
			log_warningx("tier '%s': cache/%s is incomplete (%s); "
				     "removed",
				     tn, n, why);
			if (rmtree_at(cfd, n, rmerr, sizeof(rmerr)) < 0)
				log_warningx("tier '%s': cache/%s: %s", tn, n,
					     rmerr);
			continue;
		}
		cache_pins_drop_stale(c, tier, n, job_known, arg);
		cache_index_add(c, e);
	}
	closedir(dir);
	/* Only on a tier no other node uses, at start: nobody else can
	 * hold or wait for its lock files. */
	if (!shared)
		cache_lock_drop_idle(c, tier);
}

/* Remove the old unpinned versions of every key of TIER. */
static void gc_tier(struct cache *c, int tier)
{
	struct cache_snap *s;
	size_t n, i, j;

	s = cache_index_snapshot(c, tier, (uid_t)-1, false, NULL, NULL, &n);
	for (i = 0; i < n; i++) {
		struct cache_lock *lk;

		for (j = 0; j < i; j++)
			if (!strcmp(s[j].key, s[i].key))
				break;
		if (j < i)
			continue;
		lk = cache_lock_try(c, tier, s[i].key);
		if (!lk)
			continue;
		cache_gc_key(c, tier, s[i].key);
		cache_lock_release(lk);
	}
	free(s);
}

int cache_recover(struct cache *c, cache_job_known_fn job_known, void *arg,
		  char *err, size_t errlen)
{
	const struct cache_entry *e;
	unsigned removed;
	size_t t, count = 0;

	if (!c->journal) {
		c->journal = journal_open(c->conf, c->owner_uid, err, errlen);
		if (!c->journal)
			return -1;
	}
	removed = journal_replay(c->journal, replay_remove, c);
	if (removed)
		log_warningx("removed %u unfinished build%s listed in the "
			     "journal",
			     removed, removed == 1 ? "" : "s");
	for (t = 0; t < c->conf->ntiers; t++)
		reconcile_tier(c, (int)t, job_known, arg);
	for (t = 0; t < c->conf->ntiers; t++)
		gc_tier(c, (int)t);
	pthread_mutex_lock(&c->mu);
	for (e = c->entries; e; e = e->next)
		count++;
	pthread_mutex_unlock(&c->mu);
	if (count)
		log_info("cache: %zu version%s on %zu tier%s", count,
			 count == 1 ? "" : "s", c->conf->ntiers,
			 c->conf->ntiers == 1 ? "" : "s");
	return 0;
}
