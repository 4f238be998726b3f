/* export.c - `iostage export --format json|csv|prom|trace|html [--job J]
 * [--since T] [--input FILE] [-o FILE]`.
 *
 * Records come from the history (history_get for --job, else
 * history_list with --since; the history decides which records the caller
 * may see: their own, or everyone's for root): iostagectld's when
 * iostage.conf names one (ControllerHost=; from a login node too), else
 * the node's iostaged. Or from --input, a file
 * saved earlier with --format json (offline: no daemon, no config
 * needed). For the HTML report, records without recommendations get those
 * of the recommend op for their user and job name, when the daemon has it.
 * -o FILE is written atomically (FILE.tmp.PID, then rename).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli/export.h"
#include "cli/json.h"
#include "common/base/smallfile.h"

#define EXPORT_TIMEOUT_MS 60000
#define EXPORT_LIST_MAX 1000    /* history_list's most records per reply */
#define EXPORT_RECOMMEND_MAX 32 /* distinct user+job names asked */

struct export_args {
	enum export_format format;
	bool have_format;
	uint32_t job;
	double since; /* < 0: any */
	const char *input, *output;
};

static void usage(FILE *out)
{
	fprintf(out, "usage: iostage export --format json|csv|prom|trace|html "
		     "[--job J] [--since T]\n"
		     "                      [--input FILE] [-o FILE]\n"
		     "  --since T   unix seconds, or an age: 30m, 12h, 7d\n"
		     "  --input F   records saved earlier (--format json), no "
		     "daemon needed\n");
}

static int parse_args(int argc, char **argv, struct export_args *a)
{
	static const struct option longopts[] = {
		{ "format", required_argument, NULL, 'f' },
		{ "job", required_argument, NULL, 'j' },
		{ "since", required_argument, NULL, 's' },
		{ "input", required_argument, NULL, 'i' },
		{ "output", required_argument, NULL, 'o' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	char *end;
	unsigned long id;
	int opt;

	memset(a, 0, sizeof(*a));
	a->since = -1;
	optind = 0;
	while ((opt = getopt_long(argc, argv, "f:o:h", longopts, NULL)) != -1) {
		switch (opt) {
		case 'f':
			if (export_format_parse(optarg, &a->format) < 0) {
				fprintf(stderr,
					"iostage: export: --format: unknown "
					"format '%.64s' (known: json, csv, "
					"prom, trace, html)\n",
					optarg);
				return 2;
			}
			a->have_format = true;
			break;
		case 'j':
			errno = 0;
			id = strtoul(optarg, &end, 10);
			if (errno || *end || !*optarg || id == 0 ||
			    id > 0xffffffffUL || optarg[0] == '-') {
				fprintf(stderr,
					"iostage: export: --job: '%.64s' is "
					"not a job id (1..4294967295)\n",
					optarg);
				return 2;
			}
			a->job = (uint32_t)id;
			break;
		case 's':
			if (export_parse_since(optarg, (double)time(NULL),
					       &a->since) < 0) {
				fprintf(stderr,
					"iostage: export: --since: '%.64s' is "
					"neither unix seconds nor an age like "
					"30m, 12h, 7d\n",
					optarg);
				return 2;
			}
			break;
		case 'i':
			a->input = optarg;
			break;
		case 'o':
			a->output = optarg;
			break;
		case 'h':
			usage(stdout);
			exit(0);
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind != argc || !a->have_format) {
		if (!a->have_format)
			fprintf(stderr, "iostage: export: --format is "
					"required\n");
		usage(stderr);
		return 2;
	}
	return 0;
}

static cJSON *records_from_file(const char *path)
{
	char reason[128], err[512], *text;
	cJSON *records;

	text = smallfile_read(path, EXPORT_INPUT_MAX, reason, sizeof(reason));
	if (!text) {
		fprintf(stderr, "iostage: export: --input %s: %s\n", path,
			reason);
		return NULL;
	}
	records = export_records_parse(text, path, err, sizeof(err));
	free(text);
	if (!records)
		fprintf(stderr, "iostage: export: --input %s\n", err);
	return records;
}

/* One job's whole record (history_get), or NULL (message printed). */
static cJSON *record_from_daemon(const struct client *client, double job)
{
	cJSON *req, *reply, *record;

	req = json_request("history_get");
	if (!req)
		return NULL;
	cJSON_AddNumberToObject(req, "job", job);
	reply = client_history_call(client, req, EXPORT_TIMEOUT_MS);
	cJSON_Delete(req);
	if (!reply)
		return NULL;
	record = cJSON_DetachItemFromObjectCaseSensitive(reply, "record");
	cJSON_Delete(reply);
	if (!cJSON_IsObject(record)) {
		cJSON_Delete(record);
		fprintf(stderr,
			"iostage: export: the history's reply for job "
			"%.0f has no job record\n",
			job);
		return NULL;
	}
	return record;
}

/* --job: history_get. Else history_list ([since], newest first, up to
 * EXPORT_LIST_MAX), which answers summaries, then history_get for each
 * listed job's whole record. The daemon filters by the caller's uid. */
static cJSON *records_from_daemon(struct client *client,
				  const struct export_args *a)
{
	cJSON *req, *reply, *list, *records, *item, *record;

	if (client_init(client) < 0)
		return NULL;
	records = cJSON_CreateArray();
	if (!records)
		return NULL;
	if (a->job) {
		record = record_from_daemon(client, a->job);
		if (!record) {
			cJSON_Delete(records);
			return NULL;
		}
		cJSON_AddItemToArray(records, record);
		return records;
	}
	req = json_request("history_list");
	if (!req) {
		cJSON_Delete(records);
		return NULL;
	}
	if (a->since >= 0)
		cJSON_AddNumberToObject(req, "since", a->since);
	cJSON_AddNumberToObject(req, "limit", EXPORT_LIST_MAX);
	reply = client_history_call(client, req, EXPORT_TIMEOUT_MS);
	cJSON_Delete(req);
	list = reply ? cJSON_GetObjectItemCaseSensitive(reply, "records")
		     : NULL;
	if (!cJSON_IsArray(list)) {
		if (reply)
			fprintf(stderr, "iostage: export: the history's reply "
					"has no job records\n");
		cJSON_Delete(reply);
		cJSON_Delete(records);
		return NULL;
	}
	cJSON_ArrayForEach(item, list) {
		cJSON *job = cJSON_GetObjectItemCaseSensitive(item, "job");

		if (!cJSON_IsNumber(job))
			continue;
		record = record_from_daemon(client, job->valuedouble);
		if (!record) {
			cJSON_Delete(reply);
			cJSON_Delete(records);
			return NULL;
		}
		cJSON_AddItemToArray(records, record);
	}
	cJSON_Delete(reply);
	return records;
}

/* Attach the recommend op's answers to records that carry none. A daemon
 * without the op, or a refusal, leaves the report without them. */
static void attach_recommendations(const struct client *client, cJSON *records)
{
	char err[CONF_ERR_MAX];
	cJSON *rec, *req, *reply;
	unsigned asked = 0;

	cJSON_ArrayForEach(rec, records) {
		const char *user = rec_str(rec, "user");
		const char *name = rec_str(rec, "job_name");
		cJSON *recs;

		if (cJSON_GetObjectItemCaseSensitive(rec, "recommendations") ||
		    !user || asked++ >= EXPORT_RECOMMEND_MAX)
			continue;
		req = json_request("recommend");
		cJSON_AddStringToObject(req, "user", user);
		if (name && *name)
			cJSON_AddStringToObject(req, "job_name", name);
		reply = client_history_call_quiet(client, req,
						  EXPORT_TIMEOUT_MS, err,
						  sizeof(err));
		cJSON_Delete(req);
		if (!reply)
			continue;
		recs = cJSON_DetachItemFromObjectCaseSensitive(
		    reply, "recommendations");
		if (cJSON_IsArray(recs))
			cJSON_AddItemToObject(rec, "recommendations", recs);
		else
			cJSON_Delete(recs);
		cJSON_Delete(reply);
	}
}

/* Render to PATH.tmp.PID, then rename: a reader never sees half a report. */
static int write_output(const struct export_args *a, const cJSON *records)
{
	char tmp[4096];
	FILE *f;
	int r;

	if (!a->output || !strcmp(a->output, "-")) {
		r = export_render(a->format, records, stdout);
		if (r < 0)
			fprintf(stderr, "iostage: export: writing: %s\n",
				strerror(errno));
		return r < 0 ? 1 : 0;
	}
	if ((size_t)snprintf(tmp, sizeof(tmp), "%s.tmp.%d", a->output,
			     (int)getpid()) >= sizeof(tmp)) {
		fprintf(stderr, "iostage: export: -o: path too long\n");
		return 2;
	}
	f = fopen(tmp, "wx");
	if (!f) {
		fprintf(stderr,
			"iostage: export: -o %s: cannot create %s: %s\n",
			a->output, tmp, strerror(errno));
		return 1;
	}
	r = export_render(a->format, records, f);
	if (fclose(f) != 0)
		r = -1;
	if (r < 0 || rename(tmp, a->output) < 0) {
		fprintf(stderr, "iostage: export: -o %s: %s\n", a->output,
			strerror(errno ? errno : EIO));
		unlink(tmp);
		return 1;
	}
	return 0;
}

int export_main(const struct client *client_in, int argc, char **argv)
{
	struct client client = *client_in;
	struct export_args a;
	cJSON *records;
	int rc;

	rc = parse_args(argc, argv, &a);
	if (rc)
		return rc;
	records = a.input ? records_from_file(a.input)
			  : records_from_daemon(&client, &a);
	if (!records)
		return 1;
	export_records_filter(records, a.job, a.since);
	if (a.job && !cJSON_GetArraySize(records)) {
		fprintf(stderr, "iostage: export: no record of job %u%s\n",
			a.job, a.input ? " in the input" : "");
		cJSON_Delete(records);
		return 1;
	}
	if (!a.input && a.format == EXPORT_HTML)
		attach_recommendations(&client, records);
	rc = write_output(&a, records);
	cJSON_Delete(records);
	return rc;
}
