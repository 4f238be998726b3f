/* drain_proto.c - what a drain worker says, read by root.
 *
 * The worker is our binary, but it runs as the job's user, who may ptrace
 * it and make it write anything: its lines are outside input. Parsing is
 * a function of the line alone (drain_proto_parse: a unit test's table and
 * fuzz_drain_lines drive it), kept apart from what a line changes (the
 * counters of the job's current phase, the command slot), so that what is
 * accepted is decided in one place. Whatever the worker names is made one
 * printable line before it reaches the log.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <cJSON.h>

#include "common/base/log.h"
#include "common/net/proto.h"
#include "daemon/staging/drain_internal.h"

void drain_sanitize(char *s)
{
	for (; *s; s++)
		if ((unsigned char)*s < 0x20 || *s == 0x7f)
			*s = '?';
}

int drain_proto_parse(const char *line, struct drain_msg *ret)
{
	const cJSON *ok, *path, *error, *skipped;
	struct drain_msg msg;
	cJSON *m = line ? cJSON_Parse(line) : NULL;

	if (!cJSON_IsObject(m)) {
		cJSON_Delete(m);
		errno = EINVAL;
		return -1;
	}
	memset(&msg, 0, sizeof(msg));
	msg.kind = DRAIN_MSG_OK;
	if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(m, "done"))) {
		msg.kind = DRAIN_MSG_DONE;
		msg.failed = proto_u64(m, "failed");
		goto out;
	}
	ok = cJSON_GetObjectItemCaseSensitive(m, "ok");
	path = cJSON_GetObjectItemCaseSensitive(m, "path");
	error = cJSON_GetObjectItemCaseSensitive(m, "error");
	skipped = cJSON_GetObjectItemCaseSensitive(m, "skipped");
	snprintf(msg.path, sizeof(msg.path), "%s",
		 cJSON_IsString(path) ? path->valuestring : "");
	drain_sanitize(msg.path);
	if (cJSON_IsTrue(ok)) {
		if (cJSON_GetObjectItemCaseSensitive(m, "bytes")) {
			msg.kind = DRAIN_MSG_COPIED;
			msg.bytes = proto_u64(m, "bytes");
		} else if (cJSON_IsString(skipped)) {
			msg.kind = DRAIN_MSG_SKIPPED;
			snprintf(msg.text, sizeof(msg.text), "%s",
				 skipped->valuestring);
		}
	} else if (cJSON_IsFalse(ok)) {
		msg.kind = cJSON_IsString(path) ? DRAIN_MSG_FAILED
						: DRAIN_MSG_WORKER;
		snprintf(msg.text, sizeof(msg.text), "%s",
			 cJSON_IsString(error) ? error->valuestring : "?");
	}
	drain_sanitize(msg.text);
out:
	cJSON_Delete(m);
	*ret = msg;
	return 0;
}

void drain_count_file(struct dout *o, uint64_t bytes)
{
	struct djob *dj = o->job;

	if (dj->phase == DRAIN_RUNNING) {
		dj->during_files++;
		dj->during_bytes += bytes;
		o->during_files++;
		o->during_bytes += bytes;
	} else {
		dj->end_files++;
		dj->end_bytes += bytes;
		o->end_files++;
		o->end_bytes += bytes;
	}
	o->size_hist[telrec_size_bucket(bytes)]++;
	if (bytes > o->max_file)
		o->max_file = bytes;
	dj->dirty = true;
}

int drain_worker_line(struct dout *o, const char *line)
{
	struct djob *dj = o->job;
	struct drain_msg msg, *m = &msg;

	if (drain_proto_parse(line, m) < 0) {
		log_warningx("job %u: output '%s': drain worker sent malformed "
			     "output",
			     dj->id, o->name);
		return -1;
	}
	switch (m->kind) {
	case DRAIN_MSG_DONE:
		if (o->busy_final) {
			o->final_done = true;
			o->final_failed += m->failed;
		}
		o->busy = o->busy_final = false;
		dj->dirty = true;
		break;
	case DRAIN_MSG_COPIED:
		drain_count_file(o, m->bytes);
		break;
	case DRAIN_MSG_SKIPPED:
		if (dj->errors_logged < DRAIN_ERRORS_LOGGED) {
			dj->errors_logged++;
			log_info("job %u: output '%s': %s: %s skipped", dj->id,
				 o->name, m->path, m->text);
		}
		break;
	case DRAIN_MSG_WORKER:
		/* About the worker itself (it could not start). */
		log_warningx("job %u: output '%s': %s", dj->id, o->name,
			     m->text);
		break;
	case DRAIN_MSG_FAILED:
		dj->failed_files++;
		o->failed_files++;
		dj->dirty = true;
		if (dj->errors_logged < DRAIN_ERRORS_LOGGED) {
			dj->errors_logged++;
			log_warningx("job %u: output '%s': %s", dj->id, o->name,
				     m->text);
		}
		break;
	case DRAIN_MSG_OK:
		break;
	}
	return 0;
}
