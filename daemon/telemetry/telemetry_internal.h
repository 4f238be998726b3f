/* telemetry_internal.h - what the files of daemon/telemetry/telemetry*.c
 * share: the live record (struct tjob), struct telemetry, and the
 * functions one file uses of another's. Not for use outside them.
 *
 * Every function named _locked is called with tel->lock held (a tjob's
 * tel is its telemetry).
 */
#ifndef IOSTAGE_DAEMON_TELEMETRY_INTERNAL_H
#define IOSTAGE_DAEMON_TELEMETRY_INTERNAL_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#include <cJSON.h>

#include "common/config/profile.h"
#include "common/telemetry/telrec.h"
#include "daemon/telemetry/sampler.h"
#include "daemon/telemetry/telemetry.h"

struct outfiles;
struct ticker;

#define TEL_RECORD_MAX (8 * 1024 * 1024) /* a record file we read back */
#define TEL_PERSIST_EVERY_S 5
#define TEL_RANKS_MAX 64 /* ranks listed per sub-phase */

struct tproc {
	struct telemetry_task id;
	double start, end; /* end 0: running */
	struct telrec_io io;
	bool traced;
	bool shim_disabled;        /* its shim gave up (report says why) */
	bool sampled;              /* a registered task: io is /proc's */
	bool has_file_bytes;       /* it sent shim counters: */
	uint64_t file_rb, file_wb; /* their file I/O */
};

struct tmark {
	char name[TELREC_PHASE_NAME_MAX];
	const char *source; /* "marker" | "auto" */
	double start, end;
	int open; /* begins not yet ended */
	/* A marker's I/O, exact: the job is sampled at every begin and end,
	 * so the phase gets what the job did between its first open begin
	 * and its last end, not whole sampling intervals. */
	bool exact;
	struct telrec_io io;      /* closed stretches so far */
	struct telrec_io at_open; /* run_io when it last opened */
	int64_t ranks[TEL_RANKS_MAX];
	size_t nranks;
	cJSON *counters; /* {class:{...}} from the shim, or NULL */
	double io_s, unov_s;
	bool has_io_s;
};

struct tjob {
	uint32_t id;
	uid_t uid;
	cJSON *base; /* the record's job-level keys */
	cJSON *stage_in, *stage_out;
	double run_start, run_end;
	struct telrec_io run_io;
	struct telrec_timeline *tl;
	cJSON *run_counters; /* shim totals of phase "run" */
	double run_io_s, run_unov_s;
	bool has_run_io_s;
	struct tproc *procs;
	size_t nprocs;
	struct tmark marks[TELEMETRY_MARKS_MAX];
	size_t nmarks;
	struct outfiles *files; /* output files and their writers */
	bool has_files;
	cJSON *observed; /* an observed job's tree (telrec), or NULL */
	/* Counts a restarted daemon found in the record: its file table
	 * is gone, later reports add to these. [PROFILE_MAX_OUTPUTS]:
	 * the job's. */
	uint64_t base_shared[PROFILE_MAX_OUTPUTS + 1];
	uint64_t base_fpp[PROFILE_MAX_OUTPUTS + 1];
	struct sampler_tree tree;
	bool dirty;
	time_t persisted;
	struct telemetry *tel; /* whose record it is */
	struct tjob *next;
};

struct telemetry {
	struct agent *agent;
	const struct conf *conf;
	int dir_fd;           /* StateDir/telemetry */
	pthread_mutex_t lock; /* the live records, and each record's fields */
	struct tjob *jobs;    /* the live records */
	struct ticker *sampler;
};

/* --- telemetry.c -----------------------------------------------------------
 */

/* CLOCK_REALTIME in seconds. */
double telemetry_now_s(void);
/* The number at KEY of O (0 if none), the string (DFLT if none). */
double telemetry_num(const cJSON *o, const char *key);
const char *telemetry_str(const cJSON *o, const char *key, const char *dflt);
/* A rank or step from a request or a record: -1 when absent or bad. */
int64_t telemetry_rank_of(const cJSON *v);
int64_t telemetry_step_of(const cJSON *v);

/* The live record of job ID, or NULL. */
struct tjob *telemetry_find_locked(struct telemetry *tel, uint32_t id);
/* Free T (not linked any more); NULL is a no-op. */
void telemetry_tjob_free(struct tjob *t);
/* The live record of job ID, created from the job table if needed; NULL
 * with err when the job is unknown or not PEER_UID's (root: 0), or with
 * errno EALREADY when its record is finished (read it from disk). */
struct tjob *telemetry_get_locked(struct telemetry *tel, uint32_t id,
				  uid_t peer_uid, char *err, size_t errlen);
/* telemetry_get_locked, for what only a running job takes: NULL with err
 * once its run has ended. */
struct tjob *telemetry_running_locked(struct telemetry *tel, uint32_t id,
				      uid_t peer_uid, char *err, size_t errlen);
/* T's process PID, or NULL; a new one (NULL when full or ENOMEM). */
struct tproc *telemetry_find_proc(struct tjob *t, pid_t pid);
struct tproc *telemetry_add_proc(struct tjob *t,
				 const struct telemetry_task *id);
/* Sample T's process tree now into its run I/O and timeline. */
void telemetry_sample_locked(struct tjob *t);
/* *ACC += NOW - THEN, for the /proc counters (each only grows). */
void telemetry_io_add_since(struct telrec_io *acc, const struct telrec_io *now,
			    const struct telrec_io *then);
/* T's sub-phase NAME, made with SOURCE ("marker" | "auto") if new; NULL
 * when T has TELEMETRY_MARKS_MAX. */
struct tmark *telemetry_mark_get(struct tjob *t, const char *name,
				 const char *source);

/* --- telemetry_build.c
 * --------------------------------------------------------- */

/* The whole record as RECORDS.md describes it (with "end": END when
 * FINISHED). NULL on ENOMEM. */
cJSON *telemetry_build_locked(struct tjob *t, bool finished, double end);

/* --- telemetry_store.c
 * --------------------------------------------------------- */

/* StateDir/telemetry/ID.json: written atomically (0, or -1), read (a new
 * object, or NULL when absent or damaged). */
int telemetry_write_record(struct telemetry *tel, uint32_t id,
			   const cJSON *rec);
cJSON *telemetry_read_record(struct telemetry *tel, uint32_t id);
/* Write T's record now (a warning when it cannot). */
void telemetry_persist_locked(struct tjob *t);
/* At creation: remove records older than TELEMETRY_KEEP_DAYS and resume
 * the live ones. */
void telemetry_load_records(struct telemetry *tel);

#endif /* IOSTAGE_DAEMON_TELEMETRY_INTERNAL_H */
