/* sched.h - the CLI's side of iostagectld's scheduling help
 * (docs/SCHEDULING.md): `iostage job-note JOBID TICKET` (run by
 * slurm-conf/cli_filter.lua after a submission) and the cluster view of
 * `iostage status` (placement and pre-staging, per pending job). */
#ifndef IOSTAGE_CLI_SCHED_H
#define IOSTAGE_CLI_SCHED_H

#include <stdbool.h>

#include "cli/client.h"

int sched_job_note_main(const struct client *client, int argc, char **argv);

#include <stdio.h>

#include <cJSON.h>

enum sched_show { SCHED_SHOW_TEXT, SCHED_SHOW_JSON, SCHED_SHOW_PROM };

/* Print the service's sched_status (AS_JSON: as it came). 0 or 1. */
int sched_status_print(const struct client *client, bool as_json);

/* The same, as text, JSON or Prometheus text. 0 or 1. */
int sched_status_show(const struct client *client, enum sched_show how);

/* A sched_status reply's counters as Prometheus text on OUT
 * (iostage_ctld_*). 0, or -1 on ENOMEM. */
int sched_status_prom(const cJSON *reply, FILE *out);

#endif /* IOSTAGE_CLI_SCHED_H */
