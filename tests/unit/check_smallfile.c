/* check_smallfile.c - unit tests for common/base/smallfile: a file read whole
 * up to a limit, refused when larger, not regular or holding a NUL byte;
 * the buffer follows the file's size, not the limit. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <check.h>

#include "common/base/smallfile.h"
#include "tests/unit/check_run.h"

static char dir[] = "/tmp/check_smallfile.XXXXXX";

static void put(const char *name, const void *data, size_t len)
{
	char path[128];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "w");
	ck_assert_ptr_nonnull(f);
	ck_assert_uint_eq(fwrite(data, 1, len, f), len);
	ck_assert_int_eq(fclose(f), 0);
}

START_TEST(test_sizes)
{
	static const struct {
		size_t len, max;
		int want_errno; /* 0: read */
	} cases[] = {
		{ 0, 0, 0 },           { 0, 16, 0 },
		{ 1, 1, 0 },           { 15, 16, 0 },
		{ 16, 16, 0 },         { 17, 16, EFBIG },
		{ 100000, 100000, 0 }, { 100001, 100000, EFBIG },
		{ 5, 1 << 20, 0 },
	};
	char reason[128], *text, *data = malloc(100001);
	int fd;

	ck_assert_ptr_nonnull(mkdtemp(dir));
	fd = open(dir, O_RDONLY | O_DIRECTORY);
	ck_assert_int_ge(fd, 0);
	for (size_t i = 0; i < 100001; i++)
		data[i] = (char)('a' + i % 26);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct stat st;

		put("f", data, cases[i].len);
		reason[0] = '\0';
		text = smallfile_read_at(fd, "f", O_NOFOLLOW, cases[i].max, &st,
					 reason, sizeof(reason));
		if (cases[i].want_errno) {
			ck_assert_msg(!text, "case %zu", i);
			ck_assert_int_eq(errno, cases[i].want_errno);
			ck_assert_msg(strstr(reason, "larger than"),
				      "case %zu: %s", i, reason);
			continue;
		}
		ck_assert_msg(text, "case %zu: %s", i, reason);
		ck_assert_uint_eq(strlen(text), cases[i].len);
		ck_assert(!memcmp(text, data, cases[i].len));
		ck_assert_int_eq(st.st_size, (off_t)cases[i].len);
		free(text);
	}
	/* a NUL byte hides the rest from a parser */
	put("nul", "ab\0cd", 5);
	ck_assert_ptr_null(
	    smallfile_read_at(fd, "nul", 0, 64, NULL, reason, sizeof(reason)));
	ck_assert_int_eq(errno, EINVAL);
	ck_assert_str_eq(reason, "contains a NUL byte");
	/* not a regular file */
	ck_assert_ptr_null(
	    smallfile_read_at(fd, ".", 0, 64, NULL, reason, sizeof(reason)));
	ck_assert_int_eq(errno, EISDIR);
	{
		char fifo[128];

		snprintf(fifo, sizeof(fifo), "%s/fifo", dir);
		ck_assert_int_eq(mkfifo(fifo, 0600), 0);
		ck_assert_ptr_null(
		    smallfile_read(fifo, 64, reason, sizeof(reason)));
		ck_assert_int_eq(errno, EINVAL);
		ck_assert_str_eq(reason, "not a regular file");
		unlink(fifo);
	}
	ck_assert_ptr_null(smallfile_read_at(fd, "missing", 0, 64, NULL, reason,
					     sizeof(reason)));
	ck_assert_int_eq(errno, ENOENT);
	close(fd);
	snprintf(reason, sizeof(reason), "%s/f", dir);
	unlink(reason);
	snprintf(reason, sizeof(reason), "%s/nul", dir);
	unlink(reason);
	rmdir(dir);
	free(data);
}
END_TEST

/* A file whose size fstat does not know (0 for /proc files, as for one
 * that grows after fstat): the buffer grows as it is read, and the limit
 * still holds. */
START_TEST(test_grows_after_fstat)
{
	char reason[128], *text;
	size_t len;

	text = smallfile_read("/proc/self/status", 1 << 20, reason,
			      sizeof(reason));
	ck_assert_msg(text, "%s", reason);
	len = strlen(text);
	ck_assert_uint_gt(len, 64);
	ck_assert(strstr(text, "Name:"));
	free(text);
	ck_assert_ptr_null(smallfile_read("/proc/self/status", len / 2, reason,
					  sizeof(reason)));
	ck_assert_int_eq(errno, EFBIG);
	ck_assert_ptr_null(
	    smallfile_read("/proc/self/status", 64, reason, sizeof(reason)));
	ck_assert_int_eq(errno, EFBIG);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("smallfile");
	TCase *tc = tcase_create("smallfile");

	tcase_add_test(tc, test_sizes);
	tcase_add_test(tc, test_grows_after_fstat);
	suite_add_tcase(s, tc);
	return check_run(s);
}
