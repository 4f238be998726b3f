/* service.c - iostagectld's listener and dispatch (see service.h).
 *
 * The server is common/net/peerserve's, as daemon/cluster/peer.c's: an accept
 * thread and a detached thread per connection (at most CTLD_CONN_MAX; over the
 * bound a one-line refusal at once, so a node retries later rather than
 * queueing unseen). Here: reading one request within CTLD_READ_MS, the
 * credential, the op and its answer.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/base/log.h"
#include "common/history/history_ops.h"
#include "common/net/peernet.h"
#include "common/net/peerserve.h"
#include "common/net/proto.h"
#include "ctld/authz.h"
#include "ctld/filing/file_batch.h"
#include "ctld/filing/file_ops.h"
#include "ctld/sched/bw_ops.h"
#include "ctld/sched/joballoc.h"
#include "ctld/sched/pending.h"
#include "ctld/sched/placement.h"
#include "ctld/sched/sched_ops.h"
#include "ctld/service.h"

#define CTLD_STACK_SIZE (512 * 1024)
#define CTLD_STOP_WAIT_S 5

/* The service's own (ctld_service_listen): its connections' serve arg. */
static struct ctld_serve_ctx svc_ctx;
static int listen_fd = -1;
static unsigned listen_port;
static char listen_addr[CONF_HOST_MAX];
static struct peerserve server;

static const char *printable(const char *s, char *buf, size_t len)
{
	snprintf(buf, len, "%s", s);
	for (size_t i = 0; buf[i]; i++)
		if ((unsigned char)buf[i] < 0x20 || buf[i] == 0x7f)
			buf[i] = '?';
	return buf;
}

static struct hist_caller hist(const struct ctld_caller *c)
{
	return (struct hist_caller){ .uid = c->uid,
				     .gid = c->gid,
				     .read_all = c->read_all };
}

static cJSON *op_ping(const struct ctld_caller *c, const cJSON *req)
{
	cJSON *reply = proto_reply_ok();

	(void)req;
	cJSON_AddStringToObject(reply, "service", "iostagectld");
	cJSON_AddStringToObject(reply, "version", IOSTAGE_VERSION);
	cJSON_AddNumberToObject(reply, "uid", c->uid);
	cJSON_AddBoolToObject(reply, "read_all", c->read_all);
	return reply;
}

static cJSON *op_get(const struct ctld_caller *c, const cJSON *req)
{
	struct hist_caller h = hist(c);

	return hist_op_get(&h, req);
}

static cJSON *op_list(const struct ctld_caller *c, const cJSON *req)
{
	struct hist_caller h = hist(c);

	return hist_op_list(&h, req);
}

static cJSON *op_recommend(const struct ctld_caller *c, const cJSON *req)
{
	struct hist_caller h = hist(c);

	return hist_op_recommend(&h, req);
}

static const struct {
	const char *name;
	ctld_op_fn fn;
} ctld_ops[] = {
	{ "ping", op_ping },
	{ "file", ctld_op_file },
	{ "file_batch", ctld_op_file_batch },
	{ "history_get", op_get },
	{ "history_list", op_list },
	{ "recommend", op_recommend },
	{ "cache_report", placement_op_report },
	{ "placement", placement_op_query },
	{ "cache_holders", placement_op_holders },
	{ "job_nodes", joballoc_op },
	{ "sched_status", sched_op_status },
	{ "job_note", pending_op_note },
	{ "stage_bw", ctld_op_stage_bw },
	{ "stage_bw_status", ctld_op_stage_bw_status },
};

#define CTLD_NOPS (sizeof(ctld_ops) / sizeof(ctld_ops[0]))

/* Requests answered per op, for /metrics (ctld/metrics.c): ok or
 * declined; the last slot: unknown ops. Relaxed atomics: counters. */
static uint64_t op_ok[CTLD_NOPS + 1], op_declined[CTLD_NOPS + 1];
static uint64_t refused_count;

static cJSON *counted(size_t i, cJSON *reply)
{
	if (reply &&
	    cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(reply, "ok")))
		__atomic_add_fetch(&op_ok[i], 1, __ATOMIC_RELAXED);
	else
		__atomic_add_fetch(&op_declined[i], 1, __ATOMIC_RELAXED);
	return reply;
}

size_t ctld_service_counts(struct ctld_op_count *ret, size_t max,
			   uint64_t *ret_refused)
{
	size_t n = 0;

	for (size_t i = 0; i <= CTLD_NOPS && n < max; i++, n++) {
		ret[n].op = i < CTLD_NOPS ? ctld_ops[i].name : "unknown";
		ret[n].ok = __atomic_load_n(&op_ok[i], __ATOMIC_RELAXED);
		ret[n].declined = __atomic_load_n(&op_declined[i],
						  __ATOMIC_RELAXED);
	}
	*ret_refused = __atomic_load_n(&refused_count, __ATOMIC_RELAXED);
	return n;
}

cJSON *ctld_service_dispatch(const struct conf *conf,
			     const struct ctld_caller *c, const char *op,
			     const cJSON *req)
{
	char shown[72];

	(void)conf;
	for (size_t i = 0; i < CTLD_NOPS; i++)
		if (!strcmp(ctld_ops[i].name, op))
			return counted(i, ctld_ops[i].fn(c, req));
	counted(CTLD_NOPS, NULL);
	return proto_reply_error("unknown op '%s' (iostagectld answers ping, "
				 "file, file_batch, history_get, history_list, "
				 "recommend, stage_bw, stage_bw_status, "
				 "cache_report, placement, cache_holders, "
				 "job_nodes, "
				 "job_note, sched_status)",
				 printable(op, shown, sizeof(shown)));
}

/* A refusal before any op: the client's ctl_request() makes it -1. */
static cJSON *refused(const char *why)
{
	cJSON *reply = proto_reply_error("%s", why);

	if (reply)
		cJSON_AddTrueToObject(reply, "refused");
	return reply;
}

static const char *munge_socket(const struct conf *conf)
{
	return conf->munge_socket[0] ? conf->munge_socket : NULL;
}

/* Places to decode and serve a request: one set for short lines (every
 * query op: a user's sbatch waiting for advice) and one for long ones
 * (filings: records, batches of them), so a backlog of filings from
 * 1,000 nodes never queues a query behind it. The class comes from the
 * line's length, before the credential is decoded: a request in the
 * wrong class only changes which queue it waits in, never what it may
 * do. */
struct work_gate {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	unsigned n, max;
};

static struct work_gate gate_query = { PTHREAD_MUTEX_INITIALIZER,
				       PTHREAD_COND_INITIALIZER, 0,
				       CTLD_QUERY_WORK_MAX };
static struct work_gate gate_file = { PTHREAD_MUTEX_INITIALIZER,
				      PTHREAD_COND_INITIALIZER, 0,
				      CTLD_WORK_MAX };

static struct work_gate *work_enter(size_t line_len)
{
	struct work_gate *g = line_len <= CTLD_QUERY_LINE_MAX ? &gate_query
							      : &gate_file;

	pthread_mutex_lock(&g->lock);
	while (g->n >= g->max)
		pthread_cond_wait(&g->cond, &g->lock);
	g->n++;
	pthread_mutex_unlock(&g->lock);
	return g;
}

static void work_leave(struct work_gate *g)
{
	pthread_mutex_lock(&g->lock);
	g->n--;
	pthread_cond_signal(&g->cond);
	pthread_mutex_unlock(&g->lock);
}

cJSON *ctld_service_serve(const struct ctld_serve_ctx *ctx, int fd)
{
	char err[CONF_ERR_MAX], shown[72];
	struct peernet_peer peer;
	struct ctld_caller c;
	enum mauth_status st;
	const char *name;
	cJSON *req, *reply;
	struct work_gate *gate = NULL;
	char *line;

	/* The line is read by every connection's thread at once (a slow
	 * sender holds only its own); decoding it (munged) and the op take
	 * one of a few places (work_enter): with 1,000 nodes sending at
	 * once, that bounds the memory of the parsed requests and the
	 * credentials in flight to munged (whose socket refuses connections
	 * beyond its backlog), and keeps the cores on finishing requests. */
	memset(&peer, 0, sizeof(peer));
	peernet_peer_addr(fd, peer.addr, sizeof(peer.addr));
	line = peernet_read_line(fd, CTLD_READ_MS);
	req = NULL;
	if (!line) {
		st = MAUTH_OK;
		snprintf(err, sizeof(err), "%s", peernet_read_error(errno));
	} else {
		gate = work_enter(strlen(line));
		/* Filings are throughput work that can wait a little; a
		 * query is somebody's sbatch waiting for advice. Under a
		 * backlog of filings, lowering their priority keeps a
		 * query's latency what it is on an idle service. Set for
		 * every request: a connection thread serves the next
		 * connection too (common/net/peerserve.h). */
		setpriority(PRIO_PROCESS, (id_t)gettid(),
			    gate == &gate_file ? CTLD_FILE_NICE : 0);
		req = peernet_decode_request_by(ctx->decode, line,
						munge_socket(ctx->conf), &name,
						&peer.uid, &peer.gid, &st, err,
						sizeof(err));
		free(line);
		line = NULL;
	}
	if (!req) {
		__atomic_add_fetch(&refused_count, 1, __ATOMIC_RELAXED);
		log_warningx("%s: request refused: %s", peer.addr, err);
		reply = refused(err);
	} else {
		const cJSON *e;

		c = (struct ctld_caller){
			.uid = peer.uid,
			.gid = peer.gid,
			.read_all = authz_read_all(peer.uid, peer.gid,
						   ctx->conf->admin_group),
			.addr = peer.addr,
		};
		reply = ctld_service_dispatch(ctx->conf, &c, name, req);
		e = cJSON_GetObjectItemCaseSensitive(reply, "error");
		if (reply && cJSON_IsFalse(
				 cJSON_GetObjectItemCaseSensitive(reply, "ok")))
			log_warningx("%s: uid %u op '%s' declined: %s",
				     peer.addr, (unsigned)peer.uid,
				     printable(name, shown, sizeof(shown)),
				     cJSON_IsString(e) ? e->valuestring : "?");
		else
			log_debug("%s: uid %u op '%s' answered", peer.addr,
				  (unsigned)peer.uid,
				  printable(name, shown, sizeof(shown)));
	}
	cJSON_Delete(req);
	/* the place is given back before sending: a client that does not
	 * read its reply holds only its own thread */
	if (gate)
		work_leave(gate);
	return reply;
}

/* One connection of the service (peerserve_fn): ARG is svc_ctx. */
static cJSON *serve_request(int fd, void *arg)
{
	return ctld_service_serve(arg, fd);
}

static void server_warn(const char *line)
{
	log_warningx("%s", line);
}

int ctld_service_listen(const struct conf *conf, char *err, size_t errlen)
{
	unsigned char buf[16];
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	const char *addr = "*";

	svc_ctx = (struct ctld_serve_ctx){ .conf = conf,
					   .decode = mauth_decode };
	/* An address literal is where clients reach us: listen there only
	 * (127.0.0.1 keeps a test service off the network). */
	if (inet_pton(AF_INET, conf->controller_host, buf) == 1 ||
	    inet_pton(AF_INET6, conf->controller_host, buf) == 1)
		addr = conf->controller_host;
	listen_fd = peernet_listen(addr, conf->controller_port, err, errlen);
	if (listen_fd < 0)
		return -1;
	listen_port = conf->controller_port;
	if (getsockname(listen_fd, (struct sockaddr *)&ss, &sl) == 0)
		listen_port = ntohs(
		    ss.ss_family == AF_INET6
			? ((struct sockaddr_in6 *)&ss)->sin6_port
			: ((struct sockaddr_in *)&ss)->sin_port);
	snprintf(listen_addr, sizeof(listen_addr), "%s",
		 strcmp(addr, "*") ? addr : "every address");
	return 0;
}

int ctld_service_start(char *err, size_t errlen)
{
	server = (struct peerserve){
		.conn_max = CTLD_CONN_MAX,
		.stack_size = CTLD_STACK_SIZE,
		.send_ms = CTLD_SEND_MS,
		.busy_fmt = "iostagectld busy: %u connections served, retry "
			    "later",
		.nothread_error = "iostagectld out of resources, retry later",
		.serve = serve_request,
		.arg = &svc_ctx,
		.warn = server_warn,
	};
	/* The server owns the socket from here, on failure too. */
	if (peerserve_start(&server, listen_fd, err, errlen) < 0) {
		listen_fd = -1;
		return -1;
	}
	listen_fd = -1;
	log_info("serving on %s port %u (MUNGE%s%s)", listen_addr, listen_port,
		 svc_ctx.conf->admin_group[0] ? ", AdminGroup " : "",
		 svc_ctx.conf->admin_group);
	return 0;
}

unsigned ctld_service_port(void)
{
	return listen_port;
}

bool ctld_service_stop(void)
{
	/* Listening but never started. */
	if (listen_fd >= 0)
		close(listen_fd);
	listen_fd = -1;
	return peerserve_stop(&server, CTLD_STOP_WAIT_S);
}
