/* server.c - the socket, the connection threads and the dispatch.
 *
 * Every request line goes through server_dispatch(): parse
 * (proto_parse_request), look the op up in a table, check the caller may
 * use it, call its handler with the agent. The handlers live with their
 * families (daemon/ops.h); this file knows them only by their tables.
 *
 * What a client sends can never end the connection thread early except by
 * closing the socket, staying silent for SERVER_IDLE_MS, or not reading our
 * replies for SO_SNDTIMEO: errors are answered and the loop goes on.
 *
 * Locking: s->clients_lock guards the client list and its count, and
 * s->clients_cond tells server_fini that a thread ended.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <cJSON.h>

#include "common/base/log.h"
#include "common/net/proto.h"
#include "daemon/agent.h"
#include "daemon/fsutil.h"
#include "daemon/ops.h"
#include "daemon/server.h"
#include "daemon/telemetry/history_local.h"
#include "daemon/telemetry/telemetry.h"

#define SERVER_BACKLOG 128
#define SERVER_SNDTIMEO_S 10 /* a client that does not read is dropped */
#define SERVER_PING_MS 2000  /* probing an existing socket at start */

struct client {
	struct server *server;
	int fd;
	struct ops_caller who; /* from SO_PEERCRED at accept */
	struct client *next;
};

struct server {
	struct agent *agent;
	char sock_dir[CONF_SOCKET_MAX];
	int listen_fd;
	dev_t sock_dev; /* the socket file we made: unlink only that one */
	ino_t sock_ino;
	time_t started;

	pthread_mutex_t clients_lock;
	pthread_cond_t clients_cond;
	struct client *clients;
	unsigned nclients;
};

/* Every family of ops; one line per file that defines a table. */
static const struct op *const op_tables[] = {
	ops_daemon_table, ops_job_table, ops_cache_table,
	telemetry_ops,    history_ops,
};

#define NTABLES (sizeof(op_tables) / sizeof(op_tables[0]))

const struct op *server_op(const char *name)
{
	const struct op *op;
	size_t t;

	for (t = 0; t < NTABLES; t++)
		for (op = op_tables[t]; op->name; op++)
			if (!strcmp(op->name, name))
				return op;
	return NULL;
}

/* "ping, stage, ..." for the unknown-op message. */
static void known_ops(char *buf, size_t len)
{
	const struct op *op;
	size_t t, used = 0;

	buf[0] = '\0';
	for (t = 0; t < NTABLES; t++)
		for (op = op_tables[t]; op->name && used < len; op++)
			used += (size_t)snprintf(buf + used, len - used, "%s%s",
						 used ? ", " : "", op->name);
}

cJSON *server_dispatch(struct agent *a, const struct ops_caller *c,
		       const char *line)
{
	char err[CONF_ERR_MAX], shown[72], known[512];
	const struct op *op;
	const char *name;
	cJSON *req, *reply;

	req = proto_parse_request(line, &name, err, sizeof(err));
	if (!req) {
		log_warningx("client pid %d uid %u: %s", (int)c->pid,
			     (unsigned)c->uid, err);
		return proto_reply_error("%s", err);
	}
	op = server_op(name);
	if (!op) {
		ops_printable(name, shown, sizeof(shown));
		log_warningx("client pid %d uid %u: unknown op '%s'",
			     (int)c->pid, (unsigned)c->uid, shown);
		known_ops(known, sizeof(known));
		reply = proto_reply_error("unknown op '%s' (known: %s)", shown,
					  known);
	} else if (op->root_only && c->uid != 0) {
		log_warningx("client pid %d uid %u: op '%s' refused: not root",
			     (int)c->pid, (unsigned)c->uid, op->name);
		reply = proto_reply_error(
		    "permission denied: op '%s' needs root (peer uid %u)",
		    op->name, (unsigned)c->uid);
	} else {
		reply = op->fn(a, c, req);
	}
	cJSON_Delete(req);
	return reply;
}

/* --- connections
 * ---------------------------------------------------------------- */

static void client_unlink(struct client *c)
{
	struct server *s = c->server;
	struct client **pp;

	pthread_mutex_lock(&s->clients_lock);
	for (pp = &s->clients; *pp; pp = &(*pp)->next) {
		if (*pp == c) {
			*pp = c->next;
			break;
		}
	}
	s->nclients--;
	pthread_cond_broadcast(&s->clients_cond);
	pthread_mutex_unlock(&s->clients_lock);
}

static void *client_thread(void *arg)
{
	struct client *c = arg;
	struct proto_reader *rd = proto_reader_create(c->fd);
	char *line;

	while (rd) {
		cJSON *reply;
		int r = proto_read_line(rd, SERVER_IDLE_MS, &line);

		if (r == 0)
			break;
		if (r < 0) {
			if (errno == EMSGSIZE) {
				log_warningx("client pid %d uid %u: request "
					     "longer than %d bytes",
					     (int)c->who.pid,
					     (unsigned)c->who.uid,
					     PROTO_LINE_MAX);
				reply = proto_reply_error(
				    "request line longer than %d bytes",
				    PROTO_LINE_MAX);
				if (!reply || proto_send(c->fd, reply) < 0) {
					cJSON_Delete(reply);
					break;
				}
				cJSON_Delete(reply);
				continue;
			}
			if (errno == ETIMEDOUT)
				log_debug(
				    "client pid %d uid %u: idle for %d s, "
				    "dropped",
				    (int)c->who.pid, (unsigned)c->who.uid,
				    SERVER_IDLE_MS / 1000);
			break;
		}
		reply = server_dispatch(c->server->agent, &c->who, line);
		if (!reply)
			reply = proto_reply_error("out of memory");
		if (!reply || proto_send(c->fd, reply) < 0) {
			cJSON_Delete(reply);
			break;
		}
		cJSON_Delete(reply);
	}
	proto_reader_destroy(rd);
	/* Unlinked before close: server_fini may shutdown() linked fds. */
	client_unlink(c);
	close(c->fd);
	free(c);
	return NULL;
}

/* Send a one-line error to a connection we will not serve, and close it. */
static void refuse(int fd, const char *msg)
{
	cJSON *r = proto_reply_error("%s", msg);
	int fl = fcntl(fd, F_GETFL);

	if (fl >= 0)
		fcntl(fd, F_SETFL, fl | O_NONBLOCK);
	if (r)
		proto_send(fd, r);
	cJSON_Delete(r);
	close(fd);
}

/* How many connections UID holds now. s->clients_lock held. */
static unsigned clients_of_locked(const struct server *s, uid_t uid)
{
	const struct client *c;
	unsigned n = 0;

	for (c = s->clients; c; c = c->next)
		n += c->who.uid == uid;
	return n;
}

static void accept_client(struct server *s, int fd)
{
	struct timeval tv = { .tv_sec = SERVER_SNDTIMEO_S };
	unsigned max = s->agent->conf->max_connections;
	unsigned reserve = max / 8 ? max / 8 : 1;
	/* One user may hold half of the users' slots: a user who opens
	 * connections and holds them (or a job gone wrong) cannot lock the
	 * other users' jobs out of job_env, phase and shim_report. */
	unsigned per_user = max > reserve ? (max - reserve) / 2 : 1;
	struct ucred cred;
	socklen_t len = sizeof(cred);
	pthread_attr_t attr;
	pthread_t thread;
	struct client *c;
	char msg[128];
	int r;

	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0) {
		log_warning("cannot identify a client (SO_PEERCRED)");
		close(fd);
		return;
	}
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	pthread_mutex_lock(&s->clients_lock);
	/* The last slots are root's, so the Prolog always gets in. */
	if (s->nclients >= max ||
	    (cred.uid != 0 && max > reserve && s->nclients >= max - reserve)) {
		pthread_mutex_unlock(&s->clients_lock);
		log_warningx("client pid %d uid %u refused: too many "
			     "connections (%u)",
			     (int)cred.pid, (unsigned)cred.uid, max);
		snprintf(msg, sizeof(msg), PROTO_BUSY " (limit %u)", max);
		refuse(fd, msg);
		return;
	}
	if (cred.uid != 0 && per_user > 1 &&
	    clients_of_locked(s, cred.uid) >= per_user) {
		pthread_mutex_unlock(&s->clients_lock);
		log_warningx("client pid %d uid %u refused: too many "
			     "connections of uid %u (%u)",
			     (int)cred.pid, (unsigned)cred.uid,
			     (unsigned)cred.uid, per_user);
		snprintf(msg, sizeof(msg), PROTO_BUSY " of uid %u (limit %u)",
			 (unsigned)cred.uid, per_user);
		refuse(fd, msg);
		return;
	}
	c = calloc(1, sizeof(*c));
	if (!c) {
		pthread_mutex_unlock(&s->clients_lock);
		refuse(fd, "out of memory");
		return;
	}
	c->server = s;
	c->fd = fd;
	c->who.uid = cred.uid;
	c->who.gid = cred.gid;
	c->who.pid = cred.pid;
	c->next = s->clients;
	s->clients = c;
	s->nclients++;
	pthread_mutex_unlock(&s->clients_lock);

	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	r = pthread_create(&thread, &attr, client_thread, c);
	pthread_attr_destroy(&attr);
	if (r != 0) {
		log_warningx("cannot start a client thread: %s", strerror(r));
		client_unlink(c);
		free(c);
		refuse(fd, "out of resources");
	}
}

/* --- the socket
 * ----------------------------------------------------------------- */

/* Create or check the directory that holds the socket (into sock_dir). */
static int prepare_dir(char *sock_dir, size_t dirlen, const char *sock,
		       char *err, size_t errlen)
{
	char why[CONF_ERR_MAX];
	struct stat st;
	char *slash;

	snprintf(sock_dir, dirlen, "%s", sock);
	slash = strrchr(sock_dir, '/');
	if (!slash) {
		snprintf(err, errlen, "SocketPath %s is not absolute", sock);
		return -1;
	}
	if (slash == sock_dir)
		slash[1] = '\0';
	else
		*slash = '\0';
	if (fsutil_mkdir_p(sock_dir, 0755) < 0 || stat(sock_dir, &st) < 0) {
		snprintf(err, errlen, "cannot create socket directory %s: %s",
			 sock_dir, strerror(errno));
		return -1;
	}
	if (fsutil_check_root_dir(&st, sock_dir, true, why, sizeof(why)) < 0) {
		snprintf(err, errlen, "socket directory: %s", why);
		return -1;
	}
	if (st.st_mode & S_IWOTH)
		log_warningx("socket directory %s is world-writable (sticky); "
			     "use a directory only root can write",
			     sock_dir);
	return 0;
}

/* Refuse a live daemon on SOCK; remove a stale socket. */
static int check_existing(const char *sock, char *err, size_t errlen)
{
	char perr[CONF_ERR_MAX];
	struct stat st;
	cJSON *req, *reply;
	int fd;

	if (lstat(sock, &st) < 0) {
		if (errno == ENOENT)
			return 0;
		snprintf(err, errlen, "cannot check %s: %s", sock,
			 strerror(errno));
		return -1;
	}
	if (!S_ISSOCK(st.st_mode)) {
		snprintf(err, errlen,
			 "%s exists and is not a socket; remove it", sock);
		return -1;
	}
	fd = proto_connect(sock);
	if (fd < 0 && errno == ECONNREFUSED) {
		if (unlink(sock) < 0 && errno != ENOENT) {
			snprintf(err, errlen,
				 "cannot remove stale socket %s: %s", sock,
				 strerror(errno));
			return -1;
		}
		log_info("removed stale socket %s", sock);
		return 0;
	}
	if (fd < 0) {
		snprintf(err, errlen, "cannot check %s: %s", sock,
			 strerror(errno));
		return -1;
	}
	close(fd);
	req = cJSON_CreateObject();
	cJSON_AddStringToObject(req, "op", "ping");
	reply = proto_call(sock, req, SERVER_PING_MS, perr, sizeof(perr));
	cJSON_Delete(req);
	if (reply) {
		const cJSON *pid = cJSON_GetObjectItemCaseSensitive(reply,
								    "pid");

		snprintf(err, errlen,
			 "iostaged is already running on %s (pid %.0f)", sock,
			 cJSON_IsNumber(pid) ? pid->valuedouble : 0.0);
	} else {
		snprintf(err, errlen,
			 "%s is already in use by a process that does not "
			 "answer",
			 sock);
	}
	cJSON_Delete(reply);
	return -1;
}

struct server *server_create(struct agent *a, char *err, size_t errlen)
{
	struct sockaddr_un addr = { .sun_family = AF_UNIX };
	const char *sock = a->conf->socket_path;
	struct server *s;
	struct stat st;
	int fd = -1;

	if (strlen(sock) >= sizeof(addr.sun_path)) {
		snprintf(err, errlen, "SocketPath %s is too long", sock);
		return NULL;
	}
	s = calloc(1, sizeof(*s));
	if (!s) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	s->agent = a;
	s->listen_fd = -1;
	s->started = time(NULL);
	pthread_mutex_init(&s->clients_lock, NULL);
	pthread_cond_init(&s->clients_cond, NULL);
	if (prepare_dir(s->sock_dir, sizeof(s->sock_dir), sock, err, errlen) <
		0 ||
	    check_existing(sock, err, errlen) < 0)
		goto fail;
	strcpy(addr.sun_path, sock);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0) {
		snprintf(err, errlen, "socket: %s", strerror(errno));
		goto fail;
	}
	if (bind(fd, (struct sockaddr *)&addr, sizeof(addr)) < 0) {
		snprintf(err, errlen, "cannot bind %s: %s%s", sock,
			 strerror(errno),
			 errno == EADDRINUSE ? " (iostaged already running?)"
					     : "");
		goto fail;
	}
	/* Anyone may connect: users query their own jobs; SO_PEERCRED
	 * decides what each peer may do. */
	if (chmod(sock, 0666) < 0 || lstat(sock, &st) < 0 ||
	    listen(fd, SERVER_BACKLOG) < 0) {
		int saved = errno;

		unlink(sock);
		snprintf(err, errlen, "cannot set up %s: %s", sock,
			 strerror(saved));
		goto fail;
	}
	s->sock_dev = st.st_dev;
	s->sock_ino = st.st_ino;
	s->listen_fd = fd;
	return s;
fail:
	if (fd >= 0)
		close(fd);
	server_destroy(s);
	return NULL;
}

const char *server_dir(const struct server *s)
{
	return s->sock_dir;
}

time_t server_started(const struct server *s)
{
	return s ? s->started : time(NULL);
}

int server_run(struct server *s, volatile sig_atomic_t *stop,
	       const sigset_t *waitmask)
{
	struct pollfd pfd = { .fd = s->listen_fd, .events = POLLIN };

	while (!*stop) {
		int fd, n = ppoll(&pfd, 1, NULL, waitmask);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			log_error("ppoll");
			return -1;
		}
		fd = accept4(s->listen_fd, NULL, NULL, SOCK_CLOEXEC);
		if (fd >= 0) {
			accept_client(s, fd);
			continue;
		}
		if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS ||
		    errno == ENOMEM) {
			/* Out of fds: do not spin on a readable socket. */
			struct timespec ts = { 0, 100 * 1000 * 1000 };

			log_warning("accept");
			nanosleep(&ts, NULL);
		} else if (errno != EAGAIN && errno != EINTR &&
			   errno != ECONNABORTED && errno != EPROTO) {
			log_error("accept");
			return -1;
		}
	}
	return 0;
}

void server_close(struct server *s)
{
	const char *sock;
	struct stat st;

	if (!s || s->listen_fd < 0)
		return;
	sock = s->agent->conf->socket_path;
	close(s->listen_fd);
	s->listen_fd = -1;
	/* Only our own socket: never one a newer daemon put there. */
	if (lstat(sock, &st) == 0 && st.st_dev == s->sock_dev &&
	    st.st_ino == s->sock_ino)
		unlink(sock);
}

bool server_fini(struct server *s, unsigned timeout_s)
{
	struct timespec deadline;
	struct client *c;
	bool done;

	if (!s)
		return true;
	clock_gettime(CLOCK_REALTIME, &deadline);
	deadline.tv_sec += timeout_s;
	pthread_mutex_lock(&s->clients_lock);
	/* Reading side only: a thread blocked in read sees EOF and ends,
	 * while one that was just woken from "wait" (its job failed with
	 * the shutdown) can still send that answer. */
	for (c = s->clients; c; c = c->next)
		shutdown(c->fd, SHUT_RD);
	while (s->nclients > 0)
		if (pthread_cond_timedwait(&s->clients_cond, &s->clients_lock,
					   &deadline) == ETIMEDOUT)
			break;
	/* Still there: stuck sending to a client that does not read. */
	for (c = s->clients; c; c = c->next)
		shutdown(c->fd, SHUT_RDWR);
	done = s->nclients == 0;
	pthread_mutex_unlock(&s->clients_lock);
	return done;
}

void server_destroy(struct server *s)
{
	if (!s)
		return;
	server_close(s);
	pthread_cond_destroy(&s->clients_cond);
	pthread_mutex_destroy(&s->clients_lock);
	free(s);
}
