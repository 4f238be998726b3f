/* sched.c - `iostage job-note` and `iostage status --cluster` (see
 * sched.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli/json.h"
#include "cli/sched.h"
#include "common/ctlclient.h"
#include "common/jsonbuf.h"
#include "common/promtext.h"
#include "common/units.h"

#define SCHED_TIMEOUT_MS 5000
/* job-note runs inside sbatch (cli_filter.lua): a ticket exists only if
 * the service answered a moment ago, and sbatch must not hang on it. */
#define NOTE_TIMEOUT_MS 2000

/* REQ to iostagectld; the reply when ok, else NULL after one line. */
static cJSON *ctl_call(const struct client *client, cJSON *req,
		       int timeout_ms)
{
	char err[CONF_ERR_MAX];
	cJSON *reply = NULL;
	const cJSON *e;

	if (!ctl_configured(client->conf)) {
		fprintf(stderr, "iostage: no cluster service: iostage.conf "
				"sets no ControllerHost=\n");
		return NULL;
	}
	if (ctl_request_timeout(client->conf, req, timeout_ms, &reply,
				err, sizeof(err)) < 0) {
		fprintf(stderr, "iostage: %s\n", err);
		return NULL;
	}
	if (!cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(reply, "ok"))) {
		e = cJSON_GetObjectItemCaseSensitive(reply, "error");
		fprintf(stderr, "iostage: iostagectld: %s\n",
			cJSON_IsString(e) ? e->valuestring : "declined");
		cJSON_Delete(reply);
		return NULL;
	}
	return reply;
}

int sched_job_note_main(const struct client *client, int argc, char **argv)
{
	cJSON *req, *reply;
	char *end;
	unsigned long job;

	if (argc != 3 || strlen(argv[2]) != 32 ||
	    strspn(argv[2], "0123456789abcdef") != 32) {
		fprintf(stderr, "usage: iostage job-note JOBID TICKET (run by "
				"cli_filter.lua after sbatch)\n");
		return 2;
	}
	job = strtoul(argv[1], &end, 10);
	if (*end || !job || job > 0xfffffffful) {
		fprintf(stderr, "iostage: job-note: bad job id '%s'\n", argv[1]);
		return 2;
	}
	req = cJSON_CreateObject();
	if (!req || !cJSON_AddStringToObject(req, "op", "job_note") ||
	    !cJSON_AddNumberToObject(req, "job", (double)job) ||
	    !cJSON_AddStringToObject(req, "ticket", argv[2])) {
		cJSON_Delete(req);
		return 1;
	}
	reply = ctl_call(client, req, NOTE_TIMEOUT_MS);
	cJSON_Delete(req);
	cJSON_Delete(reply);
	return reply ? 0 : 1;
}

static void print_job(const cJSON *j)
{
	const cJSON *n, *d;
	char when[64] = "-";
	double st = json_number(j, "start_time");

	if (st > 0) {
		time_t t = (time_t)st;
		struct tm tm;

		localtime_r(&t, &tm);
		strftime(when, sizeof(when), "%H:%M:%S", &tm);
	}
	printf("%-8.0f %-10s %-9s %-12s %s\n", json_number(j, "job"),
	       json_string(j, "user"), when, json_string(j, "sched_nodes"),
	       json_string(j, "prefer")[0] ? json_string(j, "prefer")
					    : "(none)");
	cJSON_ArrayForEach(n, cJSON_GetObjectItemCaseSensitive(j, "nodes"))
		cJSON_ArrayForEach(d, cJSON_GetObjectItemCaseSensitive(n,
								      "datasets"))
			printf("%10s %s on %s: %s%s%s\n", "",
			       json_string(d, "path"), json_string(n, "node"),
			       json_string(d, "state"),
			       json_string(d, "error")[0] ? ": " : "",
			       json_string(d, "error"));
}

/* The counters as Prometheus text (a node_exporter textfile, or a
 * scrape through a wrapper): iostagectld has no HTTP endpoint of its
 * own. 0, or -1 on ENOMEM. */
int sched_status_prom(const cJSON *reply, FILE *out)
{
	const cJSON *p = cJSON_GetObjectItemCaseSensitive(reply, "placement");
	const cJSON *s = cJSON_GetObjectItemCaseSensitive(reply, "prestage");
	struct promtext *pt = promtext_create();
	static const char *const honoured[] = { "outcome", "honoured", NULL };
	static const char *const not_honoured[] = { "outcome", "not_honoured",
						    NULL };
	static const char *const ok[] = { "result", "ok", NULL };
	static const char *const err[] = { "result", "error", NULL };
	static const char *const staged[] = { "result", "staged", NULL };
	static const char *const failed[] = { "result", "failed", NULL };
	static const char *const hit[] = { "outcome", "hit", NULL };
	static const char *const missed[] = { "outcome", "missed", NULL };
	const char *text;
	int rc = -1;

	if (!pt)
		return -1;
	if (promtext_family(pt, "iostage_ctld_nodes_reporting", "gauge",
			    "Nodes whose cache iostagectld knows") < 0 ||
	    promtext_sample(pt, "iostage_ctld_nodes_reporting", NULL,
			    json_number(p, "nodes_reporting")) < 0 ||
	    promtext_family(pt, "iostage_ctld_placement_preferred_total",
			    "counter",
			    "Submissions given a --prefer for nodes caching "
			    "their data") < 0 ||
	    promtext_sample(pt, "iostage_ctld_placement_preferred_total", NULL,
			    json_number(p, "preferred")) < 0 ||
	    promtext_family(pt, "iostage_ctld_placements_total", "counter",
			    "Jobs preferring cached nodes, by whether Slurm "
			    "started them there") < 0 ||
	    promtext_sample(pt, "iostage_ctld_placements_total", honoured,
			    json_number(p, "honoured")) < 0 ||
	    promtext_sample(pt, "iostage_ctld_placements_total", not_honoured,
			    json_number(p, "not_honoured")) < 0 ||
	    promtext_family(pt, "iostage_ctld_feature_updates_total",
			    "counter", "Node feature updates sent to Slurm") < 0 ||
	    promtext_sample(pt, "iostage_ctld_feature_updates_total", ok,
			    json_number(p, "feature_updates")) < 0 ||
	    promtext_sample(pt, "iostage_ctld_feature_updates_total", err,
			    json_number(p, "feature_update_errors")) < 0 ||
	    promtext_family(pt, "iostage_ctld_prestage_datasets_total",
			    "counter",
			    "Datasets pre-staged for pending jobs, by result") < 0 ||
	    promtext_sample(pt, "iostage_ctld_prestage_datasets_total", staged,
			    json_number(s, "staged")) < 0 ||
	    promtext_sample(pt, "iostage_ctld_prestage_datasets_total", failed,
			    json_number(s, "failed")) < 0 ||
	    promtext_family(pt, "iostage_ctld_prestage_bytes_total", "counter",
			    "Bytes put in node caches for pending jobs") < 0 ||
	    promtext_sample(pt, "iostage_ctld_prestage_bytes_total", NULL,
			    json_number(s, "bytes")) < 0 ||
	    promtext_family(pt, "iostage_ctld_prestage_predictions_total",
			    "counter",
			    "Pre-staged jobs that started where their data "
			    "was staged (hit) or elsewhere (missed)") < 0 ||
	    promtext_sample(pt, "iostage_ctld_prestage_predictions_total", hit,
			    json_number(s, "hits")) < 0 ||
	    promtext_sample(pt, "iostage_ctld_prestage_predictions_total",
			    missed, json_number(s, "missed")) < 0 ||
	    promtext_family(pt, "iostage_ctld_prestage_saved_seconds_total",
			    "counter",
			    "Staging time the hits did not spend at start") < 0 ||
	    promtext_sample(pt, "iostage_ctld_prestage_saved_seconds_total",
			    NULL, json_number(s, "seconds_saved")) < 0)
		goto out;
	text = promtext_text(pt, NULL);
	if (!text)
		goto out;
	fputs(text, out);
	rc = 0;
out:
	promtext_destroy(pt);
	return rc;
}

int sched_status_print(const struct client *client, bool as_json)
{
	return sched_status_show(client, as_json ? SCHED_SHOW_JSON
						 : SCHED_SHOW_TEXT);
}

int sched_status_show(const struct client *client, enum sched_show how)
{
	bool as_json = how == SCHED_SHOW_JSON;
	cJSON *req = cJSON_CreateObject(), *reply;
	const cJSON *p, *s, *j;
	char b[32];

	if (!req || !cJSON_AddStringToObject(req, "op", "sched_status")) {
		cJSON_Delete(req);
		return 1;
	}
	reply = ctl_call(client, req, SCHED_TIMEOUT_MS);
	cJSON_Delete(req);
	if (!reply)
		return 1;
	if (how == SCHED_SHOW_PROM) {
		int rc = sched_status_prom(reply, stdout) < 0 ? 1 : 0;

		cJSON_Delete(reply);
		return rc;
	}
	if (as_json) {
		char *text = jsonbuf_pretty(reply);

		if (text)
			puts(text);
		free(text);
		cJSON_Delete(reply);
		return 0;
	}
	p = cJSON_GetObjectItemCaseSensitive(reply, "placement");
	s = cJSON_GetObjectItemCaseSensitive(reply, "prestage");
	printf("iostagectld: placement %s, %.0f nodes reporting their cache\n",
	       cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(p, "enabled"))
		   ? "on"
		   : "off (SchedulerParameters lacks ignore_prefer_validation)",
	       json_number(p, "nodes_reporting"));
	printf("placements: %.0f jobs given a preference, %.0f honoured, "
	       "%.0f not\n",
	       json_number(p, "preferred"), json_number(p, "honoured"),
	       json_number(p, "not_honoured"));
	printf("pre-staging: %.0f datasets asked of nodes, %.0f staged "
	       "(%s), %.0f failed; jobs that found it: %.0f, missed: %.0f, "
	       "staging time saved %.0f s\n",
	       json_number(s, "requests"), json_number(s, "staged"),
	       units_bytes((uint64_t)json_number(s, "bytes"), b, sizeof(b)),
	       json_number(s, "failed"), json_number(s, "hits"),
	       json_number(s, "missed"), json_number(s, "seconds_saved"));
	printf("\n%-8s %-10s %-9s %-12s %s\n", "JOBID", "USER", "START",
	       "SCHED_NODES", "PREFER");
	cJSON_ArrayForEach(j, cJSON_GetObjectItemCaseSensitive(reply, "jobs"))
		print_job(j);
	cJSON_Delete(reply);
	return 0;
}
