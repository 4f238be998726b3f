/* check_conf_filing.c - the keys of filing through the service in
 * iostage.conf: PartsDeadline (iostagectld), OutboxLimit and OutboxRetryMax
 * (iostaged). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <check.h>

#include "common/config/conf.h"
#include "tests/unit/check_run.h"

#define T1 "Tier=nvme Path=/local/nvme\n"

START_TEST(test_defaults)
{
	struct conf c;
	char err[CONF_ERR_MAX];

	conf_set_defaults(&c);
	ck_assert_int_eq(conf_parse(T1, "t.conf", &c, err, sizeof(err)), 0);
	ck_assert_uint_eq(c.parts_deadline, 300);
	ck_assert_uint_eq(c.outbox_limit, 10000);
	ck_assert_uint_eq(c.outbox_retry_max, 60);
}
END_TEST

static const struct {
	const char *text;
	unsigned deadline, limit, retry_max;
} oks[] = {
	{ "PartsDeadline=5\n", 5, 10000, 60 },
	{ "partsdeadline=2m\n", 120, 10000, 60 },
	{ "PartsDeadline=1d\n", 86400, 10000, 60 },
	{ "OutboxLimit=1\n", 300, 1, 60 },
	{ "OutboxLimit=250000 PartsDeadline=30s\n", 30, 250000, 60 },
	{ "OutboxRetryMax=5\n", 300, 10000, 5 },
	{ "OutboxRetryMax=1h\n", 300, 10000, 3600 },
	{ "outboxretrymax=2m OutboxLimit=7\n", 300, 7, 120 },
};

START_TEST(test_set)
{
	struct conf c;
	char err[CONF_ERR_MAX], text[256];

	conf_set_defaults(&c);
	snprintf(text, sizeof(text), T1 "%s", oks[_i].text);
	ck_assert_msg(conf_parse(text, "t.conf", &c, err, sizeof(err)) == 0,
		      "%s", err);
	ck_assert_uint_eq(c.parts_deadline, oks[_i].deadline);
	ck_assert_uint_eq(c.outbox_limit, oks[_i].limit);
	ck_assert_uint_eq(c.outbox_retry_max, oks[_i].retry_max);
}
END_TEST

static const struct {
	const char *text, *want;
} errs[] = {
	{ "PartsDeadline=0\n", "t.conf:2: key 'PartsDeadline': must be 1s" },
	{ "PartsDeadline=2d\n", "t.conf:2: key 'PartsDeadline': must be 1s" },
	{ "PartsDeadline=soon\n", "t.conf:2: key 'PartsDeadline': invalid" },
	{ "PartsDeadline=-5\n", "t.conf:2: key 'PartsDeadline'" },
	{ "PartsDeadline=\n", "t.conf:2: key 'PartsDeadline'" },
	{ "PartsDeadline=5\nPartsDeadline=6\n", "t.conf:3: key 'PartsDeadline'" },
	{ "OutboxLimit=0\n", "t.conf:2: key 'OutboxLimit'" },
	{ "OutboxLimit=10000001\n", "t.conf:2: key 'OutboxLimit'" },
	{ "OutboxLimit=many\n", "t.conf:2: key 'OutboxLimit'" },
	{ "OutboxLimit=99999999999999999999999\n", "t.conf:2: key 'OutboxLimit'" },
	{ "OutboxRetryMax=0\n", "t.conf:2: key 'OutboxRetryMax': must be 1s to 3600s" },
	{ "OutboxRetryMax=2h\n", "t.conf:2: key 'OutboxRetryMax': must be 1s to 3600s" },
	{ "OutboxRetryMax=later\n", "t.conf:2: key 'OutboxRetryMax': invalid" },
};

START_TEST(test_errors)
{
	struct conf c;
	char err[CONF_ERR_MAX], text[1024];

	conf_set_defaults(&c);
	snprintf(text, sizeof(text), T1 "%s", errs[_i].text);
	ck_assert_int_eq(conf_parse(text, "t.conf", &c, err, sizeof(err)), -1);
	ck_assert_msg(strncmp(err, errs[_i].want, strlen(errs[_i].want)) == 0,
		      "got: %s", err);
	ck_assert_ptr_null(strchr(err, '\n'));
	ck_assert_uint_eq(c.parts_deadline, 300); /* untouched on failure */
	ck_assert_uint_eq(c.outbox_limit, 10000);
	ck_assert_uint_eq(c.outbox_retry_max, 60);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("conf_filing");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, test_defaults);
	tcase_add_loop_test(tc, test_set, 0, sizeof(oks) / sizeof(oks[0]));
	tcase_add_loop_test(tc, test_errors, 0, sizeof(errs) / sizeof(errs[0]));
	suite_add_tcase(s, tc);
	return check_run(s);
}
