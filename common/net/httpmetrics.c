/* httpmetrics.c - /metrics over HTTP with libmicrohttpd (httpmetrics.h).
 *
 * libmicrohttpd does the HTTP; we open the listening socket ourselves so
 * that "address in use" or "cannot assign requested address" reaches the
 * log as such, then hand it over with MHD_OPTION_LISTEN_SOCKET.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <microhttpd.h>

#include "common/base/log.h"
#include "common/config/conf.h"
#include "common/net/httpmetrics.h"
#include "common/net/netpeer.h"

#define HTTP_TIMEOUT_S 10
#define HTTP_CONTENT_TYPE "text/plain; version=0.0.4; charset=utf-8"

/* Connections of local users other than root, per uid. Any local user can
 * open TCP connections and hold them; without a bound, 16 held ones take
 * every slot from the site's Prometheus (test_load.sh). A local user may
 * hold HTTPMETRICS_USER_MAX, all of them together HTTPMETRICS_USERS_MAX;
 * root and peers on other hosts (Prometheus) are bounded by the total
 * only. */
struct holder {
	uid_t uid;
	unsigned n;
};

struct httpmetrics {
	struct MHD_Daemon *mhd;
	unsigned port;
	httpmetrics_render_fn render;
	void *arg;
	pthread_mutex_t holders_lock;
	struct holder holders[HTTPMETRICS_USERS_MAX];
	unsigned holders_total;
};

/* Count CONN for its local owner, or refuse it: false when over a bound. */
static bool holder_take(struct httpmetrics *hm, struct MHD_Connection *conn,
			void **socket_context)
{
	const union MHD_ConnectionInfo *ci =
	    MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
	struct holder *h = NULL, *free_slot = NULL;
	unsigned held = 0, total;
	uid_t uid;
	size_t i;
	bool ok = true;

	if (!ci || !ci->client_addr ||
	    netpeer_uid(ci->client_addr, hm->port, &uid) != 1 || uid == 0)
		return true; /* another host, root, or gone already */
	pthread_mutex_lock(&hm->holders_lock);
	for (i = 0; i < HTTPMETRICS_USERS_MAX; i++) {
		if (hm->holders[i].n && hm->holders[i].uid == uid)
			h = &hm->holders[i];
		else if (!hm->holders[i].n && !free_slot)
			free_slot = &hm->holders[i];
	}
	if (!h)
		h = free_slot;
	if (!h || hm->holders_total >= HTTPMETRICS_USERS_MAX ||
	    h->n >= HTTPMETRICS_USER_MAX) {
		ok = false;
		held = h ? h->n : 0;
	} else {
		h->uid = uid;
		h->n++;
		hm->holders_total++;
		*socket_context = h;
	}
	total = hm->holders_total;
	pthread_mutex_unlock(&hm->holders_lock);
	if (!ok)
		log_warningx("/metrics: connection of uid %u refused: it holds "
			     "%u already (local users: %u)",
			     (unsigned)uid, held, total);
	return ok;
}

static void on_connection(void *cls, struct MHD_Connection *conn,
			  void **socket_context,
			  enum MHD_ConnectionNotificationCode toe)
{
	struct httpmetrics *hm = cls;
	struct holder *h = *socket_context;
	const union MHD_ConnectionInfo *fd;

	if (toe == MHD_CONNECTION_NOTIFY_CLOSED) {
		if (h) {
			pthread_mutex_lock(&hm->holders_lock);
			h->n--;
			hm->holders_total--;
			pthread_mutex_unlock(&hm->holders_lock);
		}
		return;
	}
	if (holder_take(hm, conn, socket_context))
		return;
	/* libmicrohttpd cannot be told to drop a connection from here:
	 * its next poll sees the socket shut and closes it. */
	fd = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
	if (fd)
		shutdown(fd->connect_fd, SHUT_RDWR);
}

/* Who asks (httpmetrics.h): a local client by its socket's owner, a
 * remote one (not in /proc/net/tcp) is the site's Prometheus: all. */
static void viewer_of(struct MHD_Connection *conn, unsigned port, bool *ret_all,
		      uid_t *ret_uid)
{
	const union MHD_ConnectionInfo *ci =
	    MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
	uid_t uid = (uid_t)-1;
	int r = ci && ci->client_addr ? netpeer_uid(ci->client_addr, port, &uid)
				      : -1;

	*ret_all = r == 0 || (r == 1 && uid == 0);
	*ret_uid = r == 1 ? uid : (uid_t)-1;
}

static enum MHD_Result reply(struct MHD_Connection *conn, unsigned status,
			     const char *text)
{
	struct MHD_Response *r = MHD_create_response_from_buffer(
	    strlen(text), (void *)text, MHD_RESPMEM_PERSISTENT);
	enum MHD_Result ret;

	if (!r)
		return MHD_NO;
	MHD_add_response_header(r, "Content-Type", "text/plain");
	ret = MHD_queue_response(conn, status, r);
	MHD_destroy_response(r);
	return ret;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn,
				  const char *url, const char *method,
				  const char *version, const char *upload,
				  size_t *upload_size, void **state)
{
	struct httpmetrics *h = cls;
	struct MHD_Response *r;
	enum MHD_Result ret;
	size_t len = 0;
	bool all;
	uid_t viewer;
	char *text;

	(void)version;
	(void)upload;
	if (!*state) { /* first call: headers only; answer on the next */
		*state = conn;
		return MHD_YES;
	}
	if (*upload_size) {
		*upload_size = 0; /* a body we ignore */
		return MHD_YES;
	}
	if (strcmp(method, "GET") && strcmp(method, "HEAD"))
		return reply(conn, MHD_HTTP_METHOD_NOT_ALLOWED,
			     "only GET /metrics\n");
	if (strcmp(url, "/metrics"))
		return reply(conn, MHD_HTTP_NOT_FOUND,
			     "not found: only /metrics is served here\n");
	viewer_of(conn, h->port, &all, &viewer);
	text = h->render(h->arg, all, viewer, &len);
	if (!text)
		return reply(conn, MHD_HTTP_INTERNAL_SERVER_ERROR,
			     "out of memory\n");
	r = MHD_create_response_from_buffer(len, text, MHD_RESPMEM_MUST_FREE);
	if (!r) {
		free(text);
		return MHD_NO;
	}
	MHD_add_response_header(r, "Content-Type", HTTP_CONTENT_TYPE);
	ret = MHD_queue_response(conn, MHD_HTTP_OK, r);
	MHD_destroy_response(r);
	return ret;
}

/* A listening socket on ADDR:PORT. fd, or -1 with err. */
static int open_listener(const char *key, const char *listen_str,
			 int *ret_family, unsigned *ret_port, char *err,
			 size_t errlen)
{
	char addr[CONF_LISTEN_MAX];
	struct sockaddr_storage ss;
	socklen_t sslen;
	unsigned port;
	int fd, one = 1;

	memset(&ss, 0, sizeof(ss));
	if (conf_parse_listen(listen_str, addr, sizeof(addr), &port) < 0) {
		snprintf(err, errlen, "%s %s: not ADDR:PORT", key, listen_str);
		return -1;
	}
	if (strchr(addr, ':')) {
		struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&ss;

		s6->sin6_family = AF_INET6;
		s6->sin6_port = htons((uint16_t)port);
		inet_pton(AF_INET6, addr, &s6->sin6_addr);
		sslen = sizeof(*s6);
	} else {
		struct sockaddr_in *s4 = (struct sockaddr_in *)&ss;

		s4->sin_family = AF_INET;
		s4->sin_port = htons((uint16_t)port);
		inet_pton(AF_INET, addr, &s4->sin_addr);
		sslen = sizeof(*s4);
	}
	fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		snprintf(err, errlen, "%s %s: socket: %s", key, listen_str,
			 strerror(errno));
		return -1;
	}
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (ss.ss_family == AF_INET6)
		setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one));
	if (bind(fd, (struct sockaddr *)&ss, sslen) < 0 || listen(fd, 32) < 0) {
		snprintf(err, errlen, "%s %s: cannot listen: %s", key,
			 listen_str, strerror(errno));
		close(fd);
		return -1;
	}
	*ret_family = ss.ss_family;
	*ret_port = port;
	return fd;
}

struct httpmetrics *httpmetrics_start(const char *key, const char *listen_str,
				      httpmetrics_render_fn render, void *arg,
				      char *err, size_t errlen)
{
	unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_POLL;
	struct httpmetrics *h = calloc(1, sizeof(*h));
	int fd, family = AF_INET;

	if (!h) {
		snprintf(err, errlen, "%s %s: out of memory", key, listen_str);
		return NULL;
	}
	h->render = render;
	h->arg = arg;
	pthread_mutex_init(&h->holders_lock, NULL);
	fd = open_listener(key, listen_str, &family, &h->port, err, errlen);
	if (fd < 0) {
		free(h);
		return NULL;
	}
	if (family == AF_INET6)
		flags |= MHD_USE_IPv6;
	h->mhd = MHD_start_daemon(
	    flags, 0, NULL, NULL, on_request, h, MHD_OPTION_LISTEN_SOCKET, fd,
	    MHD_OPTION_CONNECTION_LIMIT, (unsigned)HTTPMETRICS_CONNECTIONS_MAX,
	    MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)HTTP_TIMEOUT_S,
	    MHD_OPTION_NOTIFY_CONNECTION, on_connection, h, MHD_OPTION_END);
	if (!h->mhd) {
		snprintf(err, errlen, "%s %s: libmicrohttpd did not start", key,
			 listen_str);
		close(fd);
		free(h);
		return NULL;
	}
	return h;
}

unsigned httpmetrics_port(const struct httpmetrics *h)
{
	return h->port;
}

void httpmetrics_stop(struct httpmetrics *h)
{
	if (!h)
		return;
	MHD_stop_daemon(h->mhd); /* closes the listening socket */
	pthread_mutex_destroy(&h->holders_lock);
	free(h);
}
