/* check_daemonize.c - unit tests for common/base/daemonize: the signal flag,
 * the parent that waits for readiness, and the pid file.
 *
 * Each test runs in Check's own forked process; the daemonizing tests
 * fork once more so that the process that stays behind (and exits) is
 * not Check's.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <check.h>

#include "common/base/daemonize.h"
#include "tests/unit/check_run.h"

static char base[64];

static void setup(void)
{
	snprintf(base, sizeof(base), "/tmp/check_daemonize.XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(base));
}

static void teardown(void)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", base);
	if (system(cmd) != 0)
		fprintf(stderr, "cannot remove %s\n", base);
}

static void slurp(const char *path, char *buf, size_t len)
{
	int fd = open(path, O_RDONLY);
	ssize_t n;

	ck_assert_int_ge(fd, 0);
	n = read(fd, buf, len - 1);
	ck_assert_int_ge(n, 0);
	buf[n] = '\0';
	close(fd);
}

START_TEST(test_signal_sets_flag_only_when_waiting)
{
	static volatile sig_atomic_t flag;
	sigset_t waitmask, pending;

	daemonize_signals(&flag, &waitmask);
	/* Blocked: pending, the flag untouched until we wait. */
	kill(getpid(), SIGTERM);
	ck_assert_int_eq(flag, 0);
	sigpending(&pending);
	ck_assert(sigismember(&pending, SIGTERM));
	ck_assert(!sigismember(&waitmask, SIGTERM));
	ck_assert(!sigismember(&waitmask, SIGINT));
	while (!flag)
		sigsuspend(&waitmask);
	ck_assert_int_eq(flag, SIGTERM);
	/* SIGPIPE and SIGHUP are ignored, not fatal. */
	kill(getpid(), SIGPIPE);
	kill(getpid(), SIGHUP);
	ck_assert_int_eq(flag, SIGTERM);
}
END_TEST

/* Run daemonize_begin() in a child; the daemon writes its pid to
 * base/daemon, then says ready or not. Returns the child's exit code,
 * i.e. what `iostaged` would exit with. */
static int run_daemon(int say_ready)
{
	char err[256], path[128];
	pid_t pid = fork();
	int status, fd;

	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		int ready_fd = -1;

		if (daemonize_begin(&ready_fd, err, sizeof(err)) < 0)
			_exit(3);
		/* The daemon: a new session, in /. */
		snprintf(path, sizeof(path), "%s/daemon", base);
		fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0644);
		if (fd >= 0) {
			dprintf(fd, "%d %d %d\n", (int)getpid(),
				getsid(0) == getpid(),
				getcwd(err, sizeof(err)) && !strcmp(err, "/"));
			close(fd);
		}
		if (say_ready && daemonize_ready(ready_fd) < 0)
			_exit(4);
		_exit(0);
	}
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert(WIFEXITED(status));
	return WEXITSTATUS(status);
}

START_TEST(test_parent_exits_0_once_ready)
{
	char path[128], buf[64];
	int dpid, leader, root;

	ck_assert_int_eq(run_daemon(1), 0);
	snprintf(path, sizeof(path), "%s/daemon", base);
	slurp(path, buf, sizeof(buf));
	ck_assert_int_eq(sscanf(buf, "%d %d %d", &dpid, &leader, &root), 3);
	ck_assert_int_ne(dpid, getpid());
	ck_assert_int_eq(leader, 0); /* forked again after setsid */
	ck_assert_int_eq(root, 1);
}
END_TEST

START_TEST(test_parent_exits_1_when_daemon_dies)
{
	ck_assert_int_eq(run_daemon(0), 1);
}
END_TEST

START_TEST(test_pidfile_written_and_removed)
{
	char dir[128], path[160], buf[32], want[32];

	snprintf(dir, sizeof(dir), "%s/run", base); /* made if missing */
	ck_assert_int_eq(daemonize_pidfile_write(dir, "x.pid", path,
						 sizeof(path)),
			 0);
	ck_assert_str_eq(path + strlen(base), "/run/x.pid");
	slurp(path, buf, sizeof(buf));
	snprintf(want, sizeof(want), "%d\n", (int)getpid());
	ck_assert_str_eq(buf, want);
	daemonize_pidfile_remove(path);
	ck_assert_int_eq(access(path, F_OK), -1);
	ck_assert_int_eq(errno, ENOENT);
	daemonize_pidfile_remove(path); /* gone: nothing to do */
	daemonize_pidfile_remove("");
}
END_TEST

START_TEST(test_pidfile_of_another_kept)
{
	char path[160], other[160];
	int fd;

	ck_assert_int_eq(daemonize_pidfile_write(base, "x.pid", path,
						 sizeof(path)),
			 0);
	/* A newer daemon replaced it: its file stays. */
	fd = open(path, O_WRONLY | O_TRUNC);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_gt(dprintf(fd, "%d\n", (int)getpid() + 1), 0);
	close(fd);
	daemonize_pidfile_remove(path);
	ck_assert_int_eq(access(path, F_OK), 0);
	/* A planted temporary symlink is removed, never followed. */
	snprintf(other, sizeof(other), "%s/victim", base);
	snprintf(path, sizeof(path), "%s/.y.pid.tmp", base);
	ck_assert_int_eq(symlink(other, path), 0);
	ck_assert_int_eq(daemonize_pidfile_write(base, "y.pid", path,
						 sizeof(path)),
			 0);
	ck_assert_int_eq(access(other, F_OK), -1);
}
END_TEST

START_TEST(test_pidfile_errors)
{
	char path[16], dir[128];
	int fd;

	ck_assert_int_eq(daemonize_pidfile_write(base, "a-long-name.pid", path,
						 sizeof(path)),
			 -1);
	ck_assert_int_eq(errno, ENAMETOOLONG);
	ck_assert_str_eq(path, "");
	/* DIR is a file. */
	snprintf(dir, sizeof(dir), "%s/file", base);
	fd = open(dir, O_WRONLY | O_CREAT, 0644);
	ck_assert_int_ge(fd, 0);
	close(fd);
	{
		char p[160];

		ck_assert_int_eq(daemonize_pidfile_write(dir, "x.pid", p,
							 sizeof(p)),
				 -1);
		ck_assert_str_eq(p, "");
	}
}
END_TEST

START_TEST(test_parse_args)
{
	char *plain[] = { "d", NULL };
	char *all[] = {
		"d", "-f", "-c", "/x.conf", "-v", "--check-config", NULL
	};
	char *longs[] = { "d", "--foreground", "--config=/y.conf", NULL };
	char *help[] = { "d", "--help", NULL };
	char *version[] = { "d", "-V", NULL };
	char *extra[] = { "d", "-f", "junk", NULL };
	struct daemonize_args a;
	char err[128];

	ck_assert_int_eq(daemonize_parse_args(1, plain, "/def", &a, err,
					      sizeof(err)),
			 DAEMONIZE_RUN);
	ck_assert_str_eq(a.conf_path, "/def");
	ck_assert(!a.foreground && !a.check_config);
	ck_assert_int_eq(a.level, LOG_LEVEL_INFO);
	ck_assert_int_eq(daemonize_parse_args(6, all, "/def", &a, err,
					      sizeof(err)),
			 DAEMONIZE_RUN);
	ck_assert_str_eq(a.conf_path, "/x.conf");
	ck_assert(a.foreground && a.check_config);
	ck_assert_int_eq(a.level, LOG_LEVEL_DEBUG);
	/* Parsed again from the start: nothing left from the last call. */
	ck_assert_int_eq(daemonize_parse_args(3, longs, "/def", &a, err,
					      sizeof(err)),
			 DAEMONIZE_RUN);
	ck_assert_str_eq(a.conf_path, "/y.conf");
	ck_assert(a.foreground && !a.check_config);
	ck_assert_int_eq(a.level, LOG_LEVEL_INFO);
	ck_assert_int_eq(daemonize_parse_args(2, help, "/def", &a, err,
					      sizeof(err)),
			 DAEMONIZE_HELP);
	ck_assert_int_eq(daemonize_parse_args(2, version, "/def", &a, err,
					      sizeof(err)),
			 DAEMONIZE_VERSION);
	ck_assert_int_eq(daemonize_parse_args(3, extra, "/def", &a, err,
					      sizeof(err)),
			 DAEMONIZE_USAGE);
	ck_assert_str_eq(err, "unexpected argument 'junk'");
}
END_TEST

START_TEST(test_parse_args_bad_option)
{
	char *bad[] = { "d", "--nope", NULL };
	struct daemonize_args a;
	char err[128];

	opterr = 0; /* getopt's own line is not this test's */
	ck_assert_int_eq(daemonize_parse_args(2, bad, "/def", &a, err,
					      sizeof(err)),
			 DAEMONIZE_USAGE);
	ck_assert_str_eq(err, "");
}
END_TEST

static Suite *daemonize_suite(void)
{
	Suite *s = suite_create("daemonize");
	TCase *tc = tcase_create("daemonize");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_signal_sets_flag_only_when_waiting);
	tcase_add_test(tc, test_parent_exits_0_once_ready);
	tcase_add_test(tc, test_parent_exits_1_when_daemon_dies);
	tcase_add_test(tc, test_pidfile_written_and_removed);
	tcase_add_test(tc, test_pidfile_of_another_kept);
	tcase_add_test(tc, test_pidfile_errors);
	tcase_add_test(tc, test_parse_args);
	tcase_add_test(tc, test_parse_args_bad_option);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return check_run(daemonize_suite());
}
