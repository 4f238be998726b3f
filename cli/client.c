/* client.c - config lookup and a checked round trip to iostaged or to the
 * cluster service (client.h). */
#include <stdio.h>
#include <stdlib.h>

#include "cli/client.h"
#include "common/config/conf.h"
#include "common/net/ctlclient.h"
#include "common/net/proto.h"

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
	client->conf = &conf;
	return 0;
}

/* REPLY when {"ok":true}; else NULL, the refusal in ERR. Takes REPLY. */
static cJSON *ok_or_error(cJSON *reply, const char *who, char *err,
			  size_t errlen)
{
	const cJSON *error;

	if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(reply, "ok")))
		return reply;
	error = cJSON_GetObjectItemCaseSensitive(reply, "error");
	if (cJSON_IsString(error))
		snprintf(err, errlen, "%s", error->valuestring);
	else
		snprintf(err, errlen, "%s refused the request", who);
	cJSON_Delete(reply);
	return NULL;
}

cJSON *client_call_quiet(const struct client *client, const cJSON *req,
			 int timeout_ms, char *err, size_t errlen)
{
	cJSON *reply = proto_call(client->socket_path, req, timeout_ms, err,
				  errlen);

	return reply ? ok_or_error(reply, "iostaged", err, errlen) : NULL;
}

cJSON *client_call(const struct client *client, const cJSON *req,
		   int timeout_ms)
{
	char err[CONF_ERR_MAX];
	cJSON *reply = client_call_quiet(client, req, timeout_ms, err,
					 sizeof(err));

	if (!reply)
		fprintf(stderr, "iostage: %s\n", err);
	return reply;
}

bool client_has_service(const struct client *client)
{
	return ctl_configured(client->conf);
}

/* The history round trip: the service's or iostaged's; NULL + err. */
static cJSON *history_call(const struct client *client, const cJSON *req,
			   int timeout_ms, char *err, size_t errlen)
{
	cJSON *reply = NULL;

	if (!client_has_service(client))
		return client_call_quiet(client, req, timeout_ms, err, errlen);
	if (ctl_request_timeout(client->conf, req, timeout_ms, &reply, err,
				errlen) < 0)
		return NULL;
	return ok_or_error(reply, "iostagectld", err, errlen);
}

cJSON *client_history_call(const struct client *client, const cJSON *req,
			   int timeout_ms)
{
	char err[CONF_ERR_MAX];
	cJSON *reply = history_call(client, req, timeout_ms, err, sizeof(err));

	if (!reply)
		fprintf(stderr, "iostage: %s\n", err);
	return reply;
}

cJSON *client_history_call_quiet(const struct client *client, const cJSON *req,
				 int timeout_ms, char *err, size_t errlen)
{
	return history_call(client, req, timeout_ms, err, errlen);
}
