/* stage.c - the staging thread of a job and the workers it runs.
 *
 * Why a separate process per dataset: the copy must happen with the job
 * user's permissions, so that nobody can stage a file they could not read
 * and nothing the user controls can steer root's writes. setfsuid() would
 * be per-thread and easy to get wrong across helper libraries; a worker
 * that has fully dropped privileges (setgroups + setresgid + setresuid,
 * verified) cannot do anything the user could not do anyway.
 *
 * The fork happens in a multi-threaded process, so between fork() and
 * fexecve() the child only makes async-signal-safe calls (raw syscalls,
 * dup2, write, _exit); everything it needs (group list, argv, envp) is
 * prepared before the fork.
 *
 * Everything the worker prints is untrusted (it runs as the user, who may
 * ptrace it): lines are bounded by proto_read_line, numbers are only ever
 * added up for status, and strings are made printable and one-line before
 * they reach logs or replies.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
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

#include "common/joblayout.h"
#include "common/log.h"
#include "common/proto.h"
#include "common/units.h"
#include "daemon/stage.h"
#include "daemon/tiers.h"

#define STAGE_NGROUPS_MAX 65536 /* the kernel's NGROUPS_MAX */

#ifndef CLOSE_RANGE_CLOEXEC
#define CLOSE_RANGE_CLOEXEC (1U << 2)
#endif

static const struct conf *stage_conf;
static int exe_fd = -1;

/* One running worker. */
struct worker {
	pid_t pid;
	int out;  /* its stdout, our read end */
	int in;   /* its stdin, our write end; -1 once closed */
};

/* What the child needs, prepared before fork(). */
struct spawn {
	uid_t uid;
	gid_t gid;
	gid_t *groups;
	size_t ngroups;
	pid_t parent;
	int in_r, out_w;
	char *const *argv;
	char *const *envp;
};

/* A staging thread's state. */
struct run {
	struct job *job;
	struct timespec deadline;
	unsigned timeout_s;
	uint64_t done_bytes, done_files; /* datasets finished */
	char err[CONF_ERR_MAX];
};

int stage_init(const struct conf *conf, char *err, size_t errlen)
{
	exe_fd = open("/proc/self/exe", O_RDONLY | O_CLOEXEC);
	if (exe_fd < 0) {
		snprintf(err, errlen, "cannot open /proc/self/exe: %s",
			 strerror(errno));
		return -1;
	}
	stage_conf = conf;
	return 0;
}

void stage_fini(void)
{
	if (exe_fd >= 0)
		close(exe_fd);
	exe_fd = -1;
}

/* Make S one printable line in place (worker output is untrusted). */
static void sanitize(char *s)
{
	for (; *s; s++)
		if ((unsigned char)*s < 0x20 || *s == 0x7f)
			*s = '?';
}

static long ms_left(const struct timespec *deadline)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	return (long)(deadline->tv_sec - now.tv_sec) * 1000 +
	       (deadline->tv_nsec - now.tv_nsec) / 1000000;
}

/* --- the child, between fork and exec ---------------------------------------- */

#define CHILD_FAIL(msg)                                                      \
	do {                                                                 \
		static const char m[] =                                      \
			"{\"ok\":false,\"error\":\"stage worker: " msg "\"}\n"; \
		ssize_t ignored_ = write(1, m, sizeof(m) - 1);               \
		(void)ignored_;                                              \
		_exit(127);                                                  \
	} while (0)

/* Only async-signal-safe calls from here to fexecve. */
static void __attribute__((noreturn)) child_exec(const struct spawn *sp)
{
	struct sigaction dfl;
	sigset_t none;

	if (dup2(sp->out_w, 1) < 0 || dup2(sp->in_r, 0) < 0)
		_exit(127);
	/* The daemon ignores SIGPIPE and blocks SIGTERM/SIGINT/SIGHUP; the
	 * worker should die from them like any process. */
	memset(&dfl, 0, sizeof(dfl));
	dfl.sa_handler = SIG_DFL;
	sigaction(SIGPIPE, &dfl, NULL);
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	/* All our fds are O_CLOEXEC already; this is the safety net for one
	 * a library might have opened without it. */
	(void)syscall(SYS_close_range, 3U, ~0U, CLOSE_RANGE_CLOEXEC);

	/* Raw syscalls: glibc's wrappers would try to act on every thread
	 * of the parent, which do not exist in this child. */
	if (syscall(SYS_setgroups, sp->ngroups, sp->groups) < 0)
		CHILD_FAIL("cannot set supplementary groups");
	if (syscall(SYS_setresgid, sp->gid, sp->gid, sp->gid) < 0)
		CHILD_FAIL("cannot set gid");
	if (syscall(SYS_setresuid, sp->uid, sp->uid, sp->uid) < 0)
		CHILD_FAIL("cannot set uid");
	if (sp->uid != 0 &&
	    (syscall(SYS_setuid, 0) != -1 || geteuid() != sp->uid ||
	     getuid() != sp->uid || getegid() != sp->gid))
		CHILD_FAIL("privileges were not dropped");
	/* Die with the staging thread; set after setresuid, which clears
	 * it. */
	if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0 || getppid() != sp->parent)
		_exit(127);
	if (chdir("/") < 0)
		CHILD_FAIL("cannot chdir to /");
	umask(077);
	fexecve(exe_fd, sp->argv, sp->envp);
	CHILD_FAIL("cannot execute iostaged");
}

/* --- spawning and following a worker ------------------------------------------- */

/* JOB's supplementary groups; caller frees *ret. */
static int job_groups(const struct job *job, gid_t **ret, size_t *ret_n)
{
	int n = 32;
	gid_t *groups = NULL;

	for (;;) {
		gid_t *g = realloc(groups, sizeof(gid_t) * (size_t)n);
		int want = n;

		if (!g) {
			free(groups);
			return -1;
		}
		groups = g;
		if (getgrouplist(job->user, job->gid, groups, &want) >= 0) {
			*ret = groups;
			*ret_n = (size_t)want;
			return 0;
		}
		if (want <= n || want > STAGE_NGROUPS_MAX) {
			free(groups);
			errno = E2BIG;
			return -1;
		}
		n = want;
	}
}

static int worker_spawn(const struct job *job, const char *src,
			const char *dstdir, const char *name, struct worker *ret,
			char *err, size_t errlen)
{
	char *argv[] = { "iostaged", "--stage-worker", (char *)src,
			 (char *)dstdir, (char *)name, NULL };
	char *envp[] = { "PATH=/usr/sbin:/usr/bin:/sbin:/bin", "LC_ALL=C",
			 "IOSTAGE_STAGE_GATE=1", NULL };
	int inp[2] = { -1, -1 }, outp[2] = { -1, -1 };
	struct spawn sp;
	gid_t *groups = NULL;
	size_t ngroups = 0;
	pid_t pid;
	int saved;

	if (job_groups(job, &groups, &ngroups) < 0) {
		snprintf(err, errlen, "cannot list the groups of user '%s': %s",
			 job->user, strerror(errno));
		return -1;
	}
	if (pipe2(inp, O_CLOEXEC) < 0 || pipe2(outp, O_CLOEXEC) < 0)
		goto fail;
	sp = (struct spawn){
		.uid = job->uid,
		.gid = job->gid,
		.groups = groups,
		.ngroups = ngroups,
		.parent = getpid(),
		.in_r = inp[0],
		.out_w = outp[1],
		.argv = argv,
		.envp = envp,
	};
	pid = fork();
	if (pid < 0)
		goto fail;
	if (pid == 0)
		child_exec(&sp);
	close(inp[0]);
	close(outp[1]);
	free(groups);
	ret->pid = pid;
	ret->out = outp[0];
	ret->in = inp[1];
	return 0;
fail:
	saved = errno;
	snprintf(err, errlen, "cannot start a stage worker: %s",
		 strerror(saved));
	for (int i = 0; i < 2; i++) {
		if (inp[i] >= 0)
			close(inp[i]);
		if (outp[i] >= 0)
			close(outp[i]);
	}
	free(groups);
	errno = saved;
	return -1;
}

/* What came out of one worker. */
struct outcome {
	bool got_result, result_ok;
	char worker_err[CONF_ERR_MAX]; /* the worker's own error */
	char err[CONF_ERR_MAX];        /* ours: capacity, timeout, protocol */
	uint64_t reserved;             /* bytes reserved on the tier */
	uint64_t bytes, files;         /* final figures from the worker */
};

static uint64_t num(const cJSON *o, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);

	if (!cJSON_IsNumber(v) || !(v->valuedouble >= 0) ||
	    v->valuedouble > 1e18)
		return 0;
	return (uint64_t)v->valuedouble;
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
		      const struct profile_dataset *ds, const cJSON *m,
		      struct outcome *o)
{
	const cJSON *ok = cJSON_GetObjectItemCaseSensitive(m, "ok");
	const cJSON *note = cJSON_GetObjectItemCaseSensitive(m, "note");
	const cJSON *error = cJSON_GetObjectItemCaseSensitive(m, "error");
	struct job *job = run->job;

	if (cJSON_IsBool(ok)) {
		o->got_result = true;
		o->result_ok = cJSON_IsTrue(ok);
		o->bytes = num(m, "bytes");
		o->files = num(m, "files");
		if (!o->result_ok) {
			snprintf(o->worker_err, sizeof(o->worker_err), "%s",
				 cJSON_IsString(error) ? error->valuestring
						       : "copy failed");
			sanitize(o->worker_err);
		}
		return 0;
	}
	if (cJSON_IsString(note)) {
		char buf[CONF_ERR_MAX];

		snprintf(buf, sizeof(buf), "%s", note->valuestring);
		sanitize(buf);
		log_info("job %u: dataset '%s': %s", job->id, ds->name, buf);
		return 0;
	}
	if (cJSON_GetObjectItemCaseSensitive(m, "total_bytes")) {
		uint64_t total = num(m, "total_bytes");

		if (w->in < 0)
			return 0; /* a second totals line: ignore */
		jobs_add_totals(job, total, num(m, "total_files"));
		if (tiers_reserve(tier, ds->name, total, o->err,
				  sizeof(o->err)) < 0) {
			close_in(w); /* no "go": the worker cancels */
			return -1;
		}
		o->reserved = total;
		if (write(w->in, "go\n", 3) != 3) {
			snprintf(o->err, sizeof(o->err),
				 "stage worker for dataset '%s' went away",
				 ds->name);
			close_in(w);
			return -1;
		}
		close_in(w);
		return 0;
	}
	if (cJSON_GetObjectItemCaseSensitive(m, "bytes")) {
		jobs_progress(job, run->done_bytes + num(m, "bytes"),
			      run->done_files + num(m, "files"));
		return 0;
	}
	return 0; /* unknown keys: newer worker, ignore */
}

/* Read the worker's output until EOF, the deadline or a reason to stop. */
static void follow(struct run *run, struct worker *w, int tier,
		   const struct profile_dataset *ds, struct outcome *o)
{
	struct proto_reader *rd = proto_reader_create(w->out);
	char *line;

	if (!rd) {
		snprintf(o->err, sizeof(o->err), "out of memory");
		kill(w->pid, SIGKILL);
		return;
	}
	for (;;) {
		long left = ms_left(&run->deadline);
		cJSON *m;
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
		m = cJSON_Parse(line);
		if (!cJSON_IsObject(m)) {
			cJSON_Delete(m);
			snprintf(o->err, sizeof(o->err),
				 "stage worker for dataset '%s' sent "
				 "malformed output",
				 ds->name);
			kill(w->pid, SIGKILL);
			break;
		}
		r = on_message(run, w, tier, ds, m, o);
		cJSON_Delete(m);
		if (r < 0)
			break;
	}
	proto_reader_destroy(rd);
}

static void describe_exit(int status, const char *name, char *buf,
			  size_t len)
{
	if (WIFSIGNALED(status))
		snprintf(buf, len,
			 "stage worker for dataset '%s' was killed by signal %d",
			 name, WTERMSIG(status));
	else if (WIFEXITED(status) && WEXITSTATUS(status) != 0)
		snprintf(buf, len,
			 "stage worker for dataset '%s' exited with status %d",
			 name, WEXITSTATUS(status));
	else
		snprintf(buf, len,
			 "stage worker for dataset '%s' exited without a result",
			 name);
}

/* Stage dataset I of RUN's job. 0, or -1 with run->err. */
static int stage_dataset(struct run *run, size_t i)
{
	struct job *job = run->job;
	const struct profile_dataset *ds = &job->profile->datasets[i];
	const struct conf_tier *tier = conf_find_tier(stage_conf, ds->tier);
	int t = tiers_index(ds->tier);
	char dstdir[CONF_PATH_MAX + 32], rmerr[CONF_ERR_MAX];
	struct outcome o;
	struct worker w;
	int status = 0;

	memset(&o, 0, sizeof(o));
	if (!tier || t < 0) {
		snprintf(run->err, sizeof(run->err),
			 "dataset '%s': unknown tier '%s'", ds->name, ds->tier);
		return -1;
	}
	if (joblayout_job_dir(tier, job->id, dstdir, sizeof(dstdir) - 5) < 0) {
		snprintf(run->err, sizeof(run->err),
			 "dataset '%s': job directory path too long", ds->name);
		return -1;
	}
	strcat(dstdir, "/data");
	if (jobs_cancelled(job, run->err, sizeof(run->err)))
		return -1;
	if (worker_spawn(job, ds->path, dstdir, ds->name, &w, run->err,
			 sizeof(run->err)) < 0)
		return -1;
	log_debug("job %u: worker %d stages '%s' from %s", job->id, (int)w.pid,
		  ds->name, ds->path);
	if (jobs_set_worker(job, w.pid) < 0)
		kill(w.pid, SIGKILL); /* cancelled while we forked */
	follow(run, &w, t, ds, &o);
	close_in(&w);
	close(w.out);
	/* Forget the pid before reaping it, so that nobody can signal a
	 * recycled pid. */
	jobs_clear_worker(job);
	while (waitpid(w.pid, &status, 0) < 0 && errno == EINTR)
		;
	if (o.reserved)
		tiers_release(t, o.reserved);

	if (!jobs_cancelled(job, run->err, sizeof(run->err))) {
		if (o.err[0]) {
			snprintf(run->err, sizeof(run->err), "%s", o.err);
		} else if (o.got_result && !o.result_ok) {
			snprintf(run->err, sizeof(run->err), "%s",
				 o.worker_err);
		} else if (o.got_result && WIFEXITED(status) &&
			   WEXITSTATUS(status) == 0) {
			jobs_dataset_done(job, t, o.bytes, o.files);
			run->done_bytes += o.bytes;
			run->done_files += o.files;
			jobs_progress(job, run->done_bytes, run->done_files);
			return 0;
		} else {
			describe_exit(status, ds->name, run->err,
				      sizeof(run->err));
		}
	}
	/* The worker removes its own partial copy when it fails, but not
	 * when it was killed. */
	if (tiers_remove_partial(t, job->id, ds->name, rmerr, sizeof(rmerr)) < 0)
		log_warningx("job %u: %s", job->id, rmerr);
	return -1;
}

static void *stage_thread(void *arg)
{
	struct run run = { .job = arg };
	struct job *job = run.job;
	struct timespec t0, t1;
	char size[32];
	size_t i, n = job->profile->ndatasets;
	bool ok = true;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	run.timeout_s = job->profile->timeout ? job->profile->timeout
					      : stage_conf->stage_timeout;
	run.deadline = t0;
	run.deadline.tv_sec += run.timeout_s;
	for (i = 0; i < n && ok; i++)
		ok = stage_dataset(&run, i) == 0;
	clock_gettime(CLOCK_MONOTONIC, &t1);
	if (ok) {
		log_info("job %u: staged %zu dataset%s, %s in %.1f s", job->id,
			 n, n == 1 ? "" : "s",
			 units_bytes(run.done_bytes, size, sizeof(size)),
			 (double)(t1.tv_sec - t0.tv_sec) +
				 (double)(t1.tv_nsec - t0.tv_nsec) / 1e9);
	} else {
		log_warningx("job %u: staging failed: %s", job->id, run.err);
		jobs_cleanup_failed(job);
	}
	jobs_staging_done(job, ok, run.err);
	jobs_put(job);
	return NULL;
}

/* --- starting ----------------------------------------------------------------- */

static void remove_dirs(const struct job *job, size_t upto)
{
	char err[CONF_ERR_MAX];
	size_t t;

	for (t = 0; t < upto; t++)
		if (job->tiers[t] &&
		    tiers_remove_job_dir((int)t, job->id, err, sizeof(err)) < 0)
			log_warningx("job %u: %s", job->id, err);
}

int stage_start(struct job *job, char *err, size_t errlen)
{
	const struct conf_tier *home =
		joblayout_home_tier(stage_conf, job->profile);
	int home_t = tiers_index(home->name);
	pthread_attr_t attr;
	pthread_t thread;
	size_t t;
	int r;

	for (t = 0; t < stage_conf->ntiers; t++) {
		if (!job->tiers[t])
			continue;
		if (tiers_make_job_dir((int)t, job->id, job->uid, job->gid,
				       (int)t == home_t, err, errlen) < 0) {
			remove_dirs(job, t);
			return -1;
		}
	}
	jobs_hold(job); /* the thread's */
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	r = pthread_create(&thread, &attr, stage_thread, job);
	pthread_attr_destroy(&attr);
	if (r != 0) {
		snprintf(err, errlen, "cannot start a staging thread: %s",
			 strerror(r));
		jobs_put(job);
		remove_dirs(job, stage_conf->ntiers);
		errno = r;
		return -1;
	}
	return 0;
}
