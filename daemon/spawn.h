/* spawn.h - run a re-exec of iostaged as a job's user.
 *
 * Every copy iostaged makes on a user's behalf (stage workers, drain
 * workers) runs in a process that has fully dropped root: fork, then in the
 * child setgroups + setresgid + setresuid with raw syscalls (verified: a
 * setuid(0) afterwards must fail), PR_SET_PDEATHSIG, chdir /, umask 077 and
 * fexecve of the daemon's own binary, opened once at start so that an
 * upgrade on disk cannot swap it under a running daemon. The child gets a
 * clean environment and two pipes (its stdin and stdout); stderr is the
 * daemon's.
 *
 * The fork happens in a multi-threaded process: between fork() and
 * fexecve() the child only makes async-signal-safe calls, and everything it
 * needs (group list, argv, envp) is prepared before the fork.
 */
#ifndef IOSTAGE_DAEMON_SPAWN_H
#define IOSTAGE_DAEMON_SPAWN_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/* A running child. */
struct spawn_proc {
	pid_t pid;
	int in;  /* its stdin, our write end (O_CLOEXEC) */
	int out; /* its stdout, our read end (O_CLOEXEC) */
};

/* Open /proc/self/exe for spawn_as_user. Idempotent. 0, or -1 with err. */
int spawn_init(char *err, size_t errlen);

/* Close what spawn_init opened. Safe without spawn_init. */
void spawn_fini(void);

#define SPAWN_PASS_MAX 4

/* Run this binary with ARGV (ARGV[0] is the name it sees, NULL-terminated)
 * and ENVP (NULL: PATH and LC_ALL=C only) as UID:GID with USER's
 * supplementary groups. PASS_FDS (NPASS <= SPAWN_PASS_MAX of them; NULL
 * when NPASS is 0) become the child's fds 3, 4, ... in order; a -1 entry
 * leaves that number closed. Every other fd of ours is closed at exec. WHAT names the child in messages ("drain worker").
 * The child is SIGKILLed when the calling thread exits (PR_SET_PDEATHSIG),
 * so call this from a thread that outlives it. If the child cannot drop its
 * privileges it prints {"ok":false,"error":"WHAT: ..."} and exits 127.
 * Returns 0 with *ret filled, or -1 with errno and one line in err
 * ("cannot start a drain worker: ..."); nothing is left open on failure. */
int spawn_as_user(uid_t uid, gid_t gid, const char *user, char *const argv[],
		  char *const envp[], const int *pass_fds, size_t npass,
		  const char *what, struct spawn_proc *ret, char *err,
		  size_t errlen);

/* What spawn_program runs, and for how long. */
struct spawn_how {
	/* Another program than this binary, opened by the caller (kept
	 * open: an upgrade on disk cannot swap it under a running daemon);
	 * -1: this binary, as spawn_as_user. */
	int exe_fd;
	/* The child outlives the spawning thread and iostaged itself (no
	 * PR_SET_PDEATHSIG; a session of its own, so that a signal to the
	 * daemon's process group does not reach it): a job's dataset view
	 * (view/) serves the job across a restart of iostaged. The caller
	 * reaps it (waitpid) when it ends it; after a restart, init does. */
	bool outlive;
};

/* spawn_as_user with HOW (NULL: this binary, dies with the thread). */
int spawn_program(const struct spawn_how *how, uid_t uid, gid_t gid,
		  const char *user, char *const argv[], char *const envp[],
		  const int *pass_fds, size_t npass, const char *what,
		  struct spawn_proc *ret, char *err, size_t errlen);

#endif /* IOSTAGE_DAEMON_SPAWN_H */
