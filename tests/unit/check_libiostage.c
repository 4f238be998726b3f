/* check_libiostage.c - libiostage.so's paths by dataset name, and its
 * promise to survive fork() in a threaded process (a DataLoader).
 *
 * Linked against the built libiostage.so itself (the Makefile), so what is
 * tested is what applications and the Python module load. */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <check.h>

#include "shim/iostage.h"
#include "tests/unit/check_run.h"

static void job_env(void)
{
	setenv("SLURM_JOB_ID", "812", 1);
	setenv("IOSTAGE_DATA", "/t/jobs/812/data/imagenet", 1);
	setenv("IOSTAGE_DATA_IMAGENET", "/t/jobs/812/data/imagenet", 1);
	setenv("IOSTAGE_DATA_VAL_SET", "/t/jobs/812/data/val-set", 1);
	setenv("IOSTAGE_OUTPUT", "/t/jobs/812/out/ckpt", 1);
	setenv("IOSTAGE_OUTPUT_CKPT", "/t/jobs/812/out/ckpt", 1);
}

START_TEST(test_data_path_follows_the_plugins_name_rule)
{
	char buf[256];

	job_env();
	ck_assert_int_eq(iostage_data_path(NULL, buf, sizeof(buf)), 0);
	ck_assert_str_eq(buf, "/t/jobs/812/data/imagenet");
	ck_assert_int_eq(iostage_data_path("", buf, sizeof(buf)), 0);
	ck_assert_str_eq(buf, "/t/jobs/812/data/imagenet");
	/* Upper-cased, '-' as '_': "val-set" and "Val_Set" are one name. */
	ck_assert_int_eq(iostage_data_path("val-set", buf, sizeof(buf)), 0);
	ck_assert_str_eq(buf, "/t/jobs/812/data/val-set");
	ck_assert_int_eq(iostage_data_path("Val_Set", buf, sizeof(buf)), 0);
	ck_assert_str_eq(buf, "/t/jobs/812/data/val-set");
	ck_assert_int_eq(iostage_output_path("ckpt", buf, sizeof(buf)), 0);
	ck_assert_str_eq(buf, "/t/jobs/812/out/ckpt");
	ck_assert_int_eq(iostage_output_path(NULL, buf, sizeof(buf)), 0);
	ck_assert_str_eq(buf, "/t/jobs/812/out/ckpt");
}
END_TEST

START_TEST(test_data_path_refuses_what_is_not_there)
{
	char buf[256] = "untouched", tiny[8];

	job_env();
	errno = 0;
	ck_assert_int_eq(iostage_data_path("missing", buf, sizeof(buf)), -1);
	ck_assert_int_eq(errno, ENOENT);
	ck_assert_str_eq(buf, "untouched");
	/* Not names a profile allows: never looked up. */
	ck_assert_int_eq(iostage_data_path("a.b", buf, sizeof(buf)), -1);
	ck_assert_int_eq(errno, EINVAL);
	ck_assert_int_eq(iostage_data_path("../x", buf, sizeof(buf)), -1);
	ck_assert_int_eq(errno, EINVAL);
	ck_assert_int_eq(iostage_data_path("IMAGENET=1", buf, sizeof(buf)), -1);
	ck_assert_int_eq(errno, EINVAL);
	ck_assert_int_eq(iostage_data_path("a123456789012345678901234567890123",
					   buf, sizeof(buf)),
			 -1);
	ck_assert_int_eq(errno, EINVAL);
	ck_assert_int_eq(iostage_data_path("imagenet", tiny, sizeof(tiny)), -1);
	ck_assert_int_eq(errno, ENAMETOOLONG);
	ck_assert_int_eq(iostage_data_path("imagenet", NULL, 0), -1);
	ck_assert_int_eq(errno, EINVAL);
	unsetenv("IOSTAGE_OUTPUT");
	ck_assert_int_eq(iostage_output_path(NULL, buf, sizeof(buf)), -1);
	ck_assert_int_eq(errno, ENOENT);
}
END_TEST

static atomic_bool stop_spinning;

/* Spends nearly all its time inside libiostage's identity lock. */
static void *spin(void *arg)
{
	struct iostage_identity id;

	(void)arg;
	while (!atomic_load(&stop_spinning))
		iostage_identity(&id);
	return NULL;
}

START_TEST(test_fork_while_threads_hold_the_lock)
{
	enum { SPINNERS = 2, FORKS = 300 };
	pthread_t t[SPINNERS];
	int hung = 0;

	job_env();
	atomic_store(&stop_spinning, false);
	for (int i = 0; i < SPINNERS; i++)
		ck_assert_int_eq(pthread_create(&t[i], NULL, spin, NULL), 0);
	for (int i = 0; i < FORKS && !hung; i++) {
		pid_t pid = fork();
		int status;

		ck_assert_int_ge(pid, 0);
		if (pid == 0) {
			struct iostage_identity id;

			/* A lock inherited held never comes free: SIGALRM. */
			alarm(10);
			_exit(iostage_identity(&id) == 0 && id.job == 812 ? 0
									  : 1);
		}
		ck_assert_int_eq(waitpid(pid, &status, 0), pid);
		if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
			hung = i + 1;
	}
	atomic_store(&stop_spinning, true);
	for (int i = 0; i < SPINNERS; i++)
		pthread_join(t[i], NULL);
	ck_assert_msg(!hung, "child %d of %d hung or failed", hung, FORKS);
}
END_TEST

static Suite *libiostage_suite(void)
{
	Suite *s = suite_create("libiostage");
	TCase *tc = tcase_create("core");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_data_path_follows_the_plugins_name_rule);
	tcase_add_test(tc, test_data_path_refuses_what_is_not_there);
	tcase_add_test(tc, test_fork_while_threads_hold_the_lock);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return check_run(libiostage_suite());
}
