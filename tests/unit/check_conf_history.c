/* check_conf_history.c - unit tests for common/config/conf's history and
 * recommendation keys (HistoryRetention, RecommendMinJobs,
 * RecommendWindow, RecommendHint) and conf_parse_duration. Kept apart from
 * check_conf.c so that each issue's keys are tested in its own file. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include <check.h>

#include "common/config/conf.h"
#include "tests/unit/check_run.h"

START_TEST(test_duration)
{
	static const struct {
		const char *s;
		int rc;
		unsigned want;
	} cases[] = {
	    {"0", 0, 0},	   {"45", 0, 45},	  {"45s", 0, 45},
	    {"30m", 0, 1800},	   {"12h", 0, 43200},	  {"90d", 0, 7776000},
	    {"2w", 0, 1209600},	   {"90D", 0, 7776000},	  {"4294967295", 0, UINT_MAX},
	    {"4294967296", -1, 0}, {"49000d", 0, 4233600000U}, {"50000d", -1, 0},
	    {"", -1, 0},	   {"d", -1, 0},	  {"-1", -1, 0},
	    {"1x", -1, 0},	   {"1dd", -1, 0},	  {"1 d", -1, 0},
	    {"99999999999999999999d", -1, 0},
	};
	unsigned v;

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		v = 12345;
		ck_assert_msg(conf_parse_duration(cases[i].s, &v) == cases[i].rc,
			      "case '%s'", cases[i].s);
		ck_assert_uint_eq(v, cases[i].rc == 0 ? cases[i].want : 12345);
	}
	ck_assert_int_eq(conf_parse_duration(NULL, &v), -1);
	ck_assert_int_eq(conf_parse_duration("1", NULL), -1);
}
END_TEST

START_TEST(test_keys)
{
	struct conf c;
	char err[CONF_ERR_MAX];

	ck_assert_int_eq(conf_parse("Tier=a Path=/a\n", "t.conf", &c, err,
				    sizeof(err)),
			 0);
	ck_assert_uint_eq(c.history_retention, 90U * 86400U);
	ck_assert_uint_eq(c.recommend_min_jobs, 3);
	ck_assert_uint_eq(c.recommend_window, 30U * 86400U);
	ck_assert(c.recommend_hint);
	ck_assert_uint_eq(c.recommend_ost_count, 0); /* not known */
	ck_assert_int_eq(conf_parse("Tier=a Path=/a\nHistoryRetention=7d "
				    "RecommendMinJobs=5\nrecommendwindow=12h "
				    "RecommendHint=NO RecommendOSTCount=48\n",
				    "t.conf", &c, err, sizeof(err)),
			 0);
	ck_assert_uint_eq(c.history_retention, 7U * 86400U);
	ck_assert_uint_eq(c.recommend_min_jobs, 5);
	ck_assert_uint_eq(c.recommend_window, 43200);
	ck_assert(!c.recommend_hint);
	ck_assert_uint_eq(c.recommend_ost_count, 48);
	ck_assert_int_eq(conf_parse("Tier=a Path=/a\nHistoryRetention=0\n",
				    "t.conf", &c, err, sizeof(err)),
			 0);
	ck_assert_uint_eq(c.history_retention, 0); /* keep forever */
}
END_TEST

START_TEST(test_bad_keys)
{
	static const struct {
		const char *text, *msg;
	} cases[] = {
	    {"HistoryRetention=90y", "t.conf:2: key 'HistoryRetention': "
				     "invalid duration '90y'"},
	    {"HistoryRetention=99999999999", "duration too long"},
	    {"RecommendMinJobs=0", "key 'RecommendMinJobs': 0 out of range"},
	    {"RecommendMinJobs=1001", "out of range 1..1000"},
	    {"RecommendWindow=0", "key 'RecommendWindow': must be longer"},
	    {"RecommendHint=maybe", "key 'RecommendHint': expected yes or no"},
	    {"RecommendHint=yes RecommendHint=no", "duplicate"},
	    {"RecommendOSTCount=65536", "key 'RecommendOSTCount': 65536 out "
					 "of range 0..65535"},
	    {"RecommendOSTCount=-1", "'-1' is not a number"},
	};
	char text[256], err[CONF_ERR_MAX];
	struct conf c;

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		snprintf(text, sizeof(text), "Tier=a Path=/a\n%s\n",
			 cases[i].text);
		ck_assert_int_eq(conf_parse(text, "t.conf", &c, err,
					    sizeof(err)),
				 -1);
		ck_assert_msg(strstr(err, cases[i].msg) != NULL,
			      "'%s': got '%s'", cases[i].text, err);
	}
}
END_TEST

int main(void)
{
	Suite *s = suite_create("conf_history");
	TCase *tc = tcase_create("keys");

	tcase_add_test(tc, test_duration);
	tcase_add_test(tc, test_keys);
	tcase_add_test(tc, test_bad_keys);
	suite_add_tcase(s, tc);
	return check_run(s);
}
