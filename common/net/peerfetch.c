/* peerfetch.c - the client of a fetch session (common/net/peerfetch.h):
 * one connection to another node's iostaged, its manifest, then files,
 * ranges of them, or ranges of their chunks.
 *
 * Replies are a JSON line followed by raw bytes on the same connection,
 * so the session reads through a buffer of its own: a line is cut from
 * it and what follows the '\n' (the first bytes of a file) stays there
 * for the file. peernet_read_line would drop them.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <cJSON.h>

#include "common/base/deadline.h"
#include "common/base/jsonbuf.h"
#include "common/fs/manifest.h"
#include "common/net/peerfetch.h"
#include "common/net/peernet.h"
#include "common/net/proto.h"

#define PF_BUF (256 * 1024) /* received and not yet taken */
#define PF_REPLY_MAX 4096   /* a reply line (an error names a path) */
#define PF_NODE_MAX 80      /* how the node is named in messages */
#define PF_ERRTEXT_MAX 600  /* the server's reason, as we repeat it */

struct peerfetch {
	int fd;
	bool usable;
	char node[PF_NODE_MAX];
	char *buf; /* PF_BUF bytes: [pos, len) not yet taken */
	size_t pos, len;
	char *manifest;
	size_t manifest_len;
	unsigned version; /* the version the server opened */
	uint64_t bytes;
};

/* Refill PF's buffer (it must be empty) by one read, waiting until
 * DEADLINE. The bytes read, or -1 with errno (ETIMEDOUT; ENODATA for
 * EOF). */
static ssize_t fill(struct peerfetch *pf, long long deadline)
{
	for (;;) {
		struct pollfd p = { .fd = pf->fd, .events = POLLIN };
		int n = poll(&p, 1, deadline_left_ms(deadline));
		ssize_t r;

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			if (n == 0)
				errno = ETIMEDOUT;
			return -1;
		}
		r = read(pf->fd, pf->buf, PF_BUF);
		if (r < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (r < 0)
			return -1;
		if (r == 0) {
			errno = ENODATA;
			return -1;
		}
		pf->pos = 0;
		pf->len = (size_t)r;
		return r;
	}
}

/* One reply line (at most PF_REPLY_MAX bytes) into LINE, NUL-terminated,
 * without its '\n'. 0, or -1 with errno (EMSGSIZE for a longer one). */
static int read_reply(struct peerfetch *pf, char *line, long long deadline)
{
	size_t n = 0;

	for (;;) {
		char *nl;
		size_t take;

		if (pf->pos == pf->len && fill(pf, deadline) < 0)
			return -1;
		nl = memchr(pf->buf + pf->pos, '\n', pf->len - pf->pos);
		take = nl ? (size_t)(nl - (pf->buf + pf->pos))
			  : pf->len - pf->pos;
		if (n + take >= PF_REPLY_MAX) {
			errno = EMSGSIZE;
			return -1;
		}
		memcpy(line + n, pf->buf + pf->pos, take);
		n += take;
		pf->pos += take;
		if (nl) {
			pf->pos++; /* the '\n' */
			line[n] = '\0';
			return 0;
		}
	}
}

/* Send LEN bytes of BUF on PF's connection by DEADLINE. 0 or -1 with
 * errno. */
static int send_all(struct peerfetch *pf, const char *buf, size_t len,
		    long long deadline)
{
	while (len) {
		struct pollfd p = { .fd = pf->fd, .events = POLLOUT };
		int n = poll(&p, 1, deadline_left_ms(deadline));
		ssize_t w;

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			if (n == 0)
				errno = ETIMEDOUT;
			return -1;
		}
		w = send(pf->fd, buf, len, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (w < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (w < 0)
			return -1;
		buf += w;
		len -= (size_t)w;
	}
	return 0;
}

/* Write LEN bytes of BUF to FD (a file: a short write means no room). */
static int write_all(int fd, const char *buf, size_t len)
{
	while (len) {
		ssize_t w = write(fd, buf, len);

		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			return -1;
		if (w == 0) {
			errno = ENOSPC;
			return -1;
		}
		buf += w;
		len -= (size_t)w;
	}
	return 0;
}

/* The next SIZE bytes of the connection: into DST_FD when it is >= 0,
 * else into MEM. 0, or -1 with errno; *ret_wrote says whether DST_FD
 * failed (a write error, ours) rather than the connection. */
static int take_bytes(struct peerfetch *pf, int dst_fd, char *mem,
		      uint64_t size, int timeout_ms, bool *ret_wrote)
{
	uint64_t done = 0;

	*ret_wrote = false;
	while (done < size) {
		size_t n;

		if (pf->pos == pf->len &&
		    fill(pf, deadline_now_ms() +
				 (timeout_ms > 0 ? timeout_ms : 0)) < 0)
			return -1;
		n = pf->len - pf->pos;
		if (n > size - done)
			n = (size_t)(size - done);
		if (dst_fd >= 0) {
			if (write_all(dst_fd, pf->buf + pf->pos, n) < 0) {
				*ret_wrote = true;
				return -1;
			}
		} else {
			memcpy(mem + done, pf->buf + pf->pos, n);
		}
		pf->pos += n;
		done += n;
	}
	return 0;
}

/* The reply line as an object; NULL with a reason in err. With "ok"
 * false, err gets the server's error and *ret_refused is set. */
static cJSON *parse_reply(const struct peerfetch *pf, const char *line,
			  const char *what, bool *ret_refused, char *err,
			  size_t errlen)
{
	cJSON *r = cJSON_Parse(line);
	const cJSON *ok = cJSON_GetObjectItemCaseSensitive(r, "ok");
	const char *e;

	*ret_refused = false;
	if (!cJSON_IsObject(r) || !cJSON_IsBool(ok)) {
		snprintf(err, errlen, "node %s: %s: malformed reply", pf->node,
			 what);
		cJSON_Delete(r);
		return NULL;
	}
	if (cJSON_IsFalse(ok)) {
		e = cJSON_GetStringValue(
		    cJSON_GetObjectItemCaseSensitive(r, "error"));
		snprintf(err, errlen, "node %s: %s: %.*s", pf->node, what,
			 PF_ERRTEXT_MAX, e ? e : "refused");
		*ret_refused = true;
		cJSON_Delete(r);
		return NULL;
	}
	return r;
}

/* A reply's figure N as sent ("size", "manifest_bytes"): a whole
 * number, 0 to 2^53. -1 when it is not. */
static int reply_size(const cJSON *r, const char *key, uint64_t *ret)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(r, key);

	if (!cJSON_IsNumber(v) || v->valuedouble < 0 ||
	    v->valuedouble > 9007199254740992.0 ||
	    v->valuedouble != (double)(uint64_t)v->valuedouble)
		return -1;
	*ret = (uint64_t)v->valuedouble;
	return 0;
}

static const char *why_read(int errnum)
{
	return errnum == ENODATA     ? "connection closed"
	       : errnum == ETIMEDOUT ? "no answer in time"
	       : errnum == EMSGSIZE  ? "reply line too long"
				     : strerror(errnum);
}

/* Send the session's first request and take the manifest. */
static int open_session(struct peerfetch *pf, const struct peerfetch_opts *o,
			const char *tier, const char *key, unsigned version,
			long long deadline, char *err, size_t errlen)
{
	char line[PF_REPLY_MAX], *req_line = NULL, what[128];
	cJSON *req = cJSON_CreateObject(), *r = NULL;
	uint64_t mlen, v = 0;
	bool refused, wrote;
	size_t n;
	int rc = -1;

	if (version)
		snprintf(what, sizeof(what), "entry %.40s.v%u on tier '%.32s'",
			 key, version, tier);
	else
		snprintf(what, sizeof(what), "entry %.40s on tier '%.32s'", key,
			 tier);
	/* Version 0 is sent as no version: the server's current one. */
	if (!req || !cJSON_AddStringToObject(req, "op", "fetch_open") ||
	    !cJSON_AddStringToObject(req, "tier", tier) ||
	    !cJSON_AddStringToObject(req, "key", key) ||
	    (version && !cJSON_AddNumberToObject(req, "version", version)) ||
	    (o->job && !cJSON_AddNumberToObject(req, "job", o->job)) ||
	    ((o->flags & PEERFETCH_NO_MANIFEST) &&
	     !cJSON_AddFalseToObject(req, "manifest"))) {
		snprintf(err, errlen, "out of memory");
		goto out;
	}
	req_line = peernet_request_line_by(o->encode, o->munge_socket, req, err,
					   errlen);
	if (!req_line)
		goto out;
	/* The line's NUL becomes its '\n'. */
	n = strlen(req_line);
	req_line[n] = '\n';
	if (send_all(pf, req_line, n + 1, deadline) < 0) {
		snprintf(err, errlen, "node %s: cannot send: %s", pf->node,
			 strerror(errno));
		goto out;
	}
	if (read_reply(pf, line, deadline) < 0) {
		snprintf(err, errlen, "node %s: %s: %s", pf->node, what,
			 why_read(errno));
		goto out;
	}
	r = parse_reply(pf, line, what, &refused, err, errlen);
	if (!r)
		goto out;
	if (reply_size(r, "manifest_bytes", &mlen) < 0 ||
	    mlen > MANIFEST_MAX_FILE) {
		snprintf(err, errlen, "node %s: %s: malformed reply", pf->node,
			 what);
		goto out;
	}
	/* A server before version 0 existed does not say: it opened the
	 * one asked for. */
	pf->version = version;
	if (cJSON_HasObjectItem(r, "version") &&
	    (reply_size(r, "version", &v) < 0 || v < 1 || v > UINT32_MAX ||
	     (version && v != version))) {
		snprintf(err, errlen, "node %s: %s: malformed reply", pf->node,
			 what);
		goto out;
	}
	if (cJSON_HasObjectItem(r, "version"))
		pf->version = (unsigned)v;
	if (!pf->version) {
		snprintf(err, errlen,
			 "node %s: %s: the server does not say which version",
			 pf->node, what);
		goto out;
	}
	pf->manifest = malloc(mlen ? (size_t)mlen : 1);
	if (!pf->manifest) {
		snprintf(err, errlen, "out of memory");
		goto out;
	}
	if (take_bytes(pf, -1, pf->manifest, mlen, deadline_left_ms(deadline),
		       &wrote) < 0) {
		snprintf(err, errlen, "node %s: %s: manifest cut short: %s",
			 pf->node, what, why_read(errno));
		goto out;
	}
	pf->manifest_len = (size_t)mlen;
	rc = 0;
out:
	cJSON_Delete(r);
	cJSON_Delete(req);
	free(req_line);
	return rc;
}

int peerfetch_open(const char *host, unsigned port, const char *munge_socket,
		   const char *tier, const char *key, unsigned version,
		   int timeout_ms, struct peerfetch **ret, char *err,
		   size_t errlen)
{
	const struct peerfetch_opts o = { .munge_socket = munge_socket };

	return peerfetch_open_with(host, port, &o, tier, key, version,
				   timeout_ms, ret, err, errlen);
}

int peerfetch_open_by(mauth_encode_fn encode, unsigned flags, const char *host,
		      unsigned port, const char *munge_socket, const char *tier,
		      const char *key, unsigned version, int timeout_ms,
		      struct peerfetch **ret, char *err, size_t errlen)
{
	const struct peerfetch_opts o = { .encode = encode,
					  .flags = flags,
					  .munge_socket = munge_socket };

	return peerfetch_open_with(host, port, &o, tier, key, version,
				   timeout_ms, ret, err, errlen);
}

int peerfetch_open_with(const char *host, unsigned port,
			const struct peerfetch_opts *o, const char *tier,
			const char *key, unsigned version, int timeout_ms,
			struct peerfetch **ret, char *err, size_t errlen)
{
	long long deadline = deadline_now_ms() +
			     (timeout_ms > 0 ? timeout_ms : 0);
	char cerr[512];
	struct peerfetch *pf;

	if (!host || !o || !tier || !key || !ret) {
		snprintf(err, errlen, "peerfetch_open: missing argument");
		errno = EINVAL;
		return -1;
	}
	pf = calloc(1, sizeof(*pf));
	if (!pf || !(pf->buf = malloc(PF_BUF))) {
		free(pf);
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	snprintf(pf->node, sizeof(pf->node), "%.48s:%u", host, port);
	pf->fd = peernet_connect(host, port, timeout_ms, cerr, sizeof(cerr));
	if (pf->fd < 0) {
		snprintf(err, errlen, "node %s", cerr);
		goto fail;
	}
	if (open_session(pf, o, tier, key, version, deadline, err, errlen) < 0)
		goto fail;
	pf->usable = true;
	*ret = pf;
	return 0;
fail:
	peerfetch_close(pf);
	return -1;
}

const void *peerfetch_manifest(const struct peerfetch *pf, size_t *len)
{
	*len = pf->manifest_len;
	return pf->manifest;
}

/* Send REQ as one line and read the reply's line into an object: NULL
 * with err (the session's state set: a refusal leaves it usable). */
static cJSON *request(struct peerfetch *pf, const cJSON *req, const char *what,
		      int timeout_ms, char *err, size_t errlen)
{
	char line[PF_REPLY_MAX], *text = jsonbuf_dup(req);
	bool refused;
	cJSON *r = NULL;
	size_t n;

	if (!text) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	/* jsonbuf_dup's NUL is the room for the '\n'. */
	n = strlen(text);
	text[n] = '\n';
	if (send_all(pf, text, n + 1,
		     deadline_now_ms() + (timeout_ms > 0 ? timeout_ms : 0)) <
	    0) {
		pf->usable = false;
		snprintf(err, errlen, "node %s: %s: cannot send: %s", pf->node,
			 what, strerror(errno));
		goto out;
	}
	if (read_reply(pf, line,
		       deadline_now_ms() + (timeout_ms > 0 ? timeout_ms : 0)) <
	    0) {
		pf->usable = false;
		snprintf(err, errlen, "node %s: %s: %s", pf->node, what,
			 why_read(errno));
		goto out;
	}
	r = parse_reply(pf, line, what, &refused, err, errlen);
	if (!r)
		pf->usable = refused; /* a refusal leaves the session as is */
out:
	free(text);
	return r;
}

/* Can PF send a request for REL (WHAT in messages)? 0, or -1 with err:
 * a closed session, or a path no request may carry. */
static int request_allowed(const struct peerfetch *pf, const char *rel,
			   const char *what, char *err, size_t errlen)
{
	if (!pf->usable) {
		snprintf(err, errlen, "node %s: %s: the session is closed",
			 pf->node, what);
		return -1;
	}
	if (!rel || strlen(rel) >= PEERFETCH_PATH_MAX) {
		snprintf(err, errlen, "node %s: %s: path too long", pf->node,
			 what);
		return -1;
	}
	return 0;
}

int peerfetch_file(struct peerfetch *pf, const char *rel, int dst_fd,
		   uint64_t size, int timeout_ms, char *err, size_t errlen)
{
	char what[PF_NODE_MAX + 80];
	cJSON *req = NULL, *r = NULL;
	uint64_t got;
	bool wrote;
	int rc = -1;

	snprintf(what, sizeof(what), "'%.64s%s'", rel ? rel : "",
		 rel && strlen(rel) > 64 ? "..." : "");
	if (request_allowed(pf, rel, what, err, errlen) < 0)
		return -1;
	req = cJSON_CreateObject();
	if (!req || !cJSON_AddStringToObject(req, "path", rel) ||
	    !cJSON_AddNumberToObject(req, "size", (double)size)) {
		snprintf(err, errlen, "out of memory");
		goto out;
	}
	r = request(pf, req, what, timeout_ms, err, errlen);
	if (!r)
		goto out;
	if (reply_size(r, "size", &got) < 0 || got != size) {
		/* The server announced other bytes than we asked for: we
		 * cannot skip them without reading them all; this session is
		 * done, and nothing was written. */
		pf->usable = false;
		snprintf(err, errlen,
			 "node %s: %s: the server sends another size than "
			 "the %llu bytes asked for",
			 pf->node, what, (unsigned long long)size);
		goto out;
	}
	if (take_bytes(pf, dst_fd, NULL, size, timeout_ms, &wrote) < 0) {
		pf->usable = false;
		if (wrote)
			snprintf(err, errlen, "node %s: %s: cannot write: %s",
				 pf->node, what, strerror(errno));
		else
			snprintf(err, errlen, "node %s: %s: cut short: %s",
				 pf->node, what, why_read(errno));
		goto out;
	}
	pf->bytes += size;
	rc = 0;
out:
	cJSON_Delete(r);
	cJSON_Delete(req);
	return rc;
}

/* What a range request reads: file REL of SIZE bytes, or (CHUNK) its
 * chunk INDEX of SIZE bytes. */
struct range_of {
	const char *rel;
	bool chunk;
	uint64_t index, size;
	int64_t mtime_ns; /* a chunk's file's */
};

/* The range [OFF, OFF + LEN) of what A names, as peerfetch_range and
 * peerfetch_chunk_range say. */
static int range_request(struct peerfetch *pf, const struct range_of *a,
			 uint64_t off, void *buf, size_t len, int timeout_ms,
			 size_t *ret_got, char *err, size_t errlen)
{
	char what[PF_NODE_MAX + 120], chunk[40] = "", mtime[24];
	uint64_t rsize, roff, rlen, rindex, want;
	cJSON *req = NULL, *r = NULL;
	bool wrote;
	int rc = -1;

	if (a->chunk)
		snprintf(chunk, sizeof(chunk), " chunk %llu",
			 (unsigned long long)a->index);
	snprintf(what, sizeof(what), "'%.64s%s'%s at %llu",
		 a->rel ? a->rel : "",
		 a->rel && strlen(a->rel) > 64 ? "..." : "", chunk,
		 (unsigned long long)off);
	if (request_allowed(pf, a->rel, what, err, errlen) < 0)
		return -1;
	if (off > a->size) {
		snprintf(err, errlen, "node %s: %s: past the end (%llu bytes)",
			 pf->node, what, (unsigned long long)a->size);
		return -1;
	}
	want = len < PEERFETCH_RANGE_MAX ? len : PEERFETCH_RANGE_MAX;
	if (want > a->size - off)
		want = a->size - off;
	snprintf(mtime, sizeof(mtime), "%" PRId64, a->mtime_ns);
	req = cJSON_CreateObject();
	if (!req || !cJSON_AddStringToObject(req, "path", a->rel) ||
	    (a->chunk &&
	     (!cJSON_AddNumberToObject(req, "chunk", (double)a->index) ||
	      !cJSON_AddStringToObject(req, "mtime_ns", mtime))) ||
	    !cJSON_AddNumberToObject(req, "size", (double)a->size) ||
	    !cJSON_AddNumberToObject(req, "off", (double)off) ||
	    !cJSON_AddNumberToObject(req, "len", (double)want)) {
		snprintf(err, errlen, "out of memory");
		goto out;
	}
	r = request(pf, req, what, timeout_ms, err, errlen);
	if (!r)
		goto out;
	/* A chunk's reply names it: a server that took the request for a
	 * range of the file itself would send other bytes. */
	if (reply_size(r, "size", &rsize) < 0 || rsize != a->size ||
	    reply_size(r, "off", &roff) < 0 || roff != off ||
	    reply_size(r, "len", &rlen) < 0 || rlen != want ||
	    (a->chunk &&
	     (reply_size(r, "chunk", &rindex) < 0 || rindex != a->index))) {
		/* Other bytes than we asked for follow: the session cannot
		 * skip them without reading them all; it is done. */
		pf->usable = false;
		snprintf(err, errlen,
			 "node %s: %s: the server sends another range than "
			 "the %llu bytes asked for",
			 pf->node, what, (unsigned long long)want);
		goto out;
	}
	if (take_bytes(pf, -1, buf, want, timeout_ms, &wrote) < 0) {
		pf->usable = false;
		snprintf(err, errlen, "node %s: %s: cut short: %s", pf->node,
			 what, why_read(errno));
		goto out;
	}
	pf->bytes += want;
	*ret_got = (size_t)want;
	rc = 0;
out:
	cJSON_Delete(r);
	cJSON_Delete(req);
	return rc;
}

int peerfetch_range(struct peerfetch *pf, const char *rel, uint64_t size,
		    uint64_t off, void *buf, size_t len, int timeout_ms,
		    size_t *ret_got, char *err, size_t errlen)
{
	const struct range_of a = { .rel = rel, .size = size };

	return range_request(pf, &a, off, buf, len, timeout_ms, ret_got, err,
			     errlen);
}

int peerfetch_chunk_range(struct peerfetch *pf, const char *rel, uint64_t index,
			  uint64_t chunk_size, int64_t mtime_ns, uint64_t off,
			  void *buf, size_t len, int timeout_ms,
			  size_t *ret_got, char *err, size_t errlen)
{
	const struct range_of a = { .rel = rel,
				    .chunk = true,
				    .index = index,
				    .size = chunk_size,
				    .mtime_ns = mtime_ns };

	return range_request(pf, &a, off, buf, len, timeout_ms, ret_got, err,
			     errlen);
}

unsigned peerfetch_version(const struct peerfetch *pf)
{
	return pf ? pf->version : 0;
}

int peerfetch_usable(const struct peerfetch *pf)
{
	return pf && pf->usable;
}

uint64_t peerfetch_bytes(const struct peerfetch *pf)
{
	return pf ? pf->bytes : 0;
}

void peerfetch_close(struct peerfetch *pf)
{
	if (!pf)
		return;
	if (pf->fd >= 0)
		close(pf->fd);
	free(pf->buf);
	free(pf->manifest);
	free(pf);
}
