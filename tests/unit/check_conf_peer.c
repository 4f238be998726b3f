/* check_conf_peer.c - the node-to-node keys of iostage.conf: PeerPort,
 * PeerListen, PeerPartsTimeout, MungeSocket. */
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
	ck_assert_uint_eq(c.peer_port, 6826);
	ck_assert_str_eq(c.peer_listen, "");
	ck_assert_uint_eq(c.peer_parts_timeout, 60);
	ck_assert_str_eq(c.munge_socket, "");
}
END_TEST

START_TEST(test_set)
{
	struct conf c;
	char err[CONF_ERR_MAX];

	conf_set_defaults(&c);
	ck_assert_msg(conf_parse(T1 "PeerPort=7000 PeerListen=10.0.0.2\n"
				    "PeerPartsTimeout=5\n"
				    "MungeSocket=/run/munge/munge.socket.2\n",
				 "t.conf", &c, err, sizeof(err)) == 0,
		      "%s", err);
	ck_assert_uint_eq(c.peer_port, 7000);
	ck_assert_str_eq(c.peer_listen, "10.0.0.2");
	ck_assert_uint_eq(c.peer_parts_timeout, 5);
	ck_assert_str_eq(c.munge_socket, "/run/munge/munge.socket.2");
	conf_set_defaults(&c);
	ck_assert_int_eq(conf_parse(T1 "PeerPort=0\nPeerListen=*\n"
				       "peerlisten=::1\n",
				    "t.conf", &c, err, sizeof(err)),
			 -1); /* duplicate, case-insensitive */
	conf_set_defaults(&c);
	ck_assert_int_eq(conf_parse(T1 "PeerPort=0\nPeerListen=::1\n", "t.conf",
				    &c, err, sizeof(err)),
			 0);
	ck_assert_uint_eq(c.peer_port, 0);
	ck_assert_str_eq(c.peer_listen, "::1");
}
END_TEST

static const struct {
	const char *text, *want;
} errs[] = {
	{ "PeerPort=65536\n", "t.conf:2: key 'PeerPort'" },
	{ "PeerPort=-1\n", "t.conf:2: key 'PeerPort'" },
	{ "PeerPort=http\n", "t.conf:2: key 'PeerPort'" },
	{ "PeerListen=node1\n", "t.conf:2: key 'PeerListen': 'node1' is not "
				"an IP address or '*'" },
	{ "PeerListen=10.0.0.300\n", "t.conf:2: key 'PeerListen'" },
	{ "PeerPartsTimeout=0\n", "t.conf:2: key 'PeerPartsTimeout'" },
	{ "PeerPartsTimeout=86401\n", "t.conf:2: key 'PeerPartsTimeout'" },
	{ "MungeSocket=relative/sock\n", "t.conf:2: key 'MungeSocket'" },
	{ "MungeSocket=/a/../b\n", "t.conf:2: key 'MungeSocket'" },
	{ "MungeSocket=/aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
	  "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\n",
	  "t.conf:2: key 'MungeSocket': longer than" },
};

START_TEST(test_errors)
{
	struct conf c;
	char err[CONF_ERR_MAX], text[512];

	conf_set_defaults(&c);
	snprintf(text, sizeof(text), T1 "%s", errs[_i].text);
	ck_assert_int_eq(conf_parse(text, "t.conf", &c, err, sizeof(err)), -1);
	ck_assert_msg(strncmp(err, errs[_i].want, strlen(errs[_i].want)) == 0,
		      "got: %s", err);
	ck_assert_ptr_null(strchr(err, '\n'));
}
END_TEST

int main(void)
{
	Suite *s = suite_create("conf_peer");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, test_defaults);
	tcase_add_test(tc, test_set);
	tcase_add_loop_test(tc, test_errors, 0, sizeof(errs) / sizeof(errs[0]));
	suite_add_tcase(s, tc);
	return check_run(s);
}
