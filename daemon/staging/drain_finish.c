/* drain_finish.c - the Epilog's part of the drain: what is left drained,
 * waited for up to DrainTimeout, and what is not on the PFS kept aside.
 *
 * Apart from the loop because it runs on a connection thread and decides
 * about data: it never lets a job's directories be removed while results
 * are only on the tier. What did not drain (a deadline, a worker that
 * could not run, a failed copy, a final scan that did not complete, a
 * profile lost over a restart) is moved, with one renameat per tier, from
 * TIER/jobs/J/out to TIER/jobs/.undrained/J, still the user's; when even
 * that fails the job's directories stay. One line per job says what
 * happened; the record (drain_record.c) keeps the figures.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/base/log.h"
#include "common/base/units.h"
#include "common/config/joblayout.h"
#include "daemon/agent.h"
#include "daemon/fsutil.h"
#include "daemon/staging/drain_internal.h"

/* "3 files (1.2 GiB)", "1 file (10 MiB)", "no files". */
static char *files_str(uint64_t files, uint64_t bytes, char *buf, size_t len)
{
	char b[32];

	if (files == 0 && bytes == 0)
		snprintf(buf, len, "no files");
	else
		snprintf(buf, len, "%" PRIu64 " file%s (%s)", files,
			 files == 1 ? "" : "s",
			 units_bytes(bytes, b, sizeof(b)));
	return buf;
}

/* Move TIER/jobs/ID/out to TIER/jobs/.undrained/ID (or ID.N when taken).
 * 1 if there was nothing to move, 0 with the new path, -1 with err. */
static int keep_aside(const struct conf *conf, const struct conf_tier *t,
		      uint32_t id, char *ret_path, size_t len, char *err,
		      size_t errlen)
{
	char path[CONF_PATH_MAX + 16], job[JOBLAYOUT_JOB_NAME_MAX];
	char name[JOBLAYOUT_JOB_NAME_MAX + 16], why[CONF_ERR_MAX];
	struct stat st;
	int jobs = -1, jfd = -1, ufd = -1, r = -1;

	snprintf(path, sizeof(path), "%s/jobs", t->path);
	if (joblayout_job_name(conf, t, id, job, sizeof(job)) < 0)
		snprintf(job, sizeof(job), "%" PRIu32, id); /* cannot happen */
	jobs = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (jobs < 0)
		goto fail;
	jfd = openat(jobs, job,
		     O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (jfd < 0 ||
	    fstatat(jfd, JOBLAYOUT_OUT_DIR, &st, AT_SYMLINK_NOFOLLOW) < 0) {
		if (errno == ENOENT) {
			r = 1;
			goto out;
		}
		goto fail;
	}
	if (mkdirat(jobs, DRAIN_UNDRAINED, 0755) < 0 && errno != EEXIST)
		goto fail;
	ufd = openat(jobs, DRAIN_UNDRAINED,
		     O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (ufd < 0 || fstat(ufd, &st) < 0)
		goto fail;
	if (fsutil_check_root_dir(&st, DRAIN_UNDRAINED, false, why,
				  sizeof(why)) < 0) {
		snprintf(err, errlen, "tier '%s': %s", t->name, why);
		goto out;
	}
	for (unsigned n = 0; n < 1000; n++) {
		if (n)
			snprintf(name, sizeof(name), "%s.%u", job, n);
		else
			snprintf(name, sizeof(name), "%s", job);
		if (renameat2(jfd, JOBLAYOUT_OUT_DIR, ufd, name,
			      RENAME_NOREPLACE) == 0) {
			snprintf(ret_path, len, "%s/" DRAIN_UNDRAINED "/%s",
				 path, name);
			r = 0;
			goto out;
		}
		if (errno != EEXIST)
			break;
	}
fail:
	snprintf(err, errlen,
		 "tier '%s': cannot move %s/%s/" JOBLAYOUT_OUT_DIR
		 " to %s/" DRAIN_UNDRAINED ": %s",
		 t->name, path, job, path, strerror(errno));
out:
	if (ufd >= 0)
		close(ufd);
	if (jfd >= 0)
		close(jfd);
	if (jobs >= 0)
		close(jobs);
	return r;
}

/* Keep the output directories of job ID on the tiers in USE[]; the kept
 * paths go to KEPT (", "-separated). 0 or -1 with err. */
static int keep_all(const struct conf *conf, uint32_t id,
		    const bool use[CONF_MAX_TIERS], char *kept, size_t keptlen,
		    char *err, size_t errlen)
{
	char one[CONF_PATH_MAX + JOBLAYOUT_JOB_NAME_MAX + 64];
	size_t t;
	int r;

	kept[0] = '\0';
	for (t = 0; t < conf->ntiers; t++) {
		if (!use[t])
			continue;
		r = keep_aside(conf, &conf->tiers[t], id, one, sizeof(one), err,
			       errlen);
		if (r < 0)
			return -1;
		if (r == 0)
			snprintf(kept + strlen(kept), keptlen - strlen(kept),
				 "%s%s", kept[0] ? ", " : "", one);
	}
	return 0;
}

/* After the end phase: keep what is not on the PFS, log, record, forget.
 * Called without the drain's lock by the one finisher; DJ is DONE, so the loop
 * does not touch it. */
static int finalize(struct djob *dj, char *err, size_t errlen)
{
	struct drain *d = dj->drain;
	bool use[CONF_MAX_TIERS] = { false }, keep = dj->timed_out;
	char during[64], end[64], why[CONF_ERR_MAX] = "",
				  kept[2 * CONF_PATH_MAX];
	uint64_t final_failed = 0;
	int r = 0;

	for (size_t i = 0; i < dj->nouts; i++) {
		const struct dout *o = &dj->outs[i];

		if (o->tier >= 0)
			use[o->tier] = true;
		final_failed += o->final_failed;
		if (o->failed) {
			keep = true;
			if (!why[0])
				snprintf(why, sizeof(why), "output '%s': %s",
					 o->name, o->fail_reason);
		} else if (!o->final_done) {
			keep = true;
		}
	}
	if (final_failed)
		keep = true;
	if (dj->timed_out)
		snprintf(why, sizeof(why),
			 "timed out after %u s (DrainTimeout) with %" PRIu64
			 " queued file%s or scan%s left",
			 d->conf->drain_timeout, dj->left_files,
			 dj->left_files == 1 ? "" : "s",
			 dj->left_files == 1 ? "" : "s");
	else if (final_failed && !why[0])
		snprintf(why, sizeof(why), "%" PRIu64 " file%s failed to copy",
			 final_failed, final_failed == 1 ? "" : "s");
	else if (keep && !why[0])
		snprintf(why, sizeof(why), "the final scan did not complete");

	files_str(dj->during_files, dj->during_bytes, during, sizeof(during));
	files_str(dj->end_files, dj->end_bytes, end, sizeof(end));
	kept[0] = '\0';
	if (keep && keep_all(d->conf, dj->id, use, kept, sizeof(kept), err,
			     errlen) < 0) {
		log_errorx("job %u: outputs not drained (%s) and not kept "
			   "aside: %s; the job's directories stay",
			   dj->id, why, err);
		r = -1;
	} else if (keep) {
		log_warningx(
		    "job %u: outputs not fully drained (%s): %s during "
		    "the run, %s at the end in %.1f s; kept in %s "
		    "(remove it once recovered)",
		    dj->id, why, during, end, dj->end_seconds,
		    kept[0] ? kept : "(nothing on the tier)");
	} else {
		log_info("job %u: drained %s during the run, %s at the end in "
			 "%.1f s",
			 dj->id, during, end, dj->end_seconds);
	}
	pthread_mutex_lock(&d->lock);
	snprintf(dj->kept, sizeof(dj->kept), "%s", kept);
	drain_record_write_locked(dj);
	pthread_mutex_unlock(&d->lock);
	return r;
}

/* A job with no drain registered: it has outputs but was reloaded or
 * never registered. Register it now, without watches; or, without a
 * profile, keep whatever it left. 1 if the caller has nothing to wait
 * for. */
static int late_register(struct drain *d, struct job *job, char *err,
			 size_t errlen)
{
	struct djob *dj;
	char kept[2 * CONF_PATH_MAX];

	if (!job->profile) {
		/* Outputs of a profile we can no longer read: never
		 * delete what we cannot drain. */
		if (keep_all(d->conf, job->id, job->tiers, kept, sizeof(kept),
			     err, errlen) < 0)
			return -1;
		if (kept[0])
			log_warningx(
			    "job %u: profile lost after a restart; its "
			    "outputs were not drained; kept in %s",
			    job->id, kept);
		return 1;
	}
	if (job->profile->noutputs == 0)
		return 1;
	dj = drain_djob_create(d, job, false, err, errlen);
	if (!dj)
		return -1;
	pthread_mutex_lock(&d->lock);
	drain_record_resume(dj);
	if (drain_find_locked(d, job->id) || d->stopping) {
		drain_djob_free(dj);
	} else {
		dj->next = d->djobs;
		d->djobs = dj;
	}
	pthread_mutex_unlock(&d->lock);
	return 0;
}

int drain_finish(struct drain *d, uint32_t id, char *err, size_t errlen)
{
	struct job *job = jobs_get(d->agent->jobs, id);
	struct timespec deadline;
	struct djob *dj;
	int r = 0;

	if (!job)
		return 0;
	if (!d) {
		jobs_put(job);
		snprintf(err, errlen,
			 "job %u: the drain is not running; outputs not "
			 "drained, left in place",
			 id);
		errno = EINVAL;
		return -1;
	}
	pthread_mutex_lock(&d->lock);
	dj = drain_find_locked(d, id);
	pthread_mutex_unlock(&d->lock);
	if (!dj) {
		r = late_register(d, job, err, errlen);
		if (r != 0) {
			jobs_put(job);
			return r < 0 ? -1 : 0;
		}
	}
	jobs_put(job);

	pthread_mutex_lock(&d->lock);
	dj = drain_find_locked(d, id);
	if (!dj || d->stopping) {
		pthread_mutex_unlock(&d->lock);
		if (!d->stopping)
			return 0;
		snprintf(err, errlen,
			 "job %u: iostaged is stopping; outputs not drained, "
			 "left in place",
			 id);
		return -1;
	}
	dj->refs++;
	if (!dj->end_requested) {
		dj->end_requested = true;
		clock_gettime(CLOCK_MONOTONIC, &dj->end_start);
		log_info(
		    "job %u: draining the rest of its outputs (up to %u s)", id,
		    d->conf->drain_timeout);
		drain_wake(d);
	}
	deadline = dj->end_start;
	deadline.tv_sec += d->conf->drain_timeout;
	while (dj->phase != DRAIN_DONE && !d->stopping)
		if (pthread_cond_timedwait(&d->cond, &d->lock, &deadline) ==
		    ETIMEDOUT)
			break;
	if (dj->phase != DRAIN_DONE && !d->stopping) {
		/* Deadline: stop the workers; what is left is kept. */
		dj->timed_out = true;
		dj->abandon = true;
		drain_wake(d);
		clock_gettime(CLOCK_MONOTONIC, &deadline);
		deadline.tv_sec += DRAIN_ABANDON_WAIT_S;
		while (dj->phase != DRAIN_DONE && !d->stopping)
			if (pthread_cond_timedwait(&d->cond, &d->lock,
						   &deadline) == ETIMEDOUT)
				break;
	}
	if (dj->phase != DRAIN_DONE) {
		snprintf(err, errlen,
			 "job %u: %s; outputs not drained, left in place", id,
			 d->stopping
			     ? "iostaged is stopping"
			     : "the drain thread did not stop its workers");
		r = -1;
	} else if (!dj->finalizing) {
		dj->finalizing = true;
		pthread_mutex_unlock(&d->lock);
		dj->final_rc = finalize(dj, dj->final_err,
					sizeof(dj->final_err));
		pthread_mutex_lock(&d->lock);
		dj->finalized = true;
		drain_unlink_locked(d, dj);
		pthread_cond_broadcast(&d->cond);
	} else {
		while (!dj->finalized)
			pthread_cond_wait(&d->cond, &d->lock);
	}
	if (dj->finalized) {
		r = dj->final_rc;
		if (r < 0)
			snprintf(err, errlen, "job %u: %s", id, dj->final_err);
	}
	if (--dj->refs == 0 && dj->finalized) {
		pthread_mutex_unlock(&d->lock);
		drain_djob_free(dj);
		return r;
	}
	pthread_mutex_unlock(&d->lock);
	return r;
}
