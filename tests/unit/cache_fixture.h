/* cache_fixture.h - caches over tiers in temporary directories, for the
 * cache's unit tests (tests/unit/check_cache_*.c).
 *
 * A fixture is what one iostaged would have: a StateDir, one or more tiers
 * (TIER/cache, TIER/jobs), a node name, and the tiers' space, kept here by
 * a small accounting of its own (capacity, bytes of cache versions,
 * reservations) so that tests choose exactly how full a tier is. Its cache
 * is owned by the test's own uid, so that everything runs unprivileged;
 * the worker is played by fx_build, which writes the data and the
 * manifest itself, as the real one does, and publishes.
 *
 * Two fixtures may share their tiers (fx_init_peer): two nodes of one
 * Shared tier, each with its StateDir. A "restart" (fx_restart) destroys
 * the cache without any clean-up and makes a new one on the same
 * directories, as a crash and a new iostaged would.
 *
 * Everything here is static inline (each test links what it uses); a
 * failing step fails the test through ck_assert.
 */
#ifndef IOSTAGE_TESTS_CACHE_FIXTURE_H
#define IOSTAGE_TESTS_CACHE_FIXTURE_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* nftw */
#endif
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <check.h>

#include "common/base/smallfile.h"
#include "common/config/conf.h"
#include "common/fs/rmtree.h"
#include "daemon/staging/cache.h"
#include "daemon/staging/cache_internal.h"
#include "tests/unit/tmp_fixture.h"

#define FX_TIB (1024ULL * 1024 * 1024 * 1024)

struct fx_space {
	uint64_t capacity[CONF_MAX_TIERS];
	uint64_t cache[CONF_MAX_TIERS];    /* accounted by the cache */
	uint64_t reserved[CONF_MAX_TIERS]; /* cache_reserve's */
	unsigned reserves;                 /* reservations granted */
};

struct fx {
	char root[64];       /* the temporary directory */
	char tier_root[128]; /* where the tiers are (a peer's are shared) */
	struct conf conf;
	int cache_fd[CONF_MAX_TIERS];
	int jobs_fd[CONF_MAX_TIERS];
	struct fx_space space;
	struct cache *c;
	bool own_tiers;
};

/* The jobs this node still knows (cache_recover's question). */
static uint32_t fx_known_jobs[16];
static size_t fx_nknown;

static inline bool fx_job_known(void *arg, uint32_t id)
{
	(void)arg;
	size_t i;

	for (i = 0; i < fx_nknown; i++)
		if (fx_known_jobs[i] == id)
			return true;
	return false;
}

static inline int fx_usage(void *arg, int tier, struct tiers_usage *ret)
{
	struct fx_space *s = arg;
	uint64_t used = s->cache[tier] + s->reserved[tier];

	ret->capacity = s->capacity[tier];
	ret->used = used;
	ret->free = used < s->capacity[tier] ? s->capacity[tier] - used : 0;
	ret->cache = s->cache[tier];
	ret->reserved = s->reserved[tier];
	return 0;
}

static inline int fx_reserve(void *arg, int tier, const char *dsname,
			     uint64_t size, char *err, size_t errlen)
{
	struct fx_space *s = arg;
	struct tiers_usage u;

	fx_usage(arg, tier, &u);
	if (size > u.free) {
		snprintf(err, errlen, "tier full: dataset '%s'", dsname);
		errno = ENOSPC;
		return -1;
	}
	s->reserved[tier] += size;
	s->reserves++;
	return 0;
}

static inline void fx_account(void *arg, int tier, int64_t delta)
{
	struct fx_space *s = arg;

	if (delta >= 0)
		s->cache[tier] += (uint64_t)delta;
	else
		s->cache[tier] -= (uint64_t)-delta;
}

static inline void fx_mkdir(const char *path, mode_t mode)
{
	ck_assert_msg(mkdir(path, mode) == 0 || errno == EEXIST, "mkdir %s: %s",
		      path, strerror(errno));
}

/* Open the tiers below f->tier_root (made when f owns them). */
static inline void fx_open_tiers(struct fx *f)
{
	char path[PATH_MAX];
	size_t t;

	for (t = 0; t < CONF_MAX_TIERS; t++)
		f->cache_fd[t] = f->jobs_fd[t] = -1;
	for (t = 0; t < f->conf.ntiers; t++) {
		snprintf(f->conf.tiers[t].name, sizeof(f->conf.tiers[t].name),
			 "t%zu", t);
		snprintf(f->conf.tiers[t].path, sizeof(f->conf.tiers[t].path),
			 "%s/t%zu", f->tier_root, t);
		if (f->own_tiers) {
			fx_mkdir(f->conf.tiers[t].path, 0755);
			snprintf(path, sizeof(path), "%s/cache",
				 f->conf.tiers[t].path);
			fx_mkdir(path, 0755);
			snprintf(path, sizeof(path), "%s/jobs",
				 f->conf.tiers[t].path);
			fx_mkdir(path, 0755);
		}
		snprintf(path, sizeof(path), "%s/cache", f->conf.tiers[t].path);
		f->cache_fd[t] = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		snprintf(path, sizeof(path), "%s/jobs", f->conf.tiers[t].path);
		f->jobs_fd[t] = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		ck_assert_int_ge(f->cache_fd[t], 0);
		ck_assert_int_ge(f->jobs_fd[t], 0);
		f->space.capacity[t] = FX_TIB;
	}
}

/* Make the cache (create, then recover as at start). */
static inline struct cache *fx_cache(struct fx *f)
{
	struct cache_params p;
	char err[CONF_ERR_MAX];
	size_t t;

	memset(&p, 0, sizeof(p));
	p.conf = &f->conf;
	for (t = 0; t < CONF_MAX_TIERS; t++) {
		p.cache_fd[t] = f->cache_fd[t];
		p.jobs_fd[t] = f->jobs_fd[t];
	}
	p.space = (struct cache_space){ .usage = fx_usage,
					.reserve = fx_reserve,
					.account = fx_account,
					.arg = &f->space };
	p.owner_uid = geteuid();
	p.owner_gid = getegid();
	f->c = cache_create(&p, err, sizeof(err));
	ck_assert_msg(f->c != NULL, "cache_create: %s", err);
	ck_assert_msg(cache_recover(f->c, fx_job_known, NULL, err,
				    sizeof(err)) == 0,
		      "cache_recover: %s", err);
	return f->c;
}

/* A node NODE with NTIERS tiers (Shared= SHARED) of its own. */
static inline void fx_init(struct fx *f, const char *node, size_t ntiers,
			   bool shared)
{
	size_t t;

	memset(f, 0, sizeof(*f));
	snprintf(f->root, sizeof(f->root), "/tmp/check_cache.XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(f->root));
	chmod(f->root, 0755);
	snprintf(f->tier_root, sizeof(f->tier_root), "%s", f->root);
	f->own_tiers = true;
	conf_set_defaults(&f->conf);
	snprintf(f->conf.node_name, sizeof(f->conf.node_name), "%s", node);
	snprintf(f->conf.state_dir, sizeof(f->conf.state_dir), "%s/state",
		 f->root);
	fx_mkdir(f->conf.state_dir, 0700);
	f->conf.ntiers = ntiers;
	for (t = 0; t < ntiers; t++)
		f->conf.tiers[t].shared = shared;
	fx_open_tiers(f);
	fx_nknown = 0;
	fx_cache(f);
}

/* Node NODE sharing every tier of F (which must be Shared), with a
 * StateDir of its own. */
static inline void fx_init_peer(struct fx *g, const struct fx *f,
				const char *node)
{
	size_t t;

	memset(g, 0, sizeof(*g));
	snprintf(g->root, sizeof(g->root), "/tmp/check_cache.XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(g->root));
	snprintf(g->tier_root, sizeof(g->tier_root), "%s", f->tier_root);
	g->own_tiers = false;
	conf_set_defaults(&g->conf);
	snprintf(g->conf.node_name, sizeof(g->conf.node_name), "%s", node);
	snprintf(g->conf.state_dir, sizeof(g->conf.state_dir), "%s/state",
		 g->root);
	fx_mkdir(g->conf.state_dir, 0700);
	g->conf.ntiers = f->conf.ntiers;
	for (t = 0; t < f->conf.ntiers; t++)
		g->conf.tiers[t].shared = f->conf.tiers[t].shared;
	fx_open_tiers(g);
	fx_cache(g);
}

/* A crash and a new iostaged: the cache goes without any clean-up (its
 * memory is freed, nothing on disk is touched), the tiers' accounting
 * starts again from nothing, and a new cache recovers. */
static inline void fx_restart(struct fx *f)
{
	cache_destroy(f->c);
	memset(f->space.cache, 0, sizeof(f->space.cache));
	memset(f->space.reserved, 0, sizeof(f->space.reserved));
	fx_cache(f);
}

static inline int fx_writable(const char *path, const struct stat *st, int flag,
			      struct FTW *ftw)
{
	(void)ftw;
	if (flag == FTW_D && !S_ISLNK(st->st_mode))
		chmod(path, 0700); /* versions carry no write bits */
	return 0;
}

static inline void fx_fini(struct fx *f)
{
	char err[256];
	size_t t;

	cache_destroy(f->c);
	f->c = NULL;
	for (t = 0; t < CONF_MAX_TIERS; t++) {
		if (f->cache_fd[t] >= 0)
			close(f->cache_fd[t]);
		if (f->jobs_fd[t] >= 0)
			close(f->jobs_fd[t]);
	}
	nftw(f->root, fx_writable, 16, FTW_PHYS);
	tmp_remove(f->root, err, sizeof(err));
}

/* --- playing the worker ------------------------------------------------------
 */

/* What a worker leaves in build B: data/ holding one file of BYTES bytes
 * (a tree, 0500 at the top like the real one's) and a manifest on B's
 * manifest fd. */
static inline void fx_worker(const struct cache_build *b, size_t bytes)
{
	char path[PATH_MAX], *buf;
	int fd;

	snprintf(path, sizeof(path), "%s/data", b->path);
	fx_mkdir(path, 0700);
	snprintf(path, sizeof(path), "%s/data/f", b->path);
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0400);
	ck_assert_int_ge(fd, 0);
	buf = calloc(1, bytes + 1);
	ck_assert_ptr_nonnull(buf);
	ck_assert_int_eq(write(fd, buf, bytes), (ssize_t)bytes);
	free(buf);
	close(fd);
	snprintf(path, sizeof(path), "%s/data", b->path);
	ck_assert_int_eq(chmod(path, 0500), 0);
	ck_assert_int_eq(write(b->manifest_fd, "MANIFEST", 8), 8);
}

/* The meta of a version of SRC, BYTES bytes, for this uid (or public). */
static inline struct cache_meta fx_meta(const char *src, uint64_t bytes,
					bool public)
{
	return (struct cache_meta){
		.src = src,
		.uid = public ? 0 : getuid(),
		.user = public ? CACHE_PUBLIC_USER : "tester",
		.public = public,
		.bytes = bytes,
		.files = 1,
		.verify = PROFILE_VERIFY_STAT,
		.verified_ns = cache_now_ns(),
	};
}

/* Begin the next version of KEY on TIER (K.lock held by the caller) as
 * the stager does; the worker has run. */
static inline void fx_begin(struct fx *f, int tier, const char *key,
			    struct cache_build *b, uint64_t bytes)
{
	struct cache_version cur;
	char err[CONF_ERR_MAX];
	unsigned next;

	cache_current(f->c, tier, key, &cur, &next);
	ck_assert_msg(cache_build_begin(f->c, tier, key, next, getuid(),
					getgid(), b, err, sizeof(err)) == 0,
		      "cache_build_begin: %s", err);
	fx_worker(b, (size_t)bytes);
}

/* Build and publish the next version of SRC's entry (this uid's, or the
 * public one) on TIER, BYTES bytes, under K.lock; its key into KEY
 * (optional). Returns the version. */
static inline unsigned fx_build(struct fx *f, int tier, const char *src,
				uint64_t bytes, bool public, char *key)
{
	char k[CACHE_KEY_LEN + 1], err[CONF_ERR_MAX];
	struct cache_meta meta = fx_meta(src, bytes, public);
	struct cache_lock *lk;
	struct cache_build b;

	if (public)
		cache_key_public(src, k);
	else
		cache_key(getuid(), src, k);
	ck_assert_msg(cache_lock_acquire(f->c, tier, k, NULL, NULL, &lk, err,
					 sizeof(err)) == 0,
		      "cache_lock_acquire: %s", err);
	fx_begin(f, tier, k, &b, bytes);
	ck_assert_msg(cache_build_publish(&b, &meta, err, sizeof(err)) == 0,
		      "cache_build_publish: %s", err);
	cache_lock_release(lk);
	if (key)
		snprintf(key, CACHE_KEY_LEN + 1, "%s", k);
	return b.version;
}

/* Pin KEY vVERSION on TIER for job JOB (K.lock taken as the stager). */
static inline void fx_pin(struct fx *f, int tier, const char *key,
			  unsigned version, uint32_t job)
{
	char err[CONF_ERR_MAX];
	struct cache_lock *lk;

	ck_assert_int_eq(cache_lock_acquire(f->c, tier, key, NULL, NULL, &lk,
					    err, sizeof(err)),
			 0);
	ck_assert_msg(cache_pin(f->c, tier, key, version, job, err,
				sizeof(err)) == 0,
		      "cache_pin: %s", err);
	cache_lock_release(lk);
}

/* --- looking at the tier -----------------------------------------------------
 */

/* Whether NAME (a path below TIER/cache) exists, never followed. */
static inline bool fx_exists(const struct fx *f, int tier, const char *name)
{
	struct stat st;

	return fstatat(f->cache_fd[tier], name, &st, AT_SYMLINK_NOFOLLOW) == 0;
}

/* Whether K.vN exists on TIER. */
static inline bool fx_version_exists(const struct fx *f, int tier,
				     const char *key, unsigned version)
{
	char name[CACHE_ENTRY_NAME_MAX];

	cache_version_name(key, version, name, sizeof(name));
	return fx_exists(f, tier, name);
}

/* Whether TIER has K.lock. */
static inline bool fx_lock_exists(const struct fx *f, int tier, const char *key)
{
	char name[CACHE_LOCK_NAME_MAX];

	cache_lock_name(key, name, sizeof(name));
	return fx_exists(f, tier, name);
}

/* How many names below TIER/cache contain PART. */
static inline unsigned fx_count(const struct fx *f, int tier, const char *part)
{
	struct dirent *de;
	unsigned n = 0;
	DIR *dir;
	int fd = openat(f->cache_fd[tier], ".", O_RDONLY | O_DIRECTORY);

	ck_assert_int_ge(fd, 0);
	dir = fdopendir(fd);
	ck_assert_ptr_nonnull(dir);
	while ((de = readdir(dir)))
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, "..") &&
		    strstr(de->d_name, part))
			n++;
	closedir(dir);
	return n;
}

/* How many records StateDir/journal holds. */
static inline unsigned fx_journal_records(const struct fx *f)
{
	char path[PATH_MAX];
	struct dirent *de;
	unsigned n = 0;
	DIR *dir;

	snprintf(path, sizeof(path), "%s/journal", f->conf.state_dir);
	dir = opendir(path);
	if (!dir)
		return 0;
	while ((de = readdir(dir)))
		if (de->d_name[0] != '.')
			n++;
	closedir(dir);
	return n;
}

/* The current version of KEY on TIER, 0 for none. */
static inline unsigned fx_current(struct fx *f, int tier, const char *key)
{
	struct cache_version cur;
	unsigned next;

	return cache_current(f->c, tier, key, &cur, &next) == 1 ? cur.version
								: 0;
}

/* Set the last use (meta.json's mtime) of KEY vVERSION to T. */
static inline void fx_set_last_used(struct fx *f, int tier, const char *key,
				    unsigned version, time_t t)
{
	struct timespec ts[2] = { { t, 0 }, { t, 0 } };
	char name[CACHE_ENTRY_NAME_MAX + 16];

	cache_version_name(key, version, name, sizeof(name));
	strcat(name, "/meta.json");
	ck_assert_int_eq(utimensat(f->cache_fd[tier], name, ts,
				   AT_SYMLINK_NOFOLLOW),
			 0);
}

/* Write FILE (below TIER/cache) with TEXT. */
static inline void fx_write(const struct fx *f, int tier, const char *file,
			    const char *text, mode_t mode)
{
	int fd = openat(f->cache_fd[tier], file,
			O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC,
			mode);

	ck_assert_msg(fd >= 0, "%s: %s", file, strerror(errno));
	ck_assert_int_eq(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
}

#endif /* IOSTAGE_TESTS_CACHE_FIXTURE_H */
