/* check_sampler.c - daemon/telemetry/sampler.c on real processes: /proc
 * parsing, and the I/O of children that exit between samples is neither lost
 * nor counted twice. The test process plays slurmstepd (the carrier): it forks
 * the "task" and reaps it. Writes go to /dev/null, which /proc/PID/io counts in
 * wchar like any write(2). */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <check.h>

#include "daemon/telemetry/sampler.h"
#include "tests/unit/check_run.h"

#define KiB 1024

static void write_null(size_t bytes)
{
	static char buf[64 * KiB];
	int fd = open("/dev/null", O_WRONLY);

	while (bytes > 0) {
		size_t n = bytes < sizeof(buf) ? bytes : sizeof(buf);

		if (write(fd, buf, n) != (ssize_t)n)
			_exit(3);
		bytes -= n;
	}
	close(fd);
}

static void wait_byte(int fd)
{
	char c;

	if (read(fd, &c, 1) != 1)
		_exit(4);
}

static void send_byte(int fd)
{
	if (write(fd, "x", 1) != 1)
		_exit(5);
}

START_TEST(test_read_io_and_stat_of_self)
{
	struct telrec_io io;
	unsigned long long start;
	pid_t ppid;

	write_null(10 * KiB);
	ck_assert_int_eq(sampler_read_io(getpid(), &io), 0);
	ck_assert_uint_ge(io.wchar, 10 * KiB);
	ck_assert_uint_ge(io.syscw, 1);
	ck_assert_int_eq(sampler_read_stat(getpid(), &start, &ppid), 0);
	ck_assert_int_eq(ppid, getppid());
	ck_assert_uint_gt(start, 0);
	errno = 0;
	ck_assert_int_eq(sampler_read_io(999999999, &io), -1);
	ck_assert_int_eq(errno, ENOENT);
}
END_TEST

/*
 * task T (registered) forks grandchild G.
 *   G writes 256 KiB, then waits;            sample 1 sees G (256 KiB)
 *   G writes 256 KiB more and exits; T reaps it and writes 128 KiB;
 *                                            sample 2: G gone, T's growth
 *                                            holds all of G: 256 counted
 *                                            before is not counted again
 *   T writes 64 KiB and exits; we reap it;   sample 3: T gone, its tail
 *                                            comes from our counters
 * Total: 704 KiB written, whatever the timing of the samples.
 */
START_TEST(test_exits_between_samples_are_counted_once)
{
	struct sampler_tree tree = { 0 };
	struct telrec_io total = { 0 };
	int to_g[2], from_g[2], to_t[2], from_t[2], status;
	pid_t t;

	ck_assert_int_eq(pipe(to_g), 0);
	ck_assert_int_eq(pipe(from_g), 0);
	ck_assert_int_eq(pipe(to_t), 0);
	ck_assert_int_eq(pipe(from_t), 0);
	t = fork();
	ck_assert_int_ge(t, 0);
	if (t == 0) {
		pid_t g = fork();

		if (g == 0) {
			write_null(256 * KiB);
			send_byte(from_g[1]);
			wait_byte(to_g[0]);
			write_null(256 * KiB);
			_exit(0);
		}
		waitpid(g, NULL, 0);
		write_null(128 * KiB);
		send_byte(from_t[1]);
		wait_byte(to_t[0]);
		write_null(64 * KiB);
		_exit(0);
	}
	ck_assert_int_eq(sampler_tree_add_task(&tree, t, getpid()), 0);
	ck_assert(sampler_tree_has(&tree, t));
	wait_byte(from_g[0]);
	sampler_tree_sample(&tree, NULL, NULL, &total);
	ck_assert_uint_eq(tree.nprocs, 2); /* T and G */
	ck_assert_uint_ge(total.wchar, 256 * KiB);

	send_byte(to_g[1]);
	wait_byte(from_t[0]);
	sampler_tree_sample(&tree, NULL, NULL, &total);
	ck_assert_uint_eq(tree.nprocs, 1); /* G is gone */
	ck_assert_uint_ge(total.wchar, 640 * KiB);
	ck_assert_uint_le(total.wchar, 640 * KiB + 4 * KiB);

	send_byte(to_t[1]);
	ck_assert_int_eq(waitpid(t, &status, 0), t);
	ck_assert_int_eq(WEXITSTATUS(status), 0);
	sampler_tree_sample(&tree, NULL, NULL, &total);
	ck_assert_uint_eq(tree.nprocs, 0);
	ck_assert_uint_ge(total.wchar, 704 * KiB);
	ck_assert_uint_le(total.wchar, 704 * KiB + 4 * KiB);
	sampler_tree_clear(&tree);
}
END_TEST

/* Nothing was sampled while the task lived: all of it arrives through the
 * carrier when the task is reaped. */
START_TEST(test_short_task_is_counted_through_its_parent)
{
	struct sampler_tree tree = { 0 };
	struct telrec_io total = { 0 };
	int go[2];
	pid_t t;

	ck_assert_int_eq(pipe(go), 0);
	t = fork();
	if (t == 0) {
		wait_byte(go[0]);
		if (fork() == 0) {
			write_null(300 * KiB);
			_exit(0);
		}
		wait(NULL);
		write_null(100 * KiB);
		_exit(0);
	}
	ck_assert_int_eq(sampler_tree_add_task(&tree, t, getpid()), 0);
	send_byte(go[1]);
	ck_assert_int_eq(waitpid(t, NULL, 0), t);
	sampler_tree_sample(&tree, NULL, NULL, &total);
	ck_assert_uint_ge(total.wchar, 400 * KiB);
	ck_assert_uint_le(total.wchar, 400 * KiB + 4 * KiB);
	sampler_tree_clear(&tree);
}
END_TEST

START_TEST(test_add_task_refuses_a_missing_pid)
{
	struct sampler_tree tree = { 0 };

	errno = 0;
	ck_assert_int_eq(sampler_tree_add_task(&tree, 999999999, 0), -1);
	ck_assert_int_eq(errno, ESRCH);
	ck_assert_uint_eq(tree.nprocs, 0);
	sampler_tree_clear(&tree);
}
END_TEST

static Suite *sampler_suite(void)
{
	Suite *s = suite_create("sampler");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, test_read_io_and_stat_of_self);
	tcase_add_test(tc, test_exits_between_samples_are_counted_once);
	tcase_add_test(tc, test_short_task_is_counted_through_its_parent);
	tcase_add_test(tc, test_add_task_refuses_a_missing_pid);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return check_run(sampler_suite());
}
