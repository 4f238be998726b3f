/* check_copytree.c - unit tests for common/copytree: the dataset copier.
 *
 * Each test builds a source tree in a private temp directory and copies it
 * into a sibling destination directory, then compares: contents byte for
 * byte, types, modes, mtimes, symlink targets. Tests that need an
 * unprivileged copier fork and setuid(65534) in the child (the suite runs
 * as root, like iostaged).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <check.h>

#include "common/copytree.h"
#include "common/rmtree.h"

#define MIB (1024 * 1024)

static char base[64];
static char src[128];  /* base/src */
static int base_fd = -1, src_fd = -1, dst_fd = -1;

static const struct timespec old_times[2] = { { 1000000000, 0 },
					      { 1234567890, 123456789 } };

static void setup(void)
{
	snprintf(base, sizeof(base), "/tmp/check_copytree.XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(base));
	chmod(base, 0755);
	base_fd = open(base, O_RDONLY | O_DIRECTORY);
	ck_assert_int_ge(base_fd, 0);
	ck_assert_int_eq(mkdirat(base_fd, "src", 0755), 0);
	ck_assert_int_eq(mkdirat(base_fd, "dst", 0755), 0);
	src_fd = openat(base_fd, "src", O_RDONLY | O_DIRECTORY);
	dst_fd = openat(base_fd, "dst", O_RDONLY | O_DIRECTORY);
	ck_assert_int_ge(src_fd, 0);
	ck_assert_int_ge(dst_fd, 0);
	snprintf(src, sizeof(src), "%s/src", base);
}

static void teardown(void)
{
	char err[256];
	int tmp = open("/tmp", O_RDONLY | O_DIRECTORY);

	close(src_fd);
	close(dst_fd);
	close(base_fd);
	rmtree_at(tmp, base + strlen("/tmp/"), err, sizeof(err));
	close(tmp);
}

/* --- building trees --------------------------------------------------------- */

static void sdir(const char *rel, mode_t mode)
{
	ck_assert_int_eq(mkdirat(src_fd, rel, 0700), 0);
	ck_assert_int_eq(fchmodat(src_fd, rel, mode, 0), 0);
}

static void sfile(const char *rel, const void *data, size_t len, mode_t mode)
{
	int fd = openat(src_fd, rel, O_WRONLY | O_CREAT | O_EXCL, 0600);

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, data, len), (ssize_t)len);
	ck_assert_int_eq(fchmod(fd, mode), 0);
	ck_assert_int_eq(futimens(fd, old_times), 0);
	close(fd);
}

static unsigned char *random_bytes(size_t len)
{
	unsigned char *buf = malloc(len);
	size_t i;
	unsigned x = 12345;

	ck_assert_ptr_nonnull(buf);
	for (i = 0; i < len; i++) {
		x = x * 1103515245u + 12345u;
		buf[i] = (unsigned char)(x >> 16);
	}
	return buf;
}

/* A tree with every kind of entry. Returns the regular file bytes. */
static size_t make_tree(void)
{
	unsigned char *big = random_bytes(MIB);

	sdir("a", 0755);
	sdir("a/b", 0750);
	sdir("a/b/c", 0700);
	sfile("a/b/c/deep.txt", "deep\n", 5, 0640);
	sfile("empty", "", 0, 0600);
	sfile("big.bin", big, MIB, 0644);
	sfile("exec.sh", "#!/bin/sh\n", 10, 0755);
	ck_assert_int_eq(symlinkat("a/b/c/deep.txt", src_fd, "rel_link"), 0);
	ck_assert_int_eq(symlinkat("/etc/passwd", src_fd, "abs_link"), 0);
	ck_assert_int_eq(symlinkat("/nonexistent/x", src_fd, "dangling"), 0);
	ck_assert_int_eq(symlinkat("/etc", src_fd, "dir_link"), 0);
	ck_assert_int_eq(mkfifoat(src_fd, "a/fifo", 0600), 0);
	sdir("ro", 0555);
	/* Directory times last: creating entries changes them. */
	ck_assert_int_eq(utimensat(src_fd, "a/b", old_times, 0), 0);
	ck_assert_int_eq(utimensat(src_fd, "ro", old_times, 0), 0);
	free(big);
	return 5 + MIB + 10;
}

/* --- comparing ------------------------------------------------------------- */

static void assert_same_file(const char *rel)
{
	char a[512], b[512];
	struct stat sa, sb;
	FILE *fa, *fb;
	int ca, cb;

	snprintf(a, sizeof(a), "%s/src/%s", base, rel);
	snprintf(b, sizeof(b), "%s/dst/copy/%s", base, rel);
	ck_assert_int_eq(lstat(a, &sa), 0);
	ck_assert_msg(lstat(b, &sb) == 0, "%s missing in the copy", rel);
	ck_assert_msg(S_ISREG(sb.st_mode), "%s: not a regular file", rel);
	ck_assert_int_eq(sa.st_size, sb.st_size);
	ck_assert_uint_eq(sa.st_mode & 07777, sb.st_mode & 07777);
	ck_assert_int_eq(sa.st_mtim.tv_sec, sb.st_mtim.tv_sec);
	ck_assert_int_eq(sa.st_mtim.tv_nsec, sb.st_mtim.tv_nsec);
	fa = fopen(a, "rb");
	fb = fopen(b, "rb");
	ck_assert_ptr_nonnull(fa);
	ck_assert_ptr_nonnull(fb);
	do {
		ca = getc(fa);
		cb = getc(fb);
		ck_assert_msg(ca == cb, "%s differs", rel);
	} while (ca != EOF);
	fclose(fa);
	fclose(fb);
}

static void assert_same_link(const char *rel)
{
	char a[512], b[512], ta[256], tb[256];
	struct stat sb;
	ssize_t na, nb;

	snprintf(a, sizeof(a), "%s/src/%s", base, rel);
	snprintf(b, sizeof(b), "%s/dst/copy/%s", base, rel);
	ck_assert_int_eq(lstat(b, &sb), 0);
	ck_assert_msg(S_ISLNK(sb.st_mode), "%s: not kept as a symlink", rel);
	na = readlink(a, ta, sizeof(ta));
	nb = readlink(b, tb, sizeof(tb));
	ck_assert_int_eq(na, nb);
	ck_assert(memcmp(ta, tb, (size_t)na) == 0);
}

static void assert_dir(const char *rel, mode_t mode, bool check_time)
{
	char b[512];
	struct stat sb;

	snprintf(b, sizeof(b), "%s/dst/copy/%s", base, rel);
	ck_assert_int_eq(lstat(b, &sb), 0);
	ck_assert(S_ISDIR(sb.st_mode));
	ck_assert_uint_eq(sb.st_mode & 07777, mode);
	if (check_time)
		ck_assert_int_eq(sb.st_mtim.tv_sec, old_times[1].tv_sec);
}

static bool dst_exists(const char *rel)
{
	struct stat st;

	return fstatat(dst_fd, rel, &st, AT_SYMLINK_NOFOLLOW) == 0;
}

/* --- callbacks ------------------------------------------------------------- */

struct seen {
	unsigned notes;
	char note_path[512];
	char note_what[64];
	unsigned progress_calls;
	uint64_t last_bytes;
	bool went_back;
};

static void on_note(const char *path, const char *what, void *arg)
{
	struct seen *s = arg;

	s->notes++;
	snprintf(s->note_path, sizeof(s->note_path), "%s", path);
	snprintf(s->note_what, sizeof(s->note_what), "%s", what);
}

static void on_progress(const struct copytree_stats *st, void *arg)
{
	struct seen *s = arg;

	s->progress_calls++;
	if (st->bytes < s->last_bytes)
		s->went_back = true;
	s->last_bytes = st->bytes;
}

/* --- tests ----------------------------------------------------------------- */

START_TEST(test_tree_copied_faithfully)
{
	struct copytree_stats st;
	struct seen seen = { 0 };
	struct copytree_opts opts = { .progress = on_progress,
				      .note = on_note,
				      .arg = &seen };
	char err[512] = "", want[512];
	size_t bytes = make_tree();

	ck_assert_msg(copytree_copy(src, dst_fd, "copy", &opts, &st, err,
				    sizeof(err)) == 0,
		      "%s", err);
	assert_same_file("a/b/c/deep.txt");
	assert_same_file("empty");
	assert_same_file("big.bin");
	assert_same_file("exec.sh");
	assert_same_link("rel_link");
	assert_same_link("abs_link");
	assert_same_link("dangling");
	assert_same_link("dir_link");
	assert_dir("a", 0755, false);
	assert_dir("a/b", 0750, true);
	assert_dir("a/b/c", 0700, false);
	assert_dir("ro", 0555, true);
	ck_assert_msg(!dst_exists("copy/a/fifo"), "the fifo was copied");

	ck_assert_uint_eq(st.files, 4);
	ck_assert_uint_eq(st.bytes, bytes);
	ck_assert_uint_eq(st.dirs, 5); /* src, a, a/b, a/b/c, ro */
	ck_assert_uint_eq(st.symlinks, 4);
	ck_assert_uint_eq(st.skipped, 1);

	ck_assert_uint_eq(seen.notes, 1);
	snprintf(want, sizeof(want), "%s/a/fifo", src);
	ck_assert_str_eq(seen.note_path, want);
	ck_assert_str_eq(seen.note_what, "fifo skipped");
	ck_assert_uint_gt(seen.progress_calls, 1);
	ck_assert(!seen.went_back);
	ck_assert_uint_eq(seen.last_bytes, bytes);
}
END_TEST

START_TEST(test_measure_matches_copy)
{
	struct copytree_stats m, c;
	char err[512] = "";

	make_tree();
	ck_assert_msg(copytree_measure(src, &m, err, sizeof(err)) == 0, "%s",
		      err);
	ck_assert_int_eq(copytree_copy(src, dst_fd, "copy", NULL, &c, err,
				       sizeof(err)),
			 0);
	ck_assert_uint_eq(m.bytes, c.bytes);
	ck_assert_uint_eq(m.files, c.files);
	ck_assert_uint_eq(m.dirs, c.dirs);
	ck_assert_uint_eq(m.symlinks, c.symlinks);
	ck_assert_uint_eq(m.skipped, c.skipped);
}
END_TEST

START_TEST(test_single_file)
{
	unsigned char *big = random_bytes(MIB + 7);
	struct copytree_stats st;
	char err[512] = "", path[256];
	struct stat sb;

	sfile("one.bin", big, MIB + 7, 0604);
	snprintf(path, sizeof(path), "%s/one.bin", src);
	ck_assert_msg(copytree_copy(path, dst_fd, "copy", NULL, &st, err,
				    sizeof(err)) == 0,
		      "%s", err);
	ck_assert_int_eq(fstatat(dst_fd, "copy", &sb, AT_SYMLINK_NOFOLLOW), 0);
	ck_assert(S_ISREG(sb.st_mode));
	ck_assert_int_eq(sb.st_size, MIB + 7);
	ck_assert_uint_eq(sb.st_mode & 07777, 0604);
	ck_assert_int_eq(sb.st_mtim.tv_sec, old_times[1].tv_sec);
	ck_assert_uint_eq(st.files, 1);
	ck_assert_uint_eq(st.bytes, MIB + 7);
	free(big);
}
END_TEST

/* A top-level SRC that is a symlink is followed (like cp -r SRC); links
 * below it are not. */
START_TEST(test_top_symlink_followed)
{
	char err[512] = "", path[256];
	struct stat sb;

	sdir("real", 0755);
	sfile("real/f", "x", 1, 0644);
	ck_assert_int_eq(symlinkat("real", src_fd, "alias"), 0);
	snprintf(path, sizeof(path), "%s/alias", src);
	ck_assert_msg(copytree_copy(path, dst_fd, "copy", NULL, NULL, err,
				    sizeof(err)) == 0,
		      "%s", err);
	ck_assert_int_eq(fstatat(dst_fd, "copy", &sb, AT_SYMLINK_NOFOLLOW), 0);
	ck_assert(S_ISDIR(sb.st_mode));
	ck_assert(dst_exists("copy/f"));
}
END_TEST

/* A symlink to a directory outside the tree is copied as a link: nothing
 * of /etc ends up in the copy. */
START_TEST(test_links_never_followed)
{
	struct copytree_stats st;
	char err[512] = "";
	struct stat sb;

	ck_assert_int_eq(symlinkat("/etc", src_fd, "etc"), 0);
	ck_assert_int_eq(copytree_copy(src, dst_fd, "copy", NULL, &st, err,
				       sizeof(err)),
			 0);
	assert_same_link("etc");
	ck_assert_int_eq(fstatat(dst_fd, "copy/etc", &sb, AT_SYMLINK_NOFOLLOW),
			 0);
	ck_assert(S_ISLNK(sb.st_mode));
	ck_assert_uint_eq(st.files, 0);
	ck_assert_uint_eq(st.bytes, 0);
}
END_TEST

START_TEST(test_destination_exists)
{
	char err[512] = "", want[64];

	sfile("f", "x", 1, 0644);
	ck_assert_int_eq(mkdirat(dst_fd, "copy", 0755), 0);
	ck_assert_int_eq(copytree_copy(src, dst_fd, "copy", NULL, NULL, err,
				       sizeof(err)),
			 -1);
	ck_assert_int_eq(errno, EEXIST);
	snprintf(want, sizeof(want), "cannot write copy: ");
	ck_assert_msg(strncmp(err, want, strlen(want)) == 0, "%s", err);
}
END_TEST

/* Destination paths in messages start with opts->dst_label. */
START_TEST(test_dst_label_in_messages)
{
	struct copytree_opts opts = { .dst_label = "/tier/jobs/42/data/ds" };
	char err[512] = "", path[256];

	sfile("f", "x", 1, 0644);
	ck_assert_int_eq(mkdirat(dst_fd, "taken", 0755), 0);
	snprintf(path, sizeof(path), "%s/f", src);
	ck_assert_int_eq(copytree_copy(path, dst_fd, "taken", &opts, NULL, err,
				       sizeof(err)),
			 -1);
	ck_assert_int_eq(errno, EEXIST);
	ck_assert_str_eq(err, "cannot write /tier/jobs/42/data/ds: File exists");
}
END_TEST

static const char *const bad_dst_names[] = { "", ".", "..", "a/b", "/abs" };

START_TEST(test_bad_dst_names)
{
	char err[512] = "";

	errno = 0;
	ck_assert_int_eq(copytree_copy(src, dst_fd, bad_dst_names[_i], NULL,
				       NULL, err, sizeof(err)),
			 -1);
	ck_assert_int_eq(errno, EINVAL);
	ck_assert_ptr_nonnull(strstr(err, "not a single path component"));
}
END_TEST

START_TEST(test_bad_sources)
{
	struct copytree_stats st;
	char err[512] = "", path[256];

	ck_assert_int_eq(copytree_copy(NULL, dst_fd, "c", NULL, NULL, err,
				       sizeof(err)),
			 -1);
	ck_assert_int_eq(errno, EINVAL);
	ck_assert_int_eq(copytree_copy("relative/path", dst_fd, "c", NULL, NULL,
				       err, sizeof(err)),
			 -1);
	ck_assert_str_eq(err, "cannot read relative/path: not an absolute path");
	ck_assert_int_eq(copytree_measure("", &st, err, sizeof(err)), -1);

	snprintf(path, sizeof(path), "%s/missing", src);
	ck_assert_int_eq(copytree_copy(path, dst_fd, "c", NULL, NULL, err,
				       sizeof(err)),
			 -1);
	ck_assert_int_eq(errno, ENOENT);
	ck_assert_ptr_nonnull(strstr(err, "cannot read "));
	ck_assert_ptr_nonnull(strstr(err, "/missing: No such file"));

	ck_assert_int_eq(mkfifoat(src_fd, "fifo", 0600), 0);
	snprintf(path, sizeof(path), "%s/fifo", src);
	ck_assert_int_eq(copytree_copy(path, dst_fd, "c", NULL, NULL, err,
				       sizeof(err)),
			 -1);
	ck_assert_ptr_nonnull(strstr(err, "not a regular file or directory"));
	ck_assert(!dst_exists("c"));
}
END_TEST

/* Run FN in a child as nobody; returns its exit status. */
static int as_nobody(int (*fn)(void *), void *arg)
{
	pid_t pid = fork();
	int status;

	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		if (setgroups(0, NULL) < 0 || setgid(65534) < 0 ||
		    setuid(65534) < 0)
			_exit(99);
		_exit(fn(arg));
	}
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert(WIFEXITED(status));
	return WEXITSTATUS(status);
}

static int copy_expect_unreadable(void *arg)
{
	const char *want = arg;
	char err[512] = "";

	if (copytree_copy(src, dst_fd, "copy", NULL, NULL, err, sizeof(err)) ==
	    0)
		return 1;
	if (errno != EACCES)
		return 2;
	if (strcmp(err, want)) {
		fprintf(stderr, "got '%s', want '%s'\n", err, want);
		return 3;
	}
	return 0;
}

START_TEST(test_unreadable_file_named)
{
	char want[512];

	sdir("pub", 0755);
	sfile("pub/ok.txt", "ok", 2, 0644);
	sfile("pub/secret.bin", "no", 2, 0600); /* root's, 0600 */
	ck_assert_int_eq(fchown(dst_fd, 65534, 65534), 0);
	snprintf(want, sizeof(want),
		 "cannot read %s/pub/secret.bin: Permission denied", src);
	ck_assert_int_eq(as_nobody(copy_expect_unreadable, want), 0);
}
END_TEST

START_TEST(test_unreadable_dir_named)
{
	char want[512];

	sdir("closed", 0700); /* root's */
	ck_assert_int_eq(fchown(dst_fd, 65534, 65534), 0);
	snprintf(want, sizeof(want),
		 "cannot read %s/closed: Permission denied", src);
	ck_assert_int_eq(as_nobody(copy_expect_unreadable, want), 0);
}
END_TEST

/* A write failure names the destination and keeps errno (here EFBIG from
 * RLIMIT_FSIZE, standing in for ENOSPC). */
static int copy_expect_too_big(void *arg)
{
	struct copytree_opts opts = { .dst_label = "/tier/jobs/7/data/ds" };
	struct rlimit rl = { 100000, 100000 };
	char err[512] = "";

	(void)arg;
	signal(SIGXFSZ, SIG_IGN);
	if (setrlimit(RLIMIT_FSIZE, &rl) < 0)
		return 9;
	if (copytree_copy(src, dst_fd, "copy", &opts, NULL, err, sizeof(err)) ==
	    0)
		return 1;
	if (errno != EFBIG)
		return 2;
	if (strcmp(err, "cannot write /tier/jobs/7/data/ds/big.bin: File too "
			"large")) {
		fprintf(stderr, "got '%s'\n", err);
		return 3;
	}
	return 0;
}

START_TEST(test_write_error_named)
{
	unsigned char *big = random_bytes(MIB);

	sfile("big.bin", big, MIB, 0644);
	free(big);
	ck_assert_int_eq(fchown(dst_fd, 65534, 65534), 0);
	ck_assert_int_eq(as_nobody(copy_expect_too_big, NULL), 0);
}
END_TEST

START_TEST(test_depth_limit)
{
	char err[512] = "";
	int fd, next, i;

	fd = dup(src_fd);
	for (i = 0; i < COPYTREE_MAX_DEPTH + 1; i++) {
		ck_assert_int_eq(mkdirat(fd, "d", 0755), 0);
		next = openat(fd, "d", O_RDONLY | O_DIRECTORY);
		ck_assert_int_ge(next, 0);
		close(fd);
		fd = next;
	}
	close(fd);
	ck_assert_int_eq(copytree_measure(src, &(struct copytree_stats){ 0 },
					  err, sizeof(err)),
			 -1);
	ck_assert_int_eq(errno, ELOOP);
	ck_assert_ptr_nonnull(strstr(err, "deeper than 256 levels"));
	ck_assert_int_eq(copytree_copy(src, dst_fd, "copy", NULL, NULL, err,
				       sizeof(err)),
			 -1);
	ck_assert_ptr_nonnull(strstr(err, "deeper than 256 levels"));
}
END_TEST

START_TEST(test_empty_dir)
{
	struct copytree_stats st;
	char err[512] = "";

	ck_assert_int_eq(fchmod(src_fd, 0711), 0);
	ck_assert_int_eq(copytree_copy(src, dst_fd, "copy", NULL, &st, err,
				       sizeof(err)),
			 0);
	ck_assert_uint_eq(st.files, 0);
	ck_assert_uint_eq(st.dirs, 1);
	{
		struct stat sb;

		ck_assert_int_eq(fstatat(dst_fd, "copy", &sb, 0), 0);
		ck_assert_uint_eq(sb.st_mode & 07777, 0711);
	}
}
END_TEST

#define N(a) ((int)(sizeof(a) / sizeof((a)[0])))

static Suite *copytree_suite(void)
{
	Suite *s = suite_create("copytree");
	TCase *tc = tcase_create("copytree");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_tree_copied_faithfully);
	tcase_add_test(tc, test_measure_matches_copy);
	tcase_add_test(tc, test_single_file);
	tcase_add_test(tc, test_top_symlink_followed);
	tcase_add_test(tc, test_links_never_followed);
	tcase_add_test(tc, test_destination_exists);
	tcase_add_test(tc, test_dst_label_in_messages);
	tcase_add_loop_test(tc, test_bad_dst_names, 0, N(bad_dst_names));
	tcase_add_test(tc, test_bad_sources);
	tcase_add_test(tc, test_unreadable_file_named);
	tcase_add_test(tc, test_unreadable_dir_named);
	tcase_add_test(tc, test_write_error_named);
	tcase_add_test(tc, test_depth_limit);
	tcase_add_test(tc, test_empty_dir);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(copytree_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
