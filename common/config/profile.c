/* profile.c - a job's I/O hints: the --io-profile SPEC, profile JSON, and the
 * normalized profile handed to the Prolog and iostaged.
 *
 * Everything a user typed is checked here, at submit time, so that a bad
 * hint is refused by sbatch with one line instead of failing a job on a node
 * later. The rules are deliberately strict (unknown keys are errors, types
 * are not coerced): a typo in a hint should never silently mean "no hint".
 *
 * Names of datasets and outputs become parts of environment variable names
 * (IOSTAGE_DATA_<NAME>) and of directories under a tier, so they are limited
 * to [A-Za-z0-9_-] and must stay distinct once upper-cased. A name a user did
 * not choose is derived from the path's last component, with anything else
 * mapped to '_' and a "_2", "_3"... suffix where two would collide.
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cJSON.h>

#include "common/base/errmsg.h"
#include "common/config/conf.h"
#include "common/config/pathsafe.h"
#include "common/config/profile.h"
#include "common/base/smallfile.h"

#define PROFILE_SHOW_MAX 64	 /* bytes of a user's value quoted in errors */
#define PROFILE_BASE_NAME_MAX 64 /* site profile names [A-Za-z0-9_-]{1,63} */
#define PROFILE_LIST_MAX 32	 /* site profiles listed in "known: ..." */
#define PROFILE_KEY_MAX 48	 /* "datasets[15].verify" and friends */

#define PROFILE_ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

static const char *const profile_access_names[] = {
    [PROFILE_ACCESS_UNKNOWN] = "unknown",
    [PROFILE_ACCESS_RANDOM] = "random",
    [PROFILE_ACCESS_SEQUENTIAL] = "sequential",
};

static const char *const profile_verify_names[] = {
    [PROFILE_VERIFY_STAT] = "stat",
    [PROFILE_VERIFY_NONE] = "none",
    [PROFILE_VERIFY_CHECKSUM] = "checksum",
};

static const char *const profile_drain_names[] = {
    [PROFILE_DRAIN_ASYNC] = "async",
    [PROFILE_DRAIN_END] = "end",
};

static const char *const profile_policy_names[] = {
    [STAGE_FAILURE_FAIL] = "fail",
    [STAGE_FAILURE_FALLBACK] = "fallback",
};


/* A user's value made safe to quote on one line: control characters become
 * '?', long values are cut with "...". */
static const char *profile_show(const char *s, char *buf, size_t buflen)
{
	size_t i;

	if (!s)
		s = "(null)";
	for (i = 0; s[i] && i + 1 < buflen; i++) {
		if (i >= PROFILE_SHOW_MAX && buflen > i + 4) {
			memcpy(buf + i, "...", 4);
			return buf;
		}
		buf[i] =
		    ((unsigned char)s[i] < 0x20 || s[i] == 0x7f) ? '?' : s[i];
	}
	buf[i] = '\0';
	return buf;
}

#define SHOW(s, buf) profile_show((s), (buf), sizeof(buf))

const char *profile_access_name(enum profile_access access)
{
	if ((unsigned)access >= PROFILE_ARRAY_LEN(profile_access_names))
		return "unknown";
	return profile_access_names[access];
}

const char *profile_verify_name(enum profile_verify verify)
{
	if ((unsigned)verify >= PROFILE_ARRAY_LEN(profile_verify_names))
		return "unknown";
	return profile_verify_names[verify];
}

const char *profile_drain_name(enum profile_drain drain)
{
	if ((unsigned)drain >= PROFILE_ARRAY_LEN(profile_drain_names))
		return "unknown";
	return profile_drain_names[drain];
}

void profile_env_name(const char *name, char *buf, size_t buflen)
{
	size_t i;

	if (!buf || buflen == 0)
		return;
	if (!name)
		name = "";
	for (i = 0; name[i] && i + 1 < buflen; i++)
		buf[i] = name[i] == '-' ? '_'
					: (char)toupper((unsigned char)name[i]);
	buf[i] = '\0';
}

static void profile_free_dataset(struct profile_dataset *ds)
{
	free(ds->name);
	free(ds->path);
	free(ds->tier);
	memset(ds, 0, sizeof(*ds));
}

static void profile_free_output(struct profile_output *out)
{
	free(out->name);
	free(out->path);
	free(out->tier);
	memset(out, 0, sizeof(*out));
}

void profile_destroy(struct profile *profile)
{
	int saved = errno;

	if (!profile)
		return;
	for (size_t i = 0; i < profile->ndatasets && i < PROFILE_MAX_DATASETS;
	     i++)
		profile_free_dataset(&profile->datasets[i]);
	for (size_t i = 0; i < profile->noutputs && i < PROFILE_MAX_OUTPUTS;
	     i++)
		profile_free_output(&profile->outputs[i]);
	for (size_t i = 0; i < profile->nstreams && i < PROFILE_MAX_STREAMS;
	     i++)
		free(profile->streams[i]);
	free(profile->origin);
	free(profile->tier);
	free(profile);
	errno = saved;
}

static struct profile *profile_new(const char *origin)
{
	struct profile *p = calloc(1, sizeof(*p));

	if (!p)
		return NULL;
	p->origin = strdup(origin ? origin : "");
	if (!p->origin) {
		free(p);
		return NULL;
	}
	p->is_auto = strcmp(p->origin, "auto") == 0;
	return p;
}

/* ---- names ------------------------------------------------------------ */

/* Dataset/output names: a path component without dots, [A-Za-z0-9_-]. */
static bool profile_name_ok(const char *name)
{
	if (!pathsafe_is_component(name, PROFILE_NAME_MAX))
		return false;
	return strchr(name, '.') == NULL;
}

/* Tier names as conf.h defines them: [a-z0-9_-]{1,31}. */
static bool profile_tier_ok(const char *s)
{
	size_t n;

	if (!s)
		return false;
	n = strnlen(s, CONF_NAME_MAX);
	if (n == 0 || n >= CONF_NAME_MAX)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!((s[i] >= 'a' && s[i] <= 'z') ||
		      (s[i] >= '0' && s[i] <= '9') || s[i] == '_' ||
		      s[i] == '-'))
			return false;
	return true;
}

/* The character C may stand in a name, or '_' in its place. */
static char profile_name_char(char c)
{
	if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	    (c >= '0' && c <= '9') || c == '-' || c == '_')
		return c;
	return '_';
}

/* Do A and B name the same environment variable? */
static bool profile_name_clash(const char *a, const char *b)
{
	char ea[PROFILE_NAME_MAX], eb[PROFILE_NAME_MAX];

	profile_env_name(a, ea, sizeof(ea));
	profile_env_name(b, eb, sizeof(eb));
	return strcmp(ea, eb) == 0;
}

/* Entry I of all names: datasets first, then outputs. */
static const char *profile_nth_name(const struct profile *p, size_t i)
{
	if (i < p->ndatasets)
		return p->datasets[i].name;
	return p->outputs[i - p->ndatasets].name;
}

static void profile_nth_key(const struct profile *p, size_t i, char *buf,
			    size_t buflen)
{
	if (i < p->ndatasets)
		snprintf(buf, buflen, "datasets[%zu].name", i);
	else
		snprintf(buf, buflen, "outputs[%zu].name", i - p->ndatasets);
}

/* Names given explicitly must be distinct (as environment variables too). */
static int profile_check_names(const struct profile *p, char *err,
			       size_t errlen)
{
	size_t n = p->ndatasets + p->noutputs;
	char key[PROFILE_KEY_MAX], s1[80], s2[80];

	for (size_t i = 0; i < n; i++) {
		const char *a = profile_nth_name(p, i);

		if (!a)
			continue;
		for (size_t j = 0; j < i; j++) {
			const char *b = profile_nth_name(p, j);

			if (!b || !profile_name_clash(a, b))
				continue;
			profile_nth_key(p, i, key, sizeof(key));
			if (strcmp(a, b) == 0)
				return errmsg_fail(err, errlen, EINVAL,
						    "key '%s': duplicate name "
						    "'%s'",
						    key, SHOW(a, s1));
			return errmsg_fail(err, errlen, EINVAL,
					    "key '%s': name '%s' is the same "
					    "as '%s' once upper-cased",
					    key, SHOW(a, s1), SHOW(b, s2));
		}
	}
	return 0;
}

/* Is CAND free, given the names already taken and the ones chosen so far? */
static bool profile_name_free(const struct profile *p, char *const *chosen,
			      const char *cand)
{
	size_t n = p->ndatasets + p->noutputs;

	for (size_t i = 0; i < n; i++) {
		const char *b = profile_nth_name(p, i);

		if (!b)
			b = chosen[i];
		if (b && profile_name_clash(cand, b))
			return false;
	}
	return true;
}

/* Give every unnamed dataset/output a name derived from its path. All or
 * nothing: on failure (ENOMEM) the profile is unchanged. */
static int profile_assign_names(struct profile *p, char *err, size_t errlen)
{
	char *chosen[PROFILE_MAX_DATASETS + PROFILE_MAX_OUTPUTS] = {NULL};
	size_t n = p->ndatasets + p->noutputs;

	if (profile_check_names(p, err, errlen) < 0)
		return -1;
	for (size_t i = 0; i < n; i++) {
		bool is_ds = i < p->ndatasets;
		const char *path = is_ds ? p->datasets[i].path
					 : p->outputs[i - p->ndatasets].path;
		const char *slash;
		char base[PROFILE_NAME_MAX], cand[PROFILE_NAME_MAX];
		size_t len = 0;

		if (profile_nth_name(p, i))
			continue;
		slash = path ? strrchr(path, '/') : NULL;
		for (const char *c = slash ? slash + 1 : ""; *c; c++) {
			if (len + 1 >= sizeof(base))
				break;
			base[len++] = profile_name_char(*c);
		}
		base[len] = '\0';
		if (len == 0)
			snprintf(base, sizeof(base), "%s",
				 is_ds ? "data" : "out");
		snprintf(cand, sizeof(cand), "%s", base);
		/* At most n-1 other names exist, so some suffix up to n+1 is
		 * free. */
		for (size_t k = 2; !profile_name_free(p, chosen, cand); k++) {
			char suffix[24];
			int sl = snprintf(suffix, sizeof(suffix), "_%zu", k);

			snprintf(cand, sizeof(cand), "%.*s%s",
				 (int)(sizeof(cand) - 1 - (size_t)sl), base,
				 suffix);
		}
		chosen[i] = strdup(cand);
		if (!chosen[i])
			goto nomem;
	}
	for (size_t i = 0; i < n; i++) {
		if (!chosen[i])
			continue;
		if (i < p->ndatasets)
			p->datasets[i].name = chosen[i];
		else
			p->outputs[i - p->ndatasets].name = chosen[i];
	}
	return 0;
nomem:
	for (size_t i = 0; i < n; i++)
		free(chosen[i]);
	return errmsg_fail(err, errlen, ENOMEM, "out of memory");
}

/* ---- JSON ------------------------------------------------------------- */

static int profile_lookup(const char *const *names, size_t n, const char *s)
{
	for (size_t i = 0; i < n; i++)
		if (names[i] && strcmp(s, names[i]) == 0)
			return (int)i;
	return -1;
}

/* "a, b, c" */
static void profile_join(const char *const *names, size_t n, char *buf,
			 size_t buflen)
{
	size_t off = 0;

	buf[0] = '\0';
	for (size_t i = 0; i < n; i++) {
		int w = snprintf(buf + off, buflen - off, "%s%s", i ? ", " : "",
				 names[i]);

		if (w < 0 || (size_t)w >= buflen - off)
			return;
		off += (size_t)w;
	}
}

/* A string value from a fixed vocabulary. */
static int profile_json_enum(const cJSON *item, const char *key,
			     const char *const *names, size_t n, int *ret,
			     char *err, size_t errlen)
{
	char known[128], show[80];
	int v;

	if (!cJSON_IsString(item) || !item->valuestring)
		return errmsg_fail(err, errlen, EINVAL,
				    "key '%s': expected a string", key);
	v = profile_lookup(names, n, item->valuestring);
	if (v < 0) {
		profile_join(names, n, known, sizeof(known));
		return errmsg_fail(err, errlen, EINVAL,
				    "key '%s': unknown value '%s' (known: %s)",
				    key, SHOW(item->valuestring, show), known);
	}
	*ret = v;
	return 0;
}

static int profile_json_string(const cJSON *item, const char *key,
			       const char **ret, char *err, size_t errlen)
{
	if (!cJSON_IsString(item) || !item->valuestring)
		return errmsg_fail(err, errlen, EINVAL,
				    "key '%s': expected a string", key);
	*ret = item->valuestring;
	return 0;
}

/* A normalized copy of a user's path, or NULL with err set. */
static char *profile_path_dup(const char *path, const char *key, char *err,
			      size_t errlen)
{
	char norm[CONF_PATH_MAX], reason[128], show[80];
	char *dup;

	if (pathsafe_normalize(path, norm, sizeof(norm), reason,
			       sizeof(reason)) < 0) {
		int saved = errno;

		errmsg_fail(err, errlen, saved, "key '%s': '%s': %s", key,
			     SHOW(path, show), reason);
		return NULL;
	}
	dup = strdup(norm);
	if (!dup)
		errmsg_fail(err, errlen, ENOMEM, "out of memory");
	return dup;
}

static char *profile_tier_dup(const char *tier, const char *key, char *err,
			      size_t errlen)
{
	char show[80];
	char *dup;

	if (!profile_tier_ok(tier)) {
		errmsg_fail(err, errlen, EINVAL,
			     "key '%s': invalid tier name '%s' (want "
			     "[a-z0-9_-]{1,31})",
			     key, SHOW(tier, show));
		return NULL;
	}
	dup = strdup(tier);
	if (!dup)
		errmsg_fail(err, errlen, ENOMEM, "out of memory");
	return dup;
}

/* Walk OBJ's members: each must be one of KEYS and appear once. Calls FN for
 * each with its index into KEYS. PREFIX names the object in messages. */
typedef int (*profile_member_fn)(void *ctx, int k, const cJSON *item,
				 const char *key, char *err, size_t errlen);

static int profile_members(const cJSON *obj, const char *prefix,
			   const char *const *keys, size_t nkeys,
			   profile_member_fn fn, void *ctx, char *err,
			   size_t errlen)
{
	unsigned seen = 0;
	char key[PROFILE_KEY_MAX + PROFILE_SHOW_MAX + 8], show[80];
	const cJSON *item;

	if (!cJSON_IsObject(obj))
		return errmsg_fail(err, errlen, EINVAL,
				    "key '%s': expected an object", prefix);
	cJSON_ArrayForEach(item, obj)
	{
		const char *name = item->string ? item->string : "";
		int k = profile_lookup(keys, nkeys, name);

		snprintf(key, sizeof(key), "%s%s%s", prefix, *prefix ? "." : "",
			 k >= 0 ? keys[k] : SHOW(name, show));
		if (k < 0)
			return errmsg_fail(err, errlen, EINVAL,
					    "key '%s': unknown key", key);
		if (seen & (1u << k))
			return errmsg_fail(err, errlen, EINVAL,
					    "key '%s': given twice", key);
		seen |= 1u << k;
		if (fn(ctx, k, item, key, err, errlen) < 0)
			return -1;
	}
	return 0;
}

enum profile_ds_key {
	PROFILE_DS_NAME = 0,
	PROFILE_DS_PATH,
	PROFILE_DS_TIER,
	PROFILE_DS_ACCESS,
	PROFILE_DS_VERIFY,
};

static const char *const profile_ds_keys[] = {
    [PROFILE_DS_NAME] = "name",	    [PROFILE_DS_PATH] = "path",
    [PROFILE_DS_TIER] = "tier",	    [PROFILE_DS_ACCESS] = "access",
    [PROFILE_DS_VERIFY] = "verify",
};

enum profile_out_key {
	PROFILE_OUT_NAME = 0,
	PROFILE_OUT_PATH,
	PROFILE_OUT_TIER,
	PROFILE_OUT_DRAIN,
};

static const char *const profile_out_keys[] = {
    [PROFILE_OUT_NAME] = "name",
    [PROFILE_OUT_PATH] = "path",
    [PROFILE_OUT_TIER] = "tier",
    [PROFILE_OUT_DRAIN] = "drain",
};

/* The parts a dataset and an output share, filled member by member. */
struct profile_entry {
	char *name, *path, *tier;
	int access, verify, drain;
	bool is_output;
};

static int profile_entry_member(void *ctx, int k, const cJSON *item,
				const char *key, char *err, size_t errlen)
{
	struct profile_entry *e = ctx;
	const char *s = NULL;
	char show[80];

	/* name, path and tier have the same index in both key tables. */
	switch (k) {
	case PROFILE_DS_NAME:
		if (profile_json_string(item, key, &s, err, errlen) < 0)
			return -1;
		if (!profile_name_ok(s))
			return errmsg_fail(err, errlen, EINVAL,
					    "key '%s': invalid name '%s' (want "
					    "[A-Za-z0-9_-]{1,31})",
					    key, SHOW(s, show));
		e->name = strdup(s);
		break;
	case PROFILE_DS_PATH:
		if (profile_json_string(item, key, &s, err, errlen) < 0)
			return -1;
		e->path = profile_path_dup(s, key, err, errlen);
		return e->path ? 0 : -1;
	case PROFILE_DS_TIER:
		if (profile_json_string(item, key, &s, err, errlen) < 0)
			return -1;
		e->tier = profile_tier_dup(s, key, err, errlen);
		return e->tier ? 0 : -1;
	default:
		if (e->is_output)
			return profile_json_enum(
			    item, key, profile_drain_names,
			    PROFILE_ARRAY_LEN(profile_drain_names), &e->drain,
			    err, errlen);
		if (k == PROFILE_DS_ACCESS)
			return profile_json_enum(
			    item, key, profile_access_names,
			    PROFILE_ARRAY_LEN(profile_access_names), &e->access,
			    err, errlen);
		return profile_json_enum(
		    item, key, profile_verify_names,
		    PROFILE_ARRAY_LEN(profile_verify_names), &e->verify, err,
		    errlen);
	}
	if (!e->name)
		return errmsg_fail(err, errlen, ENOMEM, "out of memory");
	return 0;
}

/* Is PATH already used by another entry of the same kind? */
static bool profile_path_taken(const struct profile *p, bool output,
			       const char *path)
{
	size_t n = output ? p->noutputs : p->ndatasets;

	for (size_t i = 0; i < n; i++) {
		const char *q =
		    output ? p->outputs[i].path : p->datasets[i].path;

		if (q && strcmp(q, path) == 0)
			return true;
	}
	return false;
}

/* Parse the array under KEY ("datasets"/"outputs") into P. */
static int profile_json_entries(struct profile *p, const cJSON *arr,
				bool output, char *err, size_t errlen)
{
	const char *what = output ? "outputs" : "datasets";
	size_t max = output ? PROFILE_MAX_OUTPUTS : PROFILE_MAX_DATASETS;
	size_t i = 0;
	const cJSON *item;
	char key[PROFILE_KEY_MAX], show[80];

	if (!cJSON_IsArray(arr))
		return errmsg_fail(err, errlen, EINVAL,
				    "key '%s': expected an array", what);
	cJSON_ArrayForEach(item, arr)
	{
		struct profile_entry e = {.is_output = output};

		if (i >= max)
			return errmsg_fail(err, errlen, EINVAL,
					    "key '%s': more than %zu %s", what,
					    max, what);
		snprintf(key, sizeof(key), "%s[%zu]", what, i);
		if (profile_members(item, key,
				    output ? profile_out_keys : profile_ds_keys,
				    output ? PROFILE_ARRAY_LEN(profile_out_keys)
					   : PROFILE_ARRAY_LEN(profile_ds_keys),
				    profile_entry_member, &e, err, errlen) < 0)
			goto fail_entry;
		if (!e.path) {
			errmsg_fail(err, errlen, EINVAL,
				     "key '%s.path': required", key);
			goto fail_entry;
		}
		if (profile_path_taken(p, output, e.path)) {
			errmsg_fail(err, errlen, EINVAL,
				     "key '%s.path': %s listed twice", key,
				     SHOW(e.path, show));
			goto fail_entry;
		}
		if (output) {
			struct profile_output *o = &p->outputs[i];

			o->name = e.name;
			o->path = e.path;
			o->tier = e.tier;
			o->drain = (enum profile_drain)e.drain;
			p->noutputs = ++i;
		} else {
			struct profile_dataset *d = &p->datasets[i];

			d->name = e.name;
			d->path = e.path;
			d->tier = e.tier;
			d->access = (enum profile_access)e.access;
			d->verify = (enum profile_verify)e.verify;
			p->ndatasets = ++i;
		}
		continue;
	fail_entry:
		free(e.name);
		free(e.path);
		free(e.tier);
		return -1;
	}
	return 0;
}

enum profile_top_key {
	PROFILE_KEY_DESCRIPTION = 0,
	PROFILE_KEY_ORIGIN,
	PROFILE_KEY_TIER,
	PROFILE_KEY_ACCESS,
	PROFILE_KEY_DATASETS,
	PROFILE_KEY_OUTPUTS,
	PROFILE_KEY_TRACE,
	PROFILE_KEY_TIMEOUT,
	PROFILE_KEY_ON_FAILURE,
	PROFILE_KEY_STREAMS,
	PROFILE_KEY_OBSERVE,
};

static const char *const profile_top_keys[] = {
    [PROFILE_KEY_DESCRIPTION] = "description",
    [PROFILE_KEY_ORIGIN] = "origin",
    [PROFILE_KEY_TIER] = "tier",
    [PROFILE_KEY_ACCESS] = "access",
    [PROFILE_KEY_DATASETS] = "datasets",
    [PROFILE_KEY_OUTPUTS] = "outputs",
    [PROFILE_KEY_TRACE] = "trace",
    [PROFILE_KEY_TIMEOUT] = "timeout",
    [PROFILE_KEY_ON_FAILURE] = "on_failure",
    [PROFILE_KEY_STREAMS] = "streams",
    [PROFILE_KEY_OBSERVE] = "observe",
};

/* Is PATH already one of P's streams? */
static bool profile_stream_taken(const struct profile *p, const char *path)
{
	for (size_t i = 0; i < p->nstreams; i++)
		if (!strcmp(p->streams[i], path))
			return true;
	return false;
}

/* Add PATH (a user's, normalized here) to P's streams; KEY for messages. */
static int profile_add_stream(struct profile *p, const char *path,
			      const char *key, char *err, size_t errlen)
{
	char show[80];
	char *dup;

	if (p->nstreams >= PROFILE_MAX_STREAMS)
		return errmsg_fail(err, errlen, EINVAL,
				    "key '%s': more than %d streams", key,
				    PROFILE_MAX_STREAMS);
	dup = profile_path_dup(path, key, err, errlen);
	if (!dup)
		return -1;
	if (profile_stream_taken(p, dup)) {
		errmsg_fail(err, errlen, EINVAL, "key '%s': %s listed twice",
			     key, SHOW(dup, show));
		free(dup);
		return -1;
	}
	p->streams[p->nstreams++] = dup;
	return 0;
}

static int profile_json_streams(struct profile *p, const cJSON *arr,
				char *err, size_t errlen)
{
	const cJSON *it;
	size_t i = 0;
	char key[32];

	if (!cJSON_IsArray(arr))
		return errmsg_fail(err, errlen, EINVAL,
				    "key 'streams': expected an array of "
				    "paths");
	cJSON_ArrayForEach(it, arr)
	{
		snprintf(key, sizeof(key), "streams[%zu]", i++);
		if (!cJSON_IsString(it))
			return errmsg_fail(err, errlen, EINVAL,
					    "key '%s': expected a path", key);
		if (profile_add_stream(p, it->valuestring, key, err, errlen) <
		    0)
			return -1;
	}
	return 0;
}

static int profile_top_member(void *ctx, int k, const cJSON *item,
			      const char *key, char *err, size_t errlen)
{
	struct profile *p = ctx;
	const char *s = NULL;
	char *dup;
	int v;

	switch ((enum profile_top_key)k) {
	case PROFILE_KEY_DESCRIPTION:
		return profile_json_string(item, key, &s, err, errlen);
	case PROFILE_KEY_ORIGIN:
		if (profile_json_string(item, key, &s, err, errlen) < 0)
			return -1;
		if (strlen(s) >= CONF_PATH_MAX)
			return errmsg_fail(err, errlen, EINVAL,
					    "key '%s': longer than %d bytes",
					    key, CONF_PATH_MAX - 1);
		for (const char *c = s; *c; c++)
			if ((unsigned char)*c < 0x20 || *c == 0x7f)
				return errmsg_fail(err, errlen, EINVAL,
						    "key '%s': contains a "
						    "control character",
						    key);
		dup = strdup(s);
		if (!dup)
			return errmsg_fail(err, errlen, ENOMEM,
					    "out of memory");
		free(p->origin);
		p->origin = dup;
		p->is_auto = strcmp(dup, "auto") == 0;
		return 0;
	case PROFILE_KEY_TIER:
		if (profile_json_string(item, key, &s, err, errlen) < 0)
			return -1;
		p->tier = profile_tier_dup(s, key, err, errlen);
		return p->tier ? 0 : -1;
	case PROFILE_KEY_ACCESS:
		if (profile_json_enum(item, key, profile_access_names,
				      PROFILE_ARRAY_LEN(profile_access_names),
				      &v, err, errlen) < 0)
			return -1;
		p->access = (enum profile_access)v;
		return 0;
	case PROFILE_KEY_DATASETS:
		return profile_json_entries(p, item, false, err, errlen);
	case PROFILE_KEY_OUTPUTS:
		return profile_json_entries(p, item, true, err, errlen);
	case PROFILE_KEY_TRACE:
		if (!cJSON_IsBool(item))
			return errmsg_fail(err, errlen, EINVAL,
					    "key '%s': expected true or false",
					    key);
		p->trace = cJSON_IsTrue(item);
		return 0;
	case PROFILE_KEY_OBSERVE:
		if (!cJSON_IsBool(item))
			return errmsg_fail(err, errlen, EINVAL,
					    "key '%s': expected true or false",
					    key);
		p->observe = cJSON_IsTrue(item);
		return 0;
	case PROFILE_KEY_TIMEOUT:
		if (!cJSON_IsNumber(item))
			return errmsg_fail(err, errlen, EINVAL,
					    "key '%s': expected an integer",
					    key);
		if (item->valuedouble < 1 ||
		    item->valuedouble > PROFILE_TIMEOUT_MAX)
			return errmsg_fail(err, errlen, ERANGE,
					    "key '%s': %.15g out of range "
					    "1..%d",
					    key, item->valuedouble,
					    PROFILE_TIMEOUT_MAX);
		if (item->valuedouble != (double)(unsigned)item->valuedouble)
			return errmsg_fail(err, errlen, EINVAL,
					    "key '%s': expected an integer",
					    key);
		p->timeout = (unsigned)item->valuedouble;
		return 0;
	case PROFILE_KEY_ON_FAILURE:
		if (profile_json_enum(item, key, profile_policy_names,
				      PROFILE_ARRAY_LEN(profile_policy_names),
				      &v, err, errlen) < 0)
			return -1;
		p->on_failure = (enum stage_failure_policy)v;
		p->has_on_failure = true;
		return 0;
	case PROFILE_KEY_STREAMS:
		return profile_json_streams(p, item, err, errlen);
	}
	return errmsg_fail(err, errlen, EINVAL, "key '%s': unknown key", key);
}

struct profile *profile_parse_json(const char *json, const char *origin,
				   char *err, size_t errlen)
{
	struct profile *p = NULL;
	cJSON *root = NULL;
	const char *end = NULL;
	size_t len;

	if (!json || !*json) {
		errmsg_fail(err, errlen, EINVAL, "key 'profile': empty");
		return NULL;
	}
	len = strnlen(json, PROFILE_JSON_MAX + 1);
	if (len > PROFILE_JSON_MAX) {
		errmsg_fail(err, errlen, EFBIG,
			     "key 'profile': longer than %d bytes",
			     PROFILE_JSON_MAX);
		return NULL;
	}
	/* The parse end pointer rather than cJSON_GetErrorPtr(): the latter is
	 * a global, and slurmstepd runs plugins from several threads. */
	root = cJSON_ParseWithLengthOpts(json, len + 1, &end, 1);
	if (!root) {
		unsigned line = 1, col = 1;

		if (!end)
			end = json;
		for (const char *c = json; c < end && *c; c++) {
			if (*c == '\n') {
				line++;
				col = 1;
			} else {
				col++;
			}
		}
		errmsg_fail(err, errlen, EINVAL,
			     "malformed JSON at line %u, column %u", line, col);
		return NULL;
	}
	if (!cJSON_IsObject(root)) {
		errmsg_fail(err, errlen, EINVAL,
			     "key 'profile': expected a JSON object");
		goto fail;
	}
	p = profile_new(origin);
	if (!p) {
		errmsg_fail(err, errlen, ENOMEM, "out of memory");
		goto fail;
	}
	if (profile_members(root, "", profile_top_keys,
			    PROFILE_ARRAY_LEN(profile_top_keys),
			    profile_top_member, p, err, errlen) < 0)
		goto fail;
	if (profile_assign_names(p, err, errlen) < 0)
		goto fail;
	cJSON_Delete(root);
	return p;
fail:
	profile_destroy(p);
	cJSON_Delete(root);
	return NULL;
}

/* ---- the --io-profile SPEC -------------------------------------------- */

static bool profile_base_name_ok(const char *s, size_t n)
{
	if (n == 0 || n >= PROFILE_BASE_NAME_MAX)
		return false;
	for (size_t i = 0; i < n; i++)
		if (profile_name_char(s[i]) != s[i] || s[i] == '\0')
			return false;
	return true;
}

static int profile_cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* "a, b, c": the site profiles in DIR, sorted, for "known: ..." messages. */
static void profile_list_site(const char *dir, char *buf, size_t buflen)
{
	char *names[PROFILE_LIST_MAX];
	size_t n = 0, off = 0;
	bool more = false;
	struct dirent *de;
	DIR *d;

	d = opendir(dir);
	if (!d) {
		snprintf(buf, buflen, "none: cannot list %.256s: %s", dir,
			 strerror(errno));
		return;
	}
	while ((de = readdir(d)) != NULL) {
		size_t len = strlen(de->d_name);

		if (len <= 5 || strcmp(de->d_name + len - 5, ".json") != 0 ||
		    !profile_base_name_ok(de->d_name, len - 5))
			continue;
		if (n == PROFILE_LIST_MAX) {
			more = true;
			continue;
		}
		names[n] = strndup(de->d_name, len - 5);
		if (names[n])
			n++;
	}
	closedir(d);
	qsort(names, n, sizeof(names[0]), profile_cmp_str);
	buf[0] = '\0';
	for (size_t i = 0; i < n; i++) {
		int w = snprintf(buf + off, buflen - off, "%s%s", i ? ", " : "",
				 names[i]);

		if (w > 0 && (size_t)w < buflen - off)
			off += (size_t)w;
		free(names[i]);
	}
	if (n == 0)
		snprintf(buf, buflen, "none");
	else if (more && off < buflen)
		snprintf(buf + off, buflen - off, ", ...");
}

/* The profile SPEC starts with: "auto", a path or a site profile NAME. */
static struct profile *profile_load_base(const char *base,
					 const struct conf *conf, char *err,
					 size_t errlen)
{
	char path[CONF_PATH_MAX + PROFILE_BASE_NAME_MAX + 8];
	char reason[CONF_ERR_MAX], show[80], sub[CONF_ERR_MAX];
	size_t len = strlen(base);
	struct profile *p;
	bool is_path;
	char *text, *origin;
	int saved;

	if (strcmp(base, "auto") == 0) {
		p = profile_new("auto");
		if (!p)
			errmsg_fail(err, errlen, ENOMEM, "out of memory");
		return p;
	}
	is_path = strchr(base, '/') ||
		  (len >= 5 && strcmp(base + len - 5, ".json") == 0);
	if (is_path) {
		if (pathsafe_normalize(base, path, CONF_PATH_MAX, reason,
				       sizeof(reason)) < 0) {
			errmsg_fail(err, errlen, errno,
				     "key 'profile': '%s': %s",
				     SHOW(base, show), reason);
			return NULL;
		}
	} else {
		if (!profile_base_name_ok(base, len)) {
			errmsg_fail(err, errlen, EINVAL,
				     "key 'profile': invalid profile name "
				     "'%s' (want NAME, /path/to/profile.json "
				     "or auto)",
				     SHOW(base, show));
			return NULL;
		}
		if (!conf) {
			errmsg_fail(err, errlen, EINVAL,
				     "key 'profile': no site configuration "
				     "to find profile '%s'",
				     base);
			return NULL;
		}
		snprintf(path, sizeof(path), "%s/%s.json",
			 strcmp(conf->profile_dir, "/") ? conf->profile_dir
							: "",
			 base);
	}

	text = smallfile_read(path, PROFILE_JSON_MAX, reason, sizeof(reason));
	if (!text) {
		saved = errno;
		if (saved == ENOENT && !is_path) {
			profile_list_site(conf->profile_dir, reason,
					  sizeof(reason));
			errmsg_fail(err, errlen, saved,
				     "key 'profile': unknown profile '%s' "
				     "(known: %s)",
				     base, reason);
		} else {
			errmsg_fail(err, errlen, saved,
				     "key 'profile': cannot read %s: %s",
				     SHOW(path, show), reason);
		}
		return NULL;
	}
	/* A site profile is known by its name, a user's by its file; the
	 * file cannot claim to be something else with an "origin" key. */
	p = profile_parse_json(text, NULL, sub, sizeof(sub));
	saved = errno;
	free(text);
	if (!p) {
		errmsg_fail(err, errlen, saved, "%s: %s", SHOW(path, show),
			     sub);
		return NULL;
	}
	origin = strdup(is_path ? path : base);
	if (!origin) {
		profile_destroy(p);
		errmsg_fail(err, errlen, ENOMEM, "out of memory");
		return NULL;
	}
	free(p->origin);
	p->origin = origin;
	p->is_auto = false;
	return p;
}

bool profile_observe(struct profile *profile, const struct conf *conf)
{
	if (!profile || !conf || !conf->pfs_path[0] || profile->ndatasets ||
	    profile->noutputs || profile->nstreams)
		return false;
	profile->observe = true;
	profile->trace = true;
	return true;
}

static const char profile_override_keys[] =
    "data, out, stream, tier, on-failure, timeout, trace";

enum profile_override {
	PROFILE_OV_DATA = 0,
	PROFILE_OV_OUT,
	PROFILE_OV_TIER,
	PROFILE_OV_ON_FAILURE,
	PROFILE_OV_TIMEOUT,
	PROFILE_OV_TRACE,
	PROFILE_OV_STREAM,
	PROFILE_OV_COUNT,
};

static const char *const profile_ov_names[PROFILE_OV_COUNT] = {
    [PROFILE_OV_DATA] = "data",	      [PROFILE_OV_OUT] = "out",
    [PROFILE_OV_TIER] = "tier",	      [PROFILE_OV_ON_FAILURE] = "on-failure",
    [PROFILE_OV_TIMEOUT] = "timeout", [PROFILE_OV_TRACE] = "trace",
    [PROFILE_OV_STREAM] = "stream",
};

/* A tier given in the SPEC: checked against CONF right away when there is
 * one, so the message names the override the user typed. */
static char *profile_spec_tier(const char *tier, const char *key,
			       const struct conf *conf, char *err,
			       size_t errlen)
{
	char names[CONF_ERR_MAX], show[80];

	if (!*tier) {
		errmsg_fail(err, errlen, EINVAL, "key '%s': empty tier", key);
		return NULL;
	}
	if (conf && !conf_find_tier(conf, tier)) {
		conf_tier_names(conf, names, sizeof(names));
		errmsg_fail(err, errlen, EINVAL,
			     "key '%s': unknown tier '%s' (known: %s)", key,
			     SHOW(tier, show), names);
		return NULL;
	}
	return profile_tier_dup(tier, key, err, errlen);
}

static int profile_spec_entry(struct profile *p, bool output, char *val,
			      const struct conf *conf, bool *seen, char *err,
			      size_t errlen)
{
	const char *key = output ? "out" : "data";
	size_t max = output ? PROFILE_MAX_OUTPUTS : PROFILE_MAX_DATASETS;
	char *colon = NULL, *path = NULL, *tier = NULL, show[80];

	/* data=PATH[:TIER]: tier names hold no '/', so a ':' followed by
	 * something with a '/' is part of the path. */
	if (!output) {
		colon = strrchr(val, ':');
		if (colon && !strchr(colon + 1, '/')) {
			*colon = '\0';
			tier = profile_spec_tier(colon + 1, key, conf, err,
						 errlen);
			if (!tier)
				return -1;
		}
	}
	path = profile_path_dup(val, key, err, errlen);
	if (!path)
		goto fail;

	if (!*seen) {
		/* The first data= (out=) replaces what the base profile had. */
		if (output) {
			for (size_t i = 0; i < p->noutputs; i++)
				profile_free_output(&p->outputs[i]);
			p->noutputs = 0;
		} else {
			for (size_t i = 0; i < p->ndatasets; i++)
				profile_free_dataset(&p->datasets[i]);
			p->ndatasets = 0;
		}
		*seen = true;
	}
	if ((output ? p->noutputs : p->ndatasets) >= max) {
		errmsg_fail(err, errlen, EINVAL, "key '%s': more than %zu %s",
			     key, max, output ? "outputs" : "datasets");
		goto fail;
	}
	if (profile_path_taken(p, output, path)) {
		errmsg_fail(err, errlen, EINVAL, "key '%s': %s listed twice",
			     key, SHOW(path, show));
		goto fail;
	}
	if (output) {
		struct profile_output *o = &p->outputs[p->noutputs++];

		o->path = path;
		o->drain = PROFILE_DRAIN_ASYNC;
	} else {
		struct profile_dataset *d = &p->datasets[p->ndatasets++];

		d->path = path;
		d->tier = tier;
		d->access = PROFILE_ACCESS_UNKNOWN;
		d->verify = PROFILE_VERIFY_STAT;
	}
	return 0;
fail:
	free(path);
	free(tier);
	return -1;
}

static int profile_spec_override(struct profile *p, char *item,
				 const struct conf *conf, bool *seen, char *err,
				 size_t errlen)
{
	char *eq = strchr(item, '=');
	char *val;
	char show[80];
	int k, v;

	if (!eq)
		return errmsg_fail(err, errlen, EINVAL,
				    "key '%s': expected key=value",
				    SHOW(item, show));
	*eq = '\0';
	val = eq + 1;
	k = profile_lookup(profile_ov_names, PROFILE_OV_COUNT, item);
	if (k < 0)
		return errmsg_fail(err, errlen, EINVAL,
				    "key '%s': unknown key (known: %s)",
				    SHOW(item, show), profile_override_keys);
	if (!*val)
		return errmsg_fail(err, errlen, EINVAL,
				    "key '%s': empty value", item);
	if (k != PROFILE_OV_DATA && k != PROFILE_OV_OUT &&
	    k != PROFILE_OV_STREAM && seen[k])
		return errmsg_fail(err, errlen, EINVAL,
				    "key '%s': given twice", item);

	switch ((enum profile_override)k) {
	case PROFILE_OV_DATA:
	case PROFILE_OV_OUT:
		return profile_spec_entry(p, k == PROFILE_OV_OUT, val, conf,
					  &seen[k], err, errlen);
	case PROFILE_OV_TIER: {
		char *tier = profile_spec_tier(val, item, conf, err, errlen);

		if (!tier)
			return -1;
		free(p->tier);
		p->tier = tier;
		break;
	}
	case PROFILE_OV_ON_FAILURE:
		v = profile_lookup(profile_policy_names,
				   PROFILE_ARRAY_LEN(profile_policy_names),
				   val);
		if (v < 0)
			return errmsg_fail(err, errlen, EINVAL,
					    "key '%s': unknown value '%s' "
					    "(known: fail, fallback)",
					    item, SHOW(val, show));
		p->on_failure = (enum stage_failure_policy)v;
		p->has_on_failure = true;
		break;
	case PROFILE_OV_TIMEOUT: {
		unsigned long t = 0;

		for (const char *c = val; *c; c++) {
			if (!isdigit((unsigned char)*c))
				return errmsg_fail(err, errlen, EINVAL,
						    "key '%s': '%s' is not a "
						    "number",
						    item, SHOW(val, show));
			if (t <= PROFILE_TIMEOUT_MAX)
				t = t * 10 + (unsigned long)(*c - '0');
		}
		if (t < 1 || t > PROFILE_TIMEOUT_MAX)
			return errmsg_fail(err, errlen, ERANGE,
					    "key '%s': %s out of range 1..%d",
					    item, SHOW(val, show),
					    PROFILE_TIMEOUT_MAX);
		p->timeout = (unsigned)t;
		break;
	}
	case PROFILE_OV_TRACE:
		if (strcmp(val, "true") == 0)
			p->trace = true;
		else if (strcmp(val, "false") == 0)
			p->trace = false;
		else
			return errmsg_fail(err, errlen, EINVAL,
					    "key '%s': expected true or false, "
					    "not '%s'",
					    item, SHOW(val, show));
		break;
	case PROFILE_OV_STREAM:
		/* The first stream= replaces what the base profile had, as
		 * data= does. */
		if (!seen[k]) {
			for (size_t i = 0; i < p->nstreams; i++)
				free(p->streams[i]);
			p->nstreams = 0;
		}
		if (profile_add_stream(p, val, item, err, errlen) < 0)
			return -1;
		break;
	case PROFILE_OV_COUNT:
		break;
	}
	seen[k] = true;
	return 0;
}

struct profile *profile_from_spec(const char *spec, const struct conf *conf,
				  char *err, size_t errlen)
{
	bool seen[PROFILE_OV_COUNT] = {false};
	struct profile *p = NULL;
	char *copy = NULL, *rest, *item;
	size_t len;
	int saved;

	if (!spec || !*spec) {
		errmsg_fail(err, errlen, EINVAL, "key 'profile': empty");
		return NULL;
	}
	len = strnlen(spec, PROFILE_SPEC_MAX + 1);
	if (len > PROFILE_SPEC_MAX) {
		errmsg_fail(err, errlen, E2BIG,
			     "key 'spec': longer than %d bytes",
			     PROFILE_SPEC_MAX);
		return NULL;
	}
	for (size_t i = 0; i < len; i++)
		if ((unsigned char)spec[i] < 0x20 || spec[i] == 0x7f) {
			errmsg_fail(err, errlen, EINVAL,
				     "key 'spec': contains a control "
				     "character");
			return NULL;
		}
	copy = strdup(spec);
	if (!copy) {
		errmsg_fail(err, errlen, ENOMEM, "out of memory");
		return NULL;
	}
	rest = copy;
	item = strsep(&rest, ",");
	if (!*item) {
		errmsg_fail(err, errlen, EINVAL, "key 'profile': empty");
		goto fail;
	}
	p = profile_load_base(item, conf, err, errlen);
	if (!p)
		goto fail;
	while ((item = strsep(&rest, ",")) != NULL) {
		if (!*item) {
			errmsg_fail(err, errlen, EINVAL,
				     "key 'spec': empty item between commas");
			goto fail;
		}
		if (profile_spec_override(p, item, conf, seen, err, errlen) < 0)
			goto fail;
	}
	if (profile_assign_names(p, err, errlen) < 0)
		goto fail;
	free(copy);
	return p;
fail:
	saved = errno;
	profile_destroy(p);
	free(copy);
	errno = saved;
	return NULL;
}

/* ---- normalize, validate, serialize ----------------------------------- */

int profile_normalize(struct profile *profile, const struct conf *conf,
		      char *err, size_t errlen)
{
	char *ds_tier[PROFILE_MAX_DATASETS] = {NULL};
	char *out_tier[PROFILE_MAX_OUTPUTS] = {NULL};
	char *ptier_new = NULL;
	char names[CONF_ERR_MAX], key[PROFILE_KEY_MAX], show[80];
	const char *ptier;
	struct profile *p = profile;
	int saved;

	if (!p || !conf)
		return errmsg_fail(err, errlen, EINVAL,
				    "key 'profile': nothing to normalize");
	if (p->ndatasets > PROFILE_MAX_DATASETS ||
	    p->noutputs > PROFILE_MAX_OUTPUTS)
		return errmsg_fail(err, errlen, EINVAL,
				    "key 'datasets': too many entries");
	if (conf->ntiers == 0 || conf->default_tier >= conf->ntiers)
		return errmsg_fail(err, errlen, EINVAL,
				    "key 'tier': no tiers configured");
	conf_tier_names(conf, names, sizeof(names));

	/* Check every tier before changing anything. */
	if (p->tier && !conf_find_tier(conf, p->tier))
		return errmsg_fail(err, errlen, EINVAL,
				    "key 'tier': unknown tier '%s' (known: %s)",
				    SHOW(p->tier, show), names);
	for (size_t i = 0; i < p->ndatasets + p->noutputs; i++) {
		bool is_ds = i < p->ndatasets;
		size_t j = is_ds ? i : i - p->ndatasets;
		const char *t =
		    is_ds ? p->datasets[j].tier : p->outputs[j].tier;

		if (t && !conf_find_tier(conf, t)) {
			snprintf(key, sizeof(key), "%s[%zu].tier",
				 is_ds ? "datasets" : "outputs", j);
			return errmsg_fail(err, errlen, EINVAL,
					    "key '%s': unknown tier '%s' "
					    "(known: %s)",
					    key, SHOW(t, show), names);
		}
	}

	ptier = p->tier ? p->tier : conf->tiers[conf->default_tier].name;
	if (!p->tier && !(ptier_new = strdup(ptier)))
		goto nomem;
	for (size_t i = 0; i < p->ndatasets; i++)
		if (!p->datasets[i].tier && !(ds_tier[i] = strdup(ptier)))
			goto nomem;
	for (size_t i = 0; i < p->noutputs; i++)
		if (!p->outputs[i].tier && !(out_tier[i] = strdup(ptier)))
			goto nomem;
	/* Last fallible step: it commits only on success. */
	if (profile_assign_names(p, err, errlen) < 0)
		goto fail;

	if (ptier_new)
		p->tier = ptier_new;
	for (size_t i = 0; i < p->ndatasets; i++) {
		struct profile_dataset *d = &p->datasets[i];

		if (ds_tier[i])
			d->tier = ds_tier[i];
		if (d->access == PROFILE_ACCESS_UNKNOWN)
			d->access = p->access;
	}
	for (size_t i = 0; i < p->noutputs; i++)
		if (out_tier[i])
			p->outputs[i].tier = out_tier[i];
	if (p->timeout == 0)
		p->timeout = conf->stage_timeout;
	if (!p->has_on_failure) {
		p->on_failure = conf->on_failure;
		p->has_on_failure = true;
	}
	return 0;

nomem:
	errmsg_fail(err, errlen, ENOMEM, "out of memory");
fail:
	saved = errno;
	free(ptier_new);
	for (size_t i = 0; i < PROFILE_MAX_DATASETS; i++)
		free(ds_tier[i]);
	for (size_t i = 0; i < PROFILE_MAX_OUTPUTS; i++)
		free(out_tier[i]);
	errno = saved;
	return -1;
}

/* One dataset or output, structurally. */
static int profile_check_entry(const char *what, size_t i, const char *name,
			       const char *path, const char *tier,
			       const struct conf *conf, char *err,
			       size_t errlen)
{
	char norm[CONF_PATH_MAX], reason[128], show[80], names[CONF_ERR_MAX];

	if (!name)
		return errmsg_fail(err, errlen, EINVAL,
				    "key '%s[%zu].name': not set", what, i);
	if (!profile_name_ok(name))
		return errmsg_fail(err, errlen, EINVAL,
				    "key '%s[%zu].name': invalid name '%s' "
				    "(want [A-Za-z0-9_-]{1,31})",
				    what, i, SHOW(name, show));
	if (!path)
		return errmsg_fail(err, errlen, EINVAL,
				    "key '%s[%zu].path': required", what, i);
	if (pathsafe_normalize(path, norm, sizeof(norm), reason,
			       sizeof(reason)) < 0)
		return errmsg_fail(err, errlen, EINVAL,
				    "key '%s[%zu].path': '%s': %s", what, i,
				    SHOW(path, show), reason);
	if (strcmp(norm, path) != 0)
		return errmsg_fail(err, errlen, EINVAL,
				    "key '%s[%zu].path': '%s': not normalized",
				    what, i, SHOW(path, show));
	if (!tier)
		return errmsg_fail(err, errlen, EINVAL,
				    "key '%s[%zu].tier': not set (profile "
				    "not normalized)",
				    what, i);
	if (conf && !conf_find_tier(conf, tier)) {
		conf_tier_names(conf, names, sizeof(names));
		return errmsg_fail(err, errlen, EINVAL,
				    "key '%s[%zu].tier': unknown tier '%s' "
				    "(known: %s)",
				    what, i, SHOW(tier, show), names);
	}
	return 0;
}

static int profile_check_dataset_access(const char *path, const char *key,
					char *err, size_t errlen)
{
	struct stat st;
	int mode, saved;

	if (stat(path, &st) < 0) {
		saved = errno;
		return errmsg_fail(err, errlen, saved, "key '%s': %s: %s%s",
				    key, path, strerror(saved),
				    saved == EACCES ? " (not readable by you)"
						    : "");
	}
	if (S_ISDIR(st.st_mode))
		mode = R_OK | X_OK;
	else if (S_ISREG(st.st_mode))
		mode = R_OK;
	else
		return errmsg_fail(err, errlen, EINVAL,
				    "key '%s': %s: not a regular file or "
				    "directory",
				    key, path);
	/* access() answers for the real uid: the user, even in a setuid
	 * context. */
	if (access(path, mode) < 0) {
		saved = errno;
		return errmsg_fail(err, errlen, saved, "key '%s': %s: %s%s",
				    key, path, strerror(saved),
				    saved == EACCES ? " (not readable by you)"
						    : "");
	}
	return 0;
}

/* Is PATH a directory the real uid may create entries in? WHAT/OPATH shape
 * the message: the output path, and for its parent ": parent " + PATH. */
static int profile_writable_dir(const char *path, const char *what,
				const char *opath, char *err, size_t errlen)
{
	struct stat st;
	int saved;

	if (stat(path, &st) < 0)
		saved = errno;
	else if (!S_ISDIR(st.st_mode))
		saved = ENOTDIR;
	else if (access(path, W_OK | X_OK) < 0)
		saved = errno;
	else
		return 0;
	return errmsg_fail(err, errlen, saved, "key 'out': %s%s%s: %s%s",
			    opath, what, what[0] ? path : "", strerror(saved),
			    saved == EACCES ? " (not writable by you)" : "");
}

static int profile_check_output_access(const char *path, char *err,
				       size_t errlen)
{
	char parent[CONF_PATH_MAX];
	struct stat st;
	char *slash;

	if (lstat(path, &st) == 0 || errno != ENOENT)
		return profile_writable_dir(path, "", path, err, errlen);
	snprintf(parent, sizeof(parent), "%s", path);
	slash = strrchr(parent, '/');
	if (slash == parent)
		slash[1] = '\0';
	else if (slash)
		*slash = '\0';
	return profile_writable_dir(parent, ": parent ", path, err, errlen);
}

int profile_validate(const struct profile *profile, const struct conf *conf,
		     enum profile_check checks, char *err, size_t errlen)
{
	const struct profile *p = profile;
	char names[CONF_ERR_MAX], show[80];

	if (!p)
		return errmsg_fail(err, errlen, EINVAL,
				    "key 'profile': nothing to validate");
	if (p->ndatasets > PROFILE_MAX_DATASETS)
		return errmsg_fail(err, errlen, EINVAL,
				    "key 'datasets': more than %d datasets",
				    PROFILE_MAX_DATASETS);
	if (p->noutputs > PROFILE_MAX_OUTPUTS)
		return errmsg_fail(err, errlen, EINVAL,
				    "key 'outputs': more than %d outputs",
				    PROFILE_MAX_OUTPUTS);
	if (p->tier && conf && !conf_find_tier(conf, p->tier)) {
		conf_tier_names(conf, names, sizeof(names));
		return errmsg_fail(err, errlen, EINVAL,
				    "key 'tier': unknown tier '%s' (known: %s)",
				    SHOW(p->tier, show), names);
	}
	if ((unsigned)p->access >= PROFILE_ARRAY_LEN(profile_access_names))
		return errmsg_fail(err, errlen, EINVAL,
				    "key 'access': invalid value %d",
				    (int)p->access);
	for (size_t i = 0; i < p->ndatasets; i++) {
		const struct profile_dataset *d = &p->datasets[i];

		if (profile_check_entry("datasets", i, d->name, d->path,
					d->tier, conf, err, errlen) < 0)
			return -1;
		if ((unsigned)d->access >=
			PROFILE_ARRAY_LEN(profile_access_names) ||
		    (unsigned)d->verify >=
			PROFILE_ARRAY_LEN(profile_verify_names))
			return errmsg_fail(err, errlen, EINVAL,
					    "key 'datasets[%zu]': invalid "
					    "access or verify value",
					    i);
		for (size_t j = 0; j < i; j++)
			if (strcmp(p->datasets[j].path, d->path) == 0)
				return errmsg_fail(err, errlen, EINVAL,
						    "key 'datasets[%zu].path': "
						    "%s listed twice",
						    i, d->path);
	}
	for (size_t i = 0; i < p->noutputs; i++) {
		const struct profile_output *o = &p->outputs[i];

		if (profile_check_entry("outputs", i, o->name, o->path, o->tier,
					conf, err, errlen) < 0)
			return -1;
		if ((unsigned)o->drain >=
		    PROFILE_ARRAY_LEN(profile_drain_names))
			return errmsg_fail(err, errlen, EINVAL,
					    "key 'outputs[%zu].drain': invalid "
					    "value %d",
					    i, (int)o->drain);
		for (size_t j = 0; j < i; j++)
			if (strcmp(p->outputs[j].path, o->path) == 0)
				return errmsg_fail(err, errlen, EINVAL,
						    "key 'outputs[%zu].path': "
						    "%s listed twice",
						    i, o->path);
	}
	if (p->nstreams > PROFILE_MAX_STREAMS)
		return errmsg_fail(err, errlen, EINVAL,
				    "key 'streams': more than %d streams",
				    PROFILE_MAX_STREAMS);
	for (size_t i = 0; i < p->nstreams; i++) {
		if (!p->streams[i] || p->streams[i][0] != '/')
			return errmsg_fail(err, errlen, EINVAL,
					    "key 'streams[%zu]': expected an "
					    "absolute path",
					    i);
		for (size_t j = 0; j < p->ndatasets; j++)
			if (!strcmp(p->datasets[j].path, p->streams[i]))
				return errmsg_fail(
				    err, errlen, EINVAL,
				    "key 'streams[%zu]': %s is also a dataset "
				    "to stage (stage it or stream it, not both)",
				    i, p->streams[i]);
	}
	if (profile_check_names(p, err, errlen) < 0)
		return -1;
	if (p->timeout < 1 || p->timeout > PROFILE_TIMEOUT_MAX)
		return errmsg_fail(err, errlen, ERANGE,
				    "key 'timeout': %u out of range 1..%d",
				    p->timeout, PROFILE_TIMEOUT_MAX);
	if (!p->has_on_failure)
		return errmsg_fail(err, errlen, EINVAL,
				    "key 'on_failure': not set (profile not "
				    "normalized)");
	if ((unsigned)p->on_failure >= PROFILE_ARRAY_LEN(profile_policy_names))
		return errmsg_fail(err, errlen, EINVAL,
				    "key 'on_failure': invalid value %d",
				    (int)p->on_failure);

	if (!(checks & PROFILE_CHECK_ACCESS))
		return 0;
	for (size_t i = 0; i < p->ndatasets; i++)
		if (profile_check_dataset_access(p->datasets[i].path, "data",
						 err, errlen) < 0)
			return -1;
	for (size_t i = 0; i < p->noutputs; i++)
		if (profile_check_output_access(p->outputs[i].path, err,
						errlen) < 0)
			return -1;
	for (size_t i = 0; i < p->nstreams; i++)
		if (profile_check_dataset_access(p->streams[i], "stream", err,
						 errlen) < 0)
			return -1;
	return 0;
}

char *profile_to_json(const struct profile *profile)
{
	const struct profile *p = profile;
	cJSON *root, *arr, *o;
	char *out = NULL;

	if (!p) {
		errno = EINVAL;
		return NULL;
	}
	root = cJSON_CreateObject();
	if (!root)
		goto nomem;
	if (!cJSON_AddStringToObject(root, "origin",
				     p->origin ? p->origin : ""))
		goto nomem;
	if (p->tier && !cJSON_AddStringToObject(root, "tier", p->tier))
		goto nomem;
	if (!cJSON_AddStringToObject(root, "access",
				     profile_access_name(p->access)))
		goto nomem;

	arr = cJSON_AddArrayToObject(root, "datasets");
	if (!arr)
		goto nomem;
	for (size_t i = 0; i < p->ndatasets && i < PROFILE_MAX_DATASETS; i++) {
		const struct profile_dataset *d = &p->datasets[i];

		o = cJSON_CreateObject();
		if (!o || !cJSON_AddItemToArray(arr, o))
			goto nomem_item;
		if ((d->name && !cJSON_AddStringToObject(o, "name", d->name)) ||
		    (d->path && !cJSON_AddStringToObject(o, "path", d->path)) ||
		    (d->tier && !cJSON_AddStringToObject(o, "tier", d->tier)) ||
		    !cJSON_AddStringToObject(o, "access",
					     profile_access_name(d->access)) ||
		    !cJSON_AddStringToObject(o, "verify",
					     profile_verify_name(d->verify)))
			goto nomem;
	}
	arr = cJSON_AddArrayToObject(root, "outputs");
	if (!arr)
		goto nomem;
	for (size_t i = 0; i < p->noutputs && i < PROFILE_MAX_OUTPUTS; i++) {
		const struct profile_output *u = &p->outputs[i];

		o = cJSON_CreateObject();
		if (!o || !cJSON_AddItemToArray(arr, o))
			goto nomem_item;
		if ((u->name && !cJSON_AddStringToObject(o, "name", u->name)) ||
		    (u->path && !cJSON_AddStringToObject(o, "path", u->path)) ||
		    (u->tier && !cJSON_AddStringToObject(o, "tier", u->tier)) ||
		    !cJSON_AddStringToObject(o, "drain",
					     profile_drain_name(u->drain)))
			goto nomem;
	}
	if (p->nstreams) {
		arr = cJSON_AddArrayToObject(root, "streams");
		if (!arr)
			goto nomem;
		for (size_t i = 0; i < p->nstreams && i < PROFILE_MAX_STREAMS;
		     i++)
			if (!cJSON_AddItemToArray(
				arr, cJSON_CreateString(p->streams[i])))
				goto nomem;
	}
	if (!cJSON_AddBoolToObject(root, "trace", p->trace))
		goto nomem;
	if (p->observe && !cJSON_AddBoolToObject(root, "observe", true))
		goto nomem;
	if (p->timeout &&
	    !cJSON_AddNumberToObject(root, "timeout", (double)p->timeout))
		goto nomem;
	if (p->has_on_failure &&
	    !cJSON_AddStringToObject(root, "on_failure",
				     conf_policy_name(p->on_failure)))
		goto nomem;

	out = cJSON_PrintUnformatted(root);
	cJSON_Delete(root);
	if (!out) {
		errno = ENOMEM;
		return NULL;
	}
	/* Whatever we emit must parse again (profile_parse_json's limit). */
	if (strlen(out) > PROFILE_JSON_MAX) {
		free(out);
		errno = E2BIG;
		return NULL;
	}
	return out;

nomem_item:
	cJSON_Delete(o);
nomem:
	cJSON_Delete(root);
	errno = ENOMEM;
	return NULL;
}
