/* cache_evict.c - removing versions: old ones, and for space.
 *
 * Removal is publication backwards: rename K.vN to .evict.K.vN.NODE (no
 * longer served), then remove the tree; a crash in between leaves a
 * leftover that recovery removes, never a half-removed K.vN.
 *
 * Eviction order is a segmented LRU (cache_evict_order): versions no
 * second job has used go first, then the reused ones, each least recently
 * used first. It starts when a reservation would push the tier above
 * CacheHighWatermark and goes down to CacheLowWatermark, a slack that
 * spares the next stagings an eviction; that slack is made of one-use
 * versions only (cache_evict_enough). What is pinned (by any node) or
 * whose K.lock is held (being staged or verified) is never evicted. The
 * order and the stopping rule are pure functions, so that tests check
 * the decisions without a tier of the right size.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/base/log.h"
#include "common/base/units.h"
#include "common/fs/rmtree.h"
#include "daemon/staging/cache_internal.h"

/* Unpublish and remove TIER's version NAME: rename it out of the served
 * names first, so that a crash mid-way leaves no half-removed K.vN. */
static int remove_version_dir(struct cache *c, int tier, const char *name,
			      char *err, size_t errlen)
{
	int cfd = c->cache_fd[tier];
	char tmp[JOURNAL_NAME_MAX], rmerr[CONF_ERR_MAX];

	snprintf(tmp, sizeof(tmp), ".evict.%s.%s", name, c->conf->node_name);
	if (rmtree_at(cfd, tmp, rmerr, sizeof(rmerr)) < 0 ||
	    renameat2(cfd, name, cfd, tmp, RENAME_NOREPLACE) < 0) {
		if (errno == ENOENT)
			return 0;
		snprintf(err, errlen, "tier '%s': cannot remove cache/%s: %s",
			 cache_tier_name(c, tier), name, strerror(errno));
		return -1;
	}
	(void)fsync(cfd);
	if (rmtree_at(cfd, tmp, rmerr, sizeof(rmerr)) < 0) {
		/* Unpublished already; the next start finishes it. */
		log_warningx("tier '%s': cache/%s: %s",
			     cache_tier_name(c, tier), tmp, rmerr);
	}
	return 0;
}

int cache_remove_version(struct cache *c, int tier, const char *key,
			 unsigned version, char *err, size_t errlen)
{
	char name[CACHE_ENTRY_NAME_MAX];

	cache_version_name(key, version, name, sizeof(name));
	if (remove_version_dir(c, tier, name, err, errlen) < 0)
		return -1;
	cache_index_drop(c, tier, key, version);
	return 0;
}

void cache_gc_key(struct cache *c, int tier, const char *key)
{
	char name[CACHE_ENTRY_NAME_MAX], err[CONF_ERR_MAX];
	unsigned *v, max = 0;
	size_t n, i;

	v = cache_index_versions(c, tier, key, &n);
	for (i = 0; i < n; i++)
		if (v[i] > max)
			max = v[i];
	for (i = 0; i < n; i++) {
		if (v[i] == max)
			continue;
		cache_version_name(key, v[i], name, sizeof(name));
		if (cache_pins_read(c, tier, name, NULL, 0) != 0)
			continue;
		if (cache_remove_version(c, tier, key, v[i], err, sizeof(err)) <
		    0)
			log_warningx("%s", err);
		else
			log_info("tier '%s': removed old cache version %s",
				 cache_tier_name(c, tier), name);
	}
	free(v);
}

/* --- the choice (pure) -------------------------------------------------------
 */

/* Eviction order: versions no second job has used first, then the reused
 * ones, each least recently used first (a segmented LRU). A dataset read by
 * one job and never again (one-pass inference, a single sweep) thus never
 * pushes out a training set that jobs come back to, however recent it is;
 * it still stays cached while there is room, and a second use promotes it. */
static int cand_cmp(const void *a, const void *b)
{
	const struct cache_cand *x = a, *y = b;

	if (x->reused != y->reused)
		return x->reused ? 1 : -1;
	if (x->last_used != y->last_used)
		return x->last_used < y->last_used ? -1 : 1;
	return x->version < y->version ? -1 : x->version > y->version;
}

void cache_evict_order(struct cache_cand *c, size_t n)
{
	if (n)
		qsort(c, n, sizeof(*c), cand_cmp);
}

/* Down to the low watermark, so the next stagings need no eviction; but
 * that slack is made of one-use versions only: for data jobs came back
 * to, below the high one is enough. */
bool cache_evict_enough(const struct cache_cand *c, uint64_t used,
			uint64_t free, uint64_t size, uint64_t high,
			uint64_t low)
{
	uint64_t target = c->reused ? high : low;

	return used + size <= target && size <= free;
}

/* --- eviction ----------------------------------------------------------------
 */

struct cache_cand *cache_evict_candidates(struct cache *c, int tier,
					  bool unused_only, size_t *ret_n,
					  uint64_t *ret_bytes)
{
	struct cache_cand *cand = NULL, *nc;
	const struct cache_entry *e;
	size_t n = 0, i, kept = 0;
	uint64_t bytes = 0;

	pthread_mutex_lock(&c->mu);
	for (e = c->entries; e; e = e->next) {
		if (e->tier != tier || (unused_only && e->uses > 0))
			continue;
		nc = realloc(cand, sizeof(*cand) * (n + 1));
		if (!nc)
			break;
		cand = nc;
		snprintf(cand[n].key, sizeof(cand[n].key), "%s", e->key);
		cand[n].version = e->version;
		cand[n].bytes = e->bytes;
		cand[n].last_used = e->last_used;
		cand[n].reused = cache_entry_reused(e);
		n++;
	}
	pthread_mutex_unlock(&c->mu);
	for (i = 0; i < n; i++) {
		char name[CACHE_ENTRY_NAME_MAX];

		cache_version_name(cand[i].key, cand[i].version, name,
				   sizeof(name));
		if (cache_pins_read(c, tier, name, NULL, 0) != 0)
			continue;
		bytes += cand[i].bytes;
		cand[kept++] = cand[i];
	}
	cache_evict_order(cand, kept);
	*ret_n = kept;
	*ret_bytes = bytes;
	return cand;
}

/* Evict CAND if it is still unpinned and nobody holds its K.lock. */
static bool evict_one(struct cache *c, int tier, const struct cache_cand *cand)
{
	char name[CACHE_ENTRY_NAME_MAX], err[CONF_ERR_MAX], size[32];
	struct cache_lock *lk = cache_lock_try(c, tier, cand->key);
	bool done = false;

	if (!lk)
		return false; /* being staged or verified right now */
	cache_version_name(cand->key, cand->version, name, sizeof(name));
	if (cache_pins_read(c, tier, name, NULL, 0) == 0) {
		if (cache_remove_version(c, tier, cand->key, cand->version, err,
					 sizeof(err)) < 0) {
			log_warningx("%s", err);
		} else {
			log_info("tier '%s': evicted cache/%s (%s, unused "
				 "since %ld s)",
				 cache_tier_name(c, tier), name,
				 units_bytes(cand->bytes, size, sizeof(size)),
				 (long)(time(NULL) - cand->last_used));
			done = true;
		}
	}
	cache_lock_release(lk);
	return done;
}

int cache_reserve(struct cache *c, int tier, const char *dsname, uint64_t size,
		  bool speculative, char *err, size_t errlen)
{
	const struct conf_tier *t = &c->conf->tiers[tier];
	const struct cache_space *sp = &c->space;
	char need[32], avail[32];
	struct tiers_usage u;
	struct cache_cand *cand = NULL;
	uint64_t high, low, evictable = 0;
	size_t n = 0, i;
	int r = -1;

	cache_index_rescan_shared(c, tier);
	pthread_mutex_lock(&c->evict_mu);
	if (sp->usage(sp->arg, tier, &u) < 0) {
		snprintf(err, errlen, "tier '%s': cannot statvfs %s: %s",
			 t->name, t->path, strerror(errno));
		goto out;
	}
	high = u.capacity / 100 * c->conf->cache_high_watermark;
	low = u.capacity / 100 * c->conf->cache_low_watermark;
	if (u.used + size > high || size > u.free) {
		cand = cache_evict_candidates(c, tier, speculative, &n,
					      &evictable);
		if (size > u.free + evictable) {
			snprintf(err, errlen,
				 "tier '%s' full: dataset '%s' needs %s, %s "
				 "free after eviction%s",
				 t->name, dsname,
				 units_bytes(size, need, sizeof(need)),
				 units_bytes(u.free + evictable, avail,
					     sizeof(avail)),
				 speculative ? " (a pre-stage evicts only "
					       "data no job has used)"
					     : "");
			errno = ENOSPC;
			goto out;
		}
		for (i = 0; i < n; i++) {
			if (cache_evict_enough(&cand[i], u.used, u.free, size,
					       high, low))
				break;
			if (evict_one(c, tier, &cand[i]) &&
			    sp->usage(sp->arg, tier, &u) < 0)
				break;
		}
	}
	if (sp->reserve(sp->arg, tier, dsname, size, err, errlen) < 0) {
		if (errno == ENOSPC && sp->usage(sp->arg, tier, &u) == 0)
			snprintf(err, errlen,
				 "tier '%s' full: dataset '%s' needs %s, %s "
				 "free after eviction",
				 t->name, dsname,
				 units_bytes(size, need, sizeof(need)),
				 units_bytes(u.free, avail, sizeof(avail)));
		errno = ENOSPC;
		goto out;
	}
	r = 0;
out:
	pthread_mutex_unlock(&c->evict_mu);
	free(cand);
	return r;
}
