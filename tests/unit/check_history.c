/* check_history.c - unit tests for common/history: filing, queries,
 * replacement, retention, restart, read-only, damaged databases, repair. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <check.h>

#include "common/base/jsonbuf.h"
#include "common/history/history.h"
#include "common/history/jobfacts.h"
#include "tests/unit/check_run.h"

static char tmp[256], dbdir[300];

static void setup(void)
{
	snprintf(tmp, sizeof(tmp), "/tmp/check_history.XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(tmp));
	snprintf(dbdir, sizeof(dbdir), "%s/history", tmp);
}

static void teardown(void)
{
	char cmd[400];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmp);
	if (system(cmd) != 0)
		fprintf(stderr, "cannot remove %s\n", tmp);
}

static cJSON *rec(unsigned job, const char *user, unsigned uid,
		  const char *name, double end, const char *src)
{
	char buf[2048];
	cJSON *r;

	snprintf(buf, sizeof(buf),
		 "{\"schema\":1,\"job\":%u,\"user\":\"%s\",\"uid\":%u,"
		 "\"job_name\":\"%s\",\"start\":%.3f,\"end\":%.3f,"
		 "\"state\":\"completed\",\"datasets\":[{\"name\":\"d\","
		 "\"source\":\"%s\",\"tier\":\"nvme\",\"bytes\":1000,"
		 "\"files\":10,\"result\":\"hit\"}],\"outputs\":[],"
		 "\"phases\":[{\"name\":\"stage_in\",\"seconds\":1},"
		 "{\"name\":\"run\",\"seconds\":50},"
		 "{\"name\":\"stage_out\",\"seconds\":0}]}",
		 job, user, uid, name, end - 60, end, src);
	r = cJSON_Parse(buf);
	ck_assert_ptr_nonnull(r);
	return r;
}

static void put(struct history *h, unsigned job, const char *user, unsigned uid,
		const char *name, double end, const char *src)
{
	char err[512];
	cJSON *r = rec(job, user, uid, name, end, src);

	ck_assert_msg(history_put(h, r, 0, err, sizeof(err)) == 0, "%s", err);
	cJSON_Delete(r);
}

static struct history *open_rw(void)
{
	char err[512];
	struct history *h = history_open(dbdir, HISTORY_READ_WRITE, err,
					 sizeof(err));

	ck_assert_msg(h != NULL, "%s", err);
	return h;
}

START_TEST(test_put_get_list)
{
	struct history *h = open_rw();
	char err[512];
	cJSON *r, *l;

	put(h, 42, "alice", 1001, "train", 1000, "/pfs/a");
	put(h, 43, "bob", 1002, "train", 2000, "/pfs/a");
	put(h, 44, "alice", 1001, "infer", 3000, "/pfs/b");
	r = history_get(h, 42, err, sizeof(err));
	ck_assert_msg(r != NULL, "%s", err);
	ck_assert_str_eq(jobfacts_str(r, "user", ""), "alice");
	ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItem(r, "phases")),
			 3);
	ck_assert_str_eq(jobfacts_str(cJSON_GetArrayItem(
					  cJSON_GetObjectItem(r, "phases"), 1),
				      "name", ""),
			 "run");
	cJSON_Delete(r);
	ck_assert_ptr_null(history_get(h, 99, err, sizeof(err)));
	ck_assert_int_eq(errno, ENOENT);

	l = history_list(h, NULL, 0, 10, err, sizeof(err));
	ck_assert_int_eq(cJSON_GetArraySize(l), 3);
	ck_assert(jobfacts_num(cJSON_GetArrayItem(l, 0), "job", 0) == 44);
	cJSON_Delete(l);
	l = history_list(h, "alice", 0, 10, err, sizeof(err));
	ck_assert_int_eq(cJSON_GetArraySize(l), 2);
	ck_assert(jobfacts_num(cJSON_GetArrayItem(l, 0), "job", 0) == 44);
	ck_assert(jobfacts_num(cJSON_GetArrayItem(l, 1), "job", 0) == 42);
	cJSON_Delete(l);
	/* "al" is not a prefix of alice's keys */
	l = history_list(h, "al", 0, 10, err, sizeof(err));
	ck_assert_int_eq(cJSON_GetArraySize(l), 0);
	cJSON_Delete(l);
	l = history_list(h, NULL, 1500, 10, err, sizeof(err));
	ck_assert_int_eq(cJSON_GetArraySize(l), 2);
	cJSON_Delete(l);
	l = history_list(h, NULL, 0, 1, err, sizeof(err));
	ck_assert_int_eq(cJSON_GetArraySize(l), 1);
	cJSON_Delete(l);
	ck_assert_int_eq(history_count(h, err, sizeof(err)), 3);
	history_close(h);
}
END_TEST

START_TEST(test_queries)
{
	struct history *h = open_rw();
	char err[512];
	cJSON *f;

	for (unsigned i = 0; i < 10; i++)
		put(h, 100 + i, "alice", 1001, "train", 1000 + i, "/pfs/a");
	put(h, 200, "alice", 1001, "train2", 5000, "/pfs/a");
	put(h, 201, "bob", 1002, "train", 5001, "/pfs/a");
	f = history_runs_by_app(h, "alice", "train", 0, 100, err, sizeof(err));
	ck_assert_int_eq(cJSON_GetArraySize(f), 10);
	ck_assert(jobfacts_num(cJSON_GetArrayItem(f, 0), "job", 0) == 109);
	history_runs_free(f);
	f = history_runs_by_app(h, "alice", "train", 1005, 100, err,
				sizeof(err));
	ck_assert_int_eq(cJSON_GetArraySize(f), 5); /* the window */
	history_runs_free(f);
	f = history_runs_by_app(h, "alice", "train", 0, 3, err, sizeof(err));
	ck_assert_int_eq(cJSON_GetArraySize(f), 3); /* the limit */
	history_runs_free(f);
	f = history_runs_by_dataset(h, "/pfs/a", -1, 0, 100, err, sizeof(err));
	ck_assert_int_eq(cJSON_GetArraySize(f), 12);
	history_runs_free(f);
	f = history_runs_by_dataset(h, "/pfs/a", 1002, 0, 100, err,
				    sizeof(err));
	ck_assert_int_eq(cJSON_GetArraySize(f), 1); /* bob's only */
	history_runs_free(f);
	f = history_runs_by_dataset(h, "/pfs", -1, 0, 100, err, sizeof(err));
	ck_assert_int_eq(cJSON_GetArraySize(f), 0);
	history_runs_free(f);
	f = history_runs_by_user(h, "alice", 0, 100, err, sizeof(err));
	ck_assert_int_eq(cJSON_GetArraySize(f), 11);
	history_runs_free(f);
	history_close(h);
}
END_TEST

START_TEST(test_replace_same_job)
{
	struct history *h = open_rw();
	char err[512];
	cJSON *f;

	put(h, 7, "alice", 1001, "old", 1000, "/pfs/old");
	put(h, 7, "alice", 1001, "new", 2000, "/pfs/new");
	f = history_runs_by_app(h, "alice", "old", 0, 10, err, sizeof(err));
	ck_assert_int_eq(cJSON_GetArraySize(f), 0);
	history_runs_free(f);
	f = history_runs_by_dataset(h, "/pfs/old", -1, 0, 10, err, sizeof(err));
	ck_assert_int_eq(cJSON_GetArraySize(f), 0);
	history_runs_free(f);
	f = history_runs_by_app(h, "alice", "new", 0, 10, err, sizeof(err));
	ck_assert_int_eq(cJSON_GetArraySize(f), 1);
	history_runs_free(f);
	ck_assert_int_eq(history_count(h, err, sizeof(err)), 1);
	history_close(h);
}
END_TEST

START_TEST(test_batch_all_or_nothing)
{
	struct history *h = open_rw();
	cJSON *good = rec(1, "alice", 1001, "a", 1000, "/pfs/a");
	cJSON *bad = cJSON_Parse("{\"job\":2,\"uid\":5}");
	const cJSON *both[] = { good, bad };
	char err[512] = "";

	ck_assert_int_eq(history_put_many(h, both, 2, 0, err, sizeof(err)), -1);
	ck_assert_ptr_nonnull(strstr(err, "user"));
	ck_assert_int_eq(history_count(h, err, sizeof(err)), 0);
	ck_assert_int_eq(history_put(h, NULL, 0, err, sizeof(err)), -1);
	ck_assert_int_eq(history_put(NULL, good, 0, err, sizeof(err)), -1);
	cJSON_Delete(good);
	cJSON_Delete(bad);
	history_close(h);
	history_close(NULL);
}
END_TEST

/* Concurrent filers re-filing the same jobs: each job ends with exactly
 * one set of keys (the in-flight set keeps a filing's read of the old
 * keys and its write of the new ones together). */
struct refiler {
	struct history *h;
	unsigned id;
	int failed;
};

static void *refile(void *arg)
{
	struct refiler *r = arg;
	char err[512], name[32], src[64];

	for (unsigned round = 0; round < 20; round++) {
		cJSON *recs[10];

		for (unsigned i = 0; i < 10; i++) {
			snprintf(name, sizeof(name), "n%u-%u", r->id, round);
			snprintf(src, sizeof(src), "/pfs/%u/%u", r->id, round);
			recs[i] = rec(1 + (round * 3 + i) % 25, "alice", 1001,
				      name, 1000 + r->id * 100 + round, src);
		}
		if (history_put_many(r->h, (const cJSON *const *)recs, 10, 0,
				     err, sizeof(err)) < 0)
			r->failed = 1;
		for (unsigned i = 0; i < 10; i++)
			cJSON_Delete(recs[i]);
	}
	return NULL;
}

START_TEST(test_concurrent_filers)
{
	struct history *h = open_rw();
	struct refiler r[4];
	pthread_t t[4];
	unsigned expired = 0;
	char err[512];
	cJSON *f, *list;
	int datasets = 0;

	for (unsigned i = 0; i < 4; i++) {
		r[i] = (struct refiler){ h, i, 0 };
		ck_assert_int_eq(pthread_create(&t[i], NULL, refile, &r[i]), 0);
	}
	/* retention at the same time: never half a job */
	ck_assert_int_eq(history_expire(h, 1050, 1000, &expired, err,
					sizeof(err)),
			 0);
	for (unsigned i = 0; i < 4; i++) {
		pthread_join(t[i], NULL);
		ck_assert_int_eq(r[i].failed, 0);
	}
	ck_assert_int_eq(history_count(h, err, sizeof(err)) + expired >= 25, 1);
	f = history_runs_by_user(h, "alice", 0, 2000, err, sizeof(err));
	ck_assert_int_eq(cJSON_GetArraySize(f),
			 history_count(h, err, sizeof(err)));
	history_runs_free(f);
	list = history_list(h, NULL, 0, 1000, err, sizeof(err));
	ck_assert_int_eq(cJSON_GetArraySize(list),
			 history_count(h, err, sizeof(err)));
	/* every job's dataset key points at its current facts, no other */
	for (unsigned id = 0; id < 4; id++)
		for (unsigned round = 0; round < 20; round++) {
			char src[64];

			snprintf(src, sizeof(src), "/pfs/%u/%u", id, round);
			f = history_runs_by_dataset(h, src, -1, 0, 100, err,
						    sizeof(err));
			datasets += cJSON_GetArraySize(f);
			history_runs_free(f);
		}
	ck_assert_int_eq(datasets, cJSON_GetArraySize(list));
	cJSON_Delete(list);
	history_close(h);
}
END_TEST

/* history_get gives back the record exactly as filed (the stored value
 * is packed): keys outside the schema, decimals, big and negative
 * numbers, nested arrays; a record without phases gets an empty array. */
START_TEST(test_get_exact)
{
	static const char text[] =
	    "{\"schema\":1,\"job\":77,\"user\":\"carol\",\"uid\":1003,"
	    "\"job_name\":\"sim \\\"x\\\"\",\"start\":1700000000.123456,"
	    "\"end\":1700000100.5,\"site_note\":\"\\u00e9t\\u00e9\","
	    "\"datasets\":[],\"outputs\":[],\"weird\":[[1,-2.5e-7,1e300],"
	    "{},null,true,false,-0.1,18446744073709551615],"
	    "\"phases\":[{\"name\":\"run\",\"seconds\":0.1,\"extra\":"
	    "{\"k\":[1,2,3]}}]}";
	struct history *h = open_rw();
	cJSON *r = cJSON_Parse(text), *g, *nophases;
	char err[512];

	ck_assert_ptr_nonnull(r);
	ck_assert_msg(history_put(h, r, 0, err, sizeof(err)) == 0, "%s", err);
	g = history_get(h, 77, err, sizeof(err));
	ck_assert_msg(g && cJSON_Compare(r, g, 1), "%s", err);
	cJSON_Delete(g);
	nophases = cJSON_Duplicate(r, 1);
	cJSON_DeleteItemFromObject(nophases, "phases");
	cJSON_ReplaceItemInObject(nophases, "job", cJSON_CreateNumber(78));
	ck_assert_msg(history_put(h, nophases, 0, err, sizeof(err)) == 0, "%s",
		      err);
	g = history_get(h, 78, err, sizeof(err));
	ck_assert_ptr_nonnull(g);
	ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItem(g, "phases")),
			 0);
	cJSON_DeleteItemFromObject(g, "phases");
	ck_assert(cJSON_Compare(nophases, g, 1));
	cJSON_Delete(g);
	cJSON_Delete(nophases);
	cJSON_Delete(r);
	history_close(h);
}
END_TEST

/* The packed facts: equal trees back, every truncation and garbage
 * refused, and JSON facts of histories filed before the packed form
 * still read. */
START_TEST(test_facts_pack)
{
	static const char *const trees[] = {
		"{\"job\":7,\"user\":\"alice\",\"uid\":1000,\"job_name\":\"t\","
		"\"end\":1700000000.25,\"run_s\":0.4,\"ds\":[{\"src\":\"/d\","
		"\"bytes\":1e15,\"files\":3,\"tier\":\"nvme\",\"result\":\"hit\"}],"
		"\"rd\":{\"ops\":-5,\"small\":0,\"seq\":-0.5},\"unknown key\":"
		"[true,false,null,\"\",-9007199254740991,1e300,1.7976931348623157e308]}",
		"[]",
		"{}",
		"0",
		"-0.0",
		"\"x\"",
		"[[[[1]]]]",
	};
	static const unsigned char bad[][6] = {
		{ 0x08, 0x05 },       { 0x06, 0x7f },
		{ 0x05, 1, 2 },       { 0x09 },
		{ 0x03, 0xff },       { 0x08, 0x01, 0x7f, 0x00 },
		{ 0x06, 0x01, 0x00 }, { 0x07, 0x01, 0x00, 0x00 },
	};
	struct jsonbuf b = { 0 };

	for (size_t i = 0; i < sizeof(trees) / sizeof(trees[0]); i++) {
		cJSON *t = cJSON_Parse(trees[i]), *u;

		ck_assert_ptr_nonnull(t);
		ck_assert_int_eq(jobfacts_pack(&b, t), 0);
		ck_assert(b.data[0] != '{');
		u = jobfacts_unpack(b.data, b.len);
		ck_assert_msg(u && cJSON_Compare(t, u, 1), "tree %zu", i);
		cJSON_Delete(u);
		for (size_t n = 1; n < b.len; n++) {
			u = jobfacts_unpack(b.data, n);
			ck_assert_msg(!u, "tree %zu cut at %zu", i, n);
		}
		cJSON_Delete(t);
	}
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		ck_assert_ptr_null(
		    jobfacts_unpack((const char *)bad[i], sizeof(bad[i])));
	ck_assert_ptr_null(jobfacts_unpack(NULL, 0));
	ck_assert_ptr_null(jobfacts_unpack("", 0));
	{
		cJSON *old = jobfacts_unpack("{\"job\":3,\"ds\":[]}", 18);

		ck_assert_ptr_nonnull(old);
		ck_assert_int_eq(jobfacts_num(old, "job", 0), 3);
		cJSON_Delete(old);
	}
	/* a nesting deeper than the limit is refused both ways */
	{
		cJSON *deep = cJSON_CreateArray(), *c = deep;

		for (int d = 0; d < 100; d++) {
			cJSON *n = cJSON_CreateArray();

			cJSON_AddItemToArray(c, n);
			c = n;
		}
		ck_assert_int_eq(jobfacts_pack(&b, deep), -1);
		cJSON_Delete(deep);
	}
	jsonbuf_fini(&b);
}
END_TEST

START_TEST(test_expire)
{
	struct history *h = open_rw();
	unsigned deleted = 0;
	char err[512];
	cJSON *f;

	for (unsigned i = 0; i < 2500; i++)
		put(h, 1 + i, "alice", 1001, "train", 1000 + i, "/pfs/a");
	ck_assert_int_eq(history_expire(h, 3000, 100000, &deleted, err,
					sizeof(err)),
			 0);
	ck_assert_uint_eq(deleted, 2000);
	ck_assert_int_eq(history_count(h, err, sizeof(err)), 500);
	f = history_runs_by_app(h, "alice", "train", 0, 2000, err, sizeof(err));
	ck_assert_int_eq(cJSON_GetArraySize(f), 500);
	history_runs_free(f);
	f = history_runs_by_dataset(h, "/pfs/a", -1, 0, 2000, err, sizeof(err));
	ck_assert_int_eq(cJSON_GetArraySize(f), 500);
	history_runs_free(f);
	ck_assert_ptr_null(history_get(h, 5, err, sizeof(err)));
	ck_assert_ptr_null(history_get(h, 2000, err, sizeof(err)));
	f = history_get(h, 2001, err, sizeof(err));
	ck_assert_ptr_nonnull(f);
	cJSON_Delete(f);
	/* bounded: at most MAX per call */
	ck_assert_int_eq(history_expire(h, 1e10, 10, &deleted, err,
					sizeof(err)),
			 0);
	ck_assert_uint_eq(deleted, 10);
	history_close(h);
}
END_TEST

START_TEST(test_survives_reopen_and_read_only)
{
	struct history *h = open_rw();
	char err[512];
	cJSON *r;

	put(h, 42, "alice", 1001, "train", 1000, "/pfs/a");
	history_close(h);
	h = history_open(dbdir, HISTORY_READ_ONLY, err, sizeof(err));
	ck_assert_msg(h != NULL, "%s", err);
	ck_assert(history_is_read_only(h));
	r = history_get(h, 42, err, sizeof(err));
	ck_assert_ptr_nonnull(r);
	cJSON_Delete(r);
	r = rec(43, "alice", 1001, "train", 1000, "/pfs/a");
	ck_assert_int_eq(history_put(h, r, 0, err, sizeof(err)), -1);
	ck_assert_int_eq(errno, EROFS);
	cJSON_Delete(r);
	history_close(h);
	h = open_rw();
	ck_assert_int_eq(history_count(h, err, sizeof(err)), 1);
	history_close(h);
	/* read-only never creates */
	snprintf(dbdir, sizeof(dbdir), "%s/none", tmp);
	ck_assert_ptr_null(
	    history_open(dbdir, HISTORY_READ_ONLY, err, sizeof(err)));
	ck_assert_ptr_null(
	    history_open("relative", HISTORY_READ_WRITE, err, sizeof(err)));
}
END_TEST

static void write_file(const char *path, const char *text)
{
	int fd = open(path, O_WRONLY | O_TRUNC | O_CREAT, 0644);

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
}

START_TEST(test_damaged_current_then_repair)
{
	struct history *h = open_rw();
	char err[512], path[4200], copy[4096];
	int64_t jobs = -1;
	struct stat st;

	for (unsigned i = 0; i < 20; i++)
		put(h, 1 + i, "alice", 1001, "train", 1000 + i, "/pfs/a");
	history_close(h);
	snprintf(path, sizeof(path), "%s/CURRENT", dbdir);
	write_file(path, "garbage-not-a-manifest\n");
	ck_assert_ptr_null(
	    history_open(dbdir, HISTORY_READ_WRITE, err, sizeof(err)));
	ck_assert_ptr_nonnull(strstr(err, "cannot open"));
	ck_assert_ptr_null(
	    history_open(dbdir, HISTORY_READ_ONLY, err, sizeof(err)));
	/* left untouched: CURRENT still the garbage we wrote */
	ck_assert_int_eq(stat(path, &st), 0);
	ck_assert_int_eq(st.st_size, (off_t)strlen("garbage-not-a-manifest\n"));

	ck_assert_msg(history_repair(dbdir, &jobs, copy, sizeof(copy), err,
				     sizeof(err)) == 0,
		      "%s", err);
	ck_assert_int_eq(jobs, 20);
	snprintf(path, sizeof(path), "%s/CURRENT", copy);
	ck_assert_int_eq(stat(path, &st), 0); /* the damaged copy is kept */
	h = open_rw();
	ck_assert_int_eq(history_count(h, err, sizeof(err)), 20);
	history_close(h);
}
END_TEST

START_TEST(test_damaged_manifest_then_repair)
{
	struct history *h = open_rw();
	char err[512], cmd[800], copy[4096];
	int64_t jobs = -1;

	for (unsigned i = 0; i < 20; i++)
		put(h, 1 + i, "alice", 1001, "train", 1000 + i, "/pfs/a");
	history_close(h); /* flushed: the jobs are in SST files */
	snprintf(cmd, sizeof(cmd),
		 "for m in '%s'/MANIFEST-*; do "
		 "printf 'garbage%%.0s' $(seq 1 200) > \"$m\"; done",
		 dbdir);
	ck_assert_int_eq(system(cmd), 0);
	ck_assert_ptr_null(
	    history_open(dbdir, HISTORY_READ_WRITE, err, sizeof(err)));
	ck_assert_msg(history_repair(dbdir, &jobs, copy, sizeof(copy), err,
				     sizeof(err)) == 0,
		      "%s", err);
	ck_assert_int_eq(jobs, 20);
	h = open_rw();
	ck_assert_int_eq(history_count(h, err, sizeof(err)), 20);
	{
		cJSON *f = history_runs_by_app(h, "alice", "train", 0, 100, err,
					       sizeof(err));
		ck_assert_int_eq(cJSON_GetArraySize(f), 20);
		history_runs_free(f);
	}
	history_close(h);
}
END_TEST

START_TEST(test_no_current_not_initialized_over)
{
	struct history *h = open_rw();
	char err[512], path[400];
	struct stat st;

	put(h, 1, "alice", 1001, "train", 1000, "/pfs/a");
	history_close(h);
	snprintf(path, sizeof(path), "%s/CURRENT", dbdir);
	ck_assert_int_eq(unlink(path), 0);
	ck_assert_ptr_null(
	    history_open(dbdir, HISTORY_READ_WRITE, err, sizeof(err)));
	ck_assert_ptr_nonnull(strstr(err, "no CURRENT"));
	ck_assert_int_ne(stat(path, &st), 0); /* nothing created */
}
END_TEST

static Suite *history_suite(void)
{
	Suite *s = suite_create("history");
	TCase *tc = tcase_create("rocksdb");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_put_get_list);
	tcase_add_test(tc, test_queries);
	tcase_add_test(tc, test_replace_same_job);
	tcase_add_test(tc, test_batch_all_or_nothing);
	tcase_add_test(tc, test_expire);
	tcase_add_test(tc, test_concurrent_filers);
	tcase_add_test(tc, test_facts_pack);
	tcase_add_test(tc, test_get_exact);
	tcase_add_test(tc, test_survives_reopen_and_read_only);
	tcase_add_test(tc, test_damaged_current_then_repair);
	tcase_add_test(tc, test_damaged_manifest_then_repair);
	tcase_add_test(tc, test_no_current_not_initialized_over);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return check_run(history_suite());
}
