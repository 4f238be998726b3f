/* daemonize.h - how iostaged and iostagectld become daemons.
 *
 * Both take the same options and start the same way: SIGTERM/SIGINT
 * only set a flag and are delivered only while the main thread waits for
 * them, the process forks away from its terminal while the original
 * process waits until the daemon says it is ready (MUNGE-style, so
 * `iostaged && iostage status` just works), and a pid file is written
 * whole and removed only if it still names us. Library code: nothing
 * here logs or exits; the mains print the usage and the version.
 */
#ifndef IOSTAGE_DAEMONIZE_H
#define IOSTAGE_DAEMONIZE_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>

#include "common/base/log.h"

/* The options both daemons take: -f/--foreground, -c/--config CONF,
 * -v/--verbose, --check-config, -h/--help, -V/--version. */
struct daemonize_args {
	const char *conf_path; /* DEFAULT_CONF unless -c */
	bool foreground;
	bool check_config;
	enum log_level level; /* INFO, DEBUG with -v */
};

enum daemonize_parsed {
	DAEMONIZE_RUN = 0,
	DAEMONIZE_HELP,    /* -h: print the usage, exit 0 */
	DAEMONIZE_VERSION, /* -V: print the version, exit 0 */
	DAEMONIZE_USAGE,   /* a bad option (getopt said why on stderr) or
			    * an argument (err says which): usage, exit 2 */
};

/* Parse ARGV into *A (from the start: optind is reset). */
enum daemonize_parsed daemonize_parse_args(int argc, char **argv,
					   const char *default_conf,
					   struct daemonize_args *a, char *err,
					   size_t errlen);

/* SIGTERM/SIGINT store their number in *FLAG and are blocked in the
 * calling thread (and every thread it creates later), so they land only
 * while the main thread waits with *RET_WAITMASK (sigsuspend, ppoll):
 * none is missed, none lands in a worker. SIGPIPE and SIGHUP are
 * ignored. */
void daemonize_signals(volatile sig_atomic_t *flag, sigset_t *ret_waitmask);

/* Fork twice and setsid, chdir /. The original process never returns: it
 * waits for one byte on a pipe, 0 from daemonize_ready() (it exits 0) or
 * EOF when the daemon died first (it exits 1; the reason is already on
 * stderr, which the daemon keeps until it is ready). Returns 0 in the
 * daemon with the pipe's write end in *RET_FD, or -1 with errno and err
 * (in whichever process failed: exiting releases the waiting parent). */
int daemonize_begin(int *ret_fd, char *err, size_t errlen);

/* The daemon is serving: stdin/stdout/stderr go to /dev/null and the
 * waiting parent is told (FD is closed). Switch the log to syslog first.
 * 0, or -1 with errno when the parent could not be told. */
int daemonize_ready(int fd);

/* Write our pid to DIR/NAME, whole (a temporary file renamed over it),
 * never through a symlink; DIR is created (0755) if missing. The path is
 * copied to RET_PATH (size PATHLEN) for daemonize_pidfile_remove().
 * 0, or -1 with errno (RET_PATH is then ""). */
int daemonize_pidfile_write(const char *dir, const char *name, char *ret_path,
			    size_t pathlen);

/* Remove PATH if it still names us (a newer daemon's file is left). */
void daemonize_pidfile_remove(const char *path);

#endif /* IOSTAGE_DAEMONIZE_H */
