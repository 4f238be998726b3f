/* agent_fixture.h - a node agent over temporary directories, for the unit
 * tests of the job table and the stager (tests/unit/check_jobs.c,
 * check_stage.c).
 *
 * An agent here is what iostaged's main() makes, minus the socket, the
 * drain, telemetry and the cluster parts: a conf whose StateDir and tiers
 * (t0, t1, ...) are below /tmp/check_agent.XXXXXX, owned by the test's own
 * uid; the tiers, a cache over them owned by the test's uid, the stager
 * and the figures (agent_create, as iostaged makes them; PublicDatasets=no:
 * a public entry is built as another account, which only root can be);
 * the job table (jobs_create, jobs_load). Two agents live side by side in
 * one process. A "restart" (ag_restart) destroys the table without any clean-up and loads
 * a new one from the same StateDir, as a new iostaged would.
 *
 * Everything here is static inline; a failing step fails the test through
 * ck_assert.
 */
#ifndef IOSTAGE_TESTS_AGENT_FIXTURE_H
#define IOSTAGE_TESTS_AGENT_FIXTURE_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* nftw */
#endif
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <check.h>

#include "common/config/conf.h"
#include "common/config/profile.h"
#include "common/fs/rmtree.h"
#include "daemon/agent_life.h"
#include "daemon/jobs.h"
#include "daemon/staging/cache.h"
#include "daemon/staging/stage.h"
#include "daemon/staging/tiers.h"
#include "tests/unit/tmp_fixture.h"

struct ag {
	char root[64]; /* the temporary directory */
	struct conf conf;
	struct agent a;
};

static inline bool ag_no_job(void *arg, uint32_t id)
{
	(void)arg;
	(void)id;
	return false;
}

/* The job table of AG, loaded from its StateDir. */
static inline void ag_jobs(struct ag *g)
{
	char err[CONF_ERR_MAX];

	g->a.jobs = jobs_create(&g->a, geteuid(), err, sizeof(err));
	ck_assert_msg(g->a.jobs != NULL, "jobs_create: %s", err);
	ck_assert_msg(jobs_load(g->a.jobs, err, sizeof(err)) == 0,
		      "jobs_load: %s", err);
}

/* An agent with NTIERS tiers; its node is NODE. */
static inline void ag_init(struct ag *g, const char *node, size_t ntiers)
{
	char err[CONF_ERR_MAX];
	size_t t;

	memset(g, 0, sizeof(*g));
	snprintf(g->root, sizeof(g->root), "/tmp/check_agent.XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(g->root));
	ck_assert_int_eq(chmod(g->root, 0755), 0);
	conf_set_defaults(&g->conf);
	snprintf(g->conf.node_name, sizeof(g->conf.node_name), "%s", node);
	snprintf(g->conf.state_dir, sizeof(g->conf.state_dir), "%s/state",
		 g->root);
	g->conf.public_datasets = false;
	g->conf.ntiers = ntiers;
	for (t = 0; t < ntiers; t++) {
		snprintf(g->conf.tiers[t].name, sizeof(g->conf.tiers[t].name),
			 "t%zu", t);
		snprintf(g->conf.tiers[t].path, sizeof(g->conf.tiers[t].path),
			 "%s/t%zu", g->root, t);
	}
	g->a.conf = &g->conf;
	/* the tiers, the cache (owned by the test's uid), the stager and
	 * the figures, as iostaged makes them (daemon/agent_life.c) */
	ck_assert_msg(agent_create(&g->a, geteuid(), err, sizeof(err)) == 0,
		      "agent_create: %s", err);
	ag_jobs(g); /* makes StateDir, which the cache's journal is in */
	ck_assert_msg(cache_recover(g->a.cache, ag_no_job, NULL, err,
				    sizeof(err)) == 0,
		      "cache_recover: %s", err);
}

/* A new iostaged on the same StateDir: the table goes without clean-up
 * (its memory freed, nothing on disk touched) and a new one loads. */
static inline void ag_restart(struct ag *g)
{
	jobs_destroy(g->a.jobs);
	ag_jobs(g);
}

static inline int ag_writable(const char *path, const struct stat *st, int flag,
			      struct FTW *ftw)
{
	(void)ftw;
	if (flag == FTW_D && !S_ISLNK(st->st_mode))
		chmod(path, 0700); /* versions carry no write bits */
	return 0;
}

static inline void ag_fini(struct ag *g)
{
	char err[256];

	/* a test that plays a staging thread ends it: one left running
	 * would cost this wait on every run */
	ck_assert_msg(jobs_shutdown(g->a.jobs, "test over", 30),
		      "a staging thread outlived the test");
	agent_destroy(&g->a);
	nftw(g->root, ag_writable, 16, FTW_PHYS);
	tmp_remove(g->root, err, sizeof(err));
}

/* A validated profile from JSON (datasets on the agent's tiers). */
static inline struct profile *ag_profile(struct ag *g, const char *json)
{
	char err[CONF_ERR_MAX];
	struct profile *p = profile_parse_json(json, "test", err, sizeof(err));

	ck_assert_msg(p != NULL, "profile: %s", err);
	ck_assert_msg(profile_normalize(p, &g->conf, err, sizeof(err)) == 0,
		      "profile_normalize: %s", err);
	return p;
}

/* Job ID of this uid with profile JSON, inserted (the caller holds one
 * reference: jobs_put). */
static inline struct job *ag_job(struct ag *g, uint32_t id, const char *json)
{
	char err[CONF_ERR_MAX];
	struct job *job, *old = NULL;

	job = jobs_new_job(g->a.jobs, id, geteuid(), getegid(), "tester",
			   ag_profile(g, json), err, sizeof(err));
	ck_assert_msg(job != NULL, "jobs_new_job: %s", err);
	ck_assert_msg(jobs_insert(g->a.jobs, job, &old, err, sizeof(err)) == 0,
		      "jobs_insert: %s", err);
	return job;
}

/* Whether StateDir/jobs/NAME exists. */
static inline bool ag_state_file(const struct ag *g, const char *name)
{
	char path[PATH_MAX];
	struct stat st;

	snprintf(path, sizeof(path), "%s/jobs/%s", g->conf.state_dir, name);
	return lstat(path, &st) == 0;
}

/* Write StateDir/jobs/NAME with TEXT. */
static inline void ag_put_state(const struct ag *g, const char *name,
				const char *text)
{
	char path[PATH_MAX];
	int fd;

	snprintf(path, sizeof(path), "%s/jobs/%s", g->conf.state_dir, name);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	ck_assert_msg(fd >= 0, "%s: %s", path, strerror(errno));
	ck_assert_int_eq(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
}

#endif /* IOSTAGE_TESTS_AGENT_FIXTURE_H */
