/* check_partchunks.c - a part's chunk names are flat, distinct and the
 * same on every node; extents cover a file exactly. */
#include <string.h>

#include <check.h>

#include "common/fs/partchunks.h"
#include "common/sched/spread.h"
#include "tests/unit/check_run.h"

START_TEST(test_name)
{
	char a[PARTCHUNK_NAME_MAX], b[PARTCHUNK_NAME_MAX];

	partchunk_name("x/big.bin", 9, 0, a);
	ck_assert_uint_eq(strlen(a), 34);
	ck_assert_ptr_null(strchr(a, '/'));
	partchunk_name("x/big.bin", 9, 0, b);
	ck_assert_str_eq(a, b);
	partchunk_name("x/big.bin", 9, 1, b);
	ck_assert_str_ne(a, b);
	/* the length bounds the path */
	partchunk_name("x/big.binXYZ", 9, 0, b);
	ck_assert_str_eq(a, b);
	partchunk_name("x/big.bio", 9, 0, b);
	ck_assert_str_ne(a, b);
	partchunk_name("x", 1, UINT64_MAX, b);
	ck_assert_uint_eq(strlen(b), 32 + 1 + 20);
}
END_TEST

START_TEST(test_extent)
{
	const uint64_t mib = (uint64_t)1 << 20, size = 5 * mib + 123;
	uint64_t off, len, sum = 0;

	for (uint64_t i = 0; i < spread_chunk_count(size); i++) {
		partchunk_extent(size, i, &off, &len);
		ck_assert_uint_eq(off, sum);
		ck_assert(len > 0);
		sum += len;
	}
	ck_assert_uint_eq(sum, size);
	partchunk_extent(size, 5, &off, &len);
	ck_assert_uint_eq(len, 123);
	partchunk_extent(size, 6, &off, &len);
	ck_assert_uint_eq(len, 0);
	ck_assert_uint_eq(off, size);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("partchunks");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, test_name);
	tcase_add_test(tc, test_extent);
	suite_add_tcase(s, tc);
	return check_run(s);
}
