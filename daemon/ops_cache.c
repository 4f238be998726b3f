/* ops_cache.c - the cache's ops: prestage (a dataset into the cache ahead
 * of a job, as the caller or, for root, as any user), cache_ls and
 * cache_evict (docs/STAGING.md).
 *
 * Everything a request names is checked here: a tier must be one of
 * ours, a path is normalized and a key is hex before the cache sees
 * them, and "user" is root's alone (a user may name only themself in a
 * prestage). A user lists and evicts only their own entries; the cache
 * (cache_request.c) enforces that with the caller's uid.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cJSON.h>

#include "common/base/jsonbuf.h"
#include "common/base/log.h"
#include "common/config/pathsafe.h"
#include "common/config/profile.h"
#include "common/net/proto.h"
#include "daemon/agent.h"
#include "daemon/jobs.h"
#include "daemon/ops.h"
#include "daemon/staging/cache.h"
#include "daemon/staging/stage.h"
#include "daemon/staging/tiers.h"

#define OPS_PW_BUF_MAX (1024 * 1024)

/* An optional string KEY of REQ: 0 with *ret (NULL when absent), or -1. */
static int opt_string(const cJSON *req, const char *key, const char **ret,
		      char *err, size_t errlen)
{
	*ret = NULL;
	if (!cJSON_GetObjectItemCaseSensitive(req, key))
		return 0;
	return proto_get_string(req, key, ret, err, errlen);
}

/* An optional "tier": its index, -1 when absent; -2 with err if unknown. */
static int opt_tier(struct agent *a, const cJSON *req, char *err, size_t errlen)
{
	char names[CONF_ERR_MAX], shown[CONF_NAME_MAX + 8];
	const char *name;
	int t;

	if (opt_string(req, "tier", &name, err, errlen) < 0)
		return -2;
	if (!name)
		return -1;
	t = tiers_index(a->tiers, name);
	if (t < 0) {
		conf_tier_names(a->conf, names, sizeof(names));
		snprintf(err, errlen,
			 "key 'tier': unknown tier '%s' (known: %.400s)",
			 ops_printable(name, shown, sizeof(shown)), names);
		return -2;
	}
	return t;
}

/* The passwd entry of NAME (or, NAME NULL, of UID): uid, gid, name. */
static int lookup_user(const char *name, uid_t uid, uid_t *ret_uid,
		       gid_t *ret_gid, char *ret_name, size_t namelen,
		       char *err, size_t errlen)
{
	struct passwd pw, *res = NULL;
	char shown[64], *buf = NULL;
	size_t len = 16384;
	int r;

	for (;;) {
		char *b = realloc(buf, len);

		if (!b) {
			free(buf);
			snprintf(err, errlen, "out of memory");
			return -1;
		}
		buf = b;
		r = name ? getpwnam_r(name, &pw, buf, len, &res)
			 : getpwuid_r(uid, &pw, buf, len, &res);
		if (r != ERANGE || len >= OPS_PW_BUF_MAX)
			break;
		len *= 2;
	}
	if (r != 0 || !res || strlen(pw.pw_name) >= namelen) {
		if (name)
			snprintf(err, errlen, "key 'user': no such user '%s'",
				 ops_printable(name, shown, sizeof(shown)));
		else
			snprintf(err, errlen, "uid %u has no user name",
				 (unsigned)uid);
		free(buf);
		return -1;
	}
	*ret_uid = pw.pw_uid;
	*ret_gid = pw.pw_gid;
	snprintf(ret_name, namelen, "%s", pw.pw_name);
	free(buf);
	return 0;
}

/* prestage {path, tier?, user?, verify?}: stage PATH into the cache as the
 * peer (root: as USER), asynchronously; the reply's "id" is a job id for
 * wait/status. */
static cJSON *op_prestage(struct agent *a, const struct ops_caller *c,
			  const cJSON *req)
{
	char err[CONF_ERR_MAX], user[JOBS_USER_MAX], *text = NULL;
	const char *path, *tier, *who, *verify;
	struct profile *profile = NULL;
	struct job *job = NULL, *old = NULL;
	cJSON *p = NULL, *arr, *ds, *reply;
	uid_t uid;
	gid_t gid;
	uint32_t id;

	if (proto_get_string(req, "path", &path, err, sizeof(err)) < 0 ||
	    opt_string(req, "tier", &tier, err, sizeof(err)) < 0 ||
	    opt_string(req, "user", &who, err, sizeof(err)) < 0 ||
	    opt_string(req, "verify", &verify, err, sizeof(err)) < 0)
		goto fail;
	if (who && c->uid != 0) {
		char me[JOBS_USER_MAX];

		if (lookup_user(NULL, c->uid, &uid, &gid, me, sizeof(me), err,
				sizeof(err)) < 0)
			goto fail;
		if (strcmp(me, who)) {
			snprintf(err, sizeof(err),
				 "permission denied: key 'user' needs root "
				 "(peer uid %u)",
				 (unsigned)c->uid);
			goto fail;
		}
	}
	if (lookup_user(who, c->uid, &uid, &gid, user, sizeof(user), err,
			sizeof(err)) < 0)
		goto fail;
	/* The profile code validates the path, tier and verify like any
	 * job's. */
	p = cJSON_CreateObject();
	arr = p ? cJSON_AddArrayToObject(p, "datasets") : NULL;
	ds = cJSON_CreateObject();
	if (!arr || !ds) {
		cJSON_Delete(ds);
		snprintf(err, sizeof(err), "out of memory");
		goto fail;
	}
	cJSON_AddItemToArray(arr, ds);
	cJSON_AddStringToObject(ds, "path", path);
	if (tier)
		cJSON_AddStringToObject(ds, "tier", tier);
	if (verify)
		cJSON_AddStringToObject(ds, "verify", verify);
	text = jsonbuf_dup(p);
	if (!text) {
		snprintf(err, sizeof(err), "out of memory");
		goto fail;
	}
	{
		char perr[CONF_ERR_MAX];

		profile = profile_parse_json(text, "prestage request", perr,
					     sizeof(perr));
		if (profile &&
		    (profile_normalize(profile, a->conf, perr, sizeof(perr)) <
			 0 ||
		     profile_validate(profile, a->conf, PROFILE_CHECK_STRUCTURE,
				      perr, sizeof(perr)) < 0)) {
			profile_destroy(profile);
			profile = NULL;
		}
		if (!profile) {
			snprintf(err, sizeof(err), "%.500s", perr);
			goto fail;
		}
	}
	id = jobs_next_prestage_id(a->jobs);
	job = jobs_new_job(a->jobs, id, uid, gid, user, profile, err,
			   sizeof(err));
	if (!job)
		goto fail;
	profile = NULL; /* the job's now */
	job->prestage = true;
	/* iostagectld's, for a job it expects to start here: a prediction,
	 * which must not cost data that jobs come back to. */
	job->speculative = cJSON_GetObjectItemCaseSensitive(req, "for_job") !=
			   NULL;
	switch (jobs_insert(a->jobs, job, &old, err, sizeof(err))) {
	case 0:
		break;
	case 1: /* cannot happen: the id is fresh */
		jobs_put(old);
		jobs_discard(job);
		job = NULL;
		snprintf(err, sizeof(err), "prestage id %u in use", id);
		goto fail;
	default:
		goto fail;
	}
	if (stage_start(a->stage, job, err, sizeof(err)) < 0) {
		jobs_remove(job);
		goto fail;
	}
	log_info("prestage %u: %s for %s (uid %u) on tier '%s'", id,
		 job->profile->datasets[0].path, user, (unsigned)uid,
		 job->profile->datasets[0].tier);
	reply = proto_reply_ok();
	if (reply) {
		cJSON_AddNumberToObject(reply, "id", id);
		cJSON_AddStringToObject(reply, "state", "staging");
		cJSON_AddStringToObject(reply, "tier",
					job->profile->datasets[0].tier);
		cJSON_AddStringToObject(reply, "user", user);
	}
	jobs_put(job);
	cJSON_Delete(p);
	free(text);
	return reply;
fail:
	profile_destroy(profile);
	jobs_put(job);
	cJSON_Delete(p);
	free(text);
	return proto_reply_error("prestage refused: %s", err);
}

/* The node channel's `prestage` (iostagectld's pre-staging; peer_ops.c),
 * registered with peer_set_prestage by main(). */
cJSON *ops_prestage_root(struct agent *a, const cJSON *req)
{
	struct ops_caller root = { 0, 0, 0 };

	return op_prestage(a, &root, req);
}

/* cache_ls {tier?}: the peer's entries (root: everyone's). */
static cJSON *op_cache_ls(struct agent *a, const struct ops_caller *c,
			  const cJSON *req)
{
	char err[CONF_ERR_MAX];
	cJSON *r, *arr, *e, *next;
	int t = opt_tier(a, req, err, sizeof(err));

	if (t == -2)
		return proto_reply_error("%s", err);
	arr = cache_ls_json(a->cache, c->uid);
	if (!arr)
		return proto_reply_error("out of memory");
	if (t >= 0) {
		for (e = arr->child; e; e = next) {
			const cJSON *tn =
			    cJSON_GetObjectItemCaseSensitive(e, "tier");

			next = e->next;
			if (!cJSON_IsString(tn) ||
			    strcmp(tn->valuestring, a->conf->tiers[t].name))
				cJSON_Delete(
				    cJSON_DetachItemViaPointer(arr, e));
		}
	}
	r = proto_reply_ok();
	if (!r) {
		cJSON_Delete(arr);
		return NULL;
	}
	cJSON_AddItemToObject(r, "entries", arr);
	return r;
}

/* cache_evict {key | path, tier?, user?}: remove unpinned versions. */
static cJSON *op_cache_evict(struct agent *a, const struct ops_caller *c,
			     const cJSON *req)
{
	char err[CONF_ERR_MAX], user[JOBS_USER_MAX], norm[CONF_PATH_MAX];
	const char *key, *path, *who;
	cJSON *arr, *r, *e;
	uid_t uid = c->uid;
	gid_t gid;
	double bytes = 0;
	int t = opt_tier(a, req, err, sizeof(err));

	if (t == -2 || opt_string(req, "key", &key, err, sizeof(err)) < 0 ||
	    opt_string(req, "path", &path, err, sizeof(err)) < 0 ||
	    opt_string(req, "user", &who, err, sizeof(err)) < 0)
		goto fail;
	if (!key == !path) {
		snprintf(err, sizeof(err),
			 "give exactly one of 'key' and "
			 "'path'");
		goto fail;
	}
	if (key && (strlen(key) != CACHE_KEY_LEN ||
		    strspn(key, "0123456789abcdef") != CACHE_KEY_LEN)) {
		snprintf(err, sizeof(err),
			 "key 'key': must be %d lowercase hex "
			 "digits",
			 CACHE_KEY_LEN);
		goto fail;
	}
	if (path && pathsafe_normalize(path, norm, sizeof(norm), err,
				       sizeof(err)) < 0) {
		char why[CONF_ERR_MAX];

		snprintf(why, sizeof(why), "key 'path': %.480s", err);
		snprintf(err, sizeof(err), "%s", why);
		goto fail;
	}
	if (who) {
		if (c->uid != 0) {
			snprintf(err, sizeof(err),
				 "permission denied: key 'user' needs root "
				 "(peer uid %u)",
				 (unsigned)c->uid);
			goto fail;
		}
		if (lookup_user(who, 0, &uid, &gid, user, sizeof(user), err,
				sizeof(err)) < 0)
			goto fail;
	}
	/* Root naming a path without a user means every user's entry of
	 * that source. */
	arr = cache_evict(a->cache, c->uid, key, path ? norm : NULL, uid,
			  path && c->uid == 0 && !who, t, err, sizeof(err));
	if (!arr)
		goto fail;
	cJSON_ArrayForEach(e, arr) {
		const cJSON *b = cJSON_GetObjectItemCaseSensitive(e, "bytes");

		if (cJSON_IsNumber(b))
			bytes += b->valuedouble;
	}
	r = proto_reply_ok();
	if (!r) {
		cJSON_Delete(arr);
		return NULL;
	}
	cJSON_AddItemToObject(r, "evicted", arr);
	cJSON_AddNumberToObject(r, "bytes", bytes);
	return r;
fail:
	return proto_reply_error("%s", err);
}

op_table ops_cache_table = {
	{ "prestage", op_prestage, false },
	{ "cache_ls", op_cache_ls, false },
	{ "cache_evict", op_cache_evict, false },
	{ NULL, NULL, false },
};
