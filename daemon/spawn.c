/* spawn.c - fork, drop every privilege, exec ourselves as the job's user.
 *
 * Why a separate process at all: a copy must happen with the job user's
 * permissions, so that nobody can stage or drain a file they could not read
 * or write themselves, and nothing the user controls can steer root's
 * writes. setfsuid() would be per-thread and easy to get wrong across
 * helper libraries; a process that has fully dropped privileges (setgroups
 * + setresgid + setresuid, verified) cannot do anything the user could not
 * do anyway.
 *
 * Factored out of stage.c so that the stage and drain workers share one
 * audited copy of this code.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "daemon/spawn.h"

#define SPAWN_NGROUPS_MAX 65536 /* the kernel's NGROUPS_MAX */

#ifndef CLOSE_RANGE_CLOEXEC
#define CLOSE_RANGE_CLOEXEC (1U << 2)
#endif

/* /proc/self/exe, opened once by spawn_init: per process, not per agent
 * (every agent of a process re-executes the same binary, and an upgrade
 * on disk must not swap it under a running daemon), so a file-scope
 * variable rather than a field of a struct. */
static int exe_fd = -1;

/* What the child needs, prepared before fork(). */
struct child {
	uid_t uid;
	gid_t gid;
	gid_t *groups;
	size_t ngroups;
	pid_t parent;
	int in_r, out_w;
	const int *pass_fds;
	size_t npass;
	const char *what;
	int exe_fd;   /* what to execute */
	bool outlive; /* no PDEATHSIG, own session */
	char *const *argv;
	char *const *envp;
};

int spawn_init(char *err, size_t errlen)
{
	if (exe_fd >= 0)
		return 0;
	exe_fd = open("/proc/self/exe", O_RDONLY | O_CLOEXEC);
	if (exe_fd < 0) {
		snprintf(err, errlen, "cannot open /proc/self/exe: %s",
			 strerror(errno));
		return -1;
	}
	return 0;
}

void spawn_fini(void)
{
	if (exe_fd >= 0)
		close(exe_fd);
	exe_fd = -1;
}

/* --- the child, between fork and exec ------------------------------------- */

static void child_write(const char *s)
{
	ssize_t ignored = write(1, s, strlen(s));

	(void)ignored;
}

/* One JSON line on stdout, then exit 127. strlen and write are
 * async-signal-safe; WHAT and MSG are ours, not the user's. */
static void __attribute__((noreturn))
child_fail(const struct child *c, const char *msg)
{
	child_write("{\"ok\":false,\"error\":\"");
	child_write(c->what);
	child_write(": ");
	child_write(msg);
	child_write("\"}\n");
	_exit(127);
}

/* Only async-signal-safe calls from here to fexecve. */
static void __attribute__((noreturn)) child_exec(const struct child *c)
{
	struct sigaction dfl;
	sigset_t none;

	int exe, high[SPAWN_PASS_MAX];

	if (dup2(c->out_w, 1) < 0 || dup2(c->in_r, 0) < 0)
		_exit(127);
	/* Move what we keep above the numbers we hand out (3, 4, ...), which
	 * any of them may hold; then give out the passed fds. dup2 clears
	 * FD_CLOEXEC on the copy, so exactly those survive the exec. */
	exe = fcntl(c->exe_fd, F_DUPFD_CLOEXEC, 64);
	if (exe < 0)
		child_fail(c, "cannot keep the executable open");
	for (size_t i = 0; i < c->npass; i++) {
		high[i] = c->pass_fds[i] < 0
			      ? -1
			      : fcntl(c->pass_fds[i], F_DUPFD_CLOEXEC, 64);
		if (c->pass_fds[i] >= 0 && high[i] < 0)
			child_fail(c, "cannot pass a file descriptor");
	}
	for (size_t i = 0; i < c->npass; i++) {
		if (high[i] < 0)
			close(3 + (int)i);
		else if (dup2(high[i], 3 + (int)i) < 0)
			child_fail(c, "cannot pass a file descriptor");
	}
	/* The daemon ignores SIGPIPE and blocks SIGTERM/SIGINT; the worker
	 * should die from them like any process. */
	memset(&dfl, 0, sizeof(dfl));
	dfl.sa_handler = SIG_DFL;
	sigaction(SIGPIPE, &dfl, NULL);
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	/* All our fds are O_CLOEXEC already; this is the safety net for one
	 * a library might have opened without it. */
	(void)syscall(SYS_close_range, 3U + (unsigned)c->npass, ~0U,
		      CLOSE_RANGE_CLOEXEC);

	/* Raw syscalls: glibc's wrappers would try to act on every thread
	 * of the parent, which do not exist in this child. */
	if (syscall(SYS_setgroups, c->ngroups, c->groups) < 0)
		child_fail(c, "cannot set supplementary groups");
	if (syscall(SYS_setresgid, c->gid, c->gid, c->gid) < 0)
		child_fail(c, "cannot set gid");
	if (syscall(SYS_setresuid, c->uid, c->uid, c->uid) < 0)
		child_fail(c, "cannot set uid");
	if (c->uid != 0 &&
	    (syscall(SYS_setuid, 0) != -1 || geteuid() != c->uid ||
	     getuid() != c->uid || getegid() != c->gid))
		child_fail(c, "privileges were not dropped");
	/* Die with the spawning thread; set after setresuid, which clears
	 * it. A child meant to outlive us gets a session of its own. */
	if (c->outlive) {
		if (setsid() < 0)
			child_fail(c, "cannot start a session");
	} else if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0 ||
		   getppid() != c->parent) {
		_exit(127);
	}
	if (chdir("/") < 0)
		child_fail(c, "cannot chdir to /");
	umask(077);
	fexecve(exe, c->argv, c->envp);
	child_fail(c, "cannot execute the program");
}

/* --- the parent ----------------------------------------------------------- */

/* USER's supplementary groups (with GID); caller frees *ret. */
static int user_groups(const char *user, gid_t gid, gid_t **ret, size_t *ret_n)
{
	int n = 32;
	gid_t *groups = NULL;

	for (;;) {
		gid_t *g = realloc(groups, sizeof(gid_t) * (size_t)n);
		int want = n;

		if (!g) {
			free(groups);
			return -1;
		}
		groups = g;
		if (getgrouplist(user, gid, groups, &want) >= 0) {
			*ret = groups;
			*ret_n = (size_t)want;
			return 0;
		}
		if (want <= n || want > SPAWN_NGROUPS_MAX) {
			free(groups);
			errno = E2BIG;
			return -1;
		}
		n = want;
	}
}

int spawn_as_user(uid_t uid, gid_t gid, const char *user, char *const argv[],
		  char *const envp[], const int *pass_fds, size_t npass,
		  const char *what, struct spawn_proc *ret, char *err,
		  size_t errlen)
{
	return spawn_program(NULL, uid, gid, user, argv, envp, pass_fds, npass,
			     what, ret, err, errlen);
}

int spawn_program(const struct spawn_how *how, uid_t uid, gid_t gid,
		  const char *user, char *const argv[], char *const envp[],
		  const int *pass_fds, size_t npass, const char *what,
		  struct spawn_proc *ret, char *err, size_t errlen)
{
	static char *const default_envp[] = {
		"PATH=/usr/sbin:/usr/bin:/sbin:/bin", "LC_ALL=C", NULL
	};
	int inp[2] = { -1, -1 }, outp[2] = { -1, -1 };
	struct child c;
	gid_t *groups = NULL;
	size_t ngroups = 0;
	pid_t pid;
	int saved;

	int exe = how && how->exe_fd >= 0 ? how->exe_fd : exe_fd;

	if (exe < 0 || npass > SPAWN_PASS_MAX) {
		snprintf(err, errlen, "cannot start a %s: %s", what,
			 exe < 0 ? "spawn_init not called"
				 : "too many fds to pass");
		errno = EINVAL;
		return -1;
	}
	if (user_groups(user, gid, &groups, &ngroups) < 0) {
		saved = errno;
		snprintf(err, errlen, "cannot list the groups of user '%s': %s",
			 user, strerror(saved));
		errno = saved;
		return -1;
	}
	if (pipe2(inp, O_CLOEXEC) < 0 || pipe2(outp, O_CLOEXEC) < 0)
		goto fail;
	c = (struct child){
		.uid = uid,
		.gid = gid,
		.groups = groups,
		.ngroups = ngroups,
		.parent = getpid(),
		.in_r = inp[0],
		.out_w = outp[1],
		.pass_fds = pass_fds,
		.npass = npass,
		.what = what,
		.exe_fd = exe,
		.outlive = how && how->outlive,
		.argv = argv,
		.envp = envp ? envp : default_envp,
	};
	pid = fork();
	if (pid < 0)
		goto fail;
	if (pid == 0)
		child_exec(&c);
	close(inp[0]);
	close(outp[1]);
	free(groups);
	ret->pid = pid;
	ret->out = outp[0];
	ret->in = inp[1];
	return 0;
fail:
	saved = errno;
	snprintf(err, errlen, "cannot start a %s: %s", what, strerror(saved));
	for (int i = 0; i < 2; i++) {
		if (inp[i] >= 0)
			close(inp[i]);
		if (outp[i] >= 0)
			close(outp[i]);
	}
	free(groups);
	errno = saved;
	return -1;
}
