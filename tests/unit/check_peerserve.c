/* check_peerserve.c - unit tests for common/net/peerserve: the bounded TCP
 * server both iostaged's peer channel and iostagectld run.
 *
 * A real server on 127.0.0.1 (a free port) and real connections; the
 * serve callback echoes the request line, or waits on a pipe the test
 * holds so that a connection stays "being served" as long as the test
 * wants (no sleeps, no timing).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <check.h>

#include "common/net/peernet.h"
#include "common/net/peerserve.h"
#include "common/net/proto.h"
#include "tests/unit/check_run.h"

static struct peerserve srv;
static unsigned port;
static int hold[2] = { -1, -1 };   /* serve waits for a byte on hold[0] */
static int served[2] = { -1, -1 }; /* serve says it started */
static char warned[256];

static cJSON *serve(int fd, void *arg)
{
	cJSON *reply;
	char c;
	char *line;

	ck_assert_ptr_eq(arg, &srv);
	if (write(served[1], "s", 1) != 1)
		return NULL;
	if (read(hold[0], &c, 1) != 1)
		return NULL;
	line = peernet_read_line(fd, 3000);
	reply = proto_reply_ok();
	cJSON_AddStringToObject(reply, "echo", line ? line : "");
	free(line);
	return reply;
}

static void warn(const char *line)
{
	snprintf(warned, sizeof(warned), "%s", line);
}

static void start(unsigned conn_max)
{
	char err[256];
	struct sockaddr_in sin;
	socklen_t sl = sizeof(sin);
	int fd;

	ck_assert_int_eq(pipe(hold), 0);
	ck_assert_int_eq(pipe(served), 0);
	fd = peernet_listen("127.0.0.1", 0, err, sizeof(err));
	ck_assert_msg(fd >= 0, "%s", err);
	ck_assert_int_eq(getsockname(fd, (struct sockaddr *)&sin, &sl), 0);
	port = ntohs(sin.sin_port);
	srv = (struct peerserve){
		.conn_max = conn_max,
		.send_ms = 3000,
		.busy_fmt = "busy: %u served",
		.nothread_error = "no thread",
		.serve = serve,
		.arg = &srv,
		.warn = warn,
	};
	ck_assert_msg(peerserve_start(&srv, fd, err, sizeof(err)) == 0, "%s",
		      err);
}

static int send_line(const char *text)
{
	char err[256];
	int fd = peernet_connect("127.0.0.1", port, 2000, err, sizeof(err));

	ck_assert_msg(fd >= 0, "%s", err);
	ck_assert_int_eq(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	return fd;
}

static cJSON *reply_of(int fd)
{
	char *line = peernet_read_line(fd, 3000);
	cJSON *r;

	ck_assert_ptr_nonnull(line);
	r = cJSON_Parse(line);
	free(line);
	ck_assert_ptr_nonnull(r);
	close(fd);
	return r;
}

static void wait_served(void)
{
	char c;

	ck_assert_int_eq(read(served[0], &c, 1), 1);
}

static void release(int n)
{
	while (n-- > 0)
		ck_assert_int_eq(write(hold[1], "r", 1), 1);
}

START_TEST(test_serves_and_stops)
{
	cJSON *r;
	int fd;

	start(4);
	fd = send_line("{\"op\":\"x\"}\n");
	wait_served();
	release(1);
	r = reply_of(fd);
	ck_assert(cJSON_IsTrue(cJSON_GetObjectItem(r, "ok")));
	ck_assert_str_eq(cJSON_GetObjectItem(r, "echo")->valuestring,
			 "{\"op\":\"x\"}");
	cJSON_Delete(r);
	ck_assert(peerserve_stop(&srv, 5));
	ck_assert_int_eq(srv.listen_fd, -1);
	/* Stopped: nobody listens any more. */
	{
		char err[256];

		ck_assert_int_eq(peernet_connect("127.0.0.1", port, 2000, err,
						 sizeof(err)),
				 -1);
	}
	ck_assert(peerserve_stop(&srv, 5)); /* twice is harmless */
}
END_TEST

/* Connections one after another are served by one thread, which waits
 * idle between them; stop ends it. */
static unsigned idle_threads(void)
{
	unsigned n = 0;

	/* the thread counts itself idle just after its reply is sent */
	for (int i = 0; i < 2000 && n == 0; i++) {
		pthread_mutex_lock(&srv.lock);
		n = srv.nidle;
		pthread_mutex_unlock(&srv.lock);
		if (n == 0)
			usleep(1000);
	}
	return n;
}

START_TEST(test_threads_reused)
{
	start(4);
	for (int i = 0; i < 3; i++) {
		int fd = send_line("{\"op\":\"x\"}\n");
		cJSON *r;

		wait_served();
		release(1);
		r = reply_of(fd);
		ck_assert(cJSON_IsTrue(cJSON_GetObjectItem(r, "ok")));
		cJSON_Delete(r);
		ck_assert_uint_eq(idle_threads(), 1);
		pthread_mutex_lock(&srv.lock);
		ck_assert_uint_eq(srv.nthreads, 1);
		ck_assert_uint_eq(srv.nconn, 0);
		pthread_mutex_unlock(&srv.lock);
	}
	ck_assert(peerserve_stop(&srv, 5));
	ck_assert_uint_eq(srv.nthreads, 0);
}
END_TEST

START_TEST(test_over_the_bound_refused_at_once)
{
	cJSON *r;
	int first, second;

	start(1);
	first = send_line("{\"op\":\"a\"}\n");
	wait_served();
	/* The one place is taken: the next one is refused, not queued. */
	second = send_line("{\"op\":\"b\"}\n");
	r = reply_of(second);
	ck_assert(cJSON_IsFalse(cJSON_GetObjectItem(r, "ok")));
	ck_assert_str_eq(cJSON_GetObjectItem(r, "error")->valuestring,
			 "busy: 1 served");
	cJSON_Delete(r);
	ck_assert_str_eq(warned, "connection refused: 1 already served");
	/* Still being served: stop says so when it cannot wait. */
	ck_assert(!peerserve_stop(&srv, 0));
	release(1);
	r = reply_of(first);
	ck_assert_str_eq(cJSON_GetObjectItem(r, "echo")->valuestring,
			 "{\"op\":\"a\"}");
	cJSON_Delete(r);
}
END_TEST

START_TEST(test_not_listening)
{
	char err[256];
	struct peerserve s = { .conn_max = 1, .serve = serve };

	ck_assert_int_eq(peerserve_start(&s, -1, err, sizeof(err)), -1);
	ck_assert_str_eq(err, "not listening");
	ck_assert(peerserve_stop(&s, 0));
}
END_TEST

START_TEST(test_reply_too_long_says_so)
{
	int sv[2];
	size_t n = PEERNET_LINE_MAX + 16;
	char *big = malloc(n + 1);
	cJSON *reply = proto_reply_ok(), *r;

	ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	memset(big, 'x', n);
	big[n] = '\0';
	cJSON_AddStringToObject(reply, "big", big);
	free(big);
	peerserve_reply_and_close(sv[0], reply, 3000);
	r = reply_of(sv[1]);
	ck_assert(cJSON_IsFalse(cJSON_GetObjectItem(r, "ok")));
	ck_assert_ptr_nonnull(
	    strstr(cJSON_GetObjectItem(r, "error")->valuestring,
		   "reply longer than"));
	cJSON_Delete(r);
	/* NULL: out of memory, still one line. */
	ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	peerserve_reply_and_close(sv[0], NULL, 3000);
	r = reply_of(sv[1]);
	ck_assert_str_eq(cJSON_GetObjectItem(r, "error")->valuestring,
			 "out of memory");
	cJSON_Delete(r);
}
END_TEST

static Suite *peerserve_suite(void)
{
	Suite *s = suite_create("peerserve");
	TCase *tc = tcase_create("peerserve");

	tcase_add_test(tc, test_serves_and_stops);
	tcase_add_test(tc, test_threads_reused);
	tcase_add_test(tc, test_over_the_bound_refused_at_once);
	tcase_add_test(tc, test_not_listening);
	tcase_add_test(tc, test_reply_too_long_says_so);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return check_run(peerserve_suite());
}
