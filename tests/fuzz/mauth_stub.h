/* mauth_stub.h - a stand-in for common/net/mauth.c in the fuzz targets: munged
 * cannot decode a million credentials a minute, and a fuzzer cannot forge
 * a real one anyway. What the targets fuzz is everything after munged has
 * spoken: the payload and the uid/gid it vouches for. A "credential" here
 * is "MUNGE:" then one letter for the outcome and the payload:
 *   r  root (uid 0)        u  a user (uid 1000, gid 1000)
 *   n  nobody (65534)      e  expired      p  replayed    anything else:
 *   invalid. Defining all of mauth.c's symbols keeps the real one (and
 *   libmunge's calls) out of the link. */
#ifndef IOSTAGE_FUZZ_MAUTH_STUB_H
#define IOSTAGE_FUZZ_MAUTH_STUB_H

#include "common/net/mauth.h"

char *mauth_encode(const char *socket, const void *payload, size_t len,
		   char *err, size_t errlen)
{
	char *c = malloc(len + 8);

	(void)socket;
	if (!c) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	memcpy(c, "MUNGE:u", 7);
	memcpy(c + 7, payload, len);
	c[len + 7] = '\0';
	return c;
}

enum mauth_status mauth_decode(const char *socket, const char *cred,
			       char **ret_payload, size_t *ret_len,
			       uid_t *ret_uid, gid_t *ret_gid, char *err,
			       size_t errlen)
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

const char *mauth_status_name(enum mauth_status status)
{
	return status == MAUTH_OK ? "ok" : "refused";
}

#endif /* IOSTAGE_FUZZ_MAUTH_STUB_H */
