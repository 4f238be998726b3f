/* spread_view.h - what a job's tasks see of a spread dataset: the whole
 * tree, though this node holds only its part (issue 29 item 3;
 * docs/STAGING.md, "Spread datasets").
 *
 * Three mounts, made by root, per dataset of a job:
 *
 *   StateDir/views/J/NAME.fuse   the whole dataset, served by iostage-view
 *                                (view/) running as the job's user: files
 *                                of other nodes' parts from those nodes'
 *                                iostaged (peer range reads), the PFS when
 *                                they cannot give them
 *   StateDir/views/J/NAME.view   overlayfs, read-only: lowerdir = this
 *                                node's part (K.vN/data) over NAME.fuse,
 *                                so that the files held here are read by
 *                                the kernel straight from the NVMe
 *   TIER/jobs/J/data/NAME        the job's view (IOSTAGE_DATA_NAME): a
 *                                read-only bind mount of NAME.view, made
 *                                as every dataset's is (cache_mount_job_fd)
 *
 * StateDir/views is root's, 0700: no user can reach the FUSE or overlay
 * mounts but through the job's read-only bind mount. The view process
 * outlives the staging thread and iostaged itself (a restart leaves the
 * job's reads served); the mounts go at finish (spread_view_stop), and
 * at start those of jobs this node no longer knows (spread_view_stale).
 */
#ifndef IOSTAGE_DAEMON_SPREAD_VIEW_H
#define IOSTAGE_DAEMON_SPREAD_VIEW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct agent;

/* One dataset's view. */
struct spread_view_args {
	uint32_t jobid;
	const char *name; /* the dataset's name (IOSTAGE_DATA_NAME) */
	const char *src;  /* the dataset on the PFS */
	int tier;         /* index of its node-local tier */
	const char *key;  /* this node's part: entry K.vN */
	unsigned version; /* 0: no part here (nothing local) */
	const char *plan; /* spread_plan_parse's form */
	const char *self; /* this node's name in PLAN */
	int listing_fd;   /* the whole dataset's manifest (read from 0) */
	uid_t uid;        /* the view runs as the entry's user */
	gid_t gid;
	const char *user;
};

/* Mount dataset VA's view onto TIER/jobs/J/data/NAME. 0 with *ret_pid
 * (the view's process, for spread_view_reap), or -1 with one line in err;
 * on failure nothing of it stays mounted or running. */
int spread_view_start(struct agent *a, const struct spread_view_args *va,
		      pid_t *ret_pid, char *err, size_t errlen);

/* Unmount every view of job JOBID (after its bind mounts went with its
 * job directories) and remove StateDir/views/J. Idempotent. 0, or -1
 * with err. */
int spread_view_stop(struct agent *a, uint32_t jobid, char *err, size_t errlen);

/* Wait up to 2 s for view PID to end once its mounts are gone, then end
 * it (SIGKILL), and reap it. PID 0: nothing. */
void spread_view_reap(pid_t pid);

/* At start: stop the views of jobs JOB_KNOWN says this node no longer
 * knows. Returns how many jobs' views went. */
unsigned spread_view_stale(struct agent *a,
			   bool (*job_known)(void *arg, uint32_t id),
			   void *arg);

/* Where view VA's process writes what it served (local, peer and PFS
 * bytes), in the job's directory on its tier. */
int spread_view_stats_path(const struct agent *a, uint32_t jobid, int tier,
			   const char *name, char *buf, size_t len);

/* What dataset NAME's view served: bytes it read through FUSE from this
 * node's part (the overlay serves the part itself without it), from
 * other nodes and from the PFS. */
struct spread_view_stats {
	uint64_t local_bytes, peer_bytes, pfs_bytes, peer_failures;
};

/* Read the view's figures (written by the job's user: a regular file of
 * at most 4 KiB, never followed through a link; only numbers are taken).
 * 0 with *ret, or -1 (no view, or nothing readable). */
int spread_view_stats_read(const struct agent *a, uint32_t jobid, int tier,
			   const char *name, struct spread_view_stats *ret);

#endif /* IOSTAGE_DAEMON_SPREAD_VIEW_H */
