/* pfslicense.c - the PFS bandwidth a streaming job asks Slurm for (see
 * pfslicense.h). */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/config/pathsafe.h"
#include "common/sched/pfslicense.h"

/* What snprintf into BUF returned (N): 0, or -1 when it was cut. */
static int fits(int n, char *buf, size_t buflen)
{
	if (n < 0 || (size_t)n >= buflen) {
		if (buflen)
			buf[0] = '\0';
		errno = ENAMETOOLONG;
		return -1;
	}
	return 0;
}

int pfslicense_for(const struct profile *profile, const struct conf *conf,
		   char *buf, size_t buflen)
{
	if (!profile || !profile->nstreams || !conf->pfs_license[0])
		return fits(snprintf(buf, buflen, "%s", ""), buf, buflen);
	return fits(snprintf(buf, buflen, "%s:%u", conf->pfs_license,
			     conf->pfs_license_per_job),
		    buf, buflen);
}

static bool listed(const struct profile *p, const char *path)
{
	for (size_t i = 0; i < p->ndatasets; i++)
		if (!strcmp(p->datasets[i].path, path))
			return true;
	for (size_t i = 0; i < p->nstreams; i++)
		if (!strcmp(p->streams[i], path))
			return true;
	return false;
}

size_t pfslicense_add_advice(struct profile *profile, const cJSON *reply)
{
	const cJSON *r;
	size_t added = 0;

	cJSON_ArrayForEach(
	    r, cJSON_GetObjectItemCaseSensitive(reply, "recommendations")) {
		const cJSON *rule = cJSON_GetObjectItemCaseSensitive(r, "rule");
		const cJSON *t = cJSON_GetObjectItemCaseSensitive(r, "target");
		const cJSON *c = cJSON_GetObjectItemCaseSensitive(r,
								  "confidence");
		char norm[CONF_PATH_MAX], why[128];
		char *dup;

		if (!cJSON_IsString(rule) ||
		    strcmp(rule->valuestring, "stream") || !cJSON_IsString(t) ||
		    !cJSON_IsNumber(c) ||
		    c->valuedouble < PFSLICENSE_CONFIDENCE)
			continue;
		if (pathsafe_normalize(t->valuestring, norm, sizeof(norm), why,
				       sizeof(why)) < 0 ||
		    strcmp(norm, t->valuestring) || listed(profile, norm) ||
		    profile->nstreams >= PROFILE_MAX_STREAMS)
			continue;
		dup = strdup(norm);
		if (!dup)
			break;
		profile->streams[profile->nstreams++] = dup;
		added++;
	}
	return added;
}

/* Does the -L value V name license NAME ("a:1,b", "a@server:2", "a|b")? */
static bool names_license(const char *v, const char *name)
{
	size_t n = strlen(name);

	for (const char *p = v; *p;) {
		size_t len = strcspn(p, ",|");
		size_t nl = strcspn(p, ":@,|");

		if (nl == n && !strncmp(p, name, n))
			return true;
		p += len;
		if (*p)
			p++;
	}
	return false;
}

int pfslicense_merge(const char *existing, const char *license, char *buf,
		     size_t buflen)
{
	char name[CONF_NAME_MAX];
	size_t nl;

	if (!existing)
		existing = "";
	if (!license || !license[0])
		return fits(snprintf(buf, buflen, "%s", existing), buf, buflen);
	if (!existing[0])
		return fits(snprintf(buf, buflen, "%s", license), buf, buflen);
	nl = strcspn(license, ":");
	if (nl >= sizeof(name)) {
		errno = ENAMETOOLONG;
		return -1;
	}
	memcpy(name, license, nl);
	name[nl] = '\0';
	if (names_license(existing, name))
		return fits(snprintf(buf, buflen, "%s", existing), buf, buflen);
	return fits(snprintf(buf, buflen, "%s,%s", existing, license), buf,
		    buflen);
}
