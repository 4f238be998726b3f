/* profile_spec.c - the --io-profile SPEC: NAME | PATH.json | auto, then
 * ",key=value" overrides. The base is read (a site profile from
 * ProfileDir, a user's file as the user) and the overrides applied in
 * order; the first data= (out=, stream=) replaces the base's list. */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/base/errmsg.h"
#include "common/base/smallfile.h"
#include "common/config/conf.h"
#include "common/config/pathsafe.h"
#include "common/config/profile.h"
#include "common/config/profile_int.h"

#define PROFILE_BASE_NAME_MAX 64 /* site profile names [A-Za-z0-9_-]{1,63} */
#define PROFILE_LIST_MAX 32      /* site profiles listed in "known: ..." */

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
				    "key 'profile': '%s': %s", SHOW(base, show),
				    reason);
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
    "data, out, stream, tier, on-failure, timeout, trace, spread";

enum profile_override {
	PROFILE_OV_DATA = 0,
	PROFILE_OV_OUT,
	PROFILE_OV_TIER,
	PROFILE_OV_ON_FAILURE,
	PROFILE_OV_TIMEOUT,
	PROFILE_OV_TRACE,
	PROFILE_OV_STREAM,
	PROFILE_OV_SPREAD,
	PROFILE_OV_COUNT,
};

static const char *const profile_ov_names[PROFILE_OV_COUNT] = {
	[PROFILE_OV_DATA] = "data",
	[PROFILE_OV_OUT] = "out",
	[PROFILE_OV_TIER] = "tier",
	[PROFILE_OV_ON_FAILURE] = "on-failure",
	[PROFILE_OV_TIMEOUT] = "timeout",
	[PROFILE_OV_TRACE] = "trace",
	[PROFILE_OV_STREAM] = "stream",
	[PROFILE_OV_SPREAD] = "spread",
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
				 const struct conf *conf, bool *seen,
				 enum profile_spread *spread, char *err,
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
		return errmsg_fail(err, errlen, EINVAL, "key '%s': empty value",
				   item);
	if (k != PROFILE_OV_DATA && k != PROFILE_OV_OUT &&
	    k != PROFILE_OV_STREAM && seen[k])
		return errmsg_fail(err, errlen, EINVAL, "key '%s': given twice",
				   item);

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
	case PROFILE_OV_SPREAD:
		/* Applies to every dataset, those of data= items after it
		 * too: profile_from_spec sets them once all are read. */
		v = profile_lookup(profile_spread_names,
				   PROFILE_ARRAY_LEN(profile_spread_names),
				   val);
		if (v < 0)
			return errmsg_fail(err, errlen, EINVAL,
					   "key '%s': unknown value '%s' "
					   "(known: yes, no)",
					   item, SHOW(val, show));
		*spread = (enum profile_spread)v;
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
	bool seen[PROFILE_OV_COUNT] = { false };
	enum profile_spread spread = PROFILE_SPREAD_NO;
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
		if (profile_spec_override(p, item, conf, seen, &spread, err,
					  errlen) < 0)
			goto fail;
	}
	if (seen[PROFILE_OV_SPREAD]) {
		for (size_t i = 0; i < p->ndatasets; i++)
			p->datasets[i].spread = spread;
		if (spread == PROFILE_SPREAD_YES && !p->ndatasets) {
			errmsg_fail(err, errlen, EINVAL,
				    "key 'spread': no dataset to spread "
				    "(give data=PATH)");
			goto fail;
		}
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
