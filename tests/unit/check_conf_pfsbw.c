/* check_conf_pfsbw.c - the keys of the PFS as a scheduled resource in
 * iostage.conf: StageBandwidth, StageBandwidthFallback (iostaged,
 * iostagectld), PfsLicense, PfsLicensePerJob (iostage pfs-license),
 * PfsPath (what --io-profile=auto observes before it has advice). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <check.h>

#include "common/config/conf.h"
#include "tests/unit/check_run.h"

#define T1 "Tier=nvme Path=/local/nvme\n"
#define MiB (1ULL << 20)

START_TEST(test_defaults)
{
	struct conf c;
	char err[CONF_ERR_MAX];

	conf_set_defaults(&c);
	ck_assert_int_eq(conf_parse(T1, "t.conf", &c, err, sizeof(err)), 0);
	ck_assert_uint_eq(c.stage_bandwidth, 0); /* unbounded */
	ck_assert_uint_eq(c.stage_bandwidth_fallback, 0); /* a share of it */
	ck_assert_str_eq(c.pfs_license, "");
	ck_assert_uint_eq(c.pfs_license_per_job, 1);
	ck_assert_str_eq(c.pfs_path, "");
}
END_TEST

START_TEST(test_pfs_path)
{
	struct conf c;
	char err[CONF_ERR_MAX];

	conf_set_defaults(&c);
	ck_assert_msg(conf_parse(T1 "PfsPath=/lustre//scratch/\n", "t.conf", &c,
				 err, sizeof(err)) == 0,
		      "%s", err);
	ck_assert_str_eq(c.pfs_path, "/lustre/scratch"); /* normalized */
	conf_set_defaults(&c);
	ck_assert_int_eq(conf_parse(T1 "PfsPath=no\n", "t.conf", &c, err,
				    sizeof(err)),
			 0);
	ck_assert_str_eq(c.pfs_path, "");
}
END_TEST

static const struct {
	const char *text;
	uint64_t bw, fallback;
	const char *license;
	unsigned per_job;
} oks[] = {
	{ "StageBandwidth=400M\n", 400 * MiB, 0, "", 1 },
	{ "stagebandwidth=1G/s\n", 1024 * MiB, 0, "", 1 },
	{ "StageBandwidth=1048576\n", MiB, 0, "", 1 },
	{ "StageBandwidth=no\n", 0, 0, "", 1 },
	{ "StageBandwidth=0\n", 0, 0, "", 1 },
	{ "StageBandwidth=2G StageBandwidthFallback=100M/s\n", 2048 * MiB,
	  100 * MiB, "", 1 },
	{ "PfsLicense=pfs_bw\n", 0, 0, "pfs_bw", 1 },
	{ "PfsLicense=PFS-1 PfsLicensePerJob=4\n", 0, 0, "PFS-1", 4 },
	{ "PfsLicense=no\n", 0, 0, "", 1 },
};

START_TEST(test_set)
{
	struct conf c;
	char err[CONF_ERR_MAX], text[256];

	conf_set_defaults(&c);
	snprintf(text, sizeof(text), T1 "%s", oks[_i].text);
	ck_assert_msg(conf_parse(text, "t.conf", &c, err, sizeof(err)) == 0,
		      "%s", err);
	ck_assert_uint_eq(c.stage_bandwidth, oks[_i].bw);
	ck_assert_uint_eq(c.stage_bandwidth_fallback, oks[_i].fallback);
	ck_assert_str_eq(c.pfs_license, oks[_i].license);
	ck_assert_uint_eq(c.pfs_license_per_job, oks[_i].per_job);
}
END_TEST

static const struct {
	const char *text, *want;
} errs[] = {
	{ "StageBandwidth=fast\n",
	  "t.conf:2: key 'StageBandwidth': 'fast' is not a bandwidth" },
	{ "StageBandwidth=-1M\n", "t.conf:2: key 'StageBandwidth'" },
	{ "StageBandwidth=1M/h\n", "t.conf:2: key 'StageBandwidth'" },
	{ "StageBandwidth=99999999999999999999P\n",
	  "t.conf:2: key 'StageBandwidth'" },
	{ "StageBandwidth=1M\nStageBandwidth=2M\n",
	  "t.conf:3: key 'StageBandwidth': duplicate" },
	{ "StageBandwidthFallback=0\n",
	  "t.conf:2: key 'StageBandwidthFallback': must be above 0" },
	{ "PfsLicense=pfs:bw\n",
	  "t.conf:2: key 'PfsLicense': 'pfs:bw' is not a license name" },
	{ "PfsLicense=a,b\n", "t.conf:2: key 'PfsLicense'" },
	{ "PfsLicense=aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\n",
	  "t.conf:2: key 'PfsLicense'" },
	{ "PfsLicensePerJob=0\n", "t.conf:2: key 'PfsLicensePerJob'" },
	{ "PfsLicensePerJob=100001\n", "t.conf:2: key 'PfsLicensePerJob'" },
	{ "PfsLicensePerJob=two\n", "t.conf:2: key 'PfsLicensePerJob'" },
	{ "PfsPath=relative\n", "t.conf:2: key 'PfsPath'" },
	{ "PfsPath=/a:/b\n", "t.conf:2: key 'PfsPath': '/a:/b' holds ':'" },
	{ "PfsPath=/\n", "t.conf:2: key 'PfsPath': '/' is not a PFS mount" },
	{ "PfsPath=/a/../..\n", "t.conf:2: key 'PfsPath'" },
};

START_TEST(test_errors)
{
	struct conf c;
	char err[CONF_ERR_MAX], text[1024];

	conf_set_defaults(&c);
	snprintf(text, sizeof(text), T1 "%s", errs[_i].text);
	ck_assert_int_eq(conf_parse(text, "t.conf", &c, err, sizeof(err)), -1);
	ck_assert_msg(strncmp(err, errs[_i].want, strlen(errs[_i].want)) == 0,
		      "got: %s", err);
	ck_assert_ptr_null(strchr(err, '\n'));
	ck_assert_uint_eq(c.stage_bandwidth, 0); /* untouched on failure */
	ck_assert_str_eq(c.pfs_license, "");
}
END_TEST

int main(void)
{
	Suite *s = suite_create("conf_pfsbw");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, test_defaults);
	tcase_add_test(tc, test_pfs_path);
	tcase_add_loop_test(tc, test_set, 0, sizeof(oks) / sizeof(oks[0]));
	tcase_add_loop_test(tc, test_errors, 0, sizeof(errs) / sizeof(errs[0]));
	suite_add_tcase(s, tc);
	return check_run(s);
}
