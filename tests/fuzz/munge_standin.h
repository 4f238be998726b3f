/* munge_standin.h - what munged would say of a credential, in the fuzz
 * targets: munged cannot decode a million credentials a minute, and a
 * fuzzer cannot forge a real one anyway. What the targets fuzz is
 * everything after munged has spoken: the payload and the uid/gid it
 * vouches for. A "credential" here is "MUNGE:" then one letter for the
 * outcome and the payload:
 *   r  root (uid 0)        u  a user (uid 1000, gid 1000)
 *   n  nobody (65534)      e  expired      p  replayed    anything else:
 *   invalid.
 * fuzz_mauth_decode has mauth_decode's contract (common/net/mauth.h): a
 * target gives it to the server as its decoder (ctld_request:
 * struct ctld_serve_ctx; peer_request: peer_set_decoder). */
#ifndef IOSTAGE_FUZZ_MUNGE_STANDIN_H
#define IOSTAGE_FUZZ_MUNGE_STANDIN_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/net/mauth.h"

static enum mauth_status fuzz_mauth_decode(const char *socket, const char *cred,
					   char **ret_payload, size_t *ret_len,
					   uid_t *ret_uid, gid_t *ret_gid,
					   char *err, size_t errlen)
{
	uid_t uid;

	(void)socket;
	if (strncmp(cred, "MUNGE:", 6) || !cred[6]) {
		snprintf(err, errlen, "credential invalid");
		return MAUTH_INVALID;
	}
	switch (cred[6]) {
	case 'r':
		uid = 0;
		break;
	case 'u':
		uid = 1000;
		break;
	case 'n':
		uid = 65534;
		break;
	case 'e':
		snprintf(err, errlen, "credential expired");
		return MAUTH_EXPIRED;
	case 'p':
		snprintf(err, errlen, "credential replayed");
		return MAUTH_REPLAYED;
	default:
		snprintf(err, errlen, "credential invalid");
		return MAUTH_INVALID;
	}
	*ret_payload = strdup(cred + 7);
	if (!*ret_payload) {
		snprintf(err, errlen, "out of memory");
		return MAUTH_ERROR;
	}
	*ret_len = strlen(cred + 7);
	*ret_uid = uid;
	*ret_gid = uid;
	return MAUTH_OK;
}

#endif /* IOSTAGE_FUZZ_MUNGE_STANDIN_H */
