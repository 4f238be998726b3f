/* jsonbuf.h - compact JSON text from a cJSON tree, fast, into a reusable
 * buffer.
 *
 * cJSON_PrintUnformatted prints every number with printf and checks it
 * back with sscanf, and grows its buffer from 256 bytes per call; filing
 * a job prints a few hundred numbers, and at a million jobs that was most
 * of the ingest time (bench/history.c). This writer prints integral
 * numbers with integer code, others with the shortest "%.15g"/"%.17g"
 * that reads back exactly, and keeps its buffer between calls. Output is
 * what cJSON_PrintUnformatted gives, except that non-finite numbers are
 * written as null either way.
 */
#ifndef IOSTAGE_DAEMON_JSONBUF_H
#define IOSTAGE_DAEMON_JSONBUF_H

#include <stdbool.h>
#include <stddef.h>

#include <cJSON.h>

struct jsonbuf {
	char *data;  /* NUL-terminated text of the last write */
	size_t len;
	size_t cap;
};

/* Replace the buffer's text with ITEM as compact JSON. When ITEM is an
 * object, its top-level member SKIP (may be NULL) is left out. Returns 0,
 * or -1 with errno ENOMEM (the buffer then holds no valid text). */
int jsonbuf_print(struct jsonbuf *b, const cJSON *item, const char *skip);

/* As jsonbuf_print, but after the text already in the buffer (which may
 * end in a NUL byte of the caller's). On failure the buffer is as it
 * was. */
int jsonbuf_append(struct jsonbuf *b, const cJSON *item, const char *skip);

/* Replace the buffer's contents with ITEM in a packed binary form (see
 * jsonbuf.c): numbers as varints or 8-byte doubles, object keys found in
 * KEYS[0..NKEYS) as their index. KEYS is part of the stored format: only
 * ever append to it. jsonbuf_unpack gives back a tree equal to ITEM
 * (cJSON_Compare), with non-finite numbers as null. 0, or -1 with errno
 * (ENOMEM, EINVAL for a raw item, ELOOP too deep). */
int jsonbuf_pack(struct jsonbuf *b, const cJSON *item,
		 const char *const *keys, size_t nkeys);

/* The tree packed in DATA[0..LEN) with the same KEYS (caller deletes),
 * or NULL with errno EINVAL (damaged or truncated input) or ENOMEM. */
cJSON *jsonbuf_unpack(const void *data, size_t len, const char *const *keys,
		      size_t nkeys);

/* Free the buffer (the struct itself is the caller's). NULL ok. */
void jsonbuf_fini(struct jsonbuf *b);

#endif /* IOSTAGE_DAEMON_JSONBUF_H */
