/* jsonbuf.c - fast compact JSON writer over cJSON trees (see jsonbuf.h). */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/base/jsonbuf.h"

#define JSONBUF_DEPTH_MAX 64 /* deeper trees are refused, not recursed */

/* Make room for MORE bytes and the NUL (the slow path of put()). */
static int grow(struct jsonbuf *b, size_t more)
{
	size_t want = b->len + more + 1;
	char *p;

	if (want <= b->cap)
		return 0;
	if (want < 2 * b->cap)
		want = 2 * b->cap;
	if (want < 4096)
		want = 4096;
	p = realloc(b->data, want);
	if (!p) {
		errno = ENOMEM;
		return -1;
	}
	b->data = p;
	b->cap = want;
	return 0;
}

static inline int reserve(struct jsonbuf *b, size_t more)
{
	return b->len + more + 1 <= b->cap ? 0 : grow(b, more);
}

static inline int put(struct jsonbuf *b, const char *s, size_t n)
{
	if (reserve(b, n) < 0)
		return -1;
	memcpy(b->data + b->len, s, n);
	b->len += n;
	return 0;
}

static inline int put_char(struct jsonbuf *b, char c)
{
	if (reserve(b, 1) < 0)
		return -1;
	b->data[b->len++] = c;
	return 0;
}

/* Digits of U, right-aligned ending at END; returns the first. */
static char *digits(char *end, unsigned long long u)
{
	do {
		*--end = (char)('0' + u % 10);
		u /= 10;
	} while (u);
	return end;
}

/* V with at most 6 decimals when that reads back exactly and is what
 * "%.15g" prints (no exponent, at most 15 digits: 1e-4 <= |v| < 1e9), so
 * 0.4 or 12.25 skip printf and strtod. 0 when it does not apply. */
static size_t short_decimal(char *tmp, size_t size, double v)
{
	static const double p10[] = { 1, 10, 100, 1e3, 1e4, 1e5, 1e6 };
	double a = fabs(v);

	if (!(a >= 1e-4 && a < 1e9))
		return 0;
	for (size_t k = 1; k < sizeof(p10) / sizeof(p10[0]); k++) {
		double x = a * p10[k];
		unsigned long long m, ip, fp;
		char *end = tmp + size, *p;

		if (x != floor(x) || x >= 1e15)
			continue;
		m = (unsigned long long)x;
		if ((double)m / p10[k] != a)
			continue;
		ip = m / (unsigned long long)p10[k];
		fp = m % (unsigned long long)p10[k];
		/* fp has k digits, leading zeros included; trailing ones
		 * (65.1230: 65.123 x 1000 was not exactly integral) go. */
		while (k > 1 && fp % 10 == 0) {
			fp /= 10;
			k--;
		}
		p = end;
		for (size_t i = 0; i < k; i++) {
			*--p = (char)('0' + fp % 10);
			fp /= 10;
		}
		*--p = '.';
		p = digits(p, ip);
		if (v < 0)
			*--p = '-';
		memmove(tmp, p, (size_t)(end - p));
		return (size_t)(end - p);
	}
	return 0;
}

static int put_number(struct jsonbuf *b, double v)
{
	char tmp[32];
	size_t n;

	if (!isfinite(v))
		return put(b, "null", 4);
	if (v == floor(v) && fabs(v) < 9007199254740992.0) {
		/* integral: digits by hand, no printf */
		long long i = (long long)v;
		unsigned long long u = i < 0 ? -(unsigned long long)i
					     : (unsigned long long)i;
		char *p = digits(tmp + sizeof(tmp), u);

		if (i < 0)
			*--p = '-';
		return put(b, p, (size_t)(tmp + sizeof(tmp) - p));
	}
	n = short_decimal(tmp, sizeof(tmp), v);
	if (n == 0) {
		n = (size_t)snprintf(tmp, sizeof(tmp), "%.15g", v);
		if (strtod(tmp, NULL) != v)
			n = (size_t)snprintf(tmp, sizeof(tmp), "%.17g", v);
	}
	return put(b, tmp, n);
}

/* Bytes a JSON string must escape: controls, '"' and '\\'. */
static const unsigned char must_escape[256] = {
	[0x00 ... 0x1f] = 1,
	['"'] = 1,
	['\\'] = 1,
};

static int put_string(struct jsonbuf *b, const char *s)
{
	static const char hex[] = "0123456789abcdef";
	const unsigned char *p = (const unsigned char *)(s ? s : "");
	const unsigned char *run = p;

	/* the common case: nothing to escape, one copy */
	while (!must_escape[*p])
		p++;
	if (!*p) {
		size_t n = (size_t)(p - run);

		if (reserve(b, n + 2) < 0)
			return -1;
		b->data[b->len++] = '"';
		memcpy(b->data + b->len, run, n);
		b->len += n;
		b->data[b->len++] = '"';
		return 0;
	}
	p = run;
	if (put_char(b, '"') < 0)
		return -1;
	for (; *p; p++) {
		char esc[6] = { '\\', 0, 0, 0, 0, 0 };
		size_t n = 2;

		if (!must_escape[*p])
			continue;
		if (put(b, (const char *)run, (size_t)(p - run)) < 0)
			return -1;
		switch (*p) {
		case '"':
			esc[1] = '"';
			break;
		case '\\':
			esc[1] = '\\';
			break;
		case '\b':
			esc[1] = 'b';
			break;
		case '\f':
			esc[1] = 'f';
			break;
		case '\n':
			esc[1] = 'n';
			break;
		case '\r':
			esc[1] = 'r';
			break;
		case '\t':
			esc[1] = 't';
			break;
		default:
			memcpy(esc + 1, "u00", 3);
			esc[4] = hex[*p >> 4];
			esc[5] = hex[*p & 15];
			n = 6;
		}
		if (put(b, esc, n) < 0)
			return -1;
		run = p + 1;
	}
	if (put(b, (const char *)run, (size_t)(p - run)) < 0)
		return -1;
	return put_char(b, '"');
}

static int put_tabs(struct jsonbuf *b, int n)
{
	while (n-- > 0)
		if (put_char(b, '\t') < 0)
			return -1;
	return 0;
}

/* ITEM at DEPTH (containers around it). PRETTY: cJSON_Print's layout (a
 * member per line, tab-indented, "key":<tab>value, array values on one
 * line after ", "), so a command's --json output reads as before. */
static int put_value(struct jsonbuf *b, const cJSON *item, const char *skip,
		     int depth, bool pretty)
{
	const cJSON *c;
	bool first = true;

	if (depth > JSONBUF_DEPTH_MAX) {
		errno = ELOOP;
		return -1;
	}
	switch (item->type & 0xff) {
	case cJSON_False:
		return put(b, "false", 5);
	case cJSON_True:
		return put(b, "true", 4);
	case cJSON_NULL:
		return put(b, "null", 4);
	case cJSON_Number:
		return put_number(b, item->valuedouble);
	case cJSON_String:
		return put_string(b, item->valuestring);
	case cJSON_Raw:
		return put(b, item->valuestring, strlen(item->valuestring));
	case cJSON_Array:
		if (put_char(b, '[') < 0)
			return -1;
		for (c = item->child; c; c = c->next) {
			if ((!first && put(b, ", ", pretty ? 2 : 1) < 0) ||
			    put_value(b, c, NULL, depth + 1, pretty) < 0)
				return -1;
			first = false;
		}
		return put_char(b, ']');
	case cJSON_Object:
		if (put_char(b, '{') < 0 || (pretty && put_char(b, '\n') < 0))
			return -1;
		for (c = item->child; c; c = c->next) {
			if (skip && c->string && !strcmp(c->string, skip))
				continue;
			if (!pretty) {
				if ((!first && put_char(b, ',') < 0) ||
				    put_string(b, c->string) < 0 ||
				    put_char(b, ':') < 0 ||
				    put_value(b, c, NULL, depth + 1, false) < 0)
					return -1;
			} else if (put_tabs(b, depth + 1) < 0 ||
				   put_string(b, c->string) < 0 ||
				   put(b, ":\t", 2) < 0 ||
				   put_value(b, c, NULL, depth + 1, true) < 0 ||
				   (c->next && put_char(b, ',') < 0) ||
				   put_char(b, '\n') < 0) {
				return -1;
			}
			first = false;
		}
		if (pretty && put_tabs(b, depth) < 0)
			return -1;
		return put_char(b, '}');
	default:
		return put(b, "null", 4);
	}
}

int jsonbuf_print(struct jsonbuf *b, const cJSON *item, const char *skip)
{
	b->len = 0;
	if (!item) {
		errno = EINVAL;
		return -1;
	}
	if (put_value(b, item, skip, 0, false) < 0 || reserve(b, 0) < 0)
		return -1;
	b->data[b->len] = '\0';
	return 0;
}

char *jsonbuf_pretty(const cJSON *item)
{
	struct jsonbuf b = { 0 };

	if (!item) {
		errno = EINVAL;
		return NULL;
	}
	if (put_value(&b, item, NULL, 0, true) < 0 || reserve(&b, 0) < 0) {
		jsonbuf_fini(&b);
		return NULL;
	}
	b.data[b.len] = '\0';
	return b.data;
}

char *jsonbuf_dup(const cJSON *item)
{
	struct jsonbuf b = { 0 };
	char *s;

	if (jsonbuf_print(&b, item, NULL) < 0) {
		jsonbuf_fini(&b);
		return NULL;
	}
	/* the buffer grows by doubling: give back what the text does not use */
	s = realloc(b.data, b.len + 1);
	return s ? s : b.data;
}

/* --- the packed form ---------------------------------------------------------- *
 *
 * One tag byte per value, then:
 *   PK_NULL, PK_FALSE, PK_TRUE           nothing
 *   PK_UINT, PK_NINT                     varint(|v|) (integral, |v| < 2^53)
 *   PK_DOUBLE                            8 bytes, the double's bits, LE
 *   PK_STRING                            varint(len) bytes
 *   PK_ARRAY                             varint(count) values
 *   PK_OBJECT                            varint(count) (key value)*
 * A key is varint(i): 1..n names the dictionary's KEYS[i-1], 0 is followed by
 * varint(len) bytes. Varints are LEB128. Non-finite numbers are packed as
 * null, as the JSON writer prints them. */
enum pk_tag {
	PK_NULL = 0,
	PK_FALSE,
	PK_TRUE,
	PK_UINT,
	PK_NINT,
	PK_DOUBLE,
	PK_STRING,
	PK_ARRAY,
	PK_OBJECT,
};

#define PK_INT_MAX 9007199254740992.0 /* 2^53: exact in a double */

static inline int put_varint(struct jsonbuf *b, uint64_t v)
{
	if (reserve(b, 10) < 0)
		return -1;
	while (v >= 0x80) {
		b->data[b->len++] = (char)(v | 0x80);
		v >>= 7;
	}
	b->data[b->len++] = (char)v;
	return 0;
}

static int pack_str(struct jsonbuf *b, const char *s)
{
	size_t n = strlen(s);

	return put_varint(b, n) < 0 ? -1 : put(b, s, n);
}

static inline uint32_t key_hash(const char *k)
{
	uint32_t h = 2166136261u;

	for (; *k; k++)
		h = (h ^ (unsigned char)*k) * 16777619u;
	return h;
}

int jsonbuf_dict_init(struct jsonbuf_dict *d, const char *const *keys, size_t n)
{
	const size_t nslots = sizeof(d->slot) / sizeof(d->slot[0]);

	if (n > JSONBUF_DICT_MAX) {
		errno = EINVAL;
		return -1;
	}
	memset(d->slot, 0, sizeof(d->slot));
	d->keys = keys;
	d->n = n;
	for (size_t i = 0; i < n; i++) {
		size_t at = key_hash(keys[i]) & (nslots - 1);

		while (d->slot[at])
			at = (at + 1) & (nslots - 1);
		d->slot[at] = (unsigned short)(i + 1);
	}
	return 0;
}

int jsonbuf_put_bytes(struct jsonbuf *b, const void *p, size_t n)
{
	if (put(b, p, n) < 0)
		return -1;
	b->data[b->len] = '\0';
	return 0;
}

static int pack_key(struct jsonbuf *b, const char *k,
		    const struct jsonbuf_dict *d)
{
	const size_t nslots = sizeof(d->slot) / sizeof(d->slot[0]);

	if (d && d->n) {
		size_t at = key_hash(k) & (nslots - 1);

		for (; d->slot[at]; at = (at + 1) & (nslots - 1))
			if (!strcmp(d->keys[d->slot[at] - 1], k))
				return put_varint(b, d->slot[at]);
	}
	return put_varint(b, 0) < 0 ? -1 : pack_str(b, k);
}

static int pack_number(struct jsonbuf *b, double v)
{
	uint64_t bits;

	if (!isfinite(v))
		return put_char(b, PK_NULL);
	if (v == floor(v) && fabs(v) < PK_INT_MAX && !(v == 0 && signbit(v))) {
		if (put_char(b, v < 0 ? PK_NINT : PK_UINT) < 0)
			return -1;
		return put_varint(b, (uint64_t)fabs(v));
	}
	if (put_char(b, PK_DOUBLE) < 0 || reserve(b, 8) < 0)
		return -1;
	memcpy(&bits, &v, 8);
	for (int i = 0; i < 8; i++)
		b->data[b->len++] = (char)(bits >> (8 * i));
	return 0;
}

/* --- writing the packed form without a tree ----------------------------------- */

int jsonbuf_pack_number(struct jsonbuf *b, double v)
{
	return pack_number(b, v);
}

int jsonbuf_pack_string(struct jsonbuf *b, const char *s)
{
	return put_char(b, PK_STRING) < 0 ? -1 : pack_str(b, s);
}

int jsonbuf_pack_key(struct jsonbuf *b, const char *key,
		     const struct jsonbuf_dict *dict)
{
	return pack_key(b, key, dict);
}

int jsonbuf_pack_open(struct jsonbuf *b, bool object, size_t *ret_at)
{
	/* the count's place: one byte, widened at close if need be */
	if (put_char(b, object ? PK_OBJECT : PK_ARRAY) < 0 ||
	    put_char(b, 0) < 0)
		return -1;
	*ret_at = b->len - 1;
	return 0;
}

int jsonbuf_pack_close(struct jsonbuf *b, size_t at, uint64_t count)
{
	unsigned char v[10];
	size_t n = 0;

	do {
		v[n++] = (unsigned char)((count & 0x7f) |
					 (count >= 0x80 ? 0x80 : 0));
		count >>= 7;
	} while (count);
	if (n > 1) {
		if (reserve(b, n - 1) < 0)
			return -1;
		memmove(b->data + at + n, b->data + at + 1, b->len - at - 1);
		b->len += n - 1;
	}
	memcpy(b->data + at, v, n);
	return 0;
}

static int pack_value(struct jsonbuf *b, const cJSON *item, const char *skip,
		      const struct jsonbuf_dict *d, int depth)
{
	const cJSON *c;
	uint64_t n = 0;

	if (depth > JSONBUF_DEPTH_MAX) {
		errno = ELOOP;
		return -1;
	}
	switch (item->type & 0xff) {
	case cJSON_False:
		return put_char(b, PK_FALSE);
	case cJSON_True:
		return put_char(b, PK_TRUE);
	case cJSON_Number:
		return pack_number(b, item->valuedouble);
	case cJSON_String:
		return put_char(b, PK_STRING) < 0
			   ? -1
			   : pack_str(b, item->valuestring);
	case cJSON_Array:
	case cJSON_Object:
		for (c = item->child; c; c = c->next)
			if (!skip || !c->string || strcmp(c->string, skip))
				n++;
		if (put_char(b, (item->type & 0xff) == cJSON_Array
				    ? PK_ARRAY
				    : PK_OBJECT) < 0 ||
		    put_varint(b, n) < 0)
			return -1;
		for (c = item->child; c; c = c->next) {
			if (skip && c->string && !strcmp(c->string, skip))
				continue;
			if ((item->type & 0xff) == cJSON_Object &&
			    pack_key(b, c->string ? c->string : "", d) < 0)
				return -1;
			if (pack_value(b, c, NULL, d, depth + 1) < 0)
				return -1;
		}
		return 0;
	case cJSON_Raw:
		errno = EINVAL;
		return -1;
	default:
		return put_char(b, PK_NULL);
	}
}

int jsonbuf_pack(struct jsonbuf *b, const cJSON *item, const char *skip,
		 const struct jsonbuf_dict *dict)
{
	size_t at = b->len;

	if (!item) {
		errno = EINVAL;
		return -1;
	}
	if (pack_value(b, item, skip, dict, 0) < 0 || reserve(b, 0) < 0) {
		b->len = at;
		return -1;
	}
	b->data[b->len] = '\0';
	return 0;
}

/* --- read-only trees in one block ---------------------------------------------- *
 *
 * A query unpacks dozens of stored values to read them once: a malloc and
 * a free per node was a third of its CPU. Their trees can instead live in
 * an arena of 64 KiB chunks, freed at once. The root array sits in the
 * arena's header, so the root alone names it. */

#define ARENA_CHUNK (64 * 1024)

struct arena_chunk {
	struct arena_chunk *next;
	size_t used, cap;
	max_align_t data[];
};

struct arena {
	struct arena_chunk *chunks; /* the one being filled first */
	cJSON root;
};

static void *arena_alloc(struct arena *a, size_t n)
{
	struct arena_chunk *c = a->chunks;
	void *p;

	n = (n + 15) & ~(size_t)15;
	if (!c || c->cap - c->used < n) {
		size_t cap = n > ARENA_CHUNK / 4 ? n : ARENA_CHUNK;

		c = malloc(sizeof(*c) + cap);
		if (!c)
			return NULL;
		c->cap = cap;
		c->used = 0;
		if (n > ARENA_CHUNK / 4 && a->chunks) {
			/* a big one goes behind: the current keeps filling */
			c->next = a->chunks->next;
			a->chunks->next = c;
		} else {
			c->next = a->chunks;
			a->chunks = c;
		}
	}
	p = (char *)c->data + c->used;
	c->used += n;
	return p;
}

static struct arena *arena_of(cJSON *root)
{
	return (struct arena *)((char *)root - offsetof(struct arena, root));
}

cJSON *jsonbuf_arena_array(void)
{
	struct arena *a = calloc(1, sizeof(*a));

	if (!a)
		return NULL;
	a->root.type = cJSON_Array;
	return &a->root;
}

void jsonbuf_arena_free(cJSON *root)
{
	struct arena *a;

	if (!root)
		return;
	a = arena_of(root);
	while (a->chunks) {
		struct arena_chunk *next = a->chunks->next;

		free(a->chunks);
		a->chunks = next;
	}
	free(a);
}

/* --- unpacking ---------------------------------------------------------------- */

struct unpacker {
	const unsigned char *p, *end;
	const struct jsonbuf_dict *d;
	struct arena *arena; /* NULL: cJSON's own allocation */
};

static int get_varint(struct unpacker *u, uint64_t *ret)
{
	uint64_t v = 0;

	for (int shift = 0; shift < 64; shift += 7) {
		if (u->p == u->end)
			return -1;
		v |= (uint64_t)(*u->p & 0x7f) << shift;
		if (!(*u->p++ & 0x80)) {
			*ret = v;
			return 0;
		}
	}
	return -1;
}

/* A string of the input as a NUL-terminated copy: in the arena, or in BUF
 * when it fits, else malloc'd (or NULL). */
static char *get_str(struct unpacker *u, char *buf, size_t buflen)
{
	uint64_t n;
	char *s;

	if (get_varint(u, &n) < 0 || n > (uint64_t)(u->end - u->p) ||
	    memchr(u->p, '\0', n))
		return NULL;
	s = u->arena     ? arena_alloc(u->arena, n + 1)
	    : n < buflen ? buf
			 : malloc(n + 1);
	if (!s)
		return NULL;
	memcpy(s, u->p, n);
	s[n] = '\0';
	u->p += n;
	return s;
}

/* A node of TYPE: from the arena (zeroed), else cJSON's. */
static cJSON *new_node(struct unpacker *u, int type)
{
	cJSON *c;

	if (!u->arena) {
		switch (type) {
		case cJSON_NULL:
			return cJSON_CreateNull();
		case cJSON_False:
			return cJSON_CreateFalse();
		case cJSON_True:
			return cJSON_CreateTrue();
		case cJSON_Array:
			return cJSON_CreateArray();
		default:
			return cJSON_CreateObject();
		}
	}
	c = arena_alloc(u->arena, sizeof(*c));
	if (c) {
		memset(c, 0, sizeof(*c));
		c->type = type;
	}
	return c;
}

static cJSON *new_number(struct unpacker *u, double v)
{
	cJSON *c;

	if (!u->arena)
		return cJSON_CreateNumber(v);
	c = new_node(u, cJSON_Number);
	if (c) {
		/* valueint as cJSON_CreateNumber sets it, and 0 for a NaN
		 * (a damaged value's bits; converting it is undefined) */
		c->valuedouble = v;
		c->valueint = isnan(v)               ? 0
			      : v >= INT_MAX         ? INT_MAX
			      : v <= (double)INT_MIN ? INT_MIN
						     : (int)v;
	}
	return c;
}

/* Append C to the container PARENT, under KEY in an object: KEY is the
 * dictionary's string when CONST_KEY (never copied: the dictionary
 * outlives every tree), else a copy (the arena's already). */
static void add_child(struct unpacker *u, cJSON *parent, cJSON *c,
		      const char *key, bool const_key)
{
	cJSON *first = parent->child;

	if (!u->arena) {
		if (!key)
			cJSON_AddItemToArray(parent, c);
		else if (const_key)
			cJSON_AddItemToObjectCS(parent, key, c);
		else
			cJSON_AddItemToObject(parent, key, c);
		return;
	}
	if (key) {
		c->string = (char *)key;
		c->type |= cJSON_StringIsConst;
	}
	/* cJSON's list: the first child's prev is the last one */
	if (!first) {
		parent->child = c;
		c->prev = c;
	} else {
		c->prev = first->prev;
		first->prev->next = c;
		first->prev = c;
	}
}

static cJSON *unpack_value(struct unpacker *u, int depth)
{
	cJSON *item = NULL, *c;
	uint64_t n, bits = 0;
	char sbuf[256], *s;
	double v;
	int tag;

	if (depth > JSONBUF_DEPTH_MAX || u->p == u->end)
		return NULL;
	tag = *u->p++;
	switch (tag) {
	case PK_NULL:
		return new_node(u, cJSON_NULL);
	case PK_FALSE:
		return new_node(u, cJSON_False);
	case PK_TRUE:
		return new_node(u, cJSON_True);
	case PK_UINT:
	case PK_NINT:
		if (get_varint(u, &n) < 0 || n > (uint64_t)PK_INT_MAX)
			return NULL;
		return new_number(u, tag == PK_NINT ? -(double)n : (double)n);
	case PK_DOUBLE:
		if (u->end - u->p < 8)
			return NULL;
		for (int i = 0; i < 8; i++)
			bits |= (uint64_t)u->p[i] << (8 * i);
		u->p += 8;
		memcpy(&v, &bits, 8);
		return new_number(u, v);
	case PK_STRING:
		s = get_str(u, sbuf, sizeof(sbuf));
		if (!s)
			return NULL;
		if (u->arena) {
			item = new_node(u, cJSON_String);
			if (item)
				item->valuestring = s;
			return item;
		}
		item = cJSON_CreateString(s);
		if (s != sbuf)
			free(s);
		return item;
	case PK_ARRAY:
	case PK_OBJECT:
		/* every value takes at least one byte: a count beyond the
		 * input is damage, not a reason to loop */
		if (get_varint(u, &n) < 0 || n > (uint64_t)(u->end - u->p))
			return NULL;
		item = new_node(u,
				tag == PK_ARRAY ? cJSON_Array : cJSON_Object);
		while (item && n--) {
			const char *key = NULL;
			uint64_t k = 0;

			s = NULL;
			if (tag == PK_OBJECT) {
				if (get_varint(u, &k) < 0 ||
				    k > (u->d ? u->d->n : 0))
					goto bad;
				if (k)
					key = u->d->keys[k - 1];
				else if (!(key = s = get_str(u, sbuf,
							     sizeof(sbuf))))
					goto bad;
			}
			c = unpack_value(u, depth + 1);
			if (!c) {
				if (s && s != sbuf && !u->arena)
					free(s);
				goto bad;
			}
			add_child(u, item, c, key, k || u->arena);
			if (s && s != sbuf && !u->arena)
				free(s);
		}
		return item;
	default:
		return NULL;
	}
bad:
	if (!u->arena)
		cJSON_Delete(item);
	return NULL;
}

cJSON *jsonbuf_unpack(const void *data, size_t len,
		      const struct jsonbuf_dict *dict)
{
	struct unpacker u = { data, NULL, dict, NULL };
	cJSON *item;

	if (!data) {
		errno = EINVAL;
		return NULL;
	}
	u.end = (const unsigned char *)data + len; /* not on NULL: undefined */
	item = unpack_value(&u, 0);
	if (item && u.p != u.end) {
		cJSON_Delete(item);
		item = NULL;
	}
	if (!item)
		errno = EINVAL;
	return item;
}

cJSON *jsonbuf_arena_unpack(cJSON *root, const void *data, size_t len,
			    const struct jsonbuf_dict *dict)
{
	struct unpacker u = { data, NULL, dict, NULL };
	cJSON *item;

	if (!root || !data) {
		errno = EINVAL;
		return NULL;
	}
	u.end = (const unsigned char *)data + len; /* not on NULL: undefined */
	u.arena = arena_of(root);
	item = unpack_value(&u, 0);
	if (!item || u.p != u.end) {
		/* what it took stays in the arena until it is freed */
		errno = EINVAL;
		return NULL;
	}
	add_child(&u, root, item, NULL, false);
	return item;
}

void jsonbuf_fini(struct jsonbuf *b)
{
	if (!b)
		return;
	free(b->data);
	b->data = NULL;
	b->len = b->cap = 0;
}
