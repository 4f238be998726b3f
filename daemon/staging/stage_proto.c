/* stage_proto.c - reading what a stage worker writes (docs/STAGING.md,
 * "The worker"; daemon/staging/worker.h).
 *
 * Everything the worker prints is untrusted (it runs as the user, who may
 * ptrace it): lines are bounded by proto_read_line before they get here,
 * numbers are only ever added up for status and space (and capped by the
 * caller), and strings are made printable and one-line before they reach
 * logs or replies. tests/fuzz/fuzz_stage_lines.c feeds this any bytes.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <cJSON.h>

#include "common/net/proto.h"
#include "daemon/staging/stage_plan.h"

void stage_sanitize(char *s)
{
	for (; *s; s++)
		if ((unsigned char)*s < 0x20 || *s == 0x7f)
			*s = '?';
}

/* The totals line; copy_* default to the totals (an older worker). */
static void parse_totals(const cJSON *m, struct stage_msg *r)
{
	r->kind = STAGE_MSG_TOTALS;
	r->total_bytes = proto_u64(m, "total_bytes");
	r->total_files = proto_u64(m, "total_files");
	r->copy_bytes = cJSON_GetObjectItemCaseSensitive(m, "copy_bytes")
			    ? proto_u64(m, "copy_bytes")
			    : r->total_bytes;
	r->copy_files = cJSON_GetObjectItemCaseSensitive(m, "copy_files")
			    ? proto_u64(m, "copy_files")
			    : r->total_files;
	r->source_bytes = cJSON_GetObjectItemCaseSensitive(m, "source_bytes")
			      ? proto_u64(m, "source_bytes")
			      : r->copy_bytes;
	r->dataset_bytes = cJSON_GetObjectItemCaseSensitive(m, "dataset_bytes")
			       ? proto_u64(m, "dataset_bytes")
			       : r->total_bytes;
	r->dataset_files = cJSON_GetObjectItemCaseSensitive(m, "dataset_files")
			       ? proto_u64(m, "dataset_files")
			       : r->total_files;
	r->over_budget_bytes = proto_u64(m, "over_budget_bytes");
	r->over_budget_files = proto_u64(m, "over_budget_files");
	r->chunks = proto_u64(m, "chunks");
	r->chunk_bytes = proto_u64(m, "chunk_bytes");
	r->chunked_files = proto_u64(m, "chunked_files");
	r->unchanged = cJSON_IsTrue(
	    cJSON_GetObjectItemCaseSensitive(m, "unchanged"));
}

static void parse_message(const cJSON *m, struct stage_msg *r)
{
	const cJSON *ok = cJSON_GetObjectItemCaseSensitive(m, "ok");
	const cJSON *note = cJSON_GetObjectItemCaseSensitive(m, "note");
	const cJSON *error = cJSON_GetObjectItemCaseSensitive(m, "error");

	if (cJSON_IsBool(ok)) {
		r->kind = STAGE_MSG_RESULT;
		r->ok = cJSON_IsTrue(ok);
		r->bytes = proto_u64(m, "bytes");
		r->files = proto_u64(m, "files");
		r->linked = proto_u64(m, "linked");
		r->linked_bytes = proto_u64(m, "linked_bytes");
		r->copied_previous = proto_u64(m, "copied_previous");
		r->copied_previous_bytes = proto_u64(m,
						     "copied_previous_bytes");
		r->fetched = proto_u64(m, "fetched");
		r->fetched_bytes = proto_u64(m, "fetched_bytes");
		r->fallbacks = proto_u64(m, "fallbacks");
		r->chunks_fetched = proto_u64(m, "chunks_fetched");
		r->chunks_fetched_bytes = proto_u64(m, "chunks_fetched_bytes");
		/* a failure always says why, if only that it failed */
		if (!r->ok)
			snprintf(r->text, sizeof(r->text), "%s",
				 cJSON_IsString(error) && error->valuestring[0]
				     ? error->valuestring
				     : "copy failed");
	} else if (cJSON_IsString(note)) {
		r->kind = STAGE_MSG_NOTE;
		snprintf(r->text, sizeof(r->text), "%s", note->valuestring);
	} else if (cJSON_GetObjectItemCaseSensitive(m, "total_bytes")) {
		parse_totals(m, r);
	} else if (cJSON_GetObjectItemCaseSensitive(m, "bytes")) {
		r->kind = STAGE_MSG_PROGRESS;
		r->bytes = proto_u64(m, "bytes");
		r->files = proto_u64(m, "files");
	}
	stage_sanitize(r->text);
}

int stage_parse_line(const char *line, struct stage_msg *ret)
{
	cJSON *m;

	memset(ret, 0, sizeof(*ret));
	m = line ? cJSON_Parse(line) : NULL;
	if (!cJSON_IsObject(m)) {
		cJSON_Delete(m);
		errno = EPROTO;
		return -1;
	}
	parse_message(m, ret);
	cJSON_Delete(m);
	return 0;
}
