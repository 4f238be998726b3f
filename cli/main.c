/* main.c - the iostage command: dispatch to one file per subcommand. */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "cli/client.h"
#include "cli/status.h"

static void usage(FILE *out)
{
	fprintf(out,
		"usage: iostage [-c CONF] COMMAND [ARGS]\n"
		"\n"
		"commands:\n"
		"  status [--json]   the node's iostaged: tiers and active jobs\n"
		"  version           print the version\n"
		"\n"
		"  -c CONF           iostage.conf to read (default $IOSTAGE_CONF, "
		"else %s)\n",
		IOSTAGE_CONF_PATH);
}

int main(int argc, char **argv)
{
	struct client client = {0};
	int opt;

	while ((opt = getopt(argc, argv, "+c:h")) != -1) {
		switch (opt) {
		case 'c':
			client.conf_path = optarg;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind >= argc) {
		usage(stderr);
		return 2;
	}
	argv += optind;
	argc -= optind;
	if (strcmp(argv[0], "version") == 0 ||
	    strcmp(argv[0], "--version") == 0) {
		printf("iostage %s\n", IOSTAGE_VERSION);
		return 0;
	}
	if (strcmp(argv[0], "status") == 0) {
		if (client_init(&client) < 0)
			return 1;
		return status_main(&client, argc, argv);
	}
	fprintf(stderr, "iostage: unknown command '%s'\n", argv[0]);
	usage(stderr);
	return 2;
}
