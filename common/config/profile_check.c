/* profile_check.c - profile_validate: a profile is whole and consistent
 * (names, normalized paths, known tiers, values in range), and, asked to,
 * its datasets are readable and its outputs writable by the real uid: the
 * submitting user, at submit time. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/base/errmsg.h"
#include "common/config/conf.h"
#include "common/config/pathsafe.h"
#include "common/config/profile.h"
#include "common/config/profile_int.h"

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

/* A spread dataset needs node-local tiers: on a tier every node sees
 * (Shared=yes) there is one copy for all of them already. The profile's
 * tier may still be unset (NULL: the default, checked once normalized). */
static int profile_check_spread(const struct profile_dataset *d, size_t i,
				const struct conf *conf, char *err,
				size_t errlen)
{
	const struct conf_tier *t;

	if (d->spread != PROFILE_SPREAD_YES || !conf || !d->tier)
		return 0;
	t = conf_find_tier(conf, d->tier);
	if (t && t->shared)
		return errmsg_fail(err, errlen, EINVAL,
				   "key 'datasets[%zu].spread': tier '%s' is "
				   "shared by every node (Shared=yes): there "
				   "is nothing to spread; use a node-local "
				   "tier",
				   i, d->tier);
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
	return errmsg_fail(err, errlen, saved, "key 'out': %s%s%s: %s%s", opath,
			   what, what[0] ? path : "", strerror(saved),
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
			PROFILE_ARRAY_LEN(profile_verify_names) ||
		    (unsigned)d->spread >=
			PROFILE_ARRAY_LEN(profile_spread_names))
			return errmsg_fail(err, errlen, EINVAL,
					   "key 'datasets[%zu]': invalid "
					   "access, verify or spread value",
					   i);
		if (profile_check_spread(d, i, conf, err, errlen) < 0)
			return -1;
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
