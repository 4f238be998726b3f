/* check_metrics.c - unit tests for daemon/telemetry/metrics.c: the page
 * renders the figures of its own agent's stats and bandwidth governor
 * (two agents in one process, two pages), per-job series only for the
 * viewer's jobs, the parts an agent lacks left out, and the textfile
 * written whole. No HTTP listener (MetricsListen= unset), no job table. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <check.h>

#include "common/base/log.h"
#include "common/base/smallfile.h"
#include "common/config/conf.h"
#include "daemon/agent.h"
#include "daemon/staging/bwgov.h"
#include "daemon/telemetry/metrics.h"
#include "daemon/telemetry/stats.h"
#include "tests/unit/check_run.h"

static struct conf conf;

static void setup(void)
{
	log_init("check_metrics", false, LOG_LEVEL_ERROR);
	conf_set_defaults(&conf);
	conf.metrics_listen[0] = '\0';
	conf.metrics_textfile[0] = '\0';
	conf.ntiers = 0;
	/* With no job table every job stats knows is "ended" at the first
	 * sample: its series stay for the grace period. */
	conf.metrics_job_grace = 3600;
}

/* An agent with stats (and a governor over BUDGET bytes/s when not 0). */
static void agent_init(struct agent *a, const struct conf *c)
{
	memset(a, 0, sizeof(*a));
	a->conf = c;
	a->stats = stats_create();
	ck_assert_ptr_nonnull(a->stats);
	if (c->stage_bandwidth) {
		a->bwgov = bwgov_create(a, c);
		ck_assert_ptr_nonnull(a->bwgov);
	}
}

static void agent_fini(struct agent *a)
{
	metrics_destroy(a->metrics);
	bwgov_destroy(a->bwgov);
	stats_destroy(a->stats);
}

static char *render(struct metrics *m, bool all, uid_t viewer)
{
	size_t len = 0;
	char *text = metrics_render(m, all, viewer, &len);

	ck_assert_ptr_nonnull(text);
	ck_assert_uint_eq(strlen(text), len);
	return text;
}

START_TEST(test_two_agents_two_pages)
{
	struct conf c2 = conf;
	struct agent a, b;
	char *ta, *tb;

	c2.stage_bandwidth = 5000;
	agent_init(&a, &conf);
	agent_init(&b, &c2);
	a.metrics = metrics_create(&a, &conf);
	b.metrics = metrics_create(&b, &c2);
	ck_assert_ptr_nonnull(a.metrics);
	ck_assert_ptr_nonnull(b.metrics);
	stats_dataset_served(a.stats, false, 4096, 3, 4096, 3, 0);
	stats_dataset_served(b.stats, true, 10, 1, 0, 0, 0);

	ta = render(a.metrics, true, 0);
	tb = render(b.metrics, true, 0);
	ck_assert_ptr_nonnull(strstr(ta, "\niostage_stage_bytes_total 4096\n"));
	ck_assert_ptr_nonnull(strstr(ta, "\niostage_cache_misses_total 1\n"));
	ck_assert_ptr_nonnull(strstr(tb, "\niostage_stage_bytes_total 10\n"));
	ck_assert_ptr_nonnull(strstr(tb, "\niostage_cache_hits_total 1\n"));
	ck_assert_ptr_nonnull(strstr(ta, "iostage_build_info"));
	/* the budget only where one is set */
	ck_assert_ptr_null(strstr(ta, "iostage_stage_bandwidth_budget"));
	ck_assert_ptr_nonnull(
	    strstr(tb,
		   "\niostage_stage_bandwidth_budget_bytes_per_second 5000\n"));
	free(ta);
	free(tb);
	agent_fini(&a);
	agent_fini(&b);
}
END_TEST

/* Per-job series: root sees every job, a user their own. */
START_TEST(test_job_series_per_viewer)
{
	struct agent a;
	char *all, *mine, *other;

	agent_init(&a, &conf);
	a.metrics = metrics_create(&a, &conf);
	stats_job_staged(a.stats, 71, 1000, false, true, 1, 100, 1, 0);
	stats_job_staged(a.stats, 72, 2000, false, true, 1, 200, 1, 0);
	all = render(a.metrics, true, 0);
	mine = render(a.metrics, false, 1000);
	other = render(a.metrics, false, 3000);
	ck_assert_ptr_nonnull(strstr(all, "jobid=\"71\""));
	ck_assert_ptr_nonnull(strstr(all, "jobid=\"72\""));
	ck_assert_ptr_nonnull(strstr(mine, "jobid=\"71\""));
	ck_assert_ptr_null(strstr(mine, "jobid=\"72\""));
	ck_assert_ptr_null(strstr(other, "jobid="));
	free(all);
	free(mine);
	free(other);
	agent_fini(&a);
}
END_TEST

/* An agent with none of the parts metrics reads still renders its page;
 * destroy(NULL) is a no-op. */
START_TEST(test_bare_agent)
{
	struct agent a;
	char *t;

	memset(&a, 0, sizeof(a));
	a.conf = &conf;
	a.metrics = metrics_create(&a, &conf);
	ck_assert_ptr_nonnull(a.metrics);
	t = render(a.metrics, true, 0);
	ck_assert_ptr_nonnull(strstr(t, "\niostage_stage_bytes_total 0\n"));
	free(t);
	metrics_destroy(a.metrics);
	metrics_destroy(NULL);
}
END_TEST

START_TEST(test_textfile_whole)
{
	char dir[] = "/tmp/check_metrics.XXXXXX", path[64], tmp[80];
	char reason[128], *back;

	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/iostage.prom", dir);
	ck_assert_int_eq(metrics_write_textfile(path, "a 1\n", 4), 0);
	ck_assert_int_eq(metrics_write_textfile(path, "b 2\n", 4), 0);
	back = smallfile_read(path, 1024, reason, sizeof(reason));
	ck_assert_ptr_nonnull(back);
	ck_assert_str_eq(back, "b 2\n");
	free(back);
	/* no NAME.prom.PID left for the collector to trip on */
	snprintf(tmp, sizeof(tmp), "%s.%d", path, (int)getpid());
	ck_assert_int_ne(access(tmp, F_OK), 0);
	ck_assert_int_eq(unlink(path), 0);
	ck_assert_int_eq(rmdir(dir), 0);
	/* a missing directory: -1, nothing written */
	ck_assert_int_eq(metrics_write_textfile("/nonexistent/x.prom", "a", 1),
			 -1);
}
END_TEST

static Suite *metrics_suite(void)
{
	Suite *s = suite_create("metrics");
	TCase *tc = tcase_create("core");

	tcase_add_checked_fixture(tc, setup, NULL);
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, test_two_agents_two_pages);
	tcase_add_test(tc, test_job_series_per_viewer);
	tcase_add_test(tc, test_bare_agent);
	tcase_add_test(tc, test_textfile_whole);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return check_run(metrics_suite());
}
