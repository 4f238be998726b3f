/* check_dsfeature.c - dataset features on Slurm nodes: the name is the
 * "ios_" form and the same for the same entry, site features are never
 * touched, set comparison ignores order and duplicates, hostile strings
 * (empty tokens, look-alikes, overlong) are handled. */
#include <stdlib.h>
#include <string.h>

#include <check.h>

#include "common/sched/cachekey.h"
#include "common/sched/dsfeature.h"
#include "tests/unit/check_run.h"

START_TEST(test_name)
{
	char a[DSFEATURE_LEN + 1], b[DSFEATURE_LEN + 1], c[DSFEATURE_LEN + 1];
	char big[1000];

	dsfeature_name("0123456789abcdef0123456789abcdef", "nvme", a);
	dsfeature_name("0123456789abcdef0123456789abcdef", "nvme", b);
	dsfeature_name("0123456789abcdef0123456789abcdef", "ram", c);
	ck_assert_str_eq(a, b);
	ck_assert_str_ne(a, c);
	ck_assert_uint_eq(strlen(a), DSFEATURE_LEN);
	ck_assert(dsfeature_is_ours(a, strlen(a)));
	dsfeature_name(NULL, NULL, b);
	ck_assert(dsfeature_is_ours(b, strlen(b)));
	memset(big, 'x', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	dsfeature_name(big, big, c);
	ck_assert(dsfeature_is_ours(c, strlen(c)));
}
END_TEST

START_TEST(test_is_ours)
{
	ck_assert(dsfeature_is_ours("ios_0a1b2c3d", 12));
	ck_assert(!dsfeature_is_ours("ios_0A1B2C3D", 12)); /* upper case */
	ck_assert(!dsfeature_is_ours("ios_0a1b2c3", 11));
	ck_assert(!dsfeature_is_ours("ios_0a1b2c3dd", 13));
	ck_assert(!dsfeature_is_ours("iox_0a1b2c3d", 12));
	ck_assert(!dsfeature_is_ours("ios_0a1b2c3g", 12));
	ck_assert(!dsfeature_is_ours("gpu", 3));
	ck_assert(!dsfeature_is_ours(NULL, 12));
	ck_assert(!dsfeature_is_ours("", 0));
}
END_TEST

START_TEST(test_same)
{
	const char *ours[] = { "ios_00000001", "ios_00000002" };
	const char *dup[] = { "ios_00000002", "ios_00000001", "ios_00000002" };

	ck_assert(dsfeature_same("gpu,ios_00000001,ios_00000002", ours, 2));
	ck_assert(dsfeature_same("ios_00000002,gpu,ios_00000001", dup, 3));
	ck_assert(!dsfeature_same("gpu,ios_00000001", ours, 2));
	ck_assert(
	    !dsfeature_same("ios_00000001,ios_00000002,ios_00000003", ours, 2));
	ck_assert(dsfeature_same("gpu", NULL, 0));
	ck_assert(dsfeature_same(NULL, NULL, 0));
	ck_assert(dsfeature_same("", NULL, 0));
	ck_assert(!dsfeature_same(NULL, ours, 1));
	ck_assert(!dsfeature_same("ios_00000009", NULL, 0));
	/* a site feature that merely looks like ours is the site's */
	ck_assert(dsfeature_same("ios_big,,gpu,", NULL, 0));
}
END_TEST

START_TEST(test_merge)
{
	const char *ours[] = { "ios_00000001", "ios_00000002", "ios_00000001",
			       "not-ours", NULL };
	char *m;

	m = dsfeature_merge("gpu,ios_0000000a,bigmem", ours, 5);
	ck_assert_str_eq(m, "gpu,bigmem,ios_00000001,ios_00000002");
	ck_assert(dsfeature_same(m, ours, 2));
	free(m);
	m = dsfeature_merge("ios_0000000a", NULL, 0);
	ck_assert_str_eq(m, "");
	free(m);
	m = dsfeature_merge(NULL, ours, 1);
	ck_assert_str_eq(m, "ios_00000001");
	free(m);
	m = dsfeature_merge(",,gpu,,", ours, 0);
	ck_assert_str_eq(m, "gpu");
	free(m);
}
END_TEST

START_TEST(test_cachekey)
{
	char a[CACHEKEY_LEN + 1], b[CACHEKEY_LEN + 1], p[CACHEKEY_LEN + 1];

	cachekey_user(1001, "/pfs/d", a);
	cachekey_user(1002, "/pfs/d", b);
	cachekey_public("/pfs/d", p);
	ck_assert_uint_eq(strlen(a), CACHEKEY_LEN);
	ck_assert_str_ne(a, b);
	ck_assert_str_ne(a, p);
	cachekey_user(1001, "/pfs/d", b);
	ck_assert_str_eq(a, b);
	cachekey_public(NULL, b);
	ck_assert_uint_eq(strlen(b), CACHEKEY_LEN);
	/* A part's key: its own, the same for the same entry. */
	cachekey_part(a, b);
	ck_assert_uint_eq(strlen(b), CACHEKEY_LEN);
	ck_assert_str_ne(a, b);
	cachekey_part(a, p);
	ck_assert_str_eq(b, p);
	cachekey_part(b, p);
	ck_assert_str_ne(b, p);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("dsfeature");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, test_name);
	tcase_add_test(tc, test_is_ours);
	tcase_add_test(tc, test_same);
	tcase_add_test(tc, test_merge);
	tcase_add_test(tc, test_cachekey);
	suite_add_tcase(s, tc);
	return check_run(s);
}
