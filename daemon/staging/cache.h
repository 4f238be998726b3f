/* cache.h - staged datasets kept on the tiers across jobs (docs/STAGING.md).
 *
 * Layout, per tier (all below the TIER/cache fd that tiers.c opened):
 *   K.vN/            root 0711   a complete version: meta.json, manifest,
 *                                data (the user's copy), pins/NODE.JOBID
 *   K.lock           root 0600   flock: one builder or verifier of K at a time
 *   .build.K.vN.NODE user 0700   a version being built (journaled)
 * K is the xxh128 of "UID:SOURCE" in 32 hex digits: entries are per user.
 *
 * The cache is an object, struct cache, made with cache_create from its
 * tiers' directories and space (struct cache_params) and passed to whoever
 * stages, pins, lists or evicts: iostaged makes one (cache_params_tiers,
 * over tiers.c) in main(); a unit test makes as many as it likes over
 * tiers in temporary directories. Nothing of it lives in file-scope state.
 * Its parts, one concern per file, share daemon/staging/cache_internal.h.
 *
 * In memory a cache keeps one small summary per version (never the
 * manifests, which stay on disk and reach workers as inherited fds). On a
 * Shared tier other nodes change the directory too, so the summaries of
 * such a tier are refreshed from disk before each decision.
 *
 * Thread safety: every function may be called from any thread. Decisions
 * about one K (current version, build, pin, removal of old versions) are
 * made while holding K.lock (cache_lock_acquire); eviction takes the lock
 * of each victim without waiting and skips what it cannot lock or what is
 * pinned, by any node.
 */
#ifndef IOSTAGE_DAEMON_CACHE_H
#define IOSTAGE_DAEMON_CACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <time.h>

#include <cJSON.h>

#include "common/config/conf.h"
#include "common/config/profile.h"
#include "daemon/staging/journal.h"
#include "daemon/staging/tiers.h"

#define CACHE_KEY_LEN 32 /* hex digits */
#define CACHE_VERSION_MAX 999999999U
#define CACHE_ENTRY_NAME_MAX (CACHE_KEY_LEN + 16) /* "K.vN" */

/* Whether S (LEN bytes) is a key: CACHE_KEY_LEN lowercase hex digits. */
bool cache_is_key(const char *s, size_t len);

struct cache;
struct cache_lock;

/* The space of the tiers, which cache versions share with jobs' other
 * bytes and copies in flight (daemon/staging/tiers.h: iostaged passes
 * tiers.c's). Every function gets ARG and the tier's index. */
struct cache_space {
	/* Current usage of the tier. 0, or -1 with errno. */
	int (*usage)(void *arg, int tier, struct tiers_usage *ret);
	/* Reserve SIZE bytes for dataset DSNAME; -1 (ENOSPC) with a line
	 * in err when they do not fit. */
	int (*reserve)(void *arg, int tier, const char *dsname, uint64_t size,
		       char *err, size_t errlen);
	/* Bytes held by cache versions went up (or down) by DELTA. */
	void (*account)(void *arg, int tier, int64_t delta);
	void *arg;
};

/* What a cache is made of. */
struct cache_params {
	/* Its tiers (name, path, Shared=), NodeName, StateDir (the build
	 * journal) and the watermarks; must outlive the cache. */
	const struct conf *conf;
	/* Per tier of conf, borrowed (the caller closes them after
	 * cache_destroy): TIER/cache, and TIER/jobs for the jobs' views. */
	int cache_fd[CONF_MAX_TIERS];
	int jobs_fd[CONF_MAX_TIERS];
	struct cache_space space;
	/* Who owns what the cache itself writes (K.lock, meta.json,
	 * manifest, the versions' directories, public data) and must own
	 * what it trusts on disk: root (0:0) in iostaged; a unit test's own
	 * ids, so that it runs unprivileged. */
	uid_t owner_uid;
	gid_t owner_gid;
};

/* One complete version of an entry, as far as a stager needs it. */
struct cache_version {
	unsigned version;
	uint64_t bytes, files;
	time_t created;      /* when it was built */
	time_t verified;     /* last time it was found to match its source */
	int64_t verified_ns; /* the same, CLOCK_REALTIME ns: when the walk
			      * that proved it started */
	enum profile_verify verify;
};

/* The "user" of a public entry in meta.json and listings. */
#define CACHE_PUBLIC_USER "(public)"

/* What a new version records in its meta.json. */
struct cache_meta {
	const char *src;
	uid_t uid; /* 0 for a public entry */
	const char *user;
	bool public; /* served to every user; data root's */
	uint64_t bytes, files;
	enum profile_verify verify;
	int64_t verified_ns; /* when the walk of the build started */
	bool reused;         /* a second job has used it (eviction's class) */
	/* A node's part of a spread dataset (key cachekey_part(K)): served
	 * to another node only for a job that holds it (peer_fetch.c).
	 * meta.json "part":true; a version without it is a whole copy. */
	bool part;
};

/* A version being built: .build.K.vN.NODE and its manifest's temporary
 * file. Filled by cache_build_begin, ended by publish or abort. */
struct cache_build {
	struct cache *cache;
	int tier;
	char key[CACHE_KEY_LEN + 1];
	unsigned version;
	char name[JOURNAL_NAME_MAX];                      /* .build.K.vN.NODE */
	char path[CONF_PATH_MAX + JOURNAL_NAME_MAX + 16]; /* absolute */
	uid_t uid;
	int manifest_fd; /* for the worker's --manifest-out */
};

/* --- keys (no cache needed) ------------------------------------------------
 */

/* K for (UID, SRC) into ret (CACHE_KEY_LEN hex digits and a NUL). */
void cache_key(uid_t uid, const char *src, char ret[CACHE_KEY_LEN + 1]);

/* K of the public entry of SRC: xxh128 of "public:SRC", the same for
 * every user. */
void cache_key_public(const char *src, char ret[CACHE_KEY_LEN + 1]);

/* CLOCK_REALTIME in ns. */
int64_t cache_now_ns(void);

/* --- life ------------------------------------------------------------------
 */

/* A cache over P's tiers (P is copied; its conf and fds are borrowed),
 * with an empty index: nothing on disk is read or changed until
 * cache_recover. NULL with err (bad params, out of memory). The caller
 * owns it: cache_destroy. */
struct cache *cache_create(const struct cache_params *p, char *err,
			   size_t errlen);

/* Start-up, once, before any other use; StateDir must exist (jobs_create).
 * Open the build journal (StateDir/journal), remove the builds it lists
 * (and, on tiers only this node uses, any other leftover build), remove
 * versions lacking meta.json, manifest or data, drop this node's pins of
 * jobs JOB_KNOWN(ARG, id) does not know, remove K.lock files of keys with no
 * version (tiers of this node only), remove old unpinned versions, and
 * load the summaries. iostaged first detaches the views of jobs it no
 * longer knows (tiers_detach_stale), so that nothing still shows a
 * version this removes. 0, or -1 with err (the journal cannot be used). */
typedef bool (*cache_job_known_fn)(void *arg, uint32_t id);
int cache_recover(struct cache *c, cache_job_known_fn job_known, void *arg,
		  char *err, size_t errlen);

/* Free the summaries and close the journal. NULL is a no-op. */
void cache_destroy(struct cache *c);

/* P for iostaged's own tiers TS (tiers.c) of CONF: their directory fds
 * and space, owned by root (cache_tiers.c). */
void cache_params_tiers(struct tiers *ts, const struct conf *conf,
			struct cache_params *ret);

/* --- one key (stage.c) -----------------------------------------------------
 */

/* Take K.lock on TIER, polling every ~100 ms; before each retry STOP(ARG)
 * is asked, and a true answer (with a reason in why) gives up. 0 with
 * *ret, or -1 with err (the reason, or why the lock file cannot be used). */
int cache_lock_acquire(struct cache *c, int tier, const char *key,
		       bool (*stop)(void *arg, char *why, size_t len),
		       void *arg, struct cache_lock **ret, char *err,
		       size_t errlen);

/* Release and free; on a tier of this node only, a key with no version
 * left loses its K.lock file. NULL is a no-op. */
void cache_lock_release(struct cache_lock *lock);

/* The current (highest complete) version of KEY on TIER into *ret; call
 * with K.lock held. Returns 1 found, 0 none. *ret_next gets the number the
 * next version must use. */
int cache_current(struct cache *c, int tier, const char *key,
		  struct cache_version *ret, unsigned *ret_next);

/* The published versions of KEY on TIER, newest first, at most MAX of
 * them into RET; returns how many. */
size_t cache_versions_of(struct cache *c, int tier, const char *key,
			 unsigned *ret, size_t max);

/* Open K.vN/manifest read-only (O_CLOEXEC) for a worker. fd or -1. */
int cache_open_manifest(struct cache *c, int tier, const char *key,
			unsigned version);

/* The absolute path of K.vN (and with DATA, of K.vN/data) into buf. 0, or
 * -1 (ENAMETOOLONG). */
int cache_version_path(struct cache *c, int tier, const char *key,
		       unsigned version, bool data, char *buf, size_t buflen);

/* Record that K.vN was found to match its source by a walk that started
 * at VERIFIED_NS (CLOCK_REALTIME); rewrites its meta.json; K.lock held. */
void cache_mark_verified(struct cache *c, int tier, const char *key,
			 unsigned version, int64_t verified_ns);

/* Journal the build of KEY version VERSION and create its directory,
 * owned by UID:GID 0700, and the temporary manifest file. 0 with *ret, or
 * -1 with err; nothing is left behind on failure. */
int cache_build_begin(struct cache *c, int tier, const char *key,
		      unsigned version, uid_t uid, gid_t gid,
		      struct cache_build *ret, char *err, size_t errlen);

/* The worker has exited successfully: take the build directory back (root
 * 0711), keep only data (for a public entry, META->public: take data over
 * too, root's with no write or set-id bits, common/fs/owntree), write
 * manifest and meta.json, publish it as K.vN and drop the journal record.
 * On failure the build is aborted (removed). 0 or -1 with err. */
int cache_build_publish(struct cache_build *b, const struct cache_meta *meta,
			char *err, size_t errlen);

/* Remove a build that will not be published, and its journal record. */
void cache_build_abort(struct cache_build *b);

/* Make room for SIZE bytes of dataset DSNAME on TIER and reserve them
 * (the space's reserve): above CacheHighWatermark, evict unpinned versions
 * (those one job used first, each class least recently used first;
 * SPECULATIVE, a copy made on a prediction: only those no job has used,
 * so a wrong prediction never costs a job's data a second copy) until use
 * is below CacheLowWatermark. A dataset that cannot fit even then is
 * refused (-1, ENOSPC) with "tier 'nvme' full: dataset 'imagenet' needs
 * 1.2 GiB, 300 MiB free after eviction". Give the bytes back with
 * tiers_release. */
int cache_reserve(struct cache *c, int tier, const char *dsname, uint64_t size,
		  bool speculative, char *err, size_t errlen);

/* Pin K.vN for job JOBID of this node (pins/NODE.JOBID) and mark it used
 * now (LRU); K.lock held. 0 or -1 with err. */
int cache_pin(struct cache *c, int tier, const char *key, unsigned version,
	      uint32_t jobid, char *err, size_t errlen);

/* Make TIER/jobs/JOBID/data/NAME a read-only bind mount of K.vN/data (a
 * directory, or a file onto a file), made by root in root's data/
 * directory through fds (common/fs/bindmount), so the job sees a real
 * directory nobody can write through. tiers_remove_job_dir unmounts it.
 * 0 or -1 with err. */
int cache_mount_job(struct cache *c, int tier, uint32_t jobid, const char *name,
		    const char *key, unsigned version, char *err,
		    size_t errlen);

/* The same with another source, SRC_FD (a spread dataset's view: the
 * overlay daemon/staging/spread_view.c made). 0 or -1 with err. */
int cache_mount_job_fd(struct cache *c, int tier, uint32_t jobid,
		       const char *name, int src_fd, char *err, size_t errlen);

/* An O_PATH fd of K.vN/data (a directory), or -1 with errno. */
int cache_open_version_data(struct cache *c, int tier, const char *key,
			    unsigned version);

/* Remove this node's pins of job JOBID on every version of KEY, then
 * remove the versions of KEY that are neither current nor pinned (when
 * K.lock is free). */
void cache_unpin_job(struct cache *c, int tier, const char *key,
		     uint32_t jobid);

/* Remove the versions of KEY older than the current one that nobody pins;
 * K.lock held. */
void cache_gc_key(struct cache *c, int tier, const char *key);

/* --- a version served to another node (daemon/cluster/peer_fetch.c) -------
 */

#define CACHE_SERVED_PATH_MAX 4096 /* a file's path below data, with NUL */

/* A published version opened for a peer: its directory, its data (a
 * directory; -1 for a one-file dataset), its manifest (at offset 0) and
 * its chunks (common/fs/partchunks.h: PARTCHUNKS_DIR beside data; -1
 * when the version has none). */
struct cache_served {
	int vfd, data_fd, manifest_fd;
	int chunks_fd;    /* O_PATH | O_DIRECTORY, or -1 */
	unsigned version; /* the version opened (the current one for 0) */
	uint64_t manifest_size;
	bool public;
	bool part; /* a spread dataset's part (struct cache_meta) */
	uid_t uid; /* the entry's user (0 for a public entry) */
	/* whom every file served must belong to: the entry's user, or the
	 * cache's owner (root) for a public entry */
	uid_t file_owner;
};

/* Open version VERSION of KEY on the tier named TIER for ASKER (a MUNGE
 * credential's uid): TIER one of this node's and not Shared=yes, KEY a
 * key, the version published and whole (cache_serve.c says what is
 * checked) and ASKER its user, root, or anyone for a public entry.
 * VERSION 0 is the key's current version (cache_current: the highest
 * complete one); ret->version says which was opened. 0 with
 * *ret (cache_served_close), or -1 with the refusal in err: an entry
 * ASKER may not have is "not found" like a missing one. */
int cache_open_served(struct cache *c, const char *tier, const char *key,
		      unsigned version, uid_t asker, struct cache_served *ret,
		      char *err, size_t errlen);

/* Open file REL of S's data ("" for a one-file dataset) to send it:
 * a clean relative path resolved beneath data without a symlink, a
 * regular file. fd (O_RDONLY, O_CLOEXEC) with *ret_st, or -1 with errno
 * and the reason in err. */
int cache_served_open_file(const struct cache_served *s, const char *rel,
			   struct stat *ret_st, char *err, size_t errlen);

/* Open chunk INDEX of file REL (a clean relative path, not "") of S:
 * the file partchunk_name(REL, strlen(REL), INDEX) beneath S's chunks
 * directory, resolved as cache_served_open_file resolves files, a
 * regular file of S's file owner. The caller checks its size. fd
 * (O_RDONLY, O_CLOEXEC) with *ret_st, or -1 with errno and the reason in
 * err ("not held here": no such chunk, or no chunks directory). */
int cache_served_open_chunk(const struct cache_served *s, const char *rel,
			    uint64_t index, struct stat *ret_st, char *err,
			    size_t errlen);

/* Close what cache_open_served opened (twice: a no-op). */
void cache_served_close(struct cache_served *s);

/* --- the whole cache (server.c, metrics.c, cachereport.c) ------------------
 */

/* The "entries" array of a cache_ls reply: every entry for root (PEER_UID
 * 0), else only PEER_UID's and the public ones. NULL on ENOMEM. */
cJSON *cache_ls_json(struct cache *c, uid_t peer_uid);

/* cache_evict: remove the versions matching KEY (32 hex digits) or, with
 * SRC, the entries of source SRC (of UID only unless ALL_USERS), on TIER
 * (-1: every tier). A non-root PEER_UID may only remove its own entries.
 * Nothing is removed when a matching version is pinned or busy. Returns
 * the reply's "evicted" array, or NULL with err. */
cJSON *cache_evict(struct cache *c, uid_t peer_uid, const char *key,
		   const char *src, uid_t uid, bool all_users, int tier,
		   char *err, size_t errlen);

/* A number that changes whenever a version enters or leaves the index
 * (built, evicted, removed): whoever reports the cache's contents
 * elsewhere compares it with the last one it sent. */
uint64_t cache_generation(struct cache *c);

/* Per-tier figures for status: number of versions and pinned versions. */
void cache_tier_counts(struct cache *c, int tier, unsigned *ret_entries,
		       unsigned *ret_pinned);

#endif /* IOSTAGE_DAEMON_CACHE_H */
