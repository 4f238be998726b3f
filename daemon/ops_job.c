/* ops_job.c - the ops of a job's life on this node: stage and wait (the
 * Prolog), abort (its deadline), job_env (each task), finish (the
 * Epilog). The listing and the reply forms are common/net/proto.h's.
 *
 * Handlers only read the request and call into jobs.c / stage.c; they
 * never block except "wait" (on a condition variable, with a deadline)
 * and "abort"/"finish" (bounded waits for a staging thread). stage,
 * abort and finish are root's (the table says so, dispatch checks it);
 * wait and job_env answer root or the job's owner only (job_for).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cJSON.h>

#include "common/base/jsonbuf.h"
#include "common/base/log.h"
#include "common/config/joblayout.h"
#include "common/config/profile.h"
#include "common/history/history.h"
#include "common/net/proto.h"
#include "daemon/agent.h"
#include "daemon/cluster/forward.h"
#include "daemon/cluster/jobwide.h"
#include "daemon/cluster/parts.h"
#include "daemon/jobs.h"
#include "daemon/ops.h"
#include "daemon/staging/drain.h"
#include "daemon/staging/stage.h"
#include "daemon/telemetry/stats.h"
#include "daemon/telemetry/telemetry.h"

#define OPS_THREAD_WAIT_S 30 /* abort/finish wait for a staging thread */
#define OPS_PW_BUF_MAX (1024 * 1024)

static void add_error(cJSON *o, const char *error)
{
	if (error && *error)
		cJSON_AddStringToObject(o, "error", error);
	else
		cJSON_AddNullToObject(o, "error");
}

/* A reply carrying a job's view: ok, state, error, counters. */
static cJSON *reply_view(const struct job_view *v)
{
	cJSON *r = proto_reply_ok();

	if (!r)
		return NULL;
	cJSON_AddStringToObject(r, "state", jobs_state_name(v->state));
	add_error(r, v->error);
	cJSON_AddNumberToObject(r, "bytes", (double)v->bytes);
	cJSON_AddNumberToObject(r, "files", (double)v->files);
	cJSON_AddNumberToObject(r, "total_bytes", (double)v->total_bytes);
	cJSON_AddNumberToObject(r, "total_files", (double)v->total_files);
	return r;
}

/* The job ID for client C: root, or the job's owner. NULL with err. */
static struct job *job_for(struct agent *a, const struct ops_caller *c,
			   uint32_t id, char *err, size_t errlen)
{
	struct job *job = jobs_get(a->jobs, id);

	if (!job) {
		snprintf(err, errlen, "unknown job %u", id);
		return NULL;
	}
	if (c->uid != 0 && c->uid != job->uid) {
		snprintf(err, errlen,
			 "permission denied: job %u belongs to another user "
			 "(peer uid %u)",
			 id, (unsigned)c->uid);
		jobs_put(job);
		return NULL;
	}
	return job;
}

/* Does USER exist with uid UID? 0, or -1 with err. */
static int check_user(const char *user, uid_t uid, char *err, size_t errlen)
{
	struct passwd pw, *res = NULL;
	size_t len = 16384;
	char *buf = NULL;
	int r;

	for (;;) {
		char *b = realloc(buf, len);

		if (!b) {
			free(buf);
			snprintf(err, errlen, "out of memory");
			return -1;
		}
		buf = b;
		r = getpwnam_r(user, &pw, buf, len, &res);
		if (r != ERANGE || len >= OPS_PW_BUF_MAX)
			break;
		len *= 2;
	}
	if (r != 0 || !res) {
		char shown[64];

		if (r != 0)
			snprintf(err, errlen,
				 "key 'user': cannot look up '%s': %s",
				 ops_printable(user, shown, sizeof(shown)),
				 strerror(r));
		else
			snprintf(err, errlen, "key 'user': no such user '%s'",
				 ops_printable(user, shown, sizeof(shown)));
		free(buf);
		return -1;
	}
	if (pw.pw_uid != uid) {
		snprintf(err, errlen,
			 "key 'user': user '%s' has uid %u, not %u", pw.pw_name,
			 (unsigned)pw.pw_uid, (unsigned)uid);
		free(buf);
		return -1;
	}
	free(buf);
	return 0;
}

/* The request's optional "nodes": a multi-node job's node names, the head
 * first (the Prolog's SLURM_JOB_NODELIST). 0 with *ret_n (0 when absent),
 * or -1 with err. RET gets pointers into REQ (room for JOBS_NODES_MAX). */
static int request_nodes(const cJSON *req, const char **ret, size_t *ret_n,
			 char *err, size_t errlen)
{
	const cJSON *arr = cJSON_GetObjectItemCaseSensitive(req, "nodes"), *e;
	char shown[CONF_NODE_MAX + 8];
	size_t n = 0;

	*ret_n = 0;
	if (!arr)
		return 0;
	if (!cJSON_IsArray(arr)) {
		snprintf(err, errlen,
			 "key 'nodes': must be an array of node "
			 "names");
		return -1;
	}
	cJSON_ArrayForEach(e, arr) {
		if (n == JOBS_NODES_MAX) {
			snprintf(err, errlen, "key 'nodes': more than %d",
				 JOBS_NODES_MAX);
			return -1;
		}
		if (!cJSON_IsString(e) || !conf_is_node_name(e->valuestring)) {
			snprintf(err, errlen,
				 "key 'nodes': '%s' is not a node "
				 "name",
				 cJSON_IsString(e)
				     ? ops_printable(e->valuestring, shown,
						     sizeof(shown))
				     : "?");
			return -1;
		}
		for (size_t i = 0; i < n; i++)
			if (!strcmp(ret[i], e->valuestring)) {
				snprintf(err, errlen,
					 "key 'nodes': '%s' listed "
					 "twice",
					 e->valuestring);
				return -1;
			}
		ret[n++] = e->valuestring;
	}
	*ret_n = n;
	return 0;
}

/* The request's profile, parsed, normalized and checked against OUR conf. */
static struct profile *request_profile(const struct conf *conf,
				       const cJSON *req, char *err,
				       size_t errlen)
{
	const cJSON *obj = cJSON_GetObjectItemCaseSensitive(req, "profile");
	char perr[CONF_ERR_MAX], *text;
	struct profile *p;

	if (!obj) {
		snprintf(err, errlen, "key 'profile': missing");
		return NULL;
	}
	if (!cJSON_IsObject(obj)) {
		snprintf(err, errlen, "key 'profile': must be an object");
		return NULL;
	}
	text = jsonbuf_dup(obj);
	if (!text) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	p = profile_parse_json(text, "stage request", perr, sizeof(perr));
	free(text);
	if (p && (profile_normalize(p, conf, perr, sizeof(perr)) < 0 ||
		  profile_validate(p, conf, PROFILE_CHECK_STRUCTURE, perr,
				   sizeof(perr)) < 0)) {
		profile_destroy(p);
		p = NULL;
	}
	if (!p)
		snprintf(err, errlen, "key 'profile': %.480s", perr);
	return p;
}

static cJSON *op_stage(struct agent *a, const struct ops_caller *c,
		       const cJSON *req)
{
	char err[CONF_ERR_MAX];
	struct profile *profile = NULL;
	struct job *job = NULL, *old = NULL;
	struct job_view v;
	uint32_t id, uid, gid;
	const char *user, **nodes = NULL;
	size_t nnodes = 0;
	cJSON *reply = NULL;
	int r;

	(void)c;
	nodes = calloc(JOBS_NODES_MAX, sizeof(*nodes));
	if (!nodes) {
		snprintf(err, sizeof(err), "out of memory");
		goto fail;
	}
	if (proto_get_job_id(req, &id, err, sizeof(err)) < 0 ||
	    request_nodes(req, nodes, &nnodes, err, sizeof(err)) < 0 ||
	    proto_get_u32(req, "uid", &uid, err, sizeof(err)) < 0 ||
	    proto_get_u32(req, "gid", &gid, err, sizeof(err)) < 0 ||
	    proto_get_string(req, "user", &user, err, sizeof(err)) < 0)
		goto fail;
	if (uid == (uint32_t)-1 || gid == (uint32_t)-1) {
		snprintf(err, sizeof(err),
			 "key '%s': 4294967295 is not a "
			 "valid id",
			 uid == (uint32_t)-1 ? "uid" : "gid");
		goto fail;
	}
	if (strlen(user) >= JOBS_USER_MAX) {
		snprintf(err, sizeof(err), "key 'user': longer than %d bytes",
			 JOBS_USER_MAX - 1);
		goto fail;
	}
	if (check_user(user, uid, err, sizeof(err)) < 0)
		goto fail;
	profile = request_profile(a->conf, req, err, sizeof(err));
	if (!profile)
		goto fail;
	job = jobs_new_job(a->jobs, id, uid, gid, user, profile, err,
			   sizeof(err));
	if (!job)
		goto fail;
	profile = NULL; /* the job's now */
	if (nnodes > 1) {
		bool self = false;

		if (jobs_set_nodes(job, nodes, nnodes, err, sizeof(err)) < 0)
			goto fail;
		for (size_t i = 0; i < nnodes; i++)
			self |= !strcmp(nodes[i], a->conf->node_name);
		if (!self)
			log_warningx("job %u: this node's NodeName '%s' is not "
				     "in the job's node list; set NodeName= to "
				     "the Slurm node name",
				     id, a->conf->node_name);
	}

	r = jobs_insert(a->jobs, job, &old, err, sizeof(err));
	if (r == 1) {
		/* Idempotent: a second stage answers with the current state. */
		jobs_discard(job);
		job = NULL;
		if (old->uid != uid) {
			snprintf(err, sizeof(err),
				 "job %u is already known for uid %u", id,
				 (unsigned)old->uid);
			jobs_put(old);
			goto fail;
		}
		jobs_view(old, &v);
		jobs_put(old);
		free(nodes);
		return reply_view(&v);
	}
	if (r < 0)
		goto fail;
	if (stage_start(a->stage, job, err, sizeof(err)) < 0) {
		jobs_remove(job);
		goto fail;
	}
	if (nnodes > 1)
		log_info("job %u: staging %zu dataset%s for %s (uid %u), node "
			 "of %zu (head %s)",
			 id, job->profile->ndatasets,
			 job->profile->ndatasets == 1 ? "" : "s", user, uid,
			 nnodes, nodes[0]);
	else
		log_info("job %u: staging %zu dataset%s for %s (uid %u)", id,
			 job->profile->ndatasets,
			 job->profile->ndatasets == 1 ? "" : "s", user, uid);
	jobs_view(job, &v);
	reply = reply_view(&v);
	jobs_put(job);
	free(nodes);
	return reply;
fail:
	log_warningx("stage refused: %s", err);
	profile_destroy(profile);
	jobs_put(job);
	free(nodes);
	return proto_reply_error("%s", err);
}

static cJSON *op_wait(struct agent *a, const struct ops_caller *c,
		      const cJSON *req)
{
	char err[CONF_ERR_MAX];
	struct job_view v;
	struct job *job;
	uint32_t id, timeout = a->conf->stage_timeout;
	time_t t0;

	if (proto_get_job_id(req, &id, err, sizeof(err)) < 0)
		goto fail;
	if (cJSON_GetObjectItemCaseSensitive(req, "timeout") &&
	    proto_get_u32(req, "timeout", &timeout, err, sizeof(err)) < 0)
		goto fail;
	if (timeout > PROFILE_TIMEOUT_MAX)
		timeout = PROFILE_TIMEOUT_MAX;
	job = job_for(a, c, id, err, sizeof(err));
	if (!job)
		goto fail;
	t0 = time(NULL);
	jobs_wait(job, timeout, &v);
	if (jobs_multi_node(job)) {
		/* The job-wide outcome: every node applies the same. */
		time_t spent = time(NULL) - t0;
		char node[CONF_NODE_MAX], waiting[CONF_NODE_MAX];
		cJSON *r;

		jobwide_wait(a, job,
			     spent < (time_t)timeout ? timeout - (unsigned)spent
						     : 0,
			     &v, node, waiting, sizeof(node));
		jobs_put(job);
		r = reply_view(&v);
		if (r && node[0])
			cJSON_AddStringToObject(r, "failed_node", node);
		if (r && waiting[0])
			cJSON_AddStringToObject(r, "waiting_for", waiting);
		return r;
	}
	jobs_put(job);
	return reply_view(&v);
fail:
	return proto_reply_error("%s", err);
}

static cJSON *op_abort(struct agent *a, const struct ops_caller *c,
		       const cJSON *req)
{
	const cJSON *reason = cJSON_GetObjectItemCaseSensitive(req, "reason");
	char err[CONF_ERR_MAX], why[CONF_ERR_MAX];
	struct job_view v;
	struct job *job;
	uint32_t id;

	(void)a;
	if (proto_get_job_id(req, &id, err, sizeof(err)) < 0)
		goto fail;
	if (reason && !cJSON_IsString(reason)) {
		snprintf(err, sizeof(err), "key 'reason': must be a string");
		goto fail;
	}
	ops_printable(reason && reason->valuestring[0] ? reason->valuestring
						       : "aborted",
		      why, sizeof(why));
	job = job_for(a, c, id, err, sizeof(err));
	if (!job)
		goto fail;
	jobs_abort(job, why, OPS_THREAD_WAIT_S, &v);
	jobs_put(job);
	log_info("job %u: aborted: %s", id, why);
	return reply_view(&v);
fail:
	return proto_reply_error("%s", err);
}

static cJSON *op_job_env(struct agent *a, const struct ops_caller *c,
			 const cJSON *req)
{
	struct joblayout_env *env = NULL;
	char err[CONF_ERR_MAX];
	struct job_view v;
	struct job *job;
	cJSON *r = NULL, *vars;
	bool fallback = false, want_env = false;
	uint32_t id;
	size_t i;

	if (proto_get_job_id(req, &id, err, sizeof(err)) < 0)
		return proto_reply_error("%s", err);
	job = job_for(a, c, id, err, sizeof(err));
	if (!job)
		return proto_reply_error("%s", err);
	jobs_view(job, &v);
	if (job->profile && v.state == JOB_STAGED)
		want_env = true;
	else if (job->profile && v.state == JOB_FAILED &&
		 jobs_policy(job) == STAGE_FAILURE_FALLBACK)
		want_env = fallback = true;
	if (want_env) {
		/* ~46 KiB: not on a connection thread's stack. */
		env = malloc(sizeof(*env));
		if (!env) {
			r = proto_reply_error("out of memory");
			goto out;
		}
		if (joblayout_env(a->conf, job->profile, id, fallback, env) <
		    0) {
			r = proto_reply_error(
			    "cannot build the environment of job %u: %s", id,
			    strerror(errno));
			goto out;
		}
	}
	r = proto_reply_ok();
	if (!r)
		goto out;
	cJSON_AddStringToObject(r, "state", jobs_state_name(v.state));
	if (v.state == JOB_FAILED && jobs_multi_node(job)) {
		/* Every node of the job says which one failed it. */
		char node[CONF_NODE_MAX],
		    named[CONF_ERR_MAX + 2 * CONF_NODE_MAX];

		jobs_failed_node(job, node, sizeof(node));
		if (!node[0])
			snprintf(named, sizeof(named), "node %s: %s",
				 a->conf->node_name, v.error);
		else
			snprintf(named, sizeof(named), "%s", v.error);
		add_error(r, named);
	} else {
		add_error(r, v.error);
	}
	cJSON_AddBoolToObject(r, "fallback", fallback);
	/* its tasks read a spread dataset's view: the plugin preloads
	 * libiostage-localread.so (spank/localread.c) */
	cJSON_AddBoolToObject(r, "spread",
			      v.state == JOB_STAGED && !fallback &&
				  jobs_spread(job));
	vars = cJSON_AddObjectToObject(r, "env");
	for (i = 0; env && vars && i < env->n; i++)
		cJSON_AddStringToObject(vars, env->vars[i].name,
					env->vars[i].value);
out:
	free(env);
	jobs_put(job);
	return r;
}

static cJSON *op_finish(struct agent *a, const struct ops_caller *c,
			const cJSON *req)
{
	char err[CONF_ERR_MAX];
	cJSON *record;
	uint32_t id;

	(void)c;
	if (proto_get_job_id(req, &id, err, sizeof(err)) < 0)
		return proto_reply_error("%s", err);
	/* drain.c: outputs go to the PFS (or aside, up to DrainTimeout)
	 * before jobs_finish removes the job's directories. */
	if (drain_finish(a->drain, id, err, sizeof(err)) < 0) {
		log_warningx("%s", err);
		return proto_reply_error("%s", err);
	}
	/* telemetry.c closes the job's record; the history files it. A
	 * history that cannot take it costs the record, never the job. */
	record = telemetry_finish_job(a->telemetry, id);
	if (record && forward_enabled(a->forward)) {
		/* forward.c: with iostagectld, every node's record (its part
		 * of a multi-node job's) is on disk in the outbox before the
		 * Epilog returns; the service files and merges. */
		if (forward_put(a->forward, id, record, err, sizeof(err)) < 0)
			log_errorx("job %u: record lost: %s", id, err);
	} else if (record && parts_finish(a->parts, id, record) == 0 &&
		   history_record_job(record, err, sizeof(err)) < 0) {
		/* parts.c: without a service, a multi-node job's parts make
		 * one record, filed by its head node (the others send theirs
		 * there). */
		log_warningx("job %u: not filed in the history: %s", id, err);
	}
	if (record)
		stats_job_record(a->stats, id,
				 record); /* its last /metrics series */
	cJSON_Delete(record);
	if (jobs_finish(a->jobs, id, OPS_THREAD_WAIT_S, err, sizeof(err)) < 0) {
		bool again = errno == EBUSY;
		cJSON *r;

		log_warningx("%s", err);
		/* A worker stuck in a hung PFS outlives its SIGKILL: the
		 * Epilog asks again (prolog/epilog.c), or nobody would ever
		 * remove the job's directories and pins. */
		r = proto_reply_error("%s", err);
		if (r && again)
			cJSON_AddTrueToObject(r, "again");
		return r;
	}
	log_info("job %u: finished, private directories removed", id);
	return proto_reply_ok();
}

op_table ops_job_table = {
	{ "stage", op_stage, true },   { "wait", op_wait, false },
	{ "abort", op_abort, true },   { "job_env", op_job_env, false },
	{ "finish", op_finish, true }, { NULL, NULL, false },
};
