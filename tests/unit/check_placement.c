/* check_placement.c - which nodes hold which datasets, and the --prefer:
 * only features Slurm shows are given, a user's own entry or the public
 * one, several datasets together when a node holds them all, the largest
 * alone otherwise; reports are full snapshots, bounded, and bad ones are
 * refused whole; only root reports. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <check.h>

#include "common/sched/cachekey.h"
#include "common/sched/dsfeature.h"
#include "ctld/sched/placement.h"
#include "tests/unit/check_run.h"

/* A report entry for KEY on TIER. */
static cJSON *entry(const char *key, const char *tier, double bytes,
		    double used)
{
	cJSON *o = cJSON_CreateObject();

	cJSON_AddStringToObject(o, "key", key);
	cJSON_AddStringToObject(o, "tier", tier);
	cJSON_AddNumberToObject(o, "bytes", bytes);
	cJSON_AddNumberToObject(o, "last_used", used);
	return o;
}

/* NODE reports KEYS (NULL-terminated) on nvme; Slurm shows them all. */
static void report(const char *node, const char *const *keys,
		   const double *bytes)
{
	char err[256], feats[1024] = "", f[DSFEATURE_LEN + 1];
	cJSON *arr = cJSON_CreateArray();

	for (int i = 0; keys[i]; i++) {
		cJSON_AddItemToArray(arr, entry(keys[i], "nvme",
						bytes ? bytes[i] : 100, i));
		dsfeature_name(keys[i], "nvme", f);
		if (feats[0])
			strcat(feats, ",");
		strcat(feats, f);
	}
	ck_assert_int_eq(placement_report(node, arr, 1000, err, sizeof(err)),
			 0);
	placement_set_published(node, feats);
	cJSON_Delete(arr);
}

static void prefer(uid_t uid, const char *p1, const char *p2, char *ret,
		   size_t len, char *nodes, size_t nlen)
{
	struct placement_ds ds[2] = { { p1, "nvme", false },
				      { p2, "nvme", false } };

	placement_prefer(uid, ds, p2 ? 2 : 1, ret, len, nodes, nlen);
}

START_TEST(test_one_dataset)
{
	char k[CACHEKEY_LEN + 1], f[DSFEATURE_LEN + 1], p[256], n[256];
	const char *keys[2] = { k, NULL };

	placement_reset();
	cachekey_user(1001, "/pfs/d", k);
	report("n2", keys, NULL);
	dsfeature_name(k, "nvme", f);
	prefer(1001, "/pfs/d", NULL, p, sizeof(p), n, sizeof(n));
	ck_assert_str_eq(p, f);
	ck_assert_str_eq(n, "n2");
	/* another user's copy is not theirs */
	prefer(1002, "/pfs/d", NULL, p, sizeof(p), n, sizeof(n));
	ck_assert_str_eq(p, "");
	ck_assert_str_eq(n, "");
	/* another tier is another cache */
	{
		struct placement_ds ds = { "/pfs/d", "ram", false };

		placement_prefer(1001, &ds, 1, p, sizeof(p), n, sizeof(n));
		ck_assert_str_eq(p, "");
	}
}
END_TEST

/* A spread dataset's next job prefers the nodes that hold its parts
 * (issue 29 item 5): their part entries, not a whole copy. */
START_TEST(test_spread_parts)
{
	char k[CACHEKEY_LEN + 1], part[CACHEKEY_LEN + 1], f[DSFEATURE_LEN + 1],
	    p[256], n[256];
	const char *keys[2] = { part, NULL };
	struct placement_ds ds = { "/pfs/big", "nvme", true };

	placement_reset();
	cachekey_user(1001, "/pfs/big", k);
	cachekey_part(k, part);
	report("n1", keys, NULL);
	report("n3", keys, NULL);
	dsfeature_name(part, "nvme", f);
	placement_prefer(1001, &ds, 1, p, sizeof(p), n, sizeof(n));
	ck_assert_str_eq(p, f);
	ck_assert_str_eq(n, "n1,n3");
	/* the same source not spread: a whole copy, which nobody holds */
	ds.spread = false;
	placement_prefer(1001, &ds, 1, p, sizeof(p), n, sizeof(n));
	ck_assert_str_eq(p, "");
}
END_TEST

START_TEST(test_public_entry)
{
	char k[CACHEKEY_LEN + 1], f[DSFEATURE_LEN + 1], p[256], n[256];
	const char *keys[2] = { k, NULL };

	placement_reset();
	cachekey_public("/pfs/pub", k);
	report("n1", keys, NULL);
	report("n3", keys, NULL);
	dsfeature_name(k, "nvme", f);
	prefer(4242, "/pfs/pub", NULL, p, sizeof(p), n, sizeof(n));
	ck_assert_str_eq(p, f);
	ck_assert_str_eq(n, "n1,n3");
}
END_TEST

START_TEST(test_not_published)
{
	char k[CACHEKEY_LEN + 1], p[256], err[256];
	cJSON *arr = cJSON_CreateArray();

	placement_reset();
	cachekey_user(1001, "/pfs/d", k);
	cJSON_AddItemToArray(arr, entry(k, "nvme", 1, 1));
	ck_assert_int_eq(placement_report("n1", arr, 1, err, sizeof(err)), 0);
	/* reported but Slurm does not show it yet: no preference */
	prefer(1001, "/pfs/d", NULL, p, sizeof(p), NULL, 0);
	ck_assert_str_eq(p, "");
	placement_set_published("n1", "gpu");
	prefer(1001, "/pfs/d", NULL, p, sizeof(p), NULL, 0);
	ck_assert_str_eq(p, "");
	cJSON_Delete(arr);
}
END_TEST

START_TEST(test_two_datasets)
{
	char a[CACHEKEY_LEN + 1], b[CACHEKEY_LEN + 1];
	char fa[DSFEATURE_LEN + 1], fb[DSFEATURE_LEN + 1], want[64];
	char p[256], n[256];
	const char *both[3] = { a, b, NULL }, *only_a[2] = { a, NULL };
	const char *only_b[2] = { b, NULL };
	double big_b[1] = { 5000 };

	cachekey_user(1001, "/pfs/a", a);
	cachekey_user(1001, "/pfs/b", b);
	dsfeature_name(a, "nvme", fa);
	dsfeature_name(b, "nvme", fb);

	placement_reset();
	report("n1", only_a, NULL);
	report("n2", both, NULL);
	prefer(1001, "/pfs/a", "/pfs/b", p, sizeof(p), n, sizeof(n));
	snprintf(want, sizeof(want), "%s&%s", fa, fb);
	ck_assert_str_eq(p, want);
	ck_assert_str_eq(n, "n2");

	/* nobody holds both: the larger one */
	placement_reset();
	report("n1", only_a, NULL);
	report("n3", only_b, big_b);
	prefer(1001, "/pfs/a", "/pfs/b", p, sizeof(p), n, sizeof(n));
	ck_assert_str_eq(p, fb);
	ck_assert_str_eq(n, "n3");

	/* the same dataset twice: one feature */
	placement_reset();
	report("n1", only_a, NULL);
	prefer(1001, "/pfs/a", "/pfs/a", p, sizeof(p), n, sizeof(n));
	ck_assert_str_eq(p, fa);
}
END_TEST

START_TEST(test_report_bounds)
{
	char err[256], k[CACHEKEY_LEN + 1], path[64];
	char got[PLACEMENT_NODE_FEATURES + 4][DSFEATURE_LEN + 1];
	cJSON *arr = cJSON_CreateArray(), *bad;

	placement_reset();
	for (int i = 0; i < PLACEMENT_NODE_FEATURES * 3; i++) {
		snprintf(path, sizeof(path), "/pfs/d%d", i);
		cachekey_user(1, path, k);
		cJSON_AddItemToArray(arr, entry(k, "nvme", 1, i));
	}
	ck_assert_int_eq(placement_report("n1", arr, 1, err, sizeof(err)), 0);
	ck_assert_uint_eq(placement_wanted("n1", got,
					   PLACEMENT_NODE_FEATURES + 4, 1),
			  PLACEMENT_NODE_FEATURES);
	/* the most recently used are kept */
	snprintf(path, sizeof(path), "/pfs/d%d",
		 PLACEMENT_NODE_FEATURES * 3 - 1);
	cachekey_user(1, path, k);
	{
		char f[DSFEATURE_LEN + 1];

		dsfeature_name(k, "nvme", f);
		ck_assert_str_eq(got[0], f);
	}
	cJSON_Delete(arr);

	/* a bad entry refuses the whole report, the old snapshot stays */
	bad = cJSON_CreateArray();
	cJSON_AddItemToArray(bad, entry("not-a-key", "nvme", 1, 1));
	ck_assert_int_eq(placement_report("n1", bad, 2, err, sizeof(err)), -1);
	ck_assert_ptr_nonnull(strstr(err, "32-hex"));
	ck_assert_uint_eq(placement_wanted("n1", got, 4, 3), 4);
	ck_assert_int_eq(placement_report("../etc", bad, 2, err, sizeof(err)),
			 -1);
	ck_assert_int_eq(placement_report("n1", NULL, 2, err, sizeof(err)), -1);
	cJSON_Delete(bad);
	/* an empty report empties the node */
	bad = cJSON_CreateArray();
	ck_assert_int_eq(placement_report("n1", bad, 3, err, sizeof(err)), 0);
	ck_assert_uint_eq(placement_wanted("n1", got, 4, 3), 0);
	ck_assert_int_eq(placement_reported_at("n1"), 3);
	ck_assert_int_eq(placement_reported_at("n9"), 0);
	cJSON_Delete(bad);
}
END_TEST

START_TEST(test_ops)
{
	struct ctld_caller root = { 0, 0, true, "test" };
	struct ctld_caller user = { 1001, 1001, false, "test" };
	cJSON *req, *rep;

	placement_reset();
	req = cJSON_Parse("{\"op\":\"cache_report\",\"node\":\"n1\","
			  "\"entries\":[]}");
	rep = placement_op_report(&user, req);
	ck_assert(cJSON_IsFalse(cJSON_GetObjectItem(rep, "ok")));
	ck_assert_ptr_nonnull(
	    strstr(cJSON_GetObjectItem(rep, "error")->valuestring,
		   "permission denied"));
	cJSON_Delete(rep);
	rep = placement_op_report(&root, req);
	ck_assert(cJSON_IsTrue(cJSON_GetObjectItem(rep, "ok")));
	cJSON_Delete(rep);
	cJSON_Delete(req);

	req = cJSON_Parse("{\"op\":\"placement\",\"datasets\":"
			  "[{\"path\":\"relative\",\"tier\":\"nvme\"}]}");
	rep = placement_op_query(&user, req);
	ck_assert(cJSON_IsFalse(cJSON_GetObjectItem(rep, "ok")));
	cJSON_Delete(rep);
	cJSON_Delete(req);
	req = cJSON_Parse("{\"op\":\"placement\",\"datasets\":"
			  "[{\"path\":\"/pfs/x\",\"tier\":\"nvme\"}]}");
	rep = placement_op_query(&user, req);
	ck_assert(cJSON_IsTrue(cJSON_GetObjectItem(rep, "ok")));
	ck_assert_str_eq(cJSON_GetObjectItem(rep, "prefer")->valuestring, "");
	cJSON_Delete(rep);
	cJSON_Delete(req);
}
END_TEST

/* Where a node looks for a copy to fill from (daemon/cluster/fill.c):
 * the nodes whose report holds the entry on that tier, the most recently
 * used first; root only. */
START_TEST(test_holders)
{
	const char *k1 = "11111111111111111111111111111111",
		   *k2 = "22222222222222222222222222222222";
	const char *n1[] = { k1, k2, NULL }, *n2[] = { k2, k1, NULL },
		   *n3[] = { k2, NULL };
	struct ctld_caller root = { 0, 0, true, "test" };
	struct ctld_caller user = { 1001, 1001, false, "test" };
	char got[PLACEMENT_HOLDERS_MAX][CONF_NODE_MAX];
	cJSON *req, *rep;

	placement_reset();
	report("n1", n1, NULL); /* k1 used at 0, k2 at 1 */
	report("n2", n2, NULL); /* k2 at 0, k1 at 1 */
	report("n3", n3, NULL);
	ck_assert_uint_eq(placement_holders(k1, "nvme", got, 8), 2);
	ck_assert_str_eq(got[0], "n2");
	ck_assert_str_eq(got[1], "n1");
	ck_assert_uint_eq(placement_holders(k2, "nvme", got, 8), 3);
	ck_assert_str_eq(got[0], "n1");
	ck_assert_uint_eq(placement_holders(k2, "nvme", got, 1), 1);
	ck_assert_uint_eq(placement_holders(k1, "ssd", got, 8), 0);

	req = cJSON_Parse("{\"op\":\"cache_holders\",\"tier\":\"nvme\","
			  "\"key\":\"11111111111111111111111111111111\"}");
	rep = placement_op_holders(&user, req);
	ck_assert(cJSON_IsFalse(cJSON_GetObjectItem(rep, "ok")));
	cJSON_Delete(rep);
	rep = placement_op_holders(&root, req);
	ck_assert(cJSON_IsTrue(cJSON_GetObjectItem(rep, "ok")));
	ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItem(rep, "nodes")),
			 2);
	ck_assert_str_eq(cJSON_GetArrayItem(cJSON_GetObjectItem(rep, "nodes"),
					    0)
			     ->valuestring,
			 "n2");
	cJSON_Delete(rep);
	cJSON_Delete(req);
	req = cJSON_Parse("{\"op\":\"cache_holders\",\"tier\":\"nvme\","
			  "\"key\":\"short\"}");
	rep = placement_op_holders(&root, req);
	ck_assert(cJSON_IsFalse(cJSON_GetObjectItem(rep, "ok")));
	cJSON_Delete(rep);
	cJSON_Delete(req);
}
END_TEST

/* PlacementHold= on: an answer with a preference says "hold", and the
 * features it gave stay on the nodes showing them for PLACEMENT_LINGER_S
 * though the cache drops them (the submission may reach slurmctld after
 * that); with the hold off, or past the linger, they go at once. */
START_TEST(test_hold_answer_and_linger)
{
	struct ctld_caller user = { 1001, 1001, false, "test" };
	char k[CACHEKEY_LEN + 1], f[DSFEATURE_LEN + 1], err[256];
	char got[4][DSFEATURE_LEN + 1];
	const char *keys[2] = { k, NULL };
	cJSON *req, *rep, *empty = cJSON_CreateArray();
	time_t now = time(NULL);

	placement_reset();
	cachekey_user(1001, "/pfs/h", k);
	dsfeature_name(k, "nvme", f);
	req = cJSON_Parse("{\"op\":\"placement\",\"datasets\":"
			  "[{\"path\":\"/pfs/h\",\"tier\":\"nvme\"}]}");
	/* hold off: a preference, no hold, nothing lingers */
	report("n1", keys, NULL);
	rep = placement_op_query(&user, req);
	ck_assert_str_eq(cJSON_GetObjectItem(rep, "prefer")->valuestring, f);
	ck_assert_ptr_null(cJSON_GetObjectItem(rep, "hold"));
	cJSON_Delete(rep);
	ck_assert_int_eq(placement_report("n1", empty, now, err, sizeof(err)),
			 0);
	ck_assert_uint_eq(placement_wanted("n1", got, 4, now), 0);
	/* hold on */
	placement_set_hold(10);
	report("n1", keys, NULL);
	rep = placement_op_query(&user, req);
	ck_assert(cJSON_IsTrue(cJSON_GetObjectItem(rep, "hold")));
	cJSON_Delete(rep);
	ck_assert_int_eq(placement_report("n1", empty, now, err, sizeof(err)),
			 0);
	ck_assert_uint_eq(placement_wanted("n1", got, 4, now), 1);
	ck_assert_str_eq(got[0], f);
	/* only where Slurm showed it */
	ck_assert_uint_eq(placement_wanted("n2", got, 4, now), 0);
	ck_assert_uint_eq(placement_wanted("n1", got, 4,
					   now + PLACEMENT_LINGER_S + 2),
			  0);
	/* no preference: no hold */
	placement_set_published("n1", "");
	rep = placement_op_query(&user, req);
	ck_assert_str_eq(cJSON_GetObjectItem(rep, "prefer")->valuestring, "");
	ck_assert_ptr_null(cJSON_GetObjectItem(rep, "hold"));
	cJSON_Delete(rep);
	cJSON_Delete(req);
	cJSON_Delete(empty);
}
END_TEST

/* The features handed to held submissions are a bounded table: past
 * PLACEMENT_HANDED_MAX the oldest is forgotten (it no longer lingers),
 * the newest still does. */
START_TEST(test_handed_bounded)
{
	struct ctld_caller user = { 1001, 1001, false, "test" };
	char k[CACHEKEY_LEN + 1], f[DSFEATURE_LEN + 1],
	    first[DSFEATURE_LEN + 1];
	char path[64], req[256], err[256], got[4][DSFEATURE_LEN + 1];
	const char *keys[2] = { k, NULL };
	cJSON *rq, *rep, *empty = cJSON_CreateArray();
	time_t now = time(NULL);

	placement_reset();
	placement_set_hold(10);
	for (int i = 0; i < PLACEMENT_HANDED_MAX + 10; i++) {
		snprintf(path, sizeof(path), "/pfs/h%d", i);
		cachekey_user(1001, path, k);
		dsfeature_name(k, "nvme", f);
		if (!i)
			snprintf(first, sizeof(first), "%s", f);
		report("n1", keys, NULL);
		snprintf(req, sizeof(req),
			 "{\"datasets\":[{\"path\":\"%s\",\"tier\":"
			 "\"nvme\"}]}",
			 path);
		rq = cJSON_Parse(req);
		rep = placement_op_query(&user, rq);
		ck_assert(cJSON_IsTrue(cJSON_GetObjectItem(rep, "hold")));
		cJSON_Delete(rep);
		cJSON_Delete(rq);
	}
	/* n1 dropped the last one but still shows it: it lingers */
	ck_assert_int_eq(placement_report("n1", empty, now, err, sizeof(err)),
			 0);
	ck_assert_uint_eq(placement_wanted("n1", got, 4, now), 1);
	ck_assert_str_eq(got[0], f);
	/* the first one, shown again, was forgotten: it does not */
	placement_set_published("n1", first);
	ck_assert_uint_eq(placement_wanted("n1", got, 4, now), 0);
	cJSON_Delete(empty);
}
END_TEST

START_TEST(test_counts)
{
	struct placement_counts c;

	placement_reset();
	placement_count_outcome(true);
	placement_count_outcome(false);
	placement_count_outcome(false);
	placement_count_publish(true);
	placement_count_publish(false);
	placement_counts(&c);
	ck_assert_uint_eq(c.honoured, 1);
	ck_assert_uint_eq(c.not_honoured, 2);
	ck_assert_uint_eq(c.publishes, 1);
	ck_assert_uint_eq(c.publish_errors, 1);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("placement");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, test_one_dataset);
	tcase_add_test(tc, test_public_entry);
	tcase_add_test(tc, test_spread_parts);
	tcase_add_test(tc, test_not_published);
	tcase_add_test(tc, test_two_datasets);
	tcase_add_test(tc, test_report_bounds);
	tcase_add_test(tc, test_ops);
	tcase_add_test(tc, test_hold_answer_and_linger);
	tcase_add_test(tc, test_handed_bounded);
	tcase_add_test(tc, test_counts);
	tcase_add_test(tc, test_holders);
	suite_add_tcase(s, tc);
	return check_run(s);
}
