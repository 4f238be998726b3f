/* recommend.h - rules from past runs (jobfacts.h) to advice for the next.
 *
 * Pure functions: no database, no clock, no file system; the caller gives
 * the runs, the tiers and the thresholds. Each rule returns the shape of
 * docs/RECORDS.md: rule, target, action, profile (what --io-profile=auto
 * applies), commands (striping), evidence {jobs, figures}, confidence
 * (0..1; below RECOMMEND_MIN_RUNS comparable runs it stays under 0.5) and
 * expected_gain. A rule that cannot decide for lack of measurements adds a
 * "skipped" entry {rule, target, reason: "not enough evidence: ..."}
 * instead of guessing. The rules and their sources: docs/HISTORY.md.
 */
#ifndef IOSTAGE_RECOMMEND_H
#define IOSTAGE_RECOMMEND_H

#include <stddef.h>
#include <stdint.h>

#include <cJSON.h>

#include "common/config/conf.h"

#define RECOMMEND_MIN_RUNS 3           /* comparable runs for confidence */
#define RECOMMEND_APPLY_CONFIDENCE 0.5 /* --io-profile=auto applies above */

/* Drishti / WisIO thresholds (REFERENCE.md). */
#define RECOMMEND_SMALL_REQ (1024.0 * 1024.0) /* a small request */
#define RECOMMEND_SMALL_FRAC 0.10             /* small requests / ops */
#define RECOMMEND_RANDOM_FRAC 0.20            /* random ops / ops */
#define RECOMMEND_MIN_OPS 1000                /* below this, neither applies */
#define RECOMMEND_WISIO_MEAN (256.0 * 1024.0) /* small-read mean size */
#define RECOMMEND_SEQ_FRAC 0.80               /* a sequential pass */
#define RECOMMEND_ONE_PASS 1.25               /* bytes read / dataset size */
#define RECOMMEND_CKPT_FRAC 0.10 /* unoverlapped checkpoint / run */
#define RECOMMEND_DOM_FRAC 0.50  /* files <= 1 MiB / files */
#define RECOMMEND_DOM_MIN_FILES 100
#define RECOMMEND_STRIPE_MAX 72 /* NERSC's largest count */
/* Spread a dataset over a job's nodes when they hold at least this much
 * of it together (MONARCH: caching the part that fits cut training time
 * 28-37%; below half, the PFS serves most reads anyway). */
#define RECOMMEND_SPREAD_MIN_FIT 0.5

struct recommend_tier {
	char name[CONF_NAME_MAX];
	uint64_t capacity; /* bytes; 0 = unknown: nothing is staged there */
};

struct recommend_ctx {
	const struct recommend_tier *tiers;
	size_t ntiers;
	size_t default_tier; /* index into tiers */
	unsigned min_jobs;   /* cache rule: jobs reading one dataset */
	unsigned ost_count;  /* the PFS's OSTs (RecommendOSTCount): stripe
	                       * counts are capped there; 0 = not known, the
	                       * cap is NERSC's largest count */
};

/* Apply every rule to RUNS (an array of facts, newest first). Returns
 * {"runs":N, "recommendations":[...], "skipped":[...]} (caller deletes),
 * NULL on ENOMEM. */
cJSON *recommend_run(const cJSON *runs, const struct recommend_ctx *ctx);

/* The profile fragment --io-profile=auto applies: the union of the
 * "profile" of every recommendation with confidence >= MIN_CONFIDENCE
 * ({"datasets":[...], "outputs":[...]}, one entry per path, the first
 * wins). An object with empty arrays when none applies; NULL on ENOMEM. */
cJSON *recommend_profile(const cJSON *recommendations, double min_confidence);

/* NERSC's stripe count for a shared file of BYTES (capped at 72). */
unsigned recommend_stripe_count(double bytes);

/* Stripe size in MiB (1, 2 or 4) from a write request-size histogram
 * (Darshan buckets): the dominant request size clamped to 1-4 MiB. */
unsigned recommend_stripe_size_mib(const double sizes[10]);

/* Confidence for RUNS comparable runs of which AGREE fit the rule. */
double recommend_confidence(size_t runs, size_t agree);

#endif /* IOSTAGE_RECOMMEND_H */
