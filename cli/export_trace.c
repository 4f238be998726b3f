/* export_trace.c - a job's phases as Chrome trace events, which Perfetto
 * and chrome://tracing open: a JSON array of events (DFTracer's shape).
 *
 * Per job one trace process (pid = the job id) with one track per phase,
 * because phases overlap (stage_out drains during the run):
 *   tid 1 stage_in, tid 2 run, tid 3 stage_out (other top-level phases
 *          4 and up), each a complete ("X") event; the run's sub-phases
 *          (read, checkpoint, markers) nest inside run on its track,
 *          clamped to the run's bounds so that the nesting holds even if
 *          clocks disagree by a little;
 *   tid 100+N "rank R": each process of the job, from its start to end;
 *   counter ("C") events "run I/O" from the run's /proc timeline.
 * ts and dur are whole microseconds since the earliest start in the
 * export (given as trace_epoch_unix_s in each process_name's args), so
 * they print as plain integers; a child's interval is computed from the
 * same rounded ends as its parent's, so containment is exact. Phases without a start and end cannot be placed: skipped.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli/export.h"
#include "common/base/jsonbuf.h"
#include "common/telemetry/telrec.h"

#define TRACE_RUN_TID 2
#define TRACE_OTHER_TID 4 /* first track of unknown top-level phases */
#define TRACE_RANK_TID 100

struct span {
	double ts, end; /* whole microseconds since trace_epoch */
};

static double trace_epoch; /* seconds: the earliest start exported */

static double us(double seconds)
{
	return floor((seconds - trace_epoch) * 1e6 + 0.5);
}

/* The earliest start of any record, phase or process in RECORDS. */
static double earliest(const cJSON *records)
{
	const cJSON *rec, *o;
	double min = -1, v;

	cJSON_ArrayForEach(rec, records) {
		if (rec_num(rec, "start", &v) && (min < 0 || v < min))
			min = v;
		cJSON_ArrayForEach(o,
				   cJSON_GetObjectItemCaseSensitive(rec,
								    "phases"))
			if (rec_num(o, "start", &v) && (min < 0 || v < min))
				min = v;
		cJSON_ArrayForEach(
		    o, cJSON_GetObjectItemCaseSensitive(rec, "processes"))
			if (rec_num(o, "start", &v) && (min < 0 || v < min))
				min = v;
	}
	return min < 0 ? 0 : floor(min);
}

static bool span_of(const cJSON *o, struct span *ret)
{
	double s, e;

	if (!rec_num(o, "start", &s) || !rec_num(o, "end", &e) || e < s)
		return false;
	ret->ts = us(s);
	ret->end = us(e);
	return true;
}

/* Append an event; false on ENOMEM. */
static bool add_event(cJSON *arr, const char *name, const char *cat,
		      const char *ph, uint32_t pid, unsigned tid,
		      const struct span *sp, cJSON *args)
{
	cJSON *e = cJSON_CreateObject();

	if (!e) {
		cJSON_Delete(args);
		return false;
	}
	cJSON_AddStringToObject(e, "name", name);
	if (cat)
		cJSON_AddStringToObject(e, "cat", cat);
	cJSON_AddStringToObject(e, "ph", ph);
	cJSON_AddNumberToObject(e, "pid", pid);
	cJSON_AddNumberToObject(e, "tid", tid);
	if (sp) {
		cJSON_AddNumberToObject(e, "ts", sp->ts);
		if (!strcmp(ph, "X"))
			cJSON_AddNumberToObject(e, "dur", sp->end - sp->ts);
	}
	if (args)
		cJSON_AddItemToObject(e, "args", args);
	cJSON_AddItemToArray(arr, e);
	return true;
}

/* A metadata event naming a process or thread. */
static bool add_name(cJSON *arr, const char *what, uint32_t pid, unsigned tid,
		     const char *name)
{
	cJSON *args = cJSON_CreateObject();

	if (!args || !cJSON_AddStringToObject(args, "name", name)) {
		cJSON_Delete(args);
		return false;
	}
	if (!strcmp(what, "process_name"))
		cJSON_AddNumberToObject(args, "trace_epoch_unix_s",
					trace_epoch);
	return add_event(arr, what, NULL, "M", pid, tid, NULL, args);
}

/* The phase's numbers (bytes, seconds, ...) as args; strings and objects
 * other than the figures are left out. */
static cJSON *phase_args(const cJSON *ph)
{
	cJSON *args = cJSON_CreateObject();
	const cJSON *item;

	if (!args)
		return NULL;
	cJSON_ArrayForEach(item, ph) {
		if (cJSON_IsNumber(item) && strcmp(item->string, "start") &&
		    strcmp(item->string, "end"))
			cJSON_AddNumberToObject(args, item->string,
						item->valuedouble);
		else if (cJSON_IsString(item) &&
			 !strcmp(item->string, "source"))
			cJSON_AddStringToObject(args, "source",
						item->valuestring);
	}
	/* What read_bytes/write_bytes are (older records: rchar/wchar). */
	if (cJSON_GetObjectItemCaseSensitive(ph, "read_bytes"))
		cJSON_AddStringToObject(args, "bytes_source",
					telrec_bytes_source(ph));
	return args;
}

/* The track of top-level phase NAME; names it on first use. 0 on ENOMEM. */
static unsigned track(cJSON *arr, uint32_t pid, const char *name,
		      const char **others, unsigned *nothers)
{
	static const char *const fixed[] = { "stage_in", "run", "stage_out" };
	unsigned i, tid = 0;

	for (i = 0; i < 3; i++)
		if (!strcmp(name, fixed[i]))
			tid = i + 1;
	for (i = 0; !tid && i < *nothers; i++)
		if (!strcmp(name, others[i]))
			return TRACE_OTHER_TID + i;
	if (!tid) {
		if (*nothers >= TRACE_RANK_TID - TRACE_OTHER_TID)
			return TRACE_OTHER_TID; /* absurdly many: share */
		others[*nothers] = name;
		tid = TRACE_OTHER_TID + (*nothers)++;
	} else {
		/* a fixed track is named once: remember it as seen */
		for (i = 0; i < *nothers; i++)
			if (!strcmp(others[i], name))
				return tid;
		if (*nothers < TRACE_RANK_TID - TRACE_OTHER_TID)
			others[(*nothers)++] = name;
		else
			return tid;
	}
	return add_name(arr, "thread_name", pid, tid, name) ? tid : 0;
}

static bool job_phases(cJSON *arr, const cJSON *rec, uint32_t pid)
{
	const cJSON *ph, *run = rec_phase(rec, "run");
	const char *seen[TRACE_RANK_TID - TRACE_OTHER_TID];
	unsigned nseen = 0, tid;
	struct span sp, runsp;
	bool have_run = run && span_of(run, &runsp);

	cJSON_ArrayForEach(ph,
			   cJSON_GetObjectItemCaseSensitive(rec, "phases")) {
		const char *name = rec_str(ph, "name");
		const char *parent = rec_str(ph, "parent");

		if (!name || !span_of(ph, &sp))
			continue;
		if (parent) {
			if (!have_run) /* nothing to nest it in */
				continue;
			if (sp.ts < runsp.ts)
				sp.ts = runsp.ts;
			if (sp.end > runsp.end)
				sp.end = runsp.end;
			if (sp.end < sp.ts)
				continue;
		}
		tid = parent ? TRACE_RUN_TID
			     : track(arr, pid, name, seen, &nseen);
		if (!tid || !add_event(arr, name, parent ? "subphase" : "phase",
				       "X", pid, tid, &sp, phase_args(ph)))
			return false;
	}
	return true;
}

static bool job_processes(cJSON *arr, const cJSON *rec, uint32_t pid)
{
	const cJSON *p;
	unsigned n = 0;
	char name[96];
	struct span sp;
	double rank, ospid;

	cJSON_ArrayForEach(p,
			   cJSON_GetObjectItemCaseSensitive(rec, "processes")) {
		unsigned tid = TRACE_RANK_TID + n++;

		if (!span_of(p, &sp))
			continue;
		if (rec_num(p, "rank", &rank))
			snprintf(name, sizeof(name), "rank %.0f", rank);
		else
			snprintf(name, sizeof(name), "process %u", n);
		if (rec_num(p, "pid", &ospid))
			snprintf(name + strlen(name),
				 sizeof(name) - strlen(name), " (pid %.0f)",
				 ospid);
		if (!add_name(arr, "thread_name", pid, tid, name) ||
		    !add_event(arr, "process", "process", "X", pid, tid, &sp,
			       phase_args(p)))
			return false;
	}
	return true;
}

/* Counter events from the run's timeline: [t, rchar, wchar, rsys, wsys]. */
static bool job_counters(cJSON *arr, const cJSON *rec, uint32_t pid)
{
	const cJSON *run = rec_phase(rec, "run"), *row;

	cJSON_ArrayForEach(row,
			   cJSON_GetObjectItemCaseSensitive(run, "timeline")) {
		const cJSON *t = cJSON_GetArrayItem(row, 0);
		const cJSON *r = cJSON_GetArrayItem(row, 1);
		const cJSON *w = cJSON_GetArrayItem(row, 2);
		struct span sp;
		cJSON *args;

		if (!cJSON_IsNumber(t) || !cJSON_IsNumber(r) ||
		    !cJSON_IsNumber(w) || t->valuedouble < 0)
			continue;
		sp.ts = sp.end = us(t->valuedouble);
		args = cJSON_CreateObject();
		if (!args)
			return false;
		/* The timeline is /proc's, whatever the run's bytes_source:
		 * every read and write call, so named for what it is. */
		cJSON_AddNumberToObject(args, "rchar", r->valuedouble);
		cJSON_AddNumberToObject(args, "wchar", w->valuedouble);
		if (!add_event(arr, "run I/O (rchar/wchar)", NULL, "C", pid, 0,
			       &sp, args))
			return false;
	}
	return true;
}

int export_trace(const cJSON *records, FILE *out)
{
	cJSON *arr = cJSON_CreateArray();
	const cJSON *rec;
	char name[160], *text;

	if (!arr)
		goto nomem;
	trace_epoch = earliest(records);
	cJSON_ArrayForEach(rec, records) {
		uint32_t pid = rec_job(rec);
		const char *jn = rec_str(rec, "job_name");
		const char *user = rec_str(rec, "user");

		if (!pid)
			continue;
		snprintf(name, sizeof(name), "job %u%s%.64s%s%.32s%s", pid,
			 jn && *jn ? " " : "", jn ? jn : "", user ? " (" : "",
			 user ? user : "", user ? ")" : "");
		if (!add_name(arr, "process_name", pid, 0, name) ||
		    !job_phases(arr, rec, pid) ||
		    !job_processes(arr, rec, pid) ||
		    !job_counters(arr, rec, pid))
			goto nomem;
	}
	text = jsonbuf_pretty(arr);
	cJSON_Delete(arr);
	if (!text)
		goto nomem;
	fputs(text, out);
	fputc('\n', out);
	free(text);
	return 0;
nomem:
	cJSON_Delete(arr);
	errno = ENOMEM;
	return -1;
}
