/* history.h - every job's record, kept in RocksDB under StateDir/history.
 *
 * Column families (docs/HISTORY.md has the full story):
 *   jobs      be32(job)                              -> record, packed
 *   phases    be32(job)                              -> [phases] (old
 *             histories only: the phases are now in the jobs value)
 *   apps      user \0 job_name \0 be64(~end_us) be32(job) -> facts, packed
 *   datasets  source \0 be64(~end_us) be32(job)      -> the job's apps key
 *   times     be64(end_us) be32(job)                 -> "" (retention, list)
 *   parts     keys of ctld/filing/partstore.c (a multi-node job's parts,
 *             waiting and filed; removed with the job by the retention)
 * "facts" are jobfacts_from_record()'s figures, so a recommendation query
 * is one prefix scan over small values, newest first (~end = inverted);
 * a dataset query adds one point lookup per run (facts are stored once).
 *
 * A job is filed with one WriteBatch through the WAL: all its keys or
 * none. A database that cannot be opened (corrupt, locked, unreadable) is
 * never created afresh, overwritten or removed here: it is opened
 * read-only if RocksDB can, else left alone; `iostagectld --repair-history`
 * (history_repair) is the explicit way to recover it.
 *
 * Library part (history_open ...): a handle, for the service, the tests and
 * the bench. Daemon part (history_init ...): the daemon's one database,
 * opened from the configuration; when it is unusable every call answers
 * "history disabled: <why>" and staging carries on.
 */
#ifndef IOSTAGE_HISTORY_H
#define IOSTAGE_HISTORY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cJSON.h>

#include "common/base/jsonbuf.h"
#include "common/config/conf.h"

#define HISTORY_DIR_NAME "history"
#define HISTORY_LIST_MAX 1000   /* records per history_list reply */
#define HISTORY_RUNS_MAX 2000   /* facts per query */
#define HISTORY_SCAN_MAX 200000 /* keys one list/query may walk */

struct history;

enum history_open_mode {
	HISTORY_READ_WRITE = 0,
	HISTORY_READ_ONLY,
};

enum history_put_flags {
	HISTORY_PUT_SYNC = 1, /* fsync the WAL before returning (Epilog) */
};

/* Open (READ_WRITE: create when DIR is missing or empty) the database in
 * DIR. A directory that holds files but no CURRENT is refused as damaged
 * rather than initialized over. Returns a handle or NULL with one line in
 * err (RocksDB's reason included). */
struct history *history_open(const char *dir, enum history_open_mode mode,
			     char *err, size_t errlen);

/* NULL is a no-op. */
void history_close(struct history *h);

bool history_is_read_only(const struct history *h);

/* File N records (each checked by jobfacts_from_record) in one WriteBatch:
 * all of them or none. A job id already present is replaced, its old index
 * keys removed in the same batch. Callable from several threads at once:
 * filings run in parallel, except that two of the same job id take turns.
 * 0, or -1 with err (errno EINVAL for a bad record, EROFS read-only, EIO
 * from RocksDB). */
int history_put_many(struct history *h, const cJSON *const *records, size_t n,
		     unsigned flags, char *err, size_t errlen);

/* Writes in the "parts" column family that go in the same WriteBatch as
 * a filing (ctld/filing/partstore.c keeps a multi-node job's parts there, so a
 * filed record and the parts it was merged from are one atomic write).
 * DELETE_RANGE deletes [key, val) (val is the end key). */
enum history_aux_op {
	HISTORY_AUX_PUT = 0,
	HISTORY_AUX_DELETE,
	HISTORY_AUX_DELETE_RANGE,
};

struct history_aux {
	enum history_aux_op op;
	const char *key;
	size_t klen;
	const char *val;
	size_t vlen;
};

/* history_put_many of N records (N may be 0) plus the NAUX writes AUX in
 * the parts family, all in one WriteBatch: all of it or nothing. Same
 * return as history_put_many (EROFS also for a history without a parts
 * family, i.e. one opened read-only from before it). */
int history_put_aux(struct history *h, const cJSON *const *records, size_t n,
		    const struct history_aux *aux, size_t naux, unsigned flags,
		    char *err, size_t errlen);

/* The keys of the parts family under HISTORY_PARTS_TAG be32(JOB) are
 * JOB's: when the retention removes a job whose record names "nodes",
 * they go with it. Writes that prefix into BUF (room for
 * HISTORY_PARTS_PREFIX_LEN) and returns its length. */
#define HISTORY_PARTS_TAG 'j'
#define HISTORY_PARTS_PREFIX_LEN 5
size_t history_parts_prefix(uint32_t job, char *buf);

/* The value of KEY (KLEN bytes) in the parts family: caller frees, the
 * length in *ret_vlen; NULL with errno ENOENT (absent), or EIO and err. */
char *history_aux_get(struct history *h, const char *key, size_t klen,
		      size_t *ret_vlen, char *err, size_t errlen);

/* Call FN(KEY, KLEN, VAL, VLEN, ARG) for every key of the parts family
 * that starts with PREFIX (PLEN bytes), in key order; FN returns 0 to go
 * on, 1 to stop, -1 (errno) to stop with an error. The pointers are valid
 * during the call only. 0, or -1 with err. */
int history_aux_scan(struct history *h, const char *prefix, size_t plen,
		     int (*fn)(const char *key, size_t klen, const char *val,
			       size_t vlen, void *arg),
		     void *arg, char *err, size_t errlen);

/* One record: history_put_many(h, &record, 1, ...). */
int history_put(struct history *h, const cJSON *record, unsigned flags,
		char *err, size_t errlen);

/* The record of JOB with its phases (caller deletes), or NULL with errno
 * ENOENT (not recorded) or EIO and err. */
cJSON *history_get(struct history *h, uint32_t job, char *err, size_t errlen);

/* Summaries (job user uid job_name node state profile_origin start end
 * datasets[{source bytes files result}]) of the jobs that ended at or
 * after SINCE (unix s), newest first, at most LIMIT (<= HISTORY_LIST_MAX);
 * only USER's when USER is not NULL. Caller deletes; NULL + err on error. */
cJSON *history_list(struct history *h, const char *user, double since,
		    unsigned limit, char *err, size_t errlen);

/* Facts (jobfacts.h) of runs that ended at or after SINCE, newest first,
 * at most MAX (<= HISTORY_RUNS_MAX), as an array in one arena: read it,
 * detach runs to leave them out, never cJSON_Delete or change any of it;
 * history_runs_free frees the lot. NULL + err on error.
 *   by_app:     USER's jobs named JOB_NAME
 *   by_dataset: jobs that staged SOURCE; only UID's unless UID < 0
 *   by_user:    every job of USER */
cJSON *history_runs_by_app(struct history *h, const char *user,
			   const char *job_name, double since, unsigned max,
			   char *err, size_t errlen);
cJSON *history_runs_by_dataset(struct history *h, const char *source,
			       int64_t uid, double since, unsigned max,
			       char *err, size_t errlen);
cJSON *history_runs_by_user(struct history *h, const char *user, double since,
			    unsigned max, char *err, size_t errlen);
void history_runs_free(cJSON *runs);

/* A whole record in the packed form of the jobs family (its dictionary),
 * into OUT (0, or -1 with errno); and back, from that form or from JSON
 * text (values stored before it): caller deletes, NULL when damaged. */
int history_pack_record(struct jsonbuf *out, const cJSON *record);
cJSON *history_unpack_record(const char *val, size_t len);

/* Delete every job that ended before CUTOFF (unix s), at most MAX of them,
 * in batches. *ret_deleted gets the count. 0, or -1 with err. */
int history_expire(struct history *h, double cutoff, unsigned max,
		   unsigned *ret_deleted, char *err, size_t errlen);

/* How many jobs are recorded (walks the times index). -1 with err. */
int64_t history_count(struct history *h, char *err, size_t errlen);

/* Recover a damaged database: copy DIR's files to DIR.damaged.<unix time>
 * (the copy is never touched again), run RocksDB's repair on DIR, open it
 * and count the jobs. 0 with *ret_jobs and the copy's path in
 * ret_copy, or -1 with err. The daemon must not be using DIR. */
int history_repair(const char *dir, int64_t *ret_jobs, char *ret_copy,
		   size_t copylen, char *err, size_t errlen);

/* Call FN(RECORD, ARG) for every recorded job, oldest end first; FN
 * takes RECORD (it deletes it) and returns 0, or -1 (errno) to stop.
 * Records that cannot be read are skipped and counted in *ret_unreadable
 * (may be NULL). 0, or -1 with err. */
int history_foreach(struct history *h, int (*fn)(cJSON *record, void *arg),
		    void *arg, unsigned *ret_unreadable, char *err,
		    size_t errlen);

/* --- the daemon's history -------------------------------------------------- */
/* One per process: iostagectld's, or iostaged's own when the site runs no
 * service. */

/* CONF->state_dir/history into BUF. */
void history_dir(const struct conf *conf, char *buf, size_t buflen);

/* mkdir -p CONF->state_dir (0755; the history directory inside is
 * RocksDB's to make). 0, or -1 with errno. */
int history_make_state_dir(const struct conf *conf);

/* iostaged with a service configured (ControllerHost=): no database on
 * this node; history_db() answers "history disabled: kept by iostagectld
 * at HOST port P ...", history_conf() is CONF. */
void history_init_remote(const struct conf *conf);

/* Open CONF->state_dir/history (CONF must outlive the history) and apply
 * the retention once. Never fails: when the database is unusable it logs
 * one line saying why and that staging goes on, and history_db() answers
 * with that reason. */
void history_init(const struct conf *conf);

/* Close the daemon's database (no-op when disabled). */
void history_fini(void);

/* The daemon's database, or NULL with "history disabled: <why>" in why. */
struct history *history_db(char *why, size_t whylen);

/* The configuration history_init was given (NULL before). */
const struct conf *history_conf(void);

/* The seam for the Epilog: file RECORD (docs/RECORDS.md) in the daemon's
 * history with one synced WriteBatch, and apply the retention at most
 * once an hour. 0, or -1 with one line in err. */
int history_record_job(const cJSON *record, char *err, size_t errlen);

/* `PROG --repair-history [-c CONF]` (iostagectld, or iostaged for its
 * node-local history): history_repair on the configured directory, with
 * a report on stdout. The program must be stopped. Returns the exit
 * status. */
int history_repair_main(const char *prog, int argc, char **argv);

#endif /* IOSTAGE_HISTORY_H */
