/* check_jobname.c - unit tests for common/config/jobname: the job name sbatch
 * would give, from #SBATCH lines and from sbatch's command line. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <check.h>

#include "common/config/jobname.h"
#include "tests/unit/check_run.h"

START_TEST(test_script_text)
{
	static const struct {
		const char *text, *want; /* want NULL: no name */
	} cases[] = {
		{ "#!/bin/bash\n#SBATCH --job-name=train\necho\n", "train" },
		{ "#!/bin/bash\n#SBATCH --job-name train\n", "train" },
		{ "#!/bin/bash\n#SBATCH -J train\n", "train" },
		{ "#!/bin/bash\n#SBATCH -Jtrain\n", "train" },
		{ "#!/bin/bash\n  #SBATCH   -J   spaced  \n", "spaced" },
		{ "#!/bin/bash\n#SBATCH --job-name=\"two words\"\n",
		  "two words" },
		{ "#!/bin/bash\n#SBATCH -J a\n#SBATCH -J b\n", "b" },
		{ "#!/bin/bash\n\n# comment\n#SBATCH -J late\n", "late" },
		/* sbatch stops at the first command */
		{ "#!/bin/bash\necho hi\n#SBATCH -J ignored\n", NULL },
		{ "#!/bin/bash\n#SBATCH --job-namex=no\n", NULL },
		{ "#!/bin/bash\n#SBATCH -N 2\n", NULL },
		{ "#!/bin/bash\n#SBATCH --job-name=\n", NULL },
		{ "", NULL },
	};
	char buf[JOBNAME_MAX];

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		bool found;

		strcpy(buf, "unchanged");
		found = jobname_from_script_text(cases[i].text, buf,
						 sizeof(buf));
		ck_assert_msg(found == (cases[i].want != NULL), "case %zu", i);
		ck_assert_str_eq(buf,
				 cases[i].want ? cases[i].want : "unchanged");
	}
	ck_assert(!jobname_from_script_text(NULL, buf, sizeof(buf)));
	/* overlong names are cut, never overflow */
	{
		char text[1200], small[8];

		memset(text, 'x', sizeof(text));
		memcpy(text, "#SBATCH -J ", 11);
		text[sizeof(text) - 1] = '\0';
		ck_assert(jobname_from_script_text(text, small, sizeof(small)));
		ck_assert_uint_eq(strlen(small), 7);
	}
}
END_TEST

START_TEST(test_script_file_and_argv)
{
	char dir[] = "/tmp/check_jobname.XXXXXX", path[128], other[128];
	char name[JOBNAME_MAX], script[4096];
	bool wrap;
	FILE *f;

	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/job.sh", dir);
	snprintf(other, sizeof(other), "%s/out.txt", dir);
	f = fopen(path, "w");
	fputs("#!/bin/bash\n#SBATCH -J from-script\ntrue\n", f);
	fclose(f);
	f = fopen(other, "w");
	fputs("not a script\n", f);
	fclose(f);

	ck_assert_int_eq(jobname_from_script(path, name, sizeof(name)), 0);
	ck_assert_str_eq(name, "from-script");
	ck_assert_int_eq(jobname_from_script(other, name, sizeof(name)), 0);
	ck_assert_str_eq(name, "out.txt"); /* no #SBATCH: the file name */
	ck_assert_int_eq(jobname_from_script("/nonexistent/x.sh", name,
					     sizeof(name)),
			 -1);
	ck_assert_str_eq(name, "x.sh");

	{
		char *argv[] = { "sbatch",
				 "-o",
				 other,
				 "-J",
				 "cli",
				 path,
				 "--job-name=arg-of-script" };
		jobname_from_argv(7, argv, name, sizeof(name), script,
				  sizeof(script), &wrap);
		ck_assert_str_eq(name, "cli");
		ck_assert_str_eq(script, path); /* out.txt is no script */
		ck_assert(!wrap);
	}
	{
		char *argv[] = { "sbatch", "--job-name=eq", "--wrap", "true" };
		jobname_from_argv(4, argv, name, sizeof(name), script,
				  sizeof(script), &wrap);
		ck_assert_str_eq(name, "eq");
		ck_assert_str_eq(script, "");
		ck_assert(wrap);
	}
	{
		char *argv[] = { "sbatch", "-Jglued", "--job-name" };
		jobname_from_argv(3, argv, name, sizeof(name), script,
				  sizeof(script), &wrap);
		ck_assert_str_eq(name, "glued"); /* dangling option ignored */
	}
	unlink(path);
	unlink(other);
	rmdir(dir);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("jobname");
	TCase *tc = tcase_create("jobname");

	tcase_add_test(tc, test_script_text);
	tcase_add_test(tc, test_script_file_and_argv);
	suite_add_tcase(s, tc);
	return check_run(s);
}
