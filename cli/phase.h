/* phase.h - `iostage phase begin|end NAME`: a phase marker from a script. */
#ifndef IOSTAGE_CLI_PHASE_H
#define IOSTAGE_CLI_PHASE_H

#include "cli/client.h"

/* argv[0] is "phase". Returns the process exit status. */
int phase_main(const struct client *client, int argc, char **argv);

#endif /* IOSTAGE_CLI_PHASE_H */
