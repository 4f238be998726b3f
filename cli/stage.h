/* stage.h - `iostage stage PATH`: warm the node's cache with a dataset. */
#ifndef IOSTAGE_CLI_STAGE_H
#define IOSTAGE_CLI_STAGE_H

#include "cli/client.h"

/* argv[0] is "stage". Returns the process exit status. */
int stage_main(const struct client *client, int argc, char **argv);

#endif /* IOSTAGE_CLI_STAGE_H */
