/* check_pfslicense.c - unit tests for common/sched/pfslicense: the -L value a
 * streaming job gets. What matters: only jobs that stream get a license,
 * and only when the site names one; the history's stream advice counts
 * only when confident and only for clean paths; a user's own count of the
 * license wins and their other licenses are kept. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <check.h>

#include "common/sched/pfslicense.h"
#include "tests/unit/check_run.h"

static struct conf conf;

static void setup(void)
{
	conf_set_defaults(&conf);
	snprintf(conf.pfs_license, sizeof(conf.pfs_license), "pfs_bw");
	conf.pfs_license_per_job = 3;
}

static struct profile *streaming(const char *json)
{
	char err[CONF_ERR_MAX];
	struct profile *p = profile_parse_json(json, "t", err, sizeof(err));

	ck_assert_msg(p != NULL, "%s", err);
	return p;
}

START_TEST(test_for)
{
	struct profile *p = streaming("{\"streams\":[\"/pfs/a\"]}");
	struct profile *s = streaming("{\"datasets\":[{\"path\":\"/pfs/a\"}]}");
	char buf[64], tiny[4];

	ck_assert_int_eq(pfslicense_for(p, &conf, buf, sizeof(buf)), 0);
	ck_assert_str_eq(buf, "pfs_bw:3");
	/* Staging only, no profile: nothing. */
	ck_assert_int_eq(pfslicense_for(s, &conf, buf, sizeof(buf)), 0);
	ck_assert_str_eq(buf, "");
	ck_assert_int_eq(pfslicense_for(NULL, &conf, buf, sizeof(buf)), 0);
	ck_assert_str_eq(buf, "");
	/* Too small a buffer: -1, and never a cut-off license. */
	errno = 0;
	ck_assert_int_eq(pfslicense_for(p, &conf, tiny, sizeof(tiny)), -1);
	ck_assert_int_eq(errno, ENAMETOOLONG);
	ck_assert_str_eq(tiny, "");
	/* No PfsLicense= at the site: nothing. */
	conf.pfs_license[0] = '\0';
	ck_assert_int_eq(pfslicense_for(p, &conf, buf, sizeof(buf)), 0);
	ck_assert_str_eq(buf, "");
	profile_destroy(p);
	profile_destroy(s);
}
END_TEST

START_TEST(test_advice)
{
	struct profile *p = streaming(
	    "{\"datasets\":[{\"path\":\"/pfs/staged\"}],"
	    "\"streams\":[\"/pfs/mine\"]}");
	cJSON *reply = cJSON_Parse(
	    "{\"ok\":true,\"recommendations\":["
	    "{\"rule\":\"stream\",\"target\":\"/pfs/big\",\"confidence\":0.8},"
	    "{\"rule\":\"stream\",\"target\":\"/pfs/weak\",\"confidence\":0.3},"
	    "{\"rule\":\"cache\",\"target\":\"/pfs/cached\",\"confidence\":0.9},"
	    "{\"rule\":\"stream\",\"target\":\"/pfs/staged\",\"confidence\":0.9},"
	    "{\"rule\":\"stream\",\"target\":\"/pfs/mine\",\"confidence\":0.9},"
	    "{\"rule\":\"stream\",\"target\":\"/pfs/x/../etc\",\"confidence\":0.9},"
	    "{\"rule\":\"stream\",\"target\":\"rel\",\"confidence\":0.9},"
	    "{\"rule\":\"stream\",\"target\":\"/pfs//dup\",\"confidence\":0.9},"
	    "{\"rule\":\"stream\",\"target\":7,\"confidence\":0.9},"
	    "{\"rule\":\"stream\",\"confidence\":0.9},"
	    "\"junk\"]}");

	ck_assert_ptr_nonnull(reply);
	ck_assert_uint_eq(pfslicense_add_advice(p, reply), 1);
	ck_assert_uint_eq(p->nstreams, 2);
	ck_assert_str_eq(p->streams[1], "/pfs/big");
	/* Applying it again adds nothing. */
	ck_assert_uint_eq(pfslicense_add_advice(p, reply), 0);
	/* Not a reply at all, or no recommendations: nothing. */
	ck_assert_uint_eq(pfslicense_add_advice(p, NULL), 0);
	cJSON_Delete(reply);
	reply = cJSON_Parse("{\"ok\":true}");
	ck_assert_uint_eq(pfslicense_add_advice(p, reply), 0);
	cJSON_Delete(reply);
	profile_destroy(p);
}
END_TEST

START_TEST(test_advice_bounded)
{
	struct profile *p = streaming("{}");
	cJSON *reply = cJSON_Parse("{\"recommendations\":[]}");
	cJSON *recs = cJSON_GetObjectItem(reply, "recommendations");
	char path[32];

	for (int i = 0; i < PROFILE_MAX_STREAMS + 5; i++) {
		cJSON *r = cJSON_CreateObject();

		snprintf(path, sizeof(path), "/pfs/d%d", i);
		cJSON_AddStringToObject(r, "rule", "stream");
		cJSON_AddStringToObject(r, "target", path);
		cJSON_AddNumberToObject(r, "confidence", 0.95);
		cJSON_AddItemToArray(recs, r);
	}
	ck_assert_uint_eq(pfslicense_add_advice(p, reply), PROFILE_MAX_STREAMS);
	ck_assert_uint_eq(p->nstreams, PROFILE_MAX_STREAMS);
	cJSON_Delete(reply);
	profile_destroy(p);
}
END_TEST

static const struct {
	const char *existing, *license, *want;
} merge_cases[] = {
	{ NULL, "pfs_bw:2", "pfs_bw:2" },
	{ "", "pfs_bw:2", "pfs_bw:2" },
	{ "matlab:1", "pfs_bw:2", "matlab:1,pfs_bw:2" },
	{ "pfs_bw:1", "pfs_bw:2", "pfs_bw:1" }, /* theirs wins */
	{ "matlab,pfs_bw", "pfs_bw:2", "matlab,pfs_bw" },
	{ "pfs_bw@db:5", "pfs_bw:2", "pfs_bw@db:5" },
	{ "a|pfs_bw:1", "pfs_bw:2", "a|pfs_bw:1" },
	{ "my_pfs_bw:1", "pfs_bw:2", "my_pfs_bw:1,pfs_bw:2" }, /* not ours */
	{ "pfs_bw2:1", "pfs_bw:2", "pfs_bw2:1,pfs_bw:2" },
	{ "matlab:1", "", "matlab:1" }, /* nothing to add */
	{ NULL, NULL, "" },
};

START_TEST(test_merge)
{
	char buf[128];

	ck_assert_int_eq(pfslicense_merge(merge_cases[_i].existing,
					  merge_cases[_i].license, buf,
					  sizeof(buf)),
			 0);
	ck_assert_str_eq(buf, merge_cases[_i].want);
}
END_TEST

START_TEST(test_merge_overlong)
{
	char existing[PFSLICENSE_MAX + 10], buf[PFSLICENSE_MAX];

	memset(existing, 'a', sizeof(existing) - 1);
	existing[sizeof(existing) - 1] = '\0';
	errno = 0;
	ck_assert_int_eq(pfslicense_merge(existing, "pfs_bw:2", buf,
					  sizeof(buf)),
			 -1);
	ck_assert_int_eq(errno, ENAMETOOLONG);
	ck_assert_str_eq(buf, "");
}
END_TEST

static Suite *pfslicense_suite(void)
{
	Suite *s = suite_create("pfslicense");
	TCase *tc = tcase_create("core");

	tcase_add_checked_fixture(tc, setup, NULL);
	tcase_add_test(tc, test_for);
	tcase_add_test(tc, test_advice);
	tcase_add_test(tc, test_advice_bounded);
	tcase_add_loop_test(tc, test_merge, 0,
			    sizeof(merge_cases) / sizeof(merge_cases[0]));
	tcase_add_test(tc, test_merge_overlong);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return check_run(pfslicense_suite());
}
