/* check_traceenv.c - the environment deep mode puts into a job's tasks. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <check.h>

#include "common/config/traceenv.h"
#include "tests/unit/check_run.h"

static struct conf conf;

static void setup(void)
{
	char err[CONF_ERR_MAX];

	ck_assert_msg(conf_parse("Tier=nvme Path=/local/nvme\n"
				 "Tier=ram Path=/dev/shm/iostage Medium=ram\n"
				 "DefaultTier=nvme\n",
				 "test.conf", &conf, err, sizeof(err)) == 0,
		      "%s", err);
}

static struct profile *profile(const char *json)
{
	char err[CONF_ERR_MAX];
	struct profile *p = profile_parse_json(json, "test", err, sizeof(err));

	ck_assert_msg(p != NULL, "%s", err);
	ck_assert_msg(profile_normalize(p, &conf, err, sizeof(err)) == 0, "%s",
		      err);
	return p;
}

START_TEST(test_classes_staged_and_pfs)
{
	struct profile *p = profile(
	    "{\"datasets\":[{\"name\":\"imagenet\",\"path\":\"/pfs/in\"},"
	    "{\"name\":\"val\",\"path\":\"/pfs/val\",\"tier\":\"ram\"}],"
	    "\"outputs\":[{\"name\":\"ckpt\",\"path\":\"/pfs/run/ckpt\"}],"
	    "\"trace\":true}");
	char buf[TRACEENV_CLASSES_MAX];
	size_t skipped = 99;

	ck_assert_int_eq(traceenv_classes(&conf, p, 42, buf, sizeof(buf),
					  &skipped),
			 0);
	/* IOSTAGE_DATA and IOSTAGE_DATA_IMAGENET name one path: once. */
	ck_assert_str_eq(buf, "dataset=/local/nvme/jobs/42/data/imagenet:"
			      "dataset=/dev/shm/iostage/jobs/42/data/val:"
			      "output=/local/nvme/jobs/42/out/ckpt:"
			      "dataset=/pfs/in:dataset=/pfs/val:"
			      "output=/pfs/run/ckpt");
	ck_assert_uint_eq(skipped, 0);
	profile_destroy(p);
}
END_TEST

/* An observed auto job: nothing staged; the PFS is its dataset class. */
START_TEST(test_classes_observed)
{
	struct profile *p = profile("{\"origin\":\"auto\",\"observe\":true,"
				    "\"trace\":true}");
	char buf[TRACEENV_CLASSES_MAX];
	struct conf site = conf;

	ck_assert_int_eq(traceenv_classes(&conf, p, 42, buf, sizeof(buf), NULL),
			 0);
	ck_assert_str_eq(buf, ""); /* no PfsPath=: nothing to observe */
	snprintf(site.pfs_path, sizeof(site.pfs_path), "/lustre");
	ck_assert_int_eq(traceenv_classes(&site, p, 42, buf, sizeof(buf), NULL),
			 0);
	ck_assert_str_eq(buf, "pfs=/lustre");
	ck_assert(traceenv_wanted(&site, p));
	profile_destroy(p);

	/* Not observed: PfsPath= adds nothing. */
	p = profile("{\"datasets\":[{\"name\":\"d\",\"path\":\"/lustre/d\"}]}");
	ck_assert_int_eq(traceenv_classes(&site, p, 7, buf, sizeof(buf), NULL),
			 0);
	ck_assert_str_eq(buf, "dataset=/local/nvme/jobs/7/data/d:"
			      "dataset=/lustre/d");
	profile_destroy(p);
}
END_TEST

START_TEST(test_classes_skip_colon_paths)
{
	struct profile *p = profile(
	    "{\"datasets\":[{\"name\":\"d\",\"path\":\"/pfs/a:b\"}]}");
	char buf[TRACEENV_CLASSES_MAX];
	size_t skipped = 0;

	ck_assert_int_eq(traceenv_classes(&conf, p, 7, buf, sizeof(buf),
					  &skipped),
			 0);
	ck_assert_str_eq(buf, "dataset=/local/nvme/jobs/7/data/d");
	/* The PFS path, as IOSTAGE_DATA and as IOSTAGE_DATA_D. */
	ck_assert_uint_eq(skipped, 2);
	profile_destroy(p);
}
END_TEST

START_TEST(test_classes_too_small_untouched)
{
	struct profile *p = profile(
	    "{\"datasets\":[{\"name\":\"d\",\"path\":\"/pfs/d\"}]}");
	char buf[16] = "unchanged";

	errno = 0;
	ck_assert_int_eq(traceenv_classes(&conf, p, 7, buf, sizeof(buf), NULL),
			 -1);
	ck_assert_int_eq(errno, ENAMETOOLONG);
	ck_assert_str_eq(buf, "unchanged");
	ck_assert_int_eq(traceenv_classes(NULL, p, 7, buf, sizeof(buf), NULL),
			 -1);
	ck_assert_int_eq(traceenv_classes(&conf, NULL, 7, buf, sizeof(buf),
					  NULL),
			 -1);
	profile_destroy(p);
}
END_TEST

START_TEST(test_wanted)
{
	struct profile *on = profile("{\"trace\":true}");
	struct profile *off = profile("{\"trace\":false}");
	struct conf site = conf;

	ck_assert(traceenv_wanted(&conf, on));
	ck_assert(!traceenv_wanted(&conf, off));
	ck_assert(!traceenv_wanted(&conf, NULL));
	site.trace = true; /* Trace=yes: every iostage job */
	ck_assert(traceenv_wanted(&site, off));
	profile_destroy(on);
	profile_destroy(off);
}
END_TEST

static const struct {
	const char *lib, *old, *want; /* want NULL: refused */
	int err;
} preload_cases[] = {
	{ "/usr/lib/iostage/p.so", NULL, "/usr/lib/iostage/p.so", 0 },
	{ "/usr/lib/iostage/p.so", "", "/usr/lib/iostage/p.so", 0 },
	{ "/usr/lib/iostage/p.so", "/opt/mine.so",
	  "/usr/lib/iostage/p.so:/opt/mine.so", 0 },
	{ "/usr/lib/iostage/p.so", "/opt/a.so /opt/b.so",
	  "/usr/lib/iostage/p.so:/opt/a.so /opt/b.so", 0 },
	/* Already there (an srun inside a traced batch script): as is. */
	{ "/usr/lib/iostage/p.so", "/usr/lib/iostage/p.so:/opt/a.so",
	  "/usr/lib/iostage/p.so:/opt/a.so", 0 },
	{ "/usr/lib/iostage/p.so", "/opt/a.so /usr/lib/iostage/p.so",
	  "/opt/a.so /usr/lib/iostage/p.so", 0 },
	/* A prefix of another entry is not the same library. */
	{ "/usr/lib/iostage/p.so", "/usr/lib/iostage/p.so.1",
	  "/usr/lib/iostage/p.so:/usr/lib/iostage/p.so.1", 0 },
	{ "", "/opt/a.so", NULL, EINVAL },
	{ NULL, NULL, NULL, EINVAL },
	{ "/a:b.so", NULL, NULL, EINVAL },
	{ "/a b.so", NULL, NULL, EINVAL },
};

START_TEST(test_preload_table)
{
	char buf[64] = "unchanged";

	errno = 0;
	if (!preload_cases[_i].want) {
		ck_assert_int_eq(traceenv_preload(preload_cases[_i].lib,
						  preload_cases[_i].old, buf,
						  sizeof(buf)),
				 -1);
		ck_assert_int_eq(errno, preload_cases[_i].err);
		ck_assert_str_eq(buf, "unchanged");
		return;
	}
	ck_assert_int_eq(traceenv_preload(preload_cases[_i].lib,
					  preload_cases[_i].old, buf,
					  sizeof(buf)),
			 0);
	ck_assert_str_eq(buf, preload_cases[_i].want);
}
END_TEST

START_TEST(test_preload_too_long_untouched)
{
	char buf[20] = "unchanged";

	ck_assert_int_eq(traceenv_preload("/usr/lib/p.so", "/opt/long/a.so",
					  buf, sizeof(buf)),
			 -1);
	ck_assert_int_eq(errno, ENAMETOOLONG);
	ck_assert_str_eq(buf, "unchanged");
	ck_assert_int_eq(traceenv_preload("/usr/lib/p.so", NULL, buf, 13), -1);
	ck_assert_str_eq(buf, "unchanged");
	ck_assert_int_eq(traceenv_preload("/usr/lib/p.so", NULL, buf, 14), 0);
	ck_assert_str_eq(buf, "/usr/lib/p.so");
}
END_TEST

static Suite *traceenv_suite(void)
{
	Suite *s = suite_create("traceenv");
	TCase *tc = tcase_create("core");

	tcase_add_checked_fixture(tc, setup, NULL);
	tcase_add_test(tc, test_classes_staged_and_pfs);
	tcase_add_test(tc, test_classes_observed);
	tcase_add_test(tc, test_classes_skip_colon_paths);
	tcase_add_test(tc, test_classes_too_small_untouched);
	tcase_add_test(tc, test_wanted);
	tcase_add_loop_test(tc, test_preload_table, 0,
			    sizeof(preload_cases) / sizeof(preload_cases[0]));
	tcase_add_test(tc, test_preload_too_long_untouched);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return check_run(traceenv_suite());
}
