/* service.h - iostagectld's TCP service: the listener, one thread per
 * connection (bounded), the credential check and the op dispatch.
 *
 * Every connection carries one request inside a MUNGE credential
 * (common/net/peernet.h) and gets one reply line. A request whose credential is
 * missing, forged, replayed or expired never reaches an op: the reply is
 * {"ok":false,"refused":true,"error":"one line"} and a log line names the
 * peer address and why. Every other declined request ({"ok":false,...}:
 * another user's job, a user filing, a bad field) is logged too, with the
 * caller's uid.
 *
 * Ops: ping, file (file_ops.h), history_get, history_list, recommend
 * (history_ops.h). The service's history is history_db()
 * (common/history/history.h): the caller opens it (history_init) before starting
 * the service.
 */
#ifndef IOSTAGE_CTLD_SERVICE_H
#define IOSTAGE_CTLD_SERVICE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cJSON.h>

#include "common/config/conf.h"
#include "common/net/mauth.h"
#include "ctld/ops.h"

#define CTLD_CONN_MAX 1024       /* connections served at once */
#define CTLD_READ_MS 10000       /* for a client's request line */
#define CTLD_WORK_MAX 16         /* long requests (filings) served at once */
#define CTLD_QUERY_WORK_MAX 8    /* short ones (queries) served at once */
#define CTLD_QUERY_LINE_MAX 2048 /* a query's line: a record's is longer */
#define CTLD_FILE_NICE 10        /* a filing's thread, against a query's 0 */
#define CTLD_SEND_MS 10000       /* for the reply */

/* Listen on CONF's ControllerPort, on ControllerHost's address when it is
 * an IP literal (127.0.0.1 stays on loopback), else on every address.
 * Clients wait in the backlog until ctld_service_start. CONF must outlive
 * the service. 0, or -1 with one line in err (e.g. the port is taken:
 * another iostagectld). */
int ctld_service_listen(const struct conf *conf, char *err, size_t errlen);

/* Start serving, in a thread of its own (after ctld_service_listen and
 * once the history is open). 0, or -1 with err. */
int ctld_service_start(char *err, size_t errlen);

/* The port listened on (after ctld_service_start). */
unsigned ctld_service_port(void);

/* Stop accepting and wait (at most a few seconds) for the connections
 * being served. True when none is left (the history may then be closed).
 * No-op (true) when not started. */
bool ctld_service_stop(void);

/* What serving one connection needs: the service's own (set by
 * ctld_service_listen), or a caller's. */
struct ctld_serve_ctx {
	const struct conf *conf; /* MungeSocket, AdminGroup */
	/* The credential's decoder: NULL or mauth_decode (munged) in
	 * iostagectld; a stand-in where no munged runs (the fuzz target). */
	mauth_decode_fn decode;
};

/* One connection's request on FD (a connected socket, left open): the
 * line read within CTLD_READ_MS, its credential decoded by CTX's decoder,
 * the op dispatched (ctld_service_dispatch) and logged. Returns the reply
 * to send ({"ok":false,"refused":true,...} when the line or credential is
 * refused); NULL only on out of memory. What each connection thread of the
 * service runs, and what the fuzzer (tests/fuzz/fuzz_ctld_request.c) and
 * the unit tests call on a socket of their own. Counted in
 * ctld_service_counts. */
cJSON *ctld_service_serve(const struct ctld_serve_ctx *ctx, int fd);

/* The reply to OP with REQ from caller C (authorization included): what a
 * connection thread does once the credential is checked. Never NULL but
 * on out of memory. */
cJSON *ctld_service_dispatch(const struct conf *conf,
			     const struct ctld_caller *c, const char *op,
			     const cJSON *req);

/* Requests answered since the start, per op (for /metrics). */
struct ctld_op_count {
	const char *op; /* the op's name; "unknown" for the others */
	uint64_t ok, declined;
};

/* The counts of every op (and "unknown") into ret[0..max); their number.
 * *ret_refused: requests refused before any op (bad credential). */
size_t ctld_service_counts(struct ctld_op_count *ret, size_t max,
			   uint64_t *ret_refused);

#endif /* IOSTAGE_CTLD_SERVICE_H */
