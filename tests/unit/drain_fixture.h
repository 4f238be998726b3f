/* drain_fixture.h - a drain driven by hand, for the drain's unit tests
 * (tests/unit/check_drain_*.c).
 *
 * A fixture is a drain made by drain_alloc (no thread, no inotify, no
 * records) holding one job made by hand with NOUTS outputs, as
 * drain_djob_create would make it for a job whose outputs are drained at
 * the end (nothing watched). The test plays the loop (it calls the
 * scheduling and reading functions itself, with the times it chooses) and
 * the workers: d->spawn is replaced by dfx_spawn, which makes two pipes
 * (the worker's stdin, which the test reads commands from; its stdout,
 * which the test writes lines to) and forks a child that holds none of
 * them and only waits to be killed, so that what the drain does to a
 * worker's process (kill, waitpid) happens to a real child of the test.
 * No process runs as anybody else; nothing needs root.
 *
 * Everything here is static inline (each test links what it uses); a
 * failing step fails the test through ck_assert.
 */
#ifndef IOSTAGE_TESTS_DRAIN_FIXTURE_H
#define IOSTAGE_TESTS_DRAIN_FIXTURE_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <check.h>

#include "common/config/conf.h"
#include "daemon/staging/drain_internal.h"

#define DFX_MAX_CHILDREN 64

struct dfx {
	struct conf conf;
	struct drain *d;
	struct djob *dj;
	/* the current worker of each output, as the test sees it */
	int cmd_r[PROFILE_MAX_OUTPUTS]; /* its stdin: commands to read */
	int res_w[PROFILE_MAX_OUTPUTS]; /* its stdout: lines to write */
	/* every child ever forked, to be killed and reaped at the end */
	pid_t children[DFX_MAX_CHILDREN];
	size_t nchildren;
	unsigned spawns;  /* dfx_spawn calls */
	bool spawn_fails; /* dfx_spawn refuses, as spawn_as_user may */
};

/* d->spawn has no argument of its own: the fixture in use. */
static struct dfx *dfx_current;

static inline int dfx_spawn(const struct dout *o, struct spawn_proc *ret,
			    char *err, size_t errlen)
{
	struct dfx *fx = dfx_current;
	size_t i = (size_t)(o - o->job->outs);
	int in[2], out[2];
	pid_t pid;

	fx->spawns++;
	if (fx->spawn_fails) {
		snprintf(err, errlen, "cannot start the drain worker: test");
		return -1;
	}
	ck_assert_int_eq(pipe2(in, O_CLOEXEC), 0);
	ck_assert_int_eq(pipe2(out, O_CLOEXEC), 0);
	/* room for an overlong line in one write */
	fcntl(out[1], F_SETPIPE_SZ, 4 * DRAIN_LINE_MAX);
	ck_assert_uint_lt(fx->nchildren, DFX_MAX_CHILDREN);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		/* holds no pipe: its EOF is the test's close; and
		 * none of the test runner's handlers (Check's SIGTERM
		 * handler signals the whole process group: the tests
		 * only ever send SIGKILL, which none can catch) */
		close_range(3, ~0U, 0);
		for (int sig = 1; sig < NSIG; sig++)
			signal(sig, SIG_DFL);
		for (;;)
			pause();
	}
	fx->children[fx->nchildren++] = pid;
	if (fx->cmd_r[i] >= 0)
		close(fx->cmd_r[i]);
	if (fx->res_w[i] >= 0)
		close(fx->res_w[i]);
	fx->cmd_r[i] = in[0];
	fx->res_w[i] = out[1];
	fcntl(in[0], F_SETFL, O_NONBLOCK);
	ret->pid = pid;
	ret->in = in[1];
	ret->out = out[0];
	return 0;
}

static inline void dfx_init(struct dfx *fx, size_t nouts)
{
	memset(fx, 0, sizeof(*fx));
	signal(SIGPIPE, SIG_IGN);
	for (size_t i = 0; i < PROFILE_MAX_OUTPUTS; i++)
		fx->cmd_r[i] = fx->res_w[i] = -1;
	fx->d = drain_alloc(NULL, &fx->conf);
	ck_assert_ptr_nonnull(fx->d);
	fx->d->spawn = dfx_spawn;
	dfx_current = fx;
	fx->dj = calloc(1, sizeof(*fx->dj));
	ck_assert_ptr_nonnull(fx->dj);
	fx->dj->drain = fx->d;
	fx->dj->id = 42;
	fx->dj->uid = getuid();
	fx->dj->gid = getgid();
	snprintf(fx->dj->user, sizeof(fx->dj->user), "alice");
	fx->dj->nouts = nouts;
	for (size_t i = 0; i < nouts; i++) {
		struct dout *o = &fx->dj->outs[i];

		o->job = fx->dj;
		snprintf(o->name, sizeof(o->name), "out%zu", i);
		snprintf(o->local, sizeof(o->local), "/tier/jobs/42/out/out%zu",
			 i);
		snprintf(o->pfs, sizeof(o->pfs), "/pfs/out%zu", i);
		o->root_fd = o->in = o->out = -1;
	}
	fx->dj->next = fx->d->djobs;
	fx->d->djobs = fx->dj;
}

/* Start O's worker as drain_loop.c's worker_start would (for tests of
 * the reading side, which start none themselves). */
static inline void dfx_start_worker(struct dfx *fx, struct dout *o)
{
	struct spawn_proc p;
	char err[256];

	ck_assert_int_eq(fx->d->spawn(o, &p, err, sizeof(err)), 0);
	o->pid = p.pid;
	o->in = p.in;
	o->out = p.out;
	o->lbuf = malloc(DRAIN_LINE_MAX);
	ck_assert_ptr_nonnull(o->lbuf);
	o->llen = 0;
	fcntl(o->out, F_SETFL, O_NONBLOCK);
}

/* The worker of output I writes TEXT. */
static inline void dfx_say(struct dfx *fx, size_t i, const char *text)
{
	size_t len = strlen(text);

	ck_assert_int_ge(fx->res_w[i], 0);
	ck_assert_int_eq(write(fx->res_w[i], text, len), (ssize_t)len);
}

static inline void dfx_worker_says(struct dfx *fx, const char *text)
{
	dfx_say(fx, 0, text);
}

/* The worker of output I closes its stdout (it exited). */
static inline void dfx_eof(struct dfx *fx, size_t i)
{
	ck_assert_int_ge(fx->res_w[i], 0);
	close(fx->res_w[i]);
	fx->res_w[i] = -1;
}

/* The command the drain sent to output I's worker ("" when none is
 * waiting) into BUF, without its newline. */
static inline const char *dfx_command(struct dfx *fx, size_t i, char *buf,
				      size_t len)
{
	ssize_t n;

	buf[0] = '\0';
	if (fx->cmd_r[i] < 0)
		return buf;
	n = read(fx->cmd_r[i], buf, len - 1);
	if (n < 0) {
		ck_assert_int_eq(errno, EAGAIN);
		n = 0;
	}
	buf[n] = '\0';
	if (n > 0) {
		ck_assert_msg(buf[n - 1] == '\n', "unterminated: %s", buf);
		buf[n - 1] = '\0';
		ck_assert_msg(!strchr(buf, '\n'), "two commands: %s", buf);
	}
	return buf;
}

/* Wait, without reaping, for child PID to end: the signal that killed
 * it, or 0 when it exited. */
static inline int dfx_wait_exit(pid_t pid)
{
	siginfo_t si;

	memset(&si, 0, sizeof(si));
	ck_assert_int_eq(waitid(P_PID, (id_t)pid, &si, WEXITED | WNOWAIT), 0);
	return si.si_code == CLD_EXITED ? 0 : si.si_status;
}

/* Kill child PID (if still ours and running) and wait for it to end,
 * without reaping it: what a worker that dies looks like to the drain. */
static inline void dfx_kill(pid_t pid)
{
	ck_assert_int_gt(pid, 0);
	ck_assert_int_eq(kill(pid, SIGKILL), 0);
	ck_assert_int_eq(dfx_wait_exit(pid), SIGKILL);
}

/* Is PID a child of ours not yet reaped? */
static inline bool dfx_unreaped(pid_t pid)
{
	siginfo_t si;

	memset(&si, 0, sizeof(si));
	return waitid(P_PID, (id_t)pid, &si, WEXITED | WNOHANG | WNOWAIT) == 0;
}

static inline void dfx_fini(struct dfx *fx)
{
	for (size_t i = 0; i < fx->dj->nouts; i++)
		if (fx->dj->outs[i].pid > 0)
			drain_worker_release(&fx->dj->outs[i], true);
	/* children the drain did not reap: killed (only ours), reaped */
	for (size_t c = 0; c < fx->nchildren; c++) {
		if (!dfx_unreaped(fx->children[c]))
			continue;
		kill(fx->children[c], SIGKILL);
		waitpid(fx->children[c], NULL, 0);
	}
	drain_destroy(fx->d); /* frees the job and the zombie list */
	for (size_t i = 0; i < PROFILE_MAX_OUTPUTS; i++) {
		if (fx->cmd_r[i] >= 0)
			close(fx->cmd_r[i]);
		if (fx->res_w[i] >= 0)
			close(fx->res_w[i]);
	}
	dfx_current = NULL;
}

#endif /* IOSTAGE_TESTS_DRAIN_FIXTURE_H */
