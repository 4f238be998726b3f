/* check_jobs.c - unit tests for iostaged's job table (daemon/jobs*.c):
 * the state machine (staging -> staged | failed, exactly once; abort,
 * cancel, a job-wide failure, finish), waiting, references, what is
 * persisted and read back after a restart (a job left staging fails, a
 * damaged or hostile state file is ignored), prestage ids, status and two
 * tables side by side.
 *
 * Each test makes an agent over temporary directories
 * (tests/unit/agent_fixture.h): no root, no Slurm, no socket. No staging
 * thread runs here: the test plays its part (jobs_staging_done).
 */
#define _GNU_SOURCE
#include <pthread.h>

#include "daemon/jobs.h"
#include "daemon/jobs_internal.h"
#include "tests/unit/agent_fixture.h"
#include "tests/unit/check_run.h"

#define EMPTY "{\"datasets\":[]}"
#define ONE_DS                                                                 \
	"{\"datasets\":[{\"name\":\"d\",\"path\":\"/pfs/"                      \
	"d\",\"tier\":\"t0\"}]}"

static struct ag g;

static void setup(void)
{
	ag_init(&g, "node1", 2);
}

static void teardown(void)
{
	ag_fini(&g);
}

static enum job_state state_of(struct job *job, char *error, size_t len)
{
	struct job_view v;

	jobs_view(job, &v);
	if (error)
		snprintf(error, len, "%s", v.error);
	return v.state;
}

/* --- creating and inserting --------------------------------------------- */

START_TEST(test_new_job_is_staging_and_persisted)
{
	struct job *job = ag_job(&g, 42, ONE_DS);
	struct job *found;

	ck_assert_int_eq(state_of(job, NULL, 0), JOB_STAGING);
	ck_assert(job->running);
	ck_assert(job->tiers[0]);
	ck_assert(ag_state_file(&g, "42.json"));
	ck_assert(jobs_known(g.a.jobs, 42));
	ck_assert(!jobs_known(g.a.jobs, 43));
	found = jobs_get(g.a.jobs, 42);
	ck_assert_ptr_eq(found, job);
	jobs_put(found);
	ck_assert_ptr_null(jobs_get(g.a.jobs, 43));
	jobs_staging_done(job, true, NULL);
	jobs_put(job);
}
END_TEST

/* Users from outside (the Prolog's request): the name must fit. */
static const struct {
	const char *user;
	bool ok;
} user_cases[] = {
	{ "alice", true },
	{ "", true }, /* the server refuses empty names before */
	{ NULL, false },
	{ "x", true },
};

START_TEST(test_new_job_user)
{
	char err[CONF_ERR_MAX] = "", long_user[JOBS_USER_MAX + 8];
	const char *user = user_cases[_i].user;
	struct profile *p = ag_profile(&g, EMPTY);
	struct job *job;

	if (_i == 3) { /* overlong: one byte more than fits */
		memset(long_user, 'u', JOBS_USER_MAX);
		long_user[JOBS_USER_MAX] = '\0';
		user = long_user;
	}
	job = jobs_new_job(g.a.jobs, 7, 1000, 1000, user, p, err, sizeof(err));
	if (_i == 3 || !user_cases[_i].ok) {
		ck_assert_ptr_null(job);
		ck_assert_msg(strstr(err, "user") != NULL, "err: %s", err);
		profile_destroy(p); /* still ours on failure */
		return;
	}
	ck_assert_ptr_nonnull(job);
	jobs_discard(job);
}
END_TEST

START_TEST(test_insert_twice_gives_the_existing_job)
{
	char err[CONF_ERR_MAX];
	struct job *job = ag_job(&g, 42, EMPTY), *dup, *old = NULL;

	dup = jobs_new_job(g.a.jobs, 42, geteuid(), getegid(), "tester",
			   ag_profile(&g, EMPTY), err, sizeof(err));
	ck_assert_ptr_nonnull(dup);
	ck_assert_int_eq(jobs_insert(g.a.jobs, dup, &old, err, sizeof(err)), 1);
	ck_assert_ptr_eq(old, job);
	jobs_discard(dup);
	jobs_put(old);
	jobs_staging_done(job, true, NULL);
	jobs_put(job);
}
END_TEST

/* --- the state machine ---------------------------------------------------- */

/* How staging ends: (ok, error, cancelled first) -> state, error. */
static const struct {
	bool ok;
	const char *error;
	const char *cancel; /* abort before the end, or NULL */
	enum job_state state;
	const char *want_error;
} done_cases[] = {
	{ true, NULL, NULL, JOB_STAGED, "" },
	{ false, "tier 't0' full", NULL, JOB_FAILED, "tier 't0' full" },
	{ false, NULL, NULL, JOB_FAILED, "staging failed" },
	{ false, "", NULL, JOB_FAILED, "staging failed" },
	/* a cancelled job always fails with the cancel reason */
	{ true, NULL, "aborted by user", JOB_FAILED, "aborted by user" },
	{ false, "worker killed", "job finished during staging", JOB_FAILED,
	  "job finished during staging" },
};

START_TEST(test_staging_done)
{
	struct job *job = ag_job(&g, 42, EMPTY);
	char error[CONF_ERR_MAX];
	struct job_view v;

	if (done_cases[_i].cancel) {
		/* the thread is running: abort cancels and waits (0 s) */
		jobs_abort(job, done_cases[_i].cancel, 0, &v);
		ck_assert_int_eq(v.state, JOB_STAGING);
		ck_assert(jobs_cancelled(job, error, sizeof(error)));
		ck_assert_str_eq(error, done_cases[_i].cancel);
	} else {
		ck_assert(!jobs_cancelled(job, NULL, 0));
	}
	jobs_staging_done(job, done_cases[_i].ok, done_cases[_i].error);
	ck_assert_int_eq(state_of(job, error, sizeof(error)),
			 done_cases[_i].state);
	ck_assert_str_eq(error, done_cases[_i].want_error);
	ck_assert(!job->running);
	ck_assert_int_ne(job->ended, 0);
	jobs_put(job);
}
END_TEST

/* The staging thread's last word gives its reference back with the end
 * of staging: the table and the caller keep theirs. */
START_TEST(test_staging_exit_drops_the_threads_reference)
{
	struct job *job = ag_job(&g, 42, EMPTY);
	unsigned refs;

	jobs_hold(job); /* the thread's, as stage_start takes it */
	refs = job->refs;
	jobs_staging_exit(job, true, NULL);
	ck_assert_uint_eq(job->refs, refs - 1);
	ck_assert(!job->running);
	ck_assert_int_eq(state_of(job, NULL, 0), JOB_STAGED);
	jobs_put(job);
}
END_TEST

START_TEST(test_abort_after_staging)
{
	struct job *job = ag_job(&g, 42, EMPTY);
	char error[CONF_ERR_MAX];
	struct job_view v;

	jobs_staging_done(job, true, NULL);
	jobs_abort(job, "first", 1, &v);
	ck_assert_int_eq(v.state, JOB_FAILED);
	ck_assert_str_eq(v.error, "first");
	/* a failed job keeps its first error */
	jobs_abort(job, "second", 1, &v);
	ck_assert_str_eq(v.error, "first");
	ck_assert_int_eq(state_of(job, error, sizeof(error)), JOB_FAILED);
	jobs_put(job);
}
END_TEST

START_TEST(test_fail_jobwide)
{
	const char *nodes[] = { "node1", "node2" };
	struct job *job = ag_job(&g, 42, EMPTY);
	char node[CONF_NODE_MAX], err[CONF_ERR_MAX];
	struct job_view v;

	/* nodes may only be set before insertion: a fresh job (42's
	 * staging ended, or the teardown waits for it) */
	jobs_staging_done(job, true, NULL);
	jobs_put(job);
	job = jobs_new_job(g.a.jobs, 43, geteuid(), getegid(), "tester",
			   ag_profile(&g, EMPTY), err, sizeof(err));
	ck_assert_ptr_nonnull(job);
	ck_assert_int_eq(jobs_set_nodes(job, nodes, 2, err, sizeof(err)), 0);
	ck_assert(jobs_multi_node(job));
	ck_assert_int_eq(jobs_insert(g.a.jobs, job, NULL, err, sizeof(err)), 0);
	/* still staging: nothing changes */
	jobs_fail_jobwide(job, "node2", "tier full", &v);
	ck_assert_int_eq(v.state, JOB_STAGING);
	jobs_staging_done(job, true, NULL);
	jobs_fail_jobwide(job, "node2", "tier full", &v);
	ck_assert_int_eq(v.state, JOB_FAILED);
	ck_assert_str_eq(v.error, "node node2: tier full");
	jobs_failed_node(job, node, sizeof(node));
	ck_assert_str_eq(node, "node2");
	/* the first failure stays */
	jobs_fail_jobwide(job, "node3", "other", &v);
	ck_assert_str_eq(v.error, "node node2: tier full");
	jobs_put(job);
	/* job 42 (single node) is untouched */
	job = jobs_get(g.a.jobs, 42);
	ck_assert(!jobs_multi_node(job));
	jobs_put(job);
}
END_TEST

/* --- waiting -------------------------------------------------------------- */

START_TEST(test_wait_timeout_zero_sees_staging)
{
	struct job *job = ag_job(&g, 42, EMPTY);
	struct job_view v;

	jobs_wait(job, 0, &v);
	ck_assert_int_eq(v.state, JOB_STAGING);
	jobs_staging_done(job, true, NULL);
	jobs_wait(job, 0, &v);
	ck_assert_int_eq(v.state, JOB_STAGED);
	jobs_put(job);
}
END_TEST

struct waiter {
	struct job *job;
	struct job_view v;
};

static void *wait_thread(void *arg)
{
	struct waiter *w = arg;

	jobs_wait(w->job, 60, &w->v);
	return NULL;
}

/* A waiter blocked before the end is woken with the new state (its
 * deadline is far: no timing is asserted). */
START_TEST(test_wait_is_woken_by_the_end)
{
	struct waiter w = { .job = ag_job(&g, 42, EMPTY) };
	pthread_t t;

	ck_assert_int_eq(pthread_create(&t, NULL, wait_thread, &w), 0);
	jobs_staging_done(w.job, false, "boom");
	ck_assert_int_eq(pthread_join(t, NULL), 0);
	ck_assert_int_eq(w.v.state, JOB_FAILED);
	ck_assert_str_eq(w.v.error, "boom");
	jobs_put(w.job);
}
END_TEST

/* --- finishing ------------------------------------------------------------ */

START_TEST(test_finish)
{
	struct job *job = ag_job(&g, 42, ONE_DS);
	char err[CONF_ERR_MAX];
	struct jobs_finished f;
	int64_t before = jobs_now_us();

	jobs_staging_done(job, false, "dataset 'd': no such file");
	ck_assert_int_eq(jobs_finish(g.a.jobs, 42, 1, err, sizeof(err)), 0);
	ck_assert(!jobs_known(g.a.jobs, 42));
	ck_assert(!ag_state_file(&g, "42.json"));
	/* the caller's reference still holds the job, gone from the table */
	ck_assert(job->gone);
	jobs_put(job);
	ck_assert(jobs_finished_here(g.a.jobs, 42, before, &f));
	ck_assert_str_eq(f.error, "dataset 'd': no such file");
	ck_assert_str_eq(f.failed_node, "");
	/* a requeued run began after this finish: not the same */
	ck_assert(
	    !jobs_finished_here(g.a.jobs, 42, jobs_now_us() + 1000000, NULL));
	ck_assert(!jobs_finished_here(g.a.jobs, 0, 0, NULL));
	ck_assert(!jobs_finished_here(g.a.jobs, 43, 0, NULL));
	/* unknown: success, again */
	ck_assert_int_eq(jobs_finish(g.a.jobs, 42, 1, err, sizeof(err)), 0);
}
END_TEST

/* Finish while the staging thread runs: it is cancelled and, when it does
 * not end in time, the job stays known so that finish can be retried. */
START_TEST(test_finish_waits_for_the_thread)
{
	struct job *job = ag_job(&g, 42, EMPTY);
	char err[CONF_ERR_MAX], why[CONF_ERR_MAX];

	ck_assert_int_eq(jobs_finish(g.a.jobs, 42, 0, err, sizeof(err)), -1);
	ck_assert_int_eq(errno, EBUSY);
	ck_assert_msg(strstr(err, "try again") != NULL, "%s", err);
	ck_assert(jobs_known(g.a.jobs, 42));
	ck_assert(jobs_cancelled(job, why, sizeof(why)));
	ck_assert_str_eq(why, "job finished during staging");
	jobs_staging_done(job, true, NULL);
	ck_assert_int_eq(jobs_finish(g.a.jobs, 42, 0, err, sizeof(err)), 0);
	ck_assert(!jobs_known(g.a.jobs, 42));
	jobs_put(job);
}
END_TEST

START_TEST(test_remove_after_a_failed_start)
{
	struct job *job = ag_job(&g, 42, EMPTY);

	jobs_remove(job);
	ck_assert(!jobs_known(g.a.jobs, 42));
	ck_assert(!ag_state_file(&g, "42.json"));
	jobs_put(job);
}
END_TEST

START_TEST(test_shutdown_refuses_new_jobs_and_cancels)
{
	struct job *job = ag_job(&g, 42, EMPTY), *late, *old;
	char err[CONF_ERR_MAX], why[CONF_ERR_MAX];

	/* its staging thread still runs (the test's): not over */
	ck_assert(
	    !jobs_shutdown(g.a.jobs, "iostaged stopped during staging", 0));
	ck_assert(jobs_cancelled(job, why, sizeof(why)));
	ck_assert_str_eq(why, "iostaged stopped during staging");
	late = jobs_new_job(g.a.jobs, 43, geteuid(), getegid(), "tester",
			    ag_profile(&g, EMPTY), err, sizeof(err));
	ck_assert_int_eq(jobs_insert(g.a.jobs, late, &old, err, sizeof(err)),
			 -1);
	ck_assert_int_eq(errno, ESHUTDOWN);
	jobs_discard(late);
	jobs_staging_done(job, true, NULL);
	ck_assert_int_eq(state_of(job, NULL, 0), JOB_FAILED);
	ck_assert(jobs_shutdown(g.a.jobs, "again", 0));
	jobs_put(job);
}
END_TEST

/* --- restart: the state read back -------------------------------------------
 */

START_TEST(test_restart_reloads_a_staged_job)
{
	struct job *job = ag_job(&g, 42, ONE_DS);
	int64_t created_us = job->created_us;
	char error[CONF_ERR_MAX];

	jobs_progress(job, 100, 2);
	jobs_add_totals(job, 100, 2);
	jobs_dataset_result(job, 0, JOB_DS_BUILT, "0123.v1", 2, 100, 0);
	jobs_dataset_done(job, 0, 0, 100, 2);
	jobs_staging_done(job, true, NULL);
	jobs_put(job);
	ag_restart(&g);
	job = jobs_get(g.a.jobs, 42);
	ck_assert_ptr_nonnull(job);
	ck_assert_int_eq(state_of(job, error, sizeof(error)), JOB_STAGED);
	ck_assert_uint_eq(job->bytes, 100);
	ck_assert_uint_eq(job->total_files, 2);
	ck_assert_uint_eq(job->tier_bytes[0], 100);
	ck_assert(job->tiers[0]);
	ck_assert_int_eq(job->ds[0].result, JOB_DS_BUILT);
	ck_assert_str_eq(job->ds[0].entry, "0123.v1");
	ck_assert_int_eq(job->created_us, created_us);
	ck_assert_ptr_nonnull(job->profile);
	ck_assert_str_eq(job->profile->datasets[0].name, "d");
	ck_assert_str_eq(job->user, "tester");
	ck_assert(!job->running);
	jobs_put(job);
}
END_TEST

START_TEST(test_restart_fails_a_job_left_staging)
{
	struct job *job = ag_job(&g, 42, ONE_DS);
	char error[CONF_ERR_MAX];

	jobs_dataset_done(job, 0, 0, 100, 2); /* one dataset was done */
	jobs_put(job); /* the "crash": staging never ended */
	ag_restart(&g);
	job = jobs_get(g.a.jobs, 42);
	ck_assert_ptr_nonnull(job);
	ck_assert_int_eq(state_of(job, error, sizeof(error)), JOB_FAILED);
	ck_assert_str_eq(error, "iostaged restarted during staging");
	jobs_put(job);
	/* persisted as failed: a second restart says the same */
	ag_restart(&g);
	job = jobs_get(g.a.jobs, 42);
	ck_assert_int_eq(state_of(job, error, sizeof(error)), JOB_FAILED);
	ck_assert_str_eq(error, "iostaged restarted during staging");
	jobs_put(job);
}
END_TEST

/* State files as a crash, a full disk or a hand leave them: NAME with
 * TEXT; after a restart job ID is KNOWN or not, in STATE. */
static const struct {
	const char *name, *text;
	uint32_t id;
	bool known;
	enum job_state state;
} file_cases[] = {
	{ "5.json",
	  "{\"job\":5,\"uid\":1,\"gid\":1,\"user\":\"u\",\"state\":\"staged\","
	  "\"profile\":{\"datasets\":[]}}",
	  5, true, JOB_STAGED },
	/* not JSON, not an object, cut short */
	{ "6.json", "not json", 6, false, 0 },
	{ "7.json", "[7]", 7, false, 0 },
	{ "8.json", "{\"job\":8,\"user\":\"u\",\"state\":\"sta", 8, false, 0 },
	/* missing or bad fields */
	{ "9.json", "{\"user\":\"u\",\"state\":\"staged\"}", 9, false, 0 },
	{ "10.json", "{\"job\":10,\"state\":\"staged\"}", 10, false, 0 },
	{ "11.json", "{\"job\":11,\"user\":\"u\",\"state\":\"done\"}", 11,
	  false, 0 },
	{ "12.json", "{\"job\":12,\"user\":7,\"state\":\"staged\"}", 12, false,
	  0 },
	{ "0.json", "{\"job\":0,\"user\":\"u\",\"state\":\"staged\"}", 0, false,
	  0 },
	{ "13.json", "{\"job\":4294967296,\"user\":\"u\",\"state\":\"staged\"}",
	  13, false, 0 },
	/* a profile that no longer passes: failed, with why */
	{ "14.json",
	  "{\"job\":14,\"user\":\"u\",\"state\":\"staged\",\"profile\":"
	  "{\"datasets\":[{\"name\":\"d\",\"path\":\"/p\",\"tier\":\"gone\"}]}}",
	  14, true, JOB_FAILED },
	/* names that are not JOBID.json are not read */
	{ "15.txt", "{\"job\":15,\"user\":\"u\",\"state\":\"staged\"}", 15,
	  false, 0 },
	{ "x16.json", "{\"job\":16,\"user\":\"u\",\"state\":\"staged\"}", 16,
	  false, 0 },
	/* the same job under a second name: loaded once */
	{ "017.json",
	  "{\"job\":5,\"uid\":1,\"gid\":1,\"user\":\"u\",\"state\":\"failed\"}",
	  17, false, 0 },
	/* a year past 33,000 and huge counters do not crash */
	{ "18.json",
	  "{\"job\":18,\"user\":\"u\",\"state\":\"failed\",\"created\":1e300,"
	  "\"created_us\":-5,\"bytes\":1e300,\"staged_s\":-1,\"tiers\":[7,"
	  "\"t0\",\"nope\"],\"tier_bytes\":{\"t0\":-1},\"cache\":[1,{\"result\":"
	  "\"weird\"}],\"nodes\":[\"../x\",\"n1\",\"n2\"],\"failed_node\":"
	  "\"a b\"}",
	  18, true, JOB_FAILED },
};

START_TEST(test_restart_reads_state_files_safely)
{
	struct job *job;

	ag_put_state(&g, file_cases[_i].name, file_cases[_i].text);
	ag_restart(&g);
	job = jobs_get(g.a.jobs, file_cases[_i].id);
	ck_assert_msg((job != NULL) == file_cases[_i].known, "%s: %s",
		      file_cases[_i].name, job ? "loaded" : "not loaded");
	if (job) {
		ck_assert_int_eq(state_of(job, NULL, 0), file_cases[_i].state);
		ck_assert_ptr_eq(job->table, g.a.jobs);
		jobs_put(job);
	}
}
END_TEST

START_TEST(test_restart_damage_is_bounded)
{
	struct job *job;
	char path[PATH_MAX];

	ag_put_state(&g, "18.json", file_cases[14].text);
	ag_restart(&g);
	job = jobs_get(g.a.jobs, 18);
	ck_assert_ptr_nonnull(job);
	ck_assert_int_eq(job->created, 0); /* no year 33,000 */
	ck_assert_int_eq(job->created_us, 0);
	ck_assert(job->staged_s == 0);
	ck_assert(job->tiers[0]);
	ck_assert(!job->tiers[1]);
	ck_assert_str_eq(job->failed_node, ""); /* not a node name */
	ck_assert_uint_eq(job->nnodes, 2);      /* "../x" dropped */
	ck_assert_int_eq(job->ds[1].result, JOB_DS_PENDING);
	jobs_put(job);
	/* an interrupted write's temporary file is removed */
	ag_put_state(&g, ".19.json.tmp", "{");
	ag_restart(&g);
	ck_assert(!ag_state_file(&g, ".19.json.tmp"));
	/* a state file that is a symlink is not followed, even to a good
	 * state file elsewhere */
	ag_put_state(&g, "../planted.json",
		     "{\"job\":20,\"user\":\"u\",\"state\":\"staged\"}");
	snprintf(path, sizeof(path), "%s/jobs/20.json", g.conf.state_dir);
	ck_assert_int_eq(symlink("../planted.json", path), 0);
	ag_restart(&g);
	ck_assert(!jobs_known(g.a.jobs, 20));
}
END_TEST

/* StateDir must be the daemon's own and not writable by others. */
START_TEST(test_state_dir_must_be_private)
{
	char path[PATH_MAX], err[CONF_ERR_MAX];
	struct jobs *js;

	snprintf(path, sizeof(path), "%s/jobs", g.conf.state_dir);
	ck_assert_int_eq(chmod(path, 0777), 0);
	js = jobs_create(&g.a, geteuid(), err, sizeof(err));
	ck_assert_ptr_null(js);
	ck_assert_msg(strstr(err, "writable") != NULL, "%s", err);
	ck_assert_int_eq(chmod(path, 0700), 0);
	/* owned by someone else than the daemon's uid */
	js = jobs_create(&g.a, geteuid() + 1, err, sizeof(err));
	ck_assert_ptr_null(js);
	ck_assert_msg(strstr(err, "owned by") != NULL, "%s", err);
	jobs_destroy(NULL);
}
END_TEST

/* --- prestage ids, status, two tables
 * ------------------------------------------ */

START_TEST(test_prestage_ids)
{
	uint32_t a = jobs_next_prestage_id(g.a.jobs);
	uint32_t b = jobs_next_prestage_id(g.a.jobs);
	struct job *job;

	ck_assert_uint_ge(a, JOBS_PRESTAGE_ID_MIN);
	ck_assert_uint_gt(b, a);
	job = ag_job(&g, JOBS_PRESTAGE_ID_MIN + 100, EMPTY);
	job->prestage = true;
	jobs_staging_done(job, true, NULL);
	jobs_put(job);
	/* after a restart the reloaded ones are skipped */
	ag_restart(&g);
	ck_assert_uint_eq(jobs_next_prestage_id(g.a.jobs),
			  JOBS_PRESTAGE_ID_MIN + 101);
	/* a recent prestage is kept by the prune */
	jobs_prune_prestage(g.a.jobs);
	ck_assert(jobs_known(g.a.jobs, JOBS_PRESTAGE_ID_MIN + 100));
}
END_TEST

START_TEST(test_status_shows_only_ones_own_jobs)
{
	struct job *job = ag_job(&g, 42, ONE_DS);
	unsigned counts[CONF_MAX_TIERS];
	cJSON *all, *mine, *other, *j;

	jobs_staging_done(job, true, NULL);
	all = jobs_status_json(g.a.jobs, 0);
	mine = jobs_status_json(g.a.jobs, geteuid() ? geteuid() : 1);
	other = jobs_status_json(g.a.jobs, 12345);
	ck_assert_int_eq(cJSON_GetArraySize(all), 1);
	ck_assert_int_eq(cJSON_GetArraySize(mine), geteuid() ? 1 : 0);
	ck_assert_int_eq(cJSON_GetArraySize(other), 0);
	j = cJSON_GetArrayItem(all, 0);
	ck_assert_str_eq(cJSON_GetObjectItem(j, "state")->valuestring,
			 "staged");
	ck_assert_int_eq(cJSON_GetObjectItem(j, "job")->valueint, 42);
	ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItem(j, "datasets")),
			 1);
	cJSON_Delete(all);
	cJSON_Delete(mine);
	cJSON_Delete(other);
	jobs_tier_counts(g.a.jobs, counts);
	ck_assert_uint_eq(counts[0], 1);
	ck_assert_uint_eq(counts[1], 0);
	jobs_put(job);
}
END_TEST

START_TEST(test_two_tables_are_independent)
{
	struct ag h;
	struct job *a, *b;
	char error[CONF_ERR_MAX];

	ag_init(&h, "node2", 1);
	a = ag_job(&g, 42, EMPTY);
	b = ag_job(&h, 42, EMPTY);
	ck_assert_ptr_ne(a, b);
	jobs_staging_done(a, true, NULL);
	jobs_staging_done(b, false, "on h");
	ck_assert_int_eq(state_of(a, NULL, 0), JOB_STAGED);
	ck_assert_int_eq(state_of(b, error, sizeof(error)), JOB_FAILED);
	ck_assert_str_eq(error, "on h");
	jobs_put(b);
	jobs_put(a);
	ck_assert_int_eq(jobs_finish(h.a.jobs, 42, 1, error, sizeof(error)), 0);
	ck_assert(!jobs_known(h.a.jobs, 42));
	ck_assert(jobs_known(g.a.jobs, 42));
	ag_fini(&h);
}
END_TEST

static Suite *jobs_suite(void)
{
	Suite *s = suite_create("jobs");
	TCase *tc = tcase_create("table");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_new_job_is_staging_and_persisted);
	tcase_add_loop_test(tc, test_new_job_user, 0,
			    sizeof(user_cases) / sizeof(user_cases[0]));
	tcase_add_test(tc, test_insert_twice_gives_the_existing_job);
	tcase_add_loop_test(tc, test_staging_done, 0,
			    sizeof(done_cases) / sizeof(done_cases[0]));
	tcase_add_test(tc, test_staging_exit_drops_the_threads_reference);
	tcase_add_test(tc, test_abort_after_staging);
	tcase_add_test(tc, test_fail_jobwide);
	tcase_add_test(tc, test_wait_timeout_zero_sees_staging);
	tcase_add_test(tc, test_wait_is_woken_by_the_end);
	tcase_add_test(tc, test_finish);
	tcase_add_test(tc, test_finish_waits_for_the_thread);
	tcase_add_test(tc, test_remove_after_a_failed_start);
	tcase_add_test(tc, test_shutdown_refuses_new_jobs_and_cancels);
	tcase_add_test(tc, test_restart_reloads_a_staged_job);
	tcase_add_test(tc, test_restart_fails_a_job_left_staging);
	tcase_add_loop_test(tc, test_restart_reads_state_files_safely, 0,
			    sizeof(file_cases) / sizeof(file_cases[0]));
	tcase_add_test(tc, test_restart_damage_is_bounded);
	tcase_add_test(tc, test_state_dir_must_be_private);
	tcase_add_test(tc, test_prestage_ids);
	tcase_add_test(tc, test_status_shows_only_ones_own_jobs);
	tcase_add_test(tc, test_two_tables_are_independent);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return check_run(jobs_suite());
}
