/* check_nodelist.c - the Prolog's node list: SLURM_JOB_NODELIST expanded
 * with libslurm's hostlist, in Slurm's order, bad lists refused. */
#include <stdlib.h>
#include <string.h>

#include <check.h>

#include "prolog/nodelist.h"
#include "tests/unit/check_run.h"

static const struct {
	const char *in, *out; /* out: the JSON array, NULL: refused */
} cases[] = {
	{ "n1", "[\"n1\"]" },
	{ "n[1-3]", "[\"n1\",\"n2\",\"n3\"]" },
	{ "n[3,1]", "[\"n3\",\"n1\"]" },
	{ "gpu[01-02],cpu7", "[\"gpu01\",\"gpu02\",\"cpu7\"]" },
	{ "n1,n1", "[\"n1\",\"n1\"]" }, /* iostaged refuses the duplicate */
	{ "n[1-5000]", NULL },          /* over NODELIST_MAX */
	{ "n/1", NULL },                /* not a node name */
	{ "n[1-", NULL },
};

START_TEST(test_expand)
{
	char err[256] = "";
	cJSON *arr = nodelist_expand(cases[_i].in, err, sizeof(err));

	if (!cases[_i].out) {
		ck_assert_msg(arr == NULL, "%s accepted", cases[_i].in);
		ck_assert_ptr_nonnull(strstr(err, "SLURM_JOB_NODELIST"));
		return;
	}
	ck_assert_msg(arr != NULL, "%s: %s", cases[_i].in, err);
	{
		char *text = cJSON_PrintUnformatted(arr);

		ck_assert_str_eq(text, cases[_i].out);
		free(text);
	}
	cJSON_Delete(arr);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("nodelist");
	TCase *tc = tcase_create("core");

	tcase_add_loop_test(tc, test_expand, 0,
			    sizeof(cases) / sizeof(cases[0]));
	suite_add_tcase(s, tc);
	return check_run(s);
}
