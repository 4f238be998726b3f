/* peerfetch_fixture.h - a node serving fetch sessions, for
 * tests/unit/check_peerfetch.c (the sessions) and check_worker_peer.c
 * (the stage worker filling from it).
 *
 * The node is an agent over temporary directories (agent_fixture.h)
 * whose cache holds a version built by the real copy engine from a small
 * tree (a large file, an empty one, a subdirectory); its channel
 * (daemon/cluster/peer.c) is served by a peerserve of the test's own on a
 * free port of 127.0.0.1. Credentials are a stand-in for munged
 * ("MUNGE:UID:" and the payload in hex, UID the test chooses: cred_uid),
 * given to the client as its encoder and to the channel as its decoder.
 * Runs as root and as any user: the entries are the test's own uid's,
 * "another user" is another uid. A tier t1 is Shared=yes (never served).
 *
 * Everything here is static inline; a failing step fails the test.
 */
#ifndef IOSTAGE_TESTS_PEERFETCH_FIXTURE_H
#define IOSTAGE_TESTS_PEERFETCH_FIXTURE_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <check.h>

#include "common/fs/copyengine.h"
#include "common/fs/manifest.h"
#include "common/fs/partchunks.h"
#include "common/net/peerfetch.h"
#include "common/net/peernet.h"
#include "common/net/peerserve.h"
#include "common/sched/cachekey.h"
#include "daemon/cluster/peer.h"
#include "daemon/cluster/peer_fetch.h"
#include "tests/unit/agent_fixture.h"

#define BIG (3 * 1024 * 1024 + 17) /* more than a few socket buffers */

static struct ag g;
static struct peerserve srv;
static unsigned port;
static char src[512]; /* the dataset */
static char key[CACHE_KEY_LEN + 1];
static unsigned version;
static char data[512];    /* the version's data */
static char scratch[512]; /* where files are fetched to */
static uid_t cred_uid;    /* whom the stand-in's credentials name */

/* --- the stand-in for munged ---------------------------------------------- */

/* "MUNGE:UID:" and the payload in hex (it goes in a JSON string, as
 * munged's base64 does). */
static inline char *standin_encode(const char *socket, const void *payload,
				   size_t len, char *err, size_t errlen)
{
	const unsigned char *p = payload;
	char *c = malloc(32 + 2 * len);
	int at;

	(void)socket;
	(void)err;
	(void)errlen;
	ck_assert_ptr_nonnull(c);
	at = sprintf(c, "MUNGE:%u:", (unsigned)cred_uid);
	for (size_t i = 0; i < len; i++)
		at += sprintf(c + at, "%02x", p[i]);
	return c;
}

static inline enum mauth_status
standin_decode(const char *socket, const char *cred, char **ret_payload,
	       size_t *ret_len, uid_t *ret_uid, gid_t *ret_gid, char *err,
	       size_t errlen)
{
	unsigned uid;
	int at = 0;

	(void)socket;
	if (sscanf(cred, "MUNGE:%u:%n", &uid, &at) != 1 || !at) {
		snprintf(err, errlen, "credential invalid");
		return MAUTH_INVALID;
	}
	*ret_len = strlen(cred + at) / 2;
	*ret_payload = calloc(1, *ret_len + 1);
	for (size_t i = 0; i < *ret_len; i++) {
		unsigned b;

		if (sscanf(cred + at + 2 * i, "%2x", &b) != 1) {
			free(*ret_payload);
			snprintf(err, errlen, "credential invalid");
			return MAUTH_INVALID;
		}
		(*ret_payload)[i] = (char)b;
	}
	*ret_uid = uid;
	*ret_gid = uid;
	return MAUTH_OK;
}

/* --- the node ------------------------------------------------------------------ */

static inline void put_file(const char *rel, size_t size, unsigned seed)
{
	char path[PATH_MAX];
	char *buf = malloc(size + 1);
	int fd;

	ck_assert_ptr_nonnull(buf);
	for (size_t i = 0; i < size; i++)
		buf[i] = (char)(seed * 31 + i * 7 + i / 251);
	snprintf(path, sizeof(path), "%s/%s", src, rel);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, buf, size), (ssize_t)size);
	close(fd);
	free(buf);
}

/* SRC: a small tree with a large file, an empty one, a subdirectory. */
static inline void make_src(void)
{
	char path[PATH_MAX];

	snprintf(src, sizeof(src), "%s/pfs/ds", g.root);
	snprintf(path, sizeof(path), "%s/pfs", g.root);
	ck_assert_int_eq(mkdir(path, 0755), 0);
	ck_assert_int_eq(mkdir(src, 0755), 0);
	snprintf(path, sizeof(path), "%s/sub", src);
	ck_assert_int_eq(mkdir(path, 0755), 0);
	put_file("a.txt", 1000, 1);
	put_file("big.bin", BIG, 2);
	put_file("empty", 0, 3);
	put_file("sub/b.txt", 5000, 4);
}

/* Build and publish the next version of SRC's entry on tier 0 (this
 * uid's, or with PUBLIC the public one: its data then the cache owner's,
 * no write bits) as the stager and its worker would: the real copy
 * engine into the build directory; with PART, as a spread dataset's
 * part (its key cachekey_part of the entry's, marked in meta.json; the
 * whole tree in it, which is a part for a plan of one node). A user's
 * entry is OWNER's (the test's uid; root may name another: its data is
 * then chowned to OWNER, as that user's worker would have written it).
 * Its key into K. */
static uid_t chown_to;

static inline int chown_one(const char *path, const struct stat *st, int flag,
			    struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return lchown(path, chown_to, chown_to);
}

static inline unsigned build_version_owned(uid_t owner, bool public, bool part,
					   char *k)
{
	struct copyengine_opts o = { .private_top = !public,
				     .read_only = true,
				     .public_only = public };
	const struct copyengine_totals *t;
	char err[CONF_ERR_MAX];
	struct cache_version cur;
	struct cache_lock *lk;
	struct cache_build b;
	struct copyengine *ce;
	struct manifest *m;
	struct cache_meta meta;
	unsigned next;
	int bfd;

	if (public)
		cache_key_public(src, k);
	else
		cache_key(owner, src, k);
	if (part)
		cachekey_part(k, k);
	ck_assert_int_eq(cache_lock_acquire(g.a.cache, 0, k, NULL, NULL, &lk,
					    err, sizeof(err)),
			 0);
	cache_current(g.a.cache, 0, k, &cur, &next);
	ck_assert_msg(cache_build_begin(g.a.cache, 0, k, next,
					public ? geteuid() : owner,
					public ? getegid() : owner, &b, err,
					sizeof(err)) == 0,
		      "cache_build_begin: %s", err);
	ck_assert_msg(copyengine_walk(src, &o, &ce, err, sizeof(err)) == 0,
		      "walk: %s", err);
	bfd = open(b.path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	ck_assert_int_ge(bfd, 0);
	ck_assert_msg(copyengine_copy(ce, bfd, "data", NULL, err,
				      sizeof(err)) == 0,
		      "copy: %s", err);
	close(bfd);
	if (!public && owner != geteuid()) {
		char path[PATH_MAX];

		chown_to = owner;
		snprintf(path, sizeof(path), "%s/data", b.path);
		ck_assert_int_eq(nftw(path, chown_one, 16, FTW_PHYS), 0);
	}
	ck_assert_int_eq(copyengine_manifest(ce, &m), 0);
	ck_assert_int_eq(manifest_write(m, b.manifest_fd), 0);
	manifest_destroy(m);
	t = copyengine_totals(ce);
	meta = (struct cache_meta){ .src = src,
				    .uid = public ? 0 : owner,
				    .user = public ? CACHE_PUBLIC_USER
						   : "tester",
				    .public = public,
				    .bytes = t->total_bytes,
				    .files = t->total_files,
				    .verify = PROFILE_VERIFY_STAT,
				    .verified_ns = cache_now_ns(),
				    .part = part };
	copyengine_destroy(ce);
	ck_assert_msg(cache_build_publish(&b, &meta, err, sizeof(err)) == 0,
		      "cache_build_publish: %s", err);
	cache_lock_release(lk);
	return b.version;
}

static inline unsigned build_version_of(bool public, char *k)
{
	return build_version_owned(geteuid(), public, false, k);
}

/* The user's version of SRC, its key in KEY. */
static inline unsigned build_version(void)
{
	return build_version_of(false, key);
}

static inline cJSON *serve(int fd, void *arg)
{
	return peer_serve_fd(arg, fd);
}

/* The channel, served on a free port of 127.0.0.1. */
static inline void start_channel(unsigned sessions, uint64_t rate)
{
	struct sockaddr_in sin;
	socklen_t sl = sizeof(sin);
	char err[256];
	int fd;

	g.conf.peer_fetch_sessions = sessions;
	g.conf.peer_fetch_rate = rate;
	g.a.peer = peer_create(&g.a);
	ck_assert_ptr_nonnull(g.a.peer);
	peer_set_decoder(g.a.peer, standin_decode);
	fd = peernet_listen("127.0.0.1", 0, err, sizeof(err));
	ck_assert_msg(fd >= 0, "listen: %s", err);
	ck_assert_int_eq(getsockname(fd, (struct sockaddr *)&sin, &sl), 0);
	port = ntohs(sin.sin_port);
	srv = (struct peerserve){ .conn_max = 32,
				  .send_ms = 5000,
				  .busy_fmt = "busy (%u)",
				  .nothread_error = "no thread",
				  .serve = serve,
				  .arg = g.a.peer };
	ck_assert_msg(peerserve_start(&srv, fd, err, sizeof(err)) == 0,
		      "peerserve_start: %s", err);
}

static inline void setup_common(unsigned sessions, uint64_t rate)
{
	ag_init(&g, "n1", 2);
	/* a Shared=yes tier is never served */
	g.conf.tiers[1].shared = true;
	make_src();
	version = build_version();
	ck_assert_int_eq(cache_version_path(g.a.cache, 0, key, version, true,
					    data, sizeof(data)),
			 0);
	snprintf(scratch, sizeof(scratch), "%s/scratch", g.root);
	ck_assert_int_eq(mkdir(scratch, 0700), 0);
	cred_uid = geteuid();
	start_channel(sessions, rate);
}

static inline void setup(void)
{
	setup_common(8, 0);
}

static inline void setup_two_sessions(void)
{
	setup_common(2, 0);
}

static inline void teardown(void)
{
	peer_fetch_stop((struct peer_fetch *)peer_fetcher(g.a.peer));
	ck_assert(peerserve_stop(&srv, 5));
	peer_destroy(g.a.peer);
	g.a.peer = NULL;
	ag_fini(&g);
}

/* --- helpers ---------------------------------------------------------------------- */

static inline int open_session(const char *tier, const char *k, unsigned v,
			       struct peerfetch **ret, char *err, size_t errlen)
{
	return peerfetch_open_by(standin_encode, 0, "127.0.0.1", port, NULL,
				 tier, k, v, 5000, ret, err, errlen);
}

static inline struct peerfetch *must_open(void)
{
	char err[1024];
	struct peerfetch *pf = NULL;

	ck_assert_msg(open_session("t0", key, version, &pf, err, sizeof(err)) ==
			  0,
		      "peerfetch_open: %s", err);
	return pf;
}

/* A new empty file in the scratch directory. */
static inline int scratch_file(const char *name)
{
	char path[PATH_MAX];
	int fd;

	snprintf(path, sizeof(path), "%s/%s", scratch, name);
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	ck_assert_int_ge(fd, 0);
	return fd;
}

/* Whether the scratch file FD holds exactly what SRC/REL holds. */
static inline bool same_as_src(int fd, const char *rel)
{
	char path[PATH_MAX];
	struct stat a, b;
	char *x, *y;
	bool same;
	int in;

	snprintf(path, sizeof(path), "%s/%s", src, rel);
	in = open(path, O_RDONLY | O_CLOEXEC);
	ck_assert_int_ge(in, 0);
	ck_assert_int_eq(fstat(in, &a), 0);
	ck_assert_int_eq(fstat(fd, &b), 0);
	if (a.st_size != b.st_size) {
		close(in);
		return false;
	}
	x = malloc((size_t)a.st_size + 1);
	y = malloc((size_t)a.st_size + 1);
	ck_assert(x && y);
	ck_assert_int_eq(pread(in, x, (size_t)a.st_size, 0), a.st_size);
	ck_assert_int_eq(pread(fd, y, (size_t)a.st_size, 0), a.st_size);
	same = !memcmp(x, y, (size_t)a.st_size);
	free(x);
	free(y);
	close(in);
	return same;
}

static inline off_t size_of(int fd)
{
	struct stat st;

	ck_assert_int_eq(fstat(fd, &st), 0);
	return st.st_size;
}

/* Make the version's data writable by its owner while FN changes it. */
static inline void data_add(const char *what)
{
	char path[PATH_MAX];

	ck_assert_int_eq(chmod(data, 0700), 0);
	snprintf(path, sizeof(path), "%s/%s", data, what);
	if (!strcmp(what, "link"))
		ck_assert_int_eq(symlink("a.txt", path), 0);
	else if (!strcmp(what, "escape"))
		ck_assert_int_eq(symlink("/etc/passwd", path), 0);
	else if (!strcmp(what, "fifo"))
		ck_assert_int_eq(mkfifo(path, 0600), 0);
	else if (!strcmp(what, "linkdir"))
		ck_assert_int_eq(symlink("sub", path), 0);
	ck_assert_int_eq(chmod(data, 0500), 0);
}

/* --- chunks (common/fs/partchunks.h) ---------------------------------------- */

/* Where chunk INDEX of REL is kept in version V of K on tier 0 (its
 * chunks directory made if need be). */
static inline void chunk_path(const char *k, unsigned v, const char *rel,
			      uint64_t index, char *buf, size_t len)
{
	char dir[PATH_MAX], name[PARTCHUNK_NAME_MAX];

	ck_assert_int_eq(cache_version_path(g.a.cache, 0, k, v, false, dir,
					    sizeof(dir)),
			 0);
	ck_assert_int_lt(strlen(dir) + sizeof("/" PARTCHUNKS_DIR), sizeof(dir));
	strcat(dir, "/" PARTCHUNKS_DIR);
	ck_assert(mkdir(dir, 0755) == 0 || errno == EEXIST);
	partchunk_name(rel, strlen(rel), index, name);
	ck_assert_int_lt(strlen(dir) + 1 + strlen(name), len);
	snprintf(buf, len, "%s/%s", dir, name);
}

/* Chunk INDEX of SRC/REL, as a node holding it keeps it: its bytes in
 * a file of their own at PATH. Its length. */
static inline uint64_t write_chunk(const char *path, const char *rel,
				   uint64_t index)
{
	char from[PATH_MAX], *buf;
	uint64_t off, len;
	struct stat st;
	int in, out;

	snprintf(from, sizeof(from), "%s/%s", src, rel);
	in = open(from, O_RDONLY | O_CLOEXEC);
	ck_assert_int_ge(in, 0);
	ck_assert_int_eq(fstat(in, &st), 0);
	partchunk_extent((uint64_t)st.st_size, index, &off, &len);
	ck_assert_uint_gt(len, 0);
	buf = malloc(len);
	ck_assert_ptr_nonnull(buf);
	ck_assert_int_eq(pread(in, buf, len, (off_t)off), (ssize_t)len);
	close(in);
	/* read-only once written: a second write replaces it (only root
	 * could open it for writing) */
	ck_assert(unlink(path) == 0 || errno == ENOENT);
	out = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0444);
	ck_assert_int_ge(out, 0);
	ck_assert_int_eq(write(out, buf, len), (ssize_t)len);
	/* the file's mtime, as the stage worker gives its chunks */
	ck_assert_int_eq(futimens(out, (struct timespec[2]){ st.st_mtim,
							     st.st_mtim }),
			 0);
	close(out);
	free(buf);
	return len;
}

/* SRC/REL's mtime in ns since the epoch: what a listing says of it. */
static inline int64_t src_mtime_ns(const char *rel)
{
	char from[PATH_MAX];
	struct stat st;

	snprintf(from, sizeof(from), "%s/%s", src, rel);
	ck_assert_int_eq(stat(from, &st), 0);
	return (int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec;
}

/* The same in version V of K's chunks directory. */
static inline uint64_t put_chunk(const char *k, unsigned v, const char *rel,
				 uint64_t index)
{
	char path[PATH_MAX];

	chunk_path(k, v, rel, index, path, sizeof(path));
	return write_chunk(path, rel, index);
}

#endif /* IOSTAGE_TESTS_PEERFETCH_FIXTURE_H */
