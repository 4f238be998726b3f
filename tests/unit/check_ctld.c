/* check_ctld.c - iostagectld's library without the network: who may read
 * all (authz), the ops' authorization through the dispatch (ping,
 * history_get/list, recommend, file), `file` idempotent by (job, node) and
 * root only, and --import (idempotent, never replacing the service's own
 * records, refusing the service's own database). */
#include <grp.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <check.h>

#include "common/base/log.h"
#include "common/config/conf.h"
#include "common/history/history.h"
#include "common/net/ctlclient.h"
#include "common/net/peernet.h"
#include "ctld/authz.h"
#include "ctld/filing/import.h"
#include "ctld/metrics.h"
#include "ctld/sched/bw_ops.h"
#include "ctld/sched/joballoc.h"
#include "ctld/service.h"
#include "tests/unit/check_run.h"
#include "tests/unit/testmunge.h"

static bool have_munge;

static char tmp[256];
static struct conf conf;
static uid_t nob_uid;
static gid_t nob_gid;
static char nob_name[64], nob_group[64];

static void setup(void)
{
	struct passwd *pw = getpwnam("nobody");
	struct group *gr;

	ck_assert_ptr_nonnull(pw);
	nob_uid = pw->pw_uid;
	nob_gid = pw->pw_gid;
	snprintf(nob_name, sizeof(nob_name), "%s", pw->pw_name);
	gr = getgrgid(nob_gid);
	ck_assert_ptr_nonnull(gr);
	snprintf(nob_group, sizeof(nob_group), "%s", gr->gr_name);
	snprintf(tmp, sizeof(tmp), "/tmp/check_ctld.XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(tmp));
	conf_set_defaults(&conf);
	snprintf(conf.state_dir, sizeof(conf.state_dir), "%s/state", tmp);
	ck_assert_int_eq(mkdir(conf.state_dir, 0755), 0);
	snprintf(conf.tiers[0].name, sizeof(conf.tiers[0].name), "nvme");
	snprintf(conf.tiers[0].path, sizeof(conf.tiers[0].path), "%s", tmp);
	conf.ntiers = 1;
	log_init("check_ctld", false, LOG_LEVEL_ERROR);
}

static void teardown(void)
{
	char cmd[400];

	history_fini();
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmp);
	if (system(cmd) != 0)
		fprintf(stderr, "cannot remove %s\n", tmp);
}

static cJSON *rec(unsigned job, const char *user, unsigned uid,
		  const char *node, double end)
{
	char buf[2048];
	cJSON *r;

	snprintf(buf, sizeof(buf),
		 "{\"schema\":1,\"job\":%u,\"user\":\"%s\",\"uid\":%u,"
		 "\"job_name\":\"train\",\"node\":\"%s\",\"start\":%.3f,"
		 "\"end\":%.3f,\"state\":\"completed\",\"datasets\":[{\"name\":"
		 "\"d\",\"source\":\"/pfs/d\",\"tier\":\"nvme\",\"bytes\":1000,"
		 "\"files\":10,\"result\":\"hit\"}],\"outputs\":[],"
		 "\"phases\":[{\"name\":\"run\",\"seconds\":50}]}",
		 job, user, uid, node, end - 60, end);
	r = cJSON_Parse(buf);
	ck_assert_ptr_nonnull(r);
	return r;
}

static cJSON *file_req(unsigned job, const char *user, unsigned uid,
		       const char *node, double end)
{
	cJSON *req = cJSON_CreateObject(), *nodes;

	cJSON_AddStringToObject(req, "op", "file");
	cJSON_AddNumberToObject(req, "job", job);
	cJSON_AddStringToObject(req, "node", node);
	nodes = cJSON_AddArrayToObject(req, "nodes");
	cJSON_AddItemToArray(nodes, cJSON_CreateString(node));
	cJSON_AddItemToObject(req, "record", rec(job, user, uid, node, end));
	return req;
}

static struct ctld_caller root_c = { 0, 0, true, "test" };

static struct ctld_caller user_c(bool read_all)
{
	return (struct ctld_caller){ nob_uid, nob_gid, read_all, "test" };
}

/* The reply to OP {job: JOB} (or REQ when given) from C; "ok" in *ok. */
static cJSON *ask(const struct ctld_caller *c, const char *op, cJSON *req,
		  unsigned job, bool *ok)
{
	cJSON *r;

	if (!req) {
		req = cJSON_CreateObject();
		if (job)
			cJSON_AddNumberToObject(req, "job", job);
	}
	r = ctld_service_dispatch(&conf, c, op, req);
	cJSON_Delete(req);
	ck_assert_ptr_nonnull(r);
	*ok = cJSON_IsTrue(cJSON_GetObjectItem(r, "ok"));
	return r;
}

static const char *error_of(const cJSON *r)
{
	const cJSON *e = cJSON_GetObjectItem(r, "error");

	return cJSON_IsString(e) ? e->valuestring : "";
}

START_TEST(test_authz)
{
	ck_assert(authz_read_all(0, 0, NULL));
	ck_assert(authz_read_all(0, 0, "no-such-group-xyz"));
	ck_assert(!authz_read_all(nob_uid, nob_gid, NULL));
	ck_assert(!authz_read_all(nob_uid, nob_gid, ""));
	ck_assert(!authz_read_all(nob_uid, nob_gid, "no-such-group-xyz"));
	ck_assert(!authz_read_all(nob_uid, nob_gid, "root"));
	/* by the credential's group, and by the user's primary group */
	ck_assert(authz_read_all(nob_uid, nob_gid, nob_group));
	ck_assert(authz_read_all(nob_uid, 0, nob_group));
}
END_TEST

START_TEST(test_ping_unknown)
{
	struct ctld_caller u = user_c(false);
	bool ok;
	cJSON *r = ask(&u, "ping", NULL, 0, &ok);

	ck_assert(ok);
	ck_assert_str_eq(cJSON_GetObjectItem(r, "service")->valuestring,
			 "iostagectld");
	ck_assert_int_eq(cJSON_GetObjectItem(r, "uid")->valueint, (int)nob_uid);
	ck_assert(cJSON_IsFalse(cJSON_GetObjectItem(r, "read_all")));
	cJSON_Delete(r);
	r = ask(&u, "stage\x01", NULL, 0, &ok);
	ck_assert(!ok);
	ck_assert_ptr_nonnull(strstr(error_of(r), "unknown op 'stage?'"));
	cJSON_Delete(r);
	/* history_put is the node's op, not the service's */
	r = ask(&root_c, "history_put", NULL, 0, &ok);
	ck_assert(!ok);
	cJSON_Delete(r);
}
END_TEST

/* A stand-in for slurmctld: job 7 runs on n[1-2] as uid 4242, job 8 is
 * pending, any other is unknown. */
static int standin_jobs(uint32_t job, bool *running, uid_t *uid, cJSON *nodes,
			char *err, size_t errlen)
{
	if (job != 7 && job != 8) {
		snprintf(err, errlen, "Invalid job id specified");
		return -1;
	}
	*running = job == 7;
	*uid = 4242;
	if (job == 7) {
		cJSON_AddItemToArray(nodes, cJSON_CreateString("n1"));
		cJSON_AddItemToArray(nodes, cJSON_CreateString("n2"));
	}
	return 0;
}

/* job_nodes: root only, a job id, what Slurm says (running, uid, the
 * nodes), a job Slurm does not know refused, and no Slurm no answer. */
START_TEST(test_job_nodes)
{
	struct ctld_caller u = user_c(true);
	const cJSON *nodes;
	bool ok;
	cJSON *r;

	joballoc_set_source(NULL);
	r = ask(&root_c, "job_nodes", NULL, 7, &ok);
	ck_assert(!ok);
	ck_assert_msg(strstr(error_of(r), "no Slurm here to ask for job 7"),
		      "%s", error_of(r));
	cJSON_Delete(r);
	joballoc_set_source(standin_jobs);
	/* even an admin that reads all: nodes ask, users do not */
	r = ask(&u, "job_nodes", NULL, 7, &ok);
	ck_assert(!ok);
	ck_assert_ptr_nonnull(strstr(error_of(r), "permission denied"));
	cJSON_Delete(r);
	r = ask(&root_c, "job_nodes", NULL, 7, &ok);
	ck_assert_msg(ok, "%s", error_of(r));
	ck_assert(cJSON_IsTrue(cJSON_GetObjectItem(r, "running")));
	ck_assert_int_eq(cJSON_GetObjectItem(r, "uid")->valueint, 4242);
	ck_assert_int_eq(cJSON_GetObjectItem(r, "job")->valueint, 7);
	nodes = cJSON_GetObjectItem(r, "nodes");
	ck_assert_int_eq(cJSON_GetArraySize(nodes), 2);
	ck_assert_str_eq(cJSON_GetArrayItem(nodes, 1)->valuestring, "n2");
	cJSON_Delete(r);
	r = ask(&root_c, "job_nodes", NULL, 8, &ok);
	ck_assert(ok);
	ck_assert(cJSON_IsFalse(cJSON_GetObjectItem(r, "running")));
	ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItem(r, "nodes")),
			 0);
	cJSON_Delete(r);
	r = ask(&root_c, "job_nodes", NULL, 9, &ok);
	ck_assert(!ok);
	ck_assert_str_eq(error_of(r),
			 "job_nodes: job 9: Invalid job id specified");
	cJSON_Delete(r);
	r = ask(&root_c, "job_nodes", NULL, 0, &ok);
	ck_assert(!ok);
	ck_assert_ptr_nonnull(strstr(error_of(r), "'job' must be a job id"));
	cJSON_Delete(r);
	joballoc_set_source(NULL);
}
END_TEST

/* iostagectld's /metrics page: the service's basics (requests per op
 * counted as answered), placement and pre-staging, bandwidth. */
START_TEST(test_metrics_page)
{
	struct ctld_caller u = user_c(false);
	bool ok;
	cJSON *r = ask(&u, "ping", NULL, 0, &ok);
	size_t len = 0;
	char *t;

	cJSON_Delete(r);
	r = ask(&u, "nope", NULL, 0, &ok);
	cJSON_Delete(r);
	t = ctld_metrics_render(&len);
	ck_assert_ptr_nonnull(t);
	ck_assert_uint_eq(len, strlen(t));
	ck_assert_ptr_nonnull(strstr(t, "iostage_ctld_build_info{version=\""));
	ck_assert_ptr_nonnull(strstr(t,
				     "iostage_ctld_requests_total{op=\"ping\","
				     "result=\"ok\"} 1\n"));
	ck_assert_ptr_nonnull(
	    strstr(t, "iostage_ctld_requests_total{op=\"unknown\","
		      "result=\"declined\"} 1\n"));
	ck_assert_ptr_nonnull(
	    strstr(t, "# TYPE process_cpu_seconds_total counter\n"));
	ck_assert_ptr_nonnull(
	    strstr(t,
		   "iostage_ctld_placements_total{outcome=\"honoured\"} 0\n"));
	ck_assert_ptr_nonnull(
	    strstr(t, "iostage_ctld_prestage_bytes_total 0\n"));
	ck_assert_ptr_nonnull(
	    strstr(t, "iostage_ctld_stage_bandwidth_budget_bytes_per_second "));
	free(t);
}
END_TEST

/* stage_bw: root only, a node name, shares that sum within the budget;
 * stage_bw_status for anyone. */
static cJSON *bw_req(const char *node, int want)
{
	cJSON *req = cJSON_CreateObject();

	if (node)
		cJSON_AddStringToObject(req, "node", node);
	if (want >= 0)
		cJSON_AddBoolToObject(req, "want", want);
	return req;
}

static double num_of(const cJSON *r, const char *k)
{
	return cJSON_GetNumberValue(cJSON_GetObjectItem(r, k));
}

START_TEST(test_stage_bw)
{
	struct ctld_caller u = user_c(true);
	bool ok;
	cJSON *r;

	conf.stage_bandwidth = 90 << 20;
	ctld_bw_init(&conf);
	/* Not root: refused, even for a reader of everything. */
	r = ask(&u, "stage_bw", bw_req("n1", 1), 0, &ok);
	ck_assert(!ok);
	ck_assert_ptr_nonnull(strstr(error_of(r), "only root"));
	cJSON_Delete(r);
	r = ask(&root_c, "stage_bw", bw_req("../x", 1), 0, &ok);
	ck_assert(!ok);
	ck_assert_ptr_nonnull(strstr(error_of(r), "'node'"));
	cJSON_Delete(r);
	r = ask(&root_c, "stage_bw", bw_req(NULL, 1), 0, &ok);
	ck_assert(!ok);
	cJSON_Delete(r);
	/* n1 alone: everything; n2: what is free (nothing) until n1
	 * renews. */
	r = ask(&root_c, "stage_bw", bw_req("n1", 1), 0, &ok);
	ck_assert(ok);
	ck_assert(num_of(r, "grant") == 90 << 20);
	ck_assert(num_of(r, "budget") == 90 << 20);
	ck_assert(num_of(r, "renew_ms") > 0);
	cJSON_Delete(r);
	r = ask(&root_c, "stage_bw", bw_req("n2", 1), 0, &ok);
	ck_assert(ok);
	ck_assert(num_of(r, "grant") == 0);
	cJSON_Delete(r);
	r = ask(&root_c, "stage_bw", bw_req("n1", -1), 0,
		&ok); /* want: default true */
	ck_assert(ok);
	ck_assert(num_of(r, "grant") == 45 << 20);
	cJSON_Delete(r);
	r = ask(&u, "stage_bw_status", NULL, 0, &ok);
	ck_assert(ok);
	ck_assert(num_of(r, "granted") == 45 << 20);
	ck_assert(num_of(r, "nodes") == 2);
	ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItem(r, "leases")),
			 2);
	cJSON_Delete(r);
	r = ask(&root_c, "stage_bw", bw_req("n1", 0), 0, &ok);
	ck_assert(ok);
	ck_assert(num_of(r, "grant") == 0);
	cJSON_Delete(r);
	/* A node only pre-staging (weight 1) beside n2 (no weight: a
	 * starting job's 4) has a fifth as its share. */
	{
		cJSON *req = bw_req("n3", 1);

		cJSON_AddNumberToObject(req, "weight", 1);
		r = ask(&root_c, "stage_bw", req, 0, &ok);
		ck_assert(ok);
		ck_assert(num_of(r, "grant") == 18 << 20);
		cJSON_Delete(r);
		req = bw_req("n3", 1);
		cJSON_AddNumberToObject(req, "weight", 17);
		r = ask(&root_c, "stage_bw", req, 0, &ok);
		ck_assert(!ok);
		ck_assert_ptr_nonnull(strstr(error_of(r), "'weight'"));
		cJSON_Delete(r);
	}
	/* No budget configured: grant 0, budget 0 (unbounded). */
	conf.stage_bandwidth = 0;
	ctld_bw_init(&conf);
	r = ask(&root_c, "stage_bw", bw_req("n1", 1), 0, &ok);
	ck_assert(ok);
	ck_assert(num_of(r, "budget") == 0);
	ck_assert(num_of(r, "grant") == 0);
	cJSON_Delete(r);
}
END_TEST

START_TEST(test_file_idempotent)
{
	double now = (double)time(NULL);
	bool ok;
	cJSON *r;

	history_init(&conf);
	r = ask(&root_c, "file", file_req(7, "root", 0, "n1", now), 0, &ok);
	ck_assert_msg(ok, "%s", error_of(r));
	ck_assert(cJSON_IsTrue(cJSON_GetObjectItem(r, "filed")));
	ck_assert(cJSON_IsFalse(cJSON_GetObjectItem(r, "duplicate")));
	cJSON_Delete(r);
	/* the node retries: the same (job, node) is a duplicate */
	r = ask(&root_c, "file", file_req(7, "root", 0, "n1", now), 0, &ok);
	ck_assert(ok);
	ck_assert(cJSON_IsFalse(cJSON_GetObjectItem(r, "filed")));
	ck_assert(cJSON_IsTrue(cJSON_GetObjectItem(r, "duplicate")));
	cJSON_Delete(r);
	/* a later job with the same id (ids wrap) is filed over it */
	r = ask(&root_c, "file", file_req(7, "root", 0, "n2", now + 10), 0,
		&ok);
	ck_assert(ok);
	ck_assert(cJSON_IsTrue(cJSON_GetObjectItem(r, "filed")));
	cJSON_Delete(r);
	r = ask(&root_c, "history_get", NULL, 7, &ok);
	ck_assert(ok);
	ck_assert_str_eq(cJSON_GetObjectItem(cJSON_GetObjectItem(r, "record"),
					     "node")
			     ->valuestring,
			 "n2");
	cJSON_Delete(r);
}
END_TEST

START_TEST(test_file_refused)
{
	struct ctld_caller adm = user_c(true);
	double now = (double)time(NULL);
	bool ok;
	cJSON *r, *req;

	history_init(&conf);
	/* only root files, an admin group member neither */
	r = ask(&adm, "file", file_req(8, nob_name, nob_uid, "n1", now), 0,
		&ok);
	ck_assert(!ok);
	ck_assert_ptr_nonnull(strstr(error_of(r), "permission denied: only "
						  "root"));
	cJSON_Delete(r);
	r = ask(&root_c, "history_get", NULL, 8, &ok);
	ck_assert(!ok); /* nothing was filed */
	cJSON_Delete(r);
	/* bad fields, one line each */
	req = file_req(9, "root", 0, "n1", now);
	cJSON_ReplaceItemInObject(req, "node", cJSON_CreateString("../x"));
	r = ask(&root_c, "file", req, 0, &ok);
	ck_assert(!ok);
	ck_assert_str_eq(error_of(r), "key 'node': missing or not a node name");
	cJSON_Delete(r);
	req = file_req(9, "root", 0, "n1", now);
	cJSON_ReplaceItemInObject(req, "job", cJSON_CreateNumber(10));
	r = ask(&root_c, "file", req, 0, &ok);
	ck_assert(!ok);
	ck_assert_str_eq(error_of(r), "key 'record': its job is not 10");
	cJSON_Delete(r);
	req = file_req(9, "root", 0, "n1", now);
	cJSON_ReplaceItemInObject(cJSON_GetObjectItem(req, "record"), "node",
				  cJSON_CreateString("n3"));
	r = ask(&root_c, "file", req, 0, &ok);
	ck_assert(!ok);
	ck_assert_ptr_nonnull(strstr(error_of(r), "its node is another"));
	cJSON_Delete(r);
	req = file_req(9, "root", 0, "n1", now);
	cJSON_ReplaceItemInArray(cJSON_GetObjectItem(req, "nodes"), 0,
				 cJSON_CreateString("n2"));
	r = ask(&root_c, "file", req, 0, &ok);
	ck_assert(!ok);
	ck_assert_str_eq(error_of(r), "key 'nodes': does not name node 'n1'");
	cJSON_Delete(r);
	req = file_req(9, "root", 0, "n1", now);
	cJSON_AddItemToArray(cJSON_GetObjectItem(req, "nodes"),
			     cJSON_CreateString("n2"));
	/* A multi-node job's part: kept until the others come
	 * (ctld/filing/partstore.c, check_partstore), not filed yet. */
	r = ask(&root_c, "file", req, 0, &ok);
	ck_assert(ok);
	ck_assert(cJSON_IsFalse(cJSON_GetObjectItem(r, "filed")));
	ck_assert(cJSON_IsFalse(cJSON_GetObjectItem(r, "duplicate")));
	ck_assert_int_eq(cJSON_GetObjectItem(r, "parts")->valueint, 1);
	ck_assert_int_eq(cJSON_GetObjectItem(r, "nodes")->valueint, 2);
	cJSON_Delete(r);
	req = file_req(9, "root", 0, "n1", now);
	cJSON_DeleteItemFromObject(cJSON_GetObjectItem(req, "record"), "user");
	r = ask(&root_c, "file", req, 0, &ok);
	ck_assert(!ok);
	cJSON_Delete(r);
}
END_TEST

START_TEST(test_read_authz)
{
	struct ctld_caller u = user_c(false), adm = user_c(true);
	double now = (double)time(NULL);
	bool ok;
	cJSON *r, *req;

	history_init(&conf);
	r = ask(&root_c, "file", file_req(11, "root", 0, "n1", now), 0, &ok);
	ck_assert(ok);
	cJSON_Delete(r);
	r = ask(&root_c, "file", file_req(12, nob_name, nob_uid, "n1", now), 0,
		&ok);
	ck_assert(ok);
	cJSON_Delete(r);
	/* a user: their own job, not root's (answered like a missing one) */
	r = ask(&u, "history_get", NULL, 12, &ok);
	ck_assert(ok);
	cJSON_Delete(r);
	r = ask(&u, "history_get", NULL, 11, &ok);
	ck_assert(!ok);
	ck_assert_str_eq(error_of(r), "job 11: not in your history");
	cJSON_Delete(r);
	r = ask(&u, "history_list", NULL, 0, &ok);
	ck_assert(ok);
	ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItem(r, "records")),
			 1);
	cJSON_Delete(r);
	req = cJSON_CreateObject();
	cJSON_AddStringToObject(req, "user", "root");
	r = ask(&u, "history_list", req, 0, &ok);
	ck_assert(!ok);
	ck_assert_ptr_nonnull(strstr(error_of(r), "only root or AdminGroup "
						  "may read"));
	cJSON_Delete(r);
	req = cJSON_CreateObject();
	cJSON_AddStringToObject(req, "user", "root");
	r = ask(&u, "recommend", req, 0, &ok);
	ck_assert(!ok);
	cJSON_Delete(r);
	/* the admin group reads everyone's */
	r = ask(&adm, "history_get", NULL, 11, &ok);
	ck_assert(ok);
	cJSON_Delete(r);
	r = ask(&adm, "history_list", NULL, 0, &ok);
	ck_assert(ok);
	ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItem(r, "records")),
			 2);
	cJSON_Delete(r);
	req = cJSON_CreateObject();
	cJSON_AddStringToObject(req, "user", "root");
	r = ask(&adm, "recommend", req, 0, &ok);
	ck_assert_msg(ok, "%s", error_of(r));
	ck_assert_str_eq(cJSON_GetObjectItem(cJSON_GetObjectItem(r, "query"),
					     "user")
			     ->valuestring,
			 "root");
	cJSON_Delete(r);
}
END_TEST

/* An old node history with jobs 1..N (root's), ended NOW. */
static void node_history(const char *dir, unsigned from, unsigned n,
			 const char *node)
{
	char err[512];
	struct history *h = history_open(dir, HISTORY_READ_WRITE, err,
					 sizeof(err));
	double now = (double)time(NULL);

	ck_assert_msg(h != NULL, "%s", err);
	for (unsigned j = from; j < from + n; j++) {
		cJSON *r = rec(j, "root", 0, node, now - j);

		ck_assert_msg(history_put(h, r, 0, err, sizeof(err)) == 0, "%s",
			      err);
		cJSON_Delete(r);
	}
	history_close(h);
}

START_TEST(test_import)
{
	char src[300], dst[300], err[512];
	struct ctld_import_stats st;
	struct history *h;
	cJSON *r;

	/* a node's StateDir (history/ inside) with 600 jobs: three batches */
	snprintf(src, sizeof(src), "%s/n1-state", tmp);
	ck_assert_int_eq(mkdir(src, 0755), 0);
	snprintf(dst, sizeof(dst), "%s/n1-state/history", tmp);
	node_history(dst, 1, 600, "n1");
	snprintf(dst, sizeof(dst), "%s/state/history", tmp);
	h = history_open(dst, HISTORY_READ_WRITE, err, sizeof(err));
	ck_assert_msg(h != NULL, "%s", err);
	/* the service already holds job 5, filed by n9: it stays */
	r = rec(5, "root", 0, "n9", (double)time(NULL));
	ck_assert_int_eq(history_put(h, r, 0, err, sizeof(err)), 0);
	cJSON_Delete(r);
	ck_assert_msg(ctld_import(h, dst, src, &st, err, sizeof(err)) == 0,
		      "%s", err);
	ck_assert_uint_eq(st.imported, 599);
	ck_assert_uint_eq(st.present, 1);
	ck_assert_uint_eq(st.unreadable, 0);
	ck_assert_int_eq(history_count(h, err, sizeof(err)), 600);
	r = history_get(h, 5, err, sizeof(err));
	ck_assert_str_eq(cJSON_GetObjectItem(r, "node")->valuestring, "n9");
	cJSON_Delete(r);
	r = history_get(h, 600, err, sizeof(err));
	ck_assert_ptr_nonnull(r);
	ck_assert_ptr_nonnull(cJSON_GetObjectItem(r, "phases"));
	cJSON_Delete(r);
	/* again (the history directory itself this time): nothing changes */
	snprintf(src, sizeof(src), "%s/n1-state/history", tmp);
	ck_assert_int_eq(ctld_import(h, dst, src, &st, err, sizeof(err)), 0);
	ck_assert_uint_eq(st.imported, 0);
	ck_assert_uint_eq(st.present, 600);
	ck_assert_int_eq(history_count(h, err, sizeof(err)), 600);
	/* the service's own database, a missing one */
	ck_assert_int_eq(ctld_import(h, dst, dst, &st, err, sizeof(err)), -1);
	ck_assert_ptr_nonnull(strstr(err, "the service's own history"));
	snprintf(src, sizeof(src), "%s/nothing", tmp);
	ck_assert_int_eq(ctld_import(h, dst, src, &st, err, sizeof(err)), -1);
	ck_assert_ptr_null(strchr(err, '\n'));
	history_close(h);
}
END_TEST

/* A decoder given to the service (struct ctld_serve_ctx): "ok:PAYLOAD"
 * is vouched for as nobody, anything else is a replay. */
static enum mauth_status test_decode(const char *socket, const char *cred,
				     char **ret_payload, size_t *ret_len,
				     uid_t *ret_uid, gid_t *ret_gid, char *err,
				     size_t errlen)
{
	(void)socket;
	if (strncmp(cred, "ok:", 3)) {
		snprintf(err, errlen, "credential replayed");
		return MAUTH_REPLAYED;
	}
	*ret_payload = strdup(cred + 3);
	ck_assert_ptr_nonnull(*ret_payload);
	*ret_len = strlen(cred + 3);
	*ret_uid = nob_uid;
	*ret_gid = nob_gid;
	return MAUTH_OK;
}

/* The reply of ctld_service_serve to LINE (NULL: the peer closes before
 * sending anything) on a socket pair, with the test's decoder. */
static cJSON *serve_line(const char *line)
{
	struct ctld_serve_ctx ctx = { .conf = &conf, .decode = test_decode };
	int sv[2];
	cJSON *r;

	ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	if (line)
		ck_assert_int_eq(write(sv[1], line, strlen(line)),
				 (ssize_t)strlen(line));
	shutdown(sv[1], SHUT_WR);
	r = ctld_service_serve(&ctx, sv[0]);
	close(sv[0]);
	close(sv[1]);
	ck_assert_ptr_nonnull(r);
	return r;
}

/* One connection served as a connection thread serves it, with the
 * credential's decoder given in the context (no munged): the caller is
 * whom the decoder says, and a refused credential, a line that is not an
 * envelope and a peer that sends nothing are refused before any op, and
 * counted as such. */
START_TEST(test_serve_fd)
{
	struct ctld_op_count c[32];
	uint64_t refused0, refused1;
	cJSON *r;

	ctld_service_counts(c, 32, &refused0);
	r = serve_line("{\"cred\":\"ok:{\\\"op\\\":\\\"ping\\\"}\"}\n");
	ck_assert_msg(cJSON_IsTrue(cJSON_GetObjectItem(r, "ok")), "%s",
		      error_of(r));
	ck_assert_int_eq(cJSON_GetObjectItem(r, "uid")->valueint, (int)nob_uid);
	cJSON_Delete(r);
	r = serve_line("{\"cred\":\"MUNGE:x\"}\n");
	ck_assert(cJSON_IsFalse(cJSON_GetObjectItem(r, "ok")));
	ck_assert(cJSON_IsTrue(cJSON_GetObjectItem(r, "refused")));
	ck_assert_str_eq(error_of(r), "credential replayed");
	cJSON_Delete(r);
	r = serve_line("{\"op\":\"ping\"}\n");
	ck_assert(cJSON_IsTrue(cJSON_GetObjectItem(r, "refused")));
	ck_assert_ptr_nonnull(strstr(error_of(r), "malformed request"));
	cJSON_Delete(r);
	r = serve_line(NULL);
	ck_assert(cJSON_IsTrue(cJSON_GetObjectItem(r, "refused")));
	ck_assert_str_eq(error_of(r), "connection closed");
	cJSON_Delete(r);
	ctld_service_counts(c, 32, &refused1);
	ck_assert_uint_eq(refused1 - refused0, 3);
}
END_TEST

/* The whole path: ctl_request() to the service on loopback, with a
 * private munged: answered, filed, and a replayed line refused. */
START_TEST(test_over_tcp)
{
	struct conf client;
	char err[512], *line, *text;
	cJSON *req, *reply = NULL;
	int fd;

	if (!have_munge)
		return;
	snprintf(conf.controller_host, sizeof(conf.controller_host),
		 "127.0.0.1");
	conf.controller_port = 0; /* any free port */
	snprintf(conf.munge_socket, sizeof(conf.munge_socket), "%.*s",
		 (int)sizeof(conf.munge_socket) - 1, testmunge_socket);
	history_init(&conf);
	ck_assert_msg(ctld_service_listen(&conf, err, sizeof(err)) == 0, "%s",
		      err);
	ck_assert_msg(ctld_service_start(err, sizeof(err)) == 0, "%s", err);
	client = conf;
	client.controller_port = ctld_service_port();
	req = file_req(21, "root", getuid(), "n1", (double)time(NULL));
	ck_assert_msg(ctl_request(&client, req, &reply, err, sizeof(err)) == 0,
		      "%s", err);
	ck_assert_msg(cJSON_IsTrue(cJSON_GetObjectItem(reply, "ok")), "%s",
		      error_of(reply));
	ck_assert(cJSON_IsTrue(cJSON_GetObjectItem(reply, "filed")) ==
		  (getuid() == 0));
	cJSON_Delete(reply);
	cJSON_Delete(req);
	/* the same credentialled line twice: the second is refused */
	req = cJSON_CreateObject();
	cJSON_AddStringToObject(req, "op", "ping");
	line = peernet_request_line(testmunge_socket, req, err, sizeof(err));
	ck_assert_ptr_nonnull(line);
	for (int i = 0; i < 2; i++) {
		fd = peernet_connect("127.0.0.1", client.controller_port, 2000,
				     err, sizeof(err));
		ck_assert_int_ge(fd, 0);
		ck_assert_int_eq(write(fd, line, strlen(line)),
				 (ssize_t)strlen(line));
		ck_assert_int_eq(write(fd, "\n", 1), 1);
		text = peernet_read_line(fd, 5000);
		close(fd);
		ck_assert_ptr_nonnull(text);
		reply = cJSON_Parse(text);
		free(text);
		ck_assert(cJSON_IsTrue(cJSON_GetObjectItem(reply, "ok")) ==
			  (i == 0));
		if (i == 1) {
			ck_assert(cJSON_IsTrue(
			    cJSON_GetObjectItem(reply, "refused")));
			ck_assert_ptr_nonnull(
			    strstr(error_of(reply), "replayed"));
		}
		cJSON_Delete(reply);
	}
	free(line);
	cJSON_Delete(req);
	ck_assert(ctld_service_stop());
}
END_TEST

int main(void)
{
	Suite *s = suite_create("ctld");
	TCase *tc = tcase_create("core");
	int rc;

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_authz);
	tcase_add_test(tc, test_ping_unknown);
	tcase_add_test(tc, test_job_nodes);
	tcase_add_test(tc, test_metrics_page);
	tcase_add_test(tc, test_stage_bw);
	tcase_add_test(tc, test_file_idempotent);
	tcase_add_test(tc, test_file_refused);
	tcase_add_test(tc, test_read_authz);
	tcase_add_test(tc, test_import);
	tcase_add_test(tc, test_serve_fd);
	have_munge = testmunge_start() == 0;
	tcase_add_root_test(tc, test_over_tcp);
	suite_add_tcase(s, tc);
	rc = check_run(s);
	if (have_munge)
		testmunge_stop();
	return rc;
}
