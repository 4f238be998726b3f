/* drain_watch.c - inotify over each output's tree while the job runs.
 *
 * Apart from the queue and the loop because it is the one part that opens
 * the user's directories as root, and its rules are about that: a
 * directory is opened with O_DIRECTORY | O_NOFOLLOW (never a file), one
 * component at a time from the output's root, and watched through
 * /proc/self/fd/N so that no path is resolved by name; watches stay on the
 * output's file system, DRAIN_WATCH_DEPTH_MAX levels deep and
 * DRAIN_JOB_WATCHES_MAX per job (the final scan catches up with the
 * rest). A file closed after writing or moved in is queued; a directory
 * created or moved in is watched and scanned; one moved out is no longer
 * watched; on IN_Q_OVERFLOW the loop rescans everything. Names the
 * pathsafe rules refuse are left to the final scan, where the worker
 * reads them itself.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/base/log.h"
#include "common/config/pathsafe.h"
#include "daemon/staging/drain_internal.h"

#define DRAIN_MASK                                                             \
	(IN_CLOSE_WRITE | IN_MOVED_TO | IN_MOVED_FROM | IN_CREATE |            \
	 IN_EXCL_UNLINK | IN_ONLYDIR)

static struct drain_watch *watch_find(struct drain *d, int wd)
{
	struct drain_watch *w;

	for (w = d->watches[(unsigned)wd % DRAIN_BUCKETS]; w; w = w->next)
		if (w->wd == wd)
			return w;
	return NULL;
}

static void watch_unlink(struct drain *d, struct drain_watch *w)
{
	struct drain_watch **pp = &d->watches[(unsigned)w->wd % DRAIN_BUCKETS];

	for (; *pp; pp = &(*pp)->next) {
		if (*pp == w) {
			*pp = w->next;
			break;
		}
	}
	if (w->out->job->nwatches)
		w->out->job->nwatches--;
	free(w);
}

/* Remember WD as OUT's directory REL (a newer REL replaces an older one:
 * the directory was moved). */
static void watch_set(int wd, struct dout *o, const char *rel)
{
	struct drain *d = o->job->drain;
	struct drain_watch *w = watch_find(d, wd);
	size_t len = strlen(rel);

	if (w && w->out == o && !strcmp(w->rel, rel))
		return;
	if (w)
		watch_unlink(d, w);
	w = malloc(sizeof(*w) + len + 1);
	if (!w) {
		inotify_rm_watch(d->inotify_fd, wd);
		return;
	}
	w->wd = wd;
	w->out = o;
	memcpy(w->rel, rel, len + 1);
	w->next = d->watches[(unsigned)wd % DRAIN_BUCKETS];
	d->watches[(unsigned)wd % DRAIN_BUCKETS] = w;
	o->job->nwatches++;
}

void drain_watches_drop(struct dout *o, const char *rel)
{
	struct drain *d = o->job->drain;
	size_t len = rel ? strlen(rel) : 0;

	for (size_t b = 0; b < DRAIN_BUCKETS; b++) {
		struct drain_watch *w = d->watches[b], *next;

		for (; w; w = next) {
			next = w->next;
			if (w->out != o)
				continue;
			if (rel &&
			    !(strncmp(w->rel, rel, len) == 0 &&
			      (w->rel[len] == '\0' || w->rel[len] == '/')))
				continue;
			inotify_rm_watch(d->inotify_fd, w->wd);
			watch_unlink(d, w);
		}
	}
}

/* Watch the directory FD (REL below OUT's root) and everything below it.
 * FD is closed. Returns how many entries other than directories were
 * seen, so that the caller knows whether a scan is needed. */
static long watch_tree(struct dout *o, int fd, const char *rel, unsigned depth)
{
	struct djob *dj = o->job;
	char proc[64], child[DRAIN_REL_MAX];
	struct dirent *de;
	struct stat st;
	long files = 0;
	DIR *d;
	int wd;

	if (fstat(fd, &st) < 0 || !S_ISDIR(st.st_mode) || st.st_dev != o->dev) {
		close(fd);
		return 0;
	}
	if (dj->nwatches < DRAIN_JOB_WATCHES_MAX) {
		snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
		wd = inotify_add_watch(dj->drain->inotify_fd, proc, DRAIN_MASK);
		if (wd >= 0)
			watch_set(wd, o, rel);
		else if (!dj->watch_limit_logged) {
			dj->watch_limit_logged = true;
			log_warning("job %u: output '%s': cannot watch a "
				    "directory; what is below it drains at the "
				    "end",
				    dj->id, o->name);
		}
	} else if (!dj->watch_limit_logged) {
		dj->watch_limit_logged = true;
		log_warningx("job %u: more than %d directories under its "
			     "outputs; the rest drain at the end",
			     dj->id, DRAIN_JOB_WATCHES_MAX);
	}
	d = fdopendir(fd);
	if (!d) {
		close(fd);
		return files;
	}
	while ((de = readdir(d))) {
		bool is_dir = de->d_type == DT_DIR;
		int sub, n;

		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if (de->d_type == DT_UNKNOWN) {
			struct stat sst;

			is_dir = fstatat(dirfd(d), de->d_name, &sst,
					 AT_SYMLINK_NOFOLLOW) == 0 &&
				 S_ISDIR(sst.st_mode);
		}
		if (!is_dir) {
			files++;
			continue;
		}
		if (depth + 1 >= DRAIN_WATCH_DEPTH_MAX)
			continue;
		n = rel[0] ? snprintf(child, sizeof(child), "%s/%s", rel,
				      de->d_name)
			   : snprintf(child, sizeof(child), "%s", de->d_name);
		if (n < 0 || (size_t)n >= sizeof(child))
			continue;
		sub = openat(dirfd(d), de->d_name,
			     O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_NONBLOCK |
				 O_CLOEXEC);
		if (sub >= 0)
			files += watch_tree(o, sub, child, depth + 1);
	}
	closedir(d);
	return files;
}

/* Open OUT's directory REL from its root, one component at a time, never
 * following a link. fd or -1. */
static int open_rel(struct dout *o, const char *rel)
{
	char buf[DRAIN_REL_MAX], *comp, *next;
	int fd, sub;

	fd = fcntl(o->root_fd, F_DUPFD_CLOEXEC, 0);
	if (fd < 0 || !rel[0])
		return fd;
	snprintf(buf, sizeof(buf), "%s", rel);
	for (comp = buf; comp; comp = next) {
		next = strchr(comp, '/');
		if (next)
			*next++ = '\0';
		sub = openat(fd, comp,
			     O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_NONBLOCK |
				 O_CLOEXEC);
		close(fd);
		if (sub < 0)
			return -1;
		fd = sub;
	}
	return fd;
}

static void on_event(struct drain *d, const struct inotify_event *ev)
{
	char rel[DRAIN_REL_MAX];
	struct drain_watch *w;
	struct dout *o;
	int n, fd;

	if (ev->mask & IN_Q_OVERFLOW) {
		d->overflowed = true;
		return;
	}
	w = watch_find(d, ev->wd);
	if (!w)
		return;
	if (ev->mask & IN_IGNORED) {
		watch_unlink(d, w); /* the kernel dropped it */
		return;
	}
	o = w->out;
	if (o->job->phase == DRAIN_DONE || ev->len == 0 || !ev->name[0])
		return;
	n = w->rel[0] ? snprintf(rel, sizeof(rel), "%s/%s", w->rel, ev->name)
		      : snprintf(rel, sizeof(rel), "%s", ev->name);
	/* Odd names (control characters, overlong) are left to the final
	 * scan, where the worker reads them itself. */
	if (n < 0 || (size_t)n >= sizeof(rel) ||
	    !pathsafe_is_relative(rel, DRAIN_REL_MAX))
		return;
	if (ev->mask & IN_ISDIR) {
		if (ev->mask & IN_MOVED_FROM) {
			drain_watches_drop(o, rel);
		} else if (ev->mask & (IN_CREATE | IN_MOVED_TO)) {
			fd = open_rel(o, rel);
			if ((fd >= 0 && watch_tree(o, fd, rel, 1) > 0) ||
			    (ev->mask & IN_MOVED_TO))
				drain_enqueue(o, rel, true, false);
		}
	} else if (ev->mask & (IN_CLOSE_WRITE | IN_MOVED_TO)) {
		drain_enqueue(o, rel, false, false);
	}
}

void drain_read_inotify(struct drain *d)
{
	char buf[65536]
	    __attribute__((aligned(__alignof__(struct inotify_event))));

	for (;;) {
		ssize_t n = read(d->inotify_fd, buf, sizeof(buf));
		char *p;

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			if (n < 0 && errno != EAGAIN)
				log_warning("reading inotify events");
			return;
		}
		for (p = buf; p < buf + n;) {
			const struct inotify_event *ev = (const void *)p;

			on_event(d, ev);
			p += sizeof(*ev) + ev->len;
		}
	}
}

void drain_watch_output(struct dout *o)
{
	int fd;

	if (o->root_fd < 0)
		return;
	fd = fcntl(o->root_fd, F_DUPFD_CLOEXEC, 0);
	if (fd >= 0 && watch_tree(o, fd, "", 0) > 0)
		drain_enqueue(o, "", true, false);
}

void drain_rescan_job(struct djob *dj)
{
	for (size_t i = 0; i < dj->nouts; i++) {
		struct dout *o = &dj->outs[i];

		if (o->root_fd < 0)
			continue;
		drain_watch_output(o);
		drain_enqueue(o, "", true, false);
	}
}

void drain_watches_free(struct drain *d)
{
	for (size_t b = 0; b < DRAIN_BUCKETS; b++) {
		struct drain_watch *w, *wn;

		for (w = d->watches[b]; w; w = wn) {
			wn = w->next;
			free(w);
		}
		d->watches[b] = NULL;
	}
}
