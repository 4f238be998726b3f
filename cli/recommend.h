/* recommend.h - `iostage recommend`: what the history advises. */
#ifndef IOSTAGE_CLI_RECOMMEND_H
#define IOSTAGE_CLI_RECOMMEND_H

#include "cli/client.h"

/* argv[0] is "recommend". Returns the process exit status. */
int recommend_main(const struct client *client, int argc, char **argv);

#endif /* IOSTAGE_CLI_RECOMMEND_H */
