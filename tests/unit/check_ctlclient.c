/* check_ctlclient.c - the client of iostagectld over loopback TCP with a
 * private munged: a reply handed back (ok or not), a credential refusal
 * and an unreachable or unconfigured service as -1 with one line. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <check.h>

#include "common/net/ctlclient.h"
#include "common/net/peernet.h"
#include "tests/unit/check_run.h"
#include "tests/unit/testmunge.h"

/* How the one-shot server answers. */
enum answer { ANSWER_ECHO, ANSWER_DECLINE, ANSWER_REFUSE };

struct server {
	int lfd;
	unsigned port;
	enum answer answer;
	pthread_t thread;
};

static void *serve_one(void *arg)
{
	struct server *s = arg;
	struct pollfd pfd = { .fd = s->lfd, .events = POLLIN };
	struct peernet_peer peer;
	enum mauth_status st;
	const char *op;
	char err[256];
	cJSON *req, *reply = cJSON_CreateObject();
	int fd;

	if (poll(&pfd, 1, 5000) <= 0 || (fd = accept(s->lfd, NULL, NULL)) < 0) {
		cJSON_Delete(reply);
		return NULL;
	}
	req = peernet_read_request(fd, 2000, testmunge_socket, &op, &peer, &st,
				   err, sizeof(err));
	if (!req || s->answer == ANSWER_REFUSE) {
		/* What iostagectld says to a credential it refused. */
		cJSON_AddFalseToObject(reply, "ok");
		cJSON_AddTrueToObject(reply, "refused");
		cJSON_AddStringToObject(reply, "error",
					req ? "credential replayed" : err);
	} else if (s->answer == ANSWER_DECLINE) {
		cJSON_AddFalseToObject(reply, "ok");
		cJSON_AddStringToObject(reply, "error", "job 42 is not yours");
	} else {
		cJSON_AddTrueToObject(reply, "ok");
		cJSON_AddStringToObject(reply, "op", op);
		cJSON_AddNumberToObject(reply, "uid", peer.uid);
	}
	peernet_send(fd, reply, 2000);
	cJSON_Delete(reply);
	cJSON_Delete(req);
	close(fd);
	return NULL;
}

static void server_start(struct server *s, enum answer answer)
{
	struct sockaddr_in a;
	socklen_t len = sizeof(a);
	char err[256];

	memset(s, 0, sizeof(*s));
	s->answer = answer;
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

static void conf_for(struct conf *c, const char *host, unsigned port)
{
	conf_set_defaults(c);
	snprintf(c->controller_host, sizeof(c->controller_host), "%s", host);
	c->controller_port = port;
	snprintf(c->munge_socket, sizeof(c->munge_socket), "%.*s",
		 (int)sizeof(c->munge_socket) - 1, testmunge_socket);
}

static cJSON *ping(void)
{
	cJSON *req = cJSON_CreateObject();

	cJSON_AddStringToObject(req, "op", "ping");
	return req;
}

START_TEST(test_configured)
{
	struct conf c;

	ck_assert(!ctl_configured(NULL));
	conf_set_defaults(&c);
	ck_assert(!ctl_configured(&c));
	conf_for(&c, "ctl", 6827);
	ck_assert(ctl_configured(&c));
}
END_TEST

START_TEST(test_round_trip)
{
	struct server s;
	struct conf c;
	char err[512];
	cJSON *req = ping(), *reply = NULL;

	server_start(&s, ANSWER_ECHO);
	conf_for(&c, "localhost", s.port);
	ck_assert_msg(ctl_request(&c, req, &reply, err, sizeof(err)) == 0, "%s",
		      err);
	server_stop(&s);
	ck_assert(cJSON_IsTrue(cJSON_GetObjectItem(reply, "ok")));
	ck_assert_str_eq(cJSON_GetObjectItem(reply, "op")->valuestring, "ping");
	ck_assert_int_eq(cJSON_GetObjectItem(reply, "uid")->valueint,
			 (int)getuid());
	cJSON_Delete(reply);
	cJSON_Delete(req);
}
END_TEST

/* A request the service understood and declined is a reply, not -1. */
START_TEST(test_declined)
{
	struct server s;
	struct conf c;
	char err[512];
	cJSON *req = ping(), *reply = NULL;

	server_start(&s, ANSWER_DECLINE);
	conf_for(&c, "127.0.0.1", s.port);
	ck_assert_int_eq(ctl_request(&c, req, &reply, err, sizeof(err)), 0);
	server_stop(&s);
	ck_assert(cJSON_IsFalse(cJSON_GetObjectItem(reply, "ok")));
	ck_assert_str_eq(cJSON_GetObjectItem(reply, "error")->valuestring,
			 "job 42 is not yours");
	cJSON_Delete(reply);
	cJSON_Delete(req);
}
END_TEST

START_TEST(test_refused)
{
	struct server s;
	struct conf c;
	char err[512], want[128];
	cJSON *req = ping(), *reply = NULL;

	server_start(&s, ANSWER_REFUSE);
	conf_for(&c, "127.0.0.1", s.port);
	ck_assert_int_eq(ctl_request(&c, req, &reply, err, sizeof(err)), -1);
	server_stop(&s);
	ck_assert_ptr_null(reply);
	snprintf(want, sizeof(want),
		 "iostagectld 127.0.0.1:%u: request refused: credential "
		 "replayed",
		 s.port);
	ck_assert_str_eq(err, want);
	cJSON_Delete(req);
}
END_TEST

START_TEST(test_unreachable)
{
	struct sockaddr_in a;
	socklen_t len = sizeof(a);
	struct conf c;
	char err[512], want[64];
	unsigned port;
	int lfd;
	cJSON *req = ping(), *reply = NULL;

	/* A port nobody listens on: take one, then close it. */
	lfd = peernet_listen("127.0.0.1", 0, err, sizeof(err));
	ck_assert_msg(lfd >= 0, "%s", err);
	ck_assert_int_eq(getsockname(lfd, (struct sockaddr *)&a, &len), 0);
	port = ntohs(a.sin_port);
	close(lfd);
	conf_for(&c, "127.0.0.1", port);
	ck_assert_int_eq(ctl_request_timeout(&c, req, 2000, &reply, err,
					     sizeof(err)),
			 -1);
	ck_assert_ptr_null(reply);
	snprintf(want, sizeof(want), "iostagectld 127.0.0.1:%u: ", port);
	ck_assert_msg(strncmp(err, want, strlen(want)) == 0, "got: %s", err);
	ck_assert_msg(strstr(err, "refused") != NULL, "got: %s", err);
	ck_assert_ptr_null(strchr(err, '\n'));
	conf_for(&c, "no-such-host.invalid", port);
	ck_assert_int_eq(ctl_request_timeout(&c, req, 2000, &reply, err,
					     sizeof(err)),
			 -1);
	ck_assert_msg(strstr(err, "no-such-host.invalid") != NULL, "got: %s",
		      err);
	cJSON_Delete(req);
}
END_TEST

START_TEST(test_not_configured)
{
	struct conf c;
	char err[512];
	cJSON *req = ping(), *reply = NULL;

	conf_set_defaults(&c);
	ck_assert_int_eq(ctl_request(&c, req, &reply, err, sizeof(err)), -1);
	ck_assert_str_eq(err, "iostagectld: no service configured "
			      "(ControllerHost= is empty)");
	ck_assert_int_eq(ctl_request(NULL, req, &reply, err, sizeof(err)), -1);
	conf_for(&c, "127.0.0.1", 1);
	ck_assert_int_eq(ctl_request(&c, NULL, &reply, err, sizeof(err)), -1);
	ck_assert_ptr_null(reply);
	cJSON_Delete(req);
}
END_TEST

/* munged not running where the client is: -1, nothing sent. */
START_TEST(test_no_munged)
{
	struct conf c;
	char err[512];
	cJSON *req = ping(), *reply = NULL;

	conf_for(&c, "127.0.0.1", 1);
	snprintf(c.munge_socket, sizeof(c.munge_socket), "%s",
		 "/nonexistent/munge.sock");
	ck_assert_int_eq(ctl_request(&c, req, &reply, err, sizeof(err)), -1);
	ck_assert_msg(strncmp(err, "iostagectld 127.0.0.1:1: ", 25) == 0,
		      "got: %s", err);
	ck_assert_ptr_null(reply);
	cJSON_Delete(req);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("ctlclient");
	TCase *tc = tcase_create("core");
	int rc;

	if (testmunge_start() < 0) {
		printf("100%%: Checks: 0, Failures: 0, Errors: 0 "
		       "(skipped: no munged)\n");
		return EXIT_SUCCESS;
	}
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, test_configured);
	tcase_add_test(tc, test_round_trip);
	tcase_add_test(tc, test_declined);
	tcase_add_test(tc, test_refused);
	tcase_add_test(tc, test_unreachable);
	tcase_add_test(tc, test_not_configured);
	tcase_add_test(tc, test_no_munged);
	suite_add_tcase(s, tc);
	rc = check_run(s);
	testmunge_stop();
	return rc;
}
