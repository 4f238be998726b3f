/* view_source.c - a spread dataset's bytes from this node's part, the
 * owner's iostaged or the PFS (see view_source.h).
 *
 * Why a refusal is per file and a failure per node: a node refuses a
 * file it does not hold (a part short of space keeps only the files that
 * fit) while serving the others well, so one refusal says nothing of the
 * next file; a connection that cannot be made, a session that breaks or
 * a transfer cut short says the node is gone or stuck, and asking it
 * again at every read would cost the application a timeout each time.
 *
 * Why fds are kept per open file: the kernel asks for a file's pages in
 * reads of at most a megabyte; opening beneath SRC for each would cost
 * the PFS a lookup per read. The PFS fd of a peer's file is opened only
 * when a read first needs it, so a healthy job never touches the PFS's
 * metadata for files its peers hold.
 *
 * A chunked file (view_chunks.h) is read as a file is, chunk by chunk:
 * a piece whose chunk is this node's comes from its chunk file, another
 * node's chunk from that node on the same pooled sessions as files
 * (peer_read, with the chunk's refusal marked on the chunk, not the
 * file), and anything else from the PFS at the file's offset.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/base/deadline.h"
#include "common/fs/beneath.h"
#include "common/fs/partchunks.h"
#include "common/net/peerfetch.h"
#include "view/view_ahead.h"
#include "view/view_chunks.h"
#include "view/view_source.h"

/* An idle session and since when. */
struct vidle {
	struct peerfetch *pf;
	long long since; /* deadline_now_ms clock */
};

/* One node of the plan, as a source. */
struct vnode {
	pthread_mutex_t mu;
	pthread_cond_t cv; /* a session given back, or the node down */
	const char *host;
	unsigned version;     /* of the part, from the first session; 0: none */
	long long down_until; /* deadline_now_ms clock */
	unsigned open;        /* sessions in existence, idle or in use */
	unsigned cap;         /* at most, VIEW_SOURCE_SESSIONS or fewer */
	long long cap_until;  /* when a lowered cap is lifted; 0: not */
	struct vidle idle[VIEW_SOURCE_SESSIONS];
	unsigned nidle;
};

struct view_source {
	struct view_source_conf conf;
	const struct view_tree *tree;
	int src_fd, local_fd, chunks_fd; /* O_PATH directories; -1: none */
	struct vnode *nodes;             /* [plan->n] */
	struct view_ahead *ahead; /* this node's chunks read ahead; NULL: not */
	_Atomic uint64_t local_bytes, peer_bytes, pfs_bytes, peer_failures,
	    pfs_reads;
};

struct view_file {
	size_t i;
	const char *rel;
	size_t rel_len;
	uint64_t size;
	int64_t mtime_ns; /* the listing's: a chunk's file bears it */
	unsigned owner;
	struct view_chunks *chunks;     /* cut into chunks; NULL: not */
	struct view_ahead_window ahead; /* with chunks: our chunks' window */
	int lfd;                        /* the part's copy (ours), or -1 */
	pthread_mutex_t mu;             /* pfd's open */
	_Atomic int pfd;                /* SRC's, opened on first need, or -1 */
	_Atomic bool peer_refused;      /* the owner does not hold it */
};

/* REL beneath DFD as a regular file of SIZE bytes: fd, or -errno. */
static int open_file_of(int dfd, const char *rel, uint64_t size)
{
	struct stat st;
	int fd = beneath_open(dfd, rel, O_RDONLY | O_NONBLOCK, 0), e;

	if (fd < 0)
		return -errno;
	e = fstat(fd, &st) < 0             ? errno
	    : !S_ISREG(st.st_mode)         ? EINVAL
	    : (uint64_t)st.st_size != size ? EIO
					   : 0;
	if (e) {
		close(fd);
		return -e;
	}
	return fd;
}

int view_source_create(const struct view_source_conf *conf,
		       const struct view_tree *t, struct view_source **ret,
		       char *err, size_t errlen)
{
	struct view_source *vs = calloc(1, sizeof(*vs));
	pthread_condattr_t ca;
	int e;

	if (!vs || !(vs->nodes = calloc(conf->plan->n, sizeof(*vs->nodes)))) {
		free(vs);
		snprintf(err, errlen, "out of memory");
		errno = ENOMEM;
		return -1;
	}
	vs->conf = *conf;
	vs->tree = t;
	vs->src_fd = vs->local_fd = vs->chunks_fd = -1;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	for (unsigned n = 0; n < conf->plan->n; n++) {
		pthread_mutex_init(&vs->nodes[n].mu, NULL);
		pthread_cond_init(&vs->nodes[n].cv, &ca);
		vs->nodes[n].cap = VIEW_SOURCE_SESSIONS;
		vs->nodes[n].host = conf->hosts && conf->hosts[n]
					? conf->hosts[n]
					: conf->plan->nodes[n].name;
	}
	vs->src_fd = open(conf->src, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (vs->src_fd < 0) {
		e = errno;
		snprintf(err, errlen, "--src %s: %s", conf->src, strerror(e));
		goto fail;
	}
	if (conf->local) {
		vs->local_fd = open(conf->local,
				    O_PATH | O_DIRECTORY | O_CLOEXEC);
		if (vs->local_fd < 0) {
			e = errno;
			snprintf(err, errlen, "--local %s: %s", conf->local,
				 strerror(e));
			goto fail;
		}
	}
	if (conf->chunks) {
		vs->chunks_fd = open(conf->chunks,
				     O_PATH | O_DIRECTORY | O_CLOEXEC);
		if (vs->chunks_fd < 0) {
			e = errno;
			snprintf(err, errlen, "--chunks %s: %s", conf->chunks,
				 strerror(e));
			goto fail;
		}
		/* a hint: without the thread, reads only wait longer */
		if (view_ahead_start(vs->chunks_fd, &vs->ahead) < 0)
			vs->ahead = NULL;
	}
	pthread_condattr_destroy(&ca);
	*ret = vs;
	return 0;
fail:
	pthread_condattr_destroy(&ca);
	view_source_destroy(vs);
	errno = e;
	return -1;
}

void view_source_destroy(struct view_source *vs)
{
	if (!vs)
		return;
	view_ahead_stop(vs->ahead);
	for (unsigned n = 0; vs->nodes && n < vs->conf.plan->n; n++) {
		for (unsigned k = 0; k < vs->nodes[n].nidle; k++)
			peerfetch_close(vs->nodes[n].idle[k].pf);
		pthread_mutex_destroy(&vs->nodes[n].mu);
		pthread_cond_destroy(&vs->nodes[n].cv);
	}
	if (vs->src_fd >= 0)
		close(vs->src_fd);
	if (vs->local_fd >= 0)
		close(vs->local_fd);
	if (vs->chunks_fd >= 0)
		close(vs->chunks_fd);
	free(vs->nodes);
	free(vs);
}

unsigned view_source_owner(const struct view_source *vs, size_t i)
{
	const struct manifest_entry *e = view_tree_entry(vs->tree, i);

	return spread_owner(vs->conf.plan, e->path, e->path_len);
}

int view_source_open(struct view_source *vs, size_t i, struct view_file **ret)
{
	const struct manifest_entry *e = view_tree_entry(vs->tree, i);
	struct view_file *f;
	int fd;

	if (e->type == MANIFEST_DIR)
		return -EISDIR;
	if (e->type != MANIFEST_FILE)
		return -EINVAL;
	f = calloc(1, sizeof(*f));
	if (!f)
		return -ENOMEM;
	f->i = i;
	f->rel = e->path;
	f->rel_len = e->path_len;
	f->size = e->size;
	f->mtime_ns = e->mtime_ns;
	f->owner = view_source_owner(vs, i);
	f->lfd = -1;
	f->pfd = -1;
	pthread_mutex_init(&f->mu, NULL);
	/* In no part's data: read by chunks, the PFS opened on first need
	 * as for a peer's file. */
	if (spread_chunked(vs->conf.plan, f->owner, f->size)) {
		fd = view_chunks_create(f->size, &f->chunks);
		if (fd < 0) {
			pthread_mutex_destroy(&f->mu);
			free(f);
			return fd;
		}
		view_ahead_window_init(&f->ahead);
		*ret = f;
		return 0;
	}
	if (f->owner == vs->conf.self && vs->local_fd >= 0) {
		fd = open_file_of(vs->local_fd, f->rel, f->size);
		if (fd >= 0)
			f->lfd = fd;
	}
	/* Ours and not in the part (it did not fit, or the part is not
	 * staged): the PFS, now, so that a file it lacks too fails at
	 * open rather than at the first read. */
	if (f->owner == vs->conf.self && f->lfd < 0) {
		fd = open_file_of(vs->src_fd, f->rel, f->size);
		if (fd < 0) {
			pthread_mutex_destroy(&f->mu);
			free(f);
			return fd;
		}
		f->pfd = fd;
	}
	*ret = f;
	return 0;
}

void view_source_release(struct view_source *vs, struct view_file *f)
{
	(void)vs;
	if (!f)
		return;
	if (f->lfd >= 0)
		close(f->lfd);
	if (f->pfd >= 0)
		close(f->pfd);
	if (f->chunks)
		view_ahead_window_fini(&f->ahead);
	view_chunks_destroy(f->chunks);
	pthread_mutex_destroy(&f->mu);
	free(f);
}

/* Exactly LEN bytes at OFF of FD (fewer only at its end). Bytes or
 * -errno. */
static ssize_t pread_full(int fd, char *buf, size_t len, uint64_t off)
{
	size_t done = 0;

	while (done < len) {
		ssize_t n = pread(fd, buf + done, len - done,
				  (off_t)(off + done));

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			break;
		done += (size_t)n;
	}
	return (ssize_t)done;
}

/* --- peers ---------------------------------------------------------------- */

/* Node N is left alone for a while. Called with n->mu held. */
static void node_down_locked(struct vnode *n)
{
	n->down_until = deadline_now_ms() + VIEW_SOURCE_BACKOFF_MS;
	pthread_cond_broadcast(&n->cv);
}

static bool is_down_locked(const struct vnode *n)
{
	return n->down_until && deadline_now_ms() < n->down_until;
}

/* Wait on N's condition until DEADLINE (deadline_now_ms clock); n->mu
 * held. 0 when woken, -1 when the time is up. */
static int wait_locked(struct vnode *n, long long deadline)
{
	struct timespec at;
	int left = deadline_left_ms(deadline);

	if (!left)
		return -1;
	deadline_after_ms(CLOCK_MONOTONIC, (unsigned long)left, &at);
	return pthread_cond_timedwait(&n->cv, &n->mu, &at) == ETIMEDOUT ? -1
									: 0;
}

/* How a session was had. */
enum take {
	TAKE_NONE,   /* none: the node is left alone, or all were busy */
	TAKE_IDLE,   /* one of the pool's */
	TAKE_OPENED, /* a new one */
	TAKE_FAILED, /* none could be opened: the node is left alone */
};

/* A session to node N: an idle one (one idle too long is closed: the
 * server ends those at PEERFETCH_IDLE_MS), else a new one while N has
 * fewer than VIEW_SOURCE_SESSIONS, else the first given back within
 * VIEW_SOURCE_WAIT_MS. FRESH: a new one only (an idle one just broke:
 * the other idle ones are closed).
 * *ret_how says which; NULL but for IDLE and OPENED. */
static struct peerfetch *take_session(struct view_source *vs, struct vnode *n,
				      bool fresh, enum take *ret_how)
{
	long long until = deadline_now_ms() + VIEW_SOURCE_WAIT_MS;
	const struct peerfetch_opts popts = {
		.encode = vs->conf.encode,
		.flags = PEERFETCH_NO_MANIFEST,
		.munge_socket = vs->conf.munge_socket,
		.job = vs->conf.job,
	};
	struct peerfetch *pf = NULL;
	char err[512];
	unsigned version;

	pthread_mutex_lock(&n->mu);
again:
	for (;;) {
		if (is_down_locked(n)) {
			*ret_how = TAKE_NONE;
			pthread_mutex_unlock(&n->mu);
			return NULL;
		}
		/* the pool's sessions are as old as the one that broke */
		while (n->nidle && fresh) {
			peerfetch_close(n->idle[--n->nidle].pf);
			n->open--;
		}
		while (n->nidle) {
			struct vidle *v = &n->idle[--n->nidle];

			pf = v->pf;
			if (deadline_now_ms() - v->since < VIEW_SOURCE_IDLE_MS)
				break;
			peerfetch_close(pf);
			pf = NULL;
			n->open--;
		}
		if (pf) {
			*ret_how = TAKE_IDLE;
			pthread_mutex_unlock(&n->mu);
			return pf;
		}
		if (n->cap_until && deadline_now_ms() >= n->cap_until) {
			n->cap = VIEW_SOURCE_SESSIONS;
			n->cap_until = 0;
		}
		if (n->open < n->cap)
			break;
		/* All in use: the first given back, else the PFS. */
		if (wait_locked(n, until) < 0) {
			*ret_how = TAKE_NONE;
			pthread_mutex_unlock(&n->mu);
			return NULL;
		}
	}
	n->open++;
	version = n->version;
	pthread_mutex_unlock(&n->mu);
	if (peerfetch_open_with(n->host, vs->conf.peer_port, &popts,
				vs->conf.tier, vs->conf.key, version,
				VIEW_SOURCE_OPEN_MS, &pf, err,
				sizeof(err)) < 0) {
		pthread_mutex_lock(&n->mu);
		n->open--;
		if (n->open && !fresh) {
			/* Other sessions to the node are alive: it answers,
			 * and refused this one for its bound
			 * (PeerFetchSessions, shared with every other
			 * client). Make do with those for a while: wait
			 * for one of them. */
			n->cap = n->open;
			n->cap_until = deadline_now_ms() +
				       VIEW_SOURCE_BACKOFF_MS;
			pf = NULL;
			goto again;
		}
		node_down_locked(n);
		pthread_mutex_unlock(&n->mu);
		*ret_how = TAKE_FAILED;
		return NULL;
	}
	pthread_mutex_lock(&n->mu);
	if (!n->version)
		n->version = peerfetch_version(pf);
	pthread_mutex_unlock(&n->mu);
	*ret_how = TAKE_OPENED;
	return pf;
}

/* Back to node N's pool, or closed when it cannot serve again. */
static void give_session(struct vnode *n, struct peerfetch *pf)
{
	pthread_mutex_lock(&n->mu);
	if (peerfetch_usable(pf) && n->nidle < VIEW_SOURCE_SESSIONS) {
		n->idle[n->nidle++] = (struct vidle){
			.pf = pf, .since = deadline_now_ms()
		};
		pf = NULL;
	} else {
		n->open--;
	}
	pthread_cond_signal(&n->cv);
	pthread_mutex_unlock(&n->mu);
	peerfetch_close(pf);
}

/* What a node is asked for: file F, or (CHUNK) its chunk INDEX; SIZE
 * bytes. */
struct vask {
	struct view_file *f;
	bool chunk;
	uint64_t index, size;
};

/* Was A refused before (the file, or that chunk of it)? */
static bool ask_refused(const struct vask *a)
{
	return a->chunk ? view_chunks_to_pfs(a->f->chunks, a->index)
			: atomic_load(&a->f->peer_refused);
}

static void ask_refuse(const struct vask *a)
{
	if (a->chunk)
		view_chunks_mark_pfs(a->f->chunks, a->index);
	else
		atomic_store(&a->f->peer_refused, true);
}

/* The range [OFF, OFF + LEN) of A on session PF: 1 read, 0 refused (the
 * session goes on), -1 the session broke. */
static int range_on(struct peerfetch *pf, const struct vask *a, char *buf,
		    size_t len, uint64_t off)
{
	char err[512];
	size_t done = 0, got;
	int r;

	while (done < len) {
		if (a->chunk)
			r = peerfetch_chunk_range(pf, a->f->rel, a->index,
						  a->size, a->f->mtime_ns,
						  off + done, buf + done,
						  len - done,
						  VIEW_SOURCE_READ_MS, &got,
						  err, sizeof(err));
		else
			r = peerfetch_range(pf, a->f->rel, a->size, off + done,
					    buf + done, len - done,
					    VIEW_SOURCE_READ_MS, &got, err,
					    sizeof(err));
		if (r < 0)
			return peerfetch_usable(pf) ? 0 : -1;
		if (!got)
			return -1; /* the file ended early: not ours to read */
		done += got;
	}
	return 1;
}

/* LEN bytes at OFF of A (within its size) from node OWNER: 1 read, 0
 * when the node was not asked (it refused A before, is left alone, or
 * all its sessions were busy), -1 when it failed: the caller then reads
 * the PFS. */
static int peer_read(struct view_source *vs, unsigned owner,
		     const struct vask *a, char *buf, size_t len, uint64_t off)
{
	struct vnode *n = &vs->nodes[owner];
	struct peerfetch *pf;
	enum take how;
	int r;

	if (ask_refused(a))
		return 0;
	pf = take_session(vs, n, false, &how);
	if (!pf)
		return how == TAKE_FAILED ? -1 : 0;
	r = range_on(pf, a, buf, len, off);
	if (r < 0 && how == TAKE_IDLE) {
		/* A session that waited in the pool may have been ended by
		 * the node meanwhile (its idle limit, a restart): one try on
		 * a new one before the node is given up. */
		give_session(n, pf);
		pf = take_session(vs, n, true, &how);
		if (!pf)
			return how == TAKE_FAILED ? -1 : 0;
		r = range_on(pf, a, buf, len, off);
	}
	if (r == 0)
		ask_refuse(a);
	if (r < 0) {
		pthread_mutex_lock(&n->mu);
		node_down_locked(n);
		pthread_mutex_unlock(&n->mu);
	}
	give_session(n, pf);
	return r > 0 ? 1 : -1;
}

/* F's PFS fd, opened on first use: fd or -errno. */
static int pfs_fd(struct view_source *vs, struct view_file *f)
{
	int fd = atomic_load(&f->pfd);

	if (fd >= 0)
		return fd;
	pthread_mutex_lock(&f->mu);
	fd = atomic_load(&f->pfd);
	if (fd < 0) {
		fd = open_file_of(vs->src_fd, f->rel, f->size);
		if (fd >= 0)
			atomic_store(&f->pfd, fd);
	}
	pthread_mutex_unlock(&f->mu);
	return fd;
}

/* LEN bytes at OFF of F from the PFS: the bytes read (fewer at the
 * file's end), or -EIO. */
static ssize_t pfs_read(struct view_source *vs, struct view_file *f, char *buf,
			size_t len, uint64_t off)
{
	int fd = pfs_fd(vs, f);
	ssize_t n;

	if (fd < 0)
		return -EIO;
	n = pread_full(fd, buf, len, off);
	if (n < 0)
		return -EIO;
	atomic_fetch_add(&vs->pfs_bytes, (uint64_t)n);
	atomic_fetch_add(&vs->pfs_reads, 1);
	return n;
}

/* Piece P of F was read from this node's chunk file: ask the disk for
 * what an in-order reader reads next of our chunks (view_ahead.h). */
static void read_ahead(struct view_source *vs, struct view_file *f,
		       const struct view_piece *p)
{
	const struct view_ahead_file file = { .plan = vs->conf.plan,
					      .self = vs->conf.self,
					      .rel = f->rel,
					      .rel_len = f->rel_len,
					      .size = f->size };
	struct view_ahead_piece next[VIEW_AHEAD_PIECES];
	size_t n;

	if (!vs->ahead)
		return;
	n = view_ahead_next(&f->ahead, &file, p->chunk_off + p->at, p->len,
			    next);
	for (size_t k = 0; k < n; k++)
		if (!view_ahead_ask(vs->ahead, f->rel, f->rel_len, &next[k]))
			break; /* the thread is behind: later windows */
}

/* Piece P of F from this node's chunk file: the one kept when it is P's
 * chunk, else the chunk's file opened (and kept); one missing, not a
 * regular file or of another length marks the chunk for the PFS. P->len
 * bytes, or fewer or -errno when it could not serve them. */
static ssize_t local_chunk(struct view_source *vs, struct view_file *f,
			   const struct view_piece *p, char *buf)
{
	char name[PARTCHUNK_NAME_MAX];
	ssize_t n;
	int fd = view_chunks_hold(f->chunks, p->index);

	if (fd >= 0) {
		n = pread_full(fd, buf, p->len, p->at);
		view_chunks_unhold(f->chunks);
		return n;
	}
	partchunk_name(f->rel, f->rel_len, p->index, name);
	fd = open_file_of(vs->chunks_fd, name, p->chunk_len);
	if (fd < 0) {
		/* not here, or not that chunk: not asked again; short of
		 * fds or memory: this read only */
		if (fd != -EMFILE && fd != -ENFILE && fd != -ENOMEM)
			view_chunks_mark_pfs(f->chunks, p->index);
		return fd;
	}
	n = pread_full(fd, buf, p->len, p->at);
	view_chunks_keep(f->chunks, p->index, fd);
	return n;
}

/* Piece P of chunked file F from its chunk's owner, else the PFS. The
 * bytes read (fewer only where the PFS's file ends early), or -EIO. */
static ssize_t piece_read(struct view_source *vs, struct view_file *f,
			  const struct view_piece *p, char *buf)
{
	unsigned owner = spread_chunk_owner(vs->conf.plan, f->rel, f->rel_len,
					    p->index);
	ssize_t n;

	if (owner == vs->conf.self) {
		if (vs->chunks_fd >= 0 &&
		    !view_chunks_to_pfs(f->chunks, p->index)) {
			n = local_chunk(vs, f, p, buf);
			if (n == (ssize_t)p->len) {
				read_ahead(vs, f, p);
				atomic_fetch_add(&vs->local_bytes, p->len);
				return n;
			}
		}
	} else {
		const struct vask a = { .f = f,
					.chunk = true,
					.index = p->index,
					.size = p->chunk_len };
		int r = peer_read(vs, owner, &a, buf, p->len, p->at);

		if (r > 0) {
			atomic_fetch_add(&vs->peer_bytes, p->len);
			return (ssize_t)p->len;
		}
		if (r < 0)
			atomic_fetch_add(&vs->peer_failures, 1);
	}
	return pfs_read(vs, f, buf, p->len, p->chunk_off + p->at);
}

/* LEN bytes at OFF of chunked file F (within its size), a piece per
 * chunk. */
static ssize_t chunked_read(struct view_source *vs, struct view_file *f,
			    char *buf, size_t len, uint64_t off)
{
	size_t done = 0;

	while (done < len) {
		struct view_piece p;
		ssize_t n;

		view_chunks_piece(f->chunks, off + done, len - done, &p);
		n = piece_read(vs, f, &p, buf + done);
		if (n < 0)
			return done ? (ssize_t)done : n;
		done += (size_t)n;
		if ((size_t)n < p.len)
			break; /* the PFS's file ended early */
	}
	return (ssize_t)done;
}

ssize_t view_source_read(struct view_source *vs, struct view_file *f, void *buf,
			 size_t len, uint64_t off)
{
	ssize_t n;

	if (off >= f->size || !len)
		return 0;
	if (len > f->size - off)
		len = (size_t)(f->size - off);
	if (f->chunks)
		return chunked_read(vs, f, buf, len, off);
	if (f->lfd >= 0) {
		n = pread_full(f->lfd, buf, len, off);
		if (n == (ssize_t)len) {
			atomic_fetch_add(&vs->local_bytes, (uint64_t)n);
			return n;
		}
		/* the part's copy failed (a bad disk, a file cut short):
		 * the PFS */
	} else if (f->owner != vs->conf.self) {
		const struct vask a = { .f = f, .size = f->size };
		int r = peer_read(vs, f->owner, &a, buf, len, off);

		if (r > 0) {
			atomic_fetch_add(&vs->peer_bytes, len);
			return (ssize_t)len;
		}
		if (r < 0)
			atomic_fetch_add(&vs->peer_failures, 1);
	}
	return pfs_read(vs, f, buf, len, off);
}

int view_source_readlink(struct view_source *vs, size_t i, char *buf,
			 size_t len)
{
	const struct manifest_entry *e = view_tree_entry(vs->tree, i);
	int dirs[2] = { vs->local_fd, vs->src_fd }, e2 = EINVAL;

	if (e->type != MANIFEST_SYMLINK)
		return -EINVAL;
	if (!len)
		return -ERANGE;
	for (int k = 0; k < 2; k++) {
		ssize_t n;
		int fd;

		if (dirs[k] < 0)
			continue;
		/* O_PATH | O_NOFOLLOW: the link itself, not its target */
		fd = beneath_open(dirs[k], e->path, O_PATH, 0);
		if (fd < 0) {
			e2 = errno;
			continue;
		}
		n = readlinkat(fd, "", buf, len - 1);
		e2 = errno;
		close(fd);
		if (n >= 0) {
			buf[n] = '\0';
			return 0;
		}
	}
	return -e2;
}

void view_source_stats(const struct view_source *vs,
		       struct view_source_stats *ret)
{
	ret->local_bytes = atomic_load(&vs->local_bytes);
	ret->peer_bytes = atomic_load(&vs->peer_bytes);
	ret->pfs_bytes = atomic_load(&vs->pfs_bytes);
	ret->peer_failures = atomic_load(&vs->peer_failures);
	ret->pfs_reads = atomic_load(&vs->pfs_reads);
	ret->ahead_bytes = 0;
	if (vs->ahead) {
		uint64_t asked;

		view_ahead_counts(vs->ahead, &asked, &ret->ahead_bytes);
	}
}
