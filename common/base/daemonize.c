/* daemonize.c - how iostaged and iostagectld become daemons. */
#define _GNU_SOURCE
#include "common/base/daemonize.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static volatile sig_atomic_t *signal_flag;

enum daemonize_parsed daemonize_parse_args(int argc, char **argv,
					   const char *default_conf,
					   struct daemonize_args *a, char *err,
					   size_t errlen)
{
	static const struct option longopts[] = {
		{ "foreground", no_argument, NULL, 'f' },
		{ "config", required_argument, NULL, 'c' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "check-config", no_argument, NULL, 'C' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	int opt;

	memset(a, 0, sizeof(*a));
	a->conf_path = default_conf;
	a->level = LOG_LEVEL_INFO;
	err[0] = '\0';
	optind = 0;
	while ((opt = getopt_long(argc, argv, "fc:vhV", longopts, NULL)) !=
	       -1) {
		switch (opt) {
		case 'f':
			a->foreground = true;
			break;
		case 'c':
			a->conf_path = optarg;
			break;
		case 'v':
			a->level = LOG_LEVEL_DEBUG;
			break;
		case 'C':
			a->check_config = true;
			break;
		case 'h':
			return DAEMONIZE_HELP;
		case 'V':
			return DAEMONIZE_VERSION;
		default:
			return DAEMONIZE_USAGE;
		}
	}
	if (optind < argc) {
		snprintf(err, errlen, "unexpected argument '%s'", argv[optind]);
		return DAEMONIZE_USAGE;
	}
	return DAEMONIZE_RUN;
}

static void on_signal(int sig)
{
	if (signal_flag)
		*signal_flag = sig;
}

void daemonize_signals(volatile sig_atomic_t *flag, sigset_t *ret_waitmask)
{
	struct sigaction sa;
	sigset_t block;

	signal_flag = flag;
	memset(&sa, 0, sizeof(sa));
	sigemptyset(&sa.sa_mask);
	sa.sa_handler = on_signal;
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	sa.sa_handler = SIG_IGN;
	sigaction(SIGPIPE, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	sigemptyset(&block);
	sigaddset(&block, SIGTERM);
	sigaddset(&block, SIGINT);
	pthread_sigmask(SIG_BLOCK, &block, ret_waitmask);
	sigdelset(ret_waitmask, SIGTERM);
	sigdelset(ret_waitmask, SIGINT);
}

static int fail(char *err, size_t errlen, const char *what)
{
	int saved = errno;

	snprintf(err, errlen, "%s: %s", what, strerror(saved));
	errno = saved;
	return -1;
}

int daemonize_begin(int *ret_fd, char *err, size_t errlen)
{
	int fds[2];
	pid_t pid;

	if (pipe2(fds, O_CLOEXEC) < 0)
		return fail(err, errlen, "pipe");
	pid = fork();
	if (pid < 0) {
		fail(err, errlen, "fork");
		close(fds[0]);
		close(fds[1]);
		return -1;
	}
	if (pid > 0) {
		char c = 1;
		ssize_t n;

		close(fds[1]);
		do
			n = read(fds[0], &c, 1);
		while (n < 0 && errno == EINTR);
		waitpid(pid, NULL, 0);
		_exit(n == 1 && c == 0 ? 0 : 1);
	}
	/* From here on a failure returns in a child: its exit closes the
	 * pipe and the waiting parent exits 1. */
	close(fds[0]);
	if (setsid() < 0)
		return fail(err, errlen, "setsid");
	pid = fork();
	if (pid < 0)
		return fail(err, errlen, "fork");
	if (pid > 0)
		_exit(0);
	if (chdir("/") < 0)
		return fail(err, errlen, "chdir /");
	*ret_fd = fds[1];
	return 0;
}

int daemonize_ready(int fd)
{
	int null = open("/dev/null", O_RDWR | O_CLOEXEC);
	char c = 0;
	int r = 0;

	if (null >= 0) {
		dup2(null, STDIN_FILENO);
		dup2(null, STDOUT_FILENO);
		dup2(null, STDERR_FILENO);
		close(null);
	}
	if (write(fd, &c, 1) != 1)
		r = -1;
	close(fd);
	return r;
}

int daemonize_pidfile_write(const char *dir, const char *name, char *ret_path,
			    size_t pathlen)
{
	char tmp[4096], buf[32];
	int fd, n, saved;

	ret_path[0] = '\0';
	if ((size_t)snprintf(tmp, sizeof(tmp), "%s/.%s.tmp", dir, name) >=
		sizeof(tmp) ||
	    (size_t)snprintf(ret_path, pathlen, "%s/%s", dir, name) >=
		pathlen) {
		ret_path[0] = '\0';
		errno = ENAMETOOLONG;
		return -1;
	}
	if (mkdir(dir[0] ? dir : "/", 0755) < 0 && errno != EEXIST)
		goto fail;
	/* A leftover (or planted) temporary file is not ours to trust. */
	if (unlink(tmp) < 0 && errno != ENOENT)
		goto fail;
	fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
		  0644);
	if (fd < 0)
		goto fail;
	n = snprintf(buf, sizeof(buf), "%d\n", (int)getpid());
	if (write(fd, buf, (size_t)n) != n || fsync(fd) < 0) {
		saved = errno;
		close(fd);
		errno = saved;
		goto fail_unlink;
	}
	if (close(fd) < 0 || rename(tmp, ret_path) < 0)
		goto fail_unlink;
	return 0;
fail_unlink:
	saved = errno;
	unlink(tmp);
	errno = saved;
fail:
	ret_path[0] = '\0';
	return -1;
}

void daemonize_pidfile_remove(const char *path)
{
	char buf[32];
	ssize_t n;
	int fd;

	if (!path || !path[0])
		return;
	fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n > 0) {
		buf[n] = '\0';
		if (atoi(buf) == (int)getpid())
			unlink(path);
	}
}
