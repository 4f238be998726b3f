/* recommend.c - the rules: cache, stage, stream, checkpoint, striping.
 *
 * Runs are grouped by what a rule is about (a dataset source, an output
 * directory, the application as a whole); each group is judged on the
 * runs that measured what the rule needs. Thresholds and their sources are
 * in recommend.h and docs/HISTORY.md. The one rule no other overrides: a
 * dataset larger than its tier is never recommended for staging.
 */
#include <ctype.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/base/jsonset.h"
#include "common/base/units.h"
#include "common/history/jobfacts.h"
#include "common/history/recommend.h"

#define GROUPS_MAX 64 /* datasets or outputs judged per query */
#define FRACS_MAX 2000 /* runs the checkpoint rule weighs */

struct dsgroup {
	const char *src;
	const char *tier; /* as staged; NULL = the default tier */
	cJSON *jobs;
	size_t runs;
	double bytes, files;
	double built_s, hit_s;
	size_t built, hit;
	/* runs with shim read counters, and what they showed */
	cJSON *rd_jobs;
	size_t rd, smallrand, onepass;
	double small_frac, random_frac, ops;
};

struct outgroup {
	const char *dest;
	const char *name;
	cJSON *jobs;
	size_t runs, with_hist, with_wr;
	double shared, fpp, files, bytes, max_bytes, min_bytes;
	double hist[JOBFACTS_NBUCKETS];
	double sizes[JOBFACTS_NBUCKETS];
	/* What the drain saw of each run, for striping without the shim's
	 * file counts: runs that drained files; of them, those with one
	 * file, with a task count: one task, at least one file per task,
	 * fewer files than tasks; those whose largest file is known (else
	 * estimated); and by the NERSC class (recommend_stripe_count) of
	 * their largest file, with the largest of each class. */
	size_t drained, one_file, with_tasks, one_writer, per_task, fewer;
	size_t exact;
	size_t by_class[4];
	double class_max[4];
	double largest, tasks;
};

double recommend_confidence(size_t runs, size_t agree)
{
	double c;

	if (runs == 0 || agree == 0)
		return 0;
	if (agree > runs)
		agree = runs;
	if (runs < RECOMMEND_MIN_RUNS)
		c = 0.15 * (double)agree; /* 0.15, 0.30: low */
	else
		c = fmin(0.95, 0.6 + 0.05 * (double)(runs - RECOMMEND_MIN_RUNS)) *
		    (double)agree / (double)runs;
	return round(c * 100) / 100;
}

unsigned recommend_stripe_count(double bytes)
{
	const double gib = 1024.0 * 1024.0 * 1024.0;

	if (bytes < gib)
		return 1;
	if (bytes < 10 * gib)
		return 8;
	if (bytes < 100 * gib)
		return 24;
	return RECOMMEND_STRIPE_MAX;
}

/* NERSC's class of a file of BYTES: 0..3 for counts 1, 8, 24, 72. */
static size_t stripe_class(double bytes)
{
	switch (recommend_stripe_count(bytes)) {
	case 1:
		return 0;
	case 8:
		return 1;
	case 24:
		return 2;
	default:
		return 3;
	}
}

/* COUNT capped at the file system's OSTs when the site said how many. */
static unsigned stripe_cap(const struct recommend_ctx *ctx, unsigned count)
{
	return ctx->ost_count && count > ctx->ost_count ? ctx->ost_count
							: count;
}

unsigned recommend_stripe_size_mib(const double sizes[10])
{
	size_t best = 0;

	for (size_t i = 1; i < JOBFACTS_NBUCKETS; i++)
		if (sizes[i] > sizes[best])
			best = i;
	if (sizes[best] <= 0 || best <= 4)
		return 1; /* dominant requests under 1 MiB: the minimum */
	if (best == 5)
		return 4; /* 1-4 MiB requests: one request per stripe */
	return 4;         /* larger requests: the 4 MiB cap */
}

/* --- output helpers ------------------------------------------------------------ */

static const char *bytes_str(double b, char *buf, size_t len)
{
	uint64_t n = 0;

	if (b >= 1.8e19)
		n = UINT64_MAX; /* a double past it has no integer value */
	else if (b > 0)
		n = (uint64_t)b;
	return units_bytes(n, buf, len);
}

/* A path as one shell word. */
static const char *shell_word(const char *s, char *buf, size_t len)
{
	size_t o = 0;
	bool plain = true;

	for (const char *p = s; *p; p++)
		if (!isalnum((unsigned char)*p) && !strchr("/._-+,=:@", *p))
			plain = false;
	if (plain) {
		snprintf(buf, len, "%s", s);
		return buf;
	}
	buf[o++] = '\'';
	for (const char *p = s; *p && o + 6 < len; p++) {
		if (*p == '\'') {
			memcpy(buf + o, "'\\''", 4);
			o += 4;
		} else {
			buf[o++] = *p;
		}
	}
	buf[o++] = '\'';
	buf[o] = '\0';
	return buf;
}

/* A profile name for PATH: its last component in [A-Za-z0-9_-]. */
static void profile_name(const char *path, const char *def, char *buf,
			 size_t len)
{
	const char *base = strrchr(path, '/');
	size_t o = 0;

	base = base ? base + 1 : path;
	for (; *base && o + 1 < len && o < 31; base++)
		buf[o++] = (isalnum((unsigned char)*base) || *base == '_' ||
			    *base == '-')
			       ? *base
			       : '-';
	buf[o] = '\0';
	if (o == 0 || buf[0] == '-')
		snprintf(buf, len, "%s", def);
}

static const struct recommend_tier *find_tier(const struct recommend_ctx *ctx,
					      const char *name)
{
	for (size_t i = 0; name && name[0] && i < ctx->ntiers; i++)
		if (!strcmp(ctx->tiers[i].name, name))
			return &ctx->tiers[i];
	return ctx->ntiers ? &ctx->tiers[ctx->default_tier < ctx->ntiers
					     ? ctx->default_tier
					     : 0]
			   : NULL;
}

static cJSON *new_rec(cJSON *recs, const char *rule, const char *target,
		      const char *action, cJSON *jobs, double confidence,
		      const char *gain)
{
	cJSON *r = cJSON_CreateObject(), *ev;

	if (!r)
		return NULL;
	cJSON_AddItemToArray(recs, r);
	cJSON_AddStringToObject(r, "rule", rule);
	cJSON_AddStringToObject(r, "target", target);
	cJSON_AddStringToObject(r, "action", action);
	ev = cJSON_AddObjectToObject(r, "evidence");
	cJSON_AddItemToObject(ev, "jobs", cJSON_Duplicate(jobs, 1));
	cJSON_AddObjectToObject(ev, "figures");
	cJSON_AddNumberToObject(r, "confidence", confidence);
	cJSON_AddStringToObject(r, "expected_gain", gain);
	return r;
}

static cJSON *figures(cJSON *rec)
{
	return cJSON_GetObjectItemCaseSensitive(
	    cJSON_GetObjectItemCaseSensitive(rec, "evidence"), "figures");
}

static void skip(cJSON *skipped, const char *rule, const char *target,
		 const char *fmt, ...) __attribute__((format(printf, 4, 5)));

static void skip(cJSON *skipped, const char *rule, const char *target,
		 const char *fmt, ...)
{
	char reason[512];
	va_list ap;
	cJSON *s = cJSON_CreateObject();

	if (!s)
		return;
	va_start(ap, fmt);
	vsnprintf(reason, sizeof(reason), fmt, ap);
	va_end(ap);
	cJSON_AddStringToObject(s, "rule", rule);
	cJSON_AddStringToObject(s, "target", target);
	cJSON_AddStringToObject(s, "reason", reason);
	cJSON_AddItemToArray(skipped, s);
}

/* {"datasets":[{name, path, tier, [access], verify}]} */
static void add_dataset_profile(cJSON *rec, const struct dsgroup *g,
				const char *tier, bool random)
{
	char name[40];
	cJSON *p = cJSON_AddObjectToObject(rec, "profile");
	cJSON *arr = cJSON_AddArrayToObject(p, "datasets");
	cJSON *d = cJSON_CreateObject();

	if (!d)
		return;
	profile_name(g->src, "data", name, sizeof(name));
	cJSON_AddStringToObject(d, "name", name);
	cJSON_AddStringToObject(d, "path", g->src);
	cJSON_AddStringToObject(d, "tier", tier);
	if (random)
		cJSON_AddStringToObject(d, "access", "random");
	cJSON_AddStringToObject(d, "verify", "stat");
	cJSON_AddItemToArray(arr, d);
}

/* --- grouping ------------------------------------------------------------------ */

static struct dsgroup *ds_group(struct dsgroup *gs, size_t *n, const char *src)
{
	for (size_t i = 0; i < *n; i++)
		if (!strcmp(gs[i].src, src))
			return &gs[i];
	if (*n == GROUPS_MAX)
		return NULL;
	memset(&gs[*n], 0, sizeof(gs[0]));
	gs[*n].src = src;
	gs[*n].jobs = cJSON_CreateArray();
	gs[*n].rd_jobs = cJSON_CreateArray();
	return &gs[(*n)++];
}

static void ds_add_run(struct dsgroup *g, const cJSON *f, const cJSON *d)
{
	const cJSON *rd = cJSON_GetObjectItemCaseSensitive(f, "rd");
	double job = jobfacts_num(f, "job", 0);
	double bytes = jobfacts_num(d, "bytes", 0);
	const char *result = jobfacts_str(d, "result", "");
	const char *tier = jobfacts_str(d, "tier", "");
	double stage_s = jobfacts_num(d, "stage_s", -1);

	g->runs++;
	cJSON_AddItemToArray(g->jobs, cJSON_CreateNumber(job));
	g->bytes = fmax(g->bytes, bytes);
	g->files = fmax(g->files, jobfacts_num(d, "files", 0));
	if (tier[0] && !g->tier)
		g->tier = tier;
	if (stage_s >= 0 && !strcmp(result, "built")) {
		g->built_s += stage_s;
		g->built++;
	} else if (stage_s >= 0 && !strcmp(result, "hit")) {
		g->hit_s += stage_s;
		g->hit++;
	}
	if (cJSON_IsObject(rd)) {
		double ops = jobfacts_num(rd, "ops", 0);
		double small = jobfacts_num(rd, "small", 0) / fmax(ops, 1);
		double random = (ops - jobfacts_num(rd, "seq", 0)) / fmax(ops, 1);
		double read = jobfacts_num(rd, "bytes", 0);

		random = fmax(0, random);
		g->rd++;
		cJSON_AddItemToArray(g->rd_jobs, cJSON_CreateNumber(job));
		g->small_frac += small;
		g->random_frac += random;
		g->ops += ops;
		/* Drishti: > 1000 ops, and > 10 % small or > 20 % random. */
		if (ops > RECOMMEND_MIN_OPS &&
		    (small > RECOMMEND_SMALL_FRAC ||
		     random > RECOMMEND_RANDOM_FRAC))
			g->smallrand++;
		else if (ops > 0 && bytes > 0 &&
			 read <= RECOMMEND_ONE_PASS * bytes &&
			 1 - random >= RECOMMEND_SEQ_FRAC)
			g->onepass++;
	}
}

static struct outgroup *out_group(struct outgroup *gs, size_t *n,
				  const char *dest, const char *name)
{
	for (size_t i = 0; i < *n; i++)
		if (!strcmp(gs[i].dest, dest))
			return &gs[i];
	if (*n == GROUPS_MAX)
		return NULL;
	memset(&gs[*n], 0, sizeof(gs[0]));
	gs[*n].dest = dest;
	gs[*n].name = name;
	gs[*n].jobs = cJSON_CreateArray();
	gs[*n].min_bytes = -1;
	return &gs[(*n)++];
}

static void out_add_run(struct outgroup *g, const cJSON *f, const cJSON *o)
{
	const cJSON *hist = cJSON_GetObjectItemCaseSensitive(o, "hist");
	const cJSON *wr = cJSON_GetObjectItemCaseSensitive(f, "wr");
	double bytes = jobfacts_num(o, "bytes", 0);
	double files = jobfacts_num(o, "files", 0);
	double tasks = jobfacts_num(f, "tasks", 0);
	double maxf = jobfacts_num(o, "maxf", -1);

	g->runs++;
	cJSON_AddItemToArray(g->jobs,
			     cJSON_CreateNumber(jobfacts_num(f, "job", 0)));
	g->shared = fmax(g->shared, jobfacts_num(o, "shared", 0));
	g->fpp = fmax(g->fpp, jobfacts_num(o, "fpp", 0));
	g->files = fmax(g->files, jobfacts_num(o, "files", 0));
	g->bytes = fmax(g->bytes, bytes);
	g->max_bytes = fmax(g->max_bytes, bytes);
	g->min_bytes = g->min_bytes < 0 ? bytes : fmin(g->min_bytes, bytes);
	if (files >= 1 && bytes > 0) {
		/* The largest file: recorded by the drain, or (records filed
		 * before it was) the only file's size, or the mean, which
		 * is at most the largest. */
		if (maxf >= 0 || files == 1)
			g->exact++;
		if (maxf < 0)
			maxf = files == 1 ? bytes : bytes / files;
		g->drained++;
		g->largest = fmax(g->largest, maxf);
		g->by_class[stripe_class(maxf)]++;
		g->class_max[stripe_class(maxf)] =
		    fmax(g->class_max[stripe_class(maxf)], maxf);
		if (files == 1)
			g->one_file++;
		if (tasks >= 1) {
			g->with_tasks++;
			g->tasks = fmax(g->tasks, tasks);
			if (tasks == 1)
				g->one_writer++;
			else if (files >= tasks)
				g->per_task++;
			else
				g->fewer++;
		}
	}
	if (cJSON_GetArraySize(hist) == JOBFACTS_NBUCKETS) {
		g->with_hist++;
		for (int i = 0; i < JOBFACTS_NBUCKETS; i++)
			g->hist[i] += cJSON_GetArrayItem(hist, i)->valuedouble;
	}
	if (cJSON_IsObject(wr)) {
		const cJSON *sizes = cJSON_GetObjectItemCaseSensitive(wr,
								      "sizes");

		if (cJSON_GetArraySize(sizes) == JOBFACTS_NBUCKETS) {
			g->with_wr++;
			for (int i = 0; i < JOBFACTS_NBUCKETS; i++)
				g->sizes[i] +=
				    cJSON_GetArrayItem(sizes, i)->valuedouble;
		}
	}
}

/* --- the rules -------------------------------------------------------------------- */

/* cache: a dataset read by at least min_jobs jobs that fits its tier. */
static void rule_cache(const struct dsgroup *g, const struct recommend_ctx *ctx,
		       cJSON *recs, cJSON *skipped)
{
	const struct recommend_tier *t = find_tier(ctx, g->tier);
	char b1[32], b2[32], action[128], gain[160];
	cJSON *r, *fig;

	if (!t || !t->capacity) {
		skip(skipped, "cache", g->src,
		     "tier '%s' has no known capacity: not recommended for "
		     "staging",
		     t ? t->name : "?");
		return;
	}
	if (g->bytes > (double)t->capacity) {
		skip(skipped, "cache", g->src,
		     "dataset (%s) is larger than tier '%s' (%s): never staged",
		     bytes_str(g->bytes, b1, sizeof(b1)), t->name,
		     bytes_str((double)t->capacity, b2, sizeof(b2)));
		return;
	}
	if (g->runs < ctx->min_jobs) {
		skip(skipped, "cache", g->src,
		     "read by %zu job%s in the window (RecommendMinJobs=%u)",
		     g->runs, g->runs == 1 ? "" : "s", ctx->min_jobs);
		return;
	}
	snprintf(action, sizeof(action), "stage to %s and keep cached",
		 t->name);
	if (g->built && g->hit)
		snprintf(gain, sizeof(gain),
			 "saves ~%.1f s of stage-in per job (copy %.1f s, "
			 "cache hit %.1f s)",
			 fmax(0, g->built_s / (double)g->built -
				     g->hit_s / (double)g->hit),
			 g->built_s / (double)g->built,
			 g->hit_s / (double)g->hit);
	else
		snprintf(gain, sizeof(gain),
			 "each job after the first reads %s from %s instead "
			 "of the PFS",
			 bytes_str(g->bytes, b1, sizeof(b1)), t->name);
	r = new_rec(recs, "cache", g->src, action, g->jobs,
		    recommend_confidence(g->runs, g->runs), gain);
	if (!r)
		return;
	add_dataset_profile(r, g, t->name, false);
	fig = figures(r);
	cJSON_AddNumberToObject(fig, "runs", (double)g->runs);
	cJSON_AddNumberToObject(fig, "bytes", g->bytes);
	cJSON_AddNumberToObject(fig, "files", g->files);
	cJSON_AddNumberToObject(fig, "tier_capacity", (double)t->capacity);
	cJSON_AddNumberToObject(fig, "cache_hits", (double)g->hit);
	cJSON_AddNumberToObject(fig, "copies", (double)g->built);
}

/* stage vs stream: small or random reads -> stage; one sequential pass
 * over a dataset larger than the tier -> do not stage. */
static void rule_stage(const struct dsgroup *g, const struct recommend_ctx *ctx,
		       cJSON *recs, cJSON *skipped)
{
	const struct recommend_tier *t = find_tier(ctx, g->tier);
	bool fits = t && t->capacity && g->bytes <= (double)t->capacity;
	char b1[32], b2[32], action[256], gain[200];
	double small, random;
	cJSON *r, *fig;

	if (g->rd == 0) {
		skip(skipped, "stage", g->src,
		     "not enough evidence: no shim read counters in %zu "
		     "run%s",
		     g->runs, g->runs == 1 ? "" : "s");
		return;
	}
	small = g->small_frac / (double)g->rd;
	random = g->random_frac / (double)g->rd;
	if (g->smallrand * 2 > g->rd) {
		if (fits) {
			snprintf(action, sizeof(action),
				 "stage to %s: small or random reads "
				 "(%.0f%% small, %.0f%% random)",
				 t->name, small * 100, random * 100);
			snprintf(gain, sizeof(gain),
				 "~%.0f reads per run served by %s instead of "
				 "the PFS",
				 g->ops / (double)g->rd, t->name);
			r = new_rec(recs, "stage", g->src, action, g->rd_jobs,
				    recommend_confidence(g->rd, g->smallrand),
				    gain);
			if (r)
				add_dataset_profile(r, g, t->name, true);
		} else {
			snprintf(action, sizeof(action),
				 "read from the PFS: small or random reads, "
				 "but %s does not fit tier '%s' (%s); pack the "
				 "files or use a larger tier",
				 bytes_str(g->bytes, b1, sizeof(b1)),
				 t ? t->name : "?",
				 bytes_str(t ? (double)t->capacity : 0, b2,
					   sizeof(b2)));
			r = new_rec(recs, "stream", g->src, action, g->rd_jobs,
				    recommend_confidence(g->rd, g->smallrand),
				    "avoids a stage-in that cannot fit");
		}
	} else if (g->onepass * 2 > g->rd && !fits) {
		snprintf(action, sizeof(action),
			 "do not stage: one sequential pass over %s, larger "
			 "than tier '%s' (%s); read it from the PFS",
			 bytes_str(g->bytes, b1, sizeof(b1)), t ? t->name : "?",
			 bytes_str(t ? (double)t->capacity : 0, b2,
				   sizeof(b2)));
		snprintf(gain, sizeof(gain),
			 "avoids copying %s that is read once and cannot "
			 "fit",
			 bytes_str(g->bytes, b1, sizeof(b1)));
		r = new_rec(recs, "stream", g->src, action, g->rd_jobs,
			    recommend_confidence(g->rd, g->onepass), gain);
	} else {
		return; /* sequential and fits: staging is the user's call */
	}
	if (!r)
		return;
	fig = figures(r);
	cJSON_AddNumberToObject(fig, "runs_with_counters", (double)g->rd);
	cJSON_AddNumberToObject(fig, "small_read_fraction",
				round(small * 1000) / 1000);
	cJSON_AddNumberToObject(fig, "random_read_fraction",
				round(random * 1000) / 1000);
	cJSON_AddNumberToObject(fig, "reads_per_run", g->ops / (double)g->rd);
	cJSON_AddNumberToObject(fig, "bytes", g->bytes);
	cJSON_AddNumberToObject(fig, "tier_capacity",
				t ? (double)t->capacity : 0);
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* checkpoints: unoverlapped checkpoint I/O above 10 % of the run. */
static void rule_checkpoint(const cJSON *runs, const struct recommend_ctx *ctx,
			    cJSON *recs, cJSON *skipped)
{
	double fr[FRACS_MAX], unov = 0, run_s = 0, median;
	const cJSON *f, *dest_out = NULL;
	const struct recommend_tier *t = find_tier(ctx, NULL);
	char action[256], gain[200], name[40];
	cJSON *jobs = cJSON_CreateArray(), *r, *fig;
	size_t n = 0, agree = 0;
	bool any_out = false;

	cJSON_ArrayForEach(f, runs)
	{
		const cJSON *ck = cJSON_GetObjectItemCaseSensitive(f, "ck");
		const cJSON *o;
		double rs = jobfacts_num(f, "run_s", 0), u;

		cJSON_ArrayForEach(o, cJSON_GetObjectItemCaseSensitive(f,
								       "out"))
		{
			any_out = true;
			if (!dest_out && ck)
				dest_out = o;
			else if (ck && f == cJSON_GetArrayItem(runs, 0) &&
				 jobfacts_num(o, "bytes", 0) >
				     jobfacts_num(dest_out, "bytes", 0))
				dest_out = o;
		}
		if (!ck || rs <= 0 || n == FRACS_MAX)
			continue;
		u = jobfacts_num(ck, "unov_s", 0);
		fr[n++] = u / rs;
		unov += u;
		run_s += rs;
		if (u / rs > RECOMMEND_CKPT_FRAC)
			agree++;
		cJSON_AddItemToArray(jobs, cJSON_CreateNumber(
					       jobfacts_num(f, "job", 0)));
	}
	if (n == 0) {
		if (any_out)
			skip(skipped, "checkpoint", "checkpoints",
			     "not enough evidence: no checkpoint phase with "
			     "unoverlapped I/O time");
		goto out;
	}
	qsort(fr, n, sizeof(fr[0]), cmp_double);
	median = n % 2 ? fr[n / 2] : (fr[n / 2 - 1] + fr[n / 2]) / 2;
	if (agree * 2 <= n)
		goto out;
	if (dest_out && !strcmp(jobfacts_str(dest_out, "drain", ""), "async")) {
		skip(skipped, "checkpoint", jobfacts_str(dest_out, "dest", ""),
		     "checkpoints already drain asynchronously from '%s' and "
		     "%.0f%% of the run stays unoverlapped",
		     jobfacts_str(dest_out, "tier", ""), median * 100);
		goto out;
	}
	snprintf(gain, sizeof(gain),
		 "hides ~%.1f s of checkpoint I/O per job (%.0f%% of the run "
		 "unoverlapped)",
		 unov / (double)n, median * 100);
	if (dest_out && t) {
		snprintf(action, sizeof(action),
			 "write checkpoints to %s and drain them to the PFS "
			 "asynchronously",
			 t->name);
		r = new_rec(recs, "checkpoint",
			    jobfacts_str(dest_out, "dest", ""), action, jobs,
			    recommend_confidence(n, agree), gain);
		if (r) {
			cJSON *p = cJSON_AddObjectToObject(r, "profile");
			cJSON *arr = cJSON_AddArrayToObject(p, "outputs");
			cJSON *o = cJSON_CreateObject();

			profile_name(jobfacts_str(dest_out, "name", ""), "ckpt",
				     name, sizeof(name));
			cJSON_AddStringToObject(o, "name", name);
			cJSON_AddStringToObject(
			    o, "path", jobfacts_str(dest_out, "dest", ""));
			cJSON_AddStringToObject(o, "tier", t->name);
			cJSON_AddStringToObject(o, "drain", "async");
			cJSON_AddItemToArray(arr, o);
		}
	} else {
		r = new_rec(recs, "checkpoint", "checkpoints",
			    "declare the checkpoint directory (out=PATH): "
			    "checkpoints then go to the node-local tier and "
			    "drain asynchronously",
			    jobs, recommend_confidence(n, agree), gain);
	}
	if (r) {
		fig = figures(r);
		cJSON_AddNumberToObject(fig, "median_unoverlapped_fraction",
					round(median * 1000) / 1000);
		cJSON_AddNumberToObject(fig, "mean_unoverlapped_s",
					unov / (double)n);
		cJSON_AddNumberToObject(fig, "mean_run_s", run_s / (double)n);
	}
out:
	cJSON_Delete(jobs);
}

static const unsigned class_count[4] = {1, 8, 24, RECOMMEND_STRIPE_MAX};

/* Runs of G whose largest file NERSC's table, capped, stripes COUNT
 * times. */
static size_t runs_with_count(const struct outgroup *g,
			      const struct recommend_ctx *ctx, unsigned count)
{
	size_t n = 0;

	for (size_t c = 0; c < 4; c++)
		if (stripe_cap(ctx, class_count[c]) == count)
			n += g->by_class[c];
	return n;
}

/* striping from what the drain saw, for an output the shim did not
 * count (no trace=true: no shared/file-per-process files, no request
 * sizes): the stripe count by NERSC's table from the largest file of
 * the typical run (the class most runs' largest file falls in, the
 * larger on a tie: one outlier does not set it, and the runs that
 * agree give the confidence), the layout from the file count against
 * the task count. SIZE: the stripe size from the shim's write requests,
 * 0 when there are none. */
static void rule_striping_drain(const struct outgroup *g,
				const struct recommend_ctx *ctx,
				const char *word, unsigned size, cJSON *recs,
				cJSON *skipped)
{
	char cmd[2400], action[300], gain[200], b1[32], note[160];
	unsigned nersc, count;
	const char *what;
	size_t agree, typ = 0;
	cJSON *r, *fig, *notes;

	if (g->drained == 0) {
		skip(skipped, "striping", g->dest,
		     "not enough evidence: no files drained from this output "
		     "in %zu run%s",
		     g->runs, g->runs == 1 ? "" : "s");
		return;
	}
	for (size_t c = 1; c < 4; c++)
		if (g->by_class[c] >= g->by_class[typ])
			typ = c;
	nersc = class_count[typ];
	count = stripe_cap(ctx, nersc);
	bytes_str(g->class_max[typ], b1, sizeof(b1));
	if (g->one_file * 2 > g->drained) {
		what = g->tasks > 1 ? "shared-file" : "single-file";
		agree = runs_with_count(g, ctx, count);
		if (g->tasks > 1)
			snprintf(action, sizeof(action),
				 "one file of up to %s per job, %.0f tasks: "
				 "stripe it over %u OST%s",
				 b1, g->tasks, count, count == 1 ? "" : "s");
		else
			snprintf(action, sizeof(action),
				 "one file of up to %s per job: stripe it "
				 "over %u OST%s",
				 b1, count, count == 1 ? "" : "s");
	} else if (g->per_task * 2 > g->drained) {
		what = "file-per-process";
		count = g->largest > 1e12 ? count : 1;
		agree = g->per_task;
		snprintf(action, sizeof(action),
			 "file per process (up to %.0f files from %.0f tasks, "
			 "up to %s each): %s",
			 g->files, g->tasks, b1,
			 count == 1 ? "one stripe per file"
				    : "stripe each file (over 1 TB)");
	} else if (g->by_class[0] * 2 > g->drained) {
		what = "small-files";
		count = 1;
		agree = g->by_class[0];
		snprintf(action, sizeof(action),
			 "up to %.0f files per job of up to %s (under 1 GiB "
			 "in %zu of %zu runs): one stripe per file, shared "
			 "or not",
			 g->files, b1, g->by_class[0], g->drained);
	} else if (g->one_writer * 2 > g->drained ||
		   g->fewer * 2 > g->drained) {
		what = g->one_writer * 2 > g->drained ? "single-writer"
						      : "shared-file";
		agree = runs_with_count(g, ctx, count);
		snprintf(action, sizeof(action),
			 "up to %.0f files of up to %s per job from %.0f "
			 "task%s: stripe each over %u OST%s",
			 g->files, b1, g->tasks, g->tasks == 1 ? "" : "s",
			 count, count == 1 ? "" : "s");
	} else {
		if (g->with_tasks)
			snprintf(note, sizeof(note), "up to %.0f tasks",
				 g->tasks);
		else
			snprintf(note, sizeof(note), "no task count");
		skip(skipped, "striping", g->dest,
		     "not enough evidence: up to %.0f files of up to %s per "
		     "job (%s): without the shim (trace=true) shared files "
		     "cannot be told from file-per-process",
		     g->files, b1, note);
		return;
	}
	snprintf(cmd, sizeof(cmd), "lfs setstripe -c %u -S %uM %s", count,
		 size ? size : 1, word);
	if (count > 1)
		snprintf(gain, sizeof(gain),
			 "spreads each %s file over %u OSTs", b1, count);
	else
		snprintf(gain, sizeof(gain),
			 "no OST contention between files of up to %s", b1);
	r = new_rec(recs, "striping", g->dest, action, g->jobs,
		    recommend_confidence(g->runs, agree), gain);
	if (!r)
		return;
	cJSON_AddItemToArray(cJSON_AddArrayToObject(r, "commands"),
			     cJSON_CreateString(cmd));
	fig = figures(r);
	cJSON_AddStringToObject(fig, "layout", what);
	cJSON_AddStringToObject(fig, "source", "drain");
	cJSON_AddNumberToObject(fig, "runs_drained", (double)g->drained);
	cJSON_AddNumberToObject(fig, "files", g->files);
	cJSON_AddNumberToObject(fig, "bytes", g->bytes);
	cJSON_AddNumberToObject(fig, "largest_file_bytes", g->class_max[typ]);
	if (g->with_tasks)
		cJSON_AddNumberToObject(fig, "tasks", g->tasks);
	cJSON_AddNumberToObject(fig, "nersc_stripe_count", nersc);
	cJSON_AddNumberToObject(fig, "stripe_count", count);
	cJSON_AddNumberToObject(fig, "stripe_size_mib", size ? size : 1);
	if (ctx->ost_count)
		cJSON_AddNumberToObject(fig, "ost_count", ctx->ost_count);
	notes = cJSON_AddArrayToObject(fig, "notes");
	cJSON_AddItemToArray(notes,
			     cJSON_CreateString(
				 "no shim file counts (trace=false): from the "
				 "drain's file count and sizes"));
	if (!size)
		cJSON_AddItemToArray(
		    notes, cJSON_CreateString(
			       "stripe size: the 1 MiB default, no write "
			       "request sizes without the shim"));
	if (g->exact < g->drained) {
		snprintf(note, sizeof(note),
			 "largest file estimated as the mean file size for "
			 "%zu run%s (filed before the drain recorded it)",
			 g->drained - g->exact,
			 g->drained - g->exact == 1 ? "" : "s");
		cJSON_AddItemToArray(notes, cJSON_CreateString(note));
	}
	if (!ctx->ost_count && nersc > 1)
		cJSON_AddItemToArray(
		    notes, cJSON_CreateString(
			       "OST count not configured (RecommendOSTCount): "
			       "cap the count at the file system's"));
}

/* striping for outputs: DoM for small files, NERSC counts for shared
 * files, PFL when sizes vary, one stripe per file-per-process file. */
static void rule_striping(const struct outgroup *g,
			  const struct recommend_ctx *ctx, cJSON *recs,
			  cJSON *skipped)
{
	char cmd[2400], word[2100], b1[32], action[200], gain[200];
	double files = 0, small = 0, mean;
	size_t lo = JOBFACTS_NBUCKETS, hi = 0;
	unsigned count, size = 0;
	cJSON *r, *fig, *cmds;
	const char *what;

	if (g->with_hist == 0 && g->drained > 0 && g->shared == 0 &&
	    g->fpp == 0) {
		/* records before size_hist: the drain's count and bytes */
		shell_word(g->dest, word, sizeof(word));
		rule_striping_drain(g, ctx, word,
				    g->with_wr ? recommend_stripe_size_mib(
						     g->sizes)
					       : 0,
				    recs, skipped);
		return;
	}
	if (g->with_hist == 0) {
		skip(skipped, "striping", g->dest,
		     "not enough evidence: no file-size distribution for this "
		     "output");
		return;
	}
	for (size_t i = 0; i < JOBFACTS_NBUCKETS; i++) {
		files += g->hist[i];
		if (i <= 4)
			small += g->hist[i];
		if (g->hist[i] > 0) {
			lo = i < lo ? i : lo;
			hi = i;
		}
	}
	if (files <= 0)
		return;
	if (g->with_wr)
		size = recommend_stripe_size_mib(g->sizes);
	shell_word(g->dest, word, sizeof(word));
	mean = g->bytes / fmax(1, g->files);
	if (small / files > RECOMMEND_DOM_FRAC &&
	    files / (double)g->with_hist >= RECOMMEND_DOM_MIN_FILES) {
		what = "Data-on-MDT";
		snprintf(cmd, sizeof(cmd),
			 "lfs setstripe -E 1M -L mdt -E -1 -S 4M -c 1 %s",
			 word);
		snprintf(action, sizeof(action),
			 "small-file-heavy output (%.0f%% of files <= 1 MiB): "
			 "keep small files on the MDT",
			 100 * small / files);
		snprintf(gain, sizeof(gain),
			 "one metadata round trip per small file instead of "
			 "an OST access");
	} else if (g->shared > 0) {
		what = "shared-file";
		count = stripe_cap(ctx, recommend_stripe_count(mean));
		if (size)
			snprintf(cmd, sizeof(cmd),
				 "lfs setstripe -c %u -S %uM %s", count, size,
				 word);
		else
			snprintf(cmd, sizeof(cmd), "lfs setstripe -c %u %s",
				 count, word);
		snprintf(action, sizeof(action),
			 "stripe the shared file (%s) over %u OSTs%s", 
			 bytes_str(mean, b1, sizeof(b1)), count,
			 size ? "" : " (no request sizes recorded: default "
				     "stripe size)");
		snprintf(gain, sizeof(gain),
			 "spreads writes from every rank over %u OSTs", count);
	} else if (lo <= 4 && hi >= 8 && g->with_hist > 0) {
		what = "PFL";
		snprintf(cmd, sizeof(cmd),
			 "lfs setstripe -E 4M -c 1 -E 64M -c 4 -E -1 -c 32 %s",
			 word);
		snprintf(action, sizeof(action),
			 "file sizes vary from under 1 MiB to over 100 MiB: a "
			 "progressive layout");
		snprintf(gain, sizeof(gain),
			 "small files stay on one OST, large ones spread out");
	} else if (g->shared == 0 && g->fpp == 0) {
		/* no shim file counts (trace=false): what the drain saw */
		rule_striping_drain(g, ctx, word, size, recs, skipped);
		return;
	} else if (g->fpp > 0 && mean < 1e12) {
		what = "file-per-process";
		if (size)
			snprintf(cmd, sizeof(cmd), "lfs setstripe -c 1 -S %uM %s",
				 size, word);
		else
			snprintf(cmd, sizeof(cmd), "lfs setstripe -c 1 %s",
				 word);
		snprintf(action, sizeof(action),
			 "file per process (%s per file): one stripe per file",
			 bytes_str(mean, b1, sizeof(b1)));
		snprintf(gain, sizeof(gain),
			 "no OST contention between ranks' files");
	} else {
		skip(skipped, "striping", g->dest,
		     "not enough evidence: neither shared nor file-per-process "
		     "files recorded");
		return;
	}
	r = new_rec(recs, "striping", g->dest, action, g->jobs,
		    recommend_confidence(g->runs, g->with_hist), gain);
	if (!r)
		return;
	cmds = cJSON_AddArrayToObject(r, "commands");
	cJSON_AddItemToArray(cmds, cJSON_CreateString(cmd));
	fig = figures(r);
	cJSON_AddStringToObject(fig, "layout", what);
	cJSON_AddNumberToObject(fig, "files", g->files);
	cJSON_AddNumberToObject(fig, "bytes", g->bytes);
	cJSON_AddNumberToObject(fig, "mean_file_bytes", mean);
	cJSON_AddNumberToObject(fig, "shared_files", g->shared);
	cJSON_AddNumberToObject(fig, "small_file_fraction",
				round(1000 * small / files) / 1000);
	if (size)
		cJSON_AddNumberToObject(fig, "stripe_size_mib", size);
}

cJSON *recommend_run(const cJSON *runs, const struct recommend_ctx *ctx)
{
	struct dsgroup *ds = calloc(GROUPS_MAX, sizeof(*ds));
	struct outgroup *out = calloc(GROUPS_MAX, sizeof(*out));
	cJSON *res = cJSON_CreateObject(), *recs, *skipped;
	size_t nds = 0, nout = 0;
	const cJSON *f, *x;

	if (!ds || !out || !res)
		goto fail;
	cJSON_AddNumberToObject(res, "runs", cJSON_GetArraySize(runs));
	recs = cJSON_AddArrayToObject(res, "recommendations");
	skipped = cJSON_AddArrayToObject(res, "skipped");
	if (!recs || !skipped)
		goto fail;
	cJSON_ArrayForEach(f, runs)
	{
		cJSON_ArrayForEach(x, cJSON_GetObjectItemCaseSensitive(f, "ds"))
		{
			struct dsgroup *g = ds_group(
			    ds, &nds, jobfacts_str(x, "src", ""));

			if (g)
				ds_add_run(g, f, x);
		}
		cJSON_ArrayForEach(x,
				   cJSON_GetObjectItemCaseSensitive(f, "out"))
		{
			struct outgroup *g =
			    out_group(out, &nout, jobfacts_str(x, "dest", ""),
				      jobfacts_str(x, "name", ""));

			if (g)
				out_add_run(g, f, x);
		}
	}
	for (size_t i = 0; i < nds; i++) {
		rule_cache(&ds[i], ctx, recs, skipped);
		rule_stage(&ds[i], ctx, recs, skipped);
	}
	rule_checkpoint(runs, ctx, recs, skipped);
	for (size_t i = 0; i < nout; i++)
		rule_striping(&out[i], ctx, recs, skipped);
	goto out;
fail:
	cJSON_Delete(res);
	res = NULL;
out:
	for (size_t i = 0; ds && i < nds; i++) {
		cJSON_Delete(ds[i].jobs);
		cJSON_Delete(ds[i].rd_jobs);
	}
	for (size_t i = 0; out && i < nout; i++)
		cJSON_Delete(out[i].jobs);
	free(ds);
	free(out);
	return res;
}

/* Is there an entry with PATH in ARR already? */
static bool has_path(const cJSON *arr, const char *path)
{
	const cJSON *e;

	cJSON_ArrayForEach(e, arr) if (!strcmp(jobfacts_str(e, "path", ""),
					       path)) return true;
	return false;
}

/* Append a copy of E to ARR under a name no earlier entry uses (names
 * must be unique in a profile: two datasets may share a basename). */
static void add_unique(cJSON *arr, const cJSON *e)
{
	cJSON *c = cJSON_Duplicate(e, 1), *x;
	char name[48], base[32];

	if (!c)
		return;
	snprintf(base, sizeof(base), "%.25s", jobfacts_str(e, "name", "data"));
	snprintf(name, sizeof(name), "%s", base);
	for (int n = 2; n < 1000; n++) {
		bool used = false;

		cJSON_ArrayForEach(x, arr) if (!strcmp(jobfacts_str(x, "name", ""),
						       name)) used = true;
		if (!used)
			break;
		snprintf(name, sizeof(name), "%s-%d", base, n);
	}
	json_set(c, "name", cJSON_CreateString(name));
	cJSON_AddItemToArray(arr, c);
}

cJSON *recommend_profile(const cJSON *recommendations, double min_confidence)
{
	cJSON *p = cJSON_CreateObject();
	cJSON *dsa = cJSON_AddArrayToObject(p, "datasets");
	cJSON *outa = cJSON_AddArrayToObject(p, "outputs");
	const cJSON *r, *e;

	if (!p || !dsa || !outa) {
		cJSON_Delete(p);
		return NULL;
	}
	/* "stage" entries carry access=random: take them before "cache"
	 * ones for the same path. */
	for (int pass = 0; pass < 2; pass++) {
		cJSON_ArrayForEach(r, recommendations)
		{
			const cJSON *prof =
			    cJSON_GetObjectItemCaseSensitive(r, "profile");
			bool is_stage = !strcmp(jobfacts_str(r, "rule", ""),
						"stage");

			if (jobfacts_num(r, "confidence", 0) < min_confidence ||
			    is_stage != (pass == 0))
				continue;
			cJSON_ArrayForEach(
			    e, cJSON_GetObjectItemCaseSensitive(prof,
								"datasets"))
			{
				if (!has_path(dsa, jobfacts_str(e, "path", "")))
					add_unique(dsa, e);
			}
			cJSON_ArrayForEach(
			    e, cJSON_GetObjectItemCaseSensitive(prof,
								"outputs"))
			{
				if (!has_path(outa,
					      jobfacts_str(e, "path", "")))
					add_unique(outa, e);
			}
		}
	}
	return p;
}
