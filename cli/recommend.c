/* recommend.c - `iostage recommend [--user U] [--job-name N | --script FILE |
 * --dataset PATH] [--json]`: the history's advice, as a table or JSON.
 *
 * --script is read here, as the user who runs the command, for its
 * "#SBATCH --job-name" (jobname.h); the daemon never opens it. The advice
 * comes from iostagectld when iostage.conf names one (a login node needs
 * no iostaged), else from the node's iostaged (cli/client.h). */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/json.h"
#include "cli/recommend.h"
#include "common/base/jsonbuf.h"
#include "common/config/jobname.h"

static void usage(FILE *out)
{
	fprintf(out, "usage: iostage recommend [--user USER] [--job-name NAME "
		     "| --script FILE | --dataset PATH] [--json]\n");
}

static void print_table(const cJSON *reply)
{
	const cJSON *recs = cJSON_GetObjectItemCaseSensitive(reply,
							     "recommendations");
	const cJSON *skipped = cJSON_GetObjectItemCaseSensitive(reply,
								"skipped");
	const cJSON *r, *c, *j;

	printf("%.0f run%s in the window\n", json_number(reply, "runs"),
	       json_number(reply, "runs") == 1 ? "" : "s");
	if (cJSON_GetArraySize(recs) == 0)
		printf("no recommendation\n");
	else
		printf("%-10s %-5s %-40s %s\n", "RULE", "CONF", "TARGET",
		       "ACTION");
	cJSON_ArrayForEach(r, recs) {
		const cJSON *ev = cJSON_GetObjectItemCaseSensitive(r,
								   "evidence");
		int n = 0;

		printf("%-10s %-5.2f %-40s %s\n", json_string(r, "rule"),
		       json_number(r, "confidence"), json_string(r, "target"),
		       json_string(r, "action"));
		cJSON_ArrayForEach(c,
				   cJSON_GetObjectItemCaseSensitive(r,
								    "commands"))
			if (cJSON_IsString(c))
				printf("%17s$ %s\n", "", c->valuestring);
		printf("%17sgain: %s; jobs:", "",
		       json_string(r, "expected_gain"));
		cJSON_ArrayForEach(j,
				   cJSON_GetObjectItemCaseSensitive(ev,
								    "jobs")) {
			if (n++ == 8) {
				printf(" ...");
				break;
			}
			printf(" %.0f", j->valuedouble);
		}
		printf("\n");
	}
	cJSON_ArrayForEach(r, skipped)
		printf("(%s %s: %s)\n", json_string(r, "rule"),
		       json_string(r, "target"), json_string(r, "reason"));
}

int recommend_main(const struct client *client, int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "user", required_argument, NULL, 'u' },
		{ "job-name", required_argument, NULL, 'J' },
		{ "script", required_argument, NULL, 's' },
		{ "dataset", required_argument, NULL, 'd' },
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *user = NULL, *job_name = NULL, *script = NULL;
	const char *dataset = NULL;
	char name[JOBNAME_MAX];
	int opt, as_json = 0, rc = 0;
	cJSON *req, *reply;

	optind = 0;
	while ((opt = getopt_long(argc, argv, "u:J:s:d:h", longopts, NULL)) !=
	       -1) {
		switch (opt) {
		case 'u':
			user = optarg;
			break;
		case 'J':
			job_name = optarg;
			break;
		case 's':
			script = optarg;
			break;
		case 'd':
			dataset = optarg;
			break;
		case 'j':
			as_json = 1;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind != argc || (job_name && script) ||
	    (script && dataset && job_name)) {
		usage(stderr);
		return 2;
	}
	if (script) {
		if (jobname_from_script(script, name, sizeof(name)) < 0) {
			fprintf(stderr,
				"iostage: recommend: --script %s: "
				"cannot read it: %m\n",
				script);
			return 1;
		}
		job_name = name;
	}
	req = json_request("recommend");
	if (user)
		cJSON_AddStringToObject(req, "user", user);
	if (job_name)
		cJSON_AddStringToObject(req, "job_name", job_name);
	if (dataset)
		cJSON_AddStringToObject(req, "dataset", dataset);
	reply = client_history_call(client, req, 30000);
	cJSON_Delete(req);
	if (!reply)
		return 1;
	if (as_json) {
		char *text;

		/* the reply minus "ok": the recommendations and their
		 * context */
		cJSON_DeleteItemFromObject(reply, "ok");
		text = jsonbuf_pretty(reply);
		if (text)
			puts(text);
		else
			rc = 1;
		free(text);
	} else {
		print_table(reply);
	}
	cJSON_Delete(reply);
	return rc;
}
