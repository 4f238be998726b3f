/* main.c - iostagectld, the cluster's history service.
 *
 * main() reads like the service's life, as iostaged's does: parse the
 * arguments, load the one iostage.conf, detach (the parent exits only once
 * the service listens, so `iostagectld && iostage ...` just works), open
 * the history, serve until SIGTERM/SIGINT, tear down in reverse. Signal
 * handlers only set a flag; the main thread waits for it in sigsuspend().
 *
 * `iostagectld --import PATH` (import.c) and `--repair-history`
 * (common/history/history_repair.c) are one-shot commands run with the
 * service stopped.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <grp.h>
#include <limits.h>
#include <linux/close_range.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/base/daemonize.h"
#include "common/base/log.h"
#include "common/config/conf.h"
#include "common/history/history.h"
#include "ctld/filing/import.h"
#include "ctld/filing/partstore.h"
#include "ctld/metrics.h"
#include "ctld/sched/bw_ops.h"
#include "ctld/sched/slurmsched.h"
#include "ctld/service.h"

#define PIDFILE_NAME "iostagectld.pid"

static struct conf conf;
static volatile sig_atomic_t got_signal;
static char pid_path[CONF_SOCKET_MAX + 32];

static void usage(FILE *f)
{
	fprintf(
	    f,
	    "usage: iostagectld [-f] [-c CONF] [-v] [--check-config]\n"
	    "       iostagectld --import PATH [-c CONF]\n"
	    "       iostagectld --repair-history [-c CONF]\n"
	    "  -f, --foreground    stay in the foreground, log to stderr\n"
	    "  -c, --config CONF   configuration file (default %s)\n"
	    "  -v, --verbose       log debug messages too\n"
	    "      --check-config  validate CONF, print the verdict (with -v,\n"
	    "                      every setting iostagectld uses first), exit\n"
	    "      --import PATH   import a node's old history database "
	    "(service stopped)\n"
	    "      --repair-history  recover a damaged history database "
	    "(service stopped)\n"
	    "  -h, --help          this help\n"
	    "  -V, --version       print the version\n",
	    IOSTAGE_CONF_PATH);
}

static void parse_args(int argc, char **argv, struct daemonize_args *a)
{
	char err[128];

	switch (daemonize_parse_args(argc, argv, IOSTAGE_CONF_PATH, a, err,
				     sizeof(err))) {
	case DAEMONIZE_RUN:
		return;
	case DAEMONIZE_HELP:
		usage(stdout);
		exit(0);
	case DAEMONIZE_VERSION:
		printf("iostagectld %s\n", IOSTAGE_VERSION);
		exit(0);
	case DAEMONIZE_USAGE:
		if (err[0])
			fprintf(stderr, "iostagectld: %s\n", err);
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
		snprintf(err, errlen,
			 "ControllerHost= is empty: no node would "
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

/* SocketPath's directory, "/" for a socket at the root. */
static int socket_dir(const struct conf *c, char *dir, size_t dirlen)
{
	char *slash;

	snprintf(dir, dirlen, "%s", c->socket_path);
	slash = strrchr(dir, '/');
	if (!slash)
		return -1;
	*slash = '\0';
	if (!dir[0])
		snprintf(dir, dirlen, "/");
	return 0;
}

int main(int argc, char **argv)
{
	char err[CONF_ERR_MAX], conf_abs[PATH_MAX], dir[CONF_PATH_MAX + 16];
	char dir_sock[CONF_SOCKET_MAX];
	struct daemonize_args args;
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
		/* -v: every key iostagectld reads, as it will use it. */
		if (args.level >= LOG_LEVEL_DEBUG &&
		    conf_dump(&conf, CONF_SCOPE_CTLD, stdout) < 0) {
			fprintf(stderr, "iostagectld: stdout: %s\n",
				strerror(errno));
			return 1;
		}
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
	if (!args.foreground &&
	    daemonize_begin(&ready_fd, err, sizeof(err)) < 0) {
		log_errorx("%s", err);
		return 1;
	}
	daemonize_signals(&got_signal, &waitmask);
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
		log_errorx("%s; jobs missing a part wait until a restart", err);
	ctld_bw_init(&conf);
	/* Requests are served only once the history is open: clients that
	 * came early waited in the backlog. */
	if (ctld_service_start(err, sizeof(err)) < 0) {
		log_errorx("%s", err);
		partstore_stop();
		history_fini();
		return 1;
	}
	/* /metrics (ControllerMetricsListen): never fatal. */
	ctld_metrics_start(&conf);
	/* Placement and pre-staging go through slurmctld; the service
	 * files and answers without it (logged, retried). */
	if (slurmsched_start(&conf, err, sizeof(err)) < 0)
		log_warningx("%s: no placement nor pre-staging", err);
	/* The pid file sits beside iostaged's socket (SocketPath's
	 * directory, /run/iostage). */
	if (socket_dir(&conf, dir_sock, sizeof(dir_sock)) < 0 ||
	    daemonize_pidfile_write(dir_sock, PIDFILE_NAME, pid_path,
				    sizeof(pid_path)) < 0)
		log_warning("cannot write the pid file beside %s",
			    conf.socket_path);
	log_info("iostagectld %s ready: pid %d, config %s, port %u, history "
		 "%s",
		 IOSTAGE_VERSION, (int)getpid(), conf_abs, ctld_service_port(),
		 dir);
	if (!args.foreground) {
		log_init("iostagectld", true, args.level);
		if (daemonize_ready(ready_fd) < 0)
			log_warning("cannot tell the parent we are ready");
	}

	while (!got_signal)
		sigsuspend(&waitmask);
	log_info("caught %s, shutting down", strsignal(got_signal));
	/* A connection thread still running could be inside the database. */
	ctld_metrics_stop();
	slurmsched_stop();
	partstore_stop();
	if (ctld_service_stop())
		history_fini();
	daemonize_pidfile_remove(pid_path);
	log_info("stopped");
	return 0;
}
