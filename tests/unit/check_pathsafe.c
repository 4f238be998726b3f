/* check_pathsafe.c - unit tests for common/config/pathsafe. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <check.h>

#include "common/config/pathsafe.h"
#include "tests/unit/check_run.h"

struct norm_case {
	const char *in;
	const char *want; /* NULL: must fail */
	const char *reason;
};

static const struct norm_case norm_cases[] = {
	{ "/", "/", NULL },
	{ "/pfs/imagenet", "/pfs/imagenet", NULL },
	{ "//pfs///imagenet//", "/pfs/imagenet", NULL },
	{ "/pfs/imagenet/", "/pfs/imagenet", NULL },
	{ "////", "/", NULL },
	{ "/a.b/..c/c..", "/a.b/..c/c..", NULL },
	{ "/.hidden/x", "/.hidden/x", NULL },
	{ "/with space/é", "/with space/é", NULL },
	{ "/pfs/x:nvme", "/pfs/x:nvme", NULL },
	{ NULL, NULL, "empty path" },
	{ "", NULL, "empty path" },
	{ "relative/x", NULL, "not an absolute path" },
	{ "x", NULL, "not an absolute path" },
	{ "./x", NULL, "not an absolute path" },
	{ "/pfs/../etc/shadow", NULL, "contains a '..' component" },
	{ "/..", NULL, "contains a '..' component" },
	{ "/pfs/..", NULL, "contains a '..' component" },
	{ "/pfs/x:../../t", NULL, "contains a '..' component" },
	{ "/pfs/./x", NULL, "contains a '.' component" },
	{ "/pfs/.", NULL, "contains a '.' component" },
	{ "/pfs/x\n/etc", NULL, "contains a control character" },
	{ "/pfs/\ttab", NULL, "contains a control character" },
	{ "/pfs/\x7f", NULL, "contains a control character" },
	{ "/pfs/\x1b[31m", NULL, "contains a control character" },
};

START_TEST(test_normalize_table)
{
	const struct norm_case *c = &norm_cases[_i];
	char out[64], err[128];

	memset(out, 'Z', sizeof(out));
	out[sizeof(out) - 1] = '\0';
	err[0] = '\0';
	errno = 0;
	if (c->want) {
		ck_assert_msg(pathsafe_normalize(c->in, out, sizeof(out), err,
						 sizeof(err)) == 0,
			      "case %d '%s': %s", _i, c->in, err);
		ck_assert_str_eq(out, c->want);
	} else {
		ck_assert_int_eq(pathsafe_normalize(c->in, out, sizeof(out),
						    err, sizeof(err)),
				 -1);
		ck_assert_msg(strstr(err, c->reason), "case %d: got '%s'", _i,
			      err);
		ck_assert_int_eq(errno, EINVAL);
		/* No side effects on failure. */
		ck_assert_int_eq(out[0], 'Z');
	}
}
END_TEST

START_TEST(test_normalize_length)
{
	char big[2001], out[1024], err[128];

	/* 2000-byte path: too long for a 1024-byte buffer. */
	big[0] = '/';
	memset(big + 1, 'a', sizeof(big) - 2);
	big[sizeof(big) - 1] = '\0';
	errno = 0;
	ck_assert_int_eq(pathsafe_normalize(big, out, sizeof(out), err,
					    sizeof(err)),
			 -1);
	ck_assert_int_eq(errno, ENAMETOOLONG);
	ck_assert_str_eq(err, "longer than 1023 bytes");

	/* Exactly 1023 bytes fits. */
	big[1023] = '\0';
	ck_assert_int_eq(pathsafe_normalize(big, out, sizeof(out), err,
					    sizeof(err)),
			 0);
	ck_assert_uint_eq(strlen(out), 1023);

	/* 1024 bytes does not. */
	big[1023] = 'a';
	big[1024] = '\0';
	ck_assert_int_eq(pathsafe_normalize(big, out, sizeof(out), err,
					    sizeof(err)),
			 -1);

	/* Long only because of slashes: normalizes to something short. */
	memset(big, '/', sizeof(big) - 1);
	memcpy(big + 1500, "pfs", 3);
	ck_assert_int_eq(pathsafe_normalize(big, out, sizeof(out), err,
					    sizeof(err)),
			 0);
	ck_assert_str_eq(out, "/pfs");

	/* Buffers too small, NULL buffers, NULL err. */
	ck_assert_int_eq(pathsafe_normalize("/ab", out, 3, err, sizeof(err)),
			 -1);
	ck_assert_int_eq(pathsafe_normalize("/ab", out, 4, NULL, 0), 0);
	ck_assert_str_eq(out, "/ab");
	ck_assert_int_eq(pathsafe_normalize("/ab", NULL, 4, NULL, 0), -1);
	ck_assert_int_eq(pathsafe_normalize("/ab", out, 0, NULL, 0), -1);
	ck_assert_int_eq(pathsafe_normalize("x", out, 4, NULL, 0), -1);
	/* Tiny err buffer is still NUL-terminated. */
	ck_assert_int_eq(pathsafe_normalize("x", out, 4, err, 4), -1);
	ck_assert_str_eq(err, "not");
}
END_TEST

START_TEST(test_normalize_in_place)
{
	char buf[64] = "//pfs//x/";
	char err[64];

	/* out may alias path: the write never overtakes the read. */
	ck_assert_int_eq(pathsafe_normalize(buf, buf, sizeof(buf), err,
					    sizeof(err)),
			 0);
	ck_assert_str_eq(buf, "/pfs/x");
}
END_TEST

struct comp_case {
	const char *name;
	size_t maxlen;
	int want;
};

static const struct comp_case comp_cases[] = {
	{ "imagenet", 32, 1 },
	{ "a", 32, 1 },
	{ "data.v2", 32, 1 },
	{ "A-b_c.9", 32, 1 },
	{ "...", 32, 1 },
	{ "1234567890123456789012345678901", 32, 1 },
	{ "12345678901234567890123456789012", 32, 0 },
	{ NULL, 32, 0 },
	{ "", 32, 0 },
	{ ".", 32, 0 },
	{ "..", 32, 0 },
	{ "a/b", 32, 0 },
	{ "/", 32, 0 },
	{ "../x", 32, 0 },
	{ "a b", 32, 0 },
	{ "a\n", 32, 0 },
	{ "é", 32, 0 },
	{ "a:b", 32, 0 },
	{ "ab", 2, 0 },
	{ "a", 2, 1 },
	{ "a", 1, 0 },
	{ "a", 0, 0 },
};

START_TEST(test_component_table)
{
	const struct comp_case *c = &comp_cases[_i];

	ck_assert_msg(pathsafe_is_component(c->name, c->maxlen) == c->want,
		      "case %d '%s'", _i, c->name ? c->name : "(null)");
}
END_TEST

struct under_case {
	const char *path, *root;
	int want;
};

static const struct under_case under_cases[] = {
	{ "/local/nvme/jobs/1", "/local/nvme", 1 },
	{ "/local/nvme", "/local/nvme", 1 },
	{ "/local/nvme2", "/local/nvme", 0 },
	{ "/local/nvm", "/local/nvme", 0 },
	{ "/local", "/local/nvme", 0 },
	{ "/anything", "/", 1 },
	{ "/", "/", 1 },
	{ "/local/nvme/../etc", "/local/nvme", 0 },
	{ "/local/nvme/./x", "/local/nvme", 0 },
	{ "/local/nvme//x", "/local/nvme", 0 },
	{ "/local/nvme/x/", "/local/nvme", 0 },
	{ "/local/nvme/x", "/local/nvme/", 0 },
	{ "local/nvme/x", "local/nvme", 0 },
	{ "/local/nvme/\n", "/local/nvme", 0 },
	{ NULL, "/", 0 },
	{ "/x", NULL, 0 },
	{ "", "", 0 },
};

START_TEST(test_under_table)
{
	const struct under_case *c = &under_cases[_i];

	ck_assert_msg(pathsafe_is_under(c->path, c->root) == c->want,
		      "case %d '%s' under '%s'", _i,
		      c->path ? c->path : "(null)",
		      c->root ? c->root : "(null)");
}
END_TEST

struct rel_case {
	const char *rel;
	size_t maxlen;
	int want;
};

static const struct rel_case rel_cases[] = {
	{ "file", 64, 1 },
	{ "dir/sub/file.bin", 64, 1 },
	{ ".hidden", 64, 1 },
	{ "..dots/a..b/...", 64, 1 },
	{ "with space/é", 64, 1 },
	{ NULL, 64, 0 },
	{ "", 64, 0 },
	{ "/etc/shadow", 64, 0 },
	{ "/", 64, 0 },
	{ ".", 64, 0 },
	{ "..", 64, 0 },
	{ "../x", 64, 0 },
	{ "a/../../etc/shadow", 64, 0 },
	{ "a/..", 64, 0 },
	{ "a/./b", 64, 0 },
	{ "./a", 64, 0 },
	{ "a//b", 64, 0 },
	{ "a/", 64, 0 },
	{ "a\n/b", 64, 0 },
	{ "a\nb", 64, 0 },
	{ "a\001b", 64, 0 },
	{ "a\tb", 64, 0 },
	{ "ok/\x1b[31mred", 64, 0 },
	{ "ok/\x7f", 64, 0 },
	{ "a\\b", 64, 1 }, /* a backslash is just a character */
	{ "abc", 4, 1 },
	{ "abcd", 4, 0 },
	{ "a", 1, 0 },
	{ "a", 0, 0 },
};

START_TEST(test_relative_table)
{
	const struct rel_case *c = &rel_cases[_i];

	ck_assert_msg(pathsafe_is_relative(c->rel, c->maxlen) == c->want,
		      "case %d '%s'", _i, c->rel ? c->rel : "(null)");
}
END_TEST

START_TEST(test_relative_overlong)
{
	char big[5000];

	memset(big, 'a', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	for (size_t i = 100; i < sizeof(big) - 1; i += 100)
		big[i] = '/';
	ck_assert_int_eq(pathsafe_is_relative(big, 4096), 0);
	ck_assert_int_eq(pathsafe_is_relative(big, sizeof(big)), 1);
}
END_TEST

#define N(a) ((int)(sizeof(a) / sizeof((a)[0])))

static Suite *pathsafe_suite(void)
{
	Suite *s = suite_create("pathsafe");
	TCase *tc = tcase_create("core");

	tcase_add_loop_test(tc, test_normalize_table, 0, N(norm_cases));
	tcase_add_test(tc, test_normalize_length);
	tcase_add_test(tc, test_normalize_in_place);
	tcase_add_loop_test(tc, test_component_table, 0, N(comp_cases));
	tcase_add_loop_test(tc, test_under_table, 0, N(under_cases));
	tcase_add_loop_test(tc, test_relative_table, 0, N(rel_cases));
	tcase_add_test(tc, test_relative_overlong);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return check_run(pathsafe_suite());
}
