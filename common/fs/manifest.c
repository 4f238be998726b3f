/* manifest.c - the list of what a staged copy holds, in memory and on disk.
 *
 * See manifest.h for the format. Two details matter for speed: the paths
 * live in an arena of large blocks (one malloc per 256 KiB, not per entry),
 * and lookups go through an open-addressing table of entry indices keyed by
 * XXH3-64 of the path, which a cache-hit check hits once per source entry.
 * The table is kept up to date by every manifest_add, so a manifest nobody
 * changes any more can be searched from many threads without locks.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <xxhash.h>

#include "common/fs/manifest.h"

#define MF_MAGIC "IOSTMANF"
#define MF_HEADER 24  /* magic, version, flags, count */
#define MF_RECORD 26  /* a record without hash and suffix */
#define MF_TRAILER 16 /* xxh3-128 */
#define MF_FLAG_HASH 0x01u
#define MF_ARENA_BLOCK (256u * 1024)
#define MF_WBUF (64u * 1024)
#define MF_MAP_MIN (128u * 1024) /* from here: mmap, pre-faulted */

struct mf_block {
	struct mf_block *next;
	size_t used, size;
	char data[];
};

struct manifest {
	struct manifest_entry *e;
	size_t n, cap;
	struct mf_block *blocks; /* newest first */
	uint32_t *slots;         /* index + 1; 0 = empty */
	size_t nslots;           /* power of two */
};

/* --- memory ------------------------------------------------------------- */

/* Large arrays are mapped with MAP_POPULATE: on a virtual machine a page
 * fault per 4 KiB on first touch costs more than filling the whole array,
 * and a 100,000-entry manifest is read on every cache-hit check. Zeroed. */
static void *mf_alloc(size_t size)
{
	void *p;

	if (size < MF_MAP_MIN)
		return calloc(1, size);
	p = mmap(NULL, size, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
	return p == MAP_FAILED ? NULL : p;
}

static void mf_free(void *p, size_t size)
{
	if (!p)
		return;
	if (size < MF_MAP_MIN)
		free(p);
	else
		munmap(p, size);
}

/* --- arena and index ---------------------------------------------------- */

/* Room for LEN more bytes of paths, in a block of at least MIN bytes. */
static char *arena_alloc_min(struct manifest *m, size_t len, size_t min)
{
	struct mf_block *b = m->blocks;

	if (!b || b->size - b->used < len) {
		size_t size = len > min ? len : min;

		b = mf_alloc(sizeof(*b) + size);
		if (!b)
			return NULL;
		b->size = size;
		b->used = 0;
		b->next = m->blocks;
		m->blocks = b;
	}
	b->used += len;
	return b->data + b->used - len;
}

static char *arena_alloc(struct manifest *m, size_t len)
{
	return arena_alloc_min(m, len, MF_ARENA_BLOCK);
}

static size_t slot_of(const char *path, size_t len, size_t nslots)
{
	return (size_t)XXH3_64bits(path, len) & (nslots - 1);
}

static void index_put(uint32_t *slots, size_t nslots,
		      const struct manifest_entry *e, uint32_t idx)
{
	size_t i = slot_of(e->path, e->path_len, nslots);

	while (slots[i])
		i = (i + 1) & (nslots - 1);
	slots[i] = idx + 1;
}

/* Room in the index for WANT entries at a load of at most three quarters:
 * a small table stays in cache, which matters more than probe length. */
static int index_reserve(struct manifest *m, size_t want)
{
	size_t nslots = m->nslots ? m->nslots : 16;
	uint32_t *slots;

	while (want * 4 > nslots * 3)
		nslots *= 2;
	if (nslots == m->nslots)
		return 0;
	slots = mf_alloc(nslots * sizeof(*slots));
	if (!slots)
		return -1;
	for (size_t i = 0; i < m->n; i++)
		index_put(slots, nslots, &m->e[i], (uint32_t)i);
	mf_free(m->slots, m->nslots * sizeof(*slots));
	m->slots = slots;
	m->nslots = nslots;
	return 0;
}

static int entries_reserve(struct manifest *m, size_t want)
{
	struct manifest_entry *e;
	size_t cap = m->cap ? m->cap : 64;

	while (cap < want)
		cap *= 2;
	if (cap == m->cap)
		return 0;
	e = mf_alloc(cap * sizeof(*e));
	if (!e)
		return -1;
	if (m->n)
		memcpy(e, m->e, m->n * sizeof(*e));
	mf_free(m->e, m->cap * sizeof(*e));
	m->e = e;
	m->cap = cap;
	return 0;
}

/* --- entries ------------------------------------------------------------- */

/* A clean relative path: no leading/trailing '/', no empty, "." or ".."
 * component, no NUL. "" (the top) is clean. */
static bool path_clean(const char *p, size_t len)
{
	size_t start = 0;

	if (len == 0)
		return true;
	if (len > MANIFEST_PATH_MAX || memchr(p, '\0', len))
		return false;
	for (size_t i = 0; i <= len; i++) {
		if (i < len && p[i] != '/')
			continue;
		size_t n = i - start;

		if (n == 0 || (n == 1 && p[start] == '.') ||
		    (n == 2 && p[start] == '.' && p[start + 1] == '.'))
			return false;
		start = i + 1;
	}
	return true;
}

/* strcmp order of two byte strings that may not be NUL-terminated. */
static int path_cmp(const char *a, size_t alen, const char *b, size_t blen)
{
	int c = memcmp(a, b, alen < blen ? alen : blen);

	if (c)
		return c;
	return alen < blen ? -1 : alen > blen;
}

static int add_raw(struct manifest *m, const struct manifest_entry *e,
		   const char *path, size_t len)
{
	struct manifest_entry *last = m->n ? &m->e[m->n - 1] : NULL;
	char *copy;

	if (e->type < MANIFEST_FILE || e->type > MANIFEST_SYMLINK ||
	    (e->mode & ~07777u) || e->has_hash > 1 || !path_clean(path, len) ||
	    (last && path_cmp(last->path, last->path_len, path, len) >= 0)) {
		errno = EINVAL;
		return -1;
	}
	if (m->n >= MANIFEST_MAX_ENTRIES) {
		errno = E2BIG;
		return -1;
	}
	if (entries_reserve(m, m->n + 1) < 0 || index_reserve(m, m->n + 1) < 0)
		return -1;
	copy = arena_alloc(m, len + 1);
	if (!copy)
		return -1;
	memcpy(copy, path, len);
	copy[len] = '\0';
	m->e[m->n] = *e;
	m->e[m->n].path = copy;
	m->e[m->n].path_len = (uint16_t)len;
	if (!e->has_hash)
		memset(m->e[m->n].hash, 0, MANIFEST_HASH_LEN);
	index_put(m->slots, m->nslots, &m->e[m->n], (uint32_t)m->n);
	m->n++;
	return 0;
}

struct manifest *manifest_create(void)
{
	return calloc(1, sizeof(struct manifest));
}

/* A merge of sorted lists: each step takes the smallest path at the
 * heads, from the first manifest that has it, and moves every head at
 * that path on. N is small (the nodes of a job), so the heads are
 * scanned rather than kept in a heap. */
int manifest_union(const struct manifest *const *ms, size_t n,
		   struct manifest **ret)
{
	size_t at[MANIFEST_UNION_MAX] = { 0 };
	struct manifest *m;

	if (n > MANIFEST_UNION_MAX) {
		errno = EINVAL;
		return -1;
	}
	m = manifest_create();
	if (!m)
		return -1;
	for (;;) {
		const struct manifest_entry *best = NULL;

		for (size_t k = 0; k < n; k++) {
			const struct manifest_entry *e;

			if (!ms[k] || at[k] >= ms[k]->n)
				continue;
			e = &ms[k]->e[at[k]];
			if (!best || path_cmp(e->path, e->path_len, best->path,
					      best->path_len) < 0)
				best = e;
		}
		if (!best)
			break;
		if (add_raw(m, best, best->path, best->path_len) < 0) {
			int saved = errno;

			manifest_destroy(m);
			errno = saved;
			return -1;
		}
		best = &m->e[m->n - 1];
		for (size_t k = 0; k < n; k++)
			if (ms[k] && at[k] < ms[k]->n &&
			    !path_cmp(ms[k]->e[at[k]].path,
				      ms[k]->e[at[k]].path_len, best->path,
				      best->path_len))
				at[k]++;
	}
	*ret = m;
	return 0;
}

void manifest_destroy(struct manifest *m)
{
	if (!m)
		return;
	while (m->blocks) {
		struct mf_block *next = m->blocks->next;

		mf_free(m->blocks, sizeof(*m->blocks) + m->blocks->size);
		m->blocks = next;
	}
	mf_free(m->e, m->cap * sizeof(*m->e));
	mf_free(m->slots, m->nslots * sizeof(*m->slots));
	free(m);
}

int manifest_add(struct manifest *m, const struct manifest_entry *e)
{
	if (!m || !e || !e->path) {
		errno = EINVAL;
		return -1;
	}
	return add_raw(m, e, e->path, strnlen(e->path, MANIFEST_PATH_MAX + 1));
}

size_t manifest_count(const struct manifest *m)
{
	return m->n;
}

const struct manifest_entry *manifest_get(const struct manifest *m, size_t i)
{
	return i < m->n ? &m->e[i] : NULL;
}

size_t manifest_index(const struct manifest *m, const struct manifest_entry *e)
{
	return (size_t)(e - m->e);
}

const struct manifest_entry *manifest_find(const struct manifest *m,
					   const char *path, size_t len)
{
	size_t i;

	if (!m || !path || !m->nslots || len > MANIFEST_PATH_MAX)
		return NULL;
	for (i = slot_of(path, len, m->nslots); m->slots[i];
	     i = (i + 1) & (m->nslots - 1)) {
		const struct manifest_entry *e = &m->e[m->slots[i] - 1];

		if (e->path_len == len && !memcmp(e->path, path, len))
			return e;
	}
	return NULL;
}

bool manifest_entry_same(const struct manifest_entry *a,
			 const struct manifest_entry *b, enum manifest_verify v)
{
	if (a->type != b->type || a->mode != b->mode ||
	    a->mtime_ns != b->mtime_ns)
		return false;
	if (a->type == MANIFEST_DIR)
		return true;
	if (a->size != b->size)
		return false;
	if (v == MANIFEST_VERIFY_CHECKSUM)
		return a->has_hash && b->has_hash &&
		       !memcmp(a->hash, b->hash, MANIFEST_HASH_LEN);
	return true;
}

int manifest_compare(const struct manifest *old, const struct manifest *cur,
		     enum manifest_verify v, struct manifest_diff *ret,
		     uint8_t *decisions)
{
	struct manifest_diff d = { 0, 0, 0, 0 };
	size_t i = 0, j = 0;

	if (!old || !cur || !ret) {
		errno = EINVAL;
		return -1;
	}
	while (i < old->n || j < cur->n) {
		const struct manifest_entry *a = i < old->n ? &old->e[i] : NULL;
		const struct manifest_entry *b = j < cur->n ? &cur->e[j] : NULL;
		int c = !a   ? 1
			: !b ? -1
			     : path_cmp(a->path, a->path_len, b->path,
					b->path_len);

		if (c < 0) {
			d.removed++;
			i++;
			continue;
		}
		if (c > 0) {
			d.added++;
		} else if (manifest_entry_same(a, b, v)) {
			d.same++;
		} else {
			d.changed++;
		}
		if (decisions)
			decisions[j] = c == 0 && b->type == MANIFEST_FILE &&
					       manifest_entry_same(a, b, v)
					   ? MANIFEST_LINK
					   : MANIFEST_COPY;
		if (c == 0)
			i++;
		j++;
	}
	*ret = d;
	return 0;
}

/* --- writing --------------------------------------------------------------- */

struct mf_writer {
	int fd;
	unsigned char buf[MF_WBUF];
	size_t len;
	XXH3_state_t *xs;
};

static int w_flush(struct mf_writer *w)
{
	size_t off = 0;

	XXH3_128bits_update(w->xs, w->buf, w->len);
	while (off < w->len) {
		ssize_t n = write(w->fd, w->buf + off, w->len - off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -1;
		off += (size_t)n;
	}
	w->len = 0;
	return 0;
}

static int w_put(struct mf_writer *w, const void *data, size_t len)
{
	const unsigned char *p = data;

	while (len) {
		size_t n = sizeof(w->buf) - w->len;

		if (n > len)
			n = len;
		memcpy(w->buf + w->len, p, n);
		w->len += n;
		p += n;
		len -= n;
		if (w->len == sizeof(w->buf) && w_flush(w) < 0)
			return -1;
	}
	return 0;
}

static void le16(unsigned char *p, uint16_t v)
{
	p[0] = (unsigned char)v;
	p[1] = (unsigned char)(v >> 8);
}

static void le32(unsigned char *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (unsigned char)(v >> (8 * i));
}

static void le64(unsigned char *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (unsigned char)(v >> (8 * i));
}

int manifest_write(const struct manifest *m, int fd)
{
	struct mf_writer *w;
	unsigned char hdr[MF_HEADER], rec[MF_RECORD];
	XXH128_canonical_t sum;
	const char *prev = "";
	size_t prevlen = 0;
	int r = -1, saved;

	if (!m || fd < 0) {
		errno = EINVAL;
		return -1;
	}
	w = malloc(sizeof(*w));
	if (!w)
		return -1;
	w->fd = fd;
	w->len = 0;
	w->xs = XXH3_createState();
	if (!w->xs) {
		free(w);
		errno = ENOMEM;
		return -1;
	}
	XXH3_128bits_reset(w->xs);
	memcpy(hdr, MF_MAGIC, 8);
	le32(hdr + 8, MANIFEST_VERSION);
	le32(hdr + 12, 0);
	le64(hdr + 16, m->n);
	if (w_put(w, hdr, sizeof(hdr)) < 0)
		goto out;
	for (size_t i = 0; i < m->n; i++) {
		const struct manifest_entry *e = &m->e[i];
		size_t shared = 0;

		while (shared < prevlen && shared < e->path_len &&
		       prev[shared] == e->path[shared])
			shared++;
		rec[0] = e->type;
		rec[1] = e->has_hash ? MF_FLAG_HASH : 0;
		le16(rec + 2, (uint16_t)shared);
		le16(rec + 4, (uint16_t)(e->path_len - shared));
		le32(rec + 6, e->mode);
		le64(rec + 10, e->size);
		le64(rec + 18, (uint64_t)e->mtime_ns);
		if (w_put(w, rec, sizeof(rec)) < 0 ||
		    (e->has_hash && w_put(w, e->hash, MANIFEST_HASH_LEN) < 0) ||
		    w_put(w, e->path + shared, e->path_len - shared) < 0)
			goto out;
		prev = e->path;
		prevlen = e->path_len;
	}
	if (w_flush(w) < 0)
		goto out;
	XXH128_canonicalFromHash(&sum, XXH3_128bits_digest(w->xs));
	/* The trailer is not part of the checksum: write it directly. */
	memcpy(w->buf, sum.digest, sizeof(sum.digest));
	w->len = sizeof(sum.digest);
	for (size_t off = 0; off < w->len;) {
		ssize_t n = write(fd, w->buf + off, w->len - off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			goto out;
		off += (size_t)n;
	}
	r = 0;
out:
	saved = errno;
	XXH3_freeState(w->xs);
	free(w);
	errno = saved;
	return r;
}

/* --- reading --------------------------------------------------------------- */

static uint16_t rd16(const unsigned char *p)
{
	return (uint16_t)(p[0] | p[1] << 8);
}

static uint32_t rd32(const unsigned char *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
	       (uint32_t)p[3] << 24;
}

static uint64_t rd64(const unsigned char *p)
{
	uint64_t v = 0;

	for (int i = 7; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

static int bad(char *err, size_t errlen, const char *fmt, size_t idx)
{
	if (err && errlen) {
		char what[160];

		snprintf(what, sizeof(what), fmt, idx);
		snprintf(err, errlen, "manifest: %s", what);
	}
	errno = EBADMSG;
	return -1;
}

int manifest_parse(const void *buf, size_t len, struct manifest **ret,
		   char *err, size_t errlen)
{
	const unsigned char *p = buf, *end;
	XXH128_canonical_t want;
	struct manifest *m;
	char path[MANIFEST_PATH_MAX + 1];
	size_t pathlen = 0;
	uint64_t count;

	if (!buf || !ret) {
		errno = EINVAL;
		return -1;
	}
	if (len > MANIFEST_MAX_FILE) {
		if (err && errlen)
			snprintf(err, errlen, "manifest: larger than %zu bytes",
				 MANIFEST_MAX_FILE);
		errno = EFBIG;
		return -1;
	}
	if (len < MF_HEADER + MF_TRAILER)
		return bad(err, errlen, "truncated (%zu bytes)", len);
	if (memcmp(p, MF_MAGIC, 8))
		return bad(err, errlen, "not a manifest (bad magic)", 0);
	if (rd32(p + 8) != MANIFEST_VERSION)
		return bad(err, errlen, "unsupported version %zu",
			   (size_t)rd32(p + 8));
	XXH128_canonicalFromHash(&want, XXH3_128bits(p, len - MF_TRAILER));
	if (memcmp(want.digest, p + len - MF_TRAILER, MF_TRAILER))
		return bad(err, errlen, "checksum mismatch", 0);
	if (rd32(p + 12) != 0)
		return bad(err, errlen, "unknown flags", 0);
	count = rd64(p + 16);
	/* Each record is at least MF_RECORD bytes: a count the file cannot
	 * hold is refused before anything is allocated for it. */
	if (count > MANIFEST_MAX_ENTRIES ||
	    count > (len - MF_HEADER - MF_TRAILER) / MF_RECORD)
		return bad(err, errlen, "entry count %zu does not fit the file",
			   (size_t)count);
	m = manifest_create();
	if (!m || entries_reserve(m, count ? count : 1) < 0 ||
	    index_reserve(m, count) < 0) {
		manifest_destroy(m);
		if (err && errlen)
			snprintf(err, errlen, "manifest: out of memory");
		errno = ENOMEM;
		return -1;
	}
	p += MF_HEADER;
	end = (const unsigned char *)buf + len - MF_TRAILER;
	/* The paths' total size, so they go into one block. Bounded by
	 * what the records say; the real checks come below. */
	{
		const unsigned char *q = p;
		size_t total = 0, prev = 0;

		for (uint64_t i = 0;
		     i < count && (size_t)(end - q) >= MF_RECORD; i++) {
			size_t sh = rd16(q + 2), su = rd16(q + 4);
			size_t step = MF_RECORD + su +
				      ((q[1] & MF_FLAG_HASH) ? MANIFEST_HASH_LEN
							     : 0);

			if (sh > prev || sh + su > MANIFEST_PATH_MAX ||
			    step > (size_t)(end - q))
				break;
			prev = sh + su;
			total += prev + 1;
			q += step;
		}
		if (total && !arena_alloc_min(m, 0, total)) {
			manifest_destroy(m);
			if (err && errlen)
				snprintf(err, errlen,
					 "manifest: out of memory");
			errno = ENOMEM;
			return -1;
		}
	}
	for (uint64_t i = 0; i < count; i++) {
		struct manifest_entry e;
		size_t shared, suffix;

		if ((size_t)(end - p) < MF_RECORD)
			goto truncated;
		memset(&e, 0, sizeof(e));
		e.type = p[0];
		if (p[1] & ~MF_FLAG_HASH) {
			bad(err, errlen, "entry %zu: unknown flags", (size_t)i);
			goto fail;
		}
		e.has_hash = p[1] & MF_FLAG_HASH;
		shared = rd16(p + 2);
		suffix = rd16(p + 4);
		e.mode = rd32(p + 6);
		e.size = rd64(p + 10);
		e.mtime_ns = (int64_t)rd64(p + 18);
		p += MF_RECORD;
		if (shared > pathlen || shared + suffix > MANIFEST_PATH_MAX) {
			bad(err, errlen, "entry %zu: path length out of range",
			    (size_t)i);
			goto fail;
		}
		if (e.size > (uint64_t)INT64_MAX ||
		    (e.type == MANIFEST_SYMLINK &&
		     e.size > MANIFEST_PATH_MAX)) {
			bad(err, errlen, "entry %zu: size out of range",
			    (size_t)i);
			goto fail;
		}
		if (e.has_hash) {
			if ((size_t)(end - p) < MANIFEST_HASH_LEN)
				goto truncated;
			memcpy(e.hash, p, MANIFEST_HASH_LEN);
			p += MANIFEST_HASH_LEN;
		}
		if ((size_t)(end - p) < suffix)
			goto truncated;
		memcpy(path + shared, p, suffix);
		p += suffix;
		pathlen = shared + suffix;
		path[pathlen] = '\0';
		if (add_raw(m, &e, path, pathlen) < 0) {
			if (errno == ENOMEM) {
				if (err && errlen)
					snprintf(err, errlen,
						 "manifest: out of memory");
				manifest_destroy(m);
				return -1;
			}
			bad(err, errlen,
			    "entry %zu: bad type, mode or path, or paths not "
			    "in order",
			    (size_t)i);
			goto fail;
		}
	}
	if (p != end) {
		bad(err, errlen, "%zu bytes of garbage after the entries",
		    (size_t)(end - p));
		goto fail;
	}
	*ret = m;
	return 0;
truncated:
	bad(err, errlen, "truncated after %zu entries", m->n);
fail:
	manifest_destroy(m);
	errno = EBADMSG;
	return -1;
}

int manifest_read(int fd, struct manifest **ret, char *err, size_t errlen)
{
	size_t cap = 1 << 16, len = 0;
	struct stat st;
	off_t pos;
	char *buf;
	int r, saved;

	/* A file is mapped (no copy); a pipe is read as it comes. */
	if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) &&
	    (pos = lseek(fd, 0, SEEK_CUR)) >= 0 && pos == 0 && st.st_size > 0 &&
	    (uint64_t)st.st_size <= MANIFEST_MAX_FILE) {
		void *map = mmap(NULL, (size_t)st.st_size, PROT_READ,
				 MAP_PRIVATE | MAP_POPULATE, fd, 0);

		if (map != MAP_FAILED) {
			r = manifest_parse(map, (size_t)st.st_size, ret, err,
					   errlen);
			saved = errno;
			munmap(map, (size_t)st.st_size);
			/* Like read(2) to EOF would have. */
			lseek(fd, 0, SEEK_END);
			errno = saved;
			return r;
		}
	}
	buf = malloc(cap);

	if (!buf) {
		if (err && errlen)
			snprintf(err, errlen, "manifest: out of memory");
		return -1;
	}
	for (;;) {
		ssize_t n;

		if (len == cap) {
			char *nb;

			if (cap > MANIFEST_MAX_FILE) {
				free(buf);
				if (err && errlen)
					snprintf(err, errlen,
						 "manifest: larger than %zu "
						 "bytes",
						 MANIFEST_MAX_FILE);
				errno = EFBIG;
				return -1;
			}
			nb = realloc(buf, cap * 2);
			if (!nb) {
				free(buf);
				if (err && errlen)
					snprintf(err, errlen,
						 "manifest: out of memory");
				errno = ENOMEM;
				return -1;
			}
			buf = nb;
			cap *= 2;
		}
		n = read(fd, buf + len, cap - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			saved = errno;
			free(buf);
			if (err && errlen)
				snprintf(err, errlen,
					 "manifest: cannot read: %s",
					 strerror(saved));
			errno = saved;
			return -1;
		}
		if (n == 0)
			break;
		len += (size_t)n;
	}
	r = manifest_parse(buf, len, ret, err, errlen);
	saved = errno;
	free(buf);
	errno = saved;
	return r;
}
