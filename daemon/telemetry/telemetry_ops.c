/* telemetry_ops.c - the telemetry ops: task_register, task_exit, phase,
 * shim_report, telemetry (common/net/proto.h, docs/RECORDS.md).
 *
 * Everything a request says is checked here; identities that matter for
 * authorization come from the peer (SO_PEERCRED), never from the request:
 * a user's phase marker and shim report are attributed to the sending
 * process's pid, and a user may only touch their own jobs.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cJSON.h>

#include "common/base/jsonbuf.h"
#include "common/config/conf.h"
#include "common/net/proto.h"
#include "common/telemetry/telrec.h"
#include "daemon/agent.h"
#include "daemon/cluster/parts.h"
#include "daemon/ops.h"
#include "daemon/telemetry/telemetry.h"

#define TEL_OPS_TS_SLACK_S (7 * 86400.0) /* marker times this far off */
#define TEL_OPS_REPLY_MAX (PROTO_LINE_MAX - 4096)

/* Optional integer KEY into *RET (-1 stays when missing). 0 or -1. */
static int opt_int(const cJSON *req, const char *key, int64_t max, int64_t *ret,
		   char *err, size_t errlen)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(req, key);

	if (!v)
		return 0;
	if (!cJSON_IsNumber(v) || v->valuedouble < 0 ||
	    v->valuedouble > (double)max ||
	    v->valuedouble != (double)(int64_t)v->valuedouble) {
		snprintf(err, errlen,
			 "key '%s': must be an integer from 0 to "
			 "%lld",
			 key, (long long)max);
		return -1;
	}
	*ret = (int64_t)v->valuedouble;
	return 0;
}

/* Optional string KEY copied into BUF (LEN), printable only. 0 or -1. */
static int opt_str(const cJSON *req, const char *key, char *buf, size_t len,
		   char *err, size_t errlen)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(req, key);

	if (!v)
		return 0;
	if (!cJSON_IsString(v) || strlen(v->valuestring) >= len) {
		snprintf(err, errlen,
			 "key '%s': must be a string of at most "
			 "%zu bytes",
			 key, len - 1);
		return -1;
	}
	ops_printable(v->valuestring, buf, len);
	return 0;
}

/* The identity fields shared by task_register and phase. */
static int get_task(const cJSON *req, struct telemetry_task *t, char *err,
		    size_t errlen)
{
	int64_t step = -1; /* absent: unknown, not step 0 */

	memset(t, 0, sizeof(*t));
	t->rank = t->local_rank = -1;
	snprintf(t->identity, sizeof(t->identity), "slurm");
	if (opt_int(req, "step", UINT32_MAX, &step, err, errlen) < 0 ||
	    opt_int(req, "rank", INT32_MAX, &t->rank, err, errlen) < 0 ||
	    opt_int(req, "local_rank", INT32_MAX, &t->local_rank, err, errlen) <
		0 ||
	    opt_str(req, "node", t->node, sizeof(t->node), err, errlen) < 0 ||
	    opt_str(req, "identity", t->identity, sizeof(t->identity), err,
		    errlen) < 0 ||
	    opt_str(req, "job_name", t->job_name, sizeof(t->job_name), err,
		    errlen) < 0)
		return -1;
	if (strcmp(t->identity, "pmix") && strcmp(t->identity, "slurm")) {
		snprintf(err, errlen,
			 "key 'identity': must be \"pmix\" or \"slurm\"");
		return -1;
	}
	t->step = step;
	return 0;
}

static cJSON *op_task_register(struct agent *a, const struct ops_caller *c,
			       const cJSON *req)
{
	char err[CONF_ERR_MAX];
	struct telemetry_task t;
	int64_t pid = -1, parent = 0;
	uint32_t id;

	(void)a;
	(void)c;
	if (proto_get_job_id(req, &id, err, sizeof(err)) < 0 ||
	    get_task(req, &t, err, sizeof(err)) < 0 ||
	    opt_int(req, "pid", INT32_MAX, &pid, err, sizeof(err)) < 0 ||
	    opt_int(req, "parent", INT32_MAX, &parent, err, sizeof(err)) < 0)
		return proto_reply_error("%s", err);
	if (pid <= 1)
		return proto_reply_error(
		    "key 'pid': missing or not a task pid");
	t.pid = (pid_t)pid;
	t.parent = (pid_t)parent;
	if (telemetry_task_register(a->telemetry, id, &t, err, sizeof(err)) < 0)
		return proto_reply_error("%s", err);
	return proto_reply_ok();
}

static cJSON *op_task_exit(struct agent *a, const struct ops_caller *c,
			   const cJSON *req)
{
	char err[CONF_ERR_MAX];
	int64_t pid = -1;
	uint32_t id;

	(void)a;
	(void)c;
	if (proto_get_job_id(req, &id, err, sizeof(err)) < 0 ||
	    opt_int(req, "pid", INT32_MAX, &pid, err, sizeof(err)) < 0)
		return proto_reply_error("%s", err);
	if (telemetry_task_exit(a->telemetry, id, (pid_t)pid, err,
				sizeof(err)) < 0)
		return proto_reply_error("%s", err);
	return proto_reply_ok();
}

static cJSON *op_phase(struct agent *a, const struct ops_caller *c,
		       const cJSON *req)
{
	const cJSON *ts = cJSON_GetObjectItemCaseSensitive(req, "ts");
	char err[CONF_ERR_MAX], shown[TELREC_PHASE_NAME_MAX + 8];
	struct telemetry_task t;
	const char *name, *event;
	double now = (double)time(NULL), when = now;
	int64_t pid = -1;
	uint32_t id;

	(void)a;
	if (proto_get_job_id(req, &id, err, sizeof(err)) < 0 ||
	    proto_get_string(req, "name", &name, err, sizeof(err)) < 0 ||
	    proto_get_string(req, "event", &event, err, sizeof(err)) < 0 ||
	    get_task(req, &t, err, sizeof(err)) < 0 ||
	    opt_int(req, "pid", INT32_MAX, &pid, err, sizeof(err)) < 0)
		return proto_reply_error("%s", err);
	if (!telrec_phase_name_ok(name))
		return proto_reply_error("key 'name': '%s' is not a phase name "
					 "([A-Za-z0-9_.-], 1 to %d characters)",
					 ops_printable(name, shown,
						       sizeof(shown)),
					 TELREC_PHASE_NAME_MAX - 1);
	if (strcmp(event, "begin") && strcmp(event, "end"))
		return proto_reply_error("key 'event': must be \"begin\" or "
					 "\"end\"");
	if (ts) {
		if (!cJSON_IsNumber(ts) ||
		    !(ts->valuedouble > now - TEL_OPS_TS_SLACK_S &&
		      ts->valuedouble < now + TEL_OPS_TS_SLACK_S))
			return proto_reply_error("key 'ts': must be unix "
						 "seconds close to now");
		when = ts->valuedouble;
	}
	/* A user's marker is the sending process's; root (tests, a
	 * wrapper) may name the pid. */
	if (c->uid != 0 || pid <= 0)
		pid = c->pid;
	if (telemetry_phase(a->telemetry, id, c->uid, (pid_t)pid, name,
			    !strcmp(event, "begin"), when, &t, err,
			    sizeof(err)) < 0)
		return proto_reply_error("%s", err);
	return proto_reply_ok();
}

static cJSON *op_shim_report(struct agent *a, const struct ops_caller *c,
			     const cJSON *req)
{
	char err[CONF_ERR_MAX];
	int64_t pid = -1;
	uint32_t id;

	(void)a;
	if (proto_get_job_id(req, &id, err, sizeof(err)) < 0 ||
	    telrec_report_check(req, err, sizeof(err)) < 0 ||
	    opt_int(req, "pid", INT32_MAX, &pid, err, sizeof(err)) < 0)
		return proto_reply_error("shim_report refused: %s", err);
	if (c->uid != 0 && pid > 0 && pid != c->pid)
		return proto_reply_error("shim_report refused: key 'pid': %lld "
					 "is not the sender (pid %d)",
					 (long long)pid, (int)c->pid);
	if (c->uid != 0 || pid <= 0)
		pid = c->pid;
	if (telemetry_shim_report(a->telemetry, id, c->uid, (pid_t)pid, req,
				  err, sizeof(err)) < 0)
		return proto_reply_error("shim_report refused: %s", err);
	return proto_reply_ok();
}

/* A reply line must stay under PROTO_LINE_MAX: a huge job's process
 * list is cut (the count says so). */
static void fit_reply(cJSON *rec)
{
	char *text = jsonbuf_dup(rec);
	size_t len = text ? strlen(text) : 0;
	cJSON *procs = cJSON_GetObjectItemCaseSensitive(rec, "processes");
	int n = cJSON_GetArraySize(procs);

	free(text);
	if (len <= TEL_OPS_REPLY_MAX || n <= 64)
		return;
	cJSON_AddNumberToObject(rec, "processes_total", n);
	while (cJSON_GetArraySize(procs) > 64)
		cJSON_DeleteItemFromArray(procs, cJSON_GetArraySize(procs) - 1);
}

static cJSON *op_telemetry(struct agent *a, const struct ops_caller *c,
			   const cJSON *req)
{
	char err[CONF_ERR_MAX];
	cJSON *rec, *r;
	uint32_t id;

	if (proto_get_job_id(req, &id, err, sizeof(err)) < 0)
		return proto_reply_error("%s", err);
	rec = telemetry_record(a->telemetry, id, c->uid, err, sizeof(err));
	if (!rec)
		return proto_reply_error("%s", err);
	/* A multi-node job: the whole job (parts.c), for a user who may
	 * see this node's part. */
	rec = parts_job_record(a->parts, id, rec);
	fit_reply(rec);
	r = proto_reply_ok();
	if (!r) {
		cJSON_Delete(rec);
		return NULL;
	}
	cJSON_AddItemToObject(r, "record", rec);
	return r;
}

op_table telemetry_ops = {
	{ "task_register", op_task_register, true },
	{ "task_exit", op_task_exit, true },
	{ "phase", op_phase, false },
	{ "shim_report", op_shim_report, false },
	{ "telemetry", op_telemetry, false },
	{ NULL, NULL, false },
};
