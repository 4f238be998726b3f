/* check_peerfetch.c - fetch sessions end to end in one process: the
 * client (common/net/peerfetch.c) against iostaged's node channel
 * (daemon/cluster/peer.c, peer_fetch.c, daemon/staging/cache_serve.c)
 * over 127.0.0.1, and the stage worker filling from it
 * (daemon/staging/worker.c, worker_peer.c).
 *
 * The node is an agent over temporary directories (agent_fixture.h)
 * whose cache holds a version built by the real copy engine from a small
 * tree; its channel is served by a peerserve of the test's own on a free
 * port. Credentials are a stand-in for munged ("MUNGE:UID:PAYLOAD", the
 * uid the test chooses), given to the client as its encoder and to the
 * channel as its decoder; the worker test uses a private munged
 * (testmunge.h) and skips without one. Runs as root and as any user:
 * the entries are the test's own uid's, "another user" is another uid.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <check.h>

#include "common/fs/copyengine.h"
#include "common/fs/manifest.h"
#include "common/net/peerfetch.h"
#include "common/net/peernet.h"
#include "common/net/peerserve.h"
#include "daemon/cluster/peer.h"
#include "daemon/cluster/peer_fetch.h"
#include "daemon/staging/worker.h"
#include "daemon/staging/worker_peer.h"
#include "tests/unit/agent_fixture.h"
#include "tests/unit/check_run.h"
#include "tests/unit/testmunge.h"

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
static char *standin_encode(const char *socket, const void *payload, size_t len,
			    char *err, size_t errlen)
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

static enum mauth_status standin_decode(const char *socket, const char *cred,
					char **ret_payload, size_t *ret_len,
					uid_t *ret_uid, gid_t *ret_gid,
					char *err, size_t errlen)
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

static void put_file(const char *rel, size_t size, unsigned seed)
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
static void make_src(void)
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

/* Build and publish the next version of SRC on tier 0 as the stager and
 * its worker would: the real copy engine into the build directory. */
static unsigned build_version(void)
{
	struct copyengine_opts o = { .private_top = true, .read_only = true };
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

	cache_key(geteuid(), src, key);
	ck_assert_int_eq(cache_lock_acquire(g.a.cache, 0, key, NULL, NULL, &lk,
					    err, sizeof(err)),
			 0);
	cache_current(g.a.cache, 0, key, &cur, &next);
	ck_assert_msg(cache_build_begin(g.a.cache, 0, key, next, geteuid(),
					getegid(), &b, err, sizeof(err)) == 0,
		      "cache_build_begin: %s", err);
	ck_assert_msg(copyengine_walk(src, &o, &ce, err, sizeof(err)) == 0,
		      "walk: %s", err);
	bfd = open(b.path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	ck_assert_int_ge(bfd, 0);
	ck_assert_msg(copyengine_copy(ce, bfd, "data", NULL, err,
				      sizeof(err)) == 0,
		      "copy: %s", err);
	close(bfd);
	ck_assert_int_eq(copyengine_manifest(ce, &m), 0);
	ck_assert_int_eq(manifest_write(m, b.manifest_fd), 0);
	manifest_destroy(m);
	t = copyengine_totals(ce);
	meta = (struct cache_meta){ .src = src,
				    .uid = geteuid(),
				    .user = "tester",
				    .bytes = t->total_bytes,
				    .files = t->total_files,
				    .verify = PROFILE_VERIFY_STAT,
				    .verified_ns = cache_now_ns() };
	copyengine_destroy(ce);
	ck_assert_msg(cache_build_publish(&b, &meta, err, sizeof(err)) == 0,
		      "cache_build_publish: %s", err);
	cache_lock_release(lk);
	return b.version;
}

static cJSON *serve(int fd, void *arg)
{
	return peer_serve_fd(arg, fd);
}

/* The channel, served on a free port of 127.0.0.1. */
static void start_channel(unsigned sessions, uint64_t rate)
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

static void setup_common(unsigned sessions, uint64_t rate)
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

static void setup(void)
{
	setup_common(8, 0);
}

static void setup_two_sessions(void)
{
	setup_common(2, 0);
}

static void teardown(void)
{
	peer_fetch_stop((struct peer_fetch *)peer_fetcher(g.a.peer));
	ck_assert(peerserve_stop(&srv, 5));
	peer_destroy(g.a.peer);
	g.a.peer = NULL;
	ag_fini(&g);
}

/* --- helpers ---------------------------------------------------------------------- */

static int open_session(const char *tier, const char *k, unsigned v,
			struct peerfetch **ret, char *err, size_t errlen)
{
	return peerfetch_open_by(standin_encode, 0, "127.0.0.1", port, NULL,
				 tier, k, v, 5000, ret, err, errlen);
}

static struct peerfetch *must_open(void)
{
	char err[1024];
	struct peerfetch *pf = NULL;

	ck_assert_msg(open_session("t0", key, version, &pf, err, sizeof(err)) ==
			  0,
		      "peerfetch_open: %s", err);
	return pf;
}

/* A new empty file in the scratch directory. */
static int scratch_file(const char *name)
{
	char path[PATH_MAX];
	int fd;

	snprintf(path, sizeof(path), "%s/%s", scratch, name);
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	ck_assert_int_ge(fd, 0);
	return fd;
}

/* Whether the scratch file FD holds exactly what SRC/REL holds. */
static bool same_as_src(int fd, const char *rel)
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

static off_t size_of(int fd)
{
	struct stat st;

	ck_assert_int_eq(fstat(fd, &st), 0);
	return st.st_size;
}

/* Make the version's data writable by its owner while FN changes it. */
static void data_add(const char *what)
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

/* --- the tests ------------------------------------------------------------------------ */

START_TEST(test_session_fetches_files)
{
	static const char *const files[] = { "a.txt", "big.bin", "empty",
					     "sub/b.txt" };
	struct peer_fetch_counts c;
	struct manifest *m = NULL;
	struct peerfetch *pf = must_open();
	const struct manifest_entry *e;
	char err[1024];
	const void *mb;
	size_t mlen;
	uint64_t want = 0;

	/* The manifest, as the version holds it. */
	mb = peerfetch_manifest(pf, &mlen);
	ck_assert_msg(manifest_parse(mb, mlen, &m, err, sizeof(err)) == 0,
		      "manifest: %s", err);
	ck_assert_uint_eq(manifest_count(m), 6); /* "", 4 files, sub */
	e = manifest_find(m, "big.bin", 7);
	ck_assert_ptr_nonnull(e);
	ck_assert_uint_eq(e->size, BIG);
	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		int fd = scratch_file("out");

		e = manifest_find(m, files[i], strlen(files[i]));
		ck_assert_ptr_nonnull(e);
		ck_assert_msg(peerfetch_file(pf, files[i], fd, e->size, 5000,
					     err, sizeof(err)) == 0,
			      "%s: %s", files[i], err);
		ck_assert_msg(same_as_src(fd, files[i]), "%s differs",
			      files[i]);
		want += e->size;
		close(fd);
	}
	ck_assert(peerfetch_usable(pf));
	ck_assert_uint_eq(peerfetch_bytes(pf), want);
	peerfetch_close(pf);
	manifest_destroy(m);
	/* another session of the same worker: no manifest again */
	ck_assert_msg(peerfetch_open_by(standin_encode, PEERFETCH_NO_MANIFEST,
					"127.0.0.1", port, NULL, "t0", key,
					version, 5000, &pf, err,
					sizeof(err)) == 0,
		      "%s", err);
	peerfetch_manifest(pf, &mlen);
	ck_assert_uint_eq(mlen, 0);
	{
		int fd = scratch_file("out");

		ck_assert_msg(peerfetch_file(pf, "a.txt", fd, 1000, 5000, err,
					     sizeof(err)) == 0,
			      "%s", err);
		ck_assert(same_as_src(fd, "a.txt"));
		want += 1000;
		close(fd);
	}
	peerfetch_close(pf);
	/* the node counts what it sent (the session is over once it saw
	 * our EOF) */
	for (int i = 0; i < 100; i++) {
		peer_fetch_counts(peer_fetcher(g.a.peer), &c);
		if (!c.active)
			break;
		usleep(20000);
	}
	ck_assert_uint_eq(c.active, 0);
	ck_assert_uint_eq(c.sessions, 2);
	ck_assert_uint_eq(c.files, 5);
	ck_assert_uint_eq(c.bytes, want);
}
END_TEST

/* Opens refused: the whole session is. */
START_TEST(test_open_refused)
{
	char other[CACHE_KEY_LEN + 1], err[1024], build_key[64];
	struct cache_build b;
	struct peerfetch *pf = NULL;
	const struct {
		const char *tier, *key;
		unsigned version;
		const char *error;
	} cases[] = {
		{ "nvme", key, version, "no tier 'nvme'" },
		{ "t1", key, version, "Shared=yes" },
		{ "t0", "not-a-key", version, "not a cache key" },
		{ "t0", "", version, "not a cache key" },
		{ "t0", build_key, version, "not a cache key" },
		{ "t0", "../../../../etc/passwd", version, "not a cache key" },
		{ "t0", key, 0, "must be 1.." },
		{ "t0", key, version + 1, "not found" },
		{ "t0", other, 1, "not found" },
		/* a build in progress is never served (version + 1) */
		{ "t0", key, version + 2, "not found" },
	};

	snprintf(build_key, sizeof(build_key), ".build.%s", key);
	cache_key(geteuid(), "/nowhere", other);
	ck_assert_msg(cache_build_begin(g.a.cache, 0, key, version + 2,
					geteuid(), getegid(), &b, err,
					sizeof(err)) == 0,
		      "cache_build_begin: %s", err);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		ck_assert_int_eq(open_session(cases[i].tier, cases[i].key,
					      cases[i].version, &pf, err,
					      sizeof(err)),
				 -1);
		ck_assert_msg(strstr(err, cases[i].error), "case %zu: %s", i,
			      err);
		ck_assert_msg(strstr(err, "node 127.0.0.1:"), "%s", err);
	}
	cache_build_abort(&b);
}
END_TEST

/* Another user's entry is answered like a missing one; root's
 * credential is served any. */
START_TEST(test_other_user_refused)
{
	struct peerfetch *pf = NULL;
	char err[1024];

	cred_uid = geteuid() ? geteuid() + 1 : 1000;
	ck_assert_int_eq(open_session("t0", key, version, &pf, err,
				      sizeof(err)),
			 -1);
	ck_assert_msg(strstr(err, "not found on tier 't0'"), "%s", err);
	cred_uid = 0;
	ck_assert_msg(open_session("t0", key, version, &pf, err, sizeof(err)) ==
			  0,
		      "root: %s", err);
	peerfetch_close(pf);
}
END_TEST

/* A file the session refuses: the session goes on, nothing written. */
START_TEST(test_file_refused)
{
	const struct {
		const char *path;
		uint64_t size;
		const char *error;
	} cases[] = {
		{ "../a.txt", 1000, "not a clean relative path" },
		{ "sub/../a.txt", 1000, "not a clean relative path" },
		{ "./a.txt", 1000, "not a clean relative path" },
		{ "/etc/passwd", 1000, "not a clean relative path" },
		{ "", 1000, "is a directory" },
		{ "sub", 0, "not a regular file" },
		{ "link", 5, "symlink" },
		{ "escape", 5, "symlink" },
		{ "linkdir/b.txt", 5000, "symlink" },
		{ "fifo", 0, "not a regular file" },
		{ "missing", 1, "No such file" },
		{ "a.txt", 999, "1000 bytes here, not 999" },
		{ "a.txt", 1001, "1000 bytes here, not 1001" },
	};
	struct peerfetch *pf;
	char err[1024];
	int fd;

	data_add("link");
	data_add("escape");
	data_add("linkdir");
	data_add("fifo");
	pf = must_open();
	fd = scratch_file("out");
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		ck_assert_int_eq(peerfetch_file(pf, cases[i].path, fd,
						cases[i].size, 5000, err,
						sizeof(err)),
				 -1);
		ck_assert_msg(strstr(err, cases[i].error), "case %zu (%s): %s",
			      i, cases[i].path, err);
		ck_assert_msg(peerfetch_usable(pf), "case %zu: %s", i, err);
		ck_assert_int_eq(size_of(fd), 0);
	}
	/* and still serves */
	ck_assert_msg(peerfetch_file(pf, "a.txt", fd, 1000, 5000, err,
				     sizeof(err)) == 0,
		      "%s", err);
	ck_assert(same_as_src(fd, "a.txt"));
	close(fd);
	peerfetch_close(pf);
}
END_TEST

/* A server that sends a manifest, then part of a file and hangs up. */
static int fake_listen;

static void *fake_server(void *arg)
{
	static const char open_reply[] = "{\"ok\":true,\"manifest_bytes\":4}\n"
					 "MANI";
	static const char file_reply[] = "{\"ok\":true,\"size\":100}\n"
					 "0123456789";
	char buf[8192];
	int fd;

	(void)arg;
	fd = accept(fake_listen, NULL, NULL);
	if (fd < 0)
		return NULL;
	/* the request line; then the manifest */
	if (read(fd, buf, sizeof(buf)) > 0 &&
	    write(fd, open_reply, sizeof(open_reply) - 1) > 0 &&
	    read(fd, buf, sizeof(buf)) > 0 &&
	    write(fd, file_reply, sizeof(file_reply) - 1) > 0)
		usleep(50000);
	close(fd);
	return NULL;
}

START_TEST(test_broken_mid_file)
{
	struct sockaddr_in sin;
	socklen_t sl = sizeof(sin);
	struct peerfetch *pf = NULL;
	char err[1024];
	const void *mb;
	size_t mlen;
	pthread_t t;
	int fd;

	fake_listen = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	memset(&sin, 0, sizeof(sin));
	sin.sin_family = AF_INET;
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	ck_assert_int_eq(bind(fake_listen, (struct sockaddr *)&sin, sl), 0);
	ck_assert_int_eq(listen(fake_listen, 1), 0);
	ck_assert_int_eq(getsockname(fake_listen, (struct sockaddr *)&sin, &sl),
			 0);
	ck_assert_int_eq(pthread_create(&t, NULL, fake_server, NULL), 0);
	ck_assert_msg(peerfetch_open_by(standin_encode, 0, "127.0.0.1",
					ntohs(sin.sin_port), NULL, "t0", key, 1,
					5000, &pf, err, sizeof(err)) == 0,
		      "%s", err);
	mb = peerfetch_manifest(pf, &mlen);
	ck_assert_uint_eq(mlen, 4);
	ck_assert(!memcmp(mb, "MANI", 4));
	fd = scratch_file("out");
	ck_assert_int_eq(peerfetch_file(pf, "x", fd, 100, 5000, err,
					sizeof(err)),
			 -1);
	ck_assert_msg(strstr(err, "cut short"), "%s", err);
	ck_assert(!peerfetch_usable(pf));
	/* a dead session takes no more requests */
	ck_assert_int_eq(peerfetch_file(pf, "x", fd, 100, 5000, err,
					sizeof(err)),
			 -1);
	ck_assert_msg(strstr(err, "closed"), "%s", err);
	pthread_join(t, NULL);
	close(fd);
	close(fake_listen);
	peerfetch_close(pf);
}
END_TEST

/* A server that announces another size than asked: refused before a
 * byte is written; the session cannot go on. */
START_TEST(test_server_size_mismatch)
{
	static const char replies[] = "{\"ok\":true,\"manifest_bytes\":0}\n";
	struct sockaddr_in sin;
	socklen_t sl = sizeof(sin);
	struct peerfetch *pf = NULL;
	char err[1024], buf[4096];
	int l, s, fd;

	l = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	memset(&sin, 0, sizeof(sin));
	sin.sin_family = AF_INET;
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	ck_assert_int_eq(bind(l, (struct sockaddr *)&sin, sl), 0);
	ck_assert_int_eq(listen(l, 1), 0);
	ck_assert_int_eq(getsockname(l, (struct sockaddr *)&sin, &sl), 0);
	/* the whole dialogue is queued before the client reads it */
	if (fork() == 0) {
		s = accept(l, NULL, NULL);
		if (s >= 0 && read(s, buf, sizeof(buf)) > 0 &&
		    write(s, replies, sizeof(replies) - 1) > 0 &&
		    read(s, buf, sizeof(buf)) > 0 &&
		    write(s, "{\"ok\":true,\"size\":7}\nabcdefg", 28) > 0)
			sleep(1);
		_exit(0);
	}
	ck_assert_msg(peerfetch_open_by(standin_encode, 0, "127.0.0.1",
					ntohs(sin.sin_port), NULL, "t0", key, 1,
					5000, &pf, err, sizeof(err)) == 0,
		      "%s", err);
	fd = scratch_file("out");
	ck_assert_int_eq(peerfetch_file(pf, "x", fd, 5, 5000, err, sizeof(err)),
			 -1);
	ck_assert_msg(strstr(err, "another size"), "%s", err);
	ck_assert_int_eq(size_of(fd), 0);
	ck_assert(!peerfetch_usable(pf));
	close(fd);
	close(l);
	peerfetch_close(pf);
	wait(NULL);
}
END_TEST

/* Nothing listens: the client says where it tried. */
START_TEST(test_unreachable)
{
	struct peerfetch *pf = NULL;
	char err[1024];

	peer_fetch_stop((struct peer_fetch *)peer_fetcher(g.a.peer));
	ck_assert(peerserve_stop(&srv, 5));
	ck_assert_int_eq(open_session("t0", key, version, &pf, err,
				      sizeof(err)),
			 -1);
	ck_assert_msg(strstr(err, "node 127.0.0.1"), "%s", err);
	ck_assert_msg(strstr(err, "refused"), "%s", err);
	srv.running = false; /* teardown stops it again */
}
END_TEST

/* Sessions over PeerFetchSessions (2 here) are refused, and served
 * again once one ends. */
START_TEST(test_sessions_bounded)
{
	struct peerfetch *a = must_open(), *b = must_open(), *c = NULL;
	struct peer_fetch_counts n;
	char err[1024];
	int r = -1;

	ck_assert_int_eq(open_session("t0", key, version, &c, err, sizeof(err)),
			 -1);
	ck_assert_msg(strstr(err, "too many fetch sessions"), "%s", err);
	ck_assert_msg(strstr(err, "PeerFetchSessions=2"), "%s", err);
	peerfetch_close(a);
	/* the node sees our EOF within its next slice */
	for (int i = 0; i < 100 && r < 0; i++) {
		r = open_session("t0", key, version, &c, err, sizeof(err));
		if (r < 0)
			usleep(20000);
	}
	ck_assert_msg(r == 0, "%s", err);
	peer_fetch_counts(peer_fetcher(g.a.peer), &n);
	ck_assert_uint_ge(n.refused, 1);
	ck_assert_uint_eq(n.sessions, 3);
	peerfetch_close(b);
	peerfetch_close(c);
}
END_TEST

/* The channel's other ops still want root: fetch_open alone is open to
 * users. */
START_TEST(test_other_ops_root_only)
{
	cJSON *req = cJSON_Parse("{\"op\":\"peer_ping\"}"), *reply;
	char err[1024];

	cred_uid = geteuid() ? geteuid() : 1000;
	if (cred_uid == 0)
		cred_uid = 1000;
	reply = NULL;
	{
		char *line = peernet_request_line_by(standin_encode, NULL, req,
						     err, sizeof(err));
		int sv[2];

		ck_assert_ptr_nonnull(line);
		ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
		ck_assert_int_gt(dprintf(sv[1], "%s\n", line), 0);
		reply = peer_serve_fd(g.a.peer, sv[0]);
		close(sv[0]);
		close(sv[1]);
		free(line);
	}
	ck_assert_ptr_nonnull(reply);
	ck_assert(cJSON_IsFalse(cJSON_GetObjectItem(reply, "ok")));
	ck_assert_msg(strstr(cJSON_GetStringValue(
				 cJSON_GetObjectItem(reply, "error")),
			     "root's credential"),
		      "wrong refusal");
	cJSON_Delete(reply);
	cJSON_Delete(req);
}
END_TEST

/* --- the worker, with a real munged ---------------------------------------- */

/* Run the worker with ARGV (NULL-terminated, after "--stage-worker") in
 * a child; its stdout into OUT. Its exit status. */
static int run_worker(const char *const *argv, char *out, size_t outlen)
{
	const char *args[32] = { "--stage-worker" };
	int p[2], st, n = 1;
	size_t len = 0;
	ssize_t r;
	pid_t pid;

	while (*argv)
		args[n++] = *argv++;
	args[n] = NULL;
	ck_assert_int_eq(pipe(p), 0);
	pid = fork();
	if (pid == 0) {
		int null = open("/dev/null", O_WRONLY | O_CLOEXEC);

		/* usage lines: the exit status is what is checked */
		if (null >= 0)
			dup2(null, STDERR_FILENO);
		dup2(p[1], STDOUT_FILENO);
		close(p[0]);
		close(p[1]);
		_exit(worker_main(n, (char **)args));
	}
	close(p[1]);
	while (len + 1 < outlen &&
	       (r = read(p[0], out + len, outlen - 1 - len)) > 0)
		len += (size_t)r;
	out[len] = '\0';
	close(p[0]);
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

/* Whether DIR/data holds what SRC holds, byte for byte. */
static bool tree_same(const char *dir)
{
	char cmd[3 * PATH_MAX];

	snprintf(cmd, sizeof(cmd), "diff -r %s %s/data >/dev/null", src, dir);
	return system(cmd) == 0;
}

START_TEST(test_worker_fills_from_peer)
{
	char hostport[64], entry[128], dst[PATH_MAX], dst2[PATH_MAX];
	static char out[65536];
	const char *argv[16];

	if (testmunge_start() < 0) {
		printf("check_peerfetch: no private munged: worker test "
		       "skipped\n");
		return;
	}
	peer_set_decoder(g.a.peer, NULL); /* munged's own */
	ck_assert_uint_lt(strlen(testmunge_socket),
			  sizeof(g.conf.munge_socket));
	memcpy(g.conf.munge_socket, testmunge_socket,
	       strlen(testmunge_socket) + 1);
	/* one file of SRC changed since the version: read from SRC */
	sleep(1);
	put_file("sub/b.txt", 5001, 9);
	snprintf(hostport, sizeof(hostport), "127.0.0.1:%u", port);
	snprintf(entry, sizeof(entry), "t0/%s.v%u", key, version);
	snprintf(dst, sizeof(dst), "%s/dst", g.root);
	ck_assert_int_eq(mkdir(dst, 0700), 0);
	argv[0] = "--peer";
	argv[1] = hostport;
	argv[2] = "--peer-entry";
	argv[3] = entry;
	argv[4] = "--munge-socket";
	argv[5] = testmunge_socket;
	argv[6] = "--threads";
	argv[7] = "4";
	argv[8] = src;
	argv[9] = dst;
	argv[10] = NULL;
	ck_assert_msg(run_worker(argv, out, sizeof(out)) == 0, "%s", out);
	ck_assert_msg(strstr(out, "\"ok\":true"), "%s", out);
	ck_assert_uint_eq(figure(out, "fetched"), 3);
	ck_assert_uint_eq(figure(out, "fetched_bytes"), 1000 + BIG);
	ck_assert_uint_eq(figure(out, "fallbacks"), 0);
	ck_assert_uint_eq(figure(out, "files"), 4);
	/* space: everything is written; SRC gives only what changed */
	ck_assert_uint_eq(figure(out, "copy_bytes"), 1000 + BIG + 5001);
	ck_assert_uint_eq(figure(out, "copy_files"), 4);
	ck_assert_uint_eq(figure(out, "source_bytes"), 5001);
	ck_assert(tree_same(dst));

	/* a version that is not there: no failure, all from SRC, a note */
	snprintf(entry, sizeof(entry), "t0/%s.v%u", key, version + 5);
	snprintf(dst2, sizeof(dst2), "%s/dst2", g.root);
	ck_assert_int_eq(mkdir(dst2, 0700), 0);
	argv[9] = dst2;
	ck_assert_msg(run_worker(argv, out, sizeof(out)) == 0, "%s", out);
	ck_assert_msg(strstr(out, "{\"note\":\"cannot fill from node "
				  "127.0.0.1:"),
		      "%s", out);
	ck_assert_msg(strstr(out, "not found"), "%s", out);
	ck_assert_uint_eq(figure(out, "fetched"), 0);
	ck_assert_uint_eq(figure(out, "source_bytes"), 1000 + BIG + 5001);
	ck_assert(tree_same(dst2));
	testmunge_stop();
}
END_TEST

START_TEST(test_worker_usage)
{
	static char out[4096];
	const char *const bad[][12] = {
		{ "--peer", "127.0.0.1:1", src, "/tmp", NULL },
		{ "--peer-entry", "t0/x.v1", src, "/tmp", NULL },
		{ "--peer", "nocolon", "--peer-entry",
		  "t0/0123456789abcdef0123456789abcdef.v1", src, "/tmp", NULL },
		{ "--peer", "h:1", "--peer-entry", "t0/short.v1", src, "/tmp",
		  NULL },
		{ "--peer", "h:1", "--peer-entry",
		  "t0/0123456789abcdef0123456789abcdef.v0", src, "/tmp", NULL },
		{ "--peer", "h:1", "--peer-entry",
		  "t0/0123456789abcdef0123456789abcdef.v1", "--check", src,
		  "/tmp", NULL },
		{ "--munge-socket", "/run/x", src, "/tmp", NULL },
	};

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		ck_assert_msg(run_worker(bad[i], out, sizeof(out)) == 2,
			      "case %zu accepted", i);
}
END_TEST

/* --- the worker's pool of sessions, against a scripted server ------------ */

#define POOL_FILE 5000 /* the one file "f" of the scripted version */

struct script {
	int listen;
	const char *acts; /* per connection: C manifest then close, F serve
			   * one file, R refuse */
	char manifest[4096];
	size_t manifest_len;
	_Atomic unsigned conns;
};

/* A real manifest: the top and one file "f" of POOL_FILE bytes. */
static void script_manifest(struct script *sc)
{
	struct manifest_entry top = { .path = "",
				      .type = MANIFEST_DIR,
				      .mode = 0755 };
	struct manifest_entry f = { .path = "f",
				    .path_len = 1,
				    .type = MANIFEST_FILE,
				    .size = POOL_FILE,
				    .mode = 0644 };
	struct manifest *m = manifest_create();
	int fd = memfd_create("manifest", MFD_CLOEXEC);
	ssize_t n;

	ck_assert(m && fd >= 0);
	ck_assert_int_eq(manifest_add(m, &top), 0);
	ck_assert_int_eq(manifest_add(m, &f), 0);
	ck_assert_int_eq(manifest_write(m, fd), 0);
	n = pread(fd, sc->manifest, sizeof(sc->manifest), 0);
	ck_assert_int_gt(n, 0);
	sc->manifest_len = (size_t)n;
	close(fd);
	manifest_destroy(m);
}

static void *script_server(void *arg)
{
	struct script *sc = arg;
	char buf[8192], head[128];
	char *file = calloc(1, POOL_FILE);

	for (const char *a = sc->acts; *a; a++) {
		int fd = accept(sc->listen, NULL, NULL);
		int n;

		if (fd < 0)
			break;
		atomic_fetch_add(&sc->conns, 1);
		if (read(fd, buf, sizeof(buf)) <= 0) {
			close(fd);
			continue;
		}
		if (*a == 'R') {
			dprintf(fd, "{\"ok\":false,\"error\":\"too many fetch "
				    "sessions\"}\n");
			close(fd);
			continue;
		}
		n = snprintf(head, sizeof(head),
			     "{\"ok\":true,\"manifest_bytes\":%zu}\n",
			     sc->manifest_len);
		if (write(fd, head, (size_t)n) != n ||
		    write(fd, sc->manifest, sc->manifest_len) !=
			(ssize_t)sc->manifest_len ||
		    *a == 'C') {
			close(fd);
			continue;
		}
		/* F: one file, then the client's EOF */
		if (read(fd, buf, sizeof(buf)) > 0) {
			n = snprintf(head, sizeof(head),
				     "{\"ok\":true,\"size\":%d}\n", POOL_FILE);
			if (write(fd, head, (size_t)n) == n &&
			    write(fd, file, POOL_FILE) == POOL_FILE)
				while (read(fd, buf, sizeof(buf)) > 0)
					;
		}
		close(fd);
	}
	free(file);
	return NULL;
}

static void script_start(struct script *sc, const char *acts,
			 struct worker_peer_target *t, pthread_t *th)
{
	struct sockaddr_in sin;
	socklen_t sl = sizeof(sin);

	memset(sc, 0, sizeof(*sc));
	sc->acts = acts;
	script_manifest(sc);
	sc->listen = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	memset(&sin, 0, sizeof(sin));
	sin.sin_family = AF_INET;
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	ck_assert_int_eq(bind(sc->listen, (struct sockaddr *)&sin, sl), 0);
	ck_assert_int_eq(listen(sc->listen, 8), 0);
	ck_assert_int_eq(getsockname(sc->listen, (struct sockaddr *)&sin, &sl),
			 0);
	memset(t, 0, sizeof(*t));
	snprintf(t->host, sizeof(t->host), "127.0.0.1");
	t->port = ntohs(sin.sin_port);
	snprintf(t->tier, sizeof(t->tier), "t0");
	snprintf(t->key, sizeof(t->key), "%s", key);
	t->version = 1;
	ck_assert_int_eq(pthread_create(th, NULL, script_server, sc), 0);
}

/* A session the server ended while idle: the file is tried again on a
 * new one, and nothing falls back. */
START_TEST(test_pool_retries_a_dead_idle_session)
{
	struct worker_peer_target t;
	struct worker_peer *p = NULL;
	struct manifest *m = NULL;
	struct script sc;
	char err[1024], note[1024];
	pthread_t th;
	int fd;

	script_start(&sc, "CF", &t, &th);
	ck_assert_msg(worker_peer_open(&t, 4, standin_encode, &p, &m, err,
				       sizeof(err)) == 0,
		      "%s", err);
	ck_assert_uint_eq(manifest_count(m), 2);
	usleep(50000); /* the server has hung up the first */
	fd = scratch_file("f");
	ck_assert_int_eq(worker_peer_fetch("f", fd, POOL_FILE, p), 0);
	ck_assert_int_eq(size_of(fd), POOL_FILE);
	worker_peer_summary(p, note, sizeof(note));
	ck_assert_str_eq(note, "");
	close(fd);
	worker_peer_close(p);
	manifest_destroy(m);
	pthread_join(th, NULL);
	close(sc.listen);
}
END_TEST

/* A peer that refuses every new session: after WORKER_PEER_OPEN_TRIES
 * it is given up, and later files fall back at once. */
START_TEST(test_pool_gives_up)
{
	struct worker_peer_target t;
	struct worker_peer *p = NULL;
	struct manifest *m = NULL;
	struct script sc;
	char err[1024], note[1024];
	pthread_t th;
	int fd;

	script_start(&sc, "CRRR", &t, &th);
	ck_assert_msg(worker_peer_open(&t, 4, standin_encode, &p, &m, err,
				       sizeof(err)) == 0,
		      "%s", err);
	usleep(50000);
	for (int i = 0; i < 5; i++) {
		fd = scratch_file("f");
		ck_assert_int_eq(worker_peer_fetch("f", fd, POOL_FILE, p), -1);
		close(fd);
	}
	ck_assert_uint_eq(sc.conns, 4); /* none after the third refusal */
	worker_peer_summary(p, note, sizeof(note));
	ck_assert_msg(strstr(note, "given up after 3 failures"), "%s", note);
	ck_assert_msg(strstr(note, "too many fetch sessions"), "%s", note);
	ck_assert_msg(strstr(note, "5 files copied from the source"), "%s",
		      note);
	worker_peer_close(p);
	manifest_destroy(m);
	pthread_join(th, NULL);
	close(sc.listen);
}
END_TEST

/* Six copy threads, a node serving two sessions: the pool makes do
 * with the two, and nothing falls back. */
struct puller {
	struct worker_peer *p;
	int n;
	int failed;
};

static void *pull(void *arg)
{
	struct puller *u = arg;
	char name[32];

	for (int i = 0; i < 5; i++) {
		int fd;

		snprintf(name, sizeof(name), "out.%d.%d", u->n, i);
		fd = scratch_file(name);
		if (worker_peer_fetch("sub/b.txt", fd, 5000, u->p) < 0 ||
		    !same_as_src(fd, "sub/b.txt"))
			u->failed++;
		close(fd);
	}
	return NULL;
}

START_TEST(test_pool_within_server_bound)
{
	struct worker_peer_target t = { .port = port, .version = version };
	struct puller u[6];
	pthread_t th[6];
	struct worker_peer *p = NULL;
	struct manifest *m = NULL;
	char err[1024], note[1024];

	snprintf(t.host, sizeof(t.host), "127.0.0.1");
	snprintf(t.tier, sizeof(t.tier), "t0");
	snprintf(t.key, sizeof(t.key), "%s", key);
	ck_assert_msg(worker_peer_open(&t, 6, standin_encode, &p, &m, err,
				       sizeof(err)) == 0,
		      "%s", err);
	for (int i = 0; i < 6; i++) {
		u[i] = (struct puller){ p, i, 0 };
		ck_assert_int_eq(pthread_create(&th[i], NULL, pull, &u[i]), 0);
	}
	for (int i = 0; i < 6; i++) {
		pthread_join(th[i], NULL);
		ck_assert_int_eq(u[i].failed, 0);
	}
	worker_peer_summary(p, note, sizeof(note));
	ck_assert_str_eq(note, "");
	worker_peer_close(p);
	manifest_destroy(m);
}
END_TEST

static Suite *peerfetch_suite(void)
{
	Suite *s = suite_create("peerfetch");
	TCase *tc = tcase_create("session");
	TCase *tb = tcase_create("bounds");
	TCase *tw = tcase_create("worker");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_session_fetches_files);
	tcase_add_test(tc, test_open_refused);
	tcase_add_test(tc, test_other_user_refused);
	tcase_add_test(tc, test_file_refused);
	tcase_add_test(tc, test_broken_mid_file);
	tcase_add_test(tc, test_server_size_mismatch);
	tcase_add_test(tc, test_unreachable);
	tcase_add_test(tc, test_other_ops_root_only);
	suite_add_tcase(s, tc);
	tcase_add_checked_fixture(tb, setup_two_sessions, teardown);
	tcase_set_timeout(tb, 60);
	tcase_add_test(tb, test_sessions_bounded);
	tcase_add_test(tb, test_pool_within_server_bound);
	suite_add_tcase(s, tb);
	tcase_add_checked_fixture(tw, setup, teardown);
	tcase_set_timeout(tw, 120);
	tcase_add_test(tw, test_worker_fills_from_peer);
	tcase_add_test(tw, test_worker_usage);
	tcase_add_test(tw, test_pool_retries_a_dead_idle_session);
	tcase_add_test(tw, test_pool_gives_up);
	suite_add_tcase(s, tw);
	return s;
}

int main(void)
{
	return check_run(peerfetch_suite());
}
