/* check_drain_proto.c - unit tests for what a drain worker says to root
 * (daemon/staging/drain_proto.c, and the line framing of drain_loop.c's
 * drain_worker_read).
 *
 * The parser is a function of one line, checked against a table of valid,
 * empty, truncated, overlong and malicious lines (the worker runs as the
 * job's user: anything it prints is outside input). Applying a line is
 * checked on a drain job made by hand: which phase a copy counts in, the
 * command slot freed by "done", the final scan's failures. The framing is
 * checked through a pipe the test writes as the worker would. Unprivileged;
 * no worker process is started.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <check.h>

#include "daemon/staging/drain_internal.h"
#include "tests/unit/check_run.h"
#include "tests/unit/drain_fixture.h"

/* --- the parser ------------------------------------------------------------
 */

static const struct {
	const char *line;
	int rc;
	enum drain_msg_kind kind;
	uint64_t bytes, failed;
	const char *path, *text;
} parse_cases[] = {
	/* not an object: a protocol violation */
	{ NULL, -1, 0, 0, 0, NULL, NULL },
	{ "", -1, 0, 0, 0, NULL, NULL },
	{ "   ", -1, 0, 0, 0, NULL, NULL },
	{ "[1,2]", -1, 0, 0, 0, NULL, NULL },
	{ "\"done\"", -1, 0, 0, 0, NULL, NULL },
	{ "42", -1, 0, 0, 0, NULL, NULL },
	{ "not json", -1, 0, 0, 0, NULL, NULL },
	/* truncated */
	{ "{", -1, 0, 0, 0, NULL, NULL },
	{ "{\"path\":\"a\",\"ok\":tr", -1, 0, 0, 0, NULL, NULL },
	{ "{\"done\":true,\"failed\":1", -1, 0, 0, 0, NULL, NULL },
	/* the forms drain_worker.h lists */
	{ "{\"path\":\"a/b\",\"ok\":true,\"bytes\":10}", 0, DRAIN_MSG_COPIED,
	  10, 0, "a/b", "" },
	{ "{\"path\":\"l\",\"ok\":true,\"link\":true}", 0, DRAIN_MSG_OK, 0, 0,
	  "l", "" },
	{ "{\"path\":\"f\",\"ok\":true,\"skipped\":\"fifo\"}", 0,
	  DRAIN_MSG_SKIPPED, 0, 0, "f", "fifo" },
	{ "{\"path\":\"g\",\"ok\":true,\"gone\":true}", 0, DRAIN_MSG_OK, 0, 0,
	  "g", "" },
	{ "{\"path\":\"x\",\"ok\":false,\"error\":\"disk full\"}", 0,
	  DRAIN_MSG_FAILED, 0, 0, "x", "disk full" },
	{ "{\"done\":true,\"files\":1,\"bytes\":5,\"failed\":2}", 0,
	  DRAIN_MSG_DONE, 0, 2, "", "" },
	/* lenient where it costs nothing */
	{ "{}", 0, DRAIN_MSG_OK, 0, 0, "", "" },
	{ "{\"done\":false}", 0, DRAIN_MSG_OK, 0, 0, "", "" },
	{ "{\"done\":true,\"failed\":-1}", 0, DRAIN_MSG_DONE, 0, 0, "", "" },
	{ "{\"done\":true,\"failed\":\"7\"}", 0, DRAIN_MSG_DONE, 0, 0, "", "" },
	{ "{\"path\":\"a\",\"ok\":true,\"bytes\":\"10\"}", 0, DRAIN_MSG_COPIED,
	  0, 0, "a", "" },
	{ "{\"path\":\"a\",\"ok\":true,\"bytes\":1e30}", 0, DRAIN_MSG_COPIED, 0,
	  0, "a", "" },
	{ "{\"path\":\"a\",\"ok\":true,\"bytes\":-5}", 0, DRAIN_MSG_COPIED, 0,
	  0, "a", "" },
	{ "{\"path\":\"a\",\"ok\":\"true\",\"bytes\":1}", 0, DRAIN_MSG_OK, 0, 0,
	  "a", "" },
	{ "{\"path\":\"f\",\"ok\":true,\"skipped\":7}", 0, DRAIN_MSG_OK, 0, 0,
	  "f", "" },
	{ "{\"path\":\"x\",\"ok\":false}", 0, DRAIN_MSG_FAILED, 0, 0, "x",
	  "?" },
	/* about the worker itself: no path (or not a string) */
	{ "{\"ok\":false,\"error\":\"cannot open /pfs/out\"}", 0,
	  DRAIN_MSG_WORKER, 0, 0, "", "cannot open /pfs/out" },
	{ "{\"path\":5,\"ok\":false,\"error\":\"e\"}", 0, DRAIN_MSG_WORKER, 0,
	  0, "", "e" },
	/* malicious: terminal escapes, a forged log line */
	{ "{\"path\":\"a\\u001b[2J\\nb\",\"ok\":false,"
	  "\"error\":\"e\\r\\nFAKE\\u007f\"}",
	  0, DRAIN_MSG_FAILED, 0, 0, "a?[2J?b", "e??FAKE?" },
	{ "{\"path\":\"s\\t\",\"ok\":true,\"skipped\":\"x\\u0007\"}", 0,
	  DRAIN_MSG_SKIPPED, 0, 0, "s?", "x?" },
};

START_TEST(test_parse_table)
{
	struct drain_msg m;
	int rc;

	memset(&m, 0x5a, sizeof(m));
	errno = 0;
	rc = drain_proto_parse(parse_cases[_i].line, &m);
	ck_assert_msg(rc == parse_cases[_i].rc, "case %d (%s): rc %d", _i,
		      parse_cases[_i].line ? parse_cases[_i].line : "NULL", rc);
	if (rc < 0) {
		ck_assert_int_eq(errno, EINVAL);
		/* untouched on failure */
		ck_assert_int_eq(((unsigned char *)&m)[0], 0x5a);
		return;
	}
	ck_assert_msg(m.kind == parse_cases[_i].kind, "case %d: kind %d", _i,
		      m.kind);
	ck_assert_uint_eq(m.bytes, parse_cases[_i].bytes);
	ck_assert_uint_eq(m.failed, parse_cases[_i].failed);
	ck_assert_str_eq(m.path, parse_cases[_i].path);
	ck_assert_str_eq(m.text, parse_cases[_i].text);
}
END_TEST

/* Overlong names and reasons are cut to their buffers, still one line. */
START_TEST(test_parse_overlong)
{
	size_t n = 3 * DRAIN_REL_MAX;
	char *line = malloc(2 * n + 64), *p;
	struct drain_msg m;

	ck_assert_ptr_nonnull(line);
	p = line + sprintf(line, "{\"path\":\"");
	memset(p, 'a', n);
	p += n;
	p += sprintf(p, "\",\"ok\":false,\"error\":\"");
	memset(p, 'e', n);
	p += n;
	strcpy(p, "\"}");
	ck_assert_int_eq(drain_proto_parse(line, &m), 0);
	ck_assert_int_eq(m.kind, DRAIN_MSG_FAILED);
	ck_assert_uint_eq(strlen(m.path), sizeof(m.path) - 1);
	ck_assert_uint_eq(strlen(m.text), sizeof(m.text) - 1);
	free(line);
}
END_TEST

START_TEST(test_sanitize)
{
	char s[] = "ok\x01\x1f\x7f \xc3\xa9\n";

	drain_sanitize(s);
	ck_assert_str_eq(s, "ok??? \xc3\xa9?"); /* UTF-8 stays */
}
END_TEST

/* --- applying a line --------------------------------------------------------
 */

START_TEST(test_line_counts_in_phase)
{
	struct dfx fx;
	struct dout *o;

	dfx_init(&fx, 1);
	o = &fx.dj->outs[0];
	ck_assert_int_eq(drain_worker_line(o, "{\"path\":\"a\",\"ok\":true,"
					      "\"bytes\":1000}"),
			 0);
	fx.dj->phase = DRAIN_ENDING;
	ck_assert_int_eq(drain_worker_line(o, "{\"path\":\"b\",\"ok\":true,"
					      "\"bytes\":5000}"),
			 0);
	ck_assert_uint_eq(fx.dj->during_files, 1);
	ck_assert_uint_eq(fx.dj->during_bytes, 1000);
	ck_assert_uint_eq(fx.dj->end_files, 1);
	ck_assert_uint_eq(fx.dj->end_bytes, 5000);
	ck_assert_uint_eq(o->during_files, 1);
	ck_assert_uint_eq(o->end_bytes, 5000);
	ck_assert_uint_eq(o->max_file, 5000);
	ck_assert(fx.dj->dirty);
	dfx_fini(&fx);
}
END_TEST

START_TEST(test_line_failures_counted_worker_errors_not)
{
	struct dfx fx;
	struct dout *o;

	dfx_init(&fx, 1);
	o = &fx.dj->outs[0];
	ck_assert_int_eq(drain_worker_line(o, "{\"path\":\"x\",\"ok\":false,"
					      "\"error\":\"e\"}"),
			 0);
	ck_assert_int_eq(drain_worker_line(o, "{\"ok\":false,\"error\":\"w\"}"),
			 0);
	ck_assert_int_eq(drain_worker_line(o, "{\"path\":\"f\",\"ok\":true,"
					      "\"skipped\":\"fifo\"}"),
			 0);
	ck_assert_uint_eq(fx.dj->failed_files, 1);
	ck_assert_uint_eq(o->failed_files, 1);
	ck_assert_uint_eq(fx.dj->during_files + fx.dj->end_files, 0);
	ck_assert_int_eq(drain_worker_line(o, "{\"path\":"), -1);
	ck_assert_int_eq(drain_worker_line(o, ""), -1);
	dfx_fini(&fx);
}
END_TEST

START_TEST(test_line_done_frees_the_slot)
{
	struct dfx fx;
	struct dout *o;

	dfx_init(&fx, 1);
	o = &fx.dj->outs[0];
	/* a file command: its failures are the job's, not the final scan's */
	o->busy = true;
	ck_assert_int_eq(drain_worker_line(o, "{\"done\":true,\"failed\":3}"),
			 0);
	ck_assert(!o->busy);
	ck_assert(!o->final_done);
	ck_assert_uint_eq(o->final_failed, 0);
	/* the final scan's done */
	o->busy = o->busy_final = true;
	ck_assert_int_eq(drain_worker_line(o, "{\"done\":true,\"failed\":2}"),
			 0);
	ck_assert(!o->busy && !o->busy_final);
	ck_assert(o->final_done);
	ck_assert_uint_eq(o->final_failed, 2);
	dfx_fini(&fx);
}
END_TEST

/* --- framing (drain_worker_read) --------------------------------------------
 */

START_TEST(test_read_lines_split_across_reads)
{
	static const char part1[] = "{\"path\":\"a\",\"ok\":true,\"by";
	static const char part2[] = "tes\":7}\n{\"path\":\"b\",\"ok\":true,"
				    "\"bytes\":8}\n{\"done\":tr";
	static const char part3[] = "ue}\n";
	struct dfx fx;
	struct dout *o;

	dfx_init(&fx, 1);
	o = &fx.dj->outs[0];
	dfx_start_worker(&fx, o);
	o->busy = true;
	dfx_worker_says(&fx, part1);
	drain_worker_read(o);
	ck_assert_uint_eq(o->during_files, 0);
	dfx_worker_says(&fx, part2);
	drain_worker_read(o);
	ck_assert_uint_eq(o->during_files, 2);
	ck_assert_uint_eq(o->during_bytes, 15);
	ck_assert(o->busy);
	dfx_worker_says(&fx, part3);
	drain_worker_read(o);
	ck_assert(!o->busy);
	ck_assert_int_gt(o->pid, 0); /* still running */
	dfx_fini(&fx);
}
END_TEST

/* Malformed output or an overlong line: the worker is killed (its EOF,
 * read later, ends it). */
START_TEST(test_read_violation_kills)
{
	struct dfx fx;
	struct dout *o;
	char *big;
	pid_t pid;

	dfx_init(&fx, 1);
	o = &fx.dj->outs[0];
	dfx_start_worker(&fx, o);
	pid = o->pid;
	if (_i == 0) {
		dfx_worker_says(&fx,
				"{\"path\":\"a\",\"ok\":true,\"bytes\":1}\n"
				"garbage\n{\"path\":\"b\",\"ok\":true,"
				"\"bytes\":1}\n");
	} else {
		big = malloc(DRAIN_LINE_MAX + 1);
		ck_assert_ptr_nonnull(big);
		memset(big, 'x', DRAIN_LINE_MAX);
		big[DRAIN_LINE_MAX] = '\0';
		dfx_worker_says(&fx, big);
		free(big);
	}
	drain_worker_read(o);
	ck_assert_uint_eq(o->llen, 0);
	ck_assert_uint_eq(o->during_files, _i == 0 ? 1 : 0);
	ck_assert_int_eq(dfx_wait_exit(pid), SIGKILL);
	dfx_fini(&fx);
}
END_TEST

static Suite *drain_proto_suite(void)
{
	Suite *s = suite_create("drain_proto");
	TCase *tc = tcase_create("parse");

	tcase_add_loop_test(tc, test_parse_table, 0,
			    sizeof(parse_cases) / sizeof(parse_cases[0]));
	tcase_add_test(tc, test_parse_overlong);
	tcase_add_test(tc, test_sanitize);
	suite_add_tcase(s, tc);
	tc = tcase_create("apply");
	tcase_add_test(tc, test_line_counts_in_phase);
	tcase_add_test(tc, test_line_failures_counted_worker_errors_not);
	tcase_add_test(tc, test_line_done_frees_the_slot);
	tcase_add_test(tc, test_read_lines_split_across_reads);
	tcase_add_loop_test(tc, test_read_violation_kills, 0, 2);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return check_run(drain_proto_suite());
}
