/* outfiles.c - distinct output paths per job and their writers. */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "common/telemetry/outfiles.h"

struct ofile {
	char *path;  /* NULL: free slot */
	pid_t pid;   /* the first writer */
	bool shared; /* another pid wrote it too */
	uint64_t written;
};

#define OUTFILES_CAP_MIN 64

struct outfiles {
	size_t max, n, cap; /* cap: a power of two, grows to keep n <= cap/2 */
	uint64_t dropped;
	struct ofile *slots;
};

static uint64_t hash(const char *s)
{
	uint64_t h = 1469598103934665603ULL; /* FNV-1a */

	for (; *s; s++) {
		h ^= (unsigned char)*s;
		h *= 1099511628211ULL;
	}
	return h;
}

struct outfiles *outfiles_create(size_t max)
{
	struct outfiles *t;
	size_t cap = OUTFILES_CAP_MIN;

	if (max < 1 || max > (1u << 24)) {
		errno = EINVAL;
		return NULL;
	}
	t = calloc(1, sizeof(*t));
	if (!t)
		return NULL;
	t->slots = calloc(cap, sizeof(*t->slots));
	if (!t->slots) {
		free(t);
		return NULL;
	}
	t->max = max;
	t->cap = cap;
	return t;
}

void outfiles_destroy(struct outfiles *t)
{
	if (!t)
		return;
	for (size_t i = 0; i < t->cap; i++)
		free(t->slots[i].path);
	free(t->slots);
	free(t);
}

/* Double the slots (the table starts small: most jobs write few files). */
static int grow(struct outfiles *t)
{
	size_t cap = t->cap * 2;
	struct ofile *slots = calloc(cap, sizeof(*slots));

	if (!slots)
		return -1;
	for (size_t i = 0; i < t->cap; i++) {
		size_t j;

		if (!t->slots[i].path)
			continue;
		for (j = hash(t->slots[i].path) & (cap - 1); slots[j].path;
		     j = (j + 1) & (cap - 1))
			;
		slots[j] = t->slots[i];
	}
	free(t->slots);
	t->slots = slots;
	t->cap = cap;
	return 0;
}

int outfiles_add(struct outfiles *t, const char *path, pid_t pid,
		 uint64_t written)
{
	size_t i;
	char *copy;

	if (!t || !path || path[0] != '/') {
		errno = EINVAL;
		return -1;
	}
	/* Linear probing; at most half full, so a free slot ends the scan. */
	for (i = hash(path) & (t->cap - 1); t->slots[i].path;
	     i = (i + 1) & (t->cap - 1)) {
		struct ofile *f = &t->slots[i];

		if (strcmp(f->path, path))
			continue;
		if (f->pid != pid)
			f->shared = true;
		f->written += written;
		return 0;
	}
	if (t->n >= t->max) {
		t->dropped++;
		return 1;
	}
	if (2 * (t->n + 1) > t->cap) {
		if (grow(t) < 0)
			return -1;
		/* The free slot for PATH moved. */
		for (i = hash(path) & (t->cap - 1); t->slots[i].path;
		     i = (i + 1) & (t->cap - 1))
			;
	}
	copy = strdup(path);
	if (!copy)
		return -1;
	t->slots[i] = (struct ofile){ .path = copy,
				      .pid = pid,
				      .written = written };
	t->n++;
	return 0;
}

size_t outfiles_size(const struct outfiles *t)
{
	return t ? t->n : 0;
}

uint64_t outfiles_dropped(const struct outfiles *t)
{
	return t ? t->dropped : 0;
}

int outfiles_under(const char *path, const char *prefix)
{
	size_t n;

	if (!path || !prefix || !prefix[0])
		return 0;
	n = strlen(prefix);
	if (n == 1 && prefix[0] == '/')
		return path[0] == '/';
	while (n > 1 && prefix[n - 1] == '/')
		n--;
	return !strncmp(path, prefix, n) && (path[n] == '\0' || path[n] == '/');
}

void outfiles_count(const struct outfiles *t, const char *const *prefixes,
		    size_t nout, struct outfiles_count *ret)
{
	memset(ret, 0, (nout + 1) * sizeof(*ret));
	if (!t)
		return;
	for (size_t i = 0; i < t->cap; i++) {
		const struct ofile *f = &t->slots[i];
		size_t o;

		if (!f->path)
			continue;
		for (o = 0; o < nout; o++)
			if ((prefixes &&
			     outfiles_under(f->path, prefixes[2 * o])) ||
			    (prefixes &&
			     outfiles_under(f->path, prefixes[2 * o + 1])))
				break;
		if (f->shared)
			ret[o].shared++;
		else
			ret[o].fpp++;
		ret[o].written += f->written;
	}
}
