/* tiers.h - iostaged's node-local tiers: startup checks, job directories,
 * space accounting.
 *
 * At start every tier root is checked (exists or is created 0755, owned by
 * root, not group/other-writable) and TIER/jobs and TIER/cache are created
 * root 0755 and kept open as directory fds. Every later operation on a tier
 * (creating, cleaning, removing job directories) goes through that fd with
 * openat / mkdirat / unlinkat and O_NOFOLLOW, so a user who owns
 * TIER/jobs/JOBID cannot redirect root's work with symlinks.
 *
 * Space: a tier's use is what its cache entries hold (tiers_cache_account,
 * kept by cache.c), plus bytes committed by jobs outside the cache, plus
 * reservations for copies in flight. A copy first reserves what it will
 * write (tiers_reserve), which fails when Capacity or the file system's
 * free space would be exceeded; cache.c evicts before it asks.
 */
#ifndef IOSTAGE_DAEMON_TIERS_H
#define IOSTAGE_DAEMON_TIERS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "common/config/conf.h"

struct tiers_usage {
	uint64_t capacity; /* Capacity, or the file system's size */
	uint64_t used;     /* with Capacity: committed + reserved job bytes;
			    * else the file system's used space */
	uint64_t free;     /* what a new dataset may still take */
	uint64_t cache;    /* bytes held by cache entries */
	uint64_t reserved; /* bytes promised to copies in flight */
};

struct agent;
struct tiers;

/* Check and prepare every tier of A's conf (A must outlive the tiers),
 * whose roots and TIER/jobs, TIER/cache must be owned by OWNER (0 in
 * iostaged; a unit test's own uid for tiers in temporary directories).
 * Returns the tiers, or NULL with one line in err such as
 * "tier 'nvme': /local/nvme is group/other-writable (mode 0777)". */
struct tiers *tiers_create(struct agent *a, uid_t owner, char *err,
			   size_t errlen);

/* Close the tier fds and free TS. NULL is a no-op. */
void tiers_destroy(struct tiers *ts);

/* Index of the tier NAME in conf->tiers, or -1. */
int tiers_index(struct tiers *ts, const char *name);

/* The directory fds TIER/jobs and TIER/cache (owned by tiers.c: do not
 * close). */
int tiers_jobs_fd(struct tiers *ts, int tier);
int tiers_cache_fd(struct tiers *ts, int tier);

/* Create TIER/jobs/JOBID (0700) with its data/ (root 0755: it only holds
 * root's mount points of cache entries) and, with WITH_LOCAL, its "local"
 * scratch (0700), both owned by UID:GID. A stale directory of that name (left
 * by a job the daemon no longer knows) is removed first and a warning logged.
 * Returns 0, or -1 with errno and err; nothing is left behind on failure. */
int tiers_make_job_dir(struct tiers *ts, int tier, uint32_t jobid, uid_t uid,
		       gid_t gid, bool with_local, char *err, size_t errlen);

/* Remove TIER/jobs/JOBID and everything in it, as root, safely: the
 * read-only views of cache entries mounted below it are detached first
 * (common/fs/bindmount), then rmtree, which never crosses a mount point.
 * A missing directory is success. 0 or -1 with errno and err. */
int tiers_remove_job_dir(struct tiers *ts, int tier, uint32_t jobid, char *err,
			 size_t errlen);

/* At start: detach every mount below each TIER/jobs/J whose job J
 * JOB_KNOWN(ARG, J) does not know (left by a daemon that died). Logs what it
 * did; returns how many it detached. */
unsigned tiers_detach_stale(struct tiers *ts,
			    bool (*job_known)(void *arg, uint32_t id),
			    void *arg);

/* Remove the half-copied dataset TIER/jobs/JOBID/data/.NAME.partial, or
 * with NAME == NULL every ".*.partial" there. Missing is success. */
int tiers_remove_partial(struct tiers *ts, int tier, uint32_t jobid,
			 const char *name, char *err, size_t errlen);

/* Reserve SIZE bytes on TIER for dataset DSNAME. Fails (-1, ENOSPC) with
 * "tier 'nvme' full: dataset 'imagenet' needs 1.2 GiB, 300 MiB free". */
int tiers_reserve(struct tiers *ts, int tier, const char *dsname, uint64_t size,
		  char *err, size_t errlen);

/* Give back a reservation of SIZE bytes. */
void tiers_release(struct tiers *ts, int tier, uint64_t size);

/* Add (or with a negative DELTA remove) staged bytes held by jobs. */
void tiers_commit(struct tiers *ts, int tier, int64_t delta);

/* Add (or remove) bytes held by cache entries on TIER. */
void tiers_cache_account(struct tiers *ts, int tier, int64_t delta);

/* Current usage of TIER. 0, or -1 with errno (fstatvfs). */
int tiers_usage(struct tiers *ts, int tier, struct tiers_usage *ret);

#endif /* IOSTAGE_DAEMON_TIERS_H */
