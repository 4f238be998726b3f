/* telemetry.h - `iostage telemetry JOBID [--json]`: where a job's time and
 * I/O went, per phase, with a timeline of its run. */
#ifndef IOSTAGE_CLI_TELEMETRY_H
#define IOSTAGE_CLI_TELEMETRY_H

#include <cJSON.h>

#include "cli/client.h"

/* argv[0] is "telemetry". Returns the process exit status. */
int telemetry_main(const struct client *client, int argc, char **argv);

/* Print RECORD (docs/RECORDS.md) as tables and a timeline to OUT, at most
 * WIDTH columns for the timeline. */
void telemetry_print(const cJSON *record, int width, FILE *out);

#endif /* IOSTAGE_CLI_TELEMETRY_H */
