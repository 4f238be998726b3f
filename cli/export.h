/* export.h - `iostage export`: job records (docs/RECORDS.md) rendered as
 * JSON, CSV, Prometheus text, a Chrome/Perfetto trace or an HTML report.
 *
 * The formatters are a library over an array of records, whatever their
 * origin (iostaged's history ops, or a file saved earlier with --format
 * json), so they are tested against fixture records without a daemon.
 * Readers are lenient as the schema asks: unknown keys are ignored and a
 * missing key means "not measured" (shown empty, never as 0).
 */
#ifndef IOSTAGE_CLI_EXPORT_H
#define IOSTAGE_CLI_EXPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <cJSON.h>

#include "cli/client.h"

#define EXPORT_INPUT_MAX (256u * 1024 * 1024) /* --input file size limit */

enum export_format {
	EXPORT_JSON = 0,
	EXPORT_CSV,
	EXPORT_PROM,
	EXPORT_TRACE,
	EXPORT_HTML,
};

/* `iostage export ...` (argv[0] is "export"). Exit status. */
int export_main(const struct client *client, int argc, char **argv);

/* "json" ... "html" -> *ret. 0, or -1 (unknown). */
int export_format_parse(const char *s, enum export_format *ret);

/* --since: unix seconds ("1763860000"), or an age ("90m", "36h", "7d",
 * "30s") before NOW. 0 with *ret, or -1. */
int export_parse_since(const char *s, double now, double *ret);

/* Records from TEXT: a JSON array of records, an object with a "records"
 * array (a history_list reply), one record object, or one record per line
 * (JSON lines). Non-object entries are refused. Returns a new array
 * (caller deletes), or NULL with one line in err naming ORIGIN and why. */
cJSON *export_records_parse(const char *text, const char *origin, char *err,
			    size_t errlen);

/* Keep only the records of job JOB (0: any) that ended (or, without an
 * "end", started) at or after SINCE (< 0: any). */
void export_records_filter(cJSON *records, uint32_t job, double since);

/* Write RECORDS (an array) to OUT in FORMAT. 0, or -1 with errno (EIO
 * when OUT failed, ENOMEM). */
int export_render(enum export_format format, const cJSON *records, FILE *out);

/* The formatters (export_render dispatches to them). */
int export_json(const cJSON *records, FILE *out);
int export_csv(const cJSON *records, FILE *out);
int export_prom(const cJSON *records, FILE *out);
int export_trace(const cJSON *records, FILE *out);
int export_html(const cJSON *records, FILE *out);

/* --- reading records (export_record.c) ------------------------------------- */

/* The number at KEY if present, finite and >= 0. */
bool rec_num(const cJSON *o, const char *key, double *ret);

/* The string at KEY, or NULL. */
const char *rec_str(const cJSON *o, const char *key);

/* The record's job id, 0 if missing or invalid. */
uint32_t rec_job(const cJSON *record);

/* The first phase named NAME (a top-level one: no "parent"), or NULL. */
const cJSON *rec_phase(const cJSON *record, const char *name);

/* Cache use of a record's datasets: hits, datasets with a result, bytes
 * served from the cache, bytes copied. */
struct rec_cache {
	unsigned hits, datasets;
	double cached_bytes, copied_bytes;
};
void rec_cache_summary(const cJSON *record, struct rec_cache *ret);

#endif /* IOSTAGE_CLI_EXPORT_H */
