/* server.c - the socket, the connection threads and the op handlers.
 *
 * Every request line goes through dispatch(): parse (proto_parse_request),
 * look the op up in a table, check the peer may use it, call its handler.
 * Handlers only read the request and call into jobs.c / stage.c /
 * tiers.c; they never block except "wait" (on a condition variable, with a
 * deadline) and "abort"/"finish" (bounded waits for a staging thread).
 *
 * What a client sends can never end the connection thread early except by
 * closing the socket, staying silent for SERVER_IDLE_MS, or not reading our
 * replies for SO_SNDTIMEO: errors are answered and the loop goes on.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <cJSON.h>

#include "common/config/joblayout.h"
#include "common/base/jsonbuf.h"
#include "common/base/log.h"
#include "common/config/pathsafe.h"
#include "common/config/profile.h"
#include "common/net/proto.h"
#include "daemon/staging/cache.h"
#include "daemon/staging/drain.h"
#include "daemon/cluster/forward.h"
#include "daemon/fsutil.h"
#include "common/history/history.h"
#include "daemon/telemetry/history_local.h"
#include "daemon/jobs.h"
#include "daemon/cluster/jobwide.h"
#include "daemon/ops.h"
#include "daemon/cluster/parts.h"
#include "daemon/cluster/peer.h"
#include "daemon/server.h"
#include "daemon/staging/stage.h"
#include "daemon/telemetry/stats.h"
#include "daemon/telemetry/telemetry.h"
#include "daemon/staging/tiers.h"

#define SERVER_BACKLOG 128
#define SERVER_SNDTIMEO_S 10     /* a client that does not read is dropped */
#define SERVER_PING_MS 2000      /* probing an existing socket at start */
#define SERVER_THREAD_WAIT_S 30  /* abort/finish wait for a staging thread */
#define SERVER_PW_BUF_MAX (1024 * 1024)

struct client {
	int fd;
	struct peer peer; /* from SO_PEERCRED at accept */
	struct client *next;
};

static const struct conf *server_conf;
static struct cache *server_cache;
static const char *server_conf_path;
static char sock_dir[CONF_SOCKET_MAX];
static int listen_fd = -1;
static dev_t sock_dev;
static ino_t sock_ino;
static time_t started;

static pthread_mutex_t clients_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t clients_cond = PTHREAD_COND_INITIALIZER;
static struct client *clients;
static unsigned nclients;

/* --- small helpers ------------------------------------------------------------ */

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
static struct job *job_for(const struct peer *c, uint32_t id, char *err,
			   size_t errlen)
{
	struct job *job = jobs_get(id);

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

/* --- ops ------------------------------------------------------------------------ */

static cJSON *op_ping(const struct peer *c, const cJSON *req)
{
	cJSON *r = proto_reply_ok();

	(void)c;
	(void)req;
	if (r) {
		cJSON_AddStringToObject(r, "version", IOSTAGE_VERSION);
		cJSON_AddNumberToObject(r, "pid", getpid());
	}
	return r;
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
		if (r != ERANGE || len >= SERVER_PW_BUF_MAX)
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
		snprintf(err, errlen, "key 'user': user '%s' has uid %u, not %u",
			 pw.pw_name, (unsigned)pw.pw_uid, (unsigned)uid);
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
		snprintf(err, errlen, "key 'nodes': must be an array of node "
			 "names");
		return -1;
	}
	cJSON_ArrayForEach(e, arr)
	{
		if (n == JOBS_NODES_MAX) {
			snprintf(err, errlen, "key 'nodes': more than %d",
				 JOBS_NODES_MAX);
			return -1;
		}
		if (!cJSON_IsString(e) || !conf_is_node_name(e->valuestring)) {
			snprintf(err, errlen, "key 'nodes': '%s' is not a node "
				 "name",
				 cJSON_IsString(e)
					 ? ops_printable(e->valuestring, shown,
							 sizeof(shown))
					 : "?");
			return -1;
		}
		for (size_t i = 0; i < n; i++)
			if (!strcmp(ret[i], e->valuestring)) {
				snprintf(err, errlen, "key 'nodes': '%s' listed "
					 "twice", e->valuestring);
				return -1;
			}
		ret[n++] = e->valuestring;
	}
	*ret_n = n;
	return 0;
}

/* The request's profile, parsed, normalized and checked against OUR conf. */
static struct profile *request_profile(const cJSON *req, char *err,
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
	if (p && (profile_normalize(p, server_conf, perr, sizeof(perr)) < 0 ||
		  profile_validate(p, server_conf, PROFILE_CHECK_STRUCTURE,
				   perr, sizeof(perr)) < 0)) {
		profile_destroy(p);
		p = NULL;
	}
	if (!p)
		snprintf(err, errlen, "key 'profile': %.480s", perr);
	return p;
}

static cJSON *op_stage(const struct peer *c, const cJSON *req)
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
		snprintf(err, sizeof(err), "key '%s': 4294967295 is not a "
			 "valid id", uid == (uint32_t)-1 ? "uid" : "gid");
		goto fail;
	}
	if (strlen(user) >= JOBS_USER_MAX) {
		snprintf(err, sizeof(err), "key 'user': longer than %d bytes",
			 JOBS_USER_MAX - 1);
		goto fail;
	}
	if (check_user(user, uid, err, sizeof(err)) < 0)
		goto fail;
	profile = request_profile(req, err, sizeof(err));
	if (!profile)
		goto fail;
	job = jobs_create(id, uid, gid, user, profile, err, sizeof(err));
	if (!job)
		goto fail;
	profile = NULL; /* the job's now */
	if (nnodes > 1) {
		bool self = false;

		if (jobs_set_nodes(job, nodes, nnodes, err, sizeof(err)) < 0)
			goto fail;
		for (size_t i = 0; i < nnodes; i++)
			self |= !strcmp(nodes[i], server_conf->node_name);
		if (!self)
			log_warningx("job %u: this node's NodeName '%s' is not "
				     "in the job's node list; set NodeName= to "
				     "the Slurm node name",
				     id, server_conf->node_name);
	}

	r = jobs_insert(job, &old, err, sizeof(err));
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
	if (stage_start(job, err, sizeof(err)) < 0) {
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

static cJSON *op_wait(const struct peer *c, const cJSON *req)
{
	char err[CONF_ERR_MAX];
	struct job_view v;
	struct job *job;
	uint32_t id, timeout = server_conf->stage_timeout;
	time_t t0;

	if (proto_get_job_id(req, &id, err, sizeof(err)) < 0)
		goto fail;
	if (cJSON_GetObjectItemCaseSensitive(req, "timeout") &&
	    proto_get_u32(req, "timeout", &timeout, err, sizeof(err)) < 0)
		goto fail;
	if (timeout > PROFILE_TIMEOUT_MAX)
		timeout = PROFILE_TIMEOUT_MAX;
	job = job_for(c, id, err, sizeof(err));
	if (!job)
		goto fail;
	t0 = time(NULL);
	jobs_wait(job, timeout, &v);
	if (jobs_multi_node(job)) {
		/* The job-wide outcome: every node applies the same. */
		time_t spent = time(NULL) - t0;
		char node[CONF_NODE_MAX], waiting[CONF_NODE_MAX];
		cJSON *r;

		jobwide_wait(job, spent < (time_t)timeout
					  ? timeout - (unsigned)spent
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

static cJSON *op_abort(const struct peer *c, const cJSON *req)
{
	const cJSON *reason = cJSON_GetObjectItemCaseSensitive(req, "reason");
	char err[CONF_ERR_MAX], why[CONF_ERR_MAX];
	struct job_view v;
	struct job *job;
	uint32_t id;

	if (proto_get_job_id(req, &id, err, sizeof(err)) < 0)
		goto fail;
	if (reason && !cJSON_IsString(reason)) {
		snprintf(err, sizeof(err), "key 'reason': must be a string");
		goto fail;
	}
	ops_printable(reason && reason->valuestring[0] ? reason->valuestring
						   : "aborted",
		  why, sizeof(why));
	job = job_for(c, id, err, sizeof(err));
	if (!job)
		goto fail;
	jobs_abort(job, why, SERVER_THREAD_WAIT_S, &v);
	jobs_put(job);
	log_info("job %u: aborted: %s", id, why);
	return reply_view(&v);
fail:
	return proto_reply_error("%s", err);
}

static cJSON *op_job_env(const struct peer *c, const cJSON *req)
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
	job = job_for(c, id, err, sizeof(err));
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
		if (joblayout_env(server_conf, job->profile, id, fallback, env) <
		    0) {
			r = proto_reply_error(
				"cannot build the environment of job %u: %s",
				id, strerror(errno));
			goto out;
		}
	}
	r = proto_reply_ok();
	if (!r)
		goto out;
	cJSON_AddStringToObject(r, "state", jobs_state_name(v.state));
	if (v.state == JOB_FAILED && jobs_multi_node(job)) {
		/* Every node of the job says which one failed it. */
		char node[CONF_NODE_MAX], named[CONF_ERR_MAX + 2 * CONF_NODE_MAX];

		jobs_failed_node(job, node, sizeof(node));
		if (!node[0])
			snprintf(named, sizeof(named), "node %s: %s",
				 server_conf->node_name, v.error);
		else
			snprintf(named, sizeof(named), "%s", v.error);
		add_error(r, named);
	} else {
		add_error(r, v.error);
	}
	cJSON_AddBoolToObject(r, "fallback", fallback);
	vars = cJSON_AddObjectToObject(r, "env");
	for (i = 0; env && vars && i < env->n; i++)
		cJSON_AddStringToObject(vars, env->vars[i].name,
					env->vars[i].value);
out:
	free(env);
	jobs_put(job);
	return r;
}

static cJSON *op_finish(const struct peer *c, const cJSON *req)
{
	char err[CONF_ERR_MAX];
	cJSON *record;
	uint32_t id;

	(void)c;
	if (proto_get_job_id(req, &id, err, sizeof(err)) < 0)
		return proto_reply_error("%s", err);
	/* drain.c: outputs go to the PFS (or aside, up to DrainTimeout)
	 * before jobs_finish removes the job's directories. */
	if (drain_finish(id, err, sizeof(err)) < 0) {
		log_warningx("%s", err);
		return proto_reply_error("%s", err);
	}
	/* telemetry.c closes the job's record; the history files it. A
	 * history that cannot take it costs the record, never the job. */
	record = telemetry_finish_job(process_agent->telemetry, id);
	if (record && forward_enabled()) {
		/* forward.c: with iostagectld, every node's record (its part
		 * of a multi-node job's) is on disk in the outbox before the
		 * Epilog returns; the service files and merges. */
		if (forward_put(id, record, err, sizeof(err)) < 0)
			log_errorx("job %u: record lost: %s", id, err);
	} else if (record && parts_finish(id, record) == 0 &&
		   history_record_job(record, err, sizeof(err)) < 0) {
		/* parts.c: without a service, a multi-node job's parts make
		 * one record, filed by its head node (the others send theirs
		 * there). */
		log_warningx("job %u: not filed in the history: %s", id, err);
	}
	if (record)
		stats_job_record(process_agent->stats, id, record); /* its last /metrics series */
	cJSON_Delete(record);
	if (jobs_finish(id, SERVER_THREAD_WAIT_S, err, sizeof(err)) < 0) {
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

static cJSON *op_status(const struct peer *c, const cJSON *req)
{
	unsigned counts[CONF_MAX_TIERS];
	cJSON *r, *d, *tiers, *jobs;
	size_t i;

	(void)req;
	jobs_prune_prestage();
	r = proto_reply_ok();
	if (!r)
		return NULL;
	d = cJSON_AddObjectToObject(r, "daemon");
	if (d) {
		cJSON_AddStringToObject(d, "version", IOSTAGE_VERSION);
		cJSON_AddNumberToObject(d, "pid", getpid());
		cJSON_AddNumberToObject(d, "uptime_s",
					(double)(time(NULL) - started));
		cJSON_AddStringToObject(d, "config", server_conf_path);
		if (forward_enabled()) /* records not yet on iostagectld */
			cJSON_AddNumberToObject(d, "outbox",
						(double)forward_pending());
	}
	jobs_tier_counts(counts);
	tiers = cJSON_AddArrayToObject(r, "tiers");
	for (i = 0; tiers && i < server_conf->ntiers; i++) {
		const struct conf_tier *t = &server_conf->tiers[i];
		struct tiers_usage u = { 0, 0, 0, 0, 0 };
		cJSON *o = cJSON_CreateObject();
		unsigned entries = 0;

		if (!o)
			break;
		(void)tiers_usage((int)i, &u);
		cJSON_AddStringToObject(o, "name", t->name);
		cJSON_AddStringToObject(o, "path", t->path);
		cJSON_AddStringToObject(o, "medium", conf_medium_name(t->medium));
		cJSON_AddBoolToObject(o, "shared", t->shared);
		cJSON_AddNumberToObject(o, "capacity_bytes", (double)u.capacity);
		cJSON_AddNumberToObject(o, "used_bytes", (double)u.used);
		cJSON_AddNumberToObject(o, "free_bytes", (double)u.free);
		cJSON_AddNumberToObject(o, "jobs", counts[i]);
		cache_tier_counts(server_cache, (int)i, &entries, NULL);
		cJSON_AddNumberToObject(o, "cache_entries", entries);
		cJSON_AddNumberToObject(o, "cache_bytes", (double)u.cache);
		cJSON_AddNumberToObject(o, "reserved_bytes", (double)u.reserved);
		cJSON_AddItemToArray(tiers, o);
	}
	jobs = jobs_status_json(c->uid);
	if (!jobs) {
		cJSON_Delete(r);
		return proto_reply_error("out of memory");
	}
	cJSON_AddItemToObject(r, "jobs", jobs);
	return r;
}

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
static int opt_tier(const cJSON *req, char *err, size_t errlen)
{
	char names[CONF_ERR_MAX], shown[CONF_NAME_MAX + 8];
	const char *name;
	int t;

	if (opt_string(req, "tier", &name, err, errlen) < 0)
		return -2;
	if (!name)
		return -1;
	t = tiers_index(name);
	if (t < 0) {
		conf_tier_names(server_conf, names, sizeof(names));
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
		if (r != ERANGE || len >= SERVER_PW_BUF_MAX)
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
static cJSON *op_prestage(const struct peer *c, const cJSON *req)
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
		    (profile_normalize(profile, server_conf, perr,
				       sizeof(perr)) < 0 ||
		     profile_validate(profile, server_conf,
				      PROFILE_CHECK_STRUCTURE, perr,
				      sizeof(perr)) < 0)) {
			profile_destroy(profile);
			profile = NULL;
		}
		if (!profile) {
			snprintf(err, sizeof(err), "%.500s", perr);
			goto fail;
		}
	}
	id = jobs_next_prestage_id();
	job = jobs_create(id, uid, gid, user, profile, err, sizeof(err));
	if (!job)
		goto fail;
	profile = NULL; /* the job's now */
	job->prestage = true;
	/* iostagectld's, for a job it expects to start here: a prediction,
	 * which must not cost data that jobs come back to. */
	job->speculative = cJSON_GetObjectItemCaseSensitive(req, "for_job") != NULL;
	switch (jobs_insert(job, &old, err, sizeof(err))) {
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
	if (stage_start(job, err, sizeof(err)) < 0) {
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
 * registered with peer_set_prestage at server_init. */
static cJSON *prestage_root(const cJSON *req)
{
	struct peer root = { 0, 0, 0 };

	return op_prestage(&root, req);
}

/* cache_ls {tier?}: the peer's entries (root: everyone's). */
static cJSON *op_cache_ls(const struct peer *c, const cJSON *req)
{
	char err[CONF_ERR_MAX];
	cJSON *r, *arr, *e, *next;
	int t = opt_tier(req, err, sizeof(err));

	if (t == -2)
		return proto_reply_error("%s", err);
	arr = cache_ls_json(server_cache, c->uid);
	if (!arr)
		return proto_reply_error("out of memory");
	if (t >= 0) {
		for (e = arr->child; e; e = next) {
			const cJSON *tn = cJSON_GetObjectItemCaseSensitive(e,
									   "tier");

			next = e->next;
			if (!cJSON_IsString(tn) ||
			    strcmp(tn->valuestring, server_conf->tiers[t].name))
				cJSON_Delete(cJSON_DetachItemViaPointer(arr, e));
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
static cJSON *op_cache_evict(const struct peer *c, const cJSON *req)
{
	char err[CONF_ERR_MAX], user[JOBS_USER_MAX], norm[CONF_PATH_MAX];
	const char *key, *path, *who;
	cJSON *arr, *r, *e;
	uid_t uid = c->uid;
	gid_t gid;
	double bytes = 0;
	int t = opt_tier(req, err, sizeof(err));

	if (t == -2 || opt_string(req, "key", &key, err, sizeof(err)) < 0 ||
	    opt_string(req, "path", &path, err, sizeof(err)) < 0 ||
	    opt_string(req, "user", &who, err, sizeof(err)) < 0)
		goto fail;
	if (!key == !path) {
		snprintf(err, sizeof(err), "give exactly one of 'key' and "
			 "'path'");
		goto fail;
	}
	if (key && (strlen(key) != CACHE_KEY_LEN ||
		    strspn(key, "0123456789abcdef") != CACHE_KEY_LEN)) {
		snprintf(err, sizeof(err), "key 'key': must be %d lowercase hex "
			 "digits", CACHE_KEY_LEN);
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
	arr = cache_evict(server_cache, c->uid, key, path ? norm : NULL, uid,
			  path && c->uid == 0 && !who, t, err, sizeof(err));
	if (!arr)
		goto fail;
	cJSON_ArrayForEach(e, arr)
	{
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


static op_table staging_ops = {
	{ "ping", op_ping, false },       { "stage", op_stage, true },
	{ "wait", op_wait, false },       { "abort", op_abort, true },
	{ "job_env", op_job_env, false }, { "finish", op_finish, true },
	{ "status", op_status, false },
	{ "prestage", op_prestage, false },
	{ "cache_ls", op_cache_ls, false },
	{ "cache_evict", op_cache_evict, false },
	{ NULL, NULL, false },
};

/* Every family of ops; one line per file that defines a table. */
static const struct op *const op_tables[] = {
	staging_ops,
	telemetry_ops,
	history_ops,
};

#define NTABLES (sizeof(op_tables) / sizeof(op_tables[0]))

static const struct op *find_op(const char *name)
{
	const struct op *op;
	size_t t;

	for (t = 0; t < NTABLES; t++)
		for (op = op_tables[t]; op->name; op++)
			if (!strcmp(op->name, name))
				return op;
	return NULL;
}

/* "ping, stage, ..." for the unknown-op message. */
static void known_ops(char *buf, size_t len)
{
	const struct op *op;
	size_t t, used = 0;

	buf[0] = '\0';
	for (t = 0; t < NTABLES; t++)
		for (op = op_tables[t]; op->name && used < len; op++)
			used += (size_t)snprintf(buf + used, len - used, "%s%s",
						 used ? ", " : "", op->name);
}

static cJSON *dispatch(const struct peer *c, const char *line)
{
	char err[CONF_ERR_MAX], shown[72], known[512];
	const struct op *op;
	const char *name;
	cJSON *req, *reply;

	req = proto_parse_request(line, &name, err, sizeof(err));
	if (!req) {
		log_warningx("client pid %d uid %u: %s", (int)c->pid,
			     (unsigned)c->uid, err);
		return proto_reply_error("%s", err);
	}
	op = find_op(name);
	if (!op) {
		ops_printable(name, shown, sizeof(shown));
		log_warningx("client pid %d uid %u: unknown op '%s'",
			     (int)c->pid, (unsigned)c->uid, shown);
		known_ops(known, sizeof(known));
		reply = proto_reply_error("unknown op '%s' (known: %s)", shown,
					  known);
	} else if (op->root_only && c->uid != 0) {
		log_warningx("client pid %d uid %u: op '%s' refused: not root",
			     (int)c->pid, (unsigned)c->uid, op->name);
		reply = proto_reply_error(
			"permission denied: op '%s' needs root (peer uid %u)",
			op->name, (unsigned)c->uid);
	} else {
		reply = op->fn(c, req);
	}
	cJSON_Delete(req);
	return reply;
}

/* --- connections ---------------------------------------------------------------- */

static void client_unlink(struct client *c)
{
	struct client **pp;

	pthread_mutex_lock(&clients_lock);
	for (pp = &clients; *pp; pp = &(*pp)->next) {
		if (*pp == c) {
			*pp = c->next;
			break;
		}
	}
	nclients--;
	pthread_cond_broadcast(&clients_cond);
	pthread_mutex_unlock(&clients_lock);
}

static void *client_thread(void *arg)
{
	struct client *c = arg;
	struct proto_reader *rd = proto_reader_create(c->fd);
	char *line;

	while (rd) {
		cJSON *reply;
		int r = proto_read_line(rd, SERVER_IDLE_MS, &line);

		if (r == 0)
			break;
		if (r < 0) {
			if (errno == EMSGSIZE) {
				log_warningx("client pid %d uid %u: request "
					     "longer than %d bytes",
					     (int)c->peer.pid, (unsigned)c->peer.uid,
					     PROTO_LINE_MAX);
				reply = proto_reply_error(
					"request line longer than %d bytes",
					PROTO_LINE_MAX);
				if (!reply || proto_send(c->fd, reply) < 0) {
					cJSON_Delete(reply);
					break;
				}
				cJSON_Delete(reply);
				continue;
			}
			if (errno == ETIMEDOUT)
				log_debug("client pid %d uid %u: idle for %d s, "
					  "dropped",
					  (int)c->peer.pid, (unsigned)c->peer.uid,
					  SERVER_IDLE_MS / 1000);
			break;
		}
		reply = dispatch(&c->peer, line);
		if (!reply)
			reply = proto_reply_error("out of memory");
		if (!reply || proto_send(c->fd, reply) < 0) {
			cJSON_Delete(reply);
			break;
		}
		cJSON_Delete(reply);
	}
	proto_reader_destroy(rd);
	/* Unlinked before close: server_fini may shutdown() linked fds. */
	client_unlink(c);
	close(c->fd);
	free(c);
	return NULL;
}

/* Send a one-line error to a connection we will not serve, and close it. */
static void refuse(int fd, const char *msg)
{
	cJSON *r = proto_reply_error("%s", msg);
	int fl = fcntl(fd, F_GETFL);

	if (fl >= 0)
		fcntl(fd, F_SETFL, fl | O_NONBLOCK);
	if (r)
		proto_send(fd, r);
	cJSON_Delete(r);
	close(fd);
}

/* How many connections UID holds now. clients_lock held. */
static unsigned clients_of_locked(uid_t uid)
{
	const struct client *c;
	unsigned n = 0;

	for (c = clients; c; c = c->next)
		n += c->peer.uid == uid;
	return n;
}

static void accept_client(int fd)
{
	struct timeval tv = { .tv_sec = SERVER_SNDTIMEO_S };
	unsigned max = server_conf->max_connections;
	unsigned reserve = max / 8 ? max / 8 : 1;
	/* One user may hold half of the users' slots: a user who opens
	 * connections and holds them (or a job gone wrong) cannot lock the
	 * other users' jobs out of job_env, phase and shim_report. */
	unsigned per_user = max > reserve ? (max - reserve) / 2 : 1;
	struct ucred cred;
	socklen_t len = sizeof(cred);
	pthread_attr_t attr;
	pthread_t thread;
	struct client *c;
	char msg[128];
	int r;

	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0) {
		log_warning("cannot identify a client (SO_PEERCRED)");
		close(fd);
		return;
	}
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	pthread_mutex_lock(&clients_lock);
	/* The last slots are root's, so the Prolog always gets in. */
	if (nclients >= max || (cred.uid != 0 && max > reserve &&
				nclients >= max - reserve)) {
		pthread_mutex_unlock(&clients_lock);
		log_warningx("client pid %d uid %u refused: too many "
			     "connections (%u)",
			     (int)cred.pid, (unsigned)cred.uid, max);
		snprintf(msg, sizeof(msg), PROTO_BUSY " (limit %u)", max);
		refuse(fd, msg);
		return;
	}
	if (cred.uid != 0 && per_user > 1 &&
	    clients_of_locked(cred.uid) >= per_user) {
		pthread_mutex_unlock(&clients_lock);
		log_warningx("client pid %d uid %u refused: too many "
			     "connections of uid %u (%u)",
			     (int)cred.pid, (unsigned)cred.uid,
			     (unsigned)cred.uid, per_user);
		snprintf(msg, sizeof(msg), PROTO_BUSY " of uid %u (limit %u)",
			 (unsigned)cred.uid, per_user);
		refuse(fd, msg);
		return;
	}
	c = calloc(1, sizeof(*c));
	if (!c) {
		pthread_mutex_unlock(&clients_lock);
		refuse(fd, "out of memory");
		return;
	}
	c->fd = fd;
	c->peer.uid = cred.uid;
	c->peer.gid = cred.gid;
	c->peer.pid = cred.pid;
	c->next = clients;
	clients = c;
	nclients++;
	pthread_mutex_unlock(&clients_lock);

	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	r = pthread_create(&thread, &attr, client_thread, c);
	pthread_attr_destroy(&attr);
	if (r != 0) {
		log_warningx("cannot start a client thread: %s", strerror(r));
		client_unlink(c);
		free(c);
		refuse(fd, "out of resources");
	}
}

/* --- the socket ----------------------------------------------------------------- */

/* Create or check the directory that holds the socket. */
static int prepare_dir(const char *sock, char *err, size_t errlen)
{
	char why[CONF_ERR_MAX];
	struct stat st;
	char *slash;

	snprintf(sock_dir, sizeof(sock_dir), "%s", sock);
	slash = strrchr(sock_dir, '/');
	if (!slash) {
		snprintf(err, errlen, "SocketPath %s is not absolute", sock);
		return -1;
	}
	if (slash == sock_dir)
		slash[1] = '\0';
	else
		*slash = '\0';
	if (fsutil_mkdir_p(sock_dir, 0755) < 0 || stat(sock_dir, &st) < 0) {
		snprintf(err, errlen, "cannot create socket directory %s: %s",
			 sock_dir, strerror(errno));
		return -1;
	}
	if (fsutil_check_root_dir(&st, sock_dir, true, why, sizeof(why)) < 0) {
		snprintf(err, errlen, "socket directory: %s", why);
		return -1;
	}
	if (st.st_mode & S_IWOTH)
		log_warningx("socket directory %s is world-writable (sticky); "
			     "use a directory only root can write",
			     sock_dir);
	return 0;
}

/* Refuse a live daemon on SOCK; remove a stale socket. */
static int check_existing(const char *sock, char *err, size_t errlen)
{
	char perr[CONF_ERR_MAX];
	struct stat st;
	cJSON *req, *reply;
	int fd;

	if (lstat(sock, &st) < 0) {
		if (errno == ENOENT)
			return 0;
		snprintf(err, errlen, "cannot check %s: %s", sock,
			 strerror(errno));
		return -1;
	}
	if (!S_ISSOCK(st.st_mode)) {
		snprintf(err, errlen, "%s exists and is not a socket; remove it",
			 sock);
		return -1;
	}
	fd = proto_connect(sock);
	if (fd < 0 && errno == ECONNREFUSED) {
		if (unlink(sock) < 0 && errno != ENOENT) {
			snprintf(err, errlen,
				 "cannot remove stale socket %s: %s", sock,
				 strerror(errno));
			return -1;
		}
		log_info("removed stale socket %s", sock);
		return 0;
	}
	if (fd < 0) {
		snprintf(err, errlen, "cannot check %s: %s", sock,
			 strerror(errno));
		return -1;
	}
	close(fd);
	req = cJSON_CreateObject();
	cJSON_AddStringToObject(req, "op", "ping");
	reply = proto_call(sock, req, SERVER_PING_MS, perr, sizeof(perr));
	cJSON_Delete(req);
	if (reply) {
		const cJSON *pid = cJSON_GetObjectItemCaseSensitive(reply, "pid");

		snprintf(err, errlen,
			 "iostaged is already running on %s (pid %.0f)", sock,
			 cJSON_IsNumber(pid) ? pid->valuedouble : 0.0);
	} else {
		snprintf(err, errlen,
			 "%s is already in use by a process that does not "
			 "answer",
			 sock);
	}
	cJSON_Delete(reply);
	return -1;
}

int server_init(const struct conf *conf, const char *conf_path,
		struct cache *cache, char *err, size_t errlen)
{
	struct sockaddr_un addr = { .sun_family = AF_UNIX };
	const char *sock = conf->socket_path;
	struct stat st;
	int fd = -1;

	server_conf = conf;
	server_conf_path = conf_path;
	server_cache = cache;
	started = time(NULL);
	peer_set_prestage(prestage_root); /* before peer_init serves */
	if (strlen(sock) >= sizeof(addr.sun_path)) {
		snprintf(err, errlen, "SocketPath %s is too long", sock);
		return -1;
	}
	if (prepare_dir(sock, err, errlen) < 0 ||
	    check_existing(sock, err, errlen) < 0)
		return -1;
	strcpy(addr.sun_path, sock);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0) {
		snprintf(err, errlen, "socket: %s", strerror(errno));
		return -1;
	}
	if (bind(fd, (struct sockaddr *)&addr, sizeof(addr)) < 0) {
		snprintf(err, errlen, "cannot bind %s: %s%s", sock,
			 strerror(errno),
			 errno == EADDRINUSE ? " (iostaged already running?)"
					     : "");
		goto fail;
	}
	/* Anyone may connect: users query their own jobs; SO_PEERCRED
	 * decides what each peer may do. */
	if (chmod(sock, 0666) < 0 || lstat(sock, &st) < 0 ||
	    listen(fd, SERVER_BACKLOG) < 0) {
		int saved = errno;

		unlink(sock);
		snprintf(err, errlen, "cannot set up %s: %s",
			 conf->socket_path, strerror(saved));
		goto fail;
	}
	sock_dev = st.st_dev;
	sock_ino = st.st_ino;
	listen_fd = fd;
	return 0;
fail:
	close(fd);
	return -1;
}

const char *server_dir(void)
{
	return sock_dir;
}

int server_run(volatile sig_atomic_t *stop, const sigset_t *waitmask)
{
	struct pollfd pfd = { .fd = listen_fd, .events = POLLIN };

	while (!*stop) {
		int fd, n = ppoll(&pfd, 1, NULL, waitmask);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			log_error("ppoll");
			return -1;
		}
		fd = accept4(listen_fd, NULL, NULL, SOCK_CLOEXEC);
		if (fd >= 0) {
			accept_client(fd);
			continue;
		}
		if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS ||
		    errno == ENOMEM) {
			/* Out of fds: do not spin on a readable socket. */
			struct timespec ts = { 0, 100 * 1000 * 1000 };

			log_warning("accept");
			nanosleep(&ts, NULL);
		} else if (errno != EAGAIN && errno != EINTR &&
			   errno != ECONNABORTED && errno != EPROTO) {
			log_error("accept");
			return -1;
		}
	}
	return 0;
}

void server_close(void)
{
	struct stat st;

	if (listen_fd < 0)
		return;
	close(listen_fd);
	listen_fd = -1;
	/* Only our own socket: never one a newer daemon put there. */
	if (lstat(server_conf->socket_path, &st) == 0 &&
	    st.st_dev == sock_dev && st.st_ino == sock_ino)
		unlink(server_conf->socket_path);
}

bool server_fini(unsigned timeout_s)
{
	struct timespec deadline;
	struct client *c;
	bool done;

	clock_gettime(CLOCK_REALTIME, &deadline);
	deadline.tv_sec += timeout_s;
	pthread_mutex_lock(&clients_lock);
	/* Reading side only: a thread blocked in read sees EOF and ends,
	 * while one that was just woken from "wait" (its job failed with
	 * the shutdown) can still send that answer. */
	for (c = clients; c; c = c->next)
		shutdown(c->fd, SHUT_RD);
	while (nclients > 0)
		if (pthread_cond_timedwait(&clients_cond, &clients_lock,
					   &deadline) == ETIMEDOUT)
			break;
	/* Still there: stuck sending to a client that does not read. */
	for (c = clients; c; c = c->next)
		shutdown(c->fd, SHUT_RDWR);
	done = nclients == 0;
	pthread_mutex_unlock(&clients_lock);
	return done;
}
