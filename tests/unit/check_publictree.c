/* check_publictree.c - unit tests for common/fs/publictree: the "readable by
 * everyone" rule of public datasets (modes, ACLs, directories above).
 *
 * Runs as root in a private temp directory; ACLs are set by writing the
 * system.posix_acl_access attribute directly (no libacl needed).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <check.h>

#include "common/fs/publictree.h"
#include "common/fs/rmtree.h"
#include "tests/unit/check_run.h"
#include "tests/unit/tmp_fixture.h"

static char base[64];
static int base_fd = -1;

static void setup(void)
{
	snprintf(base, sizeof(base), "/tmp/check_publictree.XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(base));
	ck_assert_int_eq(chmod(base, 0755), 0);
	base_fd = open(base, O_RDONLY | O_DIRECTORY);
	ck_assert_int_ge(base_fd, 0);
}

static void teardown(void)
{
	char err[256];

	close(base_fd);
	tmp_remove(base, err, sizeof(err));
}

static void xmkdir(const char *rel, mode_t mode)
{
	ck_assert_int_eq(mkdirat(base_fd, rel, mode), 0);
	ck_assert_int_eq(fchmodat(base_fd, rel, mode, 0), 0);
}

static void xfile(const char *rel, mode_t mode)
{
	int fd = openat(base_fd, rel, O_WRONLY | O_CREAT | O_EXCL, mode);

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(fchmod(fd, mode), 0);
	close(fd);
}

/* An access ACL on REL granting nothing to uid 65534 (the file's mode
 * unchanged: the mask is the group's bits). */
static void deny_acl(const char *rel)
{
	struct __attribute__((packed)) {
		uint32_t version;
		struct __attribute__((packed)) {
			uint16_t tag, perm;
			uint32_t id;
		} e[5];
	} acl;
	struct stat st;
	char p[256];

	snprintf(p, sizeof(p), "%s/%s", base, rel);
	ck_assert_int_eq(stat(p, &st), 0);
	acl.version = 2;
	acl.e[0].tag = 0x01; /* owner */
	acl.e[0].perm = (st.st_mode >> 6) & 7;
	acl.e[1].tag = 0x02; /* uid 65534: nothing */
	acl.e[1].perm = 0;
	acl.e[1].id = 65534;
	acl.e[2].tag = 0x04; /* group */
	acl.e[2].perm = (st.st_mode >> 3) & 7;
	acl.e[3].tag = 0x10; /* mask = the group's bits: mode unchanged */
	acl.e[3].perm = (st.st_mode >> 3) & 7;
	acl.e[4].tag = 0x20; /* other */
	acl.e[4].perm = st.st_mode & 7;
	acl.e[0].id = acl.e[2].id = acl.e[3].id = acl.e[4].id = UINT32_MAX;
	ck_assert_msg(setxattr(p, "system.posix_acl_access", &acl, sizeof(acl),
			       0) == 0,
		      "setxattr %s: %s", p, strerror(errno));
}

static const struct {
	mode_t mode;
	bool ok;
} modes[] = {
	{ S_IFREG | 0644, true },
	{ S_IFREG | 0444, true },
	{ S_IFREG | 0755, true },
	{ S_IFREG | 0640, false },
	{ S_IFREG | 0604, false }, /* the group cannot read it */
	{ S_IFREG | 0404, false },
	{ S_IFREG | 0044, false }, /* nor the owner */
	{ S_IFREG | 0600, false },
	{ S_IFDIR | 0755, true },
	{ S_IFDIR | 0555, true },
	{ S_IFDIR | 0751, false },
	{ S_IFDIR | 0711, false },
	{ S_IFDIR | 0754, false },
	{ S_IFDIR | 0705, false },
	{ S_IFLNK | 0777, true },
	{ S_IFIFO | 0666, false },
	{ S_IFSOCK | 0777, false },
	{ S_IFCHR | 0666, false },
};

START_TEST(test_mode_ok)
{
	ck_assert_msg(publictree_mode_ok(modes[_i].mode) == modes[_i].ok,
		      "mode %06o", (unsigned)modes[_i].mode);
}
END_TEST

START_TEST(test_acl)
{
	int dfd;

	xfile("plain", 0644);
	xfile("denied", 0644);
	deny_acl("denied");
	ck_assert_int_eq(publictree_has_acl(base_fd, "plain"), 0);
	ck_assert_int_eq(publictree_has_acl(base_fd, "denied"), 1);
	/* The fd itself. */
	xmkdir("d", 0755);
	dfd = openat(base_fd, "d", O_RDONLY | O_DIRECTORY);
	ck_assert_int_eq(publictree_has_acl(dfd, NULL), 0);
	deny_acl("d");
	ck_assert_int_eq(publictree_has_acl(dfd, ""), 1);
	close(dfd);
	/* A symlink is never followed to its target's ACL. */
	ck_assert_int_eq(symlinkat("denied", base_fd, "link"), 0);
	ck_assert_int_eq(publictree_has_acl(base_fd, "link"), 0);
	ck_assert_int_eq(publictree_has_acl(base_fd, "missing"), -1);
	ck_assert_int_eq(errno, ENOENT);
}
END_TEST

/* A kind of ACL the file system answered "not supported" for is not asked
 * again; the kinds it supports still are, so an ACL is still found. */
START_TEST(test_acl_memo)
{
	unsigned unsupported = 0;

	xfile("plain2", 0644);
	xfile("denied2", 0644);
	deny_acl("denied2");
	ck_assert_int_eq(publictree_has_acl_on(base_fd, "plain2", &unsupported),
			 0);
	/* No local Linux file system serves NFSv4 ACLs; the POSIX ACL we
	 * just set is supported. */
	ck_assert_uint_eq(unsupported, 1u << 1);
	ck_assert_int_eq(publictree_has_acl_on(base_fd, "denied2",
					       &unsupported),
			 1);
	ck_assert_uint_eq(unsupported, 1u << 1);
	/* Bits already set are skipped: with both kinds marked unsupported
	 * nothing is asked, so nothing is found (the caller's promise: one
	 * file system per mask). */
	unsupported = (1u << PUBLICTREE_ACL_KINDS) - 1;
	ck_assert_int_eq(publictree_has_acl_on(base_fd, "denied2",
					       &unsupported),
			 0);
	/* A real error is still one, whatever the mask. */
	unsupported = 1u << 1;
	ck_assert_int_eq(publictree_has_acl_on(base_fd, "missing2",
					       &unsupported),
			 -1);
	ck_assert_int_eq(errno, ENOENT);
}
END_TEST

START_TEST(test_above)
{
	char p[256], err[512] = "";

	xmkdir("a", 0755);
	xmkdir("a/b", 0755);
	xmkdir("a/b/c", 0700); /* the dataset itself: not checked here */
	snprintf(p, sizeof(p), "%s/a/b/c", base);
	ck_assert_msg(publictree_check_above(p, err, sizeof(err)) == 0, "%s",
		      err);
	/* A group-only directory above. */
	ck_assert_int_eq(fchmodat(base_fd, "a", 0750, 0), 0);
	ck_assert_int_eq(publictree_check_above(p, err, sizeof(err)), -1);
	ck_assert_int_eq(errno, EACCES);
	ck_assert_msg(strstr(err, "/a (mode 0750) is not searchable by "
				  "everyone"),
		      "%s", err);
	/* o+x but not g+x: members of the group could not pass. */
	ck_assert_int_eq(fchmodat(base_fd, "a", 0701, 0), 0);
	ck_assert_int_eq(publictree_check_above(p, err, sizeof(err)), -1);
	ck_assert_int_eq(fchmodat(base_fd, "a", 0755, 0), 0);
	/* An ACL above. */
	deny_acl("a/b");
	ck_assert_int_eq(publictree_check_above(p, err, sizeof(err)), -1);
	ck_assert_msg(strstr(err, "/a/b has an ACL"), "%s", err);
}
END_TEST

/* Through a symlink: the resolved path's directories are checked too. */
START_TEST(test_above_resolved)
{
	char p[256], err[512] = "";

	xmkdir("private", 0700);
	xmkdir("private/ds", 0755);
	xmkdir("pub", 0755);
	ck_assert_int_eq(symlinkat("../private/ds", base_fd, "pub/ds"), 0);
	snprintf(p, sizeof(p), "%s/pub/ds", base);
	ck_assert_int_eq(publictree_check_above(p, err, sizeof(err)), -1);
	ck_assert_msg(strstr(err, "/private (mode 0700)"), "%s", err);
	ck_assert_int_eq(fchmodat(base_fd, "private", 0755, 0), 0);
	ck_assert_msg(publictree_check_above(p, err, sizeof(err)) == 0, "%s",
		      err);
}
END_TEST

START_TEST(test_above_bad_input)
{
	char err[512] = "";

	ck_assert_int_eq(publictree_check_above(NULL, err, sizeof(err)), -1);
	ck_assert_int_eq(errno, EINVAL);
	ck_assert_int_eq(publictree_check_above("rel/x", err, sizeof(err)), -1);
	ck_assert_int_eq(errno, EINVAL);
	ck_assert_int_eq(publictree_check_above("/nonexistent/x/y", err,
						sizeof(err)),
			 -1);
	ck_assert_int_eq(errno, ENOENT);
	ck_assert_int_eq(publictree_check_above("/", err, sizeof(err)), 0);
}
END_TEST

#define N(a) ((int)(sizeof(a) / sizeof((a)[0])))

static Suite *publictree_suite(void)
{
	Suite *s = suite_create("publictree");
	TCase *tc = tcase_create("publictree");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_loop_test(tc, test_mode_ok, 0, N(modes));
	tcase_add_test(tc, test_acl);
	tcase_add_test(tc, test_acl_memo);
	tcase_add_test(tc, test_above);
	tcase_add_test(tc, test_above_resolved);
	tcase_add_test(tc, test_above_bad_input);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return check_run(publictree_suite());
}
