/* recommend_rules.c - the rules themselves: cache, stage, checkpoint,
 * striping (of outputs drained and of outputs written in place). Each
 * judges one group of runs (recommend_int.h) and adds a recommendation or
 * says why it skipped; recommend.c groups the runs and calls them. */
#include "common/history/recommend_int.h"

/* --- the rules -------------------------------------------------------------------- */

/* cache: a dataset read by at least min_jobs jobs that fits its tier. */
void recommend_rule_cache(const struct dsgroup *g,
			  const struct recommend_ctx *ctx, cJSON *recs,
			  cJSON *skipped)
{
	const struct recommend_tier *t = recommend_find_tier(ctx, g->tier);
	char b1[32], b2[32], action[128], gain[160];
	cJSON *r, *fig;

	if (!t || !t->capacity) {
		recommend_skip(
		    skipped, "cache", g->src,
		    "tier '%s' has no known capacity: not recommended for "
		    "staging",
		    t ? t->name : "?");
		return;
	}
	if (g->bytes > (double)t->capacity) {
		recommend_skip(
		    skipped, "cache", g->src,
		    "dataset (%s) is larger than tier '%s' (%s): never staged",
		    recommend_bytes_str(g->bytes, b1, sizeof(b1)), t->name,
		    recommend_bytes_str((double)t->capacity, b2, sizeof(b2)));
		return;
	}
	if (g->runs < ctx->min_jobs) {
		recommend_skip(
		    skipped, "cache", g->src,
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
			 recommend_bytes_str(g->bytes, b1, sizeof(b1)),
			 t->name);
	r = recommend_new_rec(recs, "cache", g->src, action, g->jobs,
			      recommend_confidence(g->runs, g->runs), gain);
	if (!r)
		return;
	recommend_add_dataset_profile(r, g, t->name, false);
	fig = recommend_figures(r);
	cJSON_AddNumberToObject(fig, "runs", (double)g->runs);
	cJSON_AddNumberToObject(fig, "bytes", g->bytes);
	cJSON_AddNumberToObject(fig, "files", g->files);
	cJSON_AddNumberToObject(fig, "tier_capacity", (double)t->capacity);
	cJSON_AddNumberToObject(fig, "cache_hits", (double)g->hit);
	cJSON_AddNumberToObject(fig, "copies", (double)g->built);
}

/* A dataset larger than a node's tier, read by jobs on several nodes:
 * spread over them (docs/STAGING.md, "Spread datasets") when the nodes
 * together hold at least RECOMMEND_SPREAD_MIN_FIT of it; what does not
 * fit is read from the PFS through the same view. */
static bool spread_helps(const struct dsgroup *g,
			 const struct recommend_tier *t)
{
	return t && t->capacity && g->nodes > 1 &&
	       (double)t->capacity * (double)g->nodes >=
		   RECOMMEND_SPREAD_MIN_FIT * g->bytes;
}

static cJSON *spread_advice(const struct dsgroup *g,
			    const struct recommend_tier *t, cJSON *recs,
			    double small, double random)
{
	double together = (double)t->capacity * (double)g->nodes;
	double held = fmin(1.0, together / fmax(g->bytes, 1));
	char b1[32], b2[32], action[320], gain[200];
	cJSON *r, *arr, *d;

	snprintf(action, sizeof(action),
		 "spread over the job's %zu nodes on %s: small or random "
		 "reads (%.0f%% small, %.0f%% random), %s does not fit one "
		 "node's tier (%s)%s",
		 g->nodes, t->name, small * 100, random * 100,
		 recommend_bytes_str(g->bytes, b1, sizeof(b1)),
		 recommend_bytes_str((double)t->capacity, b2, sizeof(b2)),
		 held < 1 ? "; only what fits is staged, the rest is read "
			    "from the PFS"
			  : "");
	snprintf(gain, sizeof(gain),
		 "~%.0f%% of the reads served by the nodes' %s instead of the "
		 "PFS, which each byte is read from once",
		 held * 100, t->name);
	r = recommend_new_rec(recs, "stage", g->src, action, g->rd_jobs,
			      recommend_confidence(g->rd, g->smallrand), gain);
	if (!r)
		return NULL;
	recommend_add_dataset_profile(r, g, t->name, true);
	arr = cJSON_GetObjectItemCaseSensitive(
	    cJSON_GetObjectItemCaseSensitive(r, "profile"), "datasets");
	cJSON_ArrayForEach(d, arr)
		cJSON_AddStringToObject(d, "spread", "yes");
	cJSON_AddNumberToObject(recommend_figures(r), "nodes",
				(double)g->nodes);
	cJSON_AddNumberToObject(recommend_figures(r), "fraction_held",
				round(held * 1000) / 1000);
	return r;
}

/* stage vs stream: small or random reads -> stage; one sequential pass
 * over a dataset larger than the tier -> do not stage. */
void recommend_rule_stage(const struct dsgroup *g,
			  const struct recommend_ctx *ctx, cJSON *recs,
			  cJSON *skipped)
{
	const struct recommend_tier *t = recommend_find_tier(ctx, g->tier);
	bool fits = t && t->capacity && g->bytes <= (double)t->capacity;
	char b1[32], b2[32], action[256], gain[200];
	double small, random;
	cJSON *r, *fig;

	if (g->rd == 0) {
		recommend_skip(
		    skipped, "stage", g->src,
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
			r = recommend_new_rec(
			    recs, "stage", g->src, action, g->rd_jobs,
			    recommend_confidence(g->rd, g->smallrand), gain);
			if (r)
				recommend_add_dataset_profile(r, g, t->name,
							      true);
		} else if (spread_helps(g, t)) {
			r = spread_advice(g, t, recs, small, random);
		} else {
			snprintf(action, sizeof(action),
				 "read from the PFS: small or random reads, "
				 "but %s does not fit tier '%s' (%s); pack the "
				 "files or use a larger tier",
				 recommend_bytes_str(g->bytes, b1, sizeof(b1)),
				 t ? t->name : "?",
				 recommend_bytes_str(t ? (double)t->capacity
						       : 0,
						     b2, sizeof(b2)));
			r = recommend_new_rec(
			    recs, "stream", g->src, action, g->rd_jobs,
			    recommend_confidence(g->rd, g->smallrand),
			    "avoids a stage-in that cannot fit");
		}
	} else if (g->onepass * 2 > g->rd && !fits) {
		snprintf(action, sizeof(action),
			 "do not stage: one sequential pass over %s, larger "
			 "than tier '%s' (%s); read it from the PFS",
			 recommend_bytes_str(g->bytes, b1, sizeof(b1)),
			 t ? t->name : "?",
			 recommend_bytes_str(t ? (double)t->capacity : 0, b2,
					     sizeof(b2)));
		snprintf(gain, sizeof(gain),
			 "avoids copying %s that is read once and cannot "
			 "fit",
			 recommend_bytes_str(g->bytes, b1, sizeof(b1)));
		r = recommend_new_rec(recs, "stream", g->src, action,
				      g->rd_jobs,
				      recommend_confidence(g->rd, g->onepass),
				      gain);
	} else {
		return; /* sequential and fits: staging is the user's call */
	}
	if (!r)
		return;
	fig = recommend_figures(r);
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
void recommend_rule_checkpoint(const cJSON *runs,
			       const struct recommend_ctx *ctx, cJSON *recs,
			       cJSON *skipped)
{
	double fr[FRACS_MAX], unov = 0, run_s = 0, median;
	const cJSON *f, *dest_out = NULL;
	const struct recommend_tier *t = recommend_find_tier(ctx, NULL);
	char action[256], gain[200], name[40];
	cJSON *jobs = cJSON_CreateArray(), *r, *fig;
	size_t n = 0, agree = 0;
	bool any_out = false;

	cJSON_ArrayForEach(f, runs) {
		const cJSON *ck = cJSON_GetObjectItemCaseSensitive(f, "ck");
		const cJSON *o;
		double rs = jobfacts_num(f, "run_s", 0), u;

		cJSON_ArrayForEach(o,
				   cJSON_GetObjectItemCaseSensitive(f, "out")) {
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
			recommend_skip(
			    skipped, "checkpoint", "checkpoints",
			    "not enough evidence: no checkpoint phase with "
			    "unoverlapped I/O time");
		goto out;
	}
	qsort(fr, n, sizeof(fr[0]), cmp_double);
	median = n % 2 ? fr[n / 2] : (fr[n / 2 - 1] + fr[n / 2]) / 2;
	if (agree * 2 <= n)
		goto out;
	if (dest_out && !strcmp(jobfacts_str(dest_out, "drain", ""), "async")) {
		recommend_skip(
		    skipped, "checkpoint", jobfacts_str(dest_out, "dest", ""),
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
		r = recommend_new_rec(recs, "checkpoint",
				      jobfacts_str(dest_out, "dest", ""),
				      action, jobs,
				      recommend_confidence(n, agree), gain);
		if (r) {
			cJSON *p = cJSON_AddObjectToObject(r, "profile");
			cJSON *arr = cJSON_AddArrayToObject(p, "outputs");
			cJSON *o = cJSON_CreateObject();

			recommend_profile_name(jobfacts_str(dest_out, "name",
							    ""),
					       "ckpt", name, sizeof(name));
			cJSON_AddStringToObject(o, "name", name);
			cJSON_AddStringToObject(o, "path",
						jobfacts_str(dest_out, "dest",
							     ""));
			cJSON_AddStringToObject(o, "tier", t->name);
			cJSON_AddStringToObject(o, "drain", "async");
			cJSON_AddItemToArray(arr, o);
		}
	} else {
		r = recommend_new_rec(
		    recs, "checkpoint", "checkpoints",
		    "declare the checkpoint directory (out=PATH): "
		    "checkpoints then go to the node-local tier and "
		    "drain asynchronously",
		    jobs, recommend_confidence(n, agree), gain);
	}
	if (r) {
		fig = recommend_figures(r);
		cJSON_AddNumberToObject(fig, "median_unoverlapped_fraction",
					round(median * 1000) / 1000);
		cJSON_AddNumberToObject(fig, "mean_unoverlapped_s",
					unov / (double)n);
		cJSON_AddNumberToObject(fig, "mean_run_s", run_s / (double)n);
	}
out:
	cJSON_Delete(jobs);
}

static const unsigned class_count[4] = { 1, 8, 24, RECOMMEND_STRIPE_MAX };

/* Runs of G whose largest file NERSC's table, capped, stripes COUNT
 * times. */
static size_t runs_with_count(const struct outgroup *g,
			      const struct recommend_ctx *ctx, unsigned count)
{
	size_t n = 0;

	for (size_t c = 0; c < 4; c++)
		if (recommend_stripe_cap(ctx, class_count[c]) == count)
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
		recommend_skip(
		    skipped, "striping", g->dest,
		    "not enough evidence: no files drained from this output "
		    "in %zu run%s",
		    g->runs, g->runs == 1 ? "" : "s");
		return;
	}
	for (size_t c = 1; c < 4; c++)
		if (g->by_class[c] >= g->by_class[typ])
			typ = c;
	nersc = class_count[typ];
	count = recommend_stripe_cap(ctx, nersc);
	recommend_bytes_str(g->class_max[typ], b1, sizeof(b1));
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
		recommend_skip(
		    skipped, "striping", g->dest,
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
	r = recommend_new_rec(recs, "striping", g->dest, action, g->jobs,
			      recommend_confidence(g->runs, agree), gain);
	if (!r)
		return;
	cJSON_AddItemToArray(cJSON_AddArrayToObject(r, "commands"),
			     cJSON_CreateString(cmd));
	fig = recommend_figures(r);
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
void recommend_rule_striping(const struct outgroup *g,
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
		recommend_shell_word(g->dest, word, sizeof(word));
		rule_striping_drain(g, ctx, word,
				    g->with_wr
					? recommend_stripe_size_mib(g->sizes)
					: 0,
				    recs, skipped);
		return;
	}
	if (g->with_hist == 0) {
		recommend_skip(
		    skipped, "striping", g->dest,
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
	recommend_shell_word(g->dest, word, sizeof(word));
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
		count = recommend_stripe_cap(ctx, recommend_stripe_count(mean));
		if (size)
			snprintf(cmd, sizeof(cmd),
				 "lfs setstripe -c %u -S %uM %s", count, size,
				 word);
		else
			snprintf(cmd, sizeof(cmd), "lfs setstripe -c %u %s",
				 count, word);
		snprintf(action, sizeof(action),
			 "stripe the shared file (%s) over %u OSTs%s",
			 recommend_bytes_str(mean, b1, sizeof(b1)), count,
			 size ? ""
			      : " (no request sizes recorded: default "
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
			snprintf(cmd, sizeof(cmd),
				 "lfs setstripe -c 1 -S %uM %s", size, word);
		else
			snprintf(cmd, sizeof(cmd), "lfs setstripe -c 1 %s",
				 word);
		snprintf(action, sizeof(action),
			 "file per process (%s per file): one stripe per file",
			 recommend_bytes_str(mean, b1, sizeof(b1)));
		snprintf(gain, sizeof(gain),
			 "no OST contention between ranks' files");
	} else {
		recommend_skip(
		    skipped, "striping", g->dest,
		    "not enough evidence: neither shared nor file-per-process "
		    "files recorded");
		return;
	}
	r = recommend_new_rec(recs, "striping", g->dest, action, g->jobs,
			      recommend_confidence(g->runs, g->with_hist),
			      gain);
	if (!r)
		return;
	cmds = cJSON_AddArrayToObject(r, "commands");
	cJSON_AddItemToArray(cmds, cJSON_CreateString(cmd));
	fig = recommend_figures(r);
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
