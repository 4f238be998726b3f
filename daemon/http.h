/* http.h - the /metrics HTTP endpoint (libmicrohttpd).
 *
 * One internal polling thread, at most HTTP_CONNECTIONS_MAX connections,
 * of which local users other than root hold at most HTTP_USERS_MAX (one
 * user HTTP_USER_MAX: see holder_take in http.c), a 10 s idle timeout.
 * GET or HEAD on /metrics returns metrics_render()'s
 * text (per-job series: see viewer_of in http.c); any other path is 404,
 * any other method 405. The listening socket
 * is opened here (so a bind failure has its real errno) and handed to
 * libmicrohttpd.
 */
#ifndef IOSTAGE_DAEMON_HTTP_H
#define IOSTAGE_DAEMON_HTTP_H

#include <stddef.h>

#define HTTP_CONNECTIONS_MAX 16
#define HTTP_USERS_MAX 8
#define HTTP_USER_MAX 2

/* Serve /metrics on LISTEN ("ADDR:PORT", conf_parse_listen). 0, or -1
 * with one line in err ("MetricsListen 127.0.0.1:9464: cannot bind:
 * Address already in use"). */
int http_start(const char *listen, char *err, size_t errlen);

/* Stop serving. Safe when not started. */
void http_stop(void);

#endif /* IOSTAGE_DAEMON_HTTP_H */
