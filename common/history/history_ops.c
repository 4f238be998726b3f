/* history_ops.c - the history and recommendation ops (common/net/proto.h),
 * answered from this process's history (history_db()): by iostagectld for
 * the cluster, and by iostaged for its node when no service is configured.
 *
 * Authorization: a user sees only records whose uid is theirs and gets
 * recommendations from their own history; a caller with read_all (root,
 * and on the service the AdminGroup) sees and asks for anyone. The
 * caller's identity is the transport's (SO_PEERCRED on the node's socket,
 * the MUNGE credential on the service), never the request's.
 * When the history is disabled every op answers "history disabled: why".
 */
#define _GNU_SOURCE
#include <errno.h>
#include <math.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>
#include <time.h>

#include <cJSON.h>

#include "common/config/conf.h"
#include "common/config/pathsafe.h"
#include "common/history/history.h"
#include "common/history/history_ops.h"
#include "common/history/jobfacts.h"
#include "common/history/recommend.h"
#include "common/net/proto.h"

#define HISTORY_OPS_USER_MAX 256
#define HISTORY_OPS_LIST_DEFAULT 100
#define HISTORY_OPS_RUNS 64 /* newest comparable runs a query weighs */

/* S made safe for one message (control bytes become '?'). */
static const char *printable(const char *s, char *buf, size_t len)
{
	snprintf(buf, len, "%s", s);
	for (size_t i = 0; buf[i]; i++)
		if ((unsigned char)buf[i] < 0x20 || buf[i] == 0x7f)
			buf[i] = '?';
	return buf;
}

/* The user name of UID, or of NAME (checked to exist): 0, or -1 + err. */
static int user_name(uid_t uid, const char *name, char *ret, size_t len,
		     uid_t *ret_uid, char *err, size_t errlen)
{
	struct passwd pw, *res = NULL;
	char buf[16384], shown[64];

	if (name ? getpwnam_r(name, &pw, buf, sizeof(buf), &res)
		 : getpwuid_r(uid, &pw, buf, sizeof(buf), &res))
		res = NULL;
	if (!res || strlen(pw.pw_name) >= len) {
		if (name)
			snprintf(err, errlen, "key 'user': no such user '%s'",
				 printable(name, shown, sizeof(shown)));
		else
			snprintf(err, errlen, "uid %u has no user name",
				 (unsigned)uid);
		return -1;
	}
	snprintf(ret, len, "%s", pw.pw_name);
	if (ret_uid)
		*ret_uid = pw.pw_uid;
	return 0;
}

/* The user a query is about: the caller, or (read_all only) the
 * request's. */
static int query_user(const struct hist_caller *c, const cJSON *req,
		      bool *ret_given, char *ret, size_t len, uid_t *ret_uid,
		      char *err, size_t errlen)
{
	const cJSON *u = cJSON_GetObjectItemCaseSensitive(req, "user");
	char own[HISTORY_OPS_USER_MAX];

	*ret_given = u != NULL;
	if (!u)
		return user_name(c->uid, NULL, ret, len, ret_uid, err, errlen);
	if (!cJSON_IsString(u) || !u->valuestring[0]) {
		snprintf(err, errlen, "key 'user': must be a user name");
		return -1;
	}
	if (!c->read_all) {
		if (user_name(c->uid, NULL, own, sizeof(own), NULL, err,
			      errlen) < 0)
			return -1;
		if (strcmp(own, u->valuestring) != 0) {
			snprintf(err, errlen,
				 "key 'user': only root or AdminGroup "
				 "may read another user's history");
			return -1;
		}
	}
	return user_name(0, u->valuestring, ret, len, ret_uid, err, errlen);
}

static cJSON *disabled_or(struct history **ret)
{
	char why[CONF_ERR_MAX];

	*ret = history_db(why, sizeof(why));
	return *ret ? NULL : proto_reply_error("%s", why);
}

cJSON *hist_op_put(const struct hist_caller *c, const cJSON *req)
{
	const cJSON *rec = cJSON_GetObjectItemCaseSensitive(req, "record");
	char err[CONF_ERR_MAX];
	struct history *h;
	cJSON *reply;

	(void)c;
	if ((reply = disabled_or(&h)))
		return reply;
	if (!cJSON_IsObject(rec))
		return proto_reply_error("key 'record': missing or not an "
					 "object");
	if (history_record_job(rec, err, sizeof(err)) < 0)
		return proto_reply_error("history_put: %s", err);
	reply = proto_reply_ok();
	cJSON_AddNumberToObject(reply, "job", jobfacts_num(rec, "job", 0));
	return reply;
}

cJSON *hist_op_get(const struct hist_caller *c, const cJSON *req)
{
	char err[CONF_ERR_MAX];
	struct history *h;
	cJSON *reply, *rec;
	uint32_t id;

	if ((reply = disabled_or(&h)))
		return reply;
	if (proto_get_job_id(req, &id, err, sizeof(err)) < 0)
		return proto_reply_error("%s", err);
	rec = history_get(h, id, err, sizeof(err));
	/* Another user's job answers like a missing one: its existence is
	 * not theirs to learn. */
	if (!rec ||
	    (!c->read_all && jobfacts_num(rec, "uid", -1) != (double)c->uid)) {
		bool missing = !rec && errno == ENOENT;

		cJSON_Delete(rec);
		if (rec || missing)
			return proto_reply_error("job %u: not in your history",
						 id);
		return proto_reply_error("%s", err);
	}
	reply = proto_reply_ok();
	cJSON_AddItemToObject(reply, "record", rec);
	return reply;
}

cJSON *hist_op_list(const struct hist_caller *c, const cJSON *req)
{
	char err[CONF_ERR_MAX], user[HISTORY_OPS_USER_MAX];
	double since = jobfacts_num(req, "since", 0);
	double limit = jobfacts_num(req, "limit", HISTORY_OPS_LIST_DEFAULT);
	struct history *h;
	cJSON *reply, *list;
	bool given;

	if ((reply = disabled_or(&h)))
		return reply;
	if (limit < 1 || limit > HISTORY_LIST_MAX || limit != floor(limit))
		return proto_reply_error("key 'limit': must be 1..%d",
					 HISTORY_LIST_MAX);
	if (since < 0)
		return proto_reply_error("key 'since': must be unix seconds");
	if (query_user(c, req, &given, user, sizeof(user), NULL, err,
		       sizeof(err)) < 0)
		return proto_reply_error("%s", err);
	list = history_list(h, c->read_all && !given ? NULL : user, since,
			    (unsigned)limit, err, sizeof(err));
	if (!list)
		return proto_reply_error("%s", err);
	reply = proto_reply_ok();
	cJSON_AddItemToObject(reply, "records", list);
	return reply;
}

/* The tiers as the rules see them: capacity from the config, else the
 * file system's size. */
static size_t rule_tiers(const struct conf *conf, struct recommend_tier *t)
{
	for (size_t i = 0; i < conf->ntiers; i++) {
		struct statvfs sv;

		snprintf(t[i].name, sizeof(t[i].name), "%s",
			 conf->tiers[i].name);
		t[i].capacity = conf->tiers[i].capacity;
		if (!t[i].capacity && statvfs(conf->tiers[i].path, &sv) == 0)
			t[i].capacity = (uint64_t)sv.f_blocks * sv.f_frsize;
	}
	return conf->ntiers;
}

/* The job name sbatch would give SCRIPT when it says none: its file name.
 * The daemon never opens the script: the client reads #SBATCH lines. */
static const char *script_job_name(const char *script)
{
	const char *slash = strrchr(script, '/');

	return slash ? slash + 1 : script;
}

static int check_name(const char *key, const char *s, char *err, size_t errlen)
{
	if (strlen(s) >= 256) {
		snprintf(err, errlen, "key '%s': longer than 255 bytes", key);
		return -1;
	}
	for (const char *p = s; *p; p++)
		if ((unsigned char)*p < 0x20 || *p == 0x7f) {
			snprintf(err, errlen,
				 "key '%s': contains a control character", key);
			return -1;
		}
	return 0;
}

cJSON *hist_op_recommend(const struct hist_caller *c, const cJSON *req)
{
	char err[CONF_ERR_MAX], user[HISTORY_OPS_USER_MAX];
	char dataset[CONF_PATH_MAX], reason[128];
	struct recommend_tier tiers[CONF_MAX_TIERS];
	const struct conf *conf = history_conf();
	const char *job_name = NULL, *script = NULL, *ds = NULL;
	struct recommend_ctx ctx;
	struct history *h;
	cJSON *reply, *runs, *res, *query;
	double since;
	bool given;
	uid_t uid = 0;

	if ((reply = disabled_or(&h)))
		return reply;
	if (query_user(c, req, &given, user, sizeof(user), &uid, err,
		       sizeof(err)) < 0)
		return proto_reply_error("%s", err);
	job_name = jobfacts_str(req, "job_name", NULL);
	script = jobfacts_str(req, "script", NULL);
	ds = jobfacts_str(req, "dataset", NULL);
	if ((job_name && check_name("job_name", job_name, err, sizeof(err))) ||
	    (script && check_name("script", script, err, sizeof(err))))
		return proto_reply_error("%s", err);
	if (!job_name && script)
		job_name = script_job_name(script);
	if (ds && pathsafe_normalize(ds, dataset, sizeof(dataset), reason,
				     sizeof(reason)) < 0)
		return proto_reply_error("key 'dataset': %s", reason);
	since = (double)time(NULL) - (double)conf->recommend_window;
	if (job_name)
		runs = history_runs_by_app(h, user, job_name, since,
					   HISTORY_OPS_RUNS, err, sizeof(err));
	else if (ds)
		/* A user's query weighs their own jobs; an admin's,
		 * everyone's unless it names a user. */
		runs = history_runs_by_dataset(
		    h, dataset, c->read_all && !given ? -1 : (int64_t)uid,
		    since, HISTORY_OPS_RUNS, err, sizeof(err));
	else
		runs = history_runs_by_user(h, user, since, HISTORY_OPS_RUNS,
					    err, sizeof(err));
	if (!runs)
		return proto_reply_error("%s", err);
	if (job_name && ds) {
		/* by application, restricted to runs that used the dataset */
		cJSON *r = runs->child, *next;

		for (; r; r = next) {
			const cJSON *d;
			bool uses = false;

			next = r->next;
			cJSON_ArrayForEach(
			    d, cJSON_GetObjectItemCaseSensitive(r, "ds"))
				if (!strcmp(jobfacts_str(d, "src", ""),
					    dataset))
					uses = true;
			if (!uses) /* the arena frees it with the rest */
				cJSON_DetachItemViaPointer(runs, r);
		}
	}
	memset(&ctx, 0, sizeof(ctx));
	ctx.tiers = tiers;
	ctx.ntiers = rule_tiers(conf, tiers);
	ctx.default_tier = conf->default_tier;
	ctx.min_jobs = conf->recommend_min_jobs;
	ctx.ost_count = conf->recommend_ost_count;
	res = recommend_run(runs, &ctx);
	history_runs_free(runs);
	if (!res)
		return proto_reply_error("recommend: out of memory");
	reply = proto_reply_ok();
	query = cJSON_AddObjectToObject(reply, "query");
	cJSON_AddStringToObject(query, "user", user);
	if (job_name)
		cJSON_AddStringToObject(query, "job_name", job_name);
	if (ds)
		cJSON_AddStringToObject(query, "dataset", dataset);
	cJSON_AddNumberToObject(query, "window_s", conf->recommend_window);
	cJSON_AddItemToObject(reply, "runs",
			      cJSON_DetachItemFromObject(res, "runs"));
	cJSON_AddItemToObject(reply, "recommendations",
			      cJSON_DetachItemFromObject(res,
							 "recommendations"));
	cJSON_AddItemToObject(reply, "skipped",
			      cJSON_DetachItemFromObject(res, "skipped"));
	cJSON_AddItemToObject(
	    reply, "profile",
	    recommend_profile(
		cJSON_GetObjectItemCaseSensitive(reply, "recommendations"),
		RECOMMEND_APPLY_CONFIDENCE));
	cJSON_AddBoolToObject(reply, "hint", conf->recommend_hint);
	cJSON_Delete(res);
	return reply;
}
