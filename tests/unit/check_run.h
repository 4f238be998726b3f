/* check_run.h - the end of every unit test's main().
 *
 * Each tests/unit/check_<module>.c builds its own suite (which tests, which
 * fixtures, which timeouts); running it and turning the result into an exit
 * status is the same everywhere, so it is written once here. A header, not
 * a .c, so the Makefile's per-test link rules stay as they are. */
#ifndef IOSTAGE_CHECK_RUN_H
#define IOSTAGE_CHECK_RUN_H

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include <check.h>

/* Add test TF to TC when running as root; otherwise leave it out with one
 * line saying so ("SKIP test_x: needs root"), so that `make unit` passes
 * as any user. For tests that chown to another user, make a mount
 * namespace, write where only root may, or need root's MUNGE credential. */
#define tcase_add_root_test(tc, tf) check_add_root_test((tc), (tf), #tf)

static inline void check_add_root_test(TCase *tc, const TTest *tf,
				       const char *name)
{
	if (geteuid() == 0)
		tcase_add_test(tc, tf);
	else
		printf("SKIP %s: needs root\n", name);
}

/* Run suite s with Check's normal output (its "N%: Checks: ..." line is what
 * tests/unit/run.sh counts); the runner takes s over and frees it. Returns
 * EXIT_SUCCESS if every check passed, else EXIT_FAILURE: main()'s status. */
static inline int check_run(Suite *s)
{
	SRunner *sr = srunner_create(s);
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

#endif /* IOSTAGE_CHECK_RUN_H */
