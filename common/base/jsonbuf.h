/* jsonbuf.h - JSON text from a cJSON tree, fast and exact, into a
 * reusable buffer; and a packed binary form of a tree.
 *
 * cJSON_PrintUnformatted prints every number with printf and checks it
 * back with sscanf, and grows its buffer from 256 bytes per call; filing
 * a job prints a few hundred numbers, and at a million jobs that was most
 * of the ingest time (bench/history.c). This writer prints integral
 * numbers with integer code, others with the shortest "%.15g"/"%.17g"
 * that reads back exactly, and keeps its buffer between calls. Output is
 * what cJSON_PrintUnformatted gives, with two differences: non-finite
 * numbers are null, and a number whose 15 digits read back as a
 * neighbouring double (cJSON accepts those within an epsilon, so
 * 0.0015769999999999998 came out as 0.001577) gets its 17: every number
 * iostage writes (requests, records, replies, state files) reads back as
 * the same double, so a record shows the same figures wherever it is
 * read.
 */
#ifndef IOSTAGE_JSONBUF_H
#define IOSTAGE_JSONBUF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cJSON.h>

struct jsonbuf {
	char *data; /* NUL-terminated text of the last write */
	size_t len;
	size_t cap;
};

/* Replace the buffer's text with ITEM as compact JSON. When ITEM is an
 * object, its top-level member SKIP (may be NULL) is left out. Returns 0,
 * or -1 with errno ENOMEM (the buffer then holds no valid text). */
int jsonbuf_print(struct jsonbuf *b, const cJSON *item, const char *skip);

/* ITEM as compact JSON in a new string (caller frees): what
 * cJSON_PrintUnformatted gives, at a fraction of its cost. NULL with errno
 * (ENOMEM). */
char *jsonbuf_dup(const cJSON *item);

/* ITEM laid out as cJSON_Print lays it out (commands' --json output), in
 * a new string (caller frees); numbers as jsonbuf_print writes them. NULL
 * with errno. */
char *jsonbuf_pretty(const cJSON *item);

/* A key dictionary for the packed form: KEYS[0..N) (at most
 * JSONBUF_DICT_MAX), looked up by hash. Initialize once with
 * jsonbuf_dict_init before packing; then read-only (threads may share).
 * Trees unpacked with it point at its KEYS: they must outlive them (the
 * dictionaries are static arrays). */
#define JSONBUF_DICT_MAX 1024
struct jsonbuf_dict {
	const char *const *keys;
	size_t n;
	unsigned short slot[2 * JSONBUF_DICT_MAX];
};

/* Fill D's hash for KEYS[0..N). 0, or -1 with errno EINVAL (N too
 * large). */
int jsonbuf_dict_init(struct jsonbuf_dict *d, const char *const *keys,
		      size_t n);

/* Append N bytes to the buffer. 0, or -1 with errno ENOMEM. */
int jsonbuf_put_bytes(struct jsonbuf *b, const void *p, size_t n);

/* Append ITEM in a packed binary form (see jsonbuf.c) to the buffer:
 * numbers as varints or 8-byte doubles, object keys found in DICT as
 * their index (DICT is part of the stored format: only ever append to
 * its keys). When ITEM is an object, its top-level member SKIP (may be
 * NULL) is left out. jsonbuf_unpack gives back a tree equal to ITEM
 * (cJSON_Compare), with non-finite numbers as null. 0, or -1 with errno
 * (ENOMEM, EINVAL for a raw item, ELOOP too deep); on failure the buffer
 * is as it was. */
int jsonbuf_pack(struct jsonbuf *b, const cJSON *item, const char *skip,
		 const struct jsonbuf_dict *dict);

/* The packed form written value by value, without a tree: the same
 * bytes jsonbuf_pack gives for the tree those calls describe. A number
 * or string value; an object member's key (before its value); an array
 * or object opened (*RET_AT: where its count goes) and closed with the
 * number of values or members written in it. 0, or -1 with errno ENOMEM
 * (the buffer then holds a part: the caller starts over). */
int jsonbuf_pack_number(struct jsonbuf *b, double v);
int jsonbuf_pack_string(struct jsonbuf *b, const char *s);
int jsonbuf_pack_key(struct jsonbuf *b, const char *key,
		     const struct jsonbuf_dict *dict);
int jsonbuf_pack_open(struct jsonbuf *b, bool object, size_t *ret_at);
int jsonbuf_pack_close(struct jsonbuf *b, size_t at, uint64_t count);

/* The tree packed in DATA[0..LEN) with the same DICT (caller deletes),
 * or NULL with errno EINVAL (damaged or truncated input, or out of
 * memory). */
cJSON *jsonbuf_unpack(const void *data, size_t len,
		      const struct jsonbuf_dict *dict);

/* Read-only trees in one arena, for values read once and dropped
 * together (a query's stored facts): jsonbuf_arena_array gives an empty
 * array, the arena's root (NULL on ENOMEM); jsonbuf_arena_unpack unpacks
 * DATA[0..LEN) as jsonbuf_unpack does, into the arena, and appends it to
 * ROOT (the item; NULL with errno EINVAL when damaged or out of memory,
 * as jsonbuf_unpack); jsonbuf_arena_free frees ROOT and every
 * tree in it (NULL ok). Read these trees with cJSON's getters, detach
 * items to leave them out, but never cJSON_Delete or modify any of it. */
cJSON *jsonbuf_arena_array(void);
cJSON *jsonbuf_arena_unpack(cJSON *root, const void *data, size_t len,
			    const struct jsonbuf_dict *dict);
void jsonbuf_arena_free(cJSON *root);

/* Free the buffer (the struct itself is the caller's). NULL ok. */
void jsonbuf_fini(struct jsonbuf *b);

#endif /* IOSTAGE_JSONBUF_H */
