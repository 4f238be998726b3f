/* cache_pin.c - pins, and the jobs' read-only views of their versions.
 *
 * A pin is an empty file K.vN/pins/NODE.JOBID, one per job of a node using
 * the version: on disk, not in memory, because on a Shared tier other
 * nodes must see it before they evict, and a restarted daemon must find
 * the pins of the jobs that kept running. A pinned version is never
 * removed. Pinning also marks the last use (meta.json's mtime, the LRU
 * clock) and, at a version's second job, its promotion out of the one-use
 * class that eviction takes first (recorded in meta.json, so that it
 * survives a restart).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/base/log.h"
#include "common/config/joblayout.h"
#include "common/fs/bindmount.h"
#include "daemon/staging/cache_internal.h"

int cache_pins_read(struct cache *c, int tier, const char *name, char *list,
		    size_t listlen)
{
	struct dirent *de;
	DIR *dir;
	int vfd, pfd, n = 0;

	if (list && listlen)
		list[0] = '\0';
	vfd = cache_open_dir_at(c->cache_fd[tier], name);
	if (vfd < 0)
		return errno == ENOENT ? 0 : -1;
	pfd = cache_open_dir_at(vfd, "pins");
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

int cache_pin(struct cache *c, int tier, const char *key, unsigned version,
	      uint32_t jobid, char *err, size_t errlen)
{
	char name[CACHE_ENTRY_NAME_MAX], pin[CACHE_PIN_NAME_MAX];
	int vfd = -1, pfd = -1, fd = -1, r = -1;
	struct cache_entry *e;
	bool promoted = false;

	cache_version_name(key, version, name, sizeof(name));
	cache_pin_name(c, jobid, pin, sizeof(pin));
	vfd = cache_open_dir_at(c->cache_fd[tier], name);
	if (vfd >= 0)
		pfd = cache_open_dir_at(vfd, "pins");
	if (pfd >= 0)
		fd = openat(pfd, pin,
			    O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0644);
	if (fd < 0) {
		snprintf(err, errlen, "tier '%s': cannot pin cache/%s: %s",
			 cache_tier_name(c, tier), name, strerror(errno));
		goto out;
	}
	(void)fsync(pfd);
	pthread_mutex_lock(&c->mu);
	e = cache_index_find_locked(c, tier, key, version);
	if (e) {
		e->last_used = time(NULL);
		promoted = ++e->uses == 2;
	}
	pthread_mutex_unlock(&c->mu);
	/* meta.json's mtime is the last use (LRU); a second job's use is
	 * recorded in it, so that a restart keeps the entry's class. */
	if (promoted)
		cache_meta_rewrite(c, tier, key, version);
	else if (utimensat(vfd, "meta.json", NULL, AT_SYMLINK_NOFOLLOW) < 0)
		log_warning("tier '%s': cannot touch cache/%s/meta.json",
			    cache_tier_name(c, tier), name);
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

void cache_unpin_job(struct cache *c, int tier, const char *key, uint32_t jobid)
{
	char name[CACHE_ENTRY_NAME_MAX], pin[CACHE_PIN_NAME_MAX];
	struct cache_lock *lk;
	unsigned *v;
	size_t n, i;

	cache_index_rescan_shared(c, tier);
	cache_pin_name(c, jobid, pin, sizeof(pin));
	v = cache_index_versions(c, tier, key, &n);
	for (i = 0; i < n; i++) {
		int vfd, pfd = -1;

		cache_version_name(key, v[i], name, sizeof(name));
		vfd = cache_open_dir_at(c->cache_fd[tier], name);
		if (vfd >= 0)
			pfd = cache_open_dir_at(vfd, "pins");
		if (pfd >= 0 && unlinkat(pfd, pin, 0) < 0 && errno != ENOENT)
			log_warning("tier '%s': cannot unpin cache/%s/pins/%s",
				    cache_tier_name(c, tier), name, pin);
		if (pfd >= 0)
			close(pfd);
		if (vfd >= 0)
			close(vfd);
	}
	free(v);
	/* Old versions go once unpinned; if a stager holds K.lock it will
	 * do it itself. */
	lk = cache_lock_try(c, tier, key);
	if (lk) {
		cache_gc_key(c, tier, key);
		cache_lock_release(lk);
	}
}

void cache_pins_drop_stale(struct cache *c, int tier, const char *name,
			   cache_job_known_fn job_known, void *arg)
{
	const char *node_name = c->conf->node_name;
	size_t node = strlen(node_name);
	struct dirent *de;
	DIR *dir;
	int vfd, pfd;

	vfd = cache_open_dir_at(c->cache_fd[tier], name);
	if (vfd < 0)
		return;
	pfd = cache_open_dir_at(vfd, "pins");
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

		if (strncmp(de->d_name, node_name, node) ||
		    de->d_name[node] != '.')
			continue;
		errno = 0;
		j = strtoul(id, &end, 10);
		if (*id && !*end && !errno && j <= UINT32_MAX &&
		    job_known(arg, (uint32_t)j))
			continue;
		if (unlinkat(dirfd(dir), de->d_name, 0) == 0)
			log_info("tier '%s': dropped cache/%s/pins/%s (job "
				 "no longer known)",
				 cache_tier_name(c, tier), name, de->d_name);
	}
	closedir(dir);
}

/* --- the job's view ----------------------------------------------------------
 */

/* Bind SRC_FD read-only onto NAME in TIER/jobs/J/data (see
 * cache_mount_job); LABEL names the source in messages. */
static int mount_job_from(struct cache *c, int tier, uint32_t jobid,
			  const char *name, int src_fd, char *err,
			  size_t errlen)
{
	char job[JOBLAYOUT_JOB_NAME_MAX], why[CONF_ERR_MAX];
	const char *tn = cache_tier_name(c, tier);
	struct stat st;
	int jfd = -1, dfd = -1, r = -1;

	if (joblayout_job_name(c->conf, &c->conf->tiers[tier], jobid, job,
			       sizeof(job)) < 0)
		snprintf(job, sizeof(job), "%" PRIu32,
			 jobid); /* cannot happen */
	jfd = cache_open_dir_at(c->jobs_fd[tier], job);
	if (jfd >= 0)
		dfd = cache_open_dir_at(jfd, "data");
	if (dfd < 0 || fstat(dfd, &st) < 0) {
		snprintf(err, errlen, "tier '%s': cannot open jobs/%s/data: %s",
			 tn, job, strerror(errno));
		goto out;
	}
	if (st.st_uid != c->owner_uid) {
		/* The user swapped our directory for theirs. */
		snprintf(err, errlen,
			 "tier '%s': jobs/%s/data is not root's any more", tn,
			 job);
		goto out;
	}
	if (bindmount_ro_at(src_fd, dfd, name, why, sizeof(why)) < 0) {
		snprintf(err, errlen, "tier '%s': jobs/%s/data: %s", tn, job,
			 why);
		goto out;
	}
	r = 0;
out:
	if (dfd >= 0)
		close(dfd);
	if (jfd >= 0)
		close(jfd);
	return r;
}

int cache_mount_job(struct cache *c, int tier, uint32_t jobid, const char *name,
		    const char *key, unsigned version, char *err, size_t errlen)
{
	char vname[CACHE_ENTRY_NAME_MAX];
	const char *tn = cache_tier_name(c, tier);
	int vfd, sfd = -1, r;

	cache_version_name(key, version, vname, sizeof(vname));
	vfd = cache_open_dir_at(c->cache_fd[tier], vname);
	if (vfd >= 0)
		sfd = openat(vfd, "data", O_PATH | O_NOFOLLOW | O_CLOEXEC);
	if (sfd < 0) {
		snprintf(err, errlen,
			 "tier '%s': cannot open cache/%s/data: %s", tn, vname,
			 strerror(errno));
		if (vfd >= 0)
			close(vfd);
		return -1;
	}
	r = mount_job_from(c, tier, jobid, name, sfd, err, errlen);
	close(sfd);
	close(vfd);
	return r;
}

int cache_mount_job_fd(struct cache *c, int tier, uint32_t jobid,
		       const char *name, int src_fd, char *err, size_t errlen)
{
	return mount_job_from(c, tier, jobid, name, src_fd, err, errlen);
}

int cache_open_version_data(struct cache *c, int tier, const char *key,
			    unsigned version)
{
	char vname[CACHE_ENTRY_NAME_MAX];
	int vfd, sfd = -1, saved;

	cache_version_name(key, version, vname, sizeof(vname));
	vfd = cache_open_dir_at(c->cache_fd[tier], vname);
	if (vfd < 0)
		return -1;
	sfd = openat(vfd, "data",
		     O_PATH | O_NOFOLLOW | O_DIRECTORY | O_CLOEXEC);
	saved = errno;
	close(vfd);
	errno = saved;
	return sfd;
}
