/* promtext.h - Prometheus text exposition (format 0.0.4), built in memory.
 *
 * Used by iostaged's /metrics and textfile writer and by `iostage export
 * --format prom`, so that both speak exactly the same names. The rules the
 * format imposes are kept here: one HELP and TYPE per family, every sample
 * of a family together, label values escaped (\\ \" \n), values as
 * Prometheus floats (NaN, +Inf, -Inf), no timestamps (the textfile
 * collector refuses them).
 */
#ifndef IOSTAGE_PROMTEXT_H
#define IOSTAGE_PROMTEXT_H

#include <stdbool.h>
#include <stddef.h>

#include <cJSON.h>

struct promtext;

/* A new, empty exposition. NULL on ENOMEM. */
struct promtext *promtext_create(void);

/* NULL is a no-op. */
void promtext_destroy(struct promtext *pt);

/* Is NAME a valid metric or label name ([a-zA-Z_:][a-zA-Z0-9_:]*; labels
 * may not use ':' but we never do)? */
bool promtext_valid_name(const char *name);

/* Start family NAME of TYPE ("counter", "gauge") with HELP (one line).
 * 0, or -1 with errno (EINVAL: bad name or type, ENOMEM). */
int promtext_family(struct promtext *pt, const char *name, const char *type,
		    const char *help);

/* One sample of the current family: NAME (the family's name, or with a
 * suffix), LABELS as a NULL-terminated list of name, value, name, value...
 * (NULL: no labels), VALUE. 0, or -1 with errno. */
int promtext_sample(struct promtext *pt, const char *name,
		    const char *const *labels, double value);

/* The text so far (owned by PT; valid until the next call). Sets a
 * sticky error: after any ENOMEM this returns NULL. */
const char *promtext_text(const struct promtext *pt, size_t *ret_len);

/* Job phase series from job records (docs/RECORDS.md): for every record of
 * the array RECORDS, iostage_job_phase_bytes{jobid,phase,direction} and
 * iostage_job_phase_seconds{jobid,phase}, one series per distinct phase
 * name (repeated sub-phases are summed). Direction is from the job's side:
 * "read" (stage_in's bytes, run's read_bytes) or "write" (run's
 * write_bytes, stage_out's bytes). Records without a positive "job", or
 * phases without a name, are skipped. 0, or -1 with errno. */
int promtext_job_phases(struct promtext *pt, const cJSON *records);

/* iostagectld's scheduling counters (docs/SCHEDULING.md) from a
 * `sched_status` reply: iostage_ctld_nodes_reporting,
 * _placement_preferred_total, _placements_total{outcome},
 * _feature_updates_total{result}, _prestage_jobs_noted_total,
 * _prestage_pending_jobs, _prestage_requests_total,
 * _prestage_datasets_total{result}, _prestage_bytes_total,
 * _prestage_predictions_total{outcome}, _prestage_saved_seconds_total.
 * A field the reply lacks is 0. The same names on iostagectld's /metrics
 * and in `iostage status --prom`. 0, or -1 with errno. */
int promtext_sched_status(struct promtext *pt, const cJSON *reply);

#endif /* IOSTAGE_PROMTEXT_H */
