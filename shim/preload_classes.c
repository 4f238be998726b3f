/* preload_classes.c - dataset, output or other: the class of a path.
 *
 * The plugin (spank/trace.c) tells the shim which trees are which in
 * IOSTAGE_TRACE_CLASSES, entries separated by ':':
 *     dataset=/local/nvme/iostage/jobs/42/data/imagenet:dataset=/pfs/imagenet
 *     :output=/local/nvme/iostage/jobs/42/out/ckpt:output=/pfs/u/ckpt
 * A path belongs to the longest prefix that contains it (whole components
 * only: /pfs/a does not contain /pfs/ab). "pfs=PATH" (an observed job's
 * PFS, common/config/traceenv.h) is the dataset class too, and the files read
 * under it are noted (preload_observe.c). Anything malformed disables the
 * shim: a trace with wrong classes would mislead more than no trace.
 */
#define _GNU_SOURCE
#include <stdatomic.h>
#include <string.h>
#include <unistd.h>

#include "shim/preload.h"

#define CLASSES_ARENA (16 * 1024)

struct prefix {
	const char *path;
	size_t len;
	enum shim_class cls;
	bool observed; /* "pfs=": reads under it are observed */
};

static struct prefix prefixes[SHIM_MAX_PREFIXES];
static size_t nprefixes;
static char prefix_arena[CLASSES_ARENA];

static char cwd[4096];
/* The normalized path being classified: per thread (the caller holds the
 * thread's reentrancy guard, so a signal handler never reuses it), in
 * static TLS rather than on a stack that may be a small sigaltstack. */
static __thread char abs_buf[4096] __attribute__((tls_model("initial-exec")));
static atomic_bool cwd_valid;
static bool observing; /* a "pfs=" prefix was given */

static const char *const class_names[] = {
	[SHIM_CLASS_DATASET] = "dataset",
	[SHIM_CLASS_OUTPUT] = "output",
	[SHIM_CLASS_OTHER] = "other",
};

/* Append the components of IN to the normalized absolute path OUT (length
 * *N, size OUTLEN): empty and "." components dropped, ".." removes the last
 * one (never above "/"). 0, or -1 if it does not fit. */
static int append_normalized(char *out, size_t outlen, size_t *n,
			     const char *in)
{
	const char *p = in;

	while (*p) {
		const char *s;
		size_t len;

		while (*p == '/')
			p++;
		s = p;
		while (*p && *p != '/')
			p++;
		len = (size_t)(p - s);
		if (len == 0 || (len == 1 && s[0] == '.'))
			continue;
		if (len == 2 && s[0] == '.' && s[1] == '.') {
			while (*n > 0 && out[*n - 1] != '/')
				(*n)--;
			if (*n > 0)
				(*n)--; /* the '/' before the dropped one */
			continue;
		}
		if (*n + 1 + len + 1 > outlen)
			return -1;
		out[(*n)++] = '/';
		memcpy(out + *n, s, len);
		*n += len;
	}
	return 0;
}

/* OUT = normalize(BASE + "/" + PATH) (BASE may be NULL). 0 or -1. */
static int normalize(const char *base, const char *path, char *out,
		     size_t outlen)
{
	size_t n = 0;

	if ((base && append_normalized(out, outlen, &n, base) < 0) ||
	    append_normalized(out, outlen, &n, path) < 0)
		return -1;
	if (n == 0)
		out[n++] = '/';
	out[n] = '\0';
	return 0;
}

int shim_classes_init(const char *spec, const char **ret_reason)
{
	size_t used = 0;
	const char *p = spec;

	nprefixes = 0;
	observing = false;
	if (!spec || !*spec)
		return 0;
	while (*p) {
		const char *end = strchr(p, ':'), *eq;
		size_t len = end ? (size_t)(end - p) : strlen(p);
		enum shim_class cls = SHIM_CLASS_OTHER;
		bool observed = false;
		char raw[4096];

		if (len == 0)
			goto next; /* "a::b" or a trailing ':' */
		eq = memchr(p, '=', len);
		if (!eq) {
			*ret_reason = "IOSTAGE_TRACE_CLASSES: an entry is not "
				      "CLASS=PATH";
			return -1;
		}
		for (unsigned c = 0; c < SHIM_CLASS_OTHER; c++)
			if ((size_t)(eq - p) == strlen(class_names[c]) &&
			    memcmp(p, class_names[c], (size_t)(eq - p)) == 0)
				cls = (enum shim_class)c;
		if (eq - p == 3 && memcmp(p, "pfs", 3) == 0) {
			cls = SHIM_CLASS_DATASET;
			observed = true;
		}
		if (cls == SHIM_CLASS_OTHER) {
			*ret_reason = "IOSTAGE_TRACE_CLASSES: unknown class "
				      "(known: dataset, output, pfs)";
			return -1;
		}
		len -= (size_t)(eq + 1 - p);
		if (len == 0 || eq[1] != '/' || len >= sizeof(raw)) {
			*ret_reason = "IOSTAGE_TRACE_CLASSES: a path is not "
				      "absolute or too long";
			return -1;
		}
		if (nprefixes == SHIM_MAX_PREFIXES) {
			*ret_reason = "IOSTAGE_TRACE_CLASSES: too many entries";
			return -1;
		}
		memcpy(raw, eq + 1, len);
		raw[len] = '\0';
		if (normalize(NULL, raw, prefix_arena + used,
			      sizeof(prefix_arena) - used) < 0) {
			*ret_reason = "IOSTAGE_TRACE_CLASSES: too long";
			return -1;
		}
		prefixes[nprefixes].path = prefix_arena + used;
		prefixes[nprefixes].len = strlen(prefix_arena + used);
		prefixes[nprefixes].cls = cls;
		prefixes[nprefixes].observed = observed;
		observing |= observed;
		used += prefixes[nprefixes].len + 1;
		nprefixes++;
next:
		if (!end)
			break;
		p = end + 1;
	}
	return 0;
}

void shim_classes_cwd_changed(void)
{
	atomic_store(&cwd_valid, false);
}

static bool contains(const struct prefix *pre, const char *path)
{
	if (pre->len == 1) /* "/" */
		return true;
	return strncmp(path, pre->path, pre->len) == 0 &&
	       (path[pre->len] == '/' || path[pre->len] == '\0');
}

/* Is the absolute PATH already in normal form (no "//", no "." or ".."
 * component, no trailing '/')? Then it can be matched as it is, which
 * saves copying it on every open (bench/shim.sh: most of the shim's cost
 * per open was that copy). */
static bool is_normal(const char *path)
{
	for (const char *p = path; (p = strchr(p, '/')); p++) {
		if (p[1] == '/' || p[1] == '\0')
			return p == path && p[1] == '\0'; /* "/" itself */
		if (p[1] == '.' &&
		    (p[2] == '/' || p[2] == '\0' ||
		     (p[2] == '.' && (p[3] == '/' || p[3] == '\0'))))
			return false;
	}
	return true;
}

/* The longest prefix that contains PATH as it is spelt, or NULL. */
static const struct prefix *longest_prefix(const char *path)
{
	const struct prefix *best = NULL;

	for (size_t i = 0; i < nprefixes; i++)
		if (contains(&prefixes[i], path) &&
		    (!best || prefixes[i].len > best->len))
			best = &prefixes[i];
	return best;
}

/* Is REST, the part of a path after a prefix that contains it ("" or
 * "/..."), surely in normal form? Conservative: any "/." (a dot file too),
 * "//" or trailing '/' says no, and the caller normalizes. One pass with
 * no branch per character: this runs on every open under a dataset. */
static bool rest_is_normal(const char *rest)
{
	bool odd = false;
	size_t i;

	for (i = 0; rest[i]; i++)
		odd |= (rest[i] == '/') &
		       ((rest[i + 1] == '/') | (rest[i + 1] == '.') |
			(rest[i + 1] == '\0'));
	return !odd;
}

enum shim_class shim_classify(const char *path, bool *ret_ckpt,
			      const char **ret_abs)
{
	const struct prefix *best = NULL;
	const char *abs = path;

	*ret_ckpt = false;
	*ret_abs = NULL;
	if (nprefixes == 0) {
		/* No classes given: an absolute path as spelt is enough
		 * for shim_path_pseudo. */
		if (path[0] == '/')
			*ret_abs = path;
		return SHIM_CLASS_OTHER;
	}
	/* The common case first: an absolute path under a prefix, normal
	 * after it (the prefix itself is normal). Then it is in normal form
	 * and the prefix found is the one its normal form has. Otherwise,
	 * if the path is absolute and normal all the same (a dot file), the
	 * prefix found here (or none) is still its answer. */
	if (path[0] == '/') {
		best = longest_prefix(path);
		if (best && best->len > 1 && rest_is_normal(path + best->len))
			goto found;
	}
	if (path[0] != '/' || !is_normal(path)) {
		if (path[0] != '/' && !atomic_load(&cwd_valid)) {
			if (!getcwd(cwd, sizeof(cwd)))
				cwd[0] = '\0';
			atomic_store(&cwd_valid, true);
		}
		if (path[0] != '/' && cwd[0] != '/')
			return SHIM_CLASS_OTHER; /* no cwd to resolve against */
		if (normalize(path[0] == '/' ? NULL : cwd, path, abs_buf,
			      sizeof(abs_buf)) < 0)
			return SHIM_CLASS_OTHER;
		abs = abs_buf;
		best = longest_prefix(abs);
	}
	*ret_abs = abs;
	if (!best)
		return SHIM_CLASS_OTHER;
found:
	if (best->cls == SHIM_CLASS_OUTPUT)
		*ret_ckpt = strcasestr(abs, "ckpt") ||
			    strcasestr(abs, "checkpoint");
	*ret_abs = abs;
	return best->cls;
}

bool shim_classes_observing(void)
{
	return observing;
}

bool shim_classes_observed(const char *abs)
{
	const struct prefix *best = longest_prefix(abs);

	return best && best->observed;
}

static bool under(const char *abs, const char *top, size_t len)
{
	return strncmp(abs, top, len) == 0 &&
	       (abs[len] == '/' || abs[len] == '\0');
}

bool shim_path_pseudo(const char *abs)
{
	/* Only opens in class other get here (datasets and outputs are
	 * never under these), once per open. */
	return abs[0] == '/' && ((abs[1] == 'p' && under(abs, "/proc", 5)) ||
				 (abs[1] == 's' && under(abs, "/sys", 4)) ||
				 (abs[1] == 'd' && under(abs, "/dev", 4)));
}
