/* check_peernet.c - requests between hosts over loopback TCP with a private
 * munged: a round trip, replayed and tampered lines, framing errors, an
 * oversized line, a silent server, refused and unresolvable peers. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <check.h>

#include "common/net/peernet.h"
#include "tests/unit/check_run.h"
#include "tests/unit/testmunge.h"

static const char *sock;

/* A one-connection server: reads one request, answers what it learnt. */
struct server {
	int lfd;
	unsigned port;
	int silent; /* accept and say nothing */
	pthread_t thread;
	enum mauth_status status;
	char err[512];
};

static void *serve_one(void *arg)
{
	struct server *s = arg;
	struct pollfd pfd = { .fd = s->lfd, .events = POLLIN };
	struct peernet_peer peer;
	const char *op;
	cJSON *req, *reply;
	int fd;

	if (poll(&pfd, 1, 5000) <= 0)
		return NULL;
	fd = accept(s->lfd, NULL, NULL);
	if (fd < 0)
		return NULL;
	if (s->silent) {
		char c;

		pfd.fd = fd; /* until the client gives up */
		poll(&pfd, 1, 5000);
		if (read(fd, &c, 1) < 0)
			c = 0;
		close(fd);
		return NULL;
	}
	req = peernet_read_request(fd, 2000, sock, &op, &peer, &s->status,
				   s->err, sizeof(s->err));
	if (req) {
		reply = cJSON_CreateObject();
		cJSON_AddTrueToObject(reply, "ok");
		cJSON_AddStringToObject(reply, "op", op);
		cJSON_AddNumberToObject(reply, "uid", peer.uid);
		cJSON_AddStringToObject(reply, "addr", peer.addr);
		cJSON_AddItemToObject(reply, "echo",
				      cJSON_Duplicate(req, true));
	} else {
		reply = cJSON_CreateObject();
		cJSON_AddFalseToObject(reply, "ok");
		cJSON_AddStringToObject(reply, "error", s->err);
	}
	peernet_send(fd, reply, 2000);
	cJSON_Delete(reply);
	cJSON_Delete(req);
	close(fd);
	return NULL;
}

static void server_start(struct server *s, int silent)
{
	struct sockaddr_in a;
	socklen_t len = sizeof(a);
	char err[256];

	memset(s, 0, sizeof(*s));
	s->silent = silent;
	s->lfd = peernet_listen("127.0.0.1", 0, err, sizeof(err));
	ck_assert_msg(s->lfd >= 0, "%s", err);
	ck_assert_int_eq(getsockname(s->lfd, (struct sockaddr *)&a, &len), 0);
	s->port = ntohs(a.sin_port);
	ck_assert_int_eq(pthread_create(&s->thread, NULL, serve_one, s), 0);
}

static void server_stop(struct server *s)
{
	pthread_join(s->thread, NULL);
	close(s->lfd);
}

/* Send LINE raw on a new connection to S; the reply, parsed. */
static cJSON *send_raw(struct server *s, const char *line)
{
	char err[256], *text;
	cJSON *r;
	int fd = peernet_connect("127.0.0.1", s->port, 2000, err, sizeof(err));

	ck_assert_msg(fd >= 0, "%s", err);
	ck_assert_int_eq(write(fd, line, strlen(line)), (ssize_t)strlen(line));
	ck_assert_int_eq(write(fd, "\n", 1), 1);
	text = peernet_read_line(fd, 3000);
	close(fd);
	ck_assert_ptr_nonnull(text);
	r = cJSON_Parse(text);
	free(text);
	ck_assert_ptr_nonnull(r);
	return r;
}

static cJSON *request(const char *op)
{
	cJSON *req = cJSON_CreateObject();

	cJSON_AddStringToObject(req, "op", op);
	cJSON_AddNumberToObject(req, "job", 42);
	return req;
}

START_TEST(test_round_trip)
{
	struct server s;
	char err[512];
	int unreachable = 7;
	cJSON *req = request("stage_state"), *reply;

	server_start(&s, 0);
	reply = peernet_call("localhost", s.port, sock, req, 3000, &unreachable,
			     err, sizeof(err));
	server_stop(&s);
	ck_assert_msg(reply != NULL, "%s", err);
	ck_assert_int_eq(unreachable, 0);
	ck_assert(cJSON_IsTrue(cJSON_GetObjectItem(reply, "ok")));
	ck_assert_str_eq(cJSON_GetObjectItem(reply, "op")->valuestring,
			 "stage_state");
	ck_assert_int_eq(cJSON_GetObjectItem(reply, "uid")->valueint,
			 (int)getuid());
	ck_assert_int_eq(cJSON_GetObjectItem(cJSON_GetObjectItem(reply, "echo"),
					     "job")
			     ->valueint,
			 42);
	ck_assert_str_eq(cJSON_GetObjectItem(reply, "addr")->valuestring,
			 "127.0.0.1");
	cJSON_Delete(reply);
	cJSON_Delete(req);
}
END_TEST

/* The same line sent twice: the second is a replay. */
START_TEST(test_replayed_line)
{
	struct server s;
	char err[512], *line;
	cJSON *req = request("part_put"), *r;

	line = peernet_request_line(sock, req, err, sizeof(err));
	ck_assert_msg(line != NULL, "%s", err);
	server_start(&s, 0);
	r = send_raw(&s, line);
	server_stop(&s);
	ck_assert(cJSON_IsTrue(cJSON_GetObjectItem(r, "ok")));
	cJSON_Delete(r);
	server_start(&s, 0);
	r = send_raw(&s, line);
	server_stop(&s);
	ck_assert(cJSON_IsFalse(cJSON_GetObjectItem(r, "ok")));
	ck_assert_int_eq(s.status, MAUTH_REPLAYED);
	ck_assert_ptr_nonnull(
	    strstr(cJSON_GetObjectItem(r, "error")->valuestring, "replayed"));
	cJSON_Delete(r);
	cJSON_Delete(req);
	free(line);
}
END_TEST

/* The two-step server side (read the line, then decode it): the decoded
 * request and the credential's uid; a replay and a bad line refused. */
START_TEST(test_decode_request)
{
	char err[512], *line;
	cJSON *req = request("part_put"), *got;
	enum mauth_status st = MAUTH_ERROR;
	const char *op = NULL;
	uid_t uid = 4242;
	gid_t gid = 4242;

	line = peernet_request_line(sock, req, err, sizeof(err));
	ck_assert_msg(line != NULL, "%s", err);
	got = peernet_decode_request(line, sock, &op, &uid, &gid, &st, err,
				     sizeof(err));
	ck_assert_msg(got != NULL, "%s", err);
	ck_assert_int_eq(st, MAUTH_OK);
	ck_assert_str_eq(op, "part_put");
	ck_assert_int_eq(uid, getuid());
	ck_assert_int_eq(gid, getgid());
	cJSON_Delete(got);
	uid = 4242;
	got = peernet_decode_request(line, sock, &op, &uid, &gid, &st, err,
				     sizeof(err));
	ck_assert_ptr_null(got);
	ck_assert_int_eq(st, MAUTH_REPLAYED);
	ck_assert_int_eq(uid, 4242); /* untouched on failure */
	got = peernet_decode_request("{\"op\":\"x\"}", sock, &op, &uid, &gid,
				     &st, err, sizeof(err));
	ck_assert_ptr_null(got);
	ck_assert_int_eq(st, MAUTH_OK);
	ck_assert_ptr_nonnull(strstr(err, "malformed"));
	free(line);
	cJSON_Delete(req);
}
END_TEST

/* A request longer than PEERNET_INLINE_MAX travels beside its
 * credential, bound by its digest: decoded whole; one byte of it changed,
 * or another request's body under the credential, is refused. */
static cJSON *big_request(const char *fill)
{
	cJSON *req = request("part_put");
	char *pad = malloc(PEERNET_INLINE_MAX * 2);

	ck_assert_ptr_nonnull(pad);
	memset(pad, fill[0], PEERNET_INLINE_MAX * 2 - 1);
	pad[PEERNET_INLINE_MAX * 2 - 1] = '\0';
	cJSON_AddStringToObject(req, "pad", pad);
	free(pad);
	return req;
}

START_TEST(test_digest_form)
{
	char err[512], *line, *other, *body;
	cJSON *req = big_request("a"), *req2 = big_request("b"), *got;
	enum mauth_status st = MAUTH_ERROR;
	const char *op = NULL;
	uid_t uid = 4242;
	gid_t gid = 4242;

	line = peernet_request_line(sock, req, err, sizeof(err));
	ck_assert_msg(line != NULL, "%s", err);
	ck_assert_ptr_nonnull(strstr(line, "\",\"body\":{"));
	got = peernet_decode_request(line, sock, &op, &uid, &gid, &st, err,
				     sizeof(err));
	ck_assert_msg(got != NULL, "%s", err);
	ck_assert_int_eq(st, MAUTH_OK);
	ck_assert_str_eq(op, "part_put");
	ck_assert_int_eq(uid, getuid());
	ck_assert(cJSON_Compare(got, req, true));
	cJSON_Delete(got);

	/* one byte of the body changed (a fresh credential: not a replay) */
	free(line);
	line = peernet_request_line(sock, req, err, sizeof(err));
	ck_assert_ptr_nonnull(line);
	body = strstr(line, "\"pad\":\"a");
	ck_assert_ptr_nonnull(body);
	body[8] = 'c';
	got = peernet_decode_request(line, sock, &op, &uid, &gid, &st, err,
				     sizeof(err));
	ck_assert_ptr_null(got);
	ck_assert_int_eq(st, MAUTH_INVALID);
	ck_assert_ptr_nonnull(strstr(err, "does not match"));

	/* a whole other request under this credential */
	free(line);
	line = peernet_request_line(sock, req, err, sizeof(err));
	other = peernet_request_line(sock, req2, err, sizeof(err));
	ck_assert_ptr_nonnull(line);
	ck_assert_ptr_nonnull(other);
	strcpy(strstr(line, "\",\"body\":"), strstr(other, "\",\"body\":"));
	got = peernet_decode_request(line, sock, &op, &uid, &gid, &st, err,
				     sizeof(err));
	ck_assert_ptr_null(got);
	ck_assert_int_eq(st, MAUTH_INVALID);
	ck_assert_int_eq(uid, getuid()); /* untouched: still the first's */
	free(line);
	free(other);
	cJSON_Delete(req);
	cJSON_Delete(req2);
}
END_TEST

/* Lines that are not a valid credentialled request. */
static const char *const bad_lines[] = {
	"not json",
	"[1,2]",
	"{\"op\":\"stage_state\",\"job\":42}", /* no credential at all */
	"{\"cred\":42}",
	"{\"cred\":\"MUNGE:AAAAAAAAAAAAAAAAAAAA:\"}", /* forged */
	"{\"cred\":\"hello\"}",
};

START_TEST(test_bad_lines)
{
	struct server s;
	cJSON *r;

	server_start(&s, 0);
	r = send_raw(&s, bad_lines[_i]);
	server_stop(&s);
	ck_assert(cJSON_IsFalse(cJSON_GetObjectItem(r, "ok")));
	ck_assert(cJSON_IsString(cJSON_GetObjectItem(r, "error")));
	ck_assert_ptr_null(
	    strchr(cJSON_GetObjectItem(r, "error")->valuestring, '\n'));
	cJSON_Delete(r);
}
END_TEST

/* A valid credential whose payload is not a request. */
START_TEST(test_payload_not_request)
{
	struct server s;
	char err[512], *cred, line[4096];
	cJSON *r;

	cred = mauth_encode(sock, "{\"job\":1}", 9, err, sizeof(err));
	ck_assert_ptr_nonnull(cred);
	snprintf(line, sizeof(line), "{\"cred\":\"%s\"}", cred);
	free(cred);
	server_start(&s, 0);
	r = send_raw(&s, line);
	server_stop(&s);
	ck_assert(cJSON_IsFalse(cJSON_GetObjectItem(r, "ok")));
	ck_assert_int_eq(s.status, MAUTH_OK);
	ck_assert_ptr_nonnull(
	    strstr(cJSON_GetObjectItem(r, "error")->valuestring, "'op'"));
	cJSON_Delete(r);
}
END_TEST

/* A line over PEERNET_LINE_MAX is refused, not buffered without end. */
START_TEST(test_oversized_line)
{
	struct server s;
	char err[256], *big, *text;
	size_t n = PEERNET_LINE_MAX + 4096;
	int fd;

	server_start(&s, 0);
	fd = peernet_connect("127.0.0.1", s.port, 2000, err, sizeof(err));
	ck_assert_int_ge(fd, 0);
	big = malloc(n);
	memset(big, 'x', n);
	/* The server stops reading at the limit: part of this may fail. */
	if (send(fd, big, n, MSG_NOSIGNAL) < 0)
		ck_assert_int_eq(errno, EPIPE);
	text = peernet_read_line(fd, 3000);
	close(fd);
	server_stop(&s);
	ck_assert_ptr_nonnull(text);
	ck_assert_ptr_nonnull(strstr(text, "too long"));
	free(text);
	free(big);
}
END_TEST

START_TEST(test_silent_server)
{
	struct server s;
	char err[512];
	cJSON *req = request("x");

	server_start(&s, 1);
	ck_assert_ptr_null(peernet_call("127.0.0.1", s.port, sock, req, 300,
					NULL, err, sizeof(err)));
	server_stop(&s);
	ck_assert_ptr_nonnull(strstr(err, "no reply"));
	cJSON_Delete(req);
}
END_TEST

START_TEST(test_refused)
{
	struct server s;
	char err[512];
	int unreachable = 0;
	unsigned port;
	cJSON *req = request("x");

	/* A port that was just free: nobody listens on it now. */
	server_start(&s, 1);
	port = s.port;
	close(s.lfd);
	s.lfd = -1;
	pthread_cancel(s.thread);
	pthread_join(s.thread, NULL);
	ck_assert_ptr_null(peernet_call("127.0.0.1", port, sock, req, 1000,
					&unreachable, err, sizeof(err)));
	ck_assert_int_eq(unreachable, 1);
	ck_assert_ptr_nonnull(strstr(err, "refused"));
	ck_assert_ptr_null(peernet_call("no-such-node.invalid", port, sock, req,
					1000, &unreachable, err, sizeof(err)));
	ck_assert_int_eq(unreachable, 1);
	ck_assert_ptr_nonnull(strstr(err, "cannot resolve"));
	ck_assert_ptr_null(peernet_call("", port, sock, req, 1000, &unreachable,
					err, sizeof(err)));
	cJSON_Delete(req);
}
END_TEST

START_TEST(test_listen_bad)
{
	char err[256];

	ck_assert_int_lt(peernet_listen("not-an-ip", 7000, err, sizeof(err)),
			 0);
	ck_assert_int_lt(peernet_listen("127.0.0.1", 70000, err, sizeof(err)),
			 0);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("peernet");
	TCase *tc = tcase_create("core");
	int rc;

	if (testmunge_start() < 0) {
		printf("100%%: Checks: 0, Failures: 0, Errors: 0 "
		       "(skipped: no munged)\n");
		return EXIT_SUCCESS;
	}
	sock = testmunge_socket;
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, test_round_trip);
	tcase_add_test(tc, test_replayed_line);
	tcase_add_test(tc, test_decode_request);
	tcase_add_test(tc, test_digest_form);
	tcase_add_loop_test(tc, test_bad_lines, 0,
			    sizeof(bad_lines) / sizeof(bad_lines[0]));
	tcase_add_test(tc, test_payload_not_request);
	tcase_add_test(tc, test_oversized_line);
	tcase_add_test(tc, test_silent_server);
	tcase_add_test(tc, test_refused);
	tcase_add_test(tc, test_listen_bad);
	suite_add_tcase(s, tc);
	rc = check_run(s);
	testmunge_stop();
	return rc;
}
