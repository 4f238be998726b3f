/* check_slurmcompat.c - the libslurm calls that differ between releases,
 * where they can run without a slurmctld: a host list walked in Slurm's
 * order, stopped by the callback, refused when malformed. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <check.h>

#include "common/slurm/slurmcompat.h"
#include "tests/unit/check_run.h"

struct seen {
	char text[256];
	int n, stop_at;
};

static int collect(const char *h, void *arg)
{
	struct seen *s = arg;
	size_t l = strlen(s->text);

	snprintf(s->text + l, sizeof(s->text) - l, "%s%s", l ? "," : "", h);
	return ++s->n == s->stop_at ? 7 : 0;
}

static const struct {
	const char *in, *out; /* out NULL: refused with EINVAL */
	int stop_at, rc;
} cases[] = {
	{ "n1", "n1", 0, 0 },
	{ "n[1-3]", "n1,n2,n3", 0, 0 },
	{ "n[3,1],gpu[01-02]", "n3,n1,gpu01,gpu02", 0, 0 },
	{ "n[1-5]", "n1,n2", 2, 7 }, /* the callback stops the walk */
	{ "n[5-1]", NULL, 0, -1 },   /* a backward range */
	{ "n[a-b]", NULL, 0, -1 },
};

START_TEST(test_hostlist_each)
{
	struct seen s = { "", 0, cases[_i].stop_at };
	int rc;

	errno = 0;
	rc = slurmcompat_hostlist_each(cases[_i].in, collect, &s);
	ck_assert_int_eq(rc, cases[_i].rc);
	if (cases[_i].out)
		ck_assert_str_eq(s.text, cases[_i].out);
	else
		ck_assert_int_eq(errno, EINVAL);
}
END_TEST

START_TEST(test_hostlist_null)
{
	struct seen s = { "", 0, 0 };

	ck_assert_int_eq(slurmcompat_hostlist_each(NULL, collect, &s), -1);
	ck_assert_int_eq(errno, EINVAL);
	ck_assert_int_eq(slurmcompat_hostlist_each("n1", NULL, NULL), -1);
	ck_assert_int_eq(s.n, 0);
}
END_TEST

START_TEST(test_free_null)
{
	slurmcompat_free_jobs(NULL); /* a no-op, as every destructor */
	ck_assert_ptr_nonnull(slurmcompat_last_error());
}
END_TEST

int main(void)
{
	Suite *s = suite_create("slurmcompat");
	TCase *tc = tcase_create("core");

	tcase_add_loop_test(tc, test_hostlist_each, 0,
			    sizeof(cases) / sizeof(cases[0]));
	tcase_add_test(tc, test_hostlist_null);
	tcase_add_test(tc, test_free_null);
	suite_add_tcase(s, tc);
	return check_run(s);
}
