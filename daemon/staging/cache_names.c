/* cache_names.c - the names of everything below TIER/cache: keys, versions
 * (K.vN), lock files (K.lock), builds and removals in progress
 * (.build.K.vN.NODE, .evict.K.vN.NODE), pins (NODE.JOBID), and the paths
 * workers are given.
 *
 * Names are parsed strictly: whatever else a directory holds (a user's
 * file, a half-written name) is never taken for a version.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/base/log.h"
#include "common/sched/cachekey.h"
#include "daemon/staging/cache_internal.h"

void cache_key(uid_t uid, const char *src, char ret[CACHE_KEY_LEN + 1])
{
	cachekey_user(uid, src, ret);
}

void cache_key_public(const char *src, char ret[CACHE_KEY_LEN + 1])
{
	cachekey_public(src, ret);
}

bool cache_is_key(const char *s, size_t len)
{
	size_t i;

	if (len != CACHE_KEY_LEN)
		return false;
	for (i = 0; i < len; i++)
		if (!((s[i] >= '0' && s[i] <= '9') ||
		      (s[i] >= 'a' && s[i] <= 'f')))
			return false;
	return true;
}

bool cache_parse_version_name(const char *name, char key[CACHE_KEY_LEN + 1],
			      unsigned *ret_version)
{
	const char *v = name + CACHE_KEY_LEN;
	unsigned long n = 0;
	size_t digits;

	if (strlen(name) < CACHE_KEY_LEN + 3 ||
	    !cache_is_key(name, CACHE_KEY_LEN) || v[0] != '.' || v[1] != 'v')
		return false;
	digits = strspn(v + 2, "0123456789");
	if (digits == 0 || digits > 9 || v[2 + digits] != '\0' || v[2] == '0')
		return false;
	n = strtoul(v + 2, NULL, 10);
	memcpy(key, name, CACHE_KEY_LEN);
	key[CACHE_KEY_LEN] = '\0';
	*ret_version = (unsigned)n;
	return true;
}

void cache_version_name(const char *key, unsigned version, char *buf,
			size_t len)
{
	snprintf(buf, len, "%s.v%u", key, version);
}

void cache_lock_name(const char *key, char *buf, size_t len)
{
	snprintf(buf, len, "%s.lock", key);
}

bool cache_is_temp_name(const struct cache *c, const char *name,
			const char *prefix, bool mine)
{
	size_t plen = strlen(prefix), nlen = strlen(name);
	size_t node = strlen(c->conf->node_name);

	if (strncmp(name, prefix, plen))
		return false;
	if (!mine)
		return true;
	return nlen > node + 1 && name[nlen - node - 1] == '.' &&
	       !strcmp(name + nlen - node, c->conf->node_name);
}

void cache_pin_name(const struct cache *c, uint32_t jobid, char *buf,
		    size_t len)
{
	snprintf(buf, len, "%s.%" PRIu32, c->conf->node_name, jobid);
}

const char *cache_tier_name(const struct cache *c, int tier)
{
	return c->conf->tiers[tier].name;
}

bool cache_tier_shared(const struct cache *c, int tier)
{
	return c->conf->tiers[tier].shared;
}

int cache_version_path(struct cache *c, int tier, const char *key,
		       unsigned version, bool data, char *buf, size_t buflen)
{
	int n = snprintf(buf, buflen, "%s/cache/%s.v%u%s",
			 c->conf->tiers[tier].path, key, version,
			 data ? "/data" : "");

	if (n < 0 || (size_t)n >= buflen) {
		errno = ENAMETOOLONG;
		return -1;
	}
	return 0;
}

int cache_open_dir_at(int dfd, const char *name)
{
	return openat(dfd, name,
		      O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
}

DIR *cache_open_listing(const struct cache *c, int tier)
{
	int fd = cache_open_dir_at(c->cache_fd[tier], ".");
	DIR *dir = fd >= 0 ? fdopendir(fd) : NULL;

	if (!dir) {
		if (fd >= 0)
			close(fd);
		log_warning("tier '%s': cannot read its cache",
			    cache_tier_name(c, tier));
	}
	return dir;
}
