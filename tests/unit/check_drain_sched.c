/* check_drain_sched.c - unit tests for the drain's scheduling
 * (daemon/staging/drain_queue.c, and drain_loop.c's workers and phases).
 *
 * Which file goes when: a closed file settles DRAIN_SETTLE_MS first, at
 * the end nothing waits; in which order (as queued; a scan covers the
 * files below it; a burst becomes one scan); one command in flight per
 * worker, so a file rewritten while it is copied goes again after; a
 * worker that dies is restarted with a scan up to DRAIN_RESTARTS_MAX
 * times, then its output fails and keeps its files; the end phase (final
 * scan, stdin closed, done); abandoning at the deadline; zombies reaped
 * once they have exited.
 *
 * The decision is tested as the pure function it is (drain_next_action,
 * at times the test picks: no test waits on a clock); the rest through
 * the drain's own functions on a job made by hand, with the workers played
 * by the test (tests/unit/drain_fixture.h). Unprivileged, except the last
 * case: a whole drain made as iostaged makes it, which needs a root-owned
 * StateDir.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <check.h>

#include "common/fs/rmtree.h"
#include "daemon/agent.h"
#include "daemon/staging/drain_internal.h"
#include "tests/unit/check_run.h"
#include "tests/unit/drain_fixture.h"
#include "tests/unit/tmp_fixture.h"

/* T plus MS milliseconds. */
static struct timespec at(const struct timespec *t, long ms)
{
	struct timespec r = *t;

	r.tv_nsec += (ms % 1000) * 1000000L;
	r.tv_sec += ms / 1000;
	if (r.tv_nsec >= 1000000000L) {
		r.tv_nsec -= 1000000000L;
		r.tv_sec++;
	} else if (r.tv_nsec < 0) {
		r.tv_nsec += 1000000000L;
		r.tv_sec--;
	}
	return r;
}

/* A time at which everything queued so far is ready. */
static struct timespec all_ready(const struct dout *o)
{
	return o->tail ? at(&o->tail->ready, 1) : (struct timespec){ 0, 0 };
}

static size_t queued(const struct dout *o, const char **rels, bool *scans,
		     size_t max)
{
	size_t n = 0;

	for (const struct drain_item *it = o->head; it && n < max;
	     it = it->next, n++) {
		rels[n] = it->rel;
		scans[n] = it->scan;
	}
	return n;
}

/* --- which file goes when ------------------------------------------------- */

START_TEST(test_closed_file_settles_first)
{
	struct timespec t0;
	struct dfx fx;
	struct dout *o;

	dfx_init(&fx, 1);
	o = &fx.dj->outs[0];
	clock_gettime(CLOCK_MONOTONIC, &t0);
	ck_assert_int_eq(drain_next_action(o, &t0), DRAIN_ACT_NONE); /* empty */
	clock_gettime(CLOCK_MONOTONIC, &t0);
	drain_enqueue(o, "ckpt.pt", false, false);
	ck_assert_uint_eq(o->nqueued, 1);
	/* ready DRAIN_SETTLE_MS after it was queued, not before */
	ck_assert_int_ge(drain_ms_until(&o->head->ready, &t0),
			 DRAIN_SETTLE_MS - 1);
	t0 = at(&o->head->ready, -1);
	ck_assert_int_eq(drain_next_action(o, &t0), DRAIN_ACT_NONE);
	ck_assert_int_eq(drain_out_wait_ms(o, &t0), 1);
	t0 = at(&t0, -249);
	ck_assert_int_eq(drain_out_wait_ms(o, &t0), 250);
	ck_assert_int_eq(drain_next_action(o, &o->head->ready), DRAIN_ACT_SEND);
	ck_assert_int_eq(drain_out_wait_ms(o, &o->head->ready), 0);
	/* at the end nothing waits */
	t0 = at(&o->head->ready, -DRAIN_SETTLE_MS);
	fx.dj->phase = DRAIN_ENDING;
	ck_assert_int_eq(drain_next_action(o, &t0), DRAIN_ACT_SEND);
	ck_assert_int_eq(drain_out_wait_ms(o, &t0), 0);
	dfx_fini(&fx);
}
END_TEST

/* Nothing is sent to a busy worker, a failed or done output, or one told
 * to exit. */
START_TEST(test_nothing_sent_when_not_free)
{
	struct timespec now;
	struct dfx fx;
	struct dout *o;

	dfx_init(&fx, 1);
	o = &fx.dj->outs[0];
	drain_enqueue(o, "a", false, false);
	now = all_ready(o);
	ck_assert_int_eq(drain_next_action(o, &now), DRAIN_ACT_SEND);
	switch (_i) {
	case 0:
		o->busy = true;
		break;
	case 1:
		o->failed = true;
		break;
	case 2:
		o->done = true;
		break;
	default:
		o->stdin_closed = true;
		break;
	}
	ck_assert_int_eq(drain_next_action(o, &now), DRAIN_ACT_NONE);
	ck_assert_int_eq(drain_out_wait_ms(o, &now), -1);
	dfx_fini(&fx);
}
END_TEST

/* --- order ------------------------------------------------------------------
 */

START_TEST(test_order_as_queued)
{
	static const char *const want[] = { "b", "a", "d", "c/x" };
	const char *rels[8];
	bool scans[8];
	struct timespec now;
	char cmd[256], exp[64];
	struct dfx fx;
	struct dout *o;

	dfx_init(&fx, 1);
	o = &fx.dj->outs[0];
	drain_enqueue(o, "b", false, false);
	drain_enqueue(o, "a", false, false);
	drain_enqueue(o, "d", true, false);
	drain_enqueue(o, "c/x", false, false);
	ck_assert_uint_eq(queued(o, rels, scans, 8), 4);
	now = all_ready(o);
	for (size_t i = 0; i < 4; i++) {
		drain_schedule(o, &now);
		ck_assert(o->busy);
		snprintf(exp, sizeof(exp), "{\"%s\":\"%s\"}",
			 i == 2 ? "scan" : "file", want[i]);
		ck_assert_str_eq(dfx_command(&fx, 0, cmd, sizeof(cmd)), exp);
		/* one at a time: nothing more until it is done */
		drain_schedule(o, &now);
		ck_assert_str_eq(dfx_command(&fx, 0, cmd, sizeof(cmd)), "");
		dfx_worker_says(&fx, "{\"done\":true}\n");
		drain_worker_read(o);
		ck_assert(!o->busy);
	}
	ck_assert_uint_eq(fx.spawns, 1); /* one worker for all */
	ck_assert_uint_eq(o->nqueued, 0);
	dfx_fini(&fx);
}
END_TEST

START_TEST(test_queue_dedup_and_scan_covers)
{
	const char *rels[8];
	bool scans[8];
	struct dfx fx;
	struct dout *o;
	size_t n;

	dfx_init(&fx, 1);
	o = &fx.dj->outs[0];
	drain_enqueue(o, "f", false, false);
	drain_enqueue(o, "f", false, false); /* the same file again */
	drain_enqueue(o, "d", true, false);
	drain_enqueue(o, "d/x", false, false); /* covered by the scan */
	drain_enqueue(o, "d/e/y", false, false);
	drain_enqueue(o, "dx", false, false); /* not below d */
	drain_enqueue(o, "f", true, false);   /* a scan of f: not the file */
	n = queued(o, rels, scans, 8);
	ck_assert_uint_eq(n, 4);
	ck_assert_str_eq(rels[0], "f");
	ck_assert(!scans[0]);
	ck_assert_str_eq(rels[1], "d");
	ck_assert(scans[1]);
	ck_assert_str_eq(rels[2], "dx");
	ck_assert_str_eq(rels[3], "f");
	ck_assert(scans[3]);
	/* a scan of everything covers any later file; a final scan is
	 * queued whatever is there, and covers nothing */
	drain_queue_clear(o);
	drain_enqueue(o, "", true, false);
	drain_enqueue(o, "a/b", false, false);
	ck_assert_uint_eq(o->nqueued, 1);
	drain_enqueue(o, "", true, true);
	drain_enqueue(o, "", true, true);
	ck_assert_uint_eq(o->nqueued, 3);
	drain_queue_clear(o);
	drain_enqueue(o, "", true, true);
	drain_enqueue(o, "z", false, false);
	ck_assert_uint_eq(o->nqueued, 2);
	/* a failed or done output queues nothing */
	drain_queue_clear(o);
	o->failed = true;
	drain_enqueue(o, "z", false, false);
	o->failed = false;
	o->done = true;
	drain_enqueue(o, "z", false, false);
	ck_assert_uint_eq(o->nqueued, 0);
	dfx_fini(&fx);
}
END_TEST

/* A burst beyond DRAIN_QUEUE_MAX becomes one scan of everything. */
START_TEST(test_burst_becomes_one_scan)
{
	char rel[32];
	struct dfx fx;
	struct dout *o;

	dfx_init(&fx, 1);
	o = &fx.dj->outs[0];
	for (int i = 0; i < DRAIN_QUEUE_MAX; i++) {
		snprintf(rel, sizeof(rel), "f%d", i);
		drain_enqueue(o, rel, false, false);
	}
	ck_assert_uint_eq(o->nqueued, DRAIN_QUEUE_MAX);
	drain_enqueue(o, "one-more", false, false);
	ck_assert_uint_eq(o->nqueued, 1);
	ck_assert(o->head->scan && !o->head->final);
	ck_assert_str_eq(o->head->rel, "");
	ck_assert(fx.dj->queue_full_logged);
	dfx_fini(&fx);
}
END_TEST

/* A file closed again while its copy runs is copied again after it. */
START_TEST(test_rewritten_while_draining_goes_again)
{
	struct timespec now;
	char cmd[256];
	struct dfx fx;
	struct dout *o;

	dfx_init(&fx, 1);
	o = &fx.dj->outs[0];
	drain_enqueue(o, "ckpt", false, false);
	now = all_ready(o);
	drain_schedule(o, &now);
	ck_assert_str_eq(dfx_command(&fx, 0, cmd, sizeof(cmd)),
			 "{\"file\":\"ckpt\"}");
	ck_assert_uint_eq(drain_backlog(fx.dj), 1); /* in flight */
	drain_enqueue(o, "ckpt", false, false);     /* IN_CLOSE_WRITE again */
	ck_assert_uint_eq(o->nqueued, 1);
	ck_assert_uint_eq(drain_backlog(fx.dj), 2);
	now = all_ready(o);
	drain_schedule(o, &now);
	ck_assert_str_eq(dfx_command(&fx, 0, cmd, sizeof(cmd)), "");
	dfx_worker_says(&fx, "{\"path\":\"ckpt\",\"ok\":true,\"bytes\":10}\n"
			     "{\"done\":true,\"files\":1}\n");
	drain_worker_read(o);
	drain_schedule(o, &now);
	ck_assert_str_eq(dfx_command(&fx, 0, cmd, sizeof(cmd)),
			 "{\"file\":\"ckpt\"}");
	dfx_worker_says(&fx, "{\"path\":\"ckpt\",\"ok\":true,\"bytes\":20}\n"
			     "{\"done\":true,\"files\":1}\n");
	drain_worker_read(o);
	ck_assert_uint_eq(o->during_files, 2);
	ck_assert_uint_eq(o->during_bytes, 30);
	ck_assert_uint_eq(drain_backlog(fx.dj), 0);
	dfx_fini(&fx);
}
END_TEST

/* --- retries -----------------------------------------------------------------
 */

/* A worker that dies is replaced, with a scan of everything (which covers
 * what it had in flight), up to DRAIN_RESTARTS_MAX times; then the
 * output fails, its queue dropped, its files left on the tier. */
START_TEST(test_dead_worker_restarted_then_output_fails)
{
	struct timespec now;
	char cmd[256];
	struct dfx fx;
	struct dout *o;
	pid_t pid;

	dfx_init(&fx, 1);
	o = &fx.dj->outs[0];
	drain_enqueue(o, "a", false, false);
	for (unsigned round = 0; round <= DRAIN_RESTARTS_MAX; round++) {
		now = all_ready(o);
		drain_schedule(o, &now);
		ck_assert_uint_eq(fx.spawns, round + 1);
		ck_assert_str_eq(dfx_command(&fx, 0, cmd, sizeof(cmd)),
				 round ? "{\"scan\":\"\"}"
				       : "{\"file\":\"a\"}");
		pid = o->pid;
		ck_assert_int_gt(pid, 0);
		dfx_kill(pid);
		dfx_eof(&fx, 0);
		drain_worker_read(o);
		ck_assert_int_eq(o->pid, 0);
		ck_assert(!o->busy);
		ck_assert(!dfx_unreaped(pid)); /* reaped */
		ck_assert_uint_eq(o->restarts, round + 1);
		if (round < DRAIN_RESTARTS_MAX) {
			ck_assert(!o->failed);
			ck_assert_uint_eq(o->nqueued, 1);
			ck_assert(o->head->scan && !o->head->final);
			ck_assert_str_eq(o->head->rel, "");
		}
	}
	ck_assert(o->failed);
	ck_assert_msg(strstr(o->fail_reason, "killed by signal 9"), "%s",
		      o->fail_reason);
	ck_assert_uint_eq(o->nqueued, 0);
	drain_enqueue(o, "b", false, false);
	ck_assert_uint_eq(o->nqueued, 0);
	now = all_ready(o);
	ck_assert_int_eq(drain_next_action(o, &now), DRAIN_ACT_NONE);
	dfx_fini(&fx);
}
END_TEST

/* In the end phase, a worker dying during the final scan is replaced
 * with a final scan. */
START_TEST(test_dead_worker_at_the_end_rescans_final)
{
	struct timespec now;
	char cmd[256];
	struct dfx fx;
	struct dout *o;

	dfx_init(&fx, 1);
	o = &fx.dj->outs[0];
	drain_begin_end(fx.dj);
	clock_gettime(CLOCK_MONOTONIC, &now);
	drain_schedule(o, &now);
	ck_assert_str_eq(dfx_command(&fx, 0, cmd, sizeof(cmd)),
			 "{\"scan\":\"\"}");
	ck_assert(o->busy_final);
	dfx_kill(o->pid);
	dfx_eof(&fx, 0);
	drain_worker_read(o);
	ck_assert_uint_eq(o->nqueued, 1);
	ck_assert(o->head->final);
	dfx_fini(&fx);
}
END_TEST

START_TEST(test_spawn_failure_fails_the_output)
{
	struct timespec now;
	struct dfx fx;
	struct dout *o;

	dfx_init(&fx, 2);
	o = &fx.dj->outs[0];
	fx.spawn_fails = true;
	drain_enqueue(o, "a", false, false);
	drain_enqueue(&fx.dj->outs[1], "b", false, false);
	now = all_ready(o);
	drain_schedule(o, &now);
	ck_assert(o->failed);
	ck_assert_int_eq(o->pid, 0);
	ck_assert_uint_eq(o->nqueued, 0);
	ck_assert_msg(strstr(o->fail_reason, "test"), "%s", o->fail_reason);
	/* the other output is not affected */
	ck_assert(!fx.dj->outs[1].failed);
	ck_assert_uint_eq(fx.dj->outs[1].nqueued, 1);
	/* at the end a failed output is done at once */
	drain_begin_end(fx.dj);
	ck_assert(o->done);
	ck_assert(!fx.dj->outs[1].done);
	dfx_fini(&fx);
}
END_TEST

/* --- the end phase
 * ------------------------------------------------------------ */

START_TEST(test_end_phase_final_scan_then_close_then_done)
{
	struct timespec now;
	char cmd[256];
	struct dfx fx;
	struct dout *o;
	pid_t pid;

	dfx_init(&fx, 1);
	o = &fx.dj->outs[0];
	drain_enqueue(o, "a", false, false); /* still settling */
	fx.dj->end_requested = true;
	clock_gettime(CLOCK_MONOTONIC, &now);
	drain_step_job(fx.dj, &now);
	ck_assert_int_eq(fx.dj->phase, DRAIN_ENDING);
	/* what was queued goes first, at once; the final scan after */
	ck_assert_str_eq(dfx_command(&fx, 0, cmd, sizeof(cmd)),
			 "{\"file\":\"a\"}");
	ck_assert_uint_eq(o->nqueued, 1);
	ck_assert(o->head->final);
	dfx_worker_says(&fx, "{\"path\":\"a\",\"ok\":true,\"bytes\":4}\n"
			     "{\"done\":true}\n");
	drain_worker_read(o);
	drain_step_job(fx.dj, &now);
	ck_assert_str_eq(dfx_command(&fx, 0, cmd, sizeof(cmd)),
			 "{\"scan\":\"\"}");
	ck_assert(o->busy_final);
	dfx_worker_says(&fx, "{\"path\":\"b\",\"ok\":true,\"bytes\":6}\n"
			     "{\"done\":true,\"failed\":0}\n");
	drain_worker_read(o);
	ck_assert(o->final_done);
	/* nothing left: its stdin closed, it syncs and exits */
	drain_step_job(fx.dj, &now);
	ck_assert(o->stdin_closed);
	ck_assert_int_eq(o->in, -1);
	ck_assert(!o->done);
	ck_assert_int_eq(fx.dj->phase, DRAIN_ENDING);
	/* it ends (how does not matter: it was told to) */
	pid = o->pid;
	dfx_kill(pid);
	dfx_eof(&fx, 0);
	drain_worker_read(o);
	ck_assert(o->done);
	ck_assert_int_eq(o->restarts, 0); /* expected: not a crash */
	drain_step_job(fx.dj, &now);
	ck_assert_int_eq(fx.dj->phase, DRAIN_DONE);
	ck_assert_uint_eq(fx.dj->end_files, 2);
	ck_assert_uint_eq(fx.dj->end_bytes, 10);
	ck_assert_uint_eq(fx.dj->during_files, 0);
	dfx_fini(&fx);
}
END_TEST

/* An output that never had a worker: its end is the final scan's done
 * and no process to wait for. */
START_TEST(test_end_without_worker_is_done)
{
	struct timespec now;
	struct dfx fx;
	struct dout *o;

	dfx_init(&fx, 1);
	o = &fx.dj->outs[0];
	fx.dj->phase = DRAIN_ENDING;
	o->final_done = true;
	clock_gettime(CLOCK_MONOTONIC, &now);
	ck_assert_int_eq(drain_next_action(o, &now), DRAIN_ACT_DONE);
	o->pid = 1; /* not touched: the decision only */
	ck_assert_int_eq(drain_next_action(o, &now), DRAIN_ACT_CLOSE);
	o->pid = 0;
	fx.dj->phase = DRAIN_RUNNING;
	ck_assert_int_eq(drain_next_action(o, &now), DRAIN_ACT_NONE);
	dfx_fini(&fx);
}
END_TEST

/* The deadline: workers killed, queues dropped and counted as left. */
START_TEST(test_abandon_counts_what_is_left)
{
	struct timespec now;
	struct dfx fx;
	struct dout *o;
	pid_t pid;

	dfx_init(&fx, 2);
	o = &fx.dj->outs[0];
	drain_enqueue(o, "a", false, false);
	drain_enqueue(o, "b", false, false);
	drain_enqueue(&fx.dj->outs[1], "c", false, false);
	now = all_ready(o);
	drain_schedule(o, &now); /* a in flight, b queued */
	pid = o->pid;
	fx.dj->abandon = true;
	drain_step_job(fx.dj, &now);
	ck_assert_int_eq(fx.dj->phase, DRAIN_DONE);
	ck_assert_uint_eq(fx.dj->left_files, 3);
	ck_assert_int_eq(o->pid, 0);
	ck_assert(o->done && fx.dj->outs[1].done);
	ck_assert_uint_eq(o->nqueued + fx.dj->outs[1].nqueued, 0);
	/* killed: reaped, or kept to be reaped */
	if (dfx_unreaped(pid)) {
		ck_assert_ptr_nonnull(fx.d->zombies);
		ck_assert_int_eq(fx.d->zombies->pid, pid);
		ck_assert_int_eq(dfx_wait_exit(pid), SIGKILL);
	}
	dfx_fini(&fx);
}
END_TEST

/* --- zombies
 * ------------------------------------------------------------------ */

START_TEST(test_zombies_reaped_once_exited)
{
	struct drain_zombie *z[2];
	struct dfx fx;
	struct spawn_proc p;
	char err[64];

	dfx_init(&fx, 1);
	ck_assert_int_eq(dfx_spawn(&fx.dj->outs[0], &p, err, sizeof(err)), 0);
	close(p.in);
	close(p.out);
	for (int i = 0; i < 2; i++) {
		z[i] = calloc(1, sizeof(*z[i]));
		ck_assert_ptr_nonnull(z[i]);
	}
	/* a worker stuck (still running) and one no longer ours */
	z[0]->pid = p.pid;
	z[1]->pid = getpid();
	z[0]->next = z[1];
	fx.d->zombies = z[0];
	drain_reap_zombies(fx.d);
	ck_assert_ptr_eq(fx.d->zombies, z[0]);
	ck_assert_ptr_null(z[0]->next);
	drain_reap_zombies(fx.d); /* still running: kept */
	ck_assert_ptr_eq(fx.d->zombies, z[0]);
	dfx_kill(p.pid);
	drain_reap_zombies(fx.d);
	ck_assert_ptr_null(fx.d->zombies);
	ck_assert(!dfx_unreaped(p.pid));
	dfx_fini(&fx);
}
END_TEST

/* Released (killed): our ends closed, and the process reaped now or kept
 * as a zombie to reap, never lost. */
START_TEST(test_release_kills_and_keeps_track)
{
	struct timespec now;
	struct dfx fx;
	struct dout *o;
	pid_t pid;

	dfx_init(&fx, 1);
	o = &fx.dj->outs[0];
	drain_enqueue(o, "a", false, false);
	now = all_ready(o);
	drain_schedule(o, &now);
	pid = o->pid;
	drain_worker_release(o, true);
	ck_assert_int_eq(o->pid, 0);
	ck_assert_int_eq(o->in, -1);
	ck_assert_int_eq(o->out, -1);
	ck_assert_ptr_null(o->lbuf);
	ck_assert(!o->busy);
	if (fx.d->zombies) {
		ck_assert_int_eq(fx.d->zombies->pid, pid);
		ck_assert_int_eq(dfx_wait_exit(pid), SIGKILL);
		drain_reap_zombies(fx.d);
		ck_assert_ptr_null(fx.d->zombies);
	}
	ck_assert(!dfx_unreaped(pid));
	dfx_fini(&fx);
}
END_TEST

/* --- a drain as iostaged makes it (root: StateDir/drain is root's)
 * ------------ */

START_TEST(test_two_drains_one_process)
{
	struct conf conf[2];
	struct agent a[2];
	struct drain *d[2];
	char dir[2][32], err[256];

	drain_destroy(NULL); /* a no-op */
	drain_shutdown(NULL);
	ck_assert_ptr_null(drain_create(NULL, err, sizeof(err)));
	for (int i = 0; i < 2; i++) {
		memset(&conf[i], 0, sizeof(conf[i]));
		memset(&a[i], 0, sizeof(a[i]));
		snprintf(dir[i], sizeof(dir[i]), "/tmp/check_drain.XXXXXX");
		ck_assert_ptr_nonnull(mkdtemp(dir[i]));
		snprintf(conf[i].state_dir, sizeof(conf[i].state_dir),
			 "%s/state", dir[i]);
		a[i].conf = &conf[i];
		d[i] = drain_create(&a[i], err, sizeof(err));
		ck_assert_msg(d[i] != NULL, "%s", err);
		a[i].drain = d[i];
	}
	ck_assert_ptr_ne(d[0], d[1]);
	ck_assert_ptr_null(drain_status_json(d[1], 42));
	drain_shutdown(d[1]);
	drain_shutdown(d[1]); /* twice: a no-op */
	drain_destroy(d[0]);
	drain_destroy(d[1]);
	for (int i = 0; i < 2; i++) {
		struct stat st;
		char path[128];

		snprintf(path, sizeof(path), "%s/state/drain", dir[i]);
		ck_assert_int_eq(stat(path, &st), 0);
		ck_assert_uint_eq(st.st_mode & 0777, 0700);
		ck_assert_msg(tmp_remove(dir[i], err, sizeof(err)) == 0, "%s",
			      err);
	}
}
END_TEST

static Suite *drain_sched_suite(void)
{
	Suite *s = suite_create("drain_sched");
	TCase *tc = tcase_create("when");

	tcase_add_test(tc, test_closed_file_settles_first);
	tcase_add_loop_test(tc, test_nothing_sent_when_not_free, 0, 4);
	suite_add_tcase(s, tc);
	tc = tcase_create("order");
	tcase_add_test(tc, test_order_as_queued);
	tcase_add_test(tc, test_queue_dedup_and_scan_covers);
	tcase_add_test(tc, test_burst_becomes_one_scan);
	tcase_add_test(tc, test_rewritten_while_draining_goes_again);
	suite_add_tcase(s, tc);
	tc = tcase_create("retries");
	tcase_add_test(tc, test_dead_worker_restarted_then_output_fails);
	tcase_add_test(tc, test_dead_worker_at_the_end_rescans_final);
	tcase_add_test(tc, test_spawn_failure_fails_the_output);
	suite_add_tcase(s, tc);
	tc = tcase_create("end");
	tcase_add_test(tc, test_end_phase_final_scan_then_close_then_done);
	tcase_add_test(tc, test_end_without_worker_is_done);
	tcase_add_test(tc, test_abandon_counts_what_is_left);
	suite_add_tcase(s, tc);
	tc = tcase_create("zombies");
	tcase_add_test(tc, test_zombies_reaped_once_exited);
	tcase_add_test(tc, test_release_kills_and_keeps_track);
	suite_add_tcase(s, tc);
	tc = tcase_create("object");
	tcase_add_root_test(tc, test_two_drains_one_process);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return check_run(drain_sched_suite());
}
