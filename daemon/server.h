/* server.h - iostaged's Unix socket: accept, identify, dispatch.
 *
 * One thread per connection, at most MaxConnections at once (a few of them
 * kept for root, so users cannot lock the Prolog out). Each connection
 * reads JSON lines (common/net/proto.h) and answers each with one line; a bad
 * line gets {"ok":false,"error":...} and the connection goes on. Peers are
 * identified with SO_PEERCRED when they connect.
 */
#ifndef IOSTAGE_DAEMON_SERVER_H
#define IOSTAGE_DAEMON_SERVER_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>

#include <cJSON.h>

#include "common/config/conf.h"

#define SERVER_IDLE_MS 60000 /* a client silent this long is dropped */

struct cache;

/* Prepare the socket directory (created root 0755; must be root's and not
 * writable by others, a sticky world-writable one is tolerated with a
 * warning), refuse if a live daemon answers on SocketPath, remove a stale
 * socket, bind (mode 0666) and listen. CONF, CONF_PATH and CACHE (status,
 * cache_ls, cache_evict) must outlive the server. 0, or -1 with one line
 * in err. */
int server_init(const struct conf *conf, const char *conf_path,
		struct cache *cache, char *err, size_t errlen);

/* The directory holding the socket (where the pid file goes). */
const char *server_dir(void);

/* Accept and serve until *STOP becomes true. Signals are taken only while
 * waiting in ppoll() with WAITMASK, so a signal handler that sets *STOP is
 * never missed. Returns 0 when stopped, -1 on a fatal error (logged). */
int server_run(volatile sig_atomic_t *stop, const sigset_t *waitmask);

/* Stop accepting: close the listening socket and unlink the socket file
 * (if it is still ours). */
void server_close(void);

/* Hang up on every client and wait up to TIMEOUT_S for their threads.
 * Returns true when none is left. */
bool server_fini(unsigned timeout_s);

#endif /* IOSTAGE_DAEMON_SERVER_H */
