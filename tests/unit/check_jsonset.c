/* check_jsonset.c - unit tests for common/base/jsonset: a member is added when
 * absent, replaced when present, and the item never left to the caller
 * (the sanitized run, make check-sanitize, reports a leak). */
#include <stdlib.h>
#include <string.h>

#include <check.h>

#include "common/base/jsonset.h"
#include "tests/unit/check_run.h"

static const char *str(const cJSON *o, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);

	return cJSON_IsString(v) ? v->valuestring : NULL;
}

START_TEST(test_absent_added_present_replaced)
{
	cJSON *o = cJSON_Parse("{\"a\":\"old\",\"b\":1}");

	ck_assert(json_set(o, "a", cJSON_CreateString("new")));
	ck_assert(json_set(o, "c", cJSON_CreateString("added")));
	ck_assert_str_eq(str(o, "a"), "new");
	ck_assert_str_eq(str(o, "c"), "added");
	ck_assert_int_eq(cJSON_GetArraySize(o), 3);
	/* a key differing only in case is another member */
	ck_assert(json_set(o, "A", cJSON_CreateString("upper")));
	ck_assert_str_eq(str(o, "a"), "new");
	ck_assert_int_eq(cJSON_GetArraySize(o), 4);
	cJSON_Delete(o);
}
END_TEST

START_TEST(test_item_freed_when_not_set)
{
	ck_assert(!json_set(NULL, "a", cJSON_CreateString("lost")));
	ck_assert(!json_set(NULL, "a", NULL));
	cJSON *o = cJSON_CreateObject();

	ck_assert(!json_set(o, NULL, cJSON_CreateString("lost")));
	ck_assert(!json_set(o, "a", NULL));
	ck_assert_int_eq(cJSON_GetArraySize(o), 0);
	cJSON_Delete(o);
}
END_TEST

START_TEST(test_number_in_place_or_replaced)
{
	cJSON *o = cJSON_Parse("{\"n\":1,\"s\":\"x\"}");
	cJSON *n = cJSON_GetObjectItemCaseSensitive(o, "n");

	ck_assert(json_set_number(o, "n", 7));
	ck_assert_ptr_eq(cJSON_GetObjectItemCaseSensitive(o, "n"), n);
	ck_assert_double_eq(n->valuedouble, 7);
	ck_assert(json_set_number(o, "s", 2.5));
	ck_assert_double_eq(
	    cJSON_GetObjectItemCaseSensitive(o, "s")->valuedouble, 2.5);
	ck_assert(json_set_number(o, "new", 3));
	ck_assert_int_eq(cJSON_GetArraySize(o), 3);
	cJSON_Delete(o);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("jsonset");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, test_absent_added_present_replaced);
	tcase_add_test(tc, test_item_freed_when_not_set);
	tcase_add_test(tc, test_number_in_place_or_replaced);
	suite_add_tcase(s, tc);
	return check_run(s);
}
