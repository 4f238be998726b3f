/* cache.h - `iostage cache ls|evict`: what the node keeps staged. */
#ifndef IOSTAGE_CLI_CACHE_H
#define IOSTAGE_CLI_CACHE_H

#include "cli/client.h"

/* argv[0] is "cache". Returns the process exit status. */
int cache_main(const struct client *client, int argc, char **argv);

#endif /* IOSTAGE_CLI_CACHE_H */
