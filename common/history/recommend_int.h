/* recommend_int.h - what recommend.c and recommend_rules.c share: the
 * groups runs are judged in, and the helpers the rules write their
 * recommendations with. Not for use outside them; the interface is
 * recommend.h. */

#ifndef IOSTAGE_RECOMMEND_INT_H
#define IOSTAGE_RECOMMEND_INT_H

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

#define GROUPS_MAX 64  /* datasets or outputs judged per query */
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
	/* the most nodes a run had */
	size_t nodes;
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

/* --- recommend.c ------------------------------------------------------- */

unsigned recommend_stripe_cap(const struct recommend_ctx *ctx, unsigned count);
const char *recommend_bytes_str(double b, char *buf, size_t len);
const char *recommend_shell_word(const char *s, char *buf, size_t len);
void recommend_profile_name(const char *path, const char *def, char *buf,
			    size_t len);
const struct recommend_tier *
recommend_find_tier(const struct recommend_ctx *ctx, const char *name);
cJSON *recommend_new_rec(cJSON *recs, const char *rule, const char *target,
			 const char *action, cJSON *jobs, double confidence,
			 const char *gain);
cJSON *recommend_figures(cJSON *rec);
void recommend_skip(cJSON *skipped, const char *rule, const char *target,
		    const char *fmt, ...) __attribute__((format(printf, 4, 5)));
void recommend_add_dataset_profile(cJSON *rec, const struct dsgroup *g,
				   const char *tier, bool random);

/* --- recommend_rules.c ------------------------------------------------- */

void recommend_rule_cache(const struct dsgroup *g,
			  const struct recommend_ctx *ctx, cJSON *recs,
			  cJSON *skipped);
void recommend_rule_stage(const struct dsgroup *g,
			  const struct recommend_ctx *ctx, cJSON *recs,
			  cJSON *skipped);
void recommend_rule_checkpoint(const cJSON *runs,
			       const struct recommend_ctx *ctx, cJSON *recs,
			       cJSON *skipped);
void recommend_rule_striping(const struct outgroup *g,
			     const struct recommend_ctx *ctx, cJSON *recs,
			     cJSON *skipped);

#endif /* IOSTAGE_RECOMMEND_INT_H */
