/* view_fixture.h - a real iostage-view for the unit tests that read
 * through one (tests/unit/check_view.c, check_localread.c): the FUSE
 * mount made as root and the program started on it as
 * VIEW_FIXTURE_USER, with the fds it inherits, as iostaged starts it
 * (daemon/staging/spread_view.c). The test program's path is
 * VIEW_TEST_PROGRAM (the Makefile's). Needs root, but for the listing
 * (view_fixture_walk). Static inline, as the other fixtures. */
#ifndef IOSTAGE_TESTS_VIEW_FIXTURE_H
#define IOSTAGE_TESTS_VIEW_FIXTURE_H

#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <check.h>

#include "common/fs/copyengine.h"
#include "common/fs/fusemount.h"
#include "common/fs/manifest.h"
#include "tests/unit/tmp_fixture.h"

#define VIEW_FIXTURE_USER 65534 /* the job's user: nobody */

/* A root test that fails ends its process (Check's fork mode) before
 * its checked teardown unmounts anything, and a view or overlay left
 * mounted would outlive the run. So every test directory of a run is
 * named "/tmp/NAME.PID." plus a random tail, PID the test runner's, and
 * the runner's unchecked teardown detaches whatever is still mounted
 * under them and removes them: view_fixture_run_begin (unchecked setup,
 * in the runner), view_fixture_mkdtemp (in a test's setup),
 * view_fixture_run_end (unchecked teardown). */
static char view_fixture_prefix[64];

static inline void view_fixture_run_begin(const char *name)
{
	snprintf(view_fixture_prefix, sizeof(view_fixture_prefix),
		 "/tmp/%s.%ld.", name, (long)getpid());
}

/* A new test directory of this run into BUF (mode 0755). */
static inline void view_fixture_mkdtemp(char *buf, size_t len)
{
	ck_assert_msg(view_fixture_prefix[0], "view_fixture_run_begin first");
	ck_assert_int_lt(snprintf(buf, len, "%sXXXXXX", view_fixture_prefix),
			 (int)len);
	ck_assert_ptr_nonnull(mkdtemp(buf));
	ck_assert_int_eq(chmod(buf, 0755), 0);
}

/* What the view is started with (its arguments of the same names). */
struct view_fixture {
	const char *mnt;     /* the mount point */
	const char *listing; /* the file the listing is written to */
	const struct manifest *list;
	const char *src, *plan, *key, *local, *stats;
	const char *chunks; /* NULL: no --chunks */
	unsigned peer_port;
};

/* The listing of the tree at DIR, as a worker's walk makes it: what
 * iostaged hands the view. */
static inline struct manifest *view_fixture_walk(const char *dir)
{
	struct copyengine_opts o = { 0 };
	struct copyengine *ce;
	struct manifest *m;
	char err[512];

	ck_assert_msg(copyengine_walk(dir, &o, &ce, err, sizeof(err)) == 0,
		      "walk %s: %s", dir, err);
	ck_assert_int_eq(copyengine_manifest(ce, &m), 0);
	copyengine_destroy(ce);
	return m;
}

/* A loopback port nothing listens on: the other nodes' bytes then come
 * from the PFS. */
static inline unsigned view_fixture_dead_port(void)
{
	struct sockaddr_in sin = { .sin_family = AF_INET };
	socklen_t sl = sizeof(sin);
	int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	ck_assert_int_ge(s, 0);
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	ck_assert_int_eq(bind(s, (struct sockaddr *)&sin, sl), 0);
	ck_assert_int_eq(getsockname(s, (struct sockaddr *)&sin, &sl), 0);
	close(s);
	return ntohs(sin.sin_port);
}

/* Mount V->mnt and start the view on it; its pid. The mount answers
 * once this returns (the stat waits for the program's INIT). */
static inline pid_t view_fixture_start(const struct view_fixture *v)
{
	char fusefd[16], listfd[16], portarg[16], err[256];
	struct stat st;
	int dir, fd, lfd;
	pid_t pid;

	lfd = open(v->listing, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	ck_assert_int_ge(lfd, 0);
	ck_assert_int_eq(manifest_write(v->list, lfd), 0);
	ck_assert_int_eq(lseek(lfd, 0, SEEK_SET), 0);
	dir = open(v->mnt, O_PATH | O_DIRECTORY | O_CLOEXEC);
	ck_assert_int_ge(dir, 0);
	fd = fusemount_at(dir, VIEW_FIXTURE_USER, VIEW_FIXTURE_USER, err,
			  sizeof(err));
	ck_assert_msg(fd >= 0, "fusemount_at: %s", err);
	close(dir);
	snprintf(fusefd, sizeof(fusefd), "%d", fd);
	snprintf(listfd, sizeof(listfd), "%d", lfd);
	snprintf(portarg, sizeof(portarg), "%u", v->peer_port);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		/* as iostaged does: the fds kept, the job's user */
		if (fcntl(fd, F_SETFD, 0) < 0 || fcntl(lfd, F_SETFD, 0) < 0 ||
		    setgroups(0, NULL) < 0 || setgid(VIEW_FIXTURE_USER) < 0 ||
		    setuid(VIEW_FIXTURE_USER) < 0)
			_exit(99);
		/* without chunks the list ends where "--chunks" would be */
		execl(VIEW_TEST_PROGRAM, "iostage-view", "--fuse-fd", fusefd,
		      "--listing-fd", listfd, "--src", v->src, "--plan",
		      v->plan, "--self", "me", "--tier", "nvme", "--key",
		      v->key, "--peer-port", portarg, "--job", "42", "--local",
		      v->local, "--stats", v->stats,
		      v->chunks ? "--chunks" : (char *)NULL, v->chunks,
		      (char *)NULL);
		_exit(98);
	}
	/* Ours closed: a program that dies ends the connection, so the
	 * test fails instead of hanging on the mount. */
	close(fd);
	close(lfd);
	ck_assert_msg(stat(v->mnt, &st) == 0, "stat %s: %s", v->mnt,
		      strerror(errno));
	return pid;
}

/* PID's exit status within 10 s (128 + the signal that ended it), or
 * -1: it was still running, and is killed. */
static inline int view_fixture_wait(pid_t pid)
{
	int status;

	for (int i = 0; i < 200; i++) {
		if (waitpid(pid, &status, WNOHANG) == pid)
			return WIFEXITED(status) ? WEXITSTATUS(status)
						 : 128 + WTERMSIG(status);
		usleep(50000);
	}
	kill(pid, SIGKILL);
	waitpid(pid, &status, 0);
	return -1;
}

/* A figure of the view's stats TEXT, or -1 when it has none. */
static inline long long view_fixture_figure(const char *text, const char *name)
{
	char k[64];
	const char *at;

	snprintf(k, sizeof(k), "\"%s\":", name);
	at = strstr(text, k);
	return at ? atoll(at + strlen(k)) : -1;
}

/* Every mount under this run's test directories detached (the last
 * mounted first: an overlay before the view under it), then the
 * directories removed (tmp_remove, which stops at a mount point). A view
 * whose mount goes ends by itself. */
static inline void view_fixture_run_end(void)
{
	char line[4096], *mounts[64], path[PATH_MAX], err[256];
	size_t plen = strlen(view_fixture_prefix), n = 0;
	FILE *f;
	DIR *d;
	struct dirent *e;

	if (!plen)
		return;
	f = fopen("/proc/self/mountinfo", "re");
	while (f && n < 64 && fgets(line, sizeof(line), f)) {
		char *save = NULL, *tok = strtok_r(line, " ", &save);

		/* the fifth field is the mount point */
		for (int k = 1; tok && k < 5; k++)
			tok = strtok_r(NULL, " ", &save);
		if (tok && strncmp(tok, view_fixture_prefix, plen) == 0)
			mounts[n++] = strdup(tok);
	}
	if (f)
		fclose(f);
	while (n--) {
		if (mounts[n])
			umount2(mounts[n], MNT_DETACH);
		free(mounts[n]);
	}
	d = opendir("/tmp");
	while (d && (e = readdir(d))) {
		if (strncmp(e->d_name, view_fixture_prefix + 5, plen - 5) != 0)
			continue;
		snprintf(path, sizeof(path), "/tmp/%s", e->d_name);
		tmp_remove(path, err, sizeof(err));
	}
	if (d)
		closedir(d);
}

#endif /* IOSTAGE_TESTS_VIEW_FIXTURE_H */
