/* history.c - bench: the job history at scale, with the daemon's own code.
 *
 *   build/bench/history [-n JOBS] [-q QUERIES] [-b BATCH] [-t THREADS]
 *                       [-e EPILOGS] [-d DIR] [-k]
 *
 * 1. Ingest JOBS synthetic job summaries (DLIO-shaped: 1,000 users x 10
 *    applications, a dataset each, counters, a checkpoint phase and an
 *    output) with history_put_many in WriteBatches of BATCH records, WAL
 *    on, no fsync per batch (bulk import), from THREADS filer threads
 *    (default 2); report jobs/s over the wall-clock time of the whole
 *    ingest (the bench's own record filling included, a few %) and the
 *    process CPU per job (RocksDB's flushes and compactions included:
 *    steadier than jobs/s on a shared machine). Then the Epilog path:
 *    single records, each fsynced (HISTORY_PUT_SYNC), from EPILOGS
 *    threads at once (default 4: jobs ending together).
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
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cJSON.h>

#include "bench/recgen.h"
#include "common/history/history.h"
#include "common/history/recommend.h"

#define WINDOW_S (30 * 86400.0)
#define BENCH_THREADS_MAX 16

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* One filer: batches FIRST, FIRST + STRIDE, ... of the JOBS jobs. */
struct filer {
	struct history *h;
	unsigned first, stride, jobs, batch;
	double t0;
	unsigned seed;
	unsigned base, flags; /* job ids from base + 1; HISTORY_PUT_* */
	int rc;
	char err[1024];
};

static void *filer_main(void *arg)
{
	struct filer *f = arg;
	unsigned nb = (f->jobs + f->batch - 1) / f->batch;
	cJSON **recs = calloc(f->batch, sizeof(*recs));

	for (unsigned i = 0; recs && i < f->batch; i++)
		recs[i] = recgen_template();
	for (unsigned b = f->first; recs && b < nb && !f->rc; b += f->stride) {
		size_t n = 0;

		for (unsigned j = b * f->batch + 1;
		     j <= f->jobs && j <= (b + 1) * f->batch; j++)
			recgen_set_job(recs[n++], f->base + j, f->jobs, f->t0,
				       (unsigned)rand_r(&f->seed));
		if (history_put_many(f->h, (const cJSON *const *)recs, n,
				     f->flags, f->err, sizeof(f->err)) < 0)
			f->rc = -1;
	}
	for (unsigned i = 0; recs && i < f->batch; i++)
		cJSON_Delete(recs[i]);
	if (!recs) {
		snprintf(f->err, sizeof(f->err), "out of memory");
		f->rc = -1;
	}
	free(recs);
	return NULL;
}

/* File JOBS jobs (ids BASE + 1 ...) from THREADS filers in batches of
 * BATCH with FLAGS. 0, or -1 with err. */
static int run_filers(struct history *h, unsigned threads, unsigned jobs,
		      unsigned batch, unsigned base, unsigned flags, double t0,
		      char *err, size_t errlen)
{
	pthread_t tid[BENCH_THREADS_MAX];
	struct filer f[BENCH_THREADS_MAX];
	unsigned started = 0;
	int rc = 0;

	for (unsigned i = 0; i < threads; i++) {
		f[i] = (struct filer){
			h,    i,     threads, jobs, batch, t0, 42 + i + base,
			base, flags, 0,       ""
		};
		if (pthread_create(&tid[i], NULL, filer_main, &f[i])) {
			snprintf(err, errlen, "cannot start a filer thread");
			rc = -1;
			break;
		}
		started++;
	}
	for (unsigned i = 0; i < started; i++) {
		pthread_join(tid[i], NULL);
		if (f[i].rc && rc == 0) {
			snprintf(err, errlen, "%s", f[i].err);
			rc = -1;
		}
	}
	return rc;
}

/* CPU seconds (user + system) of the whole process so far: every thread,
 * RocksDB's flushes and compactions included. */
static double cpu_s(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 +
	       (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
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
	/* Two filers by default: iostaged files from every Epilog's connection
	 * thread at once, and this node has two cores (-t 1: one thread). */
	unsigned threads = 2, epilogs = 4;
	const char *dir = "/var/tmp/iostage-bench-history";
	char err[1024], cmd[4200];
	struct recommend_tier tiers[1] = { { "nvme", 800ULL << 30 } };
	struct recommend_ctx ctx = {
		.tiers = tiers, .ntiers = 1, .default_tier = 0, .min_jobs = 3
	};
	double t0 = (double)time(NULL), t, ingest_s, ingest_cpu, sync_s, *lat;
	struct history *h;
	unsigned long long bytes;
	int opt, keep = 0, nonempty = 0;

	while ((opt = getopt(argc, argv, "n:q:b:t:e:d:k")) != -1) {
		switch (opt) {
		case 'n':
			jobs = (unsigned)strtoul(optarg, NULL, 10);
			break;
		case 'q':
			queries = (unsigned)strtoul(optarg, NULL, 10);
			break;
		case 'b':
			batch = (unsigned)strtoul(optarg, NULL, 10);
			break;
		case 't':
			threads = (unsigned)strtoul(optarg, NULL, 10);
			break;
		case 'e':
			epilogs = (unsigned)strtoul(optarg, NULL, 10);
			break;
		case 'd':
			dir = optarg;
			break;
		case 'k':
			keep = 1;
			break;
		default:
			fprintf(
			    stderr,
			    "usage: %s [-n JOBS] [-q QUERIES] "
			    "[-b BATCH] [-t THREADS] [-e EPILOGS] [-d DIR] [-k]\n",
			    argv[0]);
			return 2;
		}
	}
	if (!jobs || !batch || !queries || !threads || !epilogs ||
	    threads > BENCH_THREADS_MAX || epilogs > BENCH_THREADS_MAX ||
	    dir[0] != '/') {
		fprintf(stderr,
			"bench-history: JOBS, QUERIES, BATCH > 0; "
			"THREADS, EPILOGS 1..%d; DIR absolute\n",
			BENCH_THREADS_MAX);
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

	/* 1. bulk ingest: THREADS filers, batch k by filer k % THREADS, so
	 * the jobs still arrive nearly in end order */
	t = now_s();
	ingest_cpu = cpu_s();
	if (run_filers(h, threads, jobs, batch, 0, 0, t0, err, sizeof(err)) <
	    0) {
		fprintf(stderr, "bench-history: %s\n", err);
		return 1;
	}
	ingest_s = now_s() - t;
	ingest_cpu = cpu_s() - ingest_cpu;
	/* the Epilog path: one record per call, fsynced, from EPILOGS
	 * filers at once (jobs ending together on different nodes) */
	t = now_s();
	if (run_filers(h, epilogs, synced, 1, jobs, HISTORY_PUT_SYNC, t0, err,
		       sizeof(err)) < 0) {
		fprintf(stderr, "bench-history: %s\n", err);
		return 1;
	}
	sync_s = now_s() - t;

	/* 2. queries */
	lat = calloc(queries, sizeof(*lat));
	for (unsigned q = 0; q < queries; q++) {
		unsigned seed = (unsigned)rand();
		char u[16], a[32];
		cJSON *runs, *res, *prof;

		snprintf(u, sizeof(u), "u%04u", seed % RECGEN_USERS);
		snprintf(a, sizeof(a), "app-%u",
			 (seed / RECGEN_USERS) % RECGEN_APPS);
		t = now_s();
		runs = history_runs_by_app(h, u, a, t0 - WINDOW_S, 64, err,
					   sizeof(err));
		res = runs ? recommend_run(runs, &ctx) : NULL;
		prof = res ? recommend_profile(
				 cJSON_GetObjectItem(res, "recommendations"),
				 RECOMMEND_APPLY_CONFIDENCE)
			   : NULL;
		lat[q] = (now_s() - t) * 1000;
		if (!prof) {
			fprintf(stderr, "bench-history: query: %s\n", err);
			return 1;
		}
		if (cJSON_GetArraySize(
			cJSON_GetObjectItem(res, "recommendations")))
			nonempty++;
		cJSON_Delete(prof);
		cJSON_Delete(res);
		history_runs_free(runs);
	}
	qsort(lat, queries, sizeof(*lat), cmp_double);
	history_close(h);
	bytes = dir_bytes(dir);

	{
		double rate = jobs / ingest_s;
		double p50 = lat[queries / 2];
		double p99 = lat[(size_t)(queries * 0.99)];

		printf("bench-history: %u jobs ingested in %.2f s: %.0f jobs/s "
		       "(batches of %u, %u filer thread%s, WAL on)  "
		       "target >= 50000: %s\n",
		       jobs, ingest_s, rate, batch, threads,
		       threads == 1 ? "" : "s",
		       rate >= 50000 ? "ok" : "MISSED");
		printf("bench-history: ingest CPU (all threads, RocksDB's "
		       "included): %.1f s, %.1f us/job\n",
		       ingest_cpu, ingest_cpu * 1e6 / jobs);
		printf("bench-history: Epilog path (one record, fsynced, %u "
		       "filer%s): %.0f jobs/s over %u\n",
		       epilogs, epilogs == 1 ? "" : "s", synced / sync_s,
		       synced);
		printf("bench-history: %u recommendation queries: p50 %.3f ms, "
		       "p99 %.3f ms, max %.3f ms  target p99 < 5 ms: %s "
		       "(%d with advice)\n",
		       queries, p50, p99, lat[queries - 1],
		       p99 < 5 ? "ok" : "MISSED", nonempty);
		printf(
		    "bench-history: database %s: %.1f MiB (%.0f bytes/job)\n",
		    dir, (double)bytes / 1048576.0,
		    (double)bytes / (jobs + synced));
		printf(
		    "bench-history: {\"jobs\":%u,\"ingest_jobs_per_s\":%.0f,"
		    "\"batch\":%u,\"threads\":%u,\"ingest_cpu_us_per_job\":%.1f,"
		    "\"epilog_filers\":%u,\"epilog_jobs_per_s\":%.0f,"
		    "\"query_p50_ms\":%.3f,\"query_p99_ms\":%.3f,"
		    "\"query_max_ms\":%.3f,\"db_bytes\":%llu}\n",
		    jobs, rate, batch, threads, ingest_cpu * 1e6 / jobs,
		    epilogs, synced / sync_s, p50, p99, lat[queries - 1],
		    bytes);
	}

	free(lat);
	if (!keep && system(cmd) != 0)
		return 1;
	return 0;
}
