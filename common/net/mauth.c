/* mauth.c - MUNGE credentials around requests (libmunge). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <munge.h>

#include "common/net/mauth.h"

/* A context naming SOCKET, or NULL (then libmunge's defaults apply). */
static munge_ctx_t ctx_for(const char *socket, char *err, size_t errlen)
{
	munge_ctx_t ctx;

	if (!socket || !*socket)
		return NULL;
	ctx = munge_ctx_create();
	if (!ctx) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	if (munge_ctx_set(ctx, MUNGE_OPT_SOCKET, socket) != EMUNGE_SUCCESS) {
		snprintf(err, errlen, "cannot use munge socket %s: %s", socket,
			 munge_ctx_strerror(ctx));
		munge_ctx_destroy(ctx);
		return NULL;
	}
	return ctx;
}

char *mauth_encode(const char *socket, const void *payload, size_t len,
		   char *err, size_t errlen)
{
	munge_ctx_t ctx = NULL;
	munge_err_t e;
	char *cred = NULL;

	if (len > MAUTH_PAYLOAD_MAX) {
		snprintf(err, errlen,
			 "request of %zu bytes is over the %d "
			 "bytes a credential carries",
			 len, MAUTH_PAYLOAD_MAX);
		return NULL;
	}
	if (socket && *socket && !(ctx = ctx_for(socket, err, errlen)))
		return NULL;
	e = munge_encode(&cred, ctx, payload, (int)len);
	if (e != EMUNGE_SUCCESS) {
		snprintf(err, errlen, "munge: cannot encode a credential: %s",
			 ctx ? munge_ctx_strerror(ctx) : munge_strerror(e));
		free(cred);
		cred = NULL;
	}
	if (ctx)
		munge_ctx_destroy(ctx);
	return cred;
}

static enum mauth_status status_of(munge_err_t e)
{
	switch (e) {
	case EMUNGE_SUCCESS:
		return MAUTH_OK;
	case EMUNGE_CRED_EXPIRED:
		return MAUTH_EXPIRED;
	case EMUNGE_CRED_REPLAYED:
		return MAUTH_REPLAYED;
	case EMUNGE_CRED_REWOUND:
		return MAUTH_REWOUND;
	case EMUNGE_SOCKET:
		return MAUTH_NO_DAEMON;
	case EMUNGE_BAD_ARG:
	case EMUNGE_BAD_LENGTH:
	case EMUNGE_BAD_CRED:
	case EMUNGE_BAD_VERSION:
	case EMUNGE_BAD_CIPHER:
	case EMUNGE_BAD_MAC:
	case EMUNGE_BAD_ZIP:
	case EMUNGE_BAD_REALM:
	case EMUNGE_CRED_INVALID:
	case EMUNGE_CRED_UNAUTHORIZED:
		return MAUTH_INVALID;
	default:
		return MAUTH_ERROR;
	}
}

const char *mauth_status_name(enum mauth_status status)
{
	switch (status) {
	case MAUTH_OK:
		return "ok";
	case MAUTH_INVALID:
		return "invalid";
	case MAUTH_EXPIRED:
		return "expired";
	case MAUTH_REPLAYED:
		return "replayed";
	case MAUTH_REWOUND:
		return "rewound";
	case MAUTH_NO_DAEMON:
		return "munged unreachable";
	default:
		return "error";
	}
}

enum mauth_status mauth_decode(const char *socket, const char *cred,
			       char **ret_payload, size_t *ret_len,
			       uid_t *ret_uid, gid_t *ret_gid, char *err,
			       size_t errlen)
{
	munge_ctx_t ctx = NULL;
	enum mauth_status st;
	munge_err_t e;
	void *buf = NULL;
	char *payload;
	int len = 0;
	uid_t uid;
	gid_t gid;

	if (!cred || strncmp(cred, "MUNGE:", 6) != 0) {
		snprintf(err, errlen,
			 "credential refused: not a MUNGE "
			 "credential");
		return MAUTH_INVALID;
	}
	if (socket && *socket && !(ctx = ctx_for(socket, err, errlen)))
		return MAUTH_ERROR;
	e = munge_decode(cred, ctx, &buf, &len, &uid, &gid);
	st = status_of(e);
	if (st != MAUTH_OK) {
		/* Expired and replayed credentials still hand back a
		 * payload: it is not ours to use. */
		snprintf(err, errlen, "credential refused: %s (%s)",
			 mauth_status_name(st),
			 ctx ? munge_ctx_strerror(ctx) : munge_strerror(e));
		free(buf);
		if (ctx)
			munge_ctx_destroy(ctx);
		return st;
	}
	if (ctx)
		munge_ctx_destroy(ctx);
	if (len < 0 || (size_t)len > MAUTH_PAYLOAD_MAX) {
		free(buf);
		snprintf(err, errlen,
			 "credential refused: payload of %d "
			 "bytes",
			 len);
		return MAUTH_INVALID;
	}
	payload = malloc((size_t)len + 1);
	if (!payload) {
		free(buf);
		snprintf(err, errlen, "out of memory");
		return MAUTH_ERROR;
	}
	if (len)
		memcpy(payload, buf, (size_t)len);
	payload[len] = '\0';
	free(buf);
	*ret_payload = payload;
	*ret_len = (size_t)len;
	*ret_uid = uid;
	*ret_gid = gid;
	return MAUTH_OK;
}
