/* profile.c - a job's I/O hints: the profile itself (its life, its names,
 * normalization against iostage.conf, the JSON handed to the Prolog and
 * iostaged), and the helpers the readers share. The readers are
 * profile_json.c (profile JSON) and profile_spec.c (the --io-profile SPEC);
 * the checks, profile_check.c.
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
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cJSON.h>

#include "common/base/errmsg.h"
#include "common/config/conf.h"
#include "common/config/conf_parse.h"
#include "common/config/pathsafe.h"
#include "common/config/profile.h"
#include "common/config/profile_int.h"

const char *const profile_access_names[PROFILE_NACCESS] = {
	[PROFILE_ACCESS_UNKNOWN] = "unknown",
	[PROFILE_ACCESS_RANDOM] = "random",
	[PROFILE_ACCESS_SEQUENTIAL] = "sequential",
};

const char *const profile_verify_names[PROFILE_NVERIFY] = {
	[PROFILE_VERIFY_STAT] = "stat",
	[PROFILE_VERIFY_NONE] = "none",
	[PROFILE_VERIFY_CHECKSUM] = "checksum",
};

const char *const profile_drain_names[PROFILE_NDRAIN] = {
	[PROFILE_DRAIN_ASYNC] = "async",
	[PROFILE_DRAIN_END] = "end",
};

const char *const profile_spread_names[PROFILE_NSPREAD] = {
	[PROFILE_SPREAD_NO] = "no",
	[PROFILE_SPREAD_YES] = "yes",
};

const char *const profile_policy_names[PROFILE_NPOLICY] = {
	[STAGE_FAILURE_FAIL] = "fail",
	[STAGE_FAILURE_FALLBACK] = "fallback",
};

/* A user's value made safe to quote on one line: control characters become
 * '?', long values are cut with "...". */
const char *profile_show(const char *s, char *buf, size_t buflen)
{
	size_t i;

	if (!s)
		s = "(null)";
	for (i = 0; s[i] && i + 1 < buflen; i++) {
		if (i >= PROFILE_SHOW_MAX && buflen > i + 4) {
			memcpy(buf + i, "...", 4);
			return buf;
		}
		buf[i] = ((unsigned char)s[i] < 0x20 || s[i] == 0x7f) ? '?'
								      : s[i];
	}
	buf[i] = '\0';
	return buf;
}

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

const char *profile_spread_name(enum profile_spread spread)
{
	if ((unsigned)spread >= PROFILE_ARRAY_LEN(profile_spread_names))
		return "unknown";
	return profile_spread_names[spread];
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

void profile_free_dataset(struct profile_dataset *ds)
{
	free(ds->name);
	free(ds->path);
	free(ds->tier);
	memset(ds, 0, sizeof(*ds));
}

void profile_free_output(struct profile_output *out)
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

struct profile *profile_new(const char *origin)
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

/* Dataset/output names: a path component without dots, [A-Za-z0-9_-]. */
bool profile_name_ok(const char *name)
{
	if (!pathsafe_is_component(name, PROFILE_NAME_MAX))
		return false;
	return strchr(name, '.') == NULL;
}

/* Tier names as iostage.conf allows them (conf_is_tier_name). */
bool profile_tier_ok(const char *s)
{
	return s && conf_is_tier_name(s);
}

/* The character C may stand in a name, or '_' in its place. */
char profile_name_char(char c)
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
int profile_check_names(const struct profile *p, char *err, size_t errlen)
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
int profile_assign_names(struct profile *p, char *err, size_t errlen)
{
	char *chosen[PROFILE_MAX_DATASETS + PROFILE_MAX_OUTPUTS] = { NULL };
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

int profile_lookup(const char *const *names, size_t n, const char *s)
{
	for (size_t i = 0; i < n; i++)
		if (names[i] && strcmp(s, names[i]) == 0)
			return (int)i;
	return -1;
}

/* A normalized copy of a user's path, or NULL with err set. */
char *profile_path_dup(const char *path, const char *key, char *err,
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

char *profile_tier_dup(const char *tier, const char *key, char *err,
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

/* Is PATH already used by another entry of the same kind? */
bool profile_path_taken(const struct profile *p, bool output, const char *path)
{
	size_t n = output ? p->noutputs : p->ndatasets;

	for (size_t i = 0; i < n; i++) {
		const char *q = output ? p->outputs[i].path
				       : p->datasets[i].path;

		if (q && strcmp(q, path) == 0)
			return true;
	}
	return false;
}

/* Is PATH already one of P's streams? */
static bool profile_stream_taken(const struct profile *p, const char *path)
{
	for (size_t i = 0; i < p->nstreams; i++)
		if (!strcmp(p->streams[i], path))
			return true;
	return false;
}

/* Add PATH (a user's, normalized here) to P's streams; KEY for messages. */
int profile_add_stream(struct profile *p, const char *path, const char *key,
		       char *err, size_t errlen)
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

int profile_normalize(struct profile *profile, const struct conf *conf,
		      char *err, size_t errlen)
{
	char *ds_tier[PROFILE_MAX_DATASETS] = { NULL };
	char *out_tier[PROFILE_MAX_OUTPUTS] = { NULL };
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
		const char *t = is_ds ? p->datasets[j].tier
				      : p->outputs[j].tier;

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
					     profile_verify_name(d->verify)) ||
		    (d->spread != PROFILE_SPREAD_NO &&
		     !cJSON_AddStringToObject(o, "spread",
					      profile_spread_name(d->spread))))
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
			if (!cJSON_AddItemToArray(arr, cJSON_CreateString(
							   p->streams[i])))
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
