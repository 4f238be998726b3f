/* check_conf_ctld.c - the cluster service's keys of iostage.conf:
 * ControllerHost, ControllerPort, AdminGroup. */
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
	ck_assert_str_eq(c.controller_host, "");
	ck_assert_uint_eq(c.controller_port, 6827);
	ck_assert_str_eq(c.admin_group, "");
	/* the service's /metrics: loopback unless the site says where */
	ck_assert_str_eq(c.controller_metrics_listen, "127.0.0.1:9465");
}
END_TEST

START_TEST(test_metrics_listen)
{
	struct conf c;
	char err[CONF_ERR_MAX];

	conf_set_defaults(&c);
	ck_assert_msg(conf_parse(T1 "ControllerMetricsListen=10.0.0.1:9100\n",
				 "t.conf", &c, err, sizeof(err)) == 0,
		      "%s", err);
	ck_assert_str_eq(c.controller_metrics_listen, "10.0.0.1:9100");
	ck_assert_str_eq(c.metrics_listen, "127.0.0.1:9464"); /* iostaged's */
	conf_set_defaults(&c);
	ck_assert_int_eq(conf_parse(T1 "controllermetricslisten=[::1]:9465\n",
				    "t.conf", &c, err, sizeof(err)),
			 0);
	ck_assert_str_eq(c.controller_metrics_listen, "[::1]:9465");
	conf_set_defaults(&c);
	ck_assert_int_eq(conf_parse(T1 "ControllerMetricsListen=no\n",
				    "t.conf", &c, err, sizeof(err)),
			 0);
	ck_assert_str_eq(c.controller_metrics_listen, "");
}
END_TEST

/* Placement= and Prestage=: on unless the site says no. */
START_TEST(test_sched_switches)
{
	struct conf c;
	char err[CONF_ERR_MAX];

	conf_set_defaults(&c);
	ck_assert_int_eq(conf_parse(T1, "t.conf", &c, err, sizeof(err)), 0);
	ck_assert(c.placement && c.prestage);
	ck_assert_int_eq(conf_parse(T1 "Placement=no\nprestage=No\n",
				    "t.conf", &c, err, sizeof(err)),
			 0);
	ck_assert(!c.placement && !c.prestage);
	ck_assert_int_eq(conf_parse(T1 "Prestage=off\n", "t.conf", &c, err,
				    sizeof(err)),
			 -1);
	ck_assert_str_eq(err, "t.conf:2: key 'Prestage': expected yes or no, "
			      "not 'off'");
}
END_TEST

/* PlacementHold=: 0 (never hold) unless set; a duration, at most 1h. */
START_TEST(test_placement_hold)
{
	struct conf c;
	char err[CONF_ERR_MAX];

	conf_set_defaults(&c);
	ck_assert_int_eq(conf_parse(T1, "t.conf", &c, err, sizeof(err)), 0);
	ck_assert_uint_eq(c.placement_hold, 0);
	ck_assert_int_eq(conf_parse(T1 "PlacementHold=2m\n", "t.conf", &c,
				    err, sizeof(err)),
			 0);
	ck_assert_uint_eq(c.placement_hold, 120);
	ck_assert_int_eq(conf_parse(T1 "PlacementHold=2h\n", "t.conf", &c,
				    err, sizeof(err)),
			 -1);
	ck_assert_str_eq(err, "t.conf:2: key 'PlacementHold': at most 1h, "
			      "not '2h'");
	ck_assert_int_eq(conf_parse(T1 "PlacementHold=soon\n", "t.conf", &c,
				    err, sizeof(err)),
			 -1);
}
END_TEST

START_TEST(test_set)
{
	struct conf c;
	char err[CONF_ERR_MAX];

	conf_set_defaults(&c);
	ck_assert_msg(conf_parse(T1 "ControllerHost=ctl.cluster.example\n"
				    "ControllerPort=7000 AdminGroup=hpc-admin\n",
				 "t.conf", &c, err, sizeof(err)) == 0,
		      "%s", err);
	ck_assert_str_eq(c.controller_host, "ctl.cluster.example");
	ck_assert_uint_eq(c.controller_port, 7000);
	ck_assert_str_eq(c.admin_group, "hpc-admin");
	conf_set_defaults(&c);
	ck_assert_msg(conf_parse(T1 "controllerhost=127.0.0.1\n", "t.conf", &c,
				 err, sizeof(err)) == 0,
		      "%s", err);
	ck_assert_str_eq(c.controller_host, "127.0.0.1");
	conf_set_defaults(&c);
	ck_assert_msg(conf_parse(T1 "ControllerHost=fd00::1\n", "t.conf", &c,
				 err, sizeof(err)) == 0,
		      "%s", err);
	ck_assert_str_eq(c.controller_host, "fd00::1");
	/* "no" says outright that there is no service. */
	conf_set_defaults(&c);
	ck_assert_msg(conf_parse(T1 "ControllerHost=no\n", "t.conf", &c, err,
				 sizeof(err)) == 0,
		      "%s", err);
	ck_assert_str_eq(c.controller_host, "");
	conf_set_defaults(&c);
	ck_assert_int_eq(conf_parse(T1 "ControllerHost=a\nControllerHost=b\n",
				    "t.conf", &c, err, sizeof(err)),
			 -1); /* duplicate */
}
END_TEST

START_TEST(test_names)
{
	ck_assert(conf_is_host("ctl"));
	ck_assert(conf_is_host("ctl-1.example.org"));
	ck_assert(conf_is_host("10.0.0.1"));
	ck_assert(conf_is_host("::1"));
	ck_assert(!conf_is_host(NULL));
	ck_assert(!conf_is_host(""));
	ck_assert(!conf_is_host(".ctl"));
	ck_assert(!conf_is_host("-ctl"));
	ck_assert(!conf_is_host("ctl-"));
	ck_assert(!conf_is_host("a..b"));
	ck_assert(!conf_is_host("ctl:6827"));
	ck_assert(!conf_is_host("ctl;rm"));
	ck_assert(!conf_is_host("ctl/x"));
	ck_assert(conf_is_group_name("admins"));
	ck_assert(conf_is_group_name("hpc_admin.1"));
	ck_assert(!conf_is_group_name(NULL));
	ck_assert(!conf_is_group_name(""));
	ck_assert(!conf_is_group_name("-x"));
	ck_assert(!conf_is_group_name("a b"));
	ck_assert(!conf_is_group_name("a:b"));
}
END_TEST

static const struct {
	const char *text, *want;
} errs[] = {
	{ "ControllerHost=ctl:6827\n",
	  "t.conf:2: key 'ControllerHost': 'ctl:6827' is not a host name or "
	  "IP address" },
	{ "ControllerHost=a..b\n", "t.conf:2: key 'ControllerHost'" },
	{ "ControllerHost=ctl$x\n", "t.conf:2: key 'ControllerHost'" },
	{ "ControllerHost=aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
	  "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
	  "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
	  "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\n",
	  "t.conf:2: key 'ControllerHost'" },
	{ "ControllerPort=0\n", "t.conf:2: key 'ControllerPort'" },
	{ "ControllerPort=65536\n", "t.conf:2: key 'ControllerPort'" },
	{ "ControllerPort=ctl\n", "t.conf:2: key 'ControllerPort'" },
	{ "ControllerMetricsListen=9465\n",
	  "t.conf:2: key 'ControllerMetricsListen': '9465' is not ADDR:PORT" },
	{ "ControllerMetricsListen=ctl:9465\n",
	  "t.conf:2: key 'ControllerMetricsListen': 'ctl:9465' is not "
	  "ADDR:PORT" },
	{ "AdminGroup=-admin\n",
	  "t.conf:2: key 'AdminGroup': '-admin' is not a group name" },
	{ "AdminGroup=a/b\n", "t.conf:2: key 'AdminGroup'" },
	{ "AdminGroup=aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
	  "aaaaa\n",
	  "t.conf:2: key 'AdminGroup'" },
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
	ck_assert_str_eq(c.controller_host, ""); /* untouched on failure */
}
END_TEST

int main(void)
{
	Suite *s = suite_create("conf_ctld");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, test_defaults);
	tcase_add_test(tc, test_set);
	tcase_add_test(tc, test_metrics_listen);
	tcase_add_test(tc, test_sched_switches);
	tcase_add_test(tc, test_placement_hold);
	tcase_add_test(tc, test_names);
	tcase_add_loop_test(tc, test_errors, 0, sizeof(errs) / sizeof(errs[0]));
	suite_add_tcase(s, tc);
	return check_run(s);
}
