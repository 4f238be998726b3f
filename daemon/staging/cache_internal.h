/* cache_internal.h - what the parts of the cache share (cache.h is the API).
 *
 * The cache is split by concern, one file each:
 *   cache.c           the object: create, destroy, generation, counts
 *   cache_names.c     keys, version and temporary names, paths
 *   cache_index.c     the in-memory summaries: loading meta.json, rescans,
 *                     the current version
 *   cache_lock.c      K.lock: one builder of a key at a time, and its file
 *                     removed with the key's last version
 *   cache_build.c     building and publishing a version, meta.json
 *   cache_pin.c       pins, and the jobs' read-only views
 *   cache_evict.c     removing versions: old ones, and for space (the
 *                     eviction order and watermarks)
 *   cache_request.c   what clients ask: cache_ls, cache_evict
 *   cache_serve.c     a version opened for another node's stage worker
 *   cache_reconcile.c start-up: the journal's builds, crash leftovers
 *   cache_tiers.c     iostaged's cache over tiers.c
 *
 * Every path below a tier is walked from the TIER/cache fd, one component
 * at a time, with O_NOFOLLOW: the build directory and data belong to
 * users, and nothing they plant there may steer root.
 *
 * Unit tests (tests/unit/check_cache*.c) include this header to reach the
 * seams below: the eviction order and its stopping rule as pure functions,
 * publication stopped after any step (a crash), the journal.
 */
#ifndef IOSTAGE_DAEMON_CACHE_INTERNAL_H
#define IOSTAGE_DAEMON_CACHE_INTERNAL_H

#include <dirent.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#include "daemon/staging/cache.h"
#include "daemon/staging/journal.h"

#define CACHE_META_MAX (64 * 1024)
#define CACHE_PIN_NAME_MAX (CONF_NODE_MAX + 16)
#define CACHE_LOCK_NAME_MAX (CACHE_KEY_LEN + 8) /* "K.lock" */

/* The summary of one complete version. */
struct cache_entry {
	struct cache_entry *next;
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
	bool part;   /* a spread dataset's part (meta.json "part") */
	/* Jobs that pinned it (for one loaded from disk: 2 if meta.json says
	 * reused, else 1); entries used by one job only are evicted first
	 * (see cache_evict_order). */
	unsigned uses;
	bool seen; /* rescan mark */
};

struct cache {
	const struct conf *conf;
	struct cache_space space;
	uid_t owner_uid;
	gid_t owner_gid;
	int cache_fd[CONF_MAX_TIERS];
	int jobs_fd[CONF_MAX_TIERS];
	struct journal *journal; /* opened by cache_recover */
	/* The index: every complete version of every tier. K.lock is never
	 * waited on while mu is held. */
	pthread_mutex_t mu;
	struct cache_entry *entries;
	/* Bumped whenever a version enters or leaves the index (mu held):
	 * daemon/cluster/cachereport.c tells iostagectld what this node holds
	 * when it moved. */
	uint64_t gen;
	/* One evictor at a time: two would pick the same victims. */
	pthread_mutex_t evict_mu;
};

/* --- cache_names.c ---------------------------------------------------------
 */

/* "K.vN" -> key, version (N from 1, no leading zero, at most 9 digits). */
bool cache_parse_version_name(const char *name, char key[CACHE_KEY_LEN + 1],
			      unsigned *ret_version);

/* "K.vN" into buf. */
void cache_version_name(const char *key, unsigned version, char *buf,
			size_t len);

/* "K.lock" into buf (CACHE_LOCK_NAME_MAX). */
void cache_lock_name(const char *key, char *buf, size_t len);

/* Is NAME (".build.K.vN.NODE" or ".evict.K.vN.NODE") a leftover of
 * PREFIX, and, with MINE, one this node made? */
bool cache_is_temp_name(const struct cache *c, const char *name,
			const char *prefix, bool mine);

/* This node's pin of job JOBID: "NODE.JOBID". */
void cache_pin_name(const struct cache *c, uint32_t jobid, char *buf,
		    size_t len);

const char *cache_tier_name(const struct cache *c, int tier);
bool cache_tier_shared(const struct cache *c, int tier);

/* openat(DFD, NAME) of a directory, never through a symlink. */
int cache_open_dir_at(int dfd, const char *name);

/* A listing of TIER's cache directory (its own fd: readdir moves the
 * offset), or NULL after logging why. */
DIR *cache_open_listing(const struct cache *c, int tier);

/* --- cache_index.c ---------------------------------------------------------
 */

void cache_entry_free(struct cache_entry *e);

/* With c->mu held. */
struct cache_entry *cache_index_find_locked(struct cache *c, int tier,
					    const char *key, unsigned version);
void cache_index_insert_locked(struct cache *c, struct cache_entry *e);
void cache_index_drop_locked(struct cache *c, struct cache_entry *e);

/* Insert E unless its version is indexed already (then free E). */
void cache_index_add(struct cache *c, struct cache_entry *e);

/* Drop TIER's KEY vVERSION from the index, if there. */
void cache_index_drop(struct cache *c, int tier, const char *key,
		      unsigned version);

/* Whether TIER's index holds a version of KEY. */
bool cache_index_has_key(struct cache *c, int tier, const char *key);

/* The version numbers of KEY on TIER from the index (in no order). Caller
 * frees; *ret_n may be 0. */
unsigned *cache_index_versions(struct cache *c, int tier, const char *key,
			       size_t *ret_n);

/* Load the summary of TIER's version directory NAME; NULL (with a reason
 * in why) when it lacks meta.json, manifest or data, or what it holds is
 * not owned as it must be. */
struct cache_entry *cache_index_load(struct cache *c, int tier,
				     const char *name, char *why,
				     size_t whylen);

/* Bring TIER's summaries in line with its directory: new versions (built
 * by other nodes) are loaded, vanished ones dropped, last use refreshed. */
void cache_index_rescan(struct cache *c, int tier);

/* The same on a Shared tier only (TIER -1: every Shared tier). */
void cache_index_rescan_shared(struct cache *c, int tier);

/* A second job used it. */
bool cache_entry_reused(const struct cache_entry *e);

/* A copy of one summary, for work without c->mu. */
struct cache_snap {
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
struct cache_snap *cache_index_snapshot(struct cache *c, int tier, uid_t uid,
					bool with_public, const char *key,
					const char *src, size_t *ret_n);

/* --- cache_lock.c ----------------------------------------------------------
 */

struct cache_lock {
	struct cache *cache;
	int fd;
	int tier;
	char key[CACHE_KEY_LEN + 1];
};

/* K.lock if free right now, else NULL. */
struct cache_lock *cache_lock_try(struct cache *c, int tier, const char *key);

/* Whether FD, whose flock we hold, is still the file named K.lock (its
 * last holder may have removed it while we waited, and a newcomer then
 * locks a new file: ours would exclude nobody). */
bool cache_lock_still_named(struct cache *c, int tier, const char *key, int fd);

/* Remove TIER's K.lock files of keys with no version in the index: at
 * start, on a tier no other node uses (nobody else holds or waits). */
void cache_lock_drop_idle(struct cache *c, int tier);

/* --- cache_build.c ---------------------------------------------------------
 */

/* The steps of publishing a build, in their order; a crash after any of
 * them leaves nothing half-done that could be served. */
enum cache_publish_step {
	CACHE_PUBLISH_TAKEN = 1, /* the directory root's 0711 */
	CACHE_PUBLISH_STRIPPED,  /* everything but data removed (public:
				  * data taken over) */
	CACHE_PUBLISH_WRITTEN,   /* manifest, meta.json, pins/ synced */
	CACHE_PUBLISH_RENAMED,   /* published as K.vN */
	CACHE_PUBLISH_DONE,      /* journal record dropped, indexed */
};

/* cache_build_publish, stopped after step UPTO as a crash would stop it
 * (before CACHE_PUBLISH_DONE nothing is cleaned up; B's manifest fd stays
 * open). */
int cache_build_publish_upto(struct cache_build *b,
			     const struct cache_meta *meta,
			     enum cache_publish_step upto, char *err,
			     size_t errlen);

/* The text of meta.json for KEY vVERSION. Caller frees; NULL on ENOMEM. */
char *cache_meta_text(const struct cache *c, const char *key, unsigned version,
		      const struct cache_meta *m, time_t created,
		      int64_t verified_ns);

/* Rewrite meta.json of TIER's KEY vVERSION from its index entry: an atomic
 * replace, so its mtime (the last use) moves to now. */
void cache_meta_rewrite(struct cache *c, int tier, const char *key,
			unsigned version);

/* --- cache_pin.c -----------------------------------------------------------
 */

/* The pins of version NAME on TIER: their count, and with LIST their names
 * (", "-separated, cut to LISTLEN). -1 when pins/ cannot be read (then
 * treat it as pinned). */
int cache_pins_read(struct cache *c, int tier, const char *name, char *list,
		    size_t listlen);

/* Drop this node's pins, in version NAME, of jobs JOB_KNOWN does not
 * know. */
void cache_pins_drop_stale(struct cache *c, int tier, const char *name,
			   cache_job_known_fn job_known, void *arg);

/* --- cache_evict.c ---------------------------------------------------------
 */

/* Unpublish and remove TIER's KEY vVERSION from disk and index: renamed
 * out of the served names first. 0 (gone already included) or -1 with
 * err. */
int cache_remove_version(struct cache *c, int tier, const char *key,
			 unsigned version, char *err, size_t errlen);

/* A victim candidate, copied out of the index. */
struct cache_cand {
	char key[CACHE_KEY_LEN + 1];
	unsigned version;
	uint64_t bytes;
	time_t last_used;
	bool reused;
};

/* Sort C into eviction order (pure): the segmented LRU. */
void cache_evict_order(struct cache_cand *c, size_t n);

/* Whether a tier using USED bytes with FREE left has room for SIZE more
 * before evicting C, the next in line (pure): below CacheLowWatermark
 * (LOW bytes) while one-use versions are evicted, the slack the next
 * stagings get; below CacheHighWatermark (HIGH) once the next would be
 * a reused one. */
bool cache_evict_enough(const struct cache_cand *c, uint64_t used,
			uint64_t free, uint64_t size, uint64_t high,
			uint64_t low);

/* TIER's versions nobody pins, in eviction order; UNUSED_ONLY: only
 * those no job has used (pre-stages nobody found, warm-ups). *ret_bytes
 * gets their total. Caller frees. */
struct cache_cand *cache_evict_candidates(struct cache *c, int tier,
					  bool unused_only, size_t *ret_n,
					  uint64_t *ret_bytes);

#endif /* IOSTAGE_DAEMON_CACHE_INTERNAL_H */
