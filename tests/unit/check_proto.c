/* check_proto.c - the wire protocol: line reading, request parsing,
 * replies, field helpers, and a round trip over a real socket pair. */
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <check.h>

#include "common/net/proto.h"
#include "tests/unit/check_run.h"

static int sv[2];
static struct proto_reader *reader;

static void setup(void)
{
	ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	reader = proto_reader_create(sv[1]);
	ck_assert_ptr_nonnull(reader);
}

static void teardown(void)
{
	proto_reader_destroy(reader);
	close(sv[0]);
	close(sv[1]);
}

static void put(const char *s)
{
	ck_assert_int_eq(write(sv[0], s, strlen(s)), (ssize_t)strlen(s));
}

START_TEST(test_reads_lines_in_order)
{
	char *line;

	put("{\"op\":\"a\"}\n{\"op\":");
	put("\"b\"}\n");
	ck_assert_int_eq(proto_read_line(reader, 1000, &line), 1);
	ck_assert_str_eq(line, "{\"op\":\"a\"}");
	ck_assert_int_eq(proto_read_line(reader, 1000, &line), 1);
	ck_assert_str_eq(line, "{\"op\":\"b\"}");
}
END_TEST

START_TEST(test_timeout_and_eof)
{
	char *line;

	errno = 0;
	ck_assert_int_eq(proto_read_line(reader, 50, &line), -1);
	ck_assert_int_eq(errno, ETIMEDOUT);
	close(sv[0]);
	sv[0] = -1;
	ck_assert_int_eq(proto_read_line(reader, 1000, &line), 0);
}
END_TEST

START_TEST(test_unterminated_last_line_is_refused)
{
	char *line;

	put("{\"op\":\"ping\"}");
	close(sv[0]);
	sv[0] = -1;
	ck_assert_int_eq(proto_read_line(reader, 1000, &line), -1);
	ck_assert_int_eq(errno, EPROTO);
}
END_TEST

/* Writes a line of n bytes from a child so the pipe never blocks us. */
static void put_big_line(size_t n)
{
	pid_t pid = fork();

	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		char *buf = malloc(n + 1);
		memset(buf, 'x', n);
		buf[n] = '\n';
		if (write(sv[0], buf, n + 1) < 0)
			_exit(1);
		if (write(sv[0], "{\"op\":\"after\"}\n", 15) < 0)
			_exit(1);
		_exit(0);
	}
}

START_TEST(test_oversized_line_is_skipped_then_next_line_read)
{
	char *line;

	put_big_line(PROTO_LINE_MAX + 1000);
	errno = 0;
	ck_assert_int_eq(proto_read_line(reader, 5000, &line), -1);
	ck_assert_int_eq(errno, EMSGSIZE);
	ck_assert_int_eq(proto_read_line(reader, 5000, &line), 1);
	ck_assert_str_eq(line, "{\"op\":\"after\"}");
}
END_TEST

START_TEST(test_line_just_under_limit_is_accepted)
{
	char *line;

	put_big_line(PROTO_LINE_MAX - 1);
	ck_assert_int_eq(proto_read_line(reader, 5000, &line), 1);
	ck_assert_uint_eq(strlen(line), PROTO_LINE_MAX - 1);
}
END_TEST

/* Lines around the reader's growing buffer's sizes (it starts at 4 KiB and
 * doubles), written at once so that several sit in the buffer together:
 * each comes back whole, with its own bytes. */
static const size_t sizes[] = { 1, 4095, 4096, 4097, 9000, 70000, 3 };

static char pattern_byte(size_t line, size_t i)
{
	return (char)('a' + (line * 7 + i) % 26);
}

START_TEST(test_lines_of_every_size_read_whole)
{
	size_t nlines = sizeof(sizes) / sizeof(sizes[0]), i, j;
	pid_t pid = fork();
	char *line;

	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		for (i = 0; i < nlines; i++) {
			char *buf = malloc(sizes[i] + 1);

			for (j = 0; j < sizes[i]; j++)
				buf[j] = pattern_byte(i, j);
			buf[sizes[i]] = '\n';
			if (write(sv[0], buf, sizes[i] + 1) < 0)
				_exit(1);
			free(buf);
		}
		_exit(0);
	}
	for (i = 0; i < nlines; i++) {
		ck_assert_int_eq(proto_read_line(reader, 5000, &line), 1);
		ck_assert_uint_eq(strlen(line), sizes[i]);
		for (j = 0; j < sizes[i]; j++)
			if (line[j] != pattern_byte(i, j))
				ck_abort_msg("line %zu: byte %zu differs", i,
					     j);
	}
}
END_TEST

static const struct {
	const char *line;
	const char *error; /* NULL: accepted */
} requests[] = {
	{ "{\"op\":\"ping\"}", NULL },
	{ "{\"op\":\"stage\",\"job\":1}", NULL },
	{ "", "not JSON" },
	{ "not json", "not JSON" },
	{ "{\"op\":", "not JSON" },
	{ "[1,2]", "not a JSON object" },
	{ "\"op\"", "not a JSON object" },
	{ "{}", "key 'op'" },
	{ "{\"op\":42}", "key 'op'" },
	{ "{\"op\":\"\"}", "key 'op'" },
	{ "{\"op\":null}", "key 'op'" },
};

START_TEST(test_parse_request_table)
{
	char err[256] = "";
	const char *op = NULL;
	cJSON *req = proto_parse_request(requests[_i].line, &op, err,
					 sizeof(err));

	if (requests[_i].error) {
		ck_assert_ptr_null(req);
		ck_assert_msg(strstr(err, requests[_i].error),
			      "'%s': got error '%s'", requests[_i].line, err);
	} else {
		ck_assert_ptr_nonnull(req);
		ck_assert_ptr_nonnull(op);
		cJSON_Delete(req);
	}
}
END_TEST

START_TEST(test_send_then_read_round_trip)
{
	cJSON *msg = proto_reply_error("tier '%s' full", "nvme");
	cJSON *back;
	char *line;

	ck_assert_int_eq(proto_send(sv[0], msg), 0);
	ck_assert_int_eq(proto_read_line(reader, 1000, &line), 1);
	back = cJSON_Parse(line);
	ck_assert(cJSON_IsFalse(cJSON_GetObjectItem(back, "ok")));
	ck_assert_str_eq(cJSON_GetObjectItem(back, "error")->valuestring,
			 "tier 'nvme' full");
	cJSON_Delete(back);
	cJSON_Delete(msg);

	msg = proto_reply_ok();
	ck_assert(cJSON_IsTrue(cJSON_GetObjectItem(msg, "ok")));
	cJSON_Delete(msg);
}
END_TEST

START_TEST(test_field_helpers)
{
	cJSON *obj = cJSON_Parse("{\"job\":42,\"neg\":-1,\"frac\":1.5,"
				 "\"big\":5e9,\"s\":\"x\",\"n\":3}");
	char err[128];
	uint32_t v = 7;
	const char *s = NULL;

	ck_assert_int_eq(proto_get_u32(obj, "job", &v, err, sizeof(err)), 0);
	ck_assert_uint_eq(v, 42);
	v = 7;
	ck_assert_int_eq(proto_get_u32(obj, "neg", &v, err, sizeof(err)), -1);
	ck_assert_uint_eq(v, 7); /* untouched on failure */
	ck_assert_ptr_nonnull(strstr(err, "key 'neg'"));
	ck_assert_int_eq(proto_get_u32(obj, "frac", &v, err, sizeof(err)), -1);
	ck_assert_int_eq(proto_get_u32(obj, "big", &v, err, sizeof(err)), -1);
	ck_assert_int_eq(proto_get_u32(obj, "s", &v, err, sizeof(err)), -1);
	ck_assert_int_eq(proto_get_u32(obj, "missing", &v, err, sizeof(err)),
			 -1);
	ck_assert_ptr_nonnull(strstr(err, "missing"));
	ck_assert_int_eq(proto_get_string(obj, "s", &s, err, sizeof(err)), 0);
	ck_assert_str_eq(s, "x");
	ck_assert_int_eq(proto_get_string(obj, "n", &s, err, sizeof(err)), -1);
	ck_assert_ptr_nonnull(strstr(err, "must be a string"));
	cJSON_Delete(obj);
}
END_TEST

START_TEST(test_job_id)
{
	cJSON *ok = cJSON_Parse("{\"job\":42}");
	cJSON *zero = cJSON_Parse("{\"job\":0}");
	cJSON *none = cJSON_Parse("{}");
	char err[128];
	uint32_t v = 7;

	ck_assert_int_eq(proto_get_job_id(ok, &v, err, sizeof(err)), 0);
	ck_assert_uint_eq(v, 42);
	v = 7;
	ck_assert_int_eq(proto_get_job_id(zero, &v, err, sizeof(err)), -1);
	ck_assert_str_eq(err, "key 'job': must be > 0");
	ck_assert_uint_eq(v, 7);
	ck_assert_int_eq(proto_get_job_id(none, &v, err, sizeof(err)), -1);
	ck_assert_ptr_nonnull(strstr(err, "key 'job'"));
	cJSON_Delete(ok);
	cJSON_Delete(zero);
	cJSON_Delete(none);
}
END_TEST

/* The lenient readers: whole numbers 0..1e18, anything else 0 (a cast of
 * NaN, a negative or a huge double to uint64_t would be undefined). */
START_TEST(test_u64_lenient_bounds)
{
	cJSON *o = cJSON_Parse("{\"a\":12.9,\"big\":1e18,\"over\":2e18,"
			       "\"neg\":-1,\"s\":\"5\"}");

	ck_assert_uint_eq(proto_u64(o, "a"), 12);
	ck_assert_uint_eq(proto_u64(o, "big"), 1000000000000000000ULL);
	ck_assert_uint_eq(proto_u64(o, "over"), 0);
	ck_assert_uint_eq(proto_u64(o, "neg"), 0);
	ck_assert_uint_eq(proto_u64(o, "s"), 0);
	ck_assert_uint_eq(proto_u64(o, "missing"), 0);
	ck_assert_uint_eq(proto_u64_of(3e9), 3000000000ULL);
	ck_assert_uint_eq(proto_u64_of(0.5), 0);
	ck_assert_uint_eq(proto_u64_of(9.2e299), 0);
	ck_assert_uint_eq(proto_u64_of(-0.5), 0);
	ck_assert_uint_eq(proto_u64_of(NAN), 0);
	ck_assert_uint_eq(proto_u64_of(INFINITY), 0);
	cJSON_Delete(o);
}
END_TEST

START_TEST(test_call_unreachable_socket_says_so)
{
	char err[256] = "";
	cJSON *req = cJSON_Parse("{\"op\":\"ping\"}");

	ck_assert_ptr_null(proto_call("/nonexistent/iostaged.sock", req, 100,
				      err, sizeof(err)));
	ck_assert_ptr_nonnull(strstr(err, "not reachable"));
	ck_assert_ptr_nonnull(strstr(err, "/nonexistent/iostaged.sock"));
	cJSON_Delete(req);
	errno = 0;
	ck_assert_int_eq(proto_connect(
			     "/tmp/"
			     "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
			     "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
			     "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"),
			 -1);
	ck_assert_int_eq(errno, ENAMETOOLONG);
}
END_TEST

/* A daemon that refuses the first BUSY connections as iostaged does when
 * out of slots, then answers each request with ok. */
struct busy_server {
	int fd;
	int busy;
	int served;
};

static void *busy_server_run(void *arg)
{
	struct busy_server *b = arg;
	char buf[256];
	int c;

	while ((c = accept(b->fd, NULL, NULL)) >= 0) {
		const char *reply =
		    b->busy-- > 0
			? "{\"ok\":false,\"error\":\"too many connections "
			  "(limit 1)\"}\n"
			: "{\"ok\":true}\n";

		if (read(c, buf, sizeof(buf)) > 0 &&
		    write(c, reply, strlen(reply)) > 0)
			b->served++;
		close(c);
		if (b->busy < 0)
			break;
	}
	return NULL;
}

static void busy_server_start(struct busy_server *b, pthread_t *t,
			      const char *path, int busy)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };

	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	unlink(path);
	b->fd = socket(AF_UNIX, SOCK_STREAM, 0);
	b->busy = busy;
	b->served = 0;
	ck_assert_int_ge(b->fd, 0);
	ck_assert_int_eq(bind(b->fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	ck_assert_int_eq(listen(b->fd, 8), 0);
	ck_assert_int_eq(pthread_create(t, NULL, busy_server_run, b), 0);
}

/* A refusal for want of a slot is asked again until the daemon answers. */
START_TEST(test_call_retries_busy_refusal)
{
	char path[64], err[256] = "";
	struct busy_server b;
	pthread_t t;
	cJSON *req = cJSON_Parse("{\"op\":\"ping\"}"), *reply;

	snprintf(path, sizeof(path), "/tmp/check_proto.%d.sock", (int)getpid());
	busy_server_start(&b, &t, path, 3);
	reply = proto_call(path, req, 30000, err, sizeof(err));
	ck_assert_ptr_nonnull(reply);
	ck_assert(!proto_reply_busy(reply));
	ck_assert(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(reply, "ok")));
	/* The server counts a reply after writing it: count once it is done. */
	pthread_join(t, NULL);
	ck_assert_int_eq(b.served, 4);
	close(b.fd);
	unlink(path);
	cJSON_Delete(reply);
	cJSON_Delete(req);
}
END_TEST

/* Any other refusal is an answer: returned at once, never sent twice. */
START_TEST(test_call_does_not_retry_other_errors)
{
	cJSON *busy = cJSON_Parse("{\"ok\":false,\"error\":\"too many "
				  "connections of uid 5 (limit 2)\"}");
	cJSON *other = cJSON_Parse("{\"ok\":false,\"error\":\"unknown job "
				   "7\"}");
	cJSON *ok = cJSON_Parse("{\"ok\":true,\"error\":\"too many "
				"connections\"}");

	ck_assert(proto_reply_busy(busy));
	ck_assert(!proto_reply_busy(other));
	ck_assert(!proto_reply_busy(ok));
	cJSON_Delete(busy);
	cJSON_Delete(other);
	cJSON_Delete(ok);
}
END_TEST

static Suite *proto_suite(void)
{
	Suite *s = suite_create("proto");
	TCase *tc = tcase_create("core");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_reads_lines_in_order);
	tcase_add_test(tc, test_timeout_and_eof);
	tcase_add_test(tc, test_unterminated_last_line_is_refused);
	tcase_add_test(tc, test_oversized_line_is_skipped_then_next_line_read);
	tcase_add_test(tc, test_line_just_under_limit_is_accepted);
	tcase_add_test(tc, test_lines_of_every_size_read_whole);
	tcase_add_loop_test(tc, test_parse_request_table, 0,
			    sizeof(requests) / sizeof(requests[0]));
	tcase_add_test(tc, test_send_then_read_round_trip);
	tcase_add_test(tc, test_field_helpers);
	tcase_add_test(tc, test_job_id);
	tcase_add_test(tc, test_u64_lenient_bounds);
	tcase_add_test(tc, test_call_unreachable_socket_says_so);
	tcase_add_test(tc, test_call_retries_busy_refusal);
	tcase_add_test(tc, test_call_does_not_retry_other_errors);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return check_run(proto_suite());
}
