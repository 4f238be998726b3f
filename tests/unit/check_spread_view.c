/* check_spread_view.c - daemon/staging/spread_view.c as root: a view that
 * ends before it is ready fails the dataset with one line and leaves
 * nothing mounted and no directory, and so does one that stops answering
 * right after "ready" (its connection is aborted: iostaged does not wait
 * on it); stopping the views of a job without any is a no-op; the views
 * of jobs no longer known go at start. The
 * whole view (overlay, FUSE, iostage-view) runs in the 3-node cluster's
 * tests/cluster/test_spread.sh; the program alone in check_view.c. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <check.h>

#include "common/base/deadline.h"
#include "daemon/staging/spread_view.h"
#include "tests/unit/agent_fixture.h"
#include "tests/unit/check_run.h"

static struct ag g;

static void setup(void)
{
	ag_init(&g, "n1", 1);
}

static void teardown(void)
{
	ag_fini(&g);
}

/* Lines of /proc/self/mountinfo naming PATH. */
static int mounts_under(const char *path)
{
	char line[4096];
	FILE *f = fopen("/proc/self/mountinfo", "r");
	int n = 0;

	ck_assert_ptr_nonnull(f);
	while (fgets(line, sizeof(line), f))
		if (strstr(line, path))
			n++;
	fclose(f);
	return n;
}

#define KEY "0123456789abcdef0123456789abcdef"

/* Job JOBID's dataset "d" on n1 alone, as nobody; VERSION 0: no part
 * held here. */
static struct spread_view_args view_args(uint32_t jobid, unsigned version,
					 int listing)
{
	return (struct spread_view_args){
		.jobid = jobid,
		.name = "d",
		.src = "/pfs/d",
		.tier = 0,
		.key = KEY,
		.version = version,
		.plan = "n1=1",
		.self = "n1",
		.listing_fd = listing,
		.uid = 65534,
		.gid = 65534,
		.user = "nobody",
	};
}

START_TEST(test_view_that_never_gets_ready)
{
	char err[CONF_ERR_MAX] = "", views[CONF_PATH_MAX + 32];
	int listing = open(g.conf.state_dir, O_TMPFILE | O_RDWR, 0600);
	struct spread_view_args va = view_args(7, 0, listing);
	struct stat st;
	pid_t pid = 1;

	ck_assert_int_ge(listing, 0);
	/* a "view" that exits at once, saying nothing */
	snprintf(g.conf.view_program, sizeof(g.conf.view_program), "%s",
		 "/bin/true");
	ck_assert_int_eq(spread_view_start(&g.a, &va, &pid, err, sizeof(err)),
			 -1);
	ck_assert_msg(strstr(err, "ended before it was ready") != NULL, "%s",
		      err);
	ck_assert_int_eq(pid, 1); /* untouched on failure */
	snprintf(views, sizeof(views), "%s/views/7", g.conf.state_dir);
	ck_assert_int_eq(mounts_under(views), 0);
	/* the job's views go, the directory with them */
	ck_assert_int_eq(spread_view_stop(&g.a, 7, err, sizeof(err)), 0);
	ck_assert_int_ne(stat(views, &st), 0);
	/* a program that is not there: one line naming the key */
	snprintf(g.conf.view_program, sizeof(g.conf.view_program), "%s",
		 "/nonexistent/iostage-view");
	ck_assert_int_eq(spread_view_start(&g.a, &va, &pid, err, sizeof(err)),
			 -1);
	ck_assert_msg(strstr(err, "ViewProgram=/nonexistent/iostage-view") !=
			  NULL,
		      "%s", err);
	ck_assert_int_eq(mounts_under(views), 0);
	ck_assert_int_eq(spread_view_stop(&g.a, 7, err, sizeof(err)), 0);
	close(listing);
}
END_TEST

/* This program, started by spread_view_start as its "view" (argv[1] is
 * then "--fuse-fd"): it says "ready" and stops itself holding the
 * /dev/fuse fd, as a view whose user sends it SIGSTOP right after "ready"
 * would. Nothing it is asked is ever answered. */
static void be_a_view_that_stops(void)
{
	if (write(STDOUT_FILENO, "ready\n", 6) != 6)
		_exit(1);
	raise(SIGSTOP);
	_exit(0);
}

START_TEST(test_view_stopped_after_ready)
{
	char err[CONF_ERR_MAX] = "", views[CONF_PATH_MAX + 32],
	     part[CONF_PATH_MAX + 96];
	int listing = open(g.conf.state_dir, O_TMPFILE | O_RDWR, 0600);
	/* a part held here: the overlay goes over it */
	struct spread_view_args va = view_args(8, 1, listing);
	long long t0;
	pid_t pid = 1;

	ck_assert_int_ge(listing, 0);
	snprintf(part, sizeof(part), "%s/cache/%s.v1", g.conf.tiers[0].path,
		 KEY);
	ck_assert_int_eq(mkdir(part, 0755), 0);
	strncat(part, "/data", sizeof(part) - strlen(part) - 1);
	ck_assert_int_eq(mkdir(part, 0755), 0);
	snprintf(g.conf.view_program, sizeof(g.conf.view_program), "%s",
		 "/proc/self/exe");
	t0 = deadline_now_ms();
	ck_assert_int_eq(spread_view_start(&g.a, &va, &pid, err, sizeof(err)),
			 -1);
	ck_assert_msg(strstr(err, "did not answer the overlay's mount") != NULL,
		      "%s", err);
	/* bounded: the watch's 10 s, the reaping's 2 s, and slack */
	ck_assert_int_lt(deadline_now_ms() - t0, 25000);
	ck_assert_int_eq(pid, 1);
	snprintf(views, sizeof(views), "%s/views/8", g.conf.state_dir);
	ck_assert_int_eq(mounts_under(views), 0);
	ck_assert_int_eq(spread_view_stop(&g.a, 8, err, sizeof(err)), 0);
	close(listing);
}
END_TEST

static bool only_9(void *arg, uint32_t id)
{
	(void)arg;
	return id == 9;
}

START_TEST(test_stale_views_go)
{
	char err[CONF_ERR_MAX], p[CONF_PATH_MAX + 32];
	struct stat st;

	/* nothing made yet: no-ops */
	ck_assert_int_eq(spread_view_stop(&g.a, 3, err, sizeof(err)), 0);
	ck_assert_uint_eq(spread_view_stale(&g.a, only_9, NULL), 0);
	/* two jobs' (empty) view directories: the unknown one goes */
	snprintf(p, sizeof(p), "%s/views", g.conf.state_dir);
	ck_assert_int_eq(mkdir(p, 0700), 0);
	snprintf(p, sizeof(p), "%s/views/9", g.conf.state_dir);
	ck_assert_int_eq(mkdir(p, 0700), 0);
	snprintf(p, sizeof(p), "%s/views/12", g.conf.state_dir);
	ck_assert_int_eq(mkdir(p, 0700), 0);
	ck_assert_uint_eq(spread_view_stale(&g.a, only_9, NULL), 1);
	ck_assert_int_ne(stat(p, &st), 0);
	snprintf(p, sizeof(p), "%s/views/9", g.conf.state_dir);
	ck_assert_int_eq(stat(p, &st), 0);
}
END_TEST

int main(int argc, char **argv)
{
	Suite *s;
	TCase *tc;

	if (argc > 1 && !strcmp(argv[1], "--fuse-fd"))
		be_a_view_that_stops();
	s = suite_create("spread_view");
	tc = tcase_create("core");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 30);
	tcase_add_root_test(tc, test_view_that_never_gets_ready);
	tcase_add_root_test(tc, test_view_stopped_after_ready);
	tcase_add_test(tc, test_stale_views_go);
	suite_add_tcase(s, tc);
	return check_run(s);
}
