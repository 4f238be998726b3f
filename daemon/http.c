/* http.c - /metrics over HTTP with libmicrohttpd (http.h).
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

#include "common/conf.h"
#include "common/log.h"
#include "common/netpeer.h"
#include "daemon/http.h"
#include "daemon/metrics.h"

#define HTTP_TIMEOUT_S 10
#define HTTP_CONTENT_TYPE "text/plain; version=0.0.4; charset=utf-8"

static struct MHD_Daemon *mhd;
static unsigned http_port;

/* Connections of local users other than root, per uid. Any local user can
 * open TCP connections and hold them; without a bound, 16 held ones take
 * every slot from the site's Prometheus (test_load.sh). A local user may
 * hold HTTP_USER_MAX, all of them together HTTP_USERS_MAX; root and
 * peers on other hosts (Prometheus) are bounded by the total only. */
struct http_holder {
	uid_t uid;
	unsigned n;
};

static pthread_mutex_t holders_lock = PTHREAD_MUTEX_INITIALIZER;
static struct http_holder holders[HTTP_USERS_MAX];
static unsigned holders_total;

/* Count CONN for its local owner, or refuse it: false when over a bound. */
static bool holder_take(struct MHD_Connection *conn, void **socket_context)
{
	const union MHD_ConnectionInfo *ci = MHD_get_connection_info(
		conn, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
	struct http_holder *h = NULL, *free_slot = NULL;
	unsigned held = 0, total;
	uid_t uid;
	size_t i;
	bool ok = true;

	if (!ci || !ci->client_addr ||
	    netpeer_uid(ci->client_addr, http_port, &uid) != 1 || uid == 0)
		return true; /* another host, root, or gone already */
	pthread_mutex_lock(&holders_lock);
	for (i = 0; i < HTTP_USERS_MAX; i++) {
		if (holders[i].n && holders[i].uid == uid)
			h = &holders[i];
		else if (!holders[i].n && !free_slot)
			free_slot = &holders[i];
	}
	if (!h)
		h = free_slot;
	if (!h || holders_total >= HTTP_USERS_MAX || h->n >= HTTP_USER_MAX) {
		ok = false;
		held = h ? h->n : 0;
	} else {
		h->uid = uid;
		h->n++;
		holders_total++;
		*socket_context = h;
	}
	total = holders_total;
	pthread_mutex_unlock(&holders_lock);
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
	struct http_holder *h = *socket_context;
	const union MHD_ConnectionInfo *fd;

	(void)cls;
	if (toe == MHD_CONNECTION_NOTIFY_CLOSED) {
		if (h) {
			pthread_mutex_lock(&holders_lock);
			h->n--;
			holders_total--;
			pthread_mutex_unlock(&holders_lock);
		}
		return;
	}
	if (holder_take(conn, socket_context))
		return;
	/* libmicrohttpd cannot be told to drop a connection from here:
	 * its next poll sees the socket shut and closes it. */
	fd = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
	if (fd)
		shutdown(fd->connect_fd, SHUT_RDWR);
}

/* Who may see which per-job series: a client on this host is identified
 * by its socket's owner (netpeer.h) and sees its own jobs, root all; a
 * client on another host (not in /proc/net/tcp) is the site's Prometheus,
 * which MetricsListen let in: all. If we cannot tell, no job series. */
static void viewer_of(struct MHD_Connection *conn, bool *ret_all,
		      uid_t *ret_uid)
{
	const union MHD_ConnectionInfo *ci = MHD_get_connection_info(
		conn, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
	uid_t uid = (uid_t)-1;
	int r = ci && ci->client_addr
			? netpeer_uid(ci->client_addr, http_port, &uid)
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
	struct MHD_Response *r;
	enum MHD_Result ret;
	size_t len = 0;
	bool all;
	uid_t viewer;
	char *text;

	(void)cls;
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
			     "not found: iostaged serves /metrics only\n");
	viewer_of(conn, &all, &viewer);
	text = metrics_render(all, viewer, &len);
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
static int open_listener(const char *listen_str, int *ret_family,
			 unsigned *ret_port, char *err, size_t errlen)
{
	char addr[CONF_LISTEN_MAX];
	struct sockaddr_storage ss;
	socklen_t sslen;
	unsigned port;
	int fd, one = 1;

	memset(&ss, 0, sizeof(ss));
	if (conf_parse_listen(listen_str, addr, sizeof(addr), &port) < 0) {
		snprintf(err, errlen, "MetricsListen %s: not ADDR:PORT",
			 listen_str);
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
		snprintf(err, errlen, "MetricsListen %s: socket: %s",
			 listen_str, strerror(errno));
		return -1;
	}
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (ss.ss_family == AF_INET6)
		setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one));
	if (bind(fd, (struct sockaddr *)&ss, sslen) < 0 ||
	    listen(fd, 32) < 0) {
		snprintf(err, errlen, "MetricsListen %s: cannot listen: %s",
			 listen_str, strerror(errno));
		close(fd);
		return -1;
	}
	*ret_family = ss.ss_family;
	*ret_port = port;
	return fd;
}

int http_start(const char *listen_str, char *err, size_t errlen)
{
	unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_POLL;
	int fd, family = AF_INET;

	if (mhd)
		return 0;
	fd = open_listener(listen_str, &family, &http_port, err, errlen);
	if (fd < 0)
		return -1;
	if (family == AF_INET6)
		flags |= MHD_USE_IPv6;
	mhd = MHD_start_daemon(flags, 0, NULL, NULL, on_request, NULL,
			       MHD_OPTION_LISTEN_SOCKET, fd,
			       MHD_OPTION_CONNECTION_LIMIT,
			       (unsigned)HTTP_CONNECTIONS_MAX,
			       MHD_OPTION_CONNECTION_TIMEOUT,
			       (unsigned)HTTP_TIMEOUT_S,
			       MHD_OPTION_NOTIFY_CONNECTION, on_connection, NULL,
			       MHD_OPTION_END);
	if (!mhd) {
		snprintf(err, errlen,
			 "MetricsListen %s: libmicrohttpd did not start",
			 listen_str);
		close(fd);
		return -1;
	}
	return 0;
}

void http_stop(void)
{
	if (mhd)
		MHD_stop_daemon(mhd); /* closes the listening socket */
	mhd = NULL;
}
