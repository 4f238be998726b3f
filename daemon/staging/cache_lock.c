/* cache_lock.c - K.lock: one builder or verifier of a key at a time.
 *
 * Why K.lock is a file lock on the tier and not a mutex: on a Shared tier
 * the builders of K may be on other nodes. flock() on separate open file
 * descriptions also excludes threads of this process from one another, so
 * one mechanism serves both. It is never waited on while c->mu is held.
 *
 * Why a key's lock file goes with its last version: a node that stages
 * many distinct datasets would otherwise keep one file per dataset it ever
 * staged (a failed stage, an evicted dataset), and every stage lists the
 * cache directory (cache_current). So the holder of K.lock removes the file
 * when K has no version left, before it unlocks. That is the classic
 * unlink-after-flock race: whoever opened the file before it was removed
 * gets the flock of a file nobody else will ever lock again, while a
 * newcomer creates and locks a new K.lock. So after every flock we check
 * that the name K.lock still leads to the inode we locked (same device and
 * inode; cache_lock_still_named) and, if not, open the name again. Only a
 * holder ever removes the file, so two holders never hold different files.
 *
 * Not on a Shared tier: other nodes' waiters are out of sight, nodes of an
 * older iostaged expect the file to stay, and a network file system may
 * answer a lookup from its cache (NFS keeps an unlinked open file under
 * another name). There K.lock files stay, one per key ever staged.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "daemon/staging/cache_internal.h"

#define CACHE_LOCK_POLL_NS 100000000L /* K.lock retry interval */

/* Open (creating it) TIER's K.lock: a regular file of the cache's owner.
 * fd, or -1 with err. */
static int lock_open(struct cache *c, int tier, const char *key, char *err,
		     size_t errlen)
{
	char name[CACHE_LOCK_NAME_MAX];
	struct stat st;
	int fd;

	cache_lock_name(key, name, sizeof(name));
	fd = openat(c->cache_fd[tier], name,
		    O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) ||
	    st.st_uid != c->owner_uid) {
		snprintf(err, errlen, "tier '%s': cannot use %s/cache/%s: %s",
			 cache_tier_name(c, tier), c->conf->tiers[tier].path,
			 name,
			 fd < 0 ? strerror(errno) : "not a root-owned file");
		if (fd >= 0)
			close(fd);
		return -1;
	}
	return fd;
}

bool cache_lock_still_named(struct cache *c, int tier, const char *key, int fd)
{
	char name[CACHE_LOCK_NAME_MAX];
	struct stat held, named;

	cache_lock_name(key, name, sizeof(name));
	return fstat(fd, &held) == 0 &&
	       fstatat(c->cache_fd[tier], name, &named, AT_SYMLINK_NOFOLLOW) ==
		   0 &&
	       held.st_dev == named.st_dev && held.st_ino == named.st_ino;
}

static struct cache_lock *lock_new(struct cache *c, int tier, const char *key,
				   int fd)
{
	struct cache_lock *lk = malloc(sizeof(*lk));

	if (!lk)
		return NULL;
	lk->cache = c;
	lk->fd = fd;
	lk->tier = tier;
	snprintf(lk->key, sizeof(lk->key), "%s", key);
	return lk;
}

int cache_lock_acquire(struct cache *c, int tier, const char *key,
		       bool (*stop)(void *arg, char *why, size_t len),
		       void *arg, struct cache_lock **ret, char *err,
		       size_t errlen)
{
	struct timespec poll = { 0, CACHE_LOCK_POLL_NS };
	struct cache_lock *lk;
	int fd = lock_open(c, tier, key, err, errlen);

	if (fd < 0)
		return -1;
	for (;;) {
		if (flock(fd, LOCK_EX | LOCK_NB) == 0) {
			if (cache_lock_still_named(c, tier, key, fd))
				break;
			close(fd); /* removed by its last holder: reopen */
			fd = lock_open(c, tier, key, err, errlen);
			if (fd < 0)
				return -1;
			continue;
		}
		if (errno != EWOULDBLOCK && errno != EINTR) {
			snprintf(err, errlen,
				 "tier '%s': cannot lock %s.lock: %s",
				 cache_tier_name(c, tier), key,
				 strerror(errno));
			close(fd);
			return -1;
		}
		if (stop && stop(arg, err, errlen)) {
			close(fd);
			return -1;
		}
		nanosleep(&poll, NULL);
	}
	lk = lock_new(c, tier, key, fd);
	if (!lk) {
		snprintf(err, errlen, "out of memory");
		close(fd); /* releases the lock */
		return -1;
	}
	*ret = lk;
	return 0;
}

struct cache_lock *cache_lock_try(struct cache *c, int tier, const char *key)
{
	struct cache_lock *lk;
	char err[CONF_ERR_MAX];
	int fd;

	for (;;) {
		fd = lock_open(c, tier, key, err, sizeof(err));
		if (fd < 0)
			return NULL;
		if (flock(fd, LOCK_EX | LOCK_NB) < 0) {
			close(fd);
			return NULL;
		}
		if (cache_lock_still_named(c, tier, key, fd))
			break;
		close(fd); /* removed by its last holder: reopen */
	}
	lk = lock_new(c, tier, key, fd);
	if (!lk)
		close(fd);
	return lk;
}

/* Removed while still held, and only when the name still leads to the
 * file we hold (nobody else may remove it, but a file put there by hand
 * is not ours to remove); whoever waits on it then sees it unnamed and
 * reopens. */
void cache_lock_release(struct cache_lock *lock)
{
	struct cache *c;
	char name[CACHE_LOCK_NAME_MAX];

	if (!lock)
		return;
	c = lock->cache;
	if (!cache_tier_shared(c, lock->tier) &&
	    !cache_index_has_key(c, lock->tier, lock->key) &&
	    cache_lock_still_named(c, lock->tier, lock->key, lock->fd)) {
		cache_lock_name(lock->key, name, sizeof(name));
		unlinkat(c->cache_fd[lock->tier], name, 0);
	}
	close(lock->fd); /* the only open file description: unlocks */
	free(lock);
}

/* The K.lock files of keys with no version left that a crash left (a
 * holder removes its own, cache_lock_release). */
void cache_lock_drop_idle(struct cache *c, int tier)
{
	int cfd = c->cache_fd[tier], fd;
	struct dirent *de;
	DIR *dir;

	fd = cache_open_dir_at(cfd, ".");
	dir = fd >= 0 ? fdopendir(fd) : NULL;
	if (!dir) {
		if (fd >= 0)
			close(fd);
		return;
	}
	while ((de = readdir(dir))) {
		char key[CACHE_KEY_LEN + 1];

		if (strlen(de->d_name) != CACHE_KEY_LEN + 5 ||
		    !cache_is_key(de->d_name, CACHE_KEY_LEN) ||
		    strcmp(de->d_name + CACHE_KEY_LEN, ".lock"))
			continue;
		memcpy(key, de->d_name, CACHE_KEY_LEN);
		key[CACHE_KEY_LEN] = '\0';
		if (!cache_index_has_key(c, tier, key))
			unlinkat(cfd, de->d_name, 0);
	}
	closedir(dir);
}
