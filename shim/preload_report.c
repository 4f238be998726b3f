/* preload_report.c - the one summary a process sends when it ends.
 *
 * One JSON line, the shim_report op of docs/RECORDS.md, built by hand with
 * bounded appends into a static buffer: the exit path may run while other
 * threads still do I/O, after malloc's state is unknown (a fork child, a
 * signal), or inside an exec wrapper, so it allocates nothing and links no
 * JSON library into the application (cJSON in the app's address space
 * could also clash with the app's own copy). The line goes to the file
 * named by IOSTAGE_SHIM_REPORT (appended with one write) or else to
 * iostaged's socket, with raw system calls and a bounded timeout.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "shim/preload.h"
#include "shim/slurmstep.h"

#define REPORT_MAX (512 * 1024)
#define REPORT_TIMEOUT_MS 1000
#define REPORT_TIMEOUT_MAX_MS 10000
#define DEFAULT_SOCKET "/run/iostage/iostaged.sock"

/* The counters a summary prints, in Darshan's order (not the order they
 * are kept in, which follows the cache lines: preload.h). */
static const struct {
	unsigned counter;
	const char *name;
} counters[] = {
	{ SHIM_OPENS, "POSIX_OPENS" },
	{ SHIM_READS, "POSIX_READS" },
	{ SHIM_WRITES, "POSIX_WRITES" },
	{ SHIM_SEEKS, "POSIX_SEEKS" },
	{ SHIM_STATS, "POSIX_STATS" },
	{ SHIM_FSYNCS, "POSIX_FSYNCS" },
	{ SHIM_BYTES_READ, "POSIX_BYTES_READ" },
	{ SHIM_BYTES_WRITTEN, "POSIX_BYTES_WRITTEN" },
	{ SHIM_MAX_BYTE_READ, "POSIX_MAX_BYTE_READ" },
	{ SHIM_MAX_BYTE_WRITTEN, "POSIX_MAX_BYTE_WRITTEN" },
	{ SHIM_CONSEC_READS, "POSIX_CONSEC_READS" },
	{ SHIM_CONSEC_WRITES, "POSIX_CONSEC_WRITES" },
	{ SHIM_SEQ_READS, "POSIX_SEQ_READS" },
	{ SHIM_SEQ_WRITES, "POSIX_SEQ_WRITES" },
	{ SHIM_RW_SWITCHES, "POSIX_RW_SWITCHES" },
	{ SHIM_SIZE_READ_0 + 0, "POSIX_SIZE_READ_0_100" },
	{ SHIM_SIZE_READ_0 + 1, "POSIX_SIZE_READ_100_1K" },
	{ SHIM_SIZE_READ_0 + 2, "POSIX_SIZE_READ_1K_10K" },
	{ SHIM_SIZE_READ_0 + 3, "POSIX_SIZE_READ_10K_100K" },
	{ SHIM_SIZE_READ_0 + 4, "POSIX_SIZE_READ_100K_1M" },
	{ SHIM_SIZE_READ_0 + 5, "POSIX_SIZE_READ_1M_4M" },
	{ SHIM_SIZE_READ_0 + 6, "POSIX_SIZE_READ_4M_10M" },
	{ SHIM_SIZE_READ_0 + 7, "POSIX_SIZE_READ_10M_100M" },
	{ SHIM_SIZE_READ_0 + 8, "POSIX_SIZE_READ_100M_1G" },
	{ SHIM_SIZE_READ_0 + 9, "POSIX_SIZE_READ_1G_PLUS" },
	{ SHIM_SIZE_WRITE_0 + 0, "POSIX_SIZE_WRITE_0_100" },
	{ SHIM_SIZE_WRITE_0 + 1, "POSIX_SIZE_WRITE_100_1K" },
	{ SHIM_SIZE_WRITE_0 + 2, "POSIX_SIZE_WRITE_1K_10K" },
	{ SHIM_SIZE_WRITE_0 + 3, "POSIX_SIZE_WRITE_10K_100K" },
	{ SHIM_SIZE_WRITE_0 + 4, "POSIX_SIZE_WRITE_100K_1M" },
	{ SHIM_SIZE_WRITE_0 + 5, "POSIX_SIZE_WRITE_1M_4M" },
	{ SHIM_SIZE_WRITE_0 + 6, "POSIX_SIZE_WRITE_4M_10M" },
	{ SHIM_SIZE_WRITE_0 + 7, "POSIX_SIZE_WRITE_10M_100M" },
	{ SHIM_SIZE_WRITE_0 + 8, "POSIX_SIZE_WRITE_100M_1G" },
	{ SHIM_SIZE_WRITE_0 + 9, "POSIX_SIZE_WRITE_1G_PLUS" },
	{ SHIM_F_READ_TIME, "POSIX_F_READ_TIME" },
	{ SHIM_F_WRITE_TIME, "POSIX_F_WRITE_TIME" },
	{ SHIM_F_META_TIME, "POSIX_F_META_TIME" },
};
/* Every counter but the two busy times (printed as one, below). */
_Static_assert(sizeof(counters) / sizeof(counters[0]) == SHIM_NCOUNTERS - 2,
	       "a counter has no name in the summary");

static const char *const class_keys[SHIM_NCLASSES] = {
	[SHIM_CLASS_DATASET] = "dataset",
	[SHIM_CLASS_OUTPUT] = "output",
	[SHIM_CLASS_OTHER] = "other",
};

/* Who we are and where the summary goes, read once at start-up (the
 * application may change its environment later). */
static struct {
	long long job, step, rank, local_rank; /* -1: unknown */
	const char *identity;                  /* "pmix", "slurm", NULL */
	char node[64];
	char report_file[4096];
	char socket_path[sizeof(((struct sockaddr_un *)0)->sun_path)];
	int timeout_ms;
	double start;
} id;

static uint64_t merged[SHIM_MAX_PHASES][SHIM_NCLASSES][SHIM_NCOUNTERS];
static char out[REPORT_MAX];

struct jbuf {
	char *buf;
	size_t len, cap;
	bool full;
};

static void jb_printf(struct jbuf *b, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void jb_printf(struct jbuf *b, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (b->full)
		return;
	va_start(ap, fmt);
	n = vsnprintf(b->buf + b->len, b->cap - b->len, fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= b->cap - b->len) {
		b->full = true;
		return;
	}
	b->len += (size_t)n;
}

static void jb_string(struct jbuf *b, const char *s)
{
	jb_printf(b, "\"");
	for (; *s && !b->full; s++) {
		unsigned char c = (unsigned char)*s;

		if (c == '"' || c == '\\')
			jb_printf(b, "\\%c", c);
		else if (c < 0x20)
			jb_printf(b, "\\u%04x", c);
		else
			jb_printf(b, "%c", c);
	}
	jb_printf(b, "\"");
}

static long long env_number(const char *name)
{
	const char *v = getenv(name);
	long long n = 0;

	if (!v || !*v)
		return -1;
	for (; *v; v++) {
		if (*v < '0' || *v > '9' || n > 100000000000LL)
			return -1;
		n = n * 10 + (*v - '0');
	}
	return n;
}

static double wall_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

void shim_report_mark_start(void)
{
	id.start = wall_now();
}

void shim_report_init(void)
{
	const char *v;
	long long t;
	size_t i;

	id.job = env_number("SLURM_JOB_ID");
	/* No job, no step; the batch step has no SLURM_STEP_ID before
	 * 26.05 (shim/slurmstep.h). */
	id.step = slurmstep_from_env(getenv("SLURM_JOB_ID"),
				     getenv("IOSTAGE_STEP"),
				     getenv("SLURM_STEP_ID"),
				     getenv("ENVIRONMENT"));
	id.local_rank = env_number("SLURM_LOCALID");
	id.rank = env_number("PMIX_RANK");
	id.identity = "pmix";
	if (id.rank < 0) {
		id.rank = env_number("SLURM_PROCID");
		id.identity = id.rank >= 0 ? "slurm" : NULL;
	}
	v = getenv("SLURMD_NODENAME");
	if (!v || !*v) {
		if (gethostname(id.node, sizeof(id.node) - 1) < 0)
			id.node[0] = '\0';
		v = id.node;
	}
	for (i = 0; v[i] && v[i] != '.' && i < sizeof(id.node) - 1; i++) {
		char c = v[i];
		bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
			  (c >= '0' && c <= '9') || c == '_' || c == '-';
		id.node[i] = ok ? c : '-';
	}
	id.node[i] = '\0';
	v = getenv("IOSTAGE_SHIM_REPORT");
	id.report_file[0] = '\0';
	if (v && strlen(v) < sizeof(id.report_file))
		memcpy(id.report_file, v, strlen(v) + 1);
	v = getenv("IOSTAGE_SOCKET");
	if (!v || !*v || strlen(v) >= sizeof(id.socket_path))
		v = DEFAULT_SOCKET;
	memcpy(id.socket_path, v, strlen(v) + 1);
	t = env_number("IOSTAGE_SHIM_TIMEOUT_MS");
	id.timeout_ms = t >= 0 && t <= REPORT_TIMEOUT_MAX_MS
			    ? (int)t
			    : REPORT_TIMEOUT_MS;
	shim_report_mark_start();
}

static bool entry_used(const uint64_t *c)
{
	for (unsigned k = 0; k < SHIM_NCOUNTERS; k++)
		if (c[k])
			return true;
	return false;
}

static void put_counters(struct jbuf *b, const uint64_t *c, double spt)
{
	jb_printf(b, "{");
	for (size_t i = 0; i < sizeof(counters) / sizeof(counters[0]); i++) {
		unsigned k = counters[i].counter;
		const char *name = counters[i].name;

		if (k == SHIM_F_READ_TIME || k == SHIM_F_WRITE_TIME ||
		    k == SHIM_F_META_TIME) {
			jb_printf(b, "\"%s\":%.6f,", name, (double)c[k] * spt);
			continue;
		}
		if (k == SHIM_MAX_BYTE_READ || k == SHIM_MAX_BYTE_WRITTEN) {
			/* Kept as end offset; absent when nothing moved. */
			if (c[k])
				jb_printf(b, "\"%s\":%llu,", name,
					  (unsigned long long)(c[k] - 1));
			continue;
		}
		jb_printf(b, "\"%s\":%llu,", name, (unsigned long long)c[k]);
	}
	jb_printf(b, "\"IOSTAGE_UNOVERLAPPED_IO_TIME\":%.6f}",
		  (double)c[SHIM_BUSY_CLASS] * spt);
}

static void put_identity(struct jbuf *b, const char *reason)
{
	jb_printf(b, "{\"op\":\"shim_report\"");
	if (id.job >= 0)
		jb_printf(b, ",\"job\":%lld", id.job);
	jb_printf(b, ",\"pid\":%ld,\"ppid\":%ld", (long)syscall(SYS_getpid),
		  (long)syscall(SYS_getppid));
	if (id.step >= 0)
		jb_printf(b, ",\"step\":%lld", id.step);
	if (id.rank >= 0)
		jb_printf(b, ",\"rank\":%lld", id.rank);
	if (id.local_rank >= 0)
		jb_printf(b, ",\"local_rank\":%lld", id.local_rank);
	jb_printf(b, ",\"node\":");
	jb_string(b, id.node);
	if (id.identity)
		jb_printf(b, ",\"identity\":\"%s\"", id.identity);
	jb_printf(b, ",\"reason\":\"%s\",\"start\":%.6f,\"end\":%.6f", reason,
		  id.start, wall_now());
}

/* The summary into out[]; WITH_FILES = false drops the files list (the
 * retry when everything did not fit). Returns its length, 0 if too big. */
static size_t build(const char *reason, bool with_files)
{
	struct jbuf b = { .buf = out, .cap = sizeof(out) - 1 };
	double spt = shim_clock_seconds_per_tick();
	const char *disabled = shim_disabled_reason();
	const char *oroot;
	size_t olen;
	uint64_t ofiles, obytes, omissed;
	bool first = true;

	put_identity(&b, reason);
	if (disabled) {
		/* No counters: after a failure they would be partial. */
		jb_printf(&b, ",\"disabled\":");
		jb_string(&b, disabled);
		goto close;
	}
	jb_printf(&b, ",\"counters\":{");
	for (unsigned p = 0; p < SHIM_MAX_PHASES; p++) {
		bool pfirst = true;

		if (!shim_phase_name(p))
			continue;
		for (unsigned c = 0; c < SHIM_NCLASSES; c++) {
			if (!entry_used(merged[p][c]))
				continue;
			if (pfirst) {
				jb_printf(&b, "%s\"%s\":{", first ? "" : ",",
					  shim_phase_name(p));
				first = pfirst = false;
			} else {
				jb_printf(&b, ",");
			}
			jb_printf(&b, "\"%s\":", class_keys[c]);
			put_counters(&b, merged[p][c], spt);
		}
		if (!pfirst)
			jb_printf(&b, "}");
	}
	jb_printf(&b, "},\"io_seconds\":{");
	first = true;
	for (unsigned p = 0; p < SHIM_MAX_PHASES; p++) {
		uint64_t t = 0;

		if (!shim_phase_name(p))
			continue;
		for (unsigned c = 0; c < SHIM_NCLASSES; c++)
			t += merged[p][c][SHIM_F_READ_TIME] +
			     merged[p][c][SHIM_F_WRITE_TIME] +
			     merged[p][c][SHIM_F_META_TIME];
		if (!t)
			continue;
		jb_printf(&b, "%s\"%s\":%.6f", first ? "" : ",",
			  shim_phase_name(p), (double)t * spt);
		first = false;
	}
	jb_printf(&b, "},\"unoverlapped\":{");
	first = true;
	for (unsigned p = 0; p < SHIM_MAX_PHASES; p++) {
		uint64_t t = 0;

		if (!shim_phase_name(p))
			continue;
		for (unsigned c = 0; c < SHIM_NCLASSES; c++)
			t += merged[p][c][SHIM_BUSY_ALL];
		if (!t)
			continue;
		jb_printf(&b, "%s\"%s\":%.6f", first ? "" : ",",
			  shim_phase_name(p), (double)t * spt);
		first = false;
	}
	jb_printf(&b, "}");
	if (shim_phases_folded())
		jb_printf(&b, ",\"phases_folded\":%u", shim_phases_folded());
	if (shim_observe_get(&oroot, &olen, &ofiles, &obytes, &omissed)) {
		static char rootbuf[4096]; /* off a possibly small stack */

		memcpy(rootbuf, oroot, olen);
		rootbuf[olen] = '\0';
		jb_printf(&b, ",\"observed\":{\"root\":");
		jb_string(&b, rootbuf);
		jb_printf(&b, ",\"files\":%llu,\"bytes\":%llu,\"missed\":%llu}",
			  (unsigned long long)ofiles,
			  (unsigned long long)obytes,
			  (unsigned long long)omissed);
	}
	if (with_files) {
		size_t n = shim_files_count();

		jb_printf(&b, ",\"files\":[");
		first = true;
		for (size_t i = 0; i < n; i++) {
			const char *path;
			enum shim_class cls;
			uint64_t written;

			if (!shim_files_get(i, &path, &cls, &written))
				continue;
			jb_printf(&b, "%s{\"path\":", first ? "" : ",");
			jb_string(&b, path);
			jb_printf(&b, ",\"class\":\"%s\",\"written\":%llu}",
				  class_keys[cls], (unsigned long long)written);
			first = false;
		}
		jb_printf(&b, "]");
	}
close:
	jb_printf(&b, "}\n");
	return b.full ? 0 : b.len;
}

static int write_all(int fd, const char *buf, size_t len, bool sock)
{
	while (len > 0) {
		ssize_t n = sock ? (ssize_t)syscall(SYS_sendto, fd, buf, len,
						    MSG_NOSIGNAL, NULL, 0)
				 : (ssize_t)syscall(SYS_write, fd, buf, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN && sock) {
			struct pollfd p = { .fd = fd, .events = POLLOUT };

			if (syscall(SYS_poll, &p, 1, id.timeout_ms) <= 0)
				return -1;
			continue;
		}
		if (n <= 0)
			return -1;
		buf += n;
		len -= (size_t)n;
	}
	return 0;
}

static int send_file(const char *buf, size_t len)
{
	/* O_NONBLOCK: a FIFO without a reader must not hang the exit. */
	int fd = (int)syscall(SYS_openat, AT_FDCWD, id.report_file,
			      O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC |
				  O_NONBLOCK | O_NOCTTY,
			      0644);
	int rc;

	if (fd < 0)
		return -1;
	rc = write_all(fd, buf, len, false);
	syscall(SYS_close, fd);
	return rc;
}

/* Send the line, then wait (bounded) for the daemon's one-line reply so
 * the summary has been read before the process goes away. 0 when read,
 * 1 when iostaged had no connection slot for us (daemon/server.c's
 * PROTO_BUSY refusal: the line was not read), -1 otherwise. */
static int send_socket_once(const char *buf, size_t len)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct pollfd p;
	char reply[256];
	ssize_t n;
	int fd, rc = -1;

	memcpy(sa.sun_path, id.socket_path, strlen(id.socket_path) + 1);
	fd = (int)syscall(SYS_socket, AF_UNIX,
			  SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return -1;
	if (syscall(SYS_connect, fd, &sa, sizeof(sa)) < 0) {
		if (errno != EINPROGRESS && errno != EAGAIN)
			goto out;
		p = (struct pollfd){ .fd = fd, .events = POLLOUT };
		if (syscall(SYS_poll, &p, 1, id.timeout_ms) <= 0)
			goto out;
	}
	p = (struct pollfd){ .fd = fd, .events = POLLIN };
	/* A refused connection may be closed before the line is all sent:
	 * its reply is read all the same. */
	if (write_all(fd, buf, len, true) < 0 &&
	    syscall(SYS_poll, &p, 1, 0) <= 0)
		goto out;
	if (syscall(SYS_poll, &p, 1, id.timeout_ms) > 0 &&
	    (n = syscall(SYS_recvfrom, fd, reply, sizeof(reply) - 1, 0, NULL,
			 NULL)) > 0) {
		reply[n] = '\0';
		rc = strstr(reply, "\"ok\":false") &&
			     strstr(reply, "too many connections")
			 ? 1
			 : 0;
	}
out:
	syscall(SYS_close, fd);
	return rc;
}

/* A busy daemon (many processes of many jobs ending at once) is asked
 * again, 10 to 80 ms apart, for up to the report's timeout. */
static int send_socket(const char *buf, size_t len)
{
	struct timespec pause = { 0, 10 * 1000 * 1000 };
	long waited_ms = 0;
	int rc;

	if (id.job < 0)
		return -1; /* nothing to file it under */
	while ((rc = send_socket_once(buf, len)) == 1 &&
	       waited_ms < id.timeout_ms) {
		syscall(SYS_nanosleep, &pause, NULL);
		waited_ms += pause.tv_nsec / 1000000;
		if (pause.tv_nsec < 80 * 1000 * 1000)
			pause.tv_nsec *= 2;
	}
	return rc == 0 ? 0 : -1;
}

/* Did the process make any counted call? A shell's fork-then-exec child
 * that only closed and dup'ed fds has nothing worth a message. */
static bool anything_counted(void)
{
	static const unsigned ops[] = { SHIM_OPENS, SHIM_READS, SHIM_WRITES,
					SHIM_SEEKS, SHIM_STATS, SHIM_FSYNCS };

	for (unsigned p = 0; p < SHIM_MAX_PHASES; p++)
		for (unsigned c = 0; c < SHIM_NCLASSES; c++)
			for (size_t i = 0; i < sizeof(ops) / sizeof(ops[0]);
			     i++)
				if (merged[p][c][ops[i]])
					return true;
	return false;
}

int shim_report_send(const char *reason)
{
	int saved = errno, rc;
	size_t len;

	if (!shim_disabled_reason()) {
		shim_counters_merge(merged);
		if (!anything_counted())
			return 0;
	}
	len = build(reason, true);

	if (!len)
		len = build(reason, false);
	if (!len) {
		errno = saved;
		return -1;
	}
	rc = id.report_file[0] ? send_file(out, len) : send_socket(out, len);
	errno = saved;
	return rc;
}
