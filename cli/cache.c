/* cache.c - `iostage cache ls [--tier T] [--json]` and
 * `iostage cache evict (PATH | --key K) [--tier T] [--user U]`. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli/cache.h"
#include "cli/json.h"
#include "common/base/jsonbuf.h"
#include "common/base/units.h"
#include "common/net/proto.h"

static void usage(FILE *out)
{
	fprintf(out, "usage: iostage cache ls [--tier TIER] [--json]\n"
		     "       iostage cache evict (PATH | --key KEY) "
		     "[--tier TIER] [--user USER]\n");
}

static void print_entry(const cJSON *e, time_t now)
{
	char size[32], age[32];
	double last = json_number(e, "last_used");

	printf("%-8s %-36s %-12s %10s %9.0f %9s %4.0f%s  %s\n",
	       json_string(e, "tier"), json_string(e, "entry"),
	       json_string(e, "user"),
	       units_bytes(proto_u64(e, "bytes"), size, sizeof(size)),
	       json_number(e, "files"),
	       last > 0 ? units_seconds((double)now - last, age, sizeof(age))
			: "-",
	       json_number(e, "pins"),
	       cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(e, "current"))
		   ? " "
		   : "*",
	       json_string(e, "source"));
}

static int cache_ls(const struct client *client, int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "tier", required_argument, NULL, 't' },
		{ "json", no_argument, NULL, 'j' },
		{ NULL, 0, NULL, 0 },
	};
	const char *tier = NULL;
	int opt, as_json = 0;
	cJSON *req, *reply;
	const cJSON *e, *entries;

	optind = 0; /* glibc: 0 re-initializes getopt fully */
	while ((opt = getopt_long(argc, argv, "t:", longopts, NULL)) != -1) {
		if (opt == 't') {
			tier = optarg;
		} else if (opt == 'j') {
			as_json = 1;
		} else {
			usage(stderr);
			return 2;
		}
	}
	if (optind != argc) {
		usage(stderr);
		return 2;
	}
	req = json_request("cache_ls");
	if (tier)
		cJSON_AddStringToObject(req, "tier", tier);
	reply = client_call(client, req, 30000);
	cJSON_Delete(req);
	if (!reply)
		return 1;
	entries = cJSON_GetObjectItemCaseSensitive(reply, "entries");
	if (as_json) {
		char *text = jsonbuf_pretty(entries);
		if (text)
			puts(text);
		free(text);
	} else if (cJSON_GetArraySize(entries) == 0) {
		printf("the cache is empty\n");
	} else {
		time_t now = time(NULL);

		printf("%-8s %-36s %-12s %10s %9s %9s %5s  %s\n", "TIER",
		       "ENTRY", "USER", "SIZE", "FILES", "USED AGO", "PINS",
		       "SOURCE");
		cJSON_ArrayForEach(e, entries)
			print_entry(e, now);
		printf("(* an older version, removed when its last job "
		       "ends)\n");
	}
	cJSON_Delete(reply);
	return 0;
}

static int cache_evict(const struct client *client, int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "tier", required_argument, NULL, 't' },
		{ "user", required_argument, NULL, 'u' },
		{ "key", required_argument, NULL, 'k' },
		{ NULL, 0, NULL, 0 },
	};
	const char *tier = NULL, *user = NULL, *key = NULL, *path = NULL;
	const cJSON *e;
	cJSON *req, *reply;
	char size[32];
	int opt;

	optind = 0; /* glibc: 0 re-initializes getopt fully */
	while ((opt = getopt_long(argc, argv, "t:u:k:", longopts, NULL)) !=
	       -1) {
		switch (opt) {
		case 't':
			tier = optarg;
			break;
		case 'u':
			user = optarg;
			break;
		case 'k':
			key = optarg;
			break;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind < argc)
		path = argv[optind++];
	if (optind != argc || !!path == !!key) {
		usage(stderr);
		return 2;
	}
	req = json_request("cache_evict");
	cJSON_AddStringToObject(req, path ? "path" : "key", path ? path : key);
	if (tier)
		cJSON_AddStringToObject(req, "tier", tier);
	if (user)
		cJSON_AddStringToObject(req, "user", user);
	reply = client_call(client, req, 300000);
	cJSON_Delete(req);
	if (!reply)
		return 1;
	cJSON_ArrayForEach(e,
			   cJSON_GetObjectItemCaseSensitive(reply, "evicted")) {
		printf("evicted %s on %s: %s (%s)\n", json_string(e, "entry"),
		       json_string(e, "tier"), json_string(e, "source"),
		       units_bytes(proto_u64(e, "bytes"), size, sizeof(size)));
	}
	printf("freed %s\n",
	       units_bytes(proto_u64(reply, "bytes"), size, sizeof(size)));
	cJSON_Delete(reply);
	return 0;
}

int cache_main(const struct client *client, int argc, char **argv)
{
	if (argc < 2) {
		usage(stderr);
		return 2;
	}
	if (strcmp(argv[1], "ls") == 0)
		return cache_ls(client, argc - 1, argv + 1);
	if (strcmp(argv[1], "evict") == 0)
		return cache_evict(client, argc - 1, argv + 1);
	fprintf(stderr, "iostage: cache: unknown command '%s'\n", argv[1]);
	usage(stderr);
	return 2;
}
