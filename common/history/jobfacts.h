/* jobfacts.h - the figures the recommendation rules need, from a job record.
 *
 * A job record (docs/RECORDS.md) is large: phases, timelines, processes.
 * The rules need a few dozen numbers per job. jobfacts_from_record()
 * reduces a record to those numbers once, when the history files it, so a
 * recommendation query reads small values instead of whole records.
 *
 * A fact that was not measured is left out, never invented as 0: without
 * the shim's counters there is no "rd"/"wr" object, without checkpoint
 * phases no "ck" object, and the rules that need them say "not enough
 * evidence". The shape (short keys: it is stored once per index):
 *
 *   { "job", "user", "uid", "job_name", "end", "run_s"?,
 *     "tasks"?,                         most tasks in one step
 *     "ds":  [{ "src", "bytes", "files", "tier", "result", "stage_s"? }],
 *     "rd":  { "ops", "bytes", "small", "seq", "consec", "time",
 *              "meta_time" }?               dataset class, run phase
 *     "ck":  { "n", "io_s", "unov_s" }?     checkpoint sub-phases
 *     "out": [{ "dest", "name", "tier", "drain"?, "bytes", "files",
 *               "shared"?, "fpp"?, "hist"?[10], "maxf"? }]
 *                                       maxf: the largest file drained
 *     "wr":  { "ops", "bytes", "sizes"[10] }? output class, run phase }
 */
#ifndef IOSTAGE_JOBFACTS_H
#define IOSTAGE_JOBFACTS_H

#include <stddef.h>

#include <cJSON.h>

#include "common/base/jsonbuf.h"

#define JOBFACTS_LIST_MAX 64 /* datasets / outputs kept per job */

/* Darshan's ten request-size buckets, in order, as in the record. */
#define JOBFACTS_NBUCKETS 10
extern const char *const jobfacts_buckets[JOBFACTS_NBUCKETS];

/* Upper bound in bytes of bucket I (the last one: UINT64 max as double). */
double jobfacts_bucket_max(size_t i);

/* Check the fields every record must have (job > 0, user, uid, end) and
 * return the facts (caller deletes), or NULL with one line in err. */
cJSON *jobfacts_from_record(const cJSON *record, char *err, size_t errlen);

/* The same facts straight in the packed form the history stores (the
 * bytes jobfacts_pack gives for jobfacts_from_record's tree), into OUT,
 * without building the tree. 0, or -1 with one line in err. */
int jobfacts_pack_record(struct jsonbuf *out, const cJSON *record, char *err,
			 size_t errlen);

/* The dataset sources the facts' "ds" lists, in order (at most MAX and
 * JOBFACTS_LIST_MAX): the record's datasets with an absolute source,
 * then the tree an observed job read. Pointers into RECORD. */
size_t jobfacts_sources(const cJSON *record, const char **srcs, size_t max);

/* What jobfacts_from_record refuses, checked without building the facts:
 * 0 when it would give them (memory permitting), else -1 with its error
 * line and errno EINVAL. */
int jobfacts_check(const cJSON *record, char *err, size_t errlen);

/* FACTS in the packed form the history stores (jsonbuf_pack with the
 * facts' keys as its dictionary) into OUT. 0, or -1 with errno. */
int jobfacts_pack(struct jsonbuf *out, const cJSON *facts);

/* Stored facts back as a tree (caller deletes): the packed form, or the
 * JSON text histories before 2026-11-23 stored. NULL with errno EINVAL
 * when damaged. */
cJSON *jobfacts_unpack(const char *val, size_t len);

/* The same, appended to RUNS, a jsonbuf_arena_array (a query's runs:
 * read-only, freed with it). The item, or NULL with errno EINVAL. */
cJSON *jobfacts_unpack_into(cJSON *runs, const char *val, size_t len);

/* The number at KEY, or DEF when it is missing or not a number. */
double jobfacts_num(const cJSON *obj, const char *key, double def);

/* The string at KEY, or DEF. */
const char *jobfacts_str(const cJSON *obj, const char *key, const char *def);

#endif /* IOSTAGE_JOBFACTS_H */
