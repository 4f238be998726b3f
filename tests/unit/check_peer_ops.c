/* check_peer_ops.c - unit tests for the node channel's ops without a
 * network (daemon/cluster/peer.c, peer_ops.c, parts.c's parts_put): what
 * each op refuses (a missing or ill-typed job, a part that is not the
 * node's finished part of that job, a node name that is a path), what
 * it answers for a job it does not know, a prestage with and without
 * the socket's handler registered, a request that is not one on the
 * connection (peer_serve_fd over a socketpair), and two agents keeping
 * their parts apart.
 *
 * An agent here is its configuration (StateDir in a temporary
 * directory), a peer channel made but not listening, and its parts. The
 * job table and telemetry are not started (see check_ops.c): the ops
 * that would reach them are tested up to that point. Unprivileged.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <check.h>

#include "common/config/conf.h"
#include "daemon/agent.h"
#include "daemon/cluster/parts.h"
#include "daemon/cluster/peer.h"
#include "tests/unit/check_run.h"

struct node {
	char root[64];
	struct conf conf;
	struct agent agent;
};

static struct node n1, n2;

static void node_init(struct node *n, const char *name)
{
	char err[CONF_ERR_MAX];

	memset(n, 0, sizeof(*n));
	snprintf(n->root, sizeof(n->root), "/tmp/check_peer_ops.XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(n->root));
	conf_set_defaults(&n->conf);
	snprintf(n->conf.node_name, sizeof(n->conf.node_name), "%s", name);
	snprintf(n->conf.state_dir, sizeof(n->conf.state_dir), "%s/state",
		 n->root);
	n->conf.peer_port = 0; /* calls to other nodes: off */
	n->agent.conf = &n->conf;
	n->agent.peer = peer_create(&n->agent);
	ck_assert_ptr_nonnull(n->agent.peer);
	n->agent.parts = parts_create(&n->agent, err, sizeof(err));
	ck_assert_msg(n->agent.parts != NULL, "parts_create: %s", err);
}

static int rm_one(const char *path, const struct stat *st, int flag,
		  struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(path);
}

static void node_fini(struct node *n)
{
	parts_destroy(n->agent.parts);
	peer_destroy(n->agent.peer);
	nftw(n->root, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

static void setup(void)
{
	node_init(&n1, "n1");
	node_init(&n2, "n2");
}

static void teardown(void)
{
	node_fini(&n1);
	node_fini(&n2);
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

/* Peer op REQ (its "op" names it) on agent A, asked by root from
 * 10.0.0.2. */
static cJSON *peer_op(struct agent *a, const char *text)
{
	struct peernet_peer who = { 0, 0, "10.0.0.2" };
	cJSON *req = cJSON_Parse(text), *r = NULL;
	const char *name;

	ck_assert_msg(req != NULL, "bad JSON in the case: %s", text);
	name = cJSON_GetStringValue(cJSON_GetObjectItem(req, "op"));
	ck_assert_ptr_nonnull(name);
	for (const struct peer_op *op = peer_ops; op->name; op++)
		if (!strcmp(op->name, name))
			r = op->fn(a, &who, req);
	cJSON_Delete(req);
	ck_assert_msg(r != NULL, "%s: no reply (no such op?)", text);
	return r;
}

#define PART(job, node, end)                                                   \
	"{\"job\":" #job ",\"node\":\"" node "\"" end ",\"nodes\":[\"n1\","    \
	"\"n2\"]}"

static const struct {
	const char *req;
	const char *want;
} refusals[] = {
	{ "{\"op\":\"stage_state\"}", "key 'job': missing" },
	{ "{\"op\":\"stage_state\",\"job\":0}", "key 'job': must be > 0" },
	{ "{\"op\":\"stage_state\",\"job\":\"7\"}",
	  "key 'job': must be an integer" },
	{ "{\"op\":\"telemetry_part\"}", "key 'job': missing" },
	{ "{\"op\":\"telemetry_part\",\"job\":-7}",
	  "key 'job': must be an integer" },
	{ "{\"op\":\"history_get\",\"job\":{}}",
	  "key 'job': must be an integer" },
	{ "{\"op\":\"part_put\"}", "part_put refused: key 'job': missing" },
	{ "{\"op\":\"part_put\",\"job\":77}",
	  "part_put refused: key 'node': missing" },
	{ "{\"op\":\"part_put\",\"job\":77,\"node\":5}",
	  "key 'node': must be a string" },
	{ "{\"op\":\"part_put\",\"job\":77,\"node\":\"../../etc\",\"record\":" PART(
	      77, "../../etc", ",\"end\":1") "}",
	  "key 'node': not a node name" },
	{ "{\"op\":\"part_put\",\"job\":77,\"node\":\"n2\\n\"}",
	  "key 'node': not a node name" },
	{ "{\"op\":\"part_put\",\"job\":77,\"node\":\"n2\"}",
	  "key 'record': not the finished part of job 77 from node n2" },
	{ "{\"op\":\"part_put\",\"job\":77,\"node\":\"n2\",\"record\":\"x\"}",
	  "key 'record': not the finished part" },
	{ "{\"op\":\"part_put\",\"job\":77,\"node\":\"n2\",\"record\":" PART(
	      78, "n2", ",\"end\":1") "}",
	  "key 'record': not the finished part" },
	{ "{\"op\":\"part_put\",\"job\":77,\"node\":\"n2\",\"record\":" PART(
	      77, "n3", ",\"end\":1") "}",
	  "key 'record': not the finished part" },
	{ "{\"op\":\"part_put\",\"job\":77,\"node\":\"n2\",\"record\":" PART(
	      77, "n2", "") "}",
	  "key 'record': not the finished part" },
	{ "{\"op\":\"prestage\",\"path\":\"/data/x\",\"user\":\"root\"}",
	  "prestage: not served by this node" },
};

START_TEST(test_peer_op_refuses)
{
	cJSON *r = peer_op(&n1.agent, refusals[_i].req);

	ck_assert_msg(!ok_of(r), "%d: %s: accepted", _i, refusals[_i].req);
	ck_assert_msg(strstr(error_of(r), refusals[_i].want) != NULL,
		      "%d: %s: '%s', not '%s'", _i, refusals[_i].req,
		      error_of(r), refusals[_i].want);
	cJSON_Delete(r);
}
END_TEST

/* Without its parts (a test agent, or before they are made): refused. */
START_TEST(test_part_put_without_parts)
{
	struct agent bare = { .conf = &n1.conf, .peer = n1.agent.peer };
	cJSON *r = peer_op(&bare, "{\"op\":\"part_put\",\"job\":77,\"node\":"
				  "\"n2\",\"record\":" PART(77, "n2",
							    ",\"end\":1") "}");

	ck_assert(!ok_of(r));
	ck_assert_str_eq(error_of(r), "part_put refused: parts: not ready");
	cJSON_Delete(r);
}
END_TEST

static bool part_file(const struct node *n, const char *name)
{
	char path[CONF_PATH_MAX + 64];
	struct stat st;

	snprintf(path, sizeof(path), "%s/parts/%s", n->conf.state_dir, name);
	return lstat(path, &st) == 0 && S_ISREG(st.st_mode);
}

/* A node's finished part is kept by the agent it was sent to, and only
 * there; a second copy replaces the first. */
START_TEST(test_part_put_kept_per_agent)
{
	const char *req = "{\"op\":\"part_put\",\"job\":77,\"node\":\"n2\","
			  "\"record\":" PART(77, "n2", ",\"end\":1") "}";
	cJSON *r = peer_op(&n1.agent, req);

	ck_assert_msg(ok_of(r), "part_put: %s", error_of(r));
	cJSON_Delete(r);
	ck_assert(part_file(&n1, "77.n2.json"));
	ck_assert(!part_file(&n2, "77.n2.json"));
	r = peer_op(&n1.agent, req);
	ck_assert(ok_of(r));
	cJSON_Delete(r);
	ck_assert(part_file(&n1, "77.n2.json"));
}
END_TEST

/* A job this node never heard of: "unknown", in its own name. */
START_TEST(test_stage_state_unknown_job)
{
	cJSON *r = peer_op(&n2.agent, "{\"op\":\"stage_state\",\"job\":77,"
				      "\"since_us\":1e30}");

	ck_assert_msg(ok_of(r), "%s", error_of(r));
	ck_assert_str_eq(cJSON_GetStringValue(cJSON_GetObjectItem(r, "state")),
			 "unknown");
	ck_assert_str_eq(cJSON_GetStringValue(cJSON_GetObjectItem(r, "node")),
			 "n2");
	cJSON_Delete(r);
	/* each agent answers in its own name */
	r = peer_op(&n1.agent, "{\"op\":\"peer_ping\"}");
	ck_assert(ok_of(r));
	ck_assert_str_eq(cJSON_GetStringValue(cJSON_GetObjectItem(r, "node")),
			 "n1");
	cJSON_Delete(r);
	r = peer_op(&n2.agent, "{\"op\":\"peer_ping\"}");
	ck_assert(ok_of(r));
	ck_assert_str_eq(cJSON_GetStringValue(cJSON_GetObjectItem(r, "node")),
			 "n2");
	cJSON_Delete(r);
}
END_TEST

static struct agent *prestage_seen;

static cJSON *fake_prestage(struct agent *a, const cJSON *req)
{
	cJSON *r = cJSON_CreateObject();

	(void)req;
	prestage_seen = a;
	cJSON_AddTrueToObject(r, "ok");
	cJSON_AddNumberToObject(r, "id", 4000000001.0);
	return r;
}

/* The socket's prestage, registered on one agent's channel, runs with
 * that agent; the other agent's channel still refuses. */
START_TEST(test_prestage_registered)
{
	const char *req = "{\"op\":\"prestage\",\"path\":\"/data/x\","
			  "\"user\":\"root\",\"for_job\":9}";
	cJSON *r;

	peer_set_prestage(n2.agent.peer, fake_prestage);
	r = peer_op(&n2.agent, req);
	ck_assert_msg(ok_of(r), "%s", error_of(r));
	ck_assert_ptr_eq(prestage_seen, &n2.agent);
	cJSON_Delete(r);
	prestage_seen = NULL;
	r = peer_op(&n1.agent, req);
	ck_assert(!ok_of(r));
	ck_assert_ptr_null(prestage_seen);
	cJSON_Delete(r);
	/* and a cache report asked of a node without a service: answered */
	r = peer_op(&n1.agent, "{\"op\":\"cache_report\"}");
	ck_assert(ok_of(r));
	cJSON_Delete(r);
}
END_TEST

/* What arrives on a connection and is not a request: one error reply,
 * never an op. */
static const char *const bad_connections[] = {
	"",
	"\n",
	"not json\n",
	"{\"op\":\"peer_ping\"}\n", /* no envelope, no credential */
	"[1,2,3]\n",
	"{\"cred\":5,\"op\":\"peer_ping\"}\n",
};

START_TEST(test_serve_fd_refuses)
{
	const char *in = bad_connections[_i];
	int sv[2];
	cJSON *r;

	ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv),
			 0);
	ck_assert_int_eq(write(sv[1], in, strlen(in)), (ssize_t)strlen(in));
	shutdown(sv[1], SHUT_WR);
	r = peer_serve_fd(n1.agent.peer, sv[0]);
	ck_assert_ptr_nonnull(r);
	ck_assert_msg(!ok_of(r), "'%s' served", in);
	ck_assert_msg(error_of(r)[0] != '\0', "'%s': no error", in);
	cJSON_Delete(r);
	close(sv[0]);
	close(sv[1]);
}
END_TEST

/* The channel off (PeerPort=0) or absent: never a call, a line saying so. */
START_TEST(test_channel_off)
{
	char err[256];
	int unreachable = 0;
	cJSON *req = cJSON_CreateObject(), *r;

	ck_assert(!peer_enabled(n1.agent.peer));
	ck_assert(!peer_enabled(NULL));
	ck_assert_str_eq(peer_self(n1.agent.peer), "n1");
	ck_assert_str_eq(peer_self(NULL), "");
	r = peer_call(n1.agent.peer, "n2", req, 1000, &unreachable, err,
		      sizeof(err));
	ck_assert_ptr_null(r);
	ck_assert_int_eq(unreachable, 1);
	ck_assert_msg(strstr(err, "node n2: the peer channel is off here"),
		      "%s", err);
	r = peer_call(NULL, "n2", req, 1000, &unreachable, err, sizeof(err));
	ck_assert_ptr_null(r);
	cJSON_Delete(req);
}
END_TEST

/* A single-node record, or no parts: parts_finish leaves the filing to
 * the caller (0); the channel off: so does a multi-node one. */
START_TEST(test_parts_finish_leaves_filing)
{
	cJSON *single = cJSON_Parse("{\"job\":5,\"node\":\"n1\"}");
	cJSON *multi = cJSON_Parse(PART(5, "n1", ",\"end\":1"));

	ck_assert_int_eq(parts_finish(n1.agent.parts, 5, single), 0);
	ck_assert_int_eq(parts_finish(NULL, 5, multi), 0);
	ck_assert_int_eq(parts_finish(n1.agent.parts, 5, multi), 0);
	/* parts_job_record gives the local part back as is */
	ck_assert_ptr_eq(parts_job_record(n1.agent.parts, 5, single), single);
	ck_assert_ptr_eq(parts_job_record(NULL, 5, multi), multi);
	cJSON_Delete(single);
	cJSON_Delete(multi);
}
END_TEST

static Suite *peer_ops_suite(void)
{
	Suite *s = suite_create("peer_ops");
	TCase *tc = tcase_create("ops");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_loop_test(tc, test_peer_op_refuses, 0,
			    sizeof(refusals) / sizeof(refusals[0]));
	tcase_add_test(tc, test_part_put_without_parts);
	tcase_add_test(tc, test_part_put_kept_per_agent);
	tcase_add_test(tc, test_stage_state_unknown_job);
	tcase_add_test(tc, test_prestage_registered);
	suite_add_tcase(s, tc);

	tc = tcase_create("channel");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_loop_test(tc, test_serve_fd_refuses, 0,
			    sizeof(bad_connections) /
				sizeof(bad_connections[0]));
	tcase_add_test(tc, test_channel_off);
	tcase_add_test(tc, test_parts_finish_leaves_filing);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return check_run(peer_ops_suite());
}
