/* client.h - what every iostage subcommand shares: config and one call. */
#ifndef IOSTAGE_CLI_CLIENT_H
#define IOSTAGE_CLI_CLIENT_H

#include <cJSON.h>

/* The socket to use: -c CONF, else $IOSTAGE_CONF, else the default conf. */
struct client {
	const char *conf_path;
	char socket_path[108];
};

/* Load the config named by client->conf_path. 0, or -1 after printing one
 * line to stderr. */
int client_init(struct client *client);

/* Send REQ and return the reply when it is {"ok":true}; otherwise print
 * "iostage: <error>" and return NULL. The caller deletes the reply. */
cJSON *client_call(const struct client *client, const cJSON *req,
		   int timeout_ms);

#endif /* IOSTAGE_CLI_CLIENT_H */
