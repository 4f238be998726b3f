/* recmerge.c - merging the parts of a multi-node job's record.
 *
 * Sums are made in the job's node order, never in arrival order, so the
 * same parts always give the same bytes (floating-point sums included).
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/base/jsonbuf.h"
#include "common/base/jsonset.h"
#include "common/net/proto.h"
#include "common/telemetry/recmerge.h"
#include "common/telemetry/telrec.h"

static double num(const cJSON *o, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);

	return cJSON_IsNumber(v) ? v->valuedouble : 0;
}

static bool has(const cJSON *o, const char *key)
{
	return cJSON_GetObjectItemCaseSensitive(o, key) != NULL;
}

static const char *str(const cJSON *o, const char *key, const char *dflt)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);

	return cJSON_IsString(v) ? v->valuestring : dflt;
}

/* DST[key] += SRC[key] for each KEY present in SRC. */
static void add_keys(cJSON *dst, const cJSON *src, const char *const *keys)
{
	for (; *keys; keys++)
		if (cJSON_IsNumber(
			cJSON_GetObjectItemCaseSensitive(src, *keys)))
			json_set_number(dst, *keys,
					num(dst, *keys) + num(src, *keys));
}

/* DST's start becomes the earliest, end the latest, seconds between. */
static void span(cJSON *dst, const cJSON *src, bool first)
{
	double s = num(src, "start"), e = num(src, "end");

	if (first || (s > 0 && s < num(dst, "start")))
		json_set_number(dst, "start", s);
	if (first || e > num(dst, "end"))
		json_set_number(dst, "end", e);
	json_set_number(dst, "seconds", num(dst, "end") - num(dst, "start"));
}

static int state_rank(const char *s)
{
	if (!strcmp(s, "stage_failed"))
		return 2;
	if (!strcmp(s, "fallback"))
		return 1;
	return 0;
}

static int result_rank(const char *s)
{
	static const char *const order[] = { "pending", "hit", "built",
					     "fallback", "failed" };

	for (int i = 4; i >= 0; i--)
		if (!strcmp(s, order[i]))
			return i;
	return 0;
}

static const cJSON *phase_named(const cJSON *rec, const char *name)
{
	const cJSON *p;

	cJSON_ArrayForEach(p, cJSON_GetObjectItemCaseSensitive(rec, "phases"))
		if (!strcmp(str(p, "name", ""), name))
			return p;
	return NULL;
}

static cJSON *entry_named(cJSON *arr, const char *name)
{
	cJSON *e;

	cJSON_ArrayForEach(e, arr)
		if (!strcmp(str(e, "name", ""), name))
			return e;
	return NULL;
}

/* --- choosing one part per node ------------------------------------------ */

/* Is A a better part of its node than B? Deterministic whatever came
 * first: finished over live, later end, then the larger text. */
static bool better(const cJSON *a, const cJSON *b)
{
	bool fa = has(a, "end"), fb = has(b, "end");
	char *ta, *tb;
	bool r;

	if (fa != fb)
		return fa;
	if (num(a, "end") != num(b, "end"))
		return num(a, "end") > num(b, "end");
	ta = jsonbuf_dup(a);
	tb = jsonbuf_dup(b);
	r = ta && tb && strcmp(ta, tb) > 0;
	free(ta);
	free(tb);
	return r;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* --- the timeline --------------------------------------------------------- */

static int cmp_sample(const void *a, const void *b)
{
	const struct telrec_sample *x = a, *y = b;

	if (x->t != y->t)
		return x->t < y->t ? -1 : 1;
	if (x->rb != y->rb)
		return x->rb < y->rb ? -1 : 1;
	if (x->wb != y->wb)
		return x->wb < y->wb ? -1 : 1;
	if (x->rs != y->rs)
		return x->rs < y->rs ? -1 : 1;
	if (x->ws != y->ws)
		return x->ws < y->ws ? -1 : 1;
	return 0;
}

/* The job's timeline: every node's samples in time order, at the coarsest
 * node's interval (folded like one node's when it grows too long). */
static cJSON *merge_timelines(const cJSON *const *runs, size_t n)
{
	struct telrec_timeline *tl = malloc(sizeof(*tl)), *one = NULL;
	struct telrec_sample *all = NULL;
	double interval = 0;
	size_t total = 0, i, k;
	cJSON *out = NULL;

	if (!tl || !(one = malloc(sizeof(*one))))
		goto out;
	for (i = 0; i < n; i++)
		if (num(runs[i], "interval_s") > interval)
			interval = num(runs[i], "interval_s");
	for (i = 0; i < n; i++)
		total += (size_t)cJSON_GetArraySize(
		    cJSON_GetObjectItemCaseSensitive(runs[i], "timeline"));
	all = malloc(total * sizeof(*all) + 1);
	if (!all)
		goto out;
	total = 0;
	for (i = 0; i < n; i++) {
		telrec_timeline_init(one, num(runs[i], "interval_s") > 0
					      ? num(runs[i], "interval_s")
					      : 1);
		telrec_timeline_from_json(
		    one, cJSON_GetObjectItemCaseSensitive(runs[i], "timeline"),
		    num(runs[i], "interval_s"));
		for (k = 0; k < one->n; k++)
			all[total++] = one->s[k];
		/* (from_json keeps at most as many as the array had) */
	}
	qsort(all, total, sizeof(*all), cmp_sample);
	telrec_timeline_init(tl, interval > 0 ? interval : 1);
	for (k = 0; k < total; k++) {
		struct telrec_io d = { .rchar = all[k].rb,
				       .wchar = all[k].wb,
				       .syscr = all[k].rs,
				       .syscw = all[k].ws };

		telrec_timeline_add(tl, all[k].t, &d);
	}
	out = telrec_timeline_to_json(tl);
out:
	free(all);
	free(one);
	free(tl);
	return out;
}

/* --- phases ---------------------------------------------------------------- */

static const char *const stage_in_keys[] = {
	"bytes", "files", "copied_bytes", "cached_bytes", NULL,
};
static const char *const run_keys[] = {
	"read_bytes",
	"write_bytes",
	"read_syscalls",
	"write_syscalls",
	"storage_read_bytes",
	"storage_write_bytes",
	"io_seconds",
	"unoverlapped_io_seconds",
	"shared_files",
	"fpp_files",
	"untracked_file_reports",
	NULL,
};
static const char *const sub_keys[] = {
	"read_bytes",
	"write_bytes",
	"read_syscalls",
	"write_syscalls",
	"io_seconds",
	"unoverlapped_io_seconds",
	NULL,
};
static const char *const stage_out_keys[] = {
	"bytes",     "files",     "during_bytes", "during_files",
	"end_bytes", "end_files", "failed_files", NULL,
};
static const char *const output_keys[] = {
	"files",     "bytes",     "during_files", "during_bytes",
	"end_files", "end_bytes", "failed_files", "shared_files",
	"fpp_files", NULL,
};
static const char *const dataset_keys[] = {
	"copied_bytes", "copied_files", "linked_files", "cached_bytes", NULL,
};
/* A spread dataset's (docs/RECORDS.md): every node's part and what its
 * view served add up to the job's. */
static const char *const spread_keys[] = {
	"part_bytes",       "part_files",    "peer_bytes", "pfs_bytes",
	"view_local_bytes", "peer_failures", NULL,
};

/* A node's spread figures SRC into the job's DST: parts and what the
 * views served add up; the dataset is the same whole on every node; the
 * job holds the sum of its parts' share of it (partial staging: < 1). */
static void merge_spread(cJSON *dst, const cJSON *src)
{
	add_keys(dst, src, spread_keys);
	if (num(src, "dataset_bytes") > num(dst, "dataset_bytes"))
		json_set_number(dst, "dataset_bytes",
				num(src, "dataset_bytes"));
	if (num(dst, "dataset_bytes") > 0)
		json_set_number(dst, "held_fraction",
				round(num(dst, "part_bytes") /
				      num(dst, "dataset_bytes") * 1000) /
				    1000);
}

/* Union of the ranks arrays (numbers), kept sorted. */
static void add_ranks(cJSON *dst, const cJSON *src)
{
	cJSON *ranks = cJSON_GetObjectItemCaseSensitive(dst, "ranks"), *r, *e;

	if (!ranks && !(ranks = cJSON_AddArrayToObject(dst, "ranks")))
		return;
	cJSON_ArrayForEach(r, cJSON_GetObjectItemCaseSensitive(src, "ranks")) {
		cJSON *prev = NULL;
		bool dup = false;

		if (!cJSON_IsNumber(r))
			continue;
		cJSON_ArrayForEach(e, ranks) {
			if (e->valuedouble == r->valuedouble)
				dup = true;
			if (e->valuedouble < r->valuedouble)
				prev = e;
		}
		if (dup)
			continue;
		e = cJSON_CreateNumber(r->valuedouble);
		if (!e)
			return;
		if (!prev)
			cJSON_InsertItemInArray(ranks, 0, e);
		else if (!prev->next)
			cJSON_AddItemToArray(ranks, e);
		else {
			/* after PREV */
			e->next = prev->next;
			e->prev = prev;
			prev->next->prev = e;
			prev->next = e;
		}
	}
}

/* Counters {class:{...}} of SRC into DST's "counters". */
static int add_counters(cJSON *dst, const cJSON *src)
{
	const cJSON *c = cJSON_GetObjectItemCaseSensitive(src, "counters");
	cJSON *d = cJSON_GetObjectItemCaseSensitive(dst, "counters");

	if (!cJSON_IsObject(c))
		return 0;
	if (!d && !(d = cJSON_AddObjectToObject(dst, "counters")))
		return -1;
	return telrec_class_counters_merge(d, c);
}

/* A node's run bytes are its shim's file I/O or its /proc rchar/wchar
 * (docs/RECORDS.md, bytes_source). Their sum is file I/O only when every
 * node's is; otherwise the job's figures are every node's rchar/wchar,
 * labelled so, rather than a mix of the two. */
static void merge_bytes_source(cJSON *out, bool all_shim, double rchar,
			       double wchar)
{
	cJSON *src = cJSON_CreateString(all_shim ? TELREC_BYTES_SHIM
						 : TELREC_BYTES_PROC);

	if (!src)
		return;
	json_set_number(out, "rchar", rchar);
	json_set_number(out, "wchar", wchar);
	if (!all_shim) {
		json_set_number(out, "read_bytes", rchar);
		json_set_number(out, "write_bytes", wchar);
	}
	json_set(out, "bytes_source", src);
}

/* One job-level phase from the nodes' phases named NAME (NULL entries:
 * nodes without it). */
static cJSON *merge_phase(const cJSON *const *ph, size_t n,
			  const char *const *keys)
{
	cJSON *out = NULL;
	bool first = true, all_shim = true;
	double rchar = 0, wchar = 0;

	for (size_t i = 0; i < n; i++) {
		struct telrec_io io = { 0 };

		if (!ph[i])
			continue;
		if (strcmp(telrec_bytes_source(ph[i]), TELREC_BYTES_SHIM))
			all_shim = false;
		telrec_rchar_from_json(ph[i], &io);
		rchar += (double)io.rchar;
		wchar += (double)io.wchar;
		if (first) {
			out = cJSON_CreateObject();
			if (!out)
				return NULL;
			cJSON_AddStringToObject(out, "name",
						str(ph[i], "name", ""));
			if (has(ph[i], "parent"))
				cJSON_AddStringToObject(out, "parent",
							str(ph[i], "parent",
							    "run"));
			if (has(ph[i], "source"))
				cJSON_AddStringToObject(out, "source",
							str(ph[i], "source",
							    "auto"));
		} else if (!strcmp(str(ph[i], "source", ""), "marker") &&
			   has(out, "source")) {
			json_set(out, "source", cJSON_CreateString("marker"));
		}
		span(out, ph[i], first);
		add_keys(out, ph[i], keys);
		if (add_counters(out, ph[i]) < 0) {
			cJSON_Delete(out);
			return NULL;
		}
		if (has(ph[i], "ranks"))
			add_ranks(out, ph[i]);
		if (cJSON_IsTrue(
			cJSON_GetObjectItemCaseSensitive(ph[i], "live")) &&
		    !has(out, "live"))
			cJSON_AddBoolToObject(out, "live", true);
		if (has(ph[i], "end_seconds") &&
		    (first ||
		     num(ph[i], "end_seconds") > num(out, "end_seconds")))
			json_set_number(out, "end_seconds",
					num(ph[i], "end_seconds"));
		first = false;
	}
	if (out && keys != stage_in_keys && keys != stage_out_keys)
		merge_bytes_source(out, all_shim, rchar, wchar);
	return out;
}

/* --- per node --------------------------------------------------------------- */

/* What the record keeps of one node's part. */
static cJSON *part_summary(const cJSON *p)
{
	static const char *const copy_keys[] = { "state", "start", "end",
						 NULL };
	cJSON *s = cJSON_CreateObject(), *phases, *ph, *arr, *e;
	const cJSON *x;
	size_t nprocs = 0;

	if (!s)
		return NULL;
	cJSON_AddStringToObject(s, "node", str(p, "node", ""));
	for (const char *const *k = copy_keys; *k; k++)
		if ((x = cJSON_GetObjectItemCaseSensitive(p, *k)))
			cJSON_AddItemToObject(s, *k, cJSON_Duplicate(x, true));
	phases = cJSON_AddArrayToObject(s, "phases");
	cJSON_ArrayForEach(x, cJSON_GetObjectItemCaseSensitive(p, "phases")) {
		/* Per-node figures; the timeline and shim counters are
		 * the job's (top level), not repeated per node. */
		ph = cJSON_Duplicate(x, true);
		if (!ph)
			break;
		cJSON_DeleteItemFromObjectCaseSensitive(ph, "timeline");
		cJSON_DeleteItemFromObjectCaseSensitive(ph, "counters");
		cJSON_AddItemToArray(phases, ph);
	}
	arr = cJSON_AddArrayToObject(s, "datasets");
	cJSON_ArrayForEach(x, cJSON_GetObjectItemCaseSensitive(p, "datasets")) {
		static const char *const keys[] = {
			"bytes",        "files",        "copied_bytes",
			"copied_files", "linked_files", "cached_bytes",
			NULL,
		};

		e = cJSON_CreateObject();
		if (!e)
			break;
		cJSON_AddStringToObject(e, "name", str(x, "name", ""));
		cJSON_AddStringToObject(e, "result", str(x, "result", ""));
		add_keys(e, x, keys);
		/* a spread dataset: this node's part and its view's figures */
		if (cJSON_IsObject(
			cJSON_GetObjectItemCaseSensitive(x, "spread")))
			cJSON_AddItemToObject(
			    e, "spread",
			    cJSON_Duplicate(
				cJSON_GetObjectItemCaseSensitive(x, "spread"),
				true));
		cJSON_AddItemToArray(arr, e);
	}
	arr = cJSON_AddArrayToObject(s, "outputs");
	cJSON_ArrayForEach(x, cJSON_GetObjectItemCaseSensitive(p, "outputs")) {
		e = cJSON_CreateObject();
		if (!e)
			break;
		cJSON_AddStringToObject(e, "name", str(x, "name", ""));
		add_keys(e, x, output_keys);
		cJSON_AddItemToArray(arr, e);
	}
	arr = cJSON_CreateArray();
	cJSON_ArrayForEach(x,
			   cJSON_GetObjectItemCaseSensitive(p, "processes")) {
		nprocs++;
		if (arr && has(x, "rank")) {
			cJSON *tmp = cJSON_CreateObject(), *r;

			r = cJSON_AddArrayToObject(tmp, "ranks");
			cJSON_AddItemToArray(r, cJSON_CreateNumber(
						    num(x, "rank")));
			add_ranks(s, tmp);
			cJSON_Delete(tmp);
		}
	}
	cJSON_Delete(arr);
	if (has(p, "processes_total"))
		nprocs = (size_t)proto_u64(p, "processes_total");
	cJSON_AddNumberToObject(s, "processes", (double)nprocs);
	if (!has(s, "ranks"))
		cJSON_AddArrayToObject(s, "ranks");
	return s;
}

/* --- the job ------------------------------------------------------------- */

/* Datasets and outputs by name, in the first part's order. */
static void merge_datasets(cJSON *r, const cJSON *const *parts, size_t n)
{
	cJSON *arr = cJSON_AddArrayToObject(r, "datasets"), *e;
	const cJSON *d;

	for (size_t i = 0; arr && i < n; i++) {
		cJSON_ArrayForEach(
		    d, cJSON_GetObjectItemCaseSensitive(parts[i], "datasets")) {
			const char *name = str(d, "name", "");

			e = entry_named(arr, name);
			if (!e) {
				e = cJSON_Duplicate(d, true);
				if (!e)
					return;
				/* Counts restart from this node's. */
				cJSON_AddItemToArray(arr, e);
				continue;
			}
			if (result_rank(str(d, "result", "")) >
			    result_rank(str(e, "result", "")))
				json_set(e, "result",
					 cJSON_CreateString(
					     str(d, "result", "")));
			/* The dataset's size is the same on every node: the
			 * largest seen; what was copied or served adds up. */
			if (num(d, "bytes") > num(e, "bytes"))
				json_set_number(e, "bytes", num(d, "bytes"));
			if (num(d, "files") > num(e, "files"))
				json_set_number(e, "files", num(d, "files"));
			add_keys(e, d, dataset_keys);
			if (cJSON_IsObject(
				cJSON_GetObjectItemCaseSensitive(d,
								 "spread")) &&
			    cJSON_IsObject(
				cJSON_GetObjectItemCaseSensitive(e, "spread")))
				merge_spread(
				    cJSON_GetObjectItemCaseSensitive(e,
								     "spread"),
				    cJSON_GetObjectItemCaseSensitive(d,
								     "spread"));
		}
	}
}

static void merge_outputs(cJSON *r, const cJSON *const *parts, size_t n)
{
	cJSON *arr = cJSON_AddArrayToObject(r, "outputs"), *e;
	const cJSON *o;

	for (size_t i = 0; arr && i < n; i++) {
		cJSON_ArrayForEach(
		    o, cJSON_GetObjectItemCaseSensitive(parts[i], "outputs")) {
			const cJSON *h;

			e = entry_named(arr, str(o, "name", ""));
			if (!e) {
				if ((e = cJSON_Duplicate(o, true)))
					cJSON_AddItemToArray(arr, e);
				continue;
			}
			add_keys(e, o, output_keys);
			/* The largest file of the job: the largest any node
			 * drained (absent when no part recorded it). */
			if (cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(
				o, "max_file_bytes")) &&
			    num(o, "max_file_bytes") > num(e, "max_file_bytes"))
				json_set_number(e, "max_file_bytes",
						num(o, "max_file_bytes"));
			h = cJSON_GetObjectItemCaseSensitive(o, "size_hist");
			if (cJSON_IsObject(h)) {
				uint64_t a[TELREC_NBUCKETS], b[TELREC_NBUCKETS];

				telrec_size_hist_from_json(
				    a, cJSON_GetObjectItemCaseSensitive(
					   e, "size_hist"));
				telrec_size_hist_from_json(b, h);
				for (size_t k = 0; k < TELREC_NBUCKETS; k++)
					a[k] += b[k];
				cJSON_DeleteItemFromObjectCaseSensitive(
				    e, "size_hist");
				cJSON_AddItemToObject(e, "size_hist",
						      telrec_size_hist_json(a));
			}
		}
	}
}

static void merge_phases(cJSON *r, const cJSON *const *parts, size_t n)
{
	const cJSON **ph = calloc(n ? n : 1, sizeof(*ph)), **same;
	cJSON *phases = cJSON_AddArrayToObject(r, "phases"), *m, *stage_in;
	size_t nsub = 0;
	const cJSON *x;
	bool any_run = false;

	if (!ph || !phases)
		goto out;
	/* stage_in: a failure names its node. */
	for (size_t i = 0; i < n; i++)
		ph[i] = phase_named(parts[i], "stage_in");
	stage_in = merge_phase(ph, n, stage_in_keys);
	if (stage_in) {
		double s = num(stage_in, "seconds");
		double rate = s > 0 ? num(stage_in, "bytes") / s : 0;

		/* Whole bytes per second. A rate out of range comes from
		 * damaged parts and counts as none. */
		json_set_number(stage_in, "rate_bps",
				(double)proto_u64_of(rate));
		for (size_t i = 0; i < n; i++)
			if (ph[i] &&
			    cJSON_IsString(
				cJSON_GetObjectItemCaseSensitive(ph[i],
								 "error"))) {
				char buf[1200];

				snprintf(buf, sizeof(buf), "node %s: %s",
					 str(parts[i], "node", "?"),
					 str(ph[i], "error", ""));
				cJSON_AddStringToObject(stage_in, "error", buf);
				break;
			}
		cJSON_AddItemToArray(phases, stage_in);
	}
	/* run, with the job's timeline */
	for (size_t i = 0; i < n; i++) {
		ph[i] = phase_named(parts[i], "run");
		any_run |= ph[i] != NULL;
	}
	if (any_run && (m = merge_phase(ph, n, run_keys))) {
		const cJSON **runs = calloc(n, sizeof(*runs));
		size_t k = 0;
		double interval = 0;

		for (size_t i = 0; runs && i < n; i++)
			if (ph[i]) {
				runs[k++] = ph[i];
				if (num(ph[i], "interval_s") > interval)
					interval = num(ph[i], "interval_s");
			}
		json_set_number(m, "interval_s", interval);
		if (runs)
			cJSON_AddItemToObject(m, "timeline",
					      merge_timelines(runs, k));
		free(runs);
		cJSON_AddItemToArray(phases, m);
	}
	/* sub-phases, by name, in the order the nodes list them; every
	 * entry of that name counts (a record may hold several) */
	for (size_t i = 0; i < n; i++)
		nsub += (size_t)cJSON_GetArraySize(
		    cJSON_GetObjectItemCaseSensitive(parts[i], "phases"));
	same = calloc(nsub ? nsub : 1, sizeof(*same));
	for (size_t i = 0; same && i < n; i++) {
		cJSON_ArrayForEach(x,
				   cJSON_GetObjectItemCaseSensitive(parts[i],
								    "phases")) {
			const char *name = str(x, "name", "");
			size_t k = 0;

			if (!has(x, "parent") || entry_named(phases, name))
				continue;
			for (size_t j = 0; j < n; j++) {
				const cJSON *y;

				cJSON_ArrayForEach(
				    y,
				    cJSON_GetObjectItemCaseSensitive(parts[j],
								     "phases"))
					if (has(y, "parent") &&
					    !strcmp(str(y, "name", ""), name))
						same[k++] = y;
			}
			if ((m = merge_phase(same, k, sub_keys)))
				cJSON_AddItemToArray(phases, m);
		}
	}
	free(same);
	for (size_t i = 0; i < n; i++)
		ph[i] = phase_named(parts[i], "stage_out");
	if ((m = merge_phase(ph, n, stage_out_keys)))
		cJSON_AddItemToArray(phases, m);
out:
	free(ph);
}

static void merge_processes(cJSON *r, const cJSON *const *parts, size_t n)
{
	cJSON *arr = cJSON_AddArrayToObject(r, "processes");
	size_t total = 0, kept = 0;
	const cJSON *p;

	for (size_t i = 0; arr && i < n; i++) {
		size_t here = 0;

		cJSON_ArrayForEach(p, cJSON_GetObjectItemCaseSensitive(
					  parts[i], "processes")) {
			cJSON *c;

			here++;
			if (kept == RECMERGE_PROCS_MAX)
				continue;
			c = cJSON_Duplicate(p, true);
			if (!c)
				continue;
			/* Which node it ran on, whatever the task said. */
			if (!*str(c, "node", "")) {
				cJSON_DeleteItemFromObjectCaseSensitive(c,
									"node");
				cJSON_AddStringToObject(c, "node",
							str(parts[i], "node",
							    ""));
			}
			cJSON_AddItemToArray(arr, c);
			kept++;
		}
		total += has(parts[i], "processes_total")
			     ? (size_t)proto_u64(parts[i], "processes_total")
			     : here;
	}
	if (total > kept)
		cJSON_AddNumberToObject(r, "processes_total", (double)total);
}

cJSON *recmerge_job(const cJSON *const *parts, size_t nparts,
		    const char *const *nodes, size_t nnodes)
{
	const char **names = NULL;
	const cJSON **best = NULL;
	cJSON *r = NULL, *arr;
	size_t n = nnodes, i, j, have = 0;
	int worst = 0;
	bool all_ended = true;

	if (nnodes == 0) {
		/* The parts' own nodes, sorted, once each. */
		names = calloc(nparts ? nparts : 1, sizeof(*names));
		if (!names)
			goto nomem;
		for (i = 0; i < nparts; i++) {
			const char *nm = parts[i] ? str(parts[i], "node", "")
						  : "";

			for (j = 0; j < n && strcmp(names[j], nm); j++)
				;
			if (*nm && j == n)
				names[n++] = nm;
		}
		qsort(names, n, sizeof(*names), cmp_str);
	} else {
		names = calloc(nnodes, sizeof(*names));
		if (!names)
			goto nomem;
		for (i = 0; i < nnodes; i++)
			names[i] = nodes[i] ? nodes[i] : "";
	}
	if (n == 0 || n > RECMERGE_NODES_MAX) {
		free(names);
		errno = EINVAL;
		return NULL;
	}
	best = calloc(n, sizeof(*best));
	if (!best)
		goto nomem;
	for (i = 0; i < nparts; i++) {
		const char *nm;

		if (!cJSON_IsObject(parts[i]))
			continue;
		nm = str(parts[i], "node", "");
		for (j = 0; j < n && strcmp(names[j], nm); j++)
			;
		if (j == n || !*nm)
			continue; /* not a node of this job */
		if (!best[j] || better(parts[i], best[j]))
			best[j] = parts[i];
	}
	/* The present parts, in node order. */
	{
		const cJSON **in = calloc(n, sizeof(*in));
		const cJSON *head = NULL;
		const char *job_name = "";

		if (!in)
			goto nomem;
		for (j = 0; j < n; j++)
			if (best[j]) {
				in[have++] = best[j];
				if (!head)
					head = best[j];
				if (!*job_name)
					job_name = str(best[j], "job_name", "");
			}
		r = cJSON_CreateObject();
		if (!r) {
			free(in);
			goto nomem;
		}
		cJSON_AddNumberToObject(r, "schema", 1);
		if (head) {
			static const char *const ids[] = { "job", "user", "uid",
							   NULL };

			for (const char *const *k = ids; *k; k++)
				if (has(head, *k))
					cJSON_AddItemToObject(
					    r, *k,
					    cJSON_Duplicate(
						cJSON_GetObjectItemCaseSensitive(
						    head, *k),
						true));
		}
		cJSON_AddStringToObject(r, "job_name", job_name);
		cJSON_AddStringToObject(r, "node", names[0]);
		if (head) {
			cJSON_AddStringToObject(r, "profile_origin",
						str(head, "profile_origin",
						    ""));
			if (has(head, "profile"))
				cJSON_AddItemToObject(
				    r, "profile",
				    cJSON_Duplicate(
					cJSON_GetObjectItemCaseSensitive(
					    head, "profile"),
					true));
		}
		for (i = 0; i < have; i++) {
			if (state_rank(str(in[i], "state", "")) > worst)
				worst = state_rank(str(in[i], "state", ""));
			all_ended &= has(in[i], "end");
		}
		cJSON_AddStringToObject(r, "state",
					worst == 2   ? "stage_failed"
					: worst == 1 ? "fallback"
						     : "completed");
		for (i = 0; i < have; i++) {
			if (i == 0 || num(in[i], "start") < num(r, "start"))
				json_set_number(r, "start",
						num(in[i], "start"));
			if (all_ended &&
			    (i == 0 || num(in[i], "end") > num(r, "end")))
				json_set_number(r, "end", num(in[i], "end"));
		}
		merge_datasets(r, in, have);
		merge_outputs(r, in, have);
		merge_phases(r, in, have);
		merge_processes(r, in, have);
		arr = cJSON_AddArrayToObject(r, "nodes");
		for (j = 0; arr && j < n; j++)
			cJSON_AddItemToArray(arr, cJSON_CreateString(names[j]));
		arr = cJSON_AddArrayToObject(r, "missing_nodes");
		for (j = 0; arr && j < n; j++)
			if (!best[j])
				cJSON_AddItemToArray(arr, cJSON_CreateString(
							      names[j]));
		arr = cJSON_AddArrayToObject(r, "parts");
		for (i = 0; arr && i < have; i++)
			cJSON_AddItemToArray(arr, part_summary(in[i]));
		free(in);
	}
	free(best);
	free(names);
	return r;
nomem:
	free(best);
	free(names);
	cJSON_Delete(r);
	errno = ENOMEM;
	return NULL;
}

bool recmerge_is_merged(const cJSON *rec)
{
	return cJSON_IsArray(cJSON_GetObjectItemCaseSensitive(rec, "parts"));
}
