/* jsonset.c - set a member of a JSON object (jsonset.h). */
#include "common/base/jsonset.h"

bool json_set(cJSON *object, const char *key, cJSON *item)
{
	bool done;

	if (!item)
		return false;
	if (!object || !key) {
		cJSON_Delete(item);
		return false;
	}
	if (cJSON_GetObjectItemCaseSensitive(object, key))
		done = cJSON_ReplaceItemInObjectCaseSensitive(object, key,
							      item);
	else
		done = cJSON_AddItemToObject(object, key, item);
	if (!done)
		cJSON_Delete(item); /* neither took it, or its name's copy */
	return done;
}

bool json_set_number(cJSON *object, const char *key, double v)
{
	cJSON *old = cJSON_GetObjectItemCaseSensitive(object, key);

	if (cJSON_IsNumber(old)) {
		cJSON_SetNumberValue(old, v);
		return true;
	}
	return json_set(object, key, cJSON_CreateNumber(v));
}
