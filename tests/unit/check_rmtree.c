/* check_rmtree.c - unit tests for common/fs/rmtree: safe recursive removal.
 *
 * The tests run as root (like iostaged) in a private temp directory. The
 * interesting ones plant symlinks where directories were, before and while
 * rmtree runs, and check that nothing outside the tree was touched.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <grp.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <check.h>

#include "common/fs/rmtree.h"
#include "tests/unit/check_run.h"

static char base[64]; /* the test's temp dir */
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

static void xsymlink(const char *target, const char *rel)
{
	ck_assert_int_eq(symlinkat(target, base_fd, rel), 0);
}

static bool exists(const char *rel)
{
	struct stat st;

	return fstatat(base_fd, rel, &st, AT_SYMLINK_NOFOLLOW) == 0;
}

/* victim/ holds files that must survive every test. */
static void make_victim(void)
{
	xmkdir("victim", 0755);
	xmkdir("victim/sub", 0755);
	xfile("victim/keep", "keep");
	xfile("victim/sub/keep2", "keep");
}

static void assert_victim_intact(void)
{
	ck_assert_msg(exists("victim/keep"), "victim/keep was removed");
	ck_assert_msg(exists("victim/sub/keep2"),
		      "victim/sub/keep2 was removed");
}

static void setup(void)
{
	snprintf(base, sizeof(base), "/tmp/check_rmtree.XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(base));
	chmod(base, 0755);
	base_fd = open(base, O_RDONLY | O_DIRECTORY);
	ck_assert_int_ge(base_fd, 0);
	make_victim();
}

static int remove_entry(const char *path, const struct stat *st, int flag,
			struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(path);
}

static void teardown(void)
{
	char err[256];
	int parent = open("/tmp", O_RDONLY | O_DIRECTORY);

	close(base_fd);
	/* rmtree refuses what test_depth_limit leaves: nftw then, or every
	 * run would leave a directory in /tmp */
	if (rmtree_at(parent, base + strlen("/tmp/"), err, sizeof(err)) < 0)
		nftw(base, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
	close(parent);
}

/* A small tree of every kind of entry under NAME. */
static void make_tree(const char *name)
{
	char p[256];

	xmkdir(name, 0755);
	snprintf(p, sizeof(p), "%s/a", name);
	xmkdir(p, 0755);
	snprintf(p, sizeof(p), "%s/a/b", name);
	xmkdir(p, 0755);
	snprintf(p, sizeof(p), "%s/a/b/file", name);
	xfile(p, "data");
	snprintf(p, sizeof(p), "%s/empty", name);
	xfile(p, "");
	snprintf(p, sizeof(p), "%s/link_to_victim", name);
	xsymlink("../victim", p);
	snprintf(p, sizeof(p), "%s/abs_link", name);
	xsymlink("/tmp", p);
	snprintf(p, sizeof(p), "%s/dangling", name);
	xsymlink("/nonexistent/x", p);
	snprintf(p, sizeof(p), "%s/fifo", name);
	ck_assert_int_eq(mkfifoat(base_fd, p, 0600), 0);
	snprintf(p, sizeof(p), "%s/ro", name);
	xmkdir(p, 0755);
	snprintf(p, sizeof(p), "%s/ro/inside", name);
	xfile(p, "x");
	snprintf(p, sizeof(p), "%s/ro", name);
	ck_assert_int_eq(fchmodat(base_fd, p, 0555, 0), 0);
}

START_TEST(test_removes_everything)
{
	char err[256] = "";

	make_tree("t");
	ck_assert_msg(rmtree_at(base_fd, "t", err, sizeof(err)) == 0, "%s",
		      err);
	ck_assert(!exists("t"));
	assert_victim_intact();
	ck_assert(exists("victim"));
}
END_TEST

START_TEST(test_missing_is_success)
{
	char err[256] = "";

	ck_assert_int_eq(rmtree_at(base_fd, "nothing-here", err, sizeof(err)),
			 0);
}
END_TEST

START_TEST(test_file_and_symlink_at_top)
{
	char err[256] = "";

	xfile("plain", "x");
	xsymlink("victim", "toplink");
	ck_assert_int_eq(rmtree_at(base_fd, "plain", err, sizeof(err)), 0);
	ck_assert(!exists("plain"));
	/* A symlink to a directory is removed as a link, not followed. */
	ck_assert_int_eq(rmtree_at(base_fd, "toplink", err, sizeof(err)), 0);
	ck_assert(!exists("toplink"));
	assert_victim_intact();
}
END_TEST

START_TEST(test_contents_keeps_dir)
{
	char err[256] = "";
	int fd;

	make_tree("t");
	fd = openat(base_fd, "t", O_RDONLY | O_DIRECTORY);
	ck_assert_int_ge(fd, 0);
	ck_assert_msg(rmtree_contents(fd, err, sizeof(err)) == 0, "%s", err);
	close(fd);
	ck_assert(exists("t"));
	ck_assert(!exists("t/a"));
	ck_assert(!exists("t/link_to_victim"));
	assert_victim_intact();
}
END_TEST

static const char *const bad_names[] = { "",    ".",    "..",
					 "a/b", "/etc", "../victim" };

START_TEST(test_bad_names)
{
	char err[256] = "";

	errno = 0;
	ck_assert_int_eq(rmtree_at(base_fd, bad_names[_i], err, sizeof(err)),
			 -1);
	ck_assert_int_eq(errno, EINVAL);
	ck_assert_ptr_nonnull(strstr(err, "single path component"));
	assert_victim_intact();
}
END_TEST

START_TEST(test_null_and_bad_fd)
{
	char err[256] = "";

	ck_assert_int_eq(rmtree_at(base_fd, NULL, err, sizeof(err)), -1);
	ck_assert_int_eq(errno, EINVAL);
	ck_assert_int_eq(rmtree_at(-1, "x", err, sizeof(err)), -1);
	ck_assert_int_eq(errno, EBADF);
	/* NULL err is allowed. */
	ck_assert_int_eq(rmtree_at(base_fd, "a/b", NULL, 0), -1);
}
END_TEST

/* The attack the module exists for: the user owning the tree replaced a
 * directory with a symlink to somewhere root-owned, before the removal. */
START_TEST(test_dir_replaced_by_symlink)
{
	char err[256] = "";

	int jfd;

	make_tree("job");
	jfd = openat(base_fd, "job", O_RDONLY | O_DIRECTORY);
	ck_assert_int_ge(jfd, 0);
	ck_assert_int_eq(rmtree_at(jfd, "a", err, sizeof(err)), 0);
	close(jfd);
	ck_assert(!exists("job/a"));
	xsymlink("../victim", "job/a");          /* relative */
	xsymlink(base, "job/data");              /* absolute, to the base */
	xsymlink("../victim/sub", "job/ro/sub"); /* deeper */
	ck_assert_msg(rmtree_at(base_fd, "job", err, sizeof(err)) == 0, "%s",
		      err);
	ck_assert(!exists("job"));
	assert_victim_intact();
}
END_TEST

/* The same attack while the removal runs: a child keeps exchanging a
 * directory full of files with a symlink to the victim. Whatever rmtree
 * returns, the victim must be intact. */
START_TEST(test_symlink_swap_race)
{
	int round;

	for (round = 0; round < 200; round++) {
		char err[256] = "";
		pid_t pid;
		int i, status;

		make_tree("job");
		for (i = 0; i < 20; i++) {
			char p[64];

			snprintf(p, sizeof(p), "job/a/f%d", i);
			xfile(p, "x");
		}
		xsymlink("../victim", "job/swap");
		pid = fork();
		ck_assert_int_ge(pid, 0);
		if (pid == 0) {
			for (i = 0; i < 2000; i++)
				renameat2(base_fd, "job/a", base_fd, "job/swap",
					  RENAME_EXCHANGE);
			_exit(0);
		}
		(void)rmtree_at(base_fd, "job", err, sizeof(err));
		kill(pid, SIGKILL);
		waitpid(pid, &status, 0);
		assert_victim_intact();
		ck_assert_int_eq(rmtree_at(base_fd, "job", err, sizeof(err)),
				 0);
		ck_assert(!exists("job"));
	}
}
END_TEST

START_TEST(test_depth_limit)
{
	char err[512] = "";
	int fd, i, next;

	/* RMTREE_MAX_DEPTH + 2 nested directories. */
	ck_assert_int_eq(mkdirat(base_fd, "deep", 0755), 0);
	fd = openat(base_fd, "deep", O_RDONLY | O_DIRECTORY);
	for (i = 0; i < RMTREE_MAX_DEPTH + 2; i++) {
		ck_assert_int_eq(mkdirat(fd, "d", 0755), 0);
		next = openat(fd, "d", O_RDONLY | O_DIRECTORY);
		ck_assert_int_ge(next, 0);
		close(fd);
		fd = next;
	}
	close(fd);
	errno = 0;
	ck_assert_int_eq(rmtree_at(base_fd, "deep", err, sizeof(err)), -1);
	ck_assert_int_eq(errno, ELOOP);
	ck_assert_ptr_nonnull(strstr(err, "deeper than 256 levels"));
	assert_victim_intact();
}
END_TEST

START_TEST(test_depth_within_limit)
{
	char err[512] = "";
	int fd, i, next;

	ck_assert_int_eq(mkdirat(base_fd, "deep", 0755), 0);
	fd = openat(base_fd, "deep", O_RDONLY | O_DIRECTORY);
	for (i = 0; i < RMTREE_MAX_DEPTH - 1; i++) {
		ck_assert_int_eq(mkdirat(fd, "d", 0755), 0);
		next = openat(fd, "d", O_RDONLY | O_DIRECTORY);
		close(fd);
		fd = next;
	}
	close(fd);
	ck_assert_msg(rmtree_at(base_fd, "deep", err, sizeof(err)) == 0, "%s",
		      err);
	ck_assert(!exists("deep"));
}
END_TEST

static int chown_nobody(const char *path, const struct stat *st, int flag,
			struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return lchown(path, 65534, 65534);
}

/* The stage worker removes its own partial copies as the user: copied
 * read-only directories must not stop it. */
START_TEST(test_owner_removes_readonly_dirs)
{
	pid_t pid;
	int status;

	make_tree("mine");
	ck_assert_int_eq(fchmodat(base_fd, "mine/ro", 0755, 0), 0);
	{
		char path[128];

		snprintf(path, sizeof(path), "%s/mine", base);
		ck_assert_int_eq(nftw(path, chown_nobody, 16, FTW_PHYS), 0);
	}
	ck_assert_int_eq(fchmodat(base_fd, "mine/ro", 0555, 0), 0);
	ck_assert_int_eq(fchmodat(base_fd, "mine/a/b", 0500, 0), 0);
	ck_assert_int_eq(fchmodat(base_fd, "mine", 0555, 0), 0);
	/* base itself must let nobody remove "mine". */
	ck_assert_int_eq(fchmod(base_fd, 0777), 0);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		char err[256] = "";

		if (setgroups(0, NULL) < 0 || setgid(65534) < 0 ||
		    setuid(65534) < 0)
			_exit(3);
		if (rmtree_at(base_fd, "mine", err, sizeof(err)) < 0) {
			fprintf(stderr, "rmtree as nobody: %s\n", err);
			_exit(1);
		}
		_exit(0);
	}
	waitpid(pid, &status, 0);
	fchmod(base_fd, 0755);
	ck_assert(WIFEXITED(status));
	ck_assert_int_eq(WEXITSTATUS(status), 0);
	ck_assert(!exists("mine"));
	assert_victim_intact();
}
END_TEST

/* Someone else's directory inside the tree: the error names it. */
START_TEST(test_error_names_entry)
{
	pid_t pid;
	int status;

	xmkdir("t2", 0755);
	ck_assert_int_eq(fchmodat(base_fd, "t2", 0777, 0), 0); /* no umask */
	xmkdir("t2/rootdir", 0755);
	xfile("t2/rootdir/f", "x");
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		char err[256] = "";
		int fd;

		if (setgroups(0, NULL) < 0 || setgid(65534) < 0 ||
		    setuid(65534) < 0)
			_exit(3);
		fd = openat(base_fd, "t2", O_RDONLY | O_DIRECTORY);
		if (fd < 0 || rmtree_contents(fd, err, sizeof(err)) == 0)
			_exit(1);
		if (errno != EACCES)
			_exit(4);
		_exit(!strcmp(err, "cannot remove rootdir/f: Permission denied")
			  ? 0
			  : 2);
	}
	waitpid(pid, &status, 0);
	ck_assert(WIFEXITED(status));
	ck_assert_int_eq(WEXITSTATUS(status), 0);
	ck_assert(exists("t2/rootdir/f"));
}
END_TEST

/* rmtree stops at a bind mount of the same file system (same st_dev: only
 * the mount id tells) and never empties what is mounted there, writable
 * or not; nor removes a file bind-mounted over a file. The test runs in a
 * private mount namespace (its own forked process), so the mounts go with
 * it. */
static void bind_at(const char *src_rel, const char *dst_rel)
{
	char sp[32], tp[32];
	int src = openat(base_fd, src_rel, O_PATH | O_NOFOLLOW);
	int dst = openat(base_fd, dst_rel, O_PATH | O_NOFOLLOW);

	ck_assert_int_ge(src, 0);
	ck_assert_int_ge(dst, 0);
	snprintf(sp, sizeof(sp), "/proc/self/fd/%d", src);
	snprintf(tp, sizeof(tp), "/proc/self/fd/%d", dst);
	ck_assert_int_eq(mount(sp, tp, NULL, MS_BIND, NULL), 0);
	close(src);
	close(dst);
}

/* Enter a private mount namespace; base_fd is opened again in it (an fd
 * opened before holds a mount of the old namespace, where nothing can be
 * mounted from here). */
static void private_mounts(void)
{
	ck_assert_msg(unshare(CLONE_NEWNS) == 0, "unshare: %s",
		      strerror(errno));
	ck_assert_int_eq(mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL), 0);
	close(base_fd);
	base_fd = open(base, O_RDONLY | O_DIRECTORY);
	ck_assert_int_ge(base_fd, 0);
}

static void unmount_rel(const char *rel)
{
	char p[256];

	snprintf(p, sizeof(p), "%s/%s", base, rel);
	ck_assert_int_eq(umount2(p, MNT_DETACH), 0);
}

START_TEST(test_stops_at_bind_mount)
{
	char err[256];

	private_mounts();
	xmkdir("tree", 0755);
	xmkdir("tree/m", 0755);
	bind_at("victim", "tree/m");
	ck_assert_int_eq(rmtree_at(base_fd, "tree", err, sizeof(err)), -1);
	ck_assert_int_eq(errno, EXDEV);
	ck_assert_msg(strstr(err, "tree/m: is a mount point"), "%s", err);
	assert_victim_intact();
	unmount_rel("tree/m"); /* so that teardown removes the rest */
}
END_TEST

START_TEST(test_file_bind_mount_not_removed)
{
	char err[256];

	private_mounts();
	xmkdir("tree", 0755);
	xfile("tree/f", "x");
	bind_at("victim/keep", "tree/f");
	ck_assert_int_eq(rmtree_at(base_fd, "tree", err, sizeof(err)), -1);
	ck_assert_int_eq(errno, EBUSY);
	assert_victim_intact();
	unmount_rel("tree/f");
}
END_TEST

#define N(a) ((int)(sizeof(a) / sizeof((a)[0])))

static Suite *rmtree_suite(void)
{
	Suite *s = suite_create("rmtree");
	TCase *tc = tcase_create("rmtree");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_removes_everything);
	tcase_add_test(tc, test_missing_is_success);
	tcase_add_test(tc, test_file_and_symlink_at_top);
	tcase_add_test(tc, test_contents_keeps_dir);
	tcase_add_loop_test(tc, test_bad_names, 0, N(bad_names));
	tcase_add_test(tc, test_null_and_bad_fd);
	tcase_add_root_test(tc, test_dir_replaced_by_symlink);
	tcase_add_test(tc, test_symlink_swap_race);
	tcase_add_test(tc, test_depth_limit);
	tcase_add_test(tc, test_depth_within_limit);
	tcase_add_root_test(tc, test_owner_removes_readonly_dirs);
	tcase_add_root_test(tc, test_error_names_entry);
	tcase_add_root_test(tc, test_stops_at_bind_mount);
	tcase_add_root_test(tc, test_file_bind_mount_not_removed);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return check_run(rmtree_suite());
}
