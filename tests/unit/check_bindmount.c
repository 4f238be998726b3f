/* check_bindmount.c - unit tests for common/fs/bindmount: read-only bind
 * mounts made and removed through fds, and mountinfo parsing.
 *
 * The tests run as root (like iostaged). Each one runs in its own forked
 * process (CK_FORK) that first moves into a private mount namespace, so
 * every mount a test makes vanishes with it, whatever happens.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <check.h>

#include "common/fs/bindmount.h"
#include "common/fs/rmtree.h"
#include "tests/unit/check_run.h"
#include "tests/unit/tmp_fixture.h"

static char base[64];
static int base_fd = -1;

static void xmkdir(const char *rel, mode_t mode)
{
	ck_assert_int_eq(mkdirat(base_fd, rel, mode), 0);
}

static void xfile(const char *rel, const char *text)
{
	int fd = openat(base_fd, rel, O_WRONLY | O_CREAT | O_EXCL, 0644);

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
}

static int xopen(const char *rel, int flags)
{
	int fd = openat(base_fd, rel, flags | O_CLOEXEC);

	ck_assert_msg(fd >= 0, "open %s: %s", rel, strerror(errno));
	return fd;
}

static uint64_t mount_id_of(const char *rel)
{
	uint64_t id = 0;
	int fd = xopen(rel, O_PATH | O_NOFOLLOW);

	ck_assert_int_eq(bindmount_id(fd, &id), 0);
	close(fd);
	return id;
}

static bool exists(const char *rel)
{
	struct stat st;

	return fstatat(base_fd, rel, &st, AT_SYMLINK_NOFOLLOW) == 0;
}

/* How many mountinfo lines have their mount point below base. */
static int mounts_below_base(void)
{
	char line[4096];
	FILE *f = fopen("/proc/self/mountinfo", "r");
	int n = 0;

	ck_assert_ptr_nonnull(f);
	while (fgets(line, sizeof(line), f)) {
		struct bindmount_info info;

		line[strcspn(line, "\n")] = '\0';
		if (bindmount_parse_line(line, &info) == 0 &&
		    bindmount_below(base, info.point))
			n++;
	}
	fclose(f);
	return n;
}

/* The mount options of the mount on REL (below base), or "". */
static void options_of(const char *rel, char *buf, size_t len)
{
	char line[4096], want[256];
	FILE *f = fopen("/proc/self/mountinfo", "r");

	buf[0] = '\0';
	snprintf(want, sizeof(want), "%s/%s", base, rel);
	ck_assert_ptr_nonnull(f);
	while (fgets(line, sizeof(line), f)) {
		char copy[4096], *opts;
		struct bindmount_info info;

		line[strcspn(line, "\n")] = '\0';
		snprintf(copy, sizeof(copy), "%s", line);
		if (bindmount_parse_line(copy, &info) < 0 ||
		    strcmp(info.point, want))
			continue;
		/* field 6 of the original line */
		opts = line;
		for (int i = 0; i < 5 && opts; i++) {
			opts = strchr(opts, ' ');
			if (opts)
				opts++;
		}
		if (opts)
			snprintf(buf, len, "%.*s", (int)strcspn(opts, " "),
				 opts);
	}
	fclose(f);
}

static void setup(void)
{
	ck_assert_msg(unshare(CLONE_NEWNS) == 0, "unshare: %s",
		      strerror(errno));
	ck_assert_int_eq(mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL), 0);
	snprintf(base, sizeof(base), "/tmp/check_bindmount.XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(base));
	chmod(base, 0755);
	base_fd = open(base, O_RDONLY | O_DIRECTORY);
	ck_assert_int_ge(base_fd, 0);
	/* The cache entry a job is shown. */
	xmkdir("src", 0755);
	xmkdir("src/sub", 0755);
	xfile("src/sub/f", "hello");
	xfile("src/top", "top");
	xfile("single", "one file");
	xmkdir("data", 0755);
}

static void teardown(void)
{
	char err[256];

	bindmount_detach_under(base_fd, NULL, NULL, err, sizeof(err));
	close(base_fd);
	tmp_remove(base, err, sizeof(err));
}

/* --- parsing -------------------------------------------------------------- */

static const struct {
	const char *line;
	int ok;
	uint64_t id, parent;
	const char *point;
} lines[] = {
	{ "42 27 254:0 /tmp/mt/a /tmp/mt/b ro,nosuid - ext4 /dev/vda rw", 1, 42,
	  27, "/tmp/mt/b" },
	{ "7 1 0:5 / /with\\040space rw - tmpfs t rw", 1, 7, 1, "/with space" },
	{ "7 1 0:5 / /back\\134slash\\011tab rw - tmpfs t rw", 1, 7, 1,
	  "/back\\slash\ttab" },
	{ "7 1 0:5 / /bad\\9escape rw - tmpfs t rw", 1, 7, 1, "/bad\\9escape" },
	{ "", 0, 0, 0, NULL },
	{ "42 27 254:0 /", 0, 0, 0, NULL },
	{ "x 27 254:0 / /m rw", 0, 0, 0, NULL },
	{ "42 -1 254:0 / /m rw", 0, 0, 0, NULL },
	{ "42 27 254:0 / relative rw", 0, 0, 0, NULL },
	{ "99999999999999999999999 1 0:1 / /m rw", 0, 0, 0, NULL },
};

START_TEST(test_parse_line)
{
	char buf[512];
	struct bindmount_info info;
	int r;

	snprintf(buf, sizeof(buf), "%s", lines[_i].line);
	r = bindmount_parse_line(buf, &info);
	if (!lines[_i].ok) {
		ck_assert_int_eq(r, -1);
		ck_assert_int_eq(errno, EINVAL);
		return;
	}
	ck_assert_int_eq(r, 0);
	ck_assert_uint_eq(info.id, lines[_i].id);
	ck_assert_uint_eq(info.parent, lines[_i].parent);
	ck_assert_str_eq(info.point, lines[_i].point);
}
END_TEST

START_TEST(test_parse_null)
{
	struct bindmount_info info;
	char buf[] = "1 2 0:1 / /m rw";

	ck_assert_int_eq(bindmount_parse_line(NULL, &info), -1);
	ck_assert_int_eq(bindmount_parse_line(buf, NULL), -1);
}
END_TEST

static const struct {
	const char *dir, *path, *want;
} belows[] = {
	{ "/x", "/x/a/b", "a/b" },
	{ "/x", "/x/a", "a" },
	{ "/x", "/x", NULL },
	{ "/x", "/x/", NULL },
	{ "/x", "/xy/a", NULL },
	{ "/x", "/", NULL },
	{ "/", "/a", "a" },
	{ "/", "/", NULL },
	{ "relative", "relative/a", NULL },
	{ NULL, "/a", NULL },
	{ "/x", NULL, NULL },
};

START_TEST(test_below)
{
	const char *got = bindmount_below(belows[_i].dir, belows[_i].path);

	if (!belows[_i].want)
		ck_assert_ptr_null(got);
	else
		ck_assert_str_eq(got, belows[_i].want);
}
END_TEST

/* --- mounting ------------------------------------------------------------- */

START_TEST(test_tree_read_only)
{
	char err[256], opts[256];
	int src = xopen("src", O_PATH | O_NOFOLLOW);
	int dfd = xopen("data", O_RDONLY | O_DIRECTORY);
	uint64_t before = mount_id_of("data");

	ck_assert_msg(bindmount_ro_at(src, dfd, "ds", err, sizeof(err)) == 0,
		      "%s", err);
	/* A real directory holding the entry's files. */
	ck_assert(exists("data/ds/sub/f"));
	ck_assert(exists("data/ds/top"));
	ck_assert_uint_ne(mount_id_of("data/ds"), before);
	options_of("data/ds", opts, sizeof(opts));
	ck_assert_msg(strstr(opts, "ro") == opts && strstr(opts, "nosuid") &&
			  strstr(opts, "nodev"),
		      "options '%s'", opts);
	/* Nobody writes through it, root included. */
	ck_assert_int_eq(openat(base_fd, "data/ds/new", O_WRONLY | O_CREAT,
				0644),
			 -1);
	ck_assert_int_eq(errno, EROFS);
	ck_assert_int_eq(openat(base_fd, "data/ds/top", O_WRONLY), -1);
	ck_assert_int_eq(errno, EROFS);
	ck_assert_int_eq(fchmodat(base_fd, "data/ds/top", 0666, 0), -1);
	ck_assert_int_eq(errno, EROFS);
	ck_assert_int_eq(unlinkat(base_fd, "data/ds/top", 0), -1);
	ck_assert_int_eq(errno, EROFS);
	/* One mount; detaching it leaves the empty mount point. */
	ck_assert_int_eq(mounts_below_base(), 1);
	ck_assert_int_eq(bindmount_detach_at(dfd, "ds", err, sizeof(err)), 1);
	ck_assert_int_eq(mounts_below_base(), 0);
	ck_assert(!exists("data/ds/top"));
	ck_assert(exists("src/top"));
	ck_assert_int_eq(bindmount_detach_at(dfd, "ds", err, sizeof(err)), 0);
	ck_assert_int_eq(bindmount_detach_at(dfd, "missing", err, sizeof(err)),
			 0);
	close(src);
	close(dfd);
}
END_TEST

START_TEST(test_single_file)
{
	char err[256], buf[32] = "";
	int src = xopen("single", O_PATH | O_NOFOLLOW);
	int dfd = xopen("data", O_RDONLY | O_DIRECTORY);
	struct stat st;
	int fd;

	ck_assert_msg(bindmount_ro_at(src, dfd, "one", err, sizeof(err)) == 0,
		      "%s", err);
	ck_assert_int_eq(fstatat(base_fd, "data/one", &st, 0), 0);
	ck_assert(S_ISREG(st.st_mode));
	fd = xopen("data/one", O_RDONLY);
	ck_assert_int_eq(read(fd, buf, sizeof(buf) - 1), 8);
	ck_assert_str_eq(buf, "one file");
	close(fd);
	ck_assert_int_eq(openat(base_fd, "data/one", O_WRONLY), -1);
	ck_assert_int_eq(errno, EROFS);
	ck_assert_int_eq(bindmount_detach_at(dfd, "one", err, sizeof(err)), 1);
	ck_assert_int_eq(mounts_below_base(), 0);
	close(src);
	close(dfd);
}
END_TEST

/* A name left by the old layout (a symlink) is replaced, never followed:
 * the directory it pointed at gets no mount. */
START_TEST(test_replaces_symlink_never_follows)
{
	char err[256];
	int src = xopen("src", O_PATH | O_NOFOLLOW);
	int dfd = xopen("data", O_RDONLY | O_DIRECTORY);
	uint64_t victim;

	xmkdir("victim", 0755);
	victim = mount_id_of("victim");
	ck_assert_int_eq(symlinkat("../victim", dfd, "ds"), 0);
	ck_assert_msg(bindmount_ro_at(src, dfd, "ds", err, sizeof(err)) == 0,
		      "%s", err);
	ck_assert_uint_eq(mount_id_of("victim"), victim);
	ck_assert(exists("data/ds/top"));
	ck_assert(!exists("victim/top"));
	close(src);
	close(dfd);
}
END_TEST

/* Mounting again replaces the first mount instead of stacking. */
START_TEST(test_again_replaces)
{
	char err[256];
	int src = xopen("src", O_PATH | O_NOFOLLOW);
	int one = xopen("single", O_PATH | O_NOFOLLOW);
	int dfd = xopen("data", O_RDONLY | O_DIRECTORY);

	ck_assert_int_eq(bindmount_ro_at(src, dfd, "ds", err, sizeof(err)), 0);
	ck_assert_int_eq(bindmount_ro_at(src, dfd, "ds", err, sizeof(err)), 0);
	ck_assert_int_eq(mounts_below_base(), 1);
	/* A file where a tree was: the directory makes way. */
	ck_assert_msg(bindmount_ro_at(one, dfd, "ds", err, sizeof(err)) == 0,
		      "%s", err);
	ck_assert_int_eq(mounts_below_base(), 1);
	ck_assert_int_eq(bindmount_detach_at(dfd, "ds", err, sizeof(err)), 1);
	close(src);
	close(one);
	close(dfd);
}
END_TEST

START_TEST(test_bad_arguments)
{
	char err[256] = "";
	int dfd = xopen("data", O_RDONLY | O_DIRECTORY);
	int src = xopen("src", O_PATH | O_NOFOLLOW);

	ck_assert_int_eq(mkfifoat(base_fd, "fifo", 0600), 0);
	int fifo = xopen("fifo", O_PATH | O_NOFOLLOW);

	ck_assert_int_eq(bindmount_ro_at(fifo, dfd, "x", err, sizeof(err)), -1);
	ck_assert_int_eq(errno, EINVAL);
	ck_assert_int_eq(bindmount_ro_at(src, dfd, "../x", err, sizeof(err)),
			 -1);
	ck_assert_int_eq(bindmount_detach_at(dfd, "..", err, sizeof(err)), -1);
	ck_assert_int_eq(errno, EINVAL);
	ck_assert_int_eq(bindmount_detach_at(dfd, NULL, err, sizeof(err)), -1);
	ck_assert_int_eq(bindmount_detach_at(dfd, "", NULL, 0), -1);
	ck_assert_int_eq(mounts_below_base(), 0);
	close(fifo);
	close(src);
	close(dfd);
}
END_TEST

/* --- detaching everything below a directory ------------------------------- */

/* The job directories' layout: jobs/J/data/NAME. */
static void mount_job(const char *job, const char *name)
{
	char p[128], err[256];
	int src = xopen("src", O_PATH | O_NOFOLLOW), dfd;

	snprintf(p, sizeof(p), "jobs/%s", job);
	if (!exists("jobs"))
		xmkdir("jobs", 0755);
	if (!exists(p))
		xmkdir(p, 0700);
	snprintf(p, sizeof(p), "jobs/%s/data", job);
	if (!exists(p))
		xmkdir(p, 0755);
	dfd = xopen(p, O_RDONLY | O_DIRECTORY);
	ck_assert_msg(bindmount_ro_at(src, dfd, name, err, sizeof(err)) == 0,
		      "%s", err);
	close(dfd);
	close(src);
}

START_TEST(test_detach_under_all)
{
	char err[256];
	int jobs;

	mount_job("1", "a");
	mount_job("1", "b");
	mount_job("2", "a");
	/* The user renames data/ in their job directory and plants a link
	 * where it was: the mounts are found where they are now. */
	ck_assert_int_eq(renameat(base_fd, "jobs/2/data", base_fd,
				  "jobs/2/moved"),
			 0);
	ck_assert_int_eq(symlinkat("../../src", base_fd, "jobs/2/data"), 0);
	ck_assert_int_eq(mounts_below_base(), 3);
	jobs = xopen("jobs", O_RDONLY | O_DIRECTORY);
	ck_assert_int_eq(bindmount_detach_under(jobs, NULL, NULL, err,
						sizeof(err)),
			 3);
	ck_assert_int_eq(mounts_below_base(), 0);
	ck_assert(exists("src/top"));
	ck_assert_int_eq(bindmount_detach_under(jobs, NULL, NULL, err,
						sizeof(err)),
			 0);
	close(jobs);
}
END_TEST

static bool only_job_2(const char *rel, void *arg)
{
	(void)arg;
	return !strncmp(rel, "2/", 2);
}

START_TEST(test_detach_under_selected)
{
	char err[256];
	int jobs;

	mount_job("1", "a");
	mount_job("2", "a");
	mount_job("2", "b");
	jobs = xopen("jobs", O_RDONLY | O_DIRECTORY);
	ck_assert_int_eq(bindmount_detach_under(jobs, only_job_2, NULL, err,
						sizeof(err)),
			 2);
	ck_assert_int_eq(mounts_below_base(), 1);
	ck_assert(exists("jobs/1/data/a/top"));
	ck_assert(!exists("jobs/2/data/a/top"));
	close(jobs);
}
END_TEST

/* Two mounts stacked on one name both go, top first. */
START_TEST(test_detach_under_stacked)
{
	char err[256], sp[32], tp[32];
	int jobs, src, t;

	mount_job("1", "a");
	xmkdir("src2", 0755);
	src = xopen("src2", O_PATH | O_NOFOLLOW);
	t = xopen("jobs/1/data/a", O_PATH | O_NOFOLLOW);
	snprintf(sp, sizeof(sp), "/proc/self/fd/%d", src);
	snprintf(tp, sizeof(tp), "/proc/self/fd/%d", t);
	ck_assert_int_eq(mount(sp, tp, NULL, MS_BIND, NULL), 0);
	ck_assert_int_eq(mounts_below_base(), 2);
	jobs = xopen("jobs", O_RDONLY | O_DIRECTORY);
	ck_assert_int_eq(bindmount_detach_under(jobs, NULL, NULL, err,
						sizeof(err)),
			 2);
	ck_assert_int_eq(mounts_below_base(), 0);
	close(jobs);
	close(t);
	close(src);
}
END_TEST

#define N(a) ((int)(sizeof(a) / sizeof((a)[0])))

static Suite *bindmount_suite(void)
{
	Suite *s = suite_create("bindmount");
	TCase *tp = tcase_create("parse");
	TCase *tc = tcase_create("mount");

	tcase_add_loop_test(tp, test_parse_line, 0, N(lines));
	tcase_add_test(tp, test_parse_null);
	tcase_add_loop_test(tp, test_below, 0, N(belows));
	suite_add_tcase(s, tp);

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_root_test(tc, test_tree_read_only);
	tcase_add_root_test(tc, test_single_file);
	tcase_add_root_test(tc, test_replaces_symlink_never_follows);
	tcase_add_root_test(tc, test_again_replaces);
	tcase_add_root_test(tc, test_bad_arguments);
	tcase_add_root_test(tc, test_detach_under_all);
	tcase_add_root_test(tc, test_detach_under_selected);
	tcase_add_root_test(tc, test_detach_under_stacked);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return check_run(bindmount_suite());
}
