/* worker_peer.c - the stage worker's pool of fetch sessions (see
 * worker_peer.h; the protocol is common/net/peerfetch.h's).
 *
 * Copy threads take a session from the pool for one file and give it
 * back. A thread that finds none idle opens one, up to the cap; when
 * every session is busy and the cap is reached it waits for one, since
 * a session's next file comes soon and opening more would only be
 * refused. Failing to fetch costs one file a copy from the source, never
 * the build: the engine falls back.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/net/peerfetch.h"
#include "daemon/staging/cache.h"
#include "daemon/staging/worker_peer.h"

#define WP_ERR_MAX 600

struct worker_peer {
	struct worker_peer_target t;
	mauth_encode_fn encode;
	pthread_mutex_t mu;
	pthread_cond_t cond;     /* a session came back, or the peer is gone */
	struct peerfetch **idle; /* cap of them at most */
	unsigned nidle;
	unsigned open; /* sessions that exist or are being opened */
	unsigned cap;
	unsigned failures; /* opens failed in a row */
	bool gone;
	uint64_t fallbacks;      /* fetches that returned -1 */
	uint64_t chunk_failures; /* chunks it held but did not give */
	char first_err[WP_ERR_MAX];
	char gone_err[WP_ERR_MAX];
};

int worker_peer_parse(const char *hostport, const char *entry,
		      struct worker_peer_target *ret, char *err, size_t errlen)
{
	struct worker_peer_target t = { .munge_socket = NULL };
	const char *colon = strrchr(hostport, ':'), *slash, *dot;
	char *end;
	unsigned long v;
	size_t hlen;

	if (!colon || colon == hostport) {
		snprintf(err, errlen, "--peer: want HOST:PORT, not '%.64s'",
			 hostport);
		return -1;
	}
	hlen = (size_t)(colon - hostport);
	if (hostport[0] == '[' && hlen >= 2 && hostport[hlen - 1] == ']') {
		hostport++; /* [IPv6]:PORT */
		hlen -= 2;
	}
	errno = 0;
	v = strtoul(colon + 1, &end, 10);
	if (hlen == 0 || hlen >= sizeof(t.host) || colon[1] < '1' ||
	    colon[1] > '9' || *end || errno || v > 65535) {
		snprintf(err, errlen,
			 "--peer: want HOST:PORT (1..65535), not '%.64s'",
			 hostport);
		return -1;
	}
	memcpy(t.host, hostport, hlen);
	t.port = (unsigned)v;
	slash = strchr(entry, '/');
	dot = strrchr(entry, '.');
	if (!slash || slash == entry ||
	    (size_t)(slash - entry) >= sizeof(t.tier) || !dot ||
	    dot - (slash + 1) != CACHE_KEY_LEN || dot[1] != 'v' ||
	    dot[2] < '1' || dot[2] > '9') {
		snprintf(err, errlen,
			 "--peer-entry: want TIER/KEY.vN, not '%.80s'", entry);
		return -1;
	}
	errno = 0;
	v = strtoul(dot + 2, &end, 10);
	if (*end || errno || v > CACHE_VERSION_MAX) {
		snprintf(err, errlen, "--peer-entry: version of '%.80s': 1..%u",
			 entry, CACHE_VERSION_MAX);
		return -1;
	}
	memcpy(t.tier, entry, (size_t)(slash - entry));
	memcpy(t.key, slash + 1, CACHE_KEY_LEN);
	for (size_t i = 0; i < CACHE_KEY_LEN; i++)
		if (!((t.key[i] >= '0' && t.key[i] <= '9') ||
		      (t.key[i] >= 'a' && t.key[i] <= 'f'))) {
			snprintf(err, errlen,
				 "--peer-entry: '%.80s': the key is 32 "
				 "lowercase hex digits",
				 entry);
			return -1;
		}
	t.version = (unsigned)v;
	*ret = t;
	return 0;
}

/* A session; with the manifest only for the first (FIRST). */
static int open_one(struct worker_peer *p, bool first, struct peerfetch **ret,
		    char *err, size_t errlen)
{
	const struct peerfetch_opts o = {
		.encode = p->encode,
		.flags = first ? 0 : PEERFETCH_NO_MANIFEST,
		.munge_socket = p->t.munge_socket,
		.job = p->t.job,
	};

	return peerfetch_open_with(p->t.host, p->t.port, &o, p->t.tier,
				   p->t.key, p->t.version, WORKER_PEER_OPEN_MS,
				   ret, err, errlen);
}

/* The first session, waited for while the node is busy: other nodes'
 * workers hold its sessions for a few seconds, and a node left out for
 * that would have all its files read from the PFS instead (measured:
 * the last of 3 nodes filling by parts found every node full). */
static int open_first(struct worker_peer *p, struct peerfetch **ret, char *err,
		      size_t errlen)
{
	for (int waited = 0;; waited += WORKER_PEER_BUSY_MS) {
		struct timespec ts = { 0, WORKER_PEER_BUSY_MS * 1000000L };

		if (open_one(p, true, ret, err, errlen) == 0)
			return 0;
		if (!strstr(err, PEERFETCH_BUSY_MARK) ||
		    waited >= WORKER_PEER_OPEN_MS)
			return -1;
		nanosleep(&ts, NULL);
	}
}

int worker_peer_open(const struct worker_peer_target *t, unsigned max_sessions,
		     mauth_encode_fn encode, struct worker_peer **ret,
		     struct manifest **ret_manifest, char *err, size_t errlen)
{
	struct worker_peer *p = calloc(1, sizeof(*p));
	struct peerfetch *pf = NULL;
	struct manifest *m = NULL;
	char merr[256];
	const void *data;
	size_t len;

	if (!p || !(p->idle = calloc(max_sessions ? max_sessions : 1,
				     sizeof(*p->idle)))) {
		free(p);
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	p->t = *t;
	p->encode = encode;
	p->cap = max_sessions ? max_sessions : 1;
	pthread_mutex_init(&p->mu, NULL);
	pthread_cond_init(&p->cond, NULL);
	if (open_first(p, &pf, err, errlen) < 0)
		goto fail;
	data = peerfetch_manifest(pf, &len);
	if (manifest_parse(data, len, &m, merr, sizeof(merr)) < 0) {
		snprintf(err, errlen, "node %s:%u: entry %s/%s.v%u: %s",
			 t->host, t->port, t->tier, t->key, t->version, merr);
		goto fail;
	}
	p->idle[p->nidle++] = pf;
	p->open = 1;
	*ret = p;
	*ret_manifest = m;
	return 0;
fail:
	peerfetch_close(pf);
	worker_peer_close(p);
	return -1;
}

static void note_error(struct worker_peer *p, const char *err)
{
	if (!p->first_err[0])
		snprintf(p->first_err, sizeof(p->first_err), "%s", err);
}

/* A session for one file, or NULL (the file comes from the source). */
static struct peerfetch *take(struct worker_peer *p)
{
	char err[WP_ERR_MAX];
	struct peerfetch *pf = NULL;

	pthread_mutex_lock(&p->mu);
	for (;;) {
		if (p->gone)
			break;
		if (p->nidle) {
			pf = p->idle[--p->nidle];
			break;
		}
		if (p->open < p->cap) {
			p->open++;
			pthread_mutex_unlock(&p->mu);
			if (open_one(p, false, &pf, err, sizeof(err)) == 0) {
				pthread_mutex_lock(&p->mu);
				p->failures = 0;
				break;
			}
			pthread_mutex_lock(&p->mu);
			p->open--;
			pthread_cond_broadcast(&p->cond);
			if (p->open > 0) {
				/* Refused while others are open (or being
				 * opened): the server's PeerFetchSessions.
				 * Make do with those: wait for one. */
				p->cap = p->open;
				continue;
			}
			note_error(p, err);
			if (++p->failures >= WORKER_PEER_OPEN_TRIES) {
				/* Every later fetch: from the source, at
				 * once. */
				p->gone = true;
				snprintf(p->gone_err, sizeof(p->gone_err), "%s",
					 err);
			}
			break;
		}
		pthread_cond_wait(&p->cond, &p->mu);
	}
	pthread_mutex_unlock(&p->mu);
	return pf;
}

/* PF back to the pool, or closed when it cannot take another request
 * (then another is opened in its place when needed). */
static void give_back(struct worker_peer *p, struct peerfetch *pf)
{
	bool keep = peerfetch_usable(pf);

	if (!keep)
		peerfetch_close(pf);
	pthread_mutex_lock(&p->mu);
	if (keep)
		p->idle[p->nidle++] = pf;
	else
		p->open--;
	/* a waiter takes the idle one, or opens one in its place (cap is
	 * never 0: it is lowered only to a count of open sessions) */
	pthread_cond_broadcast(&p->cond);
	pthread_mutex_unlock(&p->mu);
}

/* Nothing of the file written yet: DST_FD still at 0 (it is new). */
static bool nothing_written(int dst_fd)
{
	return lseek(dst_fd, 0, SEEK_CUR) == 0;
}

int worker_peer_fetch(const char *rel, int dst_fd, uint64_t size, void *arg)
{
	struct worker_peer *p = arg;
	char err[WP_ERR_MAX];
	int r = -1;

	/* A second try when the session broke before a byte came: an idle
	 * one the server ended (PEERFETCH_IDLE_MS) while our threads read
	 * the source. A refusal is not tried again. */
	for (int tries = 0; r < 0 && tries < 2; tries++) {
		struct peerfetch *pf = take(p);
		bool broke;

		if (!pf)
			break;
		r = peerfetch_file(pf, rel, dst_fd, size, WORKER_PEER_IO_MS,
				   err, sizeof(err));
		broke = r < 0 && !peerfetch_usable(pf);
		give_back(p, pf);
		if (r == 0)
			break;
		if (!broke || !nothing_written(dst_fd) || tries == 1) {
			pthread_mutex_lock(&p->mu);
			note_error(p, err);
			pthread_mutex_unlock(&p->mu);
			break;
		}
	}
	if (r < 0) {
		pthread_mutex_lock(&p->mu);
		p->fallbacks++;
		pthread_mutex_unlock(&p->mu);
	}
	return r;
}

void worker_peer_summary(const struct worker_peer *p, char *buf, size_t len)
{
	struct worker_peer *w = (struct worker_peer *)p;

	buf[0] = '\0';
	if (!p)
		return;
	pthread_mutex_lock(&w->mu);
	if (w->gone)
		snprintf(buf, len,
			 "peer %s:%u: given up after %d failures to open a "
			 "session (%s); %llu files copied from the source "
			 "instead",
			 w->t.host, w->t.port, WORKER_PEER_OPEN_TRIES,
			 w->gone_err, (unsigned long long)w->fallbacks);
	else if (w->fallbacks && !w->chunk_failures)
		snprintf(buf, len,
			 "peer %s:%u: %llu files copied from the source "
			 "instead; first: %s",
			 w->t.host, w->t.port, (unsigned long long)w->fallbacks,
			 w->first_err);
	else if (w->chunk_failures)
		/* another node, or the source, gave those chunks */
		snprintf(buf, len,
			 "peer %s:%u: %llu files copied from the source "
			 "instead, %llu chunks it failed to give; first: %s",
			 w->t.host, w->t.port, (unsigned long long)w->fallbacks,
			 (unsigned long long)w->chunk_failures, w->first_err);
	pthread_mutex_unlock(&w->mu);
}

void worker_peer_close(struct worker_peer *p)
{
	if (!p)
		return;
	for (unsigned i = 0; i < p->nidle; i++)
		peerfetch_close(p->idle[i]);
	pthread_mutex_destroy(&p->mu);
	pthread_cond_destroy(&p->cond);
	free(p->idle);
	free(p);
}

/* --- several nodes at once ------------------------------------------------ */

struct worker_peers {
	size_t n; /* pools open */
	struct worker_peer *pool[WORKER_PEERS_MAX];
	struct manifest *manifest[WORKER_PEERS_MAX];
};

int worker_peers_parse(const char *list, struct worker_peer_target *ret,
		       char *err, size_t errlen)
{
	const char *p = list;
	int n = 0;

	if (!list || !*list) {
		snprintf(err, errlen, "--peers: an empty list");
		return -1;
	}
	for (;;) {
		const char *end = strchr(p, ','), *eq;
		size_t len = end ? (size_t)(end - p) : strlen(p);
		char one[512], e[256];

		if (n == WORKER_PEERS_MAX) {
			snprintf(err, errlen, "--peers: more than %d nodes",
				 WORKER_PEERS_MAX);
			return -1;
		}
		if (len >= sizeof(one)) {
			snprintf(err, errlen, "--peers: item %d too long",
				 n + 1);
			return -1;
		}
		memcpy(one, p, len);
		one[len] = '\0';
		eq = strchr(one, '=');
		if (!eq) {
			snprintf(
			    err, errlen,
			    "--peers: item %d: want HOST:PORT=TIER/KEY.vN, "
			    "not '%.64s'",
			    n + 1, one);
			return -1;
		}
		one[eq - one] = '\0';
		if (worker_peer_parse(one, eq + 1, &ret[n], e, sizeof(e)) < 0) {
			snprintf(err, errlen, "--peers: item %d: %s", n + 1, e);
			return -1;
		}
		n++;
		if (!end)
			break;
		p = end + 1;
	}
	return n;
}

int worker_peers_open(const struct worker_peer_target *t, size_t n,
		      unsigned max_sessions, mauth_encode_fn encode,
		      void (*note)(const char *line, void *arg), void *arg,
		      struct worker_peers **ret)
{
	struct worker_peers *ps = calloc(1, sizeof(*ps));

	if (!ps)
		return -1;
	for (size_t i = 0; i < n && i < WORKER_PEERS_MAX; i++) {
		char err[WP_ERR_MAX], line[WP_ERR_MAX + 128];

		if (worker_peer_open(&t[i], max_sessions, encode,
				     &ps->pool[ps->n], &ps->manifest[ps->n],
				     err, sizeof(err)) == 0) {
			ps->n++;
			continue;
		}
		snprintf(line, sizeof(line),
			 "cannot fill from node %s:%u (%s): its files come "
			 "from the source",
			 t[i].host, t[i].port, err);
		if (note)
			note(line, arg);
	}
	*ret = ps;
	return 0;
}

struct manifest *worker_peers_merge(const struct worker_peers *ps,
				    struct manifest *base)
{
	const struct manifest *ms[WORKER_PEERS_MAX + 1];
	struct manifest *m = NULL;

	if (!ps->n)
		return base;
	/* BASE first (this node's own part), then the pools in order */
	ms[0] = base;
	for (size_t k = 0; k < ps->n; k++)
		ms[k + 1] = ps->manifest[k];
	if (manifest_union(ms, ps->n + 1, &m) < 0)
		m = NULL;
	manifest_destroy(base);
	return m;
}

int worker_peers_fetch(const char *rel, int dst_fd, uint64_t size, void *arg)
{
	struct worker_peers *ps = arg;
	size_t len = strlen(rel);

	for (size_t k = 0; k < ps->n; k++) {
		const struct manifest_entry *e = manifest_find(ps->manifest[k],
							       rel, len);

		if (e && e->type == MANIFEST_FILE)
			return worker_peer_fetch(rel, dst_fd, size,
						 ps->pool[k]);
	}
	return -1;
}

/* LEN bytes from BUF at OFF of FD. 0, or -1 with errno. */
static int pwrite_full(int fd, const char *buf, size_t len, uint64_t off)
{
	while (len) {
		ssize_t n = pwrite(fd, buf, len, (off_t)off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			if (n == 0)
				errno = EIO;
			return -1;
		}
		buf += n;
		len -= (size_t)n;
		off += (uint64_t)n;
	}
	return 0;
}

/* Chunk INDEX of REL (LEN bytes, as of MTIME_NS) from P into DST_FD at
 * 0, through BUF (WORKER_PEER_CHUNK_STEP bytes). 1 given; 0 P does not
 * hold it (its refusal of the first range: the session goes on); -1 it
 * failed (a broken session, a chunk gone mid-way, a write), noted. */
static int chunk_from(struct worker_peer *p, const char *rel, uint64_t index,
		      uint64_t len, int64_t mtime_ns, int dst_fd, char *buf)
{
	char err[WP_ERR_MAX];
	struct peerfetch *pf = take(p);
	uint64_t off = 0;
	int r = 1;

	if (!pf)
		return -1; /* gone: said by the summary */
	while (off < len) {
		size_t want = len - off < WORKER_PEER_CHUNK_STEP
				  ? (size_t)(len - off)
				  : WORKER_PEER_CHUNK_STEP;
		size_t got;

		if (peerfetch_chunk_range(pf, rel, index, len, mtime_ns, off,
					  buf, want, WORKER_PEER_IO_MS, &got,
					  err, sizeof(err)) < 0) {
			r = off == 0 && peerfetch_usable(pf) ? 0 : -1;
			break;
		}
		if (!got || pwrite_full(dst_fd, buf, got, off) < 0) {
			snprintf(err, sizeof(err),
				 "chunk %" PRIu64 " of '%.64s': cannot write "
				 "it: %s",
				 index, rel,
				 got ? strerror(errno) : "no bytes");
			r = -1;
			break;
		}
		off += got;
	}
	give_back(p, pf);
	if (r < 0) {
		pthread_mutex_lock(&p->mu);
		note_error(p, err);
		p->chunk_failures++;
		pthread_mutex_unlock(&p->mu);
	}
	return r;
}

int worker_peers_fetch_chunk(const char *rel, uint64_t index, uint64_t len,
			     int64_t mtime_ns, int dst_fd, void *arg)
{
	struct worker_peers *ps = arg;
	char *buf;
	int r = 0;

	if (!ps->n || !(buf = malloc(WORKER_PEER_CHUNK_STEP)))
		return -1;
	for (size_t k = 0; k < ps->n && r != 1; k++)
		r = chunk_from(ps->pool[k], rel, index, len, mtime_ns, dst_fd,
			       buf);
	free(buf);
	return r == 1 ? 0 : -1;
}

size_t worker_peers_count(const struct worker_peers *ps)
{
	return ps ? ps->n : 0;
}

void worker_peers_summary(const struct worker_peers *ps,
			  void (*note)(const char *line, void *arg), void *arg)
{
	for (size_t k = 0; ps && k < ps->n; k++) {
		char line[2 * WP_ERR_MAX];

		worker_peer_summary(ps->pool[k], line, sizeof(line));
		if (line[0])
			note(line, arg);
	}
}

void worker_peers_close(struct worker_peers *ps)
{
	if (!ps)
		return;
	for (size_t k = 0; k < ps->n; k++) {
		worker_peer_close(ps->pool[k]);
		manifest_destroy(ps->manifest[k]);
	}
	free(ps);
}
