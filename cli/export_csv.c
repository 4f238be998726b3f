/* export_csv.c - one CSV row per job (RFC 4180).
 *
 * Fields with a comma, quote, CR or LF are quoted, quotes doubled. Text
 * fields that a spreadsheet would run as a formula (=, +, -, @, tab, CR
 * first) get a leading "'" (the OWASP advice): job names are the user's.
 * A value the record does not have is an empty field, never 0.
 */
#include <string.h>

#include "cli/export.h"
#include "common/telemetry/telrec.h"

static const char *const columns[] = {
	"job",
	"user",
	"uid",
	"job_name",
	"node",
	"profile_origin",
	"state",
	"start",
	"end",
	"seconds",
	"datasets",
	"cache_hits",
	"cache_cached_bytes",
	"cache_copied_bytes",
	"stage_in_seconds",
	"stage_in_bytes",
	"run_seconds",
	"run_read_bytes",
	"run_write_bytes",
	"checkpoint_seconds",
	"checkpoint_write_bytes",
	"stage_out_seconds",
	"stage_out_bytes",
	"stage_out_during_bytes",
	"stage_out_end_bytes",
	"stage_out_end_seconds",
	"outputs_failed_files",
	/* Appended, so that earlier columns keep their places: what
	 * run_read_bytes/run_write_bytes are (RECORDS.md bytes_source),
	 * and /proc's rchar/wchar of the run. */
	"run_bytes_source",
	"run_rchar",
	"run_wchar",
};

static void put_text(FILE *out, const char *s)
{
	bool quote = strpbrk(s, ",\"\r\n") != NULL;
	bool formula = strchr("=+-@\t\r", s[0]) && s[0];

	if (quote)
		fputc('"', out);
	if (formula)
		fputc('\'', out);
	for (; *s; s++) {
		if (*s == '"')
			fputc('"', out);
		fputc(*s, out);
	}
	if (quote)
		fputc('"', out);
}

static void sep(FILE *out, bool *first)
{
	if (!*first)
		fputc(',', out);
	*first = false;
}

static void field_str(FILE *out, bool *first, const char *s)
{
	sep(out, first);
	if (s)
		put_text(out, s);
}

/* Integers as integers; others with millisecond precision. */
static void field_num(FILE *out, bool *first, bool has, double v)
{
	sep(out, first);
	if (!has)
		return;
	if (v == (double)(long long)v && v < 9007199254740992.0)
		fprintf(out, "%lld", (long long)v);
	else
		fprintf(out, "%.3f", v);
}

static void field_key(FILE *out, bool *first, const cJSON *o, const char *key)
{
	double v = 0;
	bool has = o && rec_num(o, key, &v);

	field_num(out, first, has, v);
}

/* Sum KEY over the run's sub-phases named NAME. */
static bool sub_sum(const cJSON *rec, const char *name, const char *key,
		    double *ret)
{
	const cJSON *ph;
	bool any = false;
	double v;

	*ret = 0;
	cJSON_ArrayForEach(ph,
			   cJSON_GetObjectItemCaseSensitive(rec, "phases")) {
		const char *n = rec_str(ph, "name");

		if (n && !strcmp(n, name) && rec_str(ph, "parent") &&
		    rec_num(ph, key, &v)) {
			*ret += v;
			any = true;
		}
	}
	return any;
}

static void row(FILE *out, const cJSON *rec)
{
	const cJSON *in = rec_phase(rec, "stage_in");
	const cJSON *run = rec_phase(rec, "run");
	const cJSON *so = rec_phase(rec, "stage_out");
	const cJSON *o;
	struct rec_cache c;
	double start, end, v, failed = 0;
	bool first = true, has_start, has_end, has_outputs = false, has;

	rec_cache_summary(rec, &c);
	field_key(out, &first, rec, "job");
	field_str(out, &first, rec_str(rec, "user"));
	field_key(out, &first, rec, "uid");
	field_str(out, &first, rec_str(rec, "job_name"));
	field_str(out, &first, rec_str(rec, "node"));
	field_str(out, &first, rec_str(rec, "profile_origin"));
	field_str(out, &first, rec_str(rec, "state"));
	has_start = rec_num(rec, "start", &start);
	has_end = rec_num(rec, "end", &end);
	field_num(out, &first, has_start, start);
	field_num(out, &first, has_end, end);
	field_num(out, &first, has_start && has_end && end >= start,
		  end - start);
	field_num(out, &first, true, c.datasets);
	field_num(out, &first, true, c.hits);
	field_num(out, &first, true, c.cached_bytes);
	field_num(out, &first, true, c.copied_bytes);
	field_key(out, &first, in, "seconds");
	field_key(out, &first, in, "bytes");
	field_key(out, &first, run, "seconds");
	field_key(out, &first, run, "read_bytes");
	field_key(out, &first, run, "write_bytes");
	has = sub_sum(rec, "checkpoint", "seconds", &v);
	field_num(out, &first, has, v);
	has = sub_sum(rec, "checkpoint", "write_bytes", &v);
	field_num(out, &first, has, v);
	field_key(out, &first, so, "seconds");
	field_key(out, &first, so, "bytes");
	field_key(out, &first, so, "during_bytes");
	field_key(out, &first, so, "end_bytes");
	field_key(out, &first, so, "end_seconds");
	cJSON_ArrayForEach(o,
			   cJSON_GetObjectItemCaseSensitive(rec, "outputs")) {
		has_outputs = true;
		if (rec_num(o, "failed_files", &v))
			failed += v;
	}
	field_num(out, &first, has_outputs, failed);
	if (run) {
		struct telrec_io io = { 0 };

		telrec_rchar_from_json(run, &io);
		field_str(out, &first, telrec_bytes_source(run));
		field_num(out, &first, true, (double)io.rchar);
		field_num(out, &first, true, (double)io.wchar);
	} else {
		for (int i = 0; i < 3; i++)
			field_str(out, &first, NULL);
	}
	fputs("\r\n", out);
}

int export_csv(const cJSON *records, FILE *out)
{
	const cJSON *rec;
	size_t i;

	for (i = 0; i < sizeof(columns) / sizeof(columns[0]); i++)
		fprintf(out, "%s%s", i ? "," : "", columns[i]);
	fputs("\r\n", out);
	cJSON_ArrayForEach(rec, records)
		row(out, rec);
	return 0;
}
