/* json.c - lenient readers for fields of iostaged's replies. */
#include <stdio.h>
#include <stdlib.h>

#include "cli/json.h"

double json_number(const cJSON *obj, const char *key)
{
	const cJSON *item = cJSON_GetObjectItemCaseSensitive(obj, key);

	return cJSON_IsNumber(item) ? item->valuedouble : 0;
}

const char *json_string(const cJSON *obj, const char *key)
{
	const cJSON *item = cJSON_GetObjectItemCaseSensitive(obj, key);

	return cJSON_IsString(item) ? item->valuestring : "-";
}

cJSON *json_request(const char *op)
{
	cJSON *req = cJSON_CreateObject();

	if (!req || !cJSON_AddStringToObject(req, "op", op)) {
		fprintf(stderr, "iostage: out of memory\n");
		exit(1);
	}
	return req;
}
