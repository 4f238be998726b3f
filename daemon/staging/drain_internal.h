/* drain_internal.h - what the parts of the drain share (drain.h is the API).
 *
 * The drain is split by concern, one file each:
 *   drain.c         the object (create, destroy, the job table's hooks),
 *                   registering a job's outputs, status
 *   drain_queue.c   per output: the queue of files and scans, and the
 *                   scheduling decision (what the worker does next) as a
 *                   pure function of the output and the time
 *   drain_proto.c   the drain worker's output: one line parsed, then
 *                   counted (files, bytes, failures) in the job's phase
 *   drain_loop.c    the thread: poll, the workers' processes (start, send,
 *                   read, restart, reap), the phases of each job
 *   drain_watch.c   inotify: watches over each output's tree, its events
 *   drain_record.c  StateDir/drain/J.json: written, read back after a
 *                   restart, old ones removed
 *   drain_finish.c  finish: the end phase waited for, what is not on the
 *                   PFS moved aside, the summary
 *
 * Locking: d->lock guards everything in struct drain and its jobs; the
 * functions below expect it held unless they say otherwise (a unit test
 * that drives them without the thread holds nothing: nobody else runs).
 *
 * Unit tests (tests/unit/check_drain_*.c) include this header to reach the
 * seams below: the queue and the scheduling decision, the protocol parser,
 * and the worker start through d->spawn, which a test replaces so that no
 * process of ours runs as another user.
 */
#ifndef IOSTAGE_DAEMON_DRAIN_INTERNAL_H
#define IOSTAGE_DAEMON_DRAIN_INTERNAL_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#include "common/config/profile.h"
#include "common/telemetry/telrec.h"
#include "daemon/spawn.h"
#include "daemon/staging/drain.h"

#define DRAIN_SETTLE_MS 500         /* a closed file waits this long */
#define DRAIN_QUEUE_MAX 4096        /* per output; beyond: one full scan */
#define DRAIN_REL_MAX 4096          /* relative paths we pass on */
#define DRAIN_WATCH_DEPTH_MAX 64    /* directory levels watched */
#define DRAIN_JOB_WATCHES_MAX 16384 /* beyond: the final scan catches up */
#define DRAIN_LINE_MAX 65536        /* a worker output line */
#define DRAIN_RESTARTS_MAX 3        /* worker crashes per output */
#define DRAIN_ERRORS_LOGGED 5       /* per job; the rest are counted */
#define DRAIN_RECORD_EVERY_S 5      /* record rewrite while running */
#define DRAIN_RECORD_KEEP_S (30 * 86400)
#define DRAIN_RECORD_MAX (256 * 1024)
#define DRAIN_ABANDON_WAIT_S 10 /* for the loop to kill workers */
#define DRAIN_BUCKETS 1024      /* watch descriptors hash */
#define DRAIN_UNDRAINED ".undrained"
/* While the job runs, its drain worker yields the CPU to the job: a
 * checkpoint write(2) is time the job is blocked, the drain only delays
 * when an earlier file is safe. Measured on the remote-PFS bench (2 shared
 * cores): during the third 1 GiB checkpoint the writer got 2.1 s of CPU in
 * 6.2 s while the drain's copy (worker, PFS client and server) took 2.5 s.
 * At the end (the Epilog waits) the worker is back at 0. */
#define DRAIN_RUN_NICE 10

enum drain_phase {
	DRAIN_RUNNING = 0,
	DRAIN_ENDING,
	DRAIN_DONE,
};

/* A queued command: copy the file REL, or scan the directory REL. */
struct drain_item {
	struct drain_item *next;
	bool scan;
	bool final;            /* the end phase's scan of everything */
	struct timespec ready; /* CLOCK_MONOTONIC: not sent before */
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
	int root_fd; /* out/NAME, for watching; -1 if not watched */
	dev_t dev;   /* its file system: watches do not leave it */
	/* the worker */
	pid_t pid;   /* 0: none running */
	int in, out; /* its stdin (ours to write), stdout */
	char *lbuf;  /* partial output line */
	size_t llen;
	bool busy;         /* a command is in flight */
	bool busy_final;   /* ... and it is the final scan */
	bool stdin_closed; /* we told it to exit */
	unsigned restarts;
	bool failed; /* no worker can run: what is left is not saved */
	char fail_reason[CONF_ERR_MAX];
	/* the queue */
	struct drain_item *head, *tail;
	size_t nqueued;
	bool final_done; /* the final scan completed */
	uint64_t final_failed;
	bool done; /* end phase over for this output */
	/* what was drained (docs/RECORDS.md outputs[]) */
	uint64_t during_bytes, during_files, end_bytes, end_files;
	uint64_t failed_files;
	uint64_t size_hist[TELREC_NBUCKETS]; /* drained files by size */
	uint64_t max_file; /* the largest file drained: the striping rule */
};

struct djob {
	struct drain *drain;
	uint32_t id;
	uid_t uid;
	gid_t gid;
	char user[JOBS_USER_MAX];
	size_t nouts;
	struct dout outs[PROFILE_MAX_OUTPUTS];
	enum drain_phase phase;
	bool setup; /* the loop must set up its watches */
	bool end_requested;
	bool abandon; /* deadline passed: kill, stop, keep the rest */
	bool forget;  /* no finish will come: free when done */
	bool timed_out;
	bool finalizing, finalized;
	int final_rc;
	char final_err[CONF_ERR_MAX];
	unsigned refs; /* drain_finish callers holding it */
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

/* One inotify watch: a directory REL below OUT's root. */
struct drain_watch {
	int wd;
	struct dout *out;
	struct drain_watch *next;
	char rel[];
};

/* A worker we killed and still have to reap. */
struct drain_zombie {
	pid_t pid;
	struct drain_zombie *next;
};

/* Start OUT's drain worker (`iostaged --drain-worker LOCAL PFS` as the
 * job's user): its pid, stdin and stdout in RET. 0, or -1 with err. */
typedef int (*drain_spawn_fn)(const struct dout *o, struct spawn_proc *ret,
			      char *err, size_t errlen);

struct drain {
	struct agent *agent;
	const struct conf *conf;
	pthread_mutex_t lock;
	pthread_cond_t cond; /* a job DONE or finalized; CLOCK_MONOTONIC */
	pthread_t thread;
	bool thread_started, stopping;
	int inotify_fd, wake_fd, record_fd; /* -1 when not open */
	struct djob *djobs;
	struct drain_watch *watches[DRAIN_BUCKETS];
	struct drain_zombie *zombies;
	bool overflowed;      /* inotify's queue overflowed: rescan all */
	drain_spawn_fn spawn; /* drain_spawn_worker; a test's own */
};

/* --- drain.c ---------------------------------------------------------------
 */

/* A drain without thread, inotify or records (record_fd -1): what
 * drain_create starts from, and what a unit test drives by hand. NULL
 * with errno. Free with drain_destroy. */
struct drain *drain_alloc(struct agent *a, const struct conf *conf);

/* The worker as iostaged starts it: spawn_as_user (daemon/spawn.c). */
int drain_spawn_worker(const struct dout *o, struct spawn_proc *ret, char *err,
		       size_t errlen);

/* Wake the loop (no-op without one). Any thread, lock held or not. */
void drain_wake(struct drain *d);

struct djob *drain_find_locked(struct drain *d, uint32_t id);
void drain_unlink_locked(struct drain *d, struct djob *dj);

/* A drain job for JOB (which has outputs), with its directories made and
 * opened when MAKE_DIRS. NULL with err. */
struct djob *drain_djob_create(struct drain *d, const struct job *job,
			       bool make_dirs, char *err, size_t errlen);
void drain_djob_free(struct djob *dj);

/* --- drain_queue.c ---------------------------------------------------------
 */

/* Queue REL on O: a file, or a directory to SCAN ("" is all of O); FINAL
 * is the end phase's scan. A file or scan is sent no earlier than
 * DRAIN_SETTLE_MS from now (a final scan at once), after everything
 * queued before it. Not queued: on a failed or done output; when an
 * equal item is already queued or a queued scan covers REL. Beyond
 * DRAIN_QUEUE_MAX items the queue becomes one scan of everything. */
void drain_enqueue(struct dout *o, const char *rel, bool scan, bool final);

/* Drop O's queue. */
void drain_queue_clear(struct dout *o);

/* Remove and return O's first item (the caller frees it), or NULL. */
struct drain_item *drain_dequeue(struct dout *o);

/* Milliseconds from NOW to T (negative when past). */
long drain_ms_until(const struct timespec *t, const struct timespec *now);

/* What O's worker does next, decided from O and NOW alone. */
enum drain_action {
	DRAIN_ACT_NONE = 0, /* nothing now (busy, empty, settling, over) */
	DRAIN_ACT_SEND,     /* send the first item (start a worker first
			     * when none runs) */
	DRAIN_ACT_CLOSE,    /* close its stdin: it syncs and exits */
	DRAIN_ACT_DONE,     /* the output's end phase is over */
};
enum drain_action drain_next_action(const struct dout *o,
				    const struct timespec *now);

/* Milliseconds until O has something to do without an fd event (0: now),
 * or -1: only an event (a worker's line, finish) moves it. */
long drain_out_wait_ms(const struct dout *o, const struct timespec *now);

/* Files queued or in flight in DJ's outputs. */
uint64_t drain_backlog(const struct djob *dj);

/* --- drain_proto.c ---------------------------------------------------------
 */

/* One line of a drain worker's output (drain_worker.h), parsed. */
enum drain_msg_kind {
	DRAIN_MSG_DONE = 0, /* {"done":true,...}: the command ended */
	DRAIN_MSG_COPIED,   /* ok with "bytes": a file copied */
	DRAIN_MSG_SKIPPED,  /* ok with "skipped": not copied, by design */
	DRAIN_MSG_OK,       /* any other ok (a link, gone) or no "ok" */
	DRAIN_MSG_FAILED,   /* ok false about PATH */
	DRAIN_MSG_WORKER,   /* ok false without a path: about the worker */
};

struct drain_msg {
	enum drain_msg_kind kind;
	uint64_t bytes;  /* COPIED */
	uint64_t failed; /* DONE: the command's failures */
	/* PATH and the error or skip reason, made one printable line */
	char path[DRAIN_REL_MAX];
	char text[CONF_ERR_MAX];
};

/* Parse LINE (NUL-terminated, untrusted) into RET. 0, or -1 with errno
 * EINVAL when it is not a JSON object (a protocol violation; RET
 * untouched). LINE NULL: -1. */
int drain_proto_parse(const char *line, struct drain_msg *ret);

/* Make S one printable line in place. */
void drain_sanitize(char *s);

/* Apply one line of O's worker: count, log, free the slot on "done".
 * -1 on a protocol violation (the caller kills the worker). */
int drain_worker_line(struct dout *o, const char *line);

/* A file of BYTES drained from O, counted in its job's current phase. */
void drain_count_file(struct dout *o, uint64_t bytes);

/* --- drain_loop.c ----------------------------------------------------------
 */

/* The loop thread (ARG: the drain). */
void *drain_loop(void *arg);

/* Act on drain_next_action(O, NOW): send, start a worker through
 * d->spawn, close, or mark done. */
void drain_schedule(struct dout *o, const struct timespec *now);

/* Read what O's worker wrote and apply its complete lines; EOF (or an
 * overlong line, a protocol violation: the worker is killed) ends it
 * through drain_worker_exited. */
void drain_worker_read(struct dout *o);

/* O's worker ended (EOF on its stdout): expected after we closed its
 * stdin; else restart (a scan covers what was in flight) up to
 * DRAIN_RESTARTS_MAX times, then the output fails. */
void drain_worker_exited(struct dout *o);

/* Close our ends of O's worker, make sure it is gone (KILL_IT: SIGKILL
 * first) and reap it now, or later from d->zombies. Its status if reaped
 * now, else -1. */
int drain_worker_release(struct dout *o, bool kill_it);

/* Reap the zombies that have exited. */
void drain_reap_zombies(struct drain *d);

/* No worker can run for O: what is left stays on the tier (and is kept
 * at finish). */
void drain_output_fail(struct dout *o, const char *why);

/* The job's phases: finish asked (queue the final scans), all outputs
 * done (watches dropped, waiters woken), the deadline passed (workers
 * killed, queues dropped). */
void drain_begin_end(struct djob *dj);
void drain_end_job(struct djob *dj);
void drain_abandon_job(struct djob *dj);

/* One turn for DJ at NOW. */
void drain_step_job(struct djob *dj, const struct timespec *now);

/* --- drain_watch.c ---------------------------------------------------------
 */

/* Watch O from its root; queue a scan when it already holds files. */
void drain_watch_output(struct dout *o);

/* Stop watching O's directory REL and everything below it; with REL
 * NULL, all of O. */
void drain_watches_drop(struct dout *o, const char *rel);

/* After an inotify overflow: watch again whatever is new, and scan. */
void drain_rescan_job(struct djob *dj);

/* Read and act on the pending inotify events. */
void drain_read_inotify(struct drain *d);

/* Free every watch (the inotify fd is closed by the caller). */
void drain_watches_free(struct drain *d);

/* --- drain_record.c --------------------------------------------------------
 */

extern const char *const drain_phase_names[];

/* StateDir/drain: created 0700, which OWNER must own (root in iostaged, a
 * unit test's uid); old records and temporary files removed. Its fd, or
 * -1 with err. */
int drain_records_open(const char *state_dir, uid_t owner, char *err,
		       size_t errlen);

/* Write DJ's record (small, local file). */
void drain_record_write_locked(struct djob *dj);

/* After a restart: take the counters of a record left by this job's run
 * (not one of a finished job that had the same id). */
void drain_record_resume(struct djob *dj);

/* The counters of DJ (status, record) into O. */
void drain_add_counters(cJSON *o, const struct djob *dj);

#endif /* IOSTAGE_DAEMON_DRAIN_INTERNAL_H */
