/* pfslicense.h - `iostage pfs-license`: the -L value a job should carry. */
#ifndef IOSTAGE_CLI_PFSLICENSE_H
#define IOSTAGE_CLI_PFSLICENSE_H

#include "cli/client.h"

int pfslicense_main(const struct client *client, int argc, char **argv);

#endif /* IOSTAGE_CLI_PFSLICENSE_H */
