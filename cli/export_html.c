/* export_html.c - a self-contained HTML report of job records.
 *
 * One file that opens anywhere, offline: inline CSS and inline SVG charts,
 * no scripts, no fonts, images or style sheets fetched from anywhere.
 * Per job: facts, a phase timeline (top-level phases, then one row per
 * sub-phase name), bytes per phase (read and write from the job's side),
 * the cache hit ratio, the recommendations the record carries (a
 * "recommendations" array in the docs/RECORDS.md shape, as attached by
 * `iostage export` from the recommend op), and the datasets and outputs.
 * Every string from a record is escaped (& < > " ') and control
 * characters become '?': job names and marker names are the user's.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli/export.h"
#include "common/base/units.h"
#include "common/telemetry/telrec.h"

#define SVG_W 860
#define SVG_LEFT 130 /* room for row labels */
#define SVG_PLOT (SVG_W - SVG_LEFT - 20)
#define ROW_H 24
#define SUBROWS_MAX 12 /* distinct sub-phase names drawn per job */

static void esc(FILE *out, const char *s)
{
	for (; s && *s; s++) {
		unsigned char c = (unsigned char)*s;

		switch (c) {
		case '&':
			fputs("&amp;", out);
			break;
		case '<':
			fputs("&lt;", out);
			break;
		case '>':
			fputs("&gt;", out);
			break;
		case '"':
			fputs("&quot;", out);
			break;
		case '\'':
			fputs("&#39;", out);
			break;
		default:
			fputc(c < 0x20 || c == 0x7f ? '?' : c, out);
		}
	}
}

static const char *str_or(const cJSON *o, const char *key, const char *def)
{
	const char *s = rec_str(o, key);

	return s && *s ? s : def;
}

static void bytes_str(double v, char *buf, size_t len)
{
	units_bytes(v > 0 ? (uint64_t)v : 0, buf, len);
}

static const char *phase_color(const char *name, bool sub)
{
	if (sub)
		return "#b07aa1";
	if (!strcmp(name, "stage_in"))
		return "#4e79a7";
	if (!strcmp(name, "run"))
		return "#59a14f";
	if (!strcmp(name, "stage_out"))
		return "#f28e2b";
	return "#9c755f";
}

/* --- the phase timeline ------------------------------------------------------------ */

struct timeline {
	double t0, t1;
	const char *subs[SUBROWS_MAX]; /* sub-phase names, one row each */
	size_t nsubs;
};

static double xpos(const struct timeline *tl, double t)
{
	double span = tl->t1 - tl->t0;

	return SVG_LEFT + (span > 0 ? (t - tl->t0) / span * SVG_PLOT : 0);
}

/* Row of phase PH: 0..2 for the top-level ones, then one per sub name. */
static int row_of(struct timeline *tl, const char *name, bool sub)
{
	static const char *const top[] = { "stage_in", "run", "stage_out" };
	size_t i;

	if (!sub) {
		for (i = 0; i < 3; i++)
			if (!strcmp(name, top[i]))
				return (int)i;
		sub = true; /* an unknown top-level phase: its own row */
	}
	for (i = 0; i < tl->nsubs; i++)
		if (!strcmp(tl->subs[i], name))
			return 3 + (int)i;
	if (tl->nsubs == SUBROWS_MAX)
		return -1;
	tl->subs[tl->nsubs++] = name;
	return 3 + (int)(tl->nsubs - 1);
}

static void svg_timeline(FILE *out, const cJSON *rec)
{
	struct timeline tl = { .t0 = -1, .t1 = -1 };
	const cJSON *ph;
	double s, e;
	char buf[32], b2[32];
	int rows, r, i;

	cJSON_ArrayForEach(ph,
			   cJSON_GetObjectItemCaseSensitive(rec, "phases")) {
		const char *name = rec_str(ph, "name");

		if (!name || !rec_num(ph, "start", &s) ||
		    !rec_num(ph, "end", &e) || e < s)
			continue;
		if (tl.t0 < 0 || s < tl.t0)
			tl.t0 = s;
		if (e > tl.t1)
			tl.t1 = e;
		row_of(&tl, name, rec_str(ph, "parent") != NULL);
	}
	if (tl.t0 < 0) {
		fputs("<p class=\"none\">No timed phases in this record.</p>\n",
		      out);
		return;
	}
	rows = 3 + (int)tl.nsubs;
	fprintf(out,
		"<svg class=\"timeline\" "
		"width=\"%d\" height=\"%d\" role=\"img\" "
		"aria-label=\"phase timeline\">\n",
		SVG_W, rows * ROW_H + 34);
	for (r = 0; r < rows; r++) {
		const char *label = r == 0   ? "stage_in"
				    : r == 1 ? "run"
				    : r == 2 ? "stage_out"
					     : tl.subs[r - 3];

		fprintf(out, "<text x=\"%d\" y=\"%d\" text-anchor=\"end\">%s",
			SVG_LEFT - 8, r * ROW_H + 16, r >= 3 ? "\u21b3 " : "");
		esc(out, label);
		fputs("</text>\n", out);
	}
	/* Time axis: five ticks, seconds from the first start. */
	for (i = 0; i <= 4; i++) {
		double t = tl.t0 + (tl.t1 - tl.t0) * i / 4;
		double x = xpos(&tl, t);

		fprintf(out,
			"<line x1=\"%.1f\" y1=\"0\" x2=\"%.1f\" y2=\"%d\" "
			"stroke=\"#ddd\"/><text x=\"%.1f\" y=\"%d\" "
			"text-anchor=\"middle\" class=\"axis\">%s</text>\n",
			x, x, rows * ROW_H + 4, x, rows * ROW_H + 20,
			units_seconds(t - tl.t0, buf, sizeof(buf)));
	}
	cJSON_ArrayForEach(ph,
			   cJSON_GetObjectItemCaseSensitive(rec, "phases")) {
		const char *name = rec_str(ph, "name");
		bool sub = rec_str(ph, "parent") != NULL, proc;
		double x0, x1, rb = 0, wb = 0, b = 0;

		if (!name || !rec_num(ph, "start", &s) ||
		    !rec_num(ph, "end", &e) || e < s)
			continue;
		r = row_of(&tl, name, sub);
		if (r < 0)
			continue;
		x0 = xpos(&tl, s);
		x1 = xpos(&tl, e);
		fprintf(out,
			"<rect x=\"%.1f\" y=\"%d\" width=\"%.1f\" "
			"height=\"%d\" fill=\"%s\"><title>",
			x0, r * ROW_H + 3, x1 - x0 < 1 ? 1 : x1 - x0, ROW_H - 6,
			phase_color(name, sub));
		esc(out, name);
		fprintf(out, ": %s", units_seconds(e - s, buf, sizeof(buf)));
		if (rec_num(ph, "bytes", &b)) {
			bytes_str(b, b2, sizeof(b2));
			fprintf(out, ", %s", b2);
		}
		/* /proc's figures say what they are (RECORDS.md
		 * bytes_source): not file I/O. */
		proc = strcmp(telrec_bytes_source(ph), TELREC_BYTES_SHIM) != 0;
		if (rec_num(ph, "read_bytes", &rb)) {
			bytes_str(rb, b2, sizeof(b2));
			fprintf(out, proc ? ", rchar %s" : ", file read %s",
				b2);
		}
		if (rec_num(ph, "write_bytes", &wb)) {
			bytes_str(wb, b2, sizeof(b2));
			fprintf(out, proc ? ", wchar %s" : ", file written %s",
				b2);
		}
		fputs("</title></rect>\n", out);
	}
	fputs("</svg>\n", out);
}

/* --- bytes per phase ----------------------------------------------------------------- */

#define PHASE_SUMS_MAX 16

struct phase_bytes {
	const char *name;
	double read, write;
	const char *source; /* of read/write: NULL (staging), or the first
			     * phase's bytes_source */
};

/* stage_in's bytes are read by the job, stage_out's written by it. */
static size_t sum_bytes(const cJSON *rec, struct phase_bytes *sums)
{
	const cJSON *ph;
	size_t n = 0, i;
	double v;

	cJSON_ArrayForEach(ph,
			   cJSON_GetObjectItemCaseSensitive(rec, "phases")) {
		const char *name = rec_str(ph, "name");

		if (!name)
			continue;
		for (i = 0; i < n && strcmp(sums[i].name, name); i++)
			;
		if (i == n) {
			if (n == PHASE_SUMS_MAX)
				continue;
			sums[n++] = (struct phase_bytes){ name, 0, 0, NULL };
		}
		if (!strcmp(name, "stage_in") && rec_num(ph, "bytes", &v))
			sums[i].read += v;
		else if (!strcmp(name, "stage_out") && rec_num(ph, "bytes", &v))
			sums[i].write += v;
		if (!sums[i].source &&
		    (cJSON_GetObjectItemCaseSensitive(ph, "read_bytes") ||
		     cJSON_GetObjectItemCaseSensitive(ph, "write_bytes")))
			sums[i].source = telrec_bytes_source(ph);
		if (rec_num(ph, "read_bytes", &v))
			sums[i].read += v;
		if (rec_num(ph, "write_bytes", &v))
			sums[i].write += v;
	}
	return n;
}

/* What the run's bytes are, in words: file I/O only with the shim. */
static void bytes_note(FILE *out, const cJSON *rec)
{
	const cJSON *run = rec_phase(rec, "run");
	struct telrec_io io = { 0 };
	char rc[32], wc[32];

	if (!run)
		return;
	telrec_rchar_from_json(run, &io);
	bytes_str((double)io.rchar, rc, sizeof(rc));
	bytes_str((double)io.wchar, wc, sizeof(wc));
	if (!strcmp(telrec_bytes_source(run), TELREC_BYTES_SHIM))
		fprintf(out,
			"<p class=\"note\">Run bytes are file I/O, counted "
			"by the I/O shim (regular files only). /proc counted "
			"rchar %s and wchar %s: every read and write call, "
			"pipes, sockets and devices included.</p>\n",
			rc, wc);
	else
		fputs("<p class=\"note\">Run bytes are /proc rchar and wchar: "
		      "every read and write call, pipes, sockets and devices "
		      "included, so not file I/O alone (trace=true counts "
		      "file I/O).</p>\n",
		      out);
}

static void svg_bytes(FILE *out, const cJSON *rec)
{
	struct phase_bytes sums[PHASE_SUMS_MAX];
	size_t n = sum_bytes(rec, sums), i;
	double max = 0;
	char buf[32];

	for (i = 0; i < n; i++) {
		if (sums[i].read > max)
			max = sums[i].read;
		if (sums[i].write > max)
			max = sums[i].write;
	}
	if (!n || max <= 0) {
		fputs("<p class=\"none\">No bytes measured per phase.</p>\n",
		      out);
		return;
	}
	fprintf(out,
		"<svg class=\"bytes\" "
		"width=\"%d\" height=\"%zu\" role=\"img\" "
		"aria-label=\"bytes per phase\">\n",
		SVG_W, n * 2 * 16 + n * 8 + 24);
	for (i = 0; i < n; i++) {
		int y = (int)(i * 40);
		double wr = sums[i].read / max * (SVG_PLOT - 110);
		double ww = sums[i].write / max * (SVG_PLOT - 110);
		bool proc = sums[i].source &&
			    strcmp(sums[i].source, TELREC_BYTES_SHIM) != 0;
		bool file = sums[i].source && !proc;

		fprintf(out, "<text x=\"%d\" y=\"%d\" text-anchor=\"end\">",
			SVG_LEFT - 8, y + 20);
		esc(out, sums[i].name);
		bytes_str(sums[i].read, buf, sizeof(buf));
		fprintf(out,
			"</text>\n<rect x=\"%d\" y=\"%d\" width=\"%.1f\" "
			"height=\"14\" fill=\"#4e79a7\"/><text x=\"%.1f\" "
			"y=\"%d\" class=\"val\">%s %s</text>\n",
			SVG_LEFT, y + 2, wr, SVG_LEFT + wr + 6, y + 13,
			proc   ? "rchar"
			: file ? "file read"
			       : "read",
			buf);
		bytes_str(sums[i].write, buf, sizeof(buf));
		fprintf(out,
			"<rect x=\"%d\" y=\"%d\" width=\"%.1f\" height=\"14\" "
			"fill=\"#f28e2b\"/><text x=\"%.1f\" y=\"%d\" "
			"class=\"val\">%s %s</text>\n",
			SVG_LEFT, y + 18, ww, SVG_LEFT + ww + 6, y + 29,
			proc   ? "wchar"
			: file ? "file written"
			       : "written",
			buf);
	}
	fputs("</svg>\n", out);
	bytes_note(out, rec);
}

/* --- cache ------------------------------------------------------------------------- */

static void cache_section(FILE *out, const cJSON *rec)
{
	struct rec_cache c;
	double total, ratio;
	char cached[32], copied[32];

	rec_cache_summary(rec, &c);
	if (!c.datasets) {
		fputs("<p class=\"none\">No datasets staged.</p>\n", out);
		return;
	}
	total = c.cached_bytes + c.copied_bytes;
	ratio = (double)c.hits / c.datasets;
	bytes_str(c.cached_bytes, cached, sizeof(cached));
	bytes_str(c.copied_bytes, copied, sizeof(copied));
	fprintf(out,
		"<p>Cache hit ratio <b class=\"ratio\">%.0f%%</b>: %u of %u "
		"dataset%s served from the node's cache; %s from the cache, "
		"%s copied from the PFS.</p>\n",
		ratio * 100, c.hits, c.datasets, c.datasets == 1 ? "" : "s",
		cached, copied);
	fprintf(out,
		"<svg class=\"cache\" "
		"width=\"%d\" height=\"30\" role=\"img\" aria-label=\"cache "
		"hit ratio\">\n<rect x=\"0\" y=\"4\" width=\"400\" "
		"height=\"20\" fill=\"#ccc\"/>\n<rect x=\"0\" y=\"4\" "
		"width=\"%.1f\" height=\"20\" fill=\"#59a14f\"/>\n"
		"<text x=\"410\" y=\"19\">%.0f%% of bytes from cache</text>\n"
		"</svg>\n",
		SVG_W, total > 0 ? c.cached_bytes / total * 400 : 0,
		total > 0 ? c.cached_bytes / total * 100 : 0);
}

/* --- recommendations, datasets, outputs ---------------------------------------- */

static void recommendations(FILE *out, const cJSON *rec)
{
	const cJSON *recs = cJSON_GetObjectItemCaseSensitive(rec,
							     "recommendations");
	const cJSON *r, *cmd;
	double conf;

	if (!cJSON_GetArraySize(recs)) {
		fputs(
		    "<p class=\"none\">No recommendations for this job.</p>\n",
		    out);
		return;
	}
	fputs("<ul class=\"recs\">\n", out);
	cJSON_ArrayForEach(r, recs) {
		fputs("<li><b>", out);
		esc(out, str_or(r, "rule", "rule"));
		fputs("</b> ", out);
		esc(out, str_or(r, "target", ""));
		fputs(": ", out);
		esc(out, str_or(r, "action", ""));
		if (rec_str(r, "expected_gain")) {
			fputs(" (", out);
			esc(out, rec_str(r, "expected_gain"));
			fputs(")", out);
		}
		if (rec_num(r, "confidence", &conf))
			fprintf(out, ", confidence %.0f%%%s", conf * 100,
				conf < 0.5 ? " (low)" : "");
		cJSON_ArrayForEach(
		    cmd, cJSON_GetObjectItemCaseSensitive(r, "commands")) {
			if (!cJSON_IsString(cmd))
				continue;
			fputs("<br><code>", out);
			esc(out, cmd->valuestring);
			fputs("</code>", out);
		}
		fputs("</li>\n", out);
	}
	fputs("</ul>\n", out);
}

static void cell_num(FILE *out, const cJSON *o, const char *key, bool bytes)
{
	char buf[32];
	double v;

	if (!rec_num(o, key, &v))
		fputs("<td class=\"num\"></td>", out);
	else if (bytes)
		fprintf(out, "<td class=\"num\">%s</td>",
			units_bytes((uint64_t)v, buf, sizeof(buf)));
	else
		fprintf(out, "<td class=\"num\">%.0f</td>", v);
}

static void cell_str(FILE *out, const cJSON *o, const char *key)
{
	fputs("<td>", out);
	esc(out, str_or(o, key, ""));
	fputs("</td>", out);
}

static void tables(FILE *out, const cJSON *rec)
{
	const cJSON *ds = cJSON_GetObjectItemCaseSensitive(rec, "datasets");
	const cJSON *outs = cJSON_GetObjectItemCaseSensitive(rec, "outputs");
	const cJSON *o;

	if (cJSON_GetArraySize(ds)) {
		fputs("<h3>Datasets</h3>\n<table><tr><th>name</th><th>source"
		      "</th><th>tier</th><th>result</th><th>size</th><th>files"
		      "</th><th>copied</th><th>from cache</th></tr>\n",
		      out);
		cJSON_ArrayForEach(o, ds) {
			fputs("<tr>", out);
			cell_str(out, o, "name");
			cell_str(out, o, "source");
			cell_str(out, o, "tier");
			cell_str(out, o, "result");
			cell_num(out, o, "bytes", true);
			cell_num(out, o, "files", false);
			cell_num(out, o, "copied_bytes", true);
			cell_num(out, o, "cached_bytes", true);
			fputs("</tr>\n", out);
		}
		fputs("</table>\n", out);
	}
	if (cJSON_GetArraySize(outs)) {
		fputs("<h3>Outputs</h3>\n<table><tr><th>name</th><th>"
		      "destination</th><th>files</th><th>bytes</th><th>during "
		      "the run</th><th>at the end</th><th>failed files</th>"
		      "</tr>\n",
		      out);
		cJSON_ArrayForEach(o, outs) {
			fputs("<tr>", out);
			cell_str(out, o, "name");
			cell_str(out, o, "dest");
			cell_num(out, o, "files", false);
			cell_num(out, o, "bytes", true);
			cell_num(out, o, "during_bytes", true);
			cell_num(out, o, "end_bytes", true);
			cell_num(out, o, "failed_files", false);
			fputs("</tr>\n", out);
		}
		fputs("</table>\n", out);
	}
}

/* --- the page ---------------------------------------------------------------------- */

static void duration(const cJSON *rec, char *buf, size_t len)
{
	double s, e;

	if (rec_num(rec, "start", &s) && rec_num(rec, "end", &e) && e >= s)
		units_seconds(e - s, buf, len);
	else
		snprintf(buf, len, "-");
}

static void job_section(FILE *out, const cJSON *rec)
{
	uint32_t id = rec_job(rec);
	char dur[32];

	duration(rec, dur, sizeof(dur));
	fprintf(out, "<section class=\"job\" id=\"job-%u\">\n<h2>Job %u", id,
		id);
	if (rec_str(rec, "job_name") && *rec_str(rec, "job_name")) {
		fputs(": ", out);
		esc(out, rec_str(rec, "job_name"));
	}
	fputs("</h2>\n<p class=\"facts\">user ", out);
	esc(out, str_or(rec, "user", "?"));
	fputs(" &middot; node ", out);
	esc(out, str_or(rec, "node", "?"));
	fputs(" &middot; profile ", out);
	esc(out, str_or(rec, "profile_origin", "-"));
	fputs(" &middot; state <b>", out);
	esc(out, str_or(rec, "state", "?"));
	fprintf(out, "</b> &middot; %s</p>\n<h3>Phase timeline</h3>\n", dur);
	svg_timeline(out, rec);
	fputs("<h3>Bytes per phase</h3>\n", out);
	svg_bytes(out, rec);
	fputs("<h3>Cache</h3>\n", out);
	cache_section(out, rec);
	fputs("<h3>Recommendations</h3>\n", out);
	recommendations(out, rec);
	tables(out, rec);
	fputs("</section>\n", out);
}

static void summary(FILE *out, const cJSON *records)
{
	const cJSON *rec;
	char dur[32], in[32], so[32];
	struct rec_cache c;

	fputs("<table class=\"summary\"><tr><th>job</th><th>name</th><th>"
	      "user</th><th>state</th><th>duration</th><th>staged</th><th>"
	      "cache hits</th><th>drained</th></tr>\n",
	      out);
	cJSON_ArrayForEach(rec, records) {
		const cJSON *pin = rec_phase(rec, "stage_in");
		const cJSON *pout = rec_phase(rec, "stage_out");
		double v;

		if (!rec_job(rec))
			continue;
		duration(rec, dur, sizeof(dur));
		rec_cache_summary(rec, &c);
		snprintf(in, sizeof(in), "-");
		snprintf(so, sizeof(so), "-");
		if (rec_num(pin, "bytes", &v))
			bytes_str(v, in, sizeof(in));
		if (rec_num(pout, "bytes", &v))
			bytes_str(v, so, sizeof(so));
		fprintf(out, "<tr><td><a href=\"#job-%u\">%u</a></td><td>",
			rec_job(rec), rec_job(rec));
		esc(out, str_or(rec, "job_name", ""));
		fputs("</td><td>", out);
		esc(out, str_or(rec, "user", ""));
		fputs("</td><td>", out);
		esc(out, str_or(rec, "state", ""));
		fprintf(out,
			"</td><td class=\"num\">%s</td><td class=\"num\">%s"
			"</td><td class=\"num\">%u/%u</td><td class=\"num\">"
			"%s</td></tr>\n",
			dur, in, c.hits, c.datasets, so);
	}
	fputs("</table>\n", out);
}

int export_html(const cJSON *records, FILE *out)
{
	const cJSON *rec;
	int n = 0;

	cJSON_ArrayForEach(rec, records)
		if (rec_job(rec))
			n++;
	fprintf(
	    out,
	    "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n"
	    "<meta charset=\"utf-8\">\n"
	    "<meta name=\"generator\" content=\"iostage %s\">\n"
	    "<title>iostage I/O report: %d job%s</title>\n<style>\n"
	    "body{font-family:sans-serif;margin:24px;color:#222;"
	    "background:#fff;max-width:920px}\n"
	    "h1{font-size:26px}h2{font-size:30px;margin-top:36px;"
	    "border-bottom:2px solid #444}h3{font-size:16px;"
	    "margin-bottom:4px}\n"
	    "table{border-collapse:collapse;margin:6px 0}"
	    "td,th{border:1px solid #bbb;padding:3px 8px;font-size:13px}"
	    "th{background:#eee}.num{text-align:right}\n"
	    "svg text{font-family:sans-serif;font-size:12px;fill:#222}"
	    "svg text.axis,svg text.val{fill:#555;font-size:11px}\n"
	    ".none{color:#777}.note{color:#555;font-size:13px}.facts{font-size:15px}"
	    "code{background:#f4f4f4;padding:1px 4px}\n"
	    "</style>\n</head>\n<body>\n<h1>iostage I/O report</h1>\n"
	    "<p>%d job%s. Times are per job from its first phase; bytes "
	    "are from the job's side (stage_in reads, stage_out "
	    "writes).</p>\n",
	    IOSTAGE_VERSION, n, n == 1 ? "" : "s", n, n == 1 ? "" : "s");
	if (n)
		summary(out, records);
	else
		fputs("<p class=\"none\">No job records matched.</p>\n", out);
	cJSON_ArrayForEach(rec, records)
		if (rec_job(rec))
			job_section(out, rec);
	fputs("</body>\n</html>\n", out);
	return 0;
}
