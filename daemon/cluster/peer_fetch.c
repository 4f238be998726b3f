/* peer_fetch.c - fetch sessions served on the node channel (see
 * peer_fetch.h; the protocol is common/net/peerfetch.h's).
 *
 * A session holds one of the channel's connection threads for its life,
 * so every wait here is cut in slices of PF_SLICE_MS that look at the
 * stop flag: iostaged stopping must not wait for a client that reads
 * slowly or a session left idle. The socket is made non-blocking for
 * that; sendfile then sends what the socket takes and poll waits for the
 * rest.
 *
 * A session on a spread dataset's part is served only for a job the
 * request names ("job"), which must be the asker's and be asked from one
 * of its nodes (issue 29 item 6: job_allows): a job running here must
 * also hold the entry as one of its datasets; one that does not run here
 * (this node held the part for an earlier job) is looked up in Slurm
 * through iostagectld. A whole entry is authorized by the cache alone,
 * as a fill from another job's node needs, unless the request names a
 * job.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "common/base/jsonbuf.h"
#include "common/base/log.h"
#include "common/base/units.h"
#include "common/config/conf.h"
#include "common/fs/ratelimit.h"
#include "common/net/ctlclient.h"
#include "common/net/peerfetch.h"
#include "common/net/peerserve.h"
#include "common/net/proto.h"
#include "common/sched/cachekey.h"
#include "daemon/agent.h"
#include "daemon/cluster/peer_fetch.h"
#include "daemon/jobs.h"
#include "daemon/ops.h"
#include "daemon/staging/cache.h"

#define PF_SLICE_MS 250  /* a wait looks at the stop flag this often */
#define PF_SEND_MS 10000 /* a client that takes nothing for this long */
/* {"ok":true,"chunk":I,"size":N,"off":O,"len":L}, each up to 2^53 */
#define PF_HEAD_MAX 160
/* A job not running here: its nodes asked of iostagectld within this
 * (a session's open waits for it) */
#define OUTSIDE_JOB_ASK_MS 3000

struct peer_fetch {
	struct agent *agent;
	unsigned max; /* PeerFetchSessions */
	atomic_uint active;
	_Atomic uint64_t rate; /* PeerFetchRate, or unlimited */
	struct ratelimit rl;
	_Atomic bool stop;
	_Atomic uint64_t sessions, refused, files, bytes;
};

/* One session being served. */
struct session {
	struct peer_fetch *f;
	int fd;
	char who[96]; /* "peer ADDR (uid U)" for log lines */
	struct cache_served served;
	char in[PEERFETCH_LINE_MAX + 1]; /* request bytes [0, inlen) */
	size_t inlen;
	uint64_t files, bytes;
	bool manifest; /* send it ("manifest":false: the client has it) */
};

struct peer_fetch *peer_fetch_create(struct agent *a)
{
	struct peer_fetch *f = calloc(1, sizeof(*f));

	if (!f)
		return NULL;
	f->agent = a;
	f->max = a->conf->peer_fetch_sessions;
	atomic_init(&f->rate, a->conf->peer_fetch_rate
				  ? a->conf->peer_fetch_rate
				  : RATELIMIT_UNLIMITED);
	ratelimit_init(&f->rl, &f->rate);
	return f;
}

void peer_fetch_stop(struct peer_fetch *f)
{
	if (f)
		atomic_store(&f->stop, true);
}

void peer_fetch_destroy(struct peer_fetch *f)
{
	if (!f)
		return;
	pthread_mutex_destroy(&f->rl.lock);
	free(f);
}

void peer_fetch_counts(const struct peer_fetch *f,
		       struct peer_fetch_counts *ret)
{
	memset(ret, 0, sizeof(*ret));
	if (!f)
		return;
	ret->active = atomic_load(&f->active);
	ret->sessions = atomic_load(&f->sessions);
	ret->refused = atomic_load(&f->refused);
	ret->files = atomic_load(&f->files);
	ret->bytes = atomic_load(&f->bytes);
}

/* --- the socket, in slices ----------------------------------------------- */

/* Wait for EVENTS on the session's socket, up to PF_SEND_MS or, for a
 * request, PEERFETCH_IDLE_MS. 0, or -1 with errno (ETIMEDOUT, ECANCELED
 * when stopping). */
static int wait_for(struct session *s, short events, int limit_ms)
{
	for (int waited = 0; waited < limit_ms; waited += PF_SLICE_MS) {
		struct pollfd p = { .fd = s->fd, .events = events };
		int n;

		if (atomic_load(&s->f->stop)) {
			errno = ECANCELED;
			return -1;
		}
		n = poll(&p, 1, PF_SLICE_MS);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -1;
		if (n > 0)
			return 0;
	}
	errno = ETIMEDOUT;
	return -1;
}

/* LEN bytes of BUF; MORE: a body follows at once (sendfile), so the
 * kernel holds this back to go out with it: a small file is then one
 * segment, not a header the client's delayed ACK waits on. */
static int send_more(struct session *s, const char *buf, size_t len, bool more)
{
	int flags = MSG_NOSIGNAL | MSG_DONTWAIT | (more ? MSG_MORE : 0);

	while (len) {
		ssize_t w = send(s->fd, buf, len, flags);

		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0 && errno == EAGAIN) {
			if (wait_for(s, POLLOUT, PF_SEND_MS) < 0)
				return -1;
			continue;
		}
		if (w < 0)
			return -1;
		buf += w;
		len -= (size_t)w;
	}
	return 0;
}

static int send_all(struct session *s, const char *buf, size_t len)
{
	return send_more(s, buf, len, false);
}

/* REPLY (deleted here) as one line. */
static int send_reply(struct session *s, cJSON *reply)
{
	char *text = reply ? jsonbuf_dup(reply) : NULL;
	size_t n;
	int r;

	cJSON_Delete(reply);
	if (!text) {
		errno = ENOMEM;
		return -1;
	}
	n = strlen(text);
	text[n] = '\n'; /* jsonbuf_dup's NUL is the room */
	r = send_all(s, text, n + 1);
	free(text);
	return r;
}

/* LEN bytes of IN from offset OFF, held to PeerFetchRate, counted as
 * served when COUNT (a file of the dataset, not the manifest). 0, or -1
 * when the session must end (the client gone or stuck, stopping, or the
 * file shorter than it was: then the client sees a transfer cut short). */
static int send_file(struct session *s, int in, uint64_t off_at, uint64_t len,
		     bool count)
{
	off_t off = (off_t)off_at;
	uint64_t end = off_at + len;

	while ((uint64_t)off < end) {
		uint64_t left = end - (uint64_t)off;
		size_t step = left < RATELIMIT_STEP ? (size_t)left
						    : RATELIMIT_STEP;
		ssize_t n;

		if (ratelimit_take(&s->f->rl, step, &s->f->stop) < 0)
			return -1;
		while (step) {
			n = sendfile(s->fd, in, &off, step);
			if (n < 0 && errno == EINTR)
				continue;
			if (n < 0 && errno == EAGAIN) {
				if (wait_for(s, POLLOUT, PF_SEND_MS) < 0)
					return -1;
				continue;
			}
			if (n <= 0)
				return -1; /* an error, or the file shrank */
			step -= (size_t)n;
			if (!count)
				continue;
			s->bytes += (uint64_t)n;
			atomic_fetch_add(&s->f->bytes, (uint64_t)n);
		}
	}
	return 0;
}

/* The next request line, NUL-terminated, without its '\n', in s->in;
 * what follows it is kept. Its length, or -1 (EOF, idle too long, a line
 * over PEERFETCH_LINE_MAX, stopping). */
static ssize_t next_line(struct session *s, size_t *ret_used)
{
	for (;;) {
		char *nl = memchr(s->in, '\n', s->inlen);
		ssize_t n;

		if (nl) {
			*nl = '\0';
			*ret_used = (size_t)(nl - s->in) + 1;
			return nl - s->in;
		}
		if (s->inlen >= PEERFETCH_LINE_MAX) {
			errno = EMSGSIZE;
			return -1;
		}
		n = recv(s->fd, s->in + s->inlen, PEERFETCH_LINE_MAX - s->inlen,
			 MSG_DONTWAIT);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN) {
			if (wait_for(s, POLLIN, PEERFETCH_IDLE_MS) < 0)
				return -1;
			continue;
		}
		if (n <= 0)
			return -1;
		s->inlen += (size_t)n;
	}
}

/* --- the session ------------------------------------------------------------ */

/* A request's figure KEY: a whole number 0 to 2^53. 0, or -1. */
static int req_figure(const cJSON *req, const char *key, uint64_t *ret)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(req, key);

	if (!cJSON_IsNumber(v) || v->valuedouble < 0 ||
	    v->valuedouble > 9007199254740992.0 ||
	    v->valuedouble != (double)(uint64_t)v->valuedouble)
		return -1;
	*ret = (uint64_t)v->valuedouble;
	return 0;
}

/* A file request: the whole file, with "off" and "len" a range of it
 * (the view's reads, view/), or with "chunk" too a range of a chunk of
 * it (a file too large for one node: common/fs/partchunks.h), SIZE then
 * the chunk's length. */
struct file_request {
	char rel[PEERFETCH_PATH_MAX];
	uint64_t size;
	bool range, chunk;
	uint64_t index; /* the chunk's */
	bool has_mtime; /* the chunk's file's mtime in the client's listing */
	int64_t mtime_ns;
	uint64_t off, len;
};

/* The optional key "mtime_ns" of REQ, a decimal string (ns since the
 * epoch: past what a JSON number holds exactly), into *ret. 0 (absent:
 * *has false), or -1 when it is something else. */
static int req_mtime(const cJSON *req, bool *has, int64_t *ret)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(req, "mtime_ns");
	char *end;
	long long t;

	*has = false;
	if (!v)
		return 0;
	if (!cJSON_IsString(v) || !v->valuestring[0])
		return -1;
	errno = 0;
	t = strtoll(v->valuestring, &end, 10);
	if (errno || *end)
		return -1;
	*has = true;
	*ret = (int64_t)t;
	return 0;
}

/* ST's mtime in ns since the epoch. */
static int64_t stat_mtime_ns(const struct stat *st)
{
	return (int64_t)st->st_mtim.tv_sec * 1000000000 + st->st_mtim.tv_nsec;
}

/* T (ns since the epoch) as "S.NNNNNNNNN" into BUF. */
static const char *mtime_shown(int64_t t, char *buf, size_t len)
{
	int64_t sec = t / 1000000000, ns = t % 1000000000;

	if (ns < 0) {
		sec--;
		ns += 1000000000;
	}
	snprintf(buf, len, "%" PRId64 ".%09" PRId64, sec, ns);
	return buf;
}

/* The request {"path":REL,"size":S}, {"path":REL,"size":S,"off":O,
 * "len":L} or {"path":REL,"chunk":I,"size":S,"off":O,"len":L} into
 * *ret, or a refusal in err. */
static int parse_file_request(const char *line, struct file_request *ret,
			      char *err, size_t errlen)
{
	cJSON *req = cJSON_Parse(line);
	const cJSON *path = cJSON_GetObjectItemCaseSensitive(req, "path");
	bool has_off = cJSON_HasObjectItem(req, "off"),
	     has_len = cJSON_HasObjectItem(req, "len"),
	     has_chunk = cJSON_HasObjectItem(req, "chunk");
	int r = -1;

	if (!cJSON_IsObject(req) || !cJSON_IsString(path)) {
		snprintf(err, errlen,
			 "malformed request: want {\"path\":REL,\"size\":N}");
	} else if (strlen(path->valuestring) >= sizeof(ret->rel)) {
		snprintf(err, errlen, "path longer than %zu bytes",
			 sizeof(ret->rel) - 1);
	} else if (req_figure(req, "size", &ret->size) < 0) {
		snprintf(err, errlen, "key 'size': a whole number of bytes");
	} else if (has_chunk && req_figure(req, "chunk", &ret->index) < 0) {
		snprintf(err, errlen, "key 'chunk': a whole number");
	} else if (has_chunk &&
		   req_mtime(req, &ret->has_mtime, &ret->mtime_ns) < 0) {
		snprintf(err, errlen,
			 "key 'mtime_ns': ns since the epoch, as a decimal "
			 "string");
	} else if (has_chunk && !(has_off && has_len)) {
		snprintf(err, errlen,
			 "a chunk is read by ranges: 'chunk' needs 'off' and "
			 "'len'");
	} else if (has_off != has_len) {
		snprintf(err, errlen, "a range needs both 'off' and 'len'");
	} else if (has_off && (req_figure(req, "off", &ret->off) < 0 ||
			       req_figure(req, "len", &ret->len) < 0)) {
		snprintf(err, errlen,
			 "keys 'off' and 'len': whole numbers of bytes");
	} else if (has_off && ret->off > ret->size) {
		snprintf(err, errlen,
			 "offset %" PRIu64 " is past the end (%" PRIu64
			 " bytes)",
			 ret->off, ret->size);
	} else {
		snprintf(ret->rel, sizeof(ret->rel), "%s", path->valuestring);
		ret->range = has_off;
		ret->chunk = has_chunk;
		if (!has_chunk)
			ret->has_mtime = false;
		if (!has_off) {
			ret->off = 0;
			ret->len = ret->size;
		} else {
			if (ret->len > PEERFETCH_RANGE_MAX)
				ret->len = PEERFETCH_RANGE_MAX;
			if (ret->len > ret->size - ret->off)
				ret->len = ret->size - ret->off;
		}
		r = 0;
	}
	cJSON_Delete(req);
	return r;
}

/* One request LINE: a refusal sent (the session goes on: 0), or the file
 * or its range sent (0), or -1 when the session must end. A range is
 * checked as a whole file is (the same open beneath, regular file,
 * owner, size): it is one, read in part; a chunk's range the same, its
 * chunk file being the file. */
static int serve_file(struct session *s, const char *line)
{
	char err[PEERFETCH_PATH_MAX + 256], shown[80], what[128];
	char head[PF_HEAD_MAX], chunk[48] = "";
	struct file_request *q = malloc(sizeof(*q));
	struct stat st;
	int in = -1, r, n;

	if (!q)
		return -1;
	if (parse_file_request(line, q, err, sizeof(err)) < 0) {
		r = send_reply(s, proto_reply_error("%s", err));
		goto out;
	}
	if (q->chunk)
		snprintf(chunk, sizeof(chunk), " chunk %" PRIu64, q->index);
	snprintf(what, sizeof(what), "'%s'%s",
		 ops_printable(q->rel, shown, sizeof(shown)), chunk);
	in = q->chunk ? cache_served_open_chunk(&s->served, q->rel, q->index,
						&st, err, sizeof(err))
		      : cache_served_open_file(&s->served, q->rel, &st, err,
					       sizeof(err));
	if (in < 0) {
		r = send_reply(s, proto_reply_error("%s: %s", what, err));
		goto out;
	}
	if ((uint64_t)st.st_size != q->size) {
		r = send_reply(s, proto_reply_error("%s: %" PRIu64
						    " bytes here, not %" PRIu64,
						    what, (uint64_t)st.st_size,
						    q->size));
		goto out;
	}
	/* A chunk of the same length cut from an older or newer file: a
	 * part built before the file changed, asked by a listing of now. */
	if (q->chunk && q->has_mtime && stat_mtime_ns(&st) != q->mtime_ns) {
		char here[32], asked[32];

		r = send_reply(
		    s, proto_reply_error(
			   "%s: cut from the file as of mtime %s, "
			   "not %s",
			   what,
			   mtime_shown(stat_mtime_ns(&st), here, sizeof(here)),
			   mtime_shown(q->mtime_ns, asked, sizeof(asked))));
		goto out;
	}
	/* Formatted here: cJSON prints numbers through a double. */
	if (q->chunk)
		n = snprintf(head, sizeof(head),
			     "{\"ok\":true,\"chunk\":%" PRIu64
			     ",\"size\":%" PRIu64 ",\"off\":%" PRIu64
			     ",\"len\":%" PRIu64 "}\n",
			     q->index, q->size, q->off, q->len);
	else if (q->range)
		n = snprintf(head, sizeof(head),
			     "{\"ok\":true,\"size\":%" PRIu64
			     ",\"off\":%" PRIu64 ",\"len\":%" PRIu64 "}\n",
			     q->size, q->off, q->len);
	else
		n = snprintf(head, sizeof(head),
			     "{\"ok\":true,\"size\":%" PRIu64 "}\n", q->size);
	r = send_more(s, head, (size_t)n, q->len > 0);
	if (r == 0)
		r = send_file(s, in, q->off, q->len, true);
	if (r == 0 && !q->range) {
		s->files++;
		atomic_fetch_add(&s->f->files, 1);
	}
out:
	if (in >= 0)
		close(in);
	free(q);
	return r;
}

/* The session on s->fd once its version is open: the manifest, then
 * the files asked for, until the client is done. */
static void run_session(struct session *s)
{
	char head[PF_HEAD_MAX];
	int n, fl = fcntl(s->fd, F_GETFL);

	if (fl < 0 || fcntl(s->fd, F_SETFL, fl | O_NONBLOCK) < 0)
		return;
	n = snprintf(head, sizeof(head),
		     "{\"ok\":true,\"manifest_bytes\":%" PRIu64
		     ",\"version\":%u}\n",
		     s->manifest ? s->served.manifest_size : 0,
		     s->served.version);
	if (send_all(s, head, (size_t)n) < 0 ||
	    (s->manifest && send_file(s, s->served.manifest_fd, 0,
				      s->served.manifest_size, false) < 0))
		return;
	for (;;) {
		size_t used = 0;
		ssize_t len = next_line(s, &used);

		if (len < 0) {
			if (errno == EMSGSIZE)
				send_reply(s, proto_reply_error(
						  "request line over %d bytes",
						  PEERFETCH_LINE_MAX));
			return;
		}
		if (serve_file(s, s->in) < 0)
			return;
		memmove(s->in, s->in + used, s->inlen - used);
		s->inlen -= used;
	}
}

/* The request's version into *ret: a whole number 1..UINT_MAX, or 0
 * (absent, or 0) for the entry's current version. -1 when it is
 * something else. */
static int req_version(const cJSON *req, unsigned *ret)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(req, "version");

	if (!v) {
		*ret = 0;
		return 0;
	}
	if (!cJSON_IsNumber(v) || v->valuedouble < 0 ||
	    v->valuedouble > 4294967295.0 ||
	    v->valuedouble != (double)(unsigned)v->valuedouble)
		return -1;
	*ret = (unsigned)v->valuedouble;
	return 0;
}

/* The request's job into *ret: a whole number 1..UINT32_MAX, or 0 when
 * absent. -1 when it is something else. */
static int req_job(const cJSON *req, uint32_t *ret)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(req, "job");

	if (!v) {
		*ret = 0;
		return 0;
	}
	if (!cJSON_IsNumber(v) || v->valuedouble < 1 ||
	    v->valuedouble > 4294967295.0 ||
	    v->valuedouble != (double)(uint32_t)v->valuedouble)
		return -1;
	*ret = (uint32_t)v->valuedouble;
	return 0;
}

/* Is KEY on TIER the entry of one of JOB's datasets: the user's or the
 * public one of its source (stage.c may have used either), its whole
 * copy or its part (cachekey_part: a spread dataset's part, or a fill by
 * parts' share of a whole copy)? */
static bool job_has_entry(const struct job *job, const char *tier,
			  const char *key)
{
	for (size_t i = 0; job->profile && i < job->profile->ndatasets; i++) {
		const struct profile_dataset *ds = &job->profile->datasets[i];
		char whole[2][CACHE_KEY_LEN + 1], part[CACHE_KEY_LEN + 1];

		if (!ds->tier || strcmp(ds->tier, tier))
			continue;
		cache_key(job->uid, ds->path, whole[0]);
		cache_key_public(ds->path, whole[1]);
		for (size_t k = 0; k < 2; k++) {
			cachekey_part(whole[k], part);
			if (!strcmp(part, key) || !strcmp(whole[k], key))
				return true;
		}
	}
	return false;
}

/* An IPv4 address as IPv6, mapped (::ffff:a.b.c.d, as a dual-stack
 * socket shows an IPv4 peer), so that one comparison serves both. */
static void ip_mapped(const struct in_addr *v4, struct in6_addr *ret)
{
	memset(ret, 0, sizeof(*ret));
	ret->s6_addr[10] = ret->s6_addr[11] = 0xff;
	memcpy(&ret->s6_addr[12], v4, sizeof(*v4));
}

/* Is ADDR (an IP literal, as peernet_peer_addr writes the peer's) an
 * address of one of JOB's nodes? Their names are resolved now, as the
 * channel resolves them to call them (getaddrinfo: the node's resolver
 * and its cache), until one matches; nothing is kept across requests,
 * so a node given another address is seen at once. "?" (not a TCP
 * peer) is none. */
static bool addr_of_one_of(const char *const *names, size_t n, const char *addr)
{
	struct in6_addr want, got;
	struct in_addr v4;

	if (inet_pton(AF_INET, addr, &v4) == 1)
		ip_mapped(&v4, &want);
	else if (inet_pton(AF_INET6, addr, &want) != 1)
		return false;
	for (size_t i = 0; i < n; i++) {
		struct addrinfo hints = { .ai_socktype = SOCK_STREAM }, *res;
		bool found = false;

		if (getaddrinfo(names[i], NULL, &hints, &res) != 0)
			continue;
		for (const struct addrinfo *ai = res; ai && !found;
		     ai = ai->ai_next) {
			if (ai->ai_family == AF_INET)
				ip_mapped(
				    &((const struct sockaddr_in *)ai->ai_addr)
					 ->sin_addr,
				    &got);
			else if (ai->ai_family == AF_INET6)
				got = ((const struct sockaddr_in6 *)ai->ai_addr)
					  ->sin6_addr;
			else
				continue;
			found = !memcmp(&got, &want, sizeof(got));
		}
		freeaddrinfo(res);
		if (found)
			return true;
	}
	return false;
}

static bool job_has_addr(const struct job *job, const char *addr)
{
	return addr_of_one_of((const char *const *)job->nodes, job->nnodes,
			      addr);
}

/* May job JOBID, which this node does not run, read ENTRY (PUBLIC or
 * not) for PEER? A node that held a part for an earlier job is asked by
 * the nodes of a later one whose plan moved that part's files to them
 * (daemon/cluster/fill.c): it asks iostagectld what slurmctld says of
 * the job (op job_nodes, ctld/sched/joballoc.h), and the job must be
 * running, PEER's (or the entry public, or PEER root), with PEER's
 * address one of its nodes'. Whether the job uses this dataset, only
 * its nodes know: the owner check (the entry is PEER's own, or public)
 * is what keeps another user's data out. 0, or -1 with err. */
static int outside_job_allows(struct peer_fetch *f,
			      const struct peernet_peer *peer,
			      const char *entry, uint32_t jobid, bool public,
			      char *err, size_t errlen)
{
	const struct conf *conf = f->agent->conf;
	const char **names = NULL;
	const cJSON *nodes, *n, *uid;
	cJSON *req, *reply = NULL;
	char why[CONF_ERR_MAX];
	size_t count = 0;
	int r = -1;

	if (!ctl_configured(conf)) {
		snprintf(err, errlen,
			 "entry %s: job %" PRIu32 " is not running here (and "
			 "no iostagectld to ask for its nodes)",
			 entry, jobid);
		return -1;
	}
	req = cJSON_CreateObject();
	if (!req || !cJSON_AddStringToObject(req, "op", "job_nodes") ||
	    !cJSON_AddNumberToObject(req, "job", jobid) ||
	    ctl_request_timeout(conf, req, OUTSIDE_JOB_ASK_MS, &reply, why,
				sizeof(why)) < 0) {
		cJSON_Delete(req);
		snprintf(err, errlen,
			 "entry %s: job %" PRIu32 " is not running here, and "
			 "its nodes cannot be asked: %.300s",
			 entry, jobid, req ? why : "out of memory");
		return -1;
	}
	cJSON_Delete(req);
	nodes = cJSON_GetObjectItemCaseSensitive(reply, "nodes");
	uid = cJSON_GetObjectItemCaseSensitive(reply, "uid");
	if (cJSON_IsArray(nodes) && cJSON_GetArraySize(nodes) > 0)
		names = calloc((size_t)cJSON_GetArraySize(nodes),
			       sizeof(*names));
	cJSON_ArrayForEach(n, nodes) {
		if (names && cJSON_IsString(n))
			names[count++] = n->valuestring;
	}
	if (!cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(reply, "ok"))) {
		const cJSON *e = cJSON_GetObjectItemCaseSensitive(reply,
								  "error");

		snprintf(err, errlen,
			 "entry %s: job %" PRIu32 " is not running here, and "
			 "iostagectld says: %.300s",
			 entry, jobid,
			 cJSON_IsString(e) ? e->valuestring : "no answer");
	} else if (!cJSON_IsTrue(
		       cJSON_GetObjectItemCaseSensitive(reply, "running")))
		snprintf(err, errlen,
			 "entry %s: job %" PRIu32 " is not running", entry,
			 jobid);
	else if (!cJSON_IsNumber(uid) ||
		 (peer->uid != 0 && !public &&
		  (double)peer->uid != uid->valuedouble))
		snprintf(err, errlen,
			 "entry %s: job %" PRIu32 " is another user's (uid %u "
			 "asked)",
			 entry, jobid, (unsigned)peer->uid);
	else if (!addr_of_one_of(names, count, peer->addr))
		snprintf(err, errlen,
			 "entry %s: %s is not a node of job %" PRIu32, entry,
			 peer->addr, jobid);
	else
		r = 0;
	free(names);
	cJSON_Delete(reply);
	return r;
}

/* May the session on SV (entry KEY on TIER, opened for PEER) go on for
 * job JOBID (0: the request names none)? A part only for a job; a job named, for a part
 * or a whole entry, must be running here (in the table: not finished,
 * not a prestage), be PEER's (or the entry public, or PEER root), hold
 * the entry as one of its datasets on TIER and be asked from one of
 * its nodes. 0, or -1 with the refusal in err. */
static int job_allows(struct peer_fetch *f, const struct peernet_peer *peer,
		      const char *tier, const char *key, uint32_t jobid,
		      const struct cache_served *sv, char *err, size_t errlen)
{
	char entry[CONF_NAME_MAX + CACHE_ENTRY_NAME_MAX + 2];
	struct job *job;
	int r = -1;

	snprintf(entry, sizeof(entry), "%s/%s.v%u", tier, key, sv->version);
	if (!jobid) {
		if (!sv->part)
			return 0;
		snprintf(err, errlen,
			 "entry %s is a part of a spread dataset: the "
			 "request names no job",
			 entry);
		return -1;
	}
	job = jobs_get(f->agent->jobs, jobid);
	if (!job)
		return outside_job_allows(f, peer, entry, jobid, sv->public,
					  err, errlen);
	if (job->prestage)
		snprintf(err, errlen,
			 "entry %s: job %" PRIu32 " is not running here", entry,
			 jobid);
	else if (peer->uid != 0 && !sv->public && peer->uid != job->uid)
		snprintf(err, errlen,
			 "entry %s: job %" PRIu32 " is another user's (uid %u "
			 "asked)",
			 entry, jobid, (unsigned)peer->uid);
	else if (!job_has_entry(job, tier, key))
		snprintf(err, errlen,
			 "entry %s is not a dataset of job %" PRIu32
			 " on this node",
			 entry, jobid);
	else if (!job_has_addr(job, peer->addr))
		snprintf(err, errlen,
			 "entry %s: %s is not a node of job %" PRIu32, entry,
			 peer->addr, jobid);
	else
		r = 0;
	jobs_put(job);
	return r;
}

/* The refusal of a session: a warning, but for the bound (BUSY), which
 * a worker with more copy threads than PeerFetchSessions meets in the
 * ordinary course (it then makes do with the sessions it has). */
static cJSON *refuse(struct peer_fetch *f, const char *who, const char *why,
		     bool busy)
{
	atomic_fetch_add(&f->refused, 1);
	if (busy)
		log_info("%s: fetch_open refused: %s", who, why);
	else
		log_warningx("%s: fetch_open refused: %s", who, why);
	return proto_reply_error("%s", why);
}

cJSON *peer_fetch_serve(struct peer_fetch *f, int fd,
			const struct peernet_peer *peer, const cJSON *req)
{
	char err[512], shown[2][72], size[32];
	const char *tier, *key;
	struct session *s;
	unsigned version, active;
	uint32_t jobid;
	cJSON *reply = NULL;

	s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	s->f = f;
	s->fd = fd;
	s->served.vfd = s->served.data_fd = s->served.manifest_fd =
	    s->served.chunks_fd = -1;
	snprintf(s->who, sizeof(s->who), "peer %s (uid %u)", peer->addr,
		 (unsigned)peer->uid);
	if (proto_get_string(req, "tier", &tier, err, sizeof(err)) < 0 ||
	    proto_get_string(req, "key", &key, err, sizeof(err)) < 0) {
		reply = refuse(f, s->who, err, false);
		goto out;
	}
	if (req_version(req, &version) < 0) {
		reply = refuse(f, s->who,
			       "key 'version': a whole number (0 or absent: "
			       "the current one)",
			       false);
		goto out;
	}
	if (req_job(req, &jobid) < 0) {
		reply = refuse(f, s->who,
			       "key 'job': a job id (1 to 4294967295)", false);
		goto out;
	}
	s->manifest = !cJSON_IsFalse(
	    cJSON_GetObjectItemCaseSensitive(req, "manifest"));
	if (!f->agent->cache) {
		reply = refuse(f, s->who, "this node has no cache", false);
		goto out;
	}
	if (atomic_load(&f->stop)) {
		reply = refuse(f, s->who, "iostaged is stopping", true);
		goto out;
	}
	/* Taken before anything is opened: the bound is on sessions. */
	active = atomic_fetch_add(&f->active, 1);
	if (active >= f->max) {
		atomic_fetch_sub(&f->active, 1);
		snprintf(
		    err, sizeof(err),
		    "too many fetch sessions on node %s " PEERFETCH_BUSY_MARK
		    "%u)",
		    f->agent->conf->node_name, f->max);
		reply = refuse(f, s->who, err, true);
		goto out;
	}
	if (cache_open_served(f->agent->cache, tier, key, version, peer->uid,
			      &s->served, err, sizeof(err)) < 0 ||
	    job_allows(f, peer, tier, key, jobid, &s->served, err,
		       sizeof(err)) < 0) {
		atomic_fetch_sub(&f->active, 1);
		reply = refuse(f, s->who, err, false);
		goto out;
	}
	atomic_fetch_add(&f->sessions, 1);
	run_session(s);
	atomic_fetch_sub(&f->active, 1);
	log_debug("%s: fetch session for %s.v%u on tier '%s' over: %" PRIu64
		  " files, %s",
		  s->who, ops_printable(key, shown[0], sizeof(shown[0])),
		  s->served.version,
		  ops_printable(tier, shown[1], sizeof(shown[1])), s->files,
		  units_bytes(s->bytes, size, sizeof(size)));
	reply = PEERSERVE_TAKEN;
out:
	cache_served_close(&s->served);
	free(s);
	return reply;
}
