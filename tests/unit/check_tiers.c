/* check_tiers.c - unit tests for iostaged's tiers (daemon/staging/tiers.c):
 * the start-up checks of a tier root (a directory of the daemon's own that
 * nobody else can write), job directories (made for their user, a stale
 * one replaced, removed whole, half copies removed), which leftover views
 * count as stale, and the space accounting (reservations, commits, the
 * cache's bytes against Capacity).
 *
 * Tiers in temporary directories owned by the test's uid; no root.
 */
#define _GNU_SOURCE
#include <sys/stat.h>

#include "daemon/staging/tiers.h"
#include "tests/unit/agent_fixture.h"
#include "tests/unit/check_run.h"

static struct ag g;

static void setup(void)
{
	ag_init(&g, "node1", 2);
}

static void teardown(void)
{
	ag_fini(&g);
}

static bool exists(const char *fmt, const char *a, const char *b)
{
	char path[PATH_MAX];
	struct stat st;

	snprintf(path, sizeof(path), fmt, a, b);
	return lstat(path, &st) == 0;
}

START_TEST(test_index)
{
	ck_assert_int_eq(tiers_index(g.a.tiers, "t0"), 0);
	ck_assert_int_eq(tiers_index(g.a.tiers, "t1"), 1);
	ck_assert_int_eq(tiers_index(g.a.tiers, "t2"), -1);
	ck_assert_int_eq(tiers_index(g.a.tiers, ""), -1);
	ck_assert_int_eq(tiers_index(g.a.tiers, NULL), -1);
	ck_assert_int_eq(tiers_index(g.a.tiers, "t0/../t1"), -1);
	ck_assert_int_ge(tiers_jobs_fd(g.a.tiers, 0), 0);
	ck_assert_int_ge(tiers_cache_fd(g.a.tiers, 1), 0);
}
END_TEST

/* A tier root that others could write, or that is not a directory, stops
 * the start with one line naming it. */
static const struct {
	mode_t mode;
	bool file;
	const char *why;
} root_cases[] = {
	{ 0777, false, "group/other-writable" },
	{ 0775, false, "group/other-writable" },
	{ 0750, false, "not searchable" },
	{ 0644, true, "Not a directory" },
};

START_TEST(test_bad_tier_root)
{
	char err[CONF_ERR_MAX], path[PATH_MAX];
	struct tiers *ts;

	snprintf(path, sizeof(path), "%s/t1", g.root);
	if (root_cases[_i].file) {
		char rm[256];
		int parent = open(g.root, O_RDONLY | O_DIRECTORY);

		ck_assert_int_eq(rmtree_at(parent, "t1", rm, sizeof(rm)), 0);
		close(parent);
		close(open(path, O_WRONLY | O_CREAT, 0644));
	}
	ck_assert_int_eq(chmod(path, root_cases[_i].mode), 0);
	ts = tiers_create(&g.a, geteuid(), err, sizeof(err));
	ck_assert_ptr_null(ts);
	ck_assert_msg(strstr(err, root_cases[_i].why) != NULL, "%s", err);
	ck_assert_msg(strstr(err, "tier 't1'") != NULL, "%s", err);
	if (!root_cases[_i].file)
		ck_assert_int_eq(chmod(path, 0755), 0);
}
END_TEST

START_TEST(test_tier_root_of_another_owner)
{
	char err[CONF_ERR_MAX];
	struct tiers *ts = tiers_create(&g.a, geteuid() + 1, err, sizeof(err));

	ck_assert_ptr_null(ts);
	ck_assert_msg(strstr(err, "owned by uid") != NULL, "%s", err);
	tiers_destroy(NULL);
}
END_TEST

START_TEST(test_job_dir_made_and_removed)
{
	char err[CONF_ERR_MAX];
	struct stat st;
	char path[PATH_MAX];

	ck_assert_msg(tiers_make_job_dir(g.a.tiers, 0, 42, geteuid(), getegid(),
					 true, err, sizeof(err)) == 0,
		      "%s", err);
	snprintf(path, sizeof(path), "%s/t0/jobs/42", g.root);
	ck_assert_int_eq(lstat(path, &st), 0);
	ck_assert_uint_eq(st.st_mode & 07777, 0700);
	ck_assert_uint_eq(st.st_uid, geteuid());
	ck_assert(exists("%s/t0/jobs/42/%s", g.root, "data"));
	ck_assert(exists("%s/t0/jobs/42/%s", g.root, "local"));
	/* without local */
	ck_assert_int_eq(tiers_make_job_dir(g.a.tiers, 1, 42, geteuid(),
					    getegid(), false, err, sizeof(err)),
			 0);
	ck_assert(!exists("%s/t1/jobs/42/%s", g.root, "local"));
	ck_assert_int_eq(tiers_remove_job_dir(g.a.tiers, 0, 42, err,
					      sizeof(err)),
			 0);
	ck_assert(!exists("%s/t0/jobs/%s", g.root, "42"));
	/* missing is success */
	ck_assert_int_eq(tiers_remove_job_dir(g.a.tiers, 0, 42, err,
					      sizeof(err)),
			 0);
}
END_TEST

/* A directory left by a job nobody knows is never handed to a new job:
 * removed first, whatever the user planted in it. */
START_TEST(test_stale_job_dir_replaced)
{
	char err[CONF_ERR_MAX], path[PATH_MAX], target[128];
	struct stat st;

	snprintf(path, sizeof(path), "%s/t0/jobs/42", g.root);
	ck_assert_int_eq(mkdir(path, 0777), 0);
	snprintf(target, sizeof(target), "%s/outside", g.root);
	ck_assert_int_eq(mkdir(target, 0700), 0);
	snprintf(path, sizeof(path), "%s/t0/jobs/42/data", g.root);
	ck_assert_int_eq(symlink(target, path), 0);
	ck_assert_int_eq(tiers_make_job_dir(g.a.tiers, 0, 42, geteuid(),
					    getegid(), false, err, sizeof(err)),
			 0);
	/* data/ is a real directory again; the link's target untouched */
	ck_assert_int_eq(lstat(path, &st), 0);
	ck_assert(S_ISDIR(st.st_mode));
	ck_assert_int_eq(lstat(target, &st), 0);
	ck_assert(S_ISDIR(st.st_mode));
}
END_TEST

START_TEST(test_remove_partial)
{
	char err[CONF_ERR_MAX], path[PATH_MAX];

	ck_assert_int_eq(tiers_make_job_dir(g.a.tiers, 0, 42, geteuid(),
					    getegid(), false, err, sizeof(err)),
			 0);
	snprintf(path, sizeof(path), "%s/t0/jobs/42/data/.a.partial", g.root);
	ck_assert_int_eq(mkdir(path, 0700), 0);
	snprintf(path, sizeof(path), "%s/t0/jobs/42/data/.b.partial", g.root);
	ck_assert_int_eq(mkdir(path, 0700), 0);
	snprintf(path, sizeof(path), "%s/t0/jobs/42/data/keep", g.root);
	ck_assert_int_eq(mkdir(path, 0700), 0);
	ck_assert_int_eq(tiers_remove_partial(g.a.tiers, 0, 42, "a", err,
					      sizeof(err)),
			 0);
	ck_assert(!exists("%s/t0/jobs/42/data/%s", g.root, ".a.partial"));
	ck_assert(exists("%s/t0/jobs/42/data/%s", g.root, ".b.partial"));
	ck_assert_int_eq(tiers_remove_partial(g.a.tiers, 0, 42, NULL, err,
					      sizeof(err)),
			 0);
	ck_assert(!exists("%s/t0/jobs/42/data/%s", g.root, ".b.partial"));
	ck_assert(exists("%s/t0/jobs/42/data/%s", g.root, "keep"));
	/* a job without a directory: nothing to do */
	ck_assert_int_eq(tiers_remove_partial(g.a.tiers, 0, 43, NULL, err,
					      sizeof(err)),
			 0);
}
END_TEST

/* Capacity 1000: what the cache holds, what jobs committed and what is
 * reserved all count; a reservation past it fails with ENOSPC. */
START_TEST(test_space_accounting)
{
	char err[CONF_ERR_MAX];
	struct tiers_usage u;

	g.conf.tiers[0].capacity = 1000;
	ck_assert_int_eq(tiers_usage(g.a.tiers, 0, &u), 0);
	ck_assert_uint_eq(u.capacity, 1000);
	ck_assert_uint_eq(u.used, 0);
	ck_assert_uint_eq(u.free, 1000);
	tiers_cache_account(g.a.tiers, 0, 300);
	tiers_commit(g.a.tiers, 0, 100);
	ck_assert_int_eq(tiers_reserve(g.a.tiers, 0, "d", 500, err,
				       sizeof(err)),
			 0);
	ck_assert_int_eq(tiers_usage(g.a.tiers, 0, &u), 0);
	ck_assert_uint_eq(u.used, 900);
	ck_assert_uint_eq(u.cache, 300);
	ck_assert_uint_eq(u.reserved, 500);
	ck_assert_uint_eq(u.free, 100);
	ck_assert_int_eq(tiers_reserve(g.a.tiers, 0, "big", 101, err,
				       sizeof(err)),
			 -1);
	ck_assert_int_eq(errno, ENOSPC);
	ck_assert_msg(strstr(err, "tier 't0' full: dataset 'big'") != NULL,
		      "%s", err);
	tiers_release(g.a.tiers, 0, 500);
	/* more given back than held, or taken than there is: 0, not a wrap */
	tiers_release(g.a.tiers, 0, 1);
	tiers_commit(g.a.tiers, 0, -1000);
	tiers_cache_account(g.a.tiers, 0, -1000);
	ck_assert_int_eq(tiers_usage(g.a.tiers, 0, &u), 0);
	ck_assert_uint_eq(u.used, 0);
	ck_assert_uint_eq(u.free, 1000);
	/* the other tier is apart */
	ck_assert_int_eq(tiers_usage(g.a.tiers, 1, &u), 0);
	ck_assert_uint_eq(u.reserved, 0);
}
END_TEST

static bool known_42(void *arg, uint32_t id)
{
	(*(unsigned *)arg)++;
	return id == 42;
}

/* Nothing is mounted here (no root): nothing to detach, and the tiers'
 * own directories are never taken for a job's. */
START_TEST(test_detach_stale_without_mounts)
{
	unsigned asked = 0;

	ck_assert_uint_eq(tiers_detach_stale(g.a.tiers, known_42, &asked), 0);
}
END_TEST

static Suite *tiers_suite(void)
{
	Suite *s = suite_create("tiers");
	TCase *tc = tcase_create("tiers");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_index);
	tcase_add_loop_test(tc, test_bad_tier_root, 0,
			    sizeof(root_cases) / sizeof(root_cases[0]));
	tcase_add_test(tc, test_tier_root_of_another_owner);
	tcase_add_test(tc, test_job_dir_made_and_removed);
	tcase_add_test(tc, test_stale_job_dir_replaced);
	tcase_add_test(tc, test_remove_partial);
	tcase_add_test(tc, test_space_accounting);
	tcase_add_test(tc, test_detach_stale_without_mounts);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return check_run(tiers_suite());
}
