/* peer.c - the node-to-node listener, its connection threads, and the
 * client side of peer calls. The channel's state is its struct
 * peer_channel: the listener (common/net/peerserve.h) and the prestage
 * callback; calls to other nodes need only the configuration. */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/base/log.h"
#include "common/config/profile.h"
#include "common/net/peernet.h"
#include "common/net/peerserve.h"
#include "common/net/proto.h"
#include "daemon/agent.h"
#include "daemon/cluster/peer.h"
#include "daemon/cluster/peer_fetch.h"
#include "daemon/ops.h"

#define PEER_SEND_MS 10000
#define PEER_FINI_WAIT_S 5

struct peer_channel {
	struct agent *agent;
	const struct conf *conf;
	struct peerserve server;
	bool serving; /* peerserve_start succeeded, not yet stopped */
	peer_prestage_fn prestage;
	mauth_decode_fn decode; /* NULL: munged's (mauth_decode) */
	struct peer_fetch *fetch;
};

struct peer_channel *peer_create(struct agent *a)
{
	struct peer_channel *pc = calloc(1, sizeof(*pc));

	if (!pc)
		return NULL;
	pc->agent = a;
	pc->conf = a->conf;
	pc->fetch = peer_fetch_create(a);
	if (!pc->fetch) {
		free(pc);
		return NULL;
	}
	return pc;
}

void peer_set_decoder(struct peer_channel *pc, mauth_decode_fn decode)
{
	pc->decode = decode;
}

const struct peer_fetch *peer_fetcher(const struct peer_channel *pc)
{
	return pc ? pc->fetch : NULL;
}

void peer_set_prestage(struct peer_channel *pc, peer_prestage_fn fn)
{
	pc->prestage = fn;
}

cJSON *peer_run_prestage(struct peer_channel *pc, const cJSON *req)
{
	if (!pc || !pc->prestage)
		return NULL;
	return pc->prestage(pc->agent, req);
}

bool peer_enabled(const struct peer_channel *pc)
{
	return pc && pc->conf->peer_port != 0;
}

const char *peer_self(const struct peer_channel *pc)
{
	return pc ? pc->conf->node_name : "";
}

static const char *munge_socket(const struct peer_channel *pc)
{
	return pc->conf->munge_socket[0] ? pc->conf->munge_socket : NULL;
}

static const struct peer_op *find_op(const char *name)
{
	for (const struct peer_op *op = peer_ops; op->name; op++)
		if (!strcmp(op->name, name))
			return op;
	return NULL;
}

/* The request on FD, read to its '\n' and no further (a fetch session's
 * lines may follow it), its credential decoded by the channel's decoder;
 * NULL with a reason in err. PEER->addr is set either way. */
static cJSON *read_request(struct peer_channel *pc, int fd, const char **ret_op,
			   struct peernet_peer *peer, char *err, size_t errlen)
{
	enum mauth_status st;
	cJSON *req;
	char *line;

	memset(peer, 0, sizeof(*peer));
	peernet_peer_addr(fd, peer->addr, sizeof(peer->addr));
	line = peernet_read_line_exact(fd, PEER_READ_MS);
	if (!line) {
		snprintf(err, errlen, "%s", peernet_read_error(errno));
		return NULL;
	}
	req = peernet_decode_request_by(pc->decode, line, munge_socket(pc),
					ret_op, &peer->uid, &peer->gid, &st,
					err, errlen);
	free(line);
	return req;
}

cJSON *peer_serve_fd(struct peer_channel *pc, int fd)
{
	char err[CONF_ERR_MAX], shown[72];
	struct peernet_peer peer;
	const struct peer_op *op;
	const char *name;
	cJSON *req, *reply;

	req = read_request(pc, fd, &name, &peer, err, sizeof(err));
	if (!req) {
		log_warningx("peer %s: request refused: %s", peer.addr, err);
		reply = proto_reply_error("%s", err);
	} else if (!strcmp(name, "fetch_open")) {
		/* Any user's: the cache authorizes it by the entry's owner
		 * (daemon/cluster/peer_fetch.h). */
		reply = peer_fetch_serve(pc->fetch, fd, &peer, req);
	} else if (peer.uid != 0) {
		/* Users go through their own node's iostaged. */
		log_warningx("peer %s: op '%s' refused: credential of uid %u, "
			     "not root",
			     peer.addr,
			     ops_printable(name, shown, sizeof(shown)),
			     (unsigned)peer.uid);
		reply = proto_reply_error("permission denied: peer ops need "
					  "root's credential (uid %u)",
					  (unsigned)peer.uid);
	} else if (!(op = find_op(name))) {
		log_warningx("peer %s: unknown op '%s'", peer.addr,
			     ops_printable(name, shown, sizeof(shown)));
		reply = proto_reply_error("unknown peer op '%s'",
					  ops_printable(name, shown,
							sizeof(shown)));
	} else {
		reply = op->fn(pc->agent, &peer, req);
	}
	cJSON_Delete(req);
	return reply;
}

/* One connection's request (peerserve_fn): its reply. */
static cJSON *serve_request(int fd, void *arg)
{
	return peer_serve_fd(arg, fd);
}

static void server_warn(const char *line)
{
	log_warningx("peer: %s", line);
}

void peer_start(struct peer_channel *pc)
{
	const struct conf *conf = pc->conf;
	char err[CONF_ERR_MAX];
	int fd;

	if (conf->peer_port == 0) {
		log_info("peer channel off (PeerPort=0): multi-node jobs "
			 "cannot reach this node");
		return;
	}
	fd = peernet_listen(conf->peer_listen, conf->peer_port, err,
			    sizeof(err));
	if (fd < 0) {
		log_errorx("peer channel: %s; other nodes of multi-node jobs "
			   "will see this node as unreachable",
			   err);
		return;
	}
	pc->server = (struct peerserve){
		/* fetch sessions hold their threads: the other ops keep
		 * their places */
		.conn_max = PEER_CONN_MAX + conf->peer_fetch_sessions,
		.send_ms = PEER_SEND_MS,
		.busy_fmt = "too many peer connections (limit %u)",
		.nothread_error = "out of resources",
		.serve = serve_request,
		.arg = pc,
		.warn = server_warn,
	};
	if (peerserve_start(&pc->server, fd, err, sizeof(err)) < 0) {
		log_errorx("peer channel: %s", err);
		return;
	}
	pc->serving = true;
	log_info("peer channel on %s port %u (MUNGE: root, and users' fetch "
		 "sessions, at most %u)",
		 conf->peer_listen[0] ? conf->peer_listen : "every address",
		 conf->peer_port, conf->peer_fetch_sessions);
}

void peer_stop(struct peer_channel *pc)
{
	if (!pc || !pc->serving)
		return;
	peer_fetch_stop(pc->fetch);
	peerserve_stop(&pc->server, PEER_FINI_WAIT_S);
	pc->serving = false;
}

void peer_destroy(struct peer_channel *pc)
{
	if (!pc)
		return;
	peer_stop(pc);
	peer_fetch_destroy(pc->fetch);
	free(pc);
}

cJSON *peer_call(const struct peer_channel *pc, const char *node,
		 const cJSON *req, int timeout_ms, int *ret_unreachable,
		 char *err, size_t errlen)
{
	if (ret_unreachable)
		*ret_unreachable = 0;
	if (!peer_enabled(pc)) {
		if (ret_unreachable)
			*ret_unreachable = 1;
		snprintf(err, errlen,
			 "node %s: the peer channel is off here "
			 "(PeerPort=0)",
			 node);
		return NULL;
	}
	return peernet_call(node, pc->conf->peer_port, munge_socket(pc), req,
			    timeout_ms, ret_unreachable, err, errlen);
}

struct fanout {
	const struct peer_channel *pc;
	const char *node;
	const cJSON *req;
	int timeout_ms;
	cJSON *reply;
	char *err;
	int *unreachable;
};

static void *fanout_thread(void *arg)
{
	struct fanout *f = arg;

	f->reply = peer_call(f->pc, f->node, f->req, f->timeout_ms,
			     f->unreachable, f->err, 256);
	return NULL;
}

void peer_call_many(const struct peer_channel *pc, const char *const *nodes,
		    size_t n, const cJSON *req, int timeout_ms, cJSON **replies,
		    char (*errs)[256], int *unreachable)
{
	struct fanout f[PEER_FANOUT_MAX];
	pthread_t t[PEER_FANOUT_MAX];
	bool started[PEER_FANOUT_MAX];

	for (size_t base = 0; base < n; base += PEER_FANOUT_MAX) {
		size_t k = n - base < PEER_FANOUT_MAX ? n - base
						      : PEER_FANOUT_MAX;

		for (size_t i = 0; i < k; i++) {
			f[i] = (struct fanout){ pc,
						nodes[base + i],
						req,
						timeout_ms,
						NULL,
						errs[base + i],
						&unreachable[base + i] };
			errs[base + i][0] = '\0';
			started[i] = pthread_create(&t[i], NULL, fanout_thread,
						    &f[i]) == 0;
			if (!started[i])
				fanout_thread(&f[i]); /* then in line */
		}
		for (size_t i = 0; i < k; i++) {
			if (started[i])
				pthread_join(t[i], NULL);
			replies[base + i] = f[i].reply;
		}
	}
}

int peer_job_dataset(const cJSON *req, const char *op, uint32_t *ret_id,
		     size_t *ret_i, char *err, size_t errlen)
{
	const cJSON *ds = cJSON_GetObjectItemCaseSensitive(req, "dataset");

	if (proto_get_job_id(req, ret_id, err, errlen) < 0)
		return -1;
	if (!cJSON_IsNumber(ds) || ds->valuedouble < 0 ||
	    ds->valuedouble >= PROFILE_MAX_DATASETS) {
		snprintf(err, errlen, "%s: bad dataset index", op);
		return -1;
	}
	*ret_i = (size_t)ds->valuedouble;
	return 0;
}
