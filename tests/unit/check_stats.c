/* check_stats.c - unit tests for daemon/telemetry/stats.c: the node's
 * totals, the per-job phase records /metrics shows (who sees which), a
 * job's end and the grace period, a requeue, a full record replacing the
 * daemon's own figures, the bound on jobs, two independent stats in one
 * process and the NULL stats the staging code may be handed. */
#include <stdint.h>
#include <string.h>

#include <cJSON.h>
#include <check.h>

#include "daemon/telemetry/stats.h"
#include "tests/unit/check_run.h"

static const cJSON *job_of(const cJSON *records, uint32_t id)
{
	const cJSON *r;

	cJSON_ArrayForEach(r, records) {
		if (cJSON_GetNumberValue(cJSON_GetObjectItem(r, "job")) == id)
			return r;
	}
	return NULL;
}

static const cJSON *phase_of(const cJSON *rec, const char *name)
{
	const cJSON *p;

	cJSON_ArrayForEach(p, cJSON_GetObjectItem(rec, "phases")) {
		const cJSON *n = cJSON_GetObjectItem(p, "name");

		if (cJSON_IsString(n) && !strcmp(n->valuestring, name))
			return p;
	}
	return NULL;
}

static double num(const cJSON *o, const char *key)
{
	return cJSON_GetNumberValue(cJSON_GetObjectItem(o, key));
}

START_TEST(test_totals)
{
	struct stats *s = stats_create();
	struct stats_totals t;

	ck_assert_ptr_nonnull(s);
	stats_dataset_served(s, true, 100, 2, 0, 0, 0);
	stats_dataset_served(s, false, 300, 5, 200, 3, 2);
	stats_job_staged(s, 1, 1000, false, true, 1.5, 400, 7, 100);
	stats_job_staged(s, 2, 1000, false, false, 0.5, 0, 0, 0);
	/* a prestage counts in the seconds, not in the jobs */
	stats_job_staged(s, 3, 0, true, true, 1.0, 0, 0, 0);
	stats_get_totals(s, &t);
	ck_assert_uint_eq(t.staged_bytes, 400);
	ck_assert_uint_eq(t.staged_files, 7);
	ck_assert_uint_eq(t.copied_bytes, 200);
	ck_assert_uint_eq(t.copied_files, 3);
	ck_assert_uint_eq(t.linked_files, 2);
	ck_assert_uint_eq(t.cache_hits, 1);
	ck_assert_uint_eq(t.cache_misses, 1);
	ck_assert_uint_eq(t.jobs_staged, 1);
	ck_assert_uint_eq(t.jobs_failed, 1);
	ck_assert(t.stage_seconds > 2.99 && t.stage_seconds < 3.01);
	ck_assert(stats_job_known(s, 1));
	ck_assert(stats_job_known(s, 2));
	ck_assert(!stats_job_known(s, 3));
	stats_destroy(s);
}
END_TEST

/* A staged job: stage_in and a run phase; drained outputs add stage_out.
 * Root (ALL) sees every job, a user only their own, a job whose owner is
 * not known yet only ALL. */
START_TEST(test_job_records_and_viewers)
{
	struct stats *s = stats_create();
	cJSON *all, *mine, *theirs;
	const cJSON *r;

	stats_job_staged(s, 10, 1000, false, true, 2.0, 500, 4, 100);
	stats_job_drained(s, 10, 64, 1, 0.25);
	stats_job_staging(s, 11, 50, 1.0); /* owner not known yet */
	stats_job_staging(s, 12, 70, 1.0);
	stats_job_owner(s, 12, 2000);
	all = stats_job_records(s, true, 0);
	mine = stats_job_records(s, false, 1000);
	theirs = stats_job_records(s, false, 2000);
	ck_assert_int_eq(cJSON_GetArraySize(all), 3);
	ck_assert_int_eq(cJSON_GetArraySize(mine), 1);
	ck_assert_int_eq(cJSON_GetArraySize(theirs), 1);
	ck_assert_ptr_nonnull(job_of(mine, 10));
	ck_assert_ptr_nonnull(job_of(theirs, 12));
	r = job_of(all, 10);
	ck_assert(num(phase_of(r, "stage_in"), "bytes") == 500);
	ck_assert(num(phase_of(r, "stage_in"), "cached_bytes") == 100);
	ck_assert_ptr_nonnull(phase_of(r, "run"));
	ck_assert(num(phase_of(r, "stage_out"), "bytes") == 64);
	/* still staging: no run phase */
	ck_assert_ptr_nonnull(phase_of(job_of(all, 12), "stage_in"));
	ck_assert_ptr_null(phase_of(job_of(all, 12), "run"));
	cJSON_Delete(all);
	cJSON_Delete(mine);
	cJSON_Delete(theirs);
	stats_destroy(s);
}
END_TEST

/* An ended job stays until the grace period is over; the active list
 * leaves it out at once. A job seen again after its end (a requeue) starts
 * afresh. */
START_TEST(test_end_grace_requeue)
{
	struct stats *s = stats_create();
	uint32_t ids[8];
	cJSON *all;

	stats_job_staged(s, 20, 1000, false, true, 1.0, 10, 1, 0);
	stats_job_staged(s, 21, 1000, false, true, 1.0, 10, 1, 0);
	ck_assert_uint_eq(stats_active_jobs(s, ids, 8), 2);
	stats_job_ended(s, 20, 1000);
	stats_job_ended(s, 999, 1000); /* unknown: ignored */
	ck_assert_uint_eq(stats_active_jobs(s, ids, 8), 1);
	ck_assert_uint_eq(ids[0], 21);
	ck_assert_uint_eq(stats_active_jobs(s, ids, 0), 0);
	stats_prune(s, 1000 + 59, 60);
	ck_assert(stats_job_known(s, 20));
	stats_prune(s, 1000 + 60, 60);
	ck_assert(!stats_job_known(s, 20));
	ck_assert(stats_job_known(s, 21)); /* not ended: never pruned */

	/* requeue: ended, then staging again under the same id */
	stats_job_drained(s, 21, 5, 1, 0);
	stats_job_ended(s, 21, 2000);
	stats_job_staging(s, 21, 3, 0.5);
	ck_assert_uint_eq(stats_active_jobs(s, ids, 8), 1);
	all = stats_job_records(s, true, 0);
	ck_assert(num(phase_of(job_of(all, 21), "stage_in"), "bytes") == 3);
	ck_assert_ptr_null(phase_of(job_of(all, 21), "stage_out"));
	ck_assert_ptr_null(phase_of(job_of(all, 21), "run"));
	cJSON_Delete(all);
	stats_destroy(s);
}
END_TEST

/* A full record's phases replace the daemon's own, but the stage_out
 * drained meanwhile is added while the record has none. */
START_TEST(test_job_record_replaces)
{
	struct stats *s = stats_create();
	cJSON *rec, *all;
	const cJSON *r;

	rec = cJSON_Parse("{\"job\":30,\"phases\":[{\"name\":\"stage_in\","
			  "\"bytes\":9},{\"name\":\"run\",\"bytes\":77},"
			  "{\"name\":\"load\",\"parent\":\"run\"}]}");
	ck_assert_ptr_nonnull(rec);
	stats_job_staged(s, 30, 1000, false, true, 1.0, 500, 4, 0);
	ck_assert_int_eq(stats_job_record(s, 30, rec), 0);
	stats_job_drained(s, 30, 11, 1, 0.1);
	all = stats_job_records(s, true, 0);
	r = job_of(all, 30);
	ck_assert(num(phase_of(r, "stage_in"), "bytes") == 9);
	ck_assert(num(phase_of(r, "run"), "bytes") == 77);
	ck_assert_ptr_nonnull(phase_of(r, "load"));
	ck_assert(num(phase_of(r, "stage_out"), "bytes") == 11);
	cJSON_Delete(all);
	/* no phases array: refused, nothing changed */
	cJSON_DeleteItemFromObject(rec, "phases");
	ck_assert_int_eq(stats_job_record(s, 30, rec), -1);
	cJSON_Delete(rec);
	stats_destroy(s);
}
END_TEST

/* A flood of job ids cannot grow the list past its bound. */
START_TEST(test_jobs_bounded)
{
	struct stats *s = stats_create();
	static uint32_t ids[5000];
	uint32_t i;

	for (i = 1; i <= 5000; i++)
		stats_job_staging(s, i, 1, 1);
	ck_assert_uint_eq(stats_active_jobs(s, ids, 5000), 4096);
	ck_assert(!stats_job_known(s, 5000));
	stats_destroy(s);
}
END_TEST

/* Two stats are independent; a NULL one takes the staging calls and does
 * nothing; destroy(NULL) is a no-op. */
START_TEST(test_two_and_null)
{
	struct stats *a = stats_create(), *b = stats_create();
	struct stats_totals ta, tb;
	cJSON *rec = cJSON_Parse("{\"phases\":[]}");

	stats_dataset_served(a, true, 5, 1, 0, 0, 0);
	stats_job_staged(a, 40, 1000, false, true, 1, 5, 1, 5);
	stats_get_totals(a, &ta);
	stats_get_totals(b, &tb);
	ck_assert_uint_eq(ta.staged_bytes, 5);
	ck_assert_uint_eq(tb.staged_bytes, 0);
	ck_assert(stats_job_known(a, 40));
	ck_assert(!stats_job_known(b, 40));
	stats_dataset_served(NULL, true, 5, 1, 0, 0, 0);
	stats_job_staged(NULL, 41, 1000, false, true, 1, 5, 1, 5);
	ck_assert_int_eq(stats_job_record(NULL, 41, rec), 0);
	cJSON_Delete(rec);
	stats_destroy(a);
	stats_destroy(b);
	stats_destroy(NULL);
}
END_TEST

static Suite *stats_suite(void)
{
	Suite *s = suite_create("stats");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, test_totals);
	tcase_add_test(tc, test_job_records_and_viewers);
	tcase_add_test(tc, test_end_grace_requeue);
	tcase_add_test(tc, test_job_record_replaces);
	tcase_add_test(tc, test_jobs_bounded);
	tcase_add_test(tc, test_two_and_null);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return check_run(stats_suite());
}
