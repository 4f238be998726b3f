/* check_view.c - the spread view (view/): its listing (view_tree.c), its
 * sources in this process against a peer served by a node of
 * peerfetch_fixture.h (view_source.c: range reads, a refusal, the peer
 * gone and left alone), and, as root, the built iostage-view serving a
 * real FUSE mount made by common/fs/fusemount.c over a temporary "PFS"
 * and "local part": readdir, stat, read, pread, mmap, files of nodes
 * that do not answer served from the PFS, the stats file, writes
 * refused, and the program's exit at unmount and at SIGTERM.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <check.h>

#include "common/fs/fusemount.h"
#include "common/fs/manifest.h"
#include "common/fs/partchunks.h"
#include "common/sched/spread.h"
#include "tests/unit/check_run.h"
#include "tests/unit/peerfetch_fixture.h"
#include "tests/unit/view_fixture.h"
#include "view/view_source.h"
#include "view/view_stats.h"
#include "view/view_tree.h"

/* --- helpers ------------------------------------------------------------- */

static void add(struct manifest *m, const char *path, int type, uint64_t size)
{
	struct manifest_entry e = { .path = path,
				    .path_len = (uint16_t)strlen(path),
				    .type = (uint8_t)type,
				    .size = size,
				    .mode = 0755 };

	ck_assert_int_eq(manifest_add(m, &e), 0);
}

/* The LEN bytes at OFF of file PATH, malloc'd. */
static char *slurp(const char *path, uint64_t off, size_t len)
{
	char *b = malloc(len + 1);
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	ck_assert_msg(fd >= 0, "%s: %s", path, strerror(errno));
	ck_assert_ptr_nonnull(b);
	ck_assert_int_eq(pread(fd, b, len, (off_t)off), (ssize_t)len);
	close(fd);
	return b;
}

/* --- the listing ---------------------------------------------------------- */

START_TEST(test_tree)
{
	struct manifest *m = manifest_create();
	struct view_tree *t = NULL;
	const uint32_t *kids;
	char err[256];
	size_t n;
	long i;

	add(m, "", MANIFEST_DIR, 0);
	add(m, "a", MANIFEST_DIR, 0);
	add(m, "a-b", MANIFEST_FILE, 3); /* sorts between "a" and "a/..." */
	add(m, "a/b", MANIFEST_DIR, 0);
	add(m, "a/b/c", MANIFEST_FILE, 1);
	add(m, "a/d", MANIFEST_SYMLINK, 3);
	add(m, "z", MANIFEST_FILE, 0);
	ck_assert_msg(view_tree_create(m, &t, err, sizeof(err)) == 0, "%s",
		      err);
	ck_assert_uint_eq(view_tree_count(t), 7);
	view_tree_children(t, 0, &kids, &n);
	ck_assert_uint_eq(n, 3);
	ck_assert_str_eq(view_tree_name(t, kids[0]), "a");
	ck_assert_str_eq(view_tree_name(t, kids[1]), "a-b");
	ck_assert_str_eq(view_tree_name(t, kids[2]), "z");
	ck_assert_uint_eq(view_tree_subdirs(t, 0), 1);
	i = view_tree_find(t, "a", 1);
	ck_assert_int_eq(i, 1);
	view_tree_children(t, (size_t)i, &kids, &n);
	ck_assert_uint_eq(n, 2);
	ck_assert_str_eq(view_tree_name(t, kids[0]), "b");
	ck_assert_str_eq(view_tree_name(t, kids[1]), "d");
	ck_assert_uint_eq(view_tree_subdirs(t, (size_t)i), 1);
	i = view_tree_find(t, "a/b/c", 5);
	ck_assert_int_ge(i, 0);
	ck_assert_str_eq(view_tree_name(t, (size_t)i), "c");
	view_tree_children(t, (size_t)i, &kids, &n);
	ck_assert_uint_eq(n, 0);
	ck_assert_int_eq(view_tree_find(t, "a/x", 3), -1);
	ck_assert_int_eq(view_tree_find(t, "", 0), 0);
	ck_assert_str_eq(view_tree_name(t, 0), "");
	view_tree_destroy(t);
	view_tree_destroy(NULL);
}
END_TEST

/* A listing that is not a directory tree is refused with one line. */
START_TEST(test_tree_refused)
{
	struct view_tree *t = NULL;
	struct manifest *m;
	char err[256];

	m = manifest_create();
	add(m, "", MANIFEST_FILE, 10);
	ck_assert_int_eq(view_tree_create(m, &t, err, sizeof(err)), -1);
	ck_assert_msg(strstr(err, "a spread dataset is a directory"), "%s",
		      err);
	m = manifest_create();
	add(m, "", MANIFEST_DIR, 0);
	add(m, "a/b", MANIFEST_FILE, 1);
	ck_assert_int_eq(view_tree_create(m, &t, err, sizeof(err)), -1);
	ck_assert_msg(strstr(err, "'a/b': its directory is not listed"), "%s",
		      err);
	m = manifest_create();
	add(m, "", MANIFEST_DIR, 0);
	add(m, "a", MANIFEST_FILE, 1);
	add(m, "a/b", MANIFEST_FILE, 1);
	ck_assert_int_eq(view_tree_create(m, &t, err, sizeof(err)), -1);
	ck_assert_msg(strstr(err, "is not a directory"), "%s", err);
	m = manifest_create();
	ck_assert_int_eq(view_tree_create(m, &t, err, sizeof(err)), -1);
	ck_assert_msg(strstr(err, "no top entry"), "%s", err);
	ck_assert_ptr_null(t);
}
END_TEST

/* --- the sources, against a peer in this process ---------------------------- */

static struct spread_plan pplan;
static const char *phosts[2] = { NULL, "127.0.0.1" };

/* Sources over the fixture's SRC as node "me", all files the peer
 * "n1"'s (weights 1 : 2^40), n1 being the fixture's node. */
static struct view_source *peer_sources(struct view_tree **ret_tree)
{
	struct view_source_conf sc;
	struct view_source *vs = NULL;
	char err[512];

	ck_assert_int_eq(spread_plan_parse("me=1,n1=1099511627776", &pplan, err,
					   sizeof(err)),
			 0);
	ck_assert_msg(view_tree_create(view_fixture_walk(src), ret_tree, err,
				       sizeof(err)) == 0,
		      "%s", err);
	sc = (struct view_source_conf){ .src = src,
					.plan = &pplan,
					.self = 0,
					.tier = "t0",
					.key = key,
					.peer_port = port,
					.encode = standin_encode,
					.hosts = phosts };
	ck_assert_msg(view_source_create(&sc, *ret_tree, &vs, err,
					 sizeof(err)) == 0,
		      "%s", err);
	return vs;
}

/* Read REL whole through VS in reads of CHUNK bytes and compare. */
static void read_whole(struct view_source *vs, struct view_tree *t,
		       const char *rel, size_t chunk)
{
	long i = view_tree_find(t, rel, strlen(rel));
	const struct manifest_entry *e;
	struct view_file *f = NULL;
	char path[PATH_MAX], *want, *got;
	uint64_t off = 0;

	ck_assert_int_ge(i, 0);
	e = view_tree_entry(t, (size_t)i);
	ck_assert_int_eq(view_source_open(vs, (size_t)i, &f), 0);
	got = malloc(e->size + chunk + 1);
	ck_assert_ptr_nonnull(got);
	for (;;) {
		ssize_t n = view_source_read(vs, f, got + off, chunk, off);

		ck_assert_int_ge(n, 0);
		if (!n)
			break;
		ck_assert_msg((size_t)n == chunk || off + (size_t)n == e->size,
			      "%s: short read of %zd at %llu", rel, n,
			      (unsigned long long)off);
		off += (uint64_t)n;
	}
	ck_assert_uint_eq(off, e->size);
	snprintf(path, sizeof(path), "%s/%s", src, rel);
	want = slurp(path, 0, e->size);
	ck_assert_msg(!memcmp(want, got, e->size), "%s differs", rel);
	free(want);
	free(got);
	view_source_release(vs, f);
}

/* The fixture's node stopped and served again on the same port (its
 * sessions end). */
static void restart_channel(void)
{
	char err[256];
	int fd;

	peer_fetch_stop((struct peer_fetch *)peer_fetcher(g.a.peer));
	ck_assert(peerserve_stop(&srv, 5));
	peer_destroy(g.a.peer);
	g.a.peer = peer_create(&g.a);
	ck_assert_ptr_nonnull(g.a.peer);
	peer_set_decoder(g.a.peer, standin_decode);
	fd = peernet_listen("127.0.0.1", port, err, sizeof(err));
	ck_assert_msg(fd >= 0, "listen again: %s", err);
	srv.arg = g.a.peer;
	ck_assert_msg(peerserve_start(&srv, fd, err, sizeof(err)) == 0,
		      "peerserve_start: %s", err);
}

START_TEST(test_source_peer)
{
	struct view_source_stats s0, s1, s2;
	struct view_tree *t = NULL;
	struct view_source *vs;
	char link[PATH_MAX];
	long i;

	/* a file the peer's version does not hold, a link */
	put_file("new.txt", 777, 9);
	snprintf(link, sizeof(link), "%s/lnk", src);
	ck_assert_int_eq(symlink("sub/b.txt", link), 0);
	vs = peer_sources(&t);
	/* no part here: the link read on the PFS, not followed */
	i = view_tree_find(t, "lnk", 3);
	ck_assert_int_ge(i, 0);
	ck_assert_int_eq(view_source_readlink(vs, (size_t)i, link,
					      sizeof(link)),
			 0);
	ck_assert_str_eq(link, "sub/b.txt");
	ck_assert_int_eq(view_source_readlink(vs, (size_t)i, link, 4), 0);
	ck_assert_str_eq(link, "sub");
	i = view_tree_find(t, "a.txt", 5);
	ck_assert_int_eq(view_source_readlink(vs, (size_t)i, link,
					      sizeof(link)),
			 -EINVAL);
	i = view_tree_find(t, "big.bin", 7);
	ck_assert_uint_eq(view_source_owner(vs, (size_t)i), 1);
	read_whole(vs, t, "big.bin", 128 * 1024);
	read_whole(vs, t, "a.txt", 4096);
	read_whole(vs, t, "sub/b.txt", 1000);
	view_source_stats(vs, &s0);
	ck_assert_uint_eq(s0.peer_bytes, BIG + 1000 + 5000);
	ck_assert_uint_eq(s0.pfs_bytes, 0);
	ck_assert_uint_eq(s0.peer_failures, 0);
	/* the peer refuses new.txt: the PFS, the peer asked once */
	read_whole(vs, t, "new.txt", 100);
	view_source_stats(vs, &s1);
	ck_assert_uint_eq(s1.pfs_bytes, 777);
	ck_assert_uint_eq(s1.pfs_reads, 8);
	ck_assert_uint_eq(s1.peer_failures, 1);
	/* ... and the peer is still asked for the others */
	read_whole(vs, t, "a.txt", 1000);
	view_source_stats(vs, &s1);
	ck_assert_uint_eq(s1.peer_bytes, s0.peer_bytes + 1000);
	/* the peer's iostaged restarts: the pooled session is broken, a
	 * new one serves, no failure */
	restart_channel();
	read_whole(vs, t, "sub/b.txt", 5000);
	view_source_stats(vs, &s1);
	ck_assert_uint_eq(s1.peer_bytes, s0.peer_bytes + 1000 + 5000);
	ck_assert_uint_eq(s1.peer_failures, 1);
	/* the peer goes away: one failure, then the PFS without asking */
	peer_fetch_stop((struct peer_fetch *)peer_fetcher(g.a.peer));
	ck_assert(peerserve_stop(&srv, 5));
	srv.running = false; /* teardown stops it again */
	read_whole(vs, t, "big.bin", 64 * 1024);
	read_whole(vs, t, "a.txt", 100);
	view_source_stats(vs, &s2);
	ck_assert_uint_eq(s2.peer_failures, s1.peer_failures + 1);
	ck_assert_uint_eq(s2.pfs_bytes, s1.pfs_bytes + BIG + 1000);
	ck_assert_uint_eq(s2.peer_bytes, s1.peer_bytes);
	view_source_destroy(vs);
	view_tree_destroy(t);
}
END_TEST

/* What sources for part PKEY on the peer, naming job JOB (0: none),
 * served reading sub/b.txt of tree T. */
static struct view_source_stats read_part(const char *pkey, uint32_t job,
					  struct view_tree *t)
{
	struct view_source_conf sc = { .src = src,
				       .plan = &pplan,
				       .tier = "t0",
				       .key = pkey,
				       .peer_port = port,
				       .job = job,
				       .encode = standin_encode,
				       .hosts = phosts };
	struct view_source_stats st;
	struct view_source *vs = NULL;
	char err[512];

	ck_assert_msg(view_source_create(&sc, t, &vs, err, sizeof(err)) == 0,
		      "%s", err);
	read_whole(vs, t, "sub/b.txt", 1000);
	view_source_stats(vs, &st);
	view_source_destroy(vs);
	return st;
}

/* A spread dataset's part on the peer: read for the view's job, which
 * every session names; a view naming none reads the PFS. */
START_TEST(test_source_part_for_job)
{
	const char *const nodes[] = { "me", "127.0.0.1" };
	struct view_source_stats st;
	struct view_tree *t = NULL;
	char pkey[CACHE_KEY_LEN + 1], err[512], json[1024];
	struct job *job;

	build_version_owned(geteuid(), false, true, pkey);
	snprintf(json, sizeof(json),
		 "{\"datasets\":[{\"name\":\"ds\",\"path\":\"%s\","
		 "\"tier\":\"t0\",\"spread\":\"yes\"}]}",
		 src);
	job = jobs_new_job(g.a.jobs, 42, geteuid(), getegid(), "tester",
			   ag_profile(&g, json), err, sizeof(err));
	ck_assert_msg(job != NULL, "%s", err);
	ck_assert_int_eq(jobs_set_nodes(job, nodes, 2, err, sizeof(err)), 0);
	ck_assert_int_eq(jobs_insert(g.a.jobs, job, NULL, err, sizeof(err)), 0);
	jobs_staging_done(job, true, NULL);
	ck_assert_int_eq(spread_plan_parse("me=1,n1=1099511627776", &pplan, err,
					   sizeof(err)),
			 0);
	ck_assert_msg(view_tree_create(view_fixture_walk(src), &t, err,
				       sizeof(err)) == 0,
		      "%s", err);
	st = read_part(pkey, 42, t);
	ck_assert_uint_eq(st.peer_bytes, 5000);
	ck_assert_uint_eq(st.peer_failures, 0);
	st = read_part(pkey, 0, t);
	ck_assert_uint_eq(st.peer_bytes, 0);
	ck_assert_uint_eq(st.pfs_bytes, 5000);
	ck_assert_uint_ge(st.peer_failures, 1);
	view_tree_destroy(t);
	jobs_put(job);
}
END_TEST

struct reader {
	struct view_source *vs;
	struct view_tree *t;
};

static void *reader_main(void *arg)
{
	struct reader *r = arg;

	read_whole(r->vs, r->t, "big.bin", 64 * 1024);
	return NULL;
}

/* Readers at once against a node serving 2 sessions (PeerFetchSessions):
 * its refusals of more are its bound, not a failure; every byte right. */
START_TEST(test_source_bounded)
{
	struct view_source_stats st;
	struct peer_fetch_counts c;
	struct view_tree *t = NULL;
	struct view_source *vs = peer_sources(&t);
	struct reader r = { vs, t };
	pthread_t th[6];

	for (size_t i = 0; i < 6; i++)
		ck_assert_int_eq(pthread_create(&th[i], NULL, reader_main, &r),
				 0);
	for (size_t i = 0; i < 6; i++)
		pthread_join(th[i], NULL);
	view_source_stats(vs, &st);
	ck_assert_uint_eq(st.peer_failures, 0);
	ck_assert_uint_eq(st.peer_bytes + st.pfs_bytes, 6 * (uint64_t)BIG);
	ck_assert_uint_gt(st.peer_bytes, 0);
	view_source_destroy(vs);
	for (int i = 0; i < 100; i++) {
		peer_fetch_counts(peer_fetcher(g.a.peer), &c);
		if (!c.active)
			break;
		usleep(20000);
	}
	ck_assert_uint_le(c.sessions, VIEW_SOURCE_SESSIONS);
	view_tree_destroy(t);
}
END_TEST

/* --- chunked files (common/fs/partchunks.h) --------------------------------- */

#define MIB (UINT64_C(1) << 20)
#define HUGE (5 * MIB + 123) /* 6 chunks of 1 MiB, the last of 123 bytes */

static struct spread_plan cplan;
static char lchunks[PATH_MAX]; /* this node's chunks directory */

/* Where REL's chunks are, as placed by cplan: this node's (0, "me") in
 * lchunks, the peer's (1, n1) in its version's chunks directory. */
struct placed {
	uint64_t count;
	uint64_t local, peer; /* bytes of each */
	uint64_t len[8];      /* each chunk's */
	unsigned owner[8];
};

static void place_chunks(const char *rel, struct placed *ret)
{
	char path[PATH_MAX + PARTCHUNK_NAME_MAX];
	char name[PARTCHUNK_NAME_MAX];
	struct stat st;

	snprintf(path, sizeof(path), "%s/%s", src, rel);
	ck_assert_int_eq(stat(path, &st), 0);
	memset(ret, 0, sizeof(*ret));
	ret->count = spread_chunk_count((uint64_t)st.st_size);
	ck_assert_uint_le(ret->count, 8);
	for (uint64_t i = 0; i < ret->count; i++) {
		ret->owner[i] = spread_chunk_owner(&cplan, rel, strlen(rel), i);
		if (ret->owner[i] == 0) {
			partchunk_name(rel, strlen(rel), i, name);
			snprintf(path, sizeof(path), "%s/%s", lchunks, name);
			ret->len[i] = write_chunk(path, rel, i);
			ret->local += ret->len[i];
		} else {
			ret->len[i] = put_chunk(key, version, rel, i);
			ret->peer += ret->len[i];
		}
	}
}

/* The first chunk of P owned by node OWNER. */
static uint64_t first_of(const struct placed *p, unsigned owner)
{
	for (uint64_t i = 0; i < p->count; i++)
		if (p->owner[i] == owner)
			return i;
	ck_abort_msg("no chunk of node %u", owner);
	return 0;
}

/* Sources over the fixture's SRC as node "me" of "me=4,n1=4" (a file
 * over 2 MiB is chunked: huge.bin and big.bin), n1 the fixture's node,
 * this node's chunks in lchunks (NULL CHUNKS: none). */
static struct view_source *chunk_sources(const char *chunks,
					 struct view_tree **ret_tree)
{
	struct view_source_conf sc;
	struct view_source *vs = NULL;
	char err[512];

	sc = (struct view_source_conf){ .src = src,
					.chunks = chunks,
					.plan = &cplan,
					.self = 0,
					.tier = "t0",
					.key = key,
					.peer_port = port,
					.encode = standin_encode,
					.hosts = phosts };
	ck_assert_msg(view_source_create(&sc, *ret_tree, &vs, err,
					 sizeof(err)) == 0,
		      "%s", err);
	return vs;
}

/* huge.bin on the PFS, the plan, lchunks made, the tree. */
static struct view_tree *chunk_setup(void)
{
	struct view_tree *t = NULL;
	char err[512];

	put_file("huge.bin", HUGE, 7);
	ck_assert_int_eq(spread_plan_parse("me=4,n1=4", &cplan, err,
					   sizeof(err)),
			 0);
	snprintf(lchunks, sizeof(lchunks), "%s/mychunks", scratch);
	ck_assert_int_eq(mkdir(lchunks, 0755), 0);
	ck_assert_msg(view_tree_create(view_fixture_walk(src), &t, err,
				       sizeof(err)) == 0,
		      "%s", err);
	return t;
}

static struct view_file *open_rel(struct view_source *vs, struct view_tree *t,
				  const char *rel)
{
	long i = view_tree_find(t, rel, strlen(rel));
	struct view_file *f = NULL;
	int r;

	ck_assert_int_ge(i, 0);
	r = view_source_open(vs, (size_t)i, &f);
	ck_assert_msg(r == 0, "open %s: %s", rel, strerror(-r));
	return f;
}

/* [OFF, OFF + LEN) of REL through F in reads of STEP bytes, each whole,
 * compared with the bytes of WANT (NULL: SRC/REL). */
static void read_range(struct view_source *vs, struct view_file *f,
		       const char *rel, const char *want, uint64_t off,
		       size_t len, size_t step)
{
	char path[PATH_MAX], *got = malloc(len + 1), *w;
	size_t done = 0;

	ck_assert_ptr_nonnull(got);
	while (done < len) {
		size_t n = len - done < step ? len - done : step;
		ssize_t r = view_source_read(vs, f, got + done, n, off + done);

		ck_assert_msg(r == (ssize_t)n, "%s: %zd of %zu at %llu", rel, r,
			      n, (unsigned long long)(off + done));
		done += n;
	}
	snprintf(path, sizeof(path), "%s/%s", src, rel);
	w = slurp(want ? want : path, off, len);
	ck_assert_msg(!memcmp(w, got, len), "%s: [%llu, +%zu) differs", rel,
		      (unsigned long long)off, len);
	free(w);
	free(got);
}

/* A chunked file read whole and at unaligned offsets across chunk
 * boundaries: the PFS's bytes exactly, this node's chunks counted
 * local, the peer's peer, none from the PFS; it opens and reads with
 * no file on the PFS at all (neither a part's file nor the PFS's is
 * opened for it); without --chunks this node's chunks come from the
 * PFS. */
START_TEST(test_source_chunks)
{
	struct view_tree *t = chunk_setup();
	struct view_source *vs = chunk_sources(lchunks, &t);
	struct view_source_stats s0, s1;
	struct placed huge, big;
	char path[PATH_MAX], away[PATH_MAX + 8];
	struct view_file *f;
	ssize_t n;
	char buf[128];

	place_chunks("huge.bin", &huge);
	place_chunks("big.bin", &big);
	ck_assert_uint_eq(huge.count, 6);
	ck_assert_uint_gt(huge.local, 0);
	ck_assert_uint_gt(huge.peer, 0);
	f = open_rel(vs, t, "huge.bin");
	/* whole, in reads within a chunk, then across its ends */
	read_range(vs, f, "huge.bin", NULL, 0, HUGE, 128 * 1024);
	view_source_stats(vs, &s0);
	ck_assert_uint_eq(s0.local_bytes, huge.local);
	ck_assert_uint_eq(s0.peer_bytes, huge.peer);
	ck_assert_uint_eq(s0.pfs_bytes, 0);
	ck_assert_uint_eq(s0.peer_failures, 0);
	/* our chunks read in order: every byte of them after the first
	 * read asked of the disk ahead (view_ahead.h), once */
	for (int i = 0; i < 500 && s0.ahead_bytes < huge.local - 128 * 1024;
	     i++) {
		usleep(10000);
		view_source_stats(vs, &s0);
	}
	ck_assert_uint_eq(s0.ahead_bytes, huge.local - 128 * 1024);
	read_range(vs, f, "huge.bin", NULL, 0, HUGE, 300001);
	/* one read over three chunks, one at the end, one past it */
	read_range(vs, f, "huge.bin", NULL, MIB - 5, 2 * MIB + 10,
		   2 * MIB + 10);
	read_range(vs, f, "huge.bin", NULL, HUGE - 7, 7, 7);
	n = view_source_read(vs, f, buf, sizeof(buf), HUGE - 7);
	ck_assert_int_eq(n, 7);
	ck_assert_int_eq(view_source_read(vs, f, buf, sizeof(buf), HUGE), 0);
	view_source_stats(vs, &s1);
	ck_assert_uint_eq(s1.local_bytes + s1.peer_bytes,
			  2 * (uint64_t)HUGE + 2 * MIB + 10 + 7 + 7);
	ck_assert_uint_eq(s1.pfs_bytes, 0);
	view_source_release(vs, f);
	/* big.bin: its last chunk of 17 bytes */
	read_whole(vs, t, "big.bin", 3 * 65536 + 1);
	view_source_stats(vs, &s0);
	ck_assert_uint_eq(s0.local_bytes - s1.local_bytes, big.local);
	ck_assert_uint_eq(s0.peer_bytes - s1.peer_bytes, big.peer);
	ck_assert_uint_eq(s0.pfs_bytes, 0);
	/* no huge.bin on the PFS: still opened and read whole */
	snprintf(path, sizeof(path), "%s/huge.bin", src);
	snprintf(away, sizeof(away), "%s.away", path);
	ck_assert_int_eq(rename(path, away), 0);
	f = open_rel(vs, t, "huge.bin");
	read_range(vs, f, "huge.bin", away, 0, HUGE, 1 << 20);
	view_source_release(vs, f);
	ck_assert_int_eq(rename(away, path), 0);
	view_source_stats(vs, &s1);
	ck_assert_uint_eq(s1.pfs_bytes, 0);
	ck_assert_uint_eq(s1.peer_failures, 0);
	view_source_destroy(vs);
	/* no --chunks: this node's chunks from the PFS, the peer's still
	 * from the peer */
	vs = chunk_sources(NULL, &t);
	read_whole(vs, t, "huge.bin", 128 * 1024);
	view_source_stats(vs, &s0);
	ck_assert_uint_eq(s0.local_bytes, 0);
	ck_assert_uint_eq(s0.peer_bytes, huge.peer);
	ck_assert_uint_eq(s0.pfs_bytes, huge.local);
	ck_assert_uint_eq(s0.ahead_bytes, 0);
	view_source_destroy(vs);
	view_tree_destroy(t);
}
END_TEST

/* A chunk missing here and one the peer refuses: both from the PFS with
 * the right bytes, and only those; the refused one is not asked for
 * again while the file is open, the peer's other chunks still are. The
 * peer gone: its chunks from the PFS, one failure. */
START_TEST(test_source_chunks_missing)
{
	struct view_tree *t = chunk_setup();
	struct view_source *vs = chunk_sources(lchunks, &t);
	char path[PATH_MAX + PARTCHUNK_NAME_MAX], name[PARTCHUNK_NAME_MAX];
	struct view_source_stats s0, s1, s2;
	uint64_t gone_local, gone_peer, pfs;
	struct view_file *f;
	struct placed huge;

	place_chunks("huge.bin", &huge);
	gone_local = first_of(&huge, 0);
	gone_peer = first_of(&huge, 1);
	partchunk_name("huge.bin", 8, gone_local, name);
	snprintf(path, sizeof(path), "%s/%s", lchunks, name);
	ck_assert_int_eq(unlink(path), 0);
	chunk_path(key, version, "huge.bin", gone_peer, path, sizeof(path));
	ck_assert_int_eq(unlink(path), 0);
	pfs = huge.len[gone_local] + huge.len[gone_peer];
	f = open_rel(vs, t, "huge.bin");
	read_range(vs, f, "huge.bin", NULL, 0, HUGE, 128 * 1024);
	view_source_stats(vs, &s0);
	ck_assert_uint_eq(s0.pfs_bytes, pfs);
	ck_assert_uint_eq(s0.local_bytes, huge.local - huge.len[gone_local]);
	ck_assert_uint_eq(s0.peer_bytes, huge.peer - huge.len[gone_peer]);
	ck_assert_uint_eq(s0.peer_failures, 1); /* the refusal */
	/* again on the same open file: the refused chunk is not asked for,
	 * the peer's others are */
	read_range(vs, f, "huge.bin", NULL, 0, HUGE, 300001);
	view_source_stats(vs, &s1);
	ck_assert_uint_eq(s1.pfs_bytes, 2 * pfs);
	ck_assert_uint_eq(s1.peer_bytes, 2 * s0.peer_bytes);
	ck_assert_uint_eq(s1.local_bytes, 2 * s0.local_bytes);
	ck_assert_uint_eq(s1.peer_failures, 1);
	view_source_release(vs, f);
	/* a local chunk of another length: the PFS for it */
	partchunk_name("huge.bin", 8, gone_local, name);
	snprintf(path, sizeof(path), "%s/%s", lchunks, name);
	{
		/* through the fd: as any user, the file is read-only */
		int fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0444);

		ck_assert_int_ge(fd, 0);
		ck_assert_int_eq(ftruncate(fd, (off_t)huge.len[gone_local] - 1),
				 0);
		close(fd);
	}
	f = open_rel(vs, t, "huge.bin");
	read_range(vs, f, "huge.bin", NULL, 0, HUGE, 128 * 1024);
	view_source_release(vs, f);
	view_source_stats(vs, &s2);
	ck_assert_uint_eq(s2.local_bytes - s1.local_bytes, s0.local_bytes);
	ck_assert_uint_eq(s2.pfs_bytes - s1.pfs_bytes, pfs);
	/* the peer gone: one failure, its chunks from the PFS */
	peer_fetch_stop((struct peer_fetch *)peer_fetcher(g.a.peer));
	ck_assert(peerserve_stop(&srv, 5));
	srv.running = false; /* teardown stops it again */
	view_source_stats(vs, &s1);
	read_whole(vs, t, "huge.bin", 128 * 1024);
	view_source_stats(vs, &s2);
	ck_assert_uint_eq(s2.peer_failures, s1.peer_failures + 1);
	ck_assert_uint_eq(s2.peer_bytes, s1.peer_bytes);
	ck_assert_uint_eq(s2.pfs_bytes - s1.pfs_bytes,
			  huge.peer + huge.len[gone_local]);
	view_source_destroy(vs);
	view_tree_destroy(t);
}
END_TEST

struct chunk_reader {
	struct view_source *vs;
	struct view_file *f;
	size_t step;
};

static void *chunk_reader_main(void *arg)
{
	struct chunk_reader *r = arg;

	read_range(r->vs, r->f, "huge.bin", NULL, 0, HUGE, r->step);
	return NULL;
}

/* Readers of one open chunked file at once (FUSE's threads), reading
 * across chunks in steps of their own: every byte right, every one
 * from this node's chunks or the peer's. */
START_TEST(test_source_chunks_threads)
{
	static const size_t steps[] = { 4096, 65536 + 1, 300001, MIB + 3 };
	struct view_tree *t = chunk_setup();
	struct view_source *vs = chunk_sources(lchunks, &t);
	struct chunk_reader r[4];
	struct view_source_stats st;
	struct placed huge;
	pthread_t th[4];
	struct view_file *f;

	place_chunks("huge.bin", &huge);
	f = open_rel(vs, t, "huge.bin");
	for (size_t i = 0; i < 4; i++) {
		r[i] = (struct chunk_reader){ vs, f, steps[i] };
		ck_assert_int_eq(pthread_create(&th[i], NULL, chunk_reader_main,
						&r[i]),
				 0);
	}
	for (size_t i = 0; i < 4; i++)
		pthread_join(th[i], NULL);
	view_source_release(vs, f);
	view_source_stats(vs, &st);
	ck_assert_uint_eq(st.local_bytes, 4 * huge.local);
	ck_assert_uint_eq(st.peer_bytes + st.pfs_bytes, 4 * huge.peer);
	ck_assert_uint_eq(st.peer_failures, 0);
	view_source_destroy(vs);
	view_tree_destroy(t);
}
END_TEST

/* The stats file: written whole, with what the sources counted. */
START_TEST(test_stats_file)
{
	struct view_source_stats s = { 1, 2, 3, 4, 5, 6 };
	char path[PATH_MAX], *text;

	snprintf(path, sizeof(path), "%s/stats.json", scratch);
	ck_assert_int_eq(view_stats_write(path, &s), 0);
	text = slurp(path, 0, 94);
	text[94] = '\0';
	ck_assert_str_eq(text, "{\"local_bytes\":1,\"peer_bytes\":2,"
			       "\"pfs_bytes\":3,\"peer_failures\":4,"
			       "\"pfs_reads\":5,\"ahead_bytes\":6}");
	free(text);
	snprintf(path, sizeof(path), "%s/nowhere/stats.json", scratch);
	ck_assert_int_eq(view_stats_write(path, &s), -1);
	ck_assert_int_eq(errno, ENOENT);
}
END_TEST

/* --- the program's command line -------------------------------------------- */

/* Run the program with ARGV (NULL-terminated after argv[0]), fd 3 open on
 * LISTING (NULL: /dev/null), its stderr into ERR. Its exit status. */
static int run_view(const char *const *argv, const char *listing, char *err,
		    size_t errlen)
{
	int pipefd[2], status;
	ssize_t n;
	pid_t pid;

	ck_assert_int_eq(pipe(pipefd), 0);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		int fd = open(listing ? listing : "/dev/null", O_RDONLY);

		int out = open("/dev/null", O_WRONLY);

		if (fd < 0 || out < 0 || dup2(fd, 3) < 0 ||
		    dup2(pipefd[1], 2) < 0 || dup2(out, 1) < 0)
			_exit(99);
		execv(VIEW_TEST_PROGRAM, (char *const *)argv);
		_exit(98);
	}
	close(pipefd[1]);
	n = read(pipefd[0], err, errlen - 1);
	err[n > 0 ? n : 0] = '\0';
	close(pipefd[0]);
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert(WIFEXITED(status));
	return WEXITSTATUS(status);
}

START_TEST(test_command_line)
{
#define KEY32 "0123456789abcdef0123456789abcdef"
#define BASE                                                                   \
	"iostage-view", "--fuse-fd", "3", "--listing-fd", "3", "--src",        \
	    "/tmp", "--tier", "nvme", "--peer-port", "6826", "--job", "42"
	static const struct {
		const char *argv[24];
		int status;
		const char *error;
	} cases[] = {
		{ { "iostage-view", NULL }, 2, "--fuse-fd is required" },
		{ { "iostage-view", "--fuse-fd", "999", NULL },
		  2,
		  "--fuse-fd '999': not an open file descriptor" },
		{ { "iostage-view", "--fuse-fd", "-1", NULL },
		  2,
		  "not an open file descriptor" },
		{ { "iostage-view", "--listing-fd", "3x", NULL },
		  2,
		  "--listing-fd '3x'" },
		{ { BASE, "--plan", "a=1", "--self", "a", NULL },
		  2,
		  "--key is required" },
		{ { BASE, "--plan", "a=1", "--self", "a", "--key", "xyz",
		    NULL },
		  2,
		  "--key 'xyz': not a cache key" },
		{ { BASE, "--plan", "a=0", "--self", "a", "--key", KEY32,
		    NULL },
		  2,
		  "--plan: spread plan" },
		{ { BASE, "--plan", "a=1,b=2", "--self", "c", "--key", KEY32,
		    NULL },
		  2,
		  "--self 'c': not a node of the plan" },
		{ { BASE, "--plan", "a=1", "--self", "a", "--key", KEY32,
		    "--peer-port", "0", NULL },
		  2,
		  "--peer-port '0'" },
		{ { BASE, "--plan", "a=1", "--self", "a", "--key", KEY32,
		    "--tier", "../x", NULL },
		  2,
		  "--tier '../x': not a tier name" },
		{ { "iostage-view",
		    "--fuse-fd",
		    "3",
		    "--listing-fd",
		    "3",
		    "--src",
		    "rel",
		    "--tier",
		    "nvme",
		    "--peer-port",
		    "1",
		    "--job",
		    "1",
		    "--plan",
		    "a=1",
		    "--self",
		    "a",
		    "--key",
		    KEY32,
		    NULL },
		  2,
		  "--src 'rel': not an absolute path" },
		{ { "iostage-view", "--fuse-fd", "3", "--listing-fd", "3",
		    "--src", "/tmp", "--tier", "nvme", "--peer-port", "1",
		    "--plan", "a=1", "--self", "a", "--key", KEY32, NULL },
		  2,
		  "--job is required" },
		{ { BASE, "--plan", "a=1", "--self", "a", "--key", KEY32,
		    "--job", "0", NULL },
		  2,
		  "--job '0': not a job id" },
		{ { BASE, "--plan", "a=1", "--self", "a", "--key", KEY32,
		    "--job", "4294967296", NULL },
		  2,
		  "--job '4294967296'" },
		{ { BASE, "--plan", "a=1", "--self", "a", "--key", KEY32,
		    "extra", NULL },
		  2,
		  "unexpected argument 'extra'" },
		/* the listing read: empty */
		{ { BASE, "--plan", "a=1", "--self", "a", "--key", KEY32,
		    NULL },
		  1,
		  "--listing-fd 3: manifest" },
		{ { "iostage-view", "--help", NULL }, 0, "" },
	};
	char err[2048];

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		int st = run_view(cases[i].argv, NULL, err, sizeof(err));

		ck_assert_msg(st == cases[i].status, "case %zu: exit %d: %s", i,
			      st, err);
		ck_assert_msg(strstr(err, cases[i].error), "case %zu: %s", i,
			      err);
		/* one line */
		ck_assert_msg(!cases[i].status ||
				  strchr(err, '\n') == err + strlen(err) - 1,
			      "case %zu: %s", i, err);
	}
#undef BASE
#undef KEY32
}
END_TEST

/* A listing whose top is a file: refused with one line. */
START_TEST(test_listing_file_top)
{
	const char *const argv[] = { "iostage-view",
				     "--fuse-fd",
				     "3",
				     "--listing-fd",
				     "3",
				     "--src",
				     "/tmp",
				     "--tier",
				     "nvme",
				     "--peer-port",
				     "1",
				     "--job",
				     "42",
				     "--plan",
				     "a=1",
				     "--self",
				     "a",
				     "--key",
				     "0123456789abcdef0123456789abcdef",
				     NULL };
	struct manifest *m = manifest_create();
	char path[PATH_MAX], err[1024];
	int fd;

	add(m, "", MANIFEST_FILE, 10);
	snprintf(path, sizeof(path), "%s/listing", scratch);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(manifest_write(m, fd), 0);
	close(fd);
	manifest_destroy(m);
	ck_assert_int_eq(run_view(argv, path, err, sizeof(err)), 1);
	ck_assert_str_eq(err, "iostage-view: --listing-fd 3: listing: '': the "
			      "dataset is one file: a spread dataset is a "
			      "directory\n");
}
END_TEST

/* --chunks names this node's chunks directory: one it cannot open is
 * refused with one line, as --local's. */
START_TEST(test_chunks_option)
{
	const char *const argv[] = { "iostage-view",
				     "--fuse-fd",
				     "3",
				     "--listing-fd",
				     "3",
				     "--src",
				     "/tmp",
				     "--tier",
				     "nvme",
				     "--peer-port",
				     "1",
				     "--job",
				     "42",
				     "--plan",
				     "a=1",
				     "--self",
				     "a",
				     "--key",
				     "0123456789abcdef0123456789abcdef",
				     "--chunks",
				     "/nonexistent/chunks",
				     NULL };
	struct manifest *m = manifest_create();
	char path[PATH_MAX], err[1024];
	int fd;

	add(m, "", MANIFEST_DIR, 0);
	snprintf(path, sizeof(path), "%s/listing", scratch);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(manifest_write(m, fd), 0);
	close(fd);
	manifest_destroy(m);
	ck_assert_int_eq(run_view(argv, path, err, sizeof(err)), 1);
	ck_assert_str_eq(err, "iostage-view: --chunks /nonexistent/chunks: No "
			      "such file or directory\n");
}
END_TEST

/* --- the program on a real mount (root) ----------------------------------- */

static char mt[64];        /* the test's directory */
static char mt_src[128];   /* the "PFS" dataset */
static char mt_part[128];  /* this node's part */
static char mt_mnt[128];   /* the mount point */
static char mt_stats[128]; /* the --stats file */
static struct spread_plan mt_plan;
static struct manifest *mt_list; /* the listing */
static unsigned mt_dead_port;    /* nothing listens there */
static const char *mt_skipped;   /* one file of ours left out of the part */

#define MT_PLAN "me=100,127.0.0.1=100,nosuch.invalid=100"
#define MT_FILES 40

static void mt_put(const char *rel, size_t size, mode_t mode)
{
	char path[PATH_MAX], *b = malloc(size + 1);
	int fd;

	ck_assert_ptr_nonnull(b);
	for (size_t i = 0; i < size; i++)
		b[i] = (char)(i * 7 + size + i / 253);
	snprintf(path, sizeof(path), "%s/%s", mt_src, rel);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, b, size), (ssize_t)size);
	ck_assert_int_eq(fchmod(fd, mode), 0);
	close(fd);
	free(b);
}

/* The part: every directory and symlink, and the files the plan gives
 * "me" but one (which the PFS then serves). */
static void mt_make_part(void)
{
	char from[PATH_MAX], to[PATH_MAX], target[256];
	size_t n = manifest_count(mt_list);

	for (size_t i = 1; i < n; i++) {
		const struct manifest_entry *e = manifest_get(mt_list, i);
		ssize_t l;

		snprintf(from, sizeof(from), "%s/%s", mt_src, e->path);
		snprintf(to, sizeof(to), "%s/%s", mt_part, e->path);
		if (e->type == MANIFEST_DIR) {
			ck_assert_int_eq(mkdir(to, 0755), 0);
		} else if (e->type == MANIFEST_SYMLINK) {
			l = readlink(from, target, sizeof(target) - 1);
			ck_assert_int_gt(l, 0);
			target[l] = '\0';
			ck_assert_int_eq(symlink(target, to), 0);
		} else if (spread_owner(&mt_plan, e->path, e->path_len) == 0) {
			char *b;
			int fd;

			if (!mt_skipped) {
				mt_skipped = e->path;
				continue;
			}
			b = slurp(from, 0, e->size);
			fd = open(to, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC,
				  0444);
			ck_assert_int_ge(fd, 0);
			ck_assert_int_eq(write(fd, b, e->size),
					 (ssize_t)e->size);
			close(fd);
			free(b);
		}
	}
}

static void mt_run_begin(void)
{
	view_fixture_run_begin("check_view");
}

static void mt_setup(void)
{
	char rel[256], err[256];
	unsigned owners[3] = { 0 };

	view_fixture_mkdtemp(mt, sizeof(mt));
	snprintf(mt_src, sizeof(mt_src), "%s/pfs", mt);
	snprintf(mt_part, sizeof(mt_part), "%s/part", mt);
	snprintf(mt_mnt, sizeof(mt_mnt), "%s/mnt", mt);
	snprintf(mt_stats, sizeof(mt_stats), "%s/stats/view.json", mt);
	ck_assert_int_eq(mkdir(mt_src, 0755), 0);
	ck_assert_int_eq(mkdir(mt_part, 0755), 0);
	ck_assert_int_eq(mkdir(mt_mnt, 0755), 0);
	snprintf(rel, sizeof(rel), "%s/stats", mt);
	ck_assert_int_eq(mkdir(rel, 0755), 0);
	ck_assert_int_eq(chown(rel, VIEW_FIXTURE_USER, VIEW_FIXTURE_USER), 0);
	/* the dataset: files at the top and two levels down, a large one,
	 * an empty one, an executable, a symlink */
	snprintf(rel, sizeof(rel), "%s/sub", mt_src);
	ck_assert_int_eq(mkdir(rel, 0755), 0);
	snprintf(rel, sizeof(rel), "%s/sub/deep", mt_src);
	ck_assert_int_eq(mkdir(rel, 0751), 0);
	for (int i = 0; i < MT_FILES; i++) {
		snprintf(rel, sizeof(rel), "%sf%02d",
			 i % 3 == 0   ? ""
			 : i % 3 == 1 ? "sub/"
				      : "sub/deep/",
			 i);
		mt_put(rel, (size_t)i * 1237 + (i % 5 == 0 ? 300000 : 0),
		       i % 4 == 0 ? 0755 : 0644);
	}
	mt_put("big.bin", 5 * 1024 * 1024 + 3, 0644);
	mt_put("empty", 0, 0644);
	snprintf(rel, sizeof(rel), "%s/sub/link", mt_src);
	ck_assert_int_eq(symlink("../f00", rel), 0);
	mt_list = view_fixture_walk(mt_src);
	ck_assert_int_eq(spread_plan_parse(MT_PLAN, &mt_plan, err, sizeof(err)),
			 0);
	for (size_t i = 0; i < manifest_count(mt_list); i++) {
		const struct manifest_entry *e = manifest_get(mt_list, i);

		if (e->type == MANIFEST_FILE)
			owners[spread_owner(&mt_plan, e->path, e->path_len)]++;
	}
	/* every kind of source has files */
	ck_assert_uint_ge(owners[0], 3);
	ck_assert_uint_ge(owners[1], 3);
	ck_assert_uint_ge(owners[2], 3);
	mt_make_part();
	mt_dead_port = view_fixture_dead_port();
}

static void mt_teardown(void)
{
	char ov[PATH_MAX], err[256];

	snprintf(ov, sizeof(ov), "%s/ov", mt);
	umount2(ov, MNT_DETACH);
	umount2(mt_mnt, MNT_DETACH);
	manifest_destroy(mt_list);
	mt_list = NULL;
	mt_skipped = NULL;
	tmp_remove(mt, err, sizeof(err));
}

/* Mount, start the program on it; its pid (view_fixture_start). */
static pid_t mt_start(void)
{
	char listing[PATH_MAX];
	const struct view_fixture v = {
		.mnt = mt_mnt,
		.listing = listing,
		.list = mt_list,
		.src = mt_src,
		.plan = MT_PLAN,
		.key = "0123456789abcdef0123456789abcdef",
		.local = mt_part,
		.stats = mt_stats,
		.peer_port = mt_dead_port,
	};

	snprintf(listing, sizeof(listing), "%s/listing", mt);
	return view_fixture_start(&v);
}

/* Every path under the mount's DIR (relative, "" the top), counted
 * against the listing. */
static size_t mt_walk(const char *rel)
{
	char path[PATH_MAX + 256], sub[PATH_MAX];
	struct dirent *d;
	size_t seen = 1;
	DIR *dir;

	ck_assert_ptr_nonnull(manifest_find(mt_list, rel, strlen(rel)));
	snprintf(path, sizeof(path), "%s%s%s", mt_mnt, *rel ? "/" : "", rel);
	dir = opendir(path);
	ck_assert_msg(dir != NULL, "%s: %s", path, strerror(errno));
	while ((d = readdir(dir))) {
		const struct manifest_entry *e;

		if (!strcmp(d->d_name, ".") || !strcmp(d->d_name, ".."))
			continue;
		snprintf(sub, sizeof(sub), "%s%s%s", rel, *rel ? "/" : "",
			 d->d_name);
		e = manifest_find(mt_list, sub, strlen(sub));
		ck_assert_msg(e != NULL, "'%s' is not in the listing", sub);
		if (e->type == MANIFEST_DIR) {
			ck_assert_int_eq(d->d_type, DT_DIR);
			seen += mt_walk(sub);
		} else {
			ck_assert_int_eq(d->d_type, e->type == MANIFEST_FILE
							? DT_REG
							: DT_LNK);
			seen++;
		}
	}
	closedir(dir);
	return seen;
}

/* REL through the mount by read(2), pread(2) and mmap(2), each equal to
 * the PFS's bytes. */
static void mt_check_file(const struct manifest_entry *e)
{
	char path[PATH_MAX], src_path[PATH_MAX], *want, *got;
	size_t size = (size_t)e->size;
	size_t done = 0;
	ssize_t n;
	void *map;
	int fd;

	snprintf(path, sizeof(path), "%s/%s", mt_mnt, e->path);
	snprintf(src_path, sizeof(src_path), "%s/%s", mt_src, e->path);
	want = slurp(src_path, 0, size);
	got = malloc(size + 1);
	ck_assert_ptr_nonnull(got);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	ck_assert_msg(fd >= 0, "%s: %s", e->path, strerror(errno));
	while ((n = read(fd, got + done, size + 1 - done)) > 0)
		done += (size_t)n;
	ck_assert_msg(n == 0, "%s: %s", e->path, strerror(errno));
	ck_assert_uint_eq(done, size);
	ck_assert_msg(!memcmp(got, want, size), "%s: read differs", e->path);
	if (size > 10) {
		size_t off = size / 3, len = size / 2;

		memset(got, 0, size);
		ck_assert_int_eq(pread(fd, got, len, (off_t)off), (ssize_t)len);
		ck_assert_msg(!memcmp(got, want + off, len),
			      "%s: pread differs", e->path);
		map = mmap(NULL, size, PROT_READ, MAP_SHARED, fd, 0);
		ck_assert_msg(map != MAP_FAILED, "%s: mmap: %s", e->path,
			      strerror(errno));
		ck_assert_msg(!memcmp(map, want, size), "%s: mmap differs",
			      e->path);
		munmap(map, size);
	}
	close(fd);
	free(want);
	free(got);
}

START_TEST(test_mount)
{
	uint64_t ours = 0, pfs = 0;
	char path[PATH_MAX], text[512];
	struct timespec t0, t1;
	struct stat st;
	pid_t pid = mt_start();
	int fd;
	ssize_t n;

	/* the whole tree, as listed */
	ck_assert_uint_eq(mt_walk(""), manifest_count(mt_list));
	/* attributes, from the listing */
	for (size_t i = 0; i < manifest_count(mt_list); i++) {
		const struct manifest_entry *e = manifest_get(mt_list, i);

		snprintf(path, sizeof(path), "%s/%s", mt_mnt, e->path);
		ck_assert_msg(lstat(path, &st) == 0, "%s: %s", e->path,
			      strerror(errno));
		ck_assert_uint_eq(st.st_uid, VIEW_FIXTURE_USER);
		ck_assert_uint_eq(st.st_gid, VIEW_FIXTURE_USER);
		if (e->type == MANIFEST_SYMLINK) {
			ck_assert(S_ISLNK(st.st_mode));
			continue;
		}
		ck_assert_msg((st.st_mode & 07777) == (e->mode & 0555),
			      "%s: mode %o, listed %o", e->path,
			      st.st_mode & 07777, e->mode);
		ck_assert_int_eq(st.st_mtim.tv_sec * 1000000000LL +
				     st.st_mtim.tv_nsec,
				 e->mtime_ns);
		if (e->type == MANIFEST_DIR) {
			ck_assert(S_ISDIR(st.st_mode));
			ck_assert_uint_ge(st.st_nlink, 2);
			continue;
		}
		ck_assert(S_ISREG(st.st_mode));
		ck_assert_uint_eq(st.st_nlink, 1);
		ck_assert_uint_eq(st.st_size, e->size);
	}
	/* the link, not followed by the view */
	snprintf(path, sizeof(path), "%s/sub/link", mt_mnt);
	n = readlink(path, text, sizeof(text));
	ck_assert_int_eq(n, 6);
	ck_assert(!memcmp(text, "../f00", 6));
	/* every file's bytes: ours from the part (one from the PFS), the
	 * two other nodes' (one refuses connections, one has no address)
	 * from the PFS, and no error */
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (size_t i = 0; i < manifest_count(mt_list); i++) {
		const struct manifest_entry *e = manifest_get(mt_list, i);

		if (e->type != MANIFEST_FILE)
			continue;
		mt_check_file(e);
		if (spread_owner(&mt_plan, e->path, e->path_len) == 0 &&
		    strcmp(e->path, mt_skipped))
			ours += e->size;
		else
			pfs += e->size;
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	/* a node that fails is left alone: no timeout per read */
	ck_assert_int_lt(t1.tv_sec - t0.tv_sec, 20);
	/* writes refused */
	snprintf(path, sizeof(path), "%s/f00", mt_mnt);
	ck_assert_int_eq(open(path, O_WRONLY | O_CLOEXEC), -1);
	ck_assert_int_eq(errno, EROFS);
	ck_assert_int_eq(open(path, O_RDWR | O_CLOEXEC), -1);
	ck_assert_int_eq(errno, EROFS);
	ck_assert_int_eq(chmod(path, 0777), -1);
	ck_assert_int_eq(errno, EROFS);
	ck_assert_int_eq(unlink(path), -1);
	ck_assert_int_eq(errno, EROFS);
	ck_assert_int_eq(truncate(path, 0), -1);
	ck_assert_int_eq(errno, EROFS);
	snprintf(path, sizeof(path), "%s/new", mt_mnt);
	ck_assert_int_eq(open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0644), -1);
	ck_assert_int_eq(errno, EROFS);
	ck_assert_int_eq(mkdir(path, 0755), -1);
	ck_assert_int_eq(errno, EROFS);
	/* the end: unmounted, the program exits 0 and writes its counts */
	ck_assert_int_eq(umount2(mt_mnt, MNT_DETACH), 0);
	ck_assert_int_eq(view_fixture_wait(pid), 0);
	fd = open(mt_stats, O_RDONLY | O_CLOEXEC);
	ck_assert_int_ge(fd, 0);
	n = read(fd, text, sizeof(text) - 1);
	ck_assert_int_gt(n, 0);
	text[n] = '\0';
	close(fd);
	/* Every byte of ours was read once through the view (the page
	 * cache serves the pread and mmap); the rest from the PFS. */
	ck_assert_msg(view_fixture_figure(text, "local_bytes") ==
			  (long long)ours,
		      "%s (ours %llu)", text, (unsigned long long)ours);
	ck_assert_msg(view_fixture_figure(text, "pfs_bytes") == (long long)pfs,
		      "%s (pfs %llu)", text, (unsigned long long)pfs);
	ck_assert_msg(view_fixture_figure(text, "peer_bytes") == 0, "%s", text);
	ck_assert_msg(view_fixture_figure(text, "pfs_reads") > 0, "%s", text);
	/* each dead node tried about once, not once per read */
	ck_assert_msg(view_fixture_figure(text, "peer_failures") >= 2 &&
			  view_fixture_figure(text, "peer_failures") <= 6,
		      "%s", text);
}
END_TEST

/* As iostaged shows it to the job: an overlay of the part over the view.
 * The part's files come from the part without the view (local_bytes
 * stays 0), the others through it; the tree is the whole dataset. */
START_TEST(test_overlay)
{
	char ov[128], opts[512], path[PATH_MAX], text[512];
	uint64_t pfs = 0;
	pid_t pid = mt_start();
	ssize_t n;
	int fd;

	snprintf(ov, sizeof(ov), "%s/ov", mt);
	ck_assert_int_eq(mkdir(ov, 0755), 0);
	snprintf(opts, sizeof(opts), "lowerdir=%s:%s", mt_part, mt_mnt);
	ck_assert_msg(mount("overlay", ov, "overlay", MS_RDONLY, opts) == 0,
		      "overlay: %s", strerror(errno));
	for (size_t i = 0; i < manifest_count(mt_list); i++) {
		const struct manifest_entry *e = manifest_get(mt_list, i);
		char want[PATH_MAX], *a, *b;
		struct stat st;

		snprintf(path, sizeof(path), "%s/%s", ov, e->path);
		ck_assert_msg(lstat(path, &st) == 0, "%s: %s", e->path,
			      strerror(errno));
		if (e->type != MANIFEST_FILE)
			continue;
		ck_assert_uint_eq(st.st_size, e->size);
		snprintf(want, sizeof(want), "%s/%s", mt_src, e->path);
		a = slurp(want, 0, e->size);
		b = slurp(path, 0, e->size);
		ck_assert_msg(!memcmp(a, b, e->size), "%s differs", e->path);
		free(a);
		free(b);
		if (spread_owner(&mt_plan, e->path, e->path_len) != 0 ||
		    !strcmp(e->path, mt_skipped))
			pfs += e->size;
	}
	ck_assert_int_eq(umount2(ov, MNT_DETACH), 0);
	ck_assert_int_eq(umount2(mt_mnt, MNT_DETACH), 0);
	ck_assert_int_eq(view_fixture_wait(pid), 0);
	fd = open(mt_stats, O_RDONLY | O_CLOEXEC);
	ck_assert_int_ge(fd, 0);
	n = read(fd, text, sizeof(text) - 1);
	ck_assert_int_gt(n, 0);
	text[n] = '\0';
	close(fd);
	ck_assert_msg(view_fixture_figure(text, "local_bytes") == 0, "%s",
		      text);
	ck_assert_msg(view_fixture_figure(text, "pfs_bytes") == (long long)pfs,
		      "%s", text);
}
END_TEST

/* SIGTERM ends the program too, with 0; the mount then answers ENOTCONN
 * until iostaged takes it down. */
START_TEST(test_sigterm)
{
	char path[PATH_MAX];
	struct stat st;
	pid_t pid = mt_start();

	snprintf(path, sizeof(path), "%s/big.bin", mt_mnt);
	ck_assert_int_eq(stat(path, &st), 0);
	ck_assert_int_eq(kill(pid, SIGTERM), 0);
	ck_assert_int_eq(view_fixture_wait(pid), 0);
	/* a name not looked up before (the kernel keeps those it has) */
	snprintf(path, sizeof(path), "%s/empty", mt_mnt);
	ck_assert_int_eq(stat(path, &st), -1);
	ck_assert_int_eq(errno, ENOTCONN);
}
END_TEST

/* The kernel's readahead on a served view raised (iostaged does it once
 * the view is ready): the mount's bdi says so; a bad fd is refused with
 * one line. */
START_TEST(test_fusemount_readahead)
{
	char path[PATH_MAX], err[256], text[16] = "";
	struct stat st;
	pid_t pid = mt_start();
	int fd = open(mt_mnt, O_PATH | O_DIRECTORY | O_CLOEXEC), bfd;

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(fstat(fd, &st), 0);
	snprintf(path, sizeof(path), "/sys/class/bdi/%u:%u/read_ahead_kb",
		 major(st.st_dev), minor(st.st_dev));
	ck_assert_msg(fusemount_readahead(fd, 1024, err, sizeof(err)) == 0,
		      "%s", err);
	bfd = open(path, O_RDONLY | O_CLOEXEC);
	ck_assert_int_ge(bfd, 0);
	ck_assert_int_gt(read(bfd, text, sizeof(text) - 1), 0);
	close(bfd);
	ck_assert_str_eq(text, "1024\n");
	close(fd);
	ck_assert_int_eq(fusemount_readahead(-1, 1024, err, sizeof(err)), -1);
	ck_assert_int_eq(errno, EBADF);
	ck_assert_msg(strstr(err, "fd -1"), "%s", err);
	ck_assert_int_eq(kill(pid, SIGTERM), 0);
	ck_assert_int_eq(view_fixture_wait(pid), 0);
}
END_TEST

/* fusemount_at refuses what is not a directory, with one line. */
START_TEST(test_fusemount_refused)
{
	char path[PATH_MAX], err[256];
	int fd;

	snprintf(path, sizeof(path), "%s/f00", mt_src);
	fd = open(path, O_PATH | O_CLOEXEC);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(fusemount_at(fd, 0, 0, err, sizeof(err)), -1);
	ck_assert_int_eq(errno, ENOTDIR);
	ck_assert_msg(strstr(err, "not a directory"), "%s", err);
	close(fd);
	ck_assert_int_eq(fusemount_at(-1, 0, 0, err, sizeof(err)), -1);
	ck_assert_int_eq(errno, EBADF);
}
END_TEST

static Suite *view_suite(void)
{
	Suite *s = suite_create("view");
	TCase *tt = tcase_create("tree");
	TCase *ts = tcase_create("source");
	TCase *tb = tcase_create("bound");
	TCase *tm = tcase_create("mount");

	tcase_add_test(tt, test_tree);
	tcase_add_test(tt, test_tree_refused);
	suite_add_tcase(s, tt);
	tcase_add_checked_fixture(ts, setup, teardown);
	tcase_set_timeout(ts, 60);
	tcase_add_test(ts, test_source_peer);
	tcase_add_test(ts, test_source_part_for_job);
	tcase_add_test(ts, test_source_chunks);
	tcase_add_test(ts, test_source_chunks_missing);
	tcase_add_test(ts, test_source_chunks_threads);
	tcase_add_test(ts, test_stats_file);
	tcase_add_test(ts, test_command_line);
	tcase_add_test(ts, test_listing_file_top);
	tcase_add_test(ts, test_chunks_option);
	suite_add_tcase(s, ts);
	tcase_add_checked_fixture(tb, setup_two_sessions, teardown);
	tcase_set_timeout(tb, 60);
	tcase_add_test(tb, test_source_bounded);
	suite_add_tcase(s, tb);
	tcase_add_unchecked_fixture(tm, mt_run_begin, view_fixture_run_end);
	tcase_add_checked_fixture(tm, mt_setup, mt_teardown);
	tcase_set_timeout(tm, 120);
	/* a root without FUSE (a container): said, not failed */
	if (geteuid() == 0 && access("/dev/fuse", R_OK | W_OK) < 0) {
		printf("SKIP test_mount, test_overlay, test_sigterm, "
		       "test_fusemount_refused: no /dev/fuse\n");
	} else {
		tcase_add_root_test(tm, test_mount);
		tcase_add_root_test(tm, test_overlay);
		tcase_add_root_test(tm, test_sigterm);
		tcase_add_root_test(tm, test_fusemount_refused);
		tcase_add_root_test(tm, test_fusemount_readahead);
	}
	suite_add_tcase(s, tm);
	return s;
}

int main(void)
{
	return check_run(view_suite());
}
