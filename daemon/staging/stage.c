/* stage.c - the staging thread of a job and the workers it runs.
 *
 * Why a separate process per dataset: the copy must happen with the job
 * user's permissions, so that nobody can stage a file they could not read
 * and nothing the user controls can steer root's writes. setfsuid() would
 * be per-thread and easy to get wrong across helper libraries; a worker
 * that has fully dropped privileges (setgroups + setresgid + setresuid,
 * verified) cannot do anything the user could not do anyway.
 *
 * One dataset, following docs/STAGING.md:
 *   1. take K.lock on the tier (polled, so abort and timeout get through);
 *      jobs asking for the same K wait here: one copy in flight;
 *   2. the current version, if any, is checked against the source by a
 *      worker in --check mode (verify=stat|checksum; verify=none trusts it
 *      for CacheTTL seconds; a version built or verified while we waited
 *      for the lock is trusted as it is): unchanged -> hit;
 *   3. otherwise a new version is built by a worker in copy mode, with the
 *      current version as --previous so unchanged files are hard-linked;
 *      space is reserved (evicting if needed) between its walk and its
 *      copy; cache.c publishes it;
 *   4. the job pins the version and gets a read-only bind mount of it;
 *      K.lock is released.
 * Workers run at most StageParallelism at once (a counting semaphore taken
 * after K.lock: waiters for a busy K hold no slot).
 *
 * The fork happens in a multi-threaded process, so between fork() and
 * fexecve() the child only makes async-signal-safe calls (raw syscalls,
 * dup2, write, _exit); everything it needs (group list, argv, envp) is
 * prepared before the fork.
 *
 * Everything the worker prints is untrusted (it runs as the user, who may
 * ptrace it): lines are bounded by proto_read_line and parsed by
 * stage_proto.c; numbers are only ever added up for status and space, and
 * strings are made printable and one-line before they reach logs or
 * replies. The decisions (which entry, hit/check/build, the worker's
 * arguments) are stage_plan.c's.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <inttypes.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cJSON.h>

#include "common/base/deadline.h"
#include "common/base/log.h"
#include "common/base/units.h"
#include "common/config/joblayout.h"
#include "common/net/proto.h"
#include "common/sched/cachekey.h"
#include "common/sched/spread.h"
#include "daemon/agent.h"
#include "daemon/cluster/fill.h"
#include "daemon/cluster/peer.h"
#include "daemon/cluster/spreadplan.h"
#include "daemon/spawn.h"
#include "daemon/staging/bwgov.h"
#include "daemon/staging/cache.h"
#include "daemon/staging/drain.h"
#include "daemon/staging/spread_view.h"
#include "daemon/staging/stage.h"
#include "daemon/staging/stage_plan.h"
#include "daemon/staging/tiers.h"
#include "daemon/telemetry/stats.h"

#define STAGE_SLOT_POLL_MS 200

struct stage {
	struct agent *agent; /* ->conf, ->tiers, ->cache */
	const struct conf *conf;
	struct stage_account public_account; /* PublicUser, resolved */
	/* StageParallelism: workers running now. */
	pthread_mutex_t slots_lock;
	pthread_cond_t slots_cond;
	unsigned slots_busy;
	/* How workers start: spawn_as_user, or a test's. */
	stage_spawn_fn spawn;
	void *spawn_arg;
};

/* One running worker. */
struct worker {
	pid_t pid;
	int out; /* its stdout, our read end */
	int in;  /* its stdin, our write end; -1 once closed */
};

/* A staging thread's state. */
struct run {
	struct stage *s;
	struct job *job;
	struct timespec deadline;
	unsigned timeout_s;
	int64_t started_ns;              /* CLOCK_REALTIME at the start */
	uint64_t done_bytes, done_files; /* datasets finished */
	uint64_t cached_bytes;           /* of which cache hits (stats.h) */
	/* The spread dataset being staged (stage_entry): its plan, this
	 * node's name in it, and the fd its workers write the whole
	 * dataset's listing to; spread_plan NULL: a whole copy. */
	const char *spread_plan, *spread_self;
	int listing_fd;
	uint64_t spread_dataset_bytes; /* the whole dataset's, its walk's */
	/* The share of a fill by parts being staged (the plan is set, but
	 * no budget or listing: the dataset fits the node), and what that
	 * share read from the PFS, for the dataset's account. */
	bool share;
	uint64_t share_pfs_bytes, share_pfs_files;
	char job_id[16]; /* the job's id as text, for a worker's --peer-job */
	char err[CONF_ERR_MAX];
};

/* What came out of one worker. */
struct outcome {
	bool got_result, result_ok;
	bool got_totals, unchanged;
	char worker_err[CONF_ERR_MAX]; /* the worker's own error */
	char err[CONF_ERR_MAX];        /* ours: capacity, timeout, protocol */
	uint64_t reserved;             /* bytes reserved on the tier */
	uint64_t total_bytes, total_files, copy_bytes, copy_files;
	/* a spread dataset: the whole dataset (total_* is the part), and
	 * the chunks of the files too large for one node it holds */
	uint64_t dataset_bytes, dataset_files;
	uint64_t chunks, chunk_bytes, chunked_files;
	uint64_t bytes, files, linked; /* final figures from the worker */
	uint64_t linked_bytes;
	uint64_t copied_previous, copied_previous_bytes; /* see stage_msg */
	/* from another node's copy (daemon/cluster/fill.h), and the files
	 * it could not give */
	uint64_t fetched, fetched_bytes, fallbacks;
	uint64_t chunks_fetched, chunks_fetched_bytes; /* of a part's chunks */
	char from[CONF_NODE_MAX]; /* that node, or "": the PFS */
	bool by_parts;      /* from several nodes (--peers): FROM lists them */
	bool share;         /* a fill by parts: this node's share linked */
	int64_t started_ns; /* CLOCK_REALTIME before the spawn */
};

static long ms_left(const struct timespec *deadline)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	return (long)(deadline->tv_sec - now.tv_sec) * 1000 +
	       (deadline->tv_nsec - now.tv_nsec) / 1000000;
}

/* --- the object
 * ---------------------------------------------------------------- */

static int real_spawn(void *arg, uid_t uid, gid_t gid, const char *user,
		      char *const argv[], char *const envp[],
		      const int *pass_fds, size_t npass, const char *what,
		      struct spawn_proc *ret, char *err, size_t errlen)
{
	(void)arg;
	return spawn_as_user(uid, gid, user, argv, envp, pass_fds, npass, what,
			     ret, err, errlen);
}

struct stage *stage_create(struct agent *a, char *err, size_t errlen)
{
	struct stage *s = calloc(1, sizeof(*s));
	pthread_condattr_t attr;

	if (!s) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	s->agent = a;
	s->conf = a->conf;
	if (stage_public_account(a->conf, &s->public_account, err, errlen) <
	    0) {
		free(s);
		return NULL;
	}
	s->spawn = real_spawn;
	pthread_mutex_init(&s->slots_lock, NULL);
	pthread_condattr_init(&attr);
	pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
	pthread_cond_init(&s->slots_cond, &attr);
	pthread_condattr_destroy(&attr);
	return s;
}

void stage_destroy(struct stage *s)
{
	if (!s)
		return;
	pthread_cond_destroy(&s->slots_cond);
	pthread_mutex_destroy(&s->slots_lock);
	free(s);
}

void stage_set_spawn(struct stage *s, stage_spawn_fn fn, void *arg)
{
	s->spawn = fn ? fn : real_spawn;
	s->spawn_arg = fn ? arg : NULL;
}

/* --- StageParallelism
 * ------------------------------------------------------------ */

/* Wait for a free worker slot; -1 (reason in run->err) when the job is
 * cancelled or out of time first. */
static int slot_take(struct run *run, const char *dsname)
{
	struct stage *s = run->s;
	struct timespec until;
	int r = 0;

	pthread_mutex_lock(&s->slots_lock);
	while (s->slots_busy >= s->conf->stage_parallelism) {
		pthread_mutex_unlock(&s->slots_lock);
		if (jobs_cancelled(run->job, run->err, sizeof(run->err)))
			return -1;
		if (ms_left(&run->deadline) <= 0) {
			snprintf(run->err, sizeof(run->err),
				 "staging timed out after %u s (dataset '%s')",
				 run->timeout_s, dsname);
			return -1;
		}
		deadline_after_ms(CLOCK_MONOTONIC, STAGE_SLOT_POLL_MS, &until);
		pthread_mutex_lock(&s->slots_lock);
		if (s->slots_busy >= s->conf->stage_parallelism)
			pthread_cond_timedwait(&s->slots_cond, &s->slots_lock,
					       &until);
	}
	s->slots_busy++;
	pthread_mutex_unlock(&s->slots_lock);
	return r;
}

static void slot_give(struct stage *s)
{
	pthread_mutex_lock(&s->slots_lock);
	s->slots_busy--;
	pthread_cond_signal(&s->slots_cond);
	pthread_mutex_unlock(&s->slots_lock);
}

/* --- spawning and following a worker
 * ------------------------------------------- */

static int worker_spawn(struct stage *s, const struct stage_task *task,
			int rate_fd, struct worker *ret, char *err,
			size_t errlen)
{
	const struct stage_owner *ow = task->owner;
	char *argv[STAGE_ARGV_MAX];
	char *envp_gate[] = { "PATH=/usr/sbin:/usr/bin:/sbin:/bin", "LC_ALL=C",
			      "IOSTAGE_STAGE_GATE=1", NULL };
	/* The worker reads the old manifest on fd 3, writes the new on 4,
	 * reads its rate (StageBandwidth=) on 5. */
	int pass[4] = { task->manifest_in,
			task->mode == STAGE_WORKER_BUILD ? task->manifest_out
							 : -1,
			rate_fd, task->spread_plan ? task->listing_out : -1 };
	size_t npass = task->spread_plan && task->listing_out >= 0 ? 4
		       : rate_fd >= 0                              ? 3
								   : 2;
	struct spawn_proc p;

	stage_plan_argv(task, rate_fd >= 0, argv);
	if (s->spawn(s->spawn_arg, ow->uid, ow->gid, ow->user, argv,
		     task->mode == STAGE_WORKER_BUILD ? envp_gate : NULL, pass,
		     npass, "stage worker", &p, err, errlen) < 0)
		return -1;
	ret->pid = p.pid;
	ret->out = p.out;
	ret->in = p.in;
	return 0;
}

static void close_in(struct worker *w)
{
	if (w->in >= 0)
		close(w->in);
	w->in = -1;
}

/* Act on one line from the worker. Returns -1 when the worker must be
 * stopped (o->err says why). */
static int on_message(struct run *run, struct worker *w, int tier,
		      const struct profile_dataset *ds,
		      enum stage_worker_mode mode, const struct stage_msg *m,
		      struct outcome *o)
{
	struct job *job = run->job;

	switch (m->kind) {
	case STAGE_MSG_RESULT:
		o->got_result = true;
		o->result_ok = m->ok;
		o->bytes = m->bytes;
		o->files = m->files;
		o->linked = m->linked;
		o->linked_bytes = m->linked_bytes;
		o->copied_previous = m->copied_previous;
		o->copied_previous_bytes = m->copied_previous_bytes;
		o->fetched = m->fetched;
		o->fetched_bytes = m->fetched_bytes;
		o->fallbacks = m->fallbacks;
		o->chunks_fetched = m->chunks_fetched;
		o->chunks_fetched_bytes = m->chunks_fetched_bytes;
		if (!m->ok)
			snprintf(o->worker_err, sizeof(o->worker_err), "%s",
				 m->text);
		return 0;
	case STAGE_MSG_NOTE:
		log_info("job %u: dataset '%s': %s", job->id, ds->name,
			 m->text);
		return 0;
	case STAGE_MSG_TOTALS:
		if (o->got_totals)
			return 0; /* a second totals line: ignore */
		o->got_totals = true;
		o->dataset_bytes = m->dataset_bytes;
		o->dataset_files = m->dataset_files;
		o->chunks = m->chunks;
		o->chunk_bytes = m->chunk_bytes;
		o->chunked_files = m->chunked_files;
		/* a spread dataset's whole size, from a check or a build */
		if (run->spread_plan)
			run->spread_dataset_bytes = m->dataset_bytes;
		o->total_bytes = m->total_bytes;
		o->total_files = m->total_files;
		o->copy_bytes = m->copy_bytes;
		o->copy_files = m->copy_files;
		o->unchanged = m->unchanged;
		if (mode != STAGE_WORKER_BUILD)
			return 0;
		jobs_add_totals(job, o->total_bytes, o->total_files);
		/* Only what is copied takes space: linked files share the
		 * previous version's blocks. */
		if (cache_reserve(run->s->agent->cache, tier, ds->name,
				  o->copy_bytes, job->speculative, o->err,
				  sizeof(o->err)) < 0) {
			close_in(w); /* no "go": the worker cancels */
			return -1;
		}
		o->reserved = o->copy_bytes;
		if (write(w->in, "go\n", 3) != 3) {
			snprintf(o->err, sizeof(o->err),
				 "stage worker for dataset '%s' went away",
				 ds->name);
			close_in(w);
			return -1;
		}
		close_in(w);
		return 0;
	case STAGE_MSG_PROGRESS:
		if (mode != STAGE_WORKER_BUILD)
			return 0;
		/* Bytes and files placed so far, copied or linked. */
		jobs_progress(job,
			      run->done_bytes + (m->bytes > o->total_bytes
						     ? o->total_bytes
						     : m->bytes),
			      run->done_files + (m->files > o->total_files
						     ? o->total_files
						     : m->files));
		return 0;
	case STAGE_MSG_OTHER:
		break;
	}
	return 0; /* unknown keys: newer worker, ignore */
}

/* Read the worker's output until EOF, the deadline or a reason to stop. */
static void follow(struct run *run, struct worker *w, int tier,
		   const struct profile_dataset *ds,
		   enum stage_worker_mode mode, struct outcome *o)
{
	struct proto_reader *rd = proto_reader_create(w->out);
	struct stage_msg m;
	char *line;

	if (!rd) {
		snprintf(o->err, sizeof(o->err), "out of memory");
		kill(w->pid, SIGKILL);
		return;
	}
	for (;;) {
		long left = ms_left(&run->deadline);
		int r;

		if (left <= 0) {
			snprintf(o->err, sizeof(o->err),
				 "staging timed out after %u s (dataset '%s')",
				 run->timeout_s, ds->name);
			kill(w->pid, SIGKILL);
			break;
		}
		r = proto_read_line(rd, left > INT_MAX ? INT_MAX : (int)left,
				    &line);
		if (r == 0)
			break;
		if (r < 0) {
			if (errno == ETIMEDOUT || errno == EINTR)
				continue;
			if (errno == EMSGSIZE) {
				snprintf(o->err, sizeof(o->err),
					 "stage worker for dataset '%s' sent "
					 "an overlong line",
					 ds->name);
				kill(w->pid, SIGKILL);
			}
			break; /* EPROTO (cut-off last line) or a read error */
		}
		if (stage_parse_line(line, &m) < 0) {
			snprintf(o->err, sizeof(o->err),
				 "stage worker for dataset '%s' sent "
				 "malformed output",
				 ds->name);
			kill(w->pid, SIGKILL);
			break;
		}
		r = on_message(run, w, tier, ds, mode, &m, o);
		if (r < 0)
			break;
	}
	proto_reader_destroy(rd);
}

static void describe_exit(int status, const char *name, char *buf, size_t len)
{
	if (WIFSIGNALED(status))
		snprintf(
		    buf, len,
		    "stage worker for dataset '%s' was killed by signal %d",
		    name, WTERMSIG(status));
	else if (WIFEXITED(status) && WEXITSTATUS(status) != 0)
		snprintf(buf, len,
			 "stage worker for dataset '%s' exited with status %d",
			 name, WEXITSTATUS(status));
	else
		snprintf(
		    buf, len,
		    "stage worker for dataset '%s' exited without a result",
		    name);
}

/* Run TASK for dataset DS on tier T to its end. 0 when the worker
 * succeeded (O filled), -1 with run->err. Any reservation it made is
 * released before returning. */
static int run_worker(struct run *run, const struct profile_dataset *ds, int t,
		      const struct stage_task *task, struct outcome *o)
{
	struct job *job = run->job;
	struct bwgov_slot *bw = NULL;
	struct worker w;
	int status = 0, rate_fd, r;

	memset(o, 0, sizeof(*o));
	/* Each worker writes the whole listing anew. */
	if (task->spread_plan && task->listing_out >= 0 &&
	    (ftruncate(task->listing_out, 0) < 0 ||
	     lseek(task->listing_out, 0, SEEK_SET) < 0)) {
		snprintf(run->err, sizeof(run->err),
			 "dataset '%s': cannot reset its listing: %s", ds->name,
			 strerror(errno));
		return -1;
	}
	if (slot_take(run, ds->name) < 0)
		return -1;
	o->started_ns = cache_now_ns();
	if (jobs_cancelled(job, run->err, sizeof(run->err))) {
		slot_give(run->s);
		return -1;
	}
	/* Only copies read the PFS in bulk: checks are stats. */
	rate_fd = task->mode == STAGE_WORKER_BUILD
		      ? bwgov_begin(run->s->agent->bwgov, job->speculative, &bw)
		      : -1;
	r = worker_spawn(run->s, task, rate_fd, &w, run->err, sizeof(run->err));
	if (rate_fd >= 0)
		close(rate_fd); /* the worker has its own; bw keeps the page */
	if (r < 0) {
		bwgov_end(run->s->agent->bwgov, bw);
		slot_give(run->s);
		return -1;
	}
	log_debug("job %u: worker %d %s '%s' from %s", job->id, (int)w.pid,
		  task->mode == STAGE_WORKER_CHECK ? "checks" : "stages",
		  ds->name, ds->path);
	if (jobs_set_worker(job, w.pid) < 0)
		kill(w.pid, SIGKILL); /* cancelled while we forked */
	follow(run, &w, t, ds, task->mode, o);
	close_in(&w);
	close(w.out);
	/* Forget the pid before reaping it, so that nobody can signal a
	 * recycled pid. */
	jobs_clear_worker(job);
	while (waitpid(w.pid, &status, 0) < 0 && errno == EINTR)
		;
	bwgov_end(run->s->agent->bwgov, bw);
	slot_give(run->s);
	if (o->reserved)
		tiers_release(run->s->agent->tiers, t, o->reserved);
	if (jobs_cancelled(job, run->err, sizeof(run->err)))
		return -1;
	if (o->err[0]) {
		snprintf(run->err, sizeof(run->err), "%s", o->err);
		return -1;
	}
	if (o->got_result && !o->result_ok) {
		snprintf(run->err, sizeof(run->err), "%s", o->worker_err);
		return -1;
	}
	if (o->got_result && WIFEXITED(status) && WEXITSTATUS(status) == 0)
		return 0;
	describe_exit(status, ds->name, run->err, sizeof(run->err));
	return -1;
}

/* K.lock's poll: give up when the job is cancelled or out of time. */
struct lock_wait {
	struct run *run;
	const char *dsname;
};

static bool lock_stop(void *arg, char *why, size_t len)
{
	struct lock_wait *lw = arg;

	if (jobs_cancelled(lw->run->job, why, len))
		return true;
	if (ms_left(&lw->run->deadline) <= 0) {
		snprintf(why, len,
			 "staging timed out after %u s (dataset '%s')",
			 lw->run->timeout_s, lw->dsname);
		return true;
	}
	return false;
}

/* Is the current version CUR good for dataset DS without a new copy?
 * 1 yes (a hit; HOW says why), 0 no, -1 on failure (run->err). */
static int current_is_good(struct run *run, const struct profile_dataset *ds,
			   const struct stage_owner *ow, int t,
			   const struct cache_version *cur, char *how,
			   size_t howlen)
{
	struct cache *cache = run->s->agent->cache;
	char vdir[CONF_PATH_MAX + 64];
	struct stage_task task;
	struct outcome o;
	int fd, r;

	switch (stage_plan_current(cur, ds->verify, run->started_ns, time(NULL),
				   run->s->conf->cache_ttl, how, howlen)) {
	case STAGE_HIT:
		/* A spread dataset's view needs the whole dataset's listing,
		 * which only a walk gives. */
		if (!run->spread_plan || run->share)
			return 1;
		break;
	case STAGE_BUILD:
		return 0;
	case STAGE_CHECK:
		break;
	}
	if (cache_version_path(cache, t, ow->key, cur->version, false, vdir,
			       sizeof(vdir)) < 0)
		return 0;
	fd = cache_open_manifest(cache, t, ow->key, cur->version);
	if (fd < 0) {
		log_warning("job %u: dataset '%s': cannot open the manifest "
			    "of %s.v%u",
			    run->job->id, ds->name, ow->key, cur->version);
		return 0;
	}
	task = (struct stage_task){
		.mode = STAGE_WORKER_CHECK,
		.owner = ow,
		.src = ds->path,
		.dstdir = vdir,
		.manifest_in = fd,
		.manifest_out = -1,
		.verify = stage_plan_worker_verify(ds->verify),
		.spread_plan = run->spread_plan,
		.spread_self = run->spread_self,
		.listing_out = run->listing_fd,
	};
	r = run_worker(run, ds, t, &task, &o);
	close(fd);
	if (r < 0)
		return -1;
	if (!o.unchanged)
		return 0;
	cache_mark_verified(cache, t, ow->key, cur->version, o.started_ns);
	snprintf(how, howlen, "unchanged (verify=%s)",
		 task.verify == PROFILE_VERIFY_CHECKSUM ? "checksum" : "stat");
	return 1;
}

/* A fill from several nodes' worker arguments. A fill by parts (OWN
 * set): this node's share SHARE (version OWN of its key) to link from,
 * into TASK's previous and manifest_in (PREV holds the path; *mfd the
 * manifest's fd, the caller's to close), and every other node's share in
 * PARTS, then this node's own (for what cannot be linked: a public
 * entry's files are root's), as --peers in LIST. A spread dataset's part
 * (OWN NULL): the other nodes' parts in PARTS alone. FROM gets the
 * nodes' names. */
static void parts_task(struct run *run, int t, const struct stage_owner *share,
		       const struct cache_version *own,
		       const struct fill_parts *parts, struct stage_task *task,
		       char *prev, size_t prevlen, int *mfd, char *list,
		       size_t listlen, char *from, size_t fromlen)
{
	struct agent *a = run->s->agent;
	const char *tier = a->conf->tiers[t].name;
	size_t n = 0, f = 0;

	if (own && cache_version_path(a->cache, t, share->key, own->version,
				      true, prev, prevlen) == 0) {
		*mfd = cache_open_manifest(a->cache, t, share->key,
					   own->version);
		if (*mfd >= 0) {
			task->previous = prev;
			task->manifest_in = *mfd;
		}
	}
	list[0] = from[0] = '\0';
	for (size_t k = 0; k < parts->n + (own ? 1 : 0); k++) {
		const char *node = k < parts->n ? parts->src[k].node
						: peer_self(a->peer);
		int w;

		if (k < parts->n)
			w = snprintf(list + n, listlen - n, "%s%s=%s",
				     n ? "," : "", parts->src[k].peer,
				     parts->src[k].entry);
		else
			w = snprintf(list + n, listlen - n, "%s%s:%u=%s/%s.v%u",
				     n ? "," : "", node, a->conf->peer_port,
				     tier, share->key, own->version);
		if (w < 0 || (size_t)w >= listlen - n)
			break; /* the rest from the PFS */
		n += (size_t)w;
		/* a node named once, though it gives several versions */
		if (k < parts->n &&
		    (k == 0 || strcmp(parts->src[k - 1].node, node))) {
			w = snprintf(from + f, fromlen - f, "%s%s",
				     f ? "," : "", node);
			if (w > 0 && (size_t)w < fromlen - f)
				f += (size_t)w;
		}
	}
	task->peers = list;
	task->munge_socket = run->s->conf->munge_socket;
	/* the nodes serve their shares and parts for this job only */
	snprintf(run->job_id, sizeof(run->job_id), "%u", run->job->id);
	task->peer_job = run->job_id;
}

/* Build version NEXT of OW's entry for dataset I (previous version CUR or
 * NULL; another node's copy FROM or NULL; or, a fill by parts, the other
 * nodes' shares PARTS and this node's own, version OWN of SHARE's key;
 * or, a spread dataset's part, the other nodes' parts PARTS, OWN NULL).
 * 0 with *ret_o, or -1 with run->err. */
static int build_version(struct run *run, size_t i,
			 const struct stage_owner *ow, int t,
			 const struct cache_version *cur, unsigned next,
			 const struct fill_source *from,
			 const struct fill_parts *parts,
			 const struct stage_owner *share,
			 const struct cache_version *own, struct outcome *ret_o)
{
	char *list = NULL, by[CONF_NODE_MAX];
	struct cache *cache = run->s->agent->cache;
	struct job *job = run->job;
	const struct profile_dataset *ds = &job->profile->datasets[i];
	char prev[CONF_PATH_MAX + 64];
	struct stage_task task;
	struct cache_build b;
	struct cache_meta meta;
	char budget[24];
	int mfd = -1, r;

	if (cache_build_begin(cache, t, ow->key, next, ow->uid, ow->gid, &b,
			      run->err, sizeof(run->err)) < 0)
		return -1;
	task = (struct stage_task){
		.mode = STAGE_WORKER_BUILD,
		.owner = ow,
		.src = ds->path,
		.dstdir = b.path,
		.manifest_in = -1,
		.manifest_out = b.manifest_fd,
		.verify = stage_plan_worker_verify(ds->verify),
		.spread_plan = run->spread_plan,
		.spread_self = run->spread_self,
		.listing_out = run->listing_fd,
	};
	/* Only what fits (issue 29 item 4): a part larger than the tier
	 * can take keeps its best-placed files, the view reads the rest
	 * from the PFS. */
	if (run->spread_plan && !run->share) {
		uint64_t room = spreadplan_room(run->s->agent, t);

		snprintf(budget, sizeof(budget), "%" PRIu64, room ? room : 1);
		task.part_budget = budget;
	}
	/* Unchanged files are linked from the current version, unless its
	 * manifest cannot tell (checksum asked of a stat version). */
	if (stage_plan_link_previous(cur, ds->verify) &&
	    cache_version_path(cache, t, ow->key, cur->version, true, prev,
			       sizeof(prev)) == 0) {
		mfd = cache_open_manifest(cache, t, ow->key, cur->version);
		if (mfd >= 0) {
			task.previous = prev;
			task.manifest_in = mfd;
		}
	}
	/* A fill by parts: this node's share is linked, the other nodes'
	 * shares are fetched, the PFS gives only what none of them could.
	 * A spread dataset's part: what the other nodes' parts hold under
	 * their previous plan is fetched, this node's previous part linked
	 * (CUR, above). */
	if (parts && ((own && !task.previous) || (!own && parts->n))) {
		size_t len = (parts->n + 1) * (CONF_NODE_MAX + 112);

		list = malloc(len);
		if (!list) {
			cache_build_abort(&b);
			snprintf(run->err, sizeof(run->err), "out of memory");
			return -1;
		}
		parts_task(run, t, share, own, parts, &task, prev, sizeof(prev),
			   &mfd, list, len, by, sizeof(by));
		if (own)
			log_info("job %u: dataset '%s': filling by parts: its "
				 "own share %s.v%u and %zu other node%s' (%s)",
				 job->id, ds->name, share->key, own->version,
				 parts->n, parts->n == 1 ? "" : "s",
				 by[0] ? by : "none");
		else
			log_info("job %u: dataset '%s': its part from what the "
				 "other nodes' parts hold (%s), the rest from "
				 "the PFS",
				 job->id, ds->name, by);
	}
	/* Nothing here to link from: another node's copy saves reading
	 * the PFS; the worker compares it with the PFS as it would ours. */
	else if (!task.previous && from) {
		task.peer = from->peer;
		task.peer_entry = from->entry;
		task.munge_socket = run->s->conf->munge_socket;
		log_info("job %u: dataset '%s': filling from %s's %s (%s)",
			 job->id, ds->name, from->node, from->entry,
			 from->head ? "the job's head" : "iostagectld");
	}
	r = run_worker(run, ds, t, &task, ret_o);
	if (task.peer)
		snprintf(ret_o->from, sizeof(ret_o->from), "%s", from->node);
	if (task.peers) {
		snprintf(ret_o->from, sizeof(ret_o->from), "%s",
			 by[0] ? by : "-");
		ret_o->by_parts = true;
		ret_o->share = own != NULL;
	}
	free(list);
	if (mfd >= 0)
		close(mfd);
	if (r < 0) {
		cache_build_abort(&b);
		return -1;
	}
	meta = (struct cache_meta){
		.src = ds->path,
		.uid = ow->public ? 0 : job->uid,
		.user = ow->public ? CACHE_PUBLIC_USER : job->user,
		.public = ow->public,
		.bytes = ret_o->got_totals ? ret_o->total_bytes : ret_o->bytes,
		.files = ret_o->got_totals ? ret_o->total_files : ret_o->files,
		.verify = ds->verify,
		.verified_ns = ret_o->started_ns,
		/* a part is served to other nodes for its job only */
		.part = run->spread_plan != NULL,
	};
	if (cache_build_publish(&b, &meta, run->err, sizeof(run->err)) < 0)
		return -1;
	return 0;
}

/* Dataset I is served by version BUILT of OW's entry (HIT: it was there,
 * CUR; else O built it): record it. */
static void served(struct run *run, size_t i, const struct stage_owner *ow,
		   bool hit, const struct cache_version *built,
		   const struct outcome *o, const char *entry, const char *how)
{
	struct job *job = run->job;
	const struct profile_dataset *ds = &job->profile->datasets[i];
	char size[32];

	if (hit) {
		jobs_add_totals(job, built->bytes, built->files);
		log_info(
		    "job %u: dataset '%s': cache hit %s on tier '%s'%s: %s",
		    job->id, ds->name, entry, ds->tier,
		    ow->public ? " (public)" : "", how);
		jobs_dataset_result(job, i, JOB_DS_HIT, entry, 0, 0, 0);
		stats_dataset_served(run->s->agent->stats, true, built->bytes,
				     built->files, 0, 0, 0);
		run->cached_bytes += built->bytes;
	} else {
		uint64_t placed = o->linked + o->fetched + o->copied_previous;
		uint64_t copied = o->files > placed ? o->files - placed : 0;
		/* what came from the source: the rest came from the nodes
		 * (and, by parts, this node's share, whose own reads of the
		 * PFS count here) */
		uint64_t other = o->fetched_bytes + o->chunks_fetched_bytes +
				 (o->by_parts ? o->linked_bytes +
						    o->copied_previous_bytes
					      : 0);
		uint64_t pfs = o->copy_bytes > other ? o->copy_bytes - other
						     : 0;
		char fetched[64], chunks[96] = "";

		if (o->chunks_fetched) {
			char b[64];

			snprintf(chunks, sizeof(chunks),
				 " and %" PRIu64 " chunks (%s)",
				 o->chunks_fetched,
				 units_bytes(o->chunks_fetched_bytes, b,
					     sizeof(b)));
		}
		if (o->share) {
			pfs += run->share_pfs_bytes;
			copied += run->share_pfs_files;
		}

		if (o->by_parts)
			log_info("job %u: dataset '%s': %" PRIu64
				 " files (%s)%s "
				 "from nodes %s, %" PRIu64
				 " linked and %" PRIu64
				 " copied from its %s, %" PRIu64
				 " they could not give",
				 job->id, ds->name, o->fetched,
				 units_bytes(o->fetched_bytes, fetched,
					     sizeof(fetched)),
				 chunks, o->from, o->linked, o->copied_previous,
				 o->share ? "own share" : "previous part",
				 o->fallbacks);
		else if (o->from[0])
			log_info("job %u: dataset '%s': %" PRIu64 " files (%s) "
				 "from node %s, %" PRIu64 " it could not give",
				 job->id, ds->name, o->fetched,
				 units_bytes(o->fetched_bytes, fetched,
					     sizeof(fetched)),
				 o->from, o->fallbacks);
		log_info("job %u: dataset '%s': built %s on tier '%s'%s: "
			 "%" PRIu64 " files copied (%s), %" PRIu64 " linked",
			 job->id, ds->name, entry, ds->tier,
			 ow->public ? " (public)" : "", copied,
			 units_bytes(pfs, size, sizeof(size)), o->linked);
		jobs_dataset_result(job, i, JOB_DS_BUILT, entry, copied, pfs,
				    o->linked);
		stats_dataset_served(run->s->agent->stats, false, built->bytes,
				     built->files, pfs, copied, o->linked);
	}
}

/* A spread dataset's part of OW's entry (docs/STAGING.md, "Spread
 * datasets"): its own key, the plan (the job's head decides it), and the
 * file the workers write the whole dataset's listing to. 0 with *part
 * and RUN's spread fields set, or -1 with run->err. */
static int spread_begin(struct run *run, size_t i, const struct stage_owner *ow,
			struct stage_owner *part, fill_stop_fn stop,
			void *stop_arg)
{
	struct agent *a = run->s->agent;
	const struct profile_dataset *ds = &run->job->profile->datasets[i];
	char *plan = malloc(SPREAD_SPEC_MAX);
	int fd;

	if (!plan) {
		snprintf(run->err, sizeof(run->err), "out of memory");
		return -1;
	}
	if (spreadplan_get(a, run->job, i, ds->tier, stop, stop_arg, plan,
			   SPREAD_SPEC_MAX, run->err, sizeof(run->err)) < 0) {
		char why[CONF_ERR_MAX];

		snprintf(why, sizeof(why), "%s", run->err);
		snprintf(run->err, sizeof(run->err), "dataset '%s': %.400s",
			 ds->name, why);
		free(plan);
		return -1;
	}
	/* Unnamed, root's: the worker (the user) writes it through the fd
	 * it is given, the view reads it the same way. */
	fd = open(a->conf->state_dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
	if (fd < 0) {
		snprintf(run->err, sizeof(run->err),
			 "dataset '%s': cannot make its listing in %.200s: %s",
			 ds->name, a->conf->state_dir, strerror(errno));
		free(plan);
		return -1;
	}
	*part = *ow;
	cachekey_part(ow->key, part->key);
	run->spread_plan = plan;
	run->spread_self = spreadplan_self(a);
	run->listing_fd = fd;
	run->spread_dataset_bytes = 0;
	return 0;
}

static void spread_end(struct run *run)
{
	free((char *)run->spread_plan);
	run->spread_plan = NULL;
	run->spread_self = NULL;
	if (run->listing_fd >= 0)
		close(run->listing_fd);
	run->listing_fd = -1;
}

/* Dataset I's view: the whole spread dataset, this node's part BUILT
 * of OW's entry at local speed. 0, or -1 with run->err. */
static int spread_mount(struct run *run, size_t i, const struct stage_owner *ow,
			int t, unsigned version)
{
	struct job *job = run->job;
	const struct profile_dataset *ds = &job->profile->datasets[i];
	struct spread_view_args va = {
		.jobid = job->id,
		.name = ds->name,
		.src = ds->path,
		.tier = t,
		.key = ow->key,
		.version = version,
		.plan = run->spread_plan,
		.self = run->spread_self,
		.listing_fd = run->listing_fd,
		.uid = job->uid,
		.gid = job->gid,
		.user = job->user,
	};
	pid_t pid = 0;

	if (spread_view_start(run->s->agent, &va, &pid, run->err,
			      sizeof(run->err)) < 0)
		return -1;
	jobs_set_view_pid(job, i, pid);
	return 0;
}

/* A fill by parts (daemon/cluster/fill.h): this node's share of dataset
 * I, a version of SHARE's key (the part key of OW's entry) with the files
 * the job's nodes' equal shares give this node, built (or found) under
 * its own lock, pinned by the job and named to the other nodes. 0 with
 * *ret, or -1 with run->err. */
static int stage_share(struct run *run, size_t i, const struct stage_owner *ow,
		       int t, struct stage_owner *share,
		       struct cache_version *ret)
{
	struct agent *a = run->s->agent;
	struct job *job = run->job;
	const struct profile_dataset *ds = &job->profile->datasets[i];
	struct lock_wait lw = { .run = run, .dsname = ds->name };
	struct cache_lock *lock = NULL;
	struct cache_version cur;
	char *plan = malloc(SPREAD_SPEC_MAX), how[160] = "built";
	char entry[JOBS_ENTRY_MAX], size[32];
	struct outcome o;
	unsigned next;
	int r = -1, good;
	bool have;

	if (!plan || fill_parts_plan(job, plan, SPREAD_SPEC_MAX) < 0) {
		snprintf(run->err, sizeof(run->err),
			 "dataset '%s': cannot make the shares of %zu nodes",
			 ds->name, job->nnodes);
		free(plan);
		return -1;
	}
	*share = *ow;
	cachekey_part(ow->key, share->key);
	run->spread_plan = plan;
	run->spread_self = spreadplan_self(a);
	run->share = true;
	run->share_pfs_bytes = run->share_pfs_files = 0;
	if (cache_lock_acquire(a->cache, t, share->key, lock_stop, &lw, &lock,
			       run->err, sizeof(run->err)) < 0)
		goto out;
	have = cache_current(a->cache, t, share->key, &cur, &next) == 1;
	good = have ? current_is_good(run, ds, share, t, &cur, how, sizeof(how))
		    : 0;
	if (good < 0)
		goto out;
	if (!good) {
		if (build_version(run, i, share, t, have ? &cur : NULL, next,
				  NULL, NULL, NULL, NULL, &o) < 0)
			goto out;
		if (cache_current(a->cache, t, share->key, &cur, &next) != 1) {
			snprintf(run->err, sizeof(run->err),
				 "dataset '%s': its share vanished", ds->name);
			goto out;
		}
		run->share_pfs_bytes = o.copy_bytes;
		run->share_pfs_files = o.files > o.linked ? o.files - o.linked
							  : 0;
	}
	if (cache_pin(a->cache, t, share->key, cur.version, job->id, run->err,
		      sizeof(run->err)) < 0)
		goto out;
	snprintf(entry, sizeof(entry), "%s.v%u", share->key, cur.version);
	jobs_set_part_entry(job, i, entry);
	log_info("job %u: dataset '%s': its share %s on tier '%s' (%s): "
		 "%" PRIu64 " files, %s; the other nodes fill from it",
		 job->id, ds->name, entry, ds->tier, how, cur.files,
		 units_bytes(cur.bytes, size, sizeof(size)));
	cache_gc_key(a->cache, t, share->key);
	*ret = cur;
	r = 0;
out:
	cache_lock_release(lock);
	free(plan);
	run->spread_plan = NULL;
	run->spread_self = NULL;
	run->share = false;
	return r;
}

/* Stage dataset I of RUN's job into the entry of OW (of its part, for a
 * spread dataset). 0, or -1 with run->err (nothing recorded: the caller
 * does). */
static int stage_entry(struct run *run, size_t i, const struct stage_owner *ow)
{
	struct cache *cache = run->s->agent->cache;
	struct job *job = run->job;
	const struct profile_dataset *ds = &job->profile->datasets[i];
	const bool spread = ds->spread == PROFILE_SPREAD_YES && !job->prestage;
	const char *key;
	char entry[JOBS_ENTRY_MAX], how[160];
	struct lock_wait lw = { .run = run, .dsname = ds->name };
	struct cache_version cur, built;
	struct cache_lock *lock = NULL;
	struct stage_owner part, share;
	struct fill_source from;
	struct fill_parts *parts = NULL;
	struct cache_version own;
	struct outcome o;
	unsigned next;
	bool have, hit = false;
	int t = tiers_index(run->s->agent->tiers, ds->tier), r = -1, good;
	int fill = 0;

	memset(&o, 0, sizeof(o));
	if (spread) {
		if (spread_begin(run, i, ow, &part, lock_stop, &lw) < 0)
			return -1;
		ow = &part;
	}
	key = ow->key;
	/* No version here: another node may have one (the job's head, or
	 * a node iostagectld names). Asked before K.lock is ours: a node
	 * waiting for its head while holding the lock could be what the
	 * head's other job waits for. A node's part of a spread dataset
	 * is its own: no other node holds the same files. */
	if (!spread && cache_current(cache, t, key, &cur, &next) != 1) {
		if (fill_by_parts(run->s->agent, job, ds->tier)) {
			/* Each node reads its share of the PFS, then takes
			 * the others' shares from them. */
			parts = calloc(1, sizeof(*parts));
			if (!parts) {
				snprintf(run->err, sizeof(run->err),
					 "out of memory");
				return -1;
			}
			if (stage_share(run, i, ow, t, &share, &own) < 0 ||
			    fill_parts_wait(run->s->agent, job, i, ds->tier,
					    key, lock_stop, &lw, parts,
					    run->err, sizeof(run->err)) < 0) {
				free(parts);
				return -1;
			}
		} else {
			fill = fill_find(run->s->agent, job, i, ds->tier, key,
					 lock_stop, &lw, &from, run->err,
					 sizeof(run->err));
			if (fill < 0)
				return -1;
		}
	}
	if (cache_lock_acquire(cache, t, key, lock_stop, &lw, &lock, run->err,
			       sizeof(run->err)) < 0)
		goto out;

	have = cache_current(cache, t, key, &cur, &next) == 1;
	good = have ? current_is_good(run, ds, ow, t, &cur, how, sizeof(how))
		    : 0;
	if (good < 0)
		goto out;
	if (good) {
		hit = true;
		built = cur;
	} else {
		/* A spread dataset's part under a new plan: the files the
		 * other nodes held under the old one come from them. */
		if (spread && !parts &&
		    (parts = calloc(1, sizeof(*parts))) != NULL)
			fill_job_parts(run->s->agent, job, ds->tier, key,
				       parts);
		if (build_version(run, i, ow, t, have ? &cur : NULL, next,
				  fill == 1 ? &from : NULL, parts, &share,
				  spread  ? NULL
				  : parts ? &own
					  : NULL,
				  &o) < 0)
			goto out;
		if (cache_current(cache, t, key, &built, &next) != 1) {
			snprintf(run->err, sizeof(run->err),
				 "dataset '%s': the new cache version vanished",
				 ds->name);
			goto out;
		}
	}
	snprintf(entry, sizeof(entry), "%s.v%u", key, built.version);
	if (!job->prestage &&
	    (cache_pin(cache, t, key, built.version, job->id, run->err,
		       sizeof(run->err)) < 0 ||
	     (spread ? spread_mount(run, i, ow, t, built.version)
		     : cache_mount_job(cache, t, job->id, ds->name, key,
				       built.version, run->err,
				       sizeof(run->err))) < 0))
		goto out;
	served(run, i, ow, hit, &built, &o, entry, how);
	if (spread)
		jobs_set_spread_dataset_bytes(job, i,
					      run->spread_dataset_bytes);
	if (spread && !hit && !o.chunked_files)
		log_info("job %u: dataset '%s': this node holds %" PRIu64
			 " of its %" PRIu64 " files (spread over %s)",
			 job->id, ds->name, o.total_files, o.dataset_files,
			 run->spread_plan);
	else if (spread && !hit)
		log_info("job %u: dataset '%s': this node holds %" PRIu64
			 " of its %" PRIu64
			 " files (spread over %s), and %" PRIu64
			 " chunks (%" PRIu64 " bytes) of the %" PRIu64
			 " too large for one node",
			 job->id, ds->name, o.total_files, o.dataset_files,
			 run->spread_plan, o.chunks, o.chunk_bytes,
			 o.chunked_files);
	/* The version we replaced goes once nobody pins it. A spread
	 * dataset's old part stays until the job's end (its unpin): the
	 * other nodes may be taking files from it now. */
	if (!spread)
		cache_gc_key(cache, t, key);
	jobs_dataset_done(job, i, t, built.bytes, built.files);
	run->done_bytes += built.bytes;
	run->done_files += built.files;
	jobs_progress(job, run->done_bytes, run->done_files);
	r = 0;
out:
	cache_lock_release(lock);
	free(parts);
	if (spread)
		spread_end(run);
	return r;
}

/* Stage dataset I of RUN's job: from a public entry when its source is
 * readable by everyone (and PublicDatasets=yes), else per user. A failed
 * public attempt falls back to the user's own entry (staged as the user,
 * which reports any real problem with the user's own credentials), unless
 * the job was cancelled or ran out of time. 0, or -1 with run->err. */
static int stage_dataset(struct run *run, size_t i)
{
	struct job *job = run->job;
	const struct profile_dataset *ds = &job->profile->datasets[i];
	struct stage_owner owners[2];
	size_t n, k;
	int r = -1;

	if (tiers_index(run->s->agent->tiers, ds->tier) < 0) {
		snprintf(run->err, sizeof(run->err),
			 "dataset '%s': unknown tier '%s'", ds->name, ds->tier);
		goto out;
	}
	if (jobs_cancelled(job, run->err, sizeof(run->err)))
		goto out;
	n = stage_plan_owners(&run->s->public_account, job->uid, job->gid,
			      job->user, ds->path, owners);
	for (k = 0; k < n; k++) {
		r = stage_entry(run, i, &owners[k]);
		if (r == 0 || k + 1 == n)
			break;
		if (jobs_cancelled(job, NULL, 0) ||
		    ms_left(&run->deadline) <= 0)
			break;
		log_info("job %u: dataset '%s': not shared across users, "
			 "staged for %s alone: %s",
			 job->id, ds->name, job->user, run->err);
		run->err[0] = '\0';
	}
out:
	if (r < 0) {
		if (!run->err[0])
			jobs_cancelled(job, run->err, sizeof(run->err));
		jobs_dataset_result(job, i, JOB_DS_FAILED, "", 0, 0, 0);
	}
	return r;
}

int stage_public_account(const struct conf *conf, struct stage_account *ret,
			 char *err, size_t errlen)
{
	struct stage_account acc = { .ok = false };
	struct passwd pw, *res = NULL;
	char buf[4096];
	int e;

	if (!conf->public_datasets)
		goto out;
	e = getpwnam_r(conf->public_user, &pw, buf, sizeof(buf), &res);
	if (!res) {
		snprintf(err, errlen,
			 "PublicUser=%s: %s (PublicDatasets=no turns public "
			 "datasets off)",
			 conf->public_user, e ? strerror(e) : "no such user");
		return -1;
	}
	if (pw.pw_uid == 0 || pw.pw_gid == 0) {
		snprintf(err, errlen,
			 "PublicUser=%s: uid %u, gid %u: it must be an "
			 "unprivileged account (public copies are built as it)",
			 conf->public_user, (unsigned)pw.pw_uid,
			 (unsigned)pw.pw_gid);
		return -1;
	}
	acc.uid = pw.pw_uid;
	acc.gid = pw.pw_gid;
	snprintf(acc.name, sizeof(acc.name), "%s", pw.pw_name);
	acc.ok = true;
out:
	if (ret)
		*ret = acc;
	return 0;
}

static void *stage_thread(void *arg)
{
	struct run *run = arg;
	struct job *job = run->job;
	struct timespec t0, t1;
	char size[32];
	size_t i, n = job->profile->ndatasets;
	bool ok = true;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	run->started_ns = cache_now_ns();
	run->timeout_s = job->profile->timeout ? job->profile->timeout
					       : run->s->conf->stage_timeout;
	run->deadline = t0;
	run->deadline.tv_sec += run->timeout_s;
	for (i = 0; i < n && ok; i++)
		ok = stage_dataset(run, i) == 0;
	clock_gettime(CLOCK_MONOTONIC, &t1);
	stats_job_staged(run->s->agent->stats, job->id, job->uid, job->prestage,
			 ok,
			 (double)(t1.tv_sec - t0.tv_sec) +
			     (double)(t1.tv_nsec - t0.tv_nsec) / 1e9,
			 run->done_bytes, run->done_files, run->cached_bytes);
	if (ok) {
		log_info("job %u: staged %zu dataset%s, %s in %.1f s", job->id,
			 n, n == 1 ? "" : "s",
			 units_bytes(run->done_bytes, size, sizeof(size)),
			 (double)(t1.tv_sec - t0.tv_sec) +
			     (double)(t1.tv_nsec - t0.tv_nsec) / 1e9);
	} else {
		log_warningx("job %u: staging failed: %s", job->id, run->err);
		if (!job->prestage)
			jobs_cleanup_failed(job);
	}
	jobs_staging_exit(job, ok, run->err); /* job and table: not ours */
	free(run);
	return NULL;
}

/* --- starting
 * ----------------------------------------------------------------- */

static void remove_dirs(struct stage *s, const struct job *job, size_t upto)
{
	char err[CONF_ERR_MAX];
	size_t t;

	for (t = 0; t < upto; t++)
		if (job->tiers[t] &&
		    tiers_remove_job_dir(s->agent->tiers, (int)t, job->id, err,
					 sizeof(err)) < 0)
			log_warningx("job %u: %s", job->id, err);
}

int stage_start(struct stage *s, struct job *job, char *err, size_t errlen)
{
	const struct conf_tier *home = joblayout_home_tier(s->conf,
							   job->profile);
	int home_t = tiers_index(s->agent->tiers, home->name);
	pthread_attr_t attr;
	pthread_t thread;
	struct run *run;
	size_t t;
	int r;

	for (t = 0; t < s->conf->ntiers && !job->prestage; t++) {
		if (!job->tiers[t])
			continue;
		if (tiers_make_job_dir(s->agent->tiers, (int)t, job->id,
				       job->uid, job->gid, (int)t == home_t,
				       err, errlen) < 0) {
			remove_dirs(s, job, t);
			return -1;
		}
	}
	run = calloc(1, sizeof(*run));
	if (!run) {
		snprintf(err, errlen, "out of memory");
		remove_dirs(s, job, s->conf->ntiers);
		errno = ENOMEM;
		return -1;
	}
	run->s = s;
	run->listing_fd = -1;
	run->job = job;
	/* drain.c: TIER/jobs/J/out/NAME per output, watched from now on (an
	 * agent without a drain, a test's, leaves outputs alone). */
	if (!job->prestage && s->agent->drain &&
	    drain_job_start(s->agent->drain, job, false, err, errlen) < 0) {
		free(run);
		remove_dirs(s, job, s->conf->ntiers);
		return -1;
	}
	jobs_hold(job); /* the thread's */
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	r = pthread_create(&thread, &attr, stage_thread, run);
	pthread_attr_destroy(&attr);
	if (r != 0) {
		snprintf(err, errlen, "cannot start a staging thread: %s",
			 strerror(r));
		free(run);
		jobs_put(job);
		if (s->agent->drain)
			drain_job_forget(s->agent->drain, job->id);
		if (!job->prestage)
			remove_dirs(s, job, s->conf->ntiers);
		errno = r;
		return -1;
	}
	return 0;
}
