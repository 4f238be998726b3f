/* json.h - lenient readers for fields of iostaged's replies. */
#ifndef IOSTAGE_CLI_JSON_H
#define IOSTAGE_CLI_JSON_H

#include <cJSON.h>

/* The number at KEY, or 0 when missing or not a number. */
double json_number(const cJSON *obj, const char *key);

/* The string at KEY, or "-" when missing or not a string. */
const char *json_string(const cJSON *obj, const char *key);

/* A new request {"op":OP}; exits the program on ENOMEM (a CLI). */
cJSON *json_request(const char *op);

#endif /* IOSTAGE_CLI_JSON_H */
