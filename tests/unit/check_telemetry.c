/* check_telemetry.c - unit tests for daemon/telemetry/telemetry*.c: a job's
 * record through its life (staged, a task, a marked sub-phase, finished),
 * its file in StateDir/telemetry, what a new telemetry over the same
 * directory reads back (a live record resumed, old ones removed), who may
 * read it, and the limits. No root, no Slurm, no socket: the job table is
 * iostaged's own (daemon/jobs.c) over a StateDir in a temporary directory,
 * the task is this test process.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cJSON.h>
#include <check.h>

#include "common/base/log.h"
#include "common/base/smallfile.h"
#include "common/config/conf.h"
#include "common/config/profile.h"
#include "common/fs/rmtree.h"
#include "daemon/agent.h"
#include "daemon/jobs.h"
#include "daemon/telemetry/telemetry.h"
#include "tests/unit/check_run.h"
#include "tests/unit/tmp_fixture.h"

#define OWNER 1000 /* the jobs' user */

static char root[64];
static struct conf conf;
/* The agent the records belong to: its conf, and a job table for the
 * tests that need one (setup_jobs). */
static struct agent agent;

static void mkdir_in(char *path, size_t len, const char *name)
{
	snprintf(path, len, "%s/%s", root, name);
	ck_assert_int_eq(mkdir(path, 0755), 0);
}

/* A StateDir and a tier in a temporary directory. */
static void setup(void)
{
	char path[CONF_PATH_MAX];

	log_init("check_telemetry", false, LOG_LEVEL_ERROR);
	snprintf(root, sizeof(root), "/tmp/check_telemetry.XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(root));
	conf_set_defaults(&conf);
	mkdir_in(path, sizeof(path), "tier");
	snprintf(conf.tiers[0].name, sizeof(conf.tiers[0].name), "nvme");
	snprintf(conf.tiers[0].path, sizeof(conf.tiers[0].path), "%s", path);
	conf.ntiers = 1;
	mkdir_in(path, sizeof(path), "state");
	snprintf(conf.state_dir, sizeof(conf.state_dir), "%s", path);
	snprintf(conf.socket_path, sizeof(conf.socket_path), "%s/sock", root);
	snprintf(conf.node_name, sizeof(conf.node_name), "node1");
	conf.telemetry_interval_ms = 3600 * 1000; /* samples only on events */
	memset(&agent, 0, sizeof(agent));
	agent.conf = &conf;
}

/* And the agent's job table over them, StateDir owned by the test's uid
 * (root's in iostaged). */
static void setup_jobs(void)
{
	char err[CONF_ERR_MAX];

	setup();
	agent.jobs = jobs_create(&agent, getuid(), err, sizeof(err));
	ck_assert_msg(agent.jobs != NULL, "%s", err);
	ck_assert_msg(jobs_load(agent.jobs, err, sizeof(err)) == 0, "%s", err);
}

static void teardown(void)
{
	char err[256];

	jobs_destroy(agent.jobs);
	agent.jobs = NULL;
	ck_assert_msg(tmp_remove(root, err, sizeof(err)) == 0, "%s", err);
}

/* Job ID of OWNER, staged (an empty profile), in the table. */
static void staged_job(uint32_t id)
{
	char err[CONF_ERR_MAX];
	struct profile *p;
	struct job *job, *old = NULL;

	p = profile_parse_json("{\"datasets\":[]}", "test", err, sizeof(err));
	ck_assert_msg(p != NULL, "%s", err);
	ck_assert_msg(profile_normalize(p, &conf, err, sizeof(err)) == 0, "%s",
		      err);
	job = jobs_new_job(agent.jobs, id, OWNER, OWNER, "alice", p, err,
			   sizeof(err));
	ck_assert_msg(job != NULL, "%s", err);
	ck_assert_msg(jobs_insert(agent.jobs, job, &old, err, sizeof(err)) == 0,
		      "%s", err);
	jobs_staging_done(job, true, NULL);
	jobs_put(job);
}

static struct telemetry *tel_new(void)
{
	char err[CONF_ERR_MAX];
	struct telemetry *tel = telemetry_create(&agent, &conf, err,
						 sizeof(err));

	ck_assert_msg(tel != NULL, "%s", err);
	return tel;
}

/* This process as task 0 of job ID. */
static void register_self(struct telemetry *tel, uint32_t id)
{
	struct telemetry_task t = { .pid = getpid(),
				    .step = 0,
				    .rank = 0,
				    .local_rank = 0,
				    .identity = "slurm",
				    .node = "node1",
				    .job_name = "train" };
	char err[CONF_ERR_MAX];

	ck_assert_msg(telemetry_task_register(tel, id, &t, err, sizeof(err)) ==
			  0,
		      "%s", err);
}

static int marker(struct telemetry *tel, uint32_t id, const char *name,
		  bool begin, double ts, char *err, size_t errlen)
{
	struct telemetry_task t = { .pid = getpid(),
				    .step = 0,
				    .rank = 3,
				    .local_rank = 0,
				    .identity = "pmix",
				    .node = "node1" };

	return telemetry_phase(tel, id, OWNER, getpid(), name, begin, ts, &t,
			       err, errlen);
}

/* The phase NAME of record REC, or NULL. */
static const cJSON *phase(const cJSON *rec, const char *name)
{
	const cJSON *ph;

	cJSON_ArrayForEach(ph,
			   cJSON_GetObjectItemCaseSensitive(rec, "phases")) {
		const cJSON *n = cJSON_GetObjectItemCaseSensitive(ph, "name");

		if (cJSON_IsString(n) && !strcmp(n->valuestring, name))
			return ph;
	}
	return NULL;
}

static const char *sval(const cJSON *o, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);

	return cJSON_IsString(v) ? v->valuestring : NULL;
}

static double nval(const cJSON *o, const char *key)
{
	return cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(o, key));
}

static bool has(const cJSON *o, const char *key)
{
	return cJSON_GetObjectItemCaseSensitive(o, key) != NULL;
}

static cJSON *record_file(uint32_t id)
{
	char path[CONF_PATH_MAX + 64], reason[128], *text;
	cJSON *o;

	snprintf(path, sizeof(path), "%s/telemetry/%u.json", conf.state_dir,
		 id);
	text = smallfile_read(path, 1 << 20, reason, sizeof(reason));
	if (!text)
		return NULL;
	o = cJSON_Parse(text);
	free(text);
	return o;
}

static void put_file(const char *name, const char *text, time_t mtime)
{
	char path[CONF_PATH_MAX + 64];
	struct timespec ts[2] = { { mtime, 0 }, { mtime, 0 } };
	int fd;

	snprintf(path, sizeof(path), "%s/telemetry/%s", conf.state_dir, name);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, text, strlen(text)), (int)strlen(text));
	close(fd);
	ck_assert_int_eq(utimensat(AT_FDCWD, path, ts, 0), 0);
}

static bool exists(const char *name)
{
	char path[CONF_PATH_MAX + 64];

	snprintf(path, sizeof(path), "%s/telemetry/%s", conf.state_dir, name);
	return access(path, F_OK) == 0;
}

/* Begin, a task, a marked sub-phase, finish: the record says each, and
 * the finished one is on disk and answered from there. */
START_TEST(test_record_life)
{
	char err[CONF_ERR_MAX];
	struct telemetry *tel;
	cJSON *rec, *disk;
	const cJSON *run, *load, *procs;
	double t0 = (double)time(NULL);

	staged_job(42);
	tel = tel_new();
	register_self(tel, 42);
	ck_assert_int_eq(marker(tel, 42, "load", true, t0, err, sizeof(err)),
			 0);

	rec = telemetry_record(tel, 42, OWNER, err, sizeof(err));
	ck_assert_msg(rec != NULL, "%s", err);
	ck_assert_str_eq(sval(rec, "user"), "alice");
	ck_assert_str_eq(sval(rec, "job_name"), "train");
	ck_assert_str_eq(sval(rec, "node"), "node1");
	ck_assert(!has(rec, "end"));
	ck_assert_ptr_nonnull(phase(rec, "stage_in"));
	run = phase(rec, "run");
	ck_assert_ptr_nonnull(run);
	ck_assert(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(run, "live")));
	load = phase(rec, "load");
	ck_assert_ptr_nonnull(load);
	ck_assert_str_eq(sval(load, "parent"), "run");
	ck_assert_str_eq(sval(load, "source"), "marker");
	procs = cJSON_GetObjectItemCaseSensitive(rec, "processes");
	ck_assert_int_eq(cJSON_GetArraySize(procs), 1);
	ck_assert_int_eq((int)nval(cJSON_GetArrayItem(procs, 0), "pid"),
			 (int)getpid());
	/* the PMIx identity the marker found replaces Slurm's */
	ck_assert_str_eq(sval(cJSON_GetArrayItem(procs, 0), "identity"),
			 "pmix");
	ck_assert_int_eq((int)nval(cJSON_GetArrayItem(procs, 0), "rank"), 3);
	cJSON_Delete(rec);

	ck_assert_int_eq(marker(tel, 42, "load", false, t0 + 2, err,
				sizeof(err)),
			 0);
	rec = telemetry_finish_job(tel, 42);
	ck_assert_ptr_nonnull(rec);
	ck_assert(has(rec, "end"));
	ck_assert_str_eq(sval(rec, "state"), "completed");
	run = phase(rec, "run");
	ck_assert_ptr_nonnull(run);
	ck_assert(!has(run, "live"));
	load = phase(rec, "load");
	ck_assert_ptr_nonnull(load);
	ck_assert(nval(load, "end") == t0 + 2);
	ck_assert(nval(load, "seconds") == 2);
	ck_assert_ptr_nonnull(phase(rec, "stage_out"));

	/* on disk as returned */
	disk = record_file(42);
	ck_assert_ptr_nonnull(disk);
	ck_assert(nval(disk, "end") == nval(rec, "end"));
	cJSON_Delete(disk);
	cJSON_Delete(rec);

	/* finished: a query is answered from the file, nothing runs on */
	rec = telemetry_record(tel, 42, OWNER, err, sizeof(err));
	ck_assert_msg(rec != NULL, "%s", err);
	ck_assert(has(rec, "end"));
	cJSON_Delete(rec);
	ck_assert_int_eq(marker(tel, 42, "save", true, t0, err, sizeof(err)),
			 -1);
	ck_assert_ptr_nonnull(strstr(err, "already finished"));
	/* a finish asked again (the Epilog retried) reads it back */
	rec = telemetry_finish_job(tel, 42);
	ck_assert_ptr_nonnull(rec);
	ck_assert(has(rec, "end"));
	cJSON_Delete(rec);
	telemetry_destroy(tel);
}
END_TEST

/* A user reads only their own jobs' records; root reads all. */
START_TEST(test_record_owner_only)
{
	char err[CONF_ERR_MAX];
	struct telemetry *tel;
	cJSON *rec;

	staged_job(43);
	tel = tel_new();
	rec = telemetry_record(tel, 43, OWNER + 1, err, sizeof(err));
	ck_assert_ptr_null(rec);
	ck_assert_ptr_nonnull(strstr(err, "permission denied"));
	rec = telemetry_record(tel, 43, 0, err, sizeof(err));
	ck_assert_ptr_nonnull(rec);
	cJSON_Delete(rec);
	/* and after finish, from the file */
	cJSON_Delete(telemetry_finish_job(tel, 43));
	rec = telemetry_record(tel, 43, OWNER + 1, err, sizeof(err));
	ck_assert_ptr_null(rec);
	ck_assert_ptr_nonnull(strstr(err, "permission denied"));
	telemetry_destroy(tel);
}
END_TEST

/* A live record is written when telemetry stops and resumed by the next
 * one over the same directory (the restart of iostaged): its sub-phase and
 * its task are still there, and it finishes as if nothing happened. */
START_TEST(test_restart_resumes)
{
	char err[CONF_ERR_MAX];
	struct telemetry *tel;
	cJSON *rec, *disk;
	double t0 = (double)time(NULL);

	staged_job(44);
	tel = tel_new();
	register_self(tel, 44);
	ck_assert_int_eq(marker(tel, 44, "load", true, t0, err, sizeof(err)),
			 0);
	ck_assert_int_eq(marker(tel, 44, "load", false, t0 + 1, err,
				sizeof(err)),
			 0);
	telemetry_destroy(tel);

	disk = record_file(44);
	ck_assert_ptr_nonnull(disk);
	ck_assert(!has(disk, "end")); /* live */
	ck_assert_ptr_nonnull(phase(disk, "load"));
	cJSON_Delete(disk);

	tel = tel_new();
	rec = telemetry_record(tel, 44, OWNER, err, sizeof(err));
	ck_assert_msg(rec != NULL, "%s", err);
	ck_assert(!has(rec, "end"));
	ck_assert_ptr_nonnull(phase(rec, "load"));
	ck_assert(nval(phase(rec, "load"), "end") == t0 + 1);
	ck_assert_int_eq(cJSON_GetArraySize(
			     cJSON_GetObjectItemCaseSensitive(rec,
							      "processes")),
			 1);
	cJSON_Delete(rec);
	rec = telemetry_finish_job(tel, 44);
	ck_assert_ptr_nonnull(rec);
	ck_assert(has(rec, "end"));
	ck_assert_ptr_nonnull(phase(rec, "load"));
	cJSON_Delete(rec);
	telemetry_destroy(tel);
}
END_TEST

/* At start: records older than TELEMETRY_KEEP_DAYS and temporary files
 * go; a recent finished record stays and is answered from disk; a
 * damaged file or one naming another job is left alone, not resumed. */
START_TEST(test_start_cleans_and_keeps)
{
	char path[CONF_PATH_MAX + 16], err[CONF_ERR_MAX];
	time_t now = time(NULL), old = now - (TELEMETRY_KEEP_DAYS + 1) * 86400;
	struct telemetry *tel;
	cJSON *rec;

	snprintf(path, sizeof(path), "%s/telemetry", conf.state_dir);
	ck_assert_int_eq(mkdir(path, 0700), 0);
	put_file("7.json", "{\"job\":7,\"uid\":1000,\"end\":1}", old);
	put_file("8.json", "{\"job\":8,\"uid\":1000,\"start\":1,\"end\":2}",
		 now);
	put_file(".9.json.tmp", "{", now);
	put_file("10.json", "{\"job\":10,", now);
	put_file("11.json", "{\"job\":12,\"uid\":1000}", now);
	tel = tel_new();
	ck_assert(!exists("7.json"));
	ck_assert(!exists(".9.json.tmp"));
	ck_assert(exists("8.json"));
	ck_assert(exists("10.json"));
	rec = telemetry_record(tel, 8, OWNER, err, sizeof(err));
	ck_assert_msg(rec != NULL, "%s", err);
	ck_assert(nval(rec, "end") == 2);
	cJSON_Delete(rec);
	/* not resumed under the id its content claims */
	ck_assert_ptr_null(telemetry_record(tel, 12, 0, err, sizeof(err)));
	ck_assert_ptr_nonnull(strstr(err, "unknown job 12"));
	ck_assert_ptr_null(telemetry_record(tel, 10, 0, err, sizeof(err)));
	telemetry_destroy(tel);
}
END_TEST

/* Unknown jobs and an agent without telemetry. */
START_TEST(test_unknown_and_null)
{
	char err[CONF_ERR_MAX];
	struct telemetry_task t = { .pid = getpid(), .rank = -1 };
	struct telemetry *tel;

	ck_assert_ptr_null(telemetry_record(NULL, 1, 0, err, sizeof(err)));
	ck_assert_ptr_nonnull(strstr(err, "not running"));
	ck_assert_int_eq(telemetry_task_register(NULL, 1, &t, err, sizeof(err)),
			 -1);
	ck_assert_ptr_null(telemetry_finish_job(NULL, 1));
	telemetry_destroy(NULL);

	tel = tel_new();
	ck_assert_ptr_null(telemetry_record(tel, 999, 0, err, sizeof(err)));
	ck_assert_str_eq(err, "unknown job 999");
	ck_assert_int_eq(telemetry_task_exit(tel, 999, 1, err, sizeof(err)),
			 -1);
	ck_assert_ptr_null(telemetry_finish_job(tel, 999));
	/* a prestage id has no record */
	ck_assert_ptr_null(telemetry_finish_job(tel, JOBS_PRESTAGE_ID_MIN));

	telemetry_destroy(tel);
}
END_TEST

/* At most TELEMETRY_MARKS_MAX sub-phase names per record. */
START_TEST(test_phase_names_limit)
{
	char err[CONF_ERR_MAX], name[32];
	struct telemetry *tel = tel_new();
	double t0 = (double)time(NULL);
	int i;

	staged_job(45);
	for (i = 0; i < TELEMETRY_MARKS_MAX; i++) {
		snprintf(name, sizeof(name), "p%d", i);
		ck_assert_int_eq(marker(tel, 45, name, true, t0, err,
					sizeof(err)),
				 0);
	}
	ck_assert_int_eq(marker(tel, 45, "one_more", true, t0, err,
				sizeof(err)),
			 -1);
	ck_assert_ptr_nonnull(strstr(err, "too many phase names"));
	/* a name already there is still taken */
	ck_assert_int_eq(marker(tel, 45, "p0", false, t0, err, sizeof(err)), 0);
	telemetry_destroy(tel);
}
END_TEST

/* A live record left by a daemon that stopped (written by hand here, as
 * RECORDS.md describes it) is resumed from its file alone, and finishes:
 * its sub-phase and its ended process kept, "end" added, the file
 * rewritten. */
START_TEST(test_resume_from_file)
{
	char path[CONF_PATH_MAX + 16], err[CONF_ERR_MAX];
	struct telemetry *tel;
	cJSON *rec, *disk;

	snprintf(path, sizeof(path), "%s/telemetry", conf.state_dir);
	ck_assert_int_eq(mkdir(path, 0700), 0);
	put_file("20.json",
		 "{\"schema\":1,\"job\":20,\"user\":\"alice\",\"uid\":1000,"
		 "\"node\":\"node1\",\"state\":\"completed\",\"start\":100,"
		 "\"datasets\":[],\"outputs\":[],\"phases\":["
		 "{\"name\":\"run\",\"start\":110,\"bytes_source\":\"proc\","
		 "\"read_syscalls\":5},"
		 "{\"name\":\"load\",\"parent\":\"run\",\"source\":\"marker\","
		 "\"start\":111,\"end\":115,\"ranks\":[0,1]}],"
		 "\"processes\":[{\"pid\":1,\"start\":110,\"end\":120,"
		 "\"rchar\":7,\"node\":\"node1\",\"identity\":\"pmix\"}]}",
		 time(NULL));
	tel = tel_new();
	rec = telemetry_record(tel, 20, OWNER, err, sizeof(err));
	ck_assert_msg(rec != NULL, "%s", err);
	ck_assert(!has(rec, "end"));
	ck_assert_ptr_nonnull(phase(rec, "run"));
	ck_assert(nval(phase(rec, "run"), "start") == 110);
	ck_assert(nval(phase(rec, "load"), "end") == 115);
	ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(
			     phase(rec, "load"), "ranks")),
			 2);
	ck_assert_ptr_null(
	    telemetry_record(tel, 20, OWNER + 1, err, sizeof(err)));
	cJSON_Delete(rec);
	rec = telemetry_finish_job(tel, 20);
	ck_assert_ptr_nonnull(rec);
	ck_assert(has(rec, "end"));
	ck_assert(
	    nval(cJSON_GetArrayItem(
		     cJSON_GetObjectItemCaseSensitive(rec, "processes"), 0),
		 "end") == 120);
	disk = record_file(20);
	ck_assert_ptr_nonnull(disk);
	ck_assert(has(disk, "end"));
	ck_assert_ptr_nonnull(phase(disk, "load"));
	cJSON_Delete(disk);
	cJSON_Delete(rec);
	telemetry_destroy(tel);
}
END_TEST

/* Two telemetries over two StateDirs in one process: what one records,
 * the other does not have on disk. */
START_TEST(test_two_independent)
{
	char state2[CONF_PATH_MAX], err[CONF_ERR_MAX];
	struct conf conf2 = conf;
	struct agent agent2 = { .conf = &conf2 }; /* no job table */
	struct telemetry *a, *b;
	cJSON *rec;

	mkdir_in(state2, sizeof(state2), "state2");
	snprintf(conf2.state_dir, sizeof(conf2.state_dir), "%s", state2);
	staged_job(46);
	a = tel_new();
	b = telemetry_create(&agent2, &conf2, err, sizeof(err));
	ck_assert_msg(b != NULL, "%s", err);
	register_self(a, 46);
	rec = telemetry_finish_job(a, 46);
	ck_assert_ptr_nonnull(rec);
	cJSON_Delete(rec);
	ck_assert(exists("46.json"));
	snprintf(state2 + strlen(state2), sizeof(state2) - strlen(state2),
		 "/telemetry/46.json");
	ck_assert_int_ne(access(state2, F_OK), 0);
	telemetry_destroy(a);
	telemetry_destroy(b);
}
END_TEST

static Suite *telemetry_suite(void)
{
	Suite *s = suite_create("telemetry");
	TCase *tc = tcase_create("files");
	TCase *tj = tcase_create("jobs");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, test_start_cleans_and_keeps);
	tcase_add_test(tc, test_unknown_and_null);
	tcase_add_test(tc, test_resume_from_file);
	suite_add_tcase(s, tc);
	tcase_add_checked_fixture(tj, setup_jobs, teardown);
	tcase_set_timeout(tj, 30);
	tcase_add_test(tj, test_record_life);
	tcase_add_test(tj, test_record_owner_only);
	tcase_add_test(tj, test_restart_resumes);
	tcase_add_test(tj, test_phase_names_limit);
	tcase_add_test(tj, test_two_independent);
	suite_add_tcase(s, tj);
	return s;
}

int main(void)
{
	return check_run(telemetry_suite());
}
