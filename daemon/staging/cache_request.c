/* cache_request.c - what clients ask of the cache: cache_ls and cache_evict
 * (the protocol's ops, daemon/server.c; the report to iostagectld,
 * daemon/cluster/cachereport.c).
 *
 * Both work on a snapshot of the index taken under c->mu, then look at the
 * disk (pins) without it. An eviction on request is all or nothing: every
 * key involved is locked without waiting and every version checked
 * unpinned before the first is removed.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/base/log.h"
#include "daemon/staging/cache_internal.h"

cJSON *cache_ls_json(struct cache *c, uid_t peer_uid)
{
	cJSON *arr = cJSON_CreateArray(), *o, *pins;
	struct cache_snap *s;
	size_t n, i;

	if (!arr)
		return NULL;
	cache_index_rescan_shared(c, -1);
	/* Public entries hold only what everyone may read: listed to all. */
	s = cache_index_snapshot(c, -1, peer_uid == 0 ? (uid_t)-1 : peer_uid,
				 true, NULL, NULL, &n);
	for (i = 0; i < n; i++) {
		char name[CACHE_ENTRY_NAME_MAX], list[1024], *p, *save = NULL;
		int npins;

		cache_version_name(s[i].key, s[i].version, name, sizeof(name));
		npins = cache_pins_read(c, s[i].tier, name, list, sizeof(list));
		o = cJSON_CreateObject();
		if (!o) {
			cJSON_Delete(arr);
			arr = NULL;
			break;
		}
		cJSON_AddStringToObject(o, "tier",
					cache_tier_name(c, s[i].tier));
		cJSON_AddStringToObject(o, "key", s[i].key);
		cJSON_AddStringToObject(o, "entry", name);
		cJSON_AddNumberToObject(o, "version", s[i].version);
		cJSON_AddBoolToObject(o, "current", s[i].current);
		cJSON_AddStringToObject(o, "source", s[i].src);
		cJSON_AddNumberToObject(o, "uid", (double)s[i].uid);
		cJSON_AddStringToObject(o, "user", s[i].user);
		cJSON_AddBoolToObject(o, "public", s[i].public);
		cJSON_AddNumberToObject(o, "bytes", (double)s[i].bytes);
		cJSON_AddNumberToObject(o, "files", (double)s[i].files);
		cJSON_AddStringToObject(o, "verify",
					profile_verify_name(s[i].verify));
		cJSON_AddNumberToObject(o, "created", (double)s[i].created);
		cJSON_AddNumberToObject(o, "verified", (double)s[i].verified);
		cJSON_AddNumberToObject(o, "last_used", (double)s[i].last_used);
		cJSON_AddBoolToObject(o, "reused", s[i].reused);
		cJSON_AddNumberToObject(o, "pins", npins < 0 ? 0 : npins);
		pins = cJSON_AddArrayToObject(o, "pinned_by");
		/* A public entry's pins name other users' jobs: their count
		 * only, except for root. */
		for (p = strtok_r(list, ", ", &save);
		     pins && p && (peer_uid == 0 || !s[i].public);
		     p = strtok_r(NULL, ", ", &save))
			cJSON_AddItemToArray(pins, cJSON_CreateString(p));
		cJSON_AddItemToArray(arr, o);
	}
	free(s);
	return arr;
}

cJSON *cache_evict(struct cache *c, uid_t peer_uid, const char *key,
		   const char *src, uid_t uid, bool all_users, int tier,
		   char *err, size_t errlen)
{
	struct cache_lock **locks = NULL;
	cJSON *arr = NULL, *o;
	struct cache_snap *s = NULL;
	size_t n = 0, i, j;
	uid_t only = (uid_t)-1;
	char k[CACHE_KEY_LEN + 1];

	cache_index_rescan_shared(c, tier);
	if (key) {
		s = cache_index_snapshot(c, tier, (uid_t)-1, false, key, NULL,
					 &n);
	} else {
		if (!all_users) {
			cache_key(uid, src, k);
			only = uid;
		}
		s = cache_index_snapshot(c, tier, only, false,
					 all_users ? NULL : k, src, &n);
	}
	if (n == 0) {
		if (key)
			snprintf(err, errlen, "no cache entry with key %s%s%s",
				 key, tier >= 0 ? " on tier " : "",
				 tier >= 0 ? cache_tier_name(c, tier) : "");
		else
			snprintf(err, errlen,
				 "no cache entry for source %s%s%s", src,
				 tier >= 0 ? " on tier " : "",
				 tier >= 0 ? cache_tier_name(c, tier) : "");
		goto out;
	}
	for (i = 0; i < n; i++) {
		if (peer_uid != 0 && s[i].public) {
			snprintf(
			    err, errlen,
			    "permission denied: cache entry %s.v%u (%s) is "
			    "public, shared by every user: only root may "
			    "evict it",
			    s[i].key, s[i].version, s[i].src);
			goto out;
		}
		if (peer_uid != 0 && s[i].uid != peer_uid) {
			snprintf(
			    err, errlen,
			    "permission denied: cache entry %s.v%u belongs "
			    "to uid %u (peer uid %u)",
			    s[i].key, s[i].version, (unsigned)s[i].uid,
			    (unsigned)peer_uid);
			goto out;
		}
	}
	/* Lock every key involved (without waiting), then check pins: all
	 * or nothing. */
	locks = calloc(n, sizeof(*locks));
	if (!locks) {
		snprintf(err, errlen, "out of memory");
		goto out;
	}
	for (i = 0; i < n; i++) {
		char name[CACHE_ENTRY_NAME_MAX], list[512];
		int np;

		for (j = 0; j < i; j++)
			if (locks[j] && s[j].tier == s[i].tier &&
			    !strcmp(s[j].key, s[i].key))
				break;
		if (j == i) {
			locks[i] = cache_lock_try(c, s[i].tier, s[i].key);
			if (!locks[i]) {
				snprintf(err, errlen,
					 "cache entry %s on tier '%s' (%s) is "
					 "being staged right now; try again",
					 s[i].key,
					 cache_tier_name(c, s[i].tier),
					 s[i].src);
				goto out;
			}
		}
		cache_version_name(s[i].key, s[i].version, name, sizeof(name));
		np = cache_pins_read(c, s[i].tier, name, list, sizeof(list));
		if (np != 0) {
			snprintf(err, errlen,
				 "cache entry %s on tier '%s' (%s) is pinned "
				 "by %s; not evicted",
				 name, cache_tier_name(c, s[i].tier), s[i].src,
				 np < 0 ? "unreadable pins" : list);
			goto out;
		}
	}
	arr = cJSON_CreateArray();
	for (i = 0; arr && i < n; i++) {
		char name[CACHE_ENTRY_NAME_MAX], rerr[CONF_ERR_MAX];

		cache_version_name(s[i].key, s[i].version, name, sizeof(name));
		if (cache_remove_version(c, s[i].tier, s[i].key, s[i].version,
					 rerr, sizeof(rerr)) < 0) {
			log_warningx("%s", rerr);
			continue;
		}
		log_info("tier '%s': cache/%s (%s, uid %u) evicted on request",
			 cache_tier_name(c, s[i].tier), name, s[i].src,
			 (unsigned)s[i].uid);
		o = cJSON_CreateObject();
		if (!o)
			continue;
		cJSON_AddStringToObject(o, "tier",
					cache_tier_name(c, s[i].tier));
		cJSON_AddStringToObject(o, "entry", name);
		cJSON_AddStringToObject(o, "source", s[i].src);
		cJSON_AddNumberToObject(o, "uid", (double)s[i].uid);
		cJSON_AddNumberToObject(o, "bytes", (double)s[i].bytes);
		cJSON_AddItemToArray(arr, o);
	}
	if (!arr)
		snprintf(err, errlen, "out of memory");
out:
	for (i = 0; locks && i < n; i++)
		cache_lock_release(locks[i]);
	free(locks);
	free(s);
	return arr;
}
