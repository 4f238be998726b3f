/* jsonbuf.c - fast compact JSON writer over cJSON trees (see jsonbuf.h). */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/jsonbuf.h"

#define JSONBUF_DEPTH_MAX 64 /* deeper trees are refused, not recursed */

static int reserve(struct jsonbuf *b, size_t more)
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

static int put(struct jsonbuf *b, const char *s, size_t n)
{
	if (reserve(b, n) < 0)
		return -1;
	memcpy(b->data + b->len, s, n);
	b->len += n;
	return 0;
}

static int put_number(struct jsonbuf *b, double v)
{
	char tmp[32];
	int n;

	if (!isfinite(v))
		return put(b, "null", 4);
	if (v == floor(v) && fabs(v) < 9007199254740992.0) {
		/* integral: digits by hand, no printf */
		long long i = (long long)v;
		unsigned long long u = i < 0 ? -(unsigned long long)i
					     : (unsigned long long)i;
		char *p = tmp + sizeof(tmp);

		do {
			*--p = (char)('0' + u % 10);
			u /= 10;
		} while (u);
		if (i < 0)
			*--p = '-';
		return put(b, p, (size_t)(tmp + sizeof(tmp) - p));
	}
	n = snprintf(tmp, sizeof(tmp), "%.15g", v);
	if (strtod(tmp, NULL) != v)
		n = snprintf(tmp, sizeof(tmp), "%.17g", v);
	return put(b, tmp, (size_t)n);
}

static int put_string(struct jsonbuf *b, const char *s)
{
	static const char hex[] = "0123456789abcdef";
	const unsigned char *p = (const unsigned char *)(s ? s : "");
	const unsigned char *run = p;

	if (put(b, "\"", 1) < 0)
		return -1;
	for (; *p; p++) {
		char esc[6] = {'\\', 0, 0, 0, 0, 0};
		size_t n = 2;

		if (*p >= 0x20 && *p != '"' && *p != '\\')
			continue;
		if (put(b, (const char *)run, (size_t)(p - run)) < 0)
			return -1;
		switch (*p) {
		case '"': esc[1] = '"'; break;
		case '\\': esc[1] = '\\'; break;
		case '\b': esc[1] = 'b'; break;
		case '\f': esc[1] = 'f'; break;
		case '\n': esc[1] = 'n'; break;
		case '\r': esc[1] = 'r'; break;
		case '\t': esc[1] = 't'; break;
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
	return put(b, "\"", 1);
}

static int put_value(struct jsonbuf *b, const cJSON *item, const char *skip,
		     int depth)
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
		if (put(b, "[", 1) < 0)
			return -1;
		for (c = item->child; c; c = c->next) {
			if ((!first && put(b, ",", 1) < 0) ||
			    put_value(b, c, NULL, depth + 1) < 0)
				return -1;
			first = false;
		}
		return put(b, "]", 1);
	case cJSON_Object:
		if (put(b, "{", 1) < 0)
			return -1;
		for (c = item->child; c; c = c->next) {
			if (skip && c->string && !strcmp(c->string, skip))
				continue;
			if ((!first && put(b, ",", 1) < 0) ||
			    put_string(b, c->string) < 0 || put(b, ":", 1) < 0 ||
			    put_value(b, c, NULL, depth + 1) < 0)
				return -1;
			first = false;
		}
		return put(b, "}", 1);
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
	if (put_value(b, item, skip, 0) < 0 || reserve(b, 0) < 0)
		return -1;
	b->data[b->len] = '\0';
	return 0;
}

void jsonbuf_fini(struct jsonbuf *b)
{
	if (!b)
		return;
	free(b->data);
	b->data = NULL;
	b->len = b->cap = 0;
}
