/* auto.c - --io-profile=auto and the hint: ask the history (iostagectld
 * when iostage.conf names one, else the node's iostaged) what it
 * recommends for this job and apply it (see auto.h).
 *
 * The job name is found the way sbatch finds it (common/config/jobname.h), from
 * our own command line: in allocator context SPANK gives no job name. The
 * fragment iostaged returns goes through profile_parse_json like any
 * hand-written profile, and the caller normalizes and validates the result
 * as the user, so a recommendation can never stage what the user could
 * not name by hand.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cJSON.h>
#include <slurm/spank.h>

#include "common/config/jobname.h"
#include "common/net/ctlclient.h"
#include "common/net/proto.h"
#include "spank/auto.h"

#define AUTO_CMDLINE_MAX (256 * 1024)
#define AUTO_ARGS_MAX 1024

/* /proc/self/cmdline: arguments split by NUL bytes. Returns the bytes
 * read into buf (NUL-terminated), 0 on failure. */
static size_t read_cmdline(char *buf, size_t buflen)
{
	int fd = open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);
	size_t len = 0;
	ssize_t n;

	if (fd < 0)
		return 0;
	while (len + 1 < buflen &&
	       (n = read(fd, buf + len, buflen - 1 - len)) > 0)
		len += (size_t)n;
	close(fd);
	buf[len] = '\0';
	return len;
}

/* This process's job name (sbatch's rules) into buf; "" when unknown. */
static void auto_job_name(char *buf, size_t buflen)
{
	static char cmdline[AUTO_CMDLINE_MAX];
	char script[4096], *argv[AUTO_ARGS_MAX];
	const char *env = getenv("SBATCH_JOB_NAME");
	size_t len = read_cmdline(cmdline, sizeof(cmdline));
	char *p = cmdline;
	int argc = 0;
	bool wrap = false;

	buf[0] = '\0';
	script[0] = '\0';
	while (p < cmdline + len && argc < AUTO_ARGS_MAX) {
		argv[argc++] = p;
		p += strlen(p) + 1;
	}
	jobname_from_argv(argc, argv, buf, buflen, script, sizeof(script),
			  &wrap);
	if (!buf[0] && env && env[0])
		snprintf(buf, buflen, "%s", env);
	if (!buf[0] && script[0])
		jobname_from_script(script, buf, buflen);
	if (!buf[0] && wrap)
		snprintf(buf, buflen, "wrap");
}

/* The recommend reply for this job, or NULL (why in err). */
static cJSON *auto_ask(const struct conf *conf, const char *job_name,
		       int timeout_ms, char *err, size_t errlen)
{
	cJSON *req = cJSON_CreateObject(), *reply;
	const cJSON *e;

	if (!req || !cJSON_AddStringToObject(req, "op", "recommend") ||
	    !cJSON_AddStringToObject(req, "job_name", job_name)) {
		cJSON_Delete(req);
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	/* The cluster's history when there is a service (the user's own
	 * MUNGE credential says who asks: the plugin runs as the user);
	 * else the node's iostaged, as on a single node. */
	if (ctl_configured(conf)) {
		if (ctl_request_timeout(conf, req, timeout_ms, &reply, err,
					errlen) < 0)
			reply = NULL;
	} else {
		reply = proto_call(conf->socket_path, req, timeout_ms, err,
				   errlen);
	}
	cJSON_Delete(req);
	if (reply &&
	    !cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(reply, "ok"))) {
		e = cJSON_GetObjectItemCaseSensitive(reply, "error");
		snprintf(err, errlen, "%s",
			 cJSON_IsString(e) ? e->valuestring : "refused");
		cJSON_Delete(reply);
		return NULL;
	}
	return reply;
}

static bool has_path(const char *path, const struct profile *p, bool outputs)
{
	size_t n = outputs ? p->noutputs : p->ndatasets;

	for (size_t i = 0; i < n; i++)
		if (!strcmp(outputs ? p->outputs[i].path : p->datasets[i].path,
			    path))
			return true;
	return false;
}

/* "cache /pfs/x, checkpoint /pfs/y" from the confident recommendations. */
static void summary(const cJSON *reply, char *buf, size_t buflen)
{
	const cJSON *r;
	size_t off = 0;

	buf[0] = '\0';
	cJSON_ArrayForEach(
	    r, cJSON_GetObjectItemCaseSensitive(reply, "recommendations")) {
		const cJSON *c = cJSON_GetObjectItemCaseSensitive(r,
								  "confidence");
		const cJSON *rule = cJSON_GetObjectItemCaseSensitive(r, "rule");
		const cJSON *t = cJSON_GetObjectItemCaseSensitive(r, "target");
		int w;

		if (!cJSON_IsNumber(c) || c->valuedouble < 0.5 ||
		    !cJSON_IsString(rule) || !cJSON_IsString(t) ||
		    !cJSON_GetObjectItemCaseSensitive(r, "profile"))
			continue;
		w = snprintf(buf + off, buflen - off, "%s%s %s",
			     off ? ", " : "", rule->valuestring,
			     t->valuestring);
		if (w < 0 || (size_t)w >= buflen - off)
			break;
		off += (size_t)w;
	}
}

/* Has the reply's profile fragment anything to apply? */
static bool fragment_nonempty(const cJSON *frag)
{
	return cJSON_GetArraySize(
		   cJSON_GetObjectItemCaseSensitive(frag, "datasets")) > 0 ||
	       cJSON_GetArraySize(
		   cJSON_GetObjectItemCaseSensitive(frag, "outputs")) > 0;
}

int auto_apply(struct profile *profile, const struct conf *conf, char *err,
	       size_t errlen)
{
	char name[JOBNAME_MAX], why[CONF_ERR_MAX], sub[CONF_ERR_MAX];
	char what[512], *text = NULL;
	bool own = profile->ndatasets || profile->noutputs;
	struct profile *rec = NULL;
	const cJSON *frag;
	cJSON *reply;
	int rc = own ? 1 : 0;

	auto_job_name(name, sizeof(name));
	reply = auto_ask(conf, name, AUTO_DAEMON_TIMEOUT_MS, why, sizeof(why));
	if (!reply) {
		/* Observed all the same: its record waits in the node's
		 * outbox until the history is back. */
		if (!own && profile_observe(profile, conf))
			rc = 1;
		slurm_info(
		    "iostage: --io-profile=auto: no history advice (%s); "
		    "the job runs %s",
		    why,
		    own  ? "with the given overrides only"
		    : rc ? "from the PFS, observed (deep mode) so that "
			   "the history learns what it reads"
			 : "without a profile");
		return rc;
	}
	frag = cJSON_GetObjectItemCaseSensitive(reply, "profile");
	if (!fragment_nonempty(frag)) {
		double runs = cJSON_GetNumberValue(
		    cJSON_GetObjectItemCaseSensitive(reply, "runs"));
		const char *how;

		if (!own && profile_observe(profile, conf))
			rc = 1;
		how = own  ? "with the given overrides only"
		      : rc ? "from the PFS, observed (deep mode) so that the "
			     "history learns what it reads"
			   : "without a profile";
		/* With runs, the advice may be to read in place (stream):
		 * nothing to stage, yet not "no history". */
		if (runs > 0)
			slurm_info("iostage: --io-profile=auto: the history's "
				   "advice for job '%s' (%.0f runs) stages "
				   "nothing; it runs %s",
				   name, runs, how);
		else
			slurm_info("iostage: --io-profile=auto: no history yet "
				   "for job '%s'; it runs %s",
				   name, how);
		goto out;
	}
	text = cJSON_PrintUnformatted(frag);
	rec = text ? profile_parse_json(text, "auto", sub, sizeof(sub)) : NULL;
	if (!rec) {
		snprintf(err, errlen, "history advice for job '%s': %s", name,
			 text ? sub : "out of memory");
		rc = -1;
		goto out;
	}
	/* Move the history's entries over; the user's own win. */
	for (size_t i = 0; i < rec->ndatasets; i++) {
		if (profile->ndatasets == PROFILE_MAX_DATASETS ||
		    has_path(rec->datasets[i].path, profile, false))
			continue;
		profile->datasets[profile->ndatasets++] = rec->datasets[i];
		memset(&rec->datasets[i], 0, sizeof(rec->datasets[i]));
	}
	for (size_t i = 0; i < rec->noutputs; i++) {
		if (profile->noutputs == PROFILE_MAX_OUTPUTS ||
		    has_path(rec->outputs[i].path, profile, true))
			continue;
		profile->outputs[profile->noutputs++] = rec->outputs[i];
		memset(&rec->outputs[i], 0, sizeof(rec->outputs[i]));
	}
	summary(reply, what, sizeof(what));
	slurm_info("iostage: --io-profile=auto: applying the history's advice "
		   "for job '%s' (%.0f runs): %s",
		   name,
		   cJSON_GetNumberValue(
		       cJSON_GetObjectItemCaseSensitive(reply, "runs")),
		   what);
	rc = 1;
out:
	free(text);
	profile_destroy(rec);
	cJSON_Delete(reply);
	return rc;
}

void auto_hint(const struct conf *conf)
{
	char name[JOBNAME_MAX], why[CONF_ERR_MAX], what[512];
	cJSON *reply;

	if (!conf->recommend_hint)
		return;
	auto_job_name(name, sizeof(name));
	reply = auto_ask(conf, name, AUTO_HINT_TIMEOUT_MS, why, sizeof(why));
	if (!reply)
		return; /* no daemon or service here, no hint: nothing to say */
	if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(reply, "hint")) &&
	    fragment_nonempty(
		cJSON_GetObjectItemCaseSensitive(reply, "profile"))) {
		summary(reply, what, sizeof(what));
		slurm_info("iostage: hint: the history has advice for job '%s' "
			   "(%s): add --io-profile=auto to apply it; see "
			   "'iostage recommend --job-name %s'",
			   name, what, name);
	}
	cJSON_Delete(reply);
}
