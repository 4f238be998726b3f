/* check_worker_peer.c - the stage worker filling its copy from another
 * node (daemon/staging/worker.c's --peer, worker_peer.c): worker_main in
 * a child against the node of peerfetch_fixture.h with a private munged
 * (testmunge.h; skipped without one), its options, and the pool of
 * sessions against the node (PeerFetchSessions below the copy threads)
 * and against scripted servers (an idle session ended by the server, a
 * peer refusing every new session).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
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
#include <time.h>
#include <unistd.h>

#include <check.h>

#include "common/fs/partchunks.h"
#include "common/sched/spread.h"
#include "daemon/staging/worker.h"
#include "daemon/staging/worker_peer.h"
#include "tests/unit/check_run.h"
#include "tests/unit/peerfetch_fixture.h"
#include "tests/unit/testmunge.h"

/* 2 MiB each: BIG (3 MiB and a bit) is cut into 4 chunks of 1 MiB */
#define CHUNK_PLAN "n1=2,n2=2,n3=2"
#define MIB_1 (UINT64_C(1) << 20)

/* worker_peers_summary's NOTE: the lines into ARG (a buffer of 1024). */
static void note_into(const char *line, void *arg)
{
	char *buf = arg;
	size_t n = strlen(buf);

	snprintf(buf + n, 1024 - n, "%s\n", line);
}

/* --- the worker, with a real munged ---------------------------------------- */

/* Start a private munged and make the fixture's node decode with it (the
 * worker child carries real credentials). False, with a line naming
 * WHAT as skipped, when there is none. */
static bool node_on_munged(const char *what)
{
	if (testmunge_start() < 0) {
		printf("check_worker_peer: no private munged: %s skipped\n",
		       what);
		return false;
	}
	peer_set_decoder(g.a.peer, NULL); /* munged's own */
	ck_assert_uint_lt(strlen(testmunge_socket),
			  sizeof(g.conf.munge_socket));
	memcpy(g.conf.munge_socket, testmunge_socket,
	       strlen(testmunge_socket) + 1);
	return true;
}

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

	if (!node_on_munged("worker test"))
		return;
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

	/* --peer-job names a job on the wire: one this node does not run
	 * is refused, and everything comes from SRC */
	snprintf(entry, sizeof(entry), "t0/%s.v%u", key, version);
	snprintf(dst2, sizeof(dst2), "%s/dst3", g.root);
	ck_assert_int_eq(mkdir(dst2, 0700), 0);
	argv[8] = "--peer-job";
	argv[9] = "99";
	argv[10] = src;
	argv[11] = dst2;
	argv[12] = NULL;
	ck_assert_msg(run_worker(argv, out, sizeof(out)) == 0, "%s", out);
	ck_assert_msg(strstr(out, "job 99 is not running here"), "%s", out);
	ck_assert_uint_eq(figure(out, "fetched"), 0);
	ck_assert(tree_same(dst2));
	/* --peers, a fill by parts: a node whose version is gone is left
	 * out with a note, the next one listed gives its files */
	{
		char list[512], dst4[PATH_MAX];

		snprintf(list, sizeof(list), "%s=t0/%s.v%u,%s=t0/%s.v%u",
			 hostport, key, version + 5, hostport, key, version);
		snprintf(dst4, sizeof(dst4), "%s/dst4", g.root);
		ck_assert_int_eq(mkdir(dst4, 0700), 0);
		argv[0] = "--peers";
		argv[1] = list;
		argv[2] = "--munge-socket";
		argv[3] = testmunge_socket;
		argv[4] = "--threads";
		argv[5] = "4";
		argv[6] = src;
		argv[7] = dst4;
		argv[8] = NULL;
		ck_assert_msg(run_worker(argv, out, sizeof(out)) == 0, "%s",
			      out);
		ck_assert_msg(strstr(out, "{\"note\":\"cannot fill from node "
					  "127.0.0.1:"),
			      "%s", out);
		ck_assert_uint_eq(figure(out, "fetched"), 3);
		ck_assert_uint_eq(figure(out, "fetched_bytes"), 1000 + BIG);
		ck_assert_uint_eq(figure(out, "source_bytes"), 5001);
		ck_assert(tree_same(dst4));
	}
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
		{ "--peers", "", src, "/tmp", NULL },
		{ "--peers", "h:1", src, "/tmp", NULL },
		{ "--peers", "h:1=t0/short.v1", src, "/tmp", NULL },
		{ "--peers", "h:1=t0/0123456789abcdef0123456789abcdef.v1,h:2=x",
		  src, "/tmp", NULL },
		{ "--peers", "h:1=t0/0123456789abcdef0123456789abcdef.v1",
		  "--check", src, "/tmp", NULL },
		{ "--peer", "h:1", "--peer-entry",
		  "t0/0123456789abcdef0123456789abcdef.v1", "--peers",
		  "h:1=t0/0123456789abcdef0123456789abcdef.v1", src, "/tmp",
		  NULL },
		{ "--peer-job", "42", src, "/tmp", NULL },
		{ "--peer", "h:1", "--peer-entry",
		  "t0/0123456789abcdef0123456789abcdef.v1", "--peer-job", "0",
		  src, "/tmp", NULL },
		{ "--peer", "h:1", "--peer-entry",
		  "t0/0123456789abcdef0123456789abcdef.v1", "--peer-job",
		  "4294967296", src, "/tmp", NULL },
		{ "--peer", "h:1", "--peer-entry",
		  "t0/0123456789abcdef0123456789abcdef.v1", "--peer-job", "x",
		  src, "/tmp", NULL },
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

/* The pool's sessions name the target's job: a spread dataset's part
 * is served for it, and refused without it. */
START_TEST(test_pool_names_its_job)
{
	const char *const nodes[] = { "127.0.0.1" };
	struct worker_peer_target t = { .port = port };
	struct worker_peer *p = NULL;
	struct manifest *m = NULL;
	char err[1024], note[1024];
	struct job *job;
	int fd;

	t.version = build_version_owned(geteuid(), false, true, t.key);
	snprintf(t.host, sizeof(t.host), "127.0.0.1");
	snprintf(t.tier, sizeof(t.tier), "t0");
	snprintf(err, sizeof(err),
		 "{\"datasets\":[{\"name\":\"ds\",\"path\":\"%s\","
		 "\"tier\":\"t0\",\"spread\":\"yes\"}]}",
		 src);
	job = jobs_new_job(g.a.jobs, 42, geteuid(), getegid(), "tester",
			   ag_profile(&g, err), note, sizeof(note));
	ck_assert_msg(job != NULL, "%s", note);
	ck_assert_int_eq(jobs_set_nodes(job, nodes, 1, note, sizeof(note)), 0);
	ck_assert_int_eq(jobs_insert(g.a.jobs, job, NULL, note, sizeof(note)),
			 0);
	jobs_staging_done(job, true, NULL);
	ck_assert_int_eq(worker_peer_open(&t, 2, standin_encode, &p, &m, err,
					  sizeof(err)),
			 -1);
	ck_assert_msg(strstr(err, "the request names no job"), "%s", err);
	t.job = 42;
	ck_assert_msg(worker_peer_open(&t, 2, standin_encode, &p, &m, err,
				       sizeof(err)) == 0,
		      "%s", err);
	fd = scratch_file("out");
	ck_assert_int_eq(worker_peer_fetch("a.txt", fd, 1000, p), 0);
	ck_assert(same_as_src(fd, "a.txt"));
	close(fd);
	worker_peer_summary(p, note, sizeof(note));
	ck_assert_str_eq(note, "");
	worker_peer_close(p);
	manifest_destroy(m);
	jobs_put(job);
}
END_TEST

/* Whether FD holds exactly the LEN bytes at OFF of SRC/REL. */
static bool same_as_src_range(int fd, const char *rel, uint64_t off,
			      uint64_t len)
{
	char path[PATH_MAX], *x = malloc(len + 1), *y = malloc(len + 1);
	struct stat st;
	bool same;
	int in;

	ck_assert(x && y);
	snprintf(path, sizeof(path), "%s/%s", src, rel);
	in = open(path, O_RDONLY | O_CLOEXEC);
	ck_assert_int_ge(in, 0);
	ck_assert_int_eq(fstat(fd, &st), 0);
	same = (uint64_t)st.st_size == len &&
	       pread(in, x, len, (off_t)off) == (ssize_t)len &&
	       pread(fd, y, len, 0) == (ssize_t)len && !memcmp(x, y, len);
	close(in);
	free(x);
	free(y);
	return same;
}

/* A chunk from the first of several nodes that holds it: one whose
 * version has no chunks refuses, the next gives it byte for byte; a
 * chunk cut before the file's listed mtime is refused by all (the
 * source then), as one nobody holds; refusals are no failures. */
START_TEST(test_pools_fetch_a_chunk_from_its_holder)
{
	struct worker_peer_target t[2] = { { .port = port }, { .port = port } };
	const int64_t mtime = src_mtime_ns("big.bin");
	struct worker_peers *ps = NULL;
	char note[1024] = "";
	uint64_t off, len;
	int fd;

	for (uint64_t k = 0; k < spread_chunk_count(BIG); k++)
		put_chunk(key, version, "big.bin", k);
	/* a later version of the same entry, without chunks, asked first */
	t[0].version = build_version_of(false, t[0].key);
	t[1].version = version;
	ck_assert_uint_gt(t[0].version, version);
	for (int i = 0; i < 2; i++) {
		snprintf(t[i].host, sizeof(t[i].host), "127.0.0.1");
		snprintf(t[i].tier, sizeof(t[i].tier), "t0");
		snprintf(t[i].key, sizeof(t[i].key), "%s", key);
	}
	ck_assert_int_eq(worker_peers_open(t, 2, 2, standin_encode, NULL, NULL,
					   &ps),
			 0);
	ck_assert_uint_eq(worker_peers_count(ps), 2);
	partchunk_extent(BIG, 1, &off, &len);
	fd = scratch_file("chunk1");
	ck_assert_int_eq(worker_peers_fetch_chunk("big.bin", 1, len, mtime, fd,
						  ps),
			 0);
	ck_assert(same_as_src_range(fd, "big.bin", off, len));
	close(fd);
	/* the last chunk, shorter, over several ranges of the session */
	partchunk_extent(BIG, 3, &off, &len);
	fd = scratch_file("chunk3");
	ck_assert_int_eq(worker_peers_fetch_chunk("big.bin", 3, len, mtime, fd,
						  ps),
			 0);
	ck_assert(same_as_src_range(fd, "big.bin", off, len));
	close(fd);
	fd = scratch_file("stale");
	ck_assert_int_eq(worker_peers_fetch_chunk("big.bin", 1, MIB_1,
						  mtime - 1, fd, ps),
			 -1);
	ck_assert_int_eq(worker_peers_fetch_chunk("a.txt", 0, 1000,
						  src_mtime_ns("a.txt"), fd,
						  ps),
			 -1);
	close(fd);
	worker_peers_summary(ps, note_into, note);
	ck_assert_str_eq(note, "");
	worker_peers_close(ps);
}
END_TEST

/* A spread part under a new plan (the worker with --spread and --peers):
 * the chunks it owns come from the node whose part holds them, none from
 * SRC; once the file's mtime moved past the node's chunks, they are
 * refused and copied from SRC. */
START_TEST(test_worker_fills_chunks_from_peer)
{
	static const char *const nodes[] = { "n1", "n2", "n3" };
	static char out[65536];
	struct spread_plan plan;
	char list[512], dst[PATH_MAX], dst2[PATH_MAX], err[256];
	uint64_t mine = 0, mine_bytes = 0;
	const char *self;
	const char *argv[16];
	struct timespec later[2];

	if (!node_on_munged("chunk fill test"))
		return;
	ck_assert_int_eq(spread_plan_parse(CHUNK_PLAN, &plan, err, sizeof(err)),
			 0);
	ck_assert(
	    spread_chunked(&plan, spread_owner(&plan, "big.bin", 7), BIG));
	/* the node of chunk 0, and what it owns */
	self = nodes[spread_chunk_owner(&plan, "big.bin", 7, 0)];
	for (uint64_t k = 0; k < spread_chunk_count(BIG); k++) {
		uint64_t off, len;

		put_chunk(key, version, "big.bin", k);
		if (strcmp(nodes[spread_chunk_owner(&plan, "big.bin", 7, k)],
			   self))
			continue;
		partchunk_extent(BIG, k, &off, &len);
		mine++;
		mine_bytes += len;
	}
	snprintf(list, sizeof(list), "127.0.0.1:%u=t0/%s.v%u", port, key,
		 version);
	snprintf(dst, sizeof(dst), "%s/cdst", g.root);
	ck_assert_int_eq(mkdir(dst, 0700), 0);
	argv[0] = "--spread";
	argv[1] = CHUNK_PLAN;
	argv[2] = "--spread-self";
	argv[3] = self;
	argv[4] = "--peers";
	argv[5] = list;
	argv[6] = "--munge-socket";
	argv[7] = testmunge_socket;
	argv[8] = src;
	argv[9] = dst;
	argv[10] = NULL;
	ck_assert_msg(run_worker(argv, out, sizeof(out)) == 0, "%s", out);
	ck_assert_msg(strstr(out, "\"ok\":true"), "%s", out);
	ck_assert_uint_eq(figure(out, "chunks"), mine);
	ck_assert_uint_eq(figure(out, "chunks_fetched"), mine);
	ck_assert_uint_eq(figure(out, "chunks_fetched_bytes"), mine_bytes);
	ck_assert_uint_eq(figure(out, "chunks_copied"), 0);
	for (uint64_t k = 0; k < spread_chunk_count(BIG); k++) {
		char path[PATH_MAX + 64], name[PARTCHUNK_NAME_MAX];
		uint64_t off, len;
		int fd;

		if (strcmp(nodes[spread_chunk_owner(&plan, "big.bin", 7, k)],
			   self))
			continue;
		partchunk_name("big.bin", 7, k, name);
		snprintf(path, sizeof(path), "%s/%s/%s", dst, PARTCHUNKS_DIR,
			 name);
		fd = open(path, O_RDONLY | O_CLOEXEC);
		ck_assert_msg(fd >= 0, "%s: %s", path, strerror(errno));
		partchunk_extent(BIG, k, &off, &len);
		ck_assert_msg(same_as_src_range(fd, "big.bin", off, len),
			      "chunk %" PRIu64 " differs", k);
		close(fd);
	}
	/* big.bin touched (same bytes, a later mtime): the node's chunks
	 * are of the file before; the PFS gives them */
	ck_assert_int_eq(clock_gettime(CLOCK_REALTIME, &later[0]), 0);
	later[0].tv_sec += 5;
	later[1] = later[0];
	{
		char path[PATH_MAX];

		snprintf(path, sizeof(path), "%s/big.bin", src);
		ck_assert_int_eq(utimensat(AT_FDCWD, path, later, 0), 0);
	}
	snprintf(dst2, sizeof(dst2), "%s/cdst2", g.root);
	ck_assert_int_eq(mkdir(dst2, 0700), 0);
	argv[9] = dst2;
	ck_assert_msg(run_worker(argv, out, sizeof(out)) == 0, "%s", out);
	ck_assert_uint_eq(figure(out, "chunks_fetched"), 0);
	ck_assert_uint_eq(figure(out, "chunks_copied"), mine);
	ck_assert_uint_eq(figure(out, "chunks_copied_bytes"), mine_bytes);
	testmunge_stop();
}
END_TEST

static Suite *worker_peer_suite(void)
{
	Suite *s = suite_create("worker_peer");
	TCase *tw = tcase_create("worker");
	TCase *tb = tcase_create("bounds");

	tcase_add_checked_fixture(tw, setup, teardown);
	tcase_set_timeout(tw, 120);
	tcase_add_test(tw, test_worker_fills_from_peer);
	tcase_add_test(tw, test_worker_usage);
	tcase_add_test(tw, test_pool_retries_a_dead_idle_session);
	tcase_add_test(tw, test_pool_gives_up);
	tcase_add_test(tw, test_pool_names_its_job);
	tcase_add_test(tw, test_pools_fetch_a_chunk_from_its_holder);
	tcase_add_test(tw, test_worker_fills_chunks_from_peer);
	suite_add_tcase(s, tw);
	tcase_add_checked_fixture(tb, setup_two_sessions, teardown);
	tcase_set_timeout(tb, 60);
	tcase_add_test(tb, test_pool_within_server_bound);
	suite_add_tcase(s, tb);
	return s;
}

int main(void)
{
	return check_run(worker_peer_suite());
}
