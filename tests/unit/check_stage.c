/* check_stage.c - unit tests for the stager (daemon/staging/stage*.c):
 * the planner's decisions as the functions they are (whose entry and key,
 * hit / check / build, linking from the previous version, the worker's
 * command line), the worker-line parser on good, damaged and hostile
 * lines, and the staging thread end to end with its workers played by
 * the test (stage_set_spawn: a forked child that does what the real
 * worker's protocol says, never the real worker).
 *
 * Agents over temporary directories (tests/unit/agent_fixture.h); jobs
 * are prestages (no job directories, pins or bind mounts: those need
 * root), so everything runs unprivileged.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <sys/wait.h>

#include "daemon/staging/stage.h"
#include "daemon/staging/stage_plan.h"
#include "tests/unit/agent_fixture.h"
#include "tests/unit/check_run.h"

/* --- the planner ------------------------------------------------------------
 */

static const struct stage_account pub = {
	.ok = true, .uid = 65534, .gid = 65534, .name = "nobody"
};
static const struct stage_account no_pub = { .ok = false };

static const struct {
	const struct stage_account *pub;
	uid_t uid;
	size_t n;
	bool first_public;
} owner_cases[] = {
	{ &pub, 1000, 2, true },     /* public first, then the user's */
	{ &pub, 65534, 1, false },   /* PublicUser's own job: its own */
	{ &pub, 0, 1, false },       /* root's: its own */
	{ &no_pub, 1000, 1, false }, /* PublicDatasets=no */
	{ NULL, 1000, 1, false },
};

START_TEST(test_plan_owners)
{
	struct stage_owner o[2];
	char want[CACHE_KEY_LEN + 1];
	size_t n = stage_plan_owners(owner_cases[_i].pub, owner_cases[_i].uid,
				     42, "alice", "/pfs/d", o);

	ck_assert_uint_eq(n, owner_cases[_i].n);
	ck_assert(o[0].public == owner_cases[_i].first_public);
	if (n == 2) {
		cache_key_public("/pfs/d", want);
		ck_assert_str_eq(o[0].key, want);
		ck_assert_uint_eq(o[0].uid, 65534);
		ck_assert_str_eq(o[0].user, "nobody");
	}
	/* the last is always the user's own entry, as the user */
	cache_key(owner_cases[_i].uid, "/pfs/d", want);
	ck_assert_str_eq(o[n - 1].key, want);
	ck_assert_uint_eq(o[n - 1].uid, owner_cases[_i].uid);
	ck_assert_uint_eq(o[n - 1].gid, 42);
	ck_assert(!o[n - 1].public);
}
END_TEST

START_TEST(test_plan_keys_differ_by_user_and_source)
{
	struct stage_owner a[2], b[2], c[2];

	stage_plan_owners(NULL, 1000, 1, "a", "/pfs/d", a);
	stage_plan_owners(NULL, 1001, 1, "b", "/pfs/d", b);
	stage_plan_owners(NULL, 1000, 1, "a", "/pfs/e", c);
	ck_assert_str_ne(a[0].key, b[0].key);
	ck_assert_str_ne(a[0].key, c[0].key);
}
END_TEST

#define NOW 1700000000
#define STARTED 5000000000LL /* ns */

/* The current version (verified at VERIFIED, by a walk that began at
 * VERIFIED_NS, with a manifest of kind HAS) for a dataset asking WANT. */
static const struct {
	time_t verified;
	int64_t verified_ns;
	enum profile_verify has, want;
	enum stage_verdict verdict;
} current_cases[] = {
	/* proved by a walk that began after the request: a hit, any verify */
	{ NOW - 1, STARTED + 1, PROFILE_VERIFY_STAT, PROFILE_VERIFY_CHECKSUM,
	  STAGE_HIT },
	{ NOW - 1, STARTED + 1, PROFILE_VERIFY_STAT, PROFILE_VERIFY_STAT,
	  STAGE_HIT },
	/* exactly at the start is not after it */
	{ NOW - 1, STARTED, PROFILE_VERIFY_STAT, PROFILE_VERIFY_STAT,
	  STAGE_CHECK },
	/* verify=none: trusted for CacheTTL (60 s here) */
	{ NOW - 59, 0, PROFILE_VERIFY_STAT, PROFILE_VERIFY_NONE, STAGE_HIT },
	{ NOW - 60, 0, PROFILE_VERIFY_STAT, PROFILE_VERIFY_NONE, STAGE_CHECK },
	{ NOW - 3600, 0, PROFILE_VERIFY_STAT, PROFILE_VERIFY_NONE,
	  STAGE_CHECK },
	/* stat: a worker compares */
	{ NOW - 1, 0, PROFILE_VERIFY_STAT, PROFILE_VERIFY_STAT, STAGE_CHECK },
	{ NOW - 1, 0, PROFILE_VERIFY_CHECKSUM, PROFILE_VERIFY_STAT,
	  STAGE_CHECK },
	/* checksum asked of a stat version: its manifest cannot tell */
	{ NOW - 1, 0, PROFILE_VERIFY_STAT, PROFILE_VERIFY_CHECKSUM,
	  STAGE_BUILD },
	{ NOW - 1, 0, PROFILE_VERIFY_CHECKSUM, PROFILE_VERIFY_CHECKSUM,
	  STAGE_CHECK },
};

START_TEST(test_plan_current)
{
	struct cache_version cur = {
		.version = 3,
		.verified = current_cases[_i].verified,
		.verified_ns = current_cases[_i].verified_ns,
		.verify = current_cases[_i].has,
	};
	char how[160] = "";
	enum stage_verdict v = stage_plan_current(&cur, current_cases[_i].want,
						  STARTED, NOW, 60, how,
						  sizeof(how));

	ck_assert_int_eq(v, current_cases[_i].verdict);
	if (v == STAGE_HIT)
		ck_assert_msg(how[0] != '\0', "a hit says why");
}
END_TEST

START_TEST(test_plan_link_previous)
{
	struct cache_version stat_v = { .verify = PROFILE_VERIFY_STAT };
	struct cache_version sum_v = { .verify = PROFILE_VERIFY_CHECKSUM };

	ck_assert(!stage_plan_link_previous(NULL, PROFILE_VERIFY_STAT));
	ck_assert(stage_plan_link_previous(&stat_v, PROFILE_VERIFY_STAT));
	ck_assert(stage_plan_link_previous(&stat_v, PROFILE_VERIFY_NONE));
	ck_assert(!stage_plan_link_previous(&stat_v, PROFILE_VERIFY_CHECKSUM));
	ck_assert(stage_plan_link_previous(&sum_v, PROFILE_VERIFY_CHECKSUM));
	ck_assert(stage_plan_link_previous(&sum_v, PROFILE_VERIFY_STAT));
	ck_assert_int_eq(stage_plan_worker_verify(PROFILE_VERIFY_NONE),
			 PROFILE_VERIFY_STAT);
	ck_assert_int_eq(stage_plan_worker_verify(PROFILE_VERIFY_CHECKSUM),
			 PROFILE_VERIFY_CHECKSUM);
}
END_TEST

static const struct stage_owner user_ow = { .uid = 1000, .user = "alice" };
static const struct stage_owner pub_ow = { .uid = 65534, .public = true };

static const struct {
	struct stage_task task;
	bool rate;
	const char *want;
} argv_cases[] = {
	{ { STAGE_WORKER_CHECK, &user_ow, "/pfs/d", "/t/cache/K.v1", NULL, 7,
	    -1, PROFILE_VERIFY_STAT, NULL, NULL, NULL, NULL, NULL, -1, NULL,
	    NULL, NULL },
	  false,
	  "iostaged --stage-worker --verify stat --check --manifest-in 3 "
	  "/pfs/d /t/cache/K.v1" },
	{ { STAGE_WORKER_CHECK, &pub_ow, "/pfs/d", "/v", NULL, 7, -1,
	    PROFILE_VERIFY_CHECKSUM, NULL, NULL, NULL, NULL, NULL, -1, NULL,
	    NULL, NULL },
	  false,
	  "iostaged --stage-worker --verify checksum --public --check "
	  "--manifest-in 3 /pfs/d /v" },
	{ { STAGE_WORKER_BUILD, &user_ow, "/pfs/d", "/b", NULL, -1, 8,
	    PROFILE_VERIFY_STAT, NULL, NULL, NULL, NULL, NULL, -1, NULL, NULL,
	    NULL },
	  false,
	  "iostaged --stage-worker --verify stat --manifest-out 4 /pfs/d /b" },
	{ { STAGE_WORKER_BUILD, &user_ow, "/pfs/d", "/b", "/t/cache/K.v1/data",
	    7, 8, PROFILE_VERIFY_STAT, NULL, NULL, NULL, NULL, NULL, -1, NULL,
	    NULL, NULL },
	  true,
	  "iostaged --stage-worker --verify stat --previous /t/cache/K.v1/data "
	  "--manifest-in 3 --manifest-out 4 --rate-fd 5 /pfs/d /b" },
	/* a source with spaces or a leading dash stays one argument, after
     * the options */
	{ { STAGE_WORKER_BUILD, &pub_ow, "/pfs/a b", "/b", NULL, -1, 8,
	    PROFILE_VERIFY_CHECKSUM, NULL, NULL, NULL, NULL, NULL, -1, NULL,
	    NULL, NULL },
	  true,
	  "iostaged --stage-worker --verify checksum --public --manifest-out 4 "
	  "--rate-fd 5 /pfs/a b /b" },
	/* another node's copy to fill from (daemon/cluster/fill.h) */
	{ { STAGE_WORKER_BUILD, &user_ow, "/pfs/d", "/b", NULL, -1, 8,
	    PROFILE_VERIFY_STAT, "n1:6826", "nvme/K.v3", "/run/m.sock", NULL,
	    NULL, -1, NULL, NULL, NULL },
	  true,
	  "iostaged --stage-worker --verify stat --peer n1:6826 --peer-entry "
	  "nvme/K.v3 --munge-socket /run/m.sock --manifest-out 4 --rate-fd 5 "
	  "/pfs/d /b" },
	/* a local previous version wins over a peer */
	{ { STAGE_WORKER_BUILD, &user_ow, "/pfs/d", "/b", "/t/K.v1/data", 7, 8,
	    PROFILE_VERIFY_STAT, "n1:6826", "nvme/K.v3", "", NULL, NULL, -1,
	    NULL, NULL, NULL },
	  false,
	  "iostaged --stage-worker --verify stat --previous /t/K.v1/data "
	  "--manifest-in 3 --manifest-out 4 /pfs/d /b" },
	/* a node's part of a spread dataset, the whole listing on fd 6 */
	{ { STAGE_WORKER_CHECK, &user_ow, "/pfs/d", "/v", NULL, 7, -1,
	    PROFILE_VERIFY_STAT, NULL, NULL, NULL, "n1=5,n2=7", "n2", 9, NULL,
	    NULL, NULL },
	  false,
	  "iostaged --stage-worker --verify stat --check --manifest-in 3 "
	  "--spread n1=5,n2=7 --spread-self n2 --listing-out 6 /pfs/d /v" },
	{ { STAGE_WORKER_BUILD, &user_ow, "/pfs/d", "/b", NULL, -1, 8,
	    PROFILE_VERIFY_STAT, NULL, NULL, NULL, "n1=5", "n1", -1, "4096",
	    NULL, NULL },
	  true,
	  "iostaged --stage-worker --verify stat --manifest-out 4 --rate-fd 5 "
	  "--spread n1=5 --spread-self n1 --part-budget 4096 /pfs/d /b" },
	/* a fill by parts: this node's share linked, the others' fetched */
	{ { .mode = STAGE_WORKER_BUILD,
	    .owner = &user_ow,
	    .src = "/pfs/d",
	    .dstdir = "/b",
	    .previous = "/t/P.v1/data",
	    .manifest_in = 7,
	    .manifest_out = 8,
	    .munge_socket = "/run/m.sock",
	    .listing_out = -1,
	    .peers = "n2:6826=nvme/P.v2,n1:6826=nvme/P.v1",
	    .peer_job = "42" },
	  false,
	  "iostaged --stage-worker --verify stat --previous /t/P.v1/data "
	  "--manifest-in 3 --peers n2:6826=nvme/P.v2,n1:6826=nvme/P.v1 "
	  "--munge-socket /run/m.sock --peer-job 42 --manifest-out 4 "
	  "/pfs/d /b" },
};

START_TEST(test_plan_argv)
{
	char *argv[STAGE_ARGV_MAX], joined[1024] = "";
	size_t n = stage_plan_argv(&argv_cases[_i].task, argv_cases[_i].rate,
				   argv),
	       i;

	ck_assert_uint_lt(n, STAGE_ARGV_MAX);
	ck_assert_ptr_null(argv[n]);
	for (i = 0; i < n; i++) {
		if (i)
			strcat(joined, " ");
		strcat(joined, argv[i]);
	}
	ck_assert_str_eq(joined, argv_cases[_i].want);
	/* SRC and DSTDIR are always the last two, whole */
	ck_assert_str_eq(argv[n - 2], argv_cases[_i].task.src);
	ck_assert_str_eq(argv[n - 1], argv_cases[_i].task.dstdir);
}
END_TEST

/* --- the worker's lines
 * -------------------------------------------------------- */

static const struct {
	const char *line;
	int r;
	enum stage_msg_kind kind;
	bool ok;
	const char *text;
	uint64_t a, b; /* bytes/files, or total/copy bytes */
} line_cases[] = {
	{ "{\"ok\":true,\"bytes\":10,\"files\":2,\"linked\":1}", 0,
	  STAGE_MSG_RESULT, true, "", 10, 2 },
	{ "{\"ok\":false,\"error\":\"cannot read /pfs/ds/a.bin\"}", 0,
	  STAGE_MSG_RESULT, false, "cannot read /pfs/ds/a.bin", 0, 0 },
	{ "{\"ok\":false}", 0, STAGE_MSG_RESULT, false, "copy failed", 0, 0 },
	{ "{\"ok\":false,\"error\":7}", 0, STAGE_MSG_RESULT, false,
	  "copy failed", 0, 0 },
	/* found by fuzz_stage_lines: an empty reason is none */
	{ "{\"ok\":false,\"error\":\"\"}", 0, STAGE_MSG_RESULT, false,
	  "copy failed", 0, 0 },
	/* control bytes never reach the log: one printable line */
	{ "{\"ok\":false,\"error\":\"a\\nb\\u001b[2Jc\\u007f\"}", 0,
	  STAGE_MSG_RESULT, false, "a?b?[2Jc?", 0, 0 },
	{ "{\"note\":\"/pfs/x: fifo skipped\\r\"}", 0, STAGE_MSG_NOTE, false,
	  "/pfs/x: fifo skipped?", 0, 0 },
	{ "{\"total_bytes\":100,\"total_files\":3,\"copy_bytes\":40,"
	  "\"copy_files\":1,\"unchanged\":false}",
	  0, STAGE_MSG_TOTALS, false, "", 100, 40 },
	/* an older worker: what is copied is everything */
	{ "{\"total_bytes\":100,\"total_files\":3}", 0, STAGE_MSG_TOTALS, false,
	  "", 100, 100 },
	{ "{\"bytes\":5,\"files\":1}", 0, STAGE_MSG_PROGRESS, false, "", 5, 1 },
	/* numbers out of range or of the wrong type count as 0 */
	{ "{\"bytes\":-5,\"files\":\"1\"}", 0, STAGE_MSG_PROGRESS, false, "", 0,
	  0 },
	{ "{\"bytes\":1e300,\"files\":1.5}", 0, STAGE_MSG_PROGRESS, false, "",
	  0, 1 },
	/* ok wins over everything else on its line */
	{ "{\"ok\":true,\"note\":\"n\",\"total_bytes\":1}", 0, STAGE_MSG_RESULT,
	  true, "", 0, 0 },
	/* a newer worker's keys: ignored */
	{ "{\"hello\":1}", 0, STAGE_MSG_OTHER, false, "", 0, 0 },
	{ "{}", 0, STAGE_MSG_OTHER, false, "", 0, 0 },
	/* not an object: a protocol violation */
	{ "", -1, 0, false, "", 0, 0 },
	{ "not json", -1, 0, false, "", 0, 0 },
	{ "[1,2]", -1, 0, false, "", 0, 0 },
	{ "\"ok\"", -1, 0, false, "", 0, 0 },
	{ "{\"ok\":true", -1, 0, false, "", 0, 0 },
	{ NULL, -1, 0, false, "", 0, 0 },
};

START_TEST(test_parse_line)
{
	struct stage_msg m;
	int r = stage_parse_line(line_cases[_i].line, &m);

	ck_assert_int_eq(r, line_cases[_i].r);
	if (r < 0) {
		ck_assert_int_eq(errno, EPROTO);
		return;
	}
	ck_assert_int_eq(m.kind, line_cases[_i].kind);
	ck_assert_str_eq(m.text, line_cases[_i].text);
	switch (m.kind) {
	case STAGE_MSG_RESULT:
		ck_assert(m.ok == line_cases[_i].ok);
		/* fall through */
	case STAGE_MSG_PROGRESS:
		ck_assert_uint_eq(m.bytes, line_cases[_i].a);
		ck_assert_uint_eq(m.files, line_cases[_i].b);
		break;
	case STAGE_MSG_TOTALS:
		ck_assert_uint_eq(m.total_bytes, line_cases[_i].a);
		ck_assert_uint_eq(m.copy_bytes, line_cases[_i].b);
		break;
	default:
		break;
	}
}
END_TEST

/* A worker that filled from another node says how much came from there;
 * its totals say what it reads from the source (an older worker: all it
 * copies). */
START_TEST(test_parse_line_peer_figures)
{
	struct stage_msg m;

	ck_assert_int_eq(
	    stage_parse_line("{\"ok\":true,\"bytes\":10,\"files\":4,"
			     "\"linked\":1,\"linked_bytes\":6,"
			     "\"fetched\":3,\"fetched_bytes\":9,"
			     "\"fallbacks\":1}",
			     &m),
	    0);
	ck_assert_int_eq(m.kind, STAGE_MSG_RESULT);
	ck_assert_uint_eq(m.linked, 1);
	ck_assert_uint_eq(m.linked_bytes, 6);
	ck_assert_uint_eq(m.fetched, 3);
	ck_assert_uint_eq(m.fetched_bytes, 9);
	ck_assert_uint_eq(m.fallbacks, 1);
	ck_assert_int_eq(
	    stage_parse_line("{\"total_bytes\":10,\"total_files\":4,"
			     "\"copy_bytes\":10,\"copy_files\":4,"
			     "\"source_bytes\":1}",
			     &m),
	    0);
	ck_assert_uint_eq(m.copy_bytes, 10);
	ck_assert_uint_eq(m.source_bytes, 1);
	ck_assert_int_eq(
	    stage_parse_line("{\"total_bytes\":10,\"total_files\":4,"
			     "\"copy_bytes\":7}",
			     &m),
	    0);
	ck_assert_uint_eq(m.source_bytes, 7);
}
END_TEST

/* An error of any length is cut to one line of CONF_ERR_MAX. */
START_TEST(test_parse_line_overlong_error)
{
	size_t len = 64 * 1024;
	char *line = malloc(len + 64);
	struct stage_msg m;

	ck_assert_ptr_nonnull(line);
	strcpy(line, "{\"ok\":false,\"error\":\"");
	memset(line + strlen(line), 'e', len);
	strcpy(line + strlen("{\"ok\":false,\"error\":\"") + len, "\"}");
	ck_assert_int_eq(stage_parse_line(line, &m), 0);
	ck_assert_uint_eq(strlen(m.text), CONF_ERR_MAX - 1);
	free(line);
}
END_TEST

/* --- the staging thread, its workers played by the test
 * ----------------------------- */

/* What the played worker does. */
struct play {
	bool unchanged; /* a check finds the source unchanged */
	bool fail;      /* a build fails with "boom" */
	bool refuse;    /* the spawn itself fails */
	unsigned checks, builds;
	char last_argv[1024];
};

static void child_write(int fd, const char *s)
{
	if (write(fd, s, strlen(s)) < 0)
		_exit(3);
}

/* The child: only async-signal-safe calls (the test is threaded). */
static void play_worker(const struct play *p, bool build, const char *data,
			const char *file, int manifest, int in, int out)
{
	char buf[8];
	ssize_t n;
	int fd;

	if (!build) {
		child_write(out, p->unchanged
				     ? "{\"total_bytes\":4,\"total_files\":1,"
				       "\"unchanged\":true}\n"
				     : "{\"total_bytes\":4,\"total_files\":1,"
				       "\"unchanged\":false}\n");
		child_write(out, "{\"ok\":true,\"bytes\":0,\"files\":0}\n");
		_exit(0);
	}
	child_write(out, "{\"total_bytes\":4,\"total_files\":1,"
			 "\"copy_bytes\":4,\"copy_files\":1}\n");
	n = read(in, buf, sizeof(buf));
	if (n != 3 || memcmp(buf, "go\n", 3)) {
		child_write(out, "{\"ok\":false,\"error\":\"cancelled before "
				 "copying\"}\n");
		_exit(1);
	}
	if (p->fail) {
		child_write(out, "{\"ok\":false,\"error\":\"boom\"}\n");
		_exit(1);
	}
	if (mkdir(data, 0700) < 0)
		_exit(4);
	fd = open(file, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0400);
	if (fd < 0 || write(fd, "data", 4) != 4)
		_exit(5);
	close(fd);
	if (chmod(data, 0500) < 0 || write(manifest, "MANIFEST", 8) != 8)
		_exit(6);
	child_write(out, "{\"bytes\":4,\"files\":1}\n");
	child_write(out,
		    "{\"ok\":true,\"bytes\":4,\"files\":1,\"linked\":0}\n");
	_exit(0);
}

static int play_spawn(void *arg, uid_t uid, gid_t gid, const char *user,
		      char *const argv[], char *const envp[],
		      const int *pass_fds, size_t npass, const char *what,
		      struct spawn_proc *ret, char *err, size_t errlen)
{
	struct play *p = arg;
	char data[PATH_MAX], file[PATH_MAX + 8];
	const char *dst = NULL;
	bool build = true;
	int in[2], out[2];
	size_t i;
	pid_t pid;

	(void)uid;
	(void)gid;
	(void)user;
	(void)envp;
	(void)npass;
	p->last_argv[0] = '\0';
	for (i = 0; argv[i]; i++) {
		if (i)
			strncat(p->last_argv, " ",
				sizeof(p->last_argv) - strlen(p->last_argv) -
				    1);
		strncat(p->last_argv, argv[i],
			sizeof(p->last_argv) - strlen(p->last_argv) - 1);
		if (!strcmp(argv[i], "--check"))
			build = false;
		dst = argv[i];
	}
	if (build)
		p->builds++;
	else
		p->checks++;
	if (p->refuse) {
		snprintf(err, errlen, "cannot start a %s: no processes", what);
		errno = EAGAIN;
		return -1;
	}
	snprintf(data, sizeof(data), "%s/data", dst);
	snprintf(file, sizeof(file), "%s/data/f", dst);
	if (pipe2(in, O_CLOEXEC) < 0 || pipe2(out, O_CLOEXEC) < 0)
		return -1;
	pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		/* no exec here: our ends would keep the pipes open */
		close(in[1]);
		close(out[0]);
		play_worker(p, build, data, file, build ? pass_fds[1] : -1,
			    in[0], out[1]);
	}
	close(in[0]);
	close(out[1]);
	ret->pid = pid;
	ret->in = in[1];
	ret->out = out[0];
	return 0;
}

#define DS                                                                     \
	"{\"datasets\":[{\"name\":\"d\",\"path\":\"/pfs/"                      \
	"d\",\"tier\":\"t0\"}]}"

static struct ag g;
static struct play play;

static void setup(void)
{
	ag_init(&g, "node1", 1);
	memset(&play, 0, sizeof(play));
	stage_set_spawn(g.a.stage, play_spawn, &play);
}

static void teardown(void)
{
	ag_fini(&g);
}

/* Prestage ID of DS through the stager, to its end. */
static struct job_view prestage(uint32_t id)
{
	char err[CONF_ERR_MAX];
	struct job *job, *old;
	struct job_view v;

	job = jobs_new_job(g.a.jobs, id, geteuid(), getegid(), "tester",
			   ag_profile(&g, DS), err, sizeof(err));
	ck_assert_ptr_nonnull(job);
	job->prestage = true;
	ck_assert_int_eq(jobs_insert(g.a.jobs, job, &old, err, sizeof(err)), 0);
	ck_assert_msg(stage_start(g.a.stage, job, err, sizeof(err)) == 0,
		      "stage_start: %s", err);
	jobs_wait(job, 120, &v);
	ck_assert_int_ne(v.state, JOB_STAGING);
	jobs_put(job);
	return v;
}

static enum job_ds_result result_of(uint32_t id, char *entry, size_t len)
{
	struct job *job = jobs_get(g.a.jobs, id);
	enum job_ds_result r;

	ck_assert_ptr_nonnull(job);
	jobs_wait(job, 120, &(struct job_view){ 0 }); /* staging is over */
	r = job->ds[0].result;
	if (entry)
		snprintf(entry, len, "%s", job->ds[0].entry);
	jobs_put(job);
	return r;
}

START_TEST(test_stage_builds_then_hits)
{
	char key[CACHE_KEY_LEN + 1], entry[JOBS_ENTRY_MAX], want[64];
	struct job_view v = prestage(JOBS_PRESTAGE_ID_MIN);

	ck_assert_msg(v.state == JOB_STAGED, "%s", v.error);
	ck_assert_uint_eq(play.builds, 1);
	ck_assert_uint_eq(play.checks, 0);
	ck_assert_int_eq(result_of(JOBS_PRESTAGE_ID_MIN, entry, sizeof(entry)),
			 JOB_DS_BUILT);
	cache_key(geteuid(), "/pfs/d", key);
	snprintf(want, sizeof(want), "%s.v1", key);
	ck_assert_str_eq(entry, want);
	ck_assert_uint_eq(v.bytes, 4);
	ck_assert_uint_eq(v.total_bytes, 4);
	/* the same source again: a worker checks it, unchanged: a hit */
	play.unchanged = true;
	v = prestage(JOBS_PRESTAGE_ID_MIN + 1);
	ck_assert_msg(v.state == JOB_STAGED, "%s", v.error);
	ck_assert_uint_eq(play.checks, 1);
	ck_assert_uint_eq(play.builds, 1);
	ck_assert_msg(strstr(play.last_argv, "--check") != NULL, "%s",
		      play.last_argv);
	ck_assert_int_eq(result_of(JOBS_PRESTAGE_ID_MIN + 1, entry,
				   sizeof(entry)),
			 JOB_DS_HIT);
	ck_assert_str_eq(entry, want);
}
END_TEST

START_TEST(test_stage_changed_source_builds_linked)
{
	char entry[JOBS_ENTRY_MAX];
	struct job_view v = prestage(JOBS_PRESTAGE_ID_MIN);

	ck_assert_msg(v.state == JOB_STAGED, "%s", v.error);
	play.unchanged = false;
	v = prestage(JOBS_PRESTAGE_ID_MIN + 1);
	ck_assert_msg(v.state == JOB_STAGED, "%s", v.error);
	ck_assert_uint_eq(play.checks, 1);
	ck_assert_uint_eq(play.builds, 2);
	/* the new version links unchanged files from the old one */
	ck_assert_msg(strstr(play.last_argv, "--previous") != NULL, "%s",
		      play.last_argv);
	ck_assert_int_eq(result_of(JOBS_PRESTAGE_ID_MIN + 1, entry,
				   sizeof(entry)),
			 JOB_DS_BUILT);
	ck_assert_msg(strstr(entry, ".v2") != NULL, "%s", entry);
}
END_TEST

START_TEST(test_stage_worker_failure_fails_the_job)
{
	struct job_view v;

	play.fail = true;
	v = prestage(JOBS_PRESTAGE_ID_MIN);
	ck_assert_int_eq(v.state, JOB_FAILED);
	ck_assert_str_eq(v.error, "boom");
	ck_assert_int_eq(result_of(JOBS_PRESTAGE_ID_MIN, NULL, 0),
			 JOB_DS_FAILED);
}
END_TEST

START_TEST(test_stage_spawn_failure_fails_the_job)
{
	struct job_view v;

	play.refuse = true;
	v = prestage(JOBS_PRESTAGE_ID_MIN);
	ck_assert_int_eq(v.state, JOB_FAILED);
	ck_assert_str_eq(v.error, "cannot start a stage worker: no processes");
}
END_TEST

/* The space a build needs is reserved before its "go": a tier too small
 * refuses it and the worker copies nothing. */
START_TEST(test_stage_full_tier_refuses_before_copying)
{
	struct job_view v;

	/* Capacity=1 byte: 4 do not fit */
	g.conf.tiers[0].capacity = 1;
	v = prestage(JOBS_PRESTAGE_ID_MIN);
	ck_assert_int_eq(v.state, JOB_FAILED);
	ck_assert_msg(strstr(v.error, "full") != NULL, "%s", v.error);
	ck_assert_uint_eq(play.builds, 1);
}
END_TEST

START_TEST(test_two_stagers_are_independent)
{
	struct ag h;
	struct play hp = { 0 };
	struct job_view v;
	struct job *job, *old;
	char err[CONF_ERR_MAX];

	ag_init(&h, "node2", 1);
	stage_set_spawn(h.a.stage, play_spawn, &hp);
	hp.fail = true;
	v = prestage(JOBS_PRESTAGE_ID_MIN); /* on g: succeeds */
	ck_assert_msg(v.state == JOB_STAGED, "%s", v.error);
	job = jobs_new_job(h.a.jobs, JOBS_PRESTAGE_ID_MIN, geteuid(), getegid(),
			   "tester", ag_profile(&h, DS), err, sizeof(err));
	job->prestage = true;
	ck_assert_int_eq(jobs_insert(h.a.jobs, job, &old, err, sizeof(err)), 0);
	ck_assert_int_eq(stage_start(h.a.stage, job, err, sizeof(err)), 0);
	jobs_wait(job, 120, &v);
	ck_assert_int_eq(v.state, JOB_FAILED);
	ck_assert_uint_eq(hp.builds, 1);
	ck_assert_uint_eq(play.builds, 1);
	jobs_put(job);
	ag_fini(&h);
}
END_TEST

START_TEST(test_public_account)
{
	struct conf conf;
	struct stage_account acc;
	char err[CONF_ERR_MAX];

	conf_set_defaults(&conf);
	conf.public_datasets = false;
	ck_assert_int_eq(stage_public_account(&conf, &acc, err, sizeof(err)),
			 0);
	ck_assert(!acc.ok);
	conf.public_datasets = true;
	snprintf(conf.public_user, sizeof(conf.public_user), "root");
	ck_assert_int_eq(stage_public_account(&conf, &acc, err, sizeof(err)),
			 -1);
	ck_assert_msg(strstr(err, "unprivileged") != NULL, "%s", err);
	snprintf(conf.public_user, sizeof(conf.public_user), "no-such-user-x");
	ck_assert_int_eq(stage_public_account(&conf, NULL, err, sizeof(err)),
			 -1);
	ck_assert_msg(strstr(err, "PublicUser=no-such-user-x") != NULL, "%s",
		      err);
	stage_destroy(NULL);
}
END_TEST

static Suite *stage_suite(void)
{
	Suite *s = suite_create("stage");
	TCase *plan = tcase_create("plan");
	TCase *run = tcase_create("run");

	tcase_add_loop_test(plan, test_plan_owners, 0,
			    sizeof(owner_cases) / sizeof(owner_cases[0]));
	tcase_add_test(plan, test_plan_keys_differ_by_user_and_source);
	tcase_add_loop_test(plan, test_plan_current, 0,
			    sizeof(current_cases) / sizeof(current_cases[0]));
	tcase_add_test(plan, test_plan_link_previous);
	tcase_add_loop_test(plan, test_plan_argv, 0,
			    sizeof(argv_cases) / sizeof(argv_cases[0]));
	tcase_add_loop_test(plan, test_parse_line, 0,
			    sizeof(line_cases) / sizeof(line_cases[0]));
	tcase_add_test(plan, test_parse_line_peer_figures);
	tcase_add_test(plan, test_parse_line_overlong_error);
	tcase_add_test(plan, test_public_account);
	suite_add_tcase(s, plan);

	tcase_add_checked_fixture(run, setup, teardown);
	tcase_set_timeout(run, 120);
	tcase_add_test(run, test_stage_builds_then_hits);
	tcase_add_test(run, test_stage_changed_source_builds_linked);
	tcase_add_test(run, test_stage_worker_failure_fails_the_job);
	tcase_add_test(run, test_stage_spawn_failure_fails_the_job);
	tcase_add_test(run, test_stage_full_tier_refuses_before_copying);
	tcase_add_test(run, test_two_stagers_are_independent);
	suite_add_tcase(s, run);
	return s;
}

int main(void)
{
	signal(SIGPIPE, SIG_IGN); /* a played worker may go first */
	return check_run(stage_suite());
}
