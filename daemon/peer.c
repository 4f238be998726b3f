/* peer.c - the node-to-node listener, its connection threads, and the
 * client side of peer calls. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "common/log.h"
#include "common/peernet.h"
#include "common/proto.h"
#include "daemon/ops.h"
#include "daemon/peer.h"

#define PEER_SEND_MS 10000
#define PEER_FINI_WAIT_S 5

static const struct conf *peer_conf;
static int listen_fd = -1;
static int stop_pipe[2] = { -1, -1 };
static pthread_t accept_thread;
static bool running;

static pthread_mutex_t conn_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t conn_cond = PTHREAD_COND_INITIALIZER;
static unsigned nconn;

bool peer_enabled(void)
{
	return peer_conf && peer_conf->peer_port != 0;
}

const char *peer_self(void)
{
	return peer_conf ? peer_conf->node_name : "";
}

static const char *munge_socket(void)
{
	return peer_conf && peer_conf->munge_socket[0]
		       ? peer_conf->munge_socket
		       : NULL;
}

static const struct peer_op *find_op(const char *name)
{
	for (const struct peer_op *op = peer_ops; op->name; op++)
		if (!strcmp(op->name, name))
			return op;
	return NULL;
}

static void reply_and_close(int fd, cJSON *reply)
{
	if (!reply)
		reply = proto_reply_error("out of memory");
	if (reply && peernet_send(fd, reply, PEER_SEND_MS) < 0 &&
	    errno == EMSGSIZE) {
		cJSON_Delete(reply);
		reply = proto_reply_error("reply longer than %d bytes",
					  PEERNET_LINE_MAX);
		if (reply)
			peernet_send(fd, reply, PEER_SEND_MS);
	}
	cJSON_Delete(reply);
	close(fd);
}

/* One connection: one request, one reply. */
static void *conn_thread(void *arg)
{
	int fd = (int)(intptr_t)arg;
	char err[CONF_ERR_MAX], shown[72];
	struct peernet_peer peer;
	enum mauth_status st;
	const struct peer_op *op;
	const char *name;
	cJSON *req, *reply;

	req = peernet_read_request(fd, PEER_READ_MS, munge_socket(), &name,
				   &peer, &st, err, sizeof(err));
	if (!req) {
		log_warningx("peer %s: request refused: %s", peer.addr, err);
		reply = proto_reply_error("%s", err);
	} else if (peer.uid != 0) {
		/* Users go through their own node's iostaged. */
		log_warningx("peer %s: op '%s' refused: credential of uid %u, "
			     "not root",
			     peer.addr, ops_printable(name, shown, sizeof(shown)),
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
		reply = op->fn(&peer, req);
	}
	cJSON_Delete(req);
	reply_and_close(fd, reply);
	pthread_mutex_lock(&conn_lock);
	nconn--;
	pthread_cond_broadcast(&conn_cond);
	pthread_mutex_unlock(&conn_lock);
	return NULL;
}

static void accept_one(void)
{
	struct timeval tv = { .tv_sec = PEER_SEND_MS / 1000 };
	pthread_attr_t attr;
	pthread_t t;
	int fd = accept4(listen_fd, NULL, NULL, SOCK_CLOEXEC), r;

	if (fd < 0) {
		if (errno == EMFILE || errno == ENFILE) {
			struct timespec ts = { 0, 100 * 1000 * 1000 };

			log_warning("peer: accept");
			nanosleep(&ts, NULL);
		}
		return;
	}
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	pthread_mutex_lock(&conn_lock);
	if (nconn >= PEER_CONN_MAX) {
		pthread_mutex_unlock(&conn_lock);
		log_warningx("peer: connection refused: %d already served",
			     PEER_CONN_MAX);
		reply_and_close(fd, proto_reply_error("too many peer "
						      "connections (limit %d)",
						      PEER_CONN_MAX));
		return;
	}
	nconn++;
	pthread_mutex_unlock(&conn_lock);
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	r = pthread_create(&t, &attr, conn_thread, (void *)(intptr_t)fd);
	pthread_attr_destroy(&attr);
	if (r != 0) {
		log_warningx("peer: cannot start a thread: %s", strerror(r));
		pthread_mutex_lock(&conn_lock);
		nconn--;
		pthread_mutex_unlock(&conn_lock);
		reply_and_close(fd, proto_reply_error("out of resources"));
	}
}

static void *accept_loop(void *arg)
{
	struct pollfd pfd[2] = { { .fd = listen_fd, .events = POLLIN },
				 { .fd = stop_pipe[0], .events = POLLIN } };

	(void)arg;
	for (;;) {
		int n = poll(pfd, 2, -1);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 || pfd[1].revents)
			break;
		if (pfd[0].revents)
			accept_one();
	}
	return NULL;
}

void peer_init(const struct conf *conf)
{
	char err[CONF_ERR_MAX];
	sigset_t all, old;
	int r;

	peer_conf = conf;
	if (conf->peer_port == 0) {
		log_info("peer channel off (PeerPort=0): multi-node jobs "
			 "cannot reach this node");
		return;
	}
	listen_fd = peernet_listen(conf->peer_listen, conf->peer_port, err,
				   sizeof(err));
	if (listen_fd < 0) {
		log_errorx("peer channel: %s; other nodes of multi-node jobs "
			   "will see this node as unreachable",
			   err);
		return;
	}
	if (pipe2(stop_pipe, O_CLOEXEC) < 0) {
		log_error("peer channel: pipe");
		goto fail;
	}
	/* Signals stay with the main thread's ppoll(). */
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	r = pthread_create(&accept_thread, NULL, accept_loop, NULL);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (r != 0) {
		log_errorx("peer channel: cannot start its thread: %s",
			   strerror(r));
		goto fail;
	}
	running = true;
	log_info("peer channel on %s port %u (MUNGE, root only)",
		 conf->peer_listen[0] ? conf->peer_listen : "every address",
		 conf->peer_port);
	return;
fail:
	close(listen_fd);
	listen_fd = -1;
}

void peer_fini(void)
{
	struct timespec deadline;

	if (running) {
		if (write(stop_pipe[1], "x", 1) < 0)
			log_warning("peer: cannot stop the listener");
		pthread_join(accept_thread, NULL);
		running = false;
	}
	if (listen_fd >= 0)
		close(listen_fd);
	listen_fd = -1;
	for (int i = 0; i < 2; i++)
		if (stop_pipe[i] >= 0)
			close(stop_pipe[i]);
	stop_pipe[0] = stop_pipe[1] = -1;
	clock_gettime(CLOCK_REALTIME, &deadline);
	deadline.tv_sec += PEER_FINI_WAIT_S;
	pthread_mutex_lock(&conn_lock);
	while (nconn > 0)
		if (pthread_cond_timedwait(&conn_cond, &conn_lock, &deadline) ==
		    ETIMEDOUT)
			break;
	pthread_mutex_unlock(&conn_lock);
}

cJSON *peer_call(const char *node, const cJSON *req, int timeout_ms,
		 int *ret_unreachable, char *err, size_t errlen)
{
	if (ret_unreachable)
		*ret_unreachable = 0;
	if (!peer_conf || peer_conf->peer_port == 0) {
		if (ret_unreachable)
			*ret_unreachable = 1;
		snprintf(err, errlen, "node %s: the peer channel is off here "
			 "(PeerPort=0)", node);
		return NULL;
	}
	return peernet_call(node, peer_conf->peer_port, munge_socket(), req,
			    timeout_ms, ret_unreachable, err, errlen);
}

struct fanout {
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

	f->reply = peer_call(f->node, f->req, f->timeout_ms, f->unreachable,
			     f->err, 256);
	return NULL;
}

void peer_call_many(const char *const *nodes, size_t n, const cJSON *req,
		    int timeout_ms, cJSON **replies, char (*errs)[256],
		    int *unreachable)
{
	struct fanout f[PEER_FANOUT_MAX];
	pthread_t t[PEER_FANOUT_MAX];
	bool started[PEER_FANOUT_MAX];

	for (size_t base = 0; base < n; base += PEER_FANOUT_MAX) {
		size_t k = n - base < PEER_FANOUT_MAX ? n - base
						      : PEER_FANOUT_MAX;

		for (size_t i = 0; i < k; i++) {
			f[i] = (struct fanout){ nodes[base + i], req,
						timeout_ms, NULL,
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
