/* check_localread.c - libiostage-localread.so (localread/) and the view's
 * user.iostage.chunks (view/view_xattr.c, common/fs/chunkxattr.c).
 *
 * As root: the built iostage-view serves a "PFS" with a file cut into
 * chunks, this node's chunks in a chunks directory, the other node's
 * unreachable (so the view reads them from the PFS), under an overlay as
 * iostaged stacks it; tests/localread/lrprobe runs as nobody with the
 * library preloaded and checks every byte it reads against the PFS. The
 * view's stats say who served what: with the library, none of this
 * node's chunks went through the view; without it (IOSTAGE_LOCALREAD=0)
 * they did.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <check.h>

#include "common/fs/chunkxattr.h"
#include "common/fs/manifest.h"
#include "common/fs/partchunks.h"
#include "common/sched/spread.h"
#include "tests/unit/check_run.h"
#include "tests/unit/view_fixture.h"

#define MIB (UINT64_C(1) << 20)
#define HUGE (7 * MIB + 123)    /* 8 chunks of 1 MiB, the last of 123 bytes */
#define PLAN "me=4,127.0.0.1=4" /* a file over 2 MiB is cut */
#define KEY "0123456789abcdef0123456789abcdef"

static char dir[64], pfs[128], part[128], chunks[128], mnt[128], ov[128],
    stats[128];
static struct spread_plan plan;
static pid_t view_pid;
static uint64_t ours, theirs; /* bytes of huge.bin's chunks by owner */

static void put(const char *rel, size_t len)
{
	char path[PATH_MAX], *b = malloc(len);
	int fd;

	ck_assert_ptr_nonnull(b);
	for (size_t i = 0; i < len; i++)
		b[i] = (char)(i * 13 + i / 4093 + len);
	snprintf(path, sizeof(path), "%s/%s", pfs, rel);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, b, len), (ssize_t)len);
	close(fd);
	free(b);
}

/* This node's chunks of REL, copied from the PFS into CHUNKS as a
 * staged part holds them. */
static void put_chunks(const char *rel, uint64_t size)
{
	char path[PATH_MAX], name[PARTCHUNK_NAME_MAX], *b;
	int in, out;

	snprintf(path, sizeof(path), "%s/%s", pfs, rel);
	in = open(path, O_RDONLY | O_CLOEXEC);
	ck_assert_int_ge(in, 0);
	b = malloc(MIB);
	ck_assert_ptr_nonnull(b);
	for (uint64_t i = 0; i < spread_chunk_count(size); i++) {
		uint64_t off, len;

		partchunk_extent(size, i, &off, &len);
		if (spread_chunk_owner(&plan, rel, strlen(rel), i) != 0) {
			theirs += len;
			continue;
		}
		ours += len;
		partchunk_name(rel, strlen(rel), i, name);
		snprintf(path, sizeof(path), "%s/%s", chunks, name);
		out = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0444);
		ck_assert_int_ge(out, 0);
		ck_assert_int_eq(pread(in, b, len, (off_t)off), (ssize_t)len);
		ck_assert_int_eq(write(out, b, len), (ssize_t)len);
		close(out);
	}
	free(b);
	close(in);
}

/* The view on MNT, its chunks in CHUNKS and the other node's from the
 * PFS (view_fixture_start), and the overlay of the part over it on OV. */
static void start_view(void)
{
	char path[PATH_MAX], opts[512];
	struct manifest *m = view_fixture_walk(pfs);
	const struct view_fixture v = {
		.mnt = mnt,
		.listing = path,
		.list = m,
		.src = pfs,
		.plan = PLAN,
		.key = KEY,
		.local = part,
		.stats = stats,
		.chunks = chunks,
		.peer_port = view_fixture_dead_port(),
	};

	snprintf(path, sizeof(path), "%s/listing", dir);
	view_pid = view_fixture_start(&v);
	manifest_destroy(m);
	snprintf(opts, sizeof(opts), "lowerdir=%s:%s", part, mnt);
	ck_assert_msg(mount("overlay", ov, "overlay", MS_RDONLY, opts) == 0,
		      "overlay: %s", strerror(errno));
}

static void setup(void)
{
	char err[256], path[PATH_MAX];

	view_fixture_mkdtemp(dir, sizeof(dir));
	snprintf(pfs, sizeof(pfs), "%s/pfs", dir);
	snprintf(part, sizeof(part), "%s/part", dir);
	snprintf(chunks, sizeof(chunks), "%s/chunks", dir);
	snprintf(mnt, sizeof(mnt), "%s/mnt", dir);
	snprintf(ov, sizeof(ov), "%s/ov", dir);
	snprintf(stats, sizeof(stats), "%s/stats/view.json", dir);
	ck_assert_int_eq(mkdir(pfs, 0755), 0);
	ck_assert_int_eq(mkdir(part, 0755), 0);
	ck_assert_int_eq(mkdir(chunks, 0755), 0);
	ck_assert_int_eq(mkdir(mnt, 0755), 0);
	ck_assert_int_eq(mkdir(ov, 0755), 0);
	snprintf(path, sizeof(path), "%s/stats", dir);
	ck_assert_int_eq(mkdir(path, 0755), 0);
	ck_assert_int_eq(chown(path, VIEW_FIXTURE_USER, VIEW_FIXTURE_USER), 0);
	ck_assert_int_eq(spread_plan_parse(PLAN, &plan, err, sizeof(err)), 0);
	ours = theirs = 0;
	put("huge.bin", HUGE);
	put("small.bin", 64 * 1024);
	put_chunks("huge.bin", HUGE);
	/* both kinds of chunk, so both ways of reading are tried */
	ck_assert_uint_ge(ours, 2 * MIB);
	ck_assert_uint_ge(theirs, 2 * MIB);
	view_pid = 0;
}

/* The view's exit status after the unmounts (view_fixture_wait), or -1
 * when it was not running. */
static int stop_view(void)
{
	pid_t pid = view_pid;

	umount2(ov, MNT_DETACH);
	umount2(mnt, MNT_DETACH);
	view_pid = 0;
	return pid ? view_fixture_wait(pid) : -1;
}

static void teardown(void)
{
	char err[256];

	stop_view();
	tmp_remove(dir, err, sizeof(err));
}

/* lrprobe MODE on OV/REL as VIEW_FIXTURE_USER, the library preloaded with
 * IOSTAGE_LOCALREAD=ON: its one line. */
static void probe(const char *mode, const char *rel, const char *on, char *out,
		  size_t len)
{
	char file[PATH_MAX], src[PATH_MAX], preload[PATH_MAX + 16], enable[64];
	int p[2], status;
	ssize_t n;
	pid_t pid;

	snprintf(file, sizeof(file), "%s/%s", ov, rel);
	snprintf(src, sizeof(src), "%s/%s", pfs, rel);
	snprintf(preload, sizeof(preload), "LD_PRELOAD=%s", LOCALREAD_TEST_LIB);
	snprintf(enable, sizeof(enable), "IOSTAGE_LOCALREAD=%s", on);
	ck_assert_int_eq(pipe2(p, O_CLOEXEC), 0);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		char *const envp[] = { preload, enable, NULL };

		if (dup2(p[1], STDOUT_FILENO) < 0 || setgroups(0, NULL) < 0 ||
		    setgid(VIEW_FIXTURE_USER) < 0 ||
		    setuid(VIEW_FIXTURE_USER) < 0)
			_exit(99);
		execle(LOCALREAD_TEST_PROBE, "lrprobe", mode, file, src,
		       (char *)NULL, envp);
		_exit(98);
	}
	close(p[1]);
	n = read(p[0], out, len - 1);
	out[n > 0 ? n : 0] = '\0';
	close(p[0]);
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
		      "lrprobe %s %s: status %d: %s", mode, rel, status, out);
}

/* A figure of the view's stats file, after it ended. */
static long long stat_of(const char *name)
{
	char text[1024];
	int fd = open(stats, O_RDONLY | O_CLOEXEC);
	ssize_t n;
	long long v;

	ck_assert_int_ge(fd, 0);
	n = read(fd, text, sizeof(text) - 1);
	close(fd);
	ck_assert_int_gt(n, 0);
	text[n] = '\0';
	v = view_fixture_figure(text, name);
	ck_assert_msg(v >= 0, "%s: no %s", text, name);
	return v;
}

/* --- the attribute's format ------------------------------------------------ */

static bool odd(void *arg, uint64_t i)
{
	(void)arg;
	return i % 2;
}

START_TEST(test_format_parse)
{
	const char *prefix = "0123456789abcdef0123456789abcdef";
	char buf[256];
	struct chunkxattr x;
	long n = chunkxattr_format(NULL, 0, 9 * MIB + 1, MIB, prefix, odd, NULL,
				   "/t/c d");
	uint64_t idx, at, len;
	char name[CHUNKXATTR_NAME_MAX];

	ck_assert_int_gt(n, 0);
	ck_assert_int_eq(chunkxattr_format(buf, sizeof(buf), 9 * MIB + 1, MIB,
					   prefix, odd, NULL, "/t/c d"),
			 n);
	buf[n] = '\0';
	/* 10 chunks: odd ones held, three hex digits */
	ck_assert_str_eq(buf, "1 9437185 1048576 "
			      "0123456789abcdef0123456789abcdef aa2 /t/c d");
	ck_assert_int_eq(chunkxattr_parse(buf, (size_t)n, &x), 0);
	ck_assert_uint_eq(x.size, 9 * MIB + 1);
	ck_assert_uint_eq(x.nchunks, 10);
	ck_assert_str_eq(x.dir, "/t/c d");
	for (uint64_t i = 0; i < 11; i++)
		ck_assert_int_eq(chunkxattr_held(&x, i), i < 10 && i % 2);
	ck_assert_uint_eq(chunkxattr_chunk_len(&x, 9), 1);
	ck_assert_uint_eq(chunkxattr_chunk_len(&x, 10), 0);
	chunkxattr_piece(&x, MIB - 5, 100, &idx, &at, &len);
	ck_assert_uint_eq(idx, 0);
	ck_assert_uint_eq(at, MIB - 5);
	ck_assert_uint_eq(len, 5);
	chunkxattr_piece(&x, 9 * MIB, 100, &idx, &at, &len);
	ck_assert_uint_eq(idx, 9);
	ck_assert_uint_eq(len, 1);
	chunkxattr_piece(&x, 9 * MIB + 1, 100, &idx, &at, &len);
	ck_assert_uint_eq(len, 0);
	chunkxattr_chunk_name(&x, 7, name);
	ck_assert_str_eq(name, "0123456789abcdef0123456789abcdef.7");
	/* too small a buffer: the length, as snprintf */
	ck_assert_int_eq(chunkxattr_format(buf, 10, 9 * MIB + 1, MIB, prefix,
					   odd, NULL, "/t"),
			 n - 4);
	/* refused to build */
	ck_assert_int_eq(chunkxattr_format(NULL, 0, 10, 0, prefix, odd, NULL,
					   "/t"),
			 -1);
	ck_assert_int_eq(chunkxattr_format(NULL, 0, 10, MIB, "0123", odd, NULL,
					   "/t"),
			 -1);
	ck_assert_int_eq(chunkxattr_format(NULL, 0, 10, MIB, prefix, odd, NULL,
					   "rel"),
			 -1);
	ck_assert_int_eq(errno, EINVAL);
	ck_assert_int_eq(chunkxattr_format(NULL, 0, UINT64_C(1) << 40, 4096,
					   prefix, odd, NULL, "/t"),
			 -1);
	ck_assert_int_eq(errno, E2BIG);
}
END_TEST

/* What is not exactly the format is not ours. */
START_TEST(test_parse_refused)
{
	static const char *const bad[] = {
		"",
		"1",
		"2 10 1048576 0123456789abcdef0123456789abcdef 1 /c",
		"1 10 0 0123456789abcdef0123456789abcdef 1 /c",
		"1 010 1048576 0123456789abcdef0123456789abcdef 1 /c",
		"1 -10 1048576 0123456789abcdef0123456789abcdef 1 /c",
		"1 99999999999999999999 1 0123456789abcdef0123456789abcdef 1 /c",
		"1 10 1048576 0123456789abcdef0123456789abcdeg 1 /c",
		"1 10 1048576 0123456789ABCDEF0123456789abcdef 1 /c",
		"1 10 1048576 0123456789abcdef0123456789abcde 1 /c",
		"1 10 1048576 0123456789abcdef0123456789abcdef 12 /c",
		"1 10 1048576 0123456789abcdef0123456789abcdef x /c",
		"1 10 1048576 0123456789abcdef0123456789abcdef 1 c",
		"1 10 1048576 0123456789abcdef0123456789abcdef 1 ",
		"1 10 1048576 0123456789abcdef0123456789abcdef 1",
		"1  10 1048576 0123456789abcdef0123456789abcdef 1 /c",
	};
	struct chunkxattr x = { .size = 77 };
	const char ok[] = "1 10 1048576 0123456789abcdef0123456789abcdef 1 /c";

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		errno = 0;
		ck_assert_msg(chunkxattr_parse(bad[i], strlen(bad[i]), &x) ==
				  -1,
			      "accepted '%s'", bad[i]);
		ck_assert_int_eq(errno, EINVAL);
		ck_assert_uint_eq(x.size, 77); /* untouched */
	}
	ck_assert_int_eq(chunkxattr_parse(NULL, 0, &x), -1);
	/* a NUL inside the value */
	ck_assert_int_eq(chunkxattr_parse(ok, sizeof(ok), &x), -1);
	ck_assert_int_eq(chunkxattr_parse(ok, strlen(ok), &x), 0);
	ck_assert_int_eq(chunkxattr_held(&x, 0), 1);
}
END_TEST

/* --- through a real view (root) -------------------------------------------- */

/* The view says where this node's chunks are, for a cut file only, and
 * through the overlay. */
START_TEST(test_view_attribute)
{
	char path[PATH_MAX], value[4096];
	struct chunkxattr x;
	ssize_t n;

	start_view();
	snprintf(path, sizeof(path), "%s/huge.bin", ov);
	n = getxattr(path, CHUNKXATTR_NAME, value, sizeof(value) - 1);
	ck_assert_msg(n > 0, "getxattr: %s", strerror(errno));
	value[n] = '\0';
	ck_assert_msg(chunkxattr_parse(value, (size_t)n, &x) == 0, "%s", value);
	ck_assert_uint_eq(x.size, HUGE);
	ck_assert_uint_eq(x.chunk_bytes, spread_chunk_bytes(HUGE));
	ck_assert_str_eq(x.dir, chunks);
	for (uint64_t i = 0; i < x.nchunks; i++)
		ck_assert_int_eq(chunkxattr_held(&x, i),
				 spread_chunk_owner(&plan, "huge.bin", 8, i) ==
				     0);
	ck_assert_int_eq(getxattr(path, CHUNKXATTR_NAME, NULL, 0), n);
	ck_assert_int_eq(getxattr(path, CHUNKXATTR_NAME, value, 10), -1);
	ck_assert_int_eq(errno, ERANGE);
	ck_assert_int_eq(getxattr(path, "user.other", value, sizeof(value)),
			 -1);
	ck_assert_int_eq(errno, ENODATA);
	snprintf(path, sizeof(path), "%s/small.bin", ov);
	ck_assert_int_eq(getxattr(path, CHUNKXATTR_NAME, value, sizeof(value)),
			 -1);
	ck_assert_int_eq(errno, ENODATA);
	/* not listed: a copy of the tree does not carry it */
	snprintf(path, sizeof(path), "%s/huge.bin", ov);
	ck_assert_int_le(listxattr(path, value, sizeof(value)), 0);
	ck_assert_int_eq(stop_view(), 0);
}
END_TEST

/* read, pread, lseek, threads and a fork through the library: every byte
 * the PFS's, and this node's chunks not through the view. */
START_TEST(test_read_local)
{
	char out[256];

	start_view();
	probe("read", "huge.bin", "1", out, sizeof(out));
	ck_assert_str_eq(out, "read ok\n");
	probe("read", "small.bin", "1", out, sizeof(out));
	ck_assert_int_eq(stop_view(), 0);
	/* none but what the kernel read ahead past the other node's
	 * chunks, which the library reads through the view, into ours */
	ck_assert_int_le(stat_of("local_bytes"), (long long)ours / 4);
	/* the other node's chunks, through the view from the PFS */
	ck_assert_int_ge(stat_of("pfs_bytes"), (long long)theirs);
}
END_TEST

/* Turned off, the same reads go through the view, this node's chunks
 * too. */
START_TEST(test_read_off)
{
	char out[256];

	start_view();
	probe("read", "huge.bin", "0", out, sizeof(out));
	ck_assert_str_eq(out, "read ok\n");
	ck_assert_int_eq(stop_view(), 0);
	ck_assert_int_ge(stat_of("local_bytes"), (long long)ours);
}
END_TEST

/* A chunk of ours missing here: its bytes come through the view (from
 * the PFS), right. */
START_TEST(test_chunk_missing)
{
	char path[PATH_MAX], name[PARTCHUNK_NAME_MAX], out[256];
	uint64_t i = 0;

	while (spread_chunk_owner(&plan, "huge.bin", 8, i) != 0)
		i++;
	partchunk_name("huge.bin", 8, i, name);
	snprintf(path, sizeof(path), "%s/%s", chunks, name);
	ck_assert_int_eq(unlink(path), 0);
	start_view();
	probe("read", "huge.bin", "1", out, sizeof(out));
	ck_assert_str_eq(out, "read ok\n");
	ck_assert_int_eq(stop_view(), 0);
	ck_assert_int_ge(stat_of("pfs_bytes"),
			 (long long)(theirs + spread_chunk_bytes(HUGE)));
}
END_TEST

/* mmap is the view's; fds the library did not see closed or replaced are
 * never read from chunks. */
START_TEST(test_fds)
{
	char out[256];

	start_view();
	probe("mmap", "huge.bin", "1", out, sizeof(out));
	ck_assert_str_eq(out, "mmap ok\n");
	probe("reuse", "huge.bin", "1", out, sizeof(out));
	ck_assert_str_eq(out, "reuse ok\n");
	probe("dup", "huge.bin", "1", out, sizeof(out));
	ck_assert_str_eq(out, "dup ok\n");
	ck_assert_int_eq(stop_view(), 0);
}
END_TEST

static void run_begin(void)
{
	view_fixture_run_begin("check_localread");
}

static Suite *localread_suite(void)
{
	Suite *s = suite_create("localread");
	TCase *tf = tcase_create("format");
	TCase *tv = tcase_create("view");

	tcase_add_test(tf, test_format_parse);
	tcase_add_test(tf, test_parse_refused);
	suite_add_tcase(s, tf);
	tcase_add_unchecked_fixture(tv, run_begin, view_fixture_run_end);
	tcase_add_checked_fixture(tv, setup, teardown);
	tcase_set_timeout(tv, 60);
	tcase_add_root_test(tv, test_view_attribute);
	tcase_add_root_test(tv, test_read_local);
	tcase_add_root_test(tv, test_read_off);
	tcase_add_root_test(tv, test_chunk_missing);
	tcase_add_root_test(tv, test_fds);
	suite_add_tcase(s, tv);
	return s;
}

int main(void)
{
	return check_run(localread_suite());
}
