/* check_outfiles.c - shared vs file-per-process output files per output. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <check.h>

#include "common/telemetry/outfiles.h"
#include "tests/unit/check_run.h"

static const char *const prefixes[] = {
	"/t/nvme/jobs/7/out/ckpt", "/pfs/u/ckpt",  /* output 0 */
	"/t/nvme/jobs/7/out/logs", "/pfs/u/logs/", /* output 1 */
};

/* Two tasks write one shared file, each its own file; the batch script
 * exec()s and reports twice for the same file; one file is elsewhere. */
START_TEST(test_shared_and_fpp_per_output)
{
	struct outfiles *t = outfiles_create(16);
	struct outfiles_count c[3];

	ck_assert_ptr_nonnull(t);
	ck_assert_int_eq(outfiles_add(t, "/t/nvme/jobs/7/out/ckpt/shared", 100,
				      10),
			 0);
	ck_assert_int_eq(outfiles_add(t, "/t/nvme/jobs/7/out/ckpt/shared", 101,
				      20),
			 0);
	ck_assert_int_eq(outfiles_add(t, "/t/nvme/jobs/7/out/ckpt/r0", 100, 5),
			 0);
	ck_assert_int_eq(outfiles_add(t, "/t/nvme/jobs/7/out/ckpt/sub/r1", 101,
				      5),
			 0);
	/* One process, two reports (exec): still one writer. */
	ck_assert_int_eq(outfiles_add(t, "/pfs/u/logs/log.txt", 55, 1), 0);
	ck_assert_int_eq(outfiles_add(t, "/pfs/u/logs/log.txt", 55, 2), 0);
	/* "/pfs/u/ckpt2" is not under "/pfs/u/ckpt". */
	ck_assert_int_eq(outfiles_add(t, "/pfs/u/ckpt2/x", 100, 1), 0);
	ck_assert_uint_eq(outfiles_size(t), 5);
	outfiles_count(t, (const char *const *)prefixes, 2, c);
	ck_assert_uint_eq(c[0].shared, 1);
	ck_assert_uint_eq(c[0].fpp, 2);
	ck_assert_uint_eq(c[0].written, 40);
	ck_assert_uint_eq(c[1].shared, 0);
	ck_assert_uint_eq(c[1].fpp, 1);
	ck_assert_uint_eq(c[1].written, 3);
	ck_assert_uint_eq(c[2].fpp, 1);
	ck_assert_uint_eq(c[2].shared, 0);
	outfiles_destroy(t);
}
END_TEST

/* Past MAX distinct paths new ones are counted as dropped, known ones
 * still gain writers. */
START_TEST(test_bounded)
{
	struct outfiles *t = outfiles_create(3);
	struct outfiles_count c[2];
	char path[64];

	for (int i = 0; i < 5; i++) {
		snprintf(path, sizeof(path), "/pfs/u/ckpt/f%d", i);
		ck_assert_int_eq(outfiles_add(t, path, 10, 1), i < 3 ? 0 : 1);
	}
	ck_assert_uint_eq(outfiles_size(t), 3);
	ck_assert_uint_eq(outfiles_dropped(t), 2);
	ck_assert_int_eq(outfiles_add(t, "/pfs/u/ckpt/f0", 11, 1), 0);
	outfiles_count(t, (const char *const *)prefixes, 1, c);
	ck_assert_uint_eq(c[0].shared, 1);
	ck_assert_uint_eq(c[0].fpp, 2);
	outfiles_destroy(t);
}
END_TEST

/* The table grows from its first slots to MAX paths, none lost. */
START_TEST(test_grows)
{
	struct outfiles *t = outfiles_create(1000);
	struct outfiles_count c[2];
	char path[64];

	for (int i = 0; i < 1000; i++) {
		snprintf(path, sizeof(path), "/pfs/u/ckpt/f%d", i);
		ck_assert_int_eq(outfiles_add(t, path, i % 2 ? 10 : 20, 3), 0);
	}
	for (int i = 0; i < 1000; i += 2) {
		snprintf(path, sizeof(path), "/pfs/u/ckpt/f%d", i);
		ck_assert_int_eq(outfiles_add(t, path, 30, 1), 0);
	}
	ck_assert_uint_eq(outfiles_size(t), 1000);
	ck_assert_uint_eq(outfiles_dropped(t), 0);
	outfiles_count(t, (const char *const *)prefixes, 1, c);
	ck_assert_uint_eq(c[0].shared, 500);
	ck_assert_uint_eq(c[0].fpp, 500);
	ck_assert_uint_eq(c[0].written, 3500);
	outfiles_destroy(t);
}
END_TEST

START_TEST(test_bad_input)
{
	struct outfiles *t = outfiles_create(2);
	struct outfiles_count c[1];

	ck_assert_ptr_null(outfiles_create(0));
	ck_assert_int_eq(outfiles_add(t, NULL, 1, 1), -1);
	ck_assert_int_eq(outfiles_add(t, "", 1, 1), -1);
	ck_assert_int_eq(outfiles_add(t, "relative/x", 1, 1), -1);
	ck_assert_int_eq(outfiles_add(NULL, "/x", 1, 1), -1);
	ck_assert_uint_eq(outfiles_size(t), 0);
	outfiles_count(NULL, NULL, 0, c);
	ck_assert_uint_eq(c[0].fpp, 0);
	ck_assert_int_eq(outfiles_add(t, "/x", 1, 1), 0);
	outfiles_count(t, NULL, 0, c);
	ck_assert_uint_eq(c[0].fpp, 1);
	outfiles_destroy(t);
	outfiles_destroy(NULL);
}
END_TEST

static const struct {
	const char *path, *prefix;
	int under;
} unders[] = {
	{ "/a/b/c", "/a/b", 1 },  { "/a/b", "/a/b", 1 }, { "/a/bc", "/a/b", 0 },
	{ "/a/b/c", "/a/b/", 1 }, { "/a", "/", 1 },      { "/a/b", "", 0 },
	{ "/a/b", NULL, 0 },      { "/a", "/a/b", 0 },
};

START_TEST(test_under)
{
	ck_assert_int_eq(outfiles_under(unders[_i].path, unders[_i].prefix),
			 unders[_i].under);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("outfiles");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, test_shared_and_fpp_per_output);
	tcase_add_test(tc, test_bounded);
	tcase_add_test(tc, test_grows);
	tcase_add_test(tc, test_bad_input);
	tcase_add_loop_test(tc, test_under, 0,
			    sizeof(unders) / sizeof(unders[0]));
	suite_add_tcase(s, tc);
	return check_run(s);
}
