/* telrec.h - the pure parts of a job's telemetry record (docs/RECORDS.md).
 *
 * Everything here is testable without a daemon: the run phase's timeline
 * (bounded: when full it folds pairs of samples into one and doubles its
 * interval), the Darshan-named counter vocabulary, merging counter objects,
 * and the strict check of a shim_report request, which comes from a
 * process of the job's user and is therefore untrusted.
 */
#ifndef IOSTAGE_TELREC_H
#define IOSTAGE_TELREC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cJSON.h>

#define TELREC_TIMELINE_MAX 1024 /* samples kept; more fold pairs */
#define TELREC_PHASE_NAME_MAX 32 /* sub-phase names [A-Za-z0-9_.-] */
#define TELREC_REPORT_PHASES_MAX 32
#define TELREC_REPORT_FILES_MAX 256
#define TELREC_NODE_MAX 64
#define TELREC_REPORT_PATH_MAX 4096 /* a files[] path, with its NUL */
#define TELREC_REASON_MAX 256       /* "disabled" text, with its NUL */
#define TELREC_NBUCKETS 10          /* Darshan's request/file size buckets */

/* I/O counters of /proc/PID/io that we keep. */
struct telrec_io {
	uint64_t rchar, wchar, syscr, syscw;
	uint64_t read_bytes, write_bytes; /* storage; 0 if unreadable */
};

/* One timeline entry: the I/O of (t - interval, t]. */
struct telrec_sample {
	double t;
	uint64_t rb, wb, rs, ws;
};

struct telrec_timeline {
	double interval; /* seconds a sample covers (doubles on each fold) */
	size_t n;
	struct telrec_sample s[TELREC_TIMELINE_MAX];
};

/* Empty timeline whose samples cover INTERVAL seconds. */
void telrec_timeline_init(struct telrec_timeline *tl, double interval);

/* Add the I/O D seen at time T. Merged into the last sample when T falls
 * within its interval (after folds), else appended; a full timeline first
 * folds pairs (interval doubles), so it never exceeds
 * TELREC_TIMELINE_MAX and never loses bytes. */
void telrec_timeline_add(struct telrec_timeline *tl, double t,
			 const struct telrec_io *d);

/* Sum of the samples overlapping [T0, T1] into *RET (rchar/wchar/syscr/
 * syscw only). */
void telrec_timeline_sum(const struct telrec_timeline *tl, double t0, double t1,
			 struct telrec_io *ret);

/* [[t, rb, wb, rs, ws], ...]; NULL on ENOMEM. */
cJSON *telrec_timeline_to_json(const struct telrec_timeline *tl);

/* Read back what telrec_timeline_to_json wrote (lenient: bad entries,
 * among them a time before 1970 or past the year 33658, are skipped; at
 * most TELREC_TIMELINE_MAX are kept). */
void telrec_timeline_from_json(struct telrec_timeline *tl, const cJSON *arr,
			       double interval);

/* a += b */
void telrec_io_add(struct telrec_io *a, const struct telrec_io *b);

/* Is NAME a counter of the RECORDS.md vocabulary? */
bool telrec_counter_known(const char *name);

/* Is NAME a valid phase name ([A-Za-z0-9_.-]{1,31})? */
bool telrec_phase_name_ok(const char *name);

/* Add counters object SRC into DST (created keys as needed): sums, except
 * POSIX_MAX_BYTE_* which take the maximum. Unknown or non-numeric entries
 * of SRC are ignored. 0, or -1 on ENOMEM. */
int telrec_counters_merge(cJSON *dst, const cJSON *src);

/* Check a shim_report request (what shim/preload_report.c sends, docs/
 * SHIM.md) strictly: known keys only; pid ppid step rank local_rank
 * start end phases_folded numbers >= 0; node a string < TELREC_NODE_MAX;
 * identity "pmix"|"slurm"; reason "exit"|"exec"; disabled a string <
 * TELREC_REASON_MAX; "counters" is {phase:{class:{COUNTER:number>=0}}}
 * with at most TELREC_REPORT_PHASES_MAX phases, classes dataset/output/
 * other, known counter names; "io_seconds" and "unoverlapped" are
 * {phase:seconds}; "files" at most TELREC_REPORT_FILES_MAX entries
 * {path (absolute, < TELREC_REPORT_PATH_MAX), class, written};
 * "observed" {root (normalized absolute), files, bytes, missed}. 0, or -1
 * with one line in err naming the key. */
int telrec_report_check(const cJSON *req, char *err, size_t errlen);

/* Merge a shim_report's "observed" (an observed job: the tree it read
 * under the PFS, docs/SHIM.md) into DST, the record's "observed" object
 * {source, files, bytes, missed}: source is the deepest directory holding
 * every process's root (never above PFS), files and bytes the largest
 * process's, missed summed. A root not under PFS (conf PfsPath=, whole
 * components; NULL or "" = none) is ignored. 0, or -1 on ENOMEM. */
int telrec_observed_merge(cJSON *dst, const cJSON *obs, const char *pfs);

/* Add one phase's counters {class:{COUNTER:n}} into DST ({class:{...}},
 * classes created as needed). 0, or -1 on ENOMEM. */
int telrec_class_counters_merge(cJSON *dst, const cJSON *by_class);

/* Add every phase of a report's "counters" ({phase:{class:{...}}}) into
 * DST ({class:{...}}): the run phase's totals, sub-phases included. 0, or
 * -1 on ENOMEM. */
int telrec_counters_fold(cJSON *dst, const cJSON *phases);

/* The sum of a {phase: seconds} object (bad entries count 0). */
double telrec_seconds_total(const cJSON *o);

/* Where a phase's read_bytes/write_bytes come from (docs/RECORDS.md,
 * "bytes_source"): the shim's file I/O, or /proc/PID/io rchar/wchar. */
#define TELREC_BYTES_SHIM "shim"
#define TELREC_BYTES_PROC "proc_rchar"

/* The file I/O bytes of shim counters BY_CLASS ({class:{...}}, may be
 * NULL): POSIX_BYTES_READ and POSIX_BYTES_WRITTEN summed over classes. */
void telrec_class_bytes(const cJSON *by_class, uint64_t *ret_read,
			uint64_t *ret_written);

/* The same over every phase of a report's counters ({phase:{class:..}}). */
void telrec_report_bytes(const cJSON *phases, uint64_t *ret_read,
			 uint64_t *ret_written);

/* Add the byte keys of a run phase or sub-phase to PH: read_bytes and
 * write_bytes, bytes_source, and the /proc figures of IO under their own
 * names (rchar, wchar, read_syscalls, write_syscalls). When the phase has
 * shim COUNTERS ({class:{...}}), read_bytes/write_bytes are their file
 * I/O (bytes_source "shim"); with COUNTERS NULL, IO's rchar/wchar
 * ("proc_rchar"). 0, or -1 on ENOMEM. */
int telrec_phase_bytes(cJSON *ph, const struct telrec_io *io,
		       const cJSON *counters);

/* The source of the read_bytes/write_bytes of PH, a phase of a record:
 * its bytes_source, TELREC_BYTES_PROC when it has none (records filed
 * before bytes_source had rchar/wchar there). Never NULL. */
const char *telrec_bytes_source(const cJSON *ph);

/* Back from a record's phase or process PH: its /proc rchar and wchar
 * into RET->rchar/wchar ("rchar"/"wchar"; in records filed before those
 * keys, "read_bytes"/"write_bytes", which then held them). */
void telrec_rchar_from_json(const cJSON *ph, struct telrec_io *ret);

/* Darshan's size bucket (0 .. TELREC_NBUCKETS-1) of BYTES: 0_100 holds
 * 0..100, 100_1K 101..1024, ..., 1G_PLUS above 1 GiB. */
size_t telrec_size_bucket(uint64_t bytes);

/* Bucket I's name ("0_100" ... "1G_PLUS"), NULL past the last. */
const char *telrec_bucket_name(size_t i);

/* {"0_100": n, ..., "1G_PLUS": n}; NULL on ENOMEM. */
cJSON *telrec_size_hist_json(const uint64_t hist[TELREC_NBUCKETS]);

/* Back from telrec_size_hist_json's object (missing or bad: 0). */
void telrec_size_hist_from_json(uint64_t hist[TELREC_NBUCKETS], const cJSON *o);

#endif /* IOSTAGE_TELREC_H */
