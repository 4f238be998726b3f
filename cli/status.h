/* status.h - `iostage status`: the daemon, its tiers and active jobs. */
#ifndef IOSTAGE_CLI_STATUS_H
#define IOSTAGE_CLI_STATUS_H

#include "cli/client.h"

/* argv[0] is "status". Returns the process exit status. */
int status_main(const struct client *client, int argc, char **argv);

#endif /* IOSTAGE_CLI_STATUS_H */
