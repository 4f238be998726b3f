/* prolog.c - iostage-prolog: stage the job's datasets before it starts.
 *
 * slurmd runs this as root on every node of a job (PrologFlags=Alloc). It
 * asks iostaged to stage the datasets named by the job's normalized profile
 * and waits up to the profile's timeout. A Prolog that fails drains the
 * node and requeues the job, so per-job problems never fail it: they are
 * recorded (iostaged's job state, the job's Comment, syslog) and the job's
 * policy is applied when its tasks start (spank/task.c): `fail` ends the
 * job with the reason on its stderr, `fallback` runs it on the PFS paths.
 *
 * A multi-node job: the stage request names the job's nodes (the head
 * first), and iostaged's "wait" answers with the job-wide outcome once
 * every node's staging ended (daemon/cluster/jobwide.h), so every node applies
 * the same policy. The job's Comment is set once, by the Prolog of the
 * node whose staging failed, naming it.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cJSON.h>

#include "common/base/log.h"
#include "common/config/conf.h"
#include "common/config/profile.h"
#include "common/net/proto.h"
#include "prolog/jobctl.h"
#include "prolog/jobinfo.h"
#include "prolog/nodelist.h"

/* Extra time for a daemon round trip beyond the staging deadline. */
#define PROLOG_SLACK_MS 10000

static struct conf conf;

static cJSON *request(const char *op, uint32_t jobid)
{
	cJSON *req = cJSON_CreateObject();

	if (!req || !cJSON_AddStringToObject(req, "op", op) ||
	    !cJSON_AddNumberToObject(req, "job", jobid)) {
		cJSON_Delete(req);
		return NULL;
	}
	return req;
}

/* One round trip; NULL + err when the daemon can't be reached or refuses. */
static cJSON *call(cJSON *req, int timeout_ms, char *err, size_t errlen)
{
	cJSON *reply;
	const cJSON *error;

	if (!req) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	reply = proto_call(conf.socket_path, req, timeout_ms, err, errlen);
	cJSON_Delete(req);
	if (!reply)
		return NULL;
	if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(reply, "ok")))
		return reply;
	error = cJSON_GetObjectItemCaseSensitive(reply, "error");
	snprintf(err, errlen, "%s",
		 cJSON_IsString(error) ? error->valuestring
				       : "iostaged refused the request");
	cJSON_Delete(reply);
	return NULL;
}

static cJSON *stage_request(const struct jobinfo *job, cJSON *profile)
{
	cJSON *req = request("stage", job->jobid), *nodes = NULL;
	char err[CONF_ERR_MAX];

	/* A multi-node job's nodes; none for one node (no peer traffic). */
	if (req && job->nodelist) {
		nodes = nodelist_expand(job->nodelist, err, sizeof(err));
		if (!nodes)
			log_warningx("job %u: %s; staged as a single-node job",
				     job->jobid, err);
		else if (cJSON_GetArraySize(nodes) > 1)
			cJSON_AddItemToObject(req, "nodes", nodes);
		else
			cJSON_Delete(nodes);
	}
	if (!req || !cJSON_AddNumberToObject(req, "uid", job->uid) ||
	    !cJSON_AddNumberToObject(req, "gid", job->gid) ||
	    !cJSON_AddStringToObject(req, "user", job->user)) {
		cJSON_Delete(req);
		cJSON_Delete(profile);
		return NULL;
	}
	cJSON_AddItemToObject(req, "profile", profile);
	return req;
}

/* Stage and wait. Returns 0 when staged (everywhere, for a multi-node
 * job), -1 with the reason in err and, when iostaged says which node
 * failed the job, its name in RET_NODE (else ""). */
static int stage(const struct jobinfo *job, unsigned timeout_s, char *err,
		 size_t errlen, char *ret_node, size_t nodelen)
{
	cJSON *profile, *req, *reply;
	const cJSON *state, *error;
	time_t deadline = time(NULL) + timeout_s;
	char waiting[CONF_NODE_MAX] = "";
	int rc = -1;

	profile = cJSON_Parse(job->profile_json);
	if (!profile) {
		snprintf(err, errlen, "SPANK_IOSTAGE_PROFILE is not JSON");
		return -1;
	}
	reply = call(stage_request(job, profile), PROLOG_SLACK_MS, err, errlen);
	if (!reply)
		return -1;
	cJSON_Delete(reply);

	for (;;) {
		long left = (long)(deadline - time(NULL));

		if (left <= 0) {
			/* A multi-node job may be waiting for another node. */
			if (waiting[0])
				snprintf(err, errlen,
					 "staging timed out after "
					 "%u s (node %s still staging)",
					 timeout_s, waiting);
			else
				snprintf(err, errlen,
					 "staging timed out after %u s",
					 timeout_s);
			req = request("abort", job->jobid);
			if (req)
				cJSON_AddStringToObject(req, "reason", err);
			cJSON_Delete(call(req, PROLOG_SLACK_MS, NULL, 0));
			return -1;
		}
		req = request("wait", job->jobid);
		if (req && !cJSON_AddNumberToObject(req, "timeout", left)) {
			cJSON_Delete(req);
			req = NULL;
		}
		reply = call(req, (int)left * 1000 + PROLOG_SLACK_MS, err,
			     errlen);
		if (!reply)
			return -1;
		state = cJSON_GetObjectItemCaseSensitive(reply, "state");
		error = cJSON_GetObjectItemCaseSensitive(reply, "error");
		if (cJSON_IsString(state) &&
		    strcmp(state->valuestring, "staged") == 0) {
			rc = 0;
			break;
		}
		if (cJSON_IsString(state) &&
		    strcmp(state->valuestring, "failed") == 0) {
			const cJSON *fn = cJSON_GetObjectItemCaseSensitive(
			    reply, "failed_node");

			snprintf(err, errlen, "%s",
				 cJSON_IsString(error) ? error->valuestring
						       : "staging failed");
			if (cJSON_IsString(fn))
				snprintf(ret_node, nodelen, "%s",
					 fn->valuestring);
			break;
		}
		{
			const cJSON *w = cJSON_GetObjectItemCaseSensitive(
			    reply, "waiting_for");

			snprintf(waiting, sizeof(waiting), "%s",
				 cJSON_IsString(w) ? w->valuestring : "");
		}
		cJSON_Delete(reply); /* still staging: wait again */
	}
	cJSON_Delete(reply);
	return rc;
}

/* The profile's timeout and policy; defaults if the JSON is unusable. */
static void profile_limits(const char *json, unsigned *ret_timeout,
			   int *ret_fallback)
{
	char err[CONF_ERR_MAX];
	struct profile *profile = profile_parse_json(json, "job", err,
						     sizeof(err));

	*ret_timeout = conf.stage_timeout;
	*ret_fallback = conf.on_failure == STAGE_FAILURE_FALLBACK;
	if (!profile)
		return;
	if (profile->timeout)
		*ret_timeout = profile->timeout;
	if (profile->has_on_failure)
		*ret_fallback = profile->on_failure == STAGE_FAILURE_FALLBACK;
	profile_destroy(profile);
}

static void usage(void)
{
	fprintf(stderr,
		"usage: iostage-prolog [-c CONF] [-v]\n"
		"Run by slurmd as the Prolog; see iostage-prolog(8).\n");
}

int main(int argc, char **argv)
{
	const char *conf_path = IOSTAGE_CONF_PATH;
	struct jobinfo job;
	char err[CONF_ERR_MAX], note[CONF_ERR_MAX + 256];
	char failed_node[CONF_NODE_MAX] = "";
	const char *self;
	unsigned timeout_s;
	int opt, fallback, rc;
	enum log_level level = LOG_LEVEL_INFO;

	while ((opt = getopt(argc, argv, "c:v")) != -1) {
		switch (opt) {
		case 'c':
			conf_path = optarg;
			break;
		case 'v':
			level = LOG_LEVEL_DEBUG;
			break;
		default:
			usage();
			return 2;
		}
	}
	/* slurmd discards our stdio: syslog is where admins look. */
	log_init("iostage-prolog", getenv("IOSTAGE_LOG_STDERR") == NULL, level);

	rc = jobinfo_from_env(&job, err, sizeof(err));
	if (rc == 0)
		return 0; /* not an iostage job */
	if (rc < 0) {
		log_errorx("%s", err);
		return 0;
	}
	conf_set_defaults(&conf);
	if (conf_load(conf_path, &conf, err, sizeof(err)) < 0) {
		/* The job's policy still applies when its tasks start. */
		log_errorx("job %u: %s", job.jobid, err);
		goto failed;
	}
	profile_limits(job.profile_json, &timeout_s, &fallback);
	log_info("job %u: staging for %s (timeout %u s)", job.jobid, job.user,
		 timeout_s);
	if (stage(&job, timeout_s, err, sizeof(err), failed_node,
		  sizeof(failed_node)) == 0) {
		log_info("job %u: staged", job.jobid);
		return 0;
	}
	log_warningx("job %u: staging failed: %s", job.jobid, err);
failed:
	profile_limits(job.profile_json, &timeout_s, &fallback);
	/* This node's name as Slurm knows it (the node list's). */
	self = job.node ? job.node : conf.node_name;
	if (failed_node[0] && strcmp(failed_node, self)) {
		/* Another node failed the job: its Prolog says so. */
		log_info("job %u: failed on node %s; its Prolog sets the "
			 "job's comment",
			 job.jobid, failed_node);
		return 0;
	}
	/* A multi-node job's comment names the node that failed it. */
	if (job.nodelist && strpbrk(job.nodelist, ",["))
		snprintf(note, sizeof(note),
			 "iostage: staging failed on node %s: %s%s", self, err,
			 fallback ? " (running on the PFS paths: "
				    "on-failure=fallback)"
				  : "");
	else
		snprintf(note, sizeof(note), "iostage: staging failed: %s%s",
			 err,
			 fallback ? " (running on the PFS paths: "
				    "on-failure=fallback)"
				  : "");
	if (jobctl_set_comment(job.jobid, note, err, sizeof(err)) < 0)
		log_warningx("job %u: %s", job.jobid, err);
	return 0;
}
