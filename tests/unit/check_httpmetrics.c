/* check_httpmetrics.c - the /metrics HTTP server on a real loopback
 * socket: the page the render function makes, who it is told asked, 404
 * and 405, and bind failures as one line naming the setting. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <check.h>

#include "common/config/conf.h"
#include "common/net/httpmetrics.h"
#include "tests/unit/check_run.h"

static int calls;
static bool seen_all;
static uid_t seen_uid;

static char *render(void *arg, bool all, uid_t viewer, size_t *ret_len)
{
	char *s = NULL;

	calls++;
	seen_all = all;
	seen_uid = viewer;
	if (asprintf(&s, "# TYPE x gauge\nx{arg=\"%s\"} 1\n",
		     (const char *)arg) < 0)
		return NULL;
	*ret_len = strlen(s);
	return s;
}

/* "127.0.0.1:PORT" with a port free now (the kernel's pick). */
static void free_listen(char *buf, size_t len)
{
	struct sockaddr_in sa = { .sin_family = AF_INET };
	socklen_t sl = sizeof(sa);
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	inet_pton(AF_INET, "127.0.0.1", &sa.sin_addr);
	ck_assert_int_eq(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	ck_assert_int_eq(getsockname(fd, (struct sockaddr *)&sa, &sl), 0);
	snprintf(buf, len, "127.0.0.1:%u", ntohs(sa.sin_port));
	close(fd);
}

/* REQUEST to 127.0.0.1:PORT; the whole answer (caller frees). */
static char *http(unsigned port, const char *request)
{
	struct sockaddr_in sa = { .sin_family = AF_INET,
				  .sin_port = htons((uint16_t)port) };
	char *buf = calloc(1, 65536);
	size_t len = 0;
	ssize_t n;
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	ck_assert_int_ge(fd, 0);
	inet_pton(AF_INET, "127.0.0.1", &sa.sin_addr);
	ck_assert_int_eq(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	ck_assert_int_eq(write(fd, request, strlen(request)),
			 (ssize_t)strlen(request));
	while (len < 65535 && (n = read(fd, buf + len, 65535 - len)) > 0)
		len += (size_t)n;
	close(fd);
	return buf;
}

START_TEST(test_serves_metrics)
{
	char err[CONF_ERR_MAX], listen[32];
	struct httpmetrics *h;
	char *r;

	free_listen(listen, sizeof(listen));
	h = httpmetrics_start("TestListen", listen, render, "a", err,
			      sizeof(err));

	ck_assert_msg(h != NULL, "%s", err);
	ck_assert_uint_gt(httpmetrics_port(h), 0);
	r = http(httpmetrics_port(h), "GET /metrics HTTP/1.0\r\n\r\n");
	ck_assert_msg(strstr(r, "HTTP/1.0 200") || strstr(r, "HTTP/1.1 200"),
		      "%s", r);
	ck_assert_ptr_nonnull(strstr(r, "text/plain; version=0.0.4"));
	ck_assert_ptr_nonnull(
	    strstr(r, "\r\n\r\n# TYPE x gauge\nx{arg=\"a\"} 1\n"));
	ck_assert_int_eq(calls, 1);
	/* a client on this host: its socket's owner, root sees all */
	ck_assert(seen_all == (geteuid() == 0));
	if (geteuid() != 0)
		ck_assert_uint_eq(seen_uid, geteuid());
	free(r);
	r = http(httpmetrics_port(h), "GET /other HTTP/1.0\r\n\r\n");
	ck_assert_msg(strstr(r, " 404 "), "%s", r);
	free(r);
	r = http(httpmetrics_port(h), "POST /metrics HTTP/1.0\r\n"
				      "Content-Length: 0\r\n\r\n");
	ck_assert_msg(strstr(r, " 405 "), "%s", r);
	free(r);
	ck_assert_int_eq(calls, 1); /* only GET /metrics renders */
	httpmetrics_stop(h);
}
END_TEST

START_TEST(test_bind_failures)
{
	char err[CONF_ERR_MAX], listen[32];
	struct httpmetrics *a, *b;

	free_listen(listen, sizeof(listen));
	a = httpmetrics_start("TestListen", listen, render, "a", err,
			      sizeof(err));
	ck_assert_msg(a != NULL, "%s", err);
	b = httpmetrics_start("ControllerMetricsListen", listen, render, "b",
			      err, sizeof(err));
	ck_assert_ptr_null(b);
	ck_assert_msg(strstr(err, "ControllerMetricsListen 127.0.0.1:") &&
			  strstr(err, "cannot listen: Address already in "
				      "use"),
		      "%s", err);
	httpmetrics_stop(a);
	ck_assert_ptr_null(httpmetrics_start("K", "localhost:1", render, NULL,
					     err, sizeof(err)));
	ck_assert_str_eq(err, "K localhost:1: not ADDR:PORT");
	httpmetrics_stop(NULL);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("httpmetrics");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, test_serves_metrics);
	tcase_add_test(tc, test_bind_failures);
	suite_add_tcase(s, tc);
	return check_run(s);
}
