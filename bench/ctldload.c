/* ctldload.c - bench: iostagectld over the network, MUNGE included, as
 * 1,000 node agents filing at once and users asking for advice.
 *
 *   build/bench/ctldload -p PORT [-H HOST] [-S MUNGE_SOCKET] [-a AGENTS]
 *       [-n JOBS] [-j FIRST_JOB] [-b BATCH] [-t THREADS] [-q QUERIES]
 *       [-Q QUERY_THREADS] [-P SERVICE_PID] [-L LABEL] [-m 0|1]
 *       [-r FILINGS_PER_S] [-M MUNGED_PID]
 *
 * Filing: AGENTS agents (default 1,000), each with its own connection to
 * the service at a time (the protocol is one request per connection, so
 * an agent connects, sends one credentialled request, reads the reply,
 * closes and goes on with the next: with 1,000 agents about 1,000
 * connections are open on the service all the time). They file JOBS jobs
 * (ids FIRST_JOB + 1 ...), records of bench/recgen.h's realistic size;
 * with -m 1 (the default) one job in ten is a 3-node job whose three parts
 * come as three filings from three node names, in three requests (the
 * service merges them). BATCH 1 is the contract's
 * `file` op, one record per credential; BATCH > 1 is `file_batch`, BATCH
 * filings under one credential. Every credential is encoded here, by the
 * generator, when its request is sent (on a cluster the nodes' own munged
 * would do that; on this one machine it shares the CPU with the service).
 * THREADS event loops (default 4) drive the agents. A request the
 * service answers "busy" (more connections than it serves at once) is
 * sent again with a new credential, as a node agent retries from its
 * outbox; the summary counts them.
 *
 * With -r, filings are handed out no faster than FILINGS_PER_S (a
 * cluster's steady rate rather than a backlog).
 *
 * Queries: with QUERIES > 0, QUERY_THREADS users (default 1) ask
 * `recommend` for a random user + job name while the filing goes on, each
 * request its own connection and credential, as `sbatch --io-profile=auto`
 * does; the latency is the whole round trip (encode, connect, the
 * service's decode and work, reply). The agents' event loops then run at
 * nice 10: on a cluster their work is done on the nodes, not on the
 * service's host.
 *
 * With -P, the service's VmRSS, VmHWM, threads and open file descriptors
 * are sampled every 50 ms (/proc/PID): the peak and the value at the end;
 * and the CPU time the service (and with -M the munged both sides share
 * on this one machine, and the generator itself) spent during the filing,
 * per job: the figure that carries over to a dedicated service host.
 *
 * Prints a summary and one JSON line ("ctldload: {...}"). Exit status 1
 * when any filing or query failed.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <pwd.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <cJSON.h>

#include "bench/recgen.h"
#include "common/base/jsonbuf.h"
#include "common/net/peernet.h"

#define THREADS_MAX 64
#define AGENTS_MAX 20000
#define NODE_PARTS 3  /* a multi-node job's nodes */
#define GROUP_JOBS 10 /* one job in GROUP_JOBS is multi-node */
#define GROUP_FILINGS (GROUP_JOBS - 1 + NODE_PARTS)
#define USER_NAMES_MAX 1000
#define REPLY_MAX 65536 /* a batch's answers, errors included */

static const char *opt_host = "127.0.0.1", *opt_sock, *opt_label = "";
static unsigned opt_port, opt_agents = 1000, opt_jobs = 100000, opt_batch = 1;
static unsigned opt_first, opt_threads = 4, opt_queries, opt_qthreads = 1;
static unsigned opt_multi = 1; /* one job in GROUP_JOBS multi-node */
static double opt_rate;        /* filings per second, 0: as fast as they go */
static double t_start;
static int opt_pid, opt_munge_pid;
static struct sockaddr_storage svc_addr;
static socklen_t svc_addrlen;
static double t0_wall;

static atomic_uint next_filing; /* the next filing index to hand out */
static atomic_uint filed, failed_filings, requests, open_conns;
static atomic_uint in_flight; /* requests started and not yet closed */
static atomic_uint max_open_conns;
static atomic_int filing_done;
static char first_error[1024];
static pthread_mutex_t err_lock = PTHREAD_MUTEX_INITIALIZER;

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void note_error(const char *fmt, const char *what)
{
	pthread_mutex_lock(&err_lock);
	if (!first_error[0])
		snprintf(first_error, sizeof(first_error), fmt, what);
	pthread_mutex_unlock(&err_lock);
}

static unsigned total_filings(void)
{
	if (!opt_multi)
		return opt_jobs;
	unsigned groups = opt_jobs / GROUP_JOBS, rest = opt_jobs % GROUP_JOBS;

	return groups * GROUP_FILINGS + rest;
}

/* Filing I: its job (1-based, before FIRST_JOB) and part. Filings come
 * in groups of GROUP_JOBS - 1 one-node jobs and NODE_PARTS part slots;
 * part P of a multi-node job comes P x PART_SPREAD groups after its first
 * part (wrapping round at the end), so that, as on a cluster where every
 * node sends its own part, a job's parts arrive in different requests a
 * little apart, never together in one batch. */
#define PART_SPREAD 16 /* groups: 192 filings, more than a batch */
static void filing_job(unsigned i, unsigned *ret_job, unsigned *ret_part,
		       unsigned *ret_parts)
{
	unsigned g = i / GROUP_FILINGS, k = i % GROUP_FILINGS;
	unsigned groups = opt_jobs / GROUP_JOBS;

	if (!opt_multi || g >= groups) { /* the rest after the last group */
		*ret_job = opt_multi ? groups * GROUP_JOBS + k + 1 : i + 1;
		*ret_part = 0;
		*ret_parts = 1;
	} else if (k < GROUP_JOBS - 1) {
		*ret_job = g * GROUP_JOBS + k + 1;
		*ret_part = 0;
		*ret_parts = 1;
	} else {
		unsigned p = k - (GROUP_JOBS - 1);
		unsigned back = (p * PART_SPREAD) % groups;

		*ret_job = ((g + groups - back) % groups) * GROUP_JOBS +
			   GROUP_JOBS;
		*ret_part = p;
		*ret_parts = NODE_PARTS;
	}
}

/* Append filing I's entry {job, node, nodes, record} to OUT (the record
 * from TEMPLATE, printed into REC). Printed straight from the template:
 * copying a tree per filing cost the generator more CPU than the
 * service's filing of it, on the cores they share. -1 on ENOMEM. */
static int filing_entry(unsigned i, cJSON *template, struct jsonbuf *rec,
			struct jsonbuf *out)
{
	unsigned job, part, parts, id;
	char node[16], head[256];
	int n;

	filing_job(i, &job, &part, &parts);
	id = opt_first + job;
	/* the seed from the job: every part of a job is the same job */
	recgen_set_job(template, id, opt_first + opt_jobs, t0_wall,
		       job * 2654435761u);
	snprintf(node, sizeof(node), "c%04u", (id * 7 + part) % 10000);
	cJSON_SetValuestring(cJSON_GetObjectItemCaseSensitive(template, "node"),
			     node);
	n = snprintf(head, sizeof(head),
		     "{\"job\":%u,\"node\":\"%s\","
		     "\"nodes\":[",
		     id, node);
	for (unsigned p = 0; p < parts; p++)
		n += snprintf(head + n, sizeof(head) - (size_t)n, "%s\"c%04u\"",
			      p ? "," : "", (id * 7 + p) % 10000);
	n += snprintf(head + n, sizeof(head) - (size_t)n, "],\"record\":");
	if (jsonbuf_print(rec, template, NULL) < 0 ||
	    jsonbuf_put_bytes(out, head, (size_t)n) < 0 ||
	    jsonbuf_put_bytes(out, rec->data, rec->len) < 0 ||
	    jsonbuf_put_bytes(out, "}", 1) < 0)
		return -1;
	return 0;
}

/* Requests the service answered "busy" (over its connections bound), to
 * send again with a new credential, as a node agent retries from its
 * outbox: their first filing and count. */
#define RETRY_MAX 4096
static pthread_mutex_t retry_lock = PTHREAD_MUTEX_INITIALIZER;
static struct {
	unsigned first, n;
} retry[RETRY_MAX];
static unsigned nretry;
static atomic_uint busy_retries;

static bool retry_push(unsigned first, unsigned n)
{
	bool ok;

	pthread_mutex_lock(&retry_lock);
	ok = nretry < RETRY_MAX;
	if (ok) {
		retry[nretry].first = first;
		retry[nretry++].n = n;
	}
	pthread_mutex_unlock(&retry_lock);
	return ok;
}

static bool retry_pop(unsigned *first, unsigned *n)
{
	bool ok;

	pthread_mutex_lock(&retry_lock);
	ok = nretry > 0;
	if (ok) {
		nretry--;
		*first = retry[nretry].first;
		*n = retry[nretry].n;
	}
	pthread_mutex_unlock(&retry_lock);
	return ok;
}

static bool retry_pending(void)
{
	bool any;

	pthread_mutex_lock(&retry_lock);
	any = nretry > 0;
	pthread_mutex_unlock(&retry_lock);
	return any;
}

/* The next request line (credential encoded now), or NULL when the work
 * is all handed out (or on an error, noted). *ret_n: its filings,
 * *ret_first the first of them. */
static char *next_line(cJSON *template, unsigned *ret_n, unsigned *ret_first)
{
	static __thread struct jsonbuf rec, body;
	unsigned total = total_filings(), first, n;
	char err[512], *line;
	int bad = 0;

	*ret_n = 0;
	if (!retry_pop(&first, &n)) {
		/* paced: no more filings handed out than the rate allows */
		if (opt_rate > 0 &&
		    atomic_load(&next_filing) >=
			(now_s() - t_start) * opt_rate + opt_batch)
			return NULL; /* *ret_n 0 and work left: wait */
		first = atomic_fetch_add(&next_filing, opt_batch);
		if (first >= total) {
			/* a busy request may still come back to send */
			*ret_n = retry_pending() || atomic_load(&in_flight)
				     ? 0
				     : UINT32_MAX;
			return NULL;
		}
		n = total - first < opt_batch ? total - first : opt_batch;
	}
	*ret_first = first;
	body.len = 0;
	if (opt_batch == 1) {
		/* the file op: the entry's keys and "op" in one object */
		bad = filing_entry(first, template, &rec, &body);
		if (!bad) {
			body.len--; /* its '}' */
			bad = jsonbuf_put_bytes(&body, ",\"op\":\"file\"}", 13);
		}
	} else {
		static const char head[] = "{\"op\":\"file_batch\",\"files\":[";

		bad = jsonbuf_put_bytes(&body, head, sizeof(head) - 1);
		for (unsigned k = 0; k < n && !bad; k++)
			bad = (k && jsonbuf_put_bytes(&body, ",", 1) < 0) ||
			      filing_entry(first + k, template, &rec, &body);
		if (!bad)
			bad = jsonbuf_put_bytes(&body, "]}", 2);
	}
	line = bad ? NULL
		   : peernet_request_line_text(opt_sock, body.data, body.len,
					       err, sizeof(err));
	if (bad)
		snprintf(err, sizeof(err), "out of memory");
	if (!line) {
		note_error("encode: %s", err);
		atomic_fetch_add(&failed_filings, n);
		*ret_n = UINT32_MAX - 1; /* failed: try the next */
		return NULL;
	}
	*ret_n = n;
	return line;
}

enum agent_state { AGENT_IDLE, AGENT_SENDING, AGENT_READING };

struct agent {
	int fd;
	enum agent_state state;
	char *line; /* ends with '\n' */
	size_t len, off;
	unsigned n;     /* filings in the request */
	unsigned first; /* its first filing */
	char reply[REPLY_MAX];
	size_t rlen;
};

static void agent_close(struct agent *a, int ep)
{
	if (a->fd >= 0) {
		epoll_ctl(ep, EPOLL_CTL_DEL, a->fd, NULL);
		close(a->fd);
		atomic_fetch_sub(&open_conns, 1);
	}
	a->fd = -1;
	if (a->line)
		atomic_fetch_sub(&in_flight, 1);
	free(a->line);
	a->line = NULL;
	a->state = AGENT_IDLE;
}

enum start { START_DONE, START_OK, START_WAIT };

/* Start A's next request: a line, a non-blocking connect. START_DONE
 * when there is no more work, START_WAIT when the pace says not yet. */
static enum start agent_start(struct agent *a, int ep, cJSON *template)
{
	struct epoll_event ev = { .events = EPOLLOUT, .data.ptr = a };
	unsigned n = 0, first = 0, open;
	char *line = next_line(template, &n, &first);
	size_t len;

	if (!line)
		return n == UINT32_MAX ? START_DONE
		       : n == 0        ? START_WAIT
				       : START_OK;
	len = strlen(line);
	a->line = realloc(line, len + 2);
	if (!a->line) {
		free(line);
		return START_DONE;
	}
	atomic_fetch_add(&in_flight, 1); /* until agent_close */
	a->line[len] = '\n';
	a->line[len + 1] = '\0';
	a->len = len + 1;
	a->off = a->rlen = 0;
	a->n = n;
	a->first = first;
	a->fd = socket(svc_addr.ss_family,
		       SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (a->fd < 0) {
		note_error("socket: %s", strerror(errno));
		atomic_fetch_add(&failed_filings, n);
		agent_close(a, ep);
		return START_OK;
	}
	open = atomic_fetch_add(&open_conns, 1) + 1;
	for (unsigned m = atomic_load(&max_open_conns);
	     open > m &&
	     !atomic_compare_exchange_weak(&max_open_conns, &m, open);)
		;
	if (connect(a->fd, (struct sockaddr *)&svc_addr, svc_addrlen) < 0 &&
	    errno != EINPROGRESS) {
		note_error("connect: %s", strerror(errno));
		atomic_fetch_add(&failed_filings, n);
		agent_close(a, ep);
		return START_OK;
	}
	a->state = AGENT_SENDING;
	epoll_ctl(ep, EPOLL_CTL_ADD, a->fd, &ev);
	return START_OK;
}

/* A's reply line is complete: count it. */
static void agent_done(struct agent *a)
{
	a->reply[a->rlen] = '\0';
	atomic_fetch_add(&requests, 1);
	if (strstr(a->reply, "busy") && strstr(a->reply, "retry later") &&
	    retry_push(a->first, a->n)) {
		atomic_fetch_add(&busy_retries, 1);
	} else if (strstr(a->reply, "\"ok\":true")) {
		/* file_batch: each entry's own answer */
		cJSON *r = cJSON_Parse(a->reply), *e;
		unsigned bad = 0;

		cJSON_ArrayForEach(
		    e, cJSON_GetObjectItemCaseSensitive(r, "results")) {
			const cJSON *m =
			    cJSON_GetObjectItemCaseSensitive(e, "error");

			if (!m)
				continue;
			bad++;
			note_error("service refused a filing in a batch: %s",
				   cJSON_IsString(m) ? m->valuestring : "?");
		}
		cJSON_Delete(r);
		atomic_fetch_add(&filed, a->n - bad);
		atomic_fetch_add(&failed_filings, bad);
	} else {
		note_error("service refused a filing: %.400s", a->reply);
		atomic_fetch_add(&failed_filings, a->n);
	}
}

/* Progress on A's socket. */
static void agent_io(struct agent *a, int ep, uint32_t events)
{
	ssize_t r;

	if (a->state == AGENT_SENDING) {
		while (a->off < a->len) {
			r = send(a->fd, a->line + a->off, a->len - a->off,
				 MSG_NOSIGNAL);
			if (r < 0 && errno == EAGAIN)
				return;
			if (r <= 0) {
				note_error("send: %s", strerror(errno));
				atomic_fetch_add(&failed_filings, a->n);
				agent_close(a, ep);
				return;
			}
			a->off += (size_t)r;
		}
		struct epoll_event ev = { .events = EPOLLIN, .data.ptr = a };

		epoll_ctl(ep, EPOLL_CTL_MOD, a->fd, &ev);
		a->state = AGENT_READING;
		return;
	}
	(void)events;
	for (;;) {
		r = recv(a->fd, a->reply + a->rlen,
			 sizeof(a->reply) - 1 - a->rlen, 0);
		if (r < 0 && errno == EAGAIN)
			return;
		if (r <= 0) {
			note_error("no reply: %s", r == 0 ? "connection closed"
							  : strerror(errno));
			atomic_fetch_add(&failed_filings, a->n);
			agent_close(a, ep);
			return;
		}
		a->rlen += (size_t)r;
		if (memchr(a->reply, '\n', a->rlen) ||
		    a->rlen == sizeof(a->reply) - 1) {
			agent_done(a);
			agent_close(a, ep);
			return;
		}
	}
}

struct loop {
	unsigned first_agent, nagents;
};

static void *loop_main(void *arg)
{
	struct loop *l = arg;
	struct agent *agents = calloc(l->nagents, sizeof(*agents));
	struct epoll_event evs[256];
	cJSON *template = recgen_template();
	int ep = epoll_create1(EPOLL_CLOEXEC);
	unsigned active = 0;
	bool more = true, waiting;

	/* With queries measured, the agents' own work runs below the
	 * users': on a cluster it runs on the nodes, not on the service's
	 * host, and must not take the query's core here. */
	if (opt_queries > 0)
		setpriority(PRIO_PROCESS, (id_t)gettid(), 10);
	if (!agents || !template || ep < 0) {
		note_error("loop: %s", "out of resources");
		goto out;
	}
	for (unsigned i = 0; i < l->nagents; i++)
		agents[i].fd = -1;
	for (;;) {
		/* every idle agent takes its next request */
		waiting = false;
		for (unsigned i = 0; more && !waiting && i < l->nagents; i++)
			if (agents[i].state == AGENT_IDLE && agents[i].fd < 0) {
				enum start st = agent_start(&agents[i], ep,
							    template);

				more = st != START_DONE;
				waiting = st == START_WAIT;
			}
		active = 0;
		for (unsigned i = 0; i < l->nagents; i++)
			if (agents[i].state != AGENT_IDLE)
				active++;
		if (!active && !more)
			break;
		int n = epoll_wait(ep, evs, 256, waiting ? 2 : 1000);

		for (int k = 0; k < n; k++)
			agent_io(evs[k].data.ptr, ep, evs[k].events);
	}
out:
	for (unsigned i = 0; agents && i < l->nagents; i++)
		if (agents[i].fd >= 0)
			agent_close(&agents[i], ep);
	if (ep >= 0)
		close(ep);
	cJSON_Delete(template);
	free(agents);
	return NULL;
}

/* --- queries ----------------------------------------------------------- */

static char *user_names[USER_NAMES_MAX];
static unsigned nuser_names;

/* Users the service can resolve (it checks a queried user exists): this
 * machine's passwd entries stand in for 1,000 users. */
static void load_user_names(void)
{
	struct passwd *pw;

	setpwent();
	while ((pw = getpwent()) && nuser_names < USER_NAMES_MAX)
		user_names[nuser_names++] = strdup(pw->pw_name);
	endpwent();
	recgen_use_names((const char *const *)user_names, nuser_names);
}

struct querier {
	unsigned seed, want, done, failed, with_advice;
	double *lat; /* ms */
};

static void *query_main(void *arg)
{
	struct querier *q = arg;
	char err[512], u[64], app[32];

	while (q->done < q->want && !atomic_load(&filing_done)) {
		unsigned s = (unsigned)rand_r(&q->seed);
		cJSON *req = cJSON_CreateObject(), *reply;
		double t;

		recgen_user_name(s % RECGEN_USERS, u, sizeof(u));
		snprintf(app, sizeof(app), "app-%u",
			 (s / RECGEN_USERS) % RECGEN_APPS);
		cJSON_AddStringToObject(req, "op", "recommend");
		cJSON_AddStringToObject(req, "user", u);
		cJSON_AddStringToObject(req, "job_name", app);
		t = now_s();
		reply = peernet_call(opt_host, opt_port, opt_sock, req, 10000,
				     NULL, err, sizeof(err));
		q->lat[q->done++] = (now_s() - t) * 1000;
		cJSON_Delete(req);
		if (!reply ||
		    !cJSON_IsTrue(
			cJSON_GetObjectItemCaseSensitive(reply, "ok"))) {
			char *text = reply ? cJSON_PrintUnformatted(reply)
					   : NULL;

			note_error("recommend: %s", text ? text : err);
			free(text);
			q->failed++;
		} else if (cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(
			       reply, "recommendations")) > 0) {
			q->with_advice++;
		}
		cJSON_Delete(reply);
	}
	return NULL;
}

/* --- the service's resources ---------------------------------------------- */

struct usage {
	long rss_kb, hwm_kb, threads, fds;
};

static void sample_usage(int pid, struct usage *ret)
{
	char path[64], line[256];
	struct dirent *de;
	FILE *f;
	DIR *d;

	memset(ret, 0, sizeof(*ret));
	snprintf(path, sizeof(path), "/proc/%d/status", pid);
	if ((f = fopen(path, "re"))) {
		while (fgets(line, sizeof(line), f)) {
			sscanf(line, "VmRSS: %ld", &ret->rss_kb);
			sscanf(line, "VmHWM: %ld", &ret->hwm_kb);
			sscanf(line, "Threads: %ld", &ret->threads);
		}
		fclose(f);
	}
	snprintf(path, sizeof(path), "/proc/%d/fd", pid);
	if ((d = opendir(path))) {
		while ((de = readdir(d)))
			if (de->d_name[0] != '.')
				ret->fds++;
		closedir(d);
		ret->fds--; /* opendir's own is not the service's */
	}
}

static struct usage peak, last;

/* CPU seconds (user + system) of process PID so far, from /proc. */
static double proc_cpu_s(int pid)
{
	char path[64], buf[1024], *p;
	unsigned long long ut = 0, st = 0;
	FILE *f;
	size_t n;

	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	f = fopen(path, "re");
	if (!f)
		return 0;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	p = strrchr(buf, ')'); /* the name may hold spaces */
	if (!p || sscanf(p + 2,
			 "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u "
			 "%llu %llu",
			 &ut, &st) != 2)
		return 0;
	return (double)(ut + st) / (double)sysconf(_SC_CLK_TCK);
}

static double self_cpu_s(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 +
	       (double)ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6;
}

static void *sampler_main(void *arg)
{
	(void)arg;
	while (!atomic_load(&filing_done)) {
		struct usage u;

		sample_usage(opt_pid, &u);
		if (u.rss_kb > peak.rss_kb)
			peak.rss_kb = u.rss_kb;
		if (u.threads > peak.threads)
			peak.threads = u.threads;
		if (u.fds > peak.fds)
			peak.fds = u.fds;
		usleep(50000);
	}
	return NULL;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static int resolve(void)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM }, *res;
	char port[16];

	snprintf(port, sizeof(port), "%u", opt_port);
	if (getaddrinfo(opt_host, port, &hints, &res) != 0)
		return -1;
	memcpy(&svc_addr, res->ai_addr, res->ai_addrlen);
	svc_addrlen = res->ai_addrlen;
	freeaddrinfo(res);
	return 0;
}

int main(int argc, char **argv)
{
	pthread_t tid[THREADS_MAX], qtid[THREADS_MAX], stid;
	struct loop loops[THREADS_MAX];
	struct querier qs[THREADS_MAX];
	unsigned nq = 0, qfailed = 0, qadvice = 0;
	double t, secs, *lat = NULL, svc_cpu = 0, gen_cpu = 0, munge_cpu = 0;
	int opt;

	while ((opt = getopt(argc, argv, "H:p:S:a:n:j:b:t:q:Q:P:L:m:r:M:")) !=
	       -1) {
		switch (opt) {
		case 'H':
			opt_host = optarg;
			break;
		case 'p':
			opt_port = (unsigned)strtoul(optarg, NULL, 10);
			break;
		case 'S':
			opt_sock = optarg;
			break;
		case 'a':
			opt_agents = (unsigned)strtoul(optarg, NULL, 10);
			break;
		case 'n':
			opt_jobs = (unsigned)strtoul(optarg, NULL, 10);
			break;
		case 'j':
			opt_first = (unsigned)strtoul(optarg, NULL, 10);
			break;
		case 'b':
			opt_batch = (unsigned)strtoul(optarg, NULL, 10);
			break;
		case 't':
			opt_threads = (unsigned)strtoul(optarg, NULL, 10);
			break;
		case 'q':
			opt_queries = (unsigned)strtoul(optarg, NULL, 10);
			break;
		case 'Q':
			opt_qthreads = (unsigned)strtoul(optarg, NULL, 10);
			break;
		case 'P':
			opt_pid = atoi(optarg);
			break;
		case 'L':
			opt_label = optarg;
			break;
		case 'M':
			opt_munge_pid = atoi(optarg);
			break;
		case 'r':
			opt_rate = strtod(optarg, NULL);
			break;
		case 'm':
			opt_multi = (unsigned)strtoul(optarg, NULL, 10);
			break;
		default:
			fprintf(stderr,
				"usage: %s -p PORT [-H HOST] [-S SOCK] "
				"[-a AGENTS] [-n JOBS] [-j FIRST] [-b BATCH] "
				"[-t THREADS] [-q QUERIES] [-Q QTHREADS] "
				"[-P PID] [-L LABEL]\n",
				argv[0]);
			return 2;
		}
	}
	if (!opt_port || !opt_agents || opt_agents > AGENTS_MAX || !opt_batch ||
	    !opt_threads || opt_threads > THREADS_MAX || !opt_qthreads ||
	    opt_qthreads > THREADS_MAX || opt_threads > opt_agents) {
		fprintf(stderr,
			"ctldload: PORT > 0; AGENTS 1..%d; BATCH > 0; "
			"THREADS 1..%d and <= AGENTS\n",
			AGENTS_MAX, THREADS_MAX);
		return 2;
	}
	if (resolve() < 0) {
		fprintf(stderr, "ctldload: cannot resolve %s\n", opt_host);
		return 1;
	}
	load_user_names();
	t0_wall = (double)time(NULL);
	if (opt_pid)
		pthread_create(&stid, NULL, sampler_main, NULL);
	if (opt_queries) {
		lat = calloc(opt_queries, sizeof(*lat));
		for (unsigned i = 0; i < opt_qthreads; i++) {
			unsigned want = opt_queries / opt_qthreads;

			qs[i] = (struct querier){ 7 + i, want, 0,
						  0,     0,    lat + i * want };
			pthread_create(&qtid[i], NULL, query_main, &qs[i]);
		}
	}
	if (opt_pid)
		svc_cpu = proc_cpu_s(opt_pid);
	if (opt_munge_pid)
		munge_cpu = proc_cpu_s(opt_munge_pid);
	gen_cpu = self_cpu_s();
	t = t_start = now_s();
	for (unsigned i = 0; i < opt_threads; i++) {
		unsigned per = opt_agents / opt_threads;

		loops[i].first_agent = i * per;
		loops[i].nagents = i + 1 == opt_threads ? opt_agents - i * per
							: per;
		pthread_create(&tid[i], NULL, loop_main, &loops[i]);
	}
	for (unsigned i = 0; i < opt_threads; i++)
		pthread_join(tid[i], NULL);
	secs = now_s() - t;
	gen_cpu = self_cpu_s() - gen_cpu;
	if (opt_munge_pid)
		munge_cpu = proc_cpu_s(opt_munge_pid) - munge_cpu;
	if (opt_pid) {
		svc_cpu = proc_cpu_s(opt_pid) - svc_cpu;
		sample_usage(opt_pid, &last);
	}
	atomic_store(&filing_done, 1);
	if (opt_pid)
		pthread_join(stid, NULL);
	for (unsigned i = 0; opt_queries && i < opt_qthreads; i++) {
		pthread_join(qtid[i], NULL);
		/* packed: this thread's latencies after the ones before */
		memmove(lat + nq, qs[i].lat, qs[i].done * sizeof(*lat));
		nq += qs[i].done;
		qfailed += qs[i].failed;
		qadvice += qs[i].with_advice;
	}

	unsigned ok = atomic_load(&filed), bad = atomic_load(&failed_filings);
	/* jobs/s counts the jobs whose filings were accepted */
	double rate = (double)opt_jobs * ok / (ok + bad ? ok + bad : 1) / secs;
	double p50 = 0, p99 = 0, pmax = 0;

	if (nq) {
		qsort(lat, nq, sizeof(*lat), cmp_double);
		p50 = lat[nq / 2];
		p99 = lat[(size_t)(nq * 0.99)];
		pmax = lat[nq - 1];
	}
	printf("ctldload%s%s: %u jobs (%u filings, %s) "
	       "filed by %u agents in %.2f s: %.0f jobs/s, %u requests "
	       "(%u filing%s per credential; %u answered busy and sent "
	       "again), %u filings failed; at most %u connections open\n",
	       *opt_label ? " " : "", opt_label, opt_jobs, total_filings(),
	       opt_multi ? "1 in 10 a 3-node job" : "single-node jobs",
	       opt_agents, secs, rate, atomic_load(&requests), opt_batch,
	       opt_batch == 1 ? "" : "s", atomic_load(&busy_retries), bad,
	       atomic_load(&max_open_conns));
	if (nq)
		printf("ctldload%s%s: %u recommend queries during the filing: "
		       "p50 %.3f ms, p99 %.3f ms, max %.3f ms (%u with advice, "
		       "%u failed)\n",
		       *opt_label ? " " : "", opt_label, nq, p50, p99, pmax,
		       qadvice, qfailed);
	if (opt_pid)
		printf("ctldload%s%s: iostagectld: peak RSS %.1f MiB (VmHWM "
		       "%.1f MiB), %ld threads, %ld open fds at most; at the "
		       "end RSS %.1f MiB, %ld fds\n",
		       *opt_label ? " " : "", opt_label, peak.rss_kb / 1024.0,
		       last.hwm_kb / 1024.0, peak.threads, peak.fds,
		       last.rss_kb / 1024.0, last.fds);
	if (opt_pid)
		printf("ctldload%s%s: CPU per job: iostagectld %.1f us, munged "
		       "%.1f us (encode and decode: one munged here), this "
		       "generator %.1f us\n",
		       *opt_label ? " " : "", opt_label,
		       svc_cpu * 1e6 / opt_jobs, munge_cpu * 1e6 / opt_jobs,
		       gen_cpu * 1e6 / opt_jobs);
	if (first_error[0])
		printf("ctldload: first error: %s\n", first_error);
	printf("ctldload: {\"label\":\"%s\",\"jobs\":%u,\"filings\":%u,"
	       "\"agents\":%u,\"batch\":%u,\"paced_per_s\":%.0f,"
	       "\"seconds\":%.3f,"
	       "\"jobs_per_s\":%.0f,\"requests\":%u,\"busy\":%u,\"failed\":%u,"
	       "\"max_open_connections\":%u,\"queries\":%u,"
	       "\"query_p50_ms\":%.3f,\"query_p99_ms\":%.3f,"
	       "\"query_max_ms\":%.3f,\"queries_failed\":%u,"
	       "\"rss_peak_kib\":%ld,\"rss_end_kib\":%ld,\"vmhwm_kib\":%ld,"
	       "\"threads_peak\":%ld,\"fds_peak\":%ld,\"fds_end\":%ld,"
	       "\"service_cpu_us_per_job\":%.1f,\"munged_cpu_us_per_job\":%.1f,"
	       "\"generator_cpu_us_per_job\":%.1f}\n",
	       opt_label, opt_jobs, total_filings(), opt_agents, opt_batch,
	       opt_rate, secs, rate, atomic_load(&requests),
	       atomic_load(&busy_retries), bad, atomic_load(&max_open_conns),
	       nq, p50, p99, pmax, qfailed, peak.rss_kb, last.rss_kb,
	       last.hwm_kb, peak.threads, peak.fds, last.fds,
	       svc_cpu * 1e6 / opt_jobs, munge_cpu * 1e6 / opt_jobs,
	       gen_cpu * 1e6 / opt_jobs);
	free(lat);
	return bad || qfailed ? 1 : 0;
}
