/* check_beneath.c - beneath_open: a path beneath a directory, never
 * through a symlink nor out of it. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <check.h>

#include "common/fs/beneath.h"
#include "common/fs/rmtree.h"
#include "tests/unit/check_run.h"
#include "tests/unit/tmp_fixture.h"

START_TEST(test_beneath)
{
	char base[] = "/tmp/check_beneath.XXXXXX", path[128], err[256];
	int top, fd;

	ck_assert_ptr_nonnull(mkdtemp(base));
	snprintf(path, sizeof(path), "%s/top", base);
	ck_assert_int_eq(mkdir(path, 0700), 0);
	snprintf(path, sizeof(path), "%s/top/d", base);
	ck_assert_int_eq(mkdir(path, 0700), 0);
	snprintf(path, sizeof(path), "%s/top/d/f", base);
	fd = open(path, O_WRONLY | O_CREAT, 0600);
	ck_assert_int_ge(fd, 0);
	close(fd);
	snprintf(path, sizeof(path), "%s/outside", base);
	fd = open(path, O_WRONLY | O_CREAT, 0600);
	close(fd);
	snprintf(path, sizeof(path), "%s/top/link", base);
	ck_assert_int_eq(symlink("d", path), 0);
	snprintf(path, sizeof(path), "%s/top", base);
	top = open(path, O_PATH | O_DIRECTORY);
	ck_assert_int_ge(top, 0);

	fd = beneath_open(top, "d/f", O_RDONLY, 0);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_ne(fcntl(fd, F_GETFD) & FD_CLOEXEC, 0);
	close(fd);
	/* a symlink on the way, or at the end */
	ck_assert_int_eq(beneath_open(top, "link/f", O_RDONLY, 0), -1);
	ck_assert_int_eq(errno, ELOOP);
	ck_assert_int_eq(beneath_open(top, "link", O_RDONLY, 0), -1);
	/* out of the directory */
	ck_assert_int_eq(beneath_open(top, "../outside", O_RDONLY, 0), -1);
	ck_assert_int_eq(errno, EXDEV);
	ck_assert_int_eq(beneath_open(top, "/etc/passwd", O_RDONLY, 0), -1);
	/* a missing one */
	ck_assert_int_eq(beneath_open(top, "d/none", O_RDONLY, 0), -1);
	ck_assert_int_eq(errno, ENOENT);
	/* more resolve flags are added, not replacing */
	ck_assert_int_eq(beneath_open(top, "link/f", O_RDONLY, RESOLVE_NO_XDEV),
			 -1);
	close(top);
	tmp_remove(base, err, sizeof(err));
}
END_TEST

int main(void)
{
	Suite *s = suite_create("beneath");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, test_beneath);
	suite_add_tcase(s, tc);
	return check_run(s);
}
