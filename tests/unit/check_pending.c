/* check_pending.c - pending jobs noted for pre-staging: a ticket binds
 * only its owner's datasets, is used once, cannot be claimed by another
 * user nor for another user's noted job; bad requests are refused with
 * one line; a job node's busy flag follows its builds. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <check.h>

#include "ctld/sched/pending.h"
#include "tests/unit/check_run.h"

static struct ctld_caller alice = { 1001, 1001, false, "test" };
static struct ctld_caller bob = { 1002, 1002, false, "test" };

static cJSON *note(const struct ctld_caller *c, unsigned job,
		   const char *ticket)
{
	char text[256];
	cJSON *req, *rep;

	snprintf(text, sizeof(text),
		 "{\"op\":\"job_note\",\"job\":%u,"
		 "\"ticket\":\"%s\"}",
		 job, ticket);
	req = cJSON_Parse(text);
	rep = pending_op_note(c, req);
	cJSON_Delete(req);
	return rep;
}

static bool ok(cJSON *rep)
{
	bool r = cJSON_IsTrue(cJSON_GetObjectItem(rep, "ok"));

	cJSON_Delete(rep);
	return r;
}

static void ticket(uid_t uid, char t[PENDING_TICKET_LEN + 1])
{
	struct pending_ds ds = { "/pfs/d", "nvme", "stat" };

	ck_assert_int_eq(pending_ticket(uid, &ds, 1, "ios_00000001", t,
					time(NULL)),
			 0);
	ck_assert_uint_eq(strlen(t), PENDING_TICKET_LEN);
}

START_TEST(test_note)
{
	char t[PENDING_TICKET_LEN + 1];
	struct pending_job j;

	pending_reset();
	ticket(1001, t);
	ck_assert(!ok(note(&bob, 42, t))); /* not bob's ticket */
	ck_assert(ok(note(&alice, 42, t)));
	ck_assert(!ok(note(&alice, 43, t))); /* used once */
	ck_assert_int_eq(pending_get(42, &j), 0);
	ck_assert_uint_eq(j.uid, 1001);
	ck_assert(!j.verified);
	ck_assert_uint_eq(j.nds, 1);
	ck_assert_str_eq(j.ds[0].path, "/pfs/d");
	ck_assert_str_eq(j.prefer, "ios_00000001");
	ck_assert_int_eq(pending_get(43, &j), -1);
	/* bob cannot take over alice's noted job with his own ticket
	 * (without an owner check both notes are unverified: the first
	 * stays until Slurm's check) */
	ticket(1002, t);
	ck_assert(!ok(note(&bob, 42, t)));
	ck_assert_int_eq(pending_get(42, &j), 0);
	ck_assert_uint_eq(j.uid, 1001);
}
END_TEST

START_TEST(test_bad_requests)
{
	cJSON *req, *rep;

	pending_reset();
	rep = note(&alice, 42, "00000000000000000000000000000000");
	ck_assert_ptr_nonnull(
	    strstr(cJSON_GetObjectItem(rep, "error")->valuestring,
		   "no such ticket"));
	cJSON_Delete(rep);
	req = cJSON_Parse("{\"op\":\"job_note\",\"ticket\":\"x\"}");
	rep = pending_op_note(&alice, req);
	ck_assert(cJSON_IsFalse(cJSON_GetObjectItem(rep, "ok")));
	cJSON_Delete(rep);
	cJSON_Delete(req);
	req = cJSON_Parse("{\"op\":\"job_note\",\"job\":-1,\"ticket\":\"x\"}");
	rep = pending_op_note(&alice, req);
	ck_assert(cJSON_IsFalse(cJSON_GetObjectItem(rep, "ok")));
	cJSON_Delete(rep);
	cJSON_Delete(req);
}
END_TEST

START_TEST(test_expiry)
{
	char t[PENDING_TICKET_LEN + 1], t2[PENDING_TICKET_LEN + 1];
	struct pending_ds ds = { "/pfs/d", "nvme", "" };

	pending_reset();
	ck_assert_int_eq(pending_ticket(1001, &ds, 1, "", t,
					time(NULL) - PENDING_TICKET_TTL_S - 5),
			 0);
	/* a later ticket expires the old one */
	ticket(1001, t2);
	ck_assert(!ok(note(&alice, 7, t)));
	ck_assert(ok(note(&alice, 7, t2)));
}
END_TEST

START_TEST(test_busy_and_drop)
{
	char t[PENDING_TICKET_LEN + 1];
	struct pending_job j;
	size_t n;
	uint32_t *ids;

	pending_reset();
	ticket(1001, t);
	ck_assert(ok(note(&alice, 5, t)));
	ck_assert(!pending_node_busy("n1"));
	ck_assert_int_eq(pending_get(5, &j), 0);
	snprintf(j.nodes[0].name, sizeof(j.nodes[0].name), "n1");
	j.nnodes = 1;
	j.nodes[0].ds[0].state = PENDING_SENT;
	pending_put(&j);
	ck_assert(pending_node_busy("n1"));
	ck_assert(!pending_node_busy("n2"));
	ids = pending_ids(&n);
	ck_assert_uint_eq(n, 1);
	ck_assert_uint_eq(ids[0], 5);
	free(ids);
	pending_drop(5);
	ck_assert(!pending_node_busy("n1"));
	ids = pending_ids(&n);
	ck_assert_uint_eq(n, 0);
	free(ids);
	ck_assert_str_eq(pending_state_name(PENDING_STAGED), "staged");
}
END_TEST

/* Slurm says job 42 is uid 1001's, 43 is 1002's, others unknown. */
static int fake_owner(uint32_t job, uid_t *ret_uid)
{
	if (job == 42 || job == 43) {
		*ret_uid = job == 42 ? 1001 : 1002;
		return 0;
	}
	return -1;
}

START_TEST(test_owner_check)
{
	char t[PENDING_TICKET_LEN + 1];
	struct pending_job j;

	pending_reset();
	pending_set_owner_check(fake_owner);
	/* alice notes bob's job first: refused, bob's note is taken */
	ticket(1001, t);
	ck_assert(!ok(note(&alice, 43, t)));
	ticket(1002, t);
	ck_assert(ok(note(&bob, 43, t)));
	ck_assert_int_eq(pending_get(43, &j), 0);
	ck_assert(j.verified);
	ck_assert_uint_eq(j.uid, 1002);
	/* Slurm cannot tell: kept, checked later */
	ticket(1001, t);
	ck_assert(ok(note(&alice, 99, t)));
	ck_assert_int_eq(pending_get(99, &j), 0);
	ck_assert(!j.verified);
	pending_set_owner_check(NULL);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("pending");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, test_note);
	tcase_add_test(tc, test_bad_requests);
	tcase_add_test(tc, test_expiry);
	tcase_add_test(tc, test_busy_and_drop);
	tcase_add_test(tc, test_owner_check);
	suite_add_tcase(s, tc);
	return check_run(s);
}
