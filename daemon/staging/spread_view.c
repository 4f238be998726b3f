/* spread_view.c - mount a spread dataset's whole tree for a job's tasks
 * (see spread_view.h). */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cJSON.h>

#include "common/base/deadline.h"
#include "common/base/log.h"
#include "common/config/joblayout.h"
#include "common/fs/bindmount.h"
#include "common/fs/fusemount.h"
#include "common/fs/partchunks.h"
#include "common/fs/rmtree.h"
#include "common/net/proto.h"
#include "daemon/agent.h"
#include "daemon/spawn.h"
#include "daemon/staging/cache.h"
#include "daemon/staging/spread_view.h"

#define VIEWS_DIR "views"
#define VIEW_REAP_MS 2000
#define VIEW_READY_MS 10000 /* the view's first answer to the kernel */
#define VIEW_MOUNT_MS 10000 /* the overlay's mount, which asks the view */
/* The kernel's readahead on a view: iostage-view's largest request, so a
 * file's pages are asked a megabyte at a time, not 128 KiB
 * (docs/STAGING.md, "Reading a node's own chunks"). */
#define VIEW_READAHEAD_KIB (FUSEMOUNT_IO_MAX >> 10)

/* ViewProgram, opened for one start (an upgrade on disk takes effect at
 * the next dataset's view; a running view keeps its own). */
static int view_exe(const char *path, char *err, size_t errlen)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		snprintf(err, errlen, "cannot open ViewProgram=%s: %s", path,
			 strerror(errno));
	return fd;
}

/* StateDir/views, made root 0700 if missing; an fd of it or -1. */
static int open_views(const struct agent *a, bool create, char *err,
		      size_t errlen)
{
	int sfd = open(a->conf->state_dir,
		       O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	int vfd = -1;
	struct stat st;

	if (sfd < 0) {
		snprintf(err, errlen, "cannot open %s: %s", a->conf->state_dir,
			 strerror(errno));
		return -1;
	}
	if (create && mkdirat(sfd, VIEWS_DIR, 0700) < 0 && errno != EEXIST) {
		snprintf(err, errlen, "cannot create %s/%s: %s",
			 a->conf->state_dir, VIEWS_DIR, strerror(errno));
		goto out;
	}
	vfd = openat(sfd, VIEWS_DIR,
		     O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (vfd >= 0 && (fstat(vfd, &st) < 0 || st.st_uid != geteuid() ||
			 (st.st_mode & 077))) {
		snprintf(err, errlen, "%s/%s is not %s's alone (mode %04o)",
			 a->conf->state_dir, VIEWS_DIR,
			 geteuid() ? "ours" : "root", st.st_mode & 07777);
		close(vfd);
		vfd = -1;
	} else if (vfd < 0 && (create || errno != ENOENT)) {
		snprintf(err, errlen, "cannot open %s/%s: %s",
			 a->conf->state_dir, VIEWS_DIR, strerror(errno));
	}
out:
	close(sfd);
	return vfd;
}

/* DIRFD/NAME as a fresh directory of ours (0700); an fd of it or -1. */
static int make_dir(int dirfd, const char *name)
{
	if (mkdirat(dirfd, name, 0700) < 0 && errno != EEXIST)
		return -1;
	return openat(dirfd, name,
		      O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
}

int spread_view_stats_path(const struct agent *a, uint32_t jobid, int tier,
			   const char *name, char *buf, size_t len)
{
	char dir[CONF_PATH_MAX + JOBLAYOUT_JOB_NAME_MAX + 16];
	int n;

	if (joblayout_job_dir(a->conf, &a->conf->tiers[tier], jobid, dir,
			      sizeof(dir)) < 0)
		return -1;
	n = snprintf(buf, len, "%s/.iostage-view-%s.json", dir, name);
	return n < 0 || (size_t)n >= len ? -1 : 0;
}

int spread_view_stats_read(const struct agent *a, uint32_t jobid, int tier,
			   const char *name, struct spread_view_stats *ret)
{
	char path[CONF_PATH_MAX + 128], buf[4097];
	struct stat st;
	cJSON *j;
	ssize_t n;
	int fd;

	if (spread_view_stats_path(a, jobid, tier, name, path, sizeof(path)) <
	    0)
		return -1;
	fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return -1;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) ||
	    st.st_size >= (off_t)sizeof(buf)) {
		close(fd);
		return -1;
	}
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n < 0)
		return -1;
	buf[n] = '\0';
	j = cJSON_Parse(buf);
	if (!cJSON_IsObject(j)) {
		cJSON_Delete(j);
		return -1;
	}
	*ret = (struct spread_view_stats){
		.local_bytes = proto_u64(j, "local_bytes"),
		.peer_bytes = proto_u64(j, "peer_bytes"),
		.pfs_bytes = proto_u64(j, "pfs_bytes"),
		.peer_failures = proto_u64(j, "peer_failures"),
	};
	cJSON_Delete(j);
	return 0;
}

/* The view's one line "ready" (it answered the kernel's INIT), within
 * VIEW_READY_MS. The overlay's mount asks the view for its root: a view
 * that does not answer would hold this thread in mount(2), so it is not
 * mounted over until it has. 0, or -1 with err (the caller ends it). */
static int wait_ready(int fd, char *err, size_t errlen)
{
	char line[16];
	size_t got = 0;
	long long end = deadline_now_ms() + VIEW_READY_MS;

	while (got < sizeof(line) - 1) {
		struct pollfd pfd = { .fd = fd, .events = POLLIN };
		long long left = end - deadline_now_ms();
		ssize_t n;

		if (left <= 0 || poll(&pfd, 1, (int)left) == 0) {
			snprintf(err, errlen,
				 "the dataset's view did not start within "
				 "%d s",
				 VIEW_READY_MS / 1000);
			return -1;
		}
		n = read(fd, line + got, sizeof(line) - 1 - got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		got += (size_t)n;
		if (memchr(line, '\n', got))
			break;
	}
	line[got] = '\0';
	if (strcmp(line, "ready\n")) {
		snprintf(err, errlen,
			 "the dataset's view ended before it was ready "
			 "(iostaged's log has its reason)");
		return -1;
	}
	return 0;
}

/* Start iostage-view on FUSE_FD as the user. */
static int spawn_view(struct agent *a, const struct spread_view_args *va,
		      int fuse_fd, pid_t *ret_pid, char *err, size_t errlen)
{
	const struct conf *conf = a->conf;
	char port[16], job[16], local[CONF_PATH_MAX + 96],
	    chunks[CONF_PATH_MAX + 96], stats[CONF_PATH_MAX + 128];
	struct stat st;
	char *argv[32];
	size_t n = 0;
	int pass[2] = { fuse_fd, va->listing_fd };
	struct spawn_how how = { .outlive = true };
	struct spawn_proc p;
	int r;

	if (lseek(va->listing_fd, 0, SEEK_SET) < 0) {
		snprintf(err, errlen, "the listing: %s", strerror(errno));
		return -1;
	}
	how.exe_fd = view_exe(conf->view_program, err, errlen);
	if (how.exe_fd < 0)
		return -1;
	snprintf(port, sizeof(port), "%u", conf->peer_port);
	snprintf(job, sizeof(job), "%" PRIu32, va->jobid);
	argv[n++] = "iostage-view";
	argv[n++] = "--fuse-fd";
	argv[n++] = "3";
	argv[n++] = "--listing-fd";
	argv[n++] = "4";
	argv[n++] = "--src";
	argv[n++] = (char *)va->src;
	argv[n++] = "--plan";
	argv[n++] = (char *)va->plan;
	argv[n++] = "--self";
	argv[n++] = (char *)va->self;
	argv[n++] = "--tier";
	argv[n++] = (char *)conf->tiers[va->tier].name;
	argv[n++] = "--key";
	argv[n++] = (char *)va->key;
	argv[n++] = "--peer-port";
	argv[n++] = port;
	argv[n++] = "--job";
	argv[n++] = job;
	if (va->version) {
		snprintf(local, sizeof(local), "%s/cache/%s.v%u/data",
			 conf->tiers[va->tier].path, va->key, va->version);
		argv[n++] = "--local";
		argv[n++] = local;
		/* the chunks it holds of files too large for one node */
		snprintf(chunks, sizeof(chunks), "%s/cache/%s.v%u/%s",
			 conf->tiers[va->tier].path, va->key, va->version,
			 PARTCHUNKS_DIR);
		if (lstat(chunks, &st) == 0 && S_ISDIR(st.st_mode)) {
			argv[n++] = "--chunks";
			argv[n++] = chunks;
		}
	}
	if (conf->munge_socket[0]) {
		argv[n++] = "--munge-socket";
		argv[n++] = (char *)conf->munge_socket;
	}
	if (spread_view_stats_path(a, va->jobid, va->tier, va->name, stats,
				   sizeof(stats)) == 0) {
		argv[n++] = "--stats";
		argv[n++] = stats;
	}
	argv[n] = NULL;
	r = spawn_program(&how, va->uid, va->gid, va->user, argv, NULL, pass, 2,
			  "dataset view", &p, err, errlen);
	close(how.exe_fd);
	if (r < 0)
		return -1;
	close(p.in);
	*ret_pid = p.pid;
	r = wait_ready(p.out, err, errlen);
	close(p.out);
	return r;
}

/* lowerdir=PART:FUSE over JDIR/NAME.view. */
static int mount_overlay(int jdir, const char *name, int part_fd, int fuse_fd,
			 char *err, size_t errlen)
{
	char vname[CONF_NAME_MAX + 8], target[32], opts[128];
	int tfd, saved;

	snprintf(vname, sizeof(vname), "%s.view", name);
	if (mkdirat(jdir, vname, 0700) < 0 && errno != EEXIST) {
		snprintf(err, errlen, "cannot create %s: %s", vname,
			 strerror(errno));
		return -1;
	}
	tfd = openat(jdir, vname,
		     O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (tfd < 0) {
		snprintf(err, errlen, "cannot open %s: %s", vname,
			 strerror(errno));
		return -1;
	}
	snprintf(target, sizeof(target), "/proc/self/fd/%d", tfd);
	/* Only lower layers: overlayfs is then read-only by itself. */
	snprintf(opts, sizeof(opts),
		 "lowerdir=/proc/self/fd/%d:/proc/self/fd/%d", part_fd,
		 fuse_fd);
	if (mount("iostage", target, "overlay",
		  MS_RDONLY | MS_NOSUID | MS_NODEV, opts) < 0) {
		saved = errno;
		close(tfd);
		snprintf(err, errlen, "cannot mount the overlay of %s: %s",
			 name, strerror(saved));
		errno = saved;
		return -1;
	}
	close(tfd);
	return 0;
}

/* mount_overlay, bounded: the view answered INIT ("ready"), but its
 * user can stop it (SIGSTOP) before the overlay's mount asks it for its
 * root, and that mount would then hold this thread for as long as the
 * view stays stopped. After VIEW_MOUNT_MS its FUSE connection is aborted:
 * the mount fails and so does the dataset, as for a view that never
 * started. */
static int mount_overlay_watched(int jdir, const struct spread_view_args *va,
				 int part_fd, int fuse_fd, char *err,
				 size_t errlen)
{
	struct fusemount_watch *w = NULL;
	int r, e;

	e = fusemount_watch_start(fuse_fd, VIEW_MOUNT_MS, &w);
	if (e < 0) {
		snprintf(err, errlen, "dataset '%s': cannot watch its view: %s",
			 va->name, strerror(-e));
		return -1;
	}
	r = mount_overlay(jdir, va->name, part_fd, fuse_fd, err, errlen);
	if (fusemount_watch_stop(w)) {
		snprintf(err, errlen,
			 "dataset '%s': its view did not answer the overlay's "
			 "mount within %d s (stopped?); its connection was "
			 "aborted",
			 va->name, VIEW_MOUNT_MS / 1000);
		return -1;
	}
	return r;
}

int spread_view_start(struct agent *a, const struct spread_view_args *va,
		      pid_t *ret_pid, char *err, size_t errlen)
{
	char jname[16], fname[CONF_NAME_MAX + 8], vname[CONF_NAME_MAX + 8],
	    why[CONF_ERR_MAX];
	int views = -1, jdir = -1, dev = -1, mnt = -1, part = -1, top = -1;
	pid_t pid = 0;
	int r = -1;

	views = open_views(a, true, err, errlen);
	if (views < 0)
		return -1;
	snprintf(jname, sizeof(jname), "%" PRIu32, va->jobid);
	snprintf(fname, sizeof(fname), "%s.fuse", va->name);
	snprintf(vname, sizeof(vname), "%s.view", va->name);
	jdir = make_dir(views, jname);
	if (jdir < 0) {
		snprintf(err, errlen, "cannot make %s/%s/%s: %s",
			 a->conf->state_dir, VIEWS_DIR, jname, strerror(errno));
		goto out;
	}
	/* A view left by an earlier attempt of this job goes first. */
	bindmount_detach_at(jdir, vname, NULL, 0);
	bindmount_detach_at(jdir, fname, NULL, 0);
	if (mkdirat(jdir, fname, 0700) < 0 && errno != EEXIST) {
		snprintf(err, errlen, "cannot create %s: %s", fname,
			 strerror(errno));
		goto out;
	}
	mnt = openat(jdir, fname,
		     O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (mnt < 0)
		snprintf(why, sizeof(why), "cannot open %s: %s", fname,
			 strerror(errno));
	dev = mnt < 0 ? -1
		      : fusemount_at(mnt, va->uid, va->gid, why, sizeof(why));
	if (mnt >= 0)
		close(mnt);
	mnt = -1;
	if (dev < 0) {
		snprintf(err, errlen, "dataset '%s': %s", va->name, why);
		goto out;
	}
	if (spawn_view(a, va, dev, &pid, err, errlen) < 0)
		goto fail;
	/* Ours goes: once the view's copy is closed too (it ended), every
	 * request fails at once instead of waiting for a server. */
	close(dev);
	dev = -1;
	mnt = openat(jdir, fname,
		     O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (mnt < 0) {
		snprintf(err, errlen, "cannot open %s: %s", fname,
			 strerror(errno));
		goto fail;
	}
	/* a speed, not a need: the view reads the same at 128 KiB */
	if (fusemount_readahead(mnt, VIEW_READAHEAD_KIB, why, sizeof(why)) < 0)
		log_warningx("dataset '%s': %s", va->name, why);
	if (va->version) {
		part = cache_open_version_data(a->cache, va->tier, va->key,
					       va->version);
		if (part < 0) {
			snprintf(err, errlen, "cannot open %s.v%u/data: %s",
				 va->key, va->version, strerror(errno));
			goto fail;
		}
	}
	/* Nothing held here (the plan gave this node nothing): the FUSE
	 * view alone, with no overlay over it. */
	if (part >= 0 &&
	    mount_overlay_watched(jdir, va, part, mnt, err, errlen) < 0)
		goto fail;
	top = openat(jdir, part >= 0 ? vname : fname,
		     O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (top < 0 || cache_mount_job_fd(a->cache, va->tier, va->jobid,
					  va->name, top, err, errlen) < 0) {
		if (top < 0)
			snprintf(err, errlen, "cannot open %s: %s", vname,
				 strerror(errno));
		goto fail;
	}
	*ret_pid = pid;
	pid = 0;
	r = 0;
	goto out;
fail:
	bindmount_detach_at(jdir, vname, NULL, 0);
	bindmount_detach_at(jdir, fname, NULL, 0);
out:
	if (pid)
		spread_view_reap(pid);
	if (top >= 0)
		close(top);
	if (part >= 0)
		close(part);
	if (mnt >= 0)
		close(mnt);
	if (dev >= 0)
		close(dev);
	if (jdir >= 0)
		close(jdir);
	close(views);
	return r;
}

int spread_view_stop(struct agent *a, uint32_t jobid, char *err, size_t errlen)
{
	char jname[16], why[CONF_ERR_MAX];
	int views, jdir, r = 0;

	views = open_views(a, false, why, sizeof(why));
	if (views < 0)
		return 0; /* no view was ever made here */
	snprintf(jname, sizeof(jname), "%" PRIu32, jobid);
	jdir = openat(views, jname,
		      O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (jdir < 0) {
		close(views);
		return 0;
	}
	if (bindmount_detach_under(jdir, NULL, NULL, why, sizeof(why)) < 0 ||
	    rmtree_at(views, jname, why, sizeof(why)) < 0) {
		snprintf(err, errlen, "job %" PRIu32 ": its dataset views: %s",
			 jobid, why);
		r = -1;
	}
	close(jdir);
	close(views);
	return r;
}

void spread_view_reap(pid_t pid)
{
	struct timespec ts = { 0, 50 * 1000000L };

	if (pid <= 0)
		return;
	for (int waited = 0; waited < VIEW_REAP_MS; waited += 50) {
		pid_t w = waitpid(pid, NULL, WNOHANG);

		if (w == pid || (w < 0 && errno == ECHILD))
			return;
		nanosleep(&ts, NULL);
	}
	/* Ours, not yet reaped: the pid cannot have been reused. */
	kill(pid, SIGKILL);
	while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
		;
}

unsigned spread_view_stale(struct agent *a,
			   bool (*job_known)(void *arg, uint32_t id), void *arg)
{
	char why[CONF_ERR_MAX];
	unsigned n = 0;
	int views = open_views(a, false, why, sizeof(why));
	DIR *d;
	struct dirent *e;

	if (views < 0)
		return 0;
	d = fdopendir(views);
	if (!d) {
		close(views);
		return 0;
	}
	while ((e = readdir(d)) != NULL) {
		char *end;
		unsigned long id;

		if (e->d_name[0] == '.')
			continue;
		errno = 0;
		id = strtoul(e->d_name, &end, 10);
		if (errno || *end || id > UINT32_MAX ||
		    job_known(arg, (uint32_t)id))
			continue;
		if (spread_view_stop(a, (uint32_t)id, why, sizeof(why)) < 0)
			log_warningx("%s", why);
		else
			n++;
	}
	closedir(d);
	if (n)
		log_warningx("unmounted the spread dataset views of %u job%s "
			     "no longer known",
			     n, n == 1 ? "" : "s");
	return n;
}
