/* profile_json.c - profile JSON (a site profile, a user's file, the
 * normalized JSON a step gets back): strict, member by member; unknown
 * keys, repeated keys and values of the wrong type are errors naming the
 * key ("datasets[2].verify"). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cJSON.h>

#include "common/base/errmsg.h"
#include "common/config/conf.h"
#include "common/config/profile.h"
#include "common/config/profile_int.h"

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
	cJSON_ArrayForEach(item, obj) {
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
	PROFILE_DS_SPREAD,
};

static const char *const profile_ds_keys[] = {
	[PROFILE_DS_NAME] = "name",     [PROFILE_DS_PATH] = "path",
	[PROFILE_DS_TIER] = "tier",     [PROFILE_DS_ACCESS] = "access",
	[PROFILE_DS_VERIFY] = "verify", [PROFILE_DS_SPREAD] = "spread",
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
	int access, verify, drain, spread;
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
			return profile_json_enum(item, key, profile_drain_names,
						 PROFILE_ARRAY_LEN(
						     profile_drain_names),
						 &e->drain, err, errlen);
		if (k == PROFILE_DS_ACCESS)
			return profile_json_enum(item, key,
						 profile_access_names,
						 PROFILE_ARRAY_LEN(
						     profile_access_names),
						 &e->access, err, errlen);
		if (k == PROFILE_DS_SPREAD)
			return profile_json_enum(item, key,
						 profile_spread_names,
						 PROFILE_ARRAY_LEN(
						     profile_spread_names),
						 &e->spread, err, errlen);
		return profile_json_enum(item, key, profile_verify_names,
					 PROFILE_ARRAY_LEN(
					     profile_verify_names),
					 &e->verify, err, errlen);
	}
	if (!e->name)
		return errmsg_fail(err, errlen, ENOMEM, "out of memory");
	return 0;
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
	cJSON_ArrayForEach(item, arr) {
		struct profile_entry e = { .is_output = output };

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
			d->spread = (enum profile_spread)e.spread;
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

static int profile_json_streams(struct profile *p, const cJSON *arr, char *err,
				size_t errlen)
{
	const cJSON *it;
	size_t i = 0;
	char key[32];

	if (!cJSON_IsArray(arr))
		return errmsg_fail(err, errlen, EINVAL,
				   "key 'streams': expected an array of "
				   "paths");
	cJSON_ArrayForEach(it, arr) {
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
