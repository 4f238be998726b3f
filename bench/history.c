/* history.c - bench: the job history at scale, with the daemon's own code.
 *
 *   build/bench/history [-n JOBS] [-q QUERIES] [-b BATCH] [-d DIR] [-k]
 *
 * 1. Ingest JOBS synthetic job summaries (DLIO-shaped: 1,000 users x 10
 *    applications, a dataset each, counters, a checkpoint phase and an
 *    output) with history_put_many in WriteBatches of BATCH records, WAL
 *    on, no fsync per batch (bulk import); report jobs/s. Then the Epilog
 *    path for comparison: single records, each fsynced (HISTORY_PUT_SYNC).
 * 2. QUERIES recommendation queries for random user + job name, each what
 *    the recommend op does: one prefix scan (history_runs_by_app, 30-day
 *    window, newest 64 runs), every rule (recommend_run) and the profile
 *    merge; report p50/p99/max in ms.
 * 3. The database size on disk after a clean close.
 * Targets (the issue): >= 50,000 jobs/s, p99 < 5 ms at 1,000,000 jobs.
 * Prints a table and one JSON line ("bench-history: {...}"); a missed
 * target is printed as MISSED, never an error.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cJSON.h>

#include "daemon/history.h"
#include "daemon/recommend.h"

#define USERS 1000
#define APPS 10
#define WINDOW_S (30 * 86400.0)
#define SPAN_S (60 * 86400.0) /* jobs end over the last 60 days */

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* A template record, filled per job by set_job(). */
static cJSON *template_record(void)
{
	static const char text[] =
	    "{\"schema\":1,\"job\":1,\"user\":\"u\",\"uid\":1,"
	    "\"job_name\":\"a\",\"node\":\"node1\",\"profile_origin\":"
	    "\"dl-train\",\"state\":\"completed\",\"start\":0,\"end\":0,"
	    "\"datasets\":[{\"name\":\"data\",\"source\":\"/pfs/x\","
	    "\"tier\":\"nvme\",\"bytes\":1130000000,\"files\":10000,"
	    "\"result\":\"hit\",\"copied_bytes\":0,\"copied_files\":0,"
	    "\"linked_files\":0,\"cached_bytes\":1130000000}],"
	    "\"outputs\":[{\"name\":\"ckpt\",\"dest\":\"/pfs/x-ckpt\","
	    "\"tier\":\"nvme\",\"files\":4,\"bytes\":4030000000,"
	    "\"during_files\":3,\"during_bytes\":3000000000,\"end_files\":1,"
	    "\"end_bytes\":1030000000,\"failed_files\":0,\"size_hist\":"
	    "{\"0_100\":0,\"100_1K\":0,\"1K_10K\":0,\"10K_100K\":0,"
	    "\"100K_1M\":0,\"1M_4M\":0,\"4M_10M\":0,\"10M_100M\":0,"
	    "\"100M_1G\":4,\"1G_PLUS\":0},\"shared_files\":0,"
	    "\"fpp_files\":4}],"
	    "\"phases\":[{\"name\":\"stage_in\",\"seconds\":0.4,"
	    "\"bytes\":1130000000,\"files\":10000},"
	    "{\"name\":\"run\",\"seconds\":290,\"read_bytes\":1130000000,"
	    "\"write_bytes\":4030000000,\"counters\":{\"dataset\":"
	    "{\"POSIX_OPENS\":10000,\"POSIX_READS\":12000,"
	    "\"POSIX_BYTES_READ\":1130000000,\"POSIX_SEQ_READS\":1200,"
	    "\"POSIX_CONSEC_READS\":1000,\"POSIX_SIZE_READ_100K_1M\":12000,"
	    "\"POSIX_F_READ_TIME\":40.0,\"POSIX_F_META_TIME\":5.0},"
	    "\"output\":{\"POSIX_WRITES\":1000,\"POSIX_BYTES_WRITTEN\":"
	    "4030000000,\"POSIX_SIZE_WRITE_1M_4M\":1000}}},"
	    "{\"name\":\"checkpoint\",\"parent\":\"run\",\"seconds\":35,"
	    "\"io_seconds\":35,\"unoverlapped_io_seconds\":30},"
	    "{\"name\":\"stage_out\",\"seconds\":12,\"bytes\":4030000000,"
	    "\"files\":4}],\"processes\":[]}";

	return cJSON_Parse(text);
}

static void set_str(cJSON *obj, const char *key, const char *v)
{
	cJSON_ReplaceItemInObjectCaseSensitive(obj, key, cJSON_CreateString(v));
}

static void set_num(cJSON *obj, const char *key, double v)
{
	cJSON_SetNumberValue(cJSON_GetObjectItemCaseSensitive(obj, key), v);
}

/* Job JOB of TOTAL: records are filed at each job's Epilog, so in end
 * order; jobs end over the last SPAN_S seconds, a little out of order. */
static void set_job(cJSON *rec, unsigned job, unsigned total, double t0,
		    unsigned seed)
{
	unsigned user = seed % USERS, app = (seed / USERS) % APPS;
	char u[16], a[32], src[64], dest[64];
	double end = t0 - SPAN_S * (1.0 - (double)job / (double)total) -
		     (double)(seed % 600);
	cJSON *ds = cJSON_GetArrayItem(cJSON_GetObjectItem(rec, "datasets"), 0);
	cJSON *out = cJSON_GetArrayItem(cJSON_GetObjectItem(rec, "outputs"), 0);

	snprintf(u, sizeof(u), "u%04u", user);
	snprintf(a, sizeof(a), "app-%u", app);
	snprintf(src, sizeof(src), "/pfs/%s/ds%u", u, app);
	snprintf(dest, sizeof(dest), "/pfs/%s/ckpt%u", u, app);
	set_num(rec, "job", job);
	set_num(rec, "uid", 10000 + user);
	set_num(rec, "start", end - 300);
	set_num(rec, "end", end);
	set_str(rec, "user", u);
	set_str(rec, "job_name", a);
	set_str(ds, "source", src);
	set_str(out, "dest", dest);
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static unsigned long long dir_bytes(const char *dir)
{
	unsigned long long sum = 0;
	char path[4096];
	struct dirent *de;
	struct stat st;
	DIR *d = opendir(dir);

	if (!d)
		return 0;
	while ((de = readdir(d))) {
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		if (lstat(path, &st) == 0 && S_ISREG(st.st_mode))
			sum += (unsigned long long)st.st_blocks * 512;
	}
	closedir(d);
	return sum;
}

int main(int argc, char **argv)
{
	unsigned jobs = 1000000, queries = 10000, batch = 100, synced = 200;
	const char *dir = "/var/tmp/iostage-bench-history";
	char err[1024], cmd[4200];
	struct recommend_tier tiers[1] = {{"nvme", 800ULL << 30}};
	struct recommend_ctx ctx = {tiers, 1, 0, 3};
	double t0 = (double)time(NULL), t, ingest_s, sync_s, *lat;
	cJSON **recs;
	struct history *h;
	unsigned long long bytes;
	size_t nrecs = 0;
	int opt, keep = 0, nonempty = 0;

	while ((opt = getopt(argc, argv, "n:q:b:d:k")) != -1) {
		switch (opt) {
		case 'n': jobs = (unsigned)strtoul(optarg, NULL, 10); break;
		case 'q': queries = (unsigned)strtoul(optarg, NULL, 10); break;
		case 'b': batch = (unsigned)strtoul(optarg, NULL, 10); break;
		case 'd': dir = optarg; break;
		case 'k': keep = 1; break;
		default:
			fprintf(stderr, "usage: %s [-n JOBS] [-q QUERIES] "
					"[-b BATCH] [-d DIR] [-k]\n",
				argv[0]);
			return 2;
		}
	}
	if (!jobs || !batch || !queries || dir[0] != '/') {
		fprintf(stderr, "bench-history: JOBS, QUERIES, BATCH > 0; "
				"DIR absolute\n");
		return 2;
	}
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	if (system(cmd) != 0)
		return 1;
	h = history_open(dir, HISTORY_READ_WRITE, err, sizeof(err));
	if (!h) {
		fprintf(stderr, "bench-history: %s\n", err);
		return 1;
	}
	srand(42);
	recs = calloc(batch, sizeof(*recs));
	for (unsigned i = 0; i < batch; i++)
		recs[i] = template_record();

	/* 1. bulk ingest */
	ingest_s = 0;
	for (unsigned j = 1; j <= jobs; j++) {
		set_job(recs[nrecs++], j, jobs, t0, (unsigned)rand());
		if (nrecs == batch || j == jobs) {
			t = now_s();
			if (history_put_many(h, (const cJSON *const *)recs,
					     nrecs, 0, err, sizeof(err)) < 0) {
				fprintf(stderr, "bench-history: %s\n", err);
				return 1;
			}
			ingest_s += now_s() - t;
			nrecs = 0;
		}
	}
	/* the Epilog path: one record, fsynced */
	t = now_s();
	for (unsigned j = 0; j < synced; j++) {
		set_job(recs[0], jobs + 1 + j, jobs, t0, (unsigned)rand());
		if (history_put(h, recs[0], HISTORY_PUT_SYNC, err,
				sizeof(err)) < 0) {
			fprintf(stderr, "bench-history: %s\n", err);
			return 1;
		}
	}
	sync_s = now_s() - t;

	/* 2. queries */
	lat = calloc(queries, sizeof(*lat));
	for (unsigned q = 0; q < queries; q++) {
		unsigned seed = (unsigned)rand();
		char u[16], a[32];
		cJSON *runs, *res, *prof;

		snprintf(u, sizeof(u), "u%04u", seed % USERS);
		snprintf(a, sizeof(a), "app-%u", (seed / USERS) % APPS);
		t = now_s();
		runs = history_runs_by_app(h, u, a, t0 - WINDOW_S, 64, err,
					   sizeof(err));
		res = runs ? recommend_run(runs, &ctx) : NULL;
		prof = res ? recommend_profile(cJSON_GetObjectItem(
						   res, "recommendations"),
					       RECOMMEND_APPLY_CONFIDENCE)
			   : NULL;
		lat[q] = (now_s() - t) * 1000;
		if (!prof) {
			fprintf(stderr, "bench-history: query: %s\n", err);
			return 1;
		}
		if (cJSON_GetArraySize(cJSON_GetObjectItem(res,
							   "recommendations")))
			nonempty++;
		cJSON_Delete(prof);
		cJSON_Delete(res);
		cJSON_Delete(runs);
	}
	qsort(lat, queries, sizeof(*lat), cmp_double);
	history_close(h);
	bytes = dir_bytes(dir);

	{
		double rate = jobs / ingest_s;
		double p50 = lat[queries / 2];
		double p99 = lat[(size_t)(queries * 0.99)];

		printf("bench-history: %u jobs ingested in %.2f s: %.0f jobs/s "
		       "(batches of %u, WAL on)  target >= 50000: %s\n",
		       jobs, ingest_s, rate, batch,
		       rate >= 50000 ? "ok" : "MISSED");
		printf("bench-history: Epilog path (one record, fsynced): "
		       "%.0f jobs/s over %u\n",
		       synced / sync_s, synced);
		printf("bench-history: %u recommendation queries: p50 %.3f ms, "
		       "p99 %.3f ms, max %.3f ms  target p99 < 5 ms: %s "
		       "(%d with advice)\n",
		       queries, p50, p99, lat[queries - 1],
		       p99 < 5 ? "ok" : "MISSED", nonempty);
		printf("bench-history: database %s: %.1f MiB (%.0f bytes/job)\n",
		       dir, (double)bytes / 1048576.0,
		       (double)bytes / (jobs + synced));
		printf("bench-history: {\"jobs\":%u,\"ingest_jobs_per_s\":%.0f,"
		       "\"batch\":%u,\"epilog_jobs_per_s\":%.0f,"
		       "\"query_p50_ms\":%.3f,\"query_p99_ms\":%.3f,"
		       "\"query_max_ms\":%.3f,\"db_bytes\":%llu}\n",
		       jobs, rate, batch, synced / sync_s, p50, p99,
		       lat[queries - 1], bytes);
	}
	for (unsigned i = 0; i < batch; i++)
		cJSON_Delete(recs[i]);
	free(recs);
	free(lat);
	if (!keep && system(cmd) != 0)
		return 1;
	return 0;
}
