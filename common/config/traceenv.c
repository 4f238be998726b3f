/* traceenv.c - IOSTAGE_TRACE_CLASSES and LD_PRELOAD for deep mode. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/config/joblayout.h"
#include "common/config/traceenv.h"

bool traceenv_wanted(const struct conf *conf, const struct profile *profile)
{
	return profile && (profile->trace || (conf && conf->trace));
}

struct classes {
	char *buf;
	size_t len, cap;
	size_t skipped;
};

/* Append "CLASS=PATH" unless the same entry is already there. */
static int add(struct classes *c, const char *cls, const char *path)
{
	char entry[CONF_PATH_MAX + 16];
	size_t n;
	const char *p;

	if (strchr(path, ':')) {
		c->skipped++;
		return 0;
	}
	n = (size_t)snprintf(entry, sizeof(entry), "%s=%s", cls, path);
	if (n >= sizeof(entry)) {
		errno = ENAMETOOLONG;
		return -1;
	}
	for (p = c->buf; p && (p = strstr(p, entry)); p += n)
		if ((p == c->buf || p[-1] == ':') &&
		    (p[n] == ':' || p[n] == '\0'))
			return 0;
	if (c->len + (c->len ? 1 : 0) + n + 1 > c->cap) {
		errno = ENAMETOOLONG;
		return -1;
	}
	if (c->len)
		c->buf[c->len++] = ':';
	memcpy(c->buf + c->len, entry, n + 1);
	c->len += n;
	return 0;
}

int traceenv_classes(const struct conf *conf, const struct profile *profile,
		     uint32_t jobid, char *buf, size_t buflen,
		     size_t *ret_skipped)
{
	struct joblayout_env *env = malloc(sizeof(*env));
	struct classes c = { .cap = buflen };
	int rc = -1;

	if (!conf || !profile || !buf || buflen == 0) {
		free(env);
		errno = EINVAL;
		return -1;
	}
	c.buf = malloc(buflen);
	if (!env || !c.buf)
		goto out;
	c.buf[0] = '\0';
	/* Staged paths first, then the PFS ones (fallback layout). */
	for (int fallback = 0; fallback <= 1; fallback++) {
		if (joblayout_env(conf, profile, jobid, fallback, env) < 0)
			goto out;
		for (size_t i = 0; i < env->n; i++) {
			const char *name = env->vars[i].name;
			const char *cls = strncmp(name, "IOSTAGE_DATA", 12) == 0
					      ? "dataset"
					  : strncmp(name, "IOSTAGE_OUTPUT",
						    14) == 0
					      ? "output"
					      : NULL;

			if (cls && add(&c, cls, env->vars[i].value) < 0)
				goto out;
		}
	}
	/* An observed job (profile_observe): its PFS reads are the dataset
	 * class, and the shim notes which tree under it they hit. */
	if (profile->observe && conf->pfs_path[0] &&
	    add(&c, "pfs", conf->pfs_path) < 0)
		goto out;
	memcpy(buf, c.buf, c.len + 1);
	if (ret_skipped)
		*ret_skipped = c.skipped;
	rc = 0;
out:
	free(env);
	free(c.buf);
	return rc;
}

/* Does the LD_PRELOAD value OLD already name LIB as one of its entries? */
static bool preloads(const char *old, const char *lib)
{
	size_t n = strlen(lib);

	for (const char *p = old; (p = strstr(p, lib)); p += n)
		if ((p == old || p[-1] == ':' || p[-1] == ' ') &&
		    (p[n] == '\0' || p[n] == ':' || p[n] == ' '))
			return true;
	return false;
}

int traceenv_preload(const char *lib, const char *old, char *buf, size_t buflen)
{
	bool keep, append;
	size_t need;

	if (!lib || !*lib || strpbrk(lib, ": \t") || !buf) {
		errno = EINVAL;
		return -1;
	}
	keep = old && *old && preloads(old, lib);
	append = old && *old && !keep;
	need = keep ? strlen(old) + 1
		    : strlen(lib) + (append ? 1 + strlen(old) : 0) + 1;
	if (need > buflen) {
		errno = ENAMETOOLONG;
		return -1;
	}
	if (keep)
		snprintf(buf, buflen, "%s", old);
	else if (append)
		snprintf(buf, buflen, "%s:%s", lib, old);
	else
		snprintf(buf, buflen, "%s", lib);
	return 0;
}
