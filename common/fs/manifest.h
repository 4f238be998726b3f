/* manifest.h - what a staged copy holds: one entry per file, dir, symlink.
 *
 * A manifest is written next to every cache version (TIER/cache/K.vN/
 * manifest) by the worker that built it, and read back by the next worker
 * to tell whether the source changed (`--check`) and which files it can
 * hard-link from the previous copy instead of copying (`--previous`).
 *
 * In memory: an array of entries sorted by path (strcmp order of the
 * relative paths; the top of the dataset itself is the path ""), the paths
 * in an arena, and an open-addressing hash index for manifest_find. About
 * 56 bytes + path length + 1 per entry.
 *
 * On disk (all integers little-endian):
 *
 *   header   "IOSTMANF" | u32 version (1) | u32 flags (0) | u64 count
 *   entries  count times:
 *            u8 type | u8 flags (bit 0: hash present) | u16 shared prefix
 *            with the previous path | u16 suffix length | u32 mode (07777)
 *            | u64 size | i64 mtime (ns) | [16-byte hash] | suffix bytes
 *   trailer  16 bytes: XXH3-128 (canonical, big-endian) of all the above
 *
 * Paths are front-coded (sorted paths share long prefixes), so a manifest
 * of 100,000 files is a few MB. Everything read is checked: magic, version,
 * checksum, bounds, strictly increasing paths, well-formed relative paths,
 * types and modes; anything else is refused with a message, never trusted.
 *
 * Not thread-safe for writers; a manifest nobody adds to may be read by
 * any number of threads (manifest_find, manifest_get).
 */
#ifndef IOSTAGE_MANIFEST_H
#define IOSTAGE_MANIFEST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define MANIFEST_PATH_MAX 4095              /* bytes of a relative path */
#define MANIFEST_MAX_ENTRIES (32u << 20)    /* ~33.5 million */
#define MANIFEST_MAX_FILE ((size_t)2 << 30) /* bytes of an on-disk manifest */
#define MANIFEST_HASH_LEN 16                /* xxh3-128 */
#define MANIFEST_VERSION 1

enum manifest_type {
	MANIFEST_FILE = 1,
	MANIFEST_DIR = 2,
	MANIFEST_SYMLINK = 3,
};

/* How two entries are compared: STAT = type, size, mtime, mode (a dir's
 * size is not compared); CHECKSUM = also the content hash, and an entry
 * without one never matches. */
enum manifest_verify {
	MANIFEST_VERIFY_STAT = 0,
	MANIFEST_VERIFY_CHECKSUM = 1,
};

/* What to do with an entry of the new manifest given the old one. */
enum manifest_decision {
	MANIFEST_COPY = 0, /* added or changed, or not a file: make it anew */
	MANIFEST_LINK = 1, /* an unchanged file: hard-link the previous copy */
};

struct manifest_entry {
	const char *path;  /* relative, NUL-terminated; "" = the top */
	uint64_t size;     /* bytes; a symlink: its target's length; dir: 0 */
	int64_t mtime_ns;  /* ns since the epoch */
	uint32_t mode;     /* permission bits only (07777) */
	uint16_t path_len; /* strlen(path) */
	uint8_t type;      /* enum manifest_type */
	uint8_t has_hash;  /* hash is valid */
	uint8_t hash[MANIFEST_HASH_LEN]; /* xxh3-128 of the contents (a
					  * symlink: of its target), canonical
					  * big-endian bytes */
};

struct manifest_diff {
	uint64_t added;   /* in the new manifest only */
	uint64_t removed; /* in the old one only */
	uint64_t changed; /* in both, different */
	uint64_t same;    /* in both, equal */
};

struct manifest;

/* An empty manifest, or NULL with errno (ENOMEM). Free with
 * manifest_destroy. */
struct manifest *manifest_create(void);

/* Free M and everything it holds. NULL is a no-op. */
void manifest_destroy(struct manifest *m);

/* Append a copy of E (its path is copied). Entries must come in strictly
 * increasing strcmp order of their paths, "" only first; the path must be
 * relative and clean (no leading or trailing '/', no "//", no "." or ".."
 * component), at most MANIFEST_PATH_MAX bytes; mode only 07777 bits; type
 * valid. Returns 0, or -1 with errno (EINVAL: a rule above; E2BIG: more than
 * MANIFEST_MAX_ENTRIES; ENOMEM); M is unchanged on failure. */
int manifest_add(struct manifest *m, const struct manifest_entry *e);

/* The union of MS[0..N) (NULL items skipped) into a new *ret: every path
 * any of them lists, once, with the entry of the first (lowest index)
 * that lists it. 0, or -1 with errno (ENOMEM, E2BIG; EINVAL for N over
 * MANIFEST_UNION_MAX); *ret untouched on failure. */
#define MANIFEST_UNION_MAX 256
int manifest_union(const struct manifest *const *ms, size_t n,
		   struct manifest **ret);

/* Number of entries. M must not be NULL. */
size_t manifest_count(const struct manifest *m);

/* Entry I (< manifest_count), in path order. Valid until M is changed or
 * destroyed. */
const struct manifest_entry *manifest_get(const struct manifest *m, size_t i);

/* The entry with PATH (LEN bytes, not necessarily NUL-terminated), or
 * NULL. O(1) on average; safe from several threads at once. */
const struct manifest_entry *manifest_find(const struct manifest *m,
					   const char *path, size_t len);

/* Index of E (an entry of M, from manifest_get/manifest_find). */
size_t manifest_index(const struct manifest *m, const struct manifest_entry *e);

/* Do A and B describe the same thing under V? (Paths are not compared.) */
bool manifest_entry_same(const struct manifest_entry *a,
			 const struct manifest_entry *b,
			 enum manifest_verify v);

/* Compare CUR (the new state) with OLD. Fills *ret with the counts and, when
 * DECISIONS is not NULL, DECISIONS[i] for every entry i of CUR: LINK for a
 * regular file equal in both, COPY for everything else. Both sorted, so
 * this is one merge pass. Returns 0 (it cannot fail given valid
 * manifests), or -1 with EINVAL for NULL arguments. */
int manifest_compare(const struct manifest *old, const struct manifest *cur,
		     enum manifest_verify v, struct manifest_diff *ret,
		     uint8_t *decisions);

/* Write M to FD (a file or a pipe; written from its current position with
 * write(2), not synced). Returns 0, or -1 with errno (from write, or
 * ENOMEM). */
int manifest_write(const struct manifest *m, int fd);

/* Read a manifest from FD until EOF (at most MANIFEST_MAX_FILE bytes).
 * Returns 0 with *ret set (the caller's, free with manifest_destroy), or
 * -1 with errno (EIO for read errors keeps read's errno; EBADMSG for
 * anything malformed; EFBIG for too large; ENOMEM) and a one-line reason in
 * ERR, e.g. "manifest: checksum mismatch", "manifest: entry 12: paths not
 * in order". *ret is untouched on failure. */
int manifest_read(int fd, struct manifest **ret, char *err, size_t errlen);

/* Parse a manifest from the LEN bytes at BUF (what manifest_read reads).
 * Same returns as manifest_read. */
int manifest_parse(const void *buf, size_t len, struct manifest **ret,
		   char *err, size_t errlen);

#endif /* IOSTAGE_MANIFEST_H */
