/* check_joblayout.c - per-job paths and the task environment. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <check.h>

#include "common/config/joblayout.h"
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

static const char *lookup(const struct joblayout_env *env, const char *name)
{
	for (size_t i = 0; i < env->n; i++)
		if (strcmp(env->vars[i].name, name) == 0)
			return env->vars[i].value;
	return NULL;
}

START_TEST(test_staged_env)
{
	struct profile *p = profile(
	    "{\"datasets\":[{\"name\":\"imagenet\",\"path\":\"/pfs/in\"},"
	    "{\"name\":\"val-set\",\"path\":\"/pfs/val\",\"tier\":\"ram\"}],"
	    "\"outputs\":[{\"name\":\"ckpt\",\"path\":\"/pfs/run/ckpt\"}]}");
	struct joblayout_env env;

	ck_assert_int_eq(joblayout_env(&conf, p, 42, false, &env), 0);
	ck_assert_str_eq(lookup(&env, "IOSTAGE_DATA"),
			 "/local/nvme/jobs/42/data/imagenet");
	ck_assert_str_eq(lookup(&env, "IOSTAGE_DATA_IMAGENET"),
			 "/local/nvme/jobs/42/data/imagenet");
	ck_assert_str_eq(lookup(&env, "IOSTAGE_DATA_VAL_SET"),
			 "/dev/shm/iostage/jobs/42/data/val-set");
	ck_assert_str_eq(lookup(&env, "IOSTAGE_LOCAL"),
			 "/local/nvme/jobs/42/local");
	ck_assert_str_eq(lookup(&env, "IOSTAGE_JOB_DIR"),
			 "/local/nvme/jobs/42");
	/* Outputs are written on the tier and drained to the PFS. */
	ck_assert_str_eq(lookup(&env, "IOSTAGE_OUTPUT"),
			 "/local/nvme/jobs/42/out/ckpt");
	ck_assert_str_eq(lookup(&env, "IOSTAGE_OUTPUT_CKPT"),
			 "/local/nvme/jobs/42/out/ckpt");
	ck_assert_ptr_null(lookup(&env, "IOSTAGE_FALLBACK"));
	profile_destroy(p);
}
END_TEST

START_TEST(test_outputs_on_their_tier)
{
	struct profile *p = profile(
	    "{\"outputs\":[{\"name\":\"ckpt\",\"path\":\"/pfs/run/ckpt\"},"
	    "{\"name\":\"fast-logs\",\"path\":\"/pfs/run/logs\","
	    "\"tier\":\"ram\"}]}");
	struct joblayout_env env;

	ck_assert_int_eq(joblayout_env(&conf, p, 9, false, &env), 0);
	/* The first output is IOSTAGE_OUTPUT. */
	ck_assert_str_eq(lookup(&env, "IOSTAGE_OUTPUT"),
			 "/local/nvme/jobs/9/out/ckpt");
	ck_assert_str_eq(lookup(&env, "IOSTAGE_OUTPUT_FAST_LOGS"),
			 "/dev/shm/iostage/jobs/9/out/fast-logs");
	ck_assert_ptr_null(lookup(&env, "IOSTAGE_DATA"));

	/* Fallback: every output variable names the PFS directory. */
	ck_assert_int_eq(joblayout_env(&conf, p, 9, true, &env), 0);
	ck_assert_str_eq(lookup(&env, "IOSTAGE_OUTPUT"), "/pfs/run/ckpt");
	ck_assert_str_eq(lookup(&env, "IOSTAGE_OUTPUT_CKPT"), "/pfs/run/ckpt");
	ck_assert_str_eq(lookup(&env, "IOSTAGE_OUTPUT_FAST_LOGS"),
			 "/pfs/run/logs");
	ck_assert_str_eq(lookup(&env, "IOSTAGE_FALLBACK"), "1");
	profile_destroy(p);
}
END_TEST

START_TEST(test_output_path_errors_leave_buffer_untouched)
{
	struct profile *p = profile(
	    "{\"outputs\":[{\"name\":\"ckpt\",\"path\":\"/pfs/run/ckpt\"}]}");
	struct profile_output bad = p->outputs[0];
	char small[24] = "unchanged", buf[256];

	ck_assert_int_eq(joblayout_output_path(&conf, &p->outputs[0],
					       4294967295u, buf, sizeof(buf)),
			 0);
	ck_assert_str_eq(buf, "/local/nvme/jobs/4294967295/out/ckpt");

	errno = 0;
	ck_assert_int_eq(joblayout_output_path(&conf, &p->outputs[0], 1, small,
					       sizeof(small)),
			 -1);
	ck_assert_int_eq(errno, ENAMETOOLONG);
	ck_assert_str_eq(small, "unchanged");

	/* A tier the configuration no longer has. */
	bad.tier = "gone";
	errno = 0;
	ck_assert_int_eq(joblayout_output_path(&conf, &bad, 1, small,
					       sizeof(small)),
			 -1);
	ck_assert_int_eq(errno, ENOENT);
	ck_assert_str_eq(small, "unchanged");
	bad.tier = NULL;
	ck_assert_int_eq(joblayout_output_path(&conf, &bad, 1, small,
					       sizeof(small)),
			 -1);
	ck_assert_str_eq(small, "unchanged");
	profile_destroy(p);
}
END_TEST

START_TEST(test_fallback_env_points_at_pfs)
{
	struct profile *p = profile(
	    "{\"datasets\":[{\"name\":\"imagenet\",\"path\":\"/pfs/in\"}]}");
	struct joblayout_env env;

	ck_assert_int_eq(joblayout_env(&conf, p, 7, true, &env), 0);
	ck_assert_str_eq(lookup(&env, "IOSTAGE_DATA"), "/pfs/in");
	ck_assert_str_eq(lookup(&env, "IOSTAGE_DATA_IMAGENET"), "/pfs/in");
	ck_assert_str_eq(lookup(&env, "IOSTAGE_FALLBACK"), "1");
	profile_destroy(p);
}

END_TEST

START_TEST(test_home_tier_follows_first_dataset)
{
	struct profile *p = profile(
	    "{\"datasets\":[{\"name\":\"a\",\"path\":\"/pfs/a\","
	    "\"tier\":\"ram\"}]}");
	struct profile *empty = profile("{}");

	ck_assert_str_eq(joblayout_home_tier(&conf, p)->name, "ram");
	ck_assert_str_eq(joblayout_home_tier(&conf, empty)->name, "nvme");
	profile_destroy(p);
	profile_destroy(empty);
}
END_TEST

/* On a Shared=yes tier every node of a job has its own directory. */
START_TEST(test_shared_tier_dir_per_node)
{
	struct conf c;
	char err[CONF_ERR_MAX], name[JOBLAYOUT_JOB_NAME_MAX], tiny[4] = "abc";
	struct profile *p;
	struct joblayout_env env;

	ck_assert_msg(conf_parse("Tier=nvme Path=/local/nvme\n"
				 "Tier=bb Path=/bb/iostage Shared=yes\n"
				 "DefaultTier=nvme\nNodeName=n7\n",
				 "test.conf", &c, err, sizeof(err)) == 0,
		      "%s", err);
	ck_assert_int_eq(joblayout_job_name(&c, &c.tiers[0], 42, name,
					    sizeof(name)),
			 0);
	ck_assert_str_eq(name, "42");
	ck_assert_int_eq(joblayout_job_name(&c, &c.tiers[1], 42, name,
					    sizeof(name)),
			 0);
	ck_assert_str_eq(name, "42.n7");
	errno = 0;
	ck_assert_int_eq(joblayout_job_name(&c, &c.tiers[1], 42, tiny,
					    sizeof(tiny)),
			 -1);
	ck_assert_int_eq(errno, ENAMETOOLONG);
	ck_assert_str_eq(tiny, "abc");

	p = profile_parse_json(
	    "{\"datasets\":[{\"name\":\"imagenet\",\"path\":\"/pfs/in\","
	    "\"tier\":\"bb\"},{\"name\":\"val\",\"path\":\"/pfs/val\"}],"
	    "\"outputs\":[{\"name\":\"ckpt\",\"path\":\"/pfs/ckpt\","
	    "\"tier\":\"bb\"}]}",
	    "test", err, sizeof(err));
	ck_assert_msg(p != NULL, "%s", err);
	ck_assert_msg(profile_normalize(p, &c, err, sizeof(err)) == 0, "%s",
		      err);
	ck_assert_int_eq(joblayout_env(&c, p, 42, false, &env), 0);
	ck_assert_str_eq(lookup(&env, "IOSTAGE_DATA"),
			 "/bb/iostage/jobs/42.n7/data/imagenet");
	ck_assert_str_eq(lookup(&env, "IOSTAGE_DATA_VAL"),
			 "/local/nvme/jobs/42/data/val");
	ck_assert_str_eq(lookup(&env, "IOSTAGE_JOB_DIR"),
			 "/bb/iostage/jobs/42.n7");
	ck_assert_str_eq(lookup(&env, "IOSTAGE_LOCAL"),
			 "/bb/iostage/jobs/42.n7/local");
	ck_assert_str_eq(lookup(&env, "IOSTAGE_OUTPUT"),
			 "/bb/iostage/jobs/42.n7/out/ckpt");
	profile_destroy(p);
}
END_TEST

START_TEST(test_too_long_is_refused_and_output_untouched)
{
	struct conf_tier tier = { .name = "x" };
	char small[16] = "unchanged";

	memset(tier.path, 'a', sizeof(tier.path) - 1);
	tier.path[0] = '/';
	errno = 0;
	ck_assert_int_eq(joblayout_job_dir(&conf, &tier, 1, small,
					   sizeof(small)),
			 -1);
	ck_assert_int_eq(errno, ENAMETOOLONG);
	ck_assert_str_eq(small, "unchanged");
}
END_TEST

int main(void)
{
	Suite *s = suite_create("joblayout");
	TCase *tc = tcase_create("core");

	tcase_add_checked_fixture(tc, setup, NULL);
	tcase_add_test(tc, test_staged_env);
	tcase_add_test(tc, test_fallback_env_points_at_pfs);
	tcase_add_test(tc, test_outputs_on_their_tier);
	tcase_add_test(tc, test_output_path_errors_leave_buffer_untouched);
	tcase_add_test(tc, test_home_tier_follows_first_dataset);
	tcase_add_test(tc, test_too_long_is_refused_and_output_untouched);
	tcase_add_test(tc, test_shared_tier_dir_per_node);
	suite_add_tcase(s, tc);
	return check_run(s);
}
