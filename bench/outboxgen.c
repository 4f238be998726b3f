/* outboxgen.c - bench: fill a node's outbox with job records, as its
 * Epilogs would have while iostagectld was away, so that the node's real
 * iostaged forwards them (bench/agents.sh measures how fast).
 *
 *   build/bench/outboxgen -o STATEDIR/outbox -n NODE -N NODES -j JOBS
 *       [-f FIRST_JOB] [-m 0|1]
 *
 * NODES: the cluster's compute nodes, comma-separated, NODE among them.
 * Job ids FIRST_JOB + 1 .. FIRST_JOB + JOBS, records of bench/recgen.h's
 * realistic size. Each node files its own one-node jobs: job i belongs to
 * node (i mod #NODES). With -m 1 (the default) one job in ten is a job of
 * every node, each writing its own part (the service merges them).
 * Entries go through common/telemetry/outbox.c's outbox_put, the Epilog's path
 * (temporary file, fsync, rename). Prints how many it wrote.
 */
#define _GNU_SOURCE
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cJSON.h>

#include "bench/recgen.h"
#include "common/telemetry/outbox.h"

#define NODES_MAX 64

static void usage(void)
{
	fprintf(stderr, "usage: outboxgen -o OUTBOX_DIR -n NODE -N N1,N2,... "
			"-j JOBS [-f FIRST_JOB] [-m 0|1]\n");
	exit(2);
}

int main(int argc, char **argv)
{
	const char *dir = NULL, *node = NULL, *nodes[NODES_MAX];
	char *list = NULL, err[512];
	unsigned jobs = 0, first = 0, multi = 1, nn = 0, me = NODES_MAX;
	unsigned written = 0;
	struct outbox *ob;
	cJSON *tmpl;
	double t0 = (double)time(NULL);
	int c;

	while ((c = getopt(argc, argv, "o:n:N:j:f:m:")) != -1) {
		switch (c) {
		case 'o':
			dir = optarg;
			break;
		case 'n':
			node = optarg;
			break;
		case 'N':
			list = strdup(optarg);
			break;
		case 'j':
			jobs = (unsigned)strtoul(optarg, NULL, 10);
			break;
		case 'f':
			first = (unsigned)strtoul(optarg, NULL, 10);
			break;
		case 'm':
			multi = (unsigned)strtoul(optarg, NULL, 10);
			break;
		default:
			usage();
		}
	}
	if (!dir || !node || !list || !jobs)
		usage();
	for (char *s = strtok(list, ","); s && nn < NODES_MAX;
	     s = strtok(NULL, ",")) {
		if (!strcmp(s, node))
			me = nn;
		nodes[nn++] = s;
	}
	if (me == NODES_MAX) {
		fprintf(stderr, "outboxgen: %s is not in -N\n", node);
		return 2;
	}
	if (outbox_open(dir, &ob, NULL, err, sizeof(err)) < 0) {
		fprintf(stderr, "outboxgen: %s\n", err);
		return 1;
	}
	tmpl = recgen_template();
	for (unsigned i = 0; i < jobs; i++) {
		unsigned id = first + i + 1;
		bool all = multi && nn > 1 && i % 10 == 9;
		cJSON *e;

		if (!all && i % nn != me)
			continue;
		recgen_set_job(tmpl, id, first + jobs, t0, i * 2654435761u);
		cJSON_SetValuestring(cJSON_GetObjectItemCaseSensitive(tmpl,
								      "node"),
				     node);
		e = outbox_entry_new(id, node, all ? nodes : &nodes[me],
				     all ? nn : 1, tmpl, t0);
		if (!e || outbox_put(ob, e, err, sizeof(err)) < 0) {
			fprintf(stderr, "outboxgen: job %u: %s\n", id,
				e ? err : "out of memory");
			return 1;
		}
		cJSON_Delete(e);
		written++;
	}
	printf("outboxgen: %u entries in %s\n", written, dir);
	cJSON_Delete(tmpl);
	outbox_close(ob);
	free(list);
	return 0;
}
