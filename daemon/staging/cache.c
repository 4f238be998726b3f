/* cache.c - cache entries on the tiers: index, builds, pins, eviction.
 *
 * Why the index holds summaries only: a dataset of a million files has a
 * manifest of a hundred megabytes, and a node caches many datasets. The
 * daemon never reads a manifest; it opens it and hands the fd to the worker
 * that compares or copies, so its memory grows with the number of entries,
 * not files.
 *
 * Why K.lock is a file lock on the tier and not a mutex: on a Shared tier
 * the builders of K may be on other nodes. flock() on separate open file
 * descriptions also excludes threads of this process from one another, so
 * one mechanism serves both. It is never waited on while cache_mu is held.
 *
 * Publication order, so that a crash at any point leaves nothing half-done
 * that could be served: journal record -> .build dir (user) -> worker
 * copies and syncs -> dir chowned to root 0711 -> everything but data
 * removed -> manifest, meta.json, pins/ written and synced -> rename to
 * K.vN -> journal record removed. Removal goes the other way: rename K.vN
 * to .evict.K.vN.NODE (no longer served), then remove the tree.
 *
 * Every path below a tier is walked from the TIER/cache fd, one component
 * at a time, with O_NOFOLLOW: the build directory and data belong to
 * users, and nothing they plant there may steer root.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/fs/bindmount.h"
#include "common/sched/cachekey.h"
#include "common/config/joblayout.h"
#include "common/base/jsonbuf.h"
#include "common/base/log.h"
#include "common/fs/owntree.h"
#include "common/net/proto.h"
#include "common/fs/rmtree.h"
#include "common/base/smallfile.h"
#include "common/base/units.h"
#include "daemon/staging/cache.h"
#include "daemon/fsutil.h"
#include "daemon/staging/journal.h"
#include "daemon/staging/tiers.h"

#define CACHE_META_MAX (64 * 1024)
#define CACHE_LOCK_POLL_NS 100000000L /* K.lock retry interval */
#define CACHE_PIN_NAME_MAX (CONF_NODE_MAX + 16)

/* The summary of one complete version. */
struct entry {
	struct entry *next;
	int tier;
	char key[CACHE_KEY_LEN + 1];
	unsigned version;
	uid_t uid;
	char *src;
	char *user;
	uint64_t bytes, files;
	time_t created, verified, last_used;
	int64_t verified_ns;
	enum profile_verify verify;
	bool public; /* a public entry: listed to all, root's data */
	/* Jobs that pinned it (for one loaded from disk: 2 if meta.json says
	 * reused, else 1); entries used by one job only are evicted first
	 * (see cand_cmp). */
	unsigned uses;
	bool seen; /* rescan mark */
};

struct cache_lock {
	int fd;
	int tier;
	char key[CACHE_KEY_LEN + 1];
};

static const struct conf *cache_conf;
static struct entry *entries;
static pthread_mutex_t cache_mu = PTHREAD_MUTEX_INITIALIZER;
/* One evictor at a time: two would pick the same victims. */
static pthread_mutex_t evict_mu = PTHREAD_MUTEX_INITIALIZER;
/* Bumped whenever a version enters or leaves the index (cache_mu held):
 * daemon/cluster/cachereport.c tells iostagectld what this node holds when it
 * moved. */
static uint64_t cache_gen;

/* --- names -------------------------------------------------------------------
 */

void cache_key(uid_t uid, const char *src, char ret[CACHE_KEY_LEN + 1])
{
	cachekey_user(uid, src, ret);
}

void cache_key_public(const char *src, char ret[CACHE_KEY_LEN + 1])
{
	cachekey_public(src, ret);
}

static bool is_key(const char *s, size_t len)
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

/* "K.vN" -> key, version. */
static bool parse_version_name(const char *name, char key[CACHE_KEY_LEN + 1],
			       unsigned *ret_version)
{
	const char *v = name + CACHE_KEY_LEN;
	unsigned long n = 0;
	size_t digits;

	if (strlen(name) < CACHE_KEY_LEN + 3 || !is_key(name, CACHE_KEY_LEN) ||
	    v[0] != '.' || v[1] != 'v')
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

static void version_name(const char *key, unsigned version, char *buf,
			 size_t len)
{
	snprintf(buf, len, "%s.v%u", key, version);
}

/* Is NAME (".build.K.vN.NODE" or ".evict.K.vN.NODE") a leftover of
 * PREFIX, and, with MINE, one this node made? */
static bool is_temp_name(const char *name, const char *prefix, bool mine)
{
	size_t plen = strlen(prefix), nlen = strlen(name);
	size_t node = strlen(cache_conf->node_name);

	if (strncmp(name, prefix, plen))
		return false;
	if (!mine)
		return true;
	return nlen > node + 1 && name[nlen - node - 1] == '.' &&
	       !strcmp(name + nlen - node, cache_conf->node_name);
}

static const char *tier_name(int tier) { return cache_conf->tiers[tier].name; }

int cache_version_path(int tier, const char *key, unsigned version, bool data,
		       char *buf, size_t buflen)
{
	int n = snprintf(buf, buflen, "%s/cache/%s.v%u%s",
			 cache_conf->tiers[tier].path, key, version,
			 data ? "/data" : "");

	if (n < 0 || (size_t)n >= buflen) {
		errno = ENAMETOOLONG;
		return -1;
	}
	return 0;
}

static int open_dir_at(int dfd, const char *name)
{
	return openat(dfd, name,
		      O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
}

/* --- the index ---------------------------------------------------------------
 */

static void entry_free(struct entry *e)
{
	if (!e)
		return;
	free(e->src);
	free(e->user);
	free(e);
}

static struct entry *find_locked(int tier, const char *key, unsigned version)
{
	struct entry *e;

	for (e = entries; e; e = e->next)
		if (e->tier == tier && e->version == version &&
		    !strcmp(e->key, key))
			return e;
	return NULL;
}

static void insert_locked(struct entry *e)
{
	e->next = entries;
	entries = e;
	cache_gen++;
	tiers_cache_account(e->tier, (int64_t)e->bytes);
}

/* Unlink E from the index (cache_mu held) and free it. */
static void drop_locked(struct entry *e)
{
	struct entry **pp;

	for (pp = &entries; *pp; pp = &(*pp)->next) {
		if (*pp == e) {
			*pp = e->next;
			cache_gen++;
			tiers_cache_account(e->tier, -(int64_t)e->bytes);
			entry_free(e);
			return;
		}
	}
}

uint64_t cache_generation(void)
{
	uint64_t g;

	pthread_mutex_lock(&cache_mu);
	g = cache_gen;
	pthread_mutex_unlock(&cache_mu);
	return g;
}

static void drop_version(int tier, const char *key, unsigned version)
{
	struct entry *e;

	pthread_mutex_lock(&cache_mu);
	e = find_locked(tier, key, version);
	if (e)
		drop_locked(e);
	pthread_mutex_unlock(&cache_mu);
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
 * be root's (the directory held the user's files while it was built). */
static cJSON *read_meta(int vfd, struct stat *ret_st)
{
	char reason[128], *text;
	struct stat st;
	cJSON *o = NULL;

	text = smallfile_read_at(vfd, "meta.json", O_NOFOLLOW, CACHE_META_MAX,
				 &st, reason, sizeof(reason));
	if (text && st.st_uid == 0)
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

/* Load the summary of TIER's version directory NAME; NULL (with a reason
 * in why) when it lacks meta.json, manifest or data. */
static struct entry *load_version(int tier, const char *name, char *why,
				  size_t whylen)
{
	struct entry *e = NULL;
	struct stat st, mst;
	const cJSON *src, *user, *verify;
	cJSON *meta = NULL;
	int vfd;

	vfd = open_dir_at(tiers_cache_fd(tier), name);
	if (vfd < 0) {
		snprintf(why, whylen, "cannot open: %s", strerror(errno));
		return NULL;
	}
	meta = read_meta(vfd, &mst);
	if (!meta) {
		snprintf(why, whylen, "no readable meta.json");
		goto out;
	}
	if (fstatat(vfd, "manifest", &st, AT_SYMLINK_NOFOLLOW) < 0 ||
	    !S_ISREG(st.st_mode) || st.st_uid != 0) {
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
	if (!parse_version_name(name, e->key, &e->version)) {
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
	e->public = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(meta,
								  "public"));
	/* Whether one job used it before the restart is not recorded: count
	 * one, so that the next job's use marks it reused. */
	e->uses = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(meta,
								"reused"))
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
	/* The data belongs to the entry's user; anything else is not ours
	 * to serve to that user. */
	if (st.st_uid != e->uid) {
		snprintf(why, whylen, "data owned by uid %u, not %u",
			 (unsigned)st.st_uid, (unsigned)e->uid);
		goto fail;
	}
	goto out;
fail:
	entry_free(e);
	e = NULL;
out:
	cJSON_Delete(meta);
	close(vfd);
	return e;
}

/* A listing of TIER's cache directory (its own fd: readdir moves the
 * offset), or NULL after logging why. */
static DIR *open_cache_listing(int tier)
{
	int fd = open_dir_at(tiers_cache_fd(tier), ".");
	DIR *dir = fd >= 0 ? fdopendir(fd) : NULL;

	if (!dir) {
		if (fd >= 0)
			close(fd);
		log_warning("tier '%s': cannot read its cache",
			    tier_name(tier));
	}
	return dir;
}

/* Bring TIER's summaries in line with its directory: new versions (built
 * by other nodes) are loaded, vanished ones dropped, last use refreshed. */
static void rescan(int tier)
{
	int cfd = tiers_cache_fd(tier);
	char key[CACHE_KEY_LEN + 1], why[CONF_ERR_MAX];
	struct entry *e, *next;
	struct dirent *de;
	unsigned version;
	DIR *dir;

	dir = open_cache_listing(tier);
	if (!dir)
		return;
	pthread_mutex_lock(&cache_mu);
	for (e = entries; e; e = e->next)
		if (e->tier == tier)
			e->seen = false;
	pthread_mutex_unlock(&cache_mu);
	while ((de = readdir(dir))) {
		struct stat st;
		char meta[sizeof(de->d_name) + 16];

		if (!parse_version_name(de->d_name, key, &version))
			continue;
		pthread_mutex_lock(&cache_mu);
		e = find_locked(tier, key, version);
		if (e)
			e->seen = true;
		pthread_mutex_unlock(&cache_mu);
		if (e) {
			snprintf(meta, sizeof(meta), "%s/meta.json",
				 de->d_name);
			if (fstatat(cfd, meta, &st, AT_SYMLINK_NOFOLLOW) == 0) {
				pthread_mutex_lock(&cache_mu);
				e = find_locked(tier, key, version);
				if (e)
					e->last_used = st.st_mtime;
				pthread_mutex_unlock(&cache_mu);
			}
			continue;
		}
		e = load_version(tier, de->d_name, why, sizeof(why));
		if (!e)
			continue; /* being removed, or broken: init's job */
		e->seen = true;
		pthread_mutex_lock(&cache_mu);
		if (find_locked(tier, key, version))
			entry_free(e);
		else
			insert_locked(e);
		pthread_mutex_unlock(&cache_mu);
	}
	closedir(dir);
	pthread_mutex_lock(&cache_mu);
	for (e = entries; e; e = next) {
		next = e->next;
		if (e->tier == tier && !e->seen)
			drop_locked(e);
	}
	pthread_mutex_unlock(&cache_mu);
}

static void rescan_if_shared(int tier)
{
	if (cache_conf->tiers[tier].shared)
		rescan(tier);
}

/* --- K.lock ------------------------------------------------------------------
 */

static int lock_open(int tier, const char *key, char *err, size_t errlen)
{
	char name[CACHE_KEY_LEN + 8];
	struct stat st;
	int fd;

	snprintf(name, sizeof(name), "%s.lock", key);
	fd = openat(tiers_cache_fd(tier), name,
		    O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) ||
	    st.st_uid != 0) {
		snprintf(err, errlen, "tier '%s': cannot use %s/cache/%s: %s",
			 tier_name(tier), cache_conf->tiers[tier].path, name,
			 fd < 0 ? strerror(errno) : "not a root-owned file");
		if (fd >= 0)
			close(fd);
		return -1;
	}
	return fd;
}

/* Whether the K.lock we hold the flock of is still the one named K.lock: its
 * last holder may have removed it while we waited (cache_lock_release), and
 * a newcomer then locks the new file, so ours would exclude nobody. */
static bool lock_still_named(int fd)
{
	struct stat st;

	return fstat(fd, &st) == 0 && st.st_nlink > 0;
}

static struct cache_lock *lock_new(int tier, const char *key, int fd)
{
	struct cache_lock *lk = malloc(sizeof(*lk));

	if (!lk)
		return NULL;
	lk->fd = fd;
	lk->tier = tier;
	snprintf(lk->key, sizeof(lk->key), "%s", key);
	return lk;
}

int cache_lock_acquire(int tier, const char *key,
		       bool (*stop)(void *arg, char *why, size_t len),
		       void *arg, struct cache_lock **ret, char *err,
		       size_t errlen)
{
	struct timespec poll = {0, CACHE_LOCK_POLL_NS};
	struct cache_lock *lk;
	int fd = lock_open(tier, key, err, errlen);

	if (fd < 0)
		return -1;
	for (;;) {
		if (flock(fd, LOCK_EX | LOCK_NB) == 0) {
			if (lock_still_named(fd))
				break;
			close(fd); /* removed by its last holder: reopen */
			fd = lock_open(tier, key, err, errlen);
			if (fd < 0)
				return -1;
			continue;
		}
		if (errno != EWOULDBLOCK && errno != EINTR) {
			snprintf(err, errlen,
				 "tier '%s': cannot lock %s.lock: %s",
				 tier_name(tier), key, strerror(errno));
			close(fd);
			return -1;
		}
		if (stop && stop(arg, err, errlen)) {
			close(fd);
			return -1;
		}
		nanosleep(&poll, NULL);
	}
	lk = lock_new(tier, key, fd);
	if (!lk) {
		snprintf(err, errlen, "out of memory");
		close(fd); /* releases the lock */
		return -1;
	}
	*ret = lk;
	return 0;
}

/* K.lock if free right now, else NULL. */
static struct cache_lock *lock_try(int tier, const char *key)
{
	struct cache_lock *lk;
	char err[CONF_ERR_MAX];
	int fd;

	for (;;) {
		fd = lock_open(tier, key, err, sizeof(err));
		if (fd < 0)
			return NULL;
		if (flock(fd, LOCK_EX | LOCK_NB) < 0) {
			close(fd);
			return NULL;
		}
		if (lock_still_named(fd))
			break;
		close(fd); /* removed by its last holder: reopen */
	}
	lk = lock_new(tier, key, fd);
	if (!lk)
		close(fd);
	return lk;
}

/* Whether TIER's index holds a version of KEY. */
static bool key_has_version(int tier, const char *key)
{
	const struct entry *e;
	bool found = false;

	pthread_mutex_lock(&cache_mu);
	for (e = entries; e && !found; e = e->next)
		found = e->tier == tier && !strcmp(e->key, key);
	pthread_mutex_unlock(&cache_mu);
	return found;
}

/* A K.lock whose key has no version left (a failed stage, the last version
 * evicted) is removed by its holder, or a node that stages many distinct
 * datasets between restarts piles up one file per dataset, and every stage
 * lists them (max_version_on_disk). Removed while still held, so whoever
 * waits on it sees it unlinked and reopens (lock_still_named). Not on a
 * Shared tier: other nodes' waiters are out of sight, and their flock on a
 * network file system may not tell a removed file. */
void cache_lock_release(struct cache_lock *lock)
{
	char name[CACHE_KEY_LEN + 8];

	if (!lock)
		return;
	if (!cache_conf->tiers[lock->tier].shared &&
	    !key_has_version(lock->tier, lock->key)) {
		snprintf(name, sizeof(name), "%s.lock", lock->key);
		unlinkat(tiers_cache_fd(lock->tier), name, 0);
	}
	close(lock->fd); /* the only open file description: unlocks */
	free(lock);
}

/* --- versions on disk --------------------------------------------------------
 */

/* The pins of version NAME on TIER: their count, and with LIST their names
 * (", "-separated, cut to LISTLEN). -1 when pins/ cannot be read (then
 * treat it as pinned). */
static int pins_read(int tier, const char *name, char *list, size_t listlen)
{
	struct dirent *de;
	DIR *dir;
	int vfd, pfd, n = 0;

	if (list && listlen)
		list[0] = '\0';
	vfd = open_dir_at(tiers_cache_fd(tier), name);
	if (vfd < 0)
		return errno == ENOENT ? 0 : -1;
	pfd = open_dir_at(vfd, "pins");
	close(vfd);
	if (pfd < 0)
		return errno == ENOENT ? 0 : -1;
	dir = fdopendir(pfd);
	if (!dir) {
		close(pfd);
		return -1;
	}
	while ((de = readdir(dir))) {
		size_t used;

		if (de->d_name[0] == '.')
			continue;
		n++;
		if (!list || !listlen)
			continue;
		used = strlen(list);
		snprintf(list + used, listlen - used, "%s%s", used ? ", " : "",
			 de->d_name);
	}
	closedir(dir);
	return n;
}

/* Unpublish and remove TIER's version NAME: rename it out of the served
 * names first, so that a crash mid-way leaves no half-removed K.vN. */
static int remove_version_dir(int tier, const char *name, char *err,
			      size_t errlen)
{
	int cfd = tiers_cache_fd(tier);
	char tmp[JOURNAL_NAME_MAX], rmerr[CONF_ERR_MAX];

	snprintf(tmp, sizeof(tmp), ".evict.%s.%s", name, cache_conf->node_name);
	if (rmtree_at(cfd, tmp, rmerr, sizeof(rmerr)) < 0 ||
	    renameat2(cfd, name, cfd, tmp, RENAME_NOREPLACE) < 0) {
		if (errno == ENOENT)
			return 0;
		snprintf(err, errlen, "tier '%s': cannot remove cache/%s: %s",
			 tier_name(tier), name, strerror(errno));
		return -1;
	}
	(void)fsync(cfd);
	if (rmtree_at(cfd, tmp, rmerr, sizeof(rmerr)) < 0) {
		/* Unpublished already; the next start finishes it. */
		log_warningx("tier '%s': cache/%s: %s", tier_name(tier), tmp,
			     rmerr);
	}
	return 0;
}

/* Remove version E (summary copied by the caller) from disk and index. */
static int remove_version(int tier, const char *key, unsigned version,
			  char *err, size_t errlen)
{
	char name[CACHE_ENTRY_NAME_MAX];

	version_name(key, version, name, sizeof(name));
	if (remove_version_dir(tier, name, err, errlen) < 0)
		return -1;
	drop_version(tier, key, version);
	return 0;
}

/* The highest version number of KEY present under any name on TIER
 * (complete or not), so that a new version never reuses one. */
static unsigned max_version_on_disk(int tier, const char *key)
{
	char k[CACHE_KEY_LEN + 1];
	struct dirent *de;
	unsigned v, max = 0;
	DIR *dir;
	int fd;

	fd = open_dir_at(tiers_cache_fd(tier), ".");
	dir = fd >= 0 ? fdopendir(fd) : NULL;
	if (!dir) {
		if (fd >= 0)
			close(fd);
		return 0;
	}
	while ((de = readdir(dir))) {
		if (parse_version_name(de->d_name, k, &v) && !strcmp(k, key) &&
		    v > max)
			max = v;
	}
	closedir(dir);
	return max;
}

int cache_current(int tier, const char *key, struct cache_version *ret,
		  unsigned *ret_next)
{
	const struct entry *e, *best = NULL;
	unsigned disk;
	int found = 0;

	rescan_if_shared(tier);
	pthread_mutex_lock(&cache_mu);
	for (e = entries; e; e = e->next)
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
	pthread_mutex_unlock(&cache_mu);
	disk = max_version_on_disk(tier, key);
	if (found && ret->version > disk)
		disk = ret->version;
	*ret_next = disk + 1;
	return found;
}

int cache_open_manifest(int tier, const char *key, unsigned version)
{
	char name[CACHE_ENTRY_NAME_MAX];
	int vfd, fd;

	version_name(key, version, name, sizeof(name));
	vfd = open_dir_at(tiers_cache_fd(tier), name);
	if (vfd < 0)
		return -1;
	fd = openat(vfd, "manifest", O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	close(vfd);
	return fd;
}

static const char *verify_name(enum profile_verify v)
{
	return profile_verify_name(v);
}

int64_t cache_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static char *meta_text(const char *key, unsigned version,
		       const struct cache_meta *m, time_t created,
		       int64_t verified_ns)
{
	cJSON *o = cJSON_CreateObject();
	char *text;

	if (!o)
		return NULL;
	cJSON_AddStringToObject(o, "key", key);
	cJSON_AddNumberToObject(o, "version", version);
	cJSON_AddStringToObject(o, "src", m->src);
	cJSON_AddNumberToObject(o, "uid", (double)m->uid);
	cJSON_AddStringToObject(o, "user", m->user);
	cJSON_AddNumberToObject(o, "bytes", (double)m->bytes);
	cJSON_AddNumberToObject(o, "files", (double)m->files);
	cJSON_AddStringToObject(o, "verify", verify_name(m->verify));
	if (m->public)
		cJSON_AddBoolToObject(o, "public", true);
	if (m->reused)
		cJSON_AddBoolToObject(o, "reused", true);
	cJSON_AddNumberToObject(o, "created", (double)created);
	cJSON_AddNumberToObject(o, "verified",
				(double)(verified_ns / 1000000000));
	cJSON_AddNumberToObject(o, "verified_ns", (double)verified_ns);
	cJSON_AddStringToObject(o, "node", cache_conf->node_name);
	text = jsonbuf_dup(o);
	cJSON_Delete(o);
	return text;
}

/* A second job used it. */
static bool entry_reused(const struct entry *e)
{
	return e->uses >= 2;
}

/* Rewrite meta.json of TIER's KEY vVERSION from its index entry: an atomic
 * replace, so its mtime (the last use) moves to now. */
static void meta_rewrite(int tier, const char *key, unsigned version)
{
	char name[CACHE_ENTRY_NAME_MAX], *text = NULL;
	struct cache_meta m;
	struct entry *e;
	int vfd;

	pthread_mutex_lock(&cache_mu);
	e = find_locked(tier, key, version);
	if (e) {
		m = (struct cache_meta){.src = e->src,
					.uid = e->uid,
					.user = e->user,
					.bytes = e->bytes,
					.files = e->files,
					.verify = e->verify,
					.public = e->public,
					.reused = entry_reused(e)};
		text = meta_text(key, version, &m, e->created, e->verified_ns);
	}
	pthread_mutex_unlock(&cache_mu);
	if (!text)
		return;
	version_name(key, version, name, sizeof(name));
	vfd = open_dir_at(tiers_cache_fd(tier), name);
	if (vfd < 0 ||
	    fsutil_write_atomic(vfd, "meta.json", text, strlen(text), 0644) < 0)
		log_warning("tier '%s': cannot update cache/%s/meta.json",
			    tier_name(tier), name);
	if (vfd >= 0)
		close(vfd);
	free(text);
}

void cache_mark_verified(int tier, const char *key, unsigned version,
			 int64_t verified_ns)
{
	struct entry *e;
	bool found;

	pthread_mutex_lock(&cache_mu);
	e = find_locked(tier, key, version);
	found = e != NULL;
	if (e) {
		e->verified = (time_t)(verified_ns / 1000000000);
		e->verified_ns = verified_ns;
	}
	pthread_mutex_unlock(&cache_mu);
	if (found)
		meta_rewrite(tier, key, version);
}

/* --- builds ------------------------------------------------------------------
 */

/* An anonymous root file on the tier for the worker's manifest. */
static int manifest_tmp(int tier, const char *build)
{
	int cfd = tiers_cache_fd(tier), fd;
	char name[JOURNAL_NAME_MAX + 8];

	fd = openat(cfd, ".", O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
	if (fd >= 0 || (errno != EOPNOTSUPP && errno != EISDIR))
		return fd;
	/* No O_TMPFILE here: a named file, unlinked at once. */
	snprintf(name, sizeof(name), "%s.mf", build);
	fd = openat(cfd, name,
		    O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd >= 0)
		unlinkat(cfd, name, 0);
	return fd;
}

int cache_build_begin(int tier, const char *key, unsigned version, uid_t uid,
		      gid_t gid, struct cache_build *ret, char *err,
		      size_t errlen)
{
	int cfd = tiers_cache_fd(tier), bfd = -1, saved;
	char rmerr[CONF_ERR_MAX];
	struct cache_build b;

	memset(&b, 0, sizeof(b));
	b.tier = tier;
	b.version = version;
	b.uid = uid;
	b.manifest_fd = -1;
	snprintf(b.key, sizeof(b.key), "%s", key);
	snprintf(b.name, sizeof(b.name), ".build.%s.v%u.%s", key, version,
		 cache_conf->node_name);
	snprintf(b.path, sizeof(b.path), "%s/cache/%s",
		 cache_conf->tiers[tier].path, b.name);
	if (journal_add(tier, b.name, err, errlen) < 0)
		return -1;
	/* Ours from an earlier attempt (the journal would have removed it
	 * at start; this is belt and braces). */
	if (rmtree_at(cfd, b.name, rmerr, sizeof(rmerr)) < 0 ||
	    mkdirat(cfd, b.name, 0700) < 0)
		goto fail;
	bfd = open_dir_at(cfd, b.name);
	if (bfd < 0 || fchown(bfd, uid, gid) < 0 || fchmod(bfd, 0700) < 0)
		goto fail;
	close(bfd);
	bfd = -1;
	b.manifest_fd = manifest_tmp(tier, b.name);
	if (b.manifest_fd < 0)
		goto fail;
	*ret = b;
	return 0;
fail:
	saved = errno;
	snprintf(err, errlen, "tier '%s': cannot create cache/%s: %s",
		 tier_name(tier), b.name, strerror(saved));
	if (bfd >= 0)
		close(bfd);
	rmtree_at(cfd, b.name, rmerr, sizeof(rmerr));
	journal_remove(tier, b.name);
	errno = saved;
	return -1;
}

void cache_build_abort(struct cache_build *b)
{
	char rmerr[CONF_ERR_MAX];

	if (b->manifest_fd >= 0)
		close(b->manifest_fd);
	b->manifest_fd = -1;
	if (rmtree_at(tiers_cache_fd(b->tier), b->name, rmerr, sizeof(rmerr)) <
	    0) {
		/* Keep the journal record: the next start retries. */
		log_warningx("tier '%s': cannot remove cache/%s: %s",
			     tier_name(b->tier), b->name, rmerr);
		return;
	}
	journal_remove(b->tier, b->name);
}

/* Copy the whole of IN into OUT. 0 or -1 with errno. */
static int copy_fd(int in, int out)
{
	char buf[65536];

	if (lseek(in, 0, SEEK_SET) < 0)
		return -1;
	for (;;) {
		ssize_t n = copy_file_range(in, NULL, out, NULL, 1 << 30, 0);

		if (n == 0)
			return 0;
		if (n > 0)
			continue;
		if (errno == EINTR)
			continue;
		if (errno != EXDEV && errno != EINVAL && errno != ENOSYS &&
		    errno != EOPNOTSUPP)
			return -1;
		break; /* fall back to read/write */
	}
	for (;;) {
		ssize_t n = read(in, buf, sizeof(buf));

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -1;
		if (n == 0)
			return 0;
		if (fsutil_write_all(out, buf, (size_t)n) < 0)
			return -1;
	}
}

/* Create NAME in DFD (O_EXCL|O_NOFOLLOW, MODE) with DATA or the contents
 * of FROM_FD, synced. 0 or -1 with errno. */
static int write_new(int dfd, const char *name, mode_t mode, const char *data,
		     int from_fd)
{
	int fd, saved;

	fd = openat(dfd, name,
		    O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
	if (fd < 0)
		return -1;
	if ((data ? fsutil_write_all(fd, data, strlen(data))
		  : copy_fd(from_fd, fd)) < 0 ||
	    fsync(fd) < 0) {
		saved = errno;
		close(fd);
		errno = saved;
		return -1;
	}
	return close(fd);
}

/* Remove every entry of the build directory BFD except "data". */
static int strip_build(int bfd, char *err, size_t errlen)
{
	struct dirent *de;
	DIR *dir;
	int fd = fcntl(bfd, F_DUPFD_CLOEXEC, 0);

	dir = fd >= 0 ? fdopendir(fd) : NULL;
	if (!dir) {
		if (fd >= 0)
			close(fd);
		snprintf(err, errlen, "cannot read: %s", strerror(errno));
		return -1;
	}
	while ((de = readdir(dir))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, "..") ||
		    !strcmp(de->d_name, "data"))
			continue;
		if (rmtree_at(bfd, de->d_name, err, errlen) < 0) {
			closedir(dir);
			return -1;
		}
	}
	closedir(dir);
	return 0;
}

int cache_build_publish(struct cache_build *b, const struct cache_meta *meta,
			char *err, size_t errlen)
{
	int cfd = tiers_cache_fd(b->tier), bfd = -1;
	char name[CACHE_ENTRY_NAME_MAX], why[CONF_ERR_MAX] = "", *text = NULL;
	struct entry *e;
	struct stat st;
	time_t now = time(NULL);

	version_name(b->key, b->version, name, sizeof(name));
	bfd = open_dir_at(cfd, b->name);
	if (bfd < 0 || fstat(bfd, &st) < 0) {
		snprintf(why, sizeof(why), "cannot open: %s", strerror(errno));
		goto fail;
	}
	/* The worker is gone: from here on only root writes in it. */
	if (fchown(bfd, 0, 0) < 0 || fchmod(bfd, 0711) < 0) {
		snprintf(why, sizeof(why), "cannot take it back: %s",
			 strerror(errno));
		goto fail;
	}
	if (strip_build(bfd, why, sizeof(why)) < 0)
		goto fail;
	if (fstatat(bfd, "data", &st, AT_SYMLINK_NOFOLLOW) < 0 ||
	    !(S_ISDIR(st.st_mode) || S_ISREG(st.st_mode)) ||
	    st.st_uid != b->uid) {
		snprintf(why, sizeof(why), "the worker left no data");
		goto fail;
	}
	/* Public: other users will read it, so nothing of it may stay the
	 * builder's (nor anyone's but root's) to change. */
	if (meta->public) {
		char terr[CONF_ERR_MAX - 64];

		if (owntree_take(bfd, "data", 0, 0, terr, sizeof(terr)) < 0) {
			snprintf(why, sizeof(why), "cannot take data over: %s",
				 terr);
			goto fail;
		}
	}
	text = meta_text(b->key, b->version, meta, now,
			 meta->verified_ns ? meta->verified_ns
					   : (int64_t)now * 1000000000);
	if (!text) {
		snprintf(why, sizeof(why), "out of memory");
		goto fail;
	}
	if (write_new(bfd, "manifest", 0600, NULL, b->manifest_fd) < 0 ||
	    write_new(bfd, "meta.json", 0644, text, -1) < 0 ||
	    mkdirat(bfd, "pins", 0755) < 0 || fsync(bfd) < 0) {
		snprintf(why, sizeof(why), "cannot write: %s", strerror(errno));
		goto fail;
	}
	if (renameat2(cfd, b->name, cfd, name, RENAME_NOREPLACE) < 0) {
		snprintf(why, sizeof(why), "cannot rename to %s: %s", name,
			 strerror(errno));
		goto fail;
	}
	(void)fsync(cfd);
	close(bfd);
	bfd = -1;
	free(text);
	text = NULL;
	journal_remove(b->tier, b->name);
	close(b->manifest_fd);
	b->manifest_fd = -1;

	e = load_version(b->tier, name, why, sizeof(why));
	if (!e) {
		snprintf(err, errlen, "tier '%s': cache/%s: %s",
			 tier_name(b->tier), name, why);
		return -1;
	}
	e->uses = 0; /* new: the job it was built for pins it next */
	pthread_mutex_lock(&cache_mu);
	if (find_locked(b->tier, e->key, e->version))
		entry_free(e);
	else
		insert_locked(e);
	pthread_mutex_unlock(&cache_mu);
	return 0;
fail:
	snprintf(err, errlen, "tier '%s': cannot publish cache/%s: %s",
		 tier_name(b->tier), b->name, why);
	if (bfd >= 0)
		close(bfd);
	free(text);
	cache_build_abort(b);
	return -1;
}

/* --- pins and views ----------------------------------------------------------
 */

static void pin_name(uint32_t jobid, char *buf, size_t len)
{
	snprintf(buf, len, "%s.%" PRIu32, cache_conf->node_name, jobid);
}

int cache_pin(int tier, const char *key, unsigned version, uint32_t jobid,
	      char *err, size_t errlen)
{
	char name[CACHE_ENTRY_NAME_MAX], pin[CACHE_PIN_NAME_MAX];
	int vfd = -1, pfd = -1, fd = -1, r = -1;
	struct entry *e;
	bool promoted = false;

	version_name(key, version, name, sizeof(name));
	pin_name(jobid, pin, sizeof(pin));
	vfd = open_dir_at(tiers_cache_fd(tier), name);
	if (vfd >= 0)
		pfd = open_dir_at(vfd, "pins");
	if (pfd >= 0)
		fd = openat(pfd, pin,
			    O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0644);
	if (fd < 0) {
		snprintf(err, errlen, "tier '%s': cannot pin cache/%s: %s",
			 tier_name(tier), name, strerror(errno));
		goto out;
	}
	(void)fsync(pfd);
	pthread_mutex_lock(&cache_mu);
	e = find_locked(tier, key, version);
	if (e) {
		e->last_used = time(NULL);
		promoted = ++e->uses == 2;
	}
	pthread_mutex_unlock(&cache_mu);
	/* meta.json's mtime is the last use (LRU); a second job's use is
	 * recorded in it, so that a restart keeps the entry's class. */
	if (promoted)
		meta_rewrite(tier, key, version);
	else if (utimensat(vfd, "meta.json", NULL, AT_SYMLINK_NOFOLLOW) < 0)
		log_warning("tier '%s': cannot touch cache/%s/meta.json",
			    tier_name(tier), name);
	r = 0;
out:
	if (fd >= 0)
		close(fd);
	if (pfd >= 0)
		close(pfd);
	if (vfd >= 0)
		close(vfd);
	return r;
}

int cache_mount_job(int tier, uint32_t jobid, const char *name,
		    const char *key, unsigned version, char *err,
		    size_t errlen)
{
	char job[JOBLAYOUT_JOB_NAME_MAX], vname[CACHE_ENTRY_NAME_MAX],
		why[CONF_ERR_MAX];
	struct stat st;
	int jfd = -1, dfd = -1, vfd = -1, sfd = -1, r = -1;

	if (joblayout_job_name(cache_conf, &cache_conf->tiers[tier], jobid, job,
			       sizeof(job)) < 0)
		snprintf(job, sizeof(job), "%" PRIu32, jobid); /* cannot happen */
	version_name(key, version, vname, sizeof(vname));
	jfd = open_dir_at(tiers_jobs_fd(tier), job);
	if (jfd >= 0)
		dfd = open_dir_at(jfd, "data");
	if (dfd < 0 || fstat(dfd, &st) < 0) {
		snprintf(err, errlen, "tier '%s': cannot open jobs/%s/data: %s",
			 tier_name(tier), job, strerror(errno));
		goto out;
	}
	if (st.st_uid != 0) {
		/* The user swapped our directory for theirs. */
		snprintf(err, errlen,
			 "tier '%s': jobs/%s/data is not root's any more",
			 tier_name(tier), job);
		goto out;
	}
	vfd = open_dir_at(tiers_cache_fd(tier), vname);
	if (vfd >= 0)
		sfd = openat(vfd, "data", O_PATH | O_NOFOLLOW | O_CLOEXEC);
	if (sfd < 0) {
		snprintf(err, errlen, "tier '%s': cannot open cache/%s/data: %s",
			 tier_name(tier), vname, strerror(errno));
		goto out;
	}
	if (bindmount_ro_at(sfd, dfd, name, why, sizeof(why)) < 0) {
		snprintf(err, errlen, "tier '%s': jobs/%s/data: %s",
			 tier_name(tier), job, why);
		goto out;
	}
	r = 0;
out:
	if (sfd >= 0)
		close(sfd);
	if (vfd >= 0)
		close(vfd);
	if (dfd >= 0)
		close(dfd);
	if (jfd >= 0)
		close(jfd);
	return r;
}

/* The version numbers of KEY on TIER from the index (ascending is not
 * needed). Caller frees; *ret_n may be 0. */
static unsigned *versions_of(int tier, const char *key, size_t *ret_n)
{
	const struct entry *e;
	unsigned *v = NULL, *nv;
	size_t n = 0;

	pthread_mutex_lock(&cache_mu);
	for (e = entries; e; e = e->next) {
		if (e->tier != tier || strcmp(e->key, key))
			continue;
		nv = realloc(v, sizeof(*v) * (n + 1));
		if (!nv)
			break;
		v = nv;
		v[n++] = e->version;
	}
	pthread_mutex_unlock(&cache_mu);
	*ret_n = n;
	return v;
}

void cache_gc_key(int tier, const char *key)
{
	char name[CACHE_ENTRY_NAME_MAX], err[CONF_ERR_MAX];
	unsigned *v, max = 0;
	size_t n, i;

	v = versions_of(tier, key, &n);
	for (i = 0; i < n; i++)
		if (v[i] > max)
			max = v[i];
	for (i = 0; i < n; i++) {
		if (v[i] == max)
			continue;
		version_name(key, v[i], name, sizeof(name));
		if (pins_read(tier, name, NULL, 0) != 0)
			continue;
		if (remove_version(tier, key, v[i], err, sizeof(err)) < 0)
			log_warningx("%s", err);
		else
			log_info("tier '%s': removed old cache version %s",
				 tier_name(tier), name);
	}
	free(v);
}

void cache_unpin_job(int tier, const char *key, uint32_t jobid)
{
	char name[CACHE_ENTRY_NAME_MAX], pin[CACHE_PIN_NAME_MAX];
	struct cache_lock *lk;
	unsigned *v;
	size_t n, i;

	rescan_if_shared(tier);
	pin_name(jobid, pin, sizeof(pin));
	v = versions_of(tier, key, &n);
	for (i = 0; i < n; i++) {
		int vfd, pfd = -1;

		version_name(key, v[i], name, sizeof(name));
		vfd = open_dir_at(tiers_cache_fd(tier), name);
		if (vfd >= 0)
			pfd = open_dir_at(vfd, "pins");
		if (pfd >= 0 && unlinkat(pfd, pin, 0) < 0 && errno != ENOENT)
			log_warning("tier '%s': cannot unpin cache/%s/pins/%s",
				    tier_name(tier), name, pin);
		if (pfd >= 0)
			close(pfd);
		if (vfd >= 0)
			close(vfd);
	}
	free(v);
	/* Old versions go once unpinned; if a stager holds K.lock it will
	 * do it itself. */
	lk = lock_try(tier, key);
	if (lk) {
		cache_gc_key(tier, key);
		cache_lock_release(lk);
	}
}

/* --- space and eviction
 * ------------------------------------------------------- */

/* A victim candidate, copied out of the index. */
struct cand {
	char key[CACHE_KEY_LEN + 1];
	unsigned version;
	uint64_t bytes;
	time_t last_used;
	bool reused;
};

/* Eviction order: versions no second job has used first, then the reused
 * ones, each least recently used first (a segmented LRU). A dataset read by
 * one job and never again (one-pass inference, a single sweep) thus never
 * pushes out a training set that jobs come back to, however recent it is;
 * it still stays cached while there is room, and a second use promotes it. */
static int cand_cmp(const void *a, const void *b)
{
	const struct cand *x = a, *y = b;

	if (x->reused != y->reused)
		return x->reused ? 1 : -1;
	if (x->last_used != y->last_used)
		return x->last_used < y->last_used ? -1 : 1;
	return x->version < y->version ? -1 : x->version > y->version;
}

/* TIER's versions nobody pins, in eviction order (cand_cmp); UNUSED_ONLY:
 * only those no job has used (pre-stages nobody found, warm-ups). */
static struct cand *candidates(int tier, bool unused_only, size_t *ret_n,
			       uint64_t *ret_bytes)
{
	struct cand *c = NULL, *nc;
	const struct entry *e;
	size_t n = 0, i, kept = 0;
	uint64_t bytes = 0;

	pthread_mutex_lock(&cache_mu);
	for (e = entries; e; e = e->next) {
		if (e->tier != tier || (unused_only && e->uses > 0))
			continue;
		nc = realloc(c, sizeof(*c) * (n + 1));
		if (!nc)
			break;
		c = nc;
		snprintf(c[n].key, sizeof(c[n].key), "%s", e->key);
		c[n].version = e->version;
		c[n].bytes = e->bytes;
		c[n].last_used = e->last_used;
		c[n].reused = entry_reused(e);
		n++;
	}
	pthread_mutex_unlock(&cache_mu);
	for (i = 0; i < n; i++) {
		char name[CACHE_ENTRY_NAME_MAX];

		version_name(c[i].key, c[i].version, name, sizeof(name));
		if (pins_read(tier, name, NULL, 0) != 0)
			continue;
		bytes += c[i].bytes;
		c[kept++] = c[i];
	}
	if (kept)
		qsort(c, kept, sizeof(*c), cand_cmp);
	*ret_n = kept;
	*ret_bytes = bytes;
	return c;
}

/* Evict C if it is still unpinned and nobody holds its K.lock. */
static bool evict_one(int tier, const struct cand *c)
{
	char name[CACHE_ENTRY_NAME_MAX], err[CONF_ERR_MAX], size[32];
	struct cache_lock *lk = lock_try(tier, c->key);
	bool done = false;

	if (!lk)
		return false; /* being staged or verified right now */
	version_name(c->key, c->version, name, sizeof(name));
	if (pins_read(tier, name, NULL, 0) == 0) {
		if (remove_version(tier, c->key, c->version, err, sizeof(err)) <
		    0) {
			log_warningx("%s", err);
		} else {
			log_info("tier '%s': evicted cache/%s (%s, unused "
				 "since %ld s)",
				 tier_name(tier), name,
				 units_bytes(c->bytes, size, sizeof(size)),
				 (long)(time(NULL) - c->last_used));
			done = true;
		}
	}
	cache_lock_release(lk);
	return done;
}

int cache_reserve(int tier, const char *dsname, uint64_t size,
		  bool speculative, char *err, size_t errlen)
{
	const struct conf_tier *t = &cache_conf->tiers[tier];
	char need[32], avail[32];
	struct tiers_usage u;
	struct cand *c = NULL;
	uint64_t high, low, evictable = 0;
	size_t n = 0, i;
	int r = -1;

	rescan_if_shared(tier);
	pthread_mutex_lock(&evict_mu);
	if (tiers_usage(tier, &u) < 0) {
		snprintf(err, errlen, "tier '%s': cannot statvfs %s: %s",
			 t->name, t->path, strerror(errno));
		goto out;
	}
	high = u.capacity / 100 * cache_conf->cache_high_watermark;
	low = u.capacity / 100 * cache_conf->cache_low_watermark;
	if (u.used + size > high || size > u.free) {
		c = candidates(tier, speculative, &n, &evictable);
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
		/* Down to the low watermark, so the next stagings need no
		 * eviction; but that slack is made of one-use versions only:
		 * for data jobs came back to, below the high one is enough. */
		for (i = 0; i < n; i++) {
			uint64_t target = c[i].reused ? high : low;

			if (u.used + size <= target && size <= u.free)
				break;
			if (evict_one(tier, &c[i]) && tiers_usage(tier, &u) < 0)
				break;
		}
	}
	if (tiers_reserve(tier, dsname, size, err, errlen) < 0) {
		if (errno == ENOSPC && tiers_usage(tier, &u) == 0)
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
	pthread_mutex_unlock(&evict_mu);
	free(c);
	return r;
}

/* --- listing and evicting by request
 * ------------------------------------------ */

/* A copy of one summary, for work without cache_mu. */
struct snap {
	int tier;
	char key[CACHE_KEY_LEN + 1];
	unsigned version;
	uid_t uid;
	char src[CONF_PATH_MAX];
	char user[64];
	uint64_t bytes, files;
	time_t created, verified, last_used;
	enum profile_verify verify;
	bool public, reused;
	bool current;
};

/* Summaries matching the filter (uid: (uid_t)-1 = any; key/src NULL =
 * any; tier -1 = any; WITH_PUBLIC: public entries whatever the uid).
 * Caller frees. */
static struct snap *snapshot(int tier, uid_t uid, bool with_public,
			     const char *key, const char *src, size_t *ret_n)
{
	struct snap *s = NULL, *ns;
	const struct entry *e, *o;
	size_t n = 0;

	pthread_mutex_lock(&cache_mu);
	for (e = entries; e; e = e->next) {
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
		s[n].reused = entry_reused(e);
		s[n].current = true;
		for (o = entries; o; o = o->next)
			if (o->tier == e->tier && o->version > e->version &&
			    !strcmp(o->key, e->key))
				s[n].current = false;
		n++;
	}
	pthread_mutex_unlock(&cache_mu);
	*ret_n = n;
	return s;
}

static void rescan_shared(int tier)
{
	size_t t;

	for (t = 0; t < cache_conf->ntiers; t++)
		if (tier < 0 || (int)t == tier)
			rescan_if_shared((int)t);
}

cJSON *cache_ls_json(uid_t peer_uid)
{
	cJSON *arr = cJSON_CreateArray(), *o, *pins;
	struct snap *s;
	size_t n, i;

	if (!arr)
		return NULL;
	rescan_shared(-1);
	/* Public entries hold only what everyone may read: listed to all. */
	s = snapshot(-1, peer_uid == 0 ? (uid_t)-1 : peer_uid, true, NULL,
		     NULL, &n);
	for (i = 0; i < n; i++) {
		char name[CACHE_ENTRY_NAME_MAX], list[1024], *p, *save = NULL;
		int npins;

		version_name(s[i].key, s[i].version, name, sizeof(name));
		npins = pins_read(s[i].tier, name, list, sizeof(list));
		o = cJSON_CreateObject();
		if (!o) {
			cJSON_Delete(arr);
			arr = NULL;
			break;
		}
		cJSON_AddStringToObject(o, "tier", tier_name(s[i].tier));
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
		cJSON_AddStringToObject(o, "verify", verify_name(s[i].verify));
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

cJSON *cache_evict(uid_t peer_uid, const char *key, const char *src, uid_t uid,
		   bool all_users, int tier, char *err, size_t errlen)
{
	struct cache_lock **locks = NULL;
	cJSON *arr = NULL, *o;
	struct snap *s = NULL;
	size_t n = 0, i, j;
	uid_t only = (uid_t)-1;
	char k[CACHE_KEY_LEN + 1];

	rescan_shared(tier);
	if (key) {
		s = snapshot(tier, (uid_t)-1, false, key, NULL, &n);
	} else {
		if (!all_users) {
			cache_key(uid, src, k);
			only = uid;
		}
		s = snapshot(tier, only, false, all_users ? NULL : k, src, &n);
	}
	if (n == 0) {
		if (key)
			snprintf(err, errlen, "no cache entry with key %s%s%s",
				 key, tier >= 0 ? " on tier " : "",
				 tier >= 0 ? tier_name(tier) : "");
		else
			snprintf(err, errlen,
				 "no cache entry for source %s%s%s", src,
				 tier >= 0 ? " on tier " : "",
				 tier >= 0 ? tier_name(tier) : "");
		goto out;
	}
	for (i = 0; i < n; i++) {
		if (peer_uid != 0 && s[i].public) {
			snprintf(err, errlen,
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
			locks[i] = lock_try(s[i].tier, s[i].key);
			if (!locks[i]) {
				snprintf(err, errlen,
					 "cache entry %s on tier '%s' (%s) is "
					 "being staged right now; try again",
					 s[i].key, tier_name(s[i].tier),
					 s[i].src);
				goto out;
			}
		}
		version_name(s[i].key, s[i].version, name, sizeof(name));
		np = pins_read(s[i].tier, name, list, sizeof(list));
		if (np != 0) {
			snprintf(err, errlen,
				 "cache entry %s on tier '%s' (%s) is pinned "
				 "by %s; not evicted",
				 name, tier_name(s[i].tier), s[i].src,
				 np < 0 ? "unreadable pins" : list);
			goto out;
		}
	}
	arr = cJSON_CreateArray();
	for (i = 0; arr && i < n; i++) {
		char name[CACHE_ENTRY_NAME_MAX], rerr[CONF_ERR_MAX];

		version_name(s[i].key, s[i].version, name, sizeof(name));
		if (remove_version(s[i].tier, s[i].key, s[i].version, rerr,
				   sizeof(rerr)) < 0) {
			log_warningx("%s", rerr);
			continue;
		}
		log_info("tier '%s': cache/%s (%s, uid %u) evicted on request",
			 tier_name(s[i].tier), name, s[i].src,
			 (unsigned)s[i].uid);
		o = cJSON_CreateObject();
		if (!o)
			continue;
		cJSON_AddStringToObject(o, "tier", tier_name(s[i].tier));
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

void cache_tier_counts(int tier, unsigned *ret_entries, unsigned *ret_pinned)
{
	const struct entry *e;
	unsigned n = 0;

	pthread_mutex_lock(&cache_mu);
	for (e = entries; e; e = e->next)
		if (e->tier == tier)
			n++;
	pthread_mutex_unlock(&cache_mu);
	*ret_entries = n;
	if (ret_pinned)
		*ret_pinned = 0;
}

/* --- start-up
 * ------------------------------------------------------------------- */

static int replay_remove(int tier, const char *build, void *arg)
{
	char rmerr[CONF_ERR_MAX];

	(void)arg;
	if (rmtree_at(tiers_cache_fd(tier), build, rmerr, sizeof(rmerr)) < 0) {
		log_warningx("tier '%s': journaled build cache/%s: %s",
			     tier_name(tier), build, rmerr);
		return -1;
	}
	log_warningx("tier '%s': removed cache/%s, an unfinished build",
		     tier_name(tier), build);
	return 0;
}

/* Drop this node's pins, in version NAME, of jobs JOB_KNOWN does not know. */
static void drop_stale_pins(int tier, const char *name,
			    bool (*job_known)(uint32_t))
{
	size_t node = strlen(cache_conf->node_name);
	struct dirent *de;
	DIR *dir;
	int vfd, pfd;

	vfd = open_dir_at(tiers_cache_fd(tier), name);
	if (vfd < 0)
		return;
	pfd = open_dir_at(vfd, "pins");
	close(vfd);
	dir = pfd >= 0 ? fdopendir(pfd) : NULL;
	if (!dir) {
		if (pfd >= 0)
			close(pfd);
		return;
	}
	while ((de = readdir(dir))) {
		const char *id = de->d_name + node + 1;
		char *end;
		unsigned long j;

		if (strncmp(de->d_name, cache_conf->node_name, node) ||
		    de->d_name[node] != '.')
			continue;
		errno = 0;
		j = strtoul(id, &end, 10);
		if (*id && !*end && !errno && j <= UINT32_MAX &&
		    job_known((uint32_t)j))
			continue;
		if (unlinkat(dirfd(dir), de->d_name, 0) == 0)
			log_info("tier '%s': dropped cache/%s/pins/%s (job "
				 "no longer known)",
				 tier_name(tier), name, de->d_name);
	}
	closedir(dir);
}

/* Remove the K.lock files of keys with no version left (a holder removes
 * its own, cache_lock_release; these a crash left). Only on a tier no
 * other node uses, at start: nobody else can hold or wait for them. */
static void drop_idle_locks(int tier)
{
	int cfd = tiers_cache_fd(tier), fd;
	struct dirent *de;
	DIR *dir;

	fd = open_dir_at(cfd, ".");
	dir = fd >= 0 ? fdopendir(fd) : NULL;
	if (!dir) {
		if (fd >= 0)
			close(fd);
		return;
	}
	while ((de = readdir(dir))) {
		const struct entry *e;
		bool used = false;

		if (strlen(de->d_name) != CACHE_KEY_LEN + 5 ||
		    !is_key(de->d_name, CACHE_KEY_LEN) ||
		    strcmp(de->d_name + CACHE_KEY_LEN, ".lock"))
			continue;
		pthread_mutex_lock(&cache_mu);
		for (e = entries; e && !used; e = e->next)
			used = e->tier == tier &&
			       !strncmp(e->key, de->d_name, CACHE_KEY_LEN);
		pthread_mutex_unlock(&cache_mu);
		if (!used)
			unlinkat(cfd, de->d_name, 0);
	}
	closedir(dir);
}

/* Reconcile one tier's cache directory with what we know. */
static void reconcile_tier(int tier, bool (*job_known)(uint32_t))
{
	bool shared = cache_conf->tiers[tier].shared;
	int cfd = tiers_cache_fd(tier);
	char key[CACHE_KEY_LEN + 1], why[CONF_ERR_MAX], rmerr[CONF_ERR_MAX];
	struct dirent *de;
	unsigned version;
	struct entry *e;
	DIR *dir;

	dir = open_cache_listing(tier);
	if (!dir)
		return;
	while ((de = readdir(dir))) {
		const char *n = de->d_name;

		if (is_temp_name(n, ".build.", shared) ||
		    is_temp_name(n, ".evict.", shared)) {
			if (rmtree_at(cfd, n, rmerr, sizeof(rmerr)) < 0)
				log_warningx("tier '%s': cache/%s: %s",
					     tier_name(tier), n, rmerr);
			else
				log_info("tier '%s': removed leftover cache/%s",
					 tier_name(tier), n);
			continue;
		}
		if (!parse_version_name(n, key, &version))
			continue;
		e = load_version(tier, n, why, sizeof(why));
		if (!e) {
			log_warningx("tier '%s': cache/%s is incomplete (%s); "
				     "removed",
				     tier_name(tier), n, why);
			if (rmtree_at(cfd, n, rmerr, sizeof(rmerr)) < 0)
				log_warningx("tier '%s': cache/%s: %s",
					     tier_name(tier), n, rmerr);
			continue;
		}
		drop_stale_pins(tier, n, job_known);
		pthread_mutex_lock(&cache_mu);
		insert_locked(e);
		pthread_mutex_unlock(&cache_mu);
	}
	closedir(dir);
	if (!shared)
		drop_idle_locks(tier);
}

/* Distinct keys of TIER (for the old-version sweep). */
static void gc_tier(int tier)
{
	struct snap *s;
	size_t n, i, j;

	s = snapshot(tier, (uid_t)-1, false, NULL, NULL, &n);
	for (i = 0; i < n; i++) {
		struct cache_lock *lk;

		for (j = 0; j < i; j++)
			if (!strcmp(s[j].key, s[i].key))
				break;
		if (j < i)
			continue;
		lk = lock_try(tier, s[i].key);
		if (!lk)
			continue;
		cache_gc_key(tier, s[i].key);
		cache_lock_release(lk);
	}
	free(s);
}

int cache_init(const struct conf *conf, bool (*job_known)(uint32_t id),
	       char *err, size_t errlen)
{
	unsigned removed;
	size_t t, count = 0;
	const struct entry *e;

	(void)err;
	(void)errlen;
	cache_conf = conf;
	/* Views (bind mounts) of jobs gone while we were down go first, so
	 * that nothing below still shows a version this start removes. */
	tiers_detach_stale(job_known);
	removed = journal_replay(replay_remove, NULL);
	if (removed)
		log_warningx("removed %u unfinished build%s listed in the "
			     "journal",
			     removed, removed == 1 ? "" : "s");
	for (t = 0; t < conf->ntiers; t++)
		reconcile_tier((int)t, job_known);
	for (t = 0; t < conf->ntiers; t++)
		gc_tier((int)t);
	pthread_mutex_lock(&cache_mu);
	for (e = entries; e; e = e->next)
		count++;
	pthread_mutex_unlock(&cache_mu);
	if (count)
		log_info("cache: %zu version%s on %zu tier%s", count,
			 count == 1 ? "" : "s", conf->ntiers,
			 conf->ntiers == 1 ? "" : "s");
	return 0;
}

void cache_fini(void)
{
	struct entry *e, *next;

	pthread_mutex_lock(&cache_mu);
	e = entries;
	entries = NULL;
	pthread_mutex_unlock(&cache_mu);
	for (; e; e = next) {
		next = e->next;
		entry_free(e);
	}
}
