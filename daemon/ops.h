/* ops.h - what an op handler sees, so that op families live in their own files.
 *
 * server.c owns the socket and dispatch; every family of ops is a table in
 * its own file, listed once in server.c's op_tables[]: the job's life
 * (ops_job.c), the cache (ops_cache.c), the daemon itself (ops_daemon.c),
 * telemetry (telemetry/telemetry_ops.c), the history
 * (telemetry/history_local.c). A handler gets the node agent (its parts:
 * daemon/agent.h), the caller (from SO_PEERCRED, never from the request)
 * and the parsed request, and returns the reply: proto_reply_ok() plus
 * fields, or proto_reply_error(). It needs no socket, so a unit test calls
 * it with a test agent. Authorization beyond "root only" (which dispatch
 * checks from the table) is the handler's job: a user may see only their
 * own jobs.
 */
#ifndef IOSTAGE_DAEMON_OPS_H
#define IOSTAGE_DAEMON_OPS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <cJSON.h>

struct agent;

/* Who sent a request on the socket: SO_PEERCRED at accept. */
struct ops_caller {
	uid_t uid;
	gid_t gid;
	pid_t pid;
};

typedef cJSON *(*op_fn)(struct agent *a, const struct ops_caller *who,
			const cJSON *req);

struct op {
	const char *name;
	op_fn fn;
	bool root_only;
};

/* A family of ops: a table ended by { NULL, NULL, false }. */
typedef const struct op op_table[];

/* The staging families (daemon/ops_job.c, ops_cache.c, ops_daemon.c). */
extern op_table ops_job_table;    /* stage wait abort job_env finish */
extern op_table ops_cache_table;  /* prestage cache_ls cache_evict */
extern op_table ops_daemon_table; /* ping status */

/* `prestage` as root (any user's dataset, named by "user"): what the node
 * channel's `prestage` runs (peer_set_prestage; daemon/cluster/peer.h).
 * The reply; NULL on ENOMEM. */
cJSON *ops_prestage_root(struct agent *a, const cJSON *req);

/* S made safe for one log line or message (control bytes become '?'). */
const char *ops_printable(const char *s, char *buf, size_t len);

#endif /* IOSTAGE_DAEMON_OPS_H */
