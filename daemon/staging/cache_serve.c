/* cache_serve.c - a published version opened for another node's stage
 * worker (daemon/cluster/peer_fetch.c; docs/STAGING.md, "Filling from
 * another node").
 *
 * Root opens what the asker names, so everything named is checked here:
 * the tier must be one of this node's own (a Shared=yes tier is read by
 * every node directly), the key a key, the version a number, which makes
 * the directory K.vN and never a .build. or .evict. one; the version must
 * load as the index would load it (meta.json and manifest root's, data
 * the entry's user's, cache_index_load); and the asker must be the
 * entry's user, root, or anyone for a public entry. An entry the asker
 * may not have is answered like a missing one. Files are then opened
 * beneath the version's data with openat2 (no symlink, no magic link, no
 * other mount), without blocking (a fifo), and must be regular files
 * of the entry's user (of root for a public entry): the data is the
 * user's, who may have put anything there, a hard link to another's file
 * included where fs.protected_hardlinks is off. A chunk of a file too
 * large for one node (common/fs/partchunks.h) is opened the same way
 * beneath the version's chunks directory, by its name alone.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/config/pathsafe.h"
#include "common/fs/beneath.h"
#include "common/fs/partchunks.h"
#include "daemon/staging/cache_internal.h"

/* The tier named NAME: its index, or -1 with the refusal in err. */
static int served_tier(const struct cache *c, const char *name, char *err,
		       size_t errlen)
{
	for (size_t t = 0; t < c->conf->ntiers; t++) {
		if (strcmp(c->conf->tiers[t].name, name))
			continue;
		if (c->conf->tiers[t].shared) {
			snprintf(err, errlen,
				 "tier '%s' is Shared=yes: every node reads "
				 "it directly",
				 name);
			return -1;
		}
		return (int)t;
	}
	snprintf(err, errlen, "no tier '%.32s' on this node", name);
	return -1;
}

int cache_open_served(struct cache *c, const char *tier, const char *key,
		      unsigned version, uid_t asker, struct cache_served *ret,
		      char *err, size_t errlen)
{
	char name[CACHE_ENTRY_NAME_MAX], why[256];
	struct cache_served s = {
		.vfd = -1, .data_fd = -1, .manifest_fd = -1, .chunks_fd = -1
	};
	struct cache_entry *e = NULL;
	struct cache_version cur;
	struct stat st;
	unsigned next;
	int t;

	if ((t = served_tier(c, tier, err, errlen)) < 0)
		return -1;
	if (!cache_is_key(key, strlen(key))) {
		snprintf(err, errlen, "'%.40s' is not a cache key", key);
		return -1;
	}
	if (version > CACHE_VERSION_MAX) {
		snprintf(err, errlen, "version %u: must be 1..%u", version,
			 CACHE_VERSION_MAX);
		return -1;
	}
	/* 0: the current version, as entry_current answers it. Without
	 * K.lock a newer one may be published meanwhile, or this one
	 * evicted: the asker then gets the older one, or "not found", as
	 * it would a moment earlier or later. */
	if (version == 0) {
		if (cache_current(c, t, key, &cur, &next) != 1) {
			snprintf(err, errlen,
				 "cache entry %s not found on tier '%s'", key,
				 tier);
			errno = ENOENT;
			return -1;
		}
		version = cur.version;
	}
	cache_version_name(key, version, name, sizeof(name));
	e = cache_index_load(c, t, name, why, sizeof(why));
	if (!e || !(asker == 0 || e->public || e->uid == asker))
		goto missing;
	s.version = version;
	s.public = e->public;
	s.part = e->part;
	s.uid = e->uid;
	s.file_owner = e->public ? c->owner_uid : e->uid;
	s.vfd = cache_open_dir_at(c->cache_fd[t], name);
	if (s.vfd < 0)
		goto missing;
	s.manifest_fd = openat(s.vfd, "manifest",
			       O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (s.manifest_fd < 0 || fstat(s.manifest_fd, &st) < 0 ||
	    !S_ISREG(st.st_mode) || st.st_uid != c->owner_uid)
		goto missing;
	s.manifest_size = (uint64_t)st.st_size;
	/* A directory's fd to resolve paths beneath; a one-file dataset
	 * has none (its one path is ""). */
	s.data_fd = openat(s.vfd, "data",
			   O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (s.data_fd < 0 && errno != ENOTDIR)
		goto missing;
	/* Its chunks (a spread dataset's files too large for one node),
	 * if it holds any: a version without them is served as before. */
	s.chunks_fd = openat(s.vfd, PARTCHUNKS_DIR,
			     O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (s.chunks_fd < 0 && errno != ENOENT && errno != ENOTDIR)
		goto missing;
	cache_entry_free(e);
	*ret = s;
	return 0;
missing:
	cache_entry_free(e);
	cache_served_close(&s);
	snprintf(err, errlen, "cache entry %s not found on tier '%s'", name,
		 tier);
	errno = ENOENT;
	return -1;
}

/* REL beneath DFD: no symlink, no magic link, no other mount (root
 * resolving a user's path with openat alone could be led by a symlink on
 * the way). */
static int open_beneath(int dfd, const char *rel)
{
	return beneath_open(dfd, rel, O_RDONLY | O_NONBLOCK, RESOLVE_NO_XDEV);
}

/* REL beneath DFD opened for S (open_beneath), a regular file of S's
 * file owner: fd with *ret_st, or -1 with errno and the reason in err
 * (MISSING for a name that is not there; NULL: strerror's). */
static int open_checked(const struct cache_served *s, int dfd, const char *rel,
			const char *missing, struct stat *ret_st, char *err,
			size_t errlen)
{
	struct stat st;
	int fd = open_beneath(dfd, rel), e;

	if (fd < 0) {
		e = errno;
		snprintf(err, errlen, "%s",
			 e == ELOOP   ? "a symlink on the way"
			 : e == EXDEV ? "not beneath the version's data"
			 : e == ENOENT && missing ? missing
						  : strerror(e));
		errno = e;
		return -1;
	}
	if (fstat(fd, &st) < 0) {
		e = errno;
		snprintf(err, errlen, "%s", strerror(e));
		close(fd);
		errno = e;
		return -1;
	}
	if (!S_ISREG(st.st_mode)) {
		snprintf(err, errlen, "not a regular file");
		close(fd);
		errno = EINVAL;
		return -1;
	}
	/* A file the entry's user did not write (on a node without
	 * fs.protected_hardlinks, a hard link they made to root's or
	 * another user's file) would be read by root for them. */
	if (st.st_uid != s->file_owner) {
		snprintf(err, errlen, "not the entry's own file");
		close(fd);
		errno = EPERM;
		return -1;
	}
	*ret_st = st;
	return fd;
}

static int not_clean(char *err, size_t errlen)
{
	snprintf(err, errlen,
		 "not a clean relative path (no '.' or '..' components, no "
		 "leading '/')");
	errno = EINVAL;
	return -1;
}

int cache_served_open_file(const struct cache_served *s, const char *rel,
			   struct stat *ret_st, char *err, size_t errlen)
{
	if (*rel && !pathsafe_is_relative(rel, CACHE_SERVED_PATH_MAX))
		return not_clean(err, errlen);
	if (!*rel && s->data_fd >= 0) {
		snprintf(err, errlen, "the dataset is a directory");
		errno = EISDIR;
		return -1;
	}
	if (*rel && s->data_fd < 0) {
		snprintf(err, errlen, "the dataset is one file");
		errno = ENOTDIR;
		return -1;
	}
	return *rel
		   ? open_checked(s, s->data_fd, rel, NULL, ret_st, err, errlen)
		   : open_checked(s, s->vfd, "data", NULL, ret_st, err, errlen);
}

int cache_served_open_chunk(const struct cache_served *s, const char *rel,
			    uint64_t index, struct stat *ret_st, char *err,
			    size_t errlen)
{
	char name[PARTCHUNK_NAME_MAX];

	/* The name is a hash of REL, so REL never reaches the file
	 * system; it is checked anyway, as a file's is: the client asks
	 * for a file of the dataset, and only such a path names one. */
	if (!pathsafe_is_relative(rel, CACHE_SERVED_PATH_MAX))
		return not_clean(err, errlen);
	if (s->chunks_fd < 0) {
		snprintf(err, errlen, "not held here");
		errno = ENOENT;
		return -1;
	}
	partchunk_name(rel, strlen(rel), index, name);
	return open_checked(s, s->chunks_fd, name, "not held here", ret_st, err,
			    errlen);
}

void cache_served_close(struct cache_served *s)
{
	if (s->vfd >= 0)
		close(s->vfd);
	if (s->data_fd >= 0)
		close(s->data_fd);
	if (s->manifest_fd >= 0)
		close(s->manifest_fd);
	if (s->chunks_fd >= 0)
		close(s->chunks_fd);
	s->vfd = s->data_fd = s->manifest_fd = s->chunks_fd = -1;
}
