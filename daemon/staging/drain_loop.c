/* drain_loop.c - the drain thread: the workers' processes and the jobs'
 * phases.
 *
 * One thread (the loop) owns inotify and every drain worker: it polls the
 * inotify fd, an eventfd that other threads use to wake it, and the stdout
 * of each worker. Per output it sends the worker one command at a time
 * (what drain_queue.c decides), so the worker's stdin never holds more
 * than one line and our writes never block; the "done" line that ends each
 * command frees the slot. Which phase a result is counted in (during the
 * run, at the end) depends only on when the loop reads it: the end phase
 * starts in the loop, after it has read what the workers and inotify had
 * already reported.
 *
 * A worker that dies unasked is restarted with a scan of everything (which
 * covers what was in flight) up to DRAIN_RESTARTS_MAX times; then its
 * output fails and what is left stays on the tier, kept at finish. A
 * worker killed but not yet gone (stuck in the kernel) is a zombie, reaped
 * on a later turn. Workers start through d->spawn: spawn_as_user in
 * iostaged, a pipe pair of a unit test's.
 *
 * Threads that call in (stage_start, finish, status) only change the
 * table under the drain's lock and wake the loop; finish then waits on its
 * condition until the loop marks the job done or the deadline passes.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cJSON.h>

#include "common/base/jsonbuf.h"
#include "common/base/log.h"
#include "daemon/staging/drain_internal.h"

void drain_reap_zombies(struct drain *d)
{
	struct drain_zombie **pp = &d->zombies, *z;

	while ((z = *pp)) {
		pid_t r = waitpid(z->pid, NULL, WNOHANG);

		if (r == z->pid || (r < 0 && errno == ECHILD)) {
			*pp = z->next;
			free(z);
		} else {
			pp = &z->next;
		}
	}
}

int drain_worker_release(struct dout *o, bool kill_it)
{
	int status = -1;
	pid_t r;

	if (o->in >= 0)
		close(o->in);
	if (o->out >= 0)
		close(o->out);
	o->in = o->out = -1;
	free(o->lbuf);
	o->lbuf = NULL;
	o->llen = 0;
	if (o->pid <= 0)
		return -1;
	if (kill_it)
		kill(o->pid, SIGKILL);
	r = waitpid(o->pid, &status, WNOHANG);
	if (r == 0) {
		/* EOF without exiting: it has nothing more to say. */
		struct drain_zombie *z = malloc(sizeof(*z));

		kill(o->pid, SIGKILL);
		r = waitpid(o->pid, &status, WNOHANG);
		if (r == 0 && z) {
			z->pid = o->pid;
			z->next = o->job->drain->zombies;
			o->job->drain->zombies = z;
			z = NULL;
		}
		free(z);
		if (r <= 0)
			status = -1;
	}
	o->pid = 0;
	o->busy = o->busy_final = false;
	o->stdin_closed = false;
	return status;
}

void drain_output_fail(struct dout *o, const char *why)
{
	struct djob *dj = o->job;

	if (o->failed)
		return;
	o->failed = true;
	snprintf(o->fail_reason, sizeof(o->fail_reason), "%s", why);
	drain_queue_clear(o);
	log_warningx("job %u: output '%s': %s; its files stay on the tier "
		     "until finish, which keeps them",
		     dj->id, o->name, why);
	if (dj->phase == DRAIN_ENDING)
		o->done = true;
	dj->dirty = true;
}

static int worker_start(struct dout *o)
{
	struct djob *dj = o->job;
	char err[CONF_ERR_MAX];
	struct spawn_proc p;

	if (dj->drain->spawn(o, &p, err, sizeof(err)) < 0) {
		drain_output_fail(o, err);
		return -1;
	}
	o->lbuf = malloc(DRAIN_LINE_MAX);
	if (!o->lbuf) {
		o->pid = p.pid;
		o->in = p.in;
		o->out = p.out;
		drain_worker_release(o, true);
		drain_output_fail(o, "out of memory");
		return -1;
	}
	fcntl(p.in, F_SETFL, fcntl(p.in, F_GETFL) | O_NONBLOCK);
	fcntl(p.out, F_SETFL, fcntl(p.out, F_GETFL) | O_NONBLOCK);
	o->pid = p.pid;
	o->in = p.in;
	o->out = p.out;
	o->llen = 0;
	if (dj->phase == DRAIN_RUNNING &&
	    setpriority(PRIO_PROCESS, (id_t)p.pid, DRAIN_RUN_NICE) < 0)
		log_debug("job %u: output '%s': cannot renice drain worker "
			  "%d: %s",
			  dj->id, o->name, (int)p.pid, strerror(errno));
	o->busy = o->busy_final = o->stdin_closed = false;
	log_debug("job %u: output '%s': drain worker %d started", dj->id,
		  o->name, (int)p.pid);
	return 0;
}

/* Send IT to OUT's worker. 0, or -1 (the worker is killed; its EOF
 * follows). */
static int worker_send(struct dout *o, const struct drain_item *it)
{
	cJSON *cmd = cJSON_CreateObject();
	char *text = NULL;
	size_t len;
	ssize_t n;
	int r = -1;

	if (!cmd ||
	    !cJSON_AddStringToObject(cmd, it->scan ? "scan" : "file", it->rel))
		goto out;
	text = jsonbuf_dup(cmd);
	if (!text)
		goto out;
	len = strlen(text);
	text[len] = '\n';
	/* One command at a time: the pipe is empty, a short line fits. */
	do
		n = write(o->in, text, len + 1);
	while (n < 0 && errno == EINTR);
	if (n == (ssize_t)len + 1)
		r = 0;
out:
	free(text);
	cJSON_Delete(cmd);
	if (r < 0)
		kill(o->pid, SIGKILL);
	return r;
}

void drain_worker_exited(struct dout *o)
{
	struct djob *dj = o->job;
	bool expected = o->stdin_closed, was_final = o->busy_final;
	char why[CONF_ERR_MAX];
	int status = drain_worker_release(o, false);

	if (expected) {
		if (dj->phase == DRAIN_ENDING && o->final_done && !o->head)
			o->done = true;
		return;
	}
	if (status >= 0 && WIFSIGNALED(status))
		snprintf(why, sizeof(why),
			 "drain worker was killed by signal %d",
			 WTERMSIG(status));
	else if (status >= 0 && WIFEXITED(status))
		snprintf(why, sizeof(why), "drain worker exited with status %d",
			 WEXITSTATUS(status));
	else
		snprintf(why, sizeof(why), "drain worker stopped answering");
	if (++o->restarts > DRAIN_RESTARTS_MAX) {
		drain_output_fail(o, why);
		return;
	}
	log_warningx("job %u: output '%s': %s; rescanning", dj->id, o->name,
		     why);
	/* Whatever was in flight is covered by a scan. */
	if (was_final || dj->phase == DRAIN_ENDING)
		drain_enqueue(o, "", true, true);
	else
		drain_enqueue(o, "", true, false);
}

void drain_worker_read(struct dout *o)
{
	for (;;) {
		ssize_t n = read(o->out, o->lbuf + o->llen,
				 DRAIN_LINE_MAX - o->llen);
		char *start, *nl;

		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN)
				return;
			drain_worker_exited(o);
			return;
		}
		if (n == 0) {
			drain_worker_exited(o);
			return;
		}
		o->llen += (size_t)n;
		start = o->lbuf;
		while ((nl = memchr(start, '\n',
				    o->llen - (size_t)(start - o->lbuf)))) {
			*nl = '\0';
			if (drain_worker_line(o, start) < 0) {
				kill(o->pid, SIGKILL);
				o->llen = 0;
				return; /* its EOF follows */
			}
			start = nl + 1;
		}
		o->llen -= (size_t)(start - o->lbuf);
		memmove(o->lbuf, start, o->llen);
		if (o->llen == DRAIN_LINE_MAX) {
			log_warningx(
			    "job %u: output '%s': drain worker sent an "
			    "overlong line",
			    o->job->id, o->name);
			kill(o->pid, SIGKILL);
			o->llen = 0;
			return;
		}
	}
}

void drain_begin_end(struct djob *dj)
{
	dj->phase = DRAIN_ENDING;
	for (size_t i = 0; i < dj->nouts; i++) {
		struct dout *o = &dj->outs[i];

		if (o->failed) {
			o->done = true;
			continue;
		}
		/* A worker the user stopped would hold the Epilog until
		 * the deadline. */
		if (o->pid > 0) {
			kill(o->pid, SIGCONT);
			/* The Epilog waits for it now: full priority. */
			setpriority(PRIO_PROCESS, (id_t)o->pid, 0);
		}
		drain_enqueue(o, "", true, true);
	}
	dj->dirty = true;
}

void drain_end_job(struct djob *dj)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	dj->end_seconds = (double)(now.tv_sec - dj->end_start.tv_sec) +
			  (double)(now.tv_nsec - dj->end_start.tv_nsec) / 1e9;
	if (dj->end_seconds < 0)
		dj->end_seconds = 0;
	for (size_t i = 0; i < dj->nouts; i++) {
		struct dout *o = &dj->outs[i];

		drain_watches_drop(o, NULL);
		if (o->root_fd >= 0)
			close(o->root_fd);
		o->root_fd = -1;
	}
	dj->phase = DRAIN_DONE;
	dj->dirty = true;
	pthread_cond_broadcast(&dj->drain->cond);
}

/* The deadline passed (or the job is forgotten): stop everything now. */
void drain_abandon_job(struct djob *dj)
{
	for (size_t i = 0; i < dj->nouts; i++) {
		struct dout *o = &dj->outs[i];

		dj->left_files += o->nqueued + (o->busy ? 1 : 0);
		if (o->pid > 0)
			drain_worker_release(o, true);
		drain_queue_clear(o);
		o->done = true;
	}
	drain_end_job(dj);
}

void drain_schedule(struct dout *o, const struct timespec *now)
{
	struct drain_item *it;

	switch (drain_next_action(o, now)) {
	case DRAIN_ACT_NONE:
		return;
	case DRAIN_ACT_SEND:
		if (o->pid <= 0 && worker_start(o) < 0)
			return;
		if (worker_send(o, o->head) < 0)
			return; /* killed; drain_worker_exited rescans */
		it = drain_dequeue(o);
		o->busy = true;
		o->busy_final = it->final;
		free(it);
		return;
	case DRAIN_ACT_CLOSE:
		close(o->in); /* EOF: it syncs and exits */
		o->in = -1;
		o->stdin_closed = true;
		return;
	case DRAIN_ACT_DONE:
		o->done = true;
		return;
	}
}

/* Milliseconds until the loop has something to do without an fd event. */
static int next_timeout(struct drain *d)
{
	struct timespec now;
	long best = -1;
	struct djob *dj;

	clock_gettime(CLOCK_MONOTONIC, &now);
	if (d->zombies)
		best = 200;
	for (dj = d->djobs; dj; dj = dj->next) {
		if (dj->phase == DRAIN_DONE)
			continue;
		if (dj->dirty) {
			long left = (long)(dj->recorded + DRAIN_RECORD_EVERY_S -
					   time(NULL)) *
				    1000;

			if (left < 0)
				left = 0;
			if (best < 0 || left < best)
				best = left;
		}
		for (size_t i = 0; i < dj->nouts; i++) {
			long left = drain_out_wait_ms(&dj->outs[i], &now);

			if (left >= 0 && (best < 0 || left < best))
				best = left;
		}
	}
	return best > 60000 ? 60000 : (int)best;
}

void drain_step_job(struct djob *dj, const struct timespec *now)
{
	bool all_done = true;

	if (dj->phase == DRAIN_DONE)
		return;
	if (dj->setup) {
		dj->setup = false;
		for (size_t i = 0; i < dj->nouts; i++)
			drain_watch_output(&dj->outs[i]);
	}
	if (dj->abandon) {
		drain_abandon_job(dj);
		return;
	}
	if (dj->end_requested && dj->phase == DRAIN_RUNNING)
		drain_begin_end(dj);
	for (size_t i = 0; i < dj->nouts; i++) {
		drain_schedule(&dj->outs[i], now);
		all_done &= dj->outs[i].done;
	}
	if (dj->phase == DRAIN_ENDING && all_done)
		drain_end_job(dj);
	if (dj->dirty && dj->phase != DRAIN_DONE &&
	    time(NULL) - dj->recorded >= DRAIN_RECORD_EVERY_S)
		drain_record_write_locked(dj);
}

void *drain_loop(void *arg)
{
	struct drain *d = arg;
	struct pollfd *pfds = NULL;
	struct dout **owners = NULL;
	size_t cap = 0;

	pthread_mutex_lock(&d->lock);
	while (!d->stopping) {
		struct djob *dj, *next;
		struct timespec now;
		size_t n = 2, want = 2;
		int timeout;

		for (dj = d->djobs; dj; dj = dj->next)
			want += dj->nouts;
		if (want > cap) {
			struct pollfd *p = realloc(pfds, want * sizeof(*p));
			struct dout **ow = realloc(owners, want * sizeof(*ow));

			if (p)
				pfds = p;
			if (ow)
				owners = ow;
			if (!p || !ow) {
				log_errorx("drain: out of memory");
				pthread_mutex_unlock(&d->lock);
				sleep(1);
				pthread_mutex_lock(&d->lock);
				continue;
			}
			cap = want;
		}
		pfds[0] = (struct pollfd){ .fd = d->wake_fd, .events = POLLIN };
		pfds[1] = (struct pollfd){ .fd = d->inotify_fd,
					   .events = POLLIN };
		for (dj = d->djobs; dj; dj = dj->next)
			for (size_t i = 0; i < dj->nouts; i++)
				if (dj->outs[i].pid > 0 &&
				    dj->outs[i].out >= 0) {
					owners[n] = &dj->outs[i];
					pfds[n++] = (struct pollfd){
						.fd = dj->outs[i].out,
						.events = POLLIN
					};
				}
		timeout = next_timeout(d);
		pthread_mutex_unlock(&d->lock);
		if (poll(pfds, n, timeout) < 0 && errno != EINTR)
			log_warning("drain: poll");
		pthread_mutex_lock(&d->lock);

		if (pfds[0].revents) {
			uint64_t v;
			ssize_t ignored = read(d->wake_fd, &v, sizeof(v));

			(void)ignored;
		}
		/* Workers first, then inotify, then the phase changes: a
		 * result already written when finish came counts as
		 * drained during the run. Outputs seen here are alive: only
		 * this thread ends a job's workers. */
		for (size_t i = 2; i < n; i++)
			if (pfds[i].revents && owners[i]->pid > 0 &&
			    owners[i]->out == pfds[i].fd)
				drain_worker_read(owners[i]);
		if (pfds[1].revents)
			drain_read_inotify(d);
		if (d->stopping)
			break;
		if (d->overflowed) {
			d->overflowed = false;
			log_warningx("drain: inotify queue overflowed; "
				     "rescanning every output");
			for (dj = d->djobs; dj; dj = dj->next)
				if (dj->phase != DRAIN_DONE)
					drain_rescan_job(dj);
		}
		drain_reap_zombies(d);
		clock_gettime(CLOCK_MONOTONIC, &now);
		for (dj = d->djobs; dj; dj = next) {
			next = dj->next;
			drain_step_job(dj, &now);
			if (dj->phase == DRAIN_DONE && dj->forget &&
			    !dj->refs) {
				drain_unlink_locked(d, dj);
				drain_djob_free(dj);
			}
		}
	}
	/* Shutting down: no worker outlives us (they would also get
	 * SIGKILL from PR_SET_PDEATHSIG when this thread ends). */
	for (struct djob *dj = d->djobs; dj; dj = dj->next) {
		for (size_t i = 0; i < dj->nouts; i++)
			if (dj->outs[i].pid > 0)
				drain_worker_release(&dj->outs[i], true);
		if (dj->dirty)
			drain_record_write_locked(dj);
	}
	pthread_cond_broadcast(&d->cond);
	pthread_mutex_unlock(&d->lock);
	free(pfds);
	free(owners);
	return NULL;
}
