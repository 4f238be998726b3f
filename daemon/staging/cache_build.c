/* cache_build.c - building a version and publishing it; meta.json.
 *
 * Publication order, so that a crash at any point leaves nothing half-done
 * that could be served: journal record -> .build dir (user) -> worker
 * copies and syncs -> dir chowned to root 0711 -> everything but data
 * removed -> manifest, meta.json, pins/ written and synced -> rename to
 * K.vN -> journal record removed. (Removal goes the other way,
 * cache_evict.c.) A version is served only under its name K.vN, and
 * recovery (cache_reconcile.c) removes every build the journal lists, so a
 * crash before the rename loses the build and one after it keeps the
 * version. cache_build_publish_upto stops after any step, for the tests
 * that play each crash.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/base/jsonbuf.h"
#include "common/base/log.h"
#include "common/fs/owntree.h"
#include "common/fs/partchunks.h"
#include "common/fs/rmtree.h"
#include "daemon/fsutil.h"
#include "daemon/staging/cache_internal.h"

int64_t cache_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

int cache_open_manifest(struct cache *c, int tier, const char *key,
			unsigned version)
{
	char name[CACHE_ENTRY_NAME_MAX];
	int vfd, fd;

	cache_version_name(key, version, name, sizeof(name));
	vfd = cache_open_dir_at(c->cache_fd[tier], name);
	if (vfd < 0)
		return -1;
	fd = openat(vfd, "manifest", O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	close(vfd);
	return fd;
}

/* --- meta.json ---------------------------------------------------------------
 */

char *cache_meta_text(const struct cache *c, const char *key, unsigned version,
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
	cJSON_AddStringToObject(o, "verify", profile_verify_name(m->verify));
	if (m->public)
		cJSON_AddBoolToObject(o, "public", true);
	if (m->reused)
		cJSON_AddBoolToObject(o, "reused", true);
	if (m->part)
		cJSON_AddBoolToObject(o, "part", true);
	cJSON_AddNumberToObject(o, "created", (double)created);
	cJSON_AddNumberToObject(o, "verified",
				(double)(verified_ns / 1000000000));
	cJSON_AddNumberToObject(o, "verified_ns", (double)verified_ns);
	cJSON_AddStringToObject(o, "node", c->conf->node_name);
	text = jsonbuf_dup(o);
	cJSON_Delete(o);
	return text;
}

void cache_meta_rewrite(struct cache *c, int tier, const char *key,
			unsigned version)
{
	char name[CACHE_ENTRY_NAME_MAX], *text = NULL;
	struct cache_meta m;
	struct cache_entry *e;
	int vfd;

	pthread_mutex_lock(&c->mu);
	e = cache_index_find_locked(c, tier, key, version);
	if (e) {
		m = (struct cache_meta){ .src = e->src,
					 .uid = e->uid,
					 .user = e->user,
					 .bytes = e->bytes,
					 .files = e->files,
					 .verify = e->verify,
					 .public = e->public,
					 .reused = cache_entry_reused(e),
					 .part = e->part };
		text = cache_meta_text(c, key, version, &m, e->created,
				       e->verified_ns);
	}
	pthread_mutex_unlock(&c->mu);
	if (!text)
		return;
	cache_version_name(key, version, name, sizeof(name));
	vfd = cache_open_dir_at(c->cache_fd[tier], name);
	if (vfd < 0 ||
	    fsutil_write_atomic(vfd, "meta.json", text, strlen(text), 0644) < 0)
		log_warning("tier '%s': cannot update cache/%s/meta.json",
			    cache_tier_name(c, tier), name);
	if (vfd >= 0)
		close(vfd);
	free(text);
}

void cache_mark_verified(struct cache *c, int tier, const char *key,
			 unsigned version, int64_t verified_ns)
{
	struct cache_entry *e;
	bool found;

	pthread_mutex_lock(&c->mu);
	e = cache_index_find_locked(c, tier, key, version);
	found = e != NULL;
	if (e) {
		e->verified = (time_t)(verified_ns / 1000000000);
		e->verified_ns = verified_ns;
	}
	pthread_mutex_unlock(&c->mu);
	if (found)
		cache_meta_rewrite(c, tier, key, version);
}

/* --- builds ------------------------------------------------------------------
 */

/* An anonymous file of the owner on the tier for the worker's manifest. */
static int manifest_tmp(struct cache *c, int tier, const char *build)
{
	int cfd = c->cache_fd[tier], fd;
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

int cache_build_begin(struct cache *c, int tier, const char *key,
		      unsigned version, uid_t uid, gid_t gid,
		      struct cache_build *ret, char *err, size_t errlen)
{
	int cfd = c->cache_fd[tier], bfd = -1, saved;
	char rmerr[CONF_ERR_MAX];
	struct cache_build b;

	memset(&b, 0, sizeof(b));
	b.cache = c;
	b.tier = tier;
	b.version = version;
	b.uid = uid;
	b.manifest_fd = -1;
	snprintf(b.key, sizeof(b.key), "%s", key);
	snprintf(b.name, sizeof(b.name), ".build.%s.v%u.%s", key, version,
		 c->conf->node_name);
	snprintf(b.path, sizeof(b.path), "%s/cache/%s",
		 c->conf->tiers[tier].path, b.name);
	if (!c->journal) {
		snprintf(err, errlen, "cache: not recovered yet");
		errno = EINVAL;
		return -1;
	}
	if (journal_add(c->journal, tier, b.name, err, errlen) < 0)
		return -1;
	/* Ours from an earlier attempt (the journal would have removed it
	 * at start; this is belt and braces). */
	if (rmtree_at(cfd, b.name, rmerr, sizeof(rmerr)) < 0 ||
	    mkdirat(cfd, b.name, 0700) < 0)
		goto fail;
	bfd = cache_open_dir_at(cfd, b.name);
	if (bfd < 0 || fchown(bfd, uid, gid) < 0 || fchmod(bfd, 0700) < 0)
		goto fail;
	close(bfd);
	bfd = -1;
	b.manifest_fd = manifest_tmp(c, tier, b.name);
	if (b.manifest_fd < 0)
		goto fail;
	*ret = b;
	return 0;
fail:
	saved = errno;
	snprintf(err, errlen, "tier '%s': cannot create cache/%s: %s",
		 cache_tier_name(c, tier), b.name, strerror(saved));
	if (bfd >= 0)
		close(bfd);
	rmtree_at(cfd, b.name, rmerr, sizeof(rmerr));
	journal_remove(c->journal, tier, b.name);
	errno = saved;
	return -1;
}

void cache_build_abort(struct cache_build *b)
{
	struct cache *c = b->cache;
	char rmerr[CONF_ERR_MAX];

	if (b->manifest_fd >= 0)
		close(b->manifest_fd);
	b->manifest_fd = -1;
	if (rmtree_at(c->cache_fd[b->tier], b->name, rmerr, sizeof(rmerr)) <
	    0) {
		/* Keep the journal record: the next start retries. */
		log_warningx("tier '%s': cannot remove cache/%s: %s",
			     cache_tier_name(c, b->tier), b->name, rmerr);
		return;
	}
	journal_remove(c->journal, b->tier, b->name);
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

/* Remove every entry of the build directory BFD except "data" and a
 * spread part's chunks (common/fs/partchunks.h). */
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
		    !strcmp(de->d_name, "data") ||
		    !strcmp(de->d_name, PARTCHUNKS_DIR))
			continue;
		if (rmtree_at(bfd, de->d_name, err, errlen) < 0) {
			closedir(dir);
			return -1;
		}
	}
	closedir(dir);
	return 0;
}

int cache_build_publish_upto(struct cache_build *b,
			     const struct cache_meta *meta,
			     enum cache_publish_step upto, char *err,
			     size_t errlen)
{
	struct cache *c = b->cache;
	int cfd = c->cache_fd[b->tier], bfd = -1;
	char name[CACHE_ENTRY_NAME_MAX], why[CONF_ERR_MAX] = "", *text = NULL;
	struct cache_entry *e;
	struct stat st;
	time_t now = time(NULL);

	cache_version_name(b->key, b->version, name, sizeof(name));
	bfd = cache_open_dir_at(cfd, b->name);
	if (bfd < 0 || fstat(bfd, &st) < 0) {
		snprintf(why, sizeof(why), "cannot open: %s", strerror(errno));
		goto fail;
	}
	/* The worker is gone: from here on only root writes in it. */
	if (fchown(bfd, c->owner_uid, c->owner_gid) < 0 ||
	    fchmod(bfd, 0711) < 0) {
		snprintf(why, sizeof(why), "cannot take it back: %s",
			 strerror(errno));
		goto fail;
	}
	if (upto == CACHE_PUBLISH_TAKEN)
		goto stop;
	if (strip_build(bfd, why, sizeof(why)) < 0)
		goto fail;
	if (fstatat(bfd, "data", &st, AT_SYMLINK_NOFOLLOW) < 0 ||
	    !(S_ISDIR(st.st_mode) || S_ISREG(st.st_mode)) ||
	    st.st_uid != b->uid) {
		snprintf(why, sizeof(why), "the worker left no data");
		goto fail;
	}
	/* A part's chunks: the worker's own directory, or none. */
	if (fstatat(bfd, PARTCHUNKS_DIR, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
	    (!S_ISDIR(st.st_mode) || st.st_uid != b->uid || !meta->part)) {
		snprintf(why, sizeof(why), "the worker left a stray %s",
			 PARTCHUNKS_DIR);
		goto fail;
	}
	/* Public: other users will read it, so nothing of it may stay the
	 * builder's (nor anyone's but root's) to change. */
	if (meta->public) {
		char terr[CONF_ERR_MAX - 64];
		bool chunks = fstatat(bfd, PARTCHUNKS_DIR, &st,
				      AT_SYMLINK_NOFOLLOW) == 0;

		if (owntree_take(bfd, "data", c->owner_uid, c->owner_gid, terr,
				 sizeof(terr)) < 0 ||
		    (chunks &&
		     owntree_take(bfd, PARTCHUNKS_DIR, c->owner_uid,
				  c->owner_gid, terr, sizeof(terr)) < 0)) {
			snprintf(why, sizeof(why), "cannot take data over: %s",
				 terr);
			goto fail;
		}
	}
	if (upto == CACHE_PUBLISH_STRIPPED)
		goto stop;
	text = cache_meta_text(c, b->key, b->version, meta, now,
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
	free(text);
	text = NULL;
	if (upto == CACHE_PUBLISH_WRITTEN)
		goto stop;
	if (renameat2(cfd, b->name, cfd, name, RENAME_NOREPLACE) < 0) {
		snprintf(why, sizeof(why), "cannot rename to %s: %s", name,
			 strerror(errno));
		goto fail;
	}
	(void)fsync(cfd);
	close(bfd);
	bfd = -1;
	if (upto == CACHE_PUBLISH_RENAMED)
		goto stop;
	journal_remove(c->journal, b->tier, b->name);
	close(b->manifest_fd);
	b->manifest_fd = -1;

	e = cache_index_load(c, b->tier, name, why, sizeof(why));
	if (!e) {
		snprintf(err, errlen, "tier '%s': cache/%s: %s",
			 cache_tier_name(c, b->tier), name, why);
		return -1;
	}
	e->uses = 0; /* new: the job it was built for pins it next */
	cache_index_add(c, e);
	return 0;
stop:
	if (bfd >= 0)
		close(bfd);
	return 0;
fail:
	snprintf(err, errlen, "tier '%s': cannot publish cache/%s: %s",
		 cache_tier_name(c, b->tier), b->name, why);
	if (bfd >= 0)
		close(bfd);
	free(text);
	cache_build_abort(b);
	return -1;
}

int cache_build_publish(struct cache_build *b, const struct cache_meta *meta,
			char *err, size_t errlen)
{
	return cache_build_publish_upto(b, meta, CACHE_PUBLISH_DONE, err,
					errlen);
}
