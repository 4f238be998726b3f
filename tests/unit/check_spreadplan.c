/* check_spreadplan.c - unit tests for daemon/cluster/spreadplan.c without
 * a network: what a job's head answers its other nodes about a spread
 * dataset's plan (spread_plan: unknown, planning, ready with the plan,
 * failed), what a node says of its tier's room (tier_space: node-local
 * tiers only), and a node alone (a one-node job, or no peer channel)
 * deciding a plan that names itself alone. Unprivileged: the agent is
 * tests/unit/agent_fixture.h's.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <string.h>

#include <check.h>

#include "common/sched/spread.h"
#include "daemon/cluster/peer.h"
#include "daemon/cluster/spreadplan.h"
#include "tests/unit/agent_fixture.h"
#include "tests/unit/check_run.h"

#define ONE_DS                                                                 \
	"{\"datasets\":[{\"name\":\"a\",\"path\":\"/pfs/a\",\"tier\":\"t0\","  \
	"\"spread\":\"yes\"}]}"

static struct ag g;

static void setup(void)
{
	ag_init(&g, "n1", 2);
}

static void teardown(void)
{
	ag_fini(&g);
}

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

static bool never_stop(void *arg, char *why, size_t len)
{
	(void)arg;
	(void)why;
	(void)len;
	return false;
}

START_TEST(test_plan_op_follows_the_head)
{
	struct job *job;
	cJSON *r;

	r = ask("{\"op\":\"spread_plan\",\"job\":42,\"dataset\":0}");
	ck_assert_str_eq(s_of(r, "state"), "unknown");
	cJSON_Delete(r);

	job = ag_job(&g, 42, ONE_DS);
	r = ask("{\"op\":\"spread_plan\",\"job\":42,\"dataset\":0}");
	ck_assert_str_eq(s_of(r, "state"), "planning");
	ck_assert_ptr_null(cJSON_GetObjectItem(r, "plan"));
	cJSON_Delete(r);

	ck_assert_int_eq(jobs_set_spread_plan(job, 0, "n1=5,n2=7"), 0);
	r = ask("{\"op\":\"spread_plan\",\"job\":42,\"dataset\":0}");
	ck_assert_str_eq(s_of(r, "state"), "ready");
	ck_assert_str_eq(s_of(r, "plan"), "n1=5,n2=7");
	cJSON_Delete(r);

	/* another dataset, never planned, of a job whose staging ended */
	jobs_staging_done(job, false, "boom");
	r = ask("{\"op\":\"spread_plan\",\"job\":42,\"dataset\":1}");
	ck_assert_str_eq(s_of(r, "state"), "failed");
	cJSON_Delete(r);
	r = ask("{\"op\":\"spread_plan\",\"job\":42,\"dataset\":16}");
	ck_assert(!cJSON_IsTrue(cJSON_GetObjectItem(r, "ok")));
	cJSON_Delete(r);
	jobs_put(job);
}
END_TEST

START_TEST(test_tier_space)
{
	cJSON *r = ask("{\"op\":\"tier_space\",\"tier\":\"t0\"}");

	ck_assert(cJSON_IsTrue(cJSON_GetObjectItem(r, "ok")));
	ck_assert(cJSON_IsNumber(cJSON_GetObjectItem(r, "free")));
	ck_assert(cJSON_GetObjectItem(r, "free")->valuedouble > 0);
	cJSON_Delete(r);
	r = ask("{\"op\":\"tier_space\",\"tier\":\"nope\"}");
	ck_assert(!cJSON_IsTrue(cJSON_GetObjectItem(r, "ok")));
	ck_assert_ptr_nonnull(strstr(s_of(r, "error"), "no node-local tier"));
	cJSON_Delete(r);
	r = ask("{\"op\":\"tier_space\"}");
	ck_assert(!cJSON_IsTrue(cJSON_GetObjectItem(r, "ok")));
	cJSON_Delete(r);
}
END_TEST

/* A one-node job: the node decides, the plan names it alone, and the
 * job keeps it (a second call gives the same). */
START_TEST(test_alone_decides)
{
	struct job *job = ag_job(&g, 7, ONE_DS);
	struct spread_plan p;
	char plan[SPREAD_SPEC_MAX], again[SPREAD_SPEC_MAX], err[256];

	ck_assert_int_eq(spreadplan_get(&g.a, job, 0, "t0", never_stop, NULL,
					plan, sizeof(plan), err, sizeof(err)),
			 0);
	ck_assert_int_eq(spread_plan_parse(plan, &p, err, sizeof(err)), 0);
	ck_assert_uint_eq(p.n, 1);
	ck_assert_str_eq(p.nodes[0].name, spreadplan_self(&g.a));
	ck_assert_uint_ge(p.nodes[0].weight, 1);
	ck_assert_int_eq(spreadplan_get(&g.a, job, 0, "t0", never_stop, NULL,
					again, sizeof(again), err, sizeof(err)),
			 0);
	ck_assert_str_eq(plan, again);
	jobs_staging_done(job, true, NULL);
	jobs_put(job);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("spreadplan");
	TCase *tc = tcase_create("core");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_plan_op_follows_the_head);
	tcase_add_test(tc, test_tier_space);
	tcase_add_test(tc, test_alone_decides);
	suite_add_tcase(s, tc);
	return check_run(s);
}
