/* ops.h - what an iostagectld op handler sees.
 *
 * service.c owns the listener, the credential check and the dispatch; each
 * op family lives in its own file (history ops in history_ops.c, filing in
 * file_ops.c) and is listed in service.c's table. A handler gets the caller
 * (from the MUNGE credential, never from the request) and the parsed
 * request, and returns the reply: proto_reply_ok() plus fields, or
 * proto_reply_error() with one line. Authorization beyond what the table
 * says is the handler's job.
 */
#ifndef IOSTAGE_CTLD_OPS_H
#define IOSTAGE_CTLD_OPS_H

#include <stdbool.h>
#include <sys/types.h>

#include <cJSON.h>

struct ctld_caller {
	uid_t uid;
	gid_t gid;
	bool read_all;    /* root or AdminGroup (ctld/authz.h) */
	const char *addr; /* the TCP peer's address, for log lines */
};

typedef cJSON *(*ctld_op_fn)(const struct ctld_caller *c, const cJSON *req);

#endif /* IOSTAGE_CTLD_OPS_H */
