/* cache_index.c - the cache's summaries of its versions, in memory.
 *
 * Why the index holds summaries only: a dataset of a million files has a
 * manifest of a hundred megabytes, and a node caches many datasets. The
 * daemon never reads a manifest; it opens it and hands the fd to the worker
 * that compares or copies, so its memory grows with the number of entries,
 * not files.
 *
 * A summary comes from the version's meta.json, which must be the cache
 * owner's (root's): the directory held the user's files while it was
 * built. The index changes under c->mu only, and each change of its
 * contents moves the generation and the tier's accounted bytes.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/base/smallfile.h"
#include "common/net/proto.h"
#include "daemon/staging/cache_internal.h"

void cache_entry_free(struct cache_entry *e)
{
	if (!e)
		return;
	free(e->src);
	free(e->user);
	free(e);
}

struct cache_entry *cache_index_find_locked(struct cache *c, int tier,
					    const char *key, unsigned version)
{
	struct cache_entry *e;

	for (e = c->entries; e; e = e->next)
		if (e->tier == tier && e->version == version &&
		    !strcmp(e->key, key))
			return e;
	return NULL;
}

void cache_index_insert_locked(struct cache *c, struct cache_entry *e)
{
	e->next = c->entries;
	c->entries = e;
	c->gen++;
	c->space.account(c->space.arg, e->tier, (int64_t)e->bytes);
}

/* Unlink E from the index (c->mu held) and free it. */
void cache_index_drop_locked(struct cache *c, struct cache_entry *e)
{
	struct cache_entry **pp;

	for (pp = &c->entries; *pp; pp = &(*pp)->next) {
		if (*pp == e) {
			*pp = e->next;
			c->gen++;
			c->space.account(c->space.arg, e->tier,
					 -(int64_t)e->bytes);
			cache_entry_free(e);
			return;
		}
	}
}

void cache_index_add(struct cache *c, struct cache_entry *e)
{
	pthread_mutex_lock(&c->mu);
	if (cache_index_find_locked(c, e->tier, e->key, e->version))
		cache_entry_free(e);
	else
		cache_index_insert_locked(c, e);
	pthread_mutex_unlock(&c->mu);
}

void cache_index_drop(struct cache *c, int tier, const char *key,
		      unsigned version)
{
	struct cache_entry *e;

	pthread_mutex_lock(&c->mu);
	e = cache_index_find_locked(c, tier, key, version);
	if (e)
		cache_index_drop_locked(c, e);
	pthread_mutex_unlock(&c->mu);
}

bool cache_index_has_key(struct cache *c, int tier, const char *key)
{
	const struct cache_entry *e;
	bool found = false;

	pthread_mutex_lock(&c->mu);
	for (e = c->entries; e && !found; e = e->next)
		found = e->tier == tier && !strcmp(e->key, key);
	pthread_mutex_unlock(&c->mu);
	return found;
}

unsigned *cache_index_versions(struct cache *c, int tier, const char *key,
			       size_t *ret_n)
{
	const struct cache_entry *e;
	unsigned *v = NULL, *nv;
	size_t n = 0;

	pthread_mutex_lock(&c->mu);
	for (e = c->entries; e; e = e->next) {
		if (e->tier != tier || strcmp(e->key, key))
			continue;
		nv = realloc(v, sizeof(*v) * (n + 1));
		if (!nv)
			break;
		v = nv;
		v[n++] = e->version;
	}
	pthread_mutex_unlock(&c->mu);
	*ret_n = n;
	return v;
}

bool cache_entry_reused(const struct cache_entry *e)
{
	return e->uses >= 2;
}

static enum profile_verify verify_from_name(const char *s)
{
	if (s && !strcmp(s, "none"))
		return PROFILE_VERIFY_NONE;
	if (s && !strcmp(s, "checksum"))
		return PROFILE_VERIFY_CHECKSUM;
	return PROFILE_VERIFY_STAT;
}

/* Read meta.json of the version directory VFD. NULL if unusable: it must
 * be the owner's (the directory held the user's files while it was
 * built). */
static cJSON *read_meta(const struct cache *c, int vfd, struct stat *ret_st)
{
	char reason[128], *text;
	struct stat st;
	cJSON *o = NULL;

	text = smallfile_read_at(vfd, "meta.json", O_NOFOLLOW, CACHE_META_MAX,
				 &st, reason, sizeof(reason));
	if (text && st.st_uid == c->owner_uid)
		o = cJSON_Parse(text);
	free(text);
	if (o && ret_st)
		*ret_st = st;
	return o;
}

/* A time of meta.json (seconds since the epoch). One too large for the
 * nanoseconds kept beside it (after 2262) is damage: 0, never, so the
 * entry is verified again rather than trusted. */
static time_t meta_time(const cJSON *meta, const char *key)
{
	uint64_t t = proto_u64(meta, key);

	return t > (uint64_t)(INT64_MAX / 1000000000) ? 0 : (time_t)t;
}

struct cache_entry *cache_index_load(struct cache *c, int tier,
				     const char *name, char *why, size_t whylen)
{
	struct cache_entry *e = NULL;
	struct stat st, mst;
	const cJSON *src, *user, *verify;
	cJSON *meta = NULL;
	uid_t owner;
	int vfd;

	vfd = cache_open_dir_at(c->cache_fd[tier], name);
	if (vfd < 0) {
		snprintf(why, whylen, "cannot open: %s", strerror(errno));
		return NULL;
	}
	meta = read_meta(c, vfd, &mst);
	if (!meta) {
		snprintf(why, whylen, "no readable meta.json");
		goto out;
	}
	if (fstatat(vfd, "manifest", &st, AT_SYMLINK_NOFOLLOW) < 0 ||
	    !S_ISREG(st.st_mode) || st.st_uid != c->owner_uid) {
		snprintf(why, whylen, "no manifest");
		goto out;
	}
	if (fstatat(vfd, "data", &st, AT_SYMLINK_NOFOLLOW) < 0 ||
	    !(S_ISDIR(st.st_mode) || S_ISREG(st.st_mode))) {
		snprintf(why, whylen, "no data");
		goto out;
	}
	src = cJSON_GetObjectItemCaseSensitive(meta, "src");
	user = cJSON_GetObjectItemCaseSensitive(meta, "user");
	verify = cJSON_GetObjectItemCaseSensitive(meta, "verify");
	if (!cJSON_IsString(src) || src->valuestring[0] != '/') {
		snprintf(why, whylen, "meta.json has no source");
		goto out;
	}
	e = calloc(1, sizeof(*e));
	if (!e) {
		snprintf(why, whylen, "out of memory");
		goto out;
	}
	if (!cache_parse_version_name(name, e->key, &e->version)) {
		snprintf(why, whylen, "bad name");
		goto fail;
	}
	e->tier = tier;
	e->uid = (uid_t)proto_u64(meta, "uid");
	e->src = strdup(src->valuestring);
	e->user = strdup(cJSON_IsString(user) ? user->valuestring : "");
	if (!e->src || !e->user) {
		snprintf(why, whylen, "out of memory");
		goto fail;
	}
	e->bytes = proto_u64(meta, "bytes");
	e->files = proto_u64(meta, "files");
	e->created = meta_time(meta, "created");
	e->verified = meta_time(meta, "verified");
	if (e->verified < e->created)
		e->verified = e->created;
	e->verified_ns = (int64_t)proto_u64(meta, "verified_ns");
	if (e->verified_ns / 1000000000 != (int64_t)e->verified)
		e->verified_ns = (int64_t)e->verified * 1000000000;
	e->verify = verify_from_name(
	    cJSON_IsString(verify) ? verify->valuestring : NULL);
	e->public = cJSON_IsTrue(
	    cJSON_GetObjectItemCaseSensitive(meta, "public"));
	/* A version written before parts were marked reads as a whole
	 * copy. */
	e->part = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(meta, "part"));
	/* Whether one job used it before the restart is not recorded: count
	 * one, so that the next job's use marks it reused. */
	e->uses = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(meta, "reused"))
		      ? 2
		      : 1;
	e->last_used = mst.st_mtime;
	/* A public entry is root's through and through: whoever built it
	 * never owned what is served. */
	if (e->public && (e->uid != 0 || (st.st_mode & 0222))) {
		snprintf(why, whylen, "public, but data is uid %u mode %04o",
			 (unsigned)st.st_uid, (unsigned)(st.st_mode & 07777));
		goto fail;
	}
	/* The data belongs to the entry's user (a public entry's to the
	 * cache's owner, root); anything else is not ours to serve. */
	owner = e->public ? c->owner_uid : e->uid;
	if (st.st_uid != owner) {
		snprintf(why, whylen, "data owned by uid %u, not %u",
			 (unsigned)st.st_uid, (unsigned)owner);
		goto fail;
	}
	goto out;
fail:
	cache_entry_free(e);
	e = NULL;
out:
	cJSON_Delete(meta);
	close(vfd);
	return e;
}

void cache_index_rescan(struct cache *c, int tier)
{
	int cfd = c->cache_fd[tier];
	char key[CACHE_KEY_LEN + 1], why[CONF_ERR_MAX];
	struct cache_entry *e, *next;
	struct dirent *de;
	unsigned version;
	DIR *dir;

	dir = cache_open_listing(c, tier);
	if (!dir)
		return;
	pthread_mutex_lock(&c->mu);
	for (e = c->entries; e; e = e->next)
		if (e->tier == tier)
			e->seen = false;
	pthread_mutex_unlock(&c->mu);
	while ((de = readdir(dir))) {
		struct stat st;
		char meta[sizeof(de->d_name) + 16];

		if (!cache_parse_version_name(de->d_name, key, &version))
			continue;
		pthread_mutex_lock(&c->mu);
		e = cache_index_find_locked(c, tier, key, version);
		if (e)
			e->seen = true;
		pthread_mutex_unlock(&c->mu);
		if (e) {
			snprintf(meta, sizeof(meta), "%s/meta.json",
				 de->d_name);
			if (fstatat(cfd, meta, &st, AT_SYMLINK_NOFOLLOW) == 0) {
				pthread_mutex_lock(&c->mu);
				e = cache_index_find_locked(c, tier, key,
							    version);
				if (e)
					e->last_used = st.st_mtime;
				pthread_mutex_unlock(&c->mu);
			}
			continue;
		}
		e = cache_index_load(c, tier, de->d_name, why, sizeof(why));
		if (!e)
			continue; /* being removed, or broken: recovery's job */
		e->seen = true;
		cache_index_add(c, e);
	}
	closedir(dir);
	pthread_mutex_lock(&c->mu);
	for (e = c->entries; e; e = next) {
		next = e->next;
		if (e->tier == tier && !e->seen)
			cache_index_drop_locked(c, e);
	}
	pthread_mutex_unlock(&c->mu);
}

void cache_index_rescan_shared(struct cache *c, int tier)
{
	size_t t;

	for (t = 0; t < c->conf->ntiers; t++)
		if ((tier < 0 || (int)t == tier) &&
		    cache_tier_shared(c, (int)t))
			cache_index_rescan(c, (int)t);
}

struct cache_snap *cache_index_snapshot(struct cache *c, int tier, uid_t uid,
					bool with_public, const char *key,
					const char *src, size_t *ret_n)
{
	struct cache_snap *s = NULL, *ns;
	const struct cache_entry *e, *o;
	size_t n = 0;

	pthread_mutex_lock(&c->mu);
	for (e = c->entries; e; e = e->next) {
		if ((tier >= 0 && e->tier != tier) ||
		    (uid != (uid_t)-1 && e->uid != uid &&
		     !(with_public && e->public)) ||
		    (key && strcmp(e->key, key)) ||
		    (src && strcmp(e->src, src)))
			continue;
		ns = realloc(s, sizeof(*s) * (n + 1));
		if (!ns)
			break;
		s = ns;
		memset(&s[n], 0, sizeof(s[n]));
		s[n].tier = e->tier;
		snprintf(s[n].key, sizeof(s[n].key), "%s", e->key);
		s[n].version = e->version;
		s[n].uid = e->uid;
		snprintf(s[n].src, sizeof(s[n].src), "%s", e->src);
		snprintf(s[n].user, sizeof(s[n].user), "%s", e->user);
		s[n].bytes = e->bytes;
		s[n].files = e->files;
		s[n].created = e->created;
		s[n].verified = e->verified;
		s[n].last_used = e->last_used;
		s[n].verify = e->verify;
		s[n].public = e->public;
		s[n].reused = cache_entry_reused(e);
		s[n].current = true;
		for (o = c->entries; o; o = o->next)
			if (o->tier == e->tier && o->version > e->version &&
			    !strcmp(o->key, e->key))
				s[n].current = false;
		n++;
	}
	pthread_mutex_unlock(&c->mu);
	*ret_n = n;
	return s;
}

/* The highest version number of KEY present under any name on TIER
 * (complete or not), so that a new version never reuses one. */
static unsigned max_version_on_disk(struct cache *c, int tier, const char *key)
{
	char k[CACHE_KEY_LEN + 1];
	struct dirent *de;
	unsigned v, max = 0;
	DIR *dir;
	int fd;

	fd = cache_open_dir_at(c->cache_fd[tier], ".");
	dir = fd >= 0 ? fdopendir(fd) : NULL;
	if (!dir) {
		if (fd >= 0)
			close(fd);
		return 0;
	}
	while ((de = readdir(dir))) {
		if (cache_parse_version_name(de->d_name, k, &v) &&
		    !strcmp(k, key) && v > max)
			max = v;
	}
	closedir(dir);
	return max;
}

size_t cache_versions_of(struct cache *c, int tier, const char *key,
			 unsigned *ret, size_t max)
{
	const struct cache_entry *e;
	size_t n = 0;

	cache_index_rescan_shared(c, tier);
	pthread_mutex_lock(&c->mu);
	for (e = c->entries; e; e = e->next) {
		size_t k;

		if (e->tier != tier || strcmp(e->key, key))
			continue;
		/* insertion, newest first; the oldest drops off at MAX */
		for (k = n; k > 0 && ret[k - 1] < e->version; k--)
			if (k < max)
				ret[k] = ret[k - 1];
		if (k < max)
			ret[k] = e->version;
		if (n < max)
			n++;
	}
	pthread_mutex_unlock(&c->mu);
	return n;
}

int cache_current(struct cache *c, int tier, const char *key,
		  struct cache_version *ret, unsigned *ret_next)
{
	const struct cache_entry *e, *best = NULL;
	unsigned disk;
	int found = 0;

	cache_index_rescan_shared(c, tier);
	pthread_mutex_lock(&c->mu);
	for (e = c->entries; e; e = e->next)
		if (e->tier == tier && !strcmp(e->key, key) &&
		    (!best || e->version > best->version))
			best = e;
	if (best) {
		ret->version = best->version;
		ret->bytes = best->bytes;
		ret->files = best->files;
		ret->created = best->created;
		ret->verified = best->verified;
		ret->verified_ns = best->verified_ns;
		ret->verify = best->verify;
		found = 1;
	}
	pthread_mutex_unlock(&c->mu);
	disk = max_version_on_disk(c, tier, key);
	if (found && ret->version > disk)
		disk = ret->version;
	*ret_next = disk + 1;
	return found;
}
