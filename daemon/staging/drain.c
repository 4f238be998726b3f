/* drain.c - outputs: watched while the job runs, drained to the PFS by a
 * worker running as the user, the rest at finish. See drain.h.
 *
 * One thread (the loop) owns inotify and every drain worker: it polls the
 * inotify fd, an eventfd that other threads use to wake it, and the stdout
 * of each worker. Per output it keeps a queue of relative paths (files to
 * copy, directories to scan) and sends the worker one command at a time, so
 * the worker's stdin never holds more than one line and our writes never
 * block; the "done" line that ends each command frees the slot. Which phase
 * a result is counted in (during the run, at the end) depends only on when
 * the loop reads it: the end phase starts in the loop, after it has read
 * what the workers and inotify had already reported.
 *
 * What root does in the user's directories: mkdirat/openat with O_NOFOLLOW
 * from the root-owned TIER/jobs fd to create out/NAME; opening directories
 * (O_DIRECTORY | O_NOFOLLOW, never a file) and reading their entries to add
 * watches, through /proc/self/fd/N so no path is resolved by name; and,
 * when results must be kept, one renameat of TIER/jobs/J/out into
 * TIER/jobs/.undrained. Every file is opened by the worker, as the user.
 *
 * Threads that call in (stage_start, finish, status) only change the
 * table under drain_lock and wake the loop; finish then waits on
 * drain_cond until the loop marks the job done or the deadline passes.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/inotify.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/config/joblayout.h"
#include "common/base/jsonbuf.h"
#include "common/base/log.h"
#include "common/net/proto.h"
#include "common/config/pathsafe.h"
#include "common/config/profile.h"
#include "common/telemetry/telrec.h"
#include "common/base/units.h"
#include "daemon/agent_bridge.h"
#include "daemon/staging/drain.h"
#include "daemon/fsutil.h"
#include "daemon/spawn.h"
#include "daemon/staging/tiers.h"

#define DRAIN_SETTLE_MS 500        /* a closed file waits this long */
#define DRAIN_QUEUE_MAX 4096       /* per output; beyond: one full scan */
#define DRAIN_REL_MAX 4096         /* relative paths we pass on */
#define DRAIN_WATCH_DEPTH_MAX 64   /* directory levels watched */
#define DRAIN_JOB_WATCHES_MAX 16384 /* beyond: the final scan catches up */
#define DRAIN_LINE_MAX 65536       /* a worker output line */
#define DRAIN_RESTARTS_MAX 3       /* worker crashes per output */
#define DRAIN_ERRORS_LOGGED 5      /* per job; the rest are counted */
#define DRAIN_RECORD_EVERY_S 5     /* record rewrite while running */
#define DRAIN_RECORD_KEEP_S (30 * 86400)
#define DRAIN_RECORD_MAX (256 * 1024)
#define DRAIN_ABANDON_WAIT_S 10    /* for the loop to kill workers */
#define DRAIN_BUCKETS 1024         /* watch descriptors hash */
#define DRAIN_UNDRAINED ".undrained"
/* While the job runs, its drain worker yields the CPU to the job: a
 * checkpoint write(2) is time the job is blocked, the drain only delays
 * when an earlier file is safe. Measured on the remote-PFS bench (2 shared
 * cores): during the third 1 GiB checkpoint the writer got 2.1 s of CPU in
 * 6.2 s while the drain's copy (worker, PFS client and server) took 2.5 s.
 * At the end (the Epilog waits) the worker is back at 0. */
#define DRAIN_RUN_NICE 10
#define DRAIN_MASK                                                        \
	(IN_CLOSE_WRITE | IN_MOVED_TO | IN_MOVED_FROM | IN_CREATE |       \
	 IN_EXCL_UNLINK | IN_ONLYDIR)

enum drain_phase {
	DRAIN_RUNNING = 0,
	DRAIN_ENDING,
	DRAIN_DONE,
};

static const char *const phase_names[] = {
	[DRAIN_RUNNING] = "running",
	[DRAIN_ENDING] = "ending",
	[DRAIN_DONE] = "done",
};

/* A queued command: copy the file REL, or scan the directory REL. */
struct item {
	struct item *next;
	bool scan;
	bool final; /* the end phase's scan of everything */
	struct timespec ready;
	char rel[];
};

struct djob;

/* One output of a job. */
struct dout {
	struct djob *job;
	char name[PROFILE_NAME_MAX];
	char local[CONF_PATH_MAX + 64]; /* TIER/jobs/J/out/NAME */
	char pfs[CONF_PATH_MAX];
	int tier;
	int root_fd;        /* out/NAME, for watching; -1 if not watched */
	dev_t dev;          /* its file system: watches do not leave it */
	/* the worker */
	pid_t pid;          /* 0: none running */
	int in, out;        /* its stdin (ours to write), stdout */
	char *lbuf;         /* partial output line */
	size_t llen;
	bool busy;          /* a command is in flight */
	bool busy_final;    /* ... and it is the final scan */
	bool stdin_closed;  /* we told it to exit */
	unsigned restarts;
	bool failed;        /* no worker can run: what is left is not saved */
	char fail_reason[CONF_ERR_MAX];
	/* the queue */
	struct item *head, *tail;
	size_t nqueued;
	bool final_done;    /* the final scan completed */
	uint64_t final_failed;
	bool done;          /* end phase over for this output */
	/* what was drained (docs/RECORDS.md outputs[]) */
	uint64_t during_bytes, during_files, end_bytes, end_files;
	uint64_t failed_files;
	uint64_t size_hist[TELREC_NBUCKETS]; /* drained files by size */
	uint64_t max_file;  /* the largest file drained: the striping rule */
};

struct djob {
	uint32_t id;
	uid_t uid;
	gid_t gid;
	char user[JOBS_USER_MAX];
	size_t nouts;
	struct dout outs[PROFILE_MAX_OUTPUTS];
	enum drain_phase phase;
	bool setup;          /* the loop must set up its watches */
	bool end_requested;
	bool abandon;        /* deadline passed: kill, stop, keep the rest */
	bool forget;         /* no finish will come: free when done */
	bool timed_out;
	bool finalizing, finalized;
	int final_rc;
	char final_err[CONF_ERR_MAX];
	unsigned refs;       /* drain_finish callers holding it */
	unsigned nwatches;
	bool watch_limit_logged, queue_full_logged;
	struct timespec end_start;
	double end_seconds;
	uint64_t during_bytes, during_files, end_bytes, end_files;
	uint64_t failed_files, left_files;
	unsigned errors_logged;
	char kept[2 * CONF_PATH_MAX];
	bool dirty;
	time_t recorded;
	struct djob *next;
};

struct watch {
	int wd;
	struct dout *out;
	struct watch *next;
	char rel[];
};

/* A worker we killed and still have to reap. */
struct zombie {
	pid_t pid;
	struct zombie *next;
};

static const struct conf *drain_conf;
static pthread_mutex_t drain_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t drain_cond;
static pthread_t drain_thread;
static bool thread_started, stopping;
static int inotify_fd = -1, wake_fd = -1, record_fd = -1;
static struct djob *djobs;
static struct watch *watches[DRAIN_BUCKETS];
static struct zombie *zombies;
static bool overflowed;

/* --- small helpers ---------------------------------------------------------- */

static void wake_loop(void)
{
	uint64_t one = 1;
	ssize_t ignored = write(wake_fd, &one, sizeof(one));

	(void)ignored;
}

static long ms_until(const struct timespec *t)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	return (long)(t->tv_sec - now.tv_sec) * 1000 +
	       (t->tv_nsec - now.tv_nsec) / 1000000;
}

/* Make S one printable line in place (worker output is untrusted). */
static void sanitize(char *s)
{
	for (; *s; s++)
		if ((unsigned char)*s < 0x20 || *s == 0x7f)
			*s = '?';
}

/* "3 files (1.2 GiB)", "1 file (10 MiB)", "no files". */
static char *files_str(uint64_t files, uint64_t bytes, char *buf, size_t len)
{
	char b[32];

	if (files == 0 && bytes == 0)
		snprintf(buf, len, "no files");
	else
		snprintf(buf, len, "%" PRIu64 " file%s (%s)", files,
			 files == 1 ? "" : "s", units_bytes(bytes, b, sizeof(b)));
	return buf;
}

static struct djob *find_locked(uint32_t id)
{
	struct djob *dj;

	for (dj = djobs; dj; dj = dj->next)
		if (dj->id == id)
			return dj;
	return NULL;
}

static void unlink_locked(struct djob *dj)
{
	struct djob **pp;

	for (pp = &djobs; *pp; pp = &(*pp)->next) {
		if (*pp == dj) {
			*pp = dj->next;
			dj->next = NULL;
			return;
		}
	}
}

static void queue_clear(struct dout *o)
{
	struct item *it, *next;

	for (it = o->head; it; it = next) {
		next = it->next;
		free(it);
	}
	o->head = o->tail = NULL;
	o->nqueued = 0;
}

static void djob_free(struct djob *dj)
{
	size_t i;

	if (!dj)
		return;
	for (i = 0; i < dj->nouts; i++) {
		queue_clear(&dj->outs[i]);
		free(dj->outs[i].lbuf);
		if (dj->outs[i].root_fd >= 0)
			close(dj->outs[i].root_fd);
	}
	free(dj);
}

/* --- watches ----------------------------------------------------------------- */

static struct watch *watch_find(int wd)
{
	struct watch *w;

	for (w = watches[(unsigned)wd % DRAIN_BUCKETS]; w; w = w->next)
		if (w->wd == wd)
			return w;
	return NULL;
}

static void watch_unlink(struct watch *w)
{
	struct watch **pp = &watches[(unsigned)w->wd % DRAIN_BUCKETS];

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
	struct watch *w = watch_find(wd);
	size_t len = strlen(rel);

	if (w && w->out == o && !strcmp(w->rel, rel))
		return;
	if (w)
		watch_unlink(w);
	w = malloc(sizeof(*w) + len + 1);
	if (!w) {
		inotify_rm_watch(inotify_fd, wd);
		return;
	}
	w->wd = wd;
	w->out = o;
	memcpy(w->rel, rel, len + 1);
	w->next = watches[(unsigned)wd % DRAIN_BUCKETS];
	watches[(unsigned)wd % DRAIN_BUCKETS] = w;
	o->job->nwatches++;
}

/* Stop watching OUT's directory REL and everything below it; with REL
 * NULL, all of OUT. */
static void watches_drop(struct dout *o, const char *rel)
{
	size_t len = rel ? strlen(rel) : 0;

	for (size_t b = 0; b < DRAIN_BUCKETS; b++) {
		struct watch *w = watches[b], *next;

		for (; w; w = next) {
			next = w->next;
			if (w->out != o)
				continue;
			if (rel && !(strncmp(w->rel, rel, len) == 0 &&
				     (w->rel[len] == '\0' || w->rel[len] == '/')))
				continue;
			inotify_rm_watch(inotify_fd, w->wd);
			watch_unlink(w);
		}
	}
}

/* Watch the directory FD (REL below OUT's root) and everything below it.
 * FD is closed. Returns how many entries other than directories were
 * seen, so that the caller knows whether a scan is needed. */
static long watch_tree(struct dout *o, int fd, const char *rel,
		       unsigned depth)
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
		wd = inotify_add_watch(inotify_fd, proc, DRAIN_MASK);
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

/* --- queue --------------------------------------------------------------------- */

/* Does the queued scan IT cover REL? */
static bool covers(const struct item *it, const char *rel)
{
	size_t len = strlen(it->rel);

	if (!it->scan || it->final)
		return false;
	if (len == 0)
		return true;
	return strncmp(rel, it->rel, len) == 0 &&
	       (rel[len] == '\0' || rel[len] == '/');
}

static void enqueue(struct dout *o, const char *rel, bool scan, bool final)
{
	struct djob *dj = o->job;
	struct item *it;
	size_t len = strlen(rel);

	if (o->failed || o->done)
		return;
	if (!final) {
		for (it = o->head; it; it = it->next)
			if ((it->scan == scan && !it->final &&
			     !strcmp(it->rel, rel)) ||
			    covers(it, rel))
				return;
		if (o->nqueued >= DRAIN_QUEUE_MAX) {
			/* A burst: one scan replaces the lot. */
			if (!dj->queue_full_logged) {
				dj->queue_full_logged = true;
				log_info("job %u: output '%s': more than %d "
					 "files waiting; scanning instead",
					 dj->id, o->name, DRAIN_QUEUE_MAX);
			}
			queue_clear(o);
			rel = "";
			len = 0;
			scan = true;
		}
	}
	it = malloc(sizeof(*it) + len + 1);
	if (!it) {
		log_errorx("job %u: out of memory queueing an output", dj->id);
		return;
	}
	it->next = NULL;
	it->scan = scan;
	it->final = final;
	memcpy(it->rel, rel, len + 1);
	clock_gettime(CLOCK_MONOTONIC, &it->ready);
	if (!final) {
		it->ready.tv_nsec += (long)DRAIN_SETTLE_MS * 1000000L;
		it->ready.tv_sec += it->ready.tv_nsec / 1000000000L;
		it->ready.tv_nsec %= 1000000000L;
	}
	if (o->tail)
		o->tail->next = it;
	else
		o->head = it;
	o->tail = it;
	o->nqueued++;
	dj->dirty = true;
}

/* --- records (StateDir/drain/J.json) ------------------------------------------ */

static uint64_t backlog(const struct djob *dj)
{
	uint64_t n = 0;

	for (size_t i = 0; i < dj->nouts; i++)
		n += dj->outs[i].nqueued + (dj->outs[i].busy ? 1 : 0);
	return n;
}

static void add_counters(cJSON *o, const struct djob *dj)
{
	cJSON_AddStringToObject(o, "phase", phase_names[dj->phase]);
	cJSON_AddNumberToObject(o, "during_bytes", (double)dj->during_bytes);
	cJSON_AddNumberToObject(o, "during_files", (double)dj->during_files);
	cJSON_AddNumberToObject(o, "end_bytes", (double)dj->end_bytes);
	cJSON_AddNumberToObject(o, "end_files", (double)dj->end_files);
	cJSON_AddNumberToObject(o, "end_seconds", dj->end_seconds);
	cJSON_AddNumberToObject(o, "backlog_files", (double)backlog(dj));
	cJSON_AddNumberToObject(o, "failed_files", (double)dj->failed_files);
	cJSON_AddBoolToObject(o, "timed_out", dj->timed_out);
	if (dj->timed_out)
		cJSON_AddNumberToObject(o, "left_files", (double)dj->left_files);
	if (dj->kept[0])
		cJSON_AddStringToObject(o, "kept", dj->kept);
	else
		cJSON_AddNullToObject(o, "kept");
}

/* One output's figures, as RECORDS.md's outputs[] names them. */
static void add_out_counters(cJSON *e, const struct dout *o)
{
	cJSON_AddNumberToObject(e, "files",
				(double)(o->during_files + o->end_files));
	cJSON_AddNumberToObject(e, "bytes",
				(double)(o->during_bytes + o->end_bytes));
	cJSON_AddNumberToObject(e, "during_files", (double)o->during_files);
	cJSON_AddNumberToObject(e, "during_bytes", (double)o->during_bytes);
	cJSON_AddNumberToObject(e, "end_files", (double)o->end_files);
	cJSON_AddNumberToObject(e, "end_bytes", (double)o->end_bytes);
	cJSON_AddNumberToObject(e, "failed_files", (double)o->failed_files);
	cJSON_AddItemToObject(e, "size_hist",
			      telrec_size_hist_json(o->size_hist));
	cJSON_AddNumberToObject(e, "max_file_bytes", (double)o->max_file);
}

/* Write DJ's record; under drain_lock (small, local file). */
static void record_write_locked(struct djob *dj)
{
	cJSON *o = cJSON_CreateObject(), *outs;
	char name[32], *text = NULL;

	if (record_fd < 0 || !o)
		goto out;
	cJSON_AddNumberToObject(o, "job", dj->id);
	cJSON_AddStringToObject(o, "user", dj->user);
	cJSON_AddNumberToObject(o, "uid", dj->uid);
	cJSON_AddNumberToObject(o, "updated", (double)time(NULL));
	add_counters(o, dj);
	outs = cJSON_AddArrayToObject(o, "outputs");
	for (size_t i = 0; outs && i < dj->nouts; i++) {
		cJSON *e = cJSON_CreateObject();

		if (!e)
			break;
		cJSON_AddStringToObject(e, "name", dj->outs[i].name);
		cJSON_AddStringToObject(e, "local", dj->outs[i].local);
		cJSON_AddStringToObject(e, "path", dj->outs[i].pfs);
		add_out_counters(e, &dj->outs[i]);
		cJSON_AddItemToArray(outs, e);
	}
	text = jsonbuf_dup(o);
	if (!text)
		goto out;
	snprintf(name, sizeof(name), "%" PRIu32 ".json", dj->id);
	if (fsutil_write_atomic(record_fd, name, text, strlen(text), 0600) < 0)
		log_warning("job %u: cannot write its drain record", dj->id);
	dj->dirty = false;
	dj->recorded = time(NULL);
out:
	free(text);
	cJSON_Delete(o);
}

/* After a restart: take the counters of a record left by this job's run
 * (not one of a finished job that had the same id). */
static void record_resume(struct djob *dj)
{
	char name[32], buf[DRAIN_RECORD_MAX + 1];
	const cJSON *phase;
	cJSON *o;
	ssize_t n;
	int fd;

	snprintf(name, sizeof(name), "%" PRIu32 ".json", dj->id);
	fd = record_fd < 0 ? -1
			   : openat(record_fd, name,
				    O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return;
	n = read(fd, buf, DRAIN_RECORD_MAX);
	close(fd);
	if (n <= 0)
		return;
	buf[n] = '\0';
	o = cJSON_Parse(buf);
	phase = cJSON_GetObjectItemCaseSensitive(o, "phase");
	if (cJSON_IsString(phase) && strcmp(phase->valuestring, "done") &&
	    proto_u64(o, "uid") == dj->uid) {
		const cJSON *e;

		dj->during_bytes = proto_u64(o, "during_bytes");
		dj->during_files = proto_u64(o, "during_files");
		dj->failed_files = proto_u64(o, "failed_files");
		/* Per output, by name (a record written before outputs had
		 * figures has none: they start at 0); like the job's, the
		 * end counts start again from 0. */
		cJSON_ArrayForEach(e, cJSON_GetObjectItemCaseSensitive(
					      o, "outputs"))
		{
			const cJSON *nm = cJSON_GetObjectItemCaseSensitive(
				e, "name");

			for (size_t i = 0; cJSON_IsString(nm) && i < dj->nouts;
			     i++) {
				struct dout *d = &dj->outs[i];

				if (strcmp(d->name, nm->valuestring))
					continue;
				d->during_bytes = proto_u64(e, "during_bytes");
				d->during_files = proto_u64(e, "during_files");
				d->failed_files = proto_u64(e, "failed_files");
				telrec_size_hist_from_json(
					d->size_hist,
					cJSON_GetObjectItemCaseSensitive(
						e, "size_hist"));
				d->max_file = proto_u64(e, "max_file_bytes");
				break;
			}
		}
	}
	cJSON_Delete(o);
}

/* StateDir/drain: created root 0700; old records and temporary files
 * removed. */
static int records_open(const char *state_dir, char *err, size_t errlen)
{
	char why[CONF_ERR_MAX];
	struct dirent *de;
	struct stat st;
	time_t now = time(NULL);
	DIR *d;
	int fd = -1, rfd = -1, dup_fd;

	if (fsutil_mkdir_p(state_dir, 0700) < 0 ||
	    (fd = open(state_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0) {
		snprintf(err, errlen, "StateDir: cannot create %s: %s",
			 state_dir, strerror(errno));
		goto fail;
	}
	if (mkdirat(fd, "drain", 0700) < 0 && errno != EEXIST) {
		snprintf(err, errlen, "StateDir: cannot create %s/drain: %s",
			 state_dir, strerror(errno));
		goto fail;
	}
	rfd = openat(fd, "drain", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (rfd < 0 || fstat(rfd, &st) < 0) {
		snprintf(err, errlen, "StateDir: cannot open %s/drain: %s",
			 state_dir, strerror(errno));
		goto fail;
	}
	if (fsutil_check_root_dir(&st, "StateDir/drain", false, why,
				  sizeof(why)) < 0) {
		snprintf(err, errlen, "StateDir: %s", why);
		goto fail;
	}
	close(fd);
	dup_fd = fcntl(rfd, F_DUPFD_CLOEXEC, 0);
	d = dup_fd >= 0 ? fdopendir(dup_fd) : NULL;
	while (d && (de = readdir(d))) {
		size_t len = strlen(de->d_name);
		struct stat rst;

		if (de->d_name[0] == '.' && len > 4 &&
		    !strcmp(de->d_name + len - 4, ".tmp")) {
			unlinkat(rfd, de->d_name, 0);
			continue;
		}
		if (len > 5 && !strcmp(de->d_name + len - 5, ".json") &&
		    fstatat(rfd, de->d_name, &rst, AT_SYMLINK_NOFOLLOW) == 0 &&
		    now - rst.st_mtime > DRAIN_RECORD_KEEP_S)
			unlinkat(rfd, de->d_name, 0);
	}
	if (d)
		closedir(d);
	else if (dup_fd >= 0)
		close(dup_fd);
	return rfd;
fail:
	if (rfd >= 0)
		close(rfd);
	if (fd >= 0)
		close(fd);
	return -1;
}

/* --- workers ------------------------------------------------------------------ */

static void reap_zombies(void)
{
	struct zombie **pp = &zombies, *z;

	while ((z = *pp)) {
		pid_t r = waitpid(z->pid, NULL, WNOHANG);

		if (r == z->pid || (r < 0 && errno == ECHILD)) {
			*pp = z->next;
			free(z);
		} else {
			pp = &z->next;
		}
	}
}

/* Close our ends of OUT's worker, make sure it is gone and reap it
 * (now, or later if it is stuck in the kernel). Returns its status if
 * reaped now, else -1. */
static int worker_release(struct dout *o, bool kill_it)
{
	int status = -1;
	pid_t r;

	if (o->in >= 0)
		close(o->in);
	if (o->out >= 0)
		close(o->out);
	o->in = o->out = -1;
	free(o->lbuf);
	o->lbuf = NULL;
	o->llen = 0;
	if (o->pid <= 0)
		return -1;
	if (kill_it)
		kill(o->pid, SIGKILL);
	r = waitpid(o->pid, &status, WNOHANG);
	if (r == 0) {
		/* EOF without exiting: it has nothing more to say. */
		struct zombie *z = malloc(sizeof(*z));

		kill(o->pid, SIGKILL);
		r = waitpid(o->pid, &status, WNOHANG);
		if (r == 0 && z) {
			z->pid = o->pid;
			z->next = zombies;
			zombies = z;
			z = NULL;
		}
		free(z);
		if (r <= 0)
			status = -1;
	}
	o->pid = 0;
	o->busy = o->busy_final = false;
	o->stdin_closed = false;
	return status;
}

static void output_fail(struct dout *o, const char *why)
{
	struct djob *dj = o->job;

	if (o->failed)
		return;
	o->failed = true;
	snprintf(o->fail_reason, sizeof(o->fail_reason), "%s", why);
	queue_clear(o);
	log_warningx("job %u: output '%s': %s; its files stay on the tier "
		     "until finish, which keeps them",
		     dj->id, o->name, why);
	if (dj->phase == DRAIN_ENDING)
		o->done = true;
	dj->dirty = true;
}

static int worker_start(struct dout *o)
{
	struct djob *dj = o->job;
	char *argv[] = { "iostaged", "--drain-worker", o->local, o->pfs, NULL };
	char err[CONF_ERR_MAX];
	struct spawn_proc p;

	if (spawn_as_user(dj->uid, dj->gid, dj->user, argv, NULL, NULL, 0,
			  "drain worker", &p, err, sizeof(err)) < 0) {
		output_fail(o, err);
		return -1;
	}
	o->lbuf = malloc(DRAIN_LINE_MAX);
	if (!o->lbuf) {
		o->pid = p.pid;
		o->in = p.in;
		o->out = p.out;
		worker_release(o, true);
		output_fail(o, "out of memory");
		return -1;
	}
	fcntl(p.in, F_SETFL, fcntl(p.in, F_GETFL) | O_NONBLOCK);
	fcntl(p.out, F_SETFL, fcntl(p.out, F_GETFL) | O_NONBLOCK);
	o->pid = p.pid;
	o->in = p.in;
	o->out = p.out;
	o->llen = 0;
	if (dj->phase == DRAIN_RUNNING &&
	    setpriority(PRIO_PROCESS, (id_t)p.pid, DRAIN_RUN_NICE) < 0)
		log_debug("job %u: output '%s': cannot renice drain worker "
			  "%d: %s", dj->id, o->name, (int)p.pid,
			  strerror(errno));
	o->busy = o->busy_final = o->stdin_closed = false;
	log_debug("job %u: output '%s': drain worker %d started", dj->id,
		  o->name, (int)p.pid);
	return 0;
}

/* Send IT to OUT's worker. 0, or -1 (the worker is killed; its EOF
 * follows). */
static int worker_send(struct dout *o, const struct item *it)
{
	cJSON *cmd = cJSON_CreateObject();
	char *text = NULL;
	size_t len;
	ssize_t n;
	int r = -1;

	if (!cmd ||
	    !cJSON_AddStringToObject(cmd, it->scan ? "scan" : "file", it->rel))
		goto out;
	text = jsonbuf_dup(cmd);
	if (!text)
		goto out;
	len = strlen(text);
	text[len] = '\n';
	/* One command at a time: the pipe is empty, a short line fits. */
	do
		n = write(o->in, text, len + 1);
	while (n < 0 && errno == EINTR);
	if (n == (ssize_t)len + 1)
		r = 0;
out:
	free(text);
	cJSON_Delete(cmd);
	if (r < 0)
		kill(o->pid, SIGKILL);
	return r;
}

/* The worker of OUT ended (EOF on its stdout). */
static void worker_exited(struct dout *o)
{
	struct djob *dj = o->job;
	bool expected = o->stdin_closed, was_final = o->busy_final;
	char why[CONF_ERR_MAX];
	int status = worker_release(o, false);

	if (expected) {
		if (dj->phase == DRAIN_ENDING && o->final_done && !o->head)
			o->done = true;
		return;
	}
	if (status >= 0 && WIFSIGNALED(status))
		snprintf(why, sizeof(why),
			 "drain worker was killed by signal %d",
			 WTERMSIG(status));
	else if (status >= 0 && WIFEXITED(status))
		snprintf(why, sizeof(why), "drain worker exited with status %d",
			 WEXITSTATUS(status));
	else
		snprintf(why, sizeof(why), "drain worker stopped answering");
	if (++o->restarts > DRAIN_RESTARTS_MAX) {
		output_fail(o, why);
		return;
	}
	log_warningx("job %u: output '%s': %s; rescanning", dj->id, o->name,
		     why);
	/* Whatever was in flight is covered by a scan. */
	if (was_final || dj->phase == DRAIN_ENDING)
		enqueue(o, "", true, true);
	else
		enqueue(o, "", true, false);
}

/* A file of BYTES drained from output O, in the job's current phase. */
static void count_file(struct dout *o, uint64_t bytes)
{
	struct djob *dj = o->job;

	if (dj->phase == DRAIN_RUNNING) {
		dj->during_files++;
		dj->during_bytes += bytes;
		o->during_files++;
		o->during_bytes += bytes;
	} else {
		dj->end_files++;
		dj->end_bytes += bytes;
		o->end_files++;
		o->end_bytes += bytes;
	}
	o->size_hist[telrec_size_bucket(bytes)]++;
	if (bytes > o->max_file)
		o->max_file = bytes;
	dj->dirty = true;
}

/* One line from OUT's worker. -1: a protocol violation (kill it). */
static int worker_line(struct dout *o, char *line)
{
	struct djob *dj = o->job;
	cJSON *m = cJSON_Parse(line);
	const cJSON *ok, *path, *error, *skipped;
	char shown[DRAIN_REL_MAX], msg[CONF_ERR_MAX];

	if (!cJSON_IsObject(m)) {
		cJSON_Delete(m);
		log_warningx("job %u: output '%s': drain worker sent malformed "
			     "output",
			     dj->id, o->name);
		return -1;
	}
	if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(m, "done"))) {
		if (o->busy_final) {
			o->final_done = true;
			o->final_failed += proto_u64(m, "failed");
		}
		o->busy = o->busy_final = false;
		dj->dirty = true;
		cJSON_Delete(m);
		return 0;
	}
	ok = cJSON_GetObjectItemCaseSensitive(m, "ok");
	path = cJSON_GetObjectItemCaseSensitive(m, "path");
	error = cJSON_GetObjectItemCaseSensitive(m, "error");
	skipped = cJSON_GetObjectItemCaseSensitive(m, "skipped");
	snprintf(shown, sizeof(shown), "%s",
		 cJSON_IsString(path) ? path->valuestring : "");
	sanitize(shown);
	if (cJSON_IsTrue(ok)) {
		if (cJSON_GetObjectItemCaseSensitive(m, "bytes"))
			count_file(o, proto_u64(m, "bytes"));
		else if (cJSON_IsString(skipped) &&
			 dj->errors_logged < DRAIN_ERRORS_LOGGED) {
			dj->errors_logged++;
			snprintf(msg, sizeof(msg), "%s", skipped->valuestring);
			sanitize(msg);
			log_info("job %u: output '%s': %s: %s skipped", dj->id,
				 o->name, shown, msg);
		}
	} else if (cJSON_IsFalse(ok)) {
		snprintf(msg, sizeof(msg), "%s",
			 cJSON_IsString(error) ? error->valuestring : "?");
		sanitize(msg);
		if (!cJSON_IsString(path)) {
			/* About the worker itself (it could not start). */
			log_warningx("job %u: output '%s': %s", dj->id, o->name,
				     msg);
		} else {
			dj->failed_files++;
			o->failed_files++;
			dj->dirty = true;
			if (dj->errors_logged < DRAIN_ERRORS_LOGGED) {
				dj->errors_logged++;
				log_warningx("job %u: output '%s': %s", dj->id,
					     o->name, msg);
			}
		}
	}
	cJSON_Delete(m);
	return 0;
}

/* Read what OUT's worker has written. */
static void worker_read(struct dout *o)
{
	for (;;) {
		ssize_t n = read(o->out, o->lbuf + o->llen,
				 DRAIN_LINE_MAX - o->llen);
		char *start, *nl;

		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN)
				return;
			worker_exited(o);
			return;
		}
		if (n == 0) {
			worker_exited(o);
			return;
		}
		o->llen += (size_t)n;
		start = o->lbuf;
		while ((nl = memchr(start, '\n', o->llen - (size_t)(start - o->lbuf)))) {
			*nl = '\0';
			if (worker_line(o, start) < 0) {
				kill(o->pid, SIGKILL);
				o->llen = 0;
				return; /* its EOF follows */
			}
			start = nl + 1;
		}
		o->llen -= (size_t)(start - o->lbuf);
		memmove(o->lbuf, start, o->llen);
		if (o->llen == DRAIN_LINE_MAX) {
			log_warningx("job %u: output '%s': drain worker sent an "
				     "overlong line",
				     o->job->id, o->name);
			kill(o->pid, SIGKILL);
			o->llen = 0;
			return;
		}
	}
}

/* --- inotify ------------------------------------------------------------------- */

static void on_event(const struct inotify_event *ev)
{
	char rel[DRAIN_REL_MAX];
	struct watch *w;
	struct dout *o;
	int n, fd;

	if (ev->mask & IN_Q_OVERFLOW) {
		overflowed = true;
		return;
	}
	w = watch_find(ev->wd);
	if (!w)
		return;
	if (ev->mask & IN_IGNORED) {
		watch_unlink(w); /* the kernel dropped it */
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
			watches_drop(o, rel);
		} else if (ev->mask & (IN_CREATE | IN_MOVED_TO)) {
			fd = open_rel(o, rel);
			if ((fd >= 0 && watch_tree(o, fd, rel, 1) > 0) ||
			    (ev->mask & IN_MOVED_TO))
				enqueue(o, rel, true, false);
		}
	} else if (ev->mask & (IN_CLOSE_WRITE | IN_MOVED_TO)) {
		enqueue(o, rel, false, false);
	}
}

static void read_inotify(void)
{
	char buf[65536] __attribute__((aligned(__alignof__(struct inotify_event))));

	for (;;) {
		ssize_t n = read(inotify_fd, buf, sizeof(buf));
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

			on_event(ev);
			p += sizeof(*ev) + ev->len;
		}
	}
}

/* Watch OUT from its root; queue a scan when it already holds files. */
static void watch_output(struct dout *o)
{
	int fd;

	if (o->root_fd < 0)
		return;
	fd = fcntl(o->root_fd, F_DUPFD_CLOEXEC, 0);
	if (fd >= 0 && watch_tree(o, fd, "", 0) > 0)
		enqueue(o, "", true, false);
}

/* After an inotify overflow: watch again whatever is new, and scan. */
static void rescan_job(struct djob *dj)
{
	for (size_t i = 0; i < dj->nouts; i++) {
		struct dout *o = &dj->outs[i];

		if (o->root_fd < 0)
			continue;
		watch_output(o);
		enqueue(o, "", true, false);
	}
}

/* --- the loop ------------------------------------------------------------------- */

static void begin_end(struct djob *dj)
{
	dj->phase = DRAIN_ENDING;
	for (size_t i = 0; i < dj->nouts; i++) {
		struct dout *o = &dj->outs[i];

		if (o->failed) {
			o->done = true;
			continue;
		}
		/* A worker the user stopped would hold the Epilog until
		 * the deadline. */
		if (o->pid > 0) {
			kill(o->pid, SIGCONT);
			/* The Epilog waits for it now: full priority. */
			setpriority(PRIO_PROCESS, (id_t)o->pid, 0);
		}
		enqueue(o, "", true, true);
	}
	dj->dirty = true;
}

static void end_job(struct djob *dj)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	dj->end_seconds = (double)(now.tv_sec - dj->end_start.tv_sec) +
			  (double)(now.tv_nsec - dj->end_start.tv_nsec) / 1e9;
	if (dj->end_seconds < 0)
		dj->end_seconds = 0;
	for (size_t i = 0; i < dj->nouts; i++) {
		struct dout *o = &dj->outs[i];

		watches_drop(o, NULL);
		if (o->root_fd >= 0)
			close(o->root_fd);
		o->root_fd = -1;
	}
	dj->phase = DRAIN_DONE;
	dj->dirty = true;
	pthread_cond_broadcast(&drain_cond);
}

/* The deadline passed (or the job is forgotten): stop everything now. */
static void abandon_job(struct djob *dj)
{
	for (size_t i = 0; i < dj->nouts; i++) {
		struct dout *o = &dj->outs[i];

		dj->left_files += o->nqueued + (o->busy ? 1 : 0);
		if (o->pid > 0)
			worker_release(o, true);
		queue_clear(o);
		o->done = true;
	}
	end_job(dj);
}

/* Give OUT's worker its next command, start one, or let it go. */
static void schedule(struct dout *o)
{
	struct djob *dj = o->job;
	bool ending = dj->phase == DRAIN_ENDING;
	struct item *it = o->head;

	if (o->failed || o->done || o->busy || o->stdin_closed)
		return;
	if (it && (ending || ms_until(&it->ready) <= 0)) {
		if (o->pid <= 0 && worker_start(o) < 0)
			return;
		if (worker_send(o, it) < 0)
			return; /* killed; worker_exited rescans */
		o->head = it->next;
		if (!o->head)
			o->tail = NULL;
		o->nqueued--;
		o->busy = true;
		o->busy_final = it->final;
		free(it);
		return;
	}
	if (!it && ending && o->final_done) {
		if (o->pid > 0) {
			close(o->in); /* EOF: it syncs and exits */
			o->in = -1;
			o->stdin_closed = true;
		} else {
			o->done = true;
		}
	}
}

/* Milliseconds until the loop has something to do without an fd event. */
static int next_timeout(void)
{
	long best = -1;
	struct djob *dj;

	if (zombies)
		best = 200;
	for (dj = djobs; dj; dj = dj->next) {
		if (dj->phase == DRAIN_DONE)
			continue;
		if (dj->dirty) {
			long left = (long)(dj->recorded + DRAIN_RECORD_EVERY_S -
					   time(NULL)) * 1000;

			if (left < 0)
				left = 0;
			if (best < 0 || left < best)
				best = left;
		}
		for (size_t i = 0; i < dj->nouts; i++) {
			const struct dout *o = &dj->outs[i];
			long left;

			if (!o->head || o->busy || o->failed || o->done ||
			    o->stdin_closed)
				continue;
			left = dj->phase == DRAIN_ENDING ? 0
							 : ms_until(&o->head->ready);
			if (left < 0)
				left = 0;
			if (best < 0 || left < best)
				best = left;
		}
	}
	return best > 60000 ? 60000 : (int)best;
}

static void step_job(struct djob *dj)
{
	bool all_done = true;

	if (dj->phase == DRAIN_DONE)
		return;
	if (dj->setup) {
		dj->setup = false;
		for (size_t i = 0; i < dj->nouts; i++)
			watch_output(&dj->outs[i]);
	}
	if (dj->abandon) {
		abandon_job(dj);
		return;
	}
	if (dj->end_requested && dj->phase == DRAIN_RUNNING)
		begin_end(dj);
	for (size_t i = 0; i < dj->nouts; i++) {
		schedule(&dj->outs[i]);
		all_done &= dj->outs[i].done;
	}
	if (dj->phase == DRAIN_ENDING && all_done)
		end_job(dj);
	if (dj->dirty && dj->phase != DRAIN_DONE &&
	    time(NULL) - dj->recorded >= DRAIN_RECORD_EVERY_S)
		record_write_locked(dj);
}

static void *drain_loop(void *arg)
{
	struct pollfd *pfds = NULL;
	struct dout **owners = NULL;
	size_t cap = 0;

	(void)arg;
	pthread_mutex_lock(&drain_lock);
	while (!stopping) {
		struct djob *dj, *next;
		size_t n = 2, want = 2;
		int timeout;

		for (dj = djobs; dj; dj = dj->next)
			want += dj->nouts;
		if (want > cap) {
			struct pollfd *p = realloc(pfds, want * sizeof(*p));
			struct dout **ow = realloc(owners, want * sizeof(*ow));

			if (p)
				pfds = p;
			if (ow)
				owners = ow;
			if (!p || !ow) {
				log_errorx("drain: out of memory");
				pthread_mutex_unlock(&drain_lock);
				sleep(1);
				pthread_mutex_lock(&drain_lock);
				continue;
			}
			cap = want;
		}
		pfds[0] = (struct pollfd){ .fd = wake_fd, .events = POLLIN };
		pfds[1] = (struct pollfd){ .fd = inotify_fd, .events = POLLIN };
		for (dj = djobs; dj; dj = dj->next)
			for (size_t i = 0; i < dj->nouts; i++)
				if (dj->outs[i].pid > 0 && dj->outs[i].out >= 0) {
					owners[n] = &dj->outs[i];
					pfds[n++] = (struct pollfd){
						.fd = dj->outs[i].out,
						.events = POLLIN
					};
				}
		timeout = next_timeout();
		pthread_mutex_unlock(&drain_lock);
		if (poll(pfds, n, timeout) < 0 && errno != EINTR)
			log_warning("drain: poll");
		pthread_mutex_lock(&drain_lock);

		if (pfds[0].revents) {
			uint64_t v;
			ssize_t ignored = read(wake_fd, &v, sizeof(v));

			(void)ignored;
		}
		/* Workers first, then inotify, then the phase changes: a
		 * result already written when finish came counts as
		 * drained during the run. Outputs seen here are alive: only
		 * this thread ends a job's workers. */
		for (size_t i = 2; i < n; i++)
			if (pfds[i].revents && owners[i]->pid > 0 &&
			    owners[i]->out == pfds[i].fd)
				worker_read(owners[i]);
		if (pfds[1].revents)
			read_inotify();
		if (stopping)
			break;
		if (overflowed) {
			overflowed = false;
			log_warningx("drain: inotify queue overflowed; "
				     "rescanning every output");
			for (dj = djobs; dj; dj = dj->next)
				if (dj->phase != DRAIN_DONE)
					rescan_job(dj);
		}
		reap_zombies();
		for (dj = djobs; dj; dj = next) {
			next = dj->next;
			step_job(dj);
			if (dj->phase == DRAIN_DONE && dj->forget && !dj->refs) {
				unlink_locked(dj);
				djob_free(dj);
			}
		}
	}
	/* Shutting down: no worker outlives us (they would also get
	 * SIGKILL from PR_SET_PDEATHSIG when this thread ends). */
	for (struct djob *dj = djobs; dj; dj = dj->next) {
		for (size_t i = 0; i < dj->nouts; i++)
			if (dj->outs[i].pid > 0)
				worker_release(&dj->outs[i], true);
		if (dj->dirty)
			record_write_locked(dj);
	}
	pthread_cond_broadcast(&drain_cond);
	pthread_mutex_unlock(&drain_lock);
	free(pfds);
	free(owners);
	return NULL;
}

/* --- set-up --------------------------------------------------------------------- */

/* A job reloaded staged after a restart: its outputs watched again. */
static int resume_job(const struct job *job, char *err, size_t errlen)
{
	return drain_job_start(job, true, err, errlen);
}

int drain_init(const struct conf *conf, char *err, size_t errlen)
{
	pthread_condattr_t attr;
	int r;

	drain_conf = conf;
	pthread_condattr_init(&attr);
	pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
	pthread_cond_init(&drain_cond, &attr);
	pthread_condattr_destroy(&attr);
	inotify_fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
	wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (inotify_fd < 0 || wake_fd < 0) {
		snprintf(err, errlen, "drain: cannot set up inotify: %s",
			 strerror(errno));
		goto fail;
	}
	record_fd = records_open(conf->state_dir, err, errlen);
	if (record_fd < 0)
		goto fail;
	r = pthread_create(&drain_thread, NULL, drain_loop, NULL);
	if (r != 0) {
		snprintf(err, errlen, "drain: cannot start its thread: %s",
			 strerror(r));
		goto fail;
	}
	thread_started = true;
	/* jobs.c asks for a job's drain status and resumes a reloaded
	 * job's watches through these, never by calling into this file. */
	jobs_set_drain_hooks(agent_bridge->jobs, drain_status_json, resume_job);
	return 0;
fail:
	drain_fini();
	return -1;
}

void drain_shutdown(void)
{
	if (!thread_started)
		return;
	pthread_mutex_lock(&drain_lock);
	stopping = true;
	pthread_mutex_unlock(&drain_lock);
	wake_loop();
	pthread_join(drain_thread, NULL);
	thread_started = false;
}

void drain_fini(void)
{
	struct djob *dj, *next;

	drain_shutdown();
	for (dj = djobs; dj; dj = next) {
		next = dj->next;
		djob_free(dj);
	}
	djobs = NULL;
	for (size_t b = 0; b < DRAIN_BUCKETS; b++) {
		struct watch *w, *wn;

		for (w = watches[b]; w; w = wn) {
			wn = w->next;
			free(w);
		}
		watches[b] = NULL;
	}
	reap_zombies();
	if (inotify_fd >= 0)
		close(inotify_fd);
	if (wake_fd >= 0)
		close(wake_fd);
	if (record_fd >= 0)
		close(record_fd);
	inotify_fd = wake_fd = record_fd = -1;
}

/* --- jobs ---------------------------------------------------------------------- */

/* mkdirat + open DIR/NAME for UID:GID, 0700; an existing one must be a
 * directory owned by UID. fd, or -1 with errno. */
static int mkdir_owned(int dir, const char *name, uid_t uid, gid_t gid)
{
	struct stat st;
	bool made = mkdirat(dir, name, 0700) == 0;
	int fd;

	if (!made && errno != EEXIST)
		return -1;
	fd = openat(dir, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return -1;
	if (fstat(fd, &st) < 0)
		goto fail;
	if (made) {
		if (fchown(fd, uid, gid) < 0 || fchmod(fd, 0700) < 0)
			goto fail;
	} else if (st.st_uid != uid) {
		errno = EPERM;
		goto fail;
	}
	return fd;
fail:
	{
		int saved = errno;

		close(fd);
		errno = saved;
	}
	return -1;
}

/* Create TIER/jobs/J/out/NAME for OUT, from TIER/jobs (root's), never
 * following a link. The fd of out/NAME, or -1 with err. */
static int make_out_dir(const struct conf_tier *t, const struct djob *dj,
			const char *name, char *err, size_t errlen)
{
	char path[CONF_PATH_MAX + 16], job[JOBLAYOUT_JOB_NAME_MAX];
	int jobs = -1, jfd = -1, ofd = -1, nfd = -1;

	snprintf(path, sizeof(path), "%s/jobs", t->path);
	if (joblayout_job_name(drain_conf, t, dj->id, job, sizeof(job)) < 0)
		snprintf(job, sizeof(job), "%" PRIu32, dj->id); /* cannot happen */
	jobs = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (jobs >= 0)
		jfd = openat(jobs, job,
			     O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (jfd >= 0)
		ofd = mkdir_owned(jfd, JOBLAYOUT_OUT_DIR, dj->uid, dj->gid);
	if (ofd >= 0)
		nfd = mkdir_owned(ofd, name, dj->uid, dj->gid);
	if (nfd < 0)
		snprintf(err, errlen,
			 "tier '%s': cannot prepare %s/jobs/%s/" JOBLAYOUT_OUT_DIR
			 "/%s: %s",
			 t->name, t->path, job, name, strerror(errno));
	if (ofd >= 0)
		close(ofd);
	if (jfd >= 0)
		close(jfd);
	if (jobs >= 0)
		close(jobs);
	return nfd;
}

/* A drain job for JOB (which has outputs), with its directories made and
 * opened when MAKE_DIRS. NULL with err. */
static struct djob *djob_create(const struct job *job, bool make_dirs,
				char *err, size_t errlen)
{
	const struct profile *p = job->profile;
	struct djob *dj = calloc(1, sizeof(*dj));
	size_t i;

	if (!dj) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	dj->id = job->id;
	dj->uid = job->uid;
	dj->gid = job->gid;
	snprintf(dj->user, sizeof(dj->user), "%s", job->user);
	for (i = 0; i < p->noutputs; i++) {
		const struct profile_output *po = &p->outputs[i];
		const struct conf_tier *t = conf_find_tier(drain_conf, po->tier);
		struct dout *o = &dj->outs[i];
		struct stat st;

		o->job = dj;
		o->root_fd = o->in = o->out = -1;
		dj->nouts = i + 1;
		snprintf(o->name, sizeof(o->name), "%s", po->name);
		snprintf(o->pfs, sizeof(o->pfs), "%s", po->path);
		o->tier = tiers_index(agent_bridge->tiers, po->tier);
		if (!t || o->tier < 0 ||
		    joblayout_output_path(drain_conf, po, job->id, o->local,
					  sizeof(o->local)) < 0) {
			snprintf(err, errlen, "output '%s': unknown tier '%s'",
				 po->name, po->tier ? po->tier : "?");
			goto fail;
		}
		for (size_t k = 0; k < drain_conf->ntiers; k++) {
			/* Copying into a watched tree would feed itself. */
			if (pathsafe_is_under(po->path,
					      drain_conf->tiers[k].path)) {
				snprintf(err, errlen,
					 "output '%s': %s is on tier '%s'; "
					 "outputs drain to the PFS",
					 po->name, po->path,
					 drain_conf->tiers[k].name);
				goto fail;
			}
		}
		if (!make_dirs)
			continue;
		o->root_fd = make_out_dir(t, dj, po->name, err, errlen);
		if (o->root_fd < 0)
			goto fail;
		if (po->drain == PROFILE_DRAIN_END || fstat(o->root_fd, &st) < 0) {
			close(o->root_fd); /* not watched: all at the end */
			o->root_fd = -1;
		} else {
			o->dev = st.st_dev;
		}
	}
	return dj;
fail:
	djob_free(dj);
	return NULL;
}

int drain_job_start(const struct job *job, bool resume, char *err,
		    size_t errlen)
{
	struct djob *dj;

	if (!job->profile || job->profile->noutputs == 0)
		return 0;
	dj = djob_create(job, true, err, errlen);
	if (!dj)
		return -1;
	pthread_mutex_lock(&drain_lock);
	if (resume)
		record_resume(dj);
	if (stopping || find_locked(job->id)) {
		pthread_mutex_unlock(&drain_lock);
		djob_free(dj);
		return 0;
	}
	dj->setup = true;
	dj->dirty = true;
	dj->next = djobs;
	djobs = dj;
	pthread_mutex_unlock(&drain_lock);
	wake_loop();
	return 0;
}

void drain_job_forget(uint32_t id)
{
	struct djob *dj;

	pthread_mutex_lock(&drain_lock);
	dj = find_locked(id);
	if (dj) {
		dj->forget = true;
		dj->abandon = true;
	}
	pthread_mutex_unlock(&drain_lock);
	wake_loop();
}

/* Move TIER/jobs/ID/out to TIER/jobs/.undrained/ID (or ID.N when taken).
 * 1 if there was nothing to move, 0 with the new path, -1 with err. */
static int keep_aside(const struct conf_tier *t, uint32_t id, char *ret_path,
		      size_t len, char *err, size_t errlen)
{
	char path[CONF_PATH_MAX + 16], job[JOBLAYOUT_JOB_NAME_MAX];
	char name[JOBLAYOUT_JOB_NAME_MAX + 16], why[CONF_ERR_MAX];
	struct stat st;
	int jobs = -1, jfd = -1, ufd = -1, r = -1;

	snprintf(path, sizeof(path), "%s/jobs", t->path);
	if (joblayout_job_name(drain_conf, t, id, job, sizeof(job)) < 0)
		snprintf(job, sizeof(job), "%" PRIu32, id); /* cannot happen */
	jobs = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (jobs < 0)
		goto fail;
	jfd = openat(jobs, job, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (jfd < 0 || fstatat(jfd, JOBLAYOUT_OUT_DIR, &st,
			       AT_SYMLINK_NOFOLLOW) < 0) {
		if (errno == ENOENT) {
			r = 1;
			goto out;
		}
		goto fail;
	}
	if (mkdirat(jobs, DRAIN_UNDRAINED, 0755) < 0 && errno != EEXIST)
		goto fail;
	ufd = openat(jobs, DRAIN_UNDRAINED,
		     O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (ufd < 0 || fstat(ufd, &st) < 0)
		goto fail;
	if (fsutil_check_root_dir(&st, DRAIN_UNDRAINED, false, why,
				  sizeof(why)) < 0) {
		snprintf(err, errlen, "tier '%s': %s", t->name, why);
		goto out;
	}
	for (unsigned n = 0; n < 1000; n++) {
		if (n)
			snprintf(name, sizeof(name), "%s.%u", job, n);
		else
			snprintf(name, sizeof(name), "%s", job);
		if (renameat2(jfd, JOBLAYOUT_OUT_DIR, ufd, name,
			      RENAME_NOREPLACE) == 0) {
			snprintf(ret_path, len, "%s/" DRAIN_UNDRAINED "/%s",
				 path, name);
			r = 0;
			goto out;
		}
		if (errno != EEXIST)
			break;
	}
fail:
	snprintf(err, errlen,
		 "tier '%s': cannot move %s/%s/" JOBLAYOUT_OUT_DIR
		 " to %s/" DRAIN_UNDRAINED ": %s",
		 t->name, path, job, path, strerror(errno));
out:
	if (ufd >= 0)
		close(ufd);
	if (jfd >= 0)
		close(jfd);
	if (jobs >= 0)
		close(jobs);
	return r;
}

/* Keep the output directories of job ID on the tiers in USE[]; the kept
 * paths go to KEPT (", "-separated). 0 or -1 with err. */
static int keep_all(uint32_t id, const bool use[CONF_MAX_TIERS], char *kept,
		    size_t keptlen, char *err, size_t errlen)
{
	char one[CONF_PATH_MAX + JOBLAYOUT_JOB_NAME_MAX + 64];
	size_t t;
	int r;

	kept[0] = '\0';
	for (t = 0; t < drain_conf->ntiers; t++) {
		if (!use[t])
			continue;
		r = keep_aside(&drain_conf->tiers[t], id, one, sizeof(one), err,
			       errlen);
		if (r < 0)
			return -1;
		if (r == 0)
			snprintf(kept + strlen(kept), keptlen - strlen(kept),
				 "%s%s", kept[0] ? ", " : "", one);
	}
	return 0;
}

/* After the end phase: keep what is not on the PFS, log, record, forget.
 * Called without drain_lock by the one finisher; DJ is DONE, so the loop
 * does not touch it. */
static int finalize(struct djob *dj, char *err, size_t errlen)
{
	bool use[CONF_MAX_TIERS] = { false }, keep = dj->timed_out;
	char during[64], end[64], why[CONF_ERR_MAX] = "", kept[2 * CONF_PATH_MAX];
	uint64_t final_failed = 0;
	int r = 0;

	for (size_t i = 0; i < dj->nouts; i++) {
		const struct dout *o = &dj->outs[i];

		if (o->tier >= 0)
			use[o->tier] = true;
		final_failed += o->final_failed;
		if (o->failed) {
			keep = true;
			if (!why[0])
				snprintf(why, sizeof(why), "output '%s': %s",
					 o->name, o->fail_reason);
		} else if (!o->final_done) {
			keep = true;
		}
	}
	if (final_failed)
		keep = true;
	if (dj->timed_out)
		snprintf(why, sizeof(why),
			 "timed out after %u s (DrainTimeout) with %" PRIu64
			 " queued file%s or scan%s left",
			 drain_conf->drain_timeout, dj->left_files,
			 dj->left_files == 1 ? "" : "s",
			 dj->left_files == 1 ? "" : "s");
	else if (final_failed && !why[0])
		snprintf(why, sizeof(why), "%" PRIu64 " file%s failed to copy",
			 final_failed, final_failed == 1 ? "" : "s");
	else if (keep && !why[0])
		snprintf(why, sizeof(why), "the final scan did not complete");

	files_str(dj->during_files, dj->during_bytes, during, sizeof(during));
	files_str(dj->end_files, dj->end_bytes, end, sizeof(end));
	kept[0] = '\0';
	if (keep && keep_all(dj->id, use, kept, sizeof(kept), err, errlen) < 0) {
		log_errorx("job %u: outputs not drained (%s) and not kept "
			   "aside: %s; the job's directories stay",
			   dj->id, why, err);
		r = -1;
	} else if (keep) {
		log_warningx("job %u: outputs not fully drained (%s): %s during "
			     "the run, %s at the end in %.1f s; kept in %s "
			     "(remove it once recovered)",
			     dj->id, why, during, end, dj->end_seconds,
			     kept[0] ? kept : "(nothing on the tier)");
	} else {
		log_info("job %u: drained %s during the run, %s at the end in "
			 "%.1f s",
			 dj->id, during, end, dj->end_seconds);
	}
	pthread_mutex_lock(&drain_lock);
	snprintf(dj->kept, sizeof(dj->kept), "%s", kept);
	record_write_locked(dj);
	pthread_mutex_unlock(&drain_lock);
	return r;
}

/* A job with no drain registered: it has outputs but was reloaded or
 * never registered. Register it now, without watches; or, without a
 * profile, keep whatever it left. 1 if the caller has nothing to wait
 * for. */
static int late_register(struct job *job, char *err, size_t errlen)
{
	struct djob *dj;
	char kept[2 * CONF_PATH_MAX];

	if (!job->profile) {
		/* Outputs of a profile we can no longer read: never
		 * delete what we cannot drain. */
		if (keep_all(job->id, job->tiers, kept, sizeof(kept), err,
			     errlen) < 0)
			return -1;
		if (kept[0])
			log_warningx("job %u: profile lost after a restart; its "
				     "outputs were not drained; kept in %s",
				     job->id, kept);
		return 1;
	}
	if (job->profile->noutputs == 0)
		return 1;
	dj = djob_create(job, false, err, errlen);
	if (!dj)
		return -1;
	pthread_mutex_lock(&drain_lock);
	record_resume(dj);
	if (find_locked(job->id) || stopping) {
		djob_free(dj);
	} else {
		dj->next = djobs;
		djobs = dj;
	}
	pthread_mutex_unlock(&drain_lock);
	return 0;
}

int drain_finish(uint32_t id, char *err, size_t errlen)
{
	struct job *job = jobs_get(agent_bridge->jobs, id);
	struct timespec deadline;
	struct djob *dj;
	int r = 0;

	if (!job)
		return 0;
	pthread_mutex_lock(&drain_lock);
	dj = find_locked(id);
	pthread_mutex_unlock(&drain_lock);
	if (!dj) {
		r = late_register(job, err, errlen);
		if (r != 0) {
			jobs_put(job);
			return r < 0 ? -1 : 0;
		}
	}
	jobs_put(job);

	pthread_mutex_lock(&drain_lock);
	dj = find_locked(id);
	if (!dj || stopping) {
		pthread_mutex_unlock(&drain_lock);
		if (!stopping)
			return 0;
		snprintf(err, errlen,
			 "job %u: iostaged is stopping; outputs not drained, "
			 "left in place",
			 id);
		return -1;
	}
	dj->refs++;
	if (!dj->end_requested) {
		dj->end_requested = true;
		clock_gettime(CLOCK_MONOTONIC, &dj->end_start);
		log_info("job %u: draining the rest of its outputs (up to %u s)",
			 id, drain_conf->drain_timeout);
		wake_loop();
	}
	deadline = dj->end_start;
	deadline.tv_sec += drain_conf->drain_timeout;
	while (dj->phase != DRAIN_DONE && !stopping)
		if (pthread_cond_timedwait(&drain_cond, &drain_lock,
					   &deadline) == ETIMEDOUT)
			break;
	if (dj->phase != DRAIN_DONE && !stopping) {
		/* Deadline: stop the workers; what is left is kept. */
		dj->timed_out = true;
		dj->abandon = true;
		wake_loop();
		clock_gettime(CLOCK_MONOTONIC, &deadline);
		deadline.tv_sec += DRAIN_ABANDON_WAIT_S;
		while (dj->phase != DRAIN_DONE && !stopping)
			if (pthread_cond_timedwait(&drain_cond, &drain_lock,
						   &deadline) == ETIMEDOUT)
				break;
	}
	if (dj->phase != DRAIN_DONE) {
		snprintf(err, errlen,
			 "job %u: %s; outputs not drained, left in place", id,
			 stopping ? "iostaged is stopping"
				  : "the drain thread did not stop its workers");
		r = -1;
	} else if (!dj->finalizing) {
		dj->finalizing = true;
		pthread_mutex_unlock(&drain_lock);
		dj->final_rc = finalize(dj, dj->final_err,
					sizeof(dj->final_err));
		pthread_mutex_lock(&drain_lock);
		dj->finalized = true;
		unlink_locked(dj);
		pthread_cond_broadcast(&drain_cond);
	} else {
		while (!dj->finalized)
			pthread_cond_wait(&drain_cond, &drain_lock);
	}
	if (dj->finalized) {
		r = dj->final_rc;
		if (r < 0)
			snprintf(err, errlen, "job %u: %s", id, dj->final_err);
	}
	if (--dj->refs == 0 && dj->finalized) {
		pthread_mutex_unlock(&drain_lock);
		djob_free(dj);
		return r;
	}
	pthread_mutex_unlock(&drain_lock);
	return r;
}

cJSON *drain_status_json(uint32_t id)
{
	struct djob *dj;
	cJSON *o = NULL;

	pthread_mutex_lock(&drain_lock);
	dj = find_locked(id);
	if (dj && (o = cJSON_CreateObject()))
		add_counters(o, dj);
	pthread_mutex_unlock(&drain_lock);
	return o;
}
