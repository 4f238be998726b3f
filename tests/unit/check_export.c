/* check_export.c - `iostage export`'s library over job records
 * (docs/RECORDS.md): reading and filtering records, and the JSON, CSV,
 * Prometheus, trace and HTML formatters, against the fixture records in
 * tests/unit/fixtures/records.json (a cache hit, a build with outputs and
 * checkpoint sub-phases, a failed stage-in, odd characters everywhere). */
#define _GNU_SOURCE
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <check.h>

#include "cli/export.h"
#include "cli/telemetry.h"
#include "common/base/smallfile.h"
#include "common/telemetry/recmerge.h"
#include "tests/unit/check_run.h"

#ifndef FIXTURES
#define FIXTURES "tests/unit/fixtures"
#endif

static cJSON *records;

static void setup(void)
{
	char reason[128], err[512];
	char *text = smallfile_read(FIXTURES "/records.json", 1 << 20, reason,
				    sizeof(reason));

	ck_assert_msg(text != NULL, "fixture: %s", reason);
	records = export_records_parse(text, "records.json", err, sizeof(err));
	ck_assert_msg(records != NULL, "%s", err);
	free(text);
}

static void teardown(void)
{
	cJSON_Delete(records);
}

/* FMT applied to RECS, as a string (caller frees). */
static char *render(enum export_format fmt, const cJSON *recs)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	ck_assert_ptr_nonnull(f);
	ck_assert_int_eq(export_render(fmt, recs, f), 0);
	fclose(f);
	return buf;
}

static cJSON *only_job(uint32_t job)
{
	cJSON *copy = cJSON_Duplicate(records, true);

	export_records_filter(copy, job, -1);
	ck_assert_int_eq(cJSON_GetArraySize(copy), 1);
	return copy;
}

static int count(const char *hay, const char *needle)
{
	int n = 0;

	for (const char *p = hay; (p = strstr(p, needle)); p++)
		n++;
	return n;
}

/* --- reading ----------------------------------------------------------------------- */

START_TEST(test_fixture_shapes)
{
	ck_assert_int_eq(cJSON_GetArraySize(records), 4);
	ck_assert_uint_eq(rec_job(cJSON_GetArrayItem(records, 0)), 101);
	ck_assert_ptr_nonnull(rec_phase(cJSON_GetArrayItem(records, 1), "run"));
	/* a sub-phase is not a top-level phase */
	ck_assert_ptr_null(
	    rec_phase(cJSON_GetArrayItem(records, 1), "checkpoint"));
	ck_assert_ptr_null(rec_phase(cJSON_GetArrayItem(records, 2), "run"));
}
END_TEST

static const struct {
	const char *text;
	int count; /* -1: refused */
} inputs[] = {
	{ "[{\"job\":1},{\"job\":2}]", 2 },
	{ "{\"ok\":true,\"records\":[{\"job\":1}]}", 1 },
	{ "{\"job\":7,\"phases\":[]}", 1 },
	{ "{\"job\":1}\n\n{\"job\":2}\n{\"job\":3}", 3 },
	{ "[]", 0 },
	{ "[{\"job\":1},2]", -1 },
	{ "42", -1 },
	{ "{\"x\":1}", -1 },
	{ "{\"job\":1}\nnot json\n", -1 },
	{ "", 0 },
	{ NULL, -1 },
};

START_TEST(test_parse_inputs)
{
	char err[256] = "";
	cJSON *r = export_records_parse(inputs[_i].text, "in.json", err,
					sizeof(err));

	if (inputs[_i].count < 0) {
		ck_assert_ptr_null(r);
		ck_assert_msg(!strncmp(err, "in.json", 7), "err: %s", err);
	} else {
		ck_assert_ptr_nonnull(r);
		ck_assert_int_eq(cJSON_GetArraySize(r), inputs[_i].count);
	}
	cJSON_Delete(r);
}
END_TEST

START_TEST(test_filter)
{
	cJSON *copy = cJSON_Duplicate(records, true);

	export_records_filter(copy, 0, 1763870000.0);
	ck_assert_int_eq(cJSON_GetArraySize(copy), 3); /* 101 ended before */
	export_records_filter(copy, 103, -1);
	ck_assert_int_eq(cJSON_GetArraySize(copy), 1);
	ck_assert_uint_eq(rec_job(copy->child), 103);
	export_records_filter(copy, 999, -1);
	ck_assert_int_eq(cJSON_GetArraySize(copy), 0);
	cJSON_Delete(copy);
	export_records_filter(NULL, 1, 0); /* no-op */
}
END_TEST

#define NOW 1e6
static const struct {
	const char *s;
	double want; /* < 0: refused */
} sinces[] = {
	{ "1763860000", 1763860000 },
	{ "30s", NOW - 30 },
	{ "10m", NOW - 600 },
	{ "0h", NOW },
	{ "2d", NOW - 172800 },
	{ "", -1 },
	{ "-5", -1 },
	{ "5x", -1 },
	{ "m", -1 },
	{ "5mm", -1 },
	{ "99999999999999999999", -1 },
	{ NULL, -1 },
};

START_TEST(test_since)
{
	double got = 12345;
	int r = export_parse_since(sinces[_i].s, NOW, &got);

	if (sinces[_i].want < 0) {
		ck_assert_int_eq(r, -1);
		ck_assert(got == 12345);
	} else {
		ck_assert_int_eq(r, 0);
		ck_assert(fabs(got - sinces[_i].want) < 1e-6);
	}
}
END_TEST

START_TEST(test_format_names)
{
	enum export_format f;

	ck_assert_int_eq(export_format_parse("trace", &f), 0);
	ck_assert_int_eq(f, EXPORT_TRACE);
	ck_assert_int_eq(export_format_parse("html", &f), 0);
	ck_assert_int_eq(f, EXPORT_HTML);
	ck_assert_int_eq(export_format_parse("HTML", &f), -1);
	ck_assert_int_eq(export_format_parse("", &f), -1);
	ck_assert_int_eq(export_format_parse(NULL, &f), -1);
}
END_TEST

/* --- JSON ----------------------------------------------------------------------------- */

START_TEST(test_json_round_trips)
{
	char *text = render(EXPORT_JSON, records), err[256];
	cJSON *back = export_records_parse(text, "out", err, sizeof(err));

	ck_assert_ptr_nonnull(back);
	ck_assert(cJSON_Compare(back, records, true));
	cJSON_Delete(back);
	free(text);
}
END_TEST

/* --- CSV ------------------------------------------------------------------------------ */

/* Parse RFC 4180 TEXT into rows of fields (a tiny reader for the test). */
#define CSV_MAX_ROWS 16
#define CSV_MAX_FIELDS 64
struct csv {
	char *field[CSV_MAX_ROWS][CSV_MAX_FIELDS];
	int nfields[CSV_MAX_ROWS];
	int nrows;
};

static void csv_parse(const char *p, struct csv *c)
{
	char buf[4096];
	size_t n = 0;
	int row = 0, col = 0;
	bool quoted = false;

	memset(c, 0, sizeof(*c));
	for (; *p; p++) {
		if (quoted) {
			if (*p == '"' && p[1] == '"')
				buf[n++] = *p++;
			else if (*p == '"')
				quoted = false;
			else
				buf[n++] = *p;
		} else if (*p == '"') {
			quoted = true;
		} else if (*p == ',' || *p == '\r') {
			if (*p == '\r')
				ck_assert_int_eq(p[1], '\n');
			buf[n] = '\0';
			c->field[row][col++] = strdup(buf);
			n = 0;
			if (*p == '\r') {
				c->nfields[row++] = col;
				col = 0;
				p++;
			}
		} else {
			ck_assert_msg(*p != '\n', "bare LF outside quotes");
			buf[n++] = *p;
		}
		ck_assert(n < sizeof(buf) && row < CSV_MAX_ROWS &&
			  col < CSV_MAX_FIELDS);
	}
	ck_assert_int_eq(col, 0); /* every row ended with CRLF */
	c->nrows = row;
}

static void csv_free(struct csv *c)
{
	for (int r = 0; r < c->nrows; r++)
		for (int i = 0; i < c->nfields[r]; i++)
			free(c->field[r][i]);
}

static int csv_col(const struct csv *c, const char *name)
{
	for (int i = 0; i < c->nfields[0]; i++)
		if (!strcmp(c->field[0][i], name))
			return i;
	ck_abort_msg("no column %s", name);
	return -1;
}

START_TEST(test_csv_rows_and_escaping)
{
	char *text = render(EXPORT_CSV, records);
	struct csv c;
	int r;

	csv_parse(text, &c);
	ck_assert_int_eq(c.nrows, 5);
	for (r = 1; r < c.nrows; r++)
		ck_assert_int_eq(c.nfields[r], c.nfields[0]);
	/* the odd job name survives quoting exactly */
	ck_assert_str_eq(c.field[4][csv_col(&c, "job_name")],
			 "odd, \"quoted\" <script>alert('x')</script> & "
			 "=cmd\nline2");
	ck_assert_str_eq(c.field[2][csv_col(&c, "job")], "102");
	/* two checkpoints summed */
	ck_assert_str_eq(c.field[2][csv_col(&c, "checkpoint_seconds")], "30");
	ck_assert_str_eq(c.field[2][csv_col(&c, "checkpoint_write_bytes")],
			 "1500000000");
	ck_assert_str_eq(c.field[2][csv_col(&c, "cache_hits")], "1");
	/* not measured = empty, never 0: the failed job has no run */
	ck_assert_str_eq(c.field[3][csv_col(&c, "run_seconds")], "");
	ck_assert_str_eq(c.field[3][csv_col(&c, "stage_out_bytes")], "");
	ck_assert_str_eq(c.field[3][csv_col(&c, "state")], "stage_failed");
	ck_assert_str_eq(c.field[1][csv_col(&c, "start")], "1763860000.125");
	csv_free(&c);
	free(text);
}
END_TEST

START_TEST(test_csv_formula_guard)
{
	cJSON *recs = cJSON_Parse("[{\"job\":5,\"job_name\":\"=1+2\","
				  "\"user\":\"@u\"}]");
	char *text = render(EXPORT_CSV, recs);
	struct csv c;

	csv_parse(text, &c);
	ck_assert_str_eq(c.field[1][csv_col(&c, "job_name")], "'=1+2");
	ck_assert_str_eq(c.field[1][csv_col(&c, "user")], "'@u");
	csv_free(&c);
	free(text);
	cJSON_Delete(recs);
}
END_TEST

/* A multi-node job's merged record (common/telemetry/recmerge.h) renders in
 * every format like a single-node one, with the job's totals. */
START_TEST(test_merged_record_renders)
{
	static const char *const nodes[] = { "n1", "n2" };
	static const enum export_format fmts[] = { EXPORT_JSON, EXPORT_CSV,
						   EXPORT_PROM, EXPORT_TRACE,
						   EXPORT_HTML };
	cJSON *p1 = cJSON_Duplicate(cJSON_GetArrayItem(records, 1), true);
	cJSON *p2 = cJSON_Duplicate(p1, true), *recs = cJSON_CreateArray();
	const cJSON *parts[2] = { p1, p2 };
	char *text;
	struct csv c;

	cJSON_ReplaceItemInObject(p1, "node", cJSON_CreateString("n1"));
	cJSON_ReplaceItemInObject(p2, "node", cJSON_CreateString("n2"));
	cJSON_AddItemToArray(recs, recmerge_job(parts, 2, nodes, 2));
	ck_assert(recmerge_is_merged(cJSON_GetArrayItem(recs, 0)));
	for (size_t i = 0; i < sizeof(fmts) / sizeof(fmts[0]); i++) {
		text = render(fmts[i], recs);
		ck_assert_ptr_nonnull(strstr(text, "102"));
		free(text);
	}
	text = render(EXPORT_CSV, recs);
	csv_parse(text, &c);
	ck_assert_int_eq(c.nrows, 2);
	/* two nodes' checkpoints: twice one node's bytes */
	ck_assert_str_eq(c.field[1][csv_col(&c, "checkpoint_write_bytes")],
			 "3000000000");
	csv_free(&c);
	free(text);
	cJSON_Delete(recs);
	cJSON_Delete(p1);
	cJSON_Delete(p2);
}
END_TEST

/* --- Prometheus -------------------------------------------------------------------- */

START_TEST(test_prom_series)
{
	char *text = render(EXPORT_PROM, records);

	ck_assert_ptr_nonnull(strstr(text, "# TYPE iostage_job_phase_bytes "
					   "gauge\n"));
	ck_assert_ptr_nonnull(
	    strstr(text, "iostage_job_phase_bytes{jobid=\"102\",phase="
			 "\"checkpoint\",direction=\"write\"} 1500000000\n"));
	ck_assert_ptr_nonnull(
	    strstr(text, "iostage_job_phase_seconds{jobid=\"102\",phase="
			 "\"checkpoint\"} 30\n"));
	ck_assert_ptr_nonnull(
	    strstr(text, "iostage_job_phase_bytes{jobid=\"101\",phase="
			 "\"stage_in\",direction=\"read\"} 1130000000\n"));
	ck_assert_ptr_nonnull(
	    strstr(text, "phase=\"my \\\"phase\\\"\\\\<x>\""));
	/* no label named job, and one HELP per family */
	ck_assert_ptr_null(strstr(text, "{job="));
	ck_assert_ptr_null(strstr(text, ",job="));
	ck_assert_int_eq(count(text, "# HELP iostage_job_phase_bytes "), 1);
	ck_assert_int_eq(count(text, "# HELP iostage_job_phase_seconds "), 1);
	free(text);
}
END_TEST

/* --- trace ------------------------------------------------------------------------------- */

static double num(const cJSON *o, const char *k)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);

	ck_assert_msg(cJSON_IsNumber(v), "no number %s", k);
	return v->valuedouble;
}

START_TEST(test_trace_nesting)
{
	char *text = render(EXPORT_TRACE, records);
	cJSON *ev = cJSON_Parse(text), *e, *run = NULL;
	int subs = 0, xs = 0;

	ck_assert(cJSON_IsArray(ev));
	ck_assert_int_eq(text[0], '[');
	cJSON_ArrayForEach(e, ev) {
		const char *ph = cJSON_GetStringValue(
		    cJSON_GetObjectItem(e, "ph"));

		ck_assert_ptr_nonnull(ph);
		if (strcmp(ph, "X"))
			continue;
		xs++;
		ck_assert(num(e, "dur") >= 0);
		ck_assert(num(e, "ts") == floor(num(e, "ts")));
		if (num(e, "pid") == 102 &&
		    !strcmp(cJSON_GetStringValue(
				cJSON_GetObjectItem(e, "name")),
			    "run"))
			run = e;
	}
	ck_assert_ptr_nonnull(run);
	cJSON_ArrayForEach(e, ev) {
		const char *cat = cJSON_GetStringValue(
		    cJSON_GetObjectItem(e, "cat"));

		if (!cat || strcmp(cat, "subphase") || num(e, "pid") != 102)
			continue;
		subs++;
		ck_assert(num(e, "tid") == num(run, "tid"));
		ck_assert(num(e, "ts") >= num(run, "ts"));
		ck_assert(num(e, "ts") + num(e, "dur") <=
			  num(run, "ts") + num(run, "dur"));
	}
	ck_assert_int_eq(subs, 3);
	/* job 101: 3 phases + 2 ranks; 102: 6 phases; 103: 1; 104: 4 */
	ck_assert_int_eq(xs, 5 + 6 + 1 + 4);
	cJSON_Delete(ev);
	free(text);
}
END_TEST

START_TEST(test_trace_clamps_subphase_to_run)
{
	cJSON *recs = cJSON_Parse(
	    "[{\"job\":9,\"phases\":["
	    "{\"name\":\"run\",\"start\":100,\"end\":110},"
	    "{\"name\":\"ckpt\",\"parent\":\"run\",\"start\":99,"
	    "\"end\":111.5},"
	    "{\"name\":\"late\",\"parent\":\"run\",\"start\":120,"
	    "\"end\":121},"
	    "{\"name\":\"nostart\",\"end\":3}]}]");
	char *text = render(EXPORT_TRACE, recs);
	cJSON *ev = cJSON_Parse(text), *e, *run = NULL;
	int found = 0;

	cJSON_ArrayForEach(e, ev)
		if (!strcmp(cJSON_GetStringValue(
				cJSON_GetObjectItem(e, "name")),
			    "run") &&
		    cJSON_GetObjectItem(e, "dur"))
			run = e;
	ck_assert_ptr_nonnull(run);
	cJSON_ArrayForEach(e, ev) {
		const char *name = cJSON_GetStringValue(
		    cJSON_GetObjectItem(e, "name"));

		ck_assert_str_ne(name, "late");    /* outside the run */
		ck_assert_str_ne(name, "nostart"); /* cannot be placed */
		if (!strcmp(name, "ckpt")) {
			found++;
			ck_assert(num(e, "ts") == num(run, "ts"));
			ck_assert(num(e, "dur") == 10e6);
		}
	}
	ck_assert_int_eq(found, 1);
	cJSON_Delete(ev);
	cJSON_Delete(recs);
	free(text);
}
END_TEST

/* --- HTML ---------------------------------------------------------------------------- */

START_TEST(test_html_self_contained_and_escaped)
{
	char *text = render(EXPORT_HTML, records);

	ck_assert(!strncmp(text, "<!DOCTYPE html>", 15));
	ck_assert_ptr_nonnull(strstr(text, "<h2>Job 101: train-resnet</h2>"));
	ck_assert_ptr_nonnull(strstr(text, "id=\"job-104\""));
	/* the user's markup is shown, never run */
	ck_assert_ptr_null(strstr(text, "<script"));
	ck_assert_ptr_nonnull(strstr(text, "&lt;script&gt;alert(&#39;x&#39;)"));
	ck_assert_ptr_nonnull(strstr(text, "=cmd?line2"));
	ck_assert_ptr_nonnull(strstr(text, "my &quot;phase&quot;\\&lt;x&gt;"));
	/* nothing fetched from anywhere */
	ck_assert_ptr_null(strcasestr(text, "http"));
	ck_assert_ptr_null(strcasestr(text, "src="));
	ck_assert_ptr_null(strcasestr(text, "url("));
	ck_assert_ptr_null(strcasestr(text, "@import"));
	/* charts: one timeline per job, balanced */
	ck_assert_int_eq(count(text, "<svg "), count(text, "</svg>"));
	ck_assert_int_eq(count(text, "aria-label=\"phase timeline\""), 4);
	/* cache, recommendations */
	ck_assert_ptr_nonnull(strstr(text, "Cache hit ratio <b class=\"ratio\">"
					   "50%</b>: 1 of 2 datasets"));
	ck_assert_ptr_nonnull(strstr(text, "lfs setstripe -c 8 -S 4M "
					   "/pfs/u/ckpt"));
	ck_assert_int_eq(count(text, "No recommendations for this job."), 3);
	ck_assert_ptr_nonnull(strstr(text, "</html>\n"));
	free(text);
}
END_TEST

START_TEST(test_empty_inputs_render)
{
	cJSON *empty = cJSON_CreateArray();
	char *html = render(EXPORT_HTML, empty);
	char *csv = render(EXPORT_CSV, empty);
	char *trace = render(EXPORT_TRACE, empty);
	char *prom = render(EXPORT_PROM, empty);

	ck_assert_ptr_nonnull(strstr(html, "No job records matched."));
	ck_assert_int_eq(count(csv, "\r\n"), 1); /* the header only */
	ck_assert_str_eq(trace, "[]\n");
	ck_assert_ptr_null(strstr(prom, "jobid="));
	free(html);
	free(csv);
	free(trace);
	free(prom);
	cJSON_Delete(empty);
}
END_TEST

START_TEST(test_one_job_html)
{
	cJSON *one = only_job(103);
	char *text = render(EXPORT_HTML, one);

	ck_assert_ptr_nonnull(strstr(text, "Job 103"));
	ck_assert_ptr_null(strstr(text, "Job 101"));
	ck_assert_ptr_nonnull(strstr(text, "stage_failed"));
	ck_assert_ptr_nonnull(strstr(text, "0 of 1 dataset "));
	free(text);
	cJSON_Delete(one);
}
END_TEST

/* --- what the run's bytes are (RECORDS.md bytes_source) ------------------------------- */

/* A record filed with the shim: file I/O in read_bytes/write_bytes, the
 * /proc figures beside them. */
static const char *shim_record =
    "[{\"job\":201,\"user\":\"u\",\"start\":1763860000,\"end\":1763860010,"
    "\"phases\":[{\"name\":\"run\",\"start\":1763860000,"
    "\"end\":1763860010,\"seconds\":10,\"read_bytes\":134217728,"
    "\"write_bytes\":33554432,\"bytes_source\":\"shim\","
    "\"rchar\":167772160,\"wchar\":167772160,\"read_syscalls\":300,"
    "\"write_syscalls\":200,\"interval_s\":1,"
    "\"timeline\":[[1763860001,167772160,167772160,300,200]]},"
    "{\"name\":\"read\",\"parent\":\"run\",\"source\":\"auto\","
    "\"start\":1763860000,\"end\":1763860005,\"seconds\":5,"
    "\"read_bytes\":134217728,\"write_bytes\":0,"
    "\"bytes_source\":\"shim\",\"rchar\":0,\"wchar\":0}],"
    "\"processes\":[{\"pid\":77,\"step\":0,\"node\":\"n1\","
    "\"identity\":\"slurm\",\"start\":1763860000,\"read_bytes\":134217728,"
    "\"write_bytes\":33554432,\"rchar\":167772160,\"wchar\":167772160,"
    "\"traced\":true},{\"pid\":78,\"step\":0,\"node\":\"n1\","
    "\"identity\":\"slurm\",\"start\":1763860000,\"read_bytes\":5,"
    "\"write_bytes\":6,\"traced\":true}]}]";

START_TEST(test_csv_bytes_source)
{
	cJSON *recs = cJSON_Parse(shim_record);
	char *text = render(EXPORT_CSV, recs);
	struct csv c;

	csv_parse(text, &c);
	ck_assert_str_eq(c.field[1][csv_col(&c, "run_read_bytes")],
			 "134217728");
	ck_assert_str_eq(c.field[1][csv_col(&c, "run_bytes_source")], "shim");
	ck_assert_str_eq(c.field[1][csv_col(&c, "run_rchar")], "167772160");
	ck_assert_str_eq(c.field[1][csv_col(&c, "run_wchar")], "167772160");
	csv_free(&c);
	free(text);
	/* The fixture's records predate bytes_source: their read_bytes
	 * was rchar, and is called so. */
	text = render(EXPORT_CSV, records);
	csv_parse(text, &c);
	ck_assert_str_eq(c.field[1][csv_col(&c, "run_bytes_source")],
			 "proc_rchar");
	ck_assert_str_eq(c.field[1][csv_col(&c, "run_rchar")], "4520000000");
	ck_assert_str_eq(c.field[1][csv_col(&c, "run_read_bytes")],
			 "4520000000");
	/* no run: nothing measured, nothing said */
	ck_assert_str_eq(c.field[3][csv_col(&c, "run_bytes_source")], "");
	ck_assert_str_eq(c.field[3][csv_col(&c, "run_rchar")], "");
	csv_free(&c);
	free(text);
	cJSON_Delete(recs);
}
END_TEST

START_TEST(test_prom_bytes_source)
{
	cJSON *recs = cJSON_Parse(shim_record);
	char *text = render(EXPORT_PROM, recs);

	ck_assert_ptr_nonnull(
	    strstr(text, "iostage_job_phase_bytes{jobid=\"201\",phase=\"run\","
			 "direction=\"read\"} 134217728\n"));
	ck_assert_ptr_nonnull(
	    strstr(text, "iostage_job_phase_bytes_source{jobid=\"201\",phase="
			 "\"run\",source=\"shim\"} 1\n"));
	ck_assert_ptr_nonnull(
	    strstr(text, "iostage_job_phase_bytes_source{jobid=\"201\",phase="
			 "\"read\",source=\"shim\"} 1\n"));
	ck_assert_int_eq(count(text, "# HELP iostage_job_phase_bytes_source "),
			 1);
	free(text);
	text = render(EXPORT_PROM, records);
	ck_assert_ptr_nonnull(
	    strstr(text, "iostage_job_phase_bytes_source{jobid=\"101\",phase="
			 "\"run\",source=\"proc_rchar\"} 1\n"));
	ck_assert_ptr_nonnull(
	    strstr(text, "iostage_job_phase_bytes_source{jobid=\"101\",phase="
			 "\"stage_in\",source=\"staging\"} 1\n"));
	free(text);
	cJSON_Delete(recs);
}
END_TEST

START_TEST(test_trace_and_html_name_the_bytes)
{
	cJSON *recs = cJSON_Parse(shim_record);
	char *text = render(EXPORT_TRACE, recs);
	cJSON *tr = cJSON_Parse(text), *ev;
	int phases = 0, counters = 0;

	ck_assert_ptr_nonnull(tr);
	cJSON_ArrayForEach(ev, tr) {
		const char *name = cJSON_GetObjectItem(ev, "name")->valuestring;
		cJSON *args = cJSON_GetObjectItem(ev, "args");

		if (!strcmp(name, "run") || !strcmp(name, "read")) {
			ck_assert_str_eq(cJSON_GetObjectItem(args,
							     "bytes_source")
					     ->valuestring,
					 "shim");
			phases++;
		}
		ck_assert_str_ne(name, "run I/O");
		if (!strcmp(name, "run I/O (rchar/wchar)")) {
			ck_assert_double_eq(num(args, "rchar"), 167772160);
			counters++;
		}
	}
	ck_assert_int_eq(phases, 2);
	ck_assert_int_eq(counters, 1);
	cJSON_Delete(tr);
	free(text);
	text = render(EXPORT_HTML, recs);
	ck_assert_ptr_nonnull(strstr(text, "file read 128"));
	ck_assert_ptr_nonnull(strstr(text, "file written 32"));
	ck_assert_ptr_nonnull(strstr(text, "Run bytes are file I/O"));
	free(text);
	text = render(EXPORT_HTML, records);
	ck_assert_ptr_nonnull(strstr(text, "Run bytes are /proc rchar"));
	ck_assert_ptr_nonnull(strstr(text, ", rchar "));
	ck_assert_ptr_null(strstr(text, "file read"));
	free(text);
	cJSON_Delete(recs);
}
END_TEST

static char *print_record(const cJSON *rec)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	ck_assert_ptr_nonnull(f);
	telemetry_print(rec, 60, f);
	fclose(f);
	return buf;
}

START_TEST(test_telemetry_table_names_the_bytes)
{
	cJSON *recs = cJSON_Parse(shim_record);
	char *text = print_record(cJSON_GetArrayItem(recs, 0));

	ck_assert_msg(strstr(text, "file I/O (shim); rchar 160"), "%s", text);
	ck_assert_ptr_nonnull(strstr(text, "FILE-READ"));
	ck_assert_ptr_nonnull(strstr(text, "RCHAR"));
	ck_assert_ptr_nonnull(strstr(text, "run timeline (/proc rchar/wchar)"));
	/* the sampled task: file bytes and /proc's; a process known only
	 * from its shim summary: file bytes, no /proc figure */
	ck_assert_msg(strstr(text, "128.0 MiB   32.0 MiB  160.0 MiB  160.0 MiB "
				   "yes"),
		      "%s", text);
	ck_assert_msg(strstr(text, "5 B        6 B          -          - yes"),
		      "%s", text);
	free(text);
	/* Before bytes_source, read_bytes was rchar: shown as such. */
	text = print_record(cJSON_GetArrayItem(records, 0));
	ck_assert_msg(strstr(text, "rchar/wchar (every read and write call"),
		      "%s", text);
	ck_assert_msg(strstr(text, "-          -    2.1 GiB     1000 B no"),
		      "%s", text);
	free(text);
	cJSON_Delete(recs);
}
END_TEST

static Suite *export_suite(void)
{
	Suite *s = suite_create("export");
	TCase *tc = tcase_create("core");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_merged_record_renders);
	tcase_add_test(tc, test_fixture_shapes);
	tcase_add_loop_test(tc, test_parse_inputs, 0,
			    sizeof(inputs) / sizeof(inputs[0]));
	tcase_add_test(tc, test_filter);
	tcase_add_loop_test(tc, test_since, 0,
			    sizeof(sinces) / sizeof(sinces[0]));
	tcase_add_test(tc, test_format_names);
	tcase_add_test(tc, test_json_round_trips);
	tcase_add_test(tc, test_csv_rows_and_escaping);
	tcase_add_test(tc, test_csv_formula_guard);
	tcase_add_test(tc, test_prom_series);
	tcase_add_test(tc, test_trace_nesting);
	tcase_add_test(tc, test_trace_clamps_subphase_to_run);
	tcase_add_test(tc, test_html_self_contained_and_escaped);
	tcase_add_test(tc, test_empty_inputs_render);
	tcase_add_test(tc, test_one_job_html);
	tcase_add_test(tc, test_csv_bytes_source);
	tcase_add_test(tc, test_prom_bytes_source);
	tcase_add_test(tc, test_trace_and_html_name_the_bytes);
	tcase_add_test(tc, test_telemetry_table_names_the_bytes);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return check_run(export_suite());
}
