/* jobwide.c - the job-wide staging outcome of a multi-node job. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cJSON.h>

#include "common/base/log.h"
#include "common/config/conf.h"
#include "daemon/agent.h"
#include "daemon/cluster/jobwide.h"
#include "daemon/cluster/peer.h"

enum peer_state {
	PEER_PENDING = 0, /* staging, or not asked to yet */
	PEER_STAGED,
	PEER_FAILED,
	PEER_ENDED, /* its Epilog ran: over there, not necessarily why */
};

static double mono_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static const char *str(const cJSON *o, const char *key, const char *dflt)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);

	return cJSON_IsString(v) ? v->valuestring : dflt;
}

static bool job_has_node(const struct job *job, const char *node)
{
	for (size_t i = 0; i < job->nnodes; i++)
		if (!strcmp(job->nodes[i], node))
			return true;
	return false;
}

/* A "finished" reply R about JOB: the node it names as having failed the
 * job into NODE ("" if none, or not one of JOB's nodes) and the reason
 * into WHY ("node X: " taken off, as jobs_fail_jobwide puts it back). */
static void finished_cause(const struct job *job, const cJSON *r, char *node,
			   size_t nlen, char *why, size_t wlen)
{
	const char *fn = str(r, "failed_node", ""), *e = str(r, "error", "");
	char prefix[CONF_NODE_MAX + 8];

	node[0] = '\0';
	snprintf(why, wlen, "the job already ended there");
	if (!fn[0] || !e[0] || !job_has_node(job, fn))
		return;
	snprintf(node, nlen, "%s", fn);
	snprintf(prefix, sizeof(prefix), "node %s: ", fn);
	if (!strncmp(e, prefix, strlen(prefix)))
		e += strlen(prefix);
	snprintf(why, wlen, "%s", e);
}

void jobwide_wait(struct agent *a, struct job *job, unsigned timeout_s,
		  struct job_view *v, char *ret_node, char *ret_waiting,
		  size_t len)
{
	const struct peer_channel *pc = a->peer;
	double deadline = mono_s() + timeout_s, *down_since = NULL;
	const char **others = NULL;
	enum peer_state *st = NULL;
	char(*errs)[256] = NULL, (*why)[256] = NULL;
	char(*named)[CONF_NODE_MAX] = NULL;
	cJSON **replies = NULL, *req = NULL;
	int *unreach = NULL;
	size_t n = 0, i;

	ret_node[0] = ret_waiting[0] = '\0';
	if (v->state == JOB_FAILED) {
		/* Failed here, or already failed job-wide by another node. */
		jobs_failed_node(job, ret_node, len);
		if (!ret_node[0])
			snprintf(ret_node, len, "%s", peer_self(pc));
		return;
	}
	if (v->state != JOB_STAGED || !peer_enabled(pc))
		return;
	others = calloc(job->nnodes, sizeof(*others));
	st = calloc(job->nnodes, sizeof(*st));
	errs = calloc(job->nnodes, sizeof(*errs));
	why = calloc(job->nnodes, sizeof(*why));
	named = calloc(job->nnodes, sizeof(*named));
	replies = calloc(job->nnodes, sizeof(*replies));
	unreach = calloc(job->nnodes, sizeof(*unreach));
	down_since = calloc(job->nnodes, sizeof(*down_since));
	req = cJSON_CreateObject();
	if (!others || !st || !errs || !why || !named || !replies || !unreach ||
	    !down_since || !req ||
	    !cJSON_AddStringToObject(req, "op", "stage_state") ||
	    !cJSON_AddNumberToObject(req, "job", job->id) ||
	    /* a finish before this run of the job is an earlier run's
	     * (requeued under the same id) */
	    !cJSON_AddNumberToObject(req, "since_us",
				     (double)job->created_us)) {
		log_warningx("job %u: out of memory asking the other nodes",
			     job->id);
		goto out;
	}
	for (i = 0; i < job->nnodes; i++)
		if (strcmp(job->nodes[i], peer_self(pc)))
			others[n++] = job->nodes[i];
	for (;;) {
		const char **ask = calloc(n ? n : 1, sizeof(*ask));
		size_t *idx = calloc(n ? n : 1, sizeof(*idx)), k = 0;
		double now;
		bool pending = false;
		int failed = -1, gone = -1;

		if (!ask || !idx) {
			free(ask);
			free(idx);
			break;
		}
		for (i = 0; i < n; i++)
			if (st[i] == PEER_PENDING) {
				idx[k] = i;
				ask[k++] = others[i];
			}
		peer_call_many(pc, ask, k, req, PEER_CALL_MS, replies, errs,
			       unreach);
		now = mono_s();
		for (size_t j = 0; j < k; j++) {
			cJSON *r = replies[j];
			const char *s = str(r, "state", "");

			i = idx[j];
			if (!r || !cJSON_IsTrue(cJSON_GetObjectItem(r, "ok"))) {
				/* Unreachable, or it refused us: failed
				 * once it lasts. */
				if (!down_since[i])
					down_since[i] = now;
				if (now - down_since[i] >=
				    JOBWIDE_UNREACHABLE_S) {
					st[i] = PEER_FAILED;
					snprintf(why[i], sizeof(why[i]),
						 "iostaged unreachable (%s)",
						 r ? str(r, "error", "?")
						   : errs[j]);
				}
			} else if (!strcmp(s, "staged")) {
				st[i] = PEER_STAGED;
			} else if (!strcmp(s, "failed")) {
				st[i] = PEER_FAILED;
				snprintf(why[i], sizeof(why[i]), "%s",
					 str(r, "error", "staging failed"));
			} else if (!strcmp(s, "finished")) {
				/* Its Epilog ran: the job is over there, and
				 * waiting for it would last the whole staging
				 * timeout. Ended, it is not why the job failed
				 * unless it says so: it names the node whose
				 * staging failed the job, if it knows one. */
				st[i] = PEER_ENDED;
				finished_cause(job, r, named[i],
					       sizeof(named[i]), why[i],
					       sizeof(why[i]));
			} else {
				down_since[i] = 0;
			}
			cJSON_Delete(r);
			replies[j] = NULL;
		}
		free(ask);
		free(idx);
		/* The first failed node in the job's order decides, so
		 * every node names the same one; a node where the job
		 * already ended counts only when none failed, and then
		 * for the node it names. */
		for (i = 0; i < n; i++) {
			if (st[i] == PEER_FAILED && failed < 0)
				failed = (int)i;
			if (st[i] == PEER_ENDED && gone < 0)
				gone = (int)i;
			if (st[i] == PEER_PENDING)
				pending = true;
		}
		if (failed < 0)
			failed = gone;
		if (failed >= 0) {
			const char *node = named[failed][0] ? named[failed]
							    : others[failed];

			jobs_fail_jobwide(job, node, why[failed], v);
			jobs_failed_node(job, ret_node, len);
			log_warningx("job %u: staging failed on node %s: %s; "
				     "the job's policy applies here too",
				     job->id, node, why[failed]);
			break;
		}
		if (!pending)
			break; /* staged everywhere */
		if (mono_s() + JOBWIDE_POLL_MS / 1000.0 >= deadline) {
			for (i = 0; i < n; i++)
				if (st[i] == PEER_PENDING) {
					snprintf(ret_waiting, len, "%s",
						 others[i]);
					break;
				}
			v->state = JOB_STAGING; /* not final job-wide yet */
			break;
		}
		{
			struct timespec ts = { 0, JOBWIDE_POLL_MS * 1000000L };

			nanosleep(&ts, NULL);
		}
	}
out:
	cJSON_Delete(req);
	free(others);
	free(st);
	free(errs);
	free(why);
	free(named);
	free(replies);
	free(unreach);
	free(down_since);
}
