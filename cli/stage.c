/* stage.c - `iostage stage PATH [--tier T] [--user U] [--verify V]`.
 *
 * Asks iostaged to stage PATH into its cache (as the caller, or as USER
 * when root runs it: the admin's warm-up), then follows the staging with a
 * progress bar on a terminal until it ends.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/json.h"
#include "cli/progress.h"
#include "cli/stage.h"
#include "common/base/units.h"
#include "common/net/proto.h"

#define STAGE_POLL_S 1

static void usage(FILE *out)
{
	fprintf(out, "usage: iostage stage PATH [--tier TIER] [--user USER] "
		     "[--verify stat|checksum|none]\n");
}

/* The job object for ID in a status reply, or NULL. */
static const cJSON *find_job(const cJSON *status, double id)
{
	const cJSON *job;

	cJSON_ArrayForEach(job,
			   cJSON_GetObjectItemCaseSensitive(status, "jobs")) {
		if (json_number(job, "job") == id)
			return job;
	}
	return NULL;
}

static void print_result(const char *path, const cJSON *job)
{
	const cJSON *r = cJSON_GetArrayItem(
	    cJSON_GetObjectItemCaseSensitive(job, "cache"), 0);
	char bytes[32];

	units_bytes(proto_u64(job, "total_bytes"), bytes, sizeof(bytes));
	if (r && strcmp(json_string(r, "result"), "hit") == 0)
		printf("%s: already cached on tier %s (%s), %s, %.0f files\n",
		       path, json_string(r, "tier"), json_string(r, "entry"),
		       bytes, json_number(job, "total_files"));
	else if (r)
		printf("%s: staged into tier %s (%s), %s, %.0f files: %.0f "
		       "copied, %.0f linked from the previous version\n",
		       path, json_string(r, "tier"), json_string(r, "entry"),
		       bytes, json_number(job, "total_files"),
		       json_number(r, "copied_files"),
		       json_number(r, "linked_files"));
	else
		printf("%s: staged\n", path);
}

/* Poll until the prestage job ID leaves "staging". Returns exit status. */
static int follow(const struct client *client, const char *path, double id)
{
	for (;;) {
		cJSON *req = json_request("wait"), *reply, *status;
		const cJSON *job;
		const char *state;
		int rc;

		cJSON_AddNumberToObject(req, "job", id);
		cJSON_AddNumberToObject(req, "timeout", STAGE_POLL_S);
		reply = client_call(client, req, (STAGE_POLL_S + 30) * 1000);
		cJSON_Delete(req);
		if (!reply)
			return 1;
		cJSON_Delete(reply);

		req = json_request("status");
		status = client_call(client, req, 30000);
		cJSON_Delete(req);
		if (!status)
			return 1;
		job = find_job(status, id);
		if (!job) {
			progress_end(stderr);
			fprintf(stderr,
				"iostage: stage %s: iostaged no longer "
				"knows it\n",
				path);
			cJSON_Delete(status);
			return 1;
		}
		state = json_string(job, "state");
		if (strcmp(state, "staging") == 0) {
			const cJSON *eta =
			    cJSON_GetObjectItemCaseSensitive(job, "eta_s");

			progress_draw(stderr, proto_u64(job, "bytes"),
				      proto_u64(job, "total_bytes"),
				      proto_u64(job, "files"),
				      proto_u64(job, "total_files"),
				      json_number(job, "rate_bps"),
				      cJSON_IsNumber(eta) ? eta->valuedouble
							  : -1);
			cJSON_Delete(status);
			continue;
		}
		progress_end(stderr);
		if (strcmp(state, "staged") == 0) {
			print_result(path, job);
			rc = 0;
		} else {
			fprintf(stderr, "iostage: stage %s: %s\n", path,
				json_string(job, "error"));
			rc = 1;
		}
		cJSON_Delete(status);
		return rc;
	}
}

int stage_main(const struct client *client, int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "tier", required_argument, NULL, 't' },
		{ "user", required_argument, NULL, 'u' },
		{ "verify", required_argument, NULL, 'V' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *tier = NULL, *user = NULL, *verify = NULL;
	cJSON *req, *reply;
	double id;
	int opt, rc;

	optind = 0; /* glibc: 0 re-initializes getopt fully */
	while ((opt = getopt_long(argc, argv, "t:u:h", longopts, NULL)) != -1) {
		switch (opt) {
		case 't':
			tier = optarg;
			break;
		case 'u':
			user = optarg;
			break;
		case 'V':
			verify = optarg;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind != argc - 1) {
		usage(stderr);
		return 2;
	}
	req = json_request("prestage");
	cJSON_AddStringToObject(req, "path", argv[optind]);
	if (tier)
		cJSON_AddStringToObject(req, "tier", tier);
	if (user)
		cJSON_AddStringToObject(req, "user", user);
	if (verify)
		cJSON_AddStringToObject(req, "verify", verify);
	reply = client_call(client, req, 30000);
	cJSON_Delete(req);
	if (!reply)
		return 1;
	id = json_number(reply, "id");
	cJSON_Delete(reply);
	rc = follow(client, argv[optind], id);
	return rc;
}
