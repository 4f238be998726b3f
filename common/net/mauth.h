/* mauth.h - MUNGE credentials for requests between hosts.
 *
 * A request that crosses hosts travels inside a MUNGE credential: the
 * credential's payload IS the request, so nothing in it can be changed
 * without breaking the credential, and the receiver learns the uid/gid of
 * the process that encoded it from munged, never from the request. munged
 * refuses a credential decoded twice (replay) and one past its TTL
 * (expired); both are refused here like a forged one. Library code: no
 * logging, one line in err.
 */
#ifndef IOSTAGE_MAUTH_H
#define IOSTAGE_MAUTH_H

#include <stddef.h>
#include <sys/types.h>

#define MAUTH_PAYLOAD_MAX (768 * 1024) /* below MUNGE's 1 MiB request cap */

/* Why a credential was refused (MAUTH_OK: it was not). */
enum mauth_status {
	MAUTH_OK = 0,
	MAUTH_INVALID, /* forged, damaged, another key, not a credential */
	MAUTH_EXPIRED,
	MAUTH_REPLAYED,
	MAUTH_REWOUND,   /* encoded in the future: clocks differ */
	MAUTH_NO_DAEMON, /* munged not reachable */
	MAUTH_ERROR,     /* anything else (out of memory, ...) */
};

/* A credential ("MUNGE:...", caller frees) carrying PAYLOAD (LEN bytes,
 * at most MAUTH_PAYLOAD_MAX). SOCKET: munged's socket, NULL for libmunge's
 * default. NULL with one line in err. */
char *mauth_encode(const char *socket, const void *payload, size_t len,
		   char *err, size_t errlen);

/* Decode CRED with munged at SOCKET (NULL: default). On success returns
 * MAUTH_OK with *ret_payload (NUL-terminated, caller frees), *ret_len,
 * *ret_uid and *ret_gid set. Otherwise the reason, with one line in err
 * ("credential replayed", ...) and the ret_ arguments untouched. */
enum mauth_status mauth_decode(const char *socket, const char *cred,
			       char **ret_payload, size_t *ret_len,
			       uid_t *ret_uid, gid_t *ret_gid, char *err,
			       size_t errlen);

/* A decoder with mauth_decode's contract, for a server that is given one
 * (ctld/service.h's struct ctld_serve_ctx: mauth_decode in iostagectld, a
 * stand-in in a fuzz target, where no munged runs). */
typedef enum mauth_status (*mauth_decode_fn)(
    const char *socket, const char *cred, char **ret_payload, size_t *ret_len,
    uid_t *ret_uid, gid_t *ret_gid, char *err, size_t errlen);

/* An encoder with mauth_encode's contract, for a client that is given
 * one (common/net/peerfetch.h's peerfetch_open_by: mauth_encode in the
 * stage worker, a stand-in in the unit tests, where no munged runs). */
typedef char *(*mauth_encode_fn)(const char *socket, const void *payload,
				 size_t len, char *err, size_t errlen);

/* "replayed", "expired", ... for log lines. */
const char *mauth_status_name(enum mauth_status status);

#endif /* IOSTAGE_MAUTH_H */
