/* check_recmerge.c - one record from a multi-node job's parts: totals are
 * the sums of the parts, every node named, a missing part listed, the
 * order of arrival does not matter, a duplicate part counts once. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <check.h>

#include "common/telemetry/recmerge.h"
#include "tests/unit/check_run.h"

static const char *const nodes3[] = { "n1", "n2", "n3" };

/* A finished part of job 42 on NODE; K scales its figures. */
static cJSON *part(const char *node, double k, bool finished)
{
	char text[4096];

	snprintf(
	    text, sizeof(text),
	    "{\"schema\":1,\"job\":42,\"user\":\"alice\",\"uid\":1001,"
	    "\"job_name\":\"train\",\"node\":\"%1$s\","
	    "\"profile_origin\":\"dl-train\",\"profile\":{\"datasets\":[]},"
	    "\"state\":\"completed\",\"start\":%2$f%3$s,"
	    "\"datasets\":[{\"name\":\"data\",\"source\":\"/pfs/d\","
	    "\"tier\":\"nvme\",\"bytes\":1000,\"files\":10,"
	    "\"result\":\"%4$s\",\"copied_bytes\":%5$f,\"copied_files\":%6$f,"
	    "\"linked_files\":0}],"
	    "\"outputs\":[{\"name\":\"out\",\"dest\":\"/pfs/o\",\"tier\":\"nvme\","
	    "\"files\":%7$f,\"bytes\":%8$f,\"during_files\":1,\"during_bytes\":%8$f,"
	    "\"end_files\":0,\"end_bytes\":0,\"failed_files\":0,"
	    "\"size_hist\":{\"0_100\":0,\"100_1K\":%7$f,\"1K_10K\":0,"
	    "\"10K_100K\":0,\"100K_1M\":0,\"1M_4M\":0,\"4M_10M\":0,"
	    "\"10M_100M\":0,\"100M_1G\":0,\"1G_PLUS\":0},"
	    "\"shared_files\":0,\"fpp_files\":%7$f,\"max_file_bytes\":%18$f}],"
	    "\"phases\":["
	    "{\"name\":\"stage_in\",\"start\":%2$f,\"end\":%9$f,\"seconds\":%10$f,"
	    "\"bytes\":1000,\"files\":10,\"copied_bytes\":%5$f,"
	    "\"cached_bytes\":%11$f,\"rate_bps\":1},"
	    "{\"name\":\"run\",\"start\":%9$f,\"end\":%12$f,\"seconds\":10,"
	    "\"read_bytes\":%13$f,\"write_bytes\":%8$f,\"read_syscalls\":%7$f,"
	    "\"write_syscalls\":%7$f,\"interval_s\":1,"
	    "\"timeline\":[[%14$f,%13$f,%8$f,%7$f,%7$f]],"
	    "\"counters\":{\"dataset\":{\"POSIX_BYTES_READ\":%13$f}}},"
	    "{\"name\":\"checkpoint\",\"parent\":\"run\",\"source\":\"marker\","
	    "\"start\":%14$f,\"end\":%14$f,\"seconds\":0,\"read_bytes\":0,"
	    "\"write_bytes\":%8$f,\"read_syscalls\":0,\"write_syscalls\":1,"
	    "\"ranks\":[%15$d]},"
	    "{\"name\":\"stage_out\",\"start\":%9$f,\"end\":%12$f,\"seconds\":10,"
	    "\"bytes\":%8$f,\"files\":%7$f,\"during_bytes\":%8$f,"
	    "\"during_files\":%7$f,\"end_bytes\":0,\"end_files\":0,"
	    "\"end_seconds\":%16$f,\"failed_files\":0}],"
	    "\"processes\":[{\"pid\":%17$d,\"step\":0,\"rank\":%15$d,"
	    "\"node\":\"%1$s\",\"identity\":\"slurm\",\"start\":%9$f,"
	    "\"read_bytes\":%13$f,\"write_bytes\":%8$f,\"traced\":false}]}",
	    node, 1000.0 + k, finished ? ",\"end\":1100.5" : "",
	    k == 1 ? "built" : "hit", k == 1 ? 1000.0 : 0.0,
	    k == 1 ? 10.0 : 0.0, k, 100 * k, 1002.0 + k, 2.0,
	    k == 1 ? 0.0 : 1000.0, 1012.0 + k, 1000 * k, 1005.0 + k, (int)k - 1,
	    0.5 * k, 100 + (int)k, 60 * k);
	return cJSON_Parse(text);
}

static double num(const cJSON *o, const char *k)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);

	ck_assert_msg(cJSON_IsNumber(v), "key %s missing", k);
	return v->valuedouble;
}

static const cJSON *phase(const cJSON *rec, const char *name)
{
	const cJSON *p;

	cJSON_ArrayForEach(p, cJSON_GetObjectItem(rec, "phases"))
		if (!strcmp(cJSON_GetObjectItem(p, "name")->valuestring, name))
			return p;
	ck_abort_msg("no phase %s", name);
	return NULL;
}

static char *merged_text(const cJSON *const *parts, size_t n)
{
	cJSON *m = recmerge_job(parts, n, nodes3, 3);
	char *t;

	ck_assert_ptr_nonnull(m);
	t = cJSON_PrintUnformatted(m);
	cJSON_Delete(m);
	return t;
}

START_TEST(test_totals)
{
	cJSON *p[3] = { part("n1", 1, true), part("n2", 2, true),
			part("n3", 3, true) };
	cJSON *m = recmerge_job((const cJSON *const *)p, 3, nodes3, 3);
	const cJSON *run, *e;
	int i = 0;

	ck_assert_ptr_nonnull(m);
	ck_assert(recmerge_is_merged(m));
	ck_assert_str_eq(cJSON_GetObjectItem(m, "node")->valuestring, "n1");
	ck_assert_int_eq(num(m, "job"), 42);
	ck_assert_str_eq(cJSON_GetObjectItem(m, "user")->valuestring, "alice");
	ck_assert_str_eq(cJSON_GetObjectItem(m, "state")->valuestring,
			 "completed");
	ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItem(m, "nodes")),
			 3);
	ck_assert_int_eq(cJSON_GetArraySize(
			     cJSON_GetObjectItem(m, "missing_nodes")),
			 0);
	ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItem(m, "parts")),
			 3);
	cJSON_ArrayForEach(e, cJSON_GetObjectItem(m, "parts"))
		ck_assert_str_eq(cJSON_GetObjectItem(e, "node")->valuestring,
				 nodes3[i++]);
	/* totals: the sums of the parts */
	ck_assert_double_eq(num(phase(m, "stage_in"), "bytes"), 3000);
	ck_assert_double_eq(num(phase(m, "stage_in"), "copied_bytes"), 1000);
	ck_assert_double_eq(num(phase(m, "stage_in"), "cached_bytes"), 2000);
	ck_assert_double_eq(num(phase(m, "stage_in"), "start"), 1001);
	ck_assert_double_eq(num(phase(m, "stage_in"), "end"), 1005);
	run = phase(m, "run");
	ck_assert_double_eq(num(run, "read_bytes"), 6000);
	ck_assert_double_eq(num(run, "write_bytes"), 600);
	ck_assert_double_eq(num(run, "start"), 1003);
	ck_assert_double_eq(num(run, "end"), 1015);
	ck_assert_double_eq(
	    num(cJSON_GetObjectItem(cJSON_GetObjectItem(run, "counters"),
				    "dataset"),
		"POSIX_BYTES_READ"),
	    6000);
	/* the timeline keeps every byte */
	{
		double rb = 0;
		const cJSON *s;

		cJSON_ArrayForEach(s, cJSON_GetObjectItem(run, "timeline"))
			rb += cJSON_GetArrayItem(s, 1)->valuedouble;
		ck_assert_double_eq(rb, 6000);
	}
	ck_assert_double_eq(num(phase(m, "checkpoint"), "write_bytes"), 600);
	ck_assert_int_eq(cJSON_GetArraySize(
			     cJSON_GetObjectItem(phase(m, "checkpoint"),
						 "ranks")),
			 3);
	ck_assert_double_eq(num(phase(m, "stage_out"), "bytes"), 600);
	ck_assert_double_eq(num(phase(m, "stage_out"), "end_seconds"), 1.5);
	e = cJSON_GetArrayItem(cJSON_GetObjectItem(m, "outputs"), 0);
	ck_assert_double_eq(num(e, "files"), 6);
	ck_assert_double_eq(num(e, "fpp_files"), 6);
	/* the largest file of any node, not a sum */
	ck_assert_double_eq(num(e, "max_file_bytes"), 180);
	ck_assert_double_eq(num(cJSON_GetObjectItem(e, "size_hist"), "100_1K"),
			    6);
	e = cJSON_GetArrayItem(cJSON_GetObjectItem(m, "datasets"), 0);
	ck_assert_double_eq(num(e, "bytes"), 1000); /* the dataset's size */
	ck_assert_double_eq(num(e, "copied_bytes"), 1000);
	ck_assert_str_eq(cJSON_GetObjectItem(e, "result")->valuestring,
			 "built");
	ck_assert_int_eq(cJSON_GetArraySize(
			     cJSON_GetObjectItem(m, "processes")),
			 3);
	ck_assert_str_eq(
	    cJSON_GetObjectItem(
		cJSON_GetArrayItem(cJSON_GetObjectItem(m, "processes"), 2),
		"node")
		->valuestring,
	    "n3");
	/* per node: its own figures */
	e = cJSON_GetArrayItem(cJSON_GetObjectItem(m, "parts"), 1);
	ck_assert_double_eq(num(e, "processes"), 1);
	ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItem(e, "ranks")),
			 1);
	ck_assert_double_eq(num(phase(e, "run"), "read_bytes"), 2000);
	ck_assert_ptr_null(cJSON_GetObjectItem(phase(e, "run"), "timeline"));
	ck_assert_double_eq(num(m, "start"), 1001);
	ck_assert_double_eq(num(m, "end"), 1100.5);
	for (i = 0; i < 3; i++)
		cJSON_Delete(p[i]);
	cJSON_Delete(m);
}
END_TEST

/* Every order of arrival gives the same record. */
/* Give part P's run phase the figures of a node whose run bytes came from
 * SOURCE: its file I/O READ beside its /proc rchar RCHAR. */
static void set_run_bytes(cJSON *p, const char *source, double read,
			  double rchar)
{
	cJSON *run = (cJSON *)phase(p, "run");

	cJSON_DeleteItemFromObject(run, "read_bytes");
	cJSON_AddNumberToObject(run, "read_bytes", read);
	cJSON_AddNumberToObject(run, "rchar", rchar);
	cJSON_AddNumberToObject(run, "wchar", 7);
	cJSON_AddStringToObject(run, "bytes_source", source);
}

/* The job's run bytes are file I/O only when every node's are; a mix
 * falls back to every node's rchar/wchar, labelled proc_rchar. */
START_TEST(test_bytes_source)
{
	cJSON *p[3] = { part("n1", 1, true), part("n2", 2, true),
			part("n3", 3, true) };
	cJSON *m;
	const cJSON *run;

	for (int i = 0; i < 3; i++)
		set_run_bytes(p[i], "shim", 100, 1000);
	m = recmerge_job((const cJSON *const *)p, 3, nodes3, 3);
	run = phase(m, "run");
	ck_assert_str_eq(cJSON_GetObjectItem(run, "bytes_source")->valuestring,
			 "shim");
	ck_assert_double_eq(num(run, "read_bytes"), 300);
	ck_assert_double_eq(num(run, "rchar"), 3000);
	ck_assert_double_eq(num(run, "wchar"), 21);
	cJSON_Delete(m);

	cJSON_ReplaceItemInObject((cJSON *)phase(p[1], "run"), "bytes_source",
				  cJSON_CreateString("proc_rchar"));
	m = recmerge_job((const cJSON *const *)p, 3, nodes3, 3);
	run = phase(m, "run");
	ck_assert_str_eq(cJSON_GetObjectItem(run, "bytes_source")->valuestring,
			 "proc_rchar");
	ck_assert_double_eq(num(run, "read_bytes"), 3000);
	ck_assert_double_eq(num(run, "write_bytes"), 21);
	cJSON_Delete(m);
	for (int i = 0; i < 3; i++)
		cJSON_Delete(p[i]);
}
END_TEST

START_TEST(test_order)
{
	static const int perms[6][3] = {
		{ 0, 1, 2 }, { 0, 2, 1 }, { 1, 0, 2 },
		{ 1, 2, 0 }, { 2, 0, 1 }, { 2, 1, 0 }
	};
	cJSON *p[3] = { part("n1", 1, true), part("n2", 2, true),
			part("n3", 3, true) };
	char *ref = merged_text((const cJSON *const *)p, 3);

	for (int k = 1; k < 6; k++) {
		const cJSON *q[3] = { p[perms[k][0]], p[perms[k][1]],
				      p[perms[k][2]] };
		char *t = merged_text(q, 3);

		ck_assert_str_eq(t, ref);
		free(t);
	}
	free(ref);
	for (int i = 0; i < 3; i++)
		cJSON_Delete(p[i]);
}
END_TEST

/* A part sent twice (a retry) counts once; a live and a finished part
 * of one node: the finished one, whatever the order. */
START_TEST(test_duplicates)
{
	cJSON *p[3] = { part("n1", 1, true), part("n2", 2, true),
			part("n3", 3, true) };
	cJSON *dup = part("n2", 2, true), *live = part("n2", 7, false);
	char *ref = merged_text((const cJSON *const *)p, 3), *t;
	const cJSON *q1[5] = { p[0], p[1], dup, p[2], p[1] };
	const cJSON *q2[4] = { live, p[0], p[1], p[2] };
	const cJSON *q3[4] = { p[0], p[1], p[2], live };

	t = merged_text(q1, 5);
	ck_assert_str_eq(t, ref);
	free(t);
	t = merged_text(q2, 4);
	ck_assert_str_eq(t, ref);
	free(t);
	t = merged_text(q3, 4);
	ck_assert_str_eq(t, ref);
	free(t);
	free(ref);
	cJSON_Delete(dup);
	cJSON_Delete(live);
	for (int i = 0; i < 3; i++)
		cJSON_Delete(p[i]);
}
END_TEST

/* A node that never reported is listed, not counted, not dropped. */
START_TEST(test_missing)
{
	cJSON *p[2] = { part("n1", 1, true), part("n3", 3, true) };
	cJSON *m = recmerge_job((const cJSON *const *)p, 2, nodes3, 3);
	const cJSON *miss = cJSON_GetObjectItem(m, "missing_nodes");

	ck_assert_int_eq(cJSON_GetArraySize(miss), 1);
	ck_assert_str_eq(cJSON_GetArrayItem(miss, 0)->valuestring, "n2");
	ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItem(m, "nodes")),
			 3);
	ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItem(m, "parts")),
			 2);
	ck_assert_double_eq(num(phase(m, "run"), "read_bytes"), 4000);
	cJSON_Delete(m);
	/* even the head's: the record still names it */
	m = recmerge_job((const cJSON *const *)&p[1], 1, nodes3, 3);
	ck_assert_str_eq(cJSON_GetObjectItem(m, "node")->valuestring, "n1");
	ck_assert_int_eq(cJSON_GetArraySize(
			     cJSON_GetObjectItem(m, "missing_nodes")),
			 2);
	ck_assert_int_eq(num(m, "job"), 42);
	cJSON_Delete(m);
	/* nothing at all arrived: still a record naming every node */
	m = recmerge_job(NULL, 0, nodes3, 3);
	ck_assert_ptr_nonnull(m);
	ck_assert_int_eq(cJSON_GetArraySize(
			     cJSON_GetObjectItem(m, "missing_nodes")),
			 3);
	cJSON_Delete(m);
	cJSON_Delete(p[0]);
	cJSON_Delete(p[1]);
}
END_TEST

/* One node failed: the job's state is the worst, the error names it. */
START_TEST(test_failed_node)
{
	cJSON *p[3] = { part("n1", 1, true), part("n2", 2, true),
			part("n3", 3, true) };
	cJSON *m;
	cJSON *si;

	cJSON_ReplaceItemInObject(p[1], "state",
				  cJSON_CreateString("stage_failed"));
	si = (cJSON *)phase(p[1], "stage_in");
	cJSON_AddStringToObject(si, "error", "tier 'nvme' full");
	m = recmerge_job((const cJSON *const *)p, 3, nodes3, 3);
	ck_assert_str_eq(cJSON_GetObjectItem(m, "state")->valuestring,
			 "stage_failed");
	ck_assert_str_eq(
	    cJSON_GetObjectItem(phase(m, "stage_in"), "error")->valuestring,
	    "node n2: tier 'nvme' full");
	cJSON_Delete(m);
	for (int i = 0; i < 3; i++)
		cJSON_Delete(p[i]);
}
END_TEST

/* Parts that do not belong, and inputs without nodes. */
START_TEST(test_bad_inputs)
{
	cJSON *p[4] = { part("n1", 1, true), part("zz", 5, true),
			cJSON_CreateString("x"), part("", 2, true) };
	const cJSON *q[5] = { p[0], p[1], p[2], p[3], NULL };
	cJSON *m = recmerge_job(q, 5, nodes3, 3);

	ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItem(m, "parts")),
			 1);
	ck_assert_double_eq(num(phase(m, "run"), "read_bytes"), 1000);
	cJSON_Delete(m);
	/* no node list: the parts' nodes, sorted */
	m = recmerge_job(q, 5, NULL, 0);
	ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItem(m, "nodes")),
			 2);
	ck_assert_str_eq(cJSON_GetObjectItem(m, "node")->valuestring, "n1");
	cJSON_Delete(m);
	ck_assert_ptr_null(recmerge_job(NULL, 0, NULL, 0));
	ck_assert(!recmerge_is_merged(p[0]));
	ck_assert(!recmerge_is_merged(NULL));
	for (int i = 0; i < 4; i++)
		cJSON_Delete(p[i]);
}
END_TEST

/* A part's processes_total out of range (1e300) counts as none, and is
 * never converted to an integer: that conversion is undefined, which the
 * sanitized build (make check-sanitize) reports. */
START_TEST(test_processes_total_out_of_range)
{
	cJSON *p[3] = { part("n1", 1, true), part("n2", 2, true),
			part("n3", 3, true) };
	const cJSON *q[3] = { p[0], p[1], p[2] };
	cJSON *m;

	cJSON_AddNumberToObject(p[0], "processes_total", 1e300);
	m = recmerge_job(q, 3, nodes3, 3);
	ck_assert_ptr_nonnull(m);
	ck_assert_int_eq(cJSON_GetArraySize(
			     cJSON_GetObjectItem(m, "processes")),
			 3);
	ck_assert_ptr_null(cJSON_GetObjectItem(m, "processes_total"));
	cJSON_Delete(m);
	for (int i = 0; i < 3; i++)
		cJSON_Delete(p[i]);
}
END_TEST

/* A dataset whose result one part lacks takes the others' (the worst
 * of them), and nothing is leaked on the way: cJSON's replace of a key
 * that is absent fails and leaves the new item to its caller (found by
 * fuzz_ctld_request as a leak of the new string). */
START_TEST(test_result_missing_in_one_part)
{
	cJSON *p[3] = { part("n1", 1, true), part("n2", 2, true),
			part("n3", 3, true) };
	const cJSON *q[3] = { p[0], p[1], p[2] };
	cJSON *m, *ds;

	cJSON_ArrayForEach(ds, cJSON_GetObjectItem(p[0], "datasets"))
		cJSON_DeleteItemFromObject(ds, "result");
	m = recmerge_job(q, 3, nodes3, 3);
	ck_assert_ptr_nonnull(m);
	ds = cJSON_GetArrayItem(cJSON_GetObjectItem(m, "datasets"), 0);
	ck_assert_ptr_nonnull(cJSON_GetObjectItem(ds, "result"));
	ck_assert_str_eq(cJSON_GetObjectItem(ds, "result")->valuestring, "hit");
	cJSON_Delete(m);
	for (int i = 0; i < 3; i++)
		cJSON_Delete(p[i]);
}
END_TEST

/* A spread dataset: every node's part and its view's figures add up in
 * the job's record, and each node's stay in its part. */
START_TEST(test_spread_adds_up)
{
	cJSON *p[3] = { part("n1", 1, true), part("n2", 2, true),
			part("n3", 3, true) };
	const cJSON *q[3] = { p[0], p[1], p[2] };
	const cJSON *sp, *pt;
	cJSON *m, *ds;

	for (int i = 0; i < 3; i++) {
		cJSON *s = cJSON_CreateObject();

		cJSON_AddNumberToObject(s, "part_bytes", 100 * (i + 1));
		cJSON_AddNumberToObject(s, "dataset_bytes", 800);
		cJSON_AddNumberToObject(s, "peer_bytes", 10 * (i + 1));
		cJSON_AddNumberToObject(s, "pfs_bytes", i);
		cJSON_AddItemToObject(
		    cJSON_GetArrayItem(cJSON_GetObjectItem(p[i], "datasets"),
				       0),
		    "spread", s);
	}
	m = recmerge_job(q, 3, nodes3, 3);
	ck_assert_ptr_nonnull(m);
	ds = cJSON_GetArrayItem(cJSON_GetObjectItem(m, "datasets"), 0);
	sp = cJSON_GetObjectItem(ds, "spread");
	ck_assert_ptr_nonnull(sp);
	ck_assert_double_eq(num(sp, "part_bytes"), 600);
	ck_assert_double_eq(num(sp, "peer_bytes"), 60);
	ck_assert_double_eq(num(sp, "pfs_bytes"), 3);
	/* the same dataset on every node; the parts hold 600 of its 800 */
	ck_assert_double_eq(num(sp, "dataset_bytes"), 800);
	ck_assert_double_eq(num(sp, "held_fraction"), 0.75);
	pt = cJSON_GetArrayItem(cJSON_GetObjectItem(m, "parts"), 1);
	sp = cJSON_GetObjectItem(
	    cJSON_GetArrayItem(cJSON_GetObjectItem(pt, "datasets"), 0),
	    "spread");
	ck_assert_ptr_nonnull(sp);
	ck_assert_double_eq(num(sp, "part_bytes"), 200);
	cJSON_Delete(m);
	for (int i = 0; i < 3; i++)
		cJSON_Delete(p[i]);
}
END_TEST

/* A stage-in rate out of range (damaged parts: 1e18 B/s and more, up to
 * 1e300) counts as none, never converted to an integer (undefined; the
 * fuzz build's UBSan reported 9.2e299, reproducer
 * corpus/ctld_request/merge-rate-overflow). */
START_TEST(test_stage_in_rate_out_of_range)
{
	static const double bytes[] = { 2.5e18, 1e300 };

	for (size_t k = 0; k < 2; k++) {
		cJSON *p[3] = { part("n1", 1, true), part("n2", 2, true),
				part("n3", 3, true) };
		const cJSON *q[3] = { p[0], p[1], p[2] };
		cJSON *m;

		for (int i = 0; i < 3; i++)
			cJSON_SetNumberValue(
			    cJSON_GetObjectItem((cJSON *)phase(p[i],
							       "stage_in"),
						"bytes"),
			    bytes[k]);
		m = recmerge_job(q, 3, nodes3, 3);
		ck_assert_ptr_nonnull(m);
		ck_assert_double_eq(num(phase(m, "stage_in"), "rate_bps"), 0);
		cJSON_Delete(m);
		for (int i = 0; i < 3; i++)
			cJSON_Delete(p[i]);
	}
}
END_TEST

/* A live job: no end until every part has one. */
START_TEST(test_live)
{
	cJSON *p[3] = { part("n1", 1, true), part("n2", 2, false),
			part("n3", 3, true) };
	cJSON *m = recmerge_job((const cJSON *const *)p, 3, nodes3, 3);

	ck_assert_ptr_null(cJSON_GetObjectItem(m, "end"));
	cJSON_Delete(m);
	for (int i = 0; i < 3; i++)
		cJSON_Delete(p[i]);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("recmerge");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, test_totals);
	tcase_add_test(tc, test_bytes_source);
	tcase_add_test(tc, test_order);
	tcase_add_test(tc, test_duplicates);
	tcase_add_test(tc, test_missing);
	tcase_add_test(tc, test_failed_node);
	tcase_add_test(tc, test_bad_inputs);
	tcase_add_test(tc, test_processes_total_out_of_range);
	tcase_add_test(tc, test_result_missing_in_one_part);
	tcase_add_test(tc, test_spread_adds_up);
	tcase_add_test(tc, test_stage_in_rate_out_of_range);
	tcase_add_test(tc, test_live);
	suite_add_tcase(s, tc);
	return check_run(s);
}
