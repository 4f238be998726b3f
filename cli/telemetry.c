/* telemetry.c - `iostage telemetry JOBID [--json]`. */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/client.h"
#include "cli/json.h"
#include "cli/telemetry.h"
#include "common/base/jsonbuf.h"
#include "common/base/units.h"
#include "common/net/proto.h"
#include "common/telemetry/telrec.h"

#define TIMELINE_WIDTH 60
#define CALL_TIMEOUT_MS 10000

static const char *const bars[] = {
	" ", "▁", "▂", "▃", "▄", "▅", "▆", "▇", "█"
};

static const cJSON *item(const cJSON *o, const char *key)
{
	return cJSON_GetObjectItemCaseSensitive(o, key);
}

static void print_phase(const cJSON *ph, double t0, FILE *out)
{
	const char *name = json_string(ph, "name");
	bool sub = cJSON_IsString(item(ph, "parent"));
	char label[48], rd[32], wr[32], secs[32], detail[160] = "";
	double rb = json_number(ph, "read_bytes"),
	       wb = json_number(ph, "write_bytes");

	snprintf(label, sizeof(label), "%s%s", sub ? "  " : "", name);
	if (!strcmp(name, "stage_in")) {
		char c[32], k[32], r[32];

		rb = 0;
		wb = json_number(ph, "bytes");
		snprintf(detail, sizeof(detail),
			 "%.0f files, copied %s, from cache %s, %s/s",
			 json_number(ph, "files"),
			 units_bytes(proto_u64(ph, "copied_bytes"), c,
				     sizeof(c)),
			 units_bytes(proto_u64(ph, "cached_bytes"), k,
				     sizeof(k)),
			 units_bytes(proto_u64(ph, "rate_bps"), r, sizeof(r)));
	} else if (!strcmp(name, "stage_out")) {
		char d[32], e[32], es[32];

		rb = 0;
		wb = json_number(ph, "bytes");
		snprintf(detail, sizeof(detail),
			 "during the run %s (%.0f files), after it %s (%.0f "
			 "files) in %s",
			 units_bytes(proto_u64(ph, "during_bytes"), d,
				     sizeof(d)),
			 json_number(ph, "during_files"),
			 units_bytes(proto_u64(ph, "end_bytes"), e, sizeof(e)),
			 json_number(ph, "end_files"),
			 units_seconds(json_number(ph, "end_seconds"), es,
				       sizeof(es)));
	} else if (!strcmp(name, "run")) {
		char rc[32], wc[32];
		struct telrec_io io = { 0 };

		/* What READ/WRITTEN are: the figures must not pass for file
		 * I/O when they are /proc's rchar/wchar. */
		telrec_rchar_from_json(ph, &io);
		if (!strcmp(telrec_bytes_source(ph), TELREC_BYTES_SHIM))
			snprintf(detail, sizeof(detail),
				 "file I/O (shim); rchar %s, wchar %s, %.0f "
				 "read / %.0f write calls%s",
				 units_bytes(io.rchar, rc, sizeof(rc)),
				 units_bytes(io.wchar, wc, sizeof(wc)),
				 json_number(ph, "read_syscalls"),
				 json_number(ph, "write_syscalls"),
				 cJSON_IsTrue(item(ph, "live")) ? ", running"
								: "");
		else
			snprintf(detail, sizeof(detail),
				 "rchar/wchar (every read and write call: "
				 "pipes, devices too), %.0f read / %.0f write "
				 "calls%s",
				 json_number(ph, "read_syscalls"),
				 json_number(ph, "write_syscalls"),
				 cJSON_IsTrue(item(ph, "live")) ? ", running"
								: "");
	} else {
		const cJSON *r;
		size_t used;

		used = (size_t)snprintf(detail, sizeof(detail), "%s, %s",
					json_string(ph, "source"),
					strcmp(telrec_bytes_source(ph),
					       TELREC_BYTES_SHIM)
					    ? "rchar/wchar"
					    : "file I/O (shim)");
		if (cJSON_GetArraySize(item(ph, "ranks")) > 0)
			used += (size_t)snprintf(detail + used,
						 sizeof(detail) - used,
						 ", ranks");
		cJSON_ArrayForEach(r, item(ph, "ranks")) {
			if (used >= sizeof(detail) - 8)
				break;
			used += (size_t)snprintf(detail + used,
						 sizeof(detail) - used, " %.0f",
						 r->valuedouble);
		}
		if (cJSON_IsNumber(item(ph, "unoverlapped_io_seconds")) &&
		    used < sizeof(detail) - 40)
			snprintf(detail + used, sizeof(detail) - used,
				 ", unoverlapped I/O %.1f s",
				 json_number(ph, "unoverlapped_io_seconds"));
	}
	fprintf(out, "%-14s %+9.1f %9s %10s %10s  %s\n", label,
		json_number(ph, "start") - t0,
		units_seconds(json_number(ph, "seconds"), secs, sizeof(secs)),
		units_bytes((uint64_t)rb, rd, sizeof(rd)),
		units_bytes((uint64_t)wb, wr, sizeof(wr)), detail);
}

/* One row of bars: column c sums samples [c*per, (c+1)*per). */
static void print_bars(const char *label, const cJSON *tl, int field, int cols,
		       int per, FILE *out)
{
	double col[TIMELINE_WIDTH] = { 0 }, max = 0;
	const cJSON *s;
	int i = 0;
	char mx[32];

	cJSON_ArrayForEach(s, tl) {
		const cJSON *v = cJSON_GetArrayItem(s, field);
		int c = i++ / per;

		if (c < cols && cJSON_IsNumber(v))
			col[c] += v->valuedouble;
	}
	for (i = 0; i < cols; i++)
		if (col[i] > max)
			max = col[i];
	fprintf(out, "  %-6s|", label);
	for (i = 0; i < cols; i++) {
		int level = max > 0 ? (int)(col[i] / max * 8 + 0.999) : 0;

		fputs(bars[level < 0 ? 0 : level > 8 ? 8 : level], out);
	}
	fprintf(out, "| peak %s per column\n",
		units_bytes((uint64_t)max, mx, sizeof(mx)));
}

/* A multi-node job's record (common/telemetry/recmerge.h): its nodes, the
 * missing ones, and one line per node's part. */
static void print_nodes(const cJSON *rec, FILE *out)
{
	const cJSON *n, *part, *ph;

	if (!cJSON_IsArray(item(rec, "parts")))
		return;
	fputs("nodes:", out);
	cJSON_ArrayForEach(n, item(rec, "nodes"))
		fprintf(out, " %s", cJSON_IsString(n) ? n->valuestring : "?");
	if (cJSON_GetArraySize(item(rec, "missing_nodes")) > 0) {
		fputs(" (missing:", out);
		cJSON_ArrayForEach(n, item(rec, "missing_nodes"))
			fprintf(out, " %s",
				cJSON_IsString(n) ? n->valuestring : "?");
		fputs(": never reported)", out);
	}
	fprintf(out, "\n\n%-12s %-12s %10s %9s %10s %10s %10s %6s\n", "NODE",
		"STATE", "STAGED", "STAGE(s)", "READ", "WRITTEN", "DRAINED",
		"PROCS");
	cJSON_ArrayForEach(part, item(rec, "parts")) {
		double si = 0, sis = 0, rd = 0, wr = 0, so = 0;
		char a[32], b[32], c[32], d[32];

		cJSON_ArrayForEach(ph, item(part, "phases")) {
			const char *name = json_string(ph, "name");

			if (!strcmp(name, "stage_in")) {
				si = json_number(ph, "bytes");
				sis = json_number(ph, "seconds");
			} else if (!strcmp(name, "run")) {
				rd = json_number(ph, "read_bytes");
				wr = json_number(ph, "write_bytes");
			} else if (!strcmp(name, "stage_out")) {
				so = json_number(ph, "bytes");
			}
		}
		fprintf(out, "%-12s %-12s %10s %9.1f %10s %10s %10s %6.0f\n",
			json_string(part, "node"), json_string(part, "state"),
			units_bytes((uint64_t)si, a, sizeof(a)), sis,
			units_bytes((uint64_t)rd, b, sizeof(b)),
			units_bytes((uint64_t)wr, c, sizeof(c)),
			units_bytes((uint64_t)so, d, sizeof(d)),
			json_number(part, "processes"));
	}
}

/* A process's step as sacct names it: the number, "batch", "extern" or
 * "interactive" for Slurm's special ids, "-" when the record has none. */
static void step_name(const cJSON *v, char *buf, size_t len)
{
	static const struct {
		double id;
		const char *name;
	} special[] = {
		{ 4294967290.0, "interactive" }, /* SLURM_INTERACTIVE_STEP */
		{ 4294967291.0, "batch" },       /* SLURM_BATCH_SCRIPT */
		{ 4294967292.0, "extern" },      /* SLURM_EXTERN_CONT */
	};

	snprintf(buf, len, "-");
	if (!cJSON_IsNumber(v))
		return;
	for (size_t i = 0; i < sizeof(special) / sizeof(special[0]); i++)
		if (v->valuedouble == special[i].id) {
			snprintf(buf, len, "%s", special[i].name);
			return;
		}
	snprintf(buf, len, "%.0f", v->valuedouble);
}

void telemetry_print(const cJSON *rec, int width, FILE *out)
{
	const cJSON *ph, *p, *run = NULL;
	double t0 = json_number(rec, "start");
	int nprocs = cJSON_GetArraySize(item(rec, "processes"));

	if (width > TIMELINE_WIDTH || width < 1)
		width = TIMELINE_WIDTH;
	fprintf(out, "job %.0f (%s) user %s on %s: %s, profile %s\n",
		json_number(rec, "job"),
		*json_string(rec, "job_name") ? json_string(rec, "job_name")
					      : "-",
		json_string(rec, "user"), json_string(rec, "node"),
		json_string(rec, "state"), json_string(rec, "profile_origin"));
	print_nodes(rec, out);
	fprintf(out, "\n%-14s %9s %9s %10s %10s  %s\n", "PHASE", "START(s)",
		"TIME", "READ", "WRITTEN", "DETAIL");
	cJSON_ArrayForEach(ph, item(rec, "phases")) {
		print_phase(ph, t0, out);
		if (!strcmp(json_string(ph, "name"), "run"))
			run = ph;
	}
	if (nprocs > 0) {
		bool new_rec = run && item(run, "bytes_source");

		/* FILE-*: the process's own shim counters (traced); RCHAR/
		 * WCHAR: /proc, every read and write call. */
		fprintf(out,
			"\n%-8s %11s %6s %6s %-12s %-8s %10s %10s %10s %10s "
			"%s\n",
			"PID", "STEP", "RANK", "LOCAL", "NODE", "IDENTITY",
			"FILE-READ", "FILE-WROTE", "RCHAR", "WCHAR", "TRACED");
		cJSON_ArrayForEach(p, item(rec, "processes")) {
			char rd[32] = "-", wr[32] = "-", rc[32], wc[32];
			char rank[16] = "-", local[16] = "-", step[16];
			struct telrec_io io = { 0 };

			step_name(item(p, "step"), step, sizeof(step));
			if (cJSON_IsNumber(item(p, "rank")))
				snprintf(rank, sizeof(rank), "%.0f",
					 json_number(p, "rank"));
			if (cJSON_IsNumber(item(p, "local_rank")))
				snprintf(local, sizeof(local), "%.0f",
					 json_number(p, "local_rank"));
			/* Since bytes_source (the run says), a process's
			 * read_bytes is its shim's file I/O and rchar is
			 * /proc's when it was sampled; before, read_bytes
			 * held rchar. */
			snprintf(rc, sizeof(rc), "-");
			snprintf(wc, sizeof(wc), "-");
			if (!new_rec || item(p, "rchar")) {
				telrec_rchar_from_json(p, &io);
				units_bytes(io.rchar, rc, sizeof(rc));
				units_bytes(io.wchar, wc, sizeof(wc));
			}
			if (new_rec && item(p, "read_bytes")) {
				units_bytes(proto_u64(p, "read_bytes"), rd,
					    sizeof(rd));
				units_bytes(proto_u64(p, "write_bytes"), wr,
					    sizeof(wr));
			}
			fprintf(out,
				"%-8.0f %11s %6s %6s %-12s %-8s %10s %10s %10s "
				"%10s %s\n",
				json_number(p, "pid"), step, rank, local,
				json_string(p, "node"),
				json_string(p, "identity"), rd, wr, rc, wc,
				cJSON_IsTrue(item(p, "traced")) ? "yes" : "no");
		}
	}
	if (run && cJSON_GetArraySize(item(run, "timeline")) > 0) {
		const cJSON *tl = item(run, "timeline");
		int n = cJSON_GetArraySize(tl);
		int per = (n + width - 1) / width, cols = (n + per - 1) / per;
		char secs[32];

		fprintf(out,
			"\nrun timeline (/proc rchar/wchar): %d sample%s, %s "
			"per column\n",
			n, n == 1 ? "" : "s",
			units_seconds(json_number(run, "interval_s") * per,
				      secs, sizeof(secs)));
		print_bars("rchar", tl, 1, cols, per, out);
		print_bars("wchar", tl, 2, cols, per, out);
	}
}

/* Is REPLY's record a job still running here (no "end" yet)? */
static bool record_live(const cJSON *reply)
{
	return !cJSON_IsNumber(item(item(reply, "record"), "end"));
}

/* The reply holding job ID's record, or NULL after one line on stderr.
 * Without a service: the node's iostaged, as ever. With one: a job still
 * running on this node from its iostaged (the service has no live jobs);
 * a finished one from the service's history (the whole job, whatever
 * node asks, a login node too); iostaged's copy of a finished job only
 * when the service does not have it yet (its record still on its way). */
static cJSON *job_record(const struct client *client, uint32_t id)
{
	char lerr[CONF_ERR_MAX], herr[CONF_ERR_MAX];
	cJSON *req, *local, *hist;

	req = json_request("telemetry");
	cJSON_AddNumberToObject(req, "job", (double)id);
	if (!client_has_service(client)) {
		local = client_call(client, req, CALL_TIMEOUT_MS);
		cJSON_Delete(req);
		return local;
	}
	local = client_call_quiet(client, req, CALL_TIMEOUT_MS, lerr,
				  sizeof(lerr));
	cJSON_Delete(req);
	if (local && record_live(local))
		return local;
	req = json_request("history_get");
	cJSON_AddNumberToObject(req, "job", (double)id);
	hist = client_history_call_quiet(client, req, CALL_TIMEOUT_MS, herr,
					 sizeof(herr));
	cJSON_Delete(req);
	if (hist && cJSON_IsObject(item(hist, "record"))) {
		cJSON_Delete(local);
		return hist;
	}
	if (hist)
		snprintf(herr, sizeof(herr),
			 "telemetry: the history's reply "
			 "for job %u has no job record",
			 id);
	cJSON_Delete(hist);
	if (local)
		return local;
	/* Neither has it. This node's iostaged knowing the job is another
	 * user's says more than the history's "not in your history" (and
	 * no more than it said before the service); otherwise the service's
	 * answer is the one that counts. */
	fprintf(stderr, "iostage: %s\n",
		!strncmp(lerr, "permission denied", 17) ? lerr : herr);
	return NULL;
}

int telemetry_main(const struct client *client, int argc, char **argv)
{
	bool as_json = false;
	const char *jobarg = NULL;
	unsigned long id;
	char *end;
	cJSON *reply;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--json"))
			as_json = true;
		else if (!jobarg && argv[i][0] != '-')
			jobarg = argv[i];
		else {
			fprintf(stderr,
				"usage: iostage telemetry JOBID [--json]\n");
			return 2;
		}
	}
	if (!jobarg) {
		fprintf(stderr, "usage: iostage telemetry JOBID [--json]\n");
		return 2;
	}
	errno = 0;
	id = strtoul(jobarg, &end, 10);
	if (errno || *end || !id || id > UINT32_MAX) {
		fprintf(stderr, "iostage: telemetry: '%s' is not a job id\n",
			jobarg);
		return 2;
	}
	reply = job_record(client, (uint32_t)id);
	if (!reply)
		return 1;
	if (as_json) {
		char *text = jsonbuf_pretty(item(reply, "record"));

		if (text)
			puts(text);
		free(text);
	} else {
		telemetry_print(item(reply, "record"), TIMELINE_WIDTH, stdout);
	}
	cJSON_Delete(reply);
	return 0;
}
