/* phase.c - `iostage phase begin|end NAME`, through libiostage's code, so
 * a script's markers carry the same identity (PMIx or Slurm) as an
 * application's. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/phase.h"
#include "common/config/conf.h"
#include "shim/iostage.h"

int phase_main(const struct client *client, int argc, char **argv)
{
	char err[CONF_ERR_MAX];
	int begin;

	if (argc != 3 || (strcmp(argv[1], "begin") && strcmp(argv[1], "end"))) {
		fprintf(stderr, "usage: iostage phase begin|end NAME\n");
		return 2;
	}
	begin = !strcmp(argv[1], "begin");
	/* The plugin's IOSTAGE_SOCKET wins; otherwise our config's. */
	setenv("IOSTAGE_SOCKET", client->socket_path, 0);
	if (iostage_phase(argv[2], begin, err, sizeof(err)) < 0) {
		fprintf(stderr, "iostage: phase %s %s: %s\n", argv[1], argv[2],
			err);
		return 1;
	}
	return 0;
}
