/* ctlclient.c - requests to iostagectld (see ctlclient.h).
 *
 * The service answers a request whose credential it refused (none, forged,
 * replayed, expired) with {"ok":false,"refused":true,"error":"..."}: the
 * request never reached an op, so to the caller it is a failed call, like an
 * unreachable service, and not a reply to look into.
 */
#include <stdio.h>
#include <string.h>

#include "common/net/ctlclient.h"
#include "common/net/peernet.h"

bool ctl_configured(const struct conf *conf)
{
	return conf && conf->controller_host[0] != '\0';
}

int ctl_request_timeout(const struct conf *conf, const cJSON *req,
			int timeout_ms, cJSON **ret_reply, char *err,
			size_t errlen)
{
	char why[CONF_ERR_MAX];
	const cJSON *refused, *msg;
	cJSON *reply;

	if (!ctl_configured(conf)) {
		snprintf(err, errlen,
			 "iostagectld: no service configured "
			 "(ControllerHost= is empty)");
		return -1;
	}
	if (!cJSON_IsObject(req) || timeout_ms <= 0 || !ret_reply) {
		snprintf(err, errlen, "iostagectld %s:%u: bad request",
			 conf->controller_host, conf->controller_port);
		return -1;
	}
	why[0] = '\0';
	reply = peernet_call(conf->controller_host, conf->controller_port,
			     conf->munge_socket[0] ? conf->munge_socket : NULL,
			     req, timeout_ms, NULL, why, sizeof(why));
	if (!reply) {
		snprintf(err, errlen, "iostagectld %s:%u: %s",
			 conf->controller_host, conf->controller_port, why);
		return -1;
	}
	refused = cJSON_GetObjectItemCaseSensitive(reply, "refused");
	if (cJSON_IsTrue(refused)) {
		msg = cJSON_GetObjectItemCaseSensitive(reply, "error");
		snprintf(err, errlen, "iostagectld %s:%u: request refused: %s",
			 conf->controller_host, conf->controller_port,
			 cJSON_IsString(msg) ? msg->valuestring : "no reason");
		cJSON_Delete(reply);
		return -1;
	}
	*ret_reply = reply;
	return 0;
}

int ctl_request(const struct conf *conf, const cJSON *req, cJSON **ret_reply,
		char *err, size_t errlen)
{
	return ctl_request_timeout(conf, req, CTL_REQUEST_TIMEOUT_MS, ret_reply,
				   err, errlen);
}
