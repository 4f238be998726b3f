/* server.h - iostaged's Unix socket: accept, identify, dispatch.
 *
 * One thread per connection, at most MaxConnections at once (a few of them
 * kept for root, so users cannot lock the Prolog out). Each connection
 * reads JSON lines (common/net/proto.h) and answers each with one line; a bad
 * line gets {"ok":false,"error":...} and the connection goes on. Peers are
 * identified with SO_PEERCRED when they connect. The ops are the families
 * of daemon/ops.h, called with the agent the server was made for.
 */
#ifndef IOSTAGE_DAEMON_SERVER_H
#define IOSTAGE_DAEMON_SERVER_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <time.h>

#include <cJSON.h>

#include "common/config/conf.h"
#include "daemon/ops.h"

#define SERVER_IDLE_MS 60000 /* a client silent this long is dropped */

struct agent;
struct server;

/* The socket of agent A (A->conf, ->conf_path and the parts the ops use
 * must outlive it): prepare the socket directory (created root 0755; must
 * be root's and not writable by others, a sticky world-writable one is
 * tolerated with a warning), refuse if a live daemon answers on
 * SocketPath, remove a stale socket, bind (mode 0666) and listen. The
 * server, or NULL with one line in err. */
struct server *server_create(struct agent *a, char *err, size_t errlen);

/* The directory holding the socket (where the pid file goes). */
const char *server_dir(const struct server *s);

/* When S was made (for `status`'s uptime); now when S is NULL. */
time_t server_started(const struct server *s);

/* Accept and serve until *STOP becomes true. Signals are taken only while
 * waiting in ppoll() with WAITMASK, so a signal handler that sets *STOP is
 * never missed. Returns 0 when stopped, -1 on a fatal error (logged). */
int server_run(struct server *s, volatile sig_atomic_t *stop,
	       const sigset_t *waitmask);

/* Stop accepting: close the listening socket and unlink the socket file
 * (if it is still ours). Again, or S NULL: a no-op. */
void server_close(struct server *s);

/* Hang up on every client and wait up to TIMEOUT_S for their threads.
 * Returns true when none is left (then S may be destroyed); S NULL: true. */
bool server_fini(struct server *s, unsigned timeout_s);

/* Close (if still open) and free S; no client thread may be left
 * (server_fini said so). NULL is a no-op. */
void server_destroy(struct server *s);

/* What a connection thread does with one request LINE from caller WHO:
 * parse, find the op, refuse a root-only op to a user, run the handler
 * with A. Always a reply ({"ok":...}; caller deletes), NULL only on
 * ENOMEM. Non-static for the unit tests and fuzz_agent_request. */
cJSON *server_dispatch(struct agent *a, const struct ops_caller *who,
		       const char *line);

/* The op NAME of any family, or NULL (for tests: a handler called
 * directly, without dispatch's root-only check). */
const struct op *server_op(const char *name);

#endif /* IOSTAGE_DAEMON_SERVER_H */
