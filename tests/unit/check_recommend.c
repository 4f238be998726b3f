/* check_recommend.c - unit tests for daemon/recommend and daemon/jobfacts:
 * every rule, its thresholds, confidence below 3 runs, and the rule that
 * no other overrides: never stage a dataset larger than its tier. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <check.h>

#include "common/history/jobfacts.h"
#include "common/history/recommend.h"
#include "tests/unit/check_run.h"

#define GIB (1024.0 * 1024.0 * 1024.0)

static const struct recommend_tier tiers[] = {
	{ "nvme", (uint64_t)(100 * GIB) },
	{ "ram", 256ULL << 20 },
	{ "nocap", 0 },
};

static const struct recommend_ctx ctx = {
	.tiers = tiers, .ntiers = 3, .default_tier = 0, .min_jobs = 3
};

/* A record as docs/RECORDS.md has it, from printf pieces. */
static cJSON *record(unsigned job, const char *datasets, const char *outputs,
		     const char *phases)
{
	char buf[16384];
	cJSON *r;

	snprintf(buf, sizeof(buf),
		 "{\"schema\":1,\"job\":%u,\"user\":\"alice\",\"uid\":1001,"
		 "\"job_name\":\"train\",\"end\":%u,\"datasets\":%s,"
		 "\"outputs\":%s,\"phases\":%s}",
		 job, 1700000000 + job, datasets, outputs, phases);
	r = cJSON_Parse(buf);
	ck_assert_msg(r != NULL, "bad test record: %s", buf);
	return r;
}

/* REC's facts as the service reads them: written packed at filing
 * (jobfacts_pack_record), unpacked at the query. They must be the very
 * bytes the tree's packing gives, and unpack to the same tree. */
static cJSON *stored_facts(const cJSON *rec)
{
	struct jsonbuf direct = { 0 }, via_tree = { 0 };
	char err[256];
	cJSON *tree = jobfacts_from_record(rec, err, sizeof(err)), *f;

	ck_assert_msg(tree != NULL, "%s", err);
	ck_assert_int_eq(jobfacts_pack_record(&direct, rec, err, sizeof(err)),
			 0);
	ck_assert_int_eq(jobfacts_pack(&via_tree, tree), 0);
	ck_assert_msg(direct.len == via_tree.len &&
			  !memcmp(direct.data, via_tree.data, direct.len),
		      "packed facts of job %.0f differ from the tree's",
		      jobfacts_num(tree, "job", 0));
	f = jobfacts_unpack(direct.data, direct.len);
	ck_assert(f && cJSON_Compare(f, tree, 1));
	cJSON_Delete(tree);
	jsonbuf_fini(&direct);
	jsonbuf_fini(&via_tree);
	return f;
}

/* The facts of N runs built by MAKE(i), newest first. */
static cJSON *runs_of(size_t n, cJSON *(*make)(unsigned))
{
	cJSON *arr = cJSON_CreateArray();

	for (size_t i = n; i > 0; i--) {
		cJSON *rec = make((unsigned)i);

		cJSON_AddItemToArray(arr, stored_facts(rec));
		cJSON_Delete(rec);
	}
	return arr;
}

static const char *reads(double ops, double small, double seq, double bytes)
{
	static char buf[1024];

	snprintf(buf, sizeof(buf),
		 "{\"POSIX_READS\":%.0f,\"POSIX_BYTES_READ\":%.0f,"
		 "\"POSIX_SEQ_READS\":%.0f,\"POSIX_CONSEC_READS\":%.0f,"
		 "\"POSIX_SIZE_READ_100K_1M\":%.0f,"
		 "\"POSIX_SIZE_READ_1M_4M\":%.0f}",
		 ops, bytes, seq, seq, small, ops - small);
	return buf;
}

static const char *dataset(const char *src, double bytes, const char *tier,
			   const char *result)
{
	static char buf[512];

	snprintf(buf, sizeof(buf),
		 "[{\"name\":\"d\",\"source\":\"%s\",\"tier\":\"%s\","
		 "\"bytes\":%.0f,\"files\":1000,\"result\":\"%s\"}]",
		 src, tier, bytes, result);
	return buf;
}

static cJSON *find_rule(const cJSON *res, const char *rule, const char *target)
{
	cJSON *r;

	cJSON_ArrayForEach(r, cJSON_GetObjectItem(res, "recommendations"))
		if (!strcmp(jobfacts_str(r, "rule", ""), rule) &&
		    (!target || !strcmp(jobfacts_str(r, "target", ""), target)))
			return r;
	return NULL;
}

static cJSON *find_skip(const cJSON *res, const char *rule)
{
	cJSON *r;

	cJSON_ArrayForEach(r, cJSON_GetObjectItem(res, "skipped"))
		if (!strcmp(jobfacts_str(r, "rule", ""), rule))
			return r;
	return NULL;
}

static cJSON *figures_of(const cJSON *rec)
{
	return cJSON_GetObjectItem(cJSON_GetObjectItem(rec, "evidence"),
				   "figures");
}

/* No recommendation of RES stages PATH (profile datasets). */
static void assert_never_staged(const cJSON *res, const char *path)
{
	const cJSON *r, *d;

	cJSON_ArrayForEach(r, cJSON_GetObjectItem(res, "recommendations"))
		cJSON_ArrayForEach(
		    d, cJSON_GetObjectItem(cJSON_GetObjectItem(r, "profile"),
					   "datasets"))
			ck_assert_msg(strcmp(jobfacts_str(d, "path", ""),
					     path) != 0,
				      "rule %s stages %s",
				      jobfacts_str(r, "rule", ""), path);
}

/* --- cache ------------------------------------------------------------------- */

static cJSON *cache_job(unsigned i)
{
	char phases[512];

	snprintf(phases, sizeof(phases),
		 "[{\"name\":\"stage_in\",\"seconds\":%s},"
		 "{\"name\":\"run\",\"seconds\":100}]",
		 i == 1 ? "9.5" : "0.5");
	return record(i,
		      dataset("/pfs/imagenet", 1.13e9, "nvme",
			      i == 1 ? "built" : "hit"),
		      "[]", phases);
}

START_TEST(test_cache_fires)
{
	cJSON *runs = runs_of(5, cache_job), *res = recommend_run(runs, &ctx);
	cJSON *r = find_rule(res, "cache", "/pfs/imagenet"), *ds;

	ck_assert_ptr_nonnull(r);
	ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItem(
			     cJSON_GetObjectItem(r, "evidence"), "jobs")),
			 5);
	ck_assert(jobfacts_num(r, "confidence", 0) >= 0.5);
	ck_assert_ptr_nonnull(
	    strstr(jobfacts_str(r, "expected_gain", ""), "9.0 s"));
	ds = cJSON_GetArrayItem(
	    cJSON_GetObjectItem(cJSON_GetObjectItem(r, "profile"), "datasets"),
	    0);
	ck_assert_str_eq(jobfacts_str(ds, "path", ""), "/pfs/imagenet");
	ck_assert_str_eq(jobfacts_str(ds, "tier", ""), "nvme");
	ck_assert_str_eq(jobfacts_str(ds, "name", ""), "imagenet");
	cJSON_Delete(res);
	cJSON_Delete(runs);
}
END_TEST

START_TEST(test_cache_needs_min_jobs)
{
	cJSON *runs = runs_of(2, cache_job), *res = recommend_run(runs, &ctx);

	ck_assert_ptr_null(find_rule(res, "cache", NULL));
	ck_assert_ptr_nonnull(
	    strstr(jobfacts_str(find_skip(res, "cache"), "reason", ""),
		   "RecommendMinJobs=3"));
	cJSON_Delete(res);
	cJSON_Delete(runs);
}
END_TEST

static cJSON *unknown_cap_job(unsigned i)
{
	return record(i, dataset("/pfs/x", 1e6, "nocap", "hit"), "[]", "[]");
}

START_TEST(test_cache_unknown_capacity)
{
	cJSON *runs = runs_of(4, unknown_cap_job),
	      *res = recommend_run(runs, &ctx);

	assert_never_staged(res, "/pfs/x");
	ck_assert_ptr_nonnull(find_skip(res, "cache"));
	cJSON_Delete(res);
	cJSON_Delete(runs);
}
END_TEST

/* --- stage vs stream, and never larger than the tier -------------------------------- */

static cJSON *random_small_job(unsigned i)
{
	char phases[1400];

	snprintf(phases, sizeof(phases),
		 "[{\"name\":\"run\",\"seconds\":100,\"counters\":"
		 "{\"dataset\":%s}}]",
		 reads(12000, 12000, 1200, 1.3e9));
	return record(i, dataset("/pfs/imagenet", 1.13e9, "nvme", "hit"), "[]",
		      phases);
}

START_TEST(test_stage_small_random)
{
	cJSON *runs = runs_of(4, random_small_job),
	      *res = recommend_run(runs, &ctx);
	cJSON *r = find_rule(res, "stage", "/pfs/imagenet"), *ds, *fig;

	ck_assert_ptr_nonnull(r);
	ds = cJSON_GetArrayItem(
	    cJSON_GetObjectItem(cJSON_GetObjectItem(r, "profile"), "datasets"),
	    0);
	ck_assert_str_eq(jobfacts_str(ds, "access", ""), "random");
	fig = cJSON_GetObjectItem(cJSON_GetObjectItem(r, "evidence"),
				  "figures");
	ck_assert(jobfacts_num(fig, "random_read_fraction", 0) > 0.8);
	ck_assert(jobfacts_num(fig, "small_read_fraction", 0) > 0.99);
	cJSON_Delete(res);
	cJSON_Delete(runs);
}
END_TEST

static cJSON *few_ops_job(unsigned i)
{
	char phases[1400];

	/* random but only 500 ops: under Drishti's 1000-op floor */
	snprintf(phases, sizeof(phases),
		 "[{\"name\":\"run\",\"seconds\":100,\"counters\":"
		 "{\"dataset\":%s}}]",
		 reads(500, 500, 0, 5e7));
	return record(i, dataset("/pfs/few", 1e9, "nvme", "hit"), "[]", phases);
}

START_TEST(test_stage_needs_1000_ops)
{
	cJSON *runs = runs_of(4, few_ops_job), *res = recommend_run(runs, &ctx);

	ck_assert_ptr_null(find_rule(res, "stage", NULL));
	cJSON_Delete(res);
	cJSON_Delete(runs);
}
END_TEST

START_TEST(test_stage_without_counters)
{
	cJSON *runs = runs_of(4, cache_job), *res = recommend_run(runs, &ctx);
	cJSON *s = find_skip(res, "stage");

	ck_assert_ptr_null(find_rule(res, "stage", NULL));
	ck_assert_ptr_nonnull(s);
	ck_assert_ptr_nonnull(
	    strstr(jobfacts_str(s, "reason", ""), "not enough evidence"));
	cJSON_Delete(res);
	cJSON_Delete(runs);
}
END_TEST

static cJSON *too_big_random_job(unsigned i)
{
	char phases[1400];

	snprintf(phases, sizeof(phases),
		 "[{\"name\":\"run\",\"seconds\":100,\"counters\":"
		 "{\"dataset\":%s}}]",
		 reads(50000, 50000, 0, 5e9));
	return record(i, dataset("/pfs/huge", 2 * GIB, "ram", "failed"), "[]",
		      phases);
}

/* The same jobs on N nodes (issue 29 item 4): a dataset 8x the ram tier
 * fits 8 nodes together (spread, all of it), half fits 4 (spread, only
 * what fits), a quarter fits 2 (the PFS, as on one node). */
static unsigned spread_nodes;

static cJSON *too_big_random_job_on_nodes(unsigned i)
{
	cJSON *r = too_big_random_job(i), *nodes = cJSON_CreateArray();

	for (unsigned k = 0; k < spread_nodes; k++) {
		char name[16];

		snprintf(name, sizeof(name), "n%u", k + 1);
		cJSON_AddItemToArray(nodes, cJSON_CreateString(name));
	}
	cJSON_AddItemToObject(r, "nodes", nodes);
	return r;
}

START_TEST(test_spread_when_the_nodes_hold_it)
{
	static const struct {
		unsigned nodes;
		bool spread;
		double held;
	} cases[] = { { 8, true, 1.0 }, { 4, true, 0.5 }, { 2, false, 0 } };
	cJSON *runs, *res, *r, *ds, *prof;

	spread_nodes = cases[_i].nodes;
	runs = runs_of(10, too_big_random_job_on_nodes);
	res = recommend_run(runs, &ctx);
	r = find_rule(res, "stage", "/pfs/huge");
	if (!cases[_i].spread) {
		ck_assert_ptr_null(r);
		ck_assert_ptr_nonnull(find_rule(res, "stream", "/pfs/huge"));
		goto out;
	}
	ck_assert_ptr_nonnull(r);
	ck_assert_ptr_null(find_rule(res, "stream", "/pfs/huge"));
	ck_assert_ptr_nonnull(
	    strstr(jobfacts_str(r, "action", ""), "spread over the job's"));
	ck_assert_double_eq_tol(
	    jobfacts_num(cJSON_GetObjectItem(cJSON_GetObjectItem(r, "evidence"),
					     "figures"),
			 "fraction_held", -1),
	    cases[_i].held, 0.001);
	/* what --io-profile=auto applies: the dataset, spread, on ram */
	prof = recommend_profile(cJSON_GetObjectItem(res, "recommendations"),
				 0);
	ds = cJSON_GetArrayItem(cJSON_GetObjectItem(prof, "datasets"), 0);
	ck_assert_ptr_nonnull(ds);
	ck_assert_str_eq(jobfacts_str(ds, "spread", ""), "yes");
	ck_assert_str_eq(jobfacts_str(ds, "tier", ""), "ram");
	cJSON_Delete(prof);
out:
	cJSON_Delete(res);
	cJSON_Delete(runs);
}
END_TEST

START_TEST(test_never_stage_larger_than_tier)
{
	cJSON *runs = runs_of(10, too_big_random_job),
	      *res = recommend_run(runs, &ctx), *prof;

	/* repeated (cache) and small/random (stage): both would fire,
	 * neither may stage it */
	assert_never_staged(res, "/pfs/huge");
	ck_assert_ptr_nonnull(find_rule(res, "stream", "/pfs/huge"));
	ck_assert_ptr_nonnull(
	    strstr(jobfacts_str(find_skip(res, "cache"), "reason", ""),
		   "larger than tier 'ram'"));
	prof = recommend_profile(cJSON_GetObjectItem(res, "recommendations"),
				 0);
	ck_assert_int_eq(cJSON_GetArraySize(
			     cJSON_GetObjectItem(prof, "datasets")),
			 0);
	cJSON_Delete(prof);
	cJSON_Delete(res);
	cJSON_Delete(runs);
}
END_TEST

/* --- observed jobs: --io-profile=auto before there is advice ----------------- */

/* A job that ran straight from the PFS, observed: no dataset staged; the
 * shim noted the tree it read and its size (docs/HISTORY.md). Its
 * whole-file reads of ~110 KB files are small. */
static double observed_bytes = 2.25e8;

static cJSON *observed_job(unsigned i)
{
	char phases[1400];
	cJSON *r;

	snprintf(phases, sizeof(phases),
		 "[{\"name\":\"run\",\"seconds\":60,\"counters\":"
		 "{\"dataset\":%s}}]",
		 reads(6000, 6000, 6000, 3 * observed_bytes));
	r = record(i, "[]", "[]", phases);
	cJSON_AddStringToObject(r, "profile_origin", "auto");
	cJSON_AddItemToObject(
	    r, "observed",
	    cJSON_Parse("{\"source\":\"/pfs/u/imagenet\",\"files\":2000,"
			"\"missed\":0}"));
	cJSON_AddNumberToObject(cJSON_GetObjectItem(r, "observed"), "bytes",
				observed_bytes);
	return r;
}

/* Three observed runs are enough: cache and stage advice with a profile
 * that stages the tree they read, to the default tier, confident enough
 * for auto (>= 0.5); two are not. */
START_TEST(test_observed_runs_earn_advice)
{
	cJSON *runs = runs_of(3, observed_job),
	      *res = recommend_run(runs, &ctx);
	cJSON *c = find_rule(res, "cache", "/pfs/u/imagenet");
	cJSON *st = find_rule(res, "stage", "/pfs/u/imagenet"), *prof, *ds;

	ck_assert_ptr_nonnull(c);
	ck_assert_ptr_nonnull(st);
	ck_assert(jobfacts_num(c, "confidence", 0) >= 0.5);
	ck_assert_double_eq(jobfacts_num(figures_of(c), "bytes", 0),
			    observed_bytes);
	prof = recommend_profile(cJSON_GetObjectItem(res, "recommendations"),
				 0.5);
	ds = cJSON_GetArrayItem(cJSON_GetObjectItem(prof, "datasets"), 0);
	ck_assert_int_eq(cJSON_GetArraySize(
			     cJSON_GetObjectItem(prof, "datasets")),
			 1);
	ck_assert_str_eq(jobfacts_str(ds, "path", ""), "/pfs/u/imagenet");
	ck_assert_str_eq(jobfacts_str(ds, "tier", ""), "nvme");
	cJSON_Delete(prof);
	cJSON_Delete(res);
	cJSON_Delete(runs);

	runs = runs_of(2, observed_job);
	res = recommend_run(runs, &ctx);
	prof = recommend_profile(cJSON_GetObjectItem(res, "recommendations"),
				 0.5);
	ck_assert_int_eq(cJSON_GetArraySize(
			     cJSON_GetObjectItem(prof, "datasets")),
			 0);
	cJSON_Delete(prof);
	cJSON_Delete(res);
	cJSON_Delete(runs);
}
END_TEST

/* The rule no other overrides, for observed trees: one larger than the
 * default tier is never advised for staging there, however often and
 * however small its reads; the advice is to read it from the PFS. */
START_TEST(test_observed_larger_than_tier_never_staged)
{
	static const struct recommend_ctx ram_ctx = {
		.tiers = tiers, .ntiers = 3, .default_tier = 1, .min_jobs = 3
	};
	cJSON *runs, *res, *prof;

	observed_bytes = 300.0 * 1024 * 1024; /* > ram's 256 MiB */
	runs = runs_of(10, observed_job);
	res = recommend_run(runs, &ram_ctx);
	assert_never_staged(res, "/pfs/u/imagenet");
	ck_assert_ptr_nonnull(find_rule(res, "stream", "/pfs/u/imagenet"));
	ck_assert_ptr_nonnull(
	    strstr(jobfacts_str(find_skip(res, "cache"), "reason", ""),
		   "larger than tier 'ram'"));
	prof = recommend_profile(cJSON_GetObjectItem(res, "recommendations"),
				 0);
	ck_assert_int_eq(cJSON_GetArraySize(
			     cJSON_GetObjectItem(prof, "datasets")),
			 0);
	cJSON_Delete(prof);
	cJSON_Delete(res);
	cJSON_Delete(runs);
	observed_bytes = 2.25e8;
}
END_TEST

/* The facts of an observed record: its tree as a dataset read in place;
 * a source that is not an absolute path is not one. */
START_TEST(test_facts_observed)
{
	cJSON *rec = observed_job(7), *f, *ds;
	char err[256];

	f = stored_facts(rec);
	ck_assert_msg(f != NULL, "%s", err);
	ds = cJSON_GetArrayItem(cJSON_GetObjectItem(f, "ds"), 0);
	ck_assert_str_eq(jobfacts_str(ds, "src", ""), "/pfs/u/imagenet");
	ck_assert_str_eq(jobfacts_str(ds, "result", ""), "pfs");
	ck_assert_double_eq(jobfacts_num(ds, "bytes", 0), 2.25e8);
	ck_assert_double_eq(jobfacts_num(ds, "files", 0), 2000);
	ck_assert_double_eq(jobfacts_num(ds, "stage_s", -1), -1);
	cJSON_Delete(f);
	cJSON_ReplaceItemInObject(cJSON_GetObjectItem(rec, "observed"),
				  "source", cJSON_CreateString("pfs/u"));
	f = stored_facts(rec);
	ck_assert_msg(f != NULL, "%s", err);
	ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItem(f, "ds")), 0);
	cJSON_Delete(f);
	cJSON_Delete(rec);
}
END_TEST

static cJSON *one_pass_job(unsigned i)
{
	char phases[1400];

	snprintf(phases, sizeof(phases),
		 "[{\"name\":\"run\",\"seconds\":100,\"counters\":"
		 "{\"dataset\":%s}}]",
		 reads(1024, 0, 1024, 2 * GIB));
	return record(i, dataset("/pfs/eval", 2 * GIB, "ram", "fallback"), "[]",
		      phases);
}

START_TEST(test_stream_one_pass_too_big)
{
	cJSON *runs = runs_of(4, one_pass_job),
	      *res = recommend_run(runs, &ctx);
	cJSON *r = find_rule(res, "stream", "/pfs/eval");

	ck_assert_ptr_nonnull(r);
	ck_assert_ptr_null(cJSON_GetObjectItem(r, "profile"));
	ck_assert_ptr_nonnull(
	    strstr(jobfacts_str(r, "action", ""), "do not stage"));
	assert_never_staged(res, "/pfs/eval");
	cJSON_Delete(res);
	cJSON_Delete(runs);
}
END_TEST

static cJSON *one_pass_fits_job(unsigned i)
{
	char phases[1400];

	snprintf(phases, sizeof(phases),
		 "[{\"name\":\"run\",\"seconds\":100,\"counters\":"
		 "{\"dataset\":%s}}]",
		 reads(1024, 0, 1024, GIB));
	return record(i, dataset("/pfs/eval", GIB, "nvme", "hit"), "[]",
		      phases);
}

START_TEST(test_one_pass_that_fits)
{
	cJSON *runs = runs_of(2, one_pass_fits_job),
	      *res = recommend_run(runs, &ctx);

	ck_assert_ptr_null(find_rule(res, "stream", NULL));
	ck_assert_ptr_null(find_rule(res, "stage", NULL));
	cJSON_Delete(res);
	cJSON_Delete(runs);
}
END_TEST

/* --- checkpoints --------------------------------------------------------------- */

static double ckpt_unov = 30;

static cJSON *ckpt_job(unsigned i)
{
	char phases[1024];

	snprintf(phases, sizeof(phases),
		 "[{\"name\":\"run\",\"seconds\":200},"
		 "{\"name\":\"checkpoint\",\"parent\":\"run\","
		 "\"io_seconds\":%g,\"unoverlapped_io_seconds\":%g}]",
		 ckpt_unov + 2, ckpt_unov);
	return record(i, "[]",
		      "[{\"name\":\"ckpt\",\"dest\":\"/pfs/u/ckpt\","
		      "\"tier\":\"nvme\",\"files\":1,\"bytes\":4e9}]",
		      phases);
}

START_TEST(test_checkpoint_fires)
{
	cJSON *runs, *res, *r, *o;

	ckpt_unov = 30; /* 15 % of 200 s */
	runs = runs_of(4, ckpt_job);
	res = recommend_run(runs, &ctx);
	r = find_rule(res, "checkpoint", "/pfs/u/ckpt");
	ck_assert_ptr_nonnull(r);
	o = cJSON_GetArrayItem(
	    cJSON_GetObjectItem(cJSON_GetObjectItem(r, "profile"), "outputs"),
	    0);
	ck_assert_str_eq(jobfacts_str(o, "drain", ""), "async");
	ck_assert_str_eq(jobfacts_str(o, "tier", ""), "nvme");
	ck_assert_str_eq(jobfacts_str(o, "path", ""), "/pfs/u/ckpt");
	ck_assert(
	    jobfacts_num(cJSON_GetObjectItem(cJSON_GetObjectItem(r, "evidence"),
					     "figures"),
			 "median_unoverlapped_fraction", 0) == 0.15);
	cJSON_Delete(res);
	cJSON_Delete(runs);
}
END_TEST

START_TEST(test_checkpoint_under_10_percent)
{
	cJSON *runs, *res;

	ckpt_unov = 10; /* 5 % */
	runs = runs_of(4, ckpt_job);
	res = recommend_run(runs, &ctx);
	ck_assert_ptr_null(find_rule(res, "checkpoint", NULL));
	cJSON_Delete(res);
	cJSON_Delete(runs);
}
END_TEST

START_TEST(test_low_confidence_below_3_runs)
{
	cJSON *runs, *res, *r, *prof;

	ckpt_unov = 30;
	runs = runs_of(2, ckpt_job);
	res = recommend_run(runs, &ctx);
	r = find_rule(res, "checkpoint", NULL);
	ck_assert_ptr_nonnull(r);
	ck_assert(jobfacts_num(r, "confidence", 1) <
		  RECOMMEND_APPLY_CONFIDENCE);
	/* auto applies only confident advice */
	prof = recommend_profile(cJSON_GetObjectItem(res, "recommendations"),
				 RECOMMEND_APPLY_CONFIDENCE);
	ck_assert_int_eq(cJSON_GetArraySize(
			     cJSON_GetObjectItem(prof, "outputs")),
			 0);
	cJSON_Delete(prof);
	cJSON_Delete(res);
	cJSON_Delete(runs);
}
END_TEST

/* --- striping ------------------------------------------------------------------ */

static const char *out_json;
static const char *out_phases = "[]";

static cJSON *output_job(unsigned i)
{
	return record(i, "[]", out_json, out_phases);
}

static const char *striping_cmd(const char *outputs, const char *phases,
				size_t nruns)
{
	static char cmd[512];
	cJSON *runs, *res, *r;

	out_json = outputs;
	out_phases = phases;
	runs = runs_of(nruns, output_job);
	res = recommend_run(runs, &ctx);
	r = find_rule(res, "striping", NULL);
	cmd[0] = '\0';
	if (r)
		snprintf(cmd, sizeof(cmd), "%s",
			 cJSON_GetArrayItem(cJSON_GetObjectItem(r, "commands"),
					    0)
			     ->valuestring);
	cJSON_Delete(res);
	cJSON_Delete(runs);
	return cmd;
}

#define HIST(a, b, c, d, e, f, g, h, i, j)                                     \
	"{\"0_100\":" #a ",\"100_1K\":" #b ",\"1K_10K\":" #c                   \
	",\"10K_100K\":" #d ",\"100K_1M\":" #e ",\"1M_4M\":" #f                \
	",\"4M_10M\":" #g ",\"10M_100M\":" #h ",\"100M_1G\":" #i               \
	",\"1G_PLUS\":" #j "}"

START_TEST(test_striping_shared_by_size)
{
	static const char *writes =
	    "[{\"name\":\"run\",\"seconds\":10,\"counters\":{\"output\":"
	    "{\"POSIX_WRITES\":100,\"POSIX_SIZE_WRITE_1M_4M\":100}}}]";

	ck_assert_str_eq(
	    striping_cmd("[{\"name\":\"o\",\"dest\":\"/pfs/o\",\"files\":1,"
			 "\"bytes\":4030000000,\"shared_files\":1,"
			 "\"fpp_files\":0,\"size_hist\":" HIST(0, 0, 0, 0, 0, 0,
							       0, 0, 0, 1) "}]",
			 writes, 3),
	    "lfs setstripe -c 8 -S 4M /pfs/o");
	ck_assert_str_eq(
	    striping_cmd("[{\"name\":\"o\",\"dest\":\"/pfs/o\",\"files\":1,"
			 "\"bytes\":30000000000,\"shared_files\":1,"
			 "\"size_hist\":" HIST(0, 0, 0, 0, 0, 0, 0, 0, 0,
					       1) "}]",
			 "[]", 3),
	    "lfs setstripe -c 24 /pfs/o");
	ck_assert_str_eq(
	    striping_cmd("[{\"name\":\"o\",\"dest\":\"/pfs/o\",\"files\":1,"
			 "\"bytes\":300000000000,\"shared_files\":1,"
			 "\"size_hist\":" HIST(0, 0, 0, 0, 0, 0, 0, 0, 0,
					       1) "}]",
			 "[]", 3),
	    "lfs setstripe -c 72 /pfs/o");
}
END_TEST

START_TEST(test_striping_dom_pfl_fpp)
{
	/* 5000 files of which 4900 <= 1 MiB: Data-on-MDT */
	ck_assert_str_eq(
	    striping_cmd("[{\"name\":\"o\",\"dest\":\"/pfs/many\","
			 "\"files\":5000,\"bytes\":2e9,\"fpp_files\":5000,"
			 "\"size_hist\":" HIST(0, 0, 900, 2000, 2000, 100, 0, 0,
					       0, 0) "}]",
			 "[]", 3),
	    "lfs setstripe -E 1M -L mdt -E -1 -S 4M -c 1 /pfs/many");
	/* sizes from under 1 MiB to over 100 MiB: PFL */
	ck_assert_str_eq(
	    striping_cmd("[{\"name\":\"o\",\"dest\":\"/pfs/mixed\","
			 "\"files\":20,\"bytes\":5e9,\"fpp_files\":20,"
			 "\"size_hist\":" HIST(0, 0, 0, 5, 5, 0, 0, 0, 5,
					       5) "}]",
			 "[]", 3),
	    "lfs setstripe -E 4M -c 1 -E 64M -c 4 -E -1 -c 32 /pfs/mixed");
	/* file per process, similar sizes: one stripe */
	ck_assert_str_eq(
	    striping_cmd("[{\"name\":\"o\",\"dest\":\"/pfs/fpp\","
			 "\"files\":64,\"bytes\":6.4e9,\"fpp_files\":64,"
			 "\"shared_files\":0,\"size_hist\":" HIST(0, 0, 0, 0, 0,
								  0, 0, 64, 0,
								  0) "}]",
			 "[]", 3),
	    "lfs setstripe -c 1 /pfs/fpp");
	/* a path that needs quoting stays one shell word */
	ck_assert_str_eq(
	    striping_cmd("[{\"name\":\"o\",\"dest\":\"/pfs/a b'c\","
			 "\"files\":1,\"bytes\":2e9,\"shared_files\":1,"
			 "\"size_hist\":" HIST(0, 0, 0, 0, 0, 0, 0, 0, 0,
					       1) "}]",
			 "[]", 3),
	    "lfs setstripe -c 8 '/pfs/a b'\\''c'");
}
END_TEST

START_TEST(test_striping_without_histogram)
{
	cJSON *runs, *res;

	/* an output nothing was drained from (a drain record of an older
	 * daemon: no per-output figures) */
	out_json = "[{\"name\":\"o\",\"dest\":\"/pfs/o\"}]";
	out_phases = "[]";
	runs = runs_of(4, output_job);
	res = recommend_run(runs, &ctx);
	ck_assert_ptr_null(find_rule(res, "striping", NULL));
	ck_assert_ptr_nonnull(
	    strstr(jobfacts_str(find_skip(res, "striping"), "reason", ""),
		   "not enough evidence"));
	cJSON_Delete(res);
	cJSON_Delete(runs);
}
END_TEST

/* --- striping from what the drain saw (no shim file counts) -------------------- */

/* processes[] of a job: the batch script (rank 0 of the batch step),
 * then TASKS tasks of step 0, each with a child of the same rank. */
static const char *procs_json(unsigned tasks)
{
	static char buf[8192];
	size_t o = 0;

	o += (size_t)snprintf(buf + o, sizeof(buf) - o,
			      "[{\"pid\":10,\"step\":4294967291,"
			      "\"rank\":0,\"identity\":\"slurm\"}");
	for (unsigned i = 0; i < tasks && o < sizeof(buf) - 200; i++)
		o += (size_t)snprintf(
		    buf + o, sizeof(buf) - o,
		    ",{\"pid\":%u,\"step\":0,\"rank\":%u},"
		    "{\"pid\":%u,\"step\":0,\"rank\":%u,\"traced\":true}",
		    100 + i, i, 1000 + i, i);
	snprintf(buf + o, sizeof(buf) - o, "]");
	return buf;
}

/* A record with processes (the case's tasks; NULL: none listed). */
static const char *drain_outputs, *drain_phases, *drain_procs;

static cJSON *drain_job(unsigned i)
{
	char buf[16384];
	cJSON *r;

	snprintf(buf, sizeof(buf),
		 "{\"schema\":1,\"job\":%u,\"user\":\"alice\",\"uid\":1001,"
		 "\"job_name\":\"train\",\"end\":%u,\"datasets\":[],"
		 "\"outputs\":%s,\"phases\":%s%s%s}",
		 i, 1700000000 + i, drain_outputs, drain_phases,
		 drain_procs ? ",\"processes\":" : "",
		 drain_procs ? drain_procs : "");
	r = cJSON_Parse(buf);
	ck_assert_msg(r != NULL, "bad test record: %s", buf);
	return r;
}

/* One drained output /pfs/o of FILES files, BYTES in all, MAXF the
 * largest (< 0: not recorded, as in records filed before), HIST. */
#define DRAINED(files, bytes, maxf, hist)                                      \
	"[{\"name\":\"o\",\"dest\":\"/pfs/o\",\"tier\":\"nvme\","              \
	"\"files\":" #files ",\"bytes\":" #bytes ",\"max_file_bytes\":" #maxf  \
	",\"size_hist\":" hist "}]"
#define OLD_DRAINED(files, bytes, hist)                                        \
	"[{\"name\":\"o\",\"dest\":\"/pfs/o\",\"tier\":\"nvme\","              \
	"\"files\":" #files ",\"bytes\":" #bytes ",\"size_hist\":" hist "}]"
#define HIST_1G_PLUS(n) HIST(0, 0, 0, 0, 0, 0, 0, 0, 0, n)

static const char *const shim_writes_1m_4m =
    "[{\"name\":\"run\",\"seconds\":10,\"counters\":{\"output\":"
    "{\"POSIX_WRITES\":100,\"POSIX_SIZE_WRITE_1M_4M\":100}}}]";

static const struct drain_case {
	const char *what;
	const char *outputs;
	const char *phases; /* NULL: "[]" (no shim counters) */
	int tasks;          /* -1: no processes listed */
	size_t runs;
	unsigned ost_count;
	const char *cmd; /* NULL: no striping recommendation */
	const char *layout;
	const char *skip; /* a piece of the skip reason, or NULL */
	double conf;      /* expected confidence (when cmd) */
	const char *note; /* a piece of one of figures.notes, or NULL */
} drain_cases[] = {
	{ "one 1.6 GB file, the batch script only",
	  DRAINED(1, 1.6e9, 1.6e9, HIST_1G_PLUS(1)), NULL, 0, 3, 0,
	  "lfs setstripe -c 8 -S 1M /pfs/o", "single-file", NULL, 0.6,
	  "1 MiB default" },
	{ "one large shared file, 4 tasks",
	  DRAINED(1, 1.6e9, 1.6e9, HIST_1G_PLUS(1)), NULL, 4, 5, 0,
	  "lfs setstripe -c 8 -S 1M /pfs/o", "shared-file", NULL, 0.7,
	  "RecommendOSTCount" },
	{ "one 30 GB file: 24 stripes capped at 4 OSTs",
	  DRAINED(1, 3e10, 3e10, HIST_1G_PLUS(1)), NULL, 4, 3, 4,
	  "lfs setstripe -c 4 -S 1M /pfs/o", "shared-file", NULL, 0.6, NULL },
	{ "one 300 GB file", DRAINED(1, 3e11, 3e11, HIST_1G_PLUS(1)), NULL, 16,
	  3, 0, "lfs setstripe -c 72 -S 1M /pfs/o", "shared-file", NULL, 0.6,
	  NULL },
	{ "many files, one per task",
	  DRAINED(8, 4e9, 5.1e8, HIST(0, 0, 0, 0, 0, 0, 0, 0, 8, 0)), NULL, 8,
	  3, 0, "lfs setstripe -c 1 -S 1M /pfs/o", "file-per-process", NULL,
	  0.6, "no shim file counts" },
	{ "many small files, no task count",
	  DRAINED(200, 2e9, 1.1e7, HIST(0, 0, 0, 0, 0, 0, 0, 200, 0, 0)), NULL,
	  -1, 3, 0, "lfs setstripe -c 1 -S 1M /pfs/o", "small-files", NULL, 0.6,
	  NULL },
	{ "mixed sizes: PFL from the drain's histogram",
	  DRAINED(20, 5e9, 2e9, HIST(0, 0, 0, 5, 5, 0, 0, 0, 5, 5)), NULL, 20,
	  3, 0, "lfs setstripe -E 4M -c 1 -E 64M -c 4 -E -1 -c 32 /pfs/o",
	  "PFL", NULL, 0.6, NULL },
	{ "several large files, no task count: undecided",
	  DRAINED(4, 1.2e10, 3e9, HIST_1G_PLUS(4)), NULL, -1, 3, 0, NULL, NULL,
	  "cannot be told from file-per-process", 0, NULL },
	{ "several large files, one task",
	  DRAINED(4, 1.2e10, 3e9, HIST_1G_PLUS(4)), NULL, 0, 3, 0,
	  "lfs setstripe -c 8 -S 1M /pfs/o", "single-writer", NULL, 0.6, NULL },
	{ "fewer files than tasks: shared files",
	  DRAINED(2, 1e10, 5e9, HIST_1G_PLUS(2)), NULL, 8, 3, 0,
	  "lfs setstripe -c 8 -S 1M /pfs/o", "shared-file", NULL, 0.6, NULL },
	{ "file per process over 1 TB", DRAINED(2, 4e12, 2e12, HIST_1G_PLUS(2)),
	  NULL, 2, 3, 0, "lfs setstripe -c 72 -S 1M /pfs/o", "file-per-process",
	  NULL, 0.6, NULL },
	{ "no outputs", "[]", NULL, 1, 3, 0, NULL, NULL, NULL, 0, NULL },
	{ "nothing drained",
	  "[{\"name\":\"o\",\"dest\":\"/pfs/o\",\"files\":0,\"bytes\":0}]",
	  NULL, 1, 3, 0, NULL, NULL, "not enough evidence", 0, NULL },
	{ "shim counters: shared file, request sizes",
	  "[{\"name\":\"o\",\"dest\":\"/pfs/o\",\"files\":1,"
	  "\"bytes\":4030000000,\"max_file_bytes\":4030000000,"
	  "\"shared_files\":1,\"fpp_files\":0,\"size_hist\":" HIST_1G_PLUS(
	      1) "}]",
	  shim_writes_1m_4m, 4, 3, 0, "lfs setstripe -c 8 -S 4M /pfs/o",
	  "shared-file", NULL, 0.6, NULL },
	{ "shim counters: shared file, capped at the OSTs",
	  "[{\"name\":\"o\",\"dest\":\"/pfs/o\",\"files\":1,"
	  "\"bytes\":3e10,\"shared_files\":1,\"size_hist\":" HIST_1G_PLUS(
	      1) "}]",
	  NULL, 4, 3, 16, "lfs setstripe -c 16 /pfs/o", "shared-file", NULL,
	  0.6, NULL },
	{ "shim write sizes but no file counts",
	  DRAINED(1, 1.6e9, 1.6e9, HIST_1G_PLUS(1)), shim_writes_1m_4m, 4, 3, 0,
	  "lfs setstripe -c 8 -S 4M /pfs/o", "shared-file", NULL, 0.6, NULL },
	{ "old record: no largest file, no histogram",
	  "[{\"name\":\"o\",\"dest\":\"/pfs/o\",\"files\":1,"
	  "\"bytes\":4e9}]",
	  NULL, -1, 4, 0, "lfs setstripe -c 8 -S 1M /pfs/o", "single-file",
	  NULL, 0.65, NULL },
	{ "old record: histogram, no largest file",
	  OLD_DRAINED(3, 9e9, HIST_1G_PLUS(3)), NULL, 0, 3, 0,
	  "lfs setstripe -c 8 -S 1M /pfs/o", "single-writer", NULL, 0.6,
	  "estimated as the mean" },
	{ "two runs only: low confidence",
	  DRAINED(1, 1.6e9, 1.6e9, HIST_1G_PLUS(1)), NULL, 0, 2, 0,
	  "lfs setstripe -c 8 -S 1M /pfs/o", "single-file", NULL, 0.3, NULL },
};

/* A piece of one of R's figures.notes. */
static bool has_note(const cJSON *r, const char *piece)
{
	const cJSON *n;

	cJSON_ArrayForEach(n, cJSON_GetObjectItem(figures_of(r), "notes"))
		if (cJSON_IsString(n) && strstr(n->valuestring, piece))
			return true;
	return false;
}

START_TEST(test_striping_from_the_drain)
{
	const struct drain_case *c = &drain_cases[_i];
	struct recommend_ctx cx = ctx;
	cJSON *runs, *res, *r, *jobs;

	cx.ost_count = c->ost_count;
	drain_outputs = c->outputs;
	drain_phases = c->phases ? c->phases : "[]";
	drain_procs = c->tasks < 0 ? NULL : procs_json((unsigned)c->tasks);
	runs = runs_of(c->runs, drain_job);
	res = recommend_run(runs, &cx);
	r = find_rule(res, "striping", NULL);
	if (!c->cmd) {
		ck_assert_msg(r == NULL, "%s: unexpected %s", c->what,
			      cJSON_PrintUnformatted(r));
	} else {
		ck_assert_msg(r != NULL, "%s: no striping advice (%s)", c->what,
			      cJSON_PrintUnformatted(res));
		ck_assert_str_eq(
		    cJSON_GetArrayItem(cJSON_GetObjectItem(r, "commands"), 0)
			->valuestring,
		    c->cmd);
		ck_assert_str_eq(jobfacts_str(figures_of(r), "layout", ""),
				 c->layout);
		ck_assert_msg(jobfacts_num(r, "confidence", -1) == c->conf,
			      "%s: confidence %g, expected %g", c->what,
			      jobfacts_num(r, "confidence", -1), c->conf);
		/* the evidence names every run */
		jobs = cJSON_GetObjectItem(cJSON_GetObjectItem(r, "evidence"),
					   "jobs");
		ck_assert_int_eq(cJSON_GetArraySize(jobs), (int)c->runs);
		for (size_t j = 1; j <= c->runs; j++) {
			bool found = false;
			const cJSON *x;

			cJSON_ArrayForEach(x, jobs)
				found |= x->valuedouble == (double)j;
			ck_assert_msg(found, "%s: job %zu not in the evidence",
				      c->what, j);
		}
		if (c->note)
			ck_assert_msg(has_note(r, c->note),
				      "%s: no note '%s' in %s", c->what,
				      c->note, cJSON_PrintUnformatted(r));
	}
	if (c->skip)
		ck_assert_msg(strstr(jobfacts_str(find_skip(res, "striping"),
						  "reason", ""),
				     c->skip) != NULL,
			      "%s: skip reason '%s'", c->what,
			      jobfacts_str(find_skip(res, "striping"), "reason",
					   ""));
	else if (!c->cmd)
		ck_assert_ptr_null(find_skip(res, "striping"));
	cJSON_Delete(res);
	cJSON_Delete(runs);
}
END_TEST

/* One run's outlier does not set the count; it only lowers confidence. */
static cJSON *outlier_job(unsigned i)
{
	drain_outputs = i == 3 ? DRAINED(1, 3e10, 3e10, HIST_1G_PLUS(1))
			       : DRAINED(1, 1.6e9, 1.6e9, HIST_1G_PLUS(1));
	drain_phases = "[]";
	drain_procs = procs_json(0);
	return drain_job(i);
}

START_TEST(test_striping_drain_typical_run)
{
	cJSON *runs = runs_of(3, outlier_job), *res = recommend_run(runs, &ctx);
	cJSON *r = find_rule(res, "striping", "/pfs/o");

	ck_assert_ptr_nonnull(r);
	ck_assert_str_eq(cJSON_GetArrayItem(cJSON_GetObjectItem(r, "commands"),
					    0)
			     ->valuestring,
			 "lfs setstripe -c 8 -S 1M /pfs/o");
	ck_assert(jobfacts_num(r, "confidence", -1) == 0.4); /* 2 of 3 */
	ck_assert(jobfacts_num(figures_of(r), "largest_file_bytes", 0) ==
		  1.6e9);
	cJSON_Delete(res);
	cJSON_Delete(runs);
}
END_TEST

/* The facts keep the drain's largest file and the task count, and leave
 * them out when the record did not have them. */
START_TEST(test_facts_largest_file_and_tasks)
{
	cJSON *rec, *f, *o;

	drain_outputs = DRAINED(8, 4e9, 5.1e8, HIST_1G_PLUS(0));
	drain_phases = "[]";
	drain_procs = procs_json(8);
	rec = drain_job(7);
	f = stored_facts(rec);
	ck_assert_ptr_nonnull(f);
	o = cJSON_GetArrayItem(cJSON_GetObjectItem(f, "out"), 0);
	ck_assert(jobfacts_num(o, "maxf", -1) == 5.1e8);
	ck_assert(jobfacts_num(f, "tasks", -1) == 8); /* children not counted */
	cJSON_Delete(f);
	cJSON_Delete(rec);

	drain_outputs = OLD_DRAINED(8, 4e9, HIST_1G_PLUS(0));
	drain_procs = "[{\"pid\":5,\"step\":0,\"identity\":\"slurm\"}]";
	rec = drain_job(8);
	f = stored_facts(rec);
	ck_assert_ptr_nonnull(f);
	o = cJSON_GetArrayItem(cJSON_GetObjectItem(f, "out"), 0);
	ck_assert_ptr_null(cJSON_GetObjectItem(o, "maxf"));
	ck_assert_ptr_null(cJSON_GetObjectItem(f, "tasks")); /* no ranks */
	cJSON_Delete(f);
	cJSON_Delete(rec);
}
END_TEST

START_TEST(test_thresholds_tables)
{
	double sizes[10] = { 0 };

	ck_assert_uint_eq(recommend_stripe_count(0), 1);
	ck_assert_uint_eq(recommend_stripe_count(GIB - 1), 1);
	ck_assert_uint_eq(recommend_stripe_count(GIB), 8);
	ck_assert_uint_eq(recommend_stripe_count(10 * GIB), 24);
	ck_assert_uint_eq(recommend_stripe_count(100 * GIB), 72);
	ck_assert_uint_eq(recommend_stripe_count(1e16), 72);
	ck_assert_uint_eq(recommend_stripe_size_mib(sizes), 1);
	sizes[2] = 10; /* 1K-10K dominant: clamp to 1 MiB */
	ck_assert_uint_eq(recommend_stripe_size_mib(sizes), 1);
	sizes[9] = 100; /* >= 1 GiB requests: clamp to 4 MiB */
	ck_assert_uint_eq(recommend_stripe_size_mib(sizes), 4);
	ck_assert(recommend_confidence(0, 0) == 0);
	ck_assert(recommend_confidence(1, 1) < 0.5);
	ck_assert(recommend_confidence(2, 2) < 0.5);
	ck_assert(recommend_confidence(3, 3) >= 0.5);
	ck_assert(recommend_confidence(100, 100) <= 0.95);
	ck_assert(recommend_confidence(10, 5) < recommend_confidence(10, 10));
	ck_assert(recommend_confidence(3, 9) == recommend_confidence(3, 3));
}
END_TEST

/* --- facts and profile merge --------------------------------------------------- */

START_TEST(test_facts_reject_bad_records)
{
	static const char *bad[] = {
		"[]",
		"{}",
		"{\"job\":0,\"user\":\"a\",\"uid\":1,\"end\":5}",
		"{\"job\":4294967296,\"user\":\"a\",\"uid\":1,\"end\":5}",
		"{\"job\":1.5,\"user\":\"a\",\"uid\":1,\"end\":5}",
		"{\"job\":1,\"uid\":1,\"end\":5}",
		"{\"job\":1,\"user\":\"\",\"uid\":1,\"end\":5}",
		"{\"job\":1,\"user\":\"a\",\"end\":5}",
		"{\"job\":1,\"user\":\"a\",\"uid\":-1,\"end\":5}",
		"{\"job\":1,\"user\":\"a\",\"uid\":1}",
		"{\"job\":1,\"user\":\"a\",\"uid\":1,\"end\":\"x\"}",
	};
	char err[256], longname[400];

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		cJSON *r = cJSON_Parse(bad[i]);

		err[0] = '\0';
		ck_assert_msg(jobfacts_from_record(r, err, sizeof(err)) == NULL,
			      "accepted %s", bad[i]);
		ck_assert_msg(err[0] != '\0', "no message for %s", bad[i]);
		{
			/* filing's packed path refuses it with the same line */
			struct jsonbuf b = { 0 };
			char err2[256];

			ck_assert_int_eq(jobfacts_pack_record(&b, r, err2,
							      sizeof(err2)),
					 -1);
			ck_assert_str_eq(err2, err);
			jsonbuf_fini(&b);
		}
		cJSON_Delete(r);
	}
	ck_assert_ptr_null(jobfacts_from_record(NULL, err, sizeof(err)));
	memset(longname, 'x', sizeof(longname) - 1);
	longname[sizeof(longname) - 1] = '\0';
	{
		char buf[600];
		cJSON *r;

		snprintf(buf, sizeof(buf),
			 "{\"job\":1,\"user\":\"a\",\"uid\":1,\"end\":5,"
			 "\"job_name\":\"%s\"}",
			 longname);
		r = cJSON_Parse(buf);
		ck_assert_ptr_null(jobfacts_from_record(r, err, sizeof(err)));
		ck_assert_ptr_nonnull(strstr(err, "job_name"));
		cJSON_Delete(r);
	}
}
END_TEST

START_TEST(test_facts_not_measured_is_absent)
{
	cJSON *rec = cache_job(1), *f;

	f = stored_facts(rec);
	ck_assert_ptr_nonnull(f);
	ck_assert_ptr_null(cJSON_GetObjectItem(f, "rd"));
	ck_assert_ptr_null(cJSON_GetObjectItem(f, "ck"));
	ck_assert_ptr_null(cJSON_GetObjectItem(f, "wr"));
	ck_assert(jobfacts_num(f, "run_s", 0) == 100);
	ck_assert(
	    jobfacts_num(cJSON_GetArrayItem(cJSON_GetObjectItem(f, "ds"), 0),
			 "stage_s", 0) == 9.5);
	cJSON_Delete(f);
	cJSON_Delete(rec);
}
END_TEST

/* The read and write facts from the run phase's counters: names matched
 * exactly (the first of two equal names counts, as cJSON's lookup), a
 * value that is no number counts as absent, negatives as 0. */
START_TEST(test_facts_from_counters)
{
	cJSON *rec = cJSON_Parse(
	    "{\"job\":1,\"user\":\"a\",\"uid\":1,\"end\":5,"
	    "\"phases\":[{\"name\":\"run\",\"counters\":{"
	    "\"dataset\":{\"POSIX_OPENS\":3,\"POSIX_READS\":100,"
	    "\"POSIX_SIZE_READ_0_100\":7,\"POSIX_SIZE_READ_100_1K\":\"x\","
	    "\"POSIX_SIZE_READ_1K_10K\":-4,\"POSIX_SIZE_READ_10K_100K\":5,"
	    "\"POSIX_SIZE_READ_10K_100K\":1000,\"POSIX_SIZE_READ_1M_4M\":9,"
	    "\"POSIX_BYTES_READ\":4096,\"POSIX_F_READ_TIME\":2.5,"
	    "\"POSIX_F_META_TIME\":-1,\"POSIX_SEQ_READS\":60},"
	    "\"output\":{\"POSIX_WRITES\":8,\"POSIX_BYTES_WRITTEN\":800,"
	    "\"POSIX_SIZE_WRITE_100_1K\":8,\"POSIX_SIZE_WRITE_1G_PLUS\":"
	    "null}}}]}");
	cJSON *f, *rd, *wr, *sizes;
	char err[256];

	ck_assert_ptr_nonnull(rec);
	f = stored_facts(rec);
	ck_assert_msg(f != NULL, "%s", err);
	rd = cJSON_GetObjectItem(f, "rd");
	ck_assert_ptr_nonnull(rd);
	ck_assert(jobfacts_num(rd, "ops", -1) == 100);
	ck_assert(jobfacts_num(rd, "bytes", -1) == 4096);
	ck_assert(jobfacts_num(rd, "small", -1) == 12); /* 7 + 0 + 0 + 5 */
	ck_assert(jobfacts_num(rd, "seq", -1) == 60);
	ck_assert(jobfacts_num(rd, "consec", -1) == 0);
	ck_assert(jobfacts_num(rd, "time", -1) == 2.5);
	ck_assert_ptr_null(cJSON_GetObjectItem(rd, "meta_time"));
	wr = cJSON_GetObjectItem(f, "wr");
	ck_assert_ptr_nonnull(wr);
	ck_assert(jobfacts_num(wr, "ops", -1) == 8);
	ck_assert(jobfacts_num(wr, "bytes", -1) == 800);
	sizes = cJSON_GetObjectItem(wr, "sizes");
	ck_assert_int_eq(cJSON_GetArraySize(sizes), JOBFACTS_NBUCKETS);
	ck_assert(cJSON_GetArrayItem(sizes, 1)->valuedouble == 8);
	ck_assert(
	    cJSON_GetArrayItem(sizes, JOBFACTS_NBUCKETS - 1)->valuedouble == 0);
	cJSON_Delete(f);
	cJSON_Delete(rec);
}
END_TEST

START_TEST(test_profile_merge_unique)
{
	cJSON *recs = cJSON_Parse(
	    "[{\"rule\":\"cache\",\"confidence\":0.9,\"profile\":{\"datasets\":"
	    "[{\"name\":\"data\",\"path\":\"/a/data\",\"tier\":\"nvme\"}]}},"
	    "{\"rule\":\"stage\",\"confidence\":0.9,\"profile\":{\"datasets\":"
	    "[{\"name\":\"data\",\"path\":\"/a/data\",\"tier\":\"nvme\","
	    "\"access\":\"random\"}]}},"
	    "{\"rule\":\"cache\",\"confidence\":0.9,\"profile\":{\"datasets\":"
	    "[{\"name\":\"data\",\"path\":\"/b/data\",\"tier\":\"nvme\"}]}},"
	    "{\"rule\":\"cache\",\"confidence\":0.2,\"profile\":{\"datasets\":"
	    "[{\"name\":\"low\",\"path\":\"/c/low\",\"tier\":\"nvme\"}]}}]");
	cJSON *p = recommend_profile(recs, 0.5),
	      *ds = cJSON_GetObjectItem(p, "datasets");

	ck_assert_int_eq(cJSON_GetArraySize(ds), 2);
	/* the stage entry (access=random) wins for /a/data */
	ck_assert_str_eq(jobfacts_str(cJSON_GetArrayItem(ds, 0), "access", ""),
			 "random");
	ck_assert_str_eq(jobfacts_str(cJSON_GetArrayItem(ds, 1), "name", ""),
			 "data-2");
	cJSON_Delete(p);
	cJSON_Delete(recs);
	p = recommend_profile(NULL, 0.5);
	ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItem(p, "datasets")),
			 0);
	cJSON_Delete(p);
}
END_TEST

START_TEST(test_empty_history)
{
	cJSON *runs = cJSON_CreateArray(), *res = recommend_run(runs, &ctx);

	ck_assert_int_eq(cJSON_GetArraySize(
			     cJSON_GetObjectItem(res, "recommendations")),
			 0);
	ck_assert(jobfacts_num(res, "runs", -1) == 0);
	cJSON_Delete(res);
	res = recommend_run(NULL, &ctx);
	ck_assert_ptr_nonnull(res);
	cJSON_Delete(res);
	cJSON_Delete(runs);
}
END_TEST

static Suite *recommend_suite(void)
{
	Suite *s = suite_create("recommend");
	TCase *tc = tcase_create("rules");

	tcase_add_test(tc, test_cache_fires);
	tcase_add_test(tc, test_observed_runs_earn_advice);
	tcase_add_test(tc, test_observed_larger_than_tier_never_staged);
	tcase_add_test(tc, test_facts_observed);
	tcase_add_test(tc, test_cache_needs_min_jobs);
	tcase_add_test(tc, test_cache_unknown_capacity);
	tcase_add_test(tc, test_stage_small_random);
	tcase_add_test(tc, test_stage_needs_1000_ops);
	tcase_add_test(tc, test_stage_without_counters);
	tcase_add_test(tc, test_never_stage_larger_than_tier);
	tcase_add_test(tc, test_stream_one_pass_too_big);
	tcase_add_loop_test(tc, test_spread_when_the_nodes_hold_it, 0, 3);
	tcase_add_test(tc, test_one_pass_that_fits);
	tcase_add_test(tc, test_checkpoint_fires);
	tcase_add_test(tc, test_checkpoint_under_10_percent);
	tcase_add_test(tc, test_low_confidence_below_3_runs);
	tcase_add_test(tc, test_striping_shared_by_size);
	tcase_add_test(tc, test_striping_dom_pfl_fpp);
	tcase_add_test(tc, test_striping_without_histogram);
	tcase_add_loop_test(tc, test_striping_from_the_drain, 0,
			    sizeof(drain_cases) / sizeof(drain_cases[0]));
	tcase_add_test(tc, test_striping_drain_typical_run);
	tcase_add_test(tc, test_facts_largest_file_and_tasks);
	tcase_add_test(tc, test_thresholds_tables);
	tcase_add_test(tc, test_facts_reject_bad_records);
	tcase_add_test(tc, test_facts_not_measured_is_absent);
	tcase_add_test(tc, test_facts_from_counters);
	tcase_add_test(tc, test_profile_merge_unique);
	tcase_add_test(tc, test_empty_history);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return check_run(recommend_suite());
}
