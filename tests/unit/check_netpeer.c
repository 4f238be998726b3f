/* check_netpeer.c - the local owner of a TCP peer: /proc/net/tcp lines
 * parsed (IPv4, IPv6, malformed), and a real loopback connection found. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <check.h>

#include "common/net/netpeer.h"
#include "tests/unit/check_run.h"

static struct sockaddr_in v4(const char *addr, unsigned port)
{
	struct sockaddr_in s;

	memset(&s, 0, sizeof(s));
	s.sin_family = AF_INET;
	s.sin_port = htons((uint16_t)port);
	ck_assert_int_eq(inet_pton(AF_INET, addr, &s.sin_addr), 1);
	return s;
}

/* A line as the kernel prints it for 127.0.0.1:PORT -> 127.0.0.1:SPORT. */
static void line4(char *buf, size_t len, unsigned port, unsigned sport,
		  unsigned uid)
{
	struct sockaddr_in s = v4("127.0.0.1", 0);

	snprintf(buf, len,
		 "   3: %08X:%04X %08X:%04X 01 00000000:00000000 "
		 "00:00000000 00000000  %5u        0 123 1 0000 20 4 30 10 -1",
		 s.sin_addr.s_addr, port, s.sin_addr.s_addr, sport, uid);
}

START_TEST(test_ipv4_line)
{
	struct sockaddr_in peer = v4("127.0.0.1", 40000);
	uid_t uid = 42;
	char line[256];

	line4(line, sizeof(line), 40000, 9464, 1001);
	ck_assert_int_eq(netpeer_match_line(line, AF_INET,
					    (struct sockaddr *)&peer, 9464,
					    &uid),
			 1);
	ck_assert_uint_eq(uid, 1001);
	/* wrong server port, wrong client port, wrong family: no match */
	uid = 42;
	ck_assert_int_eq(netpeer_match_line(line, AF_INET,
					    (struct sockaddr *)&peer, 9465,
					    &uid),
			 0);
	peer.sin_port = htons(40001);
	ck_assert_int_eq(netpeer_match_line(line, AF_INET,
					    (struct sockaddr *)&peer, 9464,
					    &uid),
			 0);
	ck_assert_int_eq(netpeer_match_line(line, AF_INET6,
					    (struct sockaddr *)&peer, 9464,
					    &uid),
			 0);
	ck_assert_uint_eq(uid, 42); /* untouched */
}
END_TEST

START_TEST(test_ipv6_line)
{
	struct sockaddr_in6 peer;
	uint32_t w[4];
	char line[512];
	uid_t uid = 0;

	memset(&peer, 0, sizeof(peer));
	peer.sin6_family = AF_INET6;
	peer.sin6_port = htons(50000);
	ck_assert_int_eq(inet_pton(AF_INET6, "::1", &peer.sin6_addr), 1);
	memcpy(w, &peer.sin6_addr, sizeof(w));
	snprintf(line, sizeof(line),
		 "   0: %08X%08X%08X%08X:%04X %08X%08X%08X%08X:%04X 01 "
		 "00000000:00000000 00:00000000 00000000  1003        0 77 1",
		 w[0], w[1], w[2], w[3], 50000, w[0], w[1], w[2], w[3], 9464);
	ck_assert_int_eq(netpeer_match_line(line, AF_INET6,
					    (struct sockaddr *)&peer, 9464,
					    &uid),
			 1);
	ck_assert_uint_eq(uid, 1003);
}
END_TEST

static const char *const bad_lines[] = {
	"",
	"  sl  local_address rem_address   st tx_queue rx_queue tr tm->when",
	"   1: 0100007F:9C40",
	"   1: 0100007G:9C40 0100007F:24F8 01 0:0 0:0 0 1001",
	"   1: 0100007F:9C40 0100007F:24F8 01 00000000:00000000 00:00000000 "
	"00000000 notanumber",
	"   1: 0100007F:FFFFF 0100007F:24F8 01 0:0 0:0 0 1001",
};

START_TEST(test_bad_lines)
{
	struct sockaddr_in peer = v4("127.0.0.1", 40000);
	uid_t uid = 7;

	ck_assert_int_eq(netpeer_match_line(bad_lines[_i], AF_INET,
					    (struct sockaddr *)&peer, 9464,
					    &uid),
			 0);
	ck_assert_int_eq(netpeer_match_line(NULL, AF_INET,
					    (struct sockaddr *)&peer, 9464,
					    &uid),
			 0);
	ck_assert_uint_eq(uid, 7);
}
END_TEST

/* A real connection over loopback: its client socket is ours. */
START_TEST(test_real_loopback_peer)
{
	struct sockaddr_in srv = v4("127.0.0.1", 0), cli;
	socklen_t sl = sizeof(srv), cl = sizeof(cli);
	int lfd = socket(AF_INET, SOCK_STREAM, 0), cfd, afd;
	uid_t uid = 12345;

	ck_assert_int_ge(lfd, 0);
	ck_assert_int_eq(bind(lfd, (struct sockaddr *)&srv, sizeof(srv)), 0);
	ck_assert_int_eq(listen(lfd, 1), 0);
	ck_assert_int_eq(getsockname(lfd, (struct sockaddr *)&srv, &sl), 0);
	cfd = socket(AF_INET, SOCK_STREAM, 0);
	ck_assert_int_eq(connect(cfd, (struct sockaddr *)&srv, sizeof(srv)), 0);
	afd = accept(lfd, (struct sockaddr *)&cli, &cl);
	ck_assert_int_ge(afd, 0);
	ck_assert_int_eq(netpeer_uid((struct sockaddr *)&cli,
				     ntohs(srv.sin_port), &uid),
			 1);
	ck_assert_uint_eq(uid, geteuid());
	/* a peer that is not connected to us is not found */
	ck_assert_int_eq(netpeer_uid((struct sockaddr *)&cli,
				     ntohs(srv.sin_port) ^ 1, &uid),
			 0);
	errno = 0;
	ck_assert_int_eq(netpeer_uid(NULL, 1, &uid), -1);
	ck_assert_int_eq(errno, EAFNOSUPPORT);
	close(afd);
	close(cfd);
	close(lfd);
}
END_TEST

static Suite *netpeer_suite(void)
{
	Suite *s = suite_create("netpeer");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, test_ipv4_line);
	tcase_add_test(tc, test_ipv6_line);
	tcase_add_loop_test(tc, test_bad_lines, 0,
			    sizeof(bad_lines) / sizeof(bad_lines[0]));
	tcase_add_test(tc, test_real_loopback_peer);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return check_run(netpeer_suite());
}
