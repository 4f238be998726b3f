/* recommend.c - the rules: cache, stage, stream, checkpoint, striping.
 *
 * Runs are grouped by what a rule is about (a dataset source, an output
 * directory, the application as a whole); each group is judged on the
 * runs that measured what the rule needs. Thresholds and their sources are
 * in recommend.h and docs/HISTORY.md. The one rule no other overrides: a
 * dataset larger than its tier is never recommended for staging.
 *
 * This file groups the runs, holds the helpers and the interface
 * (recommend.h); the rules are in recommend_rules.c, and
 * recommend_int.h is what the two share.
 */
#include "common/history/recommend_int.h"

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
		c = fmin(0.95,
			 0.6 + 0.05 * (double)(runs - RECOMMEND_MIN_RUNS)) *
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
unsigned recommend_stripe_cap(const struct recommend_ctx *ctx, unsigned count)
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

const char *recommend_bytes_str(double b, char *buf, size_t len)
{
	uint64_t n = 0;

	if (b >= 1.8e19)
		n = UINT64_MAX; /* a double past it has no integer value */
	else if (b > 0)
		n = (uint64_t)b;
	return units_bytes(n, buf, len);
}

/* A path as one shell word. */
const char *recommend_shell_word(const char *s, char *buf, size_t len)
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
void recommend_profile_name(const char *path, const char *def, char *buf,
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

const struct recommend_tier *
recommend_find_tier(const struct recommend_ctx *ctx, const char *name)
{
	for (size_t i = 0; name && name[0] && i < ctx->ntiers; i++)
		if (!strcmp(ctx->tiers[i].name, name))
			return &ctx->tiers[i];
	return ctx->ntiers ? &ctx->tiers[ctx->default_tier < ctx->ntiers
					     ? ctx->default_tier
					     : 0]
			   : NULL;
}

cJSON *recommend_new_rec(cJSON *recs, const char *rule, const char *target,
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

cJSON *recommend_figures(cJSON *rec)
{
	return cJSON_GetObjectItemCaseSensitive(
	    cJSON_GetObjectItemCaseSensitive(rec, "evidence"), "figures");
}

void recommend_skip(cJSON *skipped, const char *rule, const char *target,
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
void recommend_add_dataset_profile(cJSON *rec, const struct dsgroup *g,
				   const char *tier, bool random)
{
	char name[40];
	cJSON *p = cJSON_AddObjectToObject(rec, "profile");
	cJSON *arr = cJSON_AddArrayToObject(p, "datasets");
	cJSON *d = cJSON_CreateObject();

	if (!d)
		return;
	recommend_profile_name(g->src, "data", name, sizeof(name));
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
	if (jobfacts_num(f, "nodes", 1) > (double)g->nodes)
		g->nodes = (size_t)fmin(jobfacts_num(f, "nodes", 1), 65536);
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
		double random = (ops - jobfacts_num(rd, "seq", 0)) /
				fmax(ops, 1);
		double read = jobfacts_num(rd, "bytes", 0);

		random = fmax(0, random);
		g->rd++;
		cJSON_AddItemToArray(g->rd_jobs, cJSON_CreateNumber(job));
		g->small_frac += small;
		g->random_frac += random;
		g->ops += ops;
		/* Drishti: > 1000 ops, and > 10 % small or > 20 % random. */
		if (ops > RECOMMEND_MIN_OPS && (small > RECOMMEND_SMALL_FRAC ||
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
	cJSON_ArrayForEach(f, runs) {
		cJSON_ArrayForEach(x,
				   cJSON_GetObjectItemCaseSensitive(f, "ds")) {
			struct dsgroup *g = ds_group(ds, &nds,
						     jobfacts_str(x, "src",
								  ""));

			if (g)
				ds_add_run(g, f, x);
		}
		cJSON_ArrayForEach(x,
				   cJSON_GetObjectItemCaseSensitive(f, "out")) {
			struct outgroup *g =
			    out_group(out, &nout, jobfacts_str(x, "dest", ""),
				      jobfacts_str(x, "name", ""));

			if (g)
				out_add_run(g, f, x);
		}
	}
	for (size_t i = 0; i < nds; i++) {
		recommend_rule_cache(&ds[i], ctx, recs, skipped);
		recommend_rule_stage(&ds[i], ctx, recs, skipped);
	}
	recommend_rule_checkpoint(runs, ctx, recs, skipped);
	for (size_t i = 0; i < nout; i++)
		recommend_rule_striping(&out[i], ctx, recs, skipped);
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

	cJSON_ArrayForEach(e, arr)
		if (!strcmp(jobfacts_str(e, "path", ""), path))
			return true;
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

		cJSON_ArrayForEach(x, arr)
			if (!strcmp(jobfacts_str(x, "name", ""), name))
				used = true;
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
		cJSON_ArrayForEach(r, recommendations) {
			const cJSON *prof =
			    cJSON_GetObjectItemCaseSensitive(r, "profile");
			bool is_stage = !strcmp(jobfacts_str(r, "rule", ""),
						"stage");

			if (jobfacts_num(r, "confidence", 0) < min_confidence ||
			    is_stage != (pass == 0))
				continue;
			cJSON_ArrayForEach(e, cJSON_GetObjectItemCaseSensitive(
						  prof, "datasets")) {
				if (!has_path(dsa, jobfacts_str(e, "path", "")))
					add_unique(dsa, e);
			}
			cJSON_ArrayForEach(e, cJSON_GetObjectItemCaseSensitive(
						  prof, "outputs")) {
				if (!has_path(outa,
					      jobfacts_str(e, "path", "")))
					add_unique(outa, e);
			}
		}
	}
	return p;
}
