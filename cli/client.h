/* client.h - what every iostage subcommand shares: config and one call.
 *
 * Two places answer: the node's iostaged (its Unix socket: staging, the
 * cache, live jobs) and, when iostage.conf sets ControllerHost=, the
 * cluster's iostagectld (TCP + the user's own MUNGE credential, through
 * common/net/ctlclient.h: the history, its records and its advice). A login
 * node has no iostaged; with a service it still reads the history.
 */
#ifndef IOSTAGE_CLI_CLIENT_H
#define IOSTAGE_CLI_CLIENT_H

#include <stdbool.h>
#include <stddef.h>

#include <cJSON.h>

#include "common/config/conf.h"

/* The config: -c CONF, else $IOSTAGE_CONF, else the default conf. */
struct client {
	const char *conf_path;
	char socket_path[108];
	const struct conf *conf; /* set by client_init */
};

/* Load the config named by client->conf_path. 0, or -1 after printing one
 * line to stderr. */
int client_init(struct client *client);

/* Send REQ to the node's iostaged and return the reply when it is
 * {"ok":true}; otherwise print "iostage: <error>" and return NULL. The
 * caller deletes the reply. */
cJSON *client_call(const struct client *client, const cJSON *req,
		   int timeout_ms);

/* Is the history the cluster service's (ControllerHost= set)? */
bool client_has_service(const struct client *client);

/* A history request (history_get, history_list, recommend): to
 * iostagectld when the config names one, else to the node's iostaged.
 * Same contract as client_call; an unreachable service is one line
 * naming it ("iostage: iostagectld ctl:6827: connection refused"). */
cJSON *client_history_call(const struct client *client, const cJSON *req,
			   int timeout_ms);

/* client_history_call() that prints nothing: the reply when ok, else
 * NULL with why in ERR. */
cJSON *client_history_call_quiet(const struct client *client, const cJSON *req,
				 int timeout_ms, char *err, size_t errlen);

/* REQ to the node's iostaged, printing nothing: the reply when ok, else
 * NULL with why in ERR (no daemon on this node, the job unknown, ...). */
cJSON *client_call_quiet(const struct client *client, const cJSON *req,
			 int timeout_ms, char *err, size_t errlen);

#endif /* IOSTAGE_CLI_CLIENT_H */
