/* joblayout.c - per-job directory names and the task environment. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "common/config/joblayout.h"

int joblayout_job_name(const struct conf *conf, const struct conf_tier *tier,
		       uint32_t jobid, char *buf, size_t buflen)
{
	int n = tier->shared ? snprintf(NULL, 0, "%" PRIu32 ".%s", jobid,
					conf->node_name)
			     : snprintf(NULL, 0, "%" PRIu32, jobid);

	if (n < 0 || (size_t)n >= buflen) {
		errno = ENAMETOOLONG;
		return -1;
	}
	if (tier->shared)
		snprintf(buf, buflen, "%" PRIu32 ".%s", jobid, conf->node_name);
	else
		snprintf(buf, buflen, "%" PRIu32, jobid);
	return 0;
}

int joblayout_job_dir(const struct conf *conf, const struct conf_tier *tier,
		      uint32_t jobid, char *buf, size_t buflen)
{
	char name[JOBLAYOUT_JOB_NAME_MAX];
	int n;

	if (joblayout_job_name(conf, tier, jobid, name, sizeof(name)) < 0)
		return -1;
	n = snprintf(NULL, 0, "%s/jobs/%s", tier->path, name);
	if (n < 0 || (size_t)n >= buflen) {
		errno = ENAMETOOLONG;
		return -1;
	}
	snprintf(buf, buflen, "%s/jobs/%s", tier->path, name);
	return 0;
}

/* JOB_DIR/SUB/NAME on TIER into buf, untouched on failure. */
static int job_sub_path(const struct conf *conf, const struct conf_tier *tier,
			uint32_t jobid, const char *sub, const char *name,
			char *buf, size_t buflen)
{
	char dir[CONF_PATH_MAX + JOBLAYOUT_JOB_NAME_MAX + 8];
	int n;

	if (joblayout_job_dir(conf, tier, jobid, dir, sizeof(dir)) < 0)
		return -1;
	n = snprintf(NULL, 0, "%s/%s/%s", dir, sub, name);
	if (n < 0 || (size_t)n >= buflen) {
		errno = ENAMETOOLONG;
		return -1;
	}
	snprintf(buf, buflen, "%s/%s/%s", dir, sub, name);
	return 0;
}

int joblayout_dataset_path(const struct conf *conf,
			   const struct profile_dataset *ds, uint32_t jobid,
			   char *buf, size_t buflen)
{
	const struct conf_tier *tier = conf_find_tier(conf, ds->tier);

	if (!tier) {
		errno = ENOENT;
		return -1;
	}
	return job_sub_path(conf, tier, jobid, "data", ds->name, buf, buflen);
}

int joblayout_output_path(const struct conf *conf,
			  const struct profile_output *out, uint32_t jobid,
			  char *buf, size_t buflen)
{
	const struct conf_tier *tier = conf_find_tier(conf, out->tier);

	if (!tier) {
		errno = ENOENT;
		return -1;
	}
	return job_sub_path(conf, tier, jobid, JOBLAYOUT_OUT_DIR, out->name,
			    buf, buflen);
}

const struct conf_tier *joblayout_home_tier(const struct conf *conf,
					    const struct profile *profile)
{
	const struct conf_tier *tier = NULL;

	if (profile->ndatasets > 0)
		tier = conf_find_tier(conf, profile->datasets[0].tier);
	if (!tier && profile->tier)
		tier = conf_find_tier(conf, profile->tier);
	if (!tier)
		tier = &conf->tiers[conf->default_tier];
	return tier;
}

/* Append NAME=VALUE; NAME may carry one "%s" filled with SUFFIX. */
static int env_add(struct joblayout_env *env, const char *name,
		   const char *suffix, const char *value)
{
	struct joblayout_var *var;
	int n;

	if (env->n >= JOBLAYOUT_ENV_MAX) {
		errno = E2BIG;
		return -1;
	}
	var = &env->vars[env->n];
	n = suffix
		? snprintf(var->name, sizeof(var->name), "%s_%s", name, suffix)
		: snprintf(var->name, sizeof(var->name), "%s", name);
	if (n < 0 || (size_t)n >= sizeof(var->name)) {
		errno = ENAMETOOLONG;
		return -1;
	}
	n = snprintf(var->value, sizeof(var->value), "%s", value);
	if (n < 0 || (size_t)n >= sizeof(var->value)) {
		errno = ENAMETOOLONG;
		return -1;
	}
	env->n++;
	return 0;
}

int joblayout_env(const struct conf *conf, const struct profile *profile,
		  uint32_t jobid, bool fallback, struct joblayout_env *ret)
{
	/* ~46 KiB: built off the stack, in a per-thread scratch copy, so that
	 * *ret stays untouched on failure. */
	static __thread struct joblayout_env scratch;
	const struct conf_tier *home = joblayout_home_tier(conf, profile);
	char path[CONF_PATH_MAX + 64], upper[PROFILE_NAME_MAX];
	size_t i;

	scratch.n = 0;

	if (joblayout_job_dir(conf, home, jobid, path, sizeof(path)) < 0)
		return -1;
	if (env_add(&scratch, "IOSTAGE_JOB_DIR", NULL, path) < 0)
		return -1;
	if (strlen(path) + sizeof("/local") > sizeof(path)) {
		errno = ENAMETOOLONG;
		return -1;
	}
	strcat(path, "/local");
	if (env_add(&scratch, "IOSTAGE_LOCAL", NULL, path) < 0)
		return -1;

	for (i = 0; i < profile->ndatasets; i++) {
		const struct profile_dataset *ds = &profile->datasets[i];

		if (fallback)
			snprintf(path, sizeof(path), "%s", ds->path);
		else if (joblayout_dataset_path(conf, ds, jobid, path,
						sizeof(path)) < 0)
			return -1;
		if (i == 0 && env_add(&scratch, "IOSTAGE_DATA", NULL, path) < 0)
			return -1;
		profile_env_name(ds->name, upper, sizeof(upper));
		if (env_add(&scratch, "IOSTAGE_DATA", upper, path) < 0)
			return -1;
	}
	/* Staged: tasks write to the tier and iostaged drains to the PFS
	 * (daemon/staging/drain.c). Fallback: straight to the PFS directory. */
	for (i = 0; i < profile->noutputs; i++) {
		const struct profile_output *out = &profile->outputs[i];

		if (fallback)
			snprintf(path, sizeof(path), "%s", out->path);
		else if (joblayout_output_path(conf, out, jobid, path,
					       sizeof(path)) < 0)
			return -1;
		if (i == 0 &&
		    env_add(&scratch, "IOSTAGE_OUTPUT", NULL, path) < 0)
			return -1;
		profile_env_name(out->name, upper, sizeof(upper));
		if (env_add(&scratch, "IOSTAGE_OUTPUT", upper, path) < 0)
			return -1;
	}
	if (fallback && env_add(&scratch, "IOSTAGE_FALLBACK", NULL, "1") < 0)
		return -1;
	*ret = scratch;
	return 0;
}
