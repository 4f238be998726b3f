/* jsonset.h - set a member of a JSON object, whether it is there or not.
 *
 * cJSON's replace of a key the object lacks fails and leaves the new item
 * to its caller, who rarely frees it: fuzz_ctld_request found such a leak
 * (and the member never set) in a multi-node job's merge. json_set() adds
 * what is absent, replaces what is present, and frees the item when it
 * cannot do either, so a caller never owns it after the call.
 */
#ifndef IOSTAGE_JSONSET_H
#define IOSTAGE_JSONSET_H

#include <stdbool.h>

#include <cJSON.h>

/* OBJECT[KEY] = ITEM (case-sensitive key). ITEM belongs to OBJECT after
 * the call, or is deleted. Returns false when ITEM or OBJECT is NULL or
 * memory ran out. */
bool json_set(cJSON *object, const char *key, cJSON *item);

/* OBJECT[KEY] = V: a number member updated in place, anything else there
 * replaced by the number. */
bool json_set_number(cJSON *object, const char *key, double v);

#endif /* IOSTAGE_JSONSET_H */
