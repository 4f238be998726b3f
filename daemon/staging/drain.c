/* drain.c - the drain as an object, and a job's outputs registered with it.
 * See drain.h for what the drain does, drain_internal.h for its parts.
 *
 * Why an object and not the module's statics it used to be: a test wants
 * a drain it drives by hand (no thread, no inotify, workers it plays
 * itself) and iostaged's one beside it, in one process. So everything the
 * drain knows lives in struct drain, reached from the agent; the job
 * table reaches it through the hooks it registers with the table's
 * (jobs_set_drain_hooks), never by calling into this file.
 *
 * What root does in the user's directories here: mkdirat/openat with
 * O_NOFOLLOW from the root-owned TIER/jobs fd to create out/NAME (owned by
 * the user, 0700), and checks an existing one is the user's. Every file in
 * it is opened by the worker, as the user.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cJSON.h>

#include "common/base/log.h"
#include "common/config/joblayout.h"
#include "common/config/pathsafe.h"
#include "daemon/agent.h"
#include "daemon/staging/drain_internal.h"
#include "daemon/staging/tiers.h"

/* The job table's hooks (jobs_set_drain_hooks), ARG the drain. */
static cJSON *hook_status(void *arg, uint32_t id)
{
	return drain_status_json(arg, id);
}

/* A job reloaded staged after a restart: its outputs watched again. */
static int hook_resume(void *arg, const struct job *job, char *err,
		       size_t errlen)
{
	return drain_job_start(arg, job, true, err, errlen);
}

void drain_wake(struct drain *d)
{
	uint64_t one = 1;
	ssize_t ignored;

	if (d->wake_fd < 0)
		return;
	ignored = write(d->wake_fd, &one, sizeof(one));
	(void)ignored;
}

int drain_spawn_worker(const struct dout *o, struct spawn_proc *ret, char *err,
		       size_t errlen)
{
	const struct djob *dj = o->job;
	char local[sizeof(o->local)], pfs[sizeof(o->pfs)];
	char *argv[] = { "iostaged", "--drain-worker", local, pfs, NULL };

	memcpy(local, o->local, sizeof(local));
	memcpy(pfs, o->pfs, sizeof(pfs));
	return spawn_as_user(dj->uid, dj->gid, dj->user, argv, NULL, NULL, 0,
			     "drain worker", ret, err, errlen);
}

struct drain *drain_alloc(struct agent *a, const struct conf *conf)
{
	pthread_condattr_t attr;
	struct drain *d = calloc(1, sizeof(*d));

	if (!d)
		return NULL;
	d->agent = a;
	d->conf = conf;
	d->inotify_fd = d->wake_fd = d->record_fd = -1;
	d->spawn = drain_spawn_worker;
	pthread_mutex_init(&d->lock, NULL);
	pthread_condattr_init(&attr);
	pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
	pthread_cond_init(&d->cond, &attr);
	pthread_condattr_destroy(&attr);
	return d;
}

struct drain *drain_create(struct agent *a, char *err, size_t errlen)
{
	struct drain *d;
	int r;

	if (!a || !a->conf) {
		snprintf(err, errlen, "drain: no configuration");
		errno = EINVAL;
		return NULL;
	}
	d = drain_alloc(a, a->conf);
	if (!d) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	d->inotify_fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
	d->wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (d->inotify_fd < 0 || d->wake_fd < 0) {
		snprintf(err, errlen, "drain: cannot set up inotify: %s",
			 strerror(errno));
		goto fail;
	}
	d->record_fd = drain_records_open(d->conf->state_dir, a->owner, err,
					  errlen);
	if (d->record_fd < 0)
		goto fail;
	r = pthread_create(&d->thread, NULL, drain_loop, d);
	if (r != 0) {
		snprintf(err, errlen, "drain: cannot start its thread: %s",
			 strerror(r));
		goto fail;
	}
	d->thread_started = true;
	/* jobs.c asks for a job's drain status and resumes a reloaded
	 * job's watches through these, never by calling into this file. */
	if (a->jobs)
		jobs_set_drain_hooks(a->jobs, hook_status, hook_resume, d);
	return d;
fail:
	r = errno;
	drain_destroy(d);
	errno = r;
	return NULL;
}

void drain_shutdown(struct drain *d)
{
	if (!d || !d->thread_started)
		return;
	pthread_mutex_lock(&d->lock);
	d->stopping = true;
	pthread_mutex_unlock(&d->lock);
	drain_wake(d);
	pthread_join(d->thread, NULL);
	d->thread_started = false;
}

void drain_destroy(struct drain *d)
{
	struct djob *dj, *next;

	if (!d)
		return;
	/* The table outlives its drain (agent_destroy frees the drain
	 * first): it must not call into a freed one. */
	if (d->agent && d->agent->jobs)
		jobs_set_drain_hooks(d->agent->jobs, NULL, NULL, NULL);
	drain_shutdown(d);
	for (dj = d->djobs; dj; dj = next) {
		next = dj->next;
		drain_djob_free(dj);
	}
	d->djobs = NULL;
	drain_watches_free(d);
	drain_reap_zombies(d);
	while (d->zombies) { /* not reaped yet: no longer ours to wait for */
		struct drain_zombie *z = d->zombies;

		d->zombies = z->next;
		free(z);
	}
	if (d->inotify_fd >= 0)
		close(d->inotify_fd);
	if (d->wake_fd >= 0)
		close(d->wake_fd);
	if (d->record_fd >= 0)
		close(d->record_fd);
	pthread_cond_destroy(&d->cond);
	pthread_mutex_destroy(&d->lock);
	free(d);
}

struct djob *drain_find_locked(struct drain *d, uint32_t id)
{
	struct djob *dj;

	for (dj = d->djobs; dj; dj = dj->next)
		if (dj->id == id)
			return dj;
	return NULL;
}

void drain_unlink_locked(struct drain *d, struct djob *dj)
{
	struct djob **pp;

	for (pp = &d->djobs; *pp; pp = &(*pp)->next) {
		if (*pp == dj) {
			*pp = dj->next;
			dj->next = NULL;
			return;
		}
	}
}

void drain_djob_free(struct djob *dj)
{
	size_t i;

	if (!dj)
		return;
	for (i = 0; i < dj->nouts; i++) {
		drain_queue_clear(&dj->outs[i]);
		free(dj->outs[i].lbuf);
		if (dj->outs[i].root_fd >= 0)
			close(dj->outs[i].root_fd);
	}
	free(dj);
}

/* mkdirat + open DIR/NAME for UID:GID, 0700; an existing one must be a
 * directory owned by UID. fd, or -1 with errno. */
static int mkdir_owned(int dir, const char *name, uid_t uid, gid_t gid)
{
	struct stat st;
	bool made = mkdirat(dir, name, 0700) == 0;
	int fd;

	if (!made && errno != EEXIST)
		return -1;
	fd = openat(dir, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return -1;
	if (fstat(fd, &st) < 0)
		goto fail;
	if (made) {
		if (fchown(fd, uid, gid) < 0 || fchmod(fd, 0700) < 0)
			goto fail;
	} else if (st.st_uid != uid) {
		errno = EPERM;
		goto fail;
	}
	return fd;
fail : {
	int saved = errno;

	close(fd);
	errno = saved;
}
	return -1;
}

/* Create TIER/jobs/J/out/NAME for OUT, from TIER/jobs (root's), never
 * following a link. The fd of out/NAME, or -1 with err. */
static int make_out_dir(const struct conf_tier *t, const struct djob *dj,
			const char *name, char *err, size_t errlen)
{
	char path[CONF_PATH_MAX + 16], job[JOBLAYOUT_JOB_NAME_MAX];
	int jobs = -1, jfd = -1, ofd = -1, nfd = -1;

	snprintf(path, sizeof(path), "%s/jobs", t->path);
	if (joblayout_job_name(dj->drain->conf, t, dj->id, job, sizeof(job)) <
	    0)
		snprintf(job, sizeof(job), "%" PRIu32,
			 dj->id); /* cannot happen */
	jobs = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (jobs >= 0)
		jfd = openat(jobs, job,
			     O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (jfd >= 0)
		ofd = mkdir_owned(jfd, JOBLAYOUT_OUT_DIR, dj->uid, dj->gid);
	if (ofd >= 0)
		nfd = mkdir_owned(ofd, name, dj->uid, dj->gid);
	if (nfd < 0)
		snprintf(
		    err, errlen,
		    "tier '%s': cannot prepare %s/jobs/%s/" JOBLAYOUT_OUT_DIR
		    "/%s: %s",
		    t->name, t->path, job, name, strerror(errno));
	if (ofd >= 0)
		close(ofd);
	if (jfd >= 0)
		close(jfd);
	if (jobs >= 0)
		close(jobs);
	return nfd;
}

struct djob *drain_djob_create(struct drain *d, const struct job *job,
			       bool make_dirs, char *err, size_t errlen)
{
	const struct conf *conf = d->conf;
	const struct profile *p = job->profile;
	struct djob *dj = calloc(1, sizeof(*dj));
	size_t i;

	if (!dj) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	dj->drain = d;
	dj->id = job->id;
	dj->uid = job->uid;
	dj->gid = job->gid;
	snprintf(dj->user, sizeof(dj->user), "%s", job->user);
	for (i = 0; i < p->noutputs; i++) {
		const struct profile_output *po = &p->outputs[i];
		const struct conf_tier *t = conf_find_tier(conf, po->tier);
		struct dout *o = &dj->outs[i];
		struct stat st;

		o->job = dj;
		o->root_fd = o->in = o->out = -1;
		dj->nouts = i + 1;
		snprintf(o->name, sizeof(o->name), "%s", po->name);
		snprintf(o->pfs, sizeof(o->pfs), "%s", po->path);
		o->tier = tiers_index(d->agent->tiers, po->tier);
		if (!t || o->tier < 0 ||
		    joblayout_output_path(conf, po, job->id, o->local,
					  sizeof(o->local)) < 0) {
			snprintf(err, errlen, "output '%s': unknown tier '%s'",
				 po->name, po->tier ? po->tier : "?");
			goto fail;
		}
		for (size_t k = 0; k < conf->ntiers; k++) {
			/* Copying into a watched tree would feed itself. */
			if (pathsafe_is_under(po->path, conf->tiers[k].path)) {
				snprintf(err, errlen,
					 "output '%s': %s is on tier '%s'; "
					 "outputs drain to the PFS",
					 po->name, po->path,
					 conf->tiers[k].name);
				goto fail;
			}
		}
		if (!make_dirs)
			continue;
		o->root_fd = make_out_dir(t, dj, po->name, err, errlen);
		if (o->root_fd < 0)
			goto fail;
		if (po->drain == PROFILE_DRAIN_END ||
		    fstat(o->root_fd, &st) < 0) {
			close(o->root_fd); /* not watched: all at the end */
			o->root_fd = -1;
		} else {
			o->dev = st.st_dev;
		}
	}
	return dj;
fail:
	drain_djob_free(dj);
	return NULL;
}

int drain_job_start(struct drain *d, const struct job *job, bool resume,
		    char *err, size_t errlen)
{
	struct djob *dj;

	if (!job->profile || job->profile->noutputs == 0)
		return 0;
	if (!d) {
		snprintf(err, errlen, "drain: not running");
		errno = EINVAL;
		return -1;
	}
	dj = drain_djob_create(d, job, true, err, errlen);
	if (!dj)
		return -1;
	pthread_mutex_lock(&d->lock);
	if (resume)
		drain_record_resume(dj);
	if (d->stopping || drain_find_locked(d, job->id)) {
		pthread_mutex_unlock(&d->lock);
		drain_djob_free(dj);
		return 0;
	}
	dj->setup = true;
	dj->dirty = true;
	dj->next = d->djobs;
	d->djobs = dj;
	pthread_mutex_unlock(&d->lock);
	drain_wake(d);
	return 0;
}

void drain_job_forget(struct drain *d, uint32_t id)
{
	struct djob *dj;

	if (!d)
		return;
	pthread_mutex_lock(&d->lock);
	dj = drain_find_locked(d, id);
	if (dj) {
		dj->forget = true;
		dj->abandon = true;
	}
	pthread_mutex_unlock(&d->lock);
	drain_wake(d);
}

cJSON *drain_status_json(struct drain *d, uint32_t id)
{
	struct djob *dj;
	cJSON *o = NULL;

	if (!d)
		return NULL;
	pthread_mutex_lock(&d->lock);
	dj = drain_find_locked(d, id);
	if (dj && (o = cJSON_CreateObject()))
		drain_add_counters(o, dj);
	pthread_mutex_unlock(&d->lock);
	return o;
}
