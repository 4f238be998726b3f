/* check_conf_metrics.c - the metrics keys of iostage.conf: MetricsListen,
 * MetricsTextfile, MetricsInterval, MetricsJobGrace, and
 * conf_parse_listen. */
#include <errno.h>
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
	ck_assert_str_eq(c.metrics_listen, "127.0.0.1:9464");
	ck_assert_str_eq(c.metrics_textfile, "");
	ck_assert_uint_eq(c.metrics_interval, 15);
	ck_assert_uint_eq(c.metrics_job_grace, 300);
}
END_TEST

START_TEST(test_set_and_off)
{
	struct conf c;
	char err[CONF_ERR_MAX];

	conf_set_defaults(&c);
	ck_assert_int_eq(conf_parse(T1 "MetricsListen=[::1]:20901\n"
				       "MetricsTextfile=/var/lib/y/i.prom\n"
				       "MetricsInterval=1 MetricsJobGrace=0\n",
				    "t.conf", &c, err, sizeof(err)),
			 0);
	ck_assert_str_eq(c.metrics_listen, "[::1]:20901");
	ck_assert_str_eq(c.metrics_textfile, "/var/lib/y/i.prom");
	ck_assert_uint_eq(c.metrics_interval, 1);
	ck_assert_uint_eq(c.metrics_job_grace, 0);
	conf_set_defaults(&c);
	ck_assert_int_eq(conf_parse(T1 "MetricsListen=no\nMetricsTextfile=off\n",
				    "t.conf", &c, err, sizeof(err)),
			 0);
	ck_assert_str_eq(c.metrics_listen, "");
	ck_assert_str_eq(c.metrics_textfile, "");
}
END_TEST

static const struct {
	const char *text, *want;
} errs[] = {
	{ T1 "MetricsListen=9464\n",
	  "t.conf:2: key 'MetricsListen': '9464' is not ADDR:PORT (an IP "
	  "address such as 127.0.0.1:9464 or [::1]:9464, port 1..65535) or "
	  "'no'" },
	{ T1 "MetricsListen=localhost:9464\n",
	  "t.conf:2: key 'MetricsListen': 'localhost:9464' is not ADDR:PORT "
	  "(an IP address such as 127.0.0.1:9464 or [::1]:9464, port "
	  "1..65535) or 'no'" },
	{ T1 "MetricsListen=127.0.0.1:65536\n",
	  "t.conf:2: key 'MetricsListen': '127.0.0.1:65536' is not ADDR:PORT "
	  "(an IP address such as 127.0.0.1:9464 or [::1]:9464, port "
	  "1..65535) or 'no'" },
	{ T1 "MetricsTextfile=relative.prom\n",
	  "t.conf:2: key 'MetricsTextfile': relative.prom: not an absolute "
	  "path" },
	{ T1 "MetricsTextfile=/var/lib/x/../i.prom\n",
	  "t.conf:2: key 'MetricsTextfile': /var/lib/x/../i.prom: contains "
	  "a '..' component" },
	{ T1 "MetricsInterval=0\n",
	  "t.conf:2: key 'MetricsInterval': 0 out of range 1..3600" },
	{ T1 "MetricsJobGrace=86401\n",
	  "t.conf:2: key 'MetricsJobGrace': 86401 out of range 0..86400" },
	{ T1 "MetricsJobGrace=1 MetricsJobGrace=2\n",
	  "t.conf:2: key 'MetricsJobGrace': duplicate (first set on line 2)" },
};

START_TEST(test_errors)
{
	struct conf c;
	char err[CONF_ERR_MAX] = "";

	conf_set_defaults(&c);
	ck_assert_int_eq(conf_parse(errs[_i].text, "t.conf", &c, err,
				    sizeof(err)),
			 -1);
	ck_assert_str_eq(err, errs[_i].want);
}
END_TEST

static const struct {
	const char *s, *addr;
	unsigned port;
} listens[] = {
	{ "127.0.0.1:9464", "127.0.0.1", 9464 },
	{ "0.0.0.0:1", "0.0.0.0", 1 },
	{ "[::1]:65535", "::1", 65535 },
	{ "[fe80::1]:80", "fe80::1", 80 },
	{ "127.0.0.1:0", NULL, 0 },
	{ "127.0.0.1:", NULL, 0 },
	{ "127.0.0.1:99999999999999999999", NULL, 0 },
	{ "127.0.0.1:80x", NULL, 0 },
	{ "::1:80", NULL, 0 },
	{ "[::1]80", NULL, 0 },
	{ "[::1:80", NULL, 0 },
	{ "999.0.0.1:80", NULL, 0 },
	{ "", NULL, 0 },
	{ NULL, NULL, 0 },
	{ "1111111111111111111111111111111111111111111111111111111111111111"
	  "1:80", NULL, 0 },
};

START_TEST(test_parse_listen)
{
	char addr[CONF_LISTEN_MAX] = "untouched";
	unsigned port = 7;
	int r = conf_parse_listen(listens[_i].s, addr, sizeof(addr), &port);

	if (listens[_i].addr) {
		ck_assert_int_eq(r, 0);
		ck_assert_str_eq(addr, listens[_i].addr);
		ck_assert_uint_eq(port, listens[_i].port);
	} else {
		ck_assert_int_eq(r, -1);
		ck_assert_int_eq(errno, EINVAL);
		ck_assert_str_eq(addr, "untouched");
		ck_assert_uint_eq(port, 7);
	}
}
END_TEST

static Suite *conf_metrics_suite(void)
{
	Suite *s = suite_create("conf_metrics");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, test_defaults);
	tcase_add_test(tc, test_set_and_off);
	tcase_add_loop_test(tc, test_errors, 0, sizeof(errs) / sizeof(errs[0]));
	tcase_add_loop_test(tc, test_parse_listen, 0,
			    sizeof(listens) / sizeof(listens[0]));
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return check_run(conf_metrics_suite());
}
