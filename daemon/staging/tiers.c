/* tiers.c - tier checks at start, job directories, space accounting.
 *
 * Everything root does inside a tier starts from the TIER/jobs fd opened at
 * start. Job directories belong to their users, so below TIER/jobs we only
 * ever openat(O_NOFOLLOW) one component at a time and remove with rmtree,
 * which never follows a symlink.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "common/base/log.h"
#include "common/base/units.h"
#include "common/config/joblayout.h"
#include "common/fs/bindmount.h"
#include "common/fs/rmtree.h"
#include "daemon/agent.h"
#include "daemon/fsutil.h"
#include "daemon/staging/tiers.h"

struct tier_rt {
	int jobs_fd;        /* TIER/jobs, O_DIRECTORY */
	int cache_fd;       /* TIER/cache, O_DIRECTORY */
	uint64_t committed; /* bytes of staged datasets held by jobs */
	uint64_t cache;     /* bytes held by cache entries */
	uint64_t reserved;  /* bytes promised to copies in flight */
};

struct tiers {
	struct agent *agent;
	const struct conf *conf;
	uid_t owner; /* who must own the tier roots: root in iostaged */
	struct tier_rt rt[CONF_MAX_TIERS];
	size_t n;
	pthread_mutex_t lock; /* the space figures of rt[] */
};

/* --- start-up checks ---------------------------------------------------- */

/* Root-owned, not writable by group/other, a directory. */
static int check_secure(struct tiers *ts, const struct stat *st,
			const char *tier, const char *path, char *err,
			size_t errlen)
{
	if (!S_ISDIR(st->st_mode)) {
		snprintf(err, errlen, "tier '%s': %s is not a directory", tier,
			 path);
		errno = ENOTDIR;
		return -1;
	}
	if (st->st_uid != ts->owner) {
		snprintf(err, errlen,
			 "tier '%s': %s is owned by uid %u, must be %s", tier,
			 path, (unsigned)st->st_uid,
			 ts->owner ? "the daemon's user" : "root");
		errno = EPERM;
		return -1;
	}
	if (st->st_mode & (S_IWGRP | S_IWOTH)) {
		snprintf(err, errlen,
			 "tier '%s': %s is group/other-writable (mode %04o); "
			 "make it 0755",
			 tier, path, (unsigned)(st->st_mode & 07777));
		errno = EPERM;
		return -1;
	}
	return 0;
}

/* Create (root 0755) and open the subdirectory NAME of the tier root FD. */
static int subdir_open(struct tiers *ts, int fd, const struct conf_tier *t,
		       const char *name, char *err, size_t errlen)
{
	char path[CONF_PATH_MAX + 16];
	struct stat st;
	int sfd;

	snprintf(path, sizeof(path), "%s/%s", t->path, name);
	if (mkdirat(fd, name, 0755) < 0 && errno != EEXIST) {
		snprintf(err, errlen, "tier '%s': cannot create %s: %s",
			 t->name, path, strerror(errno));
		return -1;
	}
	sfd = openat(fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (sfd < 0 || fstat(sfd, &st) < 0) {
		snprintf(err, errlen, "tier '%s': cannot open %s: %s", t->name,
			 path, strerror(errno));
		goto fail;
	}
	if (check_secure(ts, &st, t->name, path, err, errlen) < 0)
		goto fail;
	/* Users must be able to reach their own entries below. */
	if ((st.st_mode & 07777) != 0755 && fchmod(sfd, 0755) < 0) {
		snprintf(err, errlen, "tier '%s': cannot chmod %s: %s", t->name,
			 path, strerror(errno));
		goto fail;
	}
	return sfd;
fail:
	if (sfd >= 0)
		close(sfd);
	return -1;
}

/* Check one tier and open its TIER/jobs and TIER/cache into RT. */
static int tier_open(struct tiers *ts, const struct conf_tier *t,
		     struct tier_rt *rt, char *err, size_t errlen)
{
	struct stat st;
	int fd = -1;

	rt->jobs_fd = rt->cache_fd = -1;
	if (fsutil_mkdir_p(t->path, 0755) < 0) {
		snprintf(err, errlen, "tier '%s': cannot create %s: %s",
			 t->name, t->path, strerror(errno));
		goto fail;
	}
	fd = open(t->path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &st) < 0) {
		snprintf(err, errlen, "tier '%s': cannot open %s: %s", t->name,
			 t->path, strerror(errno));
		goto fail;
	}
	if (check_secure(ts, &st, t->name, t->path, err, errlen) < 0)
		goto fail;
	if ((st.st_mode & S_IXOTH) == 0) {
		snprintf(
		    err, errlen,
		    "tier '%s': %s is not searchable by users (mode %04o); "
		    "make it 0755",
		    t->name, t->path, (unsigned)(st.st_mode & 07777));
		errno = EPERM;
		goto fail;
	}
	rt->jobs_fd = subdir_open(ts, fd, t, "jobs", err, errlen);
	if (rt->jobs_fd < 0)
		goto fail;
	rt->cache_fd = subdir_open(ts, fd, t, "cache", err, errlen);
	if (rt->cache_fd < 0)
		goto fail;
	close(fd);
	return 0;
fail:
	if (rt->jobs_fd >= 0)
		close(rt->jobs_fd);
	rt->jobs_fd = -1;
	if (fd >= 0)
		close(fd);
	return -1;
}

struct tiers *tiers_create(struct agent *a, uid_t owner, char *err,
			   size_t errlen)
{
	const struct conf *conf = a->conf;
	struct tiers *ts = calloc(1, sizeof(*ts));
	size_t i;

	if (!ts) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	ts->agent = a;
	ts->conf = conf;
	ts->owner = owner;
	pthread_mutex_init(&ts->lock, NULL);
	for (i = 0; i < conf->ntiers; i++) {
		if (tier_open(ts, &conf->tiers[i], &ts->rt[i], err, errlen) < 0)
			goto fail;
		ts->n = i + 1;
	}
	return ts;
fail:
	tiers_destroy(ts);
	return NULL;
}

void tiers_destroy(struct tiers *ts)
{
	size_t i;

	if (!ts)
		return;
	for (i = 0; i < ts->n; i++) {
		close(ts->rt[i].jobs_fd);
		close(ts->rt[i].cache_fd);
	}
	pthread_mutex_destroy(&ts->lock);
	free(ts);
}

int tiers_jobs_fd(struct tiers *ts, int tier)
{
	return ts->rt[tier].jobs_fd;
}

int tiers_cache_fd(struct tiers *ts, int tier)
{
	return ts->rt[tier].cache_fd;
}

int tiers_index(struct tiers *ts, const char *name)
{
	size_t i;

	if (!ts || !name)
		return -1;
	for (i = 0; i < ts->n; i++)
		if (!strcmp(ts->conf->tiers[i].name, name))
			return (int)i;
	return -1;
}

/* --- job directories ---------------------------------------------------- */

/* "J", or "J.NODE" on a Shared=yes tier (common/config/joblayout.h). */
static void job_name(struct tiers *ts, int tier, uint32_t jobid, char *buf,
		     size_t buflen)
{
	if (joblayout_job_name(ts->conf, &ts->conf->tiers[tier], jobid, buf,
			       buflen) < 0)
		snprintf(buf, buflen, "%" PRIu32, jobid); /* cannot happen */
}

/* Detach the read-only views (cache.c's bind mounts) below TIER/jobs/NAME,
 * wherever its user may have moved them inside it. Missing is success. */
static int detach_job_mounts(struct tiers *ts, int tier, const char *name,
			     char *err, size_t errlen)
{
	char why[CONF_ERR_MAX - 32];
	int jfd, n;

	jfd = openat(ts->rt[tier].jobs_fd, name,
		     O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (jfd < 0) {
		/* Gone, or not a directory: nothing can be mounted below. */
		if (errno == ENOENT || errno == ELOOP || errno == ENOTDIR)
			return 0;
		snprintf(err, errlen, "cannot open jobs/%s: %s", name,
			 strerror(errno));
		return -1;
	}
	n = bindmount_detach_under(jfd, NULL, NULL, why, sizeof(why));
	close(jfd);
	if (n < 0) {
		snprintf(err, errlen, "jobs/%s: %s", name, why);
		return -1;
	}
	return 0;
}

int tiers_make_job_dir(struct tiers *ts, int tier, uint32_t jobid, uid_t uid,
		       gid_t gid, bool with_local, char *err, size_t errlen)
{
	const struct conf_tier *t = &ts->conf->tiers[tier];
	int jobs_fd = ts->rt[tier].jobs_fd;
	char name[JOBLAYOUT_JOB_NAME_MAX], rmerr[CONF_ERR_MAX];
	int fd = -1, saved;

	job_name(ts, tier, jobid, name, sizeof(name));
	if (mkdirat(jobs_fd, name, 0700) < 0) {
		if (errno != EEXIST)
			goto fail_mkdir;
		/* Left by a job we no longer know (state lost, or a reused
		 * job id): never hand it to the new job. */
		if (detach_job_mounts(ts, tier, name, rmerr, sizeof(rmerr)) <
			0 ||
		    rmtree_at(jobs_fd, name, rmerr, sizeof(rmerr)) < 0) {
			snprintf(
			    err, errlen,
			    "tier '%s': cannot remove stale %s/jobs/%s: %s",
			    t->name, t->path, name, rmerr);
			return -1;
		}
		log_warningx(
		    "tier '%s': removed stale job directory %s/jobs/%s",
		    t->name, t->path, name);
		if (mkdirat(jobs_fd, name, 0700) < 0)
			goto fail_mkdir;
	}
	fd = openat(jobs_fd, name,
		    O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0 || fchmod(fd, 0700) < 0)
		goto fail;
	if (mkdirat(fd, "data", 0755) < 0)
		goto fail;
	if (with_local) {
		if (mkdirat(fd, "local", 0700) < 0 ||
		    fchownat(fd, "local", uid, gid, AT_SYMLINK_NOFOLLOW) < 0)
			goto fail;
	}
	/* Hand the directory over last, when it is complete. */
	if (fchown(fd, uid, gid) < 0)
		goto fail;
	close(fd);
	return 0;
fail:
	saved = errno;
	snprintf(err, errlen, "tier '%s': cannot prepare %s/jobs/%s: %s",
		 t->name, t->path, name, strerror(saved));
	if (fd >= 0)
		close(fd);
	rmtree_at(jobs_fd, name, rmerr, sizeof(rmerr));
	errno = saved;
	return -1;
fail_mkdir:
	snprintf(err, errlen, "tier '%s': cannot create %s/jobs/%s: %s",
		 t->name, t->path, name, strerror(errno));
	return -1;
}

int tiers_remove_job_dir(struct tiers *ts, int tier, uint32_t jobid, char *err,
			 size_t errlen)
{
	const struct conf_tier *t = &ts->conf->tiers[tier];
	char name[JOBLAYOUT_JOB_NAME_MAX], rmerr[CONF_ERR_MAX];

	job_name(ts, tier, jobid, name, sizeof(name));
	/* Unmount first: rmtree stops at a mount point (never descends into
	 * the cache entry behind it), so a view left mounted would keep the
	 * directory. */
	if (detach_job_mounts(ts, tier, name, rmerr, sizeof(rmerr)) < 0 ||
	    rmtree_at(ts->rt[tier].jobs_fd, name, rmerr, sizeof(rmerr)) < 0) {
		snprintf(err, errlen, "tier '%s': in %s/jobs: %s", t->name,
			 t->path, rmerr);
		return -1;
	}
	return 0;
}

struct stale_arg {
	struct tiers *ts;
	bool (*job_known)(void *arg, uint32_t id);
	void *arg;
};

/* Is REL (below TIER/jobs) in the directory of a job nobody knows? */
static bool in_unknown_job(const char *rel, void *arg)
{
	const struct stale_arg *a = arg;
	struct tiers *ts = a->ts;
	char *end;
	unsigned long id;

	if (rel[0] < '0' || rel[0] > '9')
		return false; /* .undrained and the like hold no mounts of ours
			       */
	errno = 0;
	id = strtoul(rel, &end, 10);
	if (errno || id > UINT32_MAX)
		return false;
	if (*end == '.') {
		/* J.NODE on a Shared=yes tier: only this node's jobs are
		 * ours to judge (another node's views are its own). */
		size_t n = strlen(ts->conf->node_name);

		if (strncmp(end + 1, ts->conf->node_name, n))
			return false;
		end += 1 + n;
	}
	if (*end != '/' && *end != '\0')
		return false;
	return !a->job_known(a->arg, (uint32_t)id);
}

unsigned tiers_detach_stale(struct tiers *ts,
			    bool (*job_known)(void *arg, uint32_t id),
			    void *arg)
{
	struct stale_arg a = { .ts = ts, .job_known = job_known, .arg = arg };
	char why[CONF_ERR_MAX];
	unsigned total = 0;
	size_t i;
	int n;

	for (i = 0; i < ts->n; i++) {
		n = bindmount_detach_under(ts->rt[i].jobs_fd, in_unknown_job,
					   &a, why, sizeof(why));
		if (n < 0) {
			log_warningx("tier '%s': in %s/jobs: %s",
				     ts->conf->tiers[i].name,
				     ts->conf->tiers[i].path, why);
			continue;
		}
		if (n > 0)
			log_warningx("tier '%s': unmounted %d dataset view%s "
				     "of jobs no longer known in %s/jobs",
				     ts->conf->tiers[i].name, n,
				     n == 1 ? "" : "s",
				     ts->conf->tiers[i].path);
		total += (unsigned)n;
	}
	return total;
}

static bool is_partial_name(const char *n)
{
	size_t len = strlen(n);

	return len > sizeof(".partial") && n[0] == '.' &&
	       !strcmp(n + len - (sizeof(".partial") - 1), ".partial");
}

int tiers_remove_partial(struct tiers *ts, int tier, uint32_t jobid,
			 const char *name, char *err, size_t errlen)
{
	const struct conf_tier *t = &ts->conf->tiers[tier];
	char job[JOBLAYOUT_JOB_NAME_MAX], partial[CONF_NAME_MAX * 4];
	char rmerr[CONF_ERR_MAX];
	struct dirent *de;
	DIR *dir = NULL;
	int jfd = -1, dfd = -1, r = -1;

	job_name(ts, tier, jobid, job, sizeof(job));
	jfd = openat(ts->rt[tier].jobs_fd, job,
		     O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (jfd >= 0)
		dfd = openat(jfd, "data",
			     O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (dfd < 0) {
		/* Nothing of ours there: gone, or replaced by a link. */
		if (errno == ENOENT || errno == ELOOP || errno == ENOTDIR) {
			r = 0;
			goto out;
		}
		snprintf(err, errlen,
			 "tier '%s': cannot open %s/jobs/%s/data: %s", t->name,
			 t->path, job, strerror(errno));
		goto out;
	}
	if (name) {
		if (snprintf(partial, sizeof(partial), ".%s.partial", name) >=
		    (int)sizeof(partial)) {
			snprintf(err, errlen, "dataset name '%s' too long",
				 name);
			errno = ENAMETOOLONG;
			goto out;
		}
		if (rmtree_at(dfd, partial, rmerr, sizeof(rmerr)) < 0)
			goto fail_rm;
		r = 0;
		goto out;
	}
	dir = fdopendir(dfd);
	if (!dir)
		goto out;
	dfd = -1; /* owned by dir now */
	while ((de = readdir(dir))) {
		if (!is_partial_name(de->d_name))
			continue;
		if (rmtree_at(dirfd(dir), de->d_name, rmerr, sizeof(rmerr)) < 0)
			goto fail_rm;
	}
	r = 0;
	goto out;
fail_rm:
	snprintf(err, errlen, "tier '%s': in %s/jobs/%s/data: %s", t->name,
		 t->path, job, rmerr);
out:
	if (dir)
		closedir(dir);
	if (dfd >= 0)
		close(dfd);
	if (jfd >= 0)
		close(jfd);
	return r;
}

/* --- space ------------------------------------------------------------------
 */

/* Usage with tiers_lock held. */
static int usage_locked(struct tiers *ts, int tier, struct tiers_usage *ret)
{
	const struct conf_tier *t = &ts->conf->tiers[tier];
	const struct tier_rt *rt = &ts->rt[tier];
	struct statvfs vfs;
	uint64_t fs_size, fs_free, avail;

	if (fstatvfs(rt->jobs_fd, &vfs) < 0)
		return -1;
	fs_size = (uint64_t)vfs.f_blocks * vfs.f_frsize;
	fs_free = (uint64_t)vfs.f_bavail * vfs.f_frsize;
	avail = fs_free > rt->reserved ? fs_free - rt->reserved : 0;
	ret->cache = rt->cache;
	ret->reserved = rt->reserved;
	if (t->capacity) {
		ret->capacity = t->capacity;
		ret->used = rt->committed + rt->cache + rt->reserved;
		ret->free = ret->used < t->capacity ? t->capacity - ret->used
						    : 0;
		if (ret->free > avail)
			ret->free = avail;
	} else {
		ret->capacity = fs_size;
		ret->used = fs_size - fs_free + rt->reserved;
		ret->free = avail;
	}
	return 0;
}

int tiers_usage(struct tiers *ts, int tier, struct tiers_usage *ret)
{
	int r;

	if (!ts) {
		errno = ENOENT; /* an agent without tiers has no tier */
		return -1;
	}
	pthread_mutex_lock(&ts->lock);
	r = usage_locked(ts, tier, ret);
	pthread_mutex_unlock(&ts->lock);
	return r;
}

int tiers_reserve(struct tiers *ts, int tier, const char *dsname, uint64_t size,
		  char *err, size_t errlen)
{
	const struct conf_tier *t = &ts->conf->tiers[tier];
	struct tiers_usage u;
	char need[32], avail[32];
	int r = -1;

	pthread_mutex_lock(&ts->lock);
	if (usage_locked(ts, tier, &u) < 0) {
		snprintf(err, errlen, "tier '%s': cannot statvfs %s: %s",
			 t->name, t->path, strerror(errno));
		goto out;
	}
	if (size > u.free) {
		snprintf(err, errlen,
			 "tier '%s' full: dataset '%s' needs %s, %s free",
			 t->name, dsname, units_bytes(size, need, sizeof(need)),
			 units_bytes(u.free, avail, sizeof(avail)));
		errno = ENOSPC;
		goto out;
	}
	ts->rt[tier].reserved += size;
	r = 0;
out:
	pthread_mutex_unlock(&ts->lock);
	return r;
}

void tiers_release(struct tiers *ts, int tier, uint64_t size)
{
	pthread_mutex_lock(&ts->lock);
	if (ts->rt[tier].reserved >= size)
		ts->rt[tier].reserved -= size;
	else
		ts->rt[tier].reserved = 0;
	pthread_mutex_unlock(&ts->lock);
}

void tiers_commit(struct tiers *ts, int tier, int64_t delta)
{
	struct tier_rt *rt = &ts->rt[tier];

	pthread_mutex_lock(&ts->lock);
	if (delta >= 0)
		rt->committed += (uint64_t)delta;
	else if (rt->committed >= (uint64_t)-delta)
		rt->committed -= (uint64_t)-delta;
	else
		rt->committed = 0;
	pthread_mutex_unlock(&ts->lock);
}

void tiers_cache_account(struct tiers *ts, int tier, int64_t delta)
{
	struct tier_rt *rt = &ts->rt[tier];

	pthread_mutex_lock(&ts->lock);
	if (delta >= 0)
		rt->cache += (uint64_t)delta;
	else if (rt->cache >= (uint64_t)-delta)
		rt->cache -= (uint64_t)-delta;
	else
		rt->cache = 0;
	pthread_mutex_unlock(&ts->lock);
}
