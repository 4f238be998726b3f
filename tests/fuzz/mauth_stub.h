/* mauth_stub.h - a stand-in for common/net/mauth.c in peer_request, by
 * defining all of mauth.c's symbols, which keeps the real one (and
 * libmunge's calls) out of the link: the decode is munge_standin.h's
 * (why, and what a "credential" is there); a credential encoded here says
 * "a user" of its payload. ctld_request needs none of this: it gives
 * iostagectld's service fuzz_mauth_decode as its decoder. */
#ifndef IOSTAGE_FUZZ_MAUTH_STUB_H
#define IOSTAGE_FUZZ_MAUTH_STUB_H

#include "common/net/mauth.h"
#include "tests/fuzz/munge_standin.h"

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
	return fuzz_mauth_decode(socket, cred, ret_payload, ret_len, ret_uid,
				 ret_gid, err, errlen);
}

const char *mauth_status_name(enum mauth_status status)
{
	return status == MAUTH_OK ? "ok" : "refused";
}

#endif /* IOSTAGE_FUZZ_MAUTH_STUB_H */
