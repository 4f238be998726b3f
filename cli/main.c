/* main.c - the iostage command: dispatch to one file per subcommand. */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "cli/cache.h"
#include "cli/client.h"
#include "cli/export.h"
#include "cli/pfslicense.h"
#include "cli/phase.h"
#include "cli/recommend.h"
#include "cli/sched.h"
#include "cli/stage.h"
#include "cli/status.h"
#include "cli/telemetry.h"

static void usage(FILE *out)
{
	fprintf(
	    out,
	    "usage: iostage [-c CONF] COMMAND [ARGS]\n"
	    "\n"
	    "commands:\n"
	    "  status [--json]   the node's iostaged: tiers, active jobs and "
	    "their progress\n"
	    "  status --cluster [--json | --prom]\n"
	    "                    iostagectld: placement and pre-staging, per "
	    "pending job\n"
	    "                    (the default on a node without iostaged)\n"
	    "  stage PATH [--tier T] [--user U] [--verify V]\n"
	    "                    stage PATH into the node's cache (warm-up)\n"
	    "  cache ls [--tier T] [--json]\n"
	    "                    what the cache holds\n"
	    "  cache evict (PATH | --key K) [--tier T] [--user U]\n"
	    "                    remove a dataset from the cache\n"
	    "  phase begin|end NAME\n"
	    "                    mark a phase of the running job\n"
	    "  telemetry JOBID [--json]\n"
	    "                    a job's phases, I/O and run timeline\n"
	    "  recommend [--user U] [--job-name N | --script FILE | "
	    "--dataset PATH] [--json]\n"
	    "                    what the job history advises: caching, "
	    "staging, striping\n"
	    "  export --format json|csv|prom|trace|html [--job J] "
	    "[--since T]\n"
	    "         [--input FILE] [-o FILE]\n"
	    "                    job records as data, a trace or an HTML "
	    "report\n"
	    "  pfs-license --io-profile SPEC [--licenses CUR] "
	    "[--job-name N | --submitter PID]\n"
	    "                    the --licenses value for a job that streams "
	    "from the PFS\n"
	    "                    (cli_filter.lua; PfsLicense=)\n"
	    "  version           print the version\n"
	    "\n"
	    "  -c CONF           iostage.conf to read (default $IOSTAGE_CONF, "
	    "else %s)\n",
	    IOSTAGE_CONF_PATH);
}

static const struct {
	const char *name;
	int (*main)(const struct client *client, int argc, char **argv);
} commands[] = {
	{ "status", status_main },
	{ "stage", stage_main },
	{ "cache", cache_main },
	{ "phase", phase_main },
	{ "telemetry", telemetry_main },
	{ "recommend", recommend_main },
	{ "export", export_main },
	{ "job-note", sched_job_note_main },
	{ "pfs-license", pfslicense_main },
};

int main(int argc, char **argv)
{
	struct client client = { 0 };
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
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++) {
		if (strcmp(argv[0], commands[i].name) != 0)
			continue;
		/* export --input works offline: export loads the config
		 * itself when it needs the daemon. */
		if (commands[i].main != export_main && client_init(&client) < 0)
			return 1;
		return commands[i].main(&client, argc, argv);
	}
	fprintf(stderr, "iostage: unknown command '%s'\n", argv[0]);
	usage(stderr);
	return 2;
}
