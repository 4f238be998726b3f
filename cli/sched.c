/* sched.c - `iostage job-note` and `iostage status --cluster` (see
 * sched.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli/json.h"
#include "cli/sched.h"
#include "common/base/jsonbuf.h"
#include "common/base/units.h"
#include "common/net/ctlclient.h"
#include "common/net/proto.h"
#include "common/telemetry/promtext.h"

#define SCHED_TIMEOUT_MS 5000
/* job-note runs inside sbatch (cli_filter.lua): a ticket exists only if
 * the service answered a moment ago, and sbatch must not hang on it. */
#define NOTE_TIMEOUT_MS 2000

/* REQ to iostagectld; the reply when ok, else NULL after one line. */
static cJSON *ctl_call(const struct client *client, cJSON *req, int timeout_ms)
{
	char err[CONF_ERR_MAX];
	cJSON *reply = NULL;
	const cJSON *e;

	if (!ctl_configured(client->conf)) {
		fprintf(stderr, "iostage: no cluster service: iostage.conf "
				"sets no ControllerHost=\n");
		return NULL;
	}
	if (ctl_request_timeout(client->conf, req, timeout_ms, &reply, err,
				sizeof(err)) < 0) {
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
		fprintf(stderr, "iostage: job-note: bad job id '%s'\n",
			argv[1]);
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
	char when[64] = "-", where[256] = "", prefer[600];
	double st = json_number(j, "start_time");

	if (st > 0) {
		time_t t = (time_t)st;
		struct tm tm;

		localtime_r(&t, &tm);
		strftime(when, sizeof(when), "%H:%M:%S", &tm);
	}
	/* the preference by where it points: feature names mean nothing
	 * to a user */
	cJSON_ArrayForEach(n,
			   cJSON_GetObjectItemCaseSensitive(j, "prefer_nodes"))
		if (cJSON_IsString(n))
			snprintf(where + strlen(where),
				 sizeof(where) - strlen(where), "%s%s",
				 where[0] ? "," : "", n->valuestring);
	if (!json_string(j, "prefer")[0])
		snprintf(prefer, sizeof(prefer), "(none)");
	else
		snprintf(prefer, sizeof(prefer), "%s (%s)",
			 where[0] ? where : "no node now",
			 json_string(j, "prefer"));
	printf("%-8.0f %-12s %-9s %-12s %s\n", json_number(j, "job"),
	       json_string(j, "user"), when,
	       json_string(j, "sched_nodes")[0] ? json_string(j, "sched_nodes")
						: "-",
	       prefer);
	/* PlacementHold=: why it pends while other nodes may be idle */
	if (json_number(j, "held_until") > 0) {
		time_t t = (time_t)json_number(j, "held_until");
		struct tm tm;

		localtime_r(&t, &tm);
		strftime(when, sizeof(when), "%H:%M:%S", &tm);
		printf("%10s waits for a node with its data until %s, then "
		       "takes any node\n",
		       "", when);
	}
	cJSON_ArrayForEach(n, cJSON_GetObjectItemCaseSensitive(j, "nodes"))
		cJSON_ArrayForEach(
		    d, cJSON_GetObjectItemCaseSensitive(n, "datasets")) {
			char took[48] = "";

			if (cJSON_IsNumber(
				cJSON_GetObjectItemCaseSensitive(d, "seconds")))
				snprintf(took, sizeof(took), " in %.1f s",
					 json_number(d, "seconds"));
			printf("%10s %s on %s: %s%s%s%s\n", "",
			       json_string(d, "path"), json_string(n, "node"),
			       json_string(d, "state"), took,
			       json_string(d, "error")[0] ? ": " : "",
			       json_string(d, "error"));
		}
}

/* The counters as Prometheus text (a node_exporter textfile): the
 * names iostagectld's own /metrics uses (common/telemetry/promtext.h). 0, or -1
 * on ENOMEM. */
int sched_status_prom(const cJSON *reply, FILE *out)
{
	struct promtext *pt = promtext_create();
	const char *text;
	int rc = -1;

	if (pt && promtext_sched_status(pt, reply) == 0 &&
	    (text = promtext_text(pt, NULL))) {
		fputs(text, out);
		rc = 0;
	}
	promtext_destroy(pt);
	return rc;
}

int sched_status_print(const struct client *client, bool as_json)
{
	return sched_status_show(client,
				 as_json ? SCHED_SHOW_JSON : SCHED_SHOW_TEXT);
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
	printf("iostagectld: placement %s%s%s, %.0f nodes reporting their "
	       "cache\n",
	       cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(p, "enabled"))
		   ? "on"
		   : "off (",
	       cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(p, "enabled"))
		   ? ""
		   : (json_string(p, "off_reason")[0]
			  ? json_string(p, "off_reason")
			  : "SchedulerParameters lacks "
			    "ignore_prefer_validation"),
	       cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(p, "enabled"))
		   ? ""
		   : ")",
	       json_number(p, "nodes_reporting"));
	printf("placements: %.0f jobs given a preference, %.0f honoured, "
	       "%.0f not\n",
	       json_number(p, "preferred"), json_number(p, "honoured"),
	       json_number(p, "not_honoured"));
	if (json_number(p, "hold_s") > 0)
		printf("holds (PlacementHold=%.0f s): %.0f jobs held, %.0f "
		       "started where their data was, %.0f released at the "
		       "bound\n",
		       json_number(p, "hold_s"), json_number(p, "held"),
		       json_number(p, "held_started"),
		       json_number(p, "hold_released"));
	printf("pre-staging: %.0f datasets asked of nodes, %.0f staged "
	       "(%s copied), %.0f failed; jobs that found it: %.0f, late: "
	       "%.0f, missed: %.0f, staging time saved %.1f s\n",
	       json_number(s, "requests"), json_number(s, "staged"),
	       units_bytes(proto_u64(s, "bytes"), b, sizeof(b)),
	       json_number(s, "failed"), json_number(s, "hits"),
	       json_number(s, "late"), json_number(s, "missed"),
	       json_number(s, "seconds_saved"));
	printf("\n%-8s %-12s %-9s %-12s %s\n", "JOBID", "USER", "START",
	       "SCHED_NODES", "PREFER");
	cJSON_ArrayForEach(j, cJSON_GetObjectItemCaseSensitive(reply, "jobs"))
		print_job(j);
	cJSON_Delete(reply);
	return 0;
}
