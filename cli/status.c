/* status.c - `iostage status [--json]`: the node's iostaged (tiers, jobs)
 * and, with StageBandwidth= and a service, the cluster's staging
 * bandwidth budget and its leases. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/json.h"
#include "cli/sched.h"
#include "cli/status.h"
#include "common/base/jsonbuf.h"
#include "common/base/units.h"
#include "common/net/proto.h"

static void print_tiers(const cJSON *tiers)
{
	const cJSON *tier;
	char cap[32], used[32], avail[32];

	printf("\n%-10s %-6s %-6s %10s %10s %10s %5s  %s\n", "TIER", "MEDIUM",
	       "SHARED", "CAPACITY", "USED", "FREE", "JOBS", "PATH");
	cJSON_ArrayForEach(tier, tiers) {
		printf("%-10s %-6s %-6s %10s %10s %10s %5.0f  %s\n",
		       json_string(tier, "name"), json_string(tier, "medium"),
		       cJSON_IsTrue(
			   cJSON_GetObjectItemCaseSensitive(tier, "shared"))
			   ? "yes"
			   : "no",
		       units_bytes(proto_u64(tier, "capacity_bytes"), cap,
				   sizeof(cap)),
		       units_bytes(proto_u64(tier, "used_bytes"), used,
				   sizeof(used)),
		       units_bytes(proto_u64(tier, "free_bytes"), avail,
				   sizeof(avail)),
		       json_number(tier, "jobs"), json_string(tier, "path"));
	}
}

/* One line per dataset: served from the cache, or built (and how). */
static void print_cache_results(const cJSON *results)
{
	const cJSON *r;
	char copied[32];

	cJSON_ArrayForEach(r, results) {
		const char *result = json_string(r, "result");

		if (strcmp(result, "built") == 0)
			printf("%10s %s: built %s on %s (%.0f files copied, "
			       "%s; %.0f linked)\n",
			       "", json_string(r, "dataset"),
			       json_string(r, "entry"), json_string(r, "tier"),
			       json_number(r, "copied_files"),
			       units_bytes(proto_u64(r, "copied_bytes"), copied,
					   sizeof(copied)),
			       json_number(r, "linked_files"));
		else
			printf("%10s %s: %s%s%s on %s\n", "",
			       json_string(r, "dataset"),
			       strcmp(result, "hit") == 0 ? "cache hit"
							  : result,
			       strcmp(json_string(r, "entry"), "-") ? " " : "",
			       strcmp(json_string(r, "entry"), "-")
				   ? json_string(r, "entry")
				   : "",
			       json_string(r, "tier"));
	}
}

static void print_jobs(const cJSON *jobs)
{
	const cJSON *job, *ds;
	char done[32], total[32], names[256];

	if (cJSON_GetArraySize(jobs) == 0) {
		printf("\nno active jobs\n");
		return;
	}
	printf("\n%-10s %-12s %-8s %-30s %s\n", "JOB", "USER", "STATE",
	       "STAGED", "DATASETS");
	cJSON_ArrayForEach(job, jobs) {
		char progress[64];

		names[0] = '\0';
		cJSON_ArrayForEach(
		    ds, cJSON_GetObjectItemCaseSensitive(job, "datasets")) {
			if (!cJSON_IsString(ds))
				continue;
			if (names[0])
				strncat(names, ",",
					sizeof(names) - strlen(names) - 1);
			strncat(names, ds->valuestring,
				sizeof(names) - strlen(names) - 1);
		}
		snprintf(progress, sizeof(progress), "%s/%s %.0f/%.0f files",
			 units_bytes(proto_u64(job, "bytes"), done,
				     sizeof(done)),
			 units_bytes(proto_u64(job, "total_bytes"), total,
				     sizeof(total)),
			 json_number(job, "files"),
			 json_number(job, "total_files"));
		printf("%-10.0f %-12s %-8s %-30s %s\n", json_number(job, "job"),
		       json_string(job, "user"), json_string(job, "state"),
		       progress, names[0] ? names : "-");
		if (strcmp(json_string(job, "state"), "staging") == 0) {
			char rate[32], eta[32];
			const cJSON *e =
			    cJSON_GetObjectItemCaseSensitive(job, "eta_s");

			printf("%10s rate %s/s, ETA %s\n", "",
			       units_bytes(proto_u64(job, "rate_bps"), rate,
					   sizeof(rate)),
			       cJSON_IsNumber(e)
				   ? units_seconds(e->valuedouble, eta,
						   sizeof(eta))
				   : "unknown");
		}
		print_cache_results(
		    cJSON_GetObjectItemCaseSensitive(job, "cache"));
		if (cJSON_IsString(
			cJSON_GetObjectItemCaseSensitive(job, "error")))
			printf("%10s error: %s\n", "",
			       json_string(job, "error"));
	}
}

/* StageBandwidth=: the cluster's budget and what iostagectld has leased
 * now, per node (op stage_bw_status); NULL without a budget or when the
 * service does not answer (then nothing is shown: the node's own figures
 * are in /metrics). The caller deletes it. */
static cJSON *stage_bandwidth(const struct client *client)
{
	char why[CONF_ERR_MAX];
	cJSON *req, *reply;

	if (!client->conf->stage_bandwidth || !client_has_service(client))
		return NULL;
	req = json_request("stage_bw_status");
	if (!req)
		return NULL;
	reply = client_history_call_quiet(client, req, 5000, why, sizeof(why));
	cJSON_Delete(req);
	if (reply)
		cJSON_DeleteItemFromObjectCaseSensitive(reply, "ok");
	return reply;
}

static void print_stage_bandwidth(const cJSON *bw)
{
	const cJSON *l;
	char b1[32], b2[32];
	int n = 0;

	printf("\nstage bandwidth: %s/s leased of %s/s (StageBandwidth=) to "
	       "%.0f node%s",
	       units_bytes(proto_u64(bw, "granted"), b1, sizeof(b1)),
	       units_bytes(proto_u64(bw, "budget"), b2, sizeof(b2)),
	       json_number(bw, "nodes"),
	       json_number(bw, "nodes") == 1 ? "" : "s");
	cJSON_ArrayForEach(l, cJSON_GetObjectItemCaseSensitive(bw, "leases")) {
		printf("%s%s %s/s", n++ ? ", " : ": ", json_string(l, "node"),
		       units_bytes(proto_u64(l, "grant"), b1, sizeof(b1)));
	}
	printf("\n");
}

int status_main(const struct client *client, int argc, char **argv)
{
	cJSON *req, *reply, *bw;
	const cJSON *daemon;
	char uptime[32];
	int as_json = 0, cluster = 0, prom = 0;

	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--json") == 0) {
			as_json = 1;
		} else if (strcmp(argv[i], "--cluster") == 0) {
			cluster = 1;
		} else if (strcmp(argv[i], "--prom") == 0) {
			prom = cluster = 1;
		} else {
			fprintf(
			    stderr,
			    "iostage: status: unknown option '%s'\n"
			    "usage: iostage status [--cluster [--prom]] [--json]\n",
			    argv[i]);
			return 2;
		}
	}
	/* A login node runs no iostaged: its status is the cluster's. */
	if (cluster || (client_has_service(client) &&
			access(client->socket_path, F_OK) != 0))
		return sched_status_show(client, prom      ? SCHED_SHOW_PROM
						 : as_json ? SCHED_SHOW_JSON
							   : SCHED_SHOW_TEXT);
	req = cJSON_CreateObject();
	if (!req || !cJSON_AddStringToObject(req, "op", "status")) {
		cJSON_Delete(req);
		fprintf(stderr, "iostage: out of memory\n");
		return 1;
	}
	reply = client_call(client, req, 10000);
	cJSON_Delete(req);
	if (!reply)
		return 1;
	bw = stage_bandwidth(client);
	if (bw)
		cJSON_AddItemToObject(reply, "stage_bandwidth", bw);
	if (as_json) {
		char *text = jsonbuf_pretty(reply);
		if (text)
			puts(text);
		free(text);
		cJSON_Delete(reply);
		return 0;
	}
	daemon = cJSON_GetObjectItemCaseSensitive(reply, "daemon");
	printf("iostaged %s, pid %.0f, up %s, socket %s\n",
	       json_string(daemon, "version"), json_number(daemon, "pid"),
	       units_seconds(json_number(daemon, "uptime_s"), uptime,
			     sizeof(uptime)),
	       client->socket_path);
	print_tiers(cJSON_GetObjectItemCaseSensitive(reply, "tiers"));
	print_jobs(cJSON_GetObjectItemCaseSensitive(reply, "jobs"));
	if (bw)
		print_stage_bandwidth(bw);
	cJSON_Delete(reply);
	return 0;
}
