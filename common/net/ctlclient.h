/* ctlclient.h - requests to the cluster service, iostagectld.
 *
 * Everything that reads or files history on a cluster with a service
 * (ControllerHost= set in iostage.conf) goes through ctl_request(): one
 * request, inside a MUNGE credential of the calling process
 * (common/net/mauth.h), to ControllerHost:ControllerPort over TCP
 * (common/net/peernet.h), and its reply. The service learns who asks from the
 * credential alone, so a client needs no key or password: root on a node files
 * records, a user reads their own jobs.
 *
 * Ops (the request's "op"; docs/ARCHITECTURE.md has their fields):
 * ping, file, file_batch, history_get, history_list, recommend.
 *
 * Library code: it never logs; one line in err. Links libmunge
 * (common/net/mauth.o).
 */
#ifndef IOSTAGE_CTLCLIENT_H
#define IOSTAGE_CTLCLIENT_H

#include <stdbool.h>
#include <stddef.h>

#include <cJSON.h>

#include "common/config/conf.h"

/* A whole request (connect, send, the service's work, reply) within this. */
#define CTL_REQUEST_TIMEOUT_MS 10000

/* Is a service configured (ControllerHost= not empty)? When it is not, the
 * history stays node-local, in iostaged, as before the service existed. */
bool ctl_configured(const struct conf *conf);

/* Send REQ (an object with "op") to the configured iostagectld and wait
 * for its reply, within CTL_REQUEST_TIMEOUT_MS.
 * Returns 0 with *ret_reply set (caller deletes; it may be
 * {"ok":false,"error":"..."} for a request the service understood and
 * declined, e.g. a job that is not the caller's), or -1 with one line in
 * err naming the service and why: not configured, unreachable, no reply,
 * munged not running here, or the credential refused by the service
 * ("iostagectld ctl:6827: request refused: credential replayed").
 * *ret_reply is untouched on failure. */
int ctl_request(const struct conf *conf, const cJSON *req, cJSON **ret_reply,
		char *err, size_t errlen);

/* ctl_request() with its own deadline TIMEOUT_MS (> 0): for callers that
 * must not wait long, e.g. sbatch on a login node. */
int ctl_request_timeout(const struct conf *conf, const cJSON *req,
			int timeout_ms, cJSON **ret_reply, char *err,
			size_t errlen);

#endif /* IOSTAGE_CTLCLIENT_H */
