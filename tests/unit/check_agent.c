/* check_agent.c - two node agents in one process (daemon/agent.c): made
 * by agent_create and agent_load over their own temporary directories,
 * without root, Slurm or a socket, each keeping its own jobs, records and
 * drain; and an agent made again over the same StateDir reading back
 * what the last one left, as iostaged does after a restart. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <check.h>

#include "common/base/log.h"
#include "common/config/conf.h"
#include "common/config/profile.h"
#include "common/fs/rmtree.h"
#include "daemon/agent_life.h"
#include "daemon/jobs.h"
#include "daemon/staging/drain.h"
#include "daemon/telemetry/telemetry.h"
#include "tests/unit/check_run.h"
#include "tests/unit/tmp_fixture.h"

struct node {
	char root[64];
	struct conf conf;
	struct agent a;
};

static void node_conf(struct node *n, const char *name)
{
	memset(n, 0, sizeof(*n));
	snprintf(n->root, sizeof(n->root), "/tmp/check_agent.XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(n->root));
	ck_assert_int_eq(chmod(n->root, 0755), 0);
	conf_set_defaults(&n->conf);
	snprintf(n->conf.node_name, sizeof(n->conf.node_name), "%s", name);
	snprintf(n->conf.state_dir, sizeof(n->conf.state_dir), "%s/state",
		 n->root);
	snprintf(n->conf.tiers[0].name, sizeof(n->conf.tiers[0].name), "nvme");
	snprintf(n->conf.tiers[0].path, sizeof(n->conf.tiers[0].path),
		 "%s/nvme", n->root);
	n->conf.ntiers = 1;
	n->conf.public_datasets = false;
	n->conf.telemetry_interval_ms = 3600 * 1000; /* on events only */
}

/* N's agent, as iostaged makes it but for the socket. */
static void node_start(struct node *n)
{
	char err[CONF_ERR_MAX];

	memset(&n->a, 0, sizeof(n->a));
	n->a.conf = &n->conf;
	ck_assert_msg(agent_create(&n->a, geteuid(), err, sizeof(err)) == 0,
		      "agent_create: %s", err);
	ck_assert_msg(agent_load(&n->a, err, sizeof(err)) == 0,
		      "agent_load: %s", err);
}

static void node_stop(struct node *n)
{
	ck_assert_msg(jobs_shutdown(n->a.jobs, "test over", 10),
		      "a staging thread outlived the test");
	drain_shutdown(n->a.drain);
	agent_destroy(&n->a);
	/* every part gone, the fields cleared */
	ck_assert_ptr_null(n->a.tiers);
	ck_assert_ptr_null(n->a.cache);
	ck_assert_ptr_null(n->a.jobs);
	ck_assert_ptr_null(n->a.drain);
	ck_assert_ptr_null(n->a.telemetry);
}

static void node_remove(struct node *n)
{
	char err[256];

	ck_assert_msg(tmp_remove(n->root, err, sizeof(err)) == 0, "%s", err);
}

/* Job ID of this test's user, with no dataset, into N's table; STAGED:
 * its staging done. */
static void add_job(struct node *n, uint32_t id, bool staged)
{
	char err[CONF_ERR_MAX];
	struct profile *p;
	struct job *job, *old = NULL;

	p = profile_parse_json("{\"datasets\":[]}", "test", err, sizeof(err));
	ck_assert_msg(p != NULL, "%s", err);
	ck_assert_msg(profile_normalize(p, &n->conf, err, sizeof(err)) == 0,
		      "%s", err);
	job = jobs_new_job(n->a.jobs, id, geteuid(), getegid(), "tester", p,
			   err, sizeof(err));
	ck_assert_msg(job != NULL, "%s", err);
	ck_assert_msg(jobs_insert(n->a.jobs, job, &old, err, sizeof(err)) == 0,
		      "%s", err);
	if (staged)
		jobs_staging_done(job, true, NULL);
	jobs_put(job);
}

/* The end of job ID's staging, which the test plays. */
static void end_staging(struct node *n, uint32_t id)
{
	struct job *job = jobs_get(n->a.jobs, id);

	ck_assert_ptr_nonnull(job);
	jobs_staging_done(job, true, NULL);
	jobs_put(job);
}

static enum job_state state_of(struct node *n, uint32_t id)
{
	struct job *job = jobs_get(n->a.jobs, id);
	struct job_view v;

	ck_assert_ptr_nonnull(job);
	jobs_view(job, &v);
	jobs_put(job);
	return v.state;
}

START_TEST(test_two_agents_one_process)
{
	struct node n1, n2;
	struct stat st;
	char path[CONF_PATH_MAX + 32];
	cJSON *status;

	node_conf(&n1, "n1");
	node_conf(&n2, "n2");
	node_start(&n1);
	node_start(&n2);
	/* nothing shared: each part is the agent's own */
	ck_assert_ptr_ne(n1.a.tiers, n2.a.tiers);
	ck_assert_ptr_ne(n1.a.cache, n2.a.cache);
	ck_assert_ptr_ne(n1.a.jobs, n2.a.jobs);
	ck_assert_ptr_ne(n1.a.drain, n2.a.drain);
	ck_assert_ptr_ne(n1.a.telemetry, n2.a.telemetry);

	/* a job on one is unknown to the other, in table, status and
	 * telemetry alike */
	add_job(&n1, 7, true);
	ck_assert(jobs_known(n1.a.jobs, 7));
	ck_assert(!jobs_known(n2.a.jobs, 7));
	ck_assert_int_eq(state_of(&n1, 7), JOB_STAGED);
	status = jobs_status_json(n2.a.jobs, 0);
	ck_assert_ptr_nonnull(status);
	ck_assert_int_eq(cJSON_GetArraySize(status), 0);
	cJSON_Delete(status);
	status = jobs_status_json(n1.a.jobs, 0);
	ck_assert_int_eq(cJSON_GetArraySize(status), 1);
	cJSON_Delete(status);

	/* each persists into its own StateDir */
	snprintf(path, sizeof(path), "%s/jobs/7.json", n1.conf.state_dir);
	ck_assert_int_eq(stat(path, &st), 0);
	snprintf(path, sizeof(path), "%s/jobs/7.json", n2.conf.state_dir);
	ck_assert_int_eq(stat(path, &st), -1);

	/* one stops; the other goes on */
	node_stop(&n1);
	add_job(&n2, 8, false);
	ck_assert(jobs_known(n2.a.jobs, 8));
	ck_assert_int_eq(state_of(&n2, 8), JOB_STAGING);
	end_staging(&n2, 8); /* else node_stop waits for it */
	node_stop(&n2);
	node_remove(&n1);
	node_remove(&n2);
}
END_TEST

/* A new agent over the same StateDir knows the last one's staged job;
 * a job it left staging has failed (its copy cannot be trusted). */
START_TEST(test_restart_reads_back)
{
	struct node n;
	struct job *job;
	struct job_view v;

	node_conf(&n, "n1");
	node_start(&n);
	add_job(&n, 11, true);
	add_job(&n, 12, false);
	/* stopped without finishing either: what a killed iostaged leaves
	 * (the state files; shutdown would cancel job 12 itself) */
	drain_shutdown(n.a.drain);
	agent_destroy(&n.a);
	node_start(&n);
	ck_assert(jobs_known(n.a.jobs, 11));
	ck_assert_int_eq(state_of(&n, 11), JOB_STAGED);
	job = jobs_get(n.a.jobs, 12);
	ck_assert_ptr_nonnull(job);
	jobs_view(job, &v);
	jobs_put(job);
	ck_assert_int_eq(v.state, JOB_FAILED);
	ck_assert_msg(strstr(v.error, "staging") != NULL, "error: %s", v.error);
	node_stop(&n);
	node_remove(&n);
}
END_TEST

/* A bad configuration fails agent_create with a reason and leaves no
 * part behind. */
START_TEST(test_create_fails_cleanly)
{
	struct node n;
	char err[CONF_ERR_MAX] = "";

	node_conf(&n, "n1");
	/* the tier's path is a file, not a directory */
	ck_assert_int_eq(mkdir(n.conf.tiers[0].path, 0755), 0);
	ck_assert_int_eq(rmdir(n.conf.tiers[0].path), 0);
	ck_assert_int_eq(close(open(n.conf.tiers[0].path, O_CREAT | O_WRONLY,
				    0644)),
			 0);
	memset(&n.a, 0, sizeof(n.a));
	n.a.conf = &n.conf;
	ck_assert_int_eq(agent_create(&n.a, geteuid(), err, sizeof(err)), -1);
	ck_assert_msg(err[0] != '\0', "no reason given");
	ck_assert_ptr_null(n.a.tiers);
	ck_assert_ptr_null(n.a.cache);
	ck_assert_ptr_null(n.a.stage);
	node_remove(&n);
}
END_TEST

static Suite *agent_suite(void)
{
	Suite *s = suite_create("agent");
	TCase *tc = tcase_create("core");

	log_init("check_agent", false, LOG_LEVEL_ERROR);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_two_agents_one_process);
	tcase_add_test(tc, test_restart_reads_back);
	tcase_add_test(tc, test_create_fails_cleanly);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return check_run(agent_suite());
}
