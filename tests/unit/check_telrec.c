/* check_telrec.c - the telemetry record's pure parts: timeline folding and
 * sums, counter vocabulary and merging, strict shim_report checks. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <check.h>

#include "common/telemetry/telrec.h"
#include "tests/unit/check_run.h"

static struct telrec_timeline *tl;

static void setup(void)
{
	tl = malloc(sizeof(*tl));
	ck_assert_ptr_nonnull(tl);
	telrec_timeline_init(tl, 1.0);
}

static void teardown(void)
{
	free(tl);
}

static struct telrec_io io(uint64_t r, uint64_t w)
{
	struct telrec_io d = { .rchar = r, .wchar = w, .syscr = 1, .syscw = 1 };
	return d;
}

START_TEST(test_timeline_appends_one_sample_per_interval)
{
	struct telrec_io d = io(10, 20);

	for (int i = 1; i <= 5; i++)
		telrec_timeline_add(tl, 100.0 + i, &d);
	ck_assert_uint_eq(tl->n, 5);
	ck_assert_uint_eq(tl->s[4].rb, 10);
	ck_assert_uint_eq(tl->s[4].wb, 20);
	ck_assert(tl->interval == 1.0);
}
END_TEST

START_TEST(test_timeline_folds_without_losing_bytes)
{
	uint64_t rb = 0, wb = 0;
	const int n = 5 * TELREC_TIMELINE_MAX + 3;

	for (int i = 1; i <= n; i++) {
		struct telrec_io d = io((uint64_t)i, 2 * (uint64_t)i);

		telrec_timeline_add(tl, 1000.0 + i, &d);
	}
	ck_assert_uint_le(tl->n, TELREC_TIMELINE_MAX);
	ck_assert(tl->interval >= 4.0);
	for (size_t i = 0; i < tl->n; i++) {
		rb += tl->s[i].rb;
		wb += tl->s[i].wb;
		if (i)
			ck_assert(tl->s[i].t > tl->s[i - 1].t);
	}
	ck_assert_uint_eq(rb, (uint64_t)n * (n + 1) / 2);
	ck_assert_uint_eq(wb, (uint64_t)n * (n + 1));
	/* After folding, samples still span about one interval each (up to
	 * the quarter of slack that absorbs sampling jitter). */
	ck_assert(tl->s[tl->n - 1].t - tl->s[0].t <=
		  1.25 * tl->interval * (double)tl->n);
	ck_assert(tl->s[tl->n - 1].t - tl->s[0].t >=
		  0.5 * tl->interval * (double)(tl->n - 1));
}
END_TEST

START_TEST(test_timeline_same_time_merges)
{
	struct telrec_io d = io(1, 1);

	telrec_timeline_add(tl, 5.0, &d);
	telrec_timeline_add(tl, 5.0, &d);
	telrec_timeline_add(tl, 4.0, &d); /* clock stepped back */
	ck_assert_uint_eq(tl->n, 1);
	ck_assert_uint_eq(tl->s[0].rb, 3);
}
END_TEST

START_TEST(test_timeline_sum_counts_overlapping_samples)
{
	struct telrec_io sum;

	for (int i = 1; i <= 10; i++) {
		struct telrec_io d = io(100, (uint64_t)i);

		telrec_timeline_add(tl, (double)i, &d);
	}
	/* Samples cover (i-1, i]: [2.5, 4.2] overlaps samples 3, 4, 5. */
	telrec_timeline_sum(tl, 2.5, 4.2, &sum);
	ck_assert_uint_eq(sum.rchar, 300);
	ck_assert_uint_eq(sum.wchar, 3 + 4 + 5);
	telrec_timeline_sum(tl, 20, 30, &sum);
	ck_assert_uint_eq(sum.rchar, 0);
	telrec_timeline_sum(tl, 0, 100, &sum);
	ck_assert_uint_eq(sum.rchar, 1000);
}
END_TEST

START_TEST(test_timeline_json_round_trip)
{
	struct telrec_timeline *back = malloc(sizeof(*back));
	cJSON *j, *bad;

	for (int i = 1; i <= 7; i++) {
		struct telrec_io d = io(1000u * (unsigned)i, 7);

		telrec_timeline_add(tl, 1763860000.25 + i, &d);
	}
	j = telrec_timeline_to_json(tl);
	ck_assert_int_eq(cJSON_GetArraySize(j), 7);
	/* Bad entries (from a damaged file) are skipped. */
	bad = cJSON_Parse("[1,2]");
	cJSON_AddItemToArray(j, bad);
	cJSON_AddItemToArray(j, cJSON_CreateString("x"));
	/* times no clock gave: to_json's milliseconds would overflow
	 * (found by fuzz_agent_state) */
	cJSON_AddItemToArray(j, cJSON_Parse("[1.76778e103,1,1,1,1]"));
	cJSON_AddItemToArray(j, cJSON_Parse("[-1.76778e103,1,1,1,1]"));
	cJSON_AddItemToArray(j, cJSON_Parse("[1e13,1,1,1,1]"));
	cJSON_AddItemToArray(j, cJSON_Parse("[-1,1,1,1,1]"));
	telrec_timeline_from_json(back, j, 2.0);
	ck_assert_uint_eq(back->n, 7);
	ck_assert(back->interval == 2.0);
	ck_assert_uint_eq(back->s[6].rb, 7000);
	ck_assert(back->s[6].t > 1763860007.2 && back->s[6].t < 1763860007.3);
	telrec_timeline_from_json(back, NULL, 1.0);
	ck_assert_uint_eq(back->n, 0);
	cJSON_Delete(j);
	free(back);
}
END_TEST

static const struct {
	const char *name;
	bool known;
} counters[] = {
	{ "POSIX_READS", true },
	{ "POSIX_BYTES_WRITTEN", true },
	{ "POSIX_SIZE_READ_1K_10K", true },
	{ "POSIX_SIZE_WRITE_1G_PLUS", true },
	{ "POSIX_F_META_TIME", true },
	{ "IOSTAGE_UNOVERLAPPED_IO_TIME", true },
	{ "POSIX_SIZE_READ_1K_10", false },
	{ "posix_reads", false },
	{ "", false },
	{ NULL, false },
	{ "POSIX_READSPOSIX_READSPOSIX_READSPOSIX_READSPOSIX_READS", false },
};

START_TEST(test_counter_vocabulary)
{
	ck_assert_int_eq(telrec_counter_known(counters[_i].name),
			 counters[_i].known);
}
END_TEST

static const struct {
	const char *name;
	bool ok;
} phase_names[] = {
	{ "checkpoint", true },
	{ "epoch-1.read_2", true },
	{ "a", true },
	{ "0123456789012345678901234567890", true },   /* 31 */
	{ "01234567890123456789012345678901", false }, /* 32 */
	{ "", false },
	{ NULL, false },
	{ "bad name", false },
	{ "../x", false },
	{ "x\n", false },
	{ "caf\xc3\xa9", false },
};

START_TEST(test_phase_names)
{
	ck_assert_int_eq(telrec_phase_name_ok(phase_names[_i].name),
			 phase_names[_i].ok);
}
END_TEST

START_TEST(test_counters_merge_sums_and_max)
{
	cJSON *dst = cJSON_Parse("{\"POSIX_READS\":2,"
				 "\"POSIX_MAX_BYTE_READ\":100}");
	cJSON *src = cJSON_Parse("{\"POSIX_READS\":3,\"POSIX_MAX_BYTE_READ\":"
				 "50,\"POSIX_WRITES\":1,\"EVIL\":9,"
				 "\"POSIX_SEEKS\":\"x\",\"POSIX_OPENS\":-1}");

	ck_assert_int_eq(telrec_counters_merge(dst, src), 0);
	ck_assert_int_eq(cJSON_GetObjectItem(dst, "POSIX_READS")->valueint, 5);
	ck_assert_int_eq(
	    cJSON_GetObjectItem(dst, "POSIX_MAX_BYTE_READ")->valueint, 100);
	ck_assert_int_eq(cJSON_GetObjectItem(dst, "POSIX_WRITES")->valueint, 1);
	ck_assert_ptr_null(cJSON_GetObjectItem(dst, "EVIL"));
	ck_assert_ptr_null(cJSON_GetObjectItem(dst, "POSIX_SEEKS"));
	ck_assert_ptr_null(cJSON_GetObjectItem(dst, "POSIX_OPENS"));
	cJSON_Delete(src);
	src = cJSON_Parse("{\"POSIX_MAX_BYTE_READ\":500}");
	telrec_counters_merge(dst, src);
	ck_assert_int_eq(
	    cJSON_GetObjectItem(dst, "POSIX_MAX_BYTE_READ")->valueint, 500);
	cJSON_Delete(src);
	cJSON_Delete(dst);
}
END_TEST

static const struct {
	const char *json;
	const char *err; /* NULL: accepted; else a part of the message */
} reports[] = {
	/* What shim/preload_report.c sends (tests/integration/test_shim.sh
	 * checks the shim's side). */
	{ "{\"op\":\"shim_report\",\"job\":1,\"pid\":5,\"ppid\":4,\"step\":0,"
	  "\"rank\":0,\"local_rank\":0,\"node\":\"n1\",\"identity\":\"slurm\","
	  "\"reason\":\"exit\",\"start\":1763860000.5,\"end\":1763860001.5,"
	  "\"counters\":{\"run\":{\"dataset\":{\"POSIX_READS\":1}},"
	  "\"checkpoint\":{\"output\":{\"POSIX_BYTES_WRITTEN\":4096,"
	  "\"POSIX_F_WRITE_TIME\":0.5}}},\"io_seconds\":{\"run\":1.5},"
	  "\"unoverlapped\":{\"run\":0.5},\"phases_folded\":2,\"files\":[{"
	  "\"path\":\"/t/jobs/1/out/o/f\",\"class\":\"output\","
	  "\"written\":4096}]}",
	  NULL },
	{ "{\"op\":\"shim_report\",\"job\":1,\"pid\":5,\"reason\":\"exec\","
	  "\"disabled\":\"cannot set up thread and fork hooks\"}",
	  NULL },
	{ "{\"job\":1,\"reason\":\"crash\"}", "key 'reason'" },
	{ "{\"job\":1,\"reason\":1}", "key 'reason'" },
	{ "{\"job\":1,\"identity\":\"root\"}", "key 'identity'" },
	{ "{\"job\":1,\"disabled\":true}", "key 'disabled'" },
	{ "{\"job\":1,\"ppid\":-1}", "key 'ppid': must be a number" },
	{ "{\"job\":1,\"phases_folded\":\"3\"}", "key 'phases_folded'" },
	{ "{\"job\":1,\"files\":[{\"path_class\":\"output\",\"path\":\"/a\"}]}",
	  "unknown key 'path_class'" },
	{ "{\"job\":1,\"files\":[{\"path\":\"/a\",\"shared\":true}]}",
	  "unknown key 'shared'" },
	{ "{\"job\":1,\"files\":[{\"class\":\"output\",\"written\":1}]}",
	  "without 'path'" },
	{ "{\"job\":1,\"files\":[{\"path\":\"rel/x\"}]}", "absolute path" },
	{ "{\"job\":1,\"files\":[{\"path\":5}]}", "absolute path" },
	{ "{\"job\":1,\"files\":[{\"path\":\"/a\",\"written\":-1}]}",
	  "'written' must be" },
	{ "{\"job\":1,\"files\":[{\"path\":\"/a\",\"written\":\"1\"}]}",
	  "'written' must be" },
	{ "{\"op\":\"shim_report\",\"job\":1}", NULL },
	/* The batch step's id (SLURM_BATCH_SCRIPT) is the largest in use;
	 * no step at all is a process in no known step. */
	{ "{\"job\":1,\"step\":4294967291}", NULL },
	{ "{\"job\":1,\"step\":4294967295}", NULL },
	{ "{\"job\":1,\"step\":4294967296}", "key 'step': must be a step id" },
	{ "{\"job\":1,\"step\":1.5}", "key 'step': must be a step id" },
	{ "{\"job\":1,\"step\":-5}", "key 'step': must be a number" },
	{ "{\"job\":1,\"step\":\"batch\"}", "key 'step': must be a number" },
	{ "{\"op\":\"shim_report\",\"job\":1,\"uid\":0}", "unknown key 'uid'" },
	{ "{\"job\":1,\"counters\":[]}", "key 'counters': must be an object" },
	{ "{\"job\":1,\"counters\":{\"run\":{\"etc\":{}}}}",
	  "unknown file class 'etc'" },
	{ "{\"job\":1,\"counters\":{\"run\":{\"dataset\":{\"X\":1}}}}",
	  "unknown counter 'X'" },
	{ "{\"job\":1,\"counters\":{\"run\":{\"dataset\":{\"POSIX_READS\":-1}}}}",
	  "must be a number >= 0" },
	{ "{\"job\":1,\"counters\":{\"run\":{\"dataset\":{\"POSIX_READS\":1e30}}}}",
	  "must be a number >= 0" },
	{ "{\"job\":1,\"counters\":{\"run\":{\"dataset\":{\"POSIX_READS\":\"1\"}}}}",
	  "must be a number >= 0" },
	{ "{\"job\":1,\"counters\":{\"bad name\":{}}}", "bad phase name" },
	{ "{\"job\":1,\"counters\":{\"run\":5}}", "must be an object" },
	{ "{\"job\":1,\"io_seconds\":{\"run\":-2}}", "seconds >= 0" },
	{ "{\"job\":1,\"unoverlapped\":[]}", "must be an object" },
	{ "{\"job\":1,\"files\":{}}", "must be an array" },
	{ "{\"job\":1,\"files\":[{\"path\":\"/a\",\"class\":\"home\"}]}",
	  "'class' must be" },
	{ "{\"job\":1,\"node\":5}", "key 'node': must be a string" },
	{ "{\"job\":1,\"node\":\"0123456789012345678901234567890123456789"
	  "012345678901234567890123\"}",
	  "at most 63 bytes" },
	{ "{\"job\":1,\"pid\":-3}", "key 'pid': must be a number" },
	{ "[1]", "must be an object" },
	{ "{\"job\":1,\"observed\":{\"root\":\"/pfs/a\",\"files\":3,"
	  "\"bytes\":30,\"missed\":0}}",
	  NULL },
	{ "{\"job\":1,\"observed\":[]}", "key 'observed': must be an object" },
	{ "{\"job\":1,\"observed\":{\"files\":3}}", "'root' is missing" },
	{ "{\"job\":1,\"observed\":{\"root\":\"pfs/a\"}}",
	  "'root' must be a normalized absolute path" },
	{ "{\"job\":1,\"observed\":{\"root\":\"/pfs/../etc\"}}",
	  "'root' must be a normalized absolute path" },
	{ "{\"job\":1,\"observed\":{\"root\":\"/pfs//a/\"}}",
	  "'root' must be a normalized absolute path" },
	{ "{\"job\":1,\"observed\":{\"root\":\"/a\",\"bytes\":-1}}",
	  "'bytes' must be a number" },
	{ "{\"job\":1,\"observed\":{\"root\":\"/a\",\"size\":1}}",
	  "unknown key 'size'" },
};

/* Processes' observed trees make one: the deepest directory holding all
 * (never above the PFS), the largest process's counts, missed summed;
 * roots outside the PFS are ignored. */
START_TEST(test_observed_merge)
{
	cJSON *dst = cJSON_CreateObject();
	static const char *const reps[] = {
		"{\"root\":\"/pfs/u/imagenet/train/c1\",\"files\":10,"
		"\"bytes\":1000,\"missed\":1}",
		"{\"root\":\"/pfs/u/imagenet/train/c2\",\"files\":40,"
		"\"bytes\":900,\"missed\":0}",
		/* a sibling whose name starts like it: not under it */
		"{\"root\":\"/pfs/u/imagenet/train2\",\"files\":5,"
		"\"bytes\":50}",
		/* outside the PFS, or a prefix of its name only: ignored */
		"{\"root\":\"/etc\",\"files\":500,\"bytes\":5000000}",
		"{\"root\":\"/pfsx/a\",\"files\":500,\"bytes\":5000000}",
	};
	const char *want[] = {
		"/pfs/u/imagenet/train/c1", "/pfs/u/imagenet/train",
		"/pfs/u/imagenet",          "/pfs/u/imagenet",
		"/pfs/u/imagenet",
	};

	for (size_t i = 0; i < sizeof(reps) / sizeof(reps[0]); i++) {
		cJSON *o = cJSON_Parse(reps[i]);

		ck_assert_int_eq(telrec_observed_merge(dst, o, "/pfs"), 0);
		ck_assert_str_eq(
		    cJSON_GetObjectItem(dst, "source")->valuestring, want[i]);
		cJSON_Delete(o);
	}
	ck_assert_int_eq(cJSON_GetObjectItem(dst, "files")->valuedouble, 40);
	ck_assert_int_eq(cJSON_GetObjectItem(dst, "bytes")->valuedouble, 1000);
	ck_assert_int_eq(cJSON_GetObjectItem(dst, "missed")->valuedouble, 1);
	cJSON_Delete(dst);

	/* Two trees with only the PFS in common: the PFS, never "/". */
	dst = cJSON_CreateObject();
	for (int i = 0; i < 2; i++) {
		cJSON *o = cJSON_Parse(i ? "{\"root\":\"/pfs/b\"}"
					 : "{\"root\":\"/pfs/a\"}");

		ck_assert_int_eq(telrec_observed_merge(dst, o, "/pfs"), 0);
		cJSON_Delete(o);
	}
	ck_assert_str_eq(cJSON_GetObjectItem(dst, "source")->valuestring,
			 "/pfs");
	cJSON_Delete(dst);

	/* No PfsPath=: nothing is noted. */
	dst = cJSON_CreateObject();
	{
		cJSON *o = cJSON_Parse("{\"root\":\"/pfs/a\"}");

		ck_assert_int_eq(telrec_observed_merge(dst, o, ""), 0);
		ck_assert_ptr_null(cJSON_GetObjectItem(dst, "source"));
		cJSON_Delete(o);
	}
	cJSON_Delete(dst);
}
END_TEST

START_TEST(test_report_check_table)
{
	cJSON *req = cJSON_Parse(reports[_i].json);
	char err[256] = "";
	int r;

	ck_assert_ptr_nonnull(req);
	r = telrec_report_check(req, err, sizeof(err));
	if (!reports[_i].err) {
		ck_assert_msg(r == 0, "refused: %s", err);
	} else {
		ck_assert_int_eq(r, -1);
		ck_assert_msg(strstr(err, reports[_i].err),
			      "got '%s', want '%s'", err, reports[_i].err);
		ck_assert_ptr_null(strchr(err, '\n'));
	}
	cJSON_Delete(req);
}
END_TEST

/* Bounded: 33 phases and 257 files are refused. */
START_TEST(test_report_check_limits)
{
	cJSON *req = cJSON_CreateObject(),
	      *c = cJSON_AddObjectToObject(req, "counters");
	cJSON *files;
	char err[256], name[16];

	for (int i = 0; i < 33; i++) {
		snprintf(name, sizeof(name), "p%d", i);
		cJSON_AddObjectToObject(c, name);
	}
	ck_assert_int_eq(telrec_report_check(req, err, sizeof(err)), -1);
	ck_assert_ptr_nonnull(strstr(err, "more than 32 phases"));
	cJSON_DeleteItemFromObject(req, "counters");
	files = cJSON_AddArrayToObject(req, "files");
	for (int i = 0; i < 257; i++) {
		cJSON *f = cJSON_CreateObject();

		cJSON_AddStringToObject(f, "path", "/t/jobs/1/out/o/f");
		cJSON_AddItemToArray(files, f);
	}
	ck_assert_int_eq(telrec_report_check(req, err, sizeof(err)), -1);
	ck_assert_ptr_nonnull(strstr(err, "more than 256 entries"));
	cJSON_DeleteItemFromArray(files, 0);
	ck_assert_int_eq(telrec_report_check(req, err, sizeof(err)), 0);
	ck_assert_int_eq(telrec_report_check(NULL, err, sizeof(err)), -1);
	cJSON_Delete(req);
}
END_TEST

/* A path of 4096 bytes is refused, one of 4095 accepted. */
START_TEST(test_report_check_path_length)
{
	cJSON *req = cJSON_CreateObject();
	cJSON *f = cJSON_CreateObject();
	char *path = malloc(TELREC_REPORT_PATH_MAX + 1), err[256];

	ck_assert_ptr_nonnull(path);
	memset(path, 'a', TELREC_REPORT_PATH_MAX);
	path[0] = '/';
	path[TELREC_REPORT_PATH_MAX] = '\0';
	cJSON_AddStringToObject(f, "path", path);
	cJSON_AddItemToArray(cJSON_AddArrayToObject(req, "files"), f);
	ck_assert_int_eq(telrec_report_check(req, err, sizeof(err)), -1);
	ck_assert_ptr_nonnull(strstr(err, "at most 4095 bytes"));
	path[TELREC_REPORT_PATH_MAX - 1] = '\0';
	cJSON_SetValuestring(cJSON_GetObjectItem(f, "path"), path);
	ck_assert_int_eq(telrec_report_check(req, err, sizeof(err)), 0);
	free(path);
	cJSON_Delete(req);
}
END_TEST

/* Two reports of one process (one per exec image) add up; every phase
 * folds into the run totals, POSIX_MAX_BYTE_* keep the maximum. */
START_TEST(test_counters_fold_adds_reports_and_phases)
{
	const char *r1 = "{\"run\":{\"other\":{\"POSIX_OPENS\":2}},"
			 "\"read\":{\"dataset\":{\"POSIX_READS\":10,"
			 "\"POSIX_BYTES_READ\":40960,"
			 "\"POSIX_SIZE_READ_1K_10K\":10,"
			 "\"POSIX_MAX_BYTE_READ\":99}}}";
	const char *r2 = "{\"read\":{\"dataset\":{\"POSIX_READS\":5,"
			 "\"POSIX_BYTES_READ\":20480,"
			 "\"POSIX_SIZE_READ_1K_10K\":5,"
			 "\"POSIX_MAX_BYTE_READ\":50}},"
			 "\"checkpoint\":{\"output\":{\"POSIX_WRITES\":1,"
			 "\"BOGUS\":7},\"etc\":{\"POSIX_WRITES\":9}}}";
	cJSON *a = cJSON_Parse(r1), *b = cJSON_Parse(r2);
	cJSON *run = cJSON_CreateObject(), *ds;

	ck_assert_int_eq(telrec_counters_fold(run, a), 0);
	ck_assert_int_eq(telrec_counters_fold(run, b), 0);
	ck_assert_int_eq(telrec_counters_fold(run, NULL), 0);
	ds = cJSON_GetObjectItem(run, "dataset");
	ck_assert_double_eq(cJSON_GetObjectItem(ds, "POSIX_READS")->valuedouble,
			    15);
	ck_assert_double_eq(
	    cJSON_GetObjectItem(ds, "POSIX_BYTES_READ")->valuedouble, 61440);
	ck_assert_double_eq(
	    cJSON_GetObjectItem(ds, "POSIX_SIZE_READ_1K_10K")->valuedouble, 15);
	ck_assert_double_eq(
	    cJSON_GetObjectItem(ds, "POSIX_MAX_BYTE_READ")->valuedouble, 99);
	ck_assert_double_eq(cJSON_GetObjectItem(cJSON_GetObjectItem(run,
								    "other"),
						"POSIX_OPENS")
				->valuedouble,
			    2);
	ck_assert_ptr_null(
	    cJSON_GetObjectItem(cJSON_GetObjectItem(run, "output"), "BOGUS"));
	ck_assert_ptr_null(cJSON_GetObjectItem(run, "etc"));
	cJSON_Delete(a);
	cJSON_Delete(b);
	cJSON_Delete(run);
}
END_TEST

START_TEST(test_seconds_total)
{
	cJSON *o = cJSON_Parse("{\"run\":1.5,\"read\":2,\"bad\":-4,"
			       "\"s\":\"1\"}");

	ck_assert_double_eq(telrec_seconds_total(o), 3.5);
	ck_assert_double_eq(telrec_seconds_total(NULL), 0);
	cJSON_Delete(o);
}
END_TEST

static const struct {
	uint64_t bytes;
	size_t bucket;
} sizes[] = {
	{ 0, 0 },          { 100, 0 },        { 101, 1 },
	{ 1024, 1 },       { 1025, 2 },       { 4096, 2 },
	{ 10240, 2 },      { 10241, 3 },      { 102400, 3 },
	{ 102401, 4 },     { 1048576, 4 },    { 1048577, 5 },
	{ 4194304, 5 },    { 4194305, 6 },    { 10485760, 6 },
	{ 10485761, 7 },   { 104857600, 7 },  { 104857601, 8 },
	{ 1073741824, 8 }, { 1073741825, 9 }, { UINT64_MAX, 9 },
};

START_TEST(test_size_bucket_edges)
{
	ck_assert_uint_eq(telrec_size_bucket(sizes[_i].bytes),
			  sizes[_i].bucket);
}
END_TEST

START_TEST(test_size_hist_json_round_trip)
{
	uint64_t h[TELREC_NBUCKETS] = { 1, 2, 3, 0, 0, 0, 0, 0, 0, 7 },
		 back[10];
	cJSON *o = telrec_size_hist_json(h);

	ck_assert_ptr_nonnull(o);
	ck_assert_int_eq(cJSON_GetArraySize(o), TELREC_NBUCKETS);
	ck_assert_double_eq(cJSON_GetObjectItem(o, "1G_PLUS")->valuedouble, 7);
	ck_assert_double_eq(cJSON_GetObjectItem(o, "100_1K")->valuedouble, 2);
	telrec_size_hist_from_json(back, o);
	ck_assert_mem_eq(h, back, sizeof(h));
	telrec_size_hist_from_json(back, NULL);
	ck_assert_uint_eq(back[0] + back[9], 0);
	ck_assert_str_eq(telrec_bucket_name(0), "0_100");
	ck_assert_ptr_null(telrec_bucket_name(TELREC_NBUCKETS));
	cJSON_Delete(o);
}
END_TEST

/* --- where a phase's bytes come from ----------------------------------------- */

static double numkey(const cJSON *o, const char *key)
{
	const cJSON *v = cJSON_GetObjectItem(o, key);

	ck_assert_msg(cJSON_IsNumber(v), "key %s missing", key);
	return v->valuedouble;
}

/* With shim counters, read_bytes/write_bytes are their file bytes over
 * every class; /proc's figures keep their own names beside them. */
START_TEST(test_phase_bytes_from_shim)
{
	struct telrec_io io = {
		.rchar = 167772160, .wchar = 167772160, .syscr = 7, .syscw = 8
	};
	cJSON *c = cJSON_Parse("{\"dataset\":{\"POSIX_BYTES_READ\":134217728,"
			       "\"POSIX_READS\":1024},"
			       "\"output\":{\"POSIX_BYTES_WRITTEN\":33554432},"
			       "\"other\":{\"POSIX_BYTES_READ\":100,"
			       "\"POSIX_BYTES_WRITTEN\":-5}}");
	cJSON *ph = cJSON_CreateObject();

	ck_assert_int_eq(telrec_phase_bytes(ph, &io, c), 0);
	ck_assert_double_eq(numkey(ph, "read_bytes"), 134217828);
	ck_assert_double_eq(numkey(ph, "write_bytes"), 33554432);
	ck_assert_str_eq(cJSON_GetObjectItem(ph, "bytes_source")->valuestring,
			 "shim");
	ck_assert_str_eq(telrec_bytes_source(ph), TELREC_BYTES_SHIM);
	ck_assert_double_eq(numkey(ph, "rchar"), 167772160);
	ck_assert_double_eq(numkey(ph, "wchar"), 167772160);
	ck_assert_double_eq(numkey(ph, "read_syscalls"), 7);
	ck_assert_double_eq(numkey(ph, "write_syscalls"), 8);
	cJSON_Delete(ph);

	/* A phase with counters but no bytes in them: file I/O 0. */
	ph = cJSON_CreateObject();
	cJSON_Delete(c);
	c = cJSON_Parse("{\"dataset\":{\"POSIX_STATS\":3}}");
	ck_assert_int_eq(telrec_phase_bytes(ph, &io, c), 0);
	ck_assert_double_eq(numkey(ph, "read_bytes"), 0);
	ck_assert_double_eq(numkey(ph, "write_bytes"), 0);
	ck_assert_str_eq(telrec_bytes_source(ph), TELREC_BYTES_SHIM);
	cJSON_Delete(ph);
	cJSON_Delete(c);
}
END_TEST

/* Without shim counters, read_bytes/write_bytes are rchar/wchar, and the
 * record says so. */
START_TEST(test_phase_bytes_from_proc)
{
	struct telrec_io io = { .rchar = 42, .wchar = 43 };
	cJSON *ph = cJSON_CreateObject();

	ck_assert_int_eq(telrec_phase_bytes(ph, &io, NULL), 0);
	ck_assert_double_eq(numkey(ph, "read_bytes"), 42);
	ck_assert_double_eq(numkey(ph, "write_bytes"), 43);
	ck_assert_double_eq(numkey(ph, "rchar"), 42);
	ck_assert_double_eq(numkey(ph, "wchar"), 43);
	ck_assert_str_eq(cJSON_GetObjectItem(ph, "bytes_source")->valuestring,
			 "proc_rchar");
	cJSON_Delete(ph);
}
END_TEST

/* Byte counts out of range in a damaged record count as none: 2.26e117
 * does not convert to an integer (fuzz agent_state found it). */
START_TEST(test_report_bytes_out_of_range_count_as_none)
{
	cJSON *r = cJSON_Parse(
	    "{\"read\":{\"dataset\":{\"POSIX_BYTES_READ\":2.26e117,"
	    "\"POSIX_BYTES_WRITTEN\":-5}},"
	    "\"run\":{\"other\":{\"POSIX_BYTES_READ\":7,"
	    "\"POSIX_BYTES_WRITTEN\":1e19}}}");
	uint64_t rb = 99, wb = 99;

	ck_assert_ptr_nonnull(r);
	telrec_report_bytes(r, &rb, &wb);
	ck_assert_uint_eq(rb, 7);
	ck_assert_uint_eq(wb, 0);
	cJSON_Delete(r);
}
END_TEST

/* A report's file bytes: every phase, every class. */
START_TEST(test_report_bytes)
{
	cJSON *r = cJSON_Parse(
	    "{\"read\":{\"dataset\":{\"POSIX_BYTES_READ\":10}},"
	    "\"run\":{\"other\":{\"POSIX_BYTES_READ\":1,"
	    "\"POSIX_BYTES_WRITTEN\":2}},"
	    "\"write\":{\"output\":{\"POSIX_BYTES_WRITTEN\":30,"
	    "\"POSIX_BYTES_READ\":\"x\"}}}");
	uint64_t rb = 99, wb = 99;

	telrec_report_bytes(r, &rb, &wb);
	ck_assert_uint_eq(rb, 11);
	ck_assert_uint_eq(wb, 32);
	telrec_report_bytes(NULL, &rb, &wb);
	ck_assert_uint_eq(rb, 0);
	ck_assert_uint_eq(wb, 0);
	cJSON_Delete(r);
}
END_TEST

/* Records filed before bytes_source: read_bytes held rchar. Both forms
 * are read back (a daemon resuming a record, the CLI, the exports). */
static const struct {
	const char *json;
	const char *source;
	uint64_t rchar, wchar;
} old_new[] = {
	{ "{\"read_bytes\":5,\"write_bytes\":6}", "proc_rchar", 5, 6 },
	{ "{\"read_bytes\":1,\"write_bytes\":2,\"bytes_source\":\"shim\","
	  "\"rchar\":5,\"wchar\":6}",
	  "shim", 5, 6 },
	{ "{\"read_bytes\":5,\"write_bytes\":6,"
	  "\"bytes_source\":\"proc_rchar\",\"rchar\":5,\"wchar\":6}",
	  "proc_rchar", 5, 6 },
	{ "{\"bytes_source\":\"evil\",\"rchar\":-1,\"wchar\":\"7\"}",
	  "proc_rchar", 0, 0 },
	{ "{\"bytes_source\":7}", "proc_rchar", 0, 0 },
	{ "{}", "proc_rchar", 0, 0 },
};

START_TEST(test_old_and_new_records_read_back)
{
	cJSON *ph = cJSON_Parse(old_new[_i].json);
	struct telrec_io io = { .rchar = 99, .wchar = 99 };

	ck_assert_ptr_nonnull(ph);
	ck_assert_str_eq(telrec_bytes_source(ph), old_new[_i].source);
	telrec_rchar_from_json(ph, &io);
	ck_assert_uint_eq(io.rchar, old_new[_i].rchar);
	ck_assert_uint_eq(io.wchar, old_new[_i].wchar);
	ck_assert_str_eq(telrec_bytes_source(NULL), "proc_rchar");
	cJSON_Delete(ph);
}
END_TEST

static Suite *telrec_suite(void)
{
	Suite *s = suite_create("telrec");
	TCase *tc = tcase_create("core");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_timeline_appends_one_sample_per_interval);
	tcase_add_test(tc, test_timeline_folds_without_losing_bytes);
	tcase_add_test(tc, test_timeline_same_time_merges);
	tcase_add_test(tc, test_timeline_sum_counts_overlapping_samples);
	tcase_add_test(tc, test_timeline_json_round_trip);
	tcase_add_loop_test(tc, test_counter_vocabulary, 0,
			    sizeof(counters) / sizeof(counters[0]));
	tcase_add_loop_test(tc, test_phase_names, 0,
			    sizeof(phase_names) / sizeof(phase_names[0]));
	tcase_add_test(tc, test_counters_merge_sums_and_max);
	tcase_add_loop_test(tc, test_report_check_table, 0,
			    sizeof(reports) / sizeof(reports[0]));
	tcase_add_test(tc, test_report_check_limits);
	tcase_add_test(tc, test_observed_merge);
	tcase_add_test(tc, test_report_check_path_length);
	tcase_add_test(tc, test_counters_fold_adds_reports_and_phases);
	tcase_add_test(tc, test_seconds_total);
	tcase_add_loop_test(tc, test_size_bucket_edges, 0,
			    sizeof(sizes) / sizeof(sizes[0]));
	tcase_add_test(tc, test_size_hist_json_round_trip);
	tcase_add_test(tc, test_phase_bytes_from_shim);
	tcase_add_test(tc, test_phase_bytes_from_proc);
	tcase_add_test(tc, test_report_bytes);
	tcase_add_test(tc, test_report_bytes_out_of_range_count_as_none);
	tcase_add_loop_test(tc, test_old_and_new_records_read_back, 0,
			    sizeof(old_new) / sizeof(old_new[0]));
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return check_run(telrec_suite());
}
