/* client.c - config lookup and a checked round trip to iostaged. */
#include <stdio.h>
#include <stdlib.h>

#include "cli/client.h"
#include "common/conf.h"
#include "common/proto.h"

int client_init(struct client *client)
{
	static struct conf conf;
	char err[CONF_ERR_MAX];

	if (!client->conf_path)
		client->conf_path = getenv("IOSTAGE_CONF");
	if (!client->conf_path)
		client->conf_path = IOSTAGE_CONF_PATH;
	if (conf_load(client->conf_path, &conf, err, sizeof(err)) < 0) {
		fprintf(stderr, "iostage: %s\n", err);
		return -1;
	}
	snprintf(client->socket_path, sizeof(client->socket_path), "%s",
		 conf.socket_path);
	return 0;
}

cJSON *client_call(const struct client *client, const cJSON *req,
		   int timeout_ms)
{
	char err[CONF_ERR_MAX];
	cJSON *reply;
	const cJSON *error;

	reply = proto_call(client->socket_path, req, timeout_ms, err,
			   sizeof(err));
	if (!reply) {
		fprintf(stderr, "iostage: %s\n", err);
		return NULL;
	}
	if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(reply, "ok")))
		return reply;
	error = cJSON_GetObjectItemCaseSensitive(reply, "error");
	fprintf(stderr, "iostage: %s\n",
		cJSON_IsString(error) ? error->valuestring
				      : "iostaged refused the request");
	cJSON_Delete(reply);
	return NULL;
}
