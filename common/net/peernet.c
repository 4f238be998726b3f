/* peernet.c - TCP requests between hosts, inside MUNGE credentials. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <openssl/evp.h>

#include "common/base/deadline.h"
#include "common/base/jsonbuf.h"
#include "common/net/mauth.h"
#include "common/net/peernet.h"
#include "common/net/proto.h"

#define PEERNET_BACKLOG 128

/* The digest form (peernet.h): the credential's payload is
 * "sha256:" and 64 hex digits. */
#define DIGEST_PREFIX "sha256:"
#define DIGEST_TEXT_LEN (sizeof(DIGEST_PREFIX) - 1 + 64)
#define BODY_KEY "\",\"body\":"

/* DIGEST_PREFIX and the hex SHA-256 of DATA[0..LEN) into OUT (room for
 * DIGEST_TEXT_LEN + 1). 0, or -1 when OpenSSL fails. */
static int body_digest(const void *data, size_t len, char *out)
{
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int mdlen = 0;
	size_t at = sizeof(DIGEST_PREFIX) - 1;

	if (!EVP_Digest(data, len, md, &mdlen, EVP_sha256(), NULL) ||
	    mdlen != 32)
		return -1;
	memcpy(out, DIGEST_PREFIX, at);
	for (unsigned i = 0; i < mdlen; i++)
		at += (size_t)snprintf(out + at, 3, "%02x", md[i]);
	return 0;
}

int peernet_listen(const char *addr, unsigned port, char *err, size_t errlen)
{
	struct addrinfo hints = { 0 }, *res = NULL;
	char service[8];
	int fd = -1, one = 1, r;
	bool any = !addr || !*addr || !strcmp(addr, "*");

	if (port > 65535) {
		snprintf(err, errlen, "port %u: must be 1..65535", port);
		return -1;
	}
	snprintf(service, sizeof(service), "%u", port);
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV |
			 (any ? 0 : AI_NUMERICHOST);
	hints.ai_family = any ? AF_INET6 : AF_UNSPEC;
	r = getaddrinfo(any ? NULL : addr, service, &hints, &res);
	if (r != 0 && any) {
		/* No IPv6 here: every IPv4 address then. */
		hints.ai_family = AF_INET;
		r = getaddrinfo(NULL, service, &hints, &res);
	}
	if (r != 0) {
		snprintf(err, errlen, "listen address '%s': %s",
			 any ? "*" : addr, gai_strerror(r));
		return -1;
	}
	fd = socket(res->ai_family,
		    res->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0 && any && res->ai_family == AF_INET6) {
		/* IPv6 disabled in this kernel: every IPv4 address. */
		freeaddrinfo(res);
		res = NULL;
		hints.ai_family = AF_INET;
		if ((r = getaddrinfo(NULL, service, &hints, &res)) != 0) {
			snprintf(err, errlen, "listen address '*': %s",
				 gai_strerror(r));
			return -1;
		}
		fd = socket(res->ai_family,
			    res->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	}
	if (fd < 0) {
		snprintf(err, errlen, "socket: %s", strerror(errno));
		goto fail;
	}
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (res->ai_family == AF_INET6 && any) {
		int zero = 0; /* IPv4 too, whatever the sysctl says */

		setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof(zero));
	}
	if (bind(fd, res->ai_addr, res->ai_addrlen) < 0 ||
	    listen(fd, PEERNET_BACKLOG) < 0) {
		snprintf(err, errlen, "cannot listen on %s port %u: %s",
			 any ? "every address" : addr, port, strerror(errno));
		goto fail;
	}
	freeaddrinfo(res);
	return fd;
fail:
	if (fd >= 0)
		close(fd);
	freeaddrinfo(res);
	return -1;
}

/* Connect FD to AI within the deadline: 0 or -1 with errno. */
static int connect_one(int fd, const struct addrinfo *ai, long long deadline)
{
	struct pollfd pfd = { .fd = fd, .events = POLLOUT };
	socklen_t len = sizeof(int);
	int soerr = 0, n;

	if (connect(fd, ai->ai_addr, ai->ai_addrlen) == 0)
		return 0;
	if (errno != EINPROGRESS)
		return -1;
	do
		n = poll(&pfd, 1, deadline_left_ms(deadline));
	while (n < 0 && errno == EINTR);
	if (n <= 0) {
		errno = n == 0 ? ETIMEDOUT : errno;
		return -1;
	}
	if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &len) < 0)
		return -1;
	if (soerr) {
		errno = soerr;
		return -1;
	}
	return 0;
}

int peernet_connect(const char *host, unsigned port, int timeout_ms, char *err,
		    size_t errlen)
{
	long long deadline = deadline_now_ms() +
			     (timeout_ms > 0 ? timeout_ms : 0);
	struct addrinfo hints = { 0 }, *res = NULL, *ai;
	char service[8], shown[INET6_ADDRSTRLEN] = "?";
	int fd = -1, r, saved = 0;

	if (!host || !*host || strlen(host) >= PEERNET_HOST_MAX || port == 0 ||
	    port > 65535) {
		snprintf(err, errlen, "bad peer address '%.64s' port %u",
			 host ? host : "", port);
		return -1;
	}
	snprintf(service, sizeof(service), "%u", port);
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = AI_NUMERICSERV;
	r = getaddrinfo(host, service, &hints, &res);
	if (r != 0) {
		snprintf(err, errlen, "%s: cannot resolve: %s", host,
			 r == EAI_SYSTEM ? strerror(errno) : gai_strerror(r));
		return -1;
	}
	for (ai = res; ai; ai = ai->ai_next) {
		const void *a =
		    ai->ai_family == AF_INET6
			? (const void *)&((struct sockaddr_in6 *)ai->ai_addr)
			      ->sin6_addr
			: (const void *)&((struct sockaddr_in *)ai->ai_addr)
			      ->sin_addr;

		inet_ntop(ai->ai_family, a, shown, sizeof(shown));
		fd = socket(ai->ai_family,
			    ai->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
		if (fd < 0) {
			saved = errno;
			continue;
		}
		if (connect_one(fd, ai, deadline) == 0)
			break;
		saved = errno;
		close(fd);
		fd = -1;
		if (deadline_left_ms(deadline) == 0)
			break;
	}
	freeaddrinfo(res);
	if (fd < 0) {
		snprintf(err, errlen, "%s (%s port %u): %s", host, shown, port,
			 strerror(saved ? saved : ETIMEDOUT));
		return -1;
	}
	/* Blocking from here; reads and writes poll with deadlines. */
	r = fcntl(fd, F_GETFL);
	if (r >= 0)
		fcntl(fd, F_SETFL, r & ~O_NONBLOCK);
	r = 1;
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &r, sizeof(r));
	return fd;
}

static int write_all(int fd, const char *buf, size_t len, long long deadline)
{
	while (len > 0) {
		struct pollfd pfd = { .fd = fd, .events = POLLOUT };
		ssize_t n;
		int p = poll(&pfd, 1,
			     deadline < 0 ? -1 : deadline_left_ms(deadline));

		if (p < 0 && errno == EINTR)
			continue;
		if (p <= 0) {
			if (p == 0)
				errno = ETIMEDOUT;
			return -1;
		}
		n = send(fd, buf, len, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (n < 0) {
			if (errno == EINTR || errno == EAGAIN)
				continue;
			return -1;
		}
		buf += n;
		len -= (size_t)n;
	}
	return 0;
}

static int send_text(int fd, char *text, long long deadline)
{
	size_t len = strlen(text);

	if (len >= PEERNET_LINE_MAX) {
		errno = EMSGSIZE;
		return -1;
	}
	text[len] = '\n'; /* the NUL: len + 1 bytes go out */
	return write_all(fd, text, len + 1, deadline);
}

int peernet_send(int fd, const cJSON *msg, int timeout_ms)
{
	char *text = jsonbuf_dup(msg);
	int r;

	if (!text) {
		errno = ENOMEM;
		return -1;
	}
	r = send_text(fd, text,
		      timeout_ms < 0 ? -1 : deadline_now_ms() + timeout_ms);
	free(text);
	return r;
}

/* One line from FD within TIMEOUT_MS. EXACT: not a byte past its '\n'
 * is taken from the socket (each read looks first, with MSG_PEEK), so a
 * session's next lines stay for the next read; else what follows the
 * line in the same read is dropped (one request per connection). */
static char *read_line(int fd, int timeout_ms, bool exact)
{
	long long deadline = deadline_now_ms() +
			     (timeout_ms > 0 ? timeout_ms : 0);
	size_t len = 0, cap = 4096;
	char *buf = malloc(cap), *nl;

	if (!buf) {
		errno = ENOMEM;
		return NULL;
	}
	for (;;) {
		struct pollfd pfd = { .fd = fd, .events = POLLIN };
		ssize_t n;
		int p;

		if (len + 1 >= cap) {
			char *b;

			if (cap >= PEERNET_LINE_MAX + 1) {
				errno = EMSGSIZE;
				goto fail;
			}
			cap = cap * 4 > PEERNET_LINE_MAX + 1
				  ? PEERNET_LINE_MAX + 1
				  : cap * 4;
			b = realloc(buf, cap);
			if (!b) {
				errno = ENOMEM;
				goto fail;
			}
			buf = b;
		}
		p = poll(&pfd, 1, deadline_left_ms(deadline));
		if (p < 0 && errno == EINTR)
			continue;
		if (p <= 0) {
			if (p == 0)
				errno = ETIMEDOUT;
			goto fail;
		}
		n = exact ? recv(fd, buf + len, cap - 1 - len,
				 MSG_PEEK | MSG_DONTWAIT)
			  : read(fd, buf + len, cap - 1 - len);
		if (n < 0) {
			if (errno == EINTR || errno == EAGAIN)
				continue;
			goto fail;
		}
		if (n == 0) {
			errno = len ? EPROTO : ENODATA;
			goto fail;
		}
		nl = memchr(buf + len, '\n', (size_t)n);
		if (exact) {
			/* take only what was looked at, up to the '\n' */
			if (nl)
				n = nl - (buf + len) + 1;
			n = recv(fd, buf + len, (size_t)n, MSG_DONTWAIT);
			if (n < 0) {
				if (errno == EINTR || errno == EAGAIN)
					continue;
				goto fail;
			}
			nl = memchr(buf + len, '\n', (size_t)n);
		}
		len += (size_t)n;
		if (nl) {
			*nl = '\0';
			return buf;
		}
	}
fail:
	free(buf);
	return NULL;
}

char *peernet_read_line(int fd, int timeout_ms)
{
	return read_line(fd, timeout_ms, false);
}

char *peernet_read_line_exact(int fd, int timeout_ms)
{
	return read_line(fd, timeout_ms, true);
}

static char *request_line_text(mauth_encode_fn encode, const char *munge_socket,
			       const char *text, size_t len, char *err,
			       size_t errlen)
{
	char digest[DIGEST_TEXT_LEN + 1], *cred, *line = NULL;
	int r;

	if (!encode)
		encode = mauth_encode;
	if (len <= PEERNET_INLINE_MAX) {
		cred = encode(munge_socket, text, len, err, errlen);
	} else if (body_digest(text, len, digest) < 0) {
		snprintf(err, errlen, "cannot hash the request (OpenSSL)");
		cred = NULL;
	} else {
		cred = encode(munge_socket, digest, DIGEST_TEXT_LEN, err,
			      errlen);
	}
	if (!cred)
		return NULL;
	/* A credential is "MUNGE:" and base64 text ending in ':': nothing in
	 * it needs escaping in a JSON string. */
	if (len <= PEERNET_INLINE_MAX)
		r = asprintf(&line, "{\"cred\":\"%s\"}", cred);
	else
		r = asprintf(&line, "{\"cred\":\"%s" BODY_KEY "%.*s}", cred,
			     (int)len, text);
	if (r < 0) {
		line = NULL;
		snprintf(err, errlen, "out of memory");
	}
	free(cred);
	return line;
}

char *peernet_request_line(const char *munge_socket, const cJSON *req,
			   char *err, size_t errlen)
{
	return peernet_request_line_by(NULL, munge_socket, req, err, errlen);
}

char *peernet_request_line_by(mauth_encode_fn encode, const char *munge_socket,
			      const cJSON *req, char *err, size_t errlen)
{
	char *text = jsonbuf_dup(req), *line;

	if (!text) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	line = request_line_text(encode, munge_socket, text, strlen(text), err,
				 errlen);
	free(text);
	return line;
}

char *peernet_request_line_text(const char *munge_socket, const char *text,
				size_t len, char *err, size_t errlen)
{
	return request_line_text(NULL, munge_socket, text, len, err, errlen);
}

cJSON *peernet_call(const char *host, unsigned port, const char *munge_socket,
		    const cJSON *req, int timeout_ms, int *ret_unreachable,
		    char *err, size_t errlen)
{
	long long deadline = deadline_now_ms() + timeout_ms;
	char *line, *text = NULL;
	cJSON *reply = NULL;
	int fd;

	if (ret_unreachable)
		*ret_unreachable = 0;
	line = peernet_request_line(munge_socket, req, err, errlen);
	if (!line)
		return NULL;
	fd = peernet_connect(host, port, timeout_ms, err, errlen);
	if (fd < 0) {
		if (ret_unreachable)
			*ret_unreachable = 1;
		free(line);
		return NULL;
	}
	/* send_text needs room for the '\n': line's NUL is that room. */
	if (send_text(fd, line, deadline) < 0) {
		snprintf(err, errlen, "%s: cannot send: %s", host,
			 strerror(errno));
		goto out;
	}
	text = peernet_read_line(fd, deadline_left_ms(deadline));
	if (!text) {
		snprintf(err, errlen, "%s: no reply: %s", host,
			 errno == ENODATA ? "connection closed"
					  : strerror(errno));
		goto out;
	}
	reply = cJSON_Parse(text);
	if (!cJSON_IsObject(reply)) {
		cJSON_Delete(reply);
		reply = NULL;
		snprintf(err, errlen, "%s: malformed reply", host);
	}
out:
	free(text);
	free(line);
	close(fd);
	return reply;
}

/* The digest form's parts of LINE: the credential (copied into a new
 * string, *ret_cred) and the body's bytes (*ret_body, *ret_len, pointing
 * into LINE). false when LINE is not in that form (then nothing is
 * allocated). */
static bool split_digest_form(const char *line, char **ret_cred,
			      const char **ret_body, size_t *ret_len)
{
	static const char head[] = "{\"cred\":\"";
	size_t n = strlen(line), clen;
	const char *c, *end;

	if (strncmp(line, head, sizeof(head) - 1) || n < sizeof(head) ||
	    line[n - 1] != '}')
		return false;
	c = line + sizeof(head) - 1;
	end = strchr(c, '"');
	if (!end || strncmp(end + 1, &BODY_KEY[1], sizeof(BODY_KEY) - 2))
		return false;
	clen = (size_t)(end - c);
	*ret_body = end + sizeof(BODY_KEY) - 1;
	if (*ret_body > line + n - 1)
		return false;
	*ret_len = (size_t)(line + n - 1 - *ret_body);
	*ret_cred = strndup(c, clen);
	return *ret_cred != NULL;
}

cJSON *peernet_decode_request(const char *line, const char *munge_socket,
			      const char **ret_op, uid_t *ret_uid,
			      gid_t *ret_gid, enum mauth_status *ret_status,
			      char *err, size_t errlen)
{
	return peernet_decode_request_by(mauth_decode, line, munge_socket,
					 ret_op, ret_uid, ret_gid, ret_status,
					 err, errlen);
}

cJSON *peernet_decode_request_by(mauth_decode_fn decode, const char *line,
				 const char *munge_socket, const char **ret_op,
				 uid_t *ret_uid, gid_t *ret_gid,
				 enum mauth_status *ret_status, char *err,
				 size_t errlen)
{
	char *payload = NULL, *dcred;
	const char *body;
	const cJSON *cred;
	cJSON *env, *req = NULL;
	uid_t uid;
	gid_t gid;
	size_t plen, blen;

	if (!decode)
		decode = mauth_decode;
	*ret_status = MAUTH_OK;
	if (split_digest_form(line, &dcred, &body, &blen)) {
		char want[DIGEST_TEXT_LEN + 1], *text;

		*ret_status = decode(munge_socket, dcred, &payload, &plen, &uid,
				     &gid, err, errlen);
		free(dcred);
		if (*ret_status != MAUTH_OK)
			return NULL;
		if (body_digest(body, blen, want) < 0 ||
		    plen != DIGEST_TEXT_LEN || memcmp(payload, want, plen)) {
			free(payload);
			*ret_status = MAUTH_INVALID;
			snprintf(err, errlen,
				 "credential refused: the request "
				 "does not match the credential's digest");
			return NULL;
		}
		free(payload);
		text = strndup(body, blen);
		if (!text) {
			snprintf(err, errlen, "out of memory");
			return NULL;
		}
		req = proto_parse_request(text, ret_op, err, errlen);
		free(text);
		if (req) {
			*ret_uid = uid;
			*ret_gid = gid;
		}
		return req;
	}
	env = cJSON_Parse(line);
	cred = cJSON_GetObjectItemCaseSensitive(env, "cred");
	if (!cJSON_IsObject(env) || !cJSON_IsString(cred)) {
		snprintf(err, errlen,
			 "malformed request: want "
			 "{\"cred\":\"MUNGE:...\"}");
		goto out;
	}
	*ret_status = decode(munge_socket, cred->valuestring, &payload, &plen,
			     &uid, &gid, err, errlen);
	if (*ret_status != MAUTH_OK)
		goto out;
	req = proto_parse_request(payload, ret_op, err, errlen);
	if (req) {
		*ret_uid = uid;
		*ret_gid = gid;
	}
out:
	cJSON_Delete(env);
	free(payload);
	return req;
}

void peernet_peer_addr(int fd, char *buf, size_t len)
{
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);

	snprintf(buf, len, "?");
	if (getpeername(fd, (struct sockaddr *)&ss, &sl) != 0)
		return;
	if (ss.ss_family == AF_INET)
		inet_ntop(AF_INET, &((struct sockaddr_in *)&ss)->sin_addr, buf,
			  (socklen_t)len);
	else if (ss.ss_family == AF_INET6)
		inet_ntop(AF_INET6, &((struct sockaddr_in6 *)&ss)->sin6_addr,
			  buf, (socklen_t)len);
}

const char *peernet_read_error(int errnum)
{
	return errnum == EMSGSIZE    ? "request line too long"
	       : errnum == ETIMEDOUT ? "no request in time"
	       : errnum == ENODATA   ? "connection closed"
				     : strerror(errnum);
}

cJSON *peernet_read_request(int fd, int timeout_ms, const char *munge_socket,
			    const char **ret_op, struct peernet_peer *ret_peer,
			    enum mauth_status *ret_status, char *err,
			    size_t errlen)
{
	struct peernet_peer p = { 0 };
	cJSON *req = NULL;
	char *line;

	*ret_status = MAUTH_OK;
	peernet_peer_addr(fd, p.addr, sizeof(p.addr));
	line = peernet_read_line(fd, timeout_ms);
	if (!line) {
		snprintf(err, errlen, "%s", peernet_read_error(errno));
		goto out;
	}
	req = peernet_decode_request(line, munge_socket, ret_op, &p.uid, &p.gid,
				     ret_status, err, errlen);
	free(line);
	if (req)
		*ret_peer = p;
out:
	if (!req && ret_peer)
		snprintf(ret_peer->addr, sizeof(ret_peer->addr), "%s", p.addr);
	return req;
}
