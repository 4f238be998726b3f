/* status.c - `iostage status [--json]`. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/status.h"
#include "common/units.h"

static double number(const cJSON *obj, const char *key)
{
	const cJSON *item = cJSON_GetObjectItemCaseSensitive(obj, key);

	return cJSON_IsNumber(item) ? item->valuedouble : 0;
}

static const char *string(const cJSON *obj, const char *key)
{
	const cJSON *item = cJSON_GetObjectItemCaseSensitive(obj, key);

	return cJSON_IsString(item) ? item->valuestring : "-";
}

static void print_tiers(const cJSON *tiers)
{
	const cJSON *tier;
	char cap[32], used[32], avail[32];

	printf("\n%-10s %-6s %-6s %10s %10s %10s %5s  %s\n", "TIER", "MEDIUM",
	       "SHARED", "CAPACITY", "USED", "FREE", "JOBS", "PATH");
	cJSON_ArrayForEach(tier, tiers)
	{
		printf("%-10s %-6s %-6s %10s %10s %10s %5.0f  %s\n",
		       string(tier, "name"), string(tier, "medium"),
		       cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(tier,
								     "shared"))
			       ? "yes"
			       : "no",
		       units_bytes((uint64_t)number(tier, "capacity_bytes"),
				   cap, sizeof(cap)),
		       units_bytes((uint64_t)number(tier, "used_bytes"), used,
				   sizeof(used)),
		       units_bytes((uint64_t)number(tier, "free_bytes"), avail,
				   sizeof(avail)),
		       number(tier, "jobs"), string(tier, "path"));
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
	printf("\n%-10s %-12s %-8s %-24s %s\n", "JOB", "USER", "STATE",
	       "STAGED", "DATASETS");
	cJSON_ArrayForEach(job, jobs)
	{
		char progress[64];

		names[0] = '\0';
		cJSON_ArrayForEach(ds, cJSON_GetObjectItemCaseSensitive(
					       job, "datasets"))
		{
			if (!cJSON_IsString(ds))
				continue;
			if (names[0])
				strncat(names, ",",
					sizeof(names) - strlen(names) - 1);
			strncat(names, ds->valuestring,
				sizeof(names) - strlen(names) - 1);
		}
		snprintf(progress, sizeof(progress), "%s/%s %.0f/%.0f files",
			 units_bytes((uint64_t)number(job, "bytes"), done,
				     sizeof(done)),
			 units_bytes((uint64_t)number(job, "total_bytes"),
				     total, sizeof(total)),
			 number(job, "files"), number(job, "total_files"));
		printf("%-10.0f %-12s %-8s %-24s %s\n", number(job, "job"),
		       string(job, "user"), string(job, "state"), progress,
		       names[0] ? names : "-");
		if (cJSON_IsString(
			    cJSON_GetObjectItemCaseSensitive(job, "error")))
			printf("%10s error: %s\n", "", string(job, "error"));
	}
}

int status_main(const struct client *client, int argc, char **argv)
{
	cJSON *req, *reply;
	const cJSON *daemon;
	char uptime[32];
	int as_json = 0;

	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--json") == 0) {
			as_json = 1;
		} else {
			fprintf(stderr,
				"iostage: status: unknown option '%s'\n"
				"usage: iostage status [--json]\n",
				argv[i]);
			return 2;
		}
	}
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
	if (as_json) {
		char *text = cJSON_Print(reply);
		if (text)
			puts(text);
		free(text);
		cJSON_Delete(reply);
		return 0;
	}
	daemon = cJSON_GetObjectItemCaseSensitive(reply, "daemon");
	printf("iostaged %s, pid %.0f, up %s, socket %s\n",
	       string(daemon, "version"), number(daemon, "pid"),
	       units_seconds(number(daemon, "uptime_s"), uptime,
			     sizeof(uptime)),
	       client->socket_path);
	print_tiers(cJSON_GetObjectItemCaseSensitive(reply, "tiers"));
	print_jobs(cJSON_GetObjectItemCaseSensitive(reply, "jobs"));
	cJSON_Delete(reply);
	return 0;
}
