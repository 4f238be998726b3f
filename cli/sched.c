/* sched.c - `iostage job-note` and `iostage status --cluster` (see
 * sched.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli/json.h"
#include "cli/sched.h"
#include "common/ctlclient.h"
#include "common/units.h"

#define SCHED_TIMEOUT_MS 5000

/* REQ to iostagectld; the reply when ok, else NULL after one line. */
static cJSON *ctl_call(const struct client *client, cJSON *req)
{
	char err[CONF_ERR_MAX];
	cJSON *reply = NULL;
	const cJSON *e;

	if (!ctl_configured(client->conf)) {
		fprintf(stderr, "iostage: no cluster service: iostage.conf "
				"sets no ControllerHost=\n");
		return NULL;
	}
	if (ctl_request_timeout(client->conf, req, SCHED_TIMEOUT_MS, &reply,
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
	reply = ctl_call(client, req);
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

int sched_status_print(const struct client *client, bool as_json)
{
	cJSON *req = cJSON_CreateObject(), *reply;
	const cJSON *p, *s, *j;
	char b[32];

	if (!req || !cJSON_AddStringToObject(req, "op", "sched_status")) {
		cJSON_Delete(req);
		return 1;
	}
	reply = ctl_call(client, req);
	cJSON_Delete(req);
	if (!reply)
		return 1;
	if (as_json) {
		char *text = cJSON_Print(reply);

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
