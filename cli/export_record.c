/* export_record.c - reading, filtering and dispatching job records for
 * `iostage export` (export.h). */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli/export.h"
#include "common/base/jsonbuf.h"

bool rec_num(const cJSON *o, const char *key, double *ret)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);

	if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble) ||
	    v->valuedouble < 0)
		return false;
	*ret = v->valuedouble;
	return true;
}

const char *rec_str(const cJSON *o, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);

	return cJSON_IsString(v) ? v->valuestring : NULL;
}

uint32_t rec_job(const cJSON *record)
{
	double id;

	if (!rec_num(record, "job", &id) || id < 1 || id > 4294967295.0 ||
	    id != floor(id))
		return 0;
	return (uint32_t)id;
}

const cJSON *rec_phase(const cJSON *record, const char *name)
{
	const cJSON *ph;

	cJSON_ArrayForEach(ph,
			   cJSON_GetObjectItemCaseSensitive(record, "phases")) {
		const char *n = rec_str(ph, "name");

		if (n && !strcmp(n, name) && !rec_str(ph, "parent"))
			return ph;
	}
	return NULL;
}

void rec_cache_summary(const cJSON *record, struct rec_cache *ret)
{
	const cJSON *ds;
	double v;

	memset(ret, 0, sizeof(*ret));
	cJSON_ArrayForEach(ds, cJSON_GetObjectItemCaseSensitive(record,
								"datasets")) {
		const char *result = rec_str(ds, "result");

		if (!result)
			continue;
		ret->datasets++;
		if (!strcmp(result, "hit"))
			ret->hits++;
		if (rec_num(ds, "cached_bytes", &v))
			ret->cached_bytes += v;
		if (rec_num(ds, "copied_bytes", &v))
			ret->copied_bytes += v;
	}
}

int export_format_parse(const char *s, enum export_format *ret)
{
	static const char *const names[] = {
		[EXPORT_JSON] = "json", [EXPORT_CSV] = "csv",
		[EXPORT_PROM] = "prom", [EXPORT_TRACE] = "trace",
		[EXPORT_HTML] = "html",
	};

	for (size_t i = 0; s && i < sizeof(names) / sizeof(names[0]); i++)
		if (!strcmp(s, names[i])) {
			*ret = (enum export_format)i;
			return 0;
		}
	return -1;
}

int export_parse_since(const char *s, double now, double *ret)
{
	double v = 0, mult = 1;
	const char *p = s;

	if (!s || !isdigit((unsigned char)*s))
		return -1;
	for (; isdigit((unsigned char)*p); p++) {
		v = v * 10 + (*p - '0');
		if (v > 1e12)
			return -1;
	}
	if (!*p) { /* unix seconds */
		*ret = v;
		return 0;
	}
	switch (*p) {
	case 's':
		mult = 1;
		break;
	case 'm':
		mult = 60;
		break;
	case 'h':
		mult = 3600;
		break;
	case 'd':
		mult = 86400;
		break;
	default:
		return -1;
	}
	if (p[1])
		return -1;
	*ret = now - v * mult;
	return 0;
}

/* Move every object of ARR into OUT; -1 if one is not an object. */
static int take_objects(cJSON *arr, cJSON *out)
{
	cJSON *item;

	while ((item = cJSON_DetachItemFromArray(arr, 0))) {
		if (!cJSON_IsObject(item)) {
			cJSON_Delete(item);
			return -1;
		}
		cJSON_AddItemToArray(out, item);
	}
	return 0;
}

/* JSON lines: one record object per non-blank line. */
static cJSON *parse_lines(const char *text, const char *origin, char *err,
			  size_t errlen)
{
	cJSON *out = cJSON_CreateArray(), *o;
	const char *line = text, *end;
	unsigned n = 1;

	if (!out)
		goto nomem;
	for (; *line; line = *end ? end + 1 : end, n++) {
		const char *p;

		end = strchr(line, '\n');
		if (!end)
			end = line + strlen(line);
		for (p = line; p < end && isspace((unsigned char)*p); p++)
			;
		if (p == end)
			continue;
		o = cJSON_ParseWithLength(line, (size_t)(end - line));
		if (!cJSON_IsObject(o)) {
			cJSON_Delete(o);
			cJSON_Delete(out);
			snprintf(err, errlen,
				 "%s: line %u: not a JSON record object",
				 origin, n);
			return NULL;
		}
		cJSON_AddItemToArray(out, o);
	}
	return out;
nomem:
	snprintf(err, errlen, "%s: out of memory", origin);
	return NULL;
}

cJSON *export_records_parse(const char *text, const char *origin, char *err,
			    size_t errlen)
{
	cJSON *doc, *out, *arr;

	if (!text) {
		snprintf(err, errlen, "%s: no text", origin);
		return NULL;
	}
	/* The whole text must be one document, or it is JSON lines. */
	doc = cJSON_ParseWithOpts(text, NULL, true);
	if (!doc)
		return parse_lines(text, origin, err, errlen);
	out = cJSON_CreateArray();
	if (!out) {
		cJSON_Delete(doc);
		snprintf(err, errlen, "%s: out of memory", origin);
		return NULL;
	}
	arr = cJSON_IsArray(doc)
		  ? doc
		  : cJSON_GetObjectItemCaseSensitive(doc, "records");
	if (cJSON_IsArray(arr)) {
		if (take_objects(arr, out) < 0) {
			snprintf(err, errlen,
				 "%s: the records array holds something "
				 "that is not a record object",
				 origin);
			goto fail;
		}
	} else if (cJSON_IsObject(doc) &&
		   cJSON_GetObjectItemCaseSensitive(doc, "job")) {
		cJSON_AddItemToArray(out, doc);
		return out;
	} else {
		snprintf(err, errlen,
			 "%s: not job records (want an array of records, "
			 "{\"records\":[...]}, a record, or JSON lines)",
			 origin);
		goto fail;
	}
	cJSON_Delete(doc);
	return out;
fail:
	cJSON_Delete(doc);
	cJSON_Delete(out);
	return NULL;
}

void export_records_filter(cJSON *records, uint32_t job, double since)
{
	cJSON *rec = records ? records->child : NULL, *next;

	for (; rec; rec = next) {
		double t;
		bool keep = true;

		next = rec->next;
		if (job && rec_job(rec) != job)
			keep = false;
		if (keep && since >= 0 &&
		    (rec_num(rec, "end", &t) || rec_num(rec, "start", &t)) &&
		    t < since)
			keep = false;
		if (!keep)
			cJSON_Delete(cJSON_DetachItemViaPointer(records, rec));
	}
}

int export_render(enum export_format format, const cJSON *records, FILE *out)
{
	int r = -1;

	switch (format) {
	case EXPORT_JSON:
		r = export_json(records, out);
		break;
	case EXPORT_CSV:
		r = export_csv(records, out);
		break;
	case EXPORT_PROM:
		r = export_prom(records, out);
		break;
	case EXPORT_TRACE:
		r = export_trace(records, out);
		break;
	case EXPORT_HTML:
		r = export_html(records, out);
		break;
	}
	if (r == 0 && (fflush(out) != 0 || ferror(out))) {
		errno = EIO;
		return -1;
	}
	return r;
}

int export_json(const cJSON *records, FILE *out)
{
	char *text = jsonbuf_pretty(records);

	if (!text) {
		errno = ENOMEM;
		return -1;
	}
	fputs(text, out);
	fputc('\n', out);
	free(text);
	return 0;
}
