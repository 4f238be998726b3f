/* check_ops.c - unit tests for iostaged's socket ops without a socket
 * (daemon/server.c's dispatch, daemon/ops_job.c, ops_cache.c,
 * ops_daemon.c, telemetry/telemetry_ops.c): each handler's validation of
 * what a request says (missing and ill-typed fields, overlong and
 * malicious strings, paths and names, NULL and empty requests), and the
 * authorisation around it (root-only ops refused to a user before their
 * handler runs, a user naming another user, a user seeing or evicting
 * only their own cache entries, another user's job).
 *
 * Each test makes an agent as main() does, but only of the parts a
 * handler reaches: the configuration and a cache over tiers in temporary
 * directories (tests/unit/cache_fixture.h). The job table, the tiers'
 * module and the drain are not started (they keep their state in their
 * own files until their conversion): a case stops where the handler
 * would first call into them, except the root test of another user's
 * job, which starts the job table on the fixture's StateDir. Handlers are
 * called through their table (server_op) or, for the root-only check,
 * through server_dispatch. Unprivileged but for that one test.
 */
#define _GNU_SOURCE
#include <pwd.h>

#include "tests/unit/cache_fixture.h"
#include "tests/unit/check_run.h"

#include "common/config/profile.h"
#include "daemon/agent.h"
#include "daemon/jobs.h"
#include "daemon/ops.h"
#include "daemon/server.h"

#define OTHER_UID 4242 /* a user the tests are not (and not root) */

static struct fx fx;
static struct agent agent;

static void setup(void)
{
	fx_init(&fx, "n1", 1, false);
	memset(&agent, 0, sizeof(agent));
	agent.conf = &fx.conf;
	agent.conf_path = "/etc/slurm/iostage.conf";
	agent.cache = fx.c;
}

static void teardown(void)
{
	fx_fini(&fx);
}

static const char *error_of(const cJSON *r)
{
	const cJSON *e = cJSON_GetObjectItemCaseSensitive(r, "error");

	return cJSON_IsString(e) ? e->valuestring : "";
}

static bool ok_of(const cJSON *r)
{
	return cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(r, "ok"));
}

/* The handler of REQ's op, called directly as UID (pid 1234). */
static cJSON *call_as(struct agent *a, uid_t uid, const cJSON *req)
{
	struct ops_caller who = { uid, uid, 1234 };
	const cJSON *op = cJSON_GetObjectItemCaseSensitive(req, "op");
	const struct op *o;

	ck_assert_msg(cJSON_IsString(op), "the case names no op");
	o = server_op(op->valuestring);
	ck_assert_msg(o != NULL, "no op '%s'", op->valuestring);
	return o->fn(a, &who, req);
}

static cJSON *call_text(uid_t uid, const char *text)
{
	cJSON *req = cJSON_Parse(text), *r;

	ck_assert_msg(req != NULL, "bad JSON in the case: %s", text);
	r = call_as(&agent, uid, req);
	cJSON_Delete(req);
	ck_assert_msg(r != NULL, "%s: no reply", text);
	return r;
}

static uid_t uid_of(const char *name)
{
	struct passwd *pw = getpwnam(name);

	ck_assert_msg(pw != NULL, "no user %s here", name);
	return pw->pw_uid;
}

/* --- each handler's refusals, table-driven ---------------------------- */

#define LONG300                                                                \
	"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"   \
	"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"   \
	"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"   \
	"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"   \
	"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"

enum who { ROOT, USER, NOBODY };

static const struct {
	enum who who;
	const char *req;
	const char *want; /* in the error */
} refusals[] = {
	/* stage (root's: dispatch checks; the handler checks the rest) */
	{ ROOT, "{\"op\":\"stage\"}", "key 'job': missing" },
	{ ROOT, "{\"op\":\"stage\",\"job\":0}", "key 'job': must be > 0" },
	{ ROOT, "{\"op\":\"stage\",\"job\":\"7\"}",
	  "key 'job': must be an integer" },
	{ ROOT, "{\"op\":\"stage\",\"job\":-1}",
	  "key 'job': must be an integer" },
	{ ROOT, "{\"op\":\"stage\",\"job\":1.5}",
	  "key 'job': must be an integer" },
	{ ROOT, "{\"op\":\"stage\",\"job\":4294967296}",
	  "key 'job': must be an integer" },
	{ ROOT, "{\"op\":\"stage\",\"job\":7,\"nodes\":\"n1\"}",
	  "key 'nodes': must be an array" },
	{ ROOT, "{\"op\":\"stage\",\"job\":7,\"nodes\":[1]}",
	  "key 'nodes': '?' is not a node name" },
	{ ROOT, "{\"op\":\"stage\",\"job\":7,\"nodes\":[\"../etc\"]}",
	  "'../etc' is not a node name" },
	{ ROOT, "{\"op\":\"stage\",\"job\":7,\"nodes\":[\"n\\u0001x\"]}",
	  "'n?x' is not a node name" },
	{ ROOT, "{\"op\":\"stage\",\"job\":7,\"nodes\":[\"n1\",\"n2\",\"n1\"]}",
	  "'n1' listed twice" },
	{ ROOT, "{\"op\":\"stage\",\"job\":7}", "key 'uid': missing" },
	{ ROOT,
	  "{\"op\":\"stage\",\"job\":7,\"uid\":-1,\"gid\":0,\"user\":\"root\"}",
	  "key 'uid': must be an integer" },
	{ ROOT,
	  "{\"op\":\"stage\",\"job\":7,\"uid\":4294967295,\"gid\":0,\"user\":"
	  "\"root\"}",
	  "key 'uid': 4294967295 is not a valid id" },
	{ ROOT,
	  "{\"op\":\"stage\",\"job\":7,\"uid\":0,\"gid\":4294967295,\"user\":"
	  "\"root\"}",
	  "key 'gid': 4294967295 is not a valid id" },
	{ ROOT, "{\"op\":\"stage\",\"job\":7,\"uid\":0,\"gid\":0}",
	  "key 'user': missing" },
	{ ROOT, "{\"op\":\"stage\",\"job\":7,\"uid\":0,\"gid\":0,\"user\":5}",
	  "key 'user': must be a string" },
	{ ROOT,
	  "{\"op\":\"stage\",\"job\":7,\"uid\":0,\"gid\":0,\"user\":\"" LONG300
	  "\"}",
	  "key 'user': longer than 255 bytes" },
	{ ROOT,
	  "{\"op\":\"stage\",\"job\":7,\"uid\":0,\"gid\":0,\"user\":\"no-such-user-"
	  "iostage\"}",
	  "key 'user': no such user 'no-such-user-iostage'" },
	{ ROOT,
	  "{\"op\":\"stage\",\"job\":7,\"uid\":0,\"gid\":0,\"user\":\"bad\\nname\"}",
	  "no such user 'bad?name'" },
	{ ROOT,
	  "{\"op\":\"stage\",\"job\":7,\"uid\":4242,\"gid\":0,\"user\":\"root\"}",
	  "user 'root' has uid 0, not 4242" },
	{ ROOT,
	  "{\"op\":\"stage\",\"job\":7,\"uid\":0,\"gid\":0,\"user\":\"root\"}",
	  "key 'profile': missing" },
	{ ROOT,
	  "{\"op\":\"stage\",\"job\":7,\"uid\":0,\"gid\":0,\"user\":\"root\","
	  "\"profile\":\"x\"}",
	  "key 'profile': must be an object" },
	{ ROOT,
	  "{\"op\":\"stage\",\"job\":7,\"uid\":0,\"gid\":0,\"user\":\"root\","
	  "\"profile\":{\"datasets\":[{\"path\":\"relative/x\"}]}}",
	  "key 'profile': " },
	{ ROOT,
	  "{\"op\":\"stage\",\"job\":7,\"uid\":0,\"gid\":0,\"user\":\"root\","
	  "\"profile\":{\"datasets\":[{\"path\":\"/data/x\",\"tier\":\"nvm\"}]}}",
	  "key 'profile': " },
	{ ROOT,
	  "{\"op\":\"stage\",\"job\":7,\"uid\":0,\"gid\":0,\"user\":\"root\","
	  "\"profile\":{\"datasets\":[{\"path\":\"/data/x\",\"bogus\":1}]}}",
	  "key 'profile': " },
	/* wait, abort, job_env, finish: the job named, and known */
	{ USER, "{\"op\":\"wait\"}", "key 'job': missing" },
	{ USER, "{\"op\":\"wait\",\"job\":7,\"timeout\":\"x\"}",
	  "key 'timeout': must be an integer" },
	{ USER, "{\"op\":\"wait\",\"job\":7,\"timeout\":-3}",
	  "key 'timeout': must be an integer" },
	{ USER, "{\"op\":\"wait\",\"job\":77}", "unknown job 77" },
	{ ROOT, "{\"op\":\"abort\",\"job\":\"x\"}",
	  "key 'job': must be an integer" },
	{ ROOT, "{\"op\":\"abort\",\"job\":7,\"reason\":5}",
	  "key 'reason': must be a string" },
	{ ROOT, "{\"op\":\"abort\",\"job\":77,\"reason\":\"deadline\"}",
	  "unknown job 77" },
	{ USER, "{\"op\":\"job_env\",\"job\":[]}",
	  "key 'job': must be an integer" },
	{ USER, "{\"op\":\"job_env\",\"job\":77}", "unknown job 77" },
	{ ROOT, "{\"op\":\"finish\"}", "key 'job': missing" },
	{ ROOT, "{\"op\":\"finish\",\"job\":null}",
	  "key 'job': must be an integer" },
	/* prestage: a user stages as themself; root may name anyone */
	{ USER, "{\"op\":\"prestage\"}", "key 'path': missing" },
	{ USER, "{\"op\":\"prestage\",\"path\":5}",
	  "key 'path': must be a string" },
	{ USER, "{\"op\":\"prestage\",\"path\":\"/data/x\",\"tier\":5}",
	  "key 'tier': must be a string" },
	{ USER, "{\"op\":\"prestage\",\"path\":\"/data/x\",\"user\":[]}",
	  "key 'user': must be a string" },
	{ USER, "{\"op\":\"prestage\",\"path\":\"/data/x\",\"verify\":true}",
	  "key 'verify': must be a string" },
	{ NOBODY,
	  "{\"op\":\"prestage\",\"path\":\"/data/x\",\"user\":\"root\"}",
	  "permission denied: key 'user' needs root" },
	{ USER, "{\"op\":\"prestage\",\"path\":\"/data/x\"}",
	  "uid 4242 has no user name" },
	{ ROOT,
	  "{\"op\":\"prestage\",\"path\":\"/data/"
	  "x\",\"user\":\"no-such-user-iostage\"}",
	  "no such user 'no-such-user-iostage'" },
	{ ROOT,
	  "{\"op\":\"prestage\",\"path\":\"/data/x\",\"user\":\"\\u001b[2J\"}",
	  "no such user '?[2J'" },
	{ ROOT,
	  "{\"op\":\"prestage\",\"path\":\"relative/x\",\"user\":\"root\"}",
	  "prestage refused: " },
	{ ROOT, "{\"op\":\"prestage\",\"path\":\"\",\"user\":\"root\"}",
	  "prestage refused: " },
	{ ROOT,
	  "{\"op\":\"prestage\",\"path\":\"/data/"
	  "x\",\"tier\":\"nvm\",\"user\":\"root\"}",
	  "prestage refused: " },
	{ ROOT,
	  "{\"op\":\"prestage\",\"path\":\"/data/"
	  "x\",\"tier\":\"t0\",\"verify\":\"maybe\",\"user\":\"root\"}",
	  "prestage refused: " },
	/* cache_ls, cache_evict */
	{ USER, "{\"op\":\"cache_ls\",\"tier\":5}",
	  "key 'tier': must be a string" },
	{ USER, "{\"op\":\"cache_ls\",\"tier\":\"nvm\"}",
	  "key 'tier': unknown tier 'nvm'" },
	{ USER, "{\"op\":\"cache_ls\",\"tier\":\"n\\u0007m\"}",
	  "unknown tier 'n?m'" },
	{ USER, "{\"op\":\"cache_evict\"}",
	  "give exactly one of 'key' and 'path'" },
	{ USER,
	  "{\"op\":\"cache_evict\",\"key\":\"00000000000000000000000000000000\","
	  "\"path\":\"/data/x\"}",
	  "give exactly one of 'key' and 'path'" },
	{ USER, "{\"op\":\"cache_evict\",\"key\":\"abc\"}",
	  "key 'key': must be 32 lowercase hex digits" },
	{ USER,
	  "{\"op\":\"cache_evict\",\"key\":\"0000000000000000000000000000000A\"}",
	  "key 'key': must be 32 lowercase hex digits" },
	{ USER,
	  "{\"op\":\"cache_evict\",\"key\":\"../../../../etc/passwd0000000000\"}",
	  "key 'key': must be 32 lowercase hex digits" },
	{ USER, "{\"op\":\"cache_evict\",\"key\":5}",
	  "key 'key': must be a string" },
	{ USER, "{\"op\":\"cache_evict\",\"path\":\"relative/x\"}",
	  "key 'path': " },
	{ USER,
	  "{\"op\":\"cache_evict\",\"path\":\"/data/x\",\"tier\":\"nvm\"}",
	  "unknown tier 'nvm'" },
	{ USER,
	  "{\"op\":\"cache_evict\",\"path\":\"/data/x\",\"user\":\"root\"}",
	  "permission denied: key 'user' needs root (peer uid 4242)" },
	{ ROOT,
	  "{\"op\":\"cache_evict\",\"path\":\"/data/"
	  "x\",\"user\":\"no-such-user-iostage\"}",
	  "no such user 'no-such-user-iostage'" },
	/* the telemetry ops */
	{ ROOT, "{\"op\":\"task_register\",\"job\":7}",
	  "key 'pid': missing or not a task pid" },
	{ ROOT, "{\"op\":\"task_register\",\"job\":7,\"pid\":1}",
	  "key 'pid': missing or not a task pid" },
	{ ROOT, "{\"op\":\"task_register\",\"job\":7,\"pid\":-5}",
	  "key 'pid': must be an integer from 0" },
	{ ROOT,
	  "{\"op\":\"task_register\",\"job\":7,\"pid\":100,\"step\":\"x\"}",
	  "key 'step': must be an integer" },
	{ ROOT,
	  "{\"op\":\"task_register\",\"job\":7,\"pid\":100,\"identity\":\"mpi\"}",
	  "key 'identity': must be \"pmix\" or \"slurm\"" },
	{ ROOT,
	  "{\"op\":\"task_register\",\"job\":7,\"pid\":100,\"node\":\"" LONG300
	  "\"}",
	  "key 'node': must be a string of at most" },
	{ ROOT, "{\"op\":\"task_exit\"}", "key 'job': missing" },
	{ ROOT, "{\"op\":\"task_exit\",\"job\":7,\"pid\":2.5}",
	  "key 'pid': must be an integer" },
	{ USER, "{\"op\":\"phase\",\"job\":7,\"event\":\"begin\"}",
	  "key 'name': missing" },
	{ USER,
	  "{\"op\":\"phase\",\"job\":7,\"name\":\"a b\",\"event\":\"begin\"}",
	  "key 'name': 'a b' is not a phase name" },
	{ USER,
	  "{\"op\":\"phase\",\"job\":7,\"name\":\"a\\nb\",\"event\":\"begin\"}",
	  "key 'name': 'a?b' is not a phase name" },
	{ USER,
	  "{\"op\":\"phase\",\"job\":7,\"name\":\"\",\"event\":\"begin\"}",
	  "is not a phase name" },
	{ USER,
	  "{\"op\":\"phase\",\"job\":7,\"name\":\"" LONG300
	  "\",\"event\":\"begin\"}",
	  "is not a phase name" },
	{ USER,
	  "{\"op\":\"phase\",\"job\":7,\"name\":\"io\",\"event\":\"middle\"}",
	  "key 'event': must be \"begin\" or \"end\"" },
	{ USER,
	  "{\"op\":\"phase\",\"job\":7,\"name\":\"io\",\"event\":\"end\",\"ts\":"
	  "\"now\"}",
	  "key 'ts': must be unix seconds close to now" },
	{ USER,
	  "{\"op\":\"phase\",\"job\":7,\"name\":\"io\",\"event\":\"end\",\"ts\":0}",
	  "key 'ts': must be unix seconds close to now" },
	{ USER, "{\"op\":\"shim_report\"}",
	  "shim_report refused: key 'job': missing" },
	{ USER, "{\"op\":\"telemetry\",\"job\":0}", "key 'job': must be > 0" },
};

static uid_t uid_for(enum who w)
{
	switch (w) {
	case ROOT:
		return 0;
	case USER:
		return OTHER_UID;
	case NOBODY:
		return uid_of("nobody");
	}
	return 0;
}

START_TEST(test_handler_refuses)
{
	cJSON *r = call_text(uid_for(refusals[_i].who), refusals[_i].req);

	ck_assert_msg(!ok_of(r), "%d: %s: accepted", _i, refusals[_i].req);
	ck_assert_msg(strstr(error_of(r), refusals[_i].want) != NULL,
		      "%d: %s: error '%s', not '%s'", _i, refusals[_i].req,
		      error_of(r), refusals[_i].want);
	cJSON_Delete(r);
}
END_TEST

/* A node list over JOBS_NODES_MAX is refused before anything else. */
START_TEST(test_stage_too_many_nodes)
{
	cJSON *req = cJSON_CreateObject(), *nodes, *r;
	char name[32];

	cJSON_AddStringToObject(req, "op", "stage");
	cJSON_AddNumberToObject(req, "job", 7);
	nodes = cJSON_AddArrayToObject(req, "nodes");
	for (int i = 0; i <= JOBS_NODES_MAX; i++) {
		snprintf(name, sizeof(name), "n%d", i);
		cJSON_AddItemToArray(nodes, cJSON_CreateString(name));
	}
	r = call_as(&agent, 0, req);
	ck_assert(!ok_of(r));
	ck_assert_msg(strstr(error_of(r), "key 'nodes': more than 4096"), "%s",
		      error_of(r));
	cJSON_Delete(r);
	cJSON_Delete(req);
}
END_TEST

/* A NULL or empty request: every op that needs something says what,
 * none crashes; those that need nothing answer. */
static const struct {
	const char *op;
	bool ok;
} empty_cases[] = {
	{ "ping", true },         { "stage", false },
	{ "wait", false },        { "abort", false },
	{ "job_env", false },     { "finish", false },
	{ "prestage", false },    { "cache_ls", true },
	{ "cache_evict", false }, { "task_register", false },
	{ "task_exit", false },   { "phase", false },
	{ "shim_report", false }, { "telemetry", false },
};

START_TEST(test_null_and_empty_requests)
{
	struct ops_caller root = { 0, 0, 1234 };
	const struct op *o = server_op(empty_cases[_i].op);
	cJSON *empty = cJSON_CreateObject(), *r;

	ck_assert_ptr_nonnull(o);
	r = o->fn(&agent, &root, NULL);
	ck_assert_msg(r && ok_of(r) == empty_cases[_i].ok, "%s(NULL): %s",
		      empty_cases[_i].op, r ? error_of(r) : "no reply");
	ck_assert(ok_of(r) || error_of(r)[0]);
	cJSON_Delete(r);
	r = o->fn(&agent, &root, empty);
	ck_assert_msg(r && ok_of(r) == empty_cases[_i].ok, "%s({}): %s",
		      empty_cases[_i].op, r ? error_of(r) : "no reply");
	cJSON_Delete(r);
	cJSON_Delete(empty);
}
END_TEST

START_TEST(test_ping)
{
	cJSON *r = call_text(OTHER_UID, "{\"op\":\"ping\"}");
	const cJSON *pid = cJSON_GetObjectItemCaseSensitive(r, "pid");

	ck_assert(ok_of(r));
	ck_assert_str_eq(cJSON_GetStringValue(
			     cJSON_GetObjectItem(r, "version")),
			 IOSTAGE_VERSION);
	ck_assert(cJSON_IsNumber(pid) && pid->valuedouble == getpid());
	cJSON_Delete(r);
}
END_TEST

/* --- dispatch: the line, the op, root only ------------------------------ */

static cJSON *dispatch_as(uid_t uid, const char *line)
{
	struct ops_caller who = { uid, uid, 1234 };
	cJSON *r = server_dispatch(&agent, &who, line);

	ck_assert_msg(r != NULL, "%s: no reply", line);
	ck_assert_msg(cJSON_IsBool(cJSON_GetObjectItem(r, "ok")),
		      "%s: no \"ok\"", line);
	return r;
}

static const struct {
	const char *line;
	const char *want;
} bad_lines[] = {
	{ "", "" },
	{ "not json", "" },
	{ "[]", "" },
	{ "\"ping\"", "" },
	{ "{}", "op" },
	{ "{\"op\":5}", "op" },
	{ "{\"op\":null}", "op" },
	{ "{\"op\":\"nope\"}", "unknown op 'nope' (known: " },
	{ "{\"op\":\"no\\u0001pe\"}", "unknown op 'no?pe'" },
	{ "{\"op\":\"stage \"}", "unknown op 'stage '" },
	{ "{\"op\":\"STAGE\"}", "unknown op 'STAGE'" },
};

START_TEST(test_dispatch_bad_lines)
{
	cJSON *r = dispatch_as(0, bad_lines[_i].line);

	ck_assert_msg(!ok_of(r), "'%s' accepted", bad_lines[_i].line);
	ck_assert_msg(error_of(r)[0] != '\0', "'%s': no error",
		      bad_lines[_i].line);
	ck_assert_msg(strstr(error_of(r), bad_lines[_i].want) != NULL,
		      "'%s': '%s'", bad_lines[_i].line, error_of(r));
	cJSON_Delete(r);
}
END_TEST

/* The unknown-op message lists every family's ops. */
START_TEST(test_dispatch_lists_known_ops)
{
	static const char *const ops[] = { "ping",          "stage",
					   "job_env",       "status",
					   "prestage",      "cache_evict",
					   "task_register", "telemetry",
					   "history_get",   "recommend" };
	cJSON *r = dispatch_as(OTHER_UID, "{\"op\":\"x\"}");

	for (size_t i = 0; i < sizeof(ops) / sizeof(ops[0]); i++)
		ck_assert_msg(strstr(error_of(r), ops[i]) != NULL,
			      "'%s' not listed: %s", ops[i], error_of(r));
	cJSON_Delete(r);
}
END_TEST

/* Root's ops, asked by a user with a request that their handler would
 * refuse otherwise: dispatch refuses first, naming the caller. */
static const char *const root_ops[] = {
	"stage", "abort", "finish", "task_register", "task_exit", "history_put",
};

START_TEST(test_dispatch_root_only)
{
	char line[128], want[128];
	cJSON *r;

	snprintf(line, sizeof(line), "{\"op\":\"%s\",\"job\":\"bad\"}",
		 root_ops[_i]);
	snprintf(want, sizeof(want),
		 "permission denied: op '%s' needs root (peer uid %u)",
		 root_ops[_i], OTHER_UID);
	r = dispatch_as(OTHER_UID, line);
	ck_assert(!ok_of(r));
	ck_assert_msg(!strcmp(error_of(r), want), "%s: '%s'", root_ops[_i],
		      error_of(r));
	cJSON_Delete(r);
	/* nobody's uid is no better */
	r = dispatch_as(uid_of("nobody"), line);
	ck_assert(strstr(error_of(r), "permission denied: op '"));
	cJSON_Delete(r);
	/* root reaches the handler, which looks at the request */
	r = dispatch_as(0, line);
	ck_assert(!ok_of(r));
	ck_assert_msg(strstr(error_of(r), "permission denied") == NULL,
		      "%s: root refused: %s", root_ops[_i], error_of(r));
	cJSON_Delete(r);
}
END_TEST

/* A user's op is the handler's to answer: dispatch lets it through. */
START_TEST(test_dispatch_user_ops_reach_handler)
{
	cJSON *r = dispatch_as(OTHER_UID, "{\"op\":\"wait\",\"job\":77}");

	ck_assert_str_eq(error_of(r), "unknown job 77");
	cJSON_Delete(r);
	r = dispatch_as(OTHER_UID, "{\"op\":\"ping\"}");
	ck_assert(ok_of(r));
	cJSON_Delete(r);
}
END_TEST

/* --- the cache: each user's own --------------------------------------- */

static int entries_seen(struct agent *a, uid_t uid)
{
	cJSON *req = cJSON_Parse("{\"op\":\"cache_ls\"}");
	cJSON *r = call_as(a, uid, req);
	int n;

	cJSON_Delete(req);
	ck_assert_msg(ok_of(r), "cache_ls: %s", error_of(r));
	n = cJSON_GetArraySize(cJSON_GetObjectItem(r, "entries"));
	cJSON_Delete(r);
	return n;
}

START_TEST(test_cache_ls_own_entries)
{
	uid_t me = getuid(),
	      other = me == OTHER_UID ? OTHER_UID + 1 : OTHER_UID;

	ck_assert_int_eq(entries_seen(&agent, me), 0);
	fx_build(&fx, 0, "/data/mine", 100, false, NULL);
	ck_assert_int_eq(entries_seen(&agent, me), 1);
	ck_assert_int_eq(entries_seen(&agent, 0), 1); /* root: all */
	ck_assert_int_eq(entries_seen(&agent, other), 0);
	/* a public entry: everyone's */
	fx_build(&fx, 0, "/data/public", 100, true, NULL);
	ck_assert_int_eq(entries_seen(&agent, other), 1);
}
END_TEST

START_TEST(test_cache_evict_own_entries)
{
	uid_t me = getuid(),
	      other = me == OTHER_UID ? OTHER_UID + 1 : OTHER_UID;
	char key[CACHE_KEY_LEN + 1], line[128];
	cJSON *req, *r;

	fx_build(&fx, 0, "/data/mine", 100, false, key);
	snprintf(line, sizeof(line), "{\"op\":\"cache_evict\",\"key\":\"%s\"}",
		 key);
	req = cJSON_Parse(line);
	if (me != 0) {
		/* another user cannot remove it */
		r = call_as(&agent, other, req);
		ck_assert_msg(!ok_of(r) ||
				  cJSON_GetArraySize(
				      cJSON_GetObjectItem(r, "evicted")) == 0,
			      "another user evicted it");
		cJSON_Delete(r);
		ck_assert(fx_version_exists(&fx, 0, key, 1));
	}
	r = call_as(&agent, me, req);
	ck_assert_msg(ok_of(r), "cache_evict: %s", error_of(r));
	ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItem(r, "evicted")),
			 1);
	ck_assert_double_eq(cJSON_GetNumberValue(
				cJSON_GetObjectItem(r, "bytes")),
			    100);
	ck_assert(!fx_version_exists(&fx, 0, key, 1));
	cJSON_Delete(r);
	cJSON_Delete(req);
}
END_TEST

/* Two agents in one process: each op sees its own agent's cache. */
START_TEST(test_two_agents)
{
	struct fx fy;
	struct agent other;

	fx_init(&fy, "n2", 1, false);
	memset(&other, 0, sizeof(other));
	other.conf = &fy.conf;
	other.cache = fy.c;
	fx_build(&fx, 0, "/data/a", 100, false, NULL);
	fx_build(&fy, 0, "/data/b1", 100, false, NULL);
	fx_build(&fy, 0, "/data/b2", 100, false, NULL);
	ck_assert_int_eq(entries_seen(&agent, 0), 1);
	ck_assert_int_eq(entries_seen(&other, 0), 2);
	fx_fini(&fy);
	ck_assert_int_eq(entries_seen(&agent, 0), 1);
}
END_TEST

/* --- another user's job (root: the job table's StateDir is root's) ---- */

START_TEST(test_another_users_job)
{
	/* job_env first: answered at once when allowed (wait would block) */
	static const char *const ops[] = { "job_env", "abort", "wait" };
	char err[CONF_ERR_MAX], line[128];
	struct profile *p;
	struct job *job, *old = NULL;
	cJSON *r;

	agent.jobs = jobs_create(&agent, getuid(), err, sizeof(err));
	ck_assert_msg(agent.jobs != NULL, "jobs_create: %s", err);
	ck_assert_msg(jobs_load(agent.jobs, err, sizeof(err)) == 0,
		      "jobs_load: %s", err);
	p = profile_parse_json("{\"datasets\":[{\"path\":\"/data/x\"}]}",
			       "test", err, sizeof(err));
	ck_assert_msg(p &&
			  profile_normalize(p, &fx.conf, err, sizeof(err)) == 0,
		      "profile: %s", err);
	job = jobs_new_job(agent.jobs, 77, OTHER_UID, OTHER_UID, "someone", p,
			   err, sizeof(err));
	ck_assert_msg(job != NULL, "jobs_new_job: %s", err);
	ck_assert_int_eq(jobs_insert(agent.jobs, job, &old, err, sizeof(err)),
			 0);
	for (size_t i = 0; i < sizeof(ops) / sizeof(ops[0]); i++) {
		snprintf(line, sizeof(line), "{\"op\":\"%s\",\"job\":77}",
			 ops[i]);
		r = call_text(OTHER_UID + 1, line);
		ck_assert(!ok_of(r));
		ck_assert_msg(strstr(error_of(r),
				     "permission denied: job 77 belongs to "
				     "another user (peer uid 4243)"),
			      "%s: %s", ops[i], error_of(r));
		cJSON_Delete(r);
	}
	/* the owner is answered (still staging: no environment yet) */
	r = call_text(OTHER_UID, "{\"op\":\"job_env\",\"job\":77}");
	ck_assert_msg(ok_of(r), "owner: %s", error_of(r));
	ck_assert_str_eq(cJSON_GetStringValue(cJSON_GetObjectItem(r, "state")),
			 "staging");
	cJSON_Delete(r);
	/* and root */
	r = call_text(0, "{\"op\":\"job_env\",\"job\":77}");
	ck_assert_msg(ok_of(r), "root: %s", error_of(r));
	cJSON_Delete(r);
	jobs_remove(job);
	jobs_put(job);
	jobs_destroy(agent.jobs);
	agent.jobs = NULL;
}
END_TEST

static Suite *ops_suite(void)
{
	Suite *s = suite_create("ops");
	TCase *tc = tcase_create("handlers");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_loop_test(tc, test_handler_refuses, 0,
			    sizeof(refusals) / sizeof(refusals[0]));
	tcase_add_test(tc, test_stage_too_many_nodes);
	tcase_add_loop_test(tc, test_null_and_empty_requests, 0,
			    sizeof(empty_cases) / sizeof(empty_cases[0]));
	tcase_add_test(tc, test_ping);
	suite_add_tcase(s, tc);

	tc = tcase_create("dispatch");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_loop_test(tc, test_dispatch_bad_lines, 0,
			    sizeof(bad_lines) / sizeof(bad_lines[0]));
	tcase_add_test(tc, test_dispatch_lists_known_ops);
	tcase_add_loop_test(tc, test_dispatch_root_only, 0,
			    sizeof(root_ops) / sizeof(root_ops[0]));
	tcase_add_test(tc, test_dispatch_user_ops_reach_handler);
	suite_add_tcase(s, tc);

	tc = tcase_create("cache");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_cache_ls_own_entries);
	tcase_add_test(tc, test_cache_evict_own_entries);
	tcase_add_test(tc, test_two_agents);
	suite_add_tcase(s, tc);

	tc = tcase_create("jobs");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_root_test(tc, test_another_users_job);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return check_run(ops_suite());
}
