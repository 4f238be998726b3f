/* check_shim.c - libiostage-preload.so counts exactly what a program does.
 *
 * Each test builds a fresh tree, runs tests/shim/shimprobe under
 * LD_PRELOAD with IOSTAGE_SHIM_REPORT pointing at a file, and compares the
 * summaries (one JSON line per process) with the I/O the probe is known to
 * do (the counts are derived in shimprobe.c, next to each mode). The
 * failure tests check the other promise: whatever goes wrong inside the
 * shim, the program's output and exit status are those it has without it.
 * SHIM_TEST_LIB and SHIM_TEST_PROBE come from the Makefile.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cJSON.h>
#include <check.h>

#include "shim/slurmstep.h"
#include "tests/unit/check_run.h"

#define PROBE_TIMEOUT_S 60
#define MAX_REPORTS 64

struct run {
	int status;     /* wait status; -1 on timeout */
	char out[4096]; /* the probe's stdout */
	cJSON *reports[MAX_REPORTS];
	int nreports;
};

static char tree[256];

static void write_file(const char *rel, size_t size)
{
	char path[512], b[4096];
	FILE *fp;

	memset(b, 'x', sizeof(b));
	snprintf(path, sizeof(path), "%s/%s", tree, rel);
	fp = fopen(path, "w");
	ck_assert_msg(fp != NULL, "create %s: %s", path, strerror(errno));
	while (size > 0) {
		size_t n = size < sizeof(b) ? size : sizeof(b);

		ck_assert_uint_eq(fwrite(b, 1, n, fp), n);
		size -= n;
	}
	fclose(fp);
}

static void mkdir_rel(const char *rel)
{
	char path[512];

	snprintf(path, sizeof(path), "%s/%s", tree, rel);
	ck_assert_msg(mkdir(path, 0755) == 0, "mkdir %s", path);
}

static void setup(void)
{
	char name[32];

	snprintf(tree, sizeof(tree), "/tmp/check_shim.XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(tree));
	mkdir_rel("data");
	mkdir_rel("out");
	mkdir_rel("out/ckpt");
	mkdir_rel("out/results");
	for (int i = 0; i < 10; i++) {
		snprintf(name, sizeof(name), "data/f%d", i);
		write_file(name, 10000);
	}
	write_file("data/big", 1048576);
	write_file("data/rw", 100);
	mkdir_rel("data2");
	write_file("data2/x", 10);
}

static void teardown(void)
{
	char cmd[600];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tree);
	if (system(cmd) != 0)
		fprintf(stderr, "check_shim: could not remove %s\n", tree);
}

/* Run the probe in MODE. PRELOAD: with the shim; EXTRA: more NAME=VALUE
 * (NULL-terminated) after the defaults, a later one overriding. */
static void run_probe(const char *mode, bool preload, const char *const *extra,
		      struct run *r)
{
	char report[600], classes[1200], preload_var[600], rep_var[700];
	char *envp[32];
	int n = 0, pipefd[2];
	pid_t pid;
	size_t got = 0;
	ssize_t k;
	time_t deadline;
	FILE *fp;
	char line[1 << 16];

	memset(r, 0, sizeof(*r));
	snprintf(report, sizeof(report), "%s/report.jsonl", tree);
	unlink(report);
	snprintf(classes, sizeof(classes),
		 "IOSTAGE_TRACE_CLASSES=dataset=%s/data:output=%s/out", tree,
		 tree);
	snprintf(preload_var, sizeof(preload_var), "LD_PRELOAD=%s",
		 SHIM_TEST_LIB);
	snprintf(rep_var, sizeof(rep_var), "IOSTAGE_SHIM_REPORT=%s", report);
	envp[n++] = "PATH=/usr/bin:/bin";
	if (preload)
		envp[n++] = preload_var;
	envp[n++] = classes;
	envp[n++] = rep_var;
	for (; extra && *extra && n < 30; extra++) {
		const char *eq = strchr(*extra, '=');

		/* override a default of the same name */
		for (int i = 0; i < n; i++)
			if (eq && strncmp(envp[i], *extra,
					  (size_t)(eq - *extra) + 1) == 0)
				envp[i] = envp[--n];
		envp[n++] = (char *)*extra;
	}
	envp[n] = NULL;

	ck_assert_int_eq(pipe(pipefd), 0);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		char *argv[] = { SHIM_TEST_PROBE, (char *)mode, tree, NULL };

		dup2(pipefd[1], 1);
		close(pipefd[0]);
		close(pipefd[1]);
		execve(SHIM_TEST_PROBE, argv, envp);
		_exit(127);
	}
	close(pipefd[1]);
	fcntl(pipefd[0], F_SETFL, O_NONBLOCK);
	deadline = time(NULL) + PROBE_TIMEOUT_S;
	r->status = -1;
	for (;;) {
		int st;

		while ((k = read(pipefd[0], r->out + got,
				 sizeof(r->out) - 1 - got)) > 0)
			got += (size_t)k;
		if (waitpid(pid, &st, WNOHANG) == pid) {
			r->status = st;
			break;
		}
		if (time(NULL) > deadline) {
			kill(pid, SIGKILL);
			waitpid(pid, NULL, 0);
			break;
		}
		usleep(5000);
	}
	while ((k = read(pipefd[0], r->out + got, sizeof(r->out) - 1 - got)) >
	       0)
		got += (size_t)k;
	r->out[got] = '\0';
	close(pipefd[0]);
	ck_assert_msg(r->status != -1, "probe %s: no exit within %d s", mode,
		      PROBE_TIMEOUT_S);

	fp = fopen(report, "r");
	if (!fp)
		return;
	while (fgets(line, sizeof(line), fp) && r->nreports < MAX_REPORTS) {
		cJSON *j = cJSON_Parse(line);

		ck_assert_msg(j != NULL, "summary is not JSON: %.200s", line);
		r->reports[r->nreports++] = j;
	}
	fclose(fp);
}

static void run_free(struct run *r)
{
	for (int i = 0; i < r->nreports; i++)
		cJSON_Delete(r->reports[i]);
}

static void assert_ran_ok(const struct run *r, const char *mode)
{
	char want[64];

	ck_assert_msg(WIFEXITED(r->status) && WEXITSTATUS(r->status) == 0,
		      "probe %s: status %d, output '%s'", mode, r->status,
		      r->out);
	snprintf(want, sizeof(want), "%s ok", mode);
	ck_assert_msg(strstr(r->out, want), "probe %s printed '%s'", mode,
		      r->out);
}

/* The summary of PID with REASON ("exit"/"exec"), or NULL. */
static cJSON *report_of(const struct run *r, long pid, const char *reason)
{
	for (int i = 0; i < r->nreports; i++) {
		cJSON *p = cJSON_GetObjectItem(r->reports[i], "pid");
		cJSON *w = cJSON_GetObjectItem(r->reports[i], "reason");

		if (cJSON_IsNumber(p) && (long)p->valuedouble == pid &&
		    cJSON_IsString(w) && strcmp(w->valuestring, reason) == 0)
			return r->reports[i];
	}
	return NULL;
}

/* The only summary with REASON (asserts there is exactly one). */
static cJSON *only_report(const struct run *r, const char *reason)
{
	cJSON *found = NULL;
	int n = 0;

	for (int i = 0; i < r->nreports; i++) {
		cJSON *w = cJSON_GetObjectItem(r->reports[i], "reason");

		if (cJSON_IsString(w) && strcmp(w->valuestring, reason) == 0) {
			found = r->reports[i];
			n++;
		}
	}
	ck_assert_msg(n == 1, "%d summaries with reason %s, want 1", n, reason);
	return found;
}

/* counters.PHASE.CLASS.NAME, or -1 when absent. */
static double ctr(const cJSON *rep, const char *phase, const char *cls,
		  const char *name)
{
	const cJSON *c = cJSON_GetObjectItem(rep, "counters");
	const cJSON *v;

	c = cJSON_GetObjectItem(cJSON_GetObjectItem(c, phase), cls);
	v = cJSON_GetObjectItem(c, name);
	return cJSON_IsNumber(v) ? v->valuedouble : -1;
}

#define CK_CTR(rep, phase, cls, name, want)                                    \
	ck_assert_msg(ctr(rep, phase, cls, name) == (double)(want),            \
		      "%s.%s.%s = %.0f, want %.0f", phase, cls, name,          \
		      ctr(rep, phase, cls, name), (double)(want))

START_TEST(test_basic_counts_exact)
{
	struct run r;
	cJSON *rep, *files, *f;
	int seen = 0;

	run_probe("basic", true, NULL, &r);
	assert_ran_ok(&r, "basic");
	ck_assert_int_eq(r.nreports, 1);
	rep = only_report(&r, "exit");

	CK_CTR(rep, "read", "dataset", "POSIX_OPENS", 12);
	CK_CTR(rep, "read", "dataset", "POSIX_READS", 48);
	CK_CTR(rep, "read", "dataset", "POSIX_BYTES_READ", 120550);
	CK_CTR(rep, "read", "dataset", "POSIX_STATS", 2);
	CK_CTR(rep, "read", "dataset", "POSIX_SEEKS", 1);
	CK_CTR(rep, "read", "dataset", "POSIX_SIZE_READ_1K_10K", 35);
	CK_CTR(rep, "read", "dataset", "POSIX_SIZE_READ_0_100", 13);
	CK_CTR(rep, "read", "dataset", "POSIX_SIZE_READ_10K_100K", 0);
	CK_CTR(rep, "read", "dataset", "POSIX_CONSEC_READS", 42);
	CK_CTR(rep, "read", "dataset", "POSIX_SEQ_READS", 46);
	CK_CTR(rep, "read", "dataset", "POSIX_MAX_BYTE_READ", 1048575);
	CK_CTR(rep, "read", "dataset", "POSIX_RW_SWITCHES", 1);
	CK_CTR(rep, "read", "dataset", "POSIX_WRITES", 0);

	CK_CTR(rep, "run", "dataset", "POSIX_WRITES", 1);
	CK_CTR(rep, "run", "dataset", "POSIX_BYTES_WRITTEN", 10);
	CK_CTR(rep, "run", "dataset", "POSIX_SEQ_WRITES", 1);
	CK_CTR(rep, "run", "dataset", "POSIX_CONSEC_WRITES", 0);
	CK_CTR(rep, "run", "dataset", "POSIX_RW_SWITCHES", 1);
	CK_CTR(rep, "run", "dataset", "POSIX_MAX_BYTE_WRITTEN", 19);

	CK_CTR(rep, "checkpoint", "output", "POSIX_OPENS", 1);
	CK_CTR(rep, "checkpoint", "output", "POSIX_WRITES", 2);
	CK_CTR(rep, "checkpoint", "output", "POSIX_BYTES_WRITTEN", 3050);
	CK_CTR(rep, "checkpoint", "output", "POSIX_SIZE_WRITE_1K_10K", 1);
	CK_CTR(rep, "checkpoint", "output", "POSIX_SIZE_WRITE_0_100", 1);
	CK_CTR(rep, "checkpoint", "output", "POSIX_FSYNCS", 1);
	CK_CTR(rep, "checkpoint", "output", "POSIX_CONSEC_WRITES", 2);
	CK_CTR(rep, "checkpoint", "output", "POSIX_MAX_BYTE_WRITTEN", 3049);

	CK_CTR(rep, "write", "output", "POSIX_OPENS", 1);
	CK_CTR(rep, "write", "output", "POSIX_WRITES", 2);
	CK_CTR(rep, "write", "output", "POSIX_BYTES_WRITTEN", 200010);
	CK_CTR(rep, "write", "output", "POSIX_SIZE_WRITE_100K_1M", 1);
	CK_CTR(rep, "write", "output", "POSIX_CONSEC_WRITES", 1);
	CK_CTR(rep, "write", "output", "POSIX_SEQ_WRITES", 1);
	CK_CTR(rep, "write", "output", "POSIX_MAX_BYTE_WRITTEN", 199999);

	CK_CTR(rep, "run", "other", "POSIX_OPENS", 1);
	CK_CTR(rep, "run", "other", "POSIX_WRITES", 1);
	CK_CTR(rep, "run", "other", "POSIX_BYTES_WRITTEN", 5);

	/* Times are there and add up: I/O time >= busy time > 0. */
	ck_assert(ctr(rep, "read", "dataset", "POSIX_F_READ_TIME") > 0);
	ck_assert(ctr(rep, "read", "dataset", "POSIX_F_META_TIME") > 0);
	ck_assert(ctr(rep, "read", "dataset", "IOSTAGE_UNOVERLAPPED_IO_TIME") >
		  0);
	ck_assert(
	    cJSON_GetObjectItem(cJSON_GetObjectItem(rep, "io_seconds"), "read")
		->valuedouble >=
	    cJSON_GetObjectItem(cJSON_GetObjectItem(rep, "unoverlapped"),
				"read")
		    ->valuedouble -
		1e-6);

	files = cJSON_GetObjectItem(rep, "files");
	ck_assert_int_eq(cJSON_GetArraySize(files), 2);
	cJSON_ArrayForEach(f, files) {
		const char *p = cJSON_GetObjectItem(f, "path")->valuestring;
		double w = cJSON_GetObjectItem(f, "written")->valuedouble;

		if (strstr(p, "/out/ckpt/model.ckpt"))
			ck_assert(w == 3050), seen++;
		if (strstr(p, "/out/results/r.txt"))
			ck_assert(w == 200010), seen++;
	}
	ck_assert_int_eq(seen, 2);
	run_free(&r);
}
END_TEST

START_TEST(test_fork_each_process_reports)
{
	struct run r;
	cJSON *parent = NULL, *child = NULL;

	run_probe("fork", true, NULL, &r);
	assert_ran_ok(&r, "fork");
	ck_assert_int_eq(r.nreports, 2);
	for (int i = 0; i < 2; i++) {
		double reads = ctr(r.reports[i], "read", "dataset",
				   "POSIX_READS");

		if (reads == 8)
			parent = r.reports[i];
		else if (reads == 4)
			child = r.reports[i];
	}
	ck_assert_msg(parent && child,
		      "want one summary with 8 reads and one with 4");
	ck_assert_int_eq((int)cJSON_GetObjectItem(child, "ppid")->valuedouble,
			 (int)cJSON_GetObjectItem(parent, "pid")->valuedouble);
	CK_CTR(parent, "read", "dataset", "POSIX_OPENS", 2);
	CK_CTR(child, "read", "dataset", "POSIX_OPENS", 1);
	CK_CTR(child, "read", "dataset", "POSIX_BYTES_READ", 10000);
	run_free(&r);
}
END_TEST

START_TEST(test_exec_reports_before_and_traces_after)
{
	struct run r;
	cJSON *before, *after;
	long pid;

	run_probe("exec", true, NULL, &r);
	/* The new image runs mode "one" and prints its line. */
	assert_ran_ok(&r, "one");
	ck_assert_int_eq(r.nreports, 2);
	before = only_report(&r, "exec");
	pid = (long)cJSON_GetObjectItem(before, "pid")->valuedouble;
	after = report_of(&r, pid, "exit");
	ck_assert_msg(after != NULL, "no exit summary from pid %ld", pid);
	CK_CTR(before, "read", "dataset", "POSIX_READS", 4);
	CK_CTR(after, "read", "dataset", "POSIX_READS", 4);
	CK_CTR(after, "read", "dataset", "POSIX_BYTES_READ", 10000);
	run_free(&r);
}
END_TEST

START_TEST(test_execl_reports_before_and_traces_after)
{
	struct run r;
	cJSON *before, *after;

	run_probe("execl", true, NULL, &r);
	assert_ran_ok(&r, "one");
	before = only_report(&r, "exec");
	after = report_of(&r,
			  (long)cJSON_GetObjectItem(before, "pid")->valuedouble,
			  "exit");
	ck_assert(after != NULL);
	CK_CTR(before, "read", "dataset", "POSIX_READS", 4);
	CK_CTR(after, "read", "dataset", "POSIX_READS", 4);
	run_free(&r);
}
END_TEST

START_TEST(test_vfork_child_does_not_report_for_the_parent)
{
	struct run r;
	int parent = 0, image = 0;

	run_probe("vfork", true, NULL, &r);
	assert_ran_ok(&r, "vfork");
	for (int i = 0; i < r.nreports; i++) {
		double reads = ctr(r.reports[i], "read", "dataset",
				   "POSIX_READS");

		ck_assert_str_eq(
		    cJSON_GetObjectItem(r.reports[i], "reason")->valuestring,
		    "exit");
		parent += reads == 8;
		image += reads == 4;
	}
	ck_assert_int_eq(r.nreports, 2);
	ck_assert_int_eq(parent, 1);
	ck_assert_int_eq(image, 1);
	run_free(&r);
}
END_TEST

START_TEST(test_system_children_are_traced)
{
	struct run r;
	int dd = 0;

	run_probe("system", true, NULL, &r);
	assert_ran_ok(&r, "system");
	for (int i = 0; i < r.nreports; i++)
		if (ctr(r.reports[i], "read", "dataset", "POSIX_BYTES_READ") ==
		    10000)
			dd++;
	ck_assert_msg(dd == 1, "%d summaries with dd's 10000 bytes, want 1",
		      dd);
	run_free(&r);
}
END_TEST

START_TEST(test_threads_totals_exact)
{
	struct run r;
	cJSON *rep;

	run_probe("threads", true, NULL, &r);
	assert_ran_ok(&r, "threads");
	rep = only_report(&r, "exit");
	CK_CTR(rep, "read", "dataset", "POSIX_OPENS", 80);
	CK_CTR(rep, "read", "dataset", "POSIX_READS", 320);
	CK_CTR(rep, "read", "dataset", "POSIX_BYTES_READ", 800000);
	CK_CTR(rep, "read", "dataset", "POSIX_CONSEC_READS", 320);
	/* 8 threads in I/O at once: busy wall time <= summed call time. */
	ck_assert(ctr(rep, "read", "dataset", "IOSTAGE_UNOVERLAPPED_IO_TIME") <=
		  ctr(rep, "read", "dataset", "POSIX_F_READ_TIME") +
		      ctr(rep, "read", "dataset", "POSIX_F_META_TIME") + 1e-6);
	run_free(&r);
}
END_TEST

/* observed.{root,files,bytes,missed} of a summary, -1 for absent numbers */
static double observed_num(const cJSON *rep, const char *name)
{
	const cJSON *v = cJSON_GetObjectItem(cJSON_GetObjectItem(rep,
								 "observed"),
					     name);

	return cJSON_IsNumber(v) ? v->valuedouble : -1;
}

/* An observed job (class "pfs"): the reads under the PFS are the dataset
 * class, and the summary names the deepest directory holding every file
 * read there and the distinct files' count and bytes. Writes (other.txt,
 * the outputs, which are a longer prefix of another class) are not. */
START_TEST(test_observed_tree)
{
	char classes[1200], root[300];
	const char *extra[] = { classes, NULL };
	struct run r;
	cJSON *rep;

	snprintf(classes, sizeof(classes),
		 "IOSTAGE_TRACE_CLASSES=pfs=%s:output=%s/out", tree, tree);
	snprintf(root, sizeof(root), "%s/data", tree);
	run_probe("basic", true, extra, &r);
	assert_ran_ok(&r, "basic");
	rep = only_report(&r, "exit");
	/* other.txt is under the PFS too (opened to write: not noted) */
	CK_CTR(rep, "read", "dataset", "POSIX_OPENS", 13);
	ck_assert_str_eq(
	    cJSON_GetObjectItem(cJSON_GetObjectItem(rep, "observed"), "root")
		->valuestring,
	    root);
	/* f0..f9, big, rw (opened O_RDWR: read too); stat'ed f0 once more */
	ck_assert_int_eq(observed_num(rep, "files"), 12);
	ck_assert_int_eq(observed_num(rep, "bytes"),
			 10 * 10000 + 1048576 + 100);
	ck_assert_int_eq(observed_num(rep, "missed"), 0);
	run_free(&r);

	/* 8 threads reading the same 10 files at once: each counted once. */
	run_probe("threads", true, extra, &r);
	assert_ran_ok(&r, "threads");
	rep = only_report(&r, "exit");
	CK_CTR(rep, "read", "dataset", "POSIX_OPENS", 80);
	ck_assert_int_eq(
	    observed_num(rep, "files") + observed_num(rep, "missed") >= 10, 1);
	ck_assert_int_le(observed_num(rep, "files"), 10);
	ck_assert_int_le(observed_num(rep, "bytes"), 100000);
	ck_assert_str_eq(
	    cJSON_GetObjectItem(cJSON_GetObjectItem(rep, "observed"), "root")
		->valuestring,
	    root);
	run_free(&r);

	/* Files in two sibling trees (data/, data2/: a name that starts
	 * like the other is not under it): their parent is the root. Paths
	 * relative to the cwd and spelt with // . .. are normalized; f3,
	 * opened relative to a directory fd, has no path and is left out,
	 * as is data/ itself (not a file); data2/x opened twice is one. */
	snprintf(classes, sizeof(classes), "IOSTAGE_TRACE_CLASSES=pfs=%s",
		 tree);
	run_probe("paths", true, extra, &r);
	assert_ran_ok(&r, "paths");
	rep = only_report(&r, "exit");
	ck_assert_str_eq(
	    cJSON_GetObjectItem(cJSON_GetObjectItem(rep, "observed"), "root")
		->valuestring,
	    tree);
	ck_assert_int_eq(observed_num(rep, "files"), 4);
	ck_assert_int_eq(observed_num(rep, "bytes"), 3 * 10000 + 10);
	run_free(&r);

	/* Not observed (dataset=, the usual classes): no "observed". */
	run_probe("basic", true, NULL, &r);
	assert_ran_ok(&r, "basic");
	ck_assert_ptr_null(
	    cJSON_GetObjectItem(only_report(&r, "exit"), "observed"));
	run_free(&r);
}
END_TEST

START_TEST(test_signal_handler_io_no_deadlock)
{
	struct run r;
	cJSON *rep;

	run_probe("signal", true, NULL, &r);
	assert_ran_ok(&r, "signal");
	rep = only_report(&r, "exit");
	CK_CTR(rep, "read", "dataset", "POSIX_READS", 80000);
	CK_CTR(rep, "read", "dataset", "POSIX_BYTES_READ", 200000000);
	/* The handler's writes to /dev/null are not file I/O. */
	CK_CTR(rep, "run", "other", "POSIX_WRITES", -1);
	run_free(&r);
}
END_TEST

START_TEST(test_phase_markers_and_overflow)
{
	struct run r;
	cJSON *rep;

	run_probe("phases", true, NULL, &r);
	assert_ran_ok(&r, "phases");
	rep = only_report(&r, "exit");
	CK_CTR(rep, "epoch1", "dataset", "POSIX_READS", 4);
	CK_CTR(rep, "read", "dataset", "POSIX_READS", 4);
	CK_CTR(rep, "m0", "dataset", "POSIX_STATS", 1);
	CK_CTR(rep, "m9", "dataset", "POSIX_STATS", 1);
	CK_CTR(rep, "m10", "dataset", "POSIX_STATS", -1); /* folded */
	CK_CTR(rep, "other", "dataset", "POSIX_STATS", 10);
	ck_assert_int_eq(
	    (int)cJSON_GetObjectItem(rep, "phases_folded")->valuedouble, 10);
	run_free(&r);
}
END_TEST

START_TEST(test_stdio_seeks_append_close_range)
{
	struct run r;
	cJSON *rep;

	run_probe("stdio", true, NULL, &r);
	assert_ran_ok(&r, "stdio");
	rep = only_report(&r, "exit");
	CK_CTR(rep, "read", "dataset", "POSIX_OPENS", 3);
	CK_CTR(rep, "read", "dataset", "POSIX_READS", 4);
	CK_CTR(rep, "read", "dataset", "POSIX_BYTES_READ", 400);
	CK_CTR(rep, "read", "dataset", "POSIX_CONSEC_READS", 2);
	CK_CTR(rep, "read", "dataset", "POSIX_SEQ_READS", 3);
	CK_CTR(rep, "read", "dataset", "POSIX_SEEKS", 2);
	CK_CTR(rep, "read", "dataset", "POSIX_MAX_BYTE_READ", 5099);
	CK_CTR(rep, "write", "output", "POSIX_WRITES", 3);
	CK_CTR(rep, "write", "output", "POSIX_CONSEC_WRITES", 3);
	CK_CTR(rep, "write", "output", "POSIX_SEQ_WRITES", 3);
	CK_CTR(rep, "write", "output", "POSIX_MAX_BYTE_WRITTEN", -1);
	/* The pipe reused the fds close_range closed: not a dataset, and
	 * not file I/O at all. */
	CK_CTR(rep, "run", "dataset", "POSIX_WRITES", -1);
	CK_CTR(rep, "run", "other", "POSIX_WRITES", -1);
	run_free(&r);
}
END_TEST

/* The written bytes files[] gives for the path ending in SUFFIX, or -1. */
static double file_written(const cJSON *rep, const char *suffix)
{
	const cJSON *f;
	size_t n = strlen(suffix);

	cJSON_ArrayForEach(f, cJSON_GetObjectItem(rep, "files")) {
		const char *p = cJSON_GetObjectItem(f, "path")->valuestring;
		size_t len = strlen(p);

		if (len >= n && strcmp(p + len - n, suffix) == 0)
			return cJSON_GetObjectItem(f, "written")->valuedouble;
	}
	return -1;
}

START_TEST(test_only_file_io_counted)
{
	struct run r;
	cJSON *rep, *c, *ph;

	run_probe("kinds", true, NULL, &r);
	assert_ran_ok(&r, "kinds");
	rep = only_report(&r, "exit");
	/* A file, a dup of it, and one the shim did not see opened. */
	CK_CTR(rep, "read", "dataset", "POSIX_OPENS", 1);
	CK_CTR(rep, "read", "dataset", "POSIX_READS", 3);
	CK_CTR(rep, "read", "dataset", "POSIX_BYTES_READ", 20100);
	/* Through an F_DUPFD copy, and through stdout dup2'ed onto it. */
	CK_CTR(rep, "write", "output", "POSIX_OPENS", 1);
	CK_CTR(rep, "write", "output", "POSIX_WRITES", 2);
	CK_CTR(rep, "write", "output", "POSIX_BYTES_WRITTEN", 1300);
	ck_assert_double_eq(file_written(rep, "/out/results/k.txt"), 1300);
	/* The one regular file of class other; none of /dev/null,
	 * /dev/zero, the pipes, the sockets, /proc or the FIFO. */
	CK_CTR(rep, "run", "other", "POSIX_OPENS", 1);
	CK_CTR(rep, "run", "other", "POSIX_WRITES", 1);
	CK_CTR(rep, "run", "other", "POSIX_BYTES_WRITTEN", 7);
	CK_CTR(rep, "run", "other", "POSIX_READS", 0);
	CK_CTR(rep, "run", "other", "POSIX_BYTES_READ", 0);
	/* Nothing else anywhere: only these three rows. */
	c = cJSON_GetObjectItem(rep, "counters");
	ck_assert_int_eq(cJSON_GetArraySize(c), 3);
	cJSON_ArrayForEach(ph, c)
		ck_assert_int_eq(cJSON_GetArraySize(ph), 1);
	run_free(&r);
}
END_TEST

START_TEST(test_redirected_stdin_stdout_are_file_io)
{
	struct run r;
	cJSON *rep = NULL;

	run_probe("redirect", true, NULL, &r);
	assert_ran_ok(&r, "redirect");
	/* The image after sh's exec: its pid's exit summary that read. */
	for (int i = 0; i < r.nreports; i++)
		if (ctr(r.reports[i], "read", "dataset", "POSIX_BYTES_READ") ==
		    10000)
			rep = r.reports[i];
	ck_assert_msg(rep != NULL, "no summary read the 10000 bytes of stdin");
	ck_assert_str_eq(cJSON_GetObjectItem(rep, "reason")->valuestring,
			 "exit");
	CK_CTR(rep, "read", "dataset", "POSIX_OPENS", 0); /* the shell's */
	CK_CTR(rep, "read", "dataset", "POSIX_CONSEC_READS", 4);
	CK_CTR(rep, "write", "output", "POSIX_BYTES_WRITTEN", 123);
	CK_CTR(rep, "write", "output", "POSIX_WRITES", 1);
	ck_assert_double_eq(file_written(rep, "/out/results/redir.txt"), 123);
	/* stderr on /dev/null */
	CK_CTR(rep, "run", "other", "POSIX_WRITES", -1);
	run_free(&r);
}
END_TEST

START_TEST(test_in_kernel_copies_counted_per_side)
{
	struct run r;
	cJSON *rep;

	run_probe("copy", true, NULL, &r);
	assert_ran_ok(&r, "copy");
	rep = only_report(&r, "exit");
	CK_CTR(rep, "read", "dataset", "POSIX_OPENS", 3);
	CK_CTR(rep, "read", "dataset", "POSIX_READS", 3);
	CK_CTR(rep, "read", "dataset", "POSIX_BYTES_READ", 30000);
	CK_CTR(rep, "read", "dataset", "POSIX_CONSEC_READS", 3);
	CK_CTR(rep, "write", "output", "POSIX_OPENS", 2);
	CK_CTR(rep, "write", "output", "POSIX_WRITES", 2);
	CK_CTR(rep, "write", "output", "POSIX_BYTES_WRITTEN", 20000);
	ck_assert_double_eq(file_written(rep, "/out/results/c.bin"), 10000);
	ck_assert_double_eq(file_written(rep, "/out/results/s.bin"), 10000);
	/* the pipe's side: nothing, anywhere */
	CK_CTR(rep, "run", "other", "POSIX_WRITES", -1);
	run_free(&r);
}
END_TEST

START_TEST(test_fds_beyond_the_table)
{
	struct run r;
	cJSON *rep;

	run_probe("highfd", true, NULL, &r);
	if (strstr(r.out, "highfd skipped")) {
		fprintf(stderr, "check_shim: fd limit below 5002, "
				"test_fds_beyond_the_table skipped\n");
		run_free(&r);
		return;
	}
	assert_ran_ok(&r, "highfd");
	rep = only_report(&r, "exit");
	CK_CTR(rep, "run", "other", "POSIX_READS", 1);
	CK_CTR(rep, "run", "other", "POSIX_BYTES_READ", 100);
	CK_CTR(rep, "run", "other", "POSIX_WRITES", 0); /* the pipe's */
	run_free(&r);
}
END_TEST

START_TEST(test_path_forms_classified)
{
	struct run r;
	cJSON *rep;

	run_probe("paths", true, NULL, &r);
	assert_ran_ok(&r, "paths");
	rep = only_report(&r, "exit");
	/* f0 relative, f1 with // and ., f2 through .., data/ itself, f3
	 * by openat on it; then a stat relative to an fchdir'ed cwd. */
	CK_CTR(rep, "read", "dataset", "POSIX_OPENS", 5);
	CK_CTR(rep, "read", "dataset", "POSIX_STATS", 1);
	/* data2/x (a name that starts like data/ is not under it), then
	 * data/../data2/x (spelt under data/, it is not either), and the
	 * tree's top directory, opened for the fchdir. */
	CK_CTR(rep, "run", "other", "POSIX_OPENS", 3);
	run_free(&r);
}
END_TEST

START_TEST(test_errno_and_results_unchanged)
{
	struct run with, without;

	run_probe("errno", true, NULL, &with);
	run_probe("errno", false, NULL, &without);
	assert_ran_ok(&with, "errno");
	ck_assert_str_eq(with.out, without.out);
	ck_assert_int_eq(with.nreports, 1);
	run_free(&with);
	run_free(&without);
}
END_TEST

/* Whatever breaks inside the shim, the program is the same. */
static void assert_same_as_untraced(const char *const *extra, struct run *with)
{
	struct run without;

	run_probe("basic", true, extra, with);
	run_probe("basic", false, NULL, &without);
	assert_ran_ok(with, "basic");
	ck_assert_str_eq(with->out, without.out);
	run_free(&without);
}

START_TEST(test_unwritable_report_path)
{
	static const char *const extra[] = {
		"IOSTAGE_SHIM_REPORT=/proc/no/such/dir/report.jsonl", NULL
	};
	struct run r;

	assert_same_as_untraced(extra, &r);
	run_free(&r);
}
END_TEST

START_TEST(test_garbage_classes_disable_counting)
{
	static const char *const extra[] = {
		"IOSTAGE_TRACE_CLASSES=dataset:/x;;output=relative", NULL
	};
	struct run r;
	cJSON *rep;

	assert_same_as_untraced(extra, &r);
	rep = only_report(&r, "exit");
	ck_assert(cJSON_IsString(cJSON_GetObjectItem(rep, "disabled")));
	ck_assert(cJSON_GetObjectItem(rep, "counters") == NULL);
	run_free(&r);
}
END_TEST

START_TEST(test_garbage_identity_env)
{
	static const char *const extra[] = { "SLURM_JOB_ID=12x",
					     "SLURM_PROCID=-1",
					     "IOSTAGE_SHIM_TIMEOUT_MS=forever",
					     NULL };
	struct run r;
	cJSON *rep;

	assert_same_as_untraced(extra, &r);
	rep = only_report(&r, "exit");
	ck_assert(cJSON_GetObjectItem(rep, "job") == NULL);
	ck_assert(cJSON_GetObjectItem(rep, "rank") == NULL);
	CK_CTR(rep, "read", "dataset", "POSIX_READS", 48);
	run_free(&r);
}
END_TEST

/* The step rule itself (shim/slurmstep.h), value by value: what each
 * Slurm release puts in a task's environment, and what is not a step. */
static const struct {
	const char *job, *ours, *slurm, *environment;
	long long want; /* -1: no step */
} step_cases[] = {
	/* 22.05, 24.11: the batch step has no SLURM_STEP_ID. */
	{ "42", NULL, NULL, "BATCH", 4294967291LL },
	/* 26.05: the special ids printed with "%d". */
	{ "42", NULL, "-5", "BATCH", 4294967291LL },
	{ "42", NULL, "-6", NULL, 4294967290LL },
	{ "42", NULL, "-4", NULL, 4294967292LL },
	/* An srun step, inside a batch job or not; an interactive step of
	 * 22.05/24.11 ("%u" from srun). */
	{ "42", NULL, "0", "BATCH", 0 },
	{ "42", NULL, "17", NULL, 17 },
	{ "42", NULL, "4294967290", NULL, 4294967290LL },
	{ "42", NULL, "4294967295", NULL, 4294967295LL },
	/* The plugin's IOSTAGE_STEP wins: a batch script that inherited
	 * its submitter's SLURM_STEP_ID, an srun step inside it. */
	{ "42", "42.4294967291", "3", "BATCH", 4294967291LL },
	{ "42", "42.0", "0", "BATCH", 0 },
	/* ... unless it is another job's (inherited through sbatch) or
	 * malformed: then Slurm's variables decide. */
	{ "42", "7.0", NULL, "BATCH", 4294967291LL },
	{ "42", "7.0", "2", NULL, 2 },
	{ "42", "42", "2", NULL, 2 },
	{ "42", "42.", "2", NULL, 2 },
	{ "42", "42.x", "2", NULL, 2 },
	{ "42", "42.4294967296", "2", NULL, 2 },
	{ "42", ".5", "2", NULL, 2 },
	{ "42", "", NULL, "BATCH", 4294967291LL },
	/* A job, and nothing that names a step: salloc's shell. */
	{ "42", NULL, NULL, NULL, -1 },
	{ "42", NULL, "", NULL, -1 },
	{ "42", NULL, NULL, "batch", -1 },
	{ "42", NULL, NULL, "BATCHX", -1 },
	/* Garbage is no step, not step 0 nor the batch step. */
	{ "42", NULL, "x", "BATCH", -1 },
	{ "42", NULL, "-", NULL, -1 },
	{ "42", NULL, "-0", NULL, -1 },
	{ "42", NULL, "-16", NULL, -1 },
	{ "42", NULL, "-99999999999999999999", NULL, -1 },
	{ "42", NULL, "4294967296", NULL, -1 },
	{ "42", NULL, "99999999999999999999999", NULL, -1 },
	{ "42", NULL, " 3", NULL, -1 },
	{ "42", NULL, "+3", NULL, -1 },
	{ "42", NULL, "3 ", NULL, -1 },
	/* No job, no step, whatever else is set. */
	{ NULL, NULL, NULL, NULL, -1 },
	{ NULL, "42.0", "0", "BATCH", -1 },
	{ NULL, NULL, NULL, "BATCH", -1 },
	{ "", NULL, "0", NULL, -1 },
	{ "0", "0.0", "0", NULL, -1 },
	{ "12x", NULL, "0", NULL, -1 },
	{ "4294967296", NULL, "0", NULL, -1 },
};

START_TEST(test_step_rule)
{
	long long got = slurmstep_from_env(step_cases[_i].job,
					   step_cases[_i].ours,
					   step_cases[_i].slurm,
					   step_cases[_i].environment);

	ck_assert_msg(got == step_cases[_i].want,
		      "case %d: SLURM_JOB_ID=%s IOSTAGE_STEP=%s "
		      "SLURM_STEP_ID=%s ENVIRONMENT=%s: step %lld, want %lld",
		      _i, step_cases[_i].job ? step_cases[_i].job : "(unset)",
		      step_cases[_i].ours ? step_cases[_i].ours : "(unset)",
		      step_cases[_i].slurm ? step_cases[_i].slurm : "(unset)",
		      step_cases[_i].environment ? step_cases[_i].environment
						 : "(unset)",
		      got, step_cases[_i].want);
}
END_TEST

/* The same rule in a traced process, end to end: the summaries of a
 * batch script's own process (each release's environment), of an srun
 * step's task, and of a process in no job. */
static const struct {
	const char *mode;
	const char *env[5];
	long long want; /* -1: no "step" key */
} step_runs[] = {
	/* 22.05/24.11 batch step: Slurm sets no SLURM_STEP_ID. */
	{ "basic", { "SLURM_JOB_ID=42", "ENVIRONMENT=BATCH" }, 4294967291LL },
	/* 26.05 batch step. */
	{ "basic",
	  { "SLURM_JOB_ID=42", "SLURM_STEP_ID=-5", "ENVIRONMENT=BATCH" },
	  4294967291LL },
	/* The plugin's word, across an exec (both summaries). */
	{ "exec",
	  { "SLURM_JOB_ID=42", "SLURM_STEP_ID=3", "ENVIRONMENT=BATCH",
	    "IOSTAGE_STEP=42.4294967291" },
	  4294967291LL },
	/* srun's step 0 inside the batch job. */
	{ "basic",
	  { "SLURM_JOB_ID=42", "SLURM_STEP_ID=0", "ENVIRONMENT=BATCH",
	    "IOSTAGE_STEP=42.0" },
	  0 },
	{ "basic", { "SLURM_JOB_ID=42", "SLURM_STEP_ID=0" }, 0 },
	/* No job: no step, even with Slurm-looking variables around. */
	{ "basic",
	  { "SLURM_STEP_ID=3", "ENVIRONMENT=BATCH", "IOSTAGE_STEP=42.3" },
	  -1 },
	{ "basic", { "ENVIRONMENT=BATCH" }, -1 },
};

START_TEST(test_step_in_summaries)
{
	struct run r;

	run_probe(step_runs[_i].mode, true, step_runs[_i].env, &r);
	assert_ran_ok(&r, strcmp(step_runs[_i].mode, "exec") ? "basic" : "one");
	ck_assert_int_ge(r.nreports, 1);
	for (int k = 0; k < r.nreports; k++) {
		const cJSON *step = cJSON_GetObjectItem(r.reports[k], "step");

		if (step_runs[_i].want < 0) {
			ck_assert_msg(step == NULL,
				      "run %d: a summary says step %.0f", _i,
				      cJSON_IsNumber(step) ? step->valuedouble
							   : -1.0);
			continue;
		}
		ck_assert_msg(cJSON_IsNumber(step) &&
				  step->valuedouble ==
				      (double)step_runs[_i].want,
			      "run %d, summary %d: step %.0f, want %lld", _i, k,
			      cJSON_IsNumber(step) ? step->valuedouble : -1.0,
			      step_runs[_i].want);
	}
	if (!strcmp(step_runs[_i].mode, "exec"))
		ck_assert_int_eq(r.nreports, 2);
	run_free(&r);
}
END_TEST

static int listen_socket(const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_STREAM, 0);

	ck_assert_int_ge(fd, 0);
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	ck_assert_int_eq(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	ck_assert_int_eq(listen(fd, 4), 0);
	return fd;
}

START_TEST(test_socket_that_never_answers)
{
	char sock[600], sockvar[700];
	const char *extra[] = { "IOSTAGE_SHIM_REPORT=", sockvar,
				"SLURM_JOB_ID=7", "IOSTAGE_SHIM_TIMEOUT_MS=300",
				NULL };
	struct run r;
	int fd;

	snprintf(sock, sizeof(sock), "%s/mute.sock", tree);
	snprintf(sockvar, sizeof(sockvar), "IOSTAGE_SOCKET=%s", sock);
	fd = listen_socket(sock); /* accepts nothing, answers nothing */
	assert_same_as_untraced(extra, &r);
	close(fd);
	run_free(&r);
}
END_TEST

struct daemon_stub {
	int fd;
	char line[1 << 16];
};

/* One connection: read one line, answer {"ok":true}. */
static void *stub_main(void *arg)
{
	struct daemon_stub *d = arg;
	size_t got = 0;
	int c = accept(d->fd, NULL, NULL);

	if (c < 0)
		return NULL;
	while (got < sizeof(d->line) - 1) {
		ssize_t n = read(c, d->line + got, sizeof(d->line) - 1 - got);

		if (n <= 0)
			break;
		got += (size_t)n;
		if (d->line[got - 1] == '\n')
			break;
	}
	d->line[got] = '\0';
	if (write(c, "{\"ok\":true}\n", 12) != 12)
		d->line[0] = '\0';
	close(c);
	return NULL;
}

/* iostaged out of connection slots: the first BUSY connections are
 * refused at once (the line unread), as daemon/server.c does. */
struct busy_stub {
	struct daemon_stub d;
	int busy;
	int refused;
};

static void *busy_stub_main(void *arg)
{
	static const char refusal[] =
	    "{\"ok\":false,\"error\":\"too many connections of uid 1 "
	    "(limit 1)\"}\n";
	struct busy_stub *b = arg;

	while (b->refused < b->busy) {
		int c = accept(b->d.fd, NULL, NULL);

		if (c < 0)
			return NULL;
		if (write(c, refusal, sizeof(refusal) - 1) > 0)
			b->refused++;
		close(c);
	}
	return stub_main(&b->d);
}

START_TEST(test_socket_busy_then_delivered)
{
	static struct busy_stub stub;
	char sock[600], sockvar[700];
	const char *extra[] = { "IOSTAGE_SHIM_REPORT=", sockvar,
				"SLURM_JOB_ID=42",
				"IOSTAGE_SHIM_TIMEOUT_MS=5000", NULL };
	struct run r;
	pthread_t t;
	cJSON *rep;

	snprintf(sock, sizeof(sock), "%s/busy.sock", tree);
	snprintf(sockvar, sizeof(sockvar), "IOSTAGE_SOCKET=%s", sock);
	stub.d.fd = listen_socket(sock);
	stub.busy = 3;
	stub.refused = 0;
	ck_assert_int_eq(pthread_create(&t, NULL, busy_stub_main, &stub), 0);
	run_probe("basic", true, extra, &r);
	pthread_join(t, NULL);
	assert_ran_ok(&r, "basic");
	ck_assert_int_eq(stub.refused, 3);
	rep = cJSON_Parse(stub.d.line);
	ck_assert_msg(rep != NULL, "daemon got '%.200s'", stub.d.line);
	ck_assert_str_eq(cJSON_GetObjectItem(rep, "op")->valuestring,
			 "shim_report");
	CK_CTR(rep, "read", "dataset", "POSIX_BYTES_READ", 120550);
	cJSON_Delete(rep);
	close(stub.d.fd);
	run_free(&r);
}
END_TEST

START_TEST(test_socket_delivery)
{
	static struct daemon_stub stub;
	char sock[600], sockvar[700];
	const char *extra[] = { "IOSTAGE_SHIM_REPORT=",  sockvar,
				"SLURM_JOB_ID=42",       "SLURM_STEP_ID=3",
				"SLURM_PROCID=5",        "SLURM_LOCALID=1",
				"SLURMD_NODENAME=node7", NULL };
	struct run r;
	pthread_t t;
	cJSON *rep;

	snprintf(sock, sizeof(sock), "%s/d.sock", tree);
	snprintf(sockvar, sizeof(sockvar), "IOSTAGE_SOCKET=%s", sock);
	stub.fd = listen_socket(sock);
	ck_assert_int_eq(pthread_create(&t, NULL, stub_main, &stub), 0);
	run_probe("basic", true, extra, &r);
	pthread_join(t, NULL);
	assert_ran_ok(&r, "basic");
	rep = cJSON_Parse(stub.line);
	ck_assert_msg(rep != NULL, "daemon got '%.200s'", stub.line);
	ck_assert_str_eq(cJSON_GetObjectItem(rep, "op")->valuestring,
			 "shim_report");
	ck_assert_int_eq((int)cJSON_GetObjectItem(rep, "job")->valuedouble, 42);
	ck_assert_int_eq((int)cJSON_GetObjectItem(rep, "step")->valuedouble, 3);
	ck_assert_int_eq((int)cJSON_GetObjectItem(rep, "rank")->valuedouble, 5);
	ck_assert_int_eq(
	    (int)cJSON_GetObjectItem(rep, "local_rank")->valuedouble, 1);
	ck_assert_str_eq(cJSON_GetObjectItem(rep, "node")->valuestring,
			 "node7");
	ck_assert_str_eq(cJSON_GetObjectItem(rep, "identity")->valuestring,
			 "slurm");
	CK_CTR(rep, "read", "dataset", "POSIX_BYTES_READ", 120550);
	cJSON_Delete(rep);
	close(stub.fd);
	run_free(&r);
}
END_TEST

static Suite *shim_suite(void)
{
	Suite *s = suite_create("shim");
	TCase *tc = tcase_create("preload");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_basic_counts_exact);
	tcase_add_test(tc, test_fork_each_process_reports);
	tcase_add_test(tc, test_observed_tree);
	tcase_add_test(tc, test_exec_reports_before_and_traces_after);
	tcase_add_test(tc, test_execl_reports_before_and_traces_after);
	tcase_add_test(tc, test_vfork_child_does_not_report_for_the_parent);
	tcase_add_test(tc, test_system_children_are_traced);
	tcase_add_test(tc, test_threads_totals_exact);
	tcase_add_test(tc, test_signal_handler_io_no_deadlock);
	tcase_add_test(tc, test_phase_markers_and_overflow);
	tcase_add_test(tc, test_stdio_seeks_append_close_range);
	tcase_add_test(tc, test_only_file_io_counted);
	tcase_add_test(tc, test_redirected_stdin_stdout_are_file_io);
	tcase_add_test(tc, test_in_kernel_copies_counted_per_side);
	tcase_add_test(tc, test_fds_beyond_the_table);
	tcase_add_test(tc, test_path_forms_classified);
	tcase_add_test(tc, test_errno_and_results_unchanged);
	tcase_add_test(tc, test_unwritable_report_path);
	tcase_add_test(tc, test_garbage_classes_disable_counting);
	tcase_add_test(tc, test_garbage_identity_env);
	tcase_add_loop_test(tc, test_step_rule, 0,
			    (int)(sizeof(step_cases) / sizeof(step_cases[0])));
	tcase_add_loop_test(tc, test_step_in_summaries, 0,
			    (int)(sizeof(step_runs) / sizeof(step_runs[0])));
	tcase_add_test(tc, test_socket_that_never_answers);
	tcase_add_test(tc, test_socket_delivery);
	tcase_add_test(tc, test_socket_busy_then_delivered);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return check_run(shim_suite());
}
