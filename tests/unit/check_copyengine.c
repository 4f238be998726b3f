/* check_copyengine.c - unit tests for common/fs/copyengine: the dataset copier.
 *
 * Each test builds a source tree in a private temp directory, walks and
 * copies it into a sibling destination directory, then compares: contents
 * byte for byte, types, modes, mtimes, symlink targets, hard links, holes.
 * Tests that need an unprivileged copier fork and setuid(65534) in the
 * child (the suite runs as root, like iostaged). Nothing here is timed.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <check.h>

#include "common/fs/copyengine.h"
#include "common/fs/manifest.h"
#include "common/fs/rmtree.h"
#include "common/sched/spread.h"
#include "tests/unit/check_run.h"
#include "tests/unit/tmp_fixture.h"

#define MIB ((size_t)1 << 20)
#define GIB ((off_t)1 << 30)
#define NOBODY 65534
#define ERRLEN 1024

static char base[64];
static char src[128]; /* base/src */
static char dst[128]; /* base/dst */
static int base_fd = -1, src_fd = -1, dst_fd = -1;

static const struct timespec old_times[2] = { { 1000000000, 0 },
					      { 1234567890, 123456789 } };

static void setup(void)
{
	snprintf(base, sizeof(base), "/tmp/check_copyengine.XXXXXX");
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
	snprintf(dst, sizeof(dst), "%s/dst", base);
}

static void teardown(void)
{
	char err[256];

	close(src_fd);
	close(dst_fd);
	close(base_fd);
	tmp_remove(base, err, sizeof(err));
}

/* --- building trees --------------------------------------------------------- */

static unsigned char *random_bytes(size_t len, unsigned int seed)
{
	unsigned char *p = malloc(len ? len : 1);

	ck_assert_ptr_nonnull(p);
	for (size_t i = 0; i < len; i++)
		p[i] = (unsigned char)(rand_r(&seed) >> 7);
	return p;
}

static void sdir(const char *rel, mode_t mode)
{
	ck_assert_int_eq(mkdirat(src_fd, rel, 0700), 0);
	ck_assert_int_eq(fchmodat(src_fd, rel, mode, 0), 0);
}

static void sfile(const char *rel, const void *data, size_t len, mode_t mode)
{
	int fd = openat(src_fd, rel, O_WRONLY | O_CREAT | O_EXCL, 0600);

	ck_assert_msg(fd >= 0, "create %s: %s", rel, strerror(errno));
	ck_assert_int_eq(write(fd, data, len), (ssize_t)len);
	ck_assert_int_eq(fchmod(fd, mode), 0);
	ck_assert_int_eq(futimens(fd, old_times), 0);
	close(fd);
}

static void srandom_file(const char *rel, size_t len, unsigned int seed)
{
	unsigned char *p = random_bytes(len, seed);

	sfile(rel, p, len, 0644);
	free(p);
}

/* A sparse file: SIZE bytes, with LEN bytes of pattern at each offset in
 * OFFS (terminated by -1). */
static void ssparse(const char *rel, off_t size, const off_t *offs, size_t len)
{
	int fd = openat(src_fd, rel, O_WRONLY | O_CREAT | O_EXCL, 0644);
	unsigned char *p = random_bytes(len, 7);

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(ftruncate(fd, size), 0);
	for (size_t i = 0; offs[i] >= 0; i++)
		ck_assert_int_eq(pwrite(fd, p, len, offs[i]), (ssize_t)len);
	ck_assert_int_eq(futimens(fd, old_times), 0);
	close(fd);
	free(p);
}

static void stimes(const char *rel)
{
	ck_assert_int_eq(utimensat(src_fd, rel, old_times, AT_SYMLINK_NOFOLLOW),
			 0);
}

/* --- copying ------------------------------------------------------------------ */

struct run {
	struct copyengine_totals tot;
	struct copyengine_result res;
	char err[ERRLEN];
	char notes[8192];
};

static void collect_note(const char *msg, void *arg)
{
	struct run *r = arg;
	size_t n = strlen(r->notes);

	snprintf(r->notes + n, sizeof(r->notes) - n, "%s\n", msg);
}

/* Walk FROM and copy it to dst/NAME. 0 or -1 (r->err says why). */
static int copy_from(const char *from, struct copyengine_opts *o,
		     const char *name, struct run *r)
{
	struct copyengine_opts def;
	struct copyengine *ce = NULL;
	int ret;

	memset(r, 0, sizeof(*r));
	if (!o) {
		memset(&def, 0, sizeof(def));
		o = &def;
	}
	o->note = collect_note;
	o->arg = r;
	if (copyengine_walk(from, o, &ce, r->err, sizeof(r->err)) < 0)
		return -1;
	r->tot = *copyengine_totals(ce);
	ret = copyengine_copy(ce, dst_fd, name, &r->res, r->err,
			      sizeof(r->err));
	copyengine_destroy(ce);
	return ret;
}

static void copy_ok(struct copyengine_opts *o, const char *name, struct run *r)
{
	ck_assert_msg(copy_from(src, o, name, r) == 0, "copy failed: %s",
		      r->err);
	ck_assert_uint_eq(r->res.bytes, r->tot.total_bytes);
	ck_assert_uint_eq(r->res.files, r->tot.total_files);
}

/* --- comparing ------------------------------------------------------------------ */

static void assert_same_content(int a, int b, off_t size)
{
	unsigned char *x = malloc(MIB), *y = malloc(MIB);

	for (off_t off = 0; off < size;) {
		ssize_t n = pread(a, x, MIB, off), m = pread(b, y, MIB, off);

		ck_assert_int_gt(n, 0);
		ck_assert_int_eq(n, m);
		ck_assert_msg(!memcmp(x, y, (size_t)n), "differ near %lld",
			      (long long)off);
		off += n;
	}
	free(x);
	free(y);
}

/* Compare the source entry REL under SFD with the copy DREL under DFD:
 * type, mode, mtime, contents/targets, recursively. */
static void assert_copy(int sfd, int dfd, const char *rel, const char *drel,
			bool is_top)
{
	struct stat s, d;

	ck_assert_msg(fstatat(sfd, rel, &s, AT_SYMLINK_NOFOLLOW) == 0, "%s",
		      rel);
	ck_assert_msg(fstatat(dfd, drel, &d, AT_SYMLINK_NOFOLLOW) == 0,
		      "missing in copy: %s", drel);
	ck_assert_uint_eq(s.st_mode & S_IFMT, d.st_mode & S_IFMT);
	if (!is_top)
		ck_assert_msg((s.st_mode & 07777) == (d.st_mode & 07777),
			      "%s: mode %o vs %o", rel, s.st_mode & 07777,
			      d.st_mode & 07777);
	if (!S_ISLNK(s.st_mode)) {
		ck_assert_msg(s.st_mtim.tv_sec == d.st_mtim.tv_sec &&
				  s.st_mtim.tv_nsec == d.st_mtim.tv_nsec,
			      "%s: mtime differs", rel);
	}
	if (S_ISREG(s.st_mode)) {
		int a = openat(sfd, rel, O_RDONLY),
		    b = openat(dfd, drel, O_RDONLY);

		ck_assert_int_eq(s.st_size, d.st_size);
		if (s.st_size <= 256 * (off_t)MIB)
			assert_same_content(a, b, s.st_size);
		close(a);
		close(b);
	} else if (S_ISLNK(s.st_mode)) {
		char t1[4096], t2[4096];
		ssize_t n1 = readlinkat(sfd, rel, t1, sizeof(t1));
		ssize_t n2 = readlinkat(dfd, drel, t2, sizeof(t2));

		ck_assert_int_gt(n1, 0);
		ck_assert_int_eq(n1, n2);
		ck_assert(!memcmp(t1, t2, (size_t)n1));
	} else if (S_ISDIR(s.st_mode)) {
		int a = openat(sfd, rel, O_RDONLY | O_DIRECTORY);
		int b = openat(dfd, drel, O_RDONLY | O_DIRECTORY);
		int dup_a = dup(a);
		DIR *dir = fdopendir(dup_a);
		struct dirent *de;

		ck_assert_ptr_nonnull(dir);
		while ((de = readdir(dir))) {
			struct stat es;

			if (!strcmp(de->d_name, ".") ||
			    !strcmp(de->d_name, ".."))
				continue;
			ck_assert_int_eq(fstatat(a, de->d_name, &es,
						 AT_SYMLINK_NOFOLLOW),
					 0);
			if (!S_ISREG(es.st_mode) && !S_ISDIR(es.st_mode) &&
			    !S_ISLNK(es.st_mode)) {
				ck_assert_msg(faccessat(b, de->d_name, F_OK,
							AT_SYMLINK_NOFOLLOW) <
						  0,
					      "special %s was copied",
					      de->d_name);
				continue;
			}
			assert_copy(a, b, de->d_name, de->d_name, false);
		}
		closedir(dir);
		close(a);
		close(b);
	}
}

static void assert_tree_copied(const char *name)
{
	assert_copy(base_fd, dst_fd, "src", name, true);
}

static bool dst_exists(const char *rel)
{
	struct stat st;

	return fstatat(dst_fd, rel, &st, AT_SYMLINK_NOFOLLOW) == 0;
}

static bool dst_empty(void)
{
	int fd = dup(dst_fd);
	DIR *d = fdopendir(fd);
	struct dirent *de;
	bool empty = true;

	rewinddir(d);
	while ((de = readdir(d)))
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
			empty = false;
	closedir(d);
	return empty;
}

/* --- faithful copies ---------------------------------------------------------- */

/* A network source gets more threads (its opens are round trips); a local
 * one keeps the default measured on a local disk. */
START_TEST(test_default_threads_by_fs)
{
	ck_assert_uint_eq(copyengine_default_threads(0x65735546),
			  COPYENGINE_THREADS_REMOTE);
	ck_assert_uint_eq(copyengine_default_threads(0x6969),
			  COPYENGINE_THREADS_REMOTE);
	ck_assert_uint_eq(copyengine_default_threads(0x0bd00bd0),
			  COPYENGINE_THREADS_REMOTE);
	ck_assert_uint_eq(copyengine_default_threads((long)0xff534d42),
			  COPYENGINE_THREADS_REMOTE);
	ck_assert_uint_eq(copyengine_default_threads(0xef53),
			  COPYENGINE_THREADS_DEFAULT);
	ck_assert_uint_eq(copyengine_default_threads(0x58465342),
			  COPYENGINE_THREADS_DEFAULT);
	ck_assert_uint_eq(copyengine_default_threads(0x01021994),
			  COPYENGINE_THREADS_DEFAULT);
}
END_TEST

START_TEST(test_tree_copied_faithfully)
{
	struct run r;
	struct stat st;

	sdir("a", 0755);
	sdir("a/b", 0750);
	sdir("a/b/c", 0700);
	sdir("empty", 0755);
	srandom_file("top.bin", 100000, 1);
	srandom_file("a/one", 1, 2);
	srandom_file("a/b/page", 4095, 3);
	srandom_file("a/b/c/deep", 300000, 4);
	sfile("a/empty-file", "", 0, 0640);
	ck_assert_int_eq(symlinkat("b/page", src_fd, "a/rel-link"), 0);
	ck_assert_int_eq(symlinkat("/nonexistent/target", src_fd, "dangling"),
			 0);
	stimes("a/b/c");
	stimes("a/b");
	stimes("a");
	stimes("empty");
	copy_ok(NULL, "data", &r);
	assert_tree_copied("data");
	ck_assert_uint_eq(r.tot.total_files, 5);
	ck_assert_uint_eq(r.tot.total_bytes, 100000 + 1 + 4095 + 300000);
	ck_assert_uint_eq(r.tot.copy_files, 5);
	ck_assert_uint_eq(r.tot.copy_bytes, r.tot.total_bytes);
	ck_assert_uint_eq(r.tot.dirs, 5);
	ck_assert_uint_eq(r.tot.symlinks, 2);
	ck_assert_uint_eq(r.tot.specials, 0);
	ck_assert(!r.tot.unchanged);
	ck_assert_uint_eq(r.res.linked, 0);
	ck_assert_int_eq(fstatat(dst_fd, "data/a/empty-file", &st, 0), 0);
	ck_assert_int_eq(st.st_size, 0);
}
END_TEST

START_TEST(test_symlinks_never_followed)
{
	struct run r;
	struct stat st;
	char outside[160], target[200];
	int fd;

	/* A directory and a file outside the tree, reachable only through
	 * symlinks: the copy must hold the links, not their targets. */
	snprintf(outside, sizeof(outside), "%s/outside", base);
	ck_assert_int_eq(mkdir(outside, 0755), 0);
	fd = openat(base_fd, "outside/secret", O_WRONLY | O_CREAT, 0644);
	ck_assert_int_eq(write(fd, "secret", 6), 6);
	close(fd);
	ck_assert_int_eq(symlinkat(outside, src_fd, "to-dir"), 0);
	snprintf(target, sizeof(target), "%s/secret", outside);
	ck_assert_int_eq(symlinkat(target, src_fd, "to-file"), 0);
	ck_assert_int_eq(symlinkat("../outside/secret", src_fd, "relative"), 0);
	copy_ok(NULL, "data", &r);
	assert_tree_copied("data");
	ck_assert_uint_eq(r.tot.total_files, 0);
	ck_assert_uint_eq(r.tot.symlinks, 3);
	ck_assert_int_eq(fstatat(dst_fd, "data/to-dir", &st,
				 AT_SYMLINK_NOFOLLOW),
			 0);
	ck_assert(S_ISLNK(st.st_mode));
	ck_assert_int_eq(fstatat(dst_fd, "data/to-file", &st,
				 AT_SYMLINK_NOFOLLOW),
			 0);
	ck_assert(S_ISLNK(st.st_mode));
}
END_TEST

START_TEST(test_hard_links_preserved)
{
	struct run r;
	struct stat a, b, c, d;

	sdir("sub", 0755);
	srandom_file("a", 5000, 11);
	ck_assert_int_eq(linkat(src_fd, "a", src_fd, "sub/b", 0), 0);
	ck_assert_int_eq(linkat(src_fd, "a", src_fd, "z", 0), 0);
	/* Linked to a name outside the dataset: an ordinary file here. */
	srandom_file("c", 100, 12);
	ck_assert_int_eq(linkat(src_fd, "c", base_fd, "c-outside", 0), 0);
	copy_ok(NULL, "data", &r);
	assert_tree_copied("data");
	ck_assert_uint_eq(r.tot.total_files, 4);
	ck_assert_uint_eq(r.tot.hardlinks, 2);
	ck_assert_uint_eq(r.tot.total_bytes, 5000 + 100);
	ck_assert_uint_eq(r.tot.copy_files, 2);
	ck_assert_int_eq(fstatat(dst_fd, "data/a", &a, 0), 0);
	ck_assert_int_eq(fstatat(dst_fd, "data/sub/b", &b, 0), 0);
	ck_assert_int_eq(fstatat(dst_fd, "data/z", &d, 0), 0);
	ck_assert_int_eq(fstatat(dst_fd, "data/c", &c, 0), 0);
	ck_assert_uint_eq(a.st_ino, b.st_ino);
	ck_assert_uint_eq(a.st_ino, d.st_ino);
	ck_assert_uint_eq(a.st_nlink, 3);
	ck_assert_uint_eq(c.st_nlink, 1);
}
END_TEST

static void sparse_case(bool cfr)
{
	struct copyengine_opts o;
	struct run r;
	struct stat st;
	const off_t offs[] = { 0, 100 * (off_t)MIB + 4096, -1 };
	const off_t tail[] = { 8192, -1 };

	/* 4 KiB, a 100 MiB hole, 4 KiB; and one ending in a hole. */
	ssparse("holey", 100 * (off_t)MIB + 8192, offs, 4096);
	ssparse("tail-hole", 50 * (off_t)MIB, tail, 4096);
	memset(&o, 0, sizeof(o));
	o.no_copy_file_range = !cfr;
	copy_ok(&o, "data", &r);
	assert_tree_copied("data");
	ck_assert_int_eq(fstatat(dst_fd, "data/holey", &st, 0), 0);
	ck_assert_int_eq(st.st_size, 100 * (off_t)MIB + 8192);
	ck_assert_msg(st.st_blocks * 512 < 1 * (off_t)MIB,
		      "holes filled: %lld blocks", (long long)st.st_blocks);
	ck_assert_int_eq(fstatat(dst_fd, "data/tail-hole", &st, 0), 0);
	ck_assert_int_eq(st.st_size, 50 * (off_t)MIB);
	ck_assert_int_lt(st.st_blocks * 512, 1 * (off_t)MIB);
	ck_assert_uint_eq(r.res.bytes, 150 * MIB + 8192);
}

START_TEST(test_sparse_holes_kept)
{
	sparse_case(_i == 0);
}
END_TEST

START_TEST(test_file_over_4gib)
{
	struct run r;
	struct stat st;
	const off_t offs[] = { 4 * GIB + 123, 5 * GIB - 4096, -1 };
	unsigned char a[4096], b[4096];
	int s, d;

	ssparse("huge", 5 * GIB, offs, 4096);
	copy_ok(NULL, "data", &r);
	ck_assert_int_eq(fstatat(dst_fd, "data/huge", &st, 0), 0);
	ck_assert_int_eq(st.st_size, 5 * GIB);
	ck_assert_int_lt(st.st_blocks * 512, 4 * (off_t)MIB);
	ck_assert_uint_eq(r.tot.total_bytes, (uint64_t)5 * GIB);
	s = openat(src_fd, "huge", O_RDONLY);
	d = openat(dst_fd, "data/huge", O_RDONLY);
	for (size_t i = 0; offs[i] >= 0; i++) {
		ck_assert_int_eq(pread(s, a, sizeof(a), offs[i]), 4096);
		ck_assert_int_eq(pread(d, b, sizeof(b), offs[i]), 4096);
		ck_assert(!memcmp(a, b, sizeof(a)));
	}
	/* And a hole stays zeros. */
	ck_assert_int_eq(pread(d, b, sizeof(b), 3 * GIB), 4096);
	memset(a, 0, sizeof(a));
	ck_assert(!memcmp(a, b, sizeof(a)));
	close(s);
	close(d);
}
END_TEST

/* Larger than two chunks: copied by several threads at once. */
START_TEST(test_chunked_file)
{
	struct copyengine_opts o;
	struct run r;

	srandom_file("big", 70 * MIB + 12345, 5);
	srandom_file("small", 3000, 6);
	memset(&o, 0, sizeof(o));
	o.no_copy_file_range = _i == 1;
	o.threads = 4;
	copy_ok(&o, "data", &r);
	assert_tree_copied("data");
	ck_assert_uint_eq(r.res.bytes, 70 * MIB + 12345 + 3000);
}
END_TEST

/* A copy held to a rate (StageBandwidth=) copies the same bytes, through
 * both data paths; the rate is read from a word another process could
 * change (here: high enough that the test takes no time to speak of). */
START_TEST(test_rate_limited_copy)
{
	struct copyengine_opts o;
	_Atomic uint64_t rate = (uint64_t)8 << 30; /* 8 GiB/s */
	struct run r;

	srandom_file("big", 5 * MIB + 777, 8);
	srandom_file("small", 3000, 9);
	memset(&o, 0, sizeof(o));
	o.no_copy_file_range = _i == 1;
	o.threads = 4;
	o.rate = &rate;
	copy_ok(&o, "data", &r);
	assert_tree_copied("data");
	ck_assert_uint_eq(r.res.bytes, 5 * MIB + 777 + 3000);
}
END_TEST

START_TEST(test_odd_names)
{
	static const char *names[] = {
		"with space", "new\nline", "tab\there",   "ünïcødé-日本語",
		"-dash",      "'quote\"",  "back\\slash", "x",
	};
	char longname[256];
	struct run r;

	memset(longname, 'n', 255);
	longname[255] = '\0';
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		srandom_file(names[i], 10 + i, (unsigned)i);
	srandom_file(longname, 5, 99);
	sdir("dir with space", 0755);
	srandom_file("dir with space/ünï\nfile", 7, 100);
	copy_ok(NULL, "data", &r);
	assert_tree_copied("data");
	ck_assert_uint_eq(r.tot.total_files, 10);
}
END_TEST

/* Make LEVELS nested directories "d/d/..." under src with a file at the
 * bottom. */
static void make_deep(int levels)
{
	int fd = dup(src_fd);

	for (int i = 0; i < levels; i++) {
		int next;

		ck_assert_int_eq(mkdirat(fd, "d", 0755), 0);
		next = openat(fd, "d", O_RDONLY | O_DIRECTORY);
		ck_assert_int_ge(next, 0);
		close(fd);
		fd = next;
	}
	{
		int f = openat(fd, "bottom", O_WRONLY | O_CREAT, 0644);

		ck_assert_int_ge(f, 0);
		ck_assert_int_eq(write(f, "deep", 4), 4);
		close(f);
	}
	close(fd);
}

START_TEST(test_deep_nesting_few_fds)
{
	struct rlimit rl = { 32, 32 };
	int status, fd;
	pid_t pid;
	char buf[8];

	make_deep(200);
	/* Copy with 16 threads and at most 32 descriptors: a walk holding
	 * an fd per level could not. */
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		struct run r;

		setrlimit(RLIMIT_NOFILE, &rl);
		_exit(copy_from(src, NULL, "data", &r) == 0 &&
			      r.tot.dirs == 201 && r.res.files == 1
			  ? 0
			  : 1);
	}
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	fd = dup(dst_fd);
	{
		int next = openat(fd, "data", O_RDONLY | O_DIRECTORY);

		close(fd);
		fd = next;
	}
	for (int i = 0; i < 200; i++) {
		int next = openat(fd, "d", O_RDONLY | O_DIRECTORY);

		ck_assert_int_ge(next, 0);
		close(fd);
		fd = next;
	}
	{
		int f = openat(fd, "bottom", O_RDONLY);

		ck_assert_int_ge(f, 0);
		ck_assert_int_eq(read(f, buf, sizeof(buf)), 4);
		ck_assert(!memcmp(buf, "deep", 4));
		close(f);
	}
	close(fd);
}
END_TEST

START_TEST(test_depth_limit)
{
	struct run r;

	int fd;

	make_deep(COPYENGINE_MAX_DEPTH + 1);
	ck_assert_int_eq(copy_from(src, NULL, "data", &r), -1);
	ck_assert_int_eq(errno, ELOOP);
	ck_assert_ptr_nonnull(strstr(r.err, "deeper than 256 levels"));
	ck_assert(dst_empty());
	/* Cut the tree in two so teardown's rmtree (which stops at 256
	 * levels too) can remove both halves. */
	fd = dup(src_fd);
	for (int i = 0; i < 128; i++) {
		int next = openat(fd, "d", O_RDONLY | O_DIRECTORY);

		ck_assert_int_ge(next, 0);
		close(fd);
		fd = next;
	}
	ck_assert_int_eq(renameat(fd, "d", base_fd, "tail"), 0);
	close(fd);
}
END_TEST

START_TEST(test_specials_skipped)
{
	struct sockaddr_un sa;
	struct run r;
	int s;

	sdir("sub", 0755);
	ck_assert_int_eq(mkfifoat(src_fd, "sub/fifo", 0644), 0);
	s = socket(AF_UNIX, SOCK_STREAM, 0);
	memset(&sa, 0, sizeof(sa));
	sa.sun_family = AF_UNIX;
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%.90s/sock", src);
	ck_assert_int_eq(bind(s, (struct sockaddr *)&sa, sizeof(sa)), 0);
	if (geteuid() == 0)
		ck_assert_int_eq(mknodat(src_fd, "null", S_IFCHR | 0666,
					 makedev(1, 3)),
				 0);
	srandom_file("regular", 10, 1);
	copy_ok(NULL, "data", &r);
	close(s);
	assert_tree_copied("data");
	ck_assert_uint_eq(r.tot.specials, geteuid() == 0 ? 3 : 2);
	ck_assert_uint_eq(r.tot.total_files, 1);
	ck_assert_ptr_nonnull(strstr(r.notes, "/src/sub/fifo: fifo skipped"));
	ck_assert_ptr_nonnull(strstr(r.notes, "/src/sock: socket skipped"));
	if (geteuid() == 0)
		ck_assert_ptr_nonnull(
		    strstr(r.notes, "/src/null: character device skipped"));
	ck_assert(!dst_exists("data/sub/fifo"));
	ck_assert(!dst_exists("data/sock"));
}
END_TEST

START_TEST(test_modes_and_times)
{
	struct run r;
	struct stat st;

	sdir("ro", 0755);
	srandom_file("ro/inside", 100, 1);
	ck_assert_int_eq(fchmodat(src_fd, "ro/inside", 0444, 0), 0);
	ck_assert_int_eq(fchmodat(src_fd, "ro", 0555, 0), 0);
	stimes("ro");
	sdir("xonly", 0711);
	stimes("xonly");
	srandom_file("exec", 10, 2);
	ck_assert_int_eq(fchmodat(src_fd, "exec", 0755, 0), 0);
	srandom_file("setuid", 10, 3);
	ck_assert_int_eq(fchmodat(src_fd, "setuid", 04755, 0), 0);
	srandom_file("private", 10, 4);
	ck_assert_int_eq(fchmodat(src_fd, "private", 0600, 0), 0);
	copy_ok(NULL, "data", &r);
	assert_tree_copied("data");
	ck_assert_int_eq(fstatat(dst_fd, "data/ro", &st, 0), 0);
	ck_assert_uint_eq(st.st_mode & 07777, 0555);
	ck_assert_int_eq(st.st_mtim.tv_sec, old_times[1].tv_sec);
	ck_assert_int_eq(st.st_mtim.tv_nsec, old_times[1].tv_nsec);
	ck_assert_int_eq(fstatat(dst_fd, "data/setuid", &st, 0), 0);
	ck_assert_uint_eq(st.st_mode & 07777, 04755);
}
END_TEST

START_TEST(test_private_top)
{
	struct copyengine_opts o;
	struct run r;
	struct stat st;
	char file[160];

	srandom_file("f", 10, 1);
	ck_assert_int_eq(fchmod(src_fd, 0755), 0);
	memset(&o, 0, sizeof(o));
	o.private_top = true;
	copy_ok(&o, "data", &r);
	ck_assert_int_eq(fstatat(dst_fd, "data", &st, 0), 0);
	ck_assert_uint_eq(st.st_mode & 07777, 0700);
	ck_assert_int_eq(fstatat(dst_fd, "data/f", &st, 0), 0);
	ck_assert_uint_eq(st.st_mode & 07777, 0644);
	/* Without it the top keeps the source's mode. */
	copy_ok(NULL, "plain", &r);
	ck_assert_int_eq(fstatat(dst_fd, "plain", &st, 0), 0);
	ck_assert_uint_eq(st.st_mode & 07777, 0755);
	/* A single file: mode & 0700. */
	snprintf(file, sizeof(file), "%s/f", src);
	ck_assert_int_eq(fchmodat(src_fd, "f", 0754, 0), 0);
	memset(&o, 0, sizeof(o));
	o.private_top = true;
	ck_assert_int_eq(copy_from(file, &o, "one", &r), 0);
	ck_assert_int_eq(fstatat(dst_fd, "one", &st, AT_SYMLINK_NOFOLLOW), 0);
	ck_assert(S_ISREG(st.st_mode));
	ck_assert_uint_eq(st.st_mode & 07777, 0700);
}
END_TEST

START_TEST(test_single_file_and_top_symlink)
{
	struct run r;
	char file[160], link[160];
	struct stat st;

	srandom_file("f", 70 * MIB, 3); /* chunked, too */
	snprintf(file, sizeof(file), "%s/f", src);
	ck_assert_int_eq(copy_from(file, NULL, "copy", &r), 0);
	ck_assert_uint_eq(r.tot.total_files, 1);
	ck_assert_uint_eq(r.res.bytes, 70 * MIB);
	assert_copy(src_fd, dst_fd, "f", "copy", false);
	/* Only the top may be a symlink, and it is followed. */
	snprintf(link, sizeof(link), "%s/link", base);
	ck_assert_int_eq(symlink(src, link), 0);
	ck_assert_int_eq(copy_from(link, NULL, "via-link", &r), 0);
	ck_assert_int_eq(fstatat(dst_fd, "via-link", &st, AT_SYMLINK_NOFOLLOW),
			 0);
	ck_assert(S_ISDIR(st.st_mode));
	assert_copy(base_fd, dst_fd, "src", "via-link", true);
}
END_TEST

/* --- failures ------------------------------------------------------------------ */

/* Run FN as nobody in a child; its return value is the exit status. */
static int as_nobody(int (*fn)(void *), void *arg)
{
	int status;
	pid_t pid = fork();

	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		if (setgroups(0, NULL) < 0 || setgid(NOBODY) < 0 ||
		    setuid(NOBODY) < 0)
			_exit(99);
		_exit(fn(arg));
	}
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert(WIFEXITED(status));
	return WEXITSTATUS(status);
}

struct expect {
	const char *src;
	const char *want1, *want2;
};

/* Child: the copy must fail with a message holding WANT1 and WANT2. */
static int copy_must_fail(void *arg)
{
	const struct expect *x = arg;
	struct run r;

	if (copy_from(x->src, NULL, "data", &r) == 0)
		return 1;
	if (!strstr(r.err, x->want1) || !strstr(r.err, x->want2)) {
		fprintf(stderr, "unexpected error: %s\n", r.err);
		return 2;
	}
	return 0;
}

START_TEST(test_unreadable_file_named)
{
	struct expect x;
	char want[200];

	ck_assert_int_eq(fchown(dst_fd, NOBODY, NOBODY), 0);
	sdir("pub", 0755);
	for (int i = 0; i < 50; i++) {
		char name[32];

		snprintf(name, sizeof(name), "pub/f%02d", i);
		srandom_file(name, 20000, (unsigned)i);
	}
	srandom_file("pub/secret", 100, 1);
	ck_assert_int_eq(fchmodat(src_fd, "pub/secret", 0600, 0), 0);
	snprintf(want, sizeof(want), "cannot read %s/pub/secret", src);
	x.src = src;
	x.want1 = want;
	x.want2 = ": Permission denied";
	ck_assert_int_eq(as_nobody(copy_must_fail, &x), 0);
	/* Nothing half-made is left behind. */
	ck_assert(dst_empty());
}
END_TEST

START_TEST(test_unreadable_dir_named)
{
	struct expect x;
	char want[200];

	ck_assert_int_eq(fchown(dst_fd, NOBODY, NOBODY), 0);
	sdir("closed", 0700);
	srandom_file("closed/x", 10, 1);
	snprintf(want, sizeof(want), "cannot read %s/closed", src);
	x.src = src;
	x.want1 = want;
	x.want2 = "Permission denied";
	ck_assert_int_eq(as_nobody(copy_must_fail, &x), 0);
	ck_assert(dst_empty());
}
END_TEST

START_TEST(test_destination_exists)
{
	struct run r;

	srandom_file("f", 10, 1);
	ck_assert_int_eq(mkdirat(dst_fd, "data", 0755), 0);
	ck_assert_int_eq(mkdirat(dst_fd, "data/keep", 0755), 0);
	ck_assert_int_eq(copy_from(src, NULL, "data", &r), -1);
	ck_assert_int_eq(errno, EEXIST);
	ck_assert_ptr_nonnull(strstr(r.err, "cannot write data: File exists"));
	/* What was there is not ours: untouched. */
	ck_assert(dst_exists("data/keep"));
}
END_TEST

START_TEST(test_dst_label_in_messages)
{
	struct copyengine_opts o;
	struct run r;

	srandom_file("f", 10, 1);
	ck_assert_int_eq(mkdirat(dst_fd, "data", 0755), 0);
	memset(&o, 0, sizeof(o));
	o.dst_label = "/tier/jobs/7/data";
	ck_assert_int_eq(copy_from(src, &o, "data", &r), -1);
	ck_assert_str_eq(r.err, "cannot write /tier/jobs/7/data: File exists");
}
END_TEST

START_TEST(test_bad_sources)
{
	struct copyengine *ce = NULL;
	char err[ERRLEN], path[200];

	ck_assert_int_eq(copyengine_walk(NULL, NULL, &ce, err, sizeof(err)),
			 -1);
	ck_assert_int_eq(copyengine_walk("relative", NULL, &ce, err,
					 sizeof(err)),
			 -1);
	ck_assert_ptr_nonnull(strstr(err, "not an absolute path"));
	snprintf(path, sizeof(path), "%s/missing", src);
	ck_assert_int_eq(copyengine_walk(path, NULL, &ce, err, sizeof(err)),
			 -1);
	ck_assert_int_eq(errno, ENOENT);
	ck_assert_ptr_nonnull(strstr(err, "missing: No such file"));
	ck_assert_int_eq(mkfifoat(src_fd, "fifo", 0644), 0);
	snprintf(path, sizeof(path), "%s/fifo", src);
	ck_assert_int_eq(copyengine_walk(path, NULL, &ce, err, sizeof(err)),
			 -1);
	ck_assert_ptr_nonnull(strstr(err, "not a regular file or directory"));
	ck_assert_ptr_null(ce);
	copyengine_destroy(NULL);
}
END_TEST

START_TEST(test_bad_dst_names)
{
	static const char *names[] = { "", ".", "..", "a/b" };
	struct copyengine *ce = NULL;
	char err[ERRLEN];

	srandom_file("f", 10, 1);
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		ck_assert_int_eq(copyengine_walk(src, NULL, &ce, err,
						 sizeof(err)),
				 0);
		ck_assert_int_eq(copyengine_copy(ce, dst_fd, names[i], NULL,
						 err, sizeof(err)),
				 -1);
		ck_assert_int_eq(errno, EINVAL);
		copyengine_destroy(ce);
	}
	ck_assert(dst_empty());
}
END_TEST

START_TEST(test_changed_while_staged)
{
	struct copyengine *ce = NULL;
	char err[ERRLEN], want[200];
	int fd;

	sdir("d", 0755);
	srandom_file("d/f", 1000, 1);
	ck_assert_int_eq(copyengine_walk(src, NULL, &ce, err, sizeof(err)), 0);
	fd = openat(src_fd, "d/f", O_WRONLY | O_APPEND);
	ck_assert_int_eq(write(fd, "more", 4), 4);
	close(fd);
	ck_assert_int_eq(copyengine_copy(ce, dst_fd, "data", NULL, err,
					 sizeof(err)),
			 -1);
	snprintf(want, sizeof(want),
		 "cannot read %s/d/f: changed while being "
		 "staged",
		 src);
	ck_assert_str_eq(err, want);
	ck_assert(dst_empty());
	copyengine_destroy(ce);
}
END_TEST

/* --- manifests, checks and previous copies ------------------------------------- */

static struct manifest *walk_manifest(bool hash)
{
	struct copyengine_opts o;
	struct copyengine *ce = NULL;
	struct manifest *m = NULL;
	char err[ERRLEN];

	memset(&o, 0, sizeof(o));
	o.hash = hash;
	ck_assert_int_eq(copyengine_walk(src, &o, &ce, err, sizeof(err)), 0);
	ck_assert_int_eq(copyengine_manifest(ce, &m), 0);
	copyengine_destroy(ce);
	return m;
}

/* Walk src against M the way `--check` does (check_only) and the way a
 * copy does; both must count the same. */
static struct copyengine_totals check_with(const struct copyengine_opts *tmpl,
					   const struct manifest *m,
					   enum manifest_verify v)
{
	struct copyengine_opts o;
	struct copyengine *ce = NULL;
	struct copyengine_totals t, full;
	struct manifest *none = NULL;
	char err[ERRLEN];

	if (tmpl)
		o = *tmpl;
	else
		memset(&o, 0, sizeof(o));
	o.previous = m;
	o.verify = v;
	o.hash = v == MANIFEST_VERIFY_CHECKSUM;
	o.check_only = true;
	ck_assert_int_eq(copyengine_walk(src, &o, &ce, err, sizeof(err)), 0);
	t = *copyengine_totals(ce);
	/* A check creates nothing. */
	ck_assert_int_eq(copyengine_copy(ce, dst_fd, "data", NULL, err,
					 sizeof(err)),
			 -1);
	ck_assert_int_eq(copyengine_manifest(ce, &none), -1);
	ck_assert(dst_empty());
	copyengine_destroy(ce);
	o.check_only = false;
	ck_assert_int_eq(copyengine_walk(src, &o, &ce, err, sizeof(err)), 0);
	full = *copyengine_totals(ce);
	copyengine_destroy(ce);
	ck_assert_uint_eq(t.total_bytes, full.total_bytes);
	ck_assert_uint_eq(t.total_files, full.total_files);
	ck_assert_uint_eq(t.copy_bytes, full.copy_bytes);
	ck_assert_uint_eq(t.copy_files, full.copy_files);
	ck_assert_uint_eq(t.dirs, full.dirs);
	ck_assert_uint_eq(t.symlinks, full.symlinks);
	ck_assert_uint_eq(t.hardlinks, full.hardlinks);
	ck_assert_uint_eq(t.diff.added, full.diff.added);
	ck_assert_uint_eq(t.diff.removed, full.diff.removed);
	ck_assert_uint_eq(t.diff.changed, full.diff.changed);
	ck_assert_uint_eq(t.diff.same, full.diff.same);
	ck_assert(t.unchanged == full.unchanged);
	ck_assert_uint_eq(t.dataset_bytes, full.dataset_bytes);
	ck_assert_uint_eq(t.dataset_files, full.dataset_files);
	ck_assert_uint_eq(t.over_budget_files, full.over_budget_files);
	ck_assert_uint_eq(t.over_budget_bytes, full.over_budget_bytes);
	return t;
}

static struct copyengine_totals check_against(const struct manifest *m,
					      enum manifest_verify v)
{
	return check_with(NULL, m, v);
}

static void small_tree(void)
{
	sdir("a", 0755);
	srandom_file("a/x", 1000, 1);
	srandom_file("a/y", 2000, 2);
	srandom_file("z", 3000, 3);
	ck_assert_int_eq(symlinkat("a/x", src_fd, "l"), 0);
	stimes("a");
}

START_TEST(test_check_hard_links)
{
	struct manifest *m;
	struct copyengine_totals t;

	small_tree();
	srandom_file("h1", 500, 7);
	ck_assert_int_eq(linkat(src_fd, "h1", src_fd, "a/h2", 0), 0);
	stimes("a");
	ck_assert_int_eq(utimensat(src_fd, "", old_times, AT_EMPTY_PATH), 0);
	m = walk_manifest(false);
	t = check_against(m, MANIFEST_VERIFY_STAT);
	ck_assert(t.unchanged);
	ck_assert_uint_eq(t.total_files, 5);
	ck_assert_uint_eq(t.hardlinks, 1);
	ck_assert_uint_eq(t.total_bytes, 1000 + 2000 + 3000 + 500);
	/* Touching the inode changes both names; it is copied once. */
	ck_assert_int_eq(utimensat(src_fd, "h1", NULL, 0), 0);
	t = check_against(m, MANIFEST_VERIFY_STAT);
	ck_assert(!t.unchanged);
	ck_assert_uint_eq(t.diff.changed, 2);
	ck_assert_uint_eq(t.copy_files, 1);
	ck_assert_uint_eq(t.copy_bytes, 500);
	manifest_destroy(m);
}
END_TEST

START_TEST(test_manifest_of_walk)
{
	struct manifest *m;
	const struct manifest_entry *e;

	small_tree();
	m = walk_manifest(true);
	ck_assert_uint_eq(manifest_count(m), 6);
	ck_assert_str_eq(manifest_get(m, 0)->path, "");
	ck_assert_str_eq(manifest_get(m, 1)->path, "a");
	ck_assert_str_eq(manifest_get(m, 2)->path, "a/x");
	ck_assert_str_eq(manifest_get(m, 5)->path, "z");
	e = manifest_find(m, "a/y", 3);
	ck_assert_ptr_nonnull(e);
	ck_assert_uint_eq(e->type, MANIFEST_FILE);
	ck_assert_uint_eq(e->size, 2000);
	ck_assert_uint_eq(e->mode, 0644);
	ck_assert(e->mtime_ns == 1234567890123456789LL);
	ck_assert(e->has_hash);
	e = manifest_find(m, "l", 1);
	ck_assert_uint_eq(e->type, MANIFEST_SYMLINK);
	ck_assert_uint_eq(e->size, 3);
	ck_assert(e->has_hash);
	e = manifest_find(m, "a", 1);
	ck_assert_uint_eq(e->type, MANIFEST_DIR);
	ck_assert(!e->has_hash);
	manifest_destroy(m);
}
END_TEST

START_TEST(test_check_detects_changes)
{
	struct manifest *m, *mh;
	struct copyengine_totals t;
	struct timespec keep[2];
	struct stat st;
	int fd;

	small_tree();
	m = walk_manifest(false);
	mh = walk_manifest(true);
	t = check_against(m, MANIFEST_VERIFY_STAT);
	ck_assert(t.unchanged);
	ck_assert_uint_eq(t.copy_files, 0);
	ck_assert_uint_eq(t.copy_bytes, 0);
	ck_assert_uint_eq(t.total_files, 3);
	ck_assert_uint_eq(t.diff.same, 6);
	t = check_against(mh, MANIFEST_VERIFY_CHECKSUM);
	ck_assert(t.unchanged);
	/* A manifest without hashes never matches a checksum check. */
	t = check_against(m, MANIFEST_VERIFY_CHECKSUM);
	ck_assert(!t.unchanged);

	/* Same size and mtime, other bytes: only a checksum sees it. */
	ck_assert_int_eq(fstatat(src_fd, "a/y", &st, 0), 0);
	keep[0] = st.st_atim;
	keep[1] = st.st_mtim;
	fd = openat(src_fd, "a/y", O_WRONLY);
	ck_assert_int_eq(pwrite(fd, "!", 1, 10), 1);
	ck_assert_int_eq(futimens(fd, keep), 0);
	close(fd);
	t = check_against(m, MANIFEST_VERIFY_STAT);
	ck_assert(t.unchanged);
	t = check_against(mh, MANIFEST_VERIFY_CHECKSUM);
	ck_assert(!t.unchanged);
	ck_assert_uint_eq(t.diff.changed, 1);
	ck_assert_uint_eq(t.copy_files, 1);
	ck_assert_uint_eq(t.copy_bytes, 2000);

	/* A new mtime. */
	ck_assert_int_eq(utimensat(src_fd, "z", NULL, 0), 0);
	t = check_against(m, MANIFEST_VERIFY_STAT);
	ck_assert(!t.unchanged);
	ck_assert_uint_eq(t.diff.changed, 1);
	ck_assert_uint_eq(t.copy_bytes, 3000);

	/* Added and removed (the top's mtime changes too). */
	ck_assert_int_eq(unlinkat(src_fd, "a/x", 0), 0);
	srandom_file("new", 10, 9);
	t = check_against(m, MANIFEST_VERIFY_STAT);
	ck_assert_uint_eq(t.diff.added, 1);
	ck_assert_uint_eq(t.diff.removed, 1);
	ck_assert_uint_eq(t.diff.changed, 3); /* z, a, the top */
	ck_assert_uint_eq(t.copy_files, 2);   /* new, z */
	manifest_destroy(m);
	manifest_destroy(mh);
}
END_TEST

START_TEST(test_previous_hard_linked)
{
	struct copyengine_opts o;
	struct manifest *m;
	struct run r;
	struct stat a, b;
	char prev[160];

	small_tree();
	srandom_file("big", 70 * MIB, 4);
	copy_ok(NULL, "v1", &r);
	m = walk_manifest(false);
	/* Change one file, add one. */
	ck_assert_int_eq(unlinkat(src_fd, "z", 0), 0);
	srandom_file("z", 3001, 5);
	srandom_file("added", 10, 6);
	snprintf(prev, sizeof(prev), "%s/v1", dst);
	memset(&o, 0, sizeof(o));
	o.previous = m;
	o.previous_path = prev;
	copy_ok(&o, "v2", &r);
	assert_tree_copied("v2");
	ck_assert_uint_eq(r.tot.copy_files, 2);
	ck_assert_uint_eq(r.tot.copy_bytes, 3011);
	ck_assert_uint_eq(r.res.linked, 3); /* a/x, a/y, big */
	ck_assert_uint_eq(r.res.files, 5);
	ck_assert_int_eq(fstatat(dst_fd, "v1/big", &a, 0), 0);
	ck_assert_int_eq(fstatat(dst_fd, "v2/big", &b, 0), 0);
	ck_assert_uint_eq(a.st_ino, b.st_ino);
	ck_assert_int_eq(fstatat(dst_fd, "v1/z", &a, 0), 0);
	ck_assert_int_eq(fstatat(dst_fd, "v2/z", &b, 0), 0);
	ck_assert_uint_ne(a.st_ino, b.st_ino);
	/* The previous copy is intact. */
	ck_assert_int_eq(a.st_size, 3000);
	/* A file missing from the previous copy is copied, not failed. */
	ck_assert_int_eq(unlinkat(dst_fd, "v1/a/x", 0), 0);
	copy_ok(&o, "v3", &r);
	assert_tree_copied("v3");
	ck_assert_uint_eq(r.res.linked, 2);
	manifest_destroy(m);
}
END_TEST

START_TEST(test_previous_single_file)
{
	struct copyengine_opts o;
	struct manifest *m;
	struct copyengine *ce = NULL;
	struct run r;
	struct stat a, b;
	char file[160], prev[160], err[ERRLEN];

	srandom_file("f", 5000, 1);
	snprintf(file, sizeof(file), "%s/f", src);
	ck_assert_int_eq(copy_from(file, NULL, "v1", &r), 0);
	memset(&o, 0, sizeof(o));
	ck_assert_int_eq(copyengine_walk(file, &o, &ce, err, sizeof(err)), 0);
	ck_assert_int_eq(copyengine_manifest(ce, &m), 0);
	copyengine_destroy(ce);
	ck_assert_uint_eq(manifest_count(m), 1);
	ck_assert_str_eq(manifest_get(m, 0)->path, "");
	snprintf(prev, sizeof(prev), "%s/v1", dst);
	o.previous = m;
	o.previous_path = prev;
	ck_assert_int_eq(copy_from(file, &o, "v2", &r), 0);
	ck_assert(r.tot.unchanged);
	ck_assert_uint_eq(r.res.linked, 1);
	ck_assert_int_eq(fstatat(dst_fd, "v1", &a, 0), 0);
	ck_assert_int_eq(fstatat(dst_fd, "v2", &b, 0), 0);
	ck_assert_uint_eq(a.st_ino, b.st_ino);
	manifest_destroy(m);
}
END_TEST

/* --- fetching from another node's copy (opts.fetch) ------------------------ */

/* A stand-in for the stage worker's sessions (daemon/staging/worker_peer.c):
 * files of the previous copy FROM, read here; REFUSE is refused after
 * half of it was written (the engine must remove it and copy it from the
 * source); with UNLINK_SRC that file's source goes too, so the fallback
 * copy fails. */
struct fetcher {
	const char *from;
	const char *refuse;
	bool unlink_src;
	_Atomic unsigned calls;
};

static int fetch_from(const char *rel, int out, uint64_t size, void *arg)
{
	struct fetcher *f = arg;
	char path[512];
	char *buf = malloc(size + 1);
	int in, r = -1;

	atomic_fetch_add(&f->calls, 1);
	snprintf(path, sizeof(path), "%s%s%s", f->from, *rel ? "/" : "", rel);
	in = open(path, O_RDONLY | O_CLOEXEC);
	ck_assert_msg(in >= 0, "%s: %s", path, strerror(errno));
	ck_assert_int_eq(pread(in, buf, size, 0), (ssize_t)size);
	close(in);
	if (f->refuse && !strcmp(rel, f->refuse)) {
		/* cut short: half written */
		ck_assert_int_eq(write(out, buf, size / 2),
				 (ssize_t)(size / 2));
		if (f->unlink_src)
			ck_assert_int_eq(unlinkat(src_fd, rel, 0), 0);
	} else if (write(out, buf, size) == (ssize_t)size) {
		r = 0;
	}
	free(buf);
	return r;
}

START_TEST(test_fetch_from_peer)
{
	struct fetcher f = { .refuse = "a/y" };
	struct copyengine_opts o;
	struct manifest *m;
	struct run r;
	struct stat a, b;
	char prev[160];

	small_tree();
	srandom_file("big", 9 * MIB + 3, 4); /* chunked when copied */
	copy_ok(NULL, "v1", &r);
	m = walk_manifest(false);
	/* Change one file, add one: those come from the source. */
	ck_assert_int_eq(unlinkat(src_fd, "z", 0), 0);
	srandom_file("z", 3001, 5);
	srandom_file("added", 10, 6);
	snprintf(prev, sizeof(prev), "%s/v1", dst);
	f.from = prev;
	memset(&o, 0, sizeof(o));
	o.previous = m;
	o.fetch = fetch_from;
	o.fetch_arg = &f;
	o.threads = 4;
	copy_ok(&o, "v2", &r);
	assert_tree_copied("v2");
	ck_assert_uint_eq(f.calls, 3); /* a/x, a/y, big */
	ck_assert_uint_eq(r.res.fetched, 2);
	ck_assert_uint_eq(r.res.fetched_bytes, 1000 + 9 * MIB + 3);
	ck_assert_uint_eq(r.res.fetch_fallbacks, 1);
	ck_assert_uint_eq(r.res.linked, 0);
	ck_assert_uint_eq(r.res.files, 5);
	/* walked as with a previous copy: the changed ones to copy */
	ck_assert_uint_eq(r.tot.copy_files, 2);
	/* fetched files are files of their own, not links */
	ck_assert_int_eq(fstatat(dst_fd, "v1/big", &a, 0), 0);
	ck_assert_int_eq(fstatat(dst_fd, "v2/big", &b, 0), 0);
	ck_assert_uint_ne(a.st_ino, b.st_ino);
	ck_assert_uint_eq(b.st_nlink, 1);
	manifest_destroy(m);
}
END_TEST

/* A fill by parts: this node's share is the previous copy (linked where
 * it has a file), the other nodes' shares give the rest (fetched), and
 * only what neither has comes from the source. */
START_TEST(test_link_share_fetch_the_rest)
{
	struct fetcher f = { 0 };
	struct copyengine_opts o;
	struct manifest *m;
	struct run r;
	struct stat a, b;
	char share[160], others[160];

	small_tree();
	srandom_file("big", 9 * MIB + 3, 4);
	copy_ok(NULL, "others", &r);
	copy_ok(NULL, "share", &r);
	m = walk_manifest(false);
	/* The share holds a/y and z only. */
	ck_assert_int_eq(unlinkat(dst_fd, "share/a/x", 0), 0);
	ck_assert_int_eq(unlinkat(dst_fd, "share/big", 0), 0);
	snprintf(share, sizeof(share), "%s/share", dst);
	snprintf(others, sizeof(others), "%s/others", dst);
	f.from = others;
	memset(&o, 0, sizeof(o));
	o.previous = m;
	o.previous_path = share;
	o.fetch = fetch_from;
	o.fetch_arg = &f;
	o.threads = 4;
	copy_ok(&o, "whole", &r);
	assert_tree_copied("whole");
	ck_assert_uint_eq(r.res.linked, 2);
	ck_assert_uint_eq(r.res.linked_bytes, 2000 + 3000);
	ck_assert_uint_eq(f.calls, 2); /* a/x, big: not in the share */
	ck_assert_uint_eq(r.res.fetched, 2);
	ck_assert_uint_eq(r.res.fetched_bytes, 1000 + 9 * MIB + 3);
	ck_assert_uint_eq(r.res.fetch_fallbacks, 0);
	ck_assert_uint_eq(r.res.files, 4);
	/* linked: the share's inode; fetched: a file of its own */
	ck_assert_int_eq(fstatat(dst_fd, "share/z", &a, 0), 0);
	ck_assert_int_eq(fstatat(dst_fd, "whole/z", &b, 0), 0);
	ck_assert_uint_eq(a.st_ino, b.st_ino);
	ck_assert_int_eq(fstatat(dst_fd, "others/big", &a, 0), 0);
	ck_assert_int_eq(fstatat(dst_fd, "whole/big", &b, 0), 0);
	ck_assert_uint_ne(a.st_ino, b.st_ino);
	manifest_destroy(m);
}
END_TEST

/* A share's file that cannot be linked (here: on another file system,
 * EXDEV; in a fill by parts of a public entry: root's, EPERM) is copied
 * from the share, not fetched or read from the source. */
START_TEST(test_unlinkable_share_copied_locally)
{
	struct fetcher f = { 0 };
	struct copyengine_opts o;
	struct manifest *m;
	struct run r;
	char share[64], others[160], cmd[1024];

	snprintf(share, sizeof(share), "/dev/shm/check_ce_share.%d",
		 (int)getpid());
	small_tree();
	copy_ok(NULL, "others", &r);
	m = walk_manifest(false);
	/* the share: a/y and z, on tmpfs */
	snprintf(cmd, sizeof(cmd),
		 "rm -rf %s && mkdir -p %s/a && cp -p %s/a/y %s/a/ && "
		 "cp -p %s/z %s/",
		 share, share, src, share, src, share);
	ck_assert_int_eq(system(cmd), 0);
	snprintf(others, sizeof(others), "%s/others", dst);
	f.from = others;
	memset(&o, 0, sizeof(o));
	o.previous = m;
	o.previous_path = share;
	o.fetch = fetch_from;
	o.fetch_arg = &f;
	copy_ok(&o, "whole", &r);
	assert_tree_copied("whole");
	ck_assert_uint_eq(r.res.linked, 0);
	ck_assert_uint_eq(r.res.copied_previous, 2);
	ck_assert_uint_eq(r.res.copied_previous_bytes, 2000 + 3000);
	ck_assert_uint_eq(f.calls, 1); /* a/x only */
	ck_assert_uint_eq(r.res.fetched, 1);
	ck_assert_uint_eq(r.res.files, 3);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", share);
	ck_assert_int_eq(system(cmd), 0);
	manifest_destroy(m);
}
END_TEST

START_TEST(test_fetch_single_file)
{
	struct fetcher f = { 0 };
	struct copyengine_opts o;
	struct manifest *m;
	struct copyengine *ce = NULL;
	struct run r;
	char file[160], prev[160], err[ERRLEN];

	srandom_file("f", 5000, 1);
	snprintf(file, sizeof(file), "%s/f", src);
	ck_assert_int_eq(copy_from(file, NULL, "v1", &r), 0);
	memset(&o, 0, sizeof(o));
	ck_assert_int_eq(copyengine_walk(file, &o, &ce, err, sizeof(err)), 0);
	ck_assert_int_eq(copyengine_manifest(ce, &m), 0);
	copyengine_destroy(ce);
	snprintf(prev, sizeof(prev), "%s/v1", dst);
	f.from = prev;
	o.previous = m;
	o.fetch = fetch_from;
	o.fetch_arg = &f;
	ck_assert_int_eq(copy_from(file, &o, "v2", &r), 0);
	ck_assert_uint_eq(r.res.fetched, 1);
	ck_assert_uint_eq(r.res.fetched_bytes, 5000);
	assert_copy(src_fd, dst_fd, "f", "v2", true);
	/* refused: from the source, the half-made one gone first */
	f.refuse = "";
	ck_assert_int_eq(copy_from(file, &o, "v3", &r), 0);
	ck_assert_uint_eq(r.res.fetched, 0);
	ck_assert_uint_eq(r.res.fetch_fallbacks, 1);
	assert_copy(src_fd, dst_fd, "f", "v3", true);
	manifest_destroy(m);
}
END_TEST

/* A refused fetch whose source copy then fails fails the copy, and
 * nothing of it stays. */
START_TEST(test_fetch_failure_leaves_nothing)
{
	struct fetcher f = { .refuse = "a/x", .unlink_src = true };
	struct copyengine_opts o;
	struct manifest *m;
	struct run r;
	char prev[160];

	small_tree();
	copy_ok(NULL, "v1", &r);
	m = walk_manifest(false);
	snprintf(prev, sizeof(prev), "%s/v1", dst);
	f.from = prev;
	memset(&o, 0, sizeof(o));
	o.previous = m;
	o.fetch = fetch_from;
	o.fetch_arg = &f;
	ck_assert_int_eq(copy_from(src, &o, "v2", &r), -1);
	ck_assert_msg(strstr(r.err, "a/x"), "%s", r.err);
	ck_assert(!dst_exists("v2"));
	ck_assert(dst_exists("v1/a/x"));
	manifest_destroy(m);
}
END_TEST

/* --- a node's part of a spread dataset (opts.select, select_budget) -------- */

#define PART_FILES 200
#define PART_DIRS 8
#define PART_PLAN "n1=100,n2=100,n3=50"

/* The stage worker's selection (daemon/staging/worker.c --spread): the
 * files SELF holds, ranked by its score for them. */
struct part {
	struct spread_plan plan;
	unsigned self;
	_Atomic unsigned calls;
};

static bool part_select(const char *rel, size_t len, uint64_t size,
			double *priority, void *arg)
{
	struct part *p = arg;

	(void)size;
	atomic_fetch_add(&p->calls, 1);
	ck_assert_uint_eq(strlen(rel), len);
	if (spread_owner(&p->plan, rel, len) != p->self)
		return false;
	*priority = spread_score(&p->plan, p->self, rel, len);
	return true;
}

static void part_init(struct part *p, unsigned self)
{
	char err[256];

	memset(p, 0, sizeof(*p));
	ck_assert_int_eq(spread_plan_parse(PART_PLAN, &p->plan, err,
					   sizeof(err)),
			 0);
	p->self = self;
}

static void part_opts(struct copyengine_opts *o, struct part *p)
{
	memset(o, 0, sizeof(*o));
	o->select = part_select;
	o->select_arg = p;
	o->threads = 4;
}

static unsigned owner_of(const struct part *p, const char *rel)
{
	return spread_owner(&p->plan, rel, strlen(rel));
}

/* PART_FILES files of various sizes in PART_DIRS directories (one of
 * them nested), an empty directory and two symlinks; every directory's
 * times set, so that a test can put them back. */
static void spread_tree(void)
{
	char rel[64];

	for (unsigned d = 0; d < PART_DIRS; d++) {
		snprintf(rel, sizeof(rel),
			 d == PART_DIRS - 1 ? "d0/d%u" : "d%u", d);
		sdir(rel, 0755);
	}
	sdir("empty", 0750);
	for (unsigned i = 0; i < PART_FILES; i++) {
		unsigned d = i % PART_DIRS;

		if (d == PART_DIRS - 1)
			snprintf(rel, sizeof(rel), "d0/d%u/f%03u", d, i);
		else
			snprintf(rel, sizeof(rel), "d%u/f%03u", d, i);
		srandom_file(rel, 100 + (i * 37) % 3000, i + 1);
	}
	ck_assert_int_eq(symlinkat("f001", src_fd, "d1/link"), 0);
	ck_assert_int_eq(symlinkat("d0", src_fd, "top-link"), 0);
	ck_assert_int_eq(futimens(src_fd, old_times), 0);
	for (unsigned d = 0; d < PART_DIRS; d++) {
		snprintf(rel, sizeof(rel),
			 d == PART_DIRS - 1 ? "d0/d%u" : "d%u", d);
		stimes(rel);
	}
	stimes("empty");
}

/* Walk src with O and return the walk's manifest of what it keeps,
 * its listing into *LISTING (may be NULL) and its totals into *T. */
static struct manifest *part_manifest(const struct copyengine_opts *o,
				      struct manifest **listing,
				      struct copyengine_totals *t)
{
	struct copyengine *ce = NULL;
	struct manifest *m = NULL;
	char err[ERRLEN];

	ck_assert_msg(copyengine_walk(src, o, &ce, err, sizeof(err)) == 0, "%s",
		      err);
	ck_assert_int_eq(copyengine_manifest(ce, &m), 0);
	if (listing)
		ck_assert_int_eq(copyengine_listing(ce, listing), 0);
	if (t)
		*t = *copyengine_totals(ce);
	copyengine_destroy(ce);
	return m;
}

static void assert_same_manifest(const struct manifest *a,
				 const struct manifest *b)
{
	ck_assert_uint_eq(manifest_count(a), manifest_count(b));
	for (size_t i = 0; i < manifest_count(a); i++) {
		const struct manifest_entry *x = manifest_get(a, i),
					    *y = manifest_get(b, i);

		ck_assert_str_eq(x->path, y->path);
		ck_assert_msg(manifest_entry_same(x, y, MANIFEST_VERIFY_STAT),
			      "%s differs", x->path);
		ck_assert(!x->has_hash && !y->has_hash);
	}
}

START_TEST(test_part_per_node)
{
	struct manifest *whole = NULL, *m, *listing;
	uint64_t files = 0, bytes = 0, held[3] = { 0 };

	spread_tree();
	whole = walk_manifest(false);
	for (size_t i = 0; i < manifest_count(whole); i++)
		if (manifest_get(whole, i)->type == MANIFEST_FILE) {
			files++;
			bytes += manifest_get(whole, i)->size;
		}
	ck_assert_uint_eq(files, PART_FILES);
	for (unsigned self = 0; self < 3; self++) {
		struct copyengine_opts o;
		struct copyengine_totals t;
		struct part p;
		struct run r;
		char name[8], path[MANIFEST_PATH_MAX + 8];
		char spath[MANIFEST_PATH_MAX + 8];
		uint64_t own = 0, own_bytes = 0;

		part_init(&p, self);
		part_opts(&o, &p);
		snprintf(name, sizeof(name), "p%u", self);
		copy_ok(&o, name, &r);
		/* asked once per file path, nothing else */
		ck_assert_uint_eq(p.calls, PART_FILES);
		ck_assert_uint_eq(r.tot.dataset_files, PART_FILES);
		ck_assert_uint_eq(r.tot.dataset_bytes, bytes);
		ck_assert_uint_eq(r.tot.over_budget_files, 0);
		ck_assert_uint_eq(r.tot.dirs, PART_DIRS + 2);
		ck_assert_uint_eq(r.tot.symlinks, 2);
		for (size_t i = 0; i < manifest_count(whole); i++) {
			const struct manifest_entry *e = manifest_get(whole, i);
			bool mine = e->type != MANIFEST_FILE ||
				    owner_of(&p, e->path) == self;

			snprintf(path, sizeof(path), "%s%s%s", name,
				 *e->path ? "/" : "", e->path);
			ck_assert_msg(dst_exists(path) == mine, "%s: %s", path,
				      mine ? "missing" : "not this part's");
			if (!mine)
				continue;
			/* the same thing as the source's (a directory's
			 * entries are checked one by one) */
			snprintf(spath, sizeof(spath), "src%s%s",
				 *e->path ? "/" : "", e->path);
			if (e->type != MANIFEST_DIR) {
				assert_copy(base_fd, dst_fd, spath, path,
					    false);
			} else {
				struct stat a, b;

				ck_assert_int_eq(fstatat(base_fd, spath, &a, 0),
						 0);
				ck_assert_int_eq(fstatat(dst_fd, path, &b, 0),
						 0);
				ck_assert(S_ISDIR(b.st_mode));
				ck_assert_uint_eq(a.st_mode, b.st_mode);
				ck_assert_int_eq(a.st_mtim.tv_sec,
						 b.st_mtim.tv_sec);
			}
			if (e->type == MANIFEST_FILE) {
				own++;
				own_bytes += e->size;
			}
		}
		ck_assert_uint_eq(r.tot.total_files, own);
		ck_assert_uint_eq(r.tot.total_bytes, own_bytes);
		ck_assert_uint_eq(r.tot.copy_files, own);
		ck_assert_uint_eq(r.res.files, own);
		/* each of three nodes holds some, none all */
		ck_assert_uint_gt(own, 20);
		ck_assert_uint_lt(own, PART_FILES - 20);
		held[self] = own;

		/* its manifest: its files and the whole skeleton; the
		 * listing: everything, as a walk without a selection */
		m = part_manifest(&o, &listing, &t);
		ck_assert_uint_eq(manifest_count(m), own + PART_DIRS + 2 + 2);
		for (size_t i = 0; i < manifest_count(m); i++) {
			const struct manifest_entry *e = manifest_get(m, i);

			if (e->type == MANIFEST_FILE)
				ck_assert_uint_eq(owner_of(&p, e->path), self);
		}
		assert_same_manifest(listing, whole);
		manifest_destroy(m);
		manifest_destroy(listing);
	}
	/* the parts' files partition the dataset */
	ck_assert_uint_eq(held[0] + held[1] + held[2], PART_FILES);
	manifest_destroy(whole);
}
END_TEST

/* The first file of the tree SELF holds (OWNED) or does not hold. */
static void tree_file(const struct part *p, bool owned, char *buf, size_t len)
{
	for (unsigned i = 0; i < PART_FILES; i++) {
		unsigned d = i % PART_DIRS;

		if (d == PART_DIRS - 1)
			snprintf(buf, len, "d0/d%u/f%03u", d, i);
		else
			snprintf(buf, len, "d%u/f%03u", d, i);
		if ((owner_of(p, buf) == p->self) == owned)
			return;
	}
	ck_abort_msg("no such file");
}

/* A name DIR/nNNN, not in the tree, whose owner is OWNER. */
static void new_name(const struct part *p, const char *dir, unsigned owner,
		     unsigned from, char *buf, size_t len)
{
	for (unsigned i = from; i < 1000; i++) {
		snprintf(buf, len, "%s/n%03u", dir, i);
		if (owner_of(p, buf) == owner)
			return;
	}
	ck_abort_msg("no such name");
}

/* Put back the times of REL's directory (a name added or removed there
 * changed them). */
static void restore_dir_of(const char *rel)
{
	char dir[64];
	char *slash;

	snprintf(dir, sizeof(dir), "%s", rel);
	slash = strrchr(dir, '/');
	ck_assert_ptr_nonnull(slash);
	*slash = '\0';
	stimes(dir);
}

static uint64_t manifest_files(const struct manifest *m)
{
	uint64_t n = 0;

	for (size_t i = 0; i < manifest_count(m); i++)
		n += manifest_get(m, i)->type == MANIFEST_FILE;
	return n;
}

/* A check against a part's manifest (--check with --spread): what the
 * part holds decides. A file another node holds is the view's business,
 * not the part's: its change is no change here; a name added or removed
 * anywhere changes its directory's mtime, which every part holds. */
START_TEST(test_part_check)
{
	struct copyengine_opts o;
	struct copyengine_totals t;
	struct manifest *m, *mh, *listing;
	struct part p;
	char mine[64], other[64], added[64];
	int fd;

	spread_tree();
	part_init(&p, 0);
	part_opts(&o, &p);
	m = part_manifest(&o, NULL, NULL);
	t = check_with(&o, m, MANIFEST_VERIFY_STAT);
	ck_assert(t.unchanged);
	ck_assert_uint_eq(t.diff.same, manifest_count(m));
	ck_assert_uint_eq(t.copy_files, 0);
	ck_assert_uint_eq(t.total_files, manifest_files(m));
	ck_assert_uint_eq(t.dataset_files, PART_FILES);
	tree_file(&p, true, mine, sizeof(mine));
	tree_file(&p, false, other, sizeof(other));

	/* another node's file changed: nothing for this part */
	ck_assert_int_eq(utimensat(src_fd, other, NULL, 0), 0);
	t = check_with(&o, m, MANIFEST_VERIFY_STAT);
	ck_assert(t.unchanged);

	/* checksum: the part's files are hashed, the listing has none */
	o.hash = true;
	mh = part_manifest(&o, &listing, NULL);
	for (size_t i = 0; i < manifest_count(mh); i++)
		ck_assert(manifest_get(mh, i)->type == MANIFEST_DIR ||
			  manifest_get(mh, i)->has_hash);
	for (size_t i = 0; i < manifest_count(listing); i++)
		ck_assert(!manifest_get(listing, i)->has_hash);
	ck_assert_uint_eq(manifest_count(listing), PART_FILES + PART_DIRS + 4);
	t = check_with(&o, mh, MANIFEST_VERIFY_CHECKSUM);
	ck_assert(t.unchanged);
	/* other bytes in another's file, same size: not read, unchanged */
	fd = openat(src_fd, other, O_WRONLY);
	ck_assert_int_eq(pwrite(fd, "!", 1, 0), 1);
	ck_assert_int_eq(futimens(fd, old_times), 0);
	close(fd);
	t = check_with(&o, mh, MANIFEST_VERIFY_CHECKSUM);
	ck_assert(t.unchanged);
	/* in one of ours: changed */
	fd = openat(src_fd, mine, O_WRONLY);
	ck_assert_int_eq(pwrite(fd, "!", 1, 0), 1);
	ck_assert_int_eq(futimens(fd, old_times), 0);
	close(fd);
	t = check_with(&o, mh, MANIFEST_VERIFY_CHECKSUM);
	ck_assert(!t.unchanged);
	ck_assert_uint_eq(t.diff.changed, 1);
	ck_assert_uint_eq(t.copy_files, 1);
	manifest_destroy(mh);
	manifest_destroy(listing);
	o.hash = false;

	/* one of ours with a new mtime: changed; put back: unchanged */
	ck_assert_int_eq(utimensat(src_fd, mine, NULL, 0), 0);
	t = check_with(&o, m, MANIFEST_VERIFY_STAT);
	ck_assert(!t.unchanged);
	ck_assert_uint_eq(t.diff.changed, 1);
	ck_assert_uint_eq(t.copy_files, 1);
	ck_assert_int_eq(utimensat(src_fd, mine, old_times, 0), 0);
	t = check_with(&o, m, MANIFEST_VERIFY_STAT);
	ck_assert(t.unchanged);

	/* a new file for another node: its directory changed, nothing
	 * else (and with the directory's times back, nothing) */
	new_name(&p, "d2", 1, 0, added, sizeof(added));
	srandom_file(added, 10, 99);
	t = check_with(&o, m, MANIFEST_VERIFY_STAT);
	ck_assert(!t.unchanged);
	ck_assert_uint_eq(t.diff.changed, 1);
	ck_assert_uint_eq(t.diff.added, 0);
	ck_assert_uint_eq(t.copy_files, 0);
	stimes("d2");
	t = check_with(&o, m, MANIFEST_VERIFY_STAT);
	ck_assert(t.unchanged);
	/* a new file for this node: added, to copy */
	new_name(&p, "d2", 0, 0, added, sizeof(added));
	srandom_file(added, 10, 98);
	stimes("d2");
	t = check_with(&o, m, MANIFEST_VERIFY_STAT);
	ck_assert(!t.unchanged);
	ck_assert_uint_eq(t.diff.added, 1);
	ck_assert_uint_eq(t.copy_files, 1);
	ck_assert_uint_eq(t.copy_bytes, 10);
	ck_assert_int_eq(unlinkat(src_fd, added, 0), 0);
	stimes("d2");
	/* another node's file gone: nothing; one of ours gone: removed */
	ck_assert_int_eq(unlinkat(src_fd, other, 0), 0);
	restore_dir_of(other);
	t = check_with(&o, m, MANIFEST_VERIFY_STAT);
	ck_assert(t.unchanged);
	ck_assert_int_eq(unlinkat(src_fd, mine, 0), 0);
	restore_dir_of(mine);
	t = check_with(&o, m, MANIFEST_VERIFY_STAT);
	ck_assert(!t.unchanged);
	ck_assert_uint_eq(t.diff.removed, 1);
	ck_assert_uint_eq(t.diff.changed, 0);
	manifest_destroy(m);
}
END_TEST

/* A rebuild of a part links what it held unchanged. */
START_TEST(test_part_previous_linked)
{
	struct copyengine_opts o;
	struct manifest *m;
	struct part p;
	struct run r;
	struct stat a, b;
	char mine[64], other[64], prev[160], path[96];
	uint64_t own;

	spread_tree();
	part_init(&p, 1);
	part_opts(&o, &p);
	copy_ok(&o, "v1", &r);
	own = r.tot.total_files;
	m = part_manifest(&o, NULL, NULL);
	tree_file(&p, true, mine, sizeof(mine));
	tree_file(&p, false, other, sizeof(other));
	ck_assert_int_eq(unlinkat(src_fd, mine, 0), 0);
	srandom_file(mine, 4321, 77);
	ck_assert_int_eq(unlinkat(src_fd, other, 0), 0);
	srandom_file(other, 1234, 78);
	restore_dir_of(mine);
	restore_dir_of(other);
	snprintf(prev, sizeof(prev), "%s/v1", dst);
	o.previous = m;
	o.previous_path = prev;
	copy_ok(&o, "v2", &r);
	ck_assert_uint_eq(r.tot.copy_files, 1);
	ck_assert_uint_eq(r.tot.copy_bytes, 4321);
	ck_assert_uint_eq(r.res.linked, own - 1);
	ck_assert_uint_eq(r.res.files, own);
	snprintf(path, sizeof(path), "v2/%s", mine);
	ck_assert_int_eq(fstatat(dst_fd, path, &b, 0), 0);
	ck_assert_int_eq(b.st_size, 4321);
	ck_assert_uint_eq(b.st_nlink, 1);
	snprintf(path, sizeof(path), "v2/%s", other);
	ck_assert(!dst_exists(path));
	/* an unchanged one is the previous part's inode */
	for (size_t i = 0; i < manifest_count(m); i++) {
		const struct manifest_entry *e = manifest_get(m, i);

		if (e->type != MANIFEST_FILE || !strcmp(e->path, mine))
			continue;
		snprintf(path, sizeof(path), "v1/%s", e->path);
		ck_assert_int_eq(fstatat(dst_fd, path, &a, 0), 0);
		snprintf(path, sizeof(path), "v2/%s", e->path);
		ck_assert_int_eq(fstatat(dst_fd, path, &b, 0), 0);
		ck_assert_uint_eq(a.st_ino, b.st_ino);
		break;
	}
	manifest_destroy(m);
}
END_TEST

/* A part filled from another node's copy of the same part: its files
 * are fetched, and only its files are asked for. */
START_TEST(test_part_fetched_from_peer)
{
	struct fetcher f = { 0 };
	struct copyengine_opts o;
	struct manifest *m;
	struct part p;
	struct run r;
	char prev[160], other[64], path[96];

	spread_tree();
	part_init(&p, 2);
	part_opts(&o, &p);
	copy_ok(&o, "v1", &r);
	m = part_manifest(&o, NULL, NULL);
	snprintf(prev, sizeof(prev), "%s/v1", dst);
	f.from = prev; /* a file not there fails the test */
	o.previous = m;
	o.fetch = fetch_from;
	o.fetch_arg = &f;
	copy_ok(&o, "v2", &r);
	ck_assert_uint_eq(f.calls, manifest_files(m));
	ck_assert_uint_eq(r.res.fetched, manifest_files(m));
	ck_assert_uint_eq(r.res.fetch_fallbacks, 0);
	ck_assert_uint_eq(r.tot.copy_files, 0);
	ck_assert(r.tot.unchanged);
	tree_file(&p, false, other, sizeof(other));
	snprintf(path, sizeof(path), "v2/%s", other);
	ck_assert(!dst_exists(path));
	ck_assert(dst_exists("v2/d1/link"));
	manifest_destroy(m);
}
END_TEST

struct ranked {
	const char *path;
	uint64_t size;
	double score;
};

static int cmp_ranked(const void *a, const void *b)
{
	const struct ranked *x = a, *y = b;

	if (x->score != y->score)
		return x->score > y->score ? -1 : 1;
	return strcmp(x->path, y->path);
}

/* Only what fits: the part is the head of its files by score. */
START_TEST(test_part_budget)
{
	struct copyengine_opts o;
	struct copyengine_totals t;
	struct manifest *all, *m, *again;
	struct ranked rk[PART_FILES];
	struct part p;
	struct run r;
	size_t n = 0, k;
	bool later_fits = false;
	uint64_t budget = 0, rest = 0;
	char path[96], err[ERRLEN];

	spread_tree();
	part_init(&p, 0);
	part_opts(&o, &p);
	all = part_manifest(&o, NULL, &t);
	for (size_t i = 0; i < manifest_count(all); i++) {
		const struct manifest_entry *e = manifest_get(all, i);

		if (e->type != MANIFEST_FILE)
			continue;
		rk[n++] = (struct ranked){ e->path, e->size,
					   spread_score(&p.plan, 0, e->path,
							e->path_len) };
	}
	qsort(rk, n, sizeof(rk[0]), cmp_ranked);
	k = n / 2;
	for (size_t i = 0; i < k; i++)
		budget += rk[i].size;
	for (size_t i = k; i < n; i++)
		rest += rk[i].size;
	/* room for part of the next one only */
	o.select_budget = budget + rk[k].size - 1;
	copy_ok(&o, "b", &r);
	ck_assert_uint_eq(r.tot.total_files, k);
	ck_assert_uint_eq(r.tot.total_bytes, budget);
	ck_assert_uint_eq(r.tot.over_budget_files, n - k);
	ck_assert_uint_eq(r.tot.over_budget_bytes, rest);
	ck_assert_uint_eq(r.tot.dataset_files, PART_FILES);
	ck_assert_uint_eq(r.tot.dataset_bytes, t.dataset_bytes);
	for (size_t i = k + 1; i < n && !later_fits; i++)
		later_fits = rk[i].size < rk[k].size;
	ck_assert(later_fits); /* else the next line proves less */
	for (size_t i = 0; i < n; i++) {
		snprintf(path, sizeof(path), "b/%s", rk[i].path);
		/* the head, and nothing after it, even what would fit */
		ck_assert_msg(dst_exists(path) == (i < k), "%s", path);
	}
	ck_assert(dst_exists("b/d1/link"));
	ck_assert(dst_exists("b/empty"));
	ck_assert_int_eq(rmtree_at(dst_fd, "b", err, sizeof(err)), 0);
	/* the same part every time */
	m = part_manifest(&o, NULL, NULL);
	again = part_manifest(&o, NULL, NULL);
	assert_same_manifest(m, again);
	ck_assert_uint_eq(manifest_files(m), k);
	/* a check against it: a file left out for the budget is not ours */
	t = check_with(&o, m, MANIFEST_VERIFY_STAT);
	ck_assert(t.unchanged);
	ck_assert_int_eq(utimensat(src_fd, rk[n - 1].path, NULL, 0), 0);
	t = check_with(&o, m, MANIFEST_VERIFY_STAT);
	ck_assert(t.unchanged);
	ck_assert_int_eq(utimensat(src_fd, rk[0].path, NULL, 0), 0);
	t = check_with(&o, m, MANIFEST_VERIFY_STAT);
	ck_assert(!t.unchanged);
	manifest_destroy(again);
	manifest_destroy(m);

	/* exactly the bytes of the head: it fits; everything fits */
	o.select_budget = budget;
	m = part_manifest(&o, NULL, &t);
	ck_assert_uint_eq(manifest_files(m), k);
	manifest_destroy(m);
	o.select_budget = UINT64_MAX;
	m = part_manifest(&o, NULL, &t);
	ck_assert_uint_eq(manifest_files(m), n);
	ck_assert_uint_eq(t.over_budget_files, 0);
	ck_assert_uint_eq(t.over_budget_bytes, 0);
	manifest_destroy(m);
	/* smaller than the first: nothing */
	o.select_budget = rk[0].size - 1;
	m = part_manifest(&o, NULL, &t);
	ck_assert_uint_eq(manifest_files(m), 0);
	ck_assert_uint_eq(t.over_budget_files, n);
	ck_assert_uint_eq(manifest_count(m), PART_DIRS + 2 + 2);
	manifest_destroy(m);
	/* a budget without a selection: every file, in path order */
	manifest_destroy(all);
	all = walk_manifest(false);
	memset(&o, 0, sizeof(o));
	ck_assert_str_eq(manifest_get(all, 3)->path, "d0/d7/f007");
	o.select_budget = manifest_get(all, 3)->size;
	m = part_manifest(&o, NULL, &t);
	ck_assert_uint_eq(manifest_files(m), 1);
	ck_assert_ptr_nonnull(manifest_find(m, "d0/d7/f007", 10));
	ck_assert_uint_eq(t.over_budget_files, PART_FILES - 1);
	manifest_destroy(m);
	manifest_destroy(all);
}
END_TEST

/* One inode, names held by different nodes: one copy per node holding a
 * name, one inode per part. */
START_TEST(test_part_hard_links)
{
	struct copyengine_opts o;
	struct copyengine_totals t;
	struct manifest *m;
	struct part p0, p1;
	struct run r;
	struct stat a, b;
	char first[32], n0[32], n1[32], path[64];

	part_init(&p0, 0);
	part_init(&p1, 1);
	sdir("h", 0755);
	/* the first name (path order) is node 1's */
	new_name(&p0, "h", 1, 0, first, sizeof(first));
	new_name(&p0, "h", 0, (unsigned)atoi(first + 3) + 1, n0, sizeof(n0));
	new_name(&p0, "h", 0, (unsigned)atoi(n0 + 3) + 1, n1, sizeof(n1));
	ck_assert_int_lt(strcmp(first, n0), 0);
	srandom_file(first, 5000, 3);
	ck_assert_int_eq(linkat(src_fd, first, src_fd, n0, 0), 0);
	ck_assert_int_eq(linkat(src_fd, first, src_fd, n1, 0), 0);

	part_opts(&o, &p0);
	copy_ok(&o, "p0", &r);
	ck_assert_uint_eq(r.tot.dataset_files, 3);
	ck_assert_uint_eq(r.tot.dataset_bytes, 5000);
	ck_assert_uint_eq(r.tot.total_files, 2);
	ck_assert_uint_eq(r.tot.hardlinks, 1);
	ck_assert_uint_eq(r.tot.total_bytes, 5000);
	ck_assert_uint_eq(r.tot.copy_files, 1);
	snprintf(path, sizeof(path), "p0/%s", n0);
	ck_assert_int_eq(fstatat(dst_fd, path, &a, 0), 0);
	snprintf(path, sizeof(path), "p0/%s", n1);
	ck_assert_int_eq(fstatat(dst_fd, path, &b, 0), 0);
	ck_assert_uint_eq(a.st_ino, b.st_ino);
	ck_assert_uint_eq(a.st_nlink, 2);
	snprintf(path, sizeof(path), "p0/%s", first);
	ck_assert(!dst_exists(path));
	snprintf(path, sizeof(path), "p0/%s", n0);
	assert_copy(src_fd, dst_fd, n0, path, false);

	part_opts(&o, &p1);
	copy_ok(&o, "p1", &r);
	ck_assert_uint_eq(r.tot.total_files, 1);
	ck_assert_uint_eq(r.tot.hardlinks, 0);
	ck_assert_uint_eq(r.tot.total_bytes, 5000);
	ck_assert_uint_eq(r.tot.copy_bytes, 5000);
	snprintf(path, sizeof(path), "p1/%s", first);
	ck_assert_int_eq(fstatat(dst_fd, path, &b, 0), 0);
	ck_assert_uint_eq(b.st_nlink, 1);
	ck_assert_uint_ne(a.st_ino, b.st_ino);
	assert_copy(src_fd, dst_fd, first, path, false);

	/* the budget counts the inode once: its second name is free */
	part_opts(&o, &p0);
	o.select_budget = 5000;
	m = part_manifest(&o, NULL, &t);
	ck_assert_uint_eq(manifest_files(m), 2);
	ck_assert_uint_eq(t.over_budget_files, 0);
	manifest_destroy(m);
	o.select_budget = 4999;
	m = part_manifest(&o, NULL, &t);
	ck_assert_uint_eq(manifest_files(m), 0);
	ck_assert_uint_eq(t.over_budget_files, 2);
	ck_assert_uint_eq(t.over_budget_bytes, 5000);
	manifest_destroy(m);
}
END_TEST

/* A file is not split: a selection needs a tree. */
START_TEST(test_part_of_one_file_refused)
{
	struct copyengine_opts o;
	struct copyengine *ce = NULL;
	struct part p;
	char file[160], err[ERRLEN];

	srandom_file("f", 10, 1);
	snprintf(file, sizeof(file), "%s/f", src);
	part_init(&p, 0);
	part_opts(&o, &p);
	ck_assert_int_eq(copyengine_walk(file, &o, &ce, err, sizeof(err)), -1);
	ck_assert_int_eq(errno, EINVAL);
	ck_assert_ptr_null(ce);
	ck_assert_msg(strstr(err, "cannot be split"), "%s", err);
	memset(&o, 0, sizeof(o));
	o.select_budget = 100;
	ck_assert_int_eq(copyengine_walk(file, &o, &ce, err, sizeof(err)), -1);
	ck_assert_int_eq(errno, EINVAL);
}
END_TEST

/* A check keeps the listing when asked (a hit needs one too). */
START_TEST(test_listing_of_check)
{
	struct copyengine_opts o;
	struct copyengine *ce = NULL;
	struct manifest *whole, *l = NULL, *m;
	struct part p;
	char err[ERRLEN];

	spread_tree();
	whole = walk_manifest(false);
	m = walk_manifest(false);
	memset(&o, 0, sizeof(o));
	o.previous = m;
	o.check_only = true;
	ck_assert_int_eq(copyengine_walk(src, &o, &ce, err, sizeof(err)), 0);
	ck_assert_int_eq(copyengine_listing(ce, &l), -1);
	ck_assert_int_eq(errno, EINVAL);
	copyengine_destroy(ce);
	o.keep_listing = true;
	ce = NULL;
	ck_assert_int_eq(copyengine_walk(src, &o, &ce, err, sizeof(err)), 0);
	ck_assert(copyengine_totals(ce)->unchanged);
	ck_assert_uint_eq(copyengine_totals(ce)->dataset_files, PART_FILES);
	ck_assert_int_eq(copyengine_listing(ce, &l), 0);
	assert_same_manifest(l, whole);
	manifest_destroy(l);
	copyengine_destroy(ce);
	/* a part's check lists the whole dataset */
	part_init(&p, 2);
	part_opts(&o, &p);
	o.check_only = true;
	o.previous = m;
	ce = NULL;
	ck_assert_int_eq(copyengine_walk(src, &o, &ce, err, sizeof(err)), 0);
	/* the whole dataset's manifest is not this part's */
	ck_assert(!copyengine_totals(ce)->unchanged);
	ck_assert_uint_gt(copyengine_totals(ce)->diff.removed, 0);
	ck_assert_int_eq(copyengine_listing(ce, &l), 0);
	assert_same_manifest(l, whole);
	manifest_destroy(l);
	copyengine_destroy(ce);
	/* without a walk's entries kept, no listing; NULLs refused */
	ck_assert_int_eq(copyengine_listing(NULL, &l), -1);
	manifest_destroy(m);
	manifest_destroy(whole);
}
END_TEST

static Suite *copyengine_suite(void)
{
	Suite *s = suite_create("copyengine");
	TCase *tc = tcase_create("core");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_tree_copied_faithfully);
	tcase_add_test(tc, test_symlinks_never_followed);
	tcase_add_test(tc, test_hard_links_preserved);
	tcase_add_loop_test(tc, test_sparse_holes_kept, 0, 2);
	tcase_add_test(tc, test_file_over_4gib);
	tcase_add_loop_test(tc, test_chunked_file, 0, 2);
	tcase_add_loop_test(tc, test_rate_limited_copy, 0, 2);
	tcase_add_test(tc, test_odd_names);
	tcase_add_test(tc, test_deep_nesting_few_fds);
	tcase_add_test(tc, test_depth_limit);
	tcase_add_test(tc, test_specials_skipped);
	tcase_add_test(tc, test_modes_and_times);
	tcase_add_test(tc, test_private_top);
	tcase_add_test(tc, test_single_file_and_top_symlink);
	tcase_add_root_test(tc, test_unreadable_file_named);
	tcase_add_root_test(tc, test_unreadable_dir_named);
	tcase_add_test(tc, test_destination_exists);
	tcase_add_test(tc, test_dst_label_in_messages);
	tcase_add_test(tc, test_bad_sources);
	tcase_add_test(tc, test_bad_dst_names);
	tcase_add_test(tc, test_changed_while_staged);
	tcase_add_test(tc, test_manifest_of_walk);
	tcase_add_test(tc, test_check_detects_changes);
	tcase_add_test(tc, test_check_hard_links);
	tcase_add_test(tc, test_previous_hard_linked);
	tcase_add_test(tc, test_previous_single_file);
	tcase_add_test(tc, test_fetch_from_peer);
	tcase_add_test(tc, test_link_share_fetch_the_rest);
	tcase_add_test(tc, test_unlinkable_share_copied_locally);
	tcase_add_test(tc, test_fetch_single_file);
	tcase_add_test(tc, test_fetch_failure_leaves_nothing);
	tcase_add_test(tc, test_default_threads_by_fs);
	tcase_add_test(tc, test_part_per_node);
	tcase_add_test(tc, test_part_check);
	tcase_add_test(tc, test_part_previous_linked);
	tcase_add_test(tc, test_part_fetched_from_peer);
	tcase_add_test(tc, test_part_budget);
	tcase_add_test(tc, test_part_hard_links);
	tcase_add_test(tc, test_part_of_one_file_refused);
	tcase_add_test(tc, test_listing_of_check);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return check_run(copyengine_suite());
}
