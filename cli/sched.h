/* sched.h - the CLI's side of iostagectld's scheduling help
 * (docs/SCHEDULING.md): `iostage job-note JOBID TICKET` (run by
 * slurm-conf/cli_filter.lua after a submission) and the cluster view of
 * `iostage status` (placement and pre-staging, per pending job). */
#ifndef IOSTAGE_CLI_SCHED_H
#define IOSTAGE_CLI_SCHED_H

#include <stdbool.h>

#include "cli/client.h"

int sched_job_note_main(const struct client *client, int argc, char **argv);

/* Print the service's sched_status (AS_JSON: as it came). 0 or 1. */
int sched_status_print(const struct client *client, bool as_json);

#endif /* IOSTAGE_CLI_SCHED_H */
