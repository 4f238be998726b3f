/* peernet.h - requests between hosts: TCP, one JSON line each way, every
 * request inside a MUNGE credential (common/net/mauth.h).
 *
 * The framing is the Unix socket's (common/net/proto.h): one JSON object per
 * line, a request has "op", a reply is {"ok":true,...} or
 * {"ok":false,"error":"..."}. On the wire a request line is one of
 *   {"cred":"MUNGE:..."}                  the credential's payload is the
 *                                         request's JSON text
 *   {"cred":"MUNGE:...","body":REQUEST}   the payload is "sha256:" and the
 *                                         hex SHA-256 of the bytes of
 *                                         REQUEST exactly as sent
 * Either way the request is bound to the credential (MUNGE's MAC covers
 * the payload; a changed body no longer matches its digest) and the
 * receiver knows who sent it (uid/gid from munged). Clients send a
 * request of up to PEERNET_INLINE_MAX bytes inside the credential and a
 * longer one (a batch of job records) beside it: munged encrypts, MACs and
 * base64-codes every payload byte on both hosts, which for a 150 KB batch
 * cost more CPU than the service's filing of it (bench/README.md).
 * Replies are plain lines. One request per connection: a server
 * holds no thread for a peer after answering it. Every size is bounded
 * (PEERNET_LINE_MAX) and every wait has a deadline. Library code: errors
 * are one line in err; the caller logs.
 *
 * Used by iostaged's node-to-node channel (daemon/cluster/peer.c) and meant for
 * the cluster service of the next step (iostagectld) as well.
 */
#ifndef IOSTAGE_PEERNET_H
#define IOSTAGE_PEERNET_H

#include <stddef.h>
#include <sys/types.h>

#include <cJSON.h>

#include "common/net/mauth.h"

#define PEERNET_LINE_MAX (1024 * 1024) /* a request or reply line */
#define PEERNET_HOST_MAX 256
#define PEERNET_INLINE_MAX 4096 /* requests carried inside the credential */

/* Who sent a request, from its credential. */
struct peernet_peer {
	uid_t uid;
	gid_t gid;
	char addr[64]; /* the TCP peer's address, for log lines */
};

/* Listen on ADDR ("" or "*": every address; else an IP literal) and PORT
 * (1..65535; 0 picks a free one, for tests: getsockname). Returns a listening fd (CLOEXEC, NONBLOCK), or -1 with err. */
int peernet_listen(const char *addr, unsigned port, char *err, size_t errlen);

/* Connect to HOST (a name getaddrinfo resolves, or a literal) on PORT,
 * trying each address until one answers, within TIMEOUT_MS in all.
 * Returns a connected blocking fd (CLOEXEC), or -1 with err
 * ("node n2 (10.0.0.2:6826): connection refused"). */
int peernet_connect(const char *host, unsigned port, int timeout_ms, char *err,
		    size_t errlen);

/* Write MSG as one line of at most PEERNET_LINE_MAX bytes. 0 or -1 with
 * errno (EMSGSIZE, EPIPE, ETIMEDOUT if TIMEOUT_MS passes). */
int peernet_send(int fd, const cJSON *msg, int timeout_ms);

/* Read one line (at most PEERNET_LINE_MAX bytes) within TIMEOUT_MS.
 * Returns it (caller frees, without the '\n'), or NULL with errno
 * (ETIMEDOUT, EMSGSIZE, EPROTO for a line cut by EOF, 0 for a clean EOF
 * before any byte is set as ENODATA). */
char *peernet_read_line(int fd, int timeout_ms);

/* Read one line as peernet_read_line does, but not a byte past its '\n'
 * (it peeks first): what follows stays in the socket for whoever reads
 * next (a session, common/net/peerfetch.h). FD must be a socket. */
char *peernet_read_line_exact(int fd, int timeout_ms);

/* Client: one request REQ (an object with "op") to HOST:PORT inside a
 * credential from munged at MUNGE_SOCKET (NULL: default), and its reply,
 * all within TIMEOUT_MS. Returns the reply object (caller deletes; check
 * "ok"), or NULL with one line in err. *ret_unreachable (may be NULL) is
 * set when the peer could not be connected to at all. */
cJSON *peernet_call(const char *host, unsigned port, const char *munge_socket,
		    const cJSON *req, int timeout_ms, int *ret_unreachable,
		    char *err, size_t errlen);

/* Server: read the request on FD within TIMEOUT_MS and check its
 * credential. Returns the request (caller deletes; "op" checked to be a
 * non-empty string, *ret_op points into it) and fills *ret_peer, or NULL
 * with a one-line reason in err (suitable for the error reply and the log
 * line) and *ret_status saying why (MAUTH_OK for a framing error).
 * ret_peer->addr is set either way, for the log line. */
cJSON *peernet_read_request(int fd, int timeout_ms, const char *munge_socket,
			    const char **ret_op, struct peernet_peer *ret_peer,
			    enum mauth_status *ret_status, char *err,
			    size_t errlen);

/* peernet_read_request in two steps, for a server that bounds how many
 * requests it decodes and serves at once (ctld/service.c) without letting
 * a slow sender hold one of those places: read the line
 * (peernet_read_line; peernet_read_error(errno) says why it failed), then
 * decode it here. Returns the request (caller deletes; *ret_op points into
 * it) with ret_uid and ret_gid set from the credential, or NULL with one line
 * in err and *ret_status (MAUTH_OK for a framing error). */
cJSON *peernet_decode_request(const char *line, const char *munge_socket,
			      const char **ret_op, uid_t *ret_uid,
			      gid_t *ret_gid, enum mauth_status *ret_status,
			      char *err, size_t errlen);

/* The same with DECODE in place of mauth_decode (NULL: mauth_decode), for
 * a server given its decoder (ctld/service.c; a fuzz target's stand-in
 * for munged). */
cJSON *peernet_decode_request_by(mauth_decode_fn decode, const char *line,
				 const char *munge_socket, const char **ret_op,
				 uid_t *ret_uid, gid_t *ret_gid,
				 enum mauth_status *ret_status, char *err,
				 size_t errlen);

/* The TCP peer's address of FD into BUF ("?" when unknown). */
void peernet_peer_addr(int fd, char *buf, size_t len);

/* Why peernet_read_line failed with ERRNUM, for the refusal line. */
const char *peernet_read_error(int errnum);

/* The line a client sends for REQ (for tests that replay or tamper with
 * it): {"cred":"..."}, caller frees; NULL with err. */
char *peernet_request_line(const char *munge_socket, const cJSON *req,
			   char *err, size_t errlen);

/* The same with ENCODE in place of mauth_encode (NULL: mauth_encode),
 * for a client given its encoder (common/net/peerfetch.h; a unit test's
 * stand-in for munged). */
char *peernet_request_line_by(mauth_encode_fn encode, const char *munge_socket,
			      const cJSON *req, char *err, size_t errlen);

/* The same for a request already printed: TEXT (LEN bytes of one JSON
 * object; a bench prints its requests without building trees). */
char *peernet_request_line_text(const char *munge_socket, const char *text,
				size_t len, char *err, size_t errlen);

#endif /* IOSTAGE_PEERNET_H */
