/* check_jsonbuf.c - unit tests for common/base/jsonbuf: the fast compact JSON
 * writer (its packed form is tested with the history's values,
 * check_history.c). */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <check.h>

#include "common/base/jsonbuf.h"
#include "tests/unit/check_run.h"

/* jsonbuf: numbers print as before the decimal fast path (shortest
 * "%.15g" that reads back exactly, else "%.17g"). */
START_TEST(test_jsonbuf_numbers)
{
	static const struct {
		double v;
		const char *text;
	} cases[] = {
		{ 0, "0" },
		{ -3, "-3" },
		{ 0.4, "0.4" },
		{ 12.25, "12.25" },
		{ -520.059, "-520.059" },
		{ 65.123, "65.123" },
		{ 0.0001, "0.0001" },
		{ 0.00001, "1e-05" },
		{ 0.1 + 0.2, "0.30000000000000004" },
		{ 123456789.5, "123456789.5" },
		{ 1234567890.5, "1234567890.5" },
		{ 1e20, "1e+20" },
		{ 1.0 / 3, "0.33333333333333331" },
	};
	struct jsonbuf b = { 0 };

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		cJSON *n = cJSON_CreateNumber(cases[i].v);

		ck_assert_int_eq(jsonbuf_print(&b, n, NULL), 0);
		ck_assert_str_eq(b.data, cases[i].text);
		cJSON_Delete(n);
	}
	{
		cJSON *o = cJSON_Parse("{\"a\":\"x\\\"y\\n\\u0001z\","
				       "\"skip\":1,\"b\":[1,2.5,\"plain\"]}");

		ck_assert_int_eq(jsonbuf_print(&b, o, "skip"), 0);
		ck_assert_str_eq(b.data, "{\"a\":\"x\\\"y\\n\\u0001z\","
					 "\"b\":[1,2.5,\"plain\"]}");
		cJSON_Delete(o);
	}
	jsonbuf_fini(&b);
	jsonbuf_fini(NULL);
}
END_TEST

/* jsonbuf_dup gives what cJSON_PrintUnformatted gives, for a tree with
 * every kind of value. */
START_TEST(test_dup_matches_cjson)
{
	const char *text = "{\"s\":\"a\\tb\\u00e9\",\"n\":[0,-1,2.5,1e300,"
			   "4294967295],\"t\":true,\"f\":false,\"z\":null,"
			   "\"o\":{\"e\":{},\"a\":[]}}";
	cJSON *o = cJSON_Parse(text);
	char *mine, *theirs;

	ck_assert_ptr_nonnull(o);
	mine = jsonbuf_dup(o);
	theirs = cJSON_PrintUnformatted(o);
	ck_assert_ptr_nonnull(mine);
	ck_assert_str_eq(mine, theirs);
	free(mine);
	free(theirs);
	cJSON_Delete(o);
	ck_assert_ptr_null(jsonbuf_dup(NULL));
}
END_TEST

/* jsonbuf_pretty lays a tree out as cJSON_Print does (nested objects and
 * arrays, empty ones); and where cJSON drops the last digits of a number
 * that does not read back as itself, jsonbuf keeps them. */
START_TEST(test_pretty_matches_cjson_and_is_exact)
{
	const char *text = "{\"a\":[{\"b\":1,\"x\":[1,2.5,{\"y\":{}}]}],"
			   "\"c\":{},\"d\":[],\"e\":{\"f\":[[1],[]],"
			   "\"s\":\"t\\n\"},\"n\":null}";
	cJSON *o = cJSON_Parse(text), *n;
	char *mine, *theirs;

	ck_assert_ptr_nonnull(o);
	mine = jsonbuf_pretty(o);
	theirs = cJSON_Print(o);
	ck_assert_ptr_nonnull(mine);
	ck_assert_str_eq(mine, theirs);
	free(mine);
	free(theirs);
	cJSON_Delete(o);

	n = cJSON_CreateNumber(0.0015769999999999998);
	mine = jsonbuf_dup(n);
	ck_assert_str_eq(mine, "0.0015769999999999998");
	ck_assert(strtod(mine, NULL) == 0.0015769999999999998);
	free(mine);
	cJSON_Delete(n);
}
END_TEST

/* Trees unpacked into an arena read as the heap's do: the same tree for
 * every shape (keys from the dictionary and spelled out, long strings
 * past a chunk, many values over many chunks), damage refused without
 * a trace in the array, and a detached item simply left out. */
START_TEST(test_arena_unpack_equals_heap)
{
	static const char *const keys[] = { "job", "ds", "src" };
	static const char *const trees[] = {
		"{\"job\":7,\"ds\":[{\"src\":\"/d\",\"other key\":-2.5}],"
		"\"x\":[true,false,null,\"\",-9007199254740991,1e300,"
		"2147483648,-2147483649]}",
		"[]",
		"{}",
		"0",
		"\"s\"",
		"[[[[1]]]]",
	};
	struct jsonbuf_dict d;
	struct jsonbuf b = { 0 };
	cJSON *root = jsonbuf_arena_array(), *big, *u, *a;
	char *text = malloc(100001);
	size_t n = 0;

	ck_assert_ptr_nonnull(root);
	ck_assert_int_eq(jsonbuf_dict_init(&d, keys, 3), 0);
	/* many times over: 60,000 nodes, a few MiB of chunks */
	for (int round = 0; round < 1000; round++)
		for (size_t i = 0; i < sizeof(trees) / sizeof(trees[0]); i++) {
			cJSON *t = cJSON_Parse(trees[i]);

			b.len = 0;
			ck_assert_int_eq(jsonbuf_pack(&b, t, NULL, &d), 0);
			u = jsonbuf_unpack(b.data, b.len, &d);
			a = jsonbuf_arena_unpack(root, b.data, b.len, &d);
			ck_assert_msg(a && cJSON_Compare(a, t, 1) &&
					  cJSON_Compare(a, u, 1) &&
					  a->valueint == u->valueint,
				      "tree %zu", i);
			n++;
			/* a cut value: refused, not appended */
			if (b.len > 1)
				ck_assert_ptr_null(
				    jsonbuf_arena_unpack(root, b.data,
							 b.len - 1, &d));
			cJSON_Delete(t);
			cJSON_Delete(u);
		}
	ck_assert_int_eq(cJSON_GetArraySize(root), (int)n);
	/* a string longer than a chunk */
	memset(text, 'y', 100000);
	text[100000] = '\0';
	big = cJSON_CreateString(text);
	b.len = 0;
	ck_assert_int_eq(jsonbuf_pack(&b, big, NULL, &d), 0);
	a = jsonbuf_arena_unpack(root, b.data, b.len, &d);
	ck_assert(a && cJSON_IsString(a) && !strcmp(a->valuestring, text));
	/* and the arena goes on filling after it */
	a = jsonbuf_arena_unpack(root, b.data, b.len, &d);
	ck_assert(a && !strcmp(a->valuestring, text));
	ck_assert_int_eq(cJSON_GetArraySize(root), (int)n + 2);
	cJSON_DetachItemViaPointer(root, a);
	ck_assert_int_eq(cJSON_GetArraySize(root), (int)n + 1);
	ck_assert(cJSON_IsString(cJSON_GetArrayItem(root, (int)n)));
	/* no data: refused (EINVAL), before any arithmetic on it */
	errno = 0;
	ck_assert_ptr_null(jsonbuf_unpack(NULL, 5, &d));
	ck_assert_int_eq(errno, EINVAL);
	errno = 0;
	ck_assert_ptr_null(jsonbuf_arena_unpack(root, NULL, 5, &d));
	ck_assert_int_eq(errno, EINVAL);
	cJSON_Delete(big);
	free(text);
	jsonbuf_fini(&b);
	jsonbuf_arena_free(root);
	jsonbuf_arena_free(NULL);
}
END_TEST

static Suite *jsonbuf_suite(void)
{
	Suite *s = suite_create("jsonbuf");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, test_jsonbuf_numbers);
	tcase_add_test(tc, test_dup_matches_cjson);
	tcase_add_test(tc, test_pretty_matches_cjson_and_is_exact);
	tcase_add_test(tc, test_arena_unpack_equals_heap);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return check_run(jsonbuf_suite());
}
