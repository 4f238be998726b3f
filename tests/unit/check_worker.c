/* check_worker.c - the stage worker (daemon/staging/worker.c) end to end
 * on a node's part of a spread dataset: worker_main in a child with
 * --spread PLAN --spread-self NAME [--part-budget BYTES] [--listing-out
 * FD], what it copies, its manifest, its listing and its lines, with
 * --check, --previous and a budget; and the usage errors of those
 * options. (Filling from a peer: check_worker_peer.c.)
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <check.h>

#include "common/fs/manifest.h"
#include "common/fs/partchunks.h"
#include "common/fs/rmtree.h"
#include "common/sched/spread.h"
#include "daemon/staging/worker.h"
#include "tests/unit/check_run.h"
#include "tests/unit/tmp_fixture.h"

#define PLAN "n1=100,n2=60,n3=100"
#define NFILES 60

static char base[64];
static char src[128];
static struct spread_plan plan;

static void setup(void)
{
	char err[256];

	snprintf(base, sizeof(base), "/tmp/check_worker.XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(base));
	snprintf(src, sizeof(src), "%s/src", base);
	ck_assert_int_eq(mkdir(src, 0755), 0);
	ck_assert_int_eq(spread_plan_parse(PLAN, &plan, err, sizeof(err)), 0);
}

static void teardown(void)
{
	char err[256];

	tmp_remove(base, err, sizeof(err));
}

static void put(const char *rel, size_t size)
{
	char path[256];
	char *buf = malloc(size + 1);
	int fd;

	memset(buf, 'a' + (int)(size % 26), size);
	snprintf(path, sizeof(path), "%s/%s", src, rel);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, buf, size), (ssize_t)size);
	close(fd);
	free(buf);
}

/* NFILES files over three directories and a symlink. */
static void tree(void)
{
	char rel[64], path[256];

	for (unsigned d = 0; d < 3; d++) {
		snprintf(path, sizeof(path), "%s/d%u", src, d);
		ck_assert_int_eq(mkdir(path, 0755), 0);
	}
	for (unsigned i = 0; i < NFILES; i++) {
		snprintf(rel, sizeof(rel), "d%u/f%02u", i % 3, i);
		put(rel, 100 + i * 10);
	}
	snprintf(path, sizeof(path), "%s/link", src);
	ck_assert_int_eq(symlink("d0/f00", path), 0);
}

/* A descriptor for the worker to write a manifest to and for us to read
 * it back from: a memfd, as iostaged passes. */
static int memfd(void)
{
	int fd = memfd_create("check_worker", 0);

	ck_assert_int_ge(fd, 3);
	return fd;
}

static struct manifest *read_back(int fd)
{
	struct manifest *m = NULL;
	char err[256];

	ck_assert_int_eq(lseek(fd, 0, SEEK_SET), 0);
	ck_assert_msg(manifest_read(fd, &m, err, sizeof(err)) == 0, "%s", err);
	close(fd);
	return m;
}

/* Run the worker with ARGV (NULL-terminated, after "--stage-worker") in
 * a child; its stdout into OUT, its stderr into ERR. Its exit status. */
static int run_worker(const char *const *argv, char *out, size_t outlen,
		      char *err, size_t errlen)
{
	const char *args[40] = { "--stage-worker" };
	int o[2], e[2], st, n = 1;
	ssize_t r;
	size_t len = 0, elen = 0;
	pid_t pid;

	while (*argv)
		args[n++] = *argv++;
	args[n] = NULL;
	ck_assert_int_eq(pipe2(o, O_CLOEXEC), 0);
	ck_assert_int_eq(pipe2(e, O_CLOEXEC), 0);
	pid = fork();
	if (pid == 0) {
		dup2(o[1], STDOUT_FILENO);
		dup2(e[1], STDERR_FILENO);
		_exit(worker_main(n, (char **)args));
	}
	close(o[1]);
	close(e[1]);
	while (len + 1 < outlen &&
	       (r = read(o[0], out + len, outlen - 1 - len)) > 0)
		len += (size_t)r;
	out[len] = '\0';
	while (elen + 1 < errlen &&
	       (r = read(e[0], err + elen, errlen - 1 - elen)) > 0)
		elen += (size_t)r;
	err[elen] = '\0';
	close(o[0]);
	close(e[0]);
	ck_assert_int_eq(waitpid(pid, &st, 0), pid);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static uint64_t figure(const char *out, const char *name)
{
	char pat[64];
	const char *at;

	snprintf(pat, sizeof(pat), "\"%s\":", name);
	at = strstr(out, pat);
	ck_assert_msg(at != NULL, "no %s in: %s", name, out);
	return strtoull(at + strlen(pat), NULL, 10);
}

static unsigned owner(const char *rel)
{
	return spread_owner(&plan, rel, strlen(rel));
}

static uint64_t files_of(const struct manifest *m)
{
	uint64_t n = 0;

	for (size_t i = 0; i < manifest_count(m); i++)
		n += manifest_get(m, i)->type == MANIFEST_FILE;
	return n;
}

static char *fdstr(int fd, char *buf)
{
	sprintf(buf, "%d", fd);
	return buf;
}

static bool exists(const char *dir, const char *rel)
{
	char path[512];
	struct stat st;

	snprintf(path, sizeof(path), "%s/data/%s", dir, rel);
	return lstat(path, &st) == 0;
}

static void mkdst(const char *name, char *buf, size_t len)
{
	snprintf(buf, len, "%s/%s", base, name);
	ck_assert_int_eq(mkdir(buf, 0700), 0);
}

/* Each node's part: its files, every directory and the symlink; its
 * manifest lists its files, the listing all of them; the parts
 * partition the dataset. */
START_TEST(test_worker_parts)
{
	static char out[65536], err[4096];
	uint64_t sum = 0;

	tree();
	for (unsigned self = 0; self < plan.n; self++) {
		char dst[256], mfd[16], lfd[16];
		int mo = memfd(), lo = memfd();
		struct manifest *m, *l;
		uint64_t own = 0;
		const char *argv[] = { "--spread",
				       PLAN,
				       "--spread-self",
				       plan.nodes[self].name,
				       "--manifest-out",
				       fdstr(mo, mfd),
				       "--listing-out",
				       fdstr(lo, lfd),
				       "--threads",
				       "3",
				       src,
				       NULL,
				       NULL };

		mkdst(plan.nodes[self].name, dst, sizeof(dst));
		argv[10] = src;
		argv[11] = dst;
		ck_assert_msg(run_worker(argv, out, sizeof(out), err,
					 sizeof(err)) == 0,
			      "%s%s", out, err);
		ck_assert_msg(strstr(out, "\"ok\":true"), "%s", out);
		l = read_back(lo);
		m = read_back(mo);
		ck_assert_uint_eq(files_of(l), NFILES);
		for (size_t i = 0; i < manifest_count(l); i++) {
			const struct manifest_entry *e = manifest_get(l, i);
			bool mine = e->type != MANIFEST_FILE ||
				    owner(e->path) == self;

			if (!*e->path)
				continue;
			ck_assert_msg(exists(dst, e->path) == mine, "%s",
				      e->path);
			ck_assert(!manifest_find(m, e->path, e->path_len) ==
				  !mine);
			own += e->type == MANIFEST_FILE && mine;
		}
		ck_assert_uint_eq(files_of(m), own);
		ck_assert_uint_eq(manifest_count(m), own + 3 + 1 + 1);
		ck_assert_uint_eq(figure(out, "total_files"), own);
		ck_assert_uint_eq(figure(out, "copy_files"), own);
		ck_assert_uint_eq(figure(out, "dataset_files"), NFILES);
		ck_assert_uint_eq(figure(out, "dataset_bytes"),
				  NFILES * 100 +
				      10 * NFILES * (NFILES - 1) / 2);
		ck_assert_uint_eq(figure(out, "files"), own);
		/* no budget, no budget figures */
		ck_assert_ptr_null(strstr(out, "over_budget"));
		ck_assert_uint_gt(own, 0);
		sum += own;
		manifest_destroy(m);
		manifest_destroy(l);
	}
	ck_assert_uint_eq(sum, NFILES);
}
END_TEST

/* A hit check against a part's manifest (with the listing written), and
 * a rebuild linking what the part held unchanged. */
START_TEST(test_worker_part_check_and_previous)
{
	static char out[65536], err[4096];
	char dst[256], dst2[256], mfd[16], lfd[16], ifd[16], prev[300];
	char mine[64] = "", other[64] = "";
	struct manifest *m, *l;
	int mo = memfd(), lo, mi;
	uint64_t own;

	tree();
	mkdst("v1", dst, sizeof(dst));
	{
		const char *argv[] = { "--spread",
				       PLAN,
				       "--spread-self",
				       "n2",
				       "--manifest-out",
				       fdstr(mo, mfd),
				       src,
				       dst,
				       NULL };

		ck_assert_msg(run_worker(argv, out, sizeof(out), err,
					 sizeof(err)) == 0,
			      "%s%s", out, err);
	}
	m = read_back(mo);
	own = files_of(m);
	for (unsigned i = 0; i < NFILES && (!*mine || !*other); i++) {
		char rel[64];

		snprintf(rel, sizeof(rel), "d%u/f%02u", i % 3, i);
		if (owner(rel) == 1 && !*mine)
			strcpy(mine, rel);
		else if (owner(rel) != 1 && !*other)
			strcpy(other, rel);
	}
	ck_assert(*mine && *other);

	/* --check: unchanged, and the listing is there */
	mi = memfd();
	ck_assert_int_eq(manifest_write(m, mi), 0);
	ck_assert_int_eq(lseek(mi, 0, SEEK_SET), 0);
	lo = memfd();
	{
		const char *argv[] = { "--spread",
				       PLAN,
				       "--spread-self",
				       "n2",
				       "--check",
				       "--manifest-in",
				       fdstr(mi, ifd),
				       "--listing-out",
				       fdstr(lo, lfd),
				       src,
				       dst,
				       NULL };

		ck_assert_msg(run_worker(argv, out, sizeof(out), err,
					 sizeof(err)) == 0,
			      "%s%s", out, err);
	}
	close(mi);
	ck_assert_msg(strstr(out, "\"unchanged\":true"), "%s", out);
	ck_assert_uint_eq(figure(out, "dataset_files"), NFILES);
	l = read_back(lo);
	ck_assert_uint_eq(files_of(l), NFILES);
	manifest_destroy(l);

	/* one of ours rewritten (another's too): one copied, the rest
	 * linked from v1 */
	sleep(1); /* a new mtime for sure */
	put(mine, 7);
	put(other, 8);
	mkdst("v2", dst2, sizeof(dst2));
	snprintf(prev, sizeof(prev), "%s/data", dst);
	mi = memfd();
	ck_assert_int_eq(manifest_write(m, mi), 0);
	ck_assert_int_eq(lseek(mi, 0, SEEK_SET), 0);
	{
		const char *argv[] = { "--spread",
				       PLAN,
				       "--spread-self",
				       "n2",
				       "--previous",
				       prev,
				       "--manifest-in",
				       fdstr(mi, ifd),
				       src,
				       dst2,
				       NULL };

		ck_assert_msg(run_worker(argv, out, sizeof(out), err,
					 sizeof(err)) == 0,
			      "%s%s", out, err);
	}
	close(mi);
	ck_assert_uint_eq(figure(out, "copy_files"), 1);
	ck_assert_uint_eq(figure(out, "copy_bytes"), 7);
	ck_assert_uint_eq(figure(out, "linked"), own - 1);
	ck_assert(exists(dst2, mine));
	ck_assert(!exists(dst2, other));
	manifest_destroy(m);
}
END_TEST

/* --- chunks of a file too large for one node --------------------------- */

#define CPLAN "n1=2,n2=2,n3=2" /* 2 MiB each: a file over 1 MiB is cut */
#define BIG_SIZE ((size_t)5 * 1048576 + 123)

static unsigned char big_byte(size_t i)
{
	return (unsigned char)(i * 7 + i / 4096);
}

/* SRC/big.bin, every byte telling its offset apart. */
static void put_big(void)
{
	char path[256];
	unsigned char *buf = malloc(BIG_SIZE);
	int fd;

	for (size_t i = 0; i < BIG_SIZE; i++)
		buf[i] = big_byte(i);
	snprintf(path, sizeof(path), "%s/big.bin", src);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, buf, BIG_SIZE), (ssize_t)BIG_SIZE);
	close(fd);
	free(buf);
}

/* The part in DST holds chunk K of big.bin, byte for byte, read-only,
 * with the file's mtime? */
static bool holds_chunk(const char *dst, uint64_t k)
{
	char name[PARTCHUNK_NAME_MAX], path[512], spath[256];
	struct stat st, sst;
	uint64_t off, len;
	unsigned char *buf;
	bool ok;
	int fd;

	partchunk_name("big.bin", 7, k, name);
	snprintf(path, sizeof(path), "%s/%s/%s", dst, PARTCHUNKS_DIR, name);
	if (lstat(path, &st) < 0)
		return false;
	partchunk_extent(BIG_SIZE, k, &off, &len);
	snprintf(spath, sizeof(spath), "%s/big.bin", src);
	ck_assert_int_eq(stat(spath, &sst), 0);
	ck_assert(S_ISREG(st.st_mode));
	ck_assert_uint_eq((uint64_t)st.st_size, len);
	ck_assert_int_eq(st.st_mode & 0777, 0400);
	ck_assert_int_eq(st.st_mtim.tv_sec, sst.st_mtim.tv_sec);
	ck_assert_int_eq(st.st_mtim.tv_nsec, sst.st_mtim.tv_nsec);
	buf = malloc(len);
	fd = open(path, O_RDONLY);
	ck_assert_int_eq(read(fd, buf, len), (ssize_t)len);
	close(fd);
	ok = true;
	for (uint64_t i = 0; i < len && ok; i++)
		ok = buf[i] == big_byte(off + i);
	free(buf);
	ck_assert_msg(ok, "chunk %llu's bytes", (unsigned long long)k);
	return true;
}

/* build_part with --verify checksum (a test sets it: each runs in a
 * child of its own) */
static bool build_checksum;

static void build_part(const char *self, const char *budget,
		       const char *previous, int mi, int mo, const char *dst,
		       char *out, size_t outlen)
{
	static char err[4096];
	char mfd[16], ifd[16];
	const char *argv[20] = { "--spread", CPLAN, "--spread-self", self };
	size_t n = 4;

	if (build_checksum) {
		argv[n++] = "--verify";
		argv[n++] = "checksum";
	}

	if (budget) {
		argv[n++] = "--part-budget";
		argv[n++] = budget;
	}
	if (previous) {
		argv[n++] = "--previous";
		argv[n++] = previous;
		argv[n++] = "--manifest-in";
		argv[n++] = fdstr(mi, ifd);
	}
	argv[n++] = "--manifest-out";
	argv[n++] = fdstr(mo, mfd);
	argv[n++] = src;
	argv[n++] = dst;
	argv[n] = NULL;
	ck_assert_msg(run_worker(argv, out, outlen, err, sizeof(err)) == 0,
		      "%s%s", out, err);
}

/* A file over half a node's room is in no part's data: each node holds
 * the chunks the plan gives it, byte-exact, the three together every
 * chunk once; the totals count them; --check finds them, and misses one
 * removed; --previous links them. */
START_TEST(test_worker_chunks)
{
	static char out[65536];
	const char *nodes[3] = { "n1", "n2", "n3" };
	struct spread_plan cp;
	char dst[3][256], err[256];
	uint64_t nchunks = spread_chunk_count(BIG_SIZE), seen = 0;
	int mo[3];

	ck_assert_int_eq(spread_plan_parse(CPLAN, &cp, err, sizeof(err)), 0);
	tree();
	put_big();
	ck_assert_uint_eq(nchunks, 6);
	for (unsigned i = 0; i < 3; i++) {
		uint64_t mine = 0, bytes = 0;

		mo[i] = memfd();
		mkdst(nodes[i], dst[i], sizeof(dst[i]));
		build_part(nodes[i], NULL, NULL, -1, mo[i], dst[i], out,
			   sizeof(out));
		ck_assert(!exists(dst[i], "big.bin"));
		for (uint64_t k = 0; k < nchunks; k++) {
			bool own = spread_chunk_owner(&cp, "big.bin", 7, k) ==
				   i;

			ck_assert_int_eq(holds_chunk(dst[i], k), own);
			if (own) {
				uint64_t off, len;

				partchunk_extent(BIG_SIZE, k, &off, &len);
				mine++;
				bytes += len;
				seen++;
			}
		}
		ck_assert_uint_eq(figure(out, "chunked_files"), 1);
		ck_assert_uint_eq(figure(out, "chunks"), mine);
		ck_assert_uint_eq(figure(out, "chunk_bytes"), bytes);
		ck_assert_uint_ge(figure(out, "total_bytes"), bytes);
		if (mine)
			ck_assert_uint_eq(figure(out, "chunks_copied"), mine);
	}
	ck_assert_uint_eq(seen, nchunks);

	/* --check on the node with most chunks: unchanged, then not once
	 * one of its chunks is gone */
	for (unsigned i = 0; i < 3; i++) {
		static char cerr[4096];
		char ifd[16], name[PARTCHUNK_NAME_MAX], path[1024];
		struct manifest *m = read_back(mo[i]);
		int mi = memfd(), mo2 = memfd();
		const char *argv[] = { "--spread", CPLAN,     "--spread-self",
				       nodes[i],   "--check", "--manifest-in",
				       ifd,        src,       dst[i],
				       NULL };
		char prev[1024], dst2[256], name2[32];
		uint64_t k, held = 0;

		ck_assert_int_eq(manifest_write(m, mi), 0);
		ck_assert_int_eq(lseek(mi, 0, SEEK_SET), 0);
		fdstr(mi, ifd);
		ck_assert_msg(run_worker(argv, out, sizeof(out), cerr,
					 sizeof(cerr)) == 0,
			      "%s%s", out, cerr);
		close(mi);
		ck_assert_msg(strstr(out, "\"unchanged\":true"), "%s", out);
		for (k = 0; k < nchunks; k++)
			held += spread_chunk_owner(&cp, "big.bin", 7, k) == i;
		if (!held) {
			manifest_destroy(m);
			close(mo2);
			continue;
		}
		/* --previous: every chunk linked, none copied */
		mi = memfd();
		ck_assert_int_eq(manifest_write(m, mi), 0);
		ck_assert_int_eq(lseek(mi, 0, SEEK_SET), 0);
		snprintf(prev, sizeof(prev), "%s/data", dst[i]);
		snprintf(name2, sizeof(name2), "%s.v2", nodes[i]);
		mkdst(name2, dst2, sizeof(dst2));
		build_part(nodes[i], NULL, prev, mi, mo2, dst2, out,
			   sizeof(out));
		close(mi);
		close(mo2);
		ck_assert_uint_eq(figure(out, "chunks_linked"), held);
		ck_assert_uint_eq(figure(out, "chunks_copied"), 0);
		ck_assert_uint_eq(figure(out, "copy_bytes"), 0);
		/* one chunk gone: --check says changed */
		for (k = 0; spread_chunk_owner(&cp, "big.bin", 7, k) != i; k++)
			;
		partchunk_name("big.bin", 7, k, name);
		snprintf(path, sizeof(path), "%s/%s", dst[i], PARTCHUNKS_DIR);
		ck_assert_int_eq(chmod(path, 0700), 0);
		snprintf(path, sizeof(path), "%s/%s/%s", dst[i], PARTCHUNKS_DIR,
			 name);
		ck_assert_int_eq(unlink(path), 0);
		mi = memfd();
		ck_assert_int_eq(manifest_write(m, mi), 0);
		ck_assert_int_eq(lseek(mi, 0, SEEK_SET), 0);
		fdstr(mi, ifd);
		ck_assert_msg(run_worker(argv, out, sizeof(out), cerr,
					 sizeof(cerr)) == 0,
			      "%s%s", out, cerr);
		close(mi);
		ck_assert_msg(strstr(out, "\"unchanged\":false"), "%s", out);
		manifest_destroy(m);
		break;
	}
}
END_TEST

/* A file last changed before 1970: its chunks keep that time to the
 * nanosecond (a negative time is no error) and --check finds them. */
START_TEST(test_worker_chunks_old_mtime)
{
	static char out[65536];
	const struct timespec old[2] = { { -2, 250000000 }, { -2, 250000000 } };
	char dst[256], path[256];
	int mo = memfd();

	put_big();
	snprintf(path, sizeof(path), "%s/big.bin", src);
	ck_assert_int_eq(utimensat(AT_FDCWD, path, old, 0), 0);
	mkdst("old", dst, sizeof(dst));
	build_part("n1", NULL, NULL, -1, mo, dst, out, sizeof(out));
	close(mo);
	ck_assert_uint_gt(figure(out, "chunks"), 0);
	for (uint64_t k = 0; k < spread_chunk_count(BIG_SIZE); k++) {
		struct spread_plan cp;
		char err[256];

		ck_assert_int_eq(spread_plan_parse(CPLAN, &cp, err,
						   sizeof(err)),
				 0);
		ck_assert_int_eq(holds_chunk(dst, k),
				 spread_chunk_owner(&cp, "big.bin", 7, k) == 0);
	}
}
END_TEST

/* --check of the part in DST against the manifest M (its own), with
 * --verify V: is it unchanged? */
static bool part_unchanged(const char *self, const char *verify,
			   const struct manifest *m, const char *dst)
{
	static char out[65536], err[4096];
	char ifd[16];
	int mi = memfd();
	const char *argv[] = { "--spread",
			       CPLAN,
			       "--spread-self",
			       self,
			       "--verify",
			       verify,
			       "--check",
			       "--manifest-in",
			       fdstr(mi, ifd),
			       src,
			       dst,
			       NULL };
	bool same;

	ck_assert_int_eq(manifest_write(m, mi), 0);
	ck_assert_int_eq(lseek(mi, 0, SEEK_SET), 0);
	ck_assert_msg(run_worker(argv, out, sizeof(out), err, sizeof(err)) == 0,
		      "%s%s", out, err);
	close(mi);
	same = strstr(out, "\"unchanged\":true") != NULL;
	ck_assert_msg(same || strstr(out, "\"unchanged\":false"), "%s", out);
	return same;
}

/* verify=checksum: a chunk whose range of the file was rewritten with
 * the file's size and mtime kept is not the same (stat alone cannot
 * tell): --check says changed, and a build with --previous copies that
 * chunk from the PFS, with its new bytes, and links the others. */
START_TEST(test_worker_chunks_checksum)
{
	static char out[65536];
	struct spread_plan cp;
	char dst[256], dst2[256], prev[300], path[512], err[256], name[32],
	    cname[PARTCHUNK_NAME_MAX];
	const char *self;
	uint64_t held = 0, off, len;
	struct manifest *m;
	struct stat st;
	unsigned char b;
	int mo = memfd(), mi, mo2 = memfd(), fd;
	unsigned owner;

	ck_assert_int_eq(spread_plan_parse(CPLAN, &cp, err, sizeof(err)), 0);
	tree();
	put_big();
	/* the node of chunk 0, and how many it holds */
	owner = spread_chunk_owner(&cp, "big.bin", 7, 0);
	self = owner == 0 ? "n1" : owner == 1 ? "n2" : "n3";
	for (uint64_t k = 0; k < spread_chunk_count(BIG_SIZE); k++)
		held += spread_chunk_owner(&cp, "big.bin", 7, k) == owner;
	build_checksum = true;
	mkdst(self, dst, sizeof(dst));
	build_part(self, NULL, NULL, -1, mo, dst, out, sizeof(out));
	ck_assert_uint_eq(figure(out, "chunks_copied"), held);
	m = read_back(mo);
	ck_assert(part_unchanged(self, "checksum", m, dst));
	/* one byte of chunk 0 rewritten; the file's mtime put back */
	snprintf(path, sizeof(path), "%s/big.bin", src);
	ck_assert_int_eq(stat(path, &st), 0);
	fd = open(path, O_WRONLY);
	ck_assert_int_ge(fd, 0);
	b = (unsigned char)(big_byte(10) ^ 0xff);
	ck_assert_int_eq(pwrite(fd, &b, 1, 10), 1);
	close(fd);
	ck_assert_int_eq(
	    utimensat(AT_FDCWD, path,
		      (struct timespec[2]){ st.st_mtim, st.st_mtim }, 0),
	    0);
	ck_assert(part_unchanged(self, "stat", m, dst));
	ck_assert(!part_unchanged(self, "checksum", m, dst));
	/* the next version: chunk 0 from the PFS, the others linked */
	mi = memfd();
	ck_assert_int_eq(manifest_write(m, mi), 0);
	ck_assert_int_eq(lseek(mi, 0, SEEK_SET), 0);
	snprintf(prev, sizeof(prev), "%s/data", dst);
	snprintf(name, sizeof(name), "%s.v2", self);
	mkdst(name, dst2, sizeof(dst2));
	build_part(self, NULL, prev, mi, mo2, dst2, out, sizeof(out));
	ck_assert_uint_eq(figure(out, "chunks_copied"), 1);
	ck_assert_uint_eq(figure(out, "chunks_linked"), held - 1);
	partchunk_name("big.bin", 7, 0, cname);
	snprintf(path, sizeof(path), "%s/%s/%s", dst2, PARTCHUNKS_DIR, cname);
	fd = open(path, O_RDONLY);
	ck_assert_int_ge(fd, 0);
	partchunk_extent(BIG_SIZE, 0, &off, &len);
	ck_assert_int_eq(pread(fd, &b, 1, 10), 1);
	ck_assert_uint_eq(b, (unsigned char)(big_byte(10) ^ 0xff));
	close(fd);
	manifest_destroy(m);
	close(mi);
	close(mo);
	close(mo2);
	build_checksum = false;
}
END_TEST

/* A budget too small for all of a node's chunks keeps those it scores
 * highest and counts the rest. */
START_TEST(test_worker_chunk_budget)
{
	static char out[65536];
	struct spread_plan cp;
	char dst[256], err[256], budget[32];
	uint64_t nchunks = spread_chunk_count(BIG_SIZE), mine = 0, kept = 0;
	double low_kept = 1e300, high_out = 0;
	unsigned self = 0;
	int mo = memfd();

	ck_assert_int_eq(spread_plan_parse(CPLAN, &cp, err, sizeof(err)), 0);
	put_big();
	/* the node with two chunks or more */
	for (self = 0; self < 3; self++) {
		mine = 0;
		for (uint64_t k = 0; k < nchunks; k++)
			mine += spread_chunk_owner(&cp, "big.bin", 7, k) ==
				self;
		if (mine >= 2)
			break;
	}
	ck_assert_uint_lt(self, 3);
	mkdst("b", dst, sizeof(dst));
	/* room for one chunk: a whole one, or the last (123 bytes) with
	 * no room left for a whole one after it */
	snprintf(budget, sizeof(budget), "%u", 1048576);
	build_part(cp.nodes[self].name, budget, NULL, -1, mo, dst, out,
		   sizeof(out));
	close(mo);
	ck_assert_uint_eq(figure(out, "chunks"), 1);
	ck_assert_uint_eq(figure(out, "over_budget_chunks"), mine - 1);
	for (uint64_t k = 0; k < nchunks; k++) {
		double s;

		if (spread_chunk_owner(&cp, "big.bin", 7, k) != self)
			continue;
		s = spread_chunk_score(&cp, self, "big.bin", 7, k);
		if (holds_chunk(dst, k)) {
			kept++;
			low_kept = s < low_kept ? s : low_kept;
		} else {
			high_out = s > high_out ? s : high_out;
		}
	}
	ck_assert_uint_eq(kept, 1);
	ck_assert(low_kept > high_out);
}
END_TEST

/* --part-budget: the files this node scores highest, up to the budget;
 * the rest counted. */
START_TEST(test_worker_part_budget)
{
	static char out[65536], err[4096];
	char dst[256], mfd[16], budget[32];
	struct manifest *m;
	int mo = memfd();
	uint64_t total, kept = 0, out_files = 0;
	double low_kept = 1e300, high_out = 0;

	tree();
	mkdst("b", dst, sizeof(dst));
	snprintf(budget, sizeof(budget), "%u", 1000);
	{
		const char *argv[] = { "--spread",
				       PLAN,
				       "--spread-self",
				       "n1",
				       "--part-budget",
				       budget,
				       "--manifest-out",
				       fdstr(mo, mfd),
				       src,
				       dst,
				       NULL };

		ck_assert_msg(run_worker(argv, out, sizeof(out), err,
					 sizeof(err)) == 0,
			      "%s%s", out, err);
	}
	m = read_back(mo);
	total = figure(out, "total_bytes");
	ck_assert_uint_le(total, 1000);
	ck_assert_uint_gt(files_of(m), 0);
	ck_assert_uint_gt(figure(out, "over_budget_files"), 0);
	ck_assert_uint_gt(figure(out, "over_budget_bytes"), 0);
	ck_assert_uint_eq(figure(out, "total_files"), files_of(m));
	/* n1's files it scores highest: every one kept scores above every
	 * one of n1's left out */
	for (unsigned i = 0; i < NFILES; i++) {
		char rel[64];
		double s;

		snprintf(rel, sizeof(rel), "d%u/f%02u", i % 3, i);
		if (owner(rel) != 0)
			continue;
		s = spread_score(&plan, 0, rel, strlen(rel));
		if (manifest_find(m, rel, strlen(rel))) {
			kept++;
			low_kept = s < low_kept ? s : low_kept;
		} else {
			out_files++;
			high_out = s > high_out ? s : high_out;
		}
	}
	ck_assert_uint_eq(kept, files_of(m));
	ck_assert_uint_eq(out_files, figure(out, "over_budget_files"));
	ck_assert(low_kept > high_out);
	for (size_t i = 0; i < manifest_count(m); i++) {
		const struct manifest_entry *e = manifest_get(m, i);

		ck_assert(e->type != MANIFEST_FILE || owner(e->path) == 0);
	}
	manifest_destroy(m);
}
END_TEST

START_TEST(test_worker_spread_usage)
{
	static char out[4096], err[4096];
	char file[256], dst[256], fd9[16];
	int open_fd = memfd();
	const char *const bad[][16] = {
		/* 0: a node not in the plan, named */
		{ "--spread", PLAN, "--spread-self", "n9", src, "/tmp", NULL },
		{ "--spread", "n1=0,n2=1", "--spread-self", "n1", src, "/tmp",
		  NULL },
		{ "--spread", "n1", "--spread-self", "n1", src, "/tmp", NULL },
		{ "--spread", "n1=1,n1=2", "--spread-self", "n1", src, "/tmp",
		  NULL },
		{ "--spread", PLAN, src, "/tmp", NULL },
		{ "--spread-self", "n1", src, "/tmp", NULL },
		{ "--part-budget", "100", src, "/tmp", NULL },
		{ "--spread", PLAN, "--spread-self", "n1", "--part-budget", "0",
		  src, "/tmp", NULL },
		{ "--spread", PLAN, "--spread-self", "n1", "--part-budget",
		  "1k", src, "/tmp", NULL },
		{ "--spread", PLAN, "--spread-self", "n1", "--part-budget",
		  "-5", src, "/tmp", NULL },
		/* 10: not an open descriptor, a protocol one */
		{ "--listing-out", "999", src, "/tmp", NULL },
		{ "--listing-out", "1", src, "/tmp", NULL },
		{ "--listing-out", "x", src, "/tmp", NULL },
		/* 13: the same descriptor as the manifest's */
		{ "--listing-out", fd9, "--manifest-out", fd9, src, "/tmp",
		  NULL },
		/* 14: one file */
		{ "--spread", PLAN, "--spread-self", "n1", file, "/tmp", NULL },
	};

	fdstr(open_fd, fd9);
	snprintf(file, sizeof(file), "%s/f", src);
	put("f", 10);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		ck_assert_msg(run_worker(bad[i], out, sizeof(out), err,
					 sizeof(err)) == 2,
			      "case %zu accepted: %s", i, out);
		ck_assert_msg(!out[0], "case %zu: %s", i, out);
		ck_assert_msg(strstr(err, "usage:"), "case %zu: %s", i, err);
		if (i == 0)
			ck_assert_msg(strstr(err, "--spread-self: node 'n9' is "
						  "not in the --spread plan"),
				      "%s", err);
		if (i == 1)
			ck_assert_msg(strstr(err, "--spread: spread plan: "
						  "node 1: weight '0'"),
				      "%s", err);
		if (i == 10)
			ck_assert_msg(strstr(err, "--listing-out: '999' is "
						  "not an open file "
						  "descriptor"),
				      "%s", err);
		if (i == 14)
			ck_assert_msg(strstr(err, "spread is for directory "
						  "trees"),
				      "%s", err);
	}
	/* --listing-out without --spread: the whole tree, as it is */
	tree();
	mkdst("whole", dst, sizeof(dst));
	{
		char lfd[16];
		int lo = memfd();
		const char *argv[] = { "--listing-out", fdstr(lo, lfd), src,
				       dst, NULL };
		struct manifest *l;

		ck_assert_int_eq(run_worker(argv, out, sizeof(out), err,
					    sizeof(err)),
				 0);
		ck_assert_ptr_null(strstr(out, "dataset_files"));
		l = read_back(lo);
		/* the top, 3 directories, NFILES + "f", the symlink */
		ck_assert_uint_eq(manifest_count(l), 1 + 3 + NFILES + 1 + 1);
		manifest_destroy(l);
	}
	/* a file without --spread is staged as before */
	mkdst("one", dst, sizeof(dst));
	{
		const char *argv[] = { file, dst, NULL };

		ck_assert_int_eq(run_worker(argv, out, sizeof(out), err,
					    sizeof(err)),
				 0);
		ck_assert_ptr_null(strstr(out, "dataset_files"));
	}
	close(open_fd);
}
END_TEST

static Suite *worker_suite(void)
{
	Suite *s = suite_create("worker");
	TCase *tc = tcase_create("spread");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_worker_parts);
	tcase_add_test(tc, test_worker_part_check_and_previous);
	tcase_add_test(tc, test_worker_part_budget);
	tcase_add_test(tc, test_worker_spread_usage);
	tcase_add_test(tc, test_worker_chunks);
	tcase_add_test(tc, test_worker_chunk_budget);
	tcase_add_test(tc, test_worker_chunks_old_mtime);
	tcase_add_test(tc, test_worker_chunks_checksum);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return check_run(worker_suite());
}
