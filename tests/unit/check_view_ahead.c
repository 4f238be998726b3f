/* check_view_ahead.c - reading a node's own chunks ahead (view/view_ahead.c):
 * the window over real plans (a reader going through this node's chunks
 * in order, its requests now and then out of order, is asked every byte
 * ahead once and half a window to a window and a half ahead; scattered
 * reads ask nothing; other nodes' chunks are skipped, and only so many)
 * and the reader thread on real files (the ranges asked end up in the
 * page cache, seen with mincore; nothing else does).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <check.h>

#include "common/fs/partchunks.h"
#include "common/sched/spread.h"
#include "tests/unit/check_run.h"
#include "tests/unit/plan_fixture.h"
#include "view/view_ahead.h"

#define KIB (UINT64_C(1) << 10)
#define MIB (UINT64_C(1) << 20)
#define REQ (128 * KIB) /* the kernel's requests to a FUSE file */

static bool ours(const struct view_ahead_file *f, uint64_t index)
{
	return spread_chunk_owner(f->plan, f->rel, f->rel_len, index) ==
	       f->self;
}

/* This node's bytes of F in the file's [FROM, TO). */
static uint64_t local_between(const struct view_ahead_file *f, uint64_t from,
			      uint64_t to)
{
	uint64_t cb = spread_chunk_bytes(f->size), sum = 0;

	for (uint64_t k = from / cb;
	     k * cb < to && k < spread_chunk_count(f->size); k++) {
		uint64_t off, len, a, b;

		if (!ours(f, k))
			continue;
		partchunk_extent(f->size, k, &off, &len);
		a = off > from ? off : from;
		b = off + len < to ? off + len : to;
		if (b > a)
			sum += b - a;
	}
	return sum;
}

/* What a reader going through F's chunks of this node in order was
 * asked, checked at every request. */
struct asked {
	uint64_t frontier; /* file offset the asks reached */
	uint64_t bytes;
	size_t calls;
};

static void check_pieces(const struct view_ahead_file *f, struct asked *a,
			 const struct view_ahead_piece *p, size_t n)
{
	ck_assert_uint_le(n, VIEW_AHEAD_PIECES);
	for (size_t i = 0; i < n; i++) {
		uint64_t off, len;

		ck_assert_msg(ours(f, p[i].index), "chunk %llu is not ours",
			      (unsigned long long)p[i].index);
		partchunk_extent(f->size, p[i].index, &off, &len);
		ck_assert_uint_gt(p[i].len, 0);
		ck_assert_uint_le(p[i].at + p[i].len, len);
		/* in file order, never a byte asked twice */
		ck_assert_msg(
		    off + p[i].at >= a->frontier,
		    "chunk %llu at %llu asked again (asked up to %llu)",
		    (unsigned long long)p[i].index, (unsigned long long)p[i].at,
		    (unsigned long long)a->frontier);
		a->frontier = off + p[i].at + p[i].len;
		a->bytes += p[i].len;
	}
	if (n)
		a->calls++;
}

/* Read F's chunks of this node in order in REQ-sized requests, each
 * second pair swapped (the kernel runs several at once); check the
 * lead after each. */
static struct asked read_in_order(const struct view_ahead_file *f)
{
	struct view_ahead_window w;
	struct view_ahead_piece p[VIEW_AHEAD_PIECES];
	struct asked a = { 0 };
	uint64_t reqs[2];
	unsigned held = 0, pair = 0;

	view_ahead_window_init(&w);
	for (uint64_t k = 0; k < spread_chunk_count(f->size); k++) {
		uint64_t off, len;

		if (!ours(f, k))
			continue;
		partchunk_extent(f->size, k, &off, &len);
		for (uint64_t at = 0; at < len; at += REQ) {
			reqs[held++] = off + at;
			if (held < 2 && at + REQ < len)
				continue;
			for (unsigned i = 0; i < held; i++) {
				/* every second pair comes in swapped */
				unsigned j = (pair % 2 && held == 2) ? 1 - i
								     : i;
				uint64_t o = reqs[j], l = REQ;
				uint64_t end;
				size_t n;

				if (o + l > off + len)
					l = off + len - o;
				n = view_ahead_next(&w, f, o, l, p);
				check_pieces(f, &a, p, n);
				end = o + l;
				if (a.frontier < end)
					continue; /* before the first window */
				/* never more than a window and a half ahead,
				 * and at least half a window once past the
				 * first (unless our chunks end first) */
				ck_assert_uint_le(local_between(f, end,
								a.frontier),
						  VIEW_AHEAD_BYTES * 3 / 2);
				if (local_between(f, a.frontier, f->size) &&
				    a.calls > 1)
					ck_assert_uint_ge(
					    local_between(f, end, a.frontier) +
						2 * REQ,
					    VIEW_AHEAD_BYTES / 2);
			}
			held = 0;
			pair++;
		}
	}
	view_ahead_window_fini(&w);
	return a;
}

/* --- the window ------------------------------------------------------------ */

START_TEST(test_window_in_order)
{
	/* 16 MiB chunks (1 GiB and a bit: a short last chunk), 2 MiB ones,
	 * and 1 MiB ones over 5 nodes */
	static const struct {
		const char *plan;
		uint64_t size;
	} cases[] = {
		{ "n1=100,n2=100,n3=100", (UINT64_C(1) << 30) + 5 * MIB + 17 },
		{ "n1=100,n2=100,n3=100", 200 * MIB },
		{ "a=3,b=1,c=1,d=2,e=5", 64 * MIB - 4096 },
	};

	for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
		struct spread_plan plan = plan_of(cases[c].plan);

		for (unsigned self = 0; self < plan.n; self++) {
			const struct view_ahead_file f = { &plan, self,
							   "shards/big.bin", 14,
							   cases[c].size };
			uint64_t first = 0, own,
				 cb = spread_chunk_bytes(f.size);
			struct asked a;

			for (uint64_t k = 0; k < spread_chunk_count(f.size);
			     k++)
				if (ours(&f, k)) {
					first = k * cb;
					break;
				}
			own = local_between(&f, 0, f.size);
			if (!own)
				continue;
			a = read_in_order(&f);
			/* every byte of ours after the first request,
			 * and no more */
			ck_assert_uint_eq(a.bytes, own - REQ);
			ck_assert_uint_ge(a.frontier, first);
			/* in windows, not a call per request */
			ck_assert_uint_le(a.calls,
					  own / (VIEW_AHEAD_BYTES / 2) + 2);
		}
	}
}
END_TEST

START_TEST(test_window_scattered_reads)
{
	struct spread_plan plan = plan_of("n1=100,n2=100,n3=100");
	const struct view_ahead_file f = { &plan, 0, "big.bin", 7,
					   UINT64_C(1) << 30 };
	uint64_t cb = spread_chunk_bytes(f.size);
	struct view_ahead_window w;
	struct view_ahead_piece p[VIEW_AHEAD_PIECES];
	uint64_t k0 = 0;
	size_t n = 0;

	view_ahead_window_init(&w);
	/* records of 4 KiB here and there in our chunks, none at a
	 * chunk's start nor where the last one ended */
	for (unsigned i = 0; i < 200; i++) {
		uint64_t k = (i * 7919u) % spread_chunk_count(f.size);
		uint64_t at = 4096 * (1 + (i * 104729u) % (cb / 4096 - 2));

		if (!ours(&f, k))
			continue;
		n += view_ahead_next(&w, &f, k * cb + at, 4096, p);
	}
	ck_assert_uint_eq(n, 0);
	/* then one read that starts a chunk: a window */
	while (!ours(&f, k0))
		k0++;
	n = view_ahead_next(&w, &f, k0 * cb, REQ, p);
	ck_assert_uint_gt(n, 0);
	ck_assert_uint_eq(p[0].index, k0);
	ck_assert_uint_eq(p[0].at, REQ);
	/* and one that carries on where the last ended, elsewhere: a
	 * window of its own there */
	view_ahead_window_fini(&w);
	view_ahead_window_init(&w);
	ck_assert_uint_eq(view_ahead_next(&w, &f, k0 * cb + 3 * REQ + 4096,
					  4096, p),
			  0);
	n = view_ahead_next(&w, &f, k0 * cb + 3 * REQ + 8192, 4096, p);
	ck_assert_uint_gt(n, 0);
	ck_assert_uint_eq(p[0].at, 3 * REQ + 12288);
	view_ahead_window_fini(&w);
}
END_TEST

START_TEST(test_window_skips_others)
{
	/* a node with a tenth of the weight: most chunks (of 4 MiB) are
	 * the other's, and the window still holds VIEW_AHEAD_BYTES of ours */
	struct spread_plan plan = plan_of("small=1,big=9");
	const struct view_ahead_file f = { &plan, 0, "x", 1, 256 * MIB };
	uint64_t cb = spread_chunk_bytes(f.size), k0 = 0, sum = 0;
	struct view_ahead_window w;
	struct view_ahead_piece p[VIEW_AHEAD_PIECES];
	size_t n;

	while (!ours(&f, k0))
		k0++;
	ck_assert_uint_ge(local_between(&f, k0 * cb + REQ, f.size),
			  VIEW_AHEAD_BYTES);
	view_ahead_window_init(&w);
	n = view_ahead_next(&w, &f, k0 * cb, REQ, p);
	for (size_t i = 0; i < n; i++) {
		ck_assert(ours(&f, p[i].index));
		sum += p[i].len;
	}
	ck_assert_uint_eq(sum, VIEW_AHEAD_BYTES);
	/* the window reaches past this chunk, over the others' */
	ck_assert_uint_gt(p[n - 1].index, k0 + 1);
	view_ahead_window_fini(&w);
}
END_TEST

START_TEST(test_window_scan_bounded)
{
	/* a node that owns next to nothing of a 100 TB file (1.5 million
	 * chunks): the walk looks past VIEW_AHEAD_SCAN of the others' at
	 * most, and a read within that reach asks nothing more */
	struct spread_plan plan = plan_of("tiny=1,huge=1099511627776");
	const struct view_ahead_file f = { &plan, 0, "x", 1,
					   UINT64_C(100) << 40 };
	uint64_t cb = spread_chunk_bytes(f.size);
	struct view_ahead_window w;
	struct view_ahead_piece p[VIEW_AHEAD_PIECES];
	size_t n;

	view_ahead_window_init(&w);
	n = view_ahead_next(&w, &f, 0, REQ, p);
	/* chunk 0 is huge's (or, by chance, ours: its rest) */
	ck_assert_uint_le(n, 1);
	ck_assert_uint_le(w.end, (VIEW_AHEAD_SCAN + 2) * cb);
	/* a read within that reach asks nothing more */
	ck_assert_uint_eq(view_ahead_next(&w, &f, REQ, REQ, p), 0);
	view_ahead_window_fini(&w);
}
END_TEST

/* --- the reader thread ------------------------------------------------------ */

static char dir[] = "/tmp/check_view_ahead.XXXXXX";

static void file_of(const char *name, uint64_t len)
{
	char path[256];
	char *buf = malloc(MIB);
	int fd;

	ck_assert_ptr_nonnull(buf);
	memset(buf, 0x5a, MIB);
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	ck_assert_int_ge(fd, 0);
	for (uint64_t done = 0; done < len; done += MIB)
		ck_assert_int_eq(write(fd, buf, MIB), (ssize_t)MIB);
	ck_assert_int_eq(fsync(fd), 0);
	ck_assert_int_eq(posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED), 0);
	close(fd);
	free(buf);
}

/* Pages of NAME resident in [AT, AT + LEN). */
static uint64_t resident(const char *name, uint64_t at, uint64_t len)
{
	long page = sysconf(_SC_PAGESIZE);
	char path[256];
	unsigned char *vec;
	uint64_t n = 0;
	void *map;
	int fd;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	fd = open(path, O_RDONLY);
	ck_assert_int_ge(fd, 0);
	map = mmap(NULL, len, PROT_READ, MAP_SHARED, fd, (off_t)at);
	ck_assert_ptr_ne(map, MAP_FAILED);
	vec = malloc(len / (uint64_t)page + 1);
	ck_assert_int_eq(mincore(map, len, vec), 0);
	for (uint64_t i = 0; i < len / (uint64_t)page; i++)
		n += vec[i] & 1;
	free(vec);
	munmap(map, len);
	close(fd);
	return n * (uint64_t)page;
}

START_TEST(test_reader_thread)
{
	char names[4][PARTCHUNK_NAME_MAX];
	struct view_ahead *a = NULL;
	struct view_ahead_piece p;
	uint64_t asked = 0, bytes = 0;
	struct timespec nap = { 0, 10 * 1000 * 1000 };
	int dfd;

	ck_assert_ptr_nonnull(mkdtemp(dir));
	for (unsigned k = 0; k < 4; k++) {
		partchunk_name("shards/big.bin", 14, k, names[k]);
		if (k < 3)
			file_of(names[k], 4 * MIB);
	}
	if (resident(names[1], 0, 4 * MIB) == 4 * MIB) {
		/* tmpfs and the like keep every page */
		printf("SKIP test_reader_thread: %s cannot drop pages\n", dir);
		goto out;
	}
	dfd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	ck_assert_int_ge(dfd, 0);
	ck_assert_int_eq(view_ahead_start(dfd, &a), 0);
	p = (struct view_ahead_piece){ 1, 0, 4 * MIB };
	ck_assert(view_ahead_ask(a, "shards/big.bin", 14, &p));
	p = (struct view_ahead_piece){ 2, MIB, MIB };
	ck_assert(view_ahead_ask(a, "shards/big.bin", 14, &p));
	/* chunk 3 is not held here: skipped, nothing counted */
	p = (struct view_ahead_piece){ 3, 0, MIB };
	ck_assert(view_ahead_ask(a, "shards/big.bin", 14, &p));
	for (int i = 0; i < 500; i++) {
		view_ahead_counts(a, &asked, &bytes);
		if (bytes == 5 * MIB)
			break;
		nanosleep(&nap, NULL);
	}
	ck_assert_uint_eq(asked, 3);
	ck_assert_uint_eq(bytes, 5 * MIB);
	/* the kernel reads asynchronously: give it the same while */
	for (int i = 0; i < 500; i++) {
		if (resident(names[1], 0, 4 * MIB) == 4 * MIB &&
		    resident(names[2], MIB, MIB) == MIB)
			break;
		nanosleep(&nap, NULL);
	}
	ck_assert_uint_eq(resident(names[1], 0, 4 * MIB), 4 * MIB);
	ck_assert_uint_eq(resident(names[2], MIB, MIB), MIB);
	/* what was not asked stays on the disk */
	ck_assert_uint_lt(resident(names[0], 0, 4 * MIB), MIB);
	ck_assert_uint_lt(resident(names[2], 3 * MIB, MIB), MIB);
	view_ahead_stop(a);
	view_ahead_stop(NULL);
	close(dfd);
out:
	for (unsigned k = 0; k < 3; k++) {
		char path[256];

		snprintf(path, sizeof(path), "%s/%s", dir, names[k]);
		unlink(path);
	}
	rmdir(dir);
}
END_TEST

static Suite *view_ahead_suite(void)
{
	Suite *s = suite_create("view_ahead");
	TCase *tw = tcase_create("window");
	TCase *tr = tcase_create("reader");

	tcase_add_test(tw, test_window_in_order);
	tcase_add_test(tw, test_window_scattered_reads);
	tcase_add_test(tw, test_window_skips_others);
	tcase_add_test(tw, test_window_scan_bounded);
	tcase_set_timeout(tw, 60);
	suite_add_tcase(s, tw);
	tcase_add_test(tr, test_reader_thread);
	tcase_set_timeout(tr, 30);
	suite_add_tcase(s, tr);
	return s;
}

int main(void)
{
	return check_run(view_ahead_suite());
}
