/* worker.c - the stage worker: one dataset, staged as the job's user.
 *
 * This is a separate exec of iostaged rather than code in the daemon's
 * address space so that it holds nothing of root's: no sockets, no job
 * table, no privileges. It speaks only through its stdout (JSON lines) and
 * reads a single "go" from stdin. See worker.h for the protocol; the work
 * itself is common/fs/copyengine.c.
 *
 * The JSON lines are formatted here rather than with cJSON because cJSON
 * prints numbers through a double: byte counts must be exact integers.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/base/units.h"
#include "common/fs/copyengine.h"
#include "common/fs/manifest.h"
#include "common/fs/partchunks.h"
#include "common/fs/publictree.h"
#include "common/fs/rmtree.h"
#include "common/net/peerfetch.h"
#include "common/sched/spread.h"
#include "daemon/fsutil.h"
#include "daemon/staging/worker.h"
#include "daemon/staging/worker_chunks.h"
#include "daemon/staging/worker_peer.h"

#define WORKER_PROGRESS_MS 250
#define WORKER_ERR_MAX 8192 /* the daemon keeps the first CONF_ERR_MAX */
#define WORKER_LINE_MAX (3 * WORKER_ERR_MAX + 64)
#define WORKER_DATA "data"

struct worker_args {
	unsigned threads;
	enum manifest_verify verify;
	const char *previous;
	int manifest_in, manifest_out;
	int rate_fd; /* --rate-fd: the page iostaged writes our
				   * rate in (daemon/staging/bwgov.h), or -1 */
	bool check;
	bool public; /* --public: the tree must be readable by all */
	const char *src, *dstdir;
	/* --peer HOST:PORT --peer-entry TIER/KEY.vN, or --peers LIST
	 * [--munge-socket P] [--peer-job J]: fill from other nodes' versions
	 * (worker_peer.h; several: a fill by parts) */
	size_t npeers;
	struct worker_peer_target targets[WORKER_PEERS_MAX];
	/* --spread PLAN --spread-self NAME [--part-budget BYTES]: stage only
	 * this node's part of the dataset (common/sched/spread.h) */
	bool spread;
	struct spread_plan plan;
	unsigned self;        /* index of --spread-self in PLAN */
	uint64_t part_budget; /* 0: none */
	int listing_out;      /* --listing-out: the whole dataset's manifest */
};

/* A part's chunks of files too large for one node (--spread;
 * worker_chunks.h): which this node holds, and against what is there. */
struct part_chunks {
	struct worker_chunks c;
	int prev_fd;       /* the previous version's chunks dir, or -1 */
	uint64_t linkable; /* bytes of c that prev_fd holds */
	bool held;         /* a check: the version holds every chunk of c */
	struct worker_chunks_result done;
	struct manifest *listing; /* the whole dataset's, chunks point in */
};

/* --- output ------------------------------------------------------------------ */

/* Print LINE and a newline on stdout; the daemon gone means we stop. */
static void put_line(char *line, size_t len)
{
	line[len] = '\n';
	if (fsutil_write_all(STDOUT_FILENO, line, len + 1) < 0)
		_exit(1);
}

/* S as a JSON string (quoted) at OUT (room for LEN bytes). Control
 * characters are escaped; bytes that are not UTF-8 become '?', so the line
 * stays valid JSON whatever a file name holds. */
static size_t json_str(char *out, size_t len, const char *s)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t o = 0;

	if (len < 3)
		return 0;
	out[o++] = '"';
	while (*p && o + 8 < len) {
		unsigned char c = *p;
		size_t n = c < 0x80             ? 1
			   : (c & 0xe0) == 0xc0 ? 2
			   : (c & 0xf0) == 0xe0 ? 3
			   : (c & 0xf8) == 0xf0 ? 4
						: 0;
		bool valid = n > 0;

		for (size_t i = 1; valid && i < n; i++)
			valid = (p[i] & 0xc0) == 0x80;
		if (!valid) {
			out[o++] = '?';
			p++;
		} else if (c == '"' || c == '\\') {
			out[o++] = '\\';
			out[o++] = (char)c;
			p++;
		} else if (c < 0x20 || c == 0x7f) {
			o += (size_t)snprintf(out + o, len - o, "\\u%04x", c);
			p++;
		} else {
			if (o + n + 2 >= len)
				break;
			memcpy(out + o, p, n);
			o += n;
			p += n;
		}
	}
	out[o++] = '"';
	out[o] = '\0';
	return o;
}

static void emit_kv_str(const char *key, const char *val)
{
	char line[WORKER_LINE_MAX];
	size_t n = (size_t)snprintf(line, sizeof(line), "{\"%s\":", key);

	n += json_str(line + n, sizeof(line) - n - 2, val);
	line[n++] = '}';
	put_line(line, n);
}

static int fail(const char *msg)
{
	char line[WORKER_LINE_MAX];
	size_t n = (size_t)snprintf(line, sizeof(line),
				    "{\"ok\":false,\"error\":");

	n += json_str(line + n, sizeof(line) - n - 2, msg);
	line[n++] = '}';
	put_line(line, n);
	return 1;
}

/* The walk's totals. With --peer(s), copy_* are what the copy
 * writes: fetched files take space as copied ones do (only hard links
 * do not), so everything but the second names of an inode and, a fill
 * by parts of a user's entry, but this node's own share (LINKED_BYTES,
 * LINKED_FILES: linked from it; a public entry's share is root's and is
 * copied, so it counts); and source_bytes is what is read from SRC, the
 * files that differ from the peers' manifests. */
static void emit_totals(const struct copyengine_totals *t,
			const struct worker_args *a, uint64_t linked_bytes,
			uint64_t linked_files, const struct part_chunks *pc)
{
	uint64_t files = t->total_files - t->hardlinks;
	/* A part's chunks are bytes it holds, copied but for those the
	 * previous version has (linked): in the totals and the space. */
	uint64_t chunk_copy = pc->c.bytes - pc->linkable;
	char line[640];
	size_t n;

	n = (size_t)snprintf(line, sizeof(line),
			     "{\"total_bytes\":%" PRIu64
			     ",\"total_files\":%" PRIu64,
			     t->total_bytes + pc->c.bytes, t->total_files);
	if (a->npeers)
		n += (size_t)snprintf(line + n, sizeof(line) - n,
				      ",\"copy_bytes\":%" PRIu64
				      ",\"copy_files\":%" PRIu64
				      ",\"source_bytes\":%" PRIu64,
				      (t->total_bytes > linked_bytes
					   ? t->total_bytes - linked_bytes
					   : 0) +
					  chunk_copy,
				      files > linked_files
					  ? files - linked_files
					  : 0,
				      t->copy_bytes + chunk_copy);
	else
		n += (size_t)snprintf(line + n, sizeof(line) - n,
				      ",\"copy_bytes\":%" PRIu64
				      ",\"copy_files\":%" PRIu64,
				      t->copy_bytes + chunk_copy,
				      t->copy_files);
	n += (size_t)snprintf(line + n, sizeof(line) - n, ",\"unchanged\":%s",
			      t->unchanged && pc->held ? "true" : "false");
	if (pc->c.files)
		n += (size_t)
		    snprintf(line + n, sizeof(line) - n,
			     ",\"chunked_files\":%" PRIu64
			     ",\"chunks\":%zu,\"chunk_bytes\":%" PRIu64,
			     pc->c.files, pc->c.n, pc->c.bytes);
	/* A part (--spread): the whole dataset, and what of this node's
	 * share the budget leaves on the PFS. */
	if (a->spread)
		n += (size_t)snprintf(line + n, sizeof(line) - n,
				      ",\"dataset_bytes\":%" PRIu64
				      ",\"dataset_files\":%" PRIu64,
				      t->dataset_bytes, t->dataset_files);
	if (a->spread && a->part_budget)
		n += (size_t)snprintf(line + n, sizeof(line) - n,
				      ",\"over_budget_files\":%" PRIu64
				      ",\"over_budget_bytes\":%" PRIu64,
				      t->over_budget_files,
				      t->over_budget_bytes +
					  pc->c.over_budget_bytes);
	if (a->spread && a->part_budget && pc->c.files)
		n += (size_t)snprintf(line + n, sizeof(line) - n,
				      ",\"over_budget_chunks\":%" PRIu64,
				      pc->c.over_budget_chunks);
	line[n++] = '}';
	put_line(line, n);
}

/* The last line. With PEER, what came from the other node too; with
 * chunks, the bytes they hold are in BYTES and what was linked or copied
 * of them is said apart (files are the part's files alone). */
static void emit_ok(const struct copyengine_result *r, bool peer,
		    const struct part_chunks *pc)
{
	const struct worker_chunks_result *d = &pc->done;
	char line[640];
	int n;

	if (peer)
		n = snprintf(line, sizeof(line),
			     "{\"ok\":true,\"bytes\":%" PRIu64
			     ",\"files\":%" PRIu64 ",\"linked\":%" PRIu64
			     ",\"linked_bytes\":%" PRIu64
			     ",\"copied_previous\":%" PRIu64
			     ",\"copied_previous_bytes\":%" PRIu64
			     ",\"fetched\":%" PRIu64
			     ",\"fetched_bytes\":%" PRIu64
			     ",\"fallbacks\":%" PRIu64 "}",
			     r->bytes + d->linked_bytes + d->fetched_bytes +
				 d->copied_bytes,
			     r->files, r->linked, r->linked_bytes,
			     r->copied_previous, r->copied_previous_bytes,
			     r->fetched, r->fetched_bytes, r->fetch_fallbacks);
	else
		n = snprintf(line, sizeof(line),
			     "{\"ok\":true,\"bytes\":%" PRIu64
			     ",\"files\":%" PRIu64 ",\"linked\":%" PRIu64
			     ",\"linked_bytes\":%" PRIu64 "}",
			     r->bytes + d->linked_bytes + d->fetched_bytes +
				 d->copied_bytes,
			     r->files, r->linked, r->linked_bytes);
	if (d->linked + d->fetched + d->copied) {
		n--; /* the closing brace */
		n += snprintf(line + n, sizeof(line) - (size_t)n,
			      ",\"chunks_linked\":%" PRIu64
			      ",\"chunks_fetched\":%" PRIu64
			      ",\"chunks_fetched_bytes\":%" PRIu64
			      ",\"chunks_copied\":%" PRIu64
			      ",\"chunks_copied_bytes\":%" PRIu64 "}",
			      d->linked, d->fetched, d->fetched_bytes,
			      d->copied, d->copied_bytes);
	}
	put_line(line, (size_t)n);
}

static void on_progress(uint64_t bytes, uint64_t files, void *arg)
{
	char line[96];
	int n = snprintf(line, sizeof(line),
			 "{\"bytes\":%" PRIu64 ",\"files\":%" PRIu64 "}", bytes,
			 files);

	(void)arg;
	put_line(line, (size_t)n);
}

static void on_note(const char *msg, void *arg)
{
	(void)arg;
	emit_kv_str("note", msg);
}

/* --- arguments -------------------------------------------------------------- */

static int usage(const char *why)
{
	if (why)
		fprintf(stderr, "iostaged --stage-worker: %s\n", why);
	fprintf(stderr, "usage: iostaged --stage-worker [--threads N] "
			"[--verify stat|checksum] [--public]\n"
			"                [--previous DIR --manifest-in FD] "
			"[--manifest-out FD] [--check]\n"
			"                [--peer HOST:PORT --peer-entry "
			"TIER/KEY.vN | --peers HOST:PORT=TIER/KEY.vN,...]\n"
			"                [--munge-socket PATH] [--peer-job J]\n"
			"                [--spread PLAN --spread-self NAME "
			"[--part-budget BYTES]] [--listing-out FD]\n"
			"                [--rate-fd FD] SRC DSTDIR\n");
	return 2;
}

static int parse_uint(const char *s, unsigned long min, unsigned long max,
		      unsigned long *ret)
{
	char *end;
	unsigned long v;

	if (!s || !*s || *s < '0' || *s > '9')
		return -1;
	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno || *end || v < min || v > max)
		return -1;
	*ret = v;
	return 0;
}

/* An inherited descriptor: 3 or more (0-2 are the protocol), open. */
static int parse_fd(const char *opt, const char *s, int *ret)
{
	unsigned long v;

	if (parse_uint(s, 3, INT_MAX, &v) < 0 || fcntl((int)v, F_GETFD) < 0) {
		fprintf(stderr,
			"iostaged --stage-worker: %s: '%s' is not an open file "
			"descriptor (3 or more)\n",
			opt, s ? s : "");
		return -1;
	}
	*ret = (int)v;
	return 0;
}

static int parse_args(int argc, char **argv, struct worker_args *a)
{
	const char *peer = NULL, *entry = NULL, *munge = NULL, *peers = NULL;
	unsigned long peer_job = 0;
	const char *spread = NULL, *self = NULL;
	char err[512];
	int i, found;

	memset(a, 0, sizeof(*a));
	a->threads = COPYENGINE_THREADS_DEFAULT;
	a->manifest_in = a->manifest_out = a->rate_fd = a->listing_out = -1;
	for (i = 1; i < argc && !strncmp(argv[i], "--", 2); i++) {
		const char *opt = argv[i],
			   *val = i + 1 < argc ? argv[i + 1] : NULL;
		unsigned long v;

		if (!strcmp(opt, "--")) {
			i++;
			break;
		}
		if (!strcmp(opt, "--check")) {
			a->check = true;
			continue;
		}
		if (!strcmp(opt, "--public")) {
			a->public = true;
			continue;
		}
		if (!val)
			return usage("an option needs a value");
		i++;
		if (!strcmp(opt, "--threads")) {
			if (parse_uint(val, 1, COPYENGINE_THREADS_MAX, &v) < 0)
				return usage("--threads: a number from 1 to "
					     "256");
			a->threads = (unsigned)v;
		} else if (!strcmp(opt, "--verify")) {
			if (!strcmp(val, "stat"))
				a->verify = MANIFEST_VERIFY_STAT;
			else if (!strcmp(val, "checksum"))
				a->verify = MANIFEST_VERIFY_CHECKSUM;
			else
				return usage("--verify: stat or checksum");
		} else if (!strcmp(opt, "--previous")) {
			if (val[0] != '/')
				return usage("--previous: an absolute path");
			a->previous = val;
		} else if (!strcmp(opt, "--manifest-in")) {
			if (parse_fd(opt, val, &a->manifest_in) < 0)
				return usage(NULL);
		} else if (!strcmp(opt, "--manifest-out")) {
			if (parse_fd(opt, val, &a->manifest_out) < 0)
				return usage(NULL);
		} else if (!strcmp(opt, "--rate-fd")) {
			if (parse_fd(opt, val, &a->rate_fd) < 0)
				return usage(NULL);
		} else if (!strcmp(opt, "--peer")) {
			peer = val;
		} else if (!strcmp(opt, "--peer-entry")) {
			entry = val;
		} else if (!strcmp(opt, "--peers")) {
			peers = val;
		} else if (!strcmp(opt, "--munge-socket")) {
			if (val[0] != '/')
				return usage("--munge-socket: an absolute "
					     "path");
			munge = val;
		} else if (!strcmp(opt, "--peer-job")) {
			if (parse_uint(val, 1, UINT32_MAX, &peer_job) < 0)
				return usage("--peer-job: a job id, 1 or "
					     "more");
		} else if (!strcmp(opt, "--spread")) {
			spread = val;
		} else if (!strcmp(opt, "--spread-self")) {
			self = val;
		} else if (!strcmp(opt, "--part-budget")) {
			if (units_parse_u64(val, &a->part_budget) < 0 ||
			    !a->part_budget)
				return usage("--part-budget: a number of "
					     "bytes, 1 or more");
		} else if (!strcmp(opt, "--listing-out")) {
			if (parse_fd(opt, val, &a->listing_out) < 0)
				return usage(NULL);
		} else {
			fprintf(
			    stderr,
			    "iostaged --stage-worker: unknown option '%s'\n",
			    opt);
			return usage(NULL);
		}
	}
	argc -= i;
	argv += i;
	if (argc != 2)
		return usage("SRC and DSTDIR expected");
	a->src = argv[0];
	a->dstdir = argv[1];
	if (a->src[0] != '/' || a->dstdir[0] != '/')
		return usage("SRC and DSTDIR must be absolute paths");
	if (a->check && (a->previous || a->manifest_out >= 0))
		return usage("--check creates nothing: no --previous or "
			     "--manifest-out with it");
	if ((a->check || a->previous) && a->manifest_in < 0)
		return usage("--check and --previous need --manifest-in FD");
	if (a->manifest_in >= 0 && !a->check && !a->previous)
		return usage("--manifest-in needs --previous or --check");
	if (a->manifest_in >= 0 && a->manifest_in == a->manifest_out)
		return usage("--manifest-in and --manifest-out are the same "
			     "descriptor");
	if (a->listing_out >= 0 &&
	    (a->listing_out == a->manifest_in ||
	     a->listing_out == a->manifest_out || a->listing_out == a->rate_fd))
		return usage("--listing-out: a descriptor of its own");
	if (!spread != !self)
		return usage("--spread and --spread-self go together");
	if (a->part_budget && !spread)
		return usage("--part-budget is for --spread");
	if (spread) {
		size_t len = strlen("--spread: ");

		memcpy(err, "--spread: ", len + 1);
		if (spread_plan_parse(spread, &a->plan, err + len,
				      sizeof(err) - len) < 0)
			return usage(err);
		found = spread_plan_find(&a->plan, self);
		if (found < 0) {
			snprintf(err, sizeof(err),
				 "--spread-self: node '%.*s' is not in the "
				 "--spread plan",
				 SPREAD_NAME_MAX, self);
			return usage(err);
		}
		a->self = (unsigned)found;
		a->spread = true;
	}
	if (!peer != !entry)
		return usage("--peer and --peer-entry go together");
	if (peer && peers)
		return usage("--peer or --peers, not both");
	if (munge && !peer && !peers)
		return usage("--munge-socket is for --peer and --peers");
	if (peer_job && !peer && !peers)
		return usage("--peer-job is for --peer and --peers");
	if ((peer || peers) && a->check)
		return usage("--peer and --peers fill a new copy: not with "
			     "--check");
	if (peer && a->previous)
		return usage("--peer fills from another node: no --previous "
			     "or --manifest-in with it (--peers takes them)");
	/* With --peer(s), --previous is this node's own part of a fill by
	 * parts: linked where it has a file, the nodes give the rest. */
	if (peer) {
		if (worker_peer_parse(peer, entry, &a->targets[0], err,
				      sizeof(err)) < 0)
			return usage(err);
		a->npeers = 1;
	} else if (peers) {
		int n = worker_peers_parse(peers, a->targets, err, sizeof(err));

		if (n < 0)
			return usage(err);
		a->npeers = (size_t)n;
	}
	for (size_t k = 0; k < a->npeers; k++) {
		a->targets[k].munge_socket = munge;
		a->targets[k].job = (uint32_t)peer_job;
	}
	return 0;
}

/* --- a node's part (--spread) ----------------------------------------------- */

/* Does this node hold REL (opts.select)? It does when no other node of
 * the plan scores it higher (a tie goes to the lower index, as
 * spread_owner says); its score ranks it for --part-budget, so the files
 * a node holds most firmly are the ones it keeps. Scoring the others
 * stops at the first that beats this node: about two scores per file
 * another node holds instead of one per node. */
static bool part_select(const char *rel, size_t len, uint64_t size,
			double *priority, void *arg)
{
	const struct worker_args *a = arg;
	double mine = spread_score(&a->plan, a->self, rel, len);

	for (unsigned i = 0; i < a->plan.n; i++) {
		double s;

		if (i == a->self)
			continue;
		s = spread_score(&a->plan, i, rel, len);
		if (s > mine || (s == mine && i < a->self))
			return false;
	}
	/* Too large for this node: held by no node whole, in chunks
	 * (worker_chunks.h) */
	if (spread_chunked(&a->plan, a->self, size))
		return false;
	*priority = mine;
	return true;
}

/* --listing-out: the whole dataset's manifest, written once the walk is
 * done, before the totals line (so a reader of that line has it all). */
static int write_listing(const struct worker_args *a, struct copyengine *ce)
{
	struct manifest *m = NULL;
	char err[256];

	if (copyengine_listing(ce, &m) < 0 ||
	    manifest_write(m, a->listing_out) < 0) {
		snprintf(err, sizeof(err),
			 "cannot write the listing (fd %d): %s", a->listing_out,
			 strerror(errno));
		manifest_destroy(m);
		return fail(err);
	}
	manifest_destroy(m);
	close(a->listing_out);
	return 0;
}

/* --- staging ----------------------------------------------------------------- */

/* Wait for the daemon's "go" (its capacity check passed). */
static bool gate_open(void)
{
	char buf[8];
	size_t len = 0;

	while (len < sizeof(buf)) {
		ssize_t n = read(STDIN_FILENO, buf + len, sizeof(buf) - len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		len += (size_t)n;
		if (memchr(buf, '\n', len))
			break;
	}
	return len >= 3 && !memcmp(buf, "go\n", 3);
}

/* Turn a write failure for lack of space into the message users should
 * see: "tier full while writing X: No space left on device". */
static void space_message(int errnum, char *err, size_t errlen)
{
	static const char prefix[] = "cannot write ";
	char buf[WORKER_ERR_MAX + 32];

	if ((errnum != ENOSPC && errnum != EDQUOT) ||
	    strncmp(err, prefix, sizeof(prefix) - 1))
		return;
	snprintf(buf, sizeof(buf), "tier full while writing %.*s",
		 (int)(WORKER_ERR_MAX - 1), err + sizeof(prefix) - 1);
	snprintf(err, errlen, "%.*s", (int)errlen - 1, buf);
}

/* Remove what we made under DFD (NAME), keeping ERR as the message. */
static void undo(int dfd, const char *name)
{
	char rmerr[WORKER_ERR_MAX];

	rmtree_at(dfd, name, rmerr, sizeof(rmerr));
}

static int load_manifest(int fd, struct manifest **ret)
{
	char err[WORKER_ERR_MAX];
	int r = manifest_read(fd, ret, err, sizeof(err));

	close(fd);
	if (r < 0)
		return fail(err);
	return 0;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* A directory's chunks dir, opened to read (-1: none). */
static int open_chunks_in(const char *dir)
{
	int dfd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC), fd;

	if (dfd < 0)
		return -1;
	fd = openat(dfd, PARTCHUNKS_DIR,
		    O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	close(dfd);
	return fd;
}

/* The chunks this node's part holds (--spread), after the walk: within
 * what the budget leaves after the part's whole files, and against the
 * version checked (--check: DSTDIR is it) or the previous one (its data
 * is --previous; its chunks lie beside). 0, or 1 with the failure
 * said. */
static int plan_chunks(const struct worker_args *a, struct copyengine *ce,
		       struct part_chunks *pc)
{
	const struct copyengine_totals *t = copyengine_totals(ce);
	uint64_t budget = WORKER_CHUNKS_NO_BUDGET;
	struct manifest *listing = NULL;
	int vfd, sfd;

	memset(pc, 0, sizeof(*pc));
	pc->prev_fd = -1;
	pc->held = true;
	if (!a->spread)
		return 0;
	if (a->part_budget)
		budget = a->part_budget > t->total_bytes
			     ? a->part_budget - t->total_bytes
			     : 0;
	if (copyengine_listing(ce, &listing) < 0 ||
	    worker_chunks_plan(listing, &a->plan, a->self, budget, &pc->c) <
		0) {
		manifest_destroy(listing);
		return fail("out of memory");
	}
	pc->listing = listing;
	/* verify=checksum: a chunk is the same when its bytes are, as a
	 * file is (the PFS read for it, as the walk read the files) */
	sfd = a->verify == MANIFEST_VERIFY_CHECKSUM && pc->c.n
		  ? open(a->src, O_PATH | O_DIRECTORY | O_CLOEXEC)
		  : -1;
	if (a->check) {
		vfd = open_chunks_in(a->dstdir);
		worker_chunks_mark(&pc->c, vfd, sfd);
		pc->held = pc->c.marked == pc->c.n;
		if (vfd >= 0)
			close(vfd);
	} else if (a->previous) {
		char dir[PATH_MAX];

		snprintf(dir, sizeof(dir), "%s/..", a->previous);
		pc->prev_fd = open_chunks_in(dir);
		worker_chunks_mark(&pc->c, pc->prev_fd, sfd);
		pc->linkable = pc->c.marked_bytes;
	}
	if (sfd >= 0)
		close(sfd);
	return 0;
}

static void part_chunks_free(struct part_chunks *pc)
{
	if (pc->prev_fd >= 0)
		close(pc->prev_fd);
	worker_chunks_free(&pc->c);
	manifest_destroy(pc->listing);
	pc->listing = NULL;
	pc->prev_fd = -1;
}

static void on_chunk_progress(uint64_t bytes, void *arg)
{
	const struct copyengine_result *res = arg;

	on_progress(res->bytes + bytes, res->files, NULL);
}

/* The part's chunks into DFD (the build directory), after its data:
 * 0, or 1 with the failure said (the chunks directory removed). */
static int stage_chunks(const struct worker_args *a, struct part_chunks *pc,
			int dfd, struct worker_peers *pool,
			const _Atomic uint64_t *rate,
			const struct copyengine_result *res)
{
	char err[WORKER_ERR_MAX];
	/* this node's previous chunks, then the other nodes' parts (a new
	 * plan moved chunks here), then the PFS */
	struct worker_chunks_from from = {
		.prev_dirfd = pc->prev_fd,
		.fetch = worker_peers_count(pool) ? worker_peers_fetch_chunk
						  : NULL,
		.fetch_arg = pool,
		.rate = rate,
	};

	if (!pc->c.n)
		return 0;
	from.src_dirfd = open(a->src, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (from.src_dirfd < 0) {
		snprintf(err, sizeof(err), "cannot read %s: %s", a->src,
			 strerror(errno));
		return fail(err);
	}
	if (worker_chunks_build(&pc->c, &from, dfd, a->public,
				on_chunk_progress, (void *)res, &pc->done, err,
				sizeof(err)) < 0) {
		int e = errno;

		close(from.src_dirfd);
		space_message(e, err, sizeof(err));
		return fail(err);
	}
	close(from.src_dirfd);
	return 0;
}

/* Copy to DSTDIR/data. DSTDIR is a cache version's build directory
 * (daemon/staging/cache_build.c), which the cache publishes by renaming
 * it once the copy and its manifest are complete. */
static int stage(const struct worker_args *a, struct copyengine *ce,
		 struct worker_peers *pool, struct part_chunks *pc,
		 const _Atomic uint64_t *rate, double t_open, double t_walk)
{
	double t_copy = now_s();
	char err[WORKER_ERR_MAX], label[PATH_MAX + sizeof(WORKER_DATA) + 1];
	struct copyengine_result res;
	struct stat st;
	const char *target = WORKER_DATA;
	int dfd, saved;

	snprintf(label, sizeof(label), "%s/%s", a->dstdir, WORKER_DATA);
	dfd = open(a->dstdir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0) {
		snprintf(err, sizeof(err), "cannot write %s: %s", a->dstdir,
			 strerror(errno));
		return fail(err);
	}
	if (fstatat(dfd, WORKER_DATA, &st, AT_SYMLINK_NOFOLLOW) == 0) {
		/* Not ours: never removed. */
		snprintf(err, sizeof(err), "cannot write %s: %s", label,
			 strerror(EEXIST));
		close(dfd);
		return fail(err);
	}
	if (copyengine_copy(ce, dfd, target, &res, err, sizeof(err)) < 0) {
		saved = errno; /* the engine removed what it made */
		close(dfd);
		space_message(saved, err, sizeof(err));
		return fail(err);
	}
	if (a->manifest_out >= 0) {
		struct manifest *m = NULL;

		if (copyengine_manifest(ce, &m) < 0 ||
		    manifest_write(m, a->manifest_out) < 0) {
			snprintf(err, sizeof(err),
				 "cannot write the manifest (fd %d): %s",
				 a->manifest_out, strerror(errno));
			manifest_destroy(m);
			undo(dfd, target);
			close(dfd);
			return fail(err);
		}
		manifest_destroy(m);
		close(a->manifest_out);
	}
	if (stage_chunks(a, pc, dfd, pool, rate, &res)) {
		undo(dfd, target);
		close(dfd);
		return 1;
	}
	close(dfd);
	if (pool) {
		char note[WORKER_ERR_MAX];

		worker_peers_summary(pool, on_note, NULL);
		/* where a fill's time went, for whoever makes it faster */
		snprintf(note, sizeof(note),
			 "filled in %.2f s: session and manifest %.2f s, walk "
			 "%.2f s, copy %.2f s",
			 now_s() - t_open, t_walk - t_open, t_copy - t_walk,
			 now_s() - t_copy);
		emit_kv_str("note", note);
	}
	emit_ok(&res, a->npeers > 0, pc);
	return 0;
}

/* The first session to each peer and its manifest, which SRC is
 * compared with (merged into *prev, this node's own part's manifest or
 * NULL). A peer that cannot be used is no failure: its files are copied
 * from SRC, and a note says why. 0, or -1 when out of memory (*prev
 * destroyed). */
static int peers_open(const struct worker_args *a, struct worker_peers **ret,
		      struct manifest **prev)
{
	unsigned sessions = a->threads ? a->threads
				       : COPYENGINE_THREADS_DEFAULT;

	if (sessions > WORKER_PEER_SESSIONS)
		sessions = WORKER_PEER_SESSIONS;
	/* A fill by parts: every node of the job fills from every node at
	 * once, so each serving node sees NPEERS workers; their sessions
	 * together stay within the default PeerFetchSessions. */
	if (a->npeers > 1 && sessions > PEERFETCH_SESSIONS_DEFAULT / a->npeers)
		sessions = PEERFETCH_SESSIONS_DEFAULT / a->npeers
			       ? PEERFETCH_SESSIONS_DEFAULT / a->npeers
			       : 1;
	if (worker_peers_open(a->targets, a->npeers, sessions, NULL, on_note,
			      NULL, ret) < 0) {
		manifest_destroy(*prev);
		*prev = NULL;
		return -1;
	}
	if (!worker_peers_count(*ret))
		return 0;
	*prev = worker_peers_merge(*ret, *prev);
	return *prev ? 0 : -1;
}

int worker_main(int argc, char **argv)
{
	struct worker_args a;
	struct copyengine_opts opts;
	struct copyengine *ce = NULL;
	struct manifest *prev = NULL;
	struct worker_peers *pool = NULL;
	struct part_chunks pc = { .prev_fd = -1 };
	uint64_t share_bytes = 0, share_files = 0;
	char err[WORKER_ERR_MAX], label[PATH_MAX + sizeof(WORKER_DATA) + 1];
	double t_open, t_walk;
	int r;

	r = parse_args(argc, argv, &a);
	if (r)
		return r;
	if (a.spread) {
		struct stat st;

		/* A file cannot be split (the engine would say so too, but
		 * this is a wrong request, not a failed staging). */
		if (stat(a.src, &st) == 0 && !S_ISDIR(st.st_mode))
			return usage("--spread: SRC is not a directory: "
				     "spread is for directory trees");
	}
	/* Files are created with their final modes (no fchmod each): the
	 * copy's top is private, so nothing is exposed by this. */
	umask(0);
	if (a.manifest_in >= 0 && load_manifest(a.manifest_in, &prev))
		return 1;
	snprintf(label, sizeof(label), "%s/%s", a.dstdir, WORKER_DATA);
	memset(&opts, 0, sizeof(opts));
	opts.threads = a.threads;
	opts.verify = a.verify;
	opts.hash = a.verify == MANIFEST_VERIFY_CHECKSUM;
	t_open = now_s();
	/* A fill by parts of a user's entry: the share is linked, it takes
	 * no room (the daemon reserves what the totals say). */
	for (size_t k = 0; a.previous && a.npeers && !a.public && prev &&
			   k < manifest_count(prev);
	     k++) {
		const struct manifest_entry *e = manifest_get(prev, k);

		if (e->type == MANIFEST_FILE) {
			share_bytes += e->size;
			share_files++;
		}
	}
	if (a.npeers && peers_open(&a, &pool, &prev) < 0) {
		worker_peers_close(pool);
		return fail("out of memory");
	}
	t_walk = now_s();
	opts.previous = prev;
	opts.previous_path = a.previous;
	if (worker_peers_count(pool)) {
		opts.fetch = worker_peers_fetch;
		opts.fetch_arg = pool;
	}
	opts.check_only = a.check;
	if (a.spread) {
		opts.select = part_select;
		opts.select_arg = &a;
		opts.select_budget = a.part_budget;
	}
	opts.keep_listing = a.listing_out >= 0;
	/* A public copy keeps its top readable by all (the .build
	 * directory, PublicUser's 0700, hides it while it is built). */
	opts.private_top = !a.public;
	opts.public_only = a.public;
	opts.read_only = true; /* a cache version, served to many jobs */
	opts.dst_label = label;
	opts.progress = on_progress;
	opts.progress_ms = WORKER_PROGRESS_MS;
	opts.note = on_note;
	if (a.rate_fd >= 0) {
		/* Read-only: iostaged's page (sealed against writes) holds
		 * the bytes/s this copy may read from the source. */
		void *page = mmap(NULL, sizeof(uint64_t), PROT_READ, MAP_SHARED,
				  a.rate_fd, 0);

		if (page == MAP_FAILED) {
			worker_peers_close(pool);
			manifest_destroy(prev);
			snprintf(err, sizeof(err),
				 "cannot map the rate page (fd %d): %s",
				 a.rate_fd, strerror(errno));
			return fail(err);
		}
		opts.rate = page;
	}

	if (a.public && publictree_check_above(a.src, err, sizeof(err)) < 0) {
		worker_peers_close(pool);
		manifest_destroy(prev);
		return fail(err);
	}
	if (copyengine_walk(a.src, &opts, &ce, err, sizeof(err)) < 0) {
		worker_peers_close(pool);
		manifest_destroy(prev);
		return fail(err);
	}
	if ((a.listing_out >= 0 && write_listing(&a, ce)) ||
	    plan_chunks(&a, ce, &pc)) {
		part_chunks_free(&pc);
		copyengine_destroy(ce);
		worker_peers_close(pool);
		manifest_destroy(prev);
		return 1;
	}
	emit_totals(copyengine_totals(ce), &a, share_bytes, share_files, &pc);
	if (a.check) {
		struct copyengine_result none = { 0 };

		memset(&pc.done, 0, sizeof(pc.done));
		emit_ok(&none, false, &pc);
		r = 0;
	} else if (getenv("IOSTAGE_STAGE_GATE") && !gate_open()) {
		r = fail("cancelled before copying");
	} else {
		r = stage(&a, ce, pool, &pc, opts.rate, t_open, t_walk);
	}
	part_chunks_free(&pc);
	copyengine_destroy(ce);
	worker_peers_close(pool);
	manifest_destroy(prev);
	return r;
}
