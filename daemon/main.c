/* main.c - iostaged, the node-local staging daemon.
 *
 * main() reads like the daemon's life: parse the arguments, load the
 * configuration, detach (the parent exits only once the daemon is ready to
 * serve, MUNGE-style, so `iostaged && iostage status` just works), set up
 * the subsystems, serve until SIGTERM/SIGINT, and tear down in reverse.
 *
 * `iostaged --stage-worker ...` is the copy worker that the daemon runs as
 * each job's user (worker.c); it shares the binary so that the daemon can
 * exec exactly itself through an fd opened at start.
 */
#define _GNU_SOURCE
#include <errno.h>
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
#include "common/net/ctlclient.h"
#include "daemon/agent_life.h"
#include "daemon/cluster/cachereport.h"
#include "daemon/cluster/forward.h"
#include "daemon/cluster/parts.h"
#include "daemon/cluster/peer.h"
#include "daemon/jobs.h"
#include "daemon/ops.h"
#include "daemon/server.h"
#include "daemon/spawn.h"
#include "daemon/staging/bwgov.h"
#include "daemon/staging/cache.h"
#include "daemon/staging/drain.h"
#include "daemon/staging/drain_worker.h"
#include "daemon/staging/stage.h"
#include "daemon/staging/tiers.h"
#include "daemon/staging/worker.h"
#include "daemon/telemetry/metrics.h"
#include "daemon/telemetry/stats.h"
#include "daemon/telemetry/telemetry.h"

#define PIDFILE_NAME "iostaged.pid"
#define SHUTDOWN_JOBS_S 15   /* for staging threads to clean up */
#define SHUTDOWN_CLIENTS_S 5 /* for connection threads to end */

/* Per process: this process's configuration and node agent
 * (daemon/agent.h), the signal flag and the pid file's path. */
static struct conf conf;
static struct agent agent;
static volatile sig_atomic_t got_signal;
static char pid_path[CONF_SOCKET_MAX + 32];

static void usage(FILE *f)
{
	fprintf(
	    f,
	    "usage: iostaged [-f] [-c CONF] [-v] [--check-config]\n"
	    "  -f, --foreground    stay in the foreground, log to stderr\n"
	    "  -c, --config CONF   configuration file (default %s)\n"
	    "  -v, --verbose       log debug messages too\n"
	    "      --check-config  validate CONF, print the verdict (with -v,\n"
	    "                      every setting iostaged uses first), exit\n"
	    "      --repair-history  recover a damaged history database "
	    "(daemon stopped)\n"
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
		printf("iostaged %s\n", IOSTAGE_VERSION);
		exit(0);
	case DAEMONIZE_USAGE:
		if (err[0])
			fprintf(stderr, "iostaged: %s\n", err);
		usage(stderr);
		exit(2);
	}
}

int main(int argc, char **argv)
{
	char err[CONF_ERR_MAX], conf_abs[PATH_MAX];
	struct daemonize_args args;
	sigset_t waitmask;
	int ready_fd = -1, rc = 1;
	bool clients_gone = true, staging_gone = true;

	if (argc >= 2 && !strcmp(argv[1], "--stage-worker"))
		return worker_main(argc - 1, argv + 1);
	/* drain.c: outputs copied to the PFS as the job's user. */
	if (argc >= 2 && !strcmp(argv[1], "--drain-worker"))
		return drain_worker_main(argc - 1, argv + 1);
	/* common/history/history_repair.c: recover a damaged node-local
	 * history database (a site without iostagectld), daemon stopped. */
	if (argc >= 2 && !strcmp(argv[1], "--repair-history"))
		return history_repair_main("iostaged", argc - 1, argv + 1);

	parse_args(argc, argv, &args);
	log_init("iostaged", false, args.level);
	conf_set_defaults(&conf);
	if (conf_load(args.conf_path, &conf, err, sizeof(err)) < 0) {
		fprintf(stderr, "iostaged: %s\n", err);
		return 1;
	}
	if (stage_public_account(&conf, NULL, err, sizeof(err)) < 0) {
		fprintf(stderr, "iostaged: %s: %s\n", args.conf_path, err);
		return 1;
	}
	if (args.check_config) {
		/* -v: every key iostaged reads, as it will use it. */
		if (args.level >= LOG_LEVEL_DEBUG &&
		    conf_dump(&conf, CONF_SCOPE_NODE, stdout) < 0) {
			fprintf(stderr, "iostaged: stdout: %s\n",
				strerror(errno));
			return 1;
		}
		/* The plugin preloads it into jobs that ask for deep mode and
		 * runs them untraced without it (spank/trace.c), telling only
		 * slurmd's log: say so where the admin looks first. */
		if (access(conf.trace_library, R_OK) < 0)
			printf("iostaged: %s: note: TraceLibrary=%s: %s (jobs "
			       "in deep mode would run untraced)\n",
			       args.conf_path, conf.trace_library,
			       strerror(errno));
		printf("iostaged: %s: ok\n", args.conf_path);
		return 0;
	}
	if (geteuid() != 0) {
		log_errorx("must run as root (it stages data as each job's "
			   "user)");
		return 1;
	}
	if (!realpath(args.conf_path, conf_abs))
		snprintf(conf_abs, sizeof(conf_abs), "%s", args.conf_path);
	umask(022);

	/* Nothing inherited reaches the workers; a daemon keeps nothing of
	 * its caller's. */
	close_range(3, ~0U, args.foreground ? CLOSE_RANGE_CLOEXEC : 0);
	if (!args.foreground &&
	    daemonize_begin(&ready_fd, err, sizeof(err)) < 0) {
		log_errorx("%s", err);
		return 1;
	}
	daemonize_signals(&got_signal, &waitmask);
	/* The socket is claimed before the job state is loaded: a second
	 * daemon must stop at "already running" before it touches the
	 * first one's jobs. Clients wait in the backlog until we serve. The
	 * cache (made empty over the tiers, handed to whoever uses it) is
	 * reconciled last: its pins are checked against the jobs, and the
	 * builds the journal lists are removed; the views (bind mounts) of
	 * jobs gone while we were down go just before, so that nothing still
	 * shows a version that removes. */
	agent.conf = &conf;
	agent.conf_path = conf_abs;
	if (agent_create(&agent, 0, err, sizeof(err)) < 0 ||
	    spawn_init(err, sizeof(err)) < 0 ||
	    !(agent.server = server_create(&agent, err, sizeof(err))) ||
	    agent_load(&agent, err, sizeof(err)) < 0 ||
	    /* Records for iostagectld: resumes what a crash left. */
	    forward_create(&agent, &agent.forward, err, sizeof(err)) < 0)
		goto fail;
	/* With a service the history is iostagectld's, never opened here;
	 * without one the node keeps its own, as before the service. */
	if (ctl_configured(&conf))
		history_init_remote(&conf);
	else
		history_init(&conf); /* never fatal: staging goes on */
	/* StageBandwidth=; never fatal (NULL: copies run unbounded) */
	agent.bwgov = bwgov_create(&agent, &conf);
	/* logs its own failures; never fatal */
	agent.metrics = metrics_create(&agent, &conf);
	/* node to node; never fatal either (without memory: no channel) */
	agent.peer = peer_create(&agent);
	/* what the cache holds, to iostagectld */
	agent.cachereport = cachereport_create(&agent);
	if (agent.peer) {
		peer_set_prestage(agent.peer, ops_prestage_root);
		peer_start(agent.peer);
	}
	if (daemonize_pidfile_write(server_dir(agent.server), PIDFILE_NAME,
				    pid_path, sizeof(pid_path)) < 0)
		log_warning("cannot write %s/%s", server_dir(agent.server),
			    PIDFILE_NAME);
	log_info("iostaged %s ready: pid %d, config %s, socket %s, %zu tier%s",
		 IOSTAGE_VERSION, (int)getpid(), conf_abs, conf.socket_path,
		 conf.ntiers, conf.ntiers == 1 ? "" : "s");
	if (!args.foreground) {
		log_init("iostaged", true, args.level);
		if (daemonize_ready(ready_fd) < 0)
			log_warning("cannot tell the parent we are ready");
	}

	rc = server_run(agent.server, &got_signal, &waitmask) < 0 ? 1 : 0;
	if (got_signal)
		log_info("caught %s, shutting down", strsignal(got_signal));

	server_close(agent.server);
	peer_stop(agent.peer); /* before what its ops call */
	cachereport_destroy(agent.cachereport);
	agent.cachereport = NULL;
	metrics_destroy(agent.metrics);
	agent.metrics = NULL;
	staging_gone = jobs_shutdown(agent.jobs,
				     "iostaged stopped during staging",
				     SHUTDOWN_JOBS_S);
	bwgov_destroy(agent.bwgov); /* gives the node's lease back */
	agent.bwgov = NULL;
	drain_shutdown(
	    agent.drain); /* wakes finish requests waiting for a drain */
	clients_gone = server_fini(agent.server, SHUTDOWN_CLIENTS_S);
	daemonize_pidfile_remove(pid_path);
	goto out;
fail:
	log_errorx("%s", err);
out:
	server_close(agent.server);
	/* A client thread still running could touch the table. */
	if (clients_gone) {
		history_fini();
		forward_destroy(agent.forward); /* a finish may still put */
		agent.forward = NULL;
		peer_destroy(agent.peer); /* parts and wait called through it */
		agent.peer = NULL;
		server_destroy(agent.server);
		agent.server = NULL;
		/* nor may a staging thread still running (it holds the
		 * table, the stager and the cache) */
		if (staging_gone)
			agent_destroy(&agent);
	}
	spawn_fini();
	if (rc == 0)
		log_info("stopped");
	return rc;
}
