/* proto.c - line-delimited JSON over a Unix stream socket. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "common/base/deadline.h"
#include "common/base/jsonbuf.h"
#include "common/net/proto.h"

/* A reader's buffer starts small and doubles up to PROTO_LINE_MAX as long
 * lines come: most requests are a few hundred bytes, and a busy iostaged
 * holds a reader per connection. */
#define PROTO_READER_START 4096

struct proto_reader {
	int fd;
	size_t len;      /* bytes buffered */
	size_t consumed; /* bytes of buf handed out by the last call */
	size_t cap;      /* bytes buf holds, at most PROTO_LINE_MAX */
	int skipping;    /* discarding the rest of an oversized line */
	char *buf;
};

int proto_connect(const char *socket_path)
{
	struct sockaddr_un addr = { .sun_family = AF_UNIX };
	int fd;

	if (strlen(socket_path) >= sizeof(addr.sun_path)) {
		errno = ENAMETOOLONG;
		return -1;
	}
	strcpy(addr.sun_path, socket_path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -1;
	if (connect(fd, (struct sockaddr *)&addr, sizeof(addr)) < 0) {
		int saved = errno;
		close(fd);
		errno = saved;
		return -1;
	}
	return fd;
}

static int write_all(int fd, const char *buf, size_t len)
{
	while (len > 0) {
		ssize_t n = send(fd, buf, len, MSG_NOSIGNAL);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		buf += n;
		len -= (size_t)n;
	}
	return 0;
}

int proto_send(int fd, const cJSON *msg)
{
	char *text = jsonbuf_dup(msg);
	size_t len;
	int rc;

	if (!text) {
		errno = ENOMEM;
		return -1;
	}
	len = strlen(text);
	if (len >= PROTO_LINE_MAX) {
		free(text);
		errno = EMSGSIZE;
		return -1;
	}
	text[len] = '\n'; /* overwrites the NUL; we send len + 1 bytes */
	rc = write_all(fd, text, len + 1);
	free(text);
	return rc;
}

struct proto_reader *proto_reader_create(int fd)
{
	struct proto_reader *reader = calloc(1, sizeof(*reader));

	if (!reader)
		return NULL;
	reader->cap = PROTO_READER_START;
	reader->buf = malloc(reader->cap);
	if (!reader->buf) {
		free(reader);
		return NULL;
	}
	reader->fd = fd;
	return reader;
}

void proto_reader_destroy(struct proto_reader *reader)
{
	if (!reader)
		return;
	free(reader->buf);
	free(reader);
}

/* Room for more of a line: double the buffer, up to PROTO_LINE_MAX. */
static int reader_grow(struct proto_reader *r)
{
	size_t cap = r->cap * 2 > PROTO_LINE_MAX ? PROTO_LINE_MAX : r->cap * 2;
	char *buf = realloc(r->buf, cap);

	if (!buf)
		return -1;
	r->buf = buf;
	r->cap = cap;
	return 0;
}

int proto_read_line(struct proto_reader *r, int timeout_ms, char **ret_line)
{
	long long deadline = timeout_ms < 0 ? -1
					    : deadline_now_ms() + timeout_ms;

	/* Drop the line handed out last time. */
	if (r->consumed) {
		memmove(r->buf, r->buf + r->consumed, r->len - r->consumed);
		r->len -= r->consumed;
		r->consumed = 0;
	}
	for (;;) {
		char *nl = memchr(r->buf, '\n', r->len);
		struct pollfd pfd = { .fd = r->fd, .events = POLLIN };
		ssize_t n;
		int wait_ms;

		if (nl) {
			*nl = '\0';
			r->consumed = (size_t)(nl - r->buf) + 1;
			if (r->skipping) {
				/* End of an oversized line: report it once. */
				r->skipping = 0;
				memmove(r->buf, r->buf + r->consumed,
					r->len - r->consumed);
				r->len -= r->consumed;
				r->consumed = 0;
				errno = EMSGSIZE;
				return -1;
			}
			*ret_line = r->buf;
			return 1;
		}
		if (r->len >= PROTO_LINE_MAX) {
			r->skipping = 1;
			r->len = 0;
		}
		if (r->len == r->cap && reader_grow(r) < 0)
			return -1; /* ENOMEM */
		wait_ms = -1;
		if (deadline >= 0) {
			long long left = deadline - deadline_now_ms();
			if (left <= 0) {
				errno = ETIMEDOUT;
				return -1;
			}
			wait_ms = (int)left;
		}
		n = poll(&pfd, 1, wait_ms);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		if (n == 0) {
			errno = ETIMEDOUT;
			return -1;
		}
		n = read(r->fd, r->buf + r->len, r->cap - r->len);
		if (n < 0) {
			if (errno == EINTR || errno == EAGAIN)
				continue;
			return -1;
		}
		if (n == 0) {
			if (r->len == 0 && !r->skipping)
				return 0;
			/* A last line without '\n' is incomplete: refuse. */
			r->len = 0;
			errno = r->skipping ? EMSGSIZE : EPROTO;
			r->skipping = 0;
			return -1;
		}
		r->len += (size_t)n;
	}
}

cJSON *proto_parse_request(const char *line, const char **ret_op, char *err,
			   size_t errlen)
{
	cJSON *req = cJSON_Parse(line);
	const cJSON *op;

	if (!req) {
		snprintf(err, errlen, "malformed request: not JSON");
		return NULL;
	}
	if (!cJSON_IsObject(req)) {
		snprintf(err, errlen, "malformed request: not a JSON object");
		goto fail;
	}
	op = cJSON_GetObjectItemCaseSensitive(req, "op");
	if (!cJSON_IsString(op) || !op->valuestring[0]) {
		snprintf(err, errlen,
			 "malformed request: key 'op': missing "
			 "or not a string");
		goto fail;
	}
	*ret_op = op->valuestring;
	return req;
fail:
	cJSON_Delete(req);
	return NULL;
}

cJSON *proto_reply_ok(void)
{
	cJSON *reply = cJSON_CreateObject();

	if (reply && !cJSON_AddTrueToObject(reply, "ok")) {
		cJSON_Delete(reply);
		return NULL;
	}
	return reply;
}

cJSON *proto_reply_error(const char *fmt, ...)
{
	cJSON *reply = cJSON_CreateObject();
	char msg[1024];
	va_list ap;

	if (!reply)
		return NULL;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (!cJSON_AddFalseToObject(reply, "ok") ||
	    !cJSON_AddStringToObject(reply, "error", msg)) {
		cJSON_Delete(reply);
		return NULL;
	}
	return reply;
}

static cJSON *call_once(const char *socket_path, const cJSON *req,
			int timeout_ms, char *err, size_t errlen)
{
	struct proto_reader *reader = NULL;
	cJSON *reply = NULL;
	char *line;
	int fd, rc;

	fd = proto_connect(socket_path);
	if (fd < 0) {
		snprintf(err, errlen, "iostaged not reachable at %s: %s",
			 socket_path, strerror(errno));
		return NULL;
	}
	if (proto_send(fd, req) < 0) {
		snprintf(err, errlen, "cannot send to iostaged at %s: %s",
			 socket_path, strerror(errno));
		goto out;
	}
	reader = proto_reader_create(fd);
	if (!reader) {
		snprintf(err, errlen, "out of memory");
		goto out;
	}
	rc = proto_read_line(reader, timeout_ms, &line);
	if (rc <= 0) {
		snprintf(err, errlen, "no reply from iostaged at %s: %s",
			 socket_path,
			 rc == 0 ? "connection closed" : strerror(errno));
		goto out;
	}
	reply = cJSON_Parse(line);
	if (!cJSON_IsObject(reply)) {
		cJSON_Delete(reply);
		reply = NULL;
		snprintf(err, errlen, "malformed reply from iostaged at %s",
			 socket_path);
	}
out:
	proto_reader_destroy(reader);
	close(fd);
	return reply;
}

bool proto_reply_busy(const cJSON *reply)
{
	const cJSON *error = cJSON_GetObjectItemCaseSensitive(reply, "error");

	return cJSON_IsFalse(cJSON_GetObjectItemCaseSensitive(reply, "ok")) &&
	       cJSON_IsString(error) &&
	       strncmp(error->valuestring, PROTO_BUSY,
		       sizeof(PROTO_BUSY) - 1) == 0;
}

cJSON *proto_call(const char *socket_path, const cJSON *req, int timeout_ms,
		  char *err, size_t errlen)
{
	long long deadline = deadline_now_ms() + timeout_ms;
	unsigned seed = (unsigned)getpid() ^ (unsigned)deadline;
	int backoff_ms = 10;

	for (;;) {
		long long left = deadline - deadline_now_ms();
		cJSON *reply = call_once(socket_path, req,
					 left > 0 ? (int)left : 0, err, errlen);
		struct timespec ts;
		int pause;

		/* A refusal for want of a connection slot is the daemon busy
		 * (64 jobs starting at once, their processes reporting at
		 * exit), not an answer: ask again, with jitter, until the
		 * caller's time is up. */
		if (!reply || !proto_reply_busy(reply))
			return reply;
		left = deadline - deadline_now_ms();
		if (left <= 0)
			return reply;
		cJSON_Delete(reply);
		pause = backoff_ms / 2 +
			(int)(rand_r(&seed) % (unsigned)(backoff_ms / 2 + 1));
		if (pause > left)
			pause = (int)left;
		ts.tv_sec = pause / 1000;
		ts.tv_nsec = (long)(pause % 1000) * 1000000;
		nanosleep(&ts, NULL);
		if (backoff_ms < 200)
			backoff_ms *= 2;
	}
}

int proto_get_string(const cJSON *obj, const char *key, const char **ret,
		     char *err, size_t errlen)
{
	const cJSON *item = cJSON_GetObjectItemCaseSensitive(obj, key);

	if (!item) {
		snprintf(err, errlen, "key '%s': missing", key);
		return -1;
	}
	if (!cJSON_IsString(item)) {
		snprintf(err, errlen, "key '%s': must be a string", key);
		return -1;
	}
	*ret = item->valuestring;
	return 0;
}

int proto_get_u32(const cJSON *obj, const char *key, uint32_t *ret, char *err,
		  size_t errlen)
{
	const cJSON *item = cJSON_GetObjectItemCaseSensitive(obj, key);
	double v;

	if (!item) {
		snprintf(err, errlen, "key '%s': missing", key);
		return -1;
	}
	v = cJSON_IsNumber(item) ? item->valuedouble : -1;
	if (v < 0 || v > 4294967295.0 || v != (double)(uint32_t)v) {
		snprintf(err, errlen,
			 "key '%s': must be an integer 0..4294967295", key);
		return -1;
	}
	*ret = (uint32_t)v;
	return 0;
}

int proto_get_job_id(const cJSON *req, uint32_t *ret, char *err, size_t errlen)
{
	uint32_t id;

	if (proto_get_u32(req, "job", &id, err, errlen) < 0)
		return -1;
	if (id == 0) {
		snprintf(err, errlen, "key 'job': must be > 0");
		return -1;
	}
	*ret = id;
	return 0;
}

uint64_t proto_u64_of(double v)
{
	if (!(v >= 0) || v > 1e18)
		return 0;
	return (uint64_t)v;
}

uint64_t proto_u64(const cJSON *obj, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);

	return cJSON_IsNumber(v) ? proto_u64_of(v->valuedouble) : 0;
}
