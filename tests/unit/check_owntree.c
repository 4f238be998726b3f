/* check_owntree.c - unit tests for common/fs/owntree: taking a tree built by
 * an unprivileged account over for root (public cache entries).
 *
 * Runs as root in a private temp directory. The tree is made by "the
 * builder" (uid/gid 65534) with write and set-id bits; a symlink in it
 * points at a victim outside that must be left alone.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <check.h>

#include "common/fs/owntree.h"
#include "common/fs/rmtree.h"
#include "tests/unit/check_run.h"
#include "tests/unit/tmp_fixture.h"

#define BUILDER 65534

static char base[64];
static int base_fd = -1;

static void setup(void)
{
	snprintf(base, sizeof(base), "/tmp/check_owntree.XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(base));
	base_fd = open(base, O_RDONLY | O_DIRECTORY);
	ck_assert_int_ge(base_fd, 0);
}

static void teardown(void)
{
	char err[256];

	close(base_fd);
	tmp_remove(base, err, sizeof(err));
}

/* Create REL (a directory with DIR) owned by the builder with MODE. */
static void make(const char *rel, bool dir, mode_t mode)
{
	if (dir) {
		ck_assert_int_eq(mkdirat(base_fd, rel, 0700), 0);
	} else {
		int fd = openat(base_fd, rel, O_WRONLY | O_CREAT | O_EXCL,
				0600);

		ck_assert_int_ge(fd, 0);
		ck_assert_int_eq(write(fd, "x", 1), 1);
		close(fd);
	}
	ck_assert_int_eq(fchownat(base_fd, rel, BUILDER, BUILDER, 0), 0);
	ck_assert_int_eq(fchmodat(base_fd, rel, mode, 0), 0);
}

static void assert_owned(const char *rel, uid_t uid, mode_t mode)
{
	struct stat st;

	ck_assert_int_eq(fstatat(base_fd, rel, &st, AT_SYMLINK_NOFOLLOW), 0);
	ck_assert_msg(st.st_uid == uid && st.st_gid == uid,
		      "%s: owner %u:%u, expected %u", rel, (unsigned)st.st_uid,
		      (unsigned)st.st_gid, (unsigned)uid);
	if (!S_ISLNK(st.st_mode))
		ck_assert_msg((st.st_mode & 07777) == mode,
			      "%s: mode %04o, expected %04o", rel,
			      (unsigned)(st.st_mode & 07777), (unsigned)mode);
}

START_TEST(test_takes_everything)
{
	char err[256] = "";

	make("victim", false, 0666);
	make("data", true, 0775);
	make("data/f", false, 04775);
	make("data/g", false, 02664);
	make("data/sub", true, 01777);
	make("data/sub/h", false, 0666);
	ck_assert_int_eq(symlinkat("../victim", base_fd, "data/link"), 0);
	ck_assert_int_eq(fchownat(base_fd, "data/link", BUILDER, BUILDER,
				  AT_SYMLINK_NOFOLLOW),
			 0);
	ck_assert_msg(owntree_take(base_fd, "data", 0, 0, err, sizeof(err)) ==
			  0,
		      "%s", err);
	assert_owned("data", 0, 0555);
	assert_owned("data/f", 0, 0555);
	assert_owned("data/g", 0, 0444);
	assert_owned("data/sub", 0, 0555);
	assert_owned("data/sub/h", 0, 0444);
	assert_owned("data/link", 0, 0);
	/* What the link points at is not touched. */
	assert_owned("victim", BUILDER, 0666);
}
END_TEST

START_TEST(test_single_file)
{
	char err[256] = "";

	make("one", false, 06777);
	ck_assert_int_eq(owntree_take(base_fd, "one", 0, 0, err, sizeof(err)),
			 0);
	assert_owned("one", 0, 0555);
}
END_TEST

START_TEST(test_refuses_special)
{
	char err[256] = "";

	make("data", true, 0755);
	ck_assert_int_eq(mkfifoat(base_fd, "data/pipe", 0666), 0);
	ck_assert_int_eq(owntree_take(base_fd, "data", 0, 0, err, sizeof(err)),
			 -1);
	ck_assert_int_eq(errno, EINVAL);
	ck_assert_msg(strstr(err, "data/pipe: neither"), "%s", err);
}
END_TEST

START_TEST(test_bad_names)
{
	char err[256] = "";

	ck_assert_int_eq(owntree_take(base_fd, "a/b", 0, 0, err, sizeof(err)),
			 -1);
	ck_assert_int_eq(errno, EINVAL);
	ck_assert_int_eq(owntree_take(base_fd, "..", 0, 0, err, sizeof(err)),
			 -1);
	ck_assert_int_eq(owntree_take(base_fd, NULL, 0, 0, NULL, 0), -1);
	ck_assert_int_eq(owntree_take(base_fd, "missing", 0, 0, err,
				      sizeof(err)),
			 -1);
	ck_assert_int_eq(errno, ENOENT);
	ck_assert_int_eq(owntree_take(-1, "x", 0, 0, err, sizeof(err)), -1);
	ck_assert_int_eq(errno, EBADF);
}
END_TEST

static Suite *owntree_suite(void)
{
	Suite *s = suite_create("owntree");
	TCase *tc = tcase_create("owntree");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_root_test(tc, test_takes_everything);
	tcase_add_root_test(tc, test_single_file);
	tcase_add_root_test(tc, test_refuses_special);
	tcase_add_test(tc, test_bad_names);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return check_run(owntree_suite());
}
