/* ops.h - what an op handler sees, so that op families live in their own files.
 *
 * server.c owns the socket and dispatch; the staging ops are in server.c,
 * and every other family of ops (telemetry, history, ...) is a table in its
 * own file, listed once in server.c's op_tables[]. A handler gets the peer
 * (from SO_PEERCRED, never from the request) and the parsed request, and
 * returns the reply: proto_reply_ok() plus fields, or proto_reply_error().
 * Authorization beyond "root only" is the handler's job: a user may see
 * only their own jobs.
 */
#ifndef IOSTAGE_DAEMON_OPS_H
#define IOSTAGE_DAEMON_OPS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <cJSON.h>

struct peer {
	uid_t uid;
	gid_t gid;
	pid_t pid;
};

typedef cJSON *(*op_fn)(const struct peer *peer, const cJSON *req);

struct op {
	const char *name;
	op_fn fn;
	bool root_only;
};

/* A family of ops: a table ended by { NULL, NULL, false }. */
typedef const struct op op_table[];

/* S made safe for one log line or message (control bytes become '?'). */
const char *ops_printable(const char *s, char *buf, size_t len);

#endif /* IOSTAGE_DAEMON_OPS_H */
