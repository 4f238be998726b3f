/* check_peerfetch.c - fetch sessions end to end in one process: the
 * client (common/net/peerfetch.c) against iostaged's node channel
 * (daemon/cluster/peer.c, peer_fetch.c, daemon/staging/cache_serve.c)
 * over 127.0.0.1 (peerfetch_fixture.h: the node, its version, the
 * stand-in credential), and against small servers of the test's own that
 * misbehave (a transfer cut short, a size other than asked). The stage
 * worker's side is check_worker_peer.c.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <check.h>

#include "common/fs/manifest.h"
#include "common/net/peerfetch.h"
#include "common/net/peernet.h"
#include "daemon/cluster/peer.h"
#include "daemon/cluster/peer_fetch.h"
#include "tests/unit/check_run.h"
#include "tests/unit/peerfetch_fixture.h"
#include "tests/unit/testmunge.h"

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

/* A public entry is served to any user. */
START_TEST(test_public_entry_served_to_all)
{
	char pkey[CACHE_KEY_LEN + 1], err[1024];
	struct peerfetch *pf = NULL;
	unsigned v = build_version_of(true, pkey);
	int fd;

	cred_uid = geteuid() ? geteuid() + 1 : 1000;
	ck_assert_msg(open_session("t0", pkey, v, &pf, err, sizeof(err)) == 0,
		      "%s", err);
	fd = scratch_file("out");
	ck_assert_msg(peerfetch_file(pf, "sub/b.txt", fd, 5000, 5000, err,
				     sizeof(err)) == 0,
		      "%s", err);
	ck_assert(same_as_src(fd, "sub/b.txt"));
	close(fd);
	peerfetch_close(pf);
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
		{ "t0", key, 1000000000, "must be 1.." },
		/* the current version of an entry with none */
		{ "t0", other, 0, "not found" },
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

/* --- sessions that name a job (issue 29 item 6) ---------------------------- */

/* Job ID of UID, its one dataset SRC on t0 (spread with SPREAD, else a
 * whole copy, of path PATH: NULL for SRC) on nodes NODE and n2, inserted
 * into the node's table (a reference for the caller: jobs_put). */
static struct job *job_on(uint32_t id, uid_t uid, bool spread, const char *path,
			  const char *node)
{
	const char *const nodes[] = { node, "n2" };
	char json[1024], err[CONF_ERR_MAX];
	struct job *job;

	snprintf(json, sizeof(json),
		 "{\"datasets\":[{\"name\":\"ds\",\"path\":\"%s\","
		 "\"tier\":\"t0\",\"spread\":\"%s\"}]}",
		 path ? path : src, spread ? "yes" : "no");
	job = jobs_new_job(g.a.jobs, id, uid, uid, "tester",
			   ag_profile(&g, json), err, sizeof(err));
	ck_assert_msg(job != NULL, "jobs_new_job: %s", err);
	ck_assert_int_eq(jobs_set_nodes(job, nodes, 2, err, sizeof(err)), 0);
	ck_assert_msg(jobs_insert(g.a.jobs, job, NULL, err, sizeof(err)) == 0,
		      "jobs_insert: %s", err);
	jobs_staging_done(job, true, NULL); /* staged: the job runs */
	return job;
}

/* A session on K (version V) for job JOB (0: none). */
static int open_for_job(const char *k, unsigned v, uint32_t job,
			struct peerfetch **ret, char *err, size_t errlen)
{
	const struct peerfetch_opts o = { .encode = standin_encode,
					  .job = job };

	return peerfetch_open_with("127.0.0.1", port, &o, "t0", k, v, 5000, ret,
				   err, errlen);
}

/* A spread dataset's part is served for its own job, asked from one of
 * its nodes, and refused with its reason otherwise: no job, a job the
 * node does not run, another user's job, a job whose dataset it is
 * not (another source), an address that is none of the job's nodes. The
 * same source copied whole is served too: that copy's share in a fill by
 * parts has the part's key. Each refusal is counted. The part is a
 * user's (root's credential passes every user check): as root, uid
 * 4242's. */
START_TEST(test_part_needs_its_job)
{
	const uid_t user = geteuid() ? geteuid() : 4242, other = user + 1;
	struct job *jobs[] = {
		job_on(42, user, true, NULL, "127.0.0.1"),
		job_on(44, other, true, NULL, "127.0.0.1"),
		job_on(45, user, true, "/pfs/other", "127.0.0.1"),
		job_on(46, user, false, NULL, "127.0.0.1"),
		/* TEST-NET-1: never this host */
		job_on(47, user, true, NULL, "192.0.2.1"),
	};
	const struct {
		uint32_t job;
		const char *error;
	} refused[] = {
		{ 0, "is a part of a spread dataset: the request names no "
		     "job" },
		{ 43, "job 43 is not running here" },
		{ 44, "job 44 is another user's" },
		{ 45, "is not a dataset of job 45 on this node" },
		{ 47, "127.0.0.1 is not a node of job 47" },
	};
	char pkey[CACHE_KEY_LEN + 1], err[1024], entry[128];
	unsigned v = build_version_owned(user, false, true, pkey);
	struct peer_fetch_counts before, after;
	struct peerfetch *pf = NULL;
	int fd;

	cred_uid = user;

	snprintf(entry, sizeof(entry), "entry t0/%s.v%u", pkey, v);
	ck_assert_msg(open_for_job(pkey, v, 42, &pf, err, sizeof(err)) == 0,
		      "job 42: %s", err);
	fd = scratch_file("out");
	ck_assert_msg(peerfetch_file(pf, "sub/b.txt", fd, 5000, 5000, err,
				     sizeof(err)) == 0,
		      "%s", err);
	ck_assert(same_as_src(fd, "sub/b.txt"));
	close(fd);
	peerfetch_close(pf);
	/* job 46 copies the source whole: the part is its share */
	ck_assert_msg(open_for_job(pkey, v, 46, &pf, err, sizeof(err)) == 0,
		      "job 46 (a whole copy's share): %s", err);
	peerfetch_close(pf);
	/* the current version, as the view asks for it */
	ck_assert_msg(open_for_job(pkey, 0, 42, &pf, err, sizeof(err)) == 0,
		      "job 42, version 0: %s", err);
	ck_assert_uint_eq(peerfetch_version(pf), v);
	peerfetch_close(pf);
	peer_fetch_counts(peer_fetcher(g.a.peer), &before);
	for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
		pf = NULL;
		ck_assert_int_eq(open_for_job(pkey, v, refused[i].job, &pf, err,
					      sizeof(err)),
				 -1);
		ck_assert_ptr_null(pf);
		ck_assert_msg(strstr(err, refused[i].error), "job %u: %s",
			      refused[i].job, err);
		ck_assert_msg(strstr(err, entry), "job %u: %s", refused[i].job,
			      err);
	}
	peer_fetch_counts(peer_fetcher(g.a.peer), &after);
	ck_assert_uint_eq(after.refused - before.refused,
			  sizeof(refused) / sizeof(refused[0]));
	ck_assert_uint_eq(after.sessions, before.sessions);
	/* root's credential needs the job too */
	cred_uid = 0;
	ck_assert_int_eq(open_session("t0", pkey, v, &pf, err, sizeof(err)),
			 -1);
	ck_assert_msg(strstr(err, "names no job"), "root: %s", err);
	ck_assert_msg(open_for_job(pkey, v, 42, &pf, err, sizeof(err)) == 0,
		      "root, job 42: %s", err);
	peerfetch_close(pf);
	/* another user's credential for our job: the entry is ours, so it
	 * is not found, as without a job */
	cred_uid = other;
	ck_assert_int_eq(open_for_job(pkey, v, 42, &pf, err, sizeof(err)), -1);
	ck_assert_msg(strstr(err, "not found on tier 't0'"), "%s", err);
	for (size_t i = 0; i < sizeof(jobs) / sizeof(jobs[0]); i++)
		jobs_put(jobs[i]);
}
END_TEST

/* A scripted iostagectld: the next connections are answered, in turn,
 * with ANSWERS (whatever they ask). */
struct ctl_script {
	int lfd;
	unsigned port;
	const char *const *answers;
	size_t n;
	pthread_t thread;
};

static void *ctl_script_run(void *arg)
{
	struct ctl_script *c = arg;

	for (size_t i = 0; i < c->n; i++) {
		struct pollfd pfd = { .fd = c->lfd, .events = POLLIN };
		cJSON *reply = cJSON_Parse(c->answers[i]);
		char *line;
		int fd;

		if (poll(&pfd, 1, 10000) <= 0 ||
		    (fd = accept(c->lfd, NULL, NULL)) < 0) {
			cJSON_Delete(reply);
			break;
		}
		line = peernet_read_line(fd, 5000);
		free(line);
		peernet_send(fd, reply, 5000);
		cJSON_Delete(reply);
		close(fd);
	}
	return NULL;
}

/* A part asked for a job this node does not run (it held the part for
 * an earlier job): iostagectld says what Slurm has of the job, and the
 * session goes on only for a running job of the asker's with the asking
 * node among its nodes; without an answer it is refused. Needs a
 * private munged (the question to iostagectld carries a credential). */
START_TEST(test_part_for_a_job_run_elsewhere)
{
	const uid_t user = geteuid() ? geteuid() : 4242;
	char pkey[CACHE_KEY_LEN + 1], err[1024], a[5][256];
	const char *answers[5];
	struct ctl_script c = { .answers = answers, .n = 5 };
	struct sockaddr_in sa;
	socklen_t len = sizeof(sa);
	struct peerfetch *pf = NULL;
	unsigned v;
	int fd;

	if (testmunge_start() < 0) {
		printf("check_peerfetch: no private munged: "
		       "test_part_for_a_job_run_elsewhere skipped\n");
		return;
	}
	cred_uid = user;
	v = build_version_owned(user, false, true, pkey);
	/* no iostagectld to ask */
	ck_assert_int_eq(open_for_job(pkey, v, 77, &pf, err, sizeof(err)), -1);
	ck_assert_msg(strstr(err, "job 77 is not running here (and no "
				  "iostagectld to ask for its nodes)"),
		      "%s", err);
	snprintf(a[0], sizeof(a[0]),
		 "{\"ok\":true,\"job\":77,\"running\":true,\"uid\":%u,"
		 "\"nodes\":[\"192.0.2.1\",\"127.0.0.1\"]}",
		 (unsigned)user);
	snprintf(a[1], sizeof(a[1]),
		 "{\"ok\":true,\"job\":77,\"running\":true,\"uid\":%u,"
		 "\"nodes\":[\"192.0.2.1\"]}",
		 (unsigned)user);
	snprintf(a[2], sizeof(a[2]),
		 "{\"ok\":true,\"job\":77,\"running\":false,\"uid\":%u,"
		 "\"nodes\":[]}",
		 (unsigned)user);
	snprintf(a[3], sizeof(a[3]),
		 "{\"ok\":true,\"job\":77,\"running\":true,\"uid\":%u,"
		 "\"nodes\":[\"127.0.0.1\"]}",
		 (unsigned)user + 1);
	snprintf(a[4], sizeof(a[4]),
		 "{\"ok\":false,\"error\":\"job_nodes: job 77: Invalid job "
		 "id specified\"}");
	for (size_t i = 0; i < 5; i++)
		answers[i] = a[i];
	c.lfd = peernet_listen("127.0.0.1", 0, err, sizeof(err));
	ck_assert_msg(c.lfd >= 0, "%s", err);
	ck_assert_int_eq(getsockname(c.lfd, (struct sockaddr *)&sa, &len), 0);
	c.port = ntohs(sa.sin_port);
	ck_assert_int_eq(pthread_create(&c.thread, NULL, ctl_script_run, &c),
			 0);
	snprintf(g.conf.controller_host, sizeof(g.conf.controller_host),
		 "127.0.0.1");
	g.conf.controller_port = c.port;
	snprintf(g.conf.munge_socket, sizeof(g.conf.munge_socket), "%.*s",
		 (int)sizeof(g.conf.munge_socket) - 1, testmunge_socket);
	/* running, the user's, this node's address among its nodes */
	ck_assert_msg(open_for_job(pkey, v, 77, &pf, err, sizeof(err)) == 0,
		      "%s", err);
	fd = scratch_file("elsewhere");
	ck_assert_msg(peerfetch_file(pf, "sub/b.txt", fd, 5000, 5000, err,
				     sizeof(err)) == 0,
		      "%s", err);
	ck_assert(same_as_src(fd, "sub/b.txt"));
	close(fd);
	peerfetch_close(pf);
	ck_assert_int_eq(open_for_job(pkey, v, 77, &pf, err, sizeof(err)), -1);
	ck_assert_msg(strstr(err, "127.0.0.1 is not a node of job 77"), "%s",
		      err);
	ck_assert_int_eq(open_for_job(pkey, v, 77, &pf, err, sizeof(err)), -1);
	ck_assert_msg(strstr(err, "job 77 is not running"), "%s", err);
	ck_assert_int_eq(open_for_job(pkey, v, 77, &pf, err, sizeof(err)), -1);
	ck_assert_msg(strstr(err, "job 77 is another user's"), "%s", err);
	ck_assert_int_eq(open_for_job(pkey, v, 77, &pf, err, sizeof(err)), -1);
	ck_assert_msg(strstr(err, "iostagectld says: job_nodes: job 77: "
				  "Invalid job id specified"),
		      "%s", err);
	pthread_join(c.thread, NULL);
	close(c.lfd);
	/* iostagectld gone */
	ck_assert_int_eq(open_for_job(pkey, v, 77, &pf, err, sizeof(err)), -1);
	ck_assert_msg(strstr(err, "its nodes cannot be asked"), "%s", err);
	g.conf.controller_host[0] = '\0';
	testmunge_stop();
}
END_TEST

/* A whole entry is served without a job (a fill from another job's
 * node); a job named is checked as for a part. A public part is served
 * for the job to any user. */
START_TEST(test_whole_entry_job_checked_when_named)
{
	const uid_t other = geteuid() ? geteuid() + 1 : 1000;
	struct job *whole = job_on(46, geteuid(), false, NULL, "127.0.0.1");
	struct job *far = job_on(47, geteuid(), false, NULL, "192.0.2.1");
	struct job *spread = job_on(48, other, true, NULL, "localhost");
	char pkey[CACHE_KEY_LEN + 1], err[1024];
	struct peerfetch *pf = NULL;
	unsigned pv;

	ck_assert_msg(open_for_job(key, version, 0, &pf, err, sizeof(err)) == 0,
		      "no job: %s", err);
	peerfetch_close(pf);
	ck_assert_msg(open_for_job(key, version, 46, &pf, err, sizeof(err)) ==
			  0,
		      "job 46: %s", err);
	peerfetch_close(pf);
	ck_assert_int_eq(open_for_job(key, version, 47, &pf, err, sizeof(err)),
			 -1);
	ck_assert_msg(strstr(err, "127.0.0.1 is not a node of job 47"), "%s",
		      err);
	ck_assert_int_eq(open_for_job(key, version, 99, &pf, err, sizeof(err)),
			 -1);
	ck_assert_msg(strstr(err, "job 99 is not running here"), "%s", err);
	/* a public part, for job 48 of another user (asked by a third:
	 * anyone), its node named by name */
	pv = build_version_owned(geteuid(), true, true, pkey);
	cred_uid = other + 1;
	ck_assert_msg(open_for_job(pkey, pv, 48, &pf, err, sizeof(err)) == 0,
		      "public part, job 48: %s", err);
	peerfetch_close(pf);
	ck_assert_int_eq(open_for_job(pkey, pv, 0, &pf, err, sizeof(err)), -1);
	ck_assert_msg(strstr(err, "names no job"), "%s", err);
	jobs_put(whole);
	jobs_put(far);
	jobs_put(spread);
}
END_TEST

/* The server: a "job" that is not a job id is refused (a raw session:
 * the client never sends one). */
START_TEST(test_job_member_malformed)
{
	const char *const jobs[] = { "0",          "-1",     "1.5",
				     "4294967296", "\"42\"", "true" };
	char text[512], err[1024];

	for (size_t i = 0; i < sizeof(jobs) / sizeof(jobs[0]); i++) {
		cJSON *req, *reply;
		char *line;
		int sv[2];

		snprintf(text, sizeof(text),
			 "{\"op\":\"fetch_open\",\"tier\":\"t0\","
			 "\"key\":\"%s\",\"job\":%s}",
			 key, jobs[i]);
		req = cJSON_Parse(text);
		ck_assert_ptr_nonnull(req);
		line = peernet_request_line_by(standin_encode, NULL, req, err,
					       sizeof(err));
		ck_assert_ptr_nonnull(line);
		ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
		ck_assert_int_gt(dprintf(sv[1], "%s\n", line), 0);
		reply = peer_serve_fd(g.a.peer, sv[0]);
		ck_assert_ptr_nonnull(reply);
		ck_assert(reply != PEERSERVE_TAKEN);
		ck_assert_msg(strstr(cJSON_GetStringValue(
					 cJSON_GetObjectItem(reply, "error")),
				     "key 'job': a job id"),
			      "job %s: wrong refusal", jobs[i]);
		cJSON_Delete(reply);
		close(sv[0]);
		close(sv[1]);
		free(line);
		cJSON_Delete(req);
	}
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

/* Version 0 opens the entry's current version, and says which; another
 * user's entry is still "not found". */
START_TEST(test_current_version)
{
	struct peerfetch *pf = NULL;
	char err[1024];
	unsigned v2;
	int fd;

	ck_assert_msg(open_session("t0", key, 0, &pf, err, sizeof(err)) == 0,
		      "%s", err);
	ck_assert_uint_eq(peerfetch_version(pf), version);
	peerfetch_close(pf);
	/* a newer one published: that one */
	v2 = build_version();
	ck_assert_uint_eq(v2, version + 1);
	ck_assert_msg(open_session("t0", key, 0, &pf, err, sizeof(err)) == 0,
		      "%s", err);
	ck_assert_uint_eq(peerfetch_version(pf), v2);
	fd = scratch_file("out");
	ck_assert_msg(peerfetch_file(pf, "a.txt", fd, 1000, 5000, err,
				     sizeof(err)) == 0,
		      "%s", err);
	ck_assert(same_as_src(fd, "a.txt"));
	close(fd);
	peerfetch_close(pf);
	/* an explicit version is still that one */
	ck_assert_msg(open_session("t0", key, version, &pf, err, sizeof(err)) ==
			  0,
		      "%s", err);
	ck_assert_uint_eq(peerfetch_version(pf), version);
	peerfetch_close(pf);
	cred_uid = geteuid() ? geteuid() + 1 : 1000;
	ck_assert_int_eq(open_session("t0", key, 0, &pf, err, sizeof(err)), -1);
	ck_assert_msg(strstr(err, "not found on tier 't0'"), "%s", err);
}
END_TEST

/* The bytes [OFF, OFF + LEN) of SRC/REL, compared with BUF. */
static bool same_range(const char *rel, uint64_t off, const char *buf,
		       size_t len)
{
	char path[PATH_MAX], *want = malloc(len + 1);
	bool same;
	int in;

	ck_assert_ptr_nonnull(want);
	snprintf(path, sizeof(path), "%s/%s", src, rel);
	in = open(path, O_RDONLY | O_CLOEXEC);
	ck_assert_int_ge(in, 0);
	ck_assert_int_eq(pread(in, want, len, (off_t)off), (ssize_t)len);
	same = !memcmp(want, buf, len);
	close(in);
	free(want);
	return same;
}

/* Ranges of a file: start, middle, end, cut at the end, empty at the
 * end; refusals leave the session usable. */
START_TEST(test_ranges)
{
	const struct {
		const char *path;
		uint64_t size, off;
		size_t len, got;
	} cases[] = {
		{ "big.bin", BIG, 0, 4096, 4096 },
		{ "big.bin", BIG, 1000003, 70000, 70000 },
		{ "big.bin", BIG, BIG - 100, 100, 100 },
		{ "big.bin", BIG, BIG - 100, 4096, 100 }, /* past the end */
		{ "big.bin", BIG, BIG, 4096, 0 },         /* at the end */
		{ "a.txt", 1000, 0, 1000, 1000 },
		{ "sub/b.txt", 5000, 4999, 1, 1 },
		{ "empty", 0, 0, 10, 0 },
	};
	const struct {
		const char *path;
		uint64_t size, off;
		const char *error;
	} refused[] = {
		{ "a.txt", 999, 0, "1000 bytes here, not 999" },
		{ "a.txt", 2000, 1500, "1000 bytes here, not 2000" },
		{ "../a.txt", 1000, 0, "not a clean relative path" },
		{ "missing", 10, 0, "No such file" },
		{ "sub", 0, 0, "not a regular file" },
	};
	struct peer_fetch_counts c;
	struct peerfetch *pf = must_open();
	char err[1024], *buf = malloc(BIG);
	uint64_t total = 0;
	size_t got;

	ck_assert_ptr_nonnull(buf);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		got = 12345;
		ck_assert_msg(peerfetch_range(pf, cases[i].path, cases[i].size,
					      cases[i].off, buf, cases[i].len,
					      5000, &got, err,
					      sizeof(err)) == 0,
			      "case %zu: %s", i, err);
		ck_assert_uint_eq(got, cases[i].got);
		ck_assert_msg(same_range(cases[i].path, cases[i].off, buf, got),
			      "case %zu differs", i);
		total += got;
	}
	for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
		ck_assert_int_eq(peerfetch_range(pf, refused[i].path,
						 refused[i].size,
						 refused[i].off, buf, 10, 5000,
						 &got, err, sizeof(err)),
				 -1);
		ck_assert_msg(strstr(err, refused[i].error), "refused %zu: %s",
			      i, err);
		ck_assert_msg(peerfetch_usable(pf), "refused %zu", i);
	}
	/* past the end: the client does not even ask */
	ck_assert_int_eq(peerfetch_range(pf, "a.txt", 1000, 1001, buf, 10, 5000,
					 &got, err, sizeof(err)),
			 -1);
	ck_assert_msg(strstr(err, "past the end"), "%s", err);
	ck_assert(peerfetch_usable(pf));
	/* a whole file still works on the same session */
	{
		int fd = scratch_file("out");

		ck_assert_msg(peerfetch_file(pf, "a.txt", fd, 1000, 5000, err,
					     sizeof(err)) == 0,
			      "%s", err);
		ck_assert(same_as_src(fd, "a.txt"));
		close(fd);
	}
	ck_assert_uint_eq(peerfetch_bytes(pf), total + 1000);
	peerfetch_close(pf);
	for (int i = 0; i < 100; i++) {
		peer_fetch_counts(peer_fetcher(g.a.peer), &c);
		if (!c.active)
			break;
		usleep(20000);
	}
	/* ranges count as bytes served, not as files */
	ck_assert_uint_eq(c.files, 1);
	ck_assert_uint_eq(c.bytes, total + 1000);
	free(buf);
}
END_TEST

/* The server: an offset past the end is refused, a range without its
 * length too, a length over PEERFETCH_RANGE_MAX capped to it (a raw
 * session: the client never asks for any of them). */
START_TEST(test_range_server_bounds)
{
	const size_t huge = PEERFETCH_RANGE_MAX + 4097;
	char err[1024], line[4096], path[PATH_MAX], *req_line;
	char *buf = malloc(huge), *back = malloc(huge);
	cJSON *req = cJSON_Parse(
	    "{\"op\":\"fetch_open\",\"tier\":\"t0\",\"manifest\":false}");
	FILE *in;
	int sv[2], fd;
	pid_t pid;

	ck_assert(buf && back && req);
	/* a file larger than one range, put in the version's data */
	for (size_t i = 0; i < huge; i++)
		buf[i] = (char)(i * 13 + i / 4099);
	ck_assert_int_eq(chmod(data, 0700), 0);
	snprintf(path, sizeof(path), "%s/huge", data);
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0400);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, buf, huge), (ssize_t)huge);
	close(fd);
	ck_assert_int_eq(chmod(data, 0500), 0);
	cJSON_AddStringToObject(req, "key", key);
	req_line = peernet_request_line_by(standin_encode, NULL, req, err,
					   sizeof(err));
	ck_assert_ptr_nonnull(req_line);
	ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		close(sv[1]);
		peer_serve_fd(g.a.peer, sv[0]); /* PEERSERVE_TAKEN */
		_exit(0);
	}
	close(sv[0]);
	ck_assert_int_gt(dprintf(sv[1],
				 "%s\n"
				 "{\"path\":\"a.txt\",\"size\":1000,"
				 "\"off\":1001,\"len\":1}\n"
				 "{\"path\":\"a.txt\",\"size\":1000,"
				 "\"off\":10}\n"
				 "{\"path\":\"huge\",\"size\":%zu,"
				 "\"off\":1,\"len\":99999999999}\n",
				 req_line, huge),
			 0);
	shutdown(sv[1], SHUT_WR);
	in = fdopen(sv[1], "r");
	ck_assert_ptr_nonnull(in);
	ck_assert_ptr_nonnull(fgets(line, sizeof(line), in));
	ck_assert_msg(strstr(line, "\"version\":1"), "%s", line);
	ck_assert_ptr_nonnull(fgets(line, sizeof(line), in));
	ck_assert_msg(strstr(line, "past the end"), "%s", line);
	ck_assert_ptr_nonnull(fgets(line, sizeof(line), in));
	ck_assert_msg(strstr(line, "needs both"), "%s", line);
	ck_assert_ptr_nonnull(fgets(line, sizeof(line), in));
	snprintf(err, sizeof(err), "\"off\":1,\"len\":%u}",
		 PEERFETCH_RANGE_MAX);
	ck_assert_msg(strstr(line, err), "%s", line);
	ck_assert_uint_eq(fread(back, 1, huge, in), PEERFETCH_RANGE_MAX);
	ck_assert(!memcmp(back, buf + 1, PEERFETCH_RANGE_MAX));
	fclose(in);
	waitpid(pid, NULL, 0);
	free(req_line);
	cJSON_Delete(req);
	free(buf);
	free(back);
}
END_TEST

/* --- chunks of files too large for one node (common/fs/partchunks.h) --- */

#define MIB (UINT64_C(1) << 20)

/* Ranges of a file's chunks: each chunk's bytes from its file in the
 * version's chunks directory, byte-exact at an offset; a version
 * without one, a chunk not held, of another size, an unclean path, a
 * symlink: refused, the session goes on. */
START_TEST(test_chunk_ranges)
{
	/* big.bin (3 MiB + 17): chunks of 1 MiB, the last of 17 bytes */
	const struct {
		uint64_t index, size, off;
		size_t len, got;
	} cases[] = {
		{ 0, MIB, 0, 4096, 4096 },
		{ 1, MIB, 12345, 70000, 70000 },
		{ 2, MIB, MIB - 100, 4096, 100 }, /* cut at the chunk's end */
		{ 3, 17, 0, 4096, 17 },
		{ 3, 17, 17, 10, 0 }, /* at its end */
	};
	const struct {
		const char *path;
		uint64_t index, size;
		const char *error;
	} refused[] = {
		{ "big.bin", 1, 999,
		  "'big.bin' chunk 1: 1048576 bytes here, "
		  "not 999" },
		{ "big.bin", 3, MIB,
		  "'big.bin' chunk 3: 17 bytes here, not "
		  "1048576" },
		{ "big.bin", 4, MIB, "'big.bin' chunk 4: not held here" },
		{ "a.txt", 0, 1000, "'a.txt' chunk 0: not held here" },
		{ "../big.bin", 0, MIB, "chunk 0: not a clean relative path" },
		{ "sub/../big.bin", 0, MIB, "not a clean relative path" },
		{ "/big.bin", 0, MIB, "not a clean relative path" },
		{ "", 0, MIB, "'' chunk 0: not a clean relative path" },
		{ "link", 0, 5, "'link' chunk 0: a symlink on the way" },
	};
	char err[1024], path[PATH_MAX], elsewhere[PATH_MAX + 16];
	char *buf = malloc(MIB);
	struct peer_fetch_counts c;
	struct peerfetch *pf;
	uint64_t total = 0;
	size_t got = 12345;
	const int64_t big_mtime = src_mtime_ns("big.bin");

	ck_assert_ptr_nonnull(buf);
	/* a version without a chunks directory holds none */
	pf = must_open();
	ck_assert_int_eq(peerfetch_chunk_range(pf, "big.bin", 0, MIB, big_mtime,
					       0, buf, 10, 5000, &got, err,
					       sizeof(err)),
			 -1);
	ck_assert_msg(strstr(err, "'big.bin' chunk 0: not held here"), "%s",
		      err);
	ck_assert_uint_eq(got, 12345);
	ck_assert(peerfetch_usable(pf));
	peerfetch_close(pf);
	/* nor one whose chunks directory is a symlink (to a directory
	 * holding big.bin's chunk 0) */
	put_chunk(key, version, "big.bin", 0);
	ck_assert_int_eq(cache_version_path(g.a.cache, 0, key, version, false,
					    path, sizeof(path)),
			 0);
	strcat(path, "/" PARTCHUNKS_DIR);
	snprintf(elsewhere, sizeof(elsewhere), "%s.elsewhere", path);
	ck_assert_int_eq(rename(path, elsewhere), 0);
	ck_assert_int_eq(symlink(PARTCHUNKS_DIR ".elsewhere", path), 0);
	pf = must_open();
	ck_assert_int_eq(peerfetch_chunk_range(pf, "big.bin", 0, MIB, big_mtime,
					       0, buf, 10, 5000, &got, err,
					       sizeof(err)),
			 -1);
	ck_assert_msg(strstr(err, "'big.bin' chunk 0: not held here"), "%s",
		      err);
	peerfetch_close(pf);
	ck_assert_int_eq(unlink(path), 0);
	ck_assert_int_eq(rename(elsewhere, path), 0);
	for (uint64_t i = 0; i < 4; i++)
		put_chunk(key, version, "big.bin", i);
	/* a symlink where a chunk would be */
	chunk_path(key, version, "link", 0, path, sizeof(path));
	ck_assert_int_eq(symlink("../data/a.txt", path), 0);
	pf = must_open();
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		got = 12345;
		ck_assert_msg(peerfetch_chunk_range(
				  pf, "big.bin", cases[i].index, cases[i].size,
				  big_mtime, cases[i].off, buf, cases[i].len,
				  5000, &got, err, sizeof(err)) == 0,
			      "case %zu: %s", i, err);
		ck_assert_uint_eq(got, cases[i].got);
		ck_assert_msg(same_range("big.bin",
					 cases[i].index * MIB + cases[i].off,
					 buf, got),
			      "case %zu differs", i);
		total += got;
	}
	for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
		got = 12345;
		ck_assert_int_eq(
		    peerfetch_chunk_range(pf, refused[i].path, refused[i].index,
					  refused[i].size, big_mtime, 0, buf,
					  10, 5000, &got, err, sizeof(err)),
		    -1);
		ck_assert_msg(strstr(err, refused[i].error), "refused %zu: %s",
			      i, err);
		ck_assert_msg(peerfetch_usable(pf), "refused %zu", i);
		ck_assert_uint_eq(got, 12345);
	}
	/* a chunk of the same length cut from the file as it was before
	 * (or after) the listing's mtime: other bytes, refused */
	got = 12345;
	ck_assert_int_eq(peerfetch_chunk_range(pf, "big.bin", 2, MIB,
					       big_mtime + 1, 0, buf, 10, 5000,
					       &got, err, sizeof(err)),
			 -1);
	ck_assert_msg(strstr(err, "'big.bin' chunk 2: cut from the file as "
				  "of mtime ") &&
			  strstr(err, ", not "),
		      "%s", err);
	ck_assert(peerfetch_usable(pf));
	ck_assert_uint_eq(got, 12345);
	/* past the chunk's end: the client does not even ask */
	ck_assert_int_eq(peerfetch_chunk_range(pf, "big.bin", 3, 17, big_mtime,
					       18, buf, 10, 5000, &got, err,
					       sizeof(err)),
			 -1);
	ck_assert_msg(strstr(err, "chunk 3 at 18: past the end"), "%s", err);
	/* a chunk is not the file: a range of the file itself is refused
	 * (the version's data has no big.bin of 1 MiB) */
	ck_assert_int_eq(peerfetch_range(pf, "big.bin", MIB, 0, buf, 10, 5000,
					 &got, err, sizeof(err)),
			 -1);
	ck_assert_msg(strstr(err, "bytes here, not 1048576"), "%s", err);
	/* the session still serves files and chunks */
	ck_assert_msg(peerfetch_range(pf, "a.txt", 1000, 10, buf, 10, 5000,
				      &got, err, sizeof(err)) == 0,
		      "%s", err);
	ck_assert(same_range("a.txt", 10, buf, 10));
	total += 10;
	ck_assert_msg(peerfetch_chunk_range(pf, "big.bin", 2, MIB, big_mtime, 7,
					    buf, MIB, 5000, &got, err,
					    sizeof(err)) == 0,
		      "%s", err);
	ck_assert_uint_eq(got, MIB - 7);
	ck_assert(same_range("big.bin", 2 * MIB + 7, buf, got));
	total += got;
	ck_assert_uint_eq(peerfetch_bytes(pf), total);
	peerfetch_close(pf);
	for (int i = 0; i < 100; i++) {
		peer_fetch_counts(peer_fetcher(g.a.peer), &c);
		if (!c.active)
			break;
		usleep(20000);
	}
	/* chunks count as bytes served, as ranges, not as files */
	ck_assert_uint_eq(c.files, 0);
	ck_assert_uint_eq(c.bytes, total);
	free(buf);
}
END_TEST

/* A chunk file that is not the entry's user's is not served, as a
 * file. Needs root (chown). */
START_TEST(test_chunk_of_another_owner_refused)
{
	char path[PATH_MAX], err[1024], buf[16];
	struct peerfetch *pf;
	size_t got;

	if (geteuid() != 0) {
		printf("SKIP: test_chunk_of_another_owner_refused needs root "
		       "(chown)\n");
		return;
	}
	const int64_t big_mtime = src_mtime_ns("big.bin");

	put_chunk(key, version, "big.bin", 1);
	chunk_path(key, version, "big.bin", 1, path, sizeof(path));
	ck_assert_int_eq(chown(path, 4242, 4242), 0);
	pf = must_open();
	ck_assert_int_eq(peerfetch_chunk_range(pf, "big.bin", 1, MIB, big_mtime,
					       0, buf, sizeof(buf), 5000, &got,
					       err, sizeof(err)),
			 -1);
	ck_assert_msg(strstr(err, "'big.bin' chunk 1: not the entry's own "
				  "file"),
		      "%s", err);
	ck_assert(peerfetch_usable(pf));
	peerfetch_close(pf);
}
END_TEST

/* The server: a chunk without a range, with half of one, or whose index
 * is not a whole number is refused with one line and the session goes
 * on; a chunk's reply names it (a raw session: the client never sends
 * the refused ones). */
START_TEST(test_chunk_server_bounds)
{
	static const char *const bad[] = {
		"{\"path\":\"big.bin\",\"chunk\":1,\"size\":1048576}",
		"{\"path\":\"big.bin\",\"chunk\":1,\"size\":1048576,"
		"\"off\":0}",
		"{\"path\":\"big.bin\",\"chunk\":1,\"size\":1048576,"
		"\"len\":10}",
		"{\"path\":\"big.bin\",\"chunk\":1.5,\"size\":1048576,"
		"\"off\":0,\"len\":10}",
		"{\"path\":\"big.bin\",\"chunk\":-1,\"size\":1048576,"
		"\"off\":0,\"len\":10}",
		"{\"path\":\"big.bin\",\"chunk\":\"1\",\"size\":1048576,"
		"\"off\":0,\"len\":10}",
		"{\"path\":\"big.bin\",\"chunk\":null,\"size\":1048576,"
		"\"off\":0,\"len\":10}",
		"{\"path\":\"big.bin\",\"chunk\":1,\"size\":1048576,"
		"\"mtime_ns\":12,\"off\":0,\"len\":10}",
		"{\"path\":\"big.bin\",\"chunk\":1,\"size\":1048576,"
		"\"mtime_ns\":\"12x\",\"off\":0,\"len\":10}",
		"{\"path\":\"big.bin\",\"chunk\":1,\"size\":1048576,"
		"\"mtime_ns\":\"\",\"off\":0,\"len\":10}",
		"{\"path\":\"big.bin\",\"chunk\":1,\"size\":1048576,"
		"\"mtime_ns\":\"99999999999999999999\",\"off\":0,\"len\":10}",
	};
	static const char *const why[] = {
		"'chunk' needs 'off' and 'len'",
		"'chunk' needs 'off' and 'len'",
		"'chunk' needs 'off' and 'len'",
		"key 'chunk': a whole number",
		"key 'chunk': a whole number",
		"key 'chunk': a whole number",
		"key 'chunk': a whole number",
		"key 'mtime_ns': ns since the epoch",
		"key 'mtime_ns': ns since the epoch",
		"key 'mtime_ns': ns since the epoch",
		"key 'mtime_ns': ns since the epoch",
	};
	char err[1024], line[4096], want[64], *req_line;
	cJSON *req = cJSON_Parse(
	    "{\"op\":\"fetch_open\",\"tier\":\"t0\",\"manifest\":false}");
	FILE *in;
	int sv[2];
	pid_t pid;

	ck_assert_ptr_nonnull(req);
	put_chunk(key, version, "big.bin", 1);
	cJSON_AddStringToObject(req, "key", key);
	req_line = peernet_request_line_by(standin_encode, NULL, req, err,
					   sizeof(err));
	ck_assert_ptr_nonnull(req_line);
	ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		close(sv[1]);
		peer_serve_fd(g.a.peer, sv[0]); /* PEERSERVE_TAKEN */
		_exit(0);
	}
	close(sv[0]);
	ck_assert_int_gt(dprintf(sv[1], "%s\n", req_line), 0);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		ck_assert_int_gt(dprintf(sv[1], "%s\n", bad[i]), 0);
	ck_assert_int_gt(dprintf(sv[1], "{\"path\":\"big.bin\",\"chunk\":1,"
					"\"size\":1048576,\"off\":5,"
					"\"len\":3}\n"),
			 0);
	shutdown(sv[1], SHUT_WR);
	in = fdopen(sv[1], "r");
	ck_assert_ptr_nonnull(in);
	ck_assert_ptr_nonnull(fgets(line, sizeof(line), in));
	ck_assert_msg(strstr(line, "\"version\":1"), "%s", line);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		ck_assert_ptr_nonnull(fgets(line, sizeof(line), in));
		ck_assert_msg(strstr(line, "\"ok\":false") &&
				  strstr(line, why[i]),
			      "bad %zu: %s", i, line);
	}
	ck_assert_ptr_nonnull(fgets(line, sizeof(line), in));
	ck_assert_str_eq(line, "{\"ok\":true,\"chunk\":1,\"size\":1048576,"
			       "\"off\":5,\"len\":3}\n");
	ck_assert_uint_eq(fread(want, 1, sizeof(want), in), 3);
	ck_assert(same_range("big.bin", MIB + 5, want, 3));
	fclose(in);
	waitpid(pid, NULL, 0);
	free(req_line);
	cJSON_Delete(req);
}
END_TEST

/* A file in the version that is not the entry's user's (a hard link to
 * another's file, where fs.protected_hardlinks is off) is not served:
 * root would read it for the user. Needs root (chown). */
START_TEST(test_file_of_another_owner_refused)
{
	char path[PATH_MAX], err[1024];
	struct peerfetch *pf;
	int fd;

	if (geteuid() != 0) {
		printf("SKIP: test_file_of_another_owner_refused needs root "
		       "(chown)\n");
		return;
	}
	snprintf(path, sizeof(path), "%s/a.txt", data);
	ck_assert_int_eq(chmod(data, 0700), 0);
	ck_assert_int_eq(chown(path, 4242, 4242), 0);
	ck_assert_int_eq(chmod(data, 0500), 0);
	pf = must_open();
	fd = scratch_file("out");
	ck_assert_int_eq(peerfetch_file(pf, "a.txt", fd, 1000, 5000, err,
					sizeof(err)),
			 -1);
	ck_assert_msg(strstr(err, "not the entry's own file"), "%s", err);
	ck_assert_int_eq(size_of(fd), 0);
	ck_assert(peerfetch_usable(pf));
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

static Suite *peerfetch_suite(void)
{
	Suite *s = suite_create("peerfetch");
	TCase *tc = tcase_create("session");
	TCase *tb = tcase_create("bounds");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_session_fetches_files);
	tcase_add_test(tc, test_open_refused);
	tcase_add_test(tc, test_other_user_refused);
	tcase_add_test(tc, test_public_entry_served_to_all);
	tcase_add_test(tc, test_file_refused);
	tcase_add_test(tc, test_current_version);
	tcase_add_test(tc, test_ranges);
	tcase_add_test(tc, test_range_server_bounds);
	tcase_add_test(tc, test_chunk_ranges);
	tcase_add_test(tc, test_chunk_of_another_owner_refused);
	tcase_add_test(tc, test_chunk_server_bounds);
	tcase_add_test(tc, test_file_of_another_owner_refused);
	tcase_add_test(tc, test_broken_mid_file);
	tcase_add_test(tc, test_server_size_mismatch);
	tcase_add_test(tc, test_unreachable);
	tcase_add_test(tc, test_other_ops_root_only);
	tcase_add_test(tc, test_part_needs_its_job);
	tcase_add_test(tc, test_part_for_a_job_run_elsewhere);
	tcase_add_test(tc, test_whole_entry_job_checked_when_named);
	tcase_add_test(tc, test_job_member_malformed);
	suite_add_tcase(s, tc);
	tcase_add_checked_fixture(tb, setup_two_sessions, teardown);
	tcase_set_timeout(tb, 60);
	tcase_add_test(tb, test_sessions_bounded);
	suite_add_tcase(s, tb);
	return s;
}

int main(void)
{
	return check_run(peerfetch_suite());
}
