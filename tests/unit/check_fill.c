/* check_fill.c - unit tests for daemon/cluster/fill.c without a network:
 * what a job's head answers its other nodes about a dataset (stage_entry:
 * unknown, staging, done with its entry, failed), what a node answers
 * about its current version of an entry (entry_current: a node-local tier
 * only, a key that is a key, a version that is published), and that a
 * node with no peer channel, or a Shared tier, never looks for a copy on
 * another node. Unprivileged: the agent is tests/unit/agent_fixture.h's.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <check.h>

#include "daemon/cluster/fill.h"
#include "daemon/cluster/peer.h"
#include "tests/unit/agent_fixture.h"
#include "tests/unit/check_run.h"

#define TWO_DS                                                                 \
	"{\"datasets\":[{\"name\":\"a\",\"path\":\"/pfs/a\",\"tier\":\"t0\"}," \
	"{\"name\":\"b\",\"path\":\"/pfs/b\",\"tier\":\"t1\"}]}"

static struct ag g;

static void setup(void)
{
	ag_init(&g, "n1", 2);
}

static void teardown(void)
{
	ag_fini(&g);
}

/* Peer op TEXT on our agent, asked by root on another node. */
static cJSON *ask(const char *text)
{
	struct peernet_peer who = { 0, 0, "10.0.0.2" };
	cJSON *req = cJSON_Parse(text), *r = NULL;
	const char *name;

	ck_assert_msg(req != NULL, "bad JSON in the case: %s", text);
	name = cJSON_GetStringValue(cJSON_GetObjectItem(req, "op"));
	for (const struct peer_op *op = peer_ops; op->name; op++)
		if (!strcmp(op->name, name))
			r = op->fn(&g.a, &who, req);
	cJSON_Delete(req);
	ck_assert_msg(r != NULL, "%s: no reply", text);
	return r;
}

static const char *s_of(const cJSON *r, const char *key)
{
	const char *s = cJSON_GetStringValue(cJSON_GetObjectItem(r, key));

	return s ? s : "";
}

static bool ok_of(const cJSON *r)
{
	return cJSON_IsTrue(cJSON_GetObjectItem(r, "ok"));
}

/* --- stage_entry ------------------------------------------------------- */

START_TEST(test_stage_entry_follows_the_dataset)
{
	struct job *job;
	cJSON *r;

	/* not here (yet) */
	r = ask("{\"op\":\"stage_entry\",\"job\":42,\"dataset\":0}");
	ck_assert(ok_of(r));
	ck_assert_str_eq(s_of(r, "state"), "unknown");
	cJSON_Delete(r);

	job = ag_job(&g, 42, TWO_DS);
	r = ask("{\"op\":\"stage_entry\",\"job\":42,\"dataset\":1}");
	ck_assert_str_eq(s_of(r, "state"), "staging");
	ck_assert_str_eq(s_of(r, "entry"), "");
	cJSON_Delete(r);

	/* dataset 1 done: its entry and tier; dataset 0 still staging */
	jobs_dataset_result(job, 1, JOB_DS_BUILT,
			    "0123456789abcdef0123456789abcdef.v3", 1, 1, 0);
	r = ask("{\"op\":\"stage_entry\",\"job\":42,\"dataset\":1}");
	ck_assert_str_eq(s_of(r, "state"), "done");
	ck_assert_str_eq(s_of(r, "tier"), "t1");
	ck_assert_str_eq(s_of(r, "entry"),
			 "0123456789abcdef0123456789abcdef.v3");
	cJSON_Delete(r);
	r = ask("{\"op\":\"stage_entry\",\"job\":42,\"dataset\":0}");
	ck_assert_str_eq(s_of(r, "state"), "staging");
	cJSON_Delete(r);

	/* a dataset the job does not have, and one that failed */
	r = ask("{\"op\":\"stage_entry\",\"job\":42,\"dataset\":2}");
	ck_assert_str_eq(s_of(r, "state"), "failed");
	cJSON_Delete(r);
	jobs_dataset_result(job, 0, JOB_DS_FAILED, NULL, 0, 0, 0);
	r = ask("{\"op\":\"stage_entry\",\"job\":42,\"dataset\":0}");
	ck_assert_str_eq(s_of(r, "state"), "failed");
	cJSON_Delete(r);

	/* staging over without dataset 0: failed, not "staging" for ever */
	jobs_staging_done(job, false, "boom");
	jobs_dataset_result(job, 0, JOB_DS_PENDING, NULL, 0, 0, 0);
	r = ask("{\"op\":\"stage_entry\",\"job\":42,\"dataset\":0}");
	ck_assert_str_eq(s_of(r, "state"), "failed");
	cJSON_Delete(r);
	jobs_put(job);
}
END_TEST

static const struct {
	const char *req, *want;
} refusals[] = {
	{ "{\"op\":\"stage_entry\",\"dataset\":0}", "key 'job': missing" },
	{ "{\"op\":\"stage_entry\",\"job\":7}",
	  "stage_entry: bad dataset index" },
	{ "{\"op\":\"stage_entry\",\"job\":7,\"dataset\":-1}",
	  "stage_entry: bad dataset index" },
	{ "{\"op\":\"stage_entry\",\"job\":7,\"dataset\":\"0\"}",
	  "stage_entry: bad dataset index" },
	{ "{\"op\":\"stage_entry\",\"job\":7,\"dataset\":16}",
	  "stage_entry: bad dataset index" },
	{ "{\"op\":\"entry_current\",\"key\":\"0123456789abcdef0123456789abcdef\"}",
	  "entry_current: key 'tier': missing" },
	{ "{\"op\":\"entry_current\",\"tier\":\"t0\"}",
	  "entry_current: key 'key': missing" },
	{ "{\"op\":\"entry_current\",\"tier\":\"nope\",\"key\":"
	  "\"0123456789abcdef0123456789abcdef\"}",
	  "entry_current: no node-local tier 'nope' here" },
	{ "{\"op\":\"entry_current\",\"tier\":\"t0\",\"key\":\"../../etc\"}",
	  "entry_current: bad key" },
	{ "{\"op\":\"entry_current\",\"tier\":\"t0\",\"key\":"
	  "\"0123456789ABCDEF0123456789ABCDEF\"}",
	  "entry_current: bad key" },
	{ "{\"op\":\"entry_current\",\"tier\":\"t0\",\"key\":"
	  "\"0123456789abcdef0123456789abcdef\"}",
	  "entry_current: no version of 0123456789abcdef0123456789abcdef "
	  "here" },
};

START_TEST(test_refusals)
{
	cJSON *r = ask(refusals[_i].req);

	ck_assert_msg(!ok_of(r), "%s: accepted", refusals[_i].req);
	ck_assert_str_eq(s_of(r, "error"), refusals[_i].want);
	cJSON_Delete(r);
}
END_TEST

/* --- entry_current ----------------------------------------------------- */

/* Publish version NEXT of KEY on tier 0 with one file. */
static unsigned publish(const char *key)
{
	struct cache_meta meta = { .src = "/pfs/a",
				   .uid = geteuid(),
				   .user = "tester",
				   .bytes = 1,
				   .files = 1,
				   .verify = PROFILE_VERIFY_STAT };
	char err[CONF_ERR_MAX], path[PATH_MAX + 64];
	struct cache_version cur;
	struct cache_build b;
	unsigned next;
	int fd;

	cache_current(g.a.cache, 0, key, &cur, &next);
	ck_assert_msg(cache_build_begin(g.a.cache, 0, key, next, geteuid(),
					getegid(), &b, err, sizeof(err)) == 0,
		      "cache_build_begin: %s", err);
	snprintf(path, sizeof(path), "%s/data", b.path);
	ck_assert_int_eq(mkdir(path, 0700), 0);
	snprintf(path, sizeof(path), "%s/data/f", b.path);
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0600);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, "x", 1), 1);
	close(fd);
	ck_assert_msg(cache_build_publish(&b, &meta, err, sizeof(err)) == 0,
		      "cache_build_publish: %s", err);
	return b.version;
}

START_TEST(test_entry_current_is_the_published_version)
{
	const char *key = "0123456789abcdef0123456789abcdef";
	const cJSON *vs;
	cJSON *r;

	ck_assert_uint_eq(publish(key), 1);
	ck_assert_uint_eq(publish(key), 2);
	r = ask("{\"op\":\"entry_current\",\"tier\":\"t0\",\"key\":"
		"\"0123456789abcdef0123456789abcdef\"}");
	ck_assert_msg(ok_of(r), "%s", s_of(r, "error"));
	ck_assert_int_eq(cJSON_GetObjectItem(r, "version")->valueint, 2);
	/* and every published one, newest first */
	vs = cJSON_GetObjectItem(r, "versions");
	ck_assert_int_eq(cJSON_GetArraySize(vs), 2);
	ck_assert_int_eq(cJSON_GetArrayItem(vs, 0)->valueint, 2);
	ck_assert_int_eq(cJSON_GetArrayItem(vs, 1)->valueint, 1);
	cJSON_Delete(r);
	/* at most FILL_VERSIONS_MAX, the newest */
	for (unsigned v = 3; v <= FILL_VERSIONS_MAX + 2; v++)
		ck_assert_uint_eq(publish(key), v);
	r = ask("{\"op\":\"entry_current\",\"tier\":\"t0\",\"key\":"
		"\"0123456789abcdef0123456789abcdef\"}");
	vs = cJSON_GetObjectItem(r, "versions");
	ck_assert_int_eq(cJSON_GetArraySize(vs), FILL_VERSIONS_MAX);
	ck_assert_int_eq(cJSON_GetArrayItem(vs, 0)->valueint,
			 FILL_VERSIONS_MAX + 2);
	ck_assert_int_eq(
	    cJSON_GetArrayItem(vs, FILL_VERSIONS_MAX - 1)->valueint, 3);
	cJSON_Delete(r);
	/* the same key on the other tier: nothing there */
	r = ask("{\"op\":\"entry_current\",\"tier\":\"t1\",\"key\":"
		"\"0123456789abcdef0123456789abcdef\"}");
	ck_assert(!ok_of(r));
	cJSON_Delete(r);
}
END_TEST

/* A Shared tier has one copy for all nodes: no node fills it from
 * another, and none is asked for its version. */
START_TEST(test_shared_tier_is_never_filled)
{
	cJSON *r;

	g.conf.tiers[0].shared = true;
	r = ask("{\"op\":\"entry_current\",\"tier\":\"t0\",\"key\":"
		"\"0123456789abcdef0123456789abcdef\"}");
	ck_assert_str_eq(s_of(r, "error"),
			 "entry_current: no node-local tier 't0' here");
	cJSON_Delete(r);
}
END_TEST

/* Without a peer channel (PeerPort=0) nothing is asked of anyone: the
 * PFS, as before. */
START_TEST(test_no_channel_no_source)
{
	struct job *job = ag_job(&g, 42, TWO_DS);
	struct fill_source src;
	char err[CONF_ERR_MAX] = "";

	ck_assert(!peer_enabled(g.a.peer));
	ck_assert_int_eq(fill_find(&g.a, job, 0, "t0",
				   "0123456789abcdef0123456789abcdef", NULL,
				   NULL, &src, err, sizeof(err)),
			 0);
	jobs_staging_done(job, true, NULL);
	jobs_put(job);
}
END_TEST

/* A fill by parts: a node names its share once published, whatever the
 * state of its whole copy, so that the others can fill from it. */
START_TEST(test_stage_entry_names_the_share)
{
	struct job *job = ag_job(&g, 42, TWO_DS);
	cJSON *r;

	r = ask("{\"op\":\"stage_entry\",\"job\":42,\"dataset\":0}");
	ck_assert_str_eq(s_of(r, "part"), "");
	ck_assert_str_eq(s_of(r, "tier"), "");
	cJSON_Delete(r);
	jobs_set_part_entry(job, 0, "fedcba9876543210fedcba9876543210.v2");
	r = ask("{\"op\":\"stage_entry\",\"job\":42,\"dataset\":0}");
	ck_assert_str_eq(s_of(r, "state"), "staging");
	ck_assert_str_eq(s_of(r, "tier"), "t0");
	ck_assert_str_eq(s_of(r, "part"),
			 "fedcba9876543210fedcba9876543210.v2");
	cJSON_Delete(r);
	/* the other dataset has none */
	r = ask("{\"op\":\"stage_entry\",\"job\":42,\"dataset\":1}");
	ck_assert_str_eq(s_of(r, "part"), "");
	cJSON_Delete(r);
	jobs_staging_done(job, true, NULL);
	jobs_put(job);
}
END_TEST

/* The shares: every node of the job, equal weights, in the job's order;
 * and no fill by parts without a channel, for one node, or with
 * NodeFill=head or no. */
START_TEST(test_parts_plan_and_when)
{
	const char *nodes[] = { "n1", "n2", "n3" };
	struct job *job = ag_job(&g, 42, TWO_DS);
	char plan[256], err[CONF_ERR_MAX];

	ck_assert_int_eq(jobs_set_nodes(job, nodes, 3, err, sizeof(err)), 0);
	ck_assert_int_eq(fill_parts_plan(job, plan, sizeof(plan)), 0);
	ck_assert_str_eq(plan, "n1=1,n2=1,n3=1");
	ck_assert_int_eq(fill_parts_plan(job, plan, 8), -1); /* too small */
	ck_assert(!peer_enabled(g.a.peer));
	ck_assert(!fill_by_parts(&g.a, job, "t0"));
	g.conf.node_fill = NODE_FILL_HEAD;
	ck_assert(!fill_by_parts(&g.a, job, "t0"));
	jobs_staging_done(job, true, NULL);
	jobs_put(job);
}
END_TEST

static Suite *fill_suite(void)
{
	Suite *s = suite_create("fill");
	TCase *tc = tcase_create("ops");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_stage_entry_follows_the_dataset);
	tcase_add_loop_test(tc, test_refusals, 0,
			    sizeof(refusals) / sizeof(refusals[0]));
	tcase_add_test(tc, test_entry_current_is_the_published_version);
	tcase_add_test(tc, test_shared_tier_is_never_filled);
	tcase_add_test(tc, test_no_channel_no_source);
	tcase_add_test(tc, test_stage_entry_names_the_share);
	tcase_add_test(tc, test_parts_plan_and_when);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return check_run(fill_suite());
}
