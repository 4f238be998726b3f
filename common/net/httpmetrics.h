/* httpmetrics.h - a /metrics HTTP endpoint (libmicrohttpd), shared by
 * iostaged (daemon/telemetry/metrics.c) and iostagectld (ctld/metrics.c).
 *
 * One internal polling thread, at most HTTPMETRICS_CONNECTIONS_MAX
 * connections, of which local users other than root hold at most
 * HTTPMETRICS_USERS_MAX (one user HTTPMETRICS_USER_MAX: a local user
 * holding connections open must not lock out the site's Prometheus; a
 * refusal is the one thing here that logs), a 10 s idle timeout. GET or HEAD on /metrics returns what
 * the caller's render function makes of it (Prometheus text 0.0.4); any
 * other path is 404, any other method 405. The listening socket is opened
 * here (so a bind failure has its real errno) and handed to
 * libmicrohttpd.
 *
 * Who asks: a client on this host is identified by its socket's owner
 * (common/net/netpeer.h) and the render function is told its uid (root: all);
 * a client on another host (not in /proc/net/tcp) is the site's
 * Prometheus, which the listen address let in: all. If the owner cannot
 * be told, the render function gets neither (a daemon shows no per-user
 * series then).
 */
#ifndef IOSTAGE_HTTPMETRICS_H
#define IOSTAGE_HTTPMETRICS_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#define HTTPMETRICS_CONNECTIONS_MAX 16
#define HTTPMETRICS_USERS_MAX 8
#define HTTPMETRICS_USER_MAX 2

/* The page for a viewer: ALL (root, or another host), else VIEWER's
 * uid ((uid_t)-1: unknown). A malloc'd text (the server frees it) and
 * its length in *ret_len; NULL on ENOMEM (answered 500). Called from the
 * server's thread. */
typedef char *(*httpmetrics_render_fn)(void *arg, bool all, uid_t viewer,
				       size_t *ret_len);

struct httpmetrics;

/* Serve /metrics on LISTEN ("ADDR:PORT", conf_parse_listen). KEY names
 * the setting in messages.
 * The server, or NULL with one line in err ("MetricsListen
 * 127.0.0.1:9464: cannot listen: Address already in use"). */
struct httpmetrics *httpmetrics_start(const char *key, const char *listen,
				      httpmetrics_render_fn render, void *arg,
				      char *err, size_t errlen);

/* The port it listens on. */
unsigned httpmetrics_port(const struct httpmetrics *h);

/* Stop serving and free H. NULL is a no-op. */
void httpmetrics_stop(struct httpmetrics *h);

#endif /* IOSTAGE_HTTPMETRICS_H */
