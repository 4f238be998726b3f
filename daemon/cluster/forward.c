/* forward.c - the outbox's forwarding thread (forward.h).
 *
 * One thread, one request at a time: a node files a handful of records a
 * minute, and sending them in order keeps the service's load and the log
 * readable. A pass walks the outbox oldest first, FORWARD_BATCH_MAX
 * entries per request (`file_batch`; one entry goes as `file`): a node
 * with a backlog (the service was away, many short jobs) pays one
 * connection, one credential and one fsync on the service per batch, not
 * per job. An unreachable service ends the pass (the next entries would
 * fail the same way), a refused entry is kept and the pass goes on with
 * the others. Between failed
 * passes the thread sleeps a backoff that doubles up to the maximum, with
 * jitter (half of it random) so that nodes that lost the service together
 * do not all come back in the same second. A put wakes it at once; the
 * backoff is reset only by a pass that sent everything. The thread is a
 * ticker (common/base/ticker.h) turning every FORWARD_TICK_MS: a turn that
 * is neither poked (a put) nor due (the backoff's end) does nothing.
 *
 * Logging: one line per record filed, one line when the service is lost
 * and one when it is back (not one per retry), a quarantine and the
 * outbox limit as errors.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/base/deadline.h"
#include "common/base/log.h"
#include "common/base/ticker.h"
#include "common/net/ctlclient.h"
#include "common/telemetry/outbox.h"
#include "daemon/agent.h"
#include "daemon/cluster/forward.h"
#include "daemon/cluster/parts.h"
#include "daemon/jobs.h"

enum pass_result {
	PASS_ALL_SENT = 0, /* the outbox is empty (or only newer entries) */
	PASS_RETRY,        /* something stays: back off */
};

struct forward {
	const struct conf *conf;
	struct outbox *ob;
	pthread_mutex_t lock;
	struct ticker *ticker; /* under lock: set once it started */
	/* Under lock: the service's state as the thread last saw it. */
	bool unreachable;
	/* The thread's own. */
	time_t last_alarm;
	unsigned backoff;     /* ms; 0: the last pass sent everything */
	struct timespec next; /* CLOCK_MONOTONIC: the next pass is due */
};

static const char *str(const cJSON *o, const char *key, const char *dflt)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);

	return cJSON_IsString(v) ? v->valuestring : dflt;
}

/* The `file` request for outbox entry E. */
static cJSON *file_request(const cJSON *e)
{
	static const char *const keys[] = { "job", "node", "nodes", "record" };
	cJSON *req = cJSON_CreateObject();

	if (!req || !cJSON_AddStringToObject(req, "op", "file"))
		goto fail;
	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
		cJSON *v = cJSON_Duplicate(
		    cJSON_GetObjectItemCaseSensitive(e, keys[i]), true);

		if (!v)
			goto fail;
		cJSON_AddItemToObject(req, keys[i], v);
	}
	return req;
fail:
	cJSON_Delete(req);
	return NULL;
}

/* What the service said of one entry. */
struct sent {
	int rc; /* 0 filed (or was already), 1 refused */
	bool dup;
	char err[CONF_ERR_MAX];
};

/* Send the N entries E as one request (`file` for one, else
 * `file_batch`) and fill OUT[0..N). 0, or -1 when the service could not
 * be asked (err says why; OUT untouched). */
static int send_entries(const struct forward *f, cJSON *const *e, size_t n,
			struct sent *out, char *err, size_t errlen)
{
	cJSON *req, *reply = NULL, *files = NULL;
	const cJSON *results, *r;
	size_t i;
	bool whole;
	int rc;

	if (n == 1) {
		req = file_request(e[0]);
	} else {
		req = cJSON_CreateObject();
		if (req && cJSON_AddStringToObject(req, "op", "file_batch"))
			files = cJSON_AddArrayToObject(req, "files");
		for (i = 0; files && i < n; i++) {
			cJSON *one = file_request(e[i]);

			cJSON_DeleteItemFromObject(one, "op");
			if (!one || !cJSON_AddItemToArray(files, one)) {
				cJSON_Delete(one);
				files = NULL;
			}
		}
		if (!files) {
			cJSON_Delete(req);
			req = NULL;
		}
	}
	if (!req) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	rc = ctl_request(f->conf, req, &reply, err, errlen);
	cJSON_Delete(req);
	if (rc < 0)
		return -1;
	if (n > 1 && !strncmp(str(reply, "error", ""), "unknown op", 10)) {
		/* A service from before file_batch: one at a time. */
		cJSON_Delete(reply);
		for (i = 0; i < n; i++)
			if (send_entries(f, &e[i], 1, &out[i], err, errlen) < 0)
				return -1;
		return 0;
	}
	/* One answer for all: a `file` reply, or a batch refused whole. */
	whole = n == 1 ||
		!cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(reply, "ok"));
	results = cJSON_GetObjectItemCaseSensitive(reply, "results");
	for (i = 0; i < n; i++) {
		r = whole ? reply : cJSON_GetArrayItem(results, (int)i);
		out[i].rc = 0;
		out[i].dup = false;
		out[i].err[0] = '\0';
		if (whole ? !cJSON_IsTrue(
				cJSON_GetObjectItemCaseSensitive(reply, "ok"))
			  : !cJSON_IsObject(r) ||
				cJSON_HasObjectItem(r, "error")) {
			out[i].rc = 1;
			snprintf(out[i].err, sizeof(out[i].err), "%s",
				 str(r, "error", "(no reason)"));
			continue;
		}
		out[i].dup = cJSON_IsTrue(
		    cJSON_GetObjectItemCaseSensitive(r, "duplicate"));
	}
	cJSON_Delete(reply);
	return 0;
}

static void alarm_if_over(struct forward *f, size_t n, const char *why)
{
	const struct conf *fconf = f->conf;
	time_t now = time(NULL);

	if (n <= fconf->outbox_limit || now - f->last_alarm < FORWARD_ALARM_S)
		return;
	f->last_alarm = now;
	log_errorx("outbox %s/%s holds %zu job records, more than "
		   "OutboxLimit=%u: iostagectld at %s:%u is not taking them "
		   "(%s); none is dropped, they are sent when it answers",
		   fconf->state_dir, FORWARD_DIR_NAME, n, fconf->outbox_limit,
		   fconf->controller_host, fconf->controller_port, why);
}

/* Whether forward_destroy wants the thread to end: a pass stops between
 * two requests. */
static bool should_stop(struct forward *f)
{
	struct ticker *t;

	pthread_mutex_lock(&f->lock);
	t = f->ticker;
	pthread_mutex_unlock(&f->lock);
	return t && ticker_stopping(t);
}

static enum pass_result pass(struct forward *f)
{
	const struct conf *fconf = f->conf;
	char err[CONF_ERR_MAX], qerr[CONF_ERR_MAX], moved[CONF_PATH_MAX + 300];
	char why[CONF_ERR_MAX + 32] = "no reason given";
	struct outbox_item *items = NULL;
	enum pass_result res = PASS_ALL_SENT;
	size_t n = 0, sent = 0;

	if (outbox_list(f->ob, &items, &n, err, sizeof(err)) < 0) {
		log_warningx("%s", err);
		return PASS_RETRY;
	}
	for (size_t i = 0; i < n && !should_stop(f);) {
		cJSON *batch[FORWARD_BATCH_MAX];
		struct outbox_item *its[FORWARD_BATCH_MAX];
		struct sent out[FORWARD_BATCH_MAX];
		size_t k = 0, bytes = 0, first = i;

		/* The next entries, up to a request's worth. */
		for (; i < n && k < FORWARD_BATCH_MAX; i++) {
			struct outbox_item *it = &items[i];
			cJSON *e = outbox_read(f->ob, it, err, sizeof(err));

			if (!e) {
				if (errno == ENOENT)
					continue;
				if (errno != EINVAL) {
					log_warningx("%s", err);
					res = PASS_RETRY;
					continue;
				}
				/* Never deleted: an admin may want to see
				 * it. */
				if (outbox_quarantine(f->ob, it, moved,
						      sizeof(moved), qerr,
						      sizeof(qerr)) == 0)
					log_errorx("%s; moved to %s", err,
						   moved);
				else
					log_errorx("%s; %s", err, qerr);
				continue;
			}
			if (k > 0 && bytes + it->bytes > FORWARD_BATCH_BYTES) {
				cJSON_Delete(e); /* the next request's */
				break;
			}
			bytes += it->bytes;
			batch[k] = e;
			its[k++] = it;
		}
		if (k == 0)
			continue;
		if (send_entries(f, batch, k, out, err, sizeof(err)) < 0) {
			for (size_t j = 0; j < k; j++)
				cJSON_Delete(batch[j]);
			pthread_mutex_lock(&f->lock);
			if (!f->unreachable)
				log_warningx("%s; %zu job record%s wait in the "
					     "outbox, retried with backoff",
					     err, n - first,
					     n - first == 1 ? "" : "s");
			f->unreachable = true;
			pthread_mutex_unlock(&f->lock);
			snprintf(why, sizeof(why), "%s", err);
			res = PASS_RETRY;
			break;
		}
		for (size_t j = 0; j < k; j++) {
			struct outbox_item *it = its[j];

			cJSON_Delete(batch[j]);
			if (out[j].rc > 0) {
				/* The service read it and said no (a bad
				 * record, its database unusable): kept,
				 * retried later. */
				log_warningx("job %" PRIu32 ": iostagectld "
					     "did not file the record of node "
					     "%s: %s; kept in the outbox, "
					     "retried",
					     it->job, it->node, out[j].err);
				snprintf(why, sizeof(why), "it refused one: %s",
					 out[j].err);
				res = PASS_RETRY;
				continue;
			}
			if (outbox_remove(f->ob, it, err, sizeof(err)) < 0)
				log_warningx("%s", err); /* sent again: a
							  * duplicate */
			sent++;
			log_info("job %" PRIu32 ": record of node %s filed on "
				 "iostagectld%s",
				 it->job, it->node,
				 out[j].dup ? " (it had it already)" : "");
		}
		outbox_sync(f->ob); /* the batch's removals, at once */
	}
	/* What stays counts, whether the service is down or refusing. */
	if (res == PASS_RETRY)
		alarm_if_over(f, n - sent, why);
	if (res == PASS_ALL_SENT || sent) {
		pthread_mutex_lock(&f->lock);
		if (f->unreachable && sent)
			log_info("iostagectld at %s:%u answers again",
				 fconf->controller_host,
				 fconf->controller_port);
		if (sent)
			f->unreachable = false;
		pthread_mutex_unlock(&f->lock);
	}
	free(items);
	return res;
}

static unsigned jitter(unsigned ms)
{
	unsigned r = 0;

	if (getrandom(&r, sizeof(r), GRND_NONBLOCK) != sizeof(r))
		r = (unsigned)time(NULL) ^ (unsigned)getpid();
	/* Half fixed, half random: [ms/2, ms]. */
	return ms / 2 + r % (ms / 2 + 1);
}

/* One turn of the ticker: a pass when poked (a put, or the start) or when
 * the backoff (or the idle look) is over, then the next wait. */
static void forward_turn(void *arg, bool poked)
{
	struct forward *f = arg;
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	if (!poked &&
	    (now.tv_sec < f->next.tv_sec ||
	     (now.tv_sec == f->next.tv_sec && now.tv_nsec < f->next.tv_nsec)))
		return;
	if (pass(f) == PASS_ALL_SENT)
		f->backoff = 0;
	else
		f->backoff = f->backoff ? f->backoff * 2
					: FORWARD_BACKOFF_MIN_MS;
	if (f->backoff > f->conf->outbox_retry_max * 1000u)
		f->backoff = f->conf->outbox_retry_max * 1000u;
	if (f->backoff)
		deadline_after_ms(CLOCK_MONOTONIC, jitter(f->backoff),
				  &f->next);
	else
		/* Nothing waits: sleep until a put; look again now and then
		 * for entries put by hand (an admin moving one back from
		 * bad/). */
		deadline_after_ms(CLOCK_MONOTONIC, FORWARD_IDLE_LOOK_S * 1000UL,
				  &f->next);
}

bool forward_enabled(const struct forward *f)
{
	return f != NULL;
}

long forward_pending(const struct forward *f)
{
	return f ? outbox_count(f->ob) : 0;
}

int forward_put(struct forward *f, uint32_t id, const cJSON *rec, char *err,
		size_t errlen)
{
	const char **nodes = NULL;
	char perr[CONF_ERR_MAX];
	cJSON *copy = NULL, *e = NULL;
	size_t n;
	struct sent direct = { .rc = -1 };
	int rc = -1;

	nodes = calloc(JOBS_NODES_MAX, sizeof(*nodes));
	copy = cJSON_Duplicate(rec, true);
	if (!nodes || !copy) {
		snprintf(err, errlen, "job %" PRIu32 ": out of memory", id);
		goto out;
	}
	/* It must fit in the credential that carries it to the service. */
	parts_fit_record(copy);
	n = parts_record_nodes(copy, nodes, JOBS_NODES_MAX);
	e = outbox_entry_new(id, f->conf->node_name, nodes, n, copy,
			     (double)time(NULL));
	if (!e) {
		snprintf(err, errlen, "job %" PRIu32 ": out of memory", id);
		goto out;
	}
	if (outbox_put(f->ob, e, perr, sizeof(perr)) == 0) {
		struct ticker *t;

		pthread_mutex_lock(&f->lock);
		t = f->ticker;
		pthread_mutex_unlock(&f->lock);
		if (t)
			ticker_poke(t);
		rc = 0;
		goto out;
	}
	if (errno == EINVAL) {
		snprintf(err, errlen,
			 "job %" PRIu32 ": record not put in the "
			 "outbox: %s",
			 id, perr);
		goto out;
	}
	/* The disk refused it: one direct try, so the record is not lost
	 * merely because StateDir is full. */
	if (send_entries(f, &e, 1, &direct, err, errlen) == 0 &&
	    direct.rc == 0) {
		log_warningx("%s; sent to iostagectld directly", perr);
		rc = 0;
		goto out;
	}
	if (direct.rc > 0)
		snprintf(err, errlen, "%s", direct.err);
	{
		char why[CONF_ERR_MAX];

		snprintf(why, sizeof(why), "%s", err);
		snprintf(err, errlen, "%s; and iostagectld: %s", perr, why);
	}
out:
	cJSON_Delete(e);
	cJSON_Delete(copy);
	free(nodes);
	return rc;
}

/* No service, but an outbox with records: say so once. */
static void warn_orphans(const struct conf *conf)
{
	char path[CONF_PATH_MAX + 16];
	struct outbox *o = NULL;
	struct stat st;
	long n;

	snprintf(path, sizeof(path), "%s/%s", conf->state_dir,
		 FORWARD_DIR_NAME);
	if (lstat(path, &st) < 0 || !S_ISDIR(st.st_mode) ||
	    outbox_open(path, &o, NULL, NULL, 0) < 0)
		return;
	n = outbox_count(o);
	if (n > 0)
		log_warningx("%s holds %ld job record%s for iostagectld, but "
			     "ControllerHost= is not set: they stay there "
			     "until it is",
			     path, n, n == 1 ? "" : "s");
	outbox_close(o);
}

int forward_create(struct agent *a, struct forward **ret, char *err,
		   size_t errlen)
{
	const struct conf *conf = a->conf;
	char path[CONF_PATH_MAX + 16];
	struct forward *f;
	unsigned cleaned = 0;
	long n;

	*ret = NULL;
	if (!ctl_configured(conf)) {
		warn_orphans(conf);
		return 0;
	}
	f = calloc(1, sizeof(*f));
	if (!f) {
		snprintf(err, errlen, "outbox: out of memory");
		return -1;
	}
	f->conf = conf;
	pthread_mutex_init(&f->lock, NULL);
	snprintf(path, sizeof(path), "%s/%s", conf->state_dir,
		 FORWARD_DIR_NAME);
	if (outbox_open(path, &f->ob, &cleaned, err, errlen) < 0) {
		pthread_mutex_destroy(&f->lock);
		free(f);
		return -1;
	}
	if (cleaned)
		log_info("outbox %s: %u torn temporary file%s of a crash "
			 "removed",
			 path, cleaned, cleaned == 1 ? "" : "s");
	n = outbox_count(f->ob);
	if (n > 0)
		log_info("outbox %s: %ld job record%s to send to iostagectld "
			 "at %s:%u",
			 path, n, n == 1 ? "" : "s", conf->controller_host,
			 conf->controller_port);
	/* The first turn at once: resume what the outbox holds. It waits
	 * on the lock until f->ticker is set. */
	pthread_mutex_lock(&f->lock);
	f->ticker = ticker_start(FORWARD_TICK_MS, true, forward_turn, f);
	pthread_mutex_unlock(&f->lock);
	if (!f->ticker) {
		snprintf(err, errlen, "outbox: cannot start its thread: %s",
			 strerror(errno));
		outbox_close(f->ob);
		pthread_mutex_destroy(&f->lock);
		free(f);
		return -1;
	}
	*ret = f;
	return 0;
}

void forward_destroy(struct forward *f)
{
	if (!f)
		return;
	/* Not under f->lock: the turn in progress takes it to look. */
	ticker_stop(f->ticker);
	outbox_close(f->ob);
	pthread_mutex_destroy(&f->lock);
	free(f);
}
