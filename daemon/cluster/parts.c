/* parts.c - a multi-node job's parts at its head node, and the whole
 * job's record for queries.
 *
 * Locking: p->lock guards the parts directory's writes and its
 * condition variable (a finish waiting for parts); p->file_lock serializes
 * merging and filing, so a late part and a finish never file the same job
 * at once. Neither is held while calling another node.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/base/deadline.h"
#include "common/base/jsonbuf.h"
#include "common/base/log.h"
#include "common/base/smallfile.h"
#include "common/history/history.h"
#include "common/net/proto.h"
#include "common/telemetry/recmerge.h"
#include "daemon/agent.h"
#include "daemon/cluster/parts.h"
#include "daemon/cluster/peer.h"
#include "daemon/fsutil.h"
#include "daemon/jobs.h"
#include "daemon/telemetry/telemetry.h"

#define PARTS_FILE_MAX (PEERNET_LINE_MAX + 4096)
#define PARTS_BACKOFF_MIN_MS 250
#define PARTS_BACKOFF_MAX_MS 4000

struct parts {
	struct agent *agent;
	const struct conf *conf;
	int dir_fd; /* StateDir/parts */
	pthread_mutex_t lock;
	pthread_mutex_t file_lock;
	pthread_cond_t cond; /* a part arrived; on CLOCK_MONOTONIC */
};

static const char *str(const cJSON *o, const char *key, const char *dflt)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);

	return cJSON_IsString(v) ? v->valuestring : dflt;
}

size_t parts_record_nodes(const cJSON *rec, const char **ret, size_t max)
{
	const cJSON *e;
	size_t n = 0;

	cJSON_ArrayForEach(e, cJSON_GetObjectItemCaseSensitive(rec, "nodes")) {
		if (!cJSON_IsString(e) || !conf_is_node_name(e->valuestring))
			return 0; /* not a node list we can trust */
		if (n == max)
			return 0;
		ret[n++] = e->valuestring;
	}
	return n;
}

static bool listed(const char *const *nodes, size_t n, const char *node)
{
	for (size_t i = 0; i < n; i++)
		if (!strcmp(nodes[i], node))
			return true;
	return false;
}

static cJSON *read_at(const struct parts *p, const char *name)
{
	char reason[128], *text;
	cJSON *o;

	text = smallfile_read_at(p->dir_fd, name, O_NOFOLLOW, PARTS_FILE_MAX,
				 NULL, reason, sizeof(reason));
	if (!text)
		return NULL;
	o = cJSON_Parse(text);
	free(text);
	if (!cJSON_IsObject(o)) {
		cJSON_Delete(o);
		return NULL;
	}
	return o;
}

static int write_at(const struct parts *p, const char *name, const cJSON *o)
{
	char *text = jsonbuf_dup(o);
	int r;

	if (!text) {
		errno = ENOMEM;
		return -1;
	}
	r = fsutil_write_atomic(p->dir_fd, name, text, strlen(text), 0600);
	free(text);
	return r;
}

static void part_name(uint32_t id, const char *node, char *buf, size_t len)
{
	snprintf(buf, len, "%" PRIu32 ".%s.json", id, node);
}

static bool part_present(const struct parts *p, uint32_t id, const char *node)
{
	char name[CONF_NODE_MAX + 32];
	struct stat st;

	part_name(id, node, name, sizeof(name));
	return fstatat(p->dir_fd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
	       S_ISREG(st.st_mode);
}

/* The filed marker of job ID: {"nodes":[...]}, or NULL. */
static cJSON *filed_marker(const struct parts *p, uint32_t id)
{
	char name[32];

	snprintf(name, sizeof(name), "%" PRIu32 ".filed", id);
	return read_at(p, name);
}

/* Merge the parts of job ID present here and file the record. */
static void merge_and_file(struct parts *p, uint32_t id,
			   const char *const *nodes, size_t n)
{
	const cJSON **parts = calloc(n, sizeof(*parts));
	char err[CONF_ERR_MAX], missing[512] = "", name[32];
	cJSON *merged = NULL, *marker = NULL, *arr, *e;
	size_t k = 0, used = 0;

	if (!parts) {
		log_warningx("job %u: out of memory merging its parts", id);
		return;
	}
	pthread_mutex_lock(&p->file_lock);
	for (size_t i = 0; i < n; i++) {
		char pn[CONF_NODE_MAX + 32];

		part_name(id, nodes[i], pn, sizeof(pn));
		if ((parts[k] = read_at(p, pn)))
			k++;
	}
	merged = recmerge_job(parts, k, nodes, n);
	if (!merged) {
		log_warningx("job %u: cannot merge its parts: %s", id,
			     strerror(errno));
		goto out;
	}
	cJSON_ArrayForEach(e, cJSON_GetObjectItemCaseSensitive(merged,
							       "missing_nodes"))
		if (used < sizeof(missing))
			used += (size_t)snprintf(missing + used,
						 sizeof(missing) - used, "%s%s",
						 used ? "," : "",
						 e->valuestring);
	if (history_record_job(merged, err, sizeof(err)) < 0) {
		log_warningx("job %u: not filed in the history: %s", id, err);
		goto out;
	}
	marker = cJSON_CreateObject();
	arr = marker ? cJSON_AddArrayToObject(marker, "nodes") : NULL;
	for (size_t i = 0; arr && i < n; i++)
		cJSON_AddItemToArray(arr, cJSON_CreateString(nodes[i]));
	snprintf(name, sizeof(name), "%" PRIu32 ".filed", id);
	if (!arr || write_at(p, name, marker) < 0)
		log_warning("job %u: cannot remember that its record was "
			    "filed",
			    id);
	log_info("job %u: one record for %zu nodes filed (%zu parts%s%s)", id,
		 n, k, missing[0] ? ", missing: " : "", missing);
out:
	pthread_mutex_unlock(&p->file_lock);
	for (size_t i = 0; i < k; i++)
		cJSON_Delete((cJSON *)parts[i]);
	free(parts);
	cJSON_Delete(merged);
	cJSON_Delete(marker);
}

int parts_put(struct parts *p, uint32_t id, const char *node, const cJSON *rec,
	      char *err, size_t errlen)
{
	const char **list = NULL;
	char name[CONF_NODE_MAX + 32];
	cJSON *marker;
	struct job *job;
	size_t n = 0;
	int rc = -1;

	if (!p) {
		snprintf(err, errlen, "parts: not ready");
		return -1;
	}
	if (!conf_is_node_name(node)) {
		snprintf(err, errlen, "key 'node': not a node name");
		return -1;
	}
	if (!cJSON_IsObject(rec) || proto_u64(rec, "job") != id ||
	    strcmp(str(rec, "node", ""), node) ||
	    !cJSON_GetObjectItem(rec, "end")) {
		snprintf(err, errlen,
			 "key 'record': not the finished part of "
			 "job %u from node %s",
			 id, node);
		return -1;
	}
	/* Only a node of the job may add to it. */
	list = calloc(JOBS_NODES_MAX, sizeof(*list));
	if (!list) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	marker = filed_marker(p, id);
	if (marker) {
		n = parts_record_nodes(marker, list, JOBS_NODES_MAX);
		if (!listed(list, n, node))
			goto not_ours;
	} else if ((job = jobs_get(p->agent->jobs, id))) {
		bool ours = job->nnodes == 0 ||
			    listed((const char *const *)job->nodes, job->nnodes,
				   node);

		jobs_put(job);
		if (!ours)
			goto not_ours;
	}
	part_name(id, node, name, sizeof(name));
	pthread_mutex_lock(&p->lock);
	if (write_at(p, name, rec) < 0) {
		snprintf(err, errlen, "cannot keep the part: %s",
			 strerror(errno));
		pthread_mutex_unlock(&p->lock);
		goto out;
	}
	pthread_cond_broadcast(&p->cond);
	pthread_mutex_unlock(&p->lock);
	log_info("job %u: part from node %s received", id, node);
	/* Late: the record was filed without it, file it again. */
	if (marker)
		merge_and_file(p, id, list, n);
	rc = 0;
	goto out;
not_ours:
	snprintf(err, errlen, "node %s is not a node of job %u", node, id);
out:
	cJSON_Delete(marker);
	free(list);
	return rc;
}

void parts_fit_record(cJSON *rec)
{
	char *text = jsonbuf_dup(rec);
	size_t len = text ? strlen(text) : 0;
	cJSON *procs = cJSON_GetObjectItemCaseSensitive(rec, "processes");
	int n = cJSON_GetArraySize(procs);

	free(text);
	if (len + 4096 <= MAUTH_PAYLOAD_MAX || n <= 64)
		return;
	if (!cJSON_GetObjectItemCaseSensitive(rec, "processes_total"))
		cJSON_AddNumberToObject(rec, "processes_total", n);
	while (cJSON_GetArraySize(procs) > 64)
		cJSON_DeleteItemFromArray(procs, cJSON_GetArraySize(procs) - 1);
}

/* Another node: send our part to the head until it takes it. */
static void send_to_head(struct parts *p, uint32_t id, const char *head,
			 const cJSON *rec)
{
	const struct peer_channel *pc = p->agent->peer;
	long long deadline = deadline_now_ms() +
			     (long long)p->conf->peer_parts_timeout * 1000;
	char err[CONF_ERR_MAX];
	int backoff = PARTS_BACKOFF_MIN_MS, tries = 0;
	cJSON *req = cJSON_CreateObject();

	if (!req || !cJSON_AddStringToObject(req, "op", "part_put") ||
	    !cJSON_AddNumberToObject(req, "job", id) ||
	    !cJSON_AddStringToObject(req, "node", peer_self(pc)) ||
	    !cJSON_AddItemToObject(req, "record", cJSON_Duplicate(rec, true))) {
		cJSON_Delete(req);
		log_warningx("job %u: out of memory sending its part", id);
		return;
	}
	parts_fit_record(cJSON_GetObjectItemCaseSensitive(req, "record"));
	for (;;) {
		long long left = deadline - deadline_now_ms();
		cJSON *reply;

		tries++;
		reply = peer_call(pc, head, req,
				  (int)(left < PEER_CALL_MS
					    ? (left > 1000 ? left : 1000)
					    : PEER_CALL_MS),
				  NULL, err, sizeof(err));
		if (reply && cJSON_IsTrue(cJSON_GetObjectItem(reply, "ok"))) {
			cJSON_Delete(reply);
			log_info("job %u: part sent to head node %s", id, head);
			break;
		}
		if (reply) {
			/* The head refused it: retrying will not help. */
			log_warningx("job %u: head node %s refused our part: "
				     "%s",
				     id, head, str(reply, "error", "?"));
			cJSON_Delete(reply);
			break;
		}
		left = deadline - deadline_now_ms();
		if (left <= 0) {
			log_warningx("job %u: part not delivered to head node "
				     "%s after %d tries in %u s: %s; it stays "
				     "in this node's telemetry",
				     id, head, tries,
				     p->conf->peer_parts_timeout, err);
			break;
		}
		{
			long long ms = backoff < left ? backoff : left;
			struct timespec ts = { ms / 1000,
					       (ms % 1000) * 1000000 };

			nanosleep(&ts, NULL);
		}
		if (backoff < PARTS_BACKOFF_MAX_MS)
			backoff *= 2;
	}
	cJSON_Delete(req);
}

/* The head: keep our own part, wait for the others, file one record. */
static void gather_at_head(struct parts *p, uint32_t id, const cJSON *rec,
			   const char *const *nodes, size_t n)
{
	struct timespec deadline;
	char name[CONF_NODE_MAX + 32];
	size_t have = 0;

	part_name(id, peer_self(p->agent->peer), name, sizeof(name));
	pthread_mutex_lock(&p->lock);
	if (write_at(p, name, rec) < 0)
		log_warning("job %u: cannot keep its own part", id);
	clock_gettime(CLOCK_MONOTONIC, &deadline);
	deadline.tv_sec += p->conf->peer_parts_timeout;
	for (;;) {
		have = 0;
		for (size_t i = 0; i < n; i++)
			have += part_present(p, id, nodes[i]);
		if (have == n)
			break;
		if (pthread_cond_timedwait(&p->cond, &p->lock, &deadline) ==
		    ETIMEDOUT) {
			have = 0;
			for (size_t i = 0; i < n; i++)
				have += part_present(p, id, nodes[i]);
			break;
		}
	}
	pthread_mutex_unlock(&p->lock);
	if (have < n)
		log_warningx("job %u: %zu of %zu parts after %u s; filing "
			     "without the others",
			     id, have, n, p->conf->peer_parts_timeout);
	merge_and_file(p, id, nodes, n);
}

int parts_finish(struct parts *p, uint32_t id, const cJSON *rec)
{
	const char **nodes = calloc(JOBS_NODES_MAX, sizeof(*nodes));
	size_t n = nodes ? parts_record_nodes(rec, nodes, JOBS_NODES_MAX) : 0;

	if (n <= 1 || !p || !peer_enabled(p->agent->peer)) {
		free(nodes);
		return 0;
	}
	if (strcmp(nodes[0], peer_self(p->agent->peer)))
		send_to_head(p, id, nodes[0], rec);
	else
		gather_at_head(p, id, rec, nodes, n);
	free(nodes);
	return 1;
}

/* The head's filed record of job ID (merged), or NULL. */
static cJSON *head_record(const struct peer_channel *pc, uint32_t id,
			  const char *head)
{
	char err[CONF_ERR_MAX];
	cJSON *rec = NULL, *req, *reply;
	struct history *h;

	if (!strcmp(head, peer_self(pc))) {
		h = history_db(err, sizeof(err));
		rec = h ? history_get(h, id, err, sizeof(err)) : NULL;
	} else {
		req = cJSON_CreateObject();
		cJSON_AddStringToObject(req, "op", "history_get");
		cJSON_AddNumberToObject(req, "job", id);
		reply = peer_call(pc, head, req, PEER_CALL_MS, NULL, err,
				  sizeof(err));
		cJSON_Delete(req);
		if (reply && cJSON_IsTrue(cJSON_GetObjectItem(reply, "ok")))
			rec = cJSON_DetachItemFromObject(reply, "record");
		cJSON_Delete(reply);
	}
	if (rec && !recmerge_is_merged(rec)) {
		cJSON_Delete(rec);
		rec = NULL;
	}
	return rec;
}

cJSON *parts_job_record(struct parts *p, uint32_t id, cJSON *local)
{
	const struct peer_channel *pc = p ? p->agent->peer : NULL;
	const char **nodes = NULL, **others = NULL;
	const cJSON **parts = NULL;
	cJSON **replies = NULL, *req = NULL, *merged = NULL, *rec;
	char(*errs)[256] = NULL;
	int *unreach = NULL;
	size_t n, k = 0, np = 0;

	nodes = calloc(JOBS_NODES_MAX, sizeof(*nodes));
	n = nodes ? parts_record_nodes(local, nodes, JOBS_NODES_MAX) : 0;
	if (n <= 1 || !peer_enabled(pc))
		goto out;
	/* Finished: the head filed the job's record. */
	if (cJSON_GetObjectItem(local, "end") &&
	    (rec = head_record(pc, id, nodes[0]))) {
		merged = rec;
		goto out;
	}
	others = calloc(n, sizeof(*others));
	parts = calloc(n, sizeof(*parts));
	replies = calloc(n, sizeof(*replies));
	errs = calloc(n, sizeof(*errs));
	unreach = calloc(n, sizeof(*unreach));
	req = cJSON_CreateObject();
	if (!others || !parts || !replies || !errs || !unreach || !req)
		goto out;
	for (size_t i = 0; i < n; i++)
		if (strcmp(nodes[i], peer_self(pc)))
			others[k++] = nodes[i];
	cJSON_AddStringToObject(req, "op", "telemetry_part");
	cJSON_AddNumberToObject(req, "job", id);
	peer_call_many(pc, others, k, req, PEER_CALL_MS, replies, errs,
		       unreach);
	parts[np++] = local;
	for (size_t i = 0; i < k; i++) {
		const cJSON *r = replies[i]
				     ? cJSON_GetObjectItem(replies[i], "record")
				     : NULL;

		if (replies[i] &&
		    cJSON_IsTrue(cJSON_GetObjectItem(replies[i], "ok")) &&
		    cJSON_IsObject(r))
			parts[np++] = r;
		else
			log_debug("job %u: no part from node %s: %s", id,
				  others[i],
				  replies[i] ? str(replies[i], "error", "?")
					     : errs[i]);
	}
	merged = recmerge_job(parts, np, nodes, n);
out:
	for (size_t i = 0; replies && i < k; i++)
		cJSON_Delete(replies[i]);
	free(replies);
	free(errs);
	free(unreach);
	free(parts);
	free(others);
	free(nodes);
	cJSON_Delete(req);
	if (!merged)
		return local;
	cJSON_Delete(local);
	return merged;
}

/* Old parts and markers go with the telemetry records they came from. */
static void remove_old(int dir_fd)
{
	time_t cutoff = time(NULL) - (time_t)TELEMETRY_KEEP_DAYS * 86400;
	int fd = dup(dir_fd);
	DIR *d = fd < 0 ? NULL : fdopendir(fd);
	struct dirent *de;

	if (!d) {
		if (fd >= 0)
			close(fd);
		return;
	}
	while ((de = readdir(d))) {
		struct stat st;

		if (de->d_name[0] == '.' && strstr(de->d_name, ".tmp")) {
			unlinkat(dir_fd, de->d_name, 0);
			continue;
		}
		if (fstatat(dir_fd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) ==
			0 &&
		    S_ISREG(st.st_mode) && st.st_mtime < cutoff)
			unlinkat(dir_fd, de->d_name, 0);
	}
	closedir(d);
}

struct parts *parts_create(struct agent *a, char *err, size_t errlen)
{
	char path[CONF_PATH_MAX + 16];
	pthread_condattr_t attr;
	struct parts *p;

	snprintf(path, sizeof(path), "%s/parts", a->conf->state_dir);
	p = calloc(1, sizeof(*p));
	if (!p) {
		snprintf(err, errlen, "parts: out of memory");
		return NULL;
	}
	p->agent = a;
	p->conf = a->conf;
	if (fsutil_mkdir_p(path, 0700) < 0 ||
	    (p->dir_fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
					O_CLOEXEC)) < 0) {
		snprintf(err, errlen, "parts: %s: %s", path, strerror(errno));
		free(p);
		return NULL;
	}
	pthread_mutex_init(&p->lock, NULL);
	pthread_mutex_init(&p->file_lock, NULL);
	pthread_condattr_init(&attr);
	pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
	pthread_cond_init(&p->cond, &attr);
	pthread_condattr_destroy(&attr);
	remove_old(p->dir_fd);
	return p;
}

void parts_destroy(struct parts *p)
{
	if (!p)
		return;
	close(p->dir_fd);
	pthread_cond_destroy(&p->cond);
	pthread_mutex_destroy(&p->file_lock);
	pthread_mutex_destroy(&p->lock);
	free(p);
}
