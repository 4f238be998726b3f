/* main.c - iostagectld, the cluster's history service.
 *
 * main() reads like the service's life, as iostaged's does: parse the
 * arguments, load the one iostage.conf, detach (the parent exits only once
 * the service listens, so `iostagectld && iostage ...` just works), open
 * the history, serve until SIGTERM/SIGINT, tear down in reverse. Signal
 * handlers only set a flag; the main thread waits for it in sigsuspend().
 *
 * `iostagectld --import PATH` (import.c) and `--repair-history`
 * (history.c) are one-shot commands run with the service stopped.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <grp.h>
#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/close_range.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/conf.h"
#include "common/log.h"
#include "ctld/history.h"
#include "ctld/import.h"
#include "ctld/partstore.h"
#include "ctld/service.h"

#define PIDFILE_NAME "iostagectld.pid"

struct args {
	const char *conf_path;
	bool foreground;
	bool check_config;
	enum log_level level;
};

static struct conf conf;
static volatile sig_atomic_t got_signal;
static char pid_path[CONF_SOCKET_MAX + 32];

static void usage(FILE *f)
{
	fprintf(f,
		"usage: iostagectld [-f] [-c CONF] [-v] [--check-config]\n"
		"       iostagectld --import PATH [-c CONF]\n"
		"       iostagectld --repair-history [-c CONF]\n"
		"  -f, --foreground    stay in the foreground, log to stderr\n"
		"  -c, --config CONF   configuration file (default %s)\n"
		"  -v, --verbose       log debug messages too\n"
		"      --check-config  validate CONF, print the verdict, exit\n"
		"      --import PATH   import a node's old history database "
		"(service stopped)\n"
		"      --repair-history  recover a damaged history database "
		"(service stopped)\n"
		"  -h, --help          this help\n"
		"  -V, --version       print the version\n",
		IOSTAGE_CONF_PATH);
}

static void parse_args(int argc, char **argv, struct args *a)
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
	a->conf_path = IOSTAGE_CONF_PATH;
	a->level = LOG_LEVEL_INFO;
	while ((opt = getopt_long(argc, argv, "fc:vhV", longopts, NULL)) != -1) {
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
			usage(stdout);
			exit(0);
		case 'V':
			printf("iostagectld %s\n", IOSTAGE_VERSION);
			exit(0);
		default:
			usage(stderr);
			exit(2);
		}
	}
	if (optind < argc) {
		fprintf(stderr, "iostagectld: unexpected argument '%s'\n",
			argv[optind]);
		usage(stderr);
		exit(2);
	}
}

/* What the service needs beyond what conf_load checks: somewhere the
 * nodes reach it, and an AdminGroup that exists (a typo would quietly
 * leave the admins reading only their own jobs). 0, or -1 with err. */
static int check_service_conf(const struct conf *c, char *err, size_t errlen)
{
	struct group gr, *res = NULL;
	char buf[16384];

	if (!c->controller_host[0]) {
		snprintf(err, errlen, "ControllerHost= is empty: no node would "
			 "reach the service (set it to this host's name or "
			 "address)");
		return -1;
	}
	if (c->admin_group[0] &&
	    (getgrnam_r(c->admin_group, &gr, buf, sizeof(buf), &res) || !res)) {
		snprintf(err, errlen, "AdminGroup=%s: no such group",
			 c->admin_group);
		return -1;
	}
	return 0;
}

static void on_signal(int sig)
{
	got_signal = sig;
}

/* SIGTERM/SIGINT are blocked (threads created later inherit that) and
 * only delivered while the main thread waits in sigsuspend(WAITMASK). */
static void signals_setup(sigset_t *ret_waitmask)
{
	struct sigaction sa;
	sigset_t block;

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

/* Fork twice and setsid; the original process waits for one byte on a
 * pipe: 0 once the service listens (exit 0), EOF if it died first (exit 1,
 * the reason already on stderr). Returns in the service with the pipe's
 * write end in *ret_fd. */
static int daemonize_begin(int *ret_fd)
{
	int fds[2];
	pid_t pid;

	if (pipe2(fds, O_CLOEXEC) < 0) {
		log_error("pipe");
		return -1;
	}
	pid = fork();
	if (pid < 0) {
		log_error("fork");
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
	close(fds[0]);
	if (setsid() < 0) {
		log_error("setsid");
		_exit(1);
	}
	pid = fork();
	if (pid < 0) {
		log_error("fork");
		_exit(1);
	}
	if (pid > 0)
		_exit(0);
	if (chdir("/") < 0) {
		log_error("chdir /");
		_exit(1);
	}
	*ret_fd = fds[1];
	return 0;
}

/* Serving: leave the terminal, log to syslog, release the parent. */
static void daemonize_ready(int fd, enum log_level level)
{
	int null = open("/dev/null", O_RDWR | O_CLOEXEC);
	char c = 0;

	if (null >= 0) {
		dup2(null, STDIN_FILENO);
		dup2(null, STDOUT_FILENO);
		dup2(null, STDERR_FILENO);
		close(null);
	}
	log_init("iostagectld", true, level);
	if (write(fd, &c, 1) != 1)
		log_warning("cannot tell the parent we are ready");
	close(fd);
}

/* The pid file sits beside iostaged's socket (SocketPath's directory,
 * /run/iostage): written whole under a temporary name, then renamed. */
static int pidfile_write(const struct conf *c)
{
	char dir[CONF_SOCKET_MAX], tmp[sizeof(pid_path) + 8], buf[32];
	char *slash;
	int fd, n;

	snprintf(dir, sizeof(dir), "%s", c->socket_path);
	slash = strrchr(dir, '/');
	if (!slash)
		return -1;
	*slash = '\0';
	if (mkdir(dir[0] ? dir : "/", 0755) < 0 && errno != EEXIST)
		return -1;
	snprintf(pid_path, sizeof(pid_path), "%s/%s", dir, PIDFILE_NAME);
	snprintf(tmp, sizeof(tmp), "%s.tmp", pid_path);
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC,
		  0644);
	if (fd < 0)
		return -1;
	n = snprintf(buf, sizeof(buf), "%d\n", (int)getpid());
	if (write(fd, buf, (size_t)n) != n || close(fd) < 0 ||
	    rename(tmp, pid_path) < 0) {
		unlink(tmp);
		pid_path[0] = '\0';
		return -1;
	}
	return 0;
}

/* Remove the pid file if it still names us. */
static void pidfile_remove(void)
{
	char buf[32];
	ssize_t n;
	int fd;

	if (!pid_path[0])
		return;
	fd = open(pid_path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n > 0) {
		buf[n] = '\0';
		if (atoi(buf) == (int)getpid())
			unlink(pid_path);
	}
}

int main(int argc, char **argv)
{
	char err[CONF_ERR_MAX], conf_abs[PATH_MAX], dir[CONF_PATH_MAX + 16];
	struct args args;
	sigset_t waitmask;
	int ready_fd = -1;

	if (argc >= 2 && !strcmp(argv[1], "--import"))
		return ctld_import_main(argc - 1, argv + 1);
	if (argc >= 2 && !strcmp(argv[1], "--repair-history"))
		return history_repair_main("iostagectld", argc - 1, argv + 1);

	parse_args(argc, argv, &args);
	log_init("iostagectld", false, args.level);
	conf_set_defaults(&conf);
	if (conf_load(args.conf_path, &conf, err, sizeof(err)) < 0 ||
	    check_service_conf(&conf, err, sizeof(err)) < 0) {
		fprintf(stderr, "iostagectld: %s: %s\n", args.conf_path, err);
		return 1;
	}
	history_dir(&conf, dir, sizeof(dir));
	if (args.check_config) {
		printf("iostagectld: %s: ok (listens on %s port %u, history "
		       "in %s, admin group %s)\n",
		       args.conf_path, conf.controller_host,
		       conf.controller_port, dir,
		       conf.admin_group[0] ? conf.admin_group : "none");
		return 0;
	}
	if (!realpath(args.conf_path, conf_abs))
		snprintf(conf_abs, sizeof(conf_abs), "%s", args.conf_path);
	umask(022);

	close_range(3, ~0U, args.foreground ? CLOSE_RANGE_CLOEXEC : 0);
	if (!args.foreground && daemonize_begin(&ready_fd) < 0)
		return 1;
	signals_setup(&waitmask);
	/* The port is claimed first: a second service stops at "address in
	 * use" before it touches the first one's database. */
	if (ctld_service_listen(&conf, err, sizeof(err)) < 0) {
		log_errorx("%s", err);
		return 1;
	}
	/* StateDir is made as a node's iostaged makes it; the history
	 * directory inside is RocksDB's to create. Never fatal, as on a node:
	 * a damaged database is opened read-only or disabled, and every op
	 * says why. */
	if (history_make_state_dir(&conf) < 0)
		log_warning("cannot create StateDir %s", conf.state_dir);
	history_init(&conf);
	/* Multi-node jobs waiting for parts: deadlines from the database,
	 * so those that passed while we were down are filed now. */
	if (partstore_start(&conf, err, sizeof(err)) < 0)
		log_errorx("%s; jobs missing a part wait until a restart",
			   err);
	/* Requests are served only once the history is open: clients that
	 * came early waited in the backlog. */
	if (ctld_service_start(err, sizeof(err)) < 0) {
		log_errorx("%s", err);
		partstore_stop();
		history_fini();
		return 1;
	}
	if (pidfile_write(&conf) < 0)
		log_warning("cannot write the pid file beside %s",
			    conf.socket_path);
	log_info("iostagectld %s ready: pid %d, config %s, port %u, history "
		 "%s",
		 IOSTAGE_VERSION, (int)getpid(), conf_abs, ctld_service_port(),
		 dir);
	if (!args.foreground)
		daemonize_ready(ready_fd, args.level);

	while (!got_signal)
		sigsuspend(&waitmask);
	log_info("caught %s, shutting down", strsignal(got_signal));
	/* A connection thread still running could be inside the database. */
	partstore_stop();
	if (ctld_service_stop())
		history_fini();
	pidfile_remove();
	log_info("stopped");
	return 0;
}
