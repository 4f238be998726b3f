/* promtext.c - Prometheus text exposition, built in memory (promtext.h). */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/telemetry/promtext.h"
#include "common/telemetry/telrec.h"

#define PROMTEXT_MAX (64u * 1024 * 1024) /* bounded even with many jobs */

struct promtext {
	char *buf;
	size_t len, cap;
	bool failed; /* an allocation failed: the text is incomplete */
};

struct promtext *promtext_create(void)
{
	return calloc(1, sizeof(struct promtext));
}

void promtext_destroy(struct promtext *pt)
{
	if (!pt)
		return;
	free(pt->buf);
	free(pt);
}

static int grow(struct promtext *pt, size_t more)
{
	size_t want = pt->len + more + 1, cap = pt->cap ? pt->cap : 4096;
	char *b;

	if (pt->failed)
		goto fail;
	if (want <= pt->cap)
		return 0;
	while (cap < want)
		cap *= 2;
	if (cap > PROMTEXT_MAX)
		goto fail;
	b = realloc(pt->buf, cap);
	if (!b)
		goto fail;
	pt->buf = b;
	pt->cap = cap;
	return 0;
fail:
	pt->failed = true;
	errno = ENOMEM;
	return -1;
}

static int put(struct promtext *pt, const char *s, size_t n)
{
	if (grow(pt, n) < 0)
		return -1;
	memcpy(pt->buf + pt->len, s, n);
	pt->len += n;
	pt->buf[pt->len] = '\0';
	return 0;
}

static int puts_(struct promtext *pt, const char *s)
{
	return put(pt, s, strlen(s));
}

/* Escape for a label value (\\, \", \n) or a HELP text (\\, \n). */
static int put_escaped(struct promtext *pt, const char *s, bool quote)
{
	for (; *s; s++) {
		const char *e = NULL;

		if (*s == '\\')
			e = "\\\\";
		else if (*s == '\n')
			e = "\\n";
		else if (*s == '"' && quote)
			e = "\\\"";
		if (e ? puts_(pt, e) < 0 : put(pt, s, 1) < 0)
			return -1;
	}
	return 0;
}

bool promtext_valid_name(const char *name)
{
	size_t i;

	if (!name || !*name)
		return false;
	for (i = 0; name[i]; i++) {
		char c = name[i];

		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		      c == '_' || c == ':' || (i > 0 && c >= '0' && c <= '9')))
			return false;
	}
	return true;
}

int promtext_family(struct promtext *pt, const char *name, const char *type,
		    const char *help)
{
	if (!pt || !promtext_valid_name(name) || !type || !help ||
	    (strcmp(type, "counter") && strcmp(type, "gauge"))) {
		errno = EINVAL;
		return -1;
	}
	if (puts_(pt, "# HELP ") < 0 || puts_(pt, name) < 0 ||
	    puts_(pt, " ") < 0 || put_escaped(pt, help, false) < 0 ||
	    puts_(pt, "\n# TYPE ") < 0 || puts_(pt, name) < 0 ||
	    puts_(pt, " ") < 0 || puts_(pt, type) < 0 || puts_(pt, "\n") < 0)
		return -1;
	return 0;
}

/* Prometheus floats: integers exactly, others with full precision. */
static void format_value(double v, char *buf, size_t len)
{
	if (isnan(v))
		snprintf(buf, len, "NaN");
	else if (isinf(v))
		snprintf(buf, len, v > 0 ? "+Inf" : "-Inf");
	else if (v == floor(v) && fabs(v) < 9007199254740992.0)
		snprintf(buf, len, "%.0f", v);
	else if (snprintf(buf, len, "%.15g", v) > 0 && strtod(buf, NULL) != v)
		snprintf(buf, len, "%.17g", v); /* the shortest exact form */
}

int promtext_sample(struct promtext *pt, const char *name,
		    const char *const *labels, double value)
{
	char num[64];
	size_t i;

	if (!pt || !promtext_valid_name(name)) {
		errno = EINVAL;
		return -1;
	}
	for (i = 0; labels && labels[i]; i += 2)
		if (!promtext_valid_name(labels[i]) || !labels[i + 1]) {
			errno = EINVAL;
			return -1;
		}
	if (puts_(pt, name) < 0)
		return -1;
	for (i = 0; labels && labels[i]; i += 2)
		if (puts_(pt, i ? "," : "{") < 0 || puts_(pt, labels[i]) < 0 ||
		    puts_(pt, "=\"") < 0 ||
		    put_escaped(pt, labels[i + 1], true) < 0 ||
		    puts_(pt, "\"") < 0)
			return -1;
	if (labels && labels[0] && puts_(pt, "}") < 0)
		return -1;
	format_value(value, num, sizeof(num));
	if (puts_(pt, " ") < 0 || puts_(pt, num) < 0 || puts_(pt, "\n") < 0)
		return -1;
	return 0;
}

const char *promtext_text(const struct promtext *pt, size_t *ret_len)
{
	if (!pt || pt->failed)
		return NULL;
	if (ret_len)
		*ret_len = pt->len;
	return pt->buf ? pt->buf : "";
}

/* --- job phases from records ------------------------------------------------- */

#define PHASES_MAX 64 /* distinct phase names per job we export */

struct phase_sum {
	const char *name;
	double read, write, seconds;
	bool has_read, has_write, has_seconds;
	const char *source; /* of read/write: "shim", "proc_rchar",
				 * "staging"; the first phase's */
};

static bool num(const cJSON *o, const char *key, double *ret)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);

	if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble) ||
	    v->valuedouble < 0)
		return false;
	*ret = v->valuedouble;
	return true;
}

/* Add KEY of PH (when present) to *SUM and set *HAS. */
static void add(const cJSON *ph, const char *key, double *sum, bool *has)
{
	double v;

	if (num(ph, key, &v)) {
		*sum += v;
		*has = true;
	}
}

/* Sum RECORD's phases by name into SUMS (at most PHASES_MAX). */
static size_t sum_phases(const cJSON *record, struct phase_sum *sums)
{
	const cJSON *ph;
	size_t n = 0, i;

	cJSON_ArrayForEach(ph,
			   cJSON_GetObjectItemCaseSensitive(record, "phases")) {
		const cJSON *nm = cJSON_GetObjectItemCaseSensitive(ph, "name");
		struct phase_sum *p;

		if (!cJSON_IsString(nm) || !*nm->valuestring)
			continue;
		for (i = 0; i < n; i++)
			if (!strcmp(sums[i].name, nm->valuestring))
				break;
		if (i == n) {
			if (n == PHASES_MAX)
				continue;
			memset(&sums[n], 0, sizeof(sums[n]));
			sums[n++].name = nm->valuestring;
		}
		p = &sums[i];
		if (!strcmp(p->name, "stage_in"))
			add(ph, "bytes", &p->read, &p->has_read);
		else if (!strcmp(p->name, "stage_out"))
			add(ph, "bytes", &p->write, &p->has_write);
		if (!p->source && (p->has_read || p->has_write))
			p->source = "staging";
		add(ph, "read_bytes", &p->read, &p->has_read);
		add(ph, "write_bytes", &p->write, &p->has_write);
		if (!p->source && (p->has_read || p->has_write))
			p->source = telrec_bytes_source(ph);
		add(ph, "seconds", &p->seconds, &p->has_seconds);
	}
	return n;
}

static bool record_jobid(const cJSON *record, char *buf, size_t len)
{
	double id;

	if (!num(record, "job", &id) || id < 1 || id > 4294967295.0 ||
	    id != floor(id))
		return false;
	snprintf(buf, len, "%.0f", id);
	return true;
}

int promtext_job_phases(struct promtext *pt, const cJSON *records)
{
	static const char *const dirs[] = { "read", "write" };
	struct phase_sum sums[PHASES_MAX];
	const cJSON *rec;
	char id[16];
	size_t n, i, d;

	if (!pt || !cJSON_IsArray(records)) {
		errno = EINVAL;
		return -1;
	}
	if (promtext_family(pt, "iostage_job_phase_bytes", "gauge",
			    "Bytes a job moved in a phase, by direction from "
			    "the job's side (stage_in reads, stage_out "
			    "writes); dropped a grace period after the job "
			    "ends") < 0)
		return -1;
	cJSON_ArrayForEach(rec, records) {
		if (!record_jobid(rec, id, sizeof(id)))
			continue;
		n = sum_phases(rec, sums);
		for (i = 0; i < n; i++)
			for (d = 0; d < 2; d++) {
				const char *labels[] = {
					"jobid",      id,          "phase",
					sums[i].name, "direction", dirs[d],
					NULL
				};
				bool has = d ? sums[i].has_write
					     : sums[i].has_read;

				if (has &&
				    promtext_sample(
					pt, "iostage_job_phase_bytes", labels,
					d ? sums[i].write : sums[i].read) < 0)
					return -1;
			}
	}
	/* Where each phase's bytes come from, as an info series: a label
	 * on the bytes themselves would change their identity whenever a
	 * running job's first shim summary arrives. */
	if (promtext_family(pt, "iostage_job_phase_bytes_source", "gauge",
			    "Where iostage_job_phase_bytes of a phase comes "
			    "from (always 1): shim (file I/O counted by the "
			    "LD_PRELOAD shim), proc_rchar (/proc rchar/wchar: "
			    "every read and write call, pipes, sockets and "
			    "devices included) or staging") < 0)
		return -1;
	cJSON_ArrayForEach(rec, records) {
		if (!record_jobid(rec, id, sizeof(id)))
			continue;
		n = sum_phases(rec, sums);
		for (i = 0; i < n; i++) {
			const char *labels[] = { "jobid",  id,
						 "phase",  sums[i].name,
						 "source", sums[i].source,
						 NULL };

			if (sums[i].source &&
			    promtext_sample(pt,
					    "iostage_job_phase_bytes_source",
					    labels, 1) < 0)
				return -1;
		}
	}
	if (promtext_family(pt, "iostage_job_phase_seconds", "gauge",
			    "How long a job's phase lasted (so far, while it "
			    "runs)") < 0)
		return -1;
	cJSON_ArrayForEach(rec, records) {
		if (!record_jobid(rec, id, sizeof(id)))
			continue;
		n = sum_phases(rec, sums);
		for (i = 0; i < n; i++) {
			const char *labels[] = { "jobid", id, "phase",
						 sums[i].name, NULL };

			if (sums[i].has_seconds &&
			    promtext_sample(pt, "iostage_job_phase_seconds",
					    labels, sums[i].seconds) < 0)
				return -1;
		}
	}
	return 0;
}

/* --- iostagectld's scheduling counters -------------------------------------- */

/* One sample of promtext_sched_status: family NAME (a new family when
 * TYPE is set), label NAME=VALUE (none when LNAME is NULL), the value at
 * OBJ.KEY of the reply. */
static const struct sched_sample {
	const char *name, *type, *help;
	const char *lname, *lvalue;
	const char *obj, *key;
} sched_samples[] = {
	{ "iostage_ctld_nodes_reporting", "gauge",
	  "Nodes whose cache iostagectld knows", NULL, NULL, "placement",
	  "nodes_reporting" },
	{ "iostage_ctld_placement_preferred_total", "counter",
	  "Submissions given a --prefer for nodes caching their data", NULL,
	  NULL, "placement", "preferred" },
	{ "iostage_ctld_placements_total", "counter",
	  "Jobs preferring cached nodes, by whether Slurm started them there",
	  "outcome", "honoured", "placement", "honoured" },
	{ "iostage_ctld_placements_total", NULL, NULL, "outcome",
	  "not_honoured", "placement", "not_honoured" },
	{ "iostage_ctld_placement_hold_seconds", "gauge",
	  "PlacementHold=: how long a job may wait for a node with its data",
	  NULL, NULL, "placement", "hold_s" },
	{ "iostage_ctld_placement_holds_total", "counter",
	  "Jobs held for their data's nodes, by outcome: held (all), started "
	  "(within the hold), released (at the bound)",
	  "outcome", "held", "placement", "held" },
	{ "iostage_ctld_placement_holds_total", NULL, NULL, "outcome",
	  "started", "placement", "held_started" },
	{ "iostage_ctld_placement_holds_total", NULL, NULL, "outcome",
	  "released", "placement", "hold_released" },
	{ "iostage_ctld_feature_updates_total", "counter",
	  "Node feature updates sent to Slurm", "result", "ok", "placement",
	  "feature_updates" },
	{ "iostage_ctld_feature_updates_total", NULL, NULL, "result", "error",
	  "placement", "feature_update_errors" },
	{ "iostage_ctld_prestage_jobs_noted_total", "counter",
	  "Submitted jobs whose datasets iostagectld was told (job_note)", NULL,
	  NULL, "prestage", "jobs_noted" },
	{ "iostage_ctld_prestage_pending_jobs", "gauge",
	  "Noted jobs that have not started yet", NULL, NULL, "prestage",
	  "pending_jobs" },
	{ "iostage_ctld_prestage_requests_total", "counter",
	  "Datasets iostagectld asked nodes to pre-stage", NULL, NULL,
	  "prestage", "requests" },
	{ "iostage_ctld_prestage_datasets_total", "counter",
	  "Datasets pre-staged for pending jobs, by result", "result", "staged",
	  "prestage", "staged" },
	{ "iostage_ctld_prestage_datasets_total", NULL, NULL, "result",
	  "failed", "prestage", "failed" },
	{ "iostage_ctld_prestage_bytes_total", "counter",
	  "Bytes put in node caches for pending jobs", NULL, NULL, "prestage",
	  "bytes" },
	{ "iostage_ctld_prestage_predictions_total", "counter",
	  "Pre-staged jobs that started where their data was staged (hit), "
	  "where it was still being staged (late), or elsewhere (missed)",
	  "outcome", "hit", "prestage", "hits" },
	{ "iostage_ctld_prestage_predictions_total", NULL, NULL, "outcome",
	  "late", "prestage", "late" },
	{ "iostage_ctld_prestage_predictions_total", NULL, NULL, "outcome",
	  "missed", "prestage", "missed" },
	{ "iostage_ctld_prestage_saved_seconds_total", "counter",
	  "Seconds the nodes spent building the pre-staged datasets of the "
	  "hits, while those jobs waited (docs/SCHEDULING.md)",
	  NULL, NULL, "prestage", "seconds_saved" },
};

int promtext_sched_status(struct promtext *pt, const cJSON *reply)
{
	for (size_t i = 0; i < sizeof(sched_samples) / sizeof(sched_samples[0]);
	     i++) {
		const struct sched_sample *s = &sched_samples[i];
		const char *labels[] = { s->lname, s->lvalue, NULL };
		double v = 0;

		num(cJSON_GetObjectItemCaseSensitive(reply, s->obj), s->key,
		    &v);
		if ((s->type &&
		     promtext_family(pt, s->name, s->type, s->help) < 0) ||
		    promtext_sample(pt, s->name, s->lname ? labels : NULL, v) <
			0)
			return -1;
	}
	return 0;
}
