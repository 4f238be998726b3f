/* fuzz_worker_lines.c - what a stage or drain worker writes to iostaged.
 *
 * The workers are our binary, but they run as the job's user, who may
 * ptrace them and make them write anything: to root, their output is
 * outside input. The first byte of the input picks the reader, the rest
 * is the bytes the worker wrote:
 *   0  a stage worker checking a version (daemon/staging/stage.c, follow():
 *      framing, JSON, on_message)
 *   1  a stage worker building one, whose totals line reserves space on
 *      the tier (cache_reserve) and is answered "go"
 *   2  a drain worker (daemon/staging/drain.c, worker_line on each line as
 *      worker_read splits them)
 * stage.c and drain.c are included for their static readers. The
 * "worker" iostaged would kill on a protocol violation is a child that
 * has exited and is never reaped, so the kill reaches nobody. */
#include "tests/fuzz/fuzz.h"

#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>

#include "daemon/staging/stage.c"
/* both files have a static sanitize() */
#define sanitize drain_sanitize
#include "daemon/staging/drain.c"
#undef sanitize

#include "tests/fuzz/fuzz_job.h"
#include "tests/fuzz/spawn_stub.h"

static struct conf conf;
static struct job *job;
static pid_t zombie;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	struct cache_params cp;
	struct cache *cache;
	char err[CONF_ERR_MAX];

	(void)argc;
	(void)argv;
	fuzz_conf(&conf);
	if (tiers_init(&conf, err, sizeof(err)) < 0)
		goto fail;
	cache_params_tiers(&conf, &cp);
	cache = cache_create(&cp, err, sizeof(err));
	if (!cache)
		goto fail;
	stage_init(&conf, cache);
	if (jobs_init(&conf, cache, err, sizeof(err)) < 0)
		goto fail;
	tiers_detach_stale(jobs_known);
	if (cache_recover(cache, jobs_known, err, sizeof(err)) < 0)
		goto fail;
	job = fuzz_job(&conf, 42);
	zombie = fork();
	if (zombie < 0)
		abort();
	if (zombie == 0)
		_exit(0);
	return 0;
fail:
	fprintf(stderr, "fuzz: %s\n", err);
	exit(2);
}

/* Stage worker output DATA, read as follow() reads it. */
static void stage_lines(const uint8_t *data, size_t size,
			enum worker_mode mode)
{
	struct profile_dataset ds = {.name = "d", .path = "/pfs/d"};
	struct run run = {.job = job, .timeout_s = 5};
	struct worker w = {.pid = zombie};
	struct outcome o;
	int sv[2];

	if (size > 128 * 1024)
		return; /* the socket buffer: the writer must not block */
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
		abort();
	if (size && write(sv[1], data, size) != (ssize_t)size)
		abort();
	close(sv[1]);
	w.out = sv[0];
	w.in = open("/dev/null", O_WRONLY | O_CLOEXEC);
	if (w.in < 0)
		abort();
	clock_gettime(CLOCK_MONOTONIC, &run.deadline);
	run.deadline.tv_sec += run.timeout_s;
	memset(&o, 0, sizeof(o));
	follow(&run, &w, 0, &ds, mode, &o);
	if (o.reserved) /* as run_worker does after the worker */
		tiers_release(0, o.reserved);
	if (w.in >= 0)
		close(w.in);
	close(w.out);
}

/* Drain worker output DATA, split into lines as worker_read splits it. */
static void drain_lines(const uint8_t *data, size_t size)
{
	static struct djob dj = {.id = 42, .uid = 1000, .gid = 1000};
	struct dout *o = &dj.outs[0];
	char *buf, *start, *nl, *end;

	dj.nouts = 1;
	o->job = &dj;
	snprintf(o->name, sizeof(o->name), "ckpt");
	o->pid = zombie;
	o->busy = o->busy_final = true;
	buf = fuzz_str(data, size);
	end = buf + size;
	for (start = buf; (nl = memchr(start, '\n', (size_t)(end - start)));
	     start = nl + 1) {
		*nl = '\0';
		if (nl - start >= DRAIN_LINE_MAX)
			break; /* worker_read kills a worker for that */
		if (worker_line(o, start) < 0)
			break;
	}
	free(buf);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	switch (data[0] % 3) {
	case 0:
		stage_lines(data + 1, size - 1, WORKER_CHECK);
		break;
	case 1:
		stage_lines(data + 1, size - 1, WORKER_BUILD);
		break;
	default:
		drain_lines(data + 1, size - 1);
		break;
	}
	return 0;
}
