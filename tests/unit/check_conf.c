/* check_conf.c - unit tests for common/config/conf: iostage.conf parsing. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <check.h>

#include "common/config/conf.h"
#include "tests/unit/check_run.h"

static const char good_conf[] =
    "# iostage site configuration\n"
    "SocketPath=/run/iostage/test.sock\n"
    "StateDir=/var/lib/iostage-test/\n"
    "ProfileDir=//etc//slurm/iostage.d\n"
    "DefaultTier=bb   # before the tiers: allowed\n"
    "\n"
    "Tier=nvme Path=/local/nvme/iostage Capacity=800G Medium=nvme\n"
    "Tier=bb\tPath=/bb/iostage        Capacity=20T  Medium=ssd "
    "Shared=yes\r\n"
    "StageTimeout=1200\n"
    "OnStageFailure=fallback\n"
    "cachehighwatermark=90 CACHELOWWATERMARK=80\n"
    "MaxConnections=128\n"
    "CacheTTL=120 StageParallelism=8 nodename=node-01.rack_2\n"
    "DrainTimeout=900\n";

START_TEST(test_good)
{
	struct conf c;
	char err[CONF_ERR_MAX] = "";

	ck_assert_msg(conf_parse(good_conf, "t.conf", &c, err, sizeof(err)) ==
			  0,
		      "%s", err);
	ck_assert_str_eq(c.socket_path, "/run/iostage/test.sock");
	ck_assert_str_eq(c.state_dir, "/var/lib/iostage-test");
	ck_assert_str_eq(c.profile_dir, "/etc/slurm/iostage.d");
	ck_assert_uint_eq(c.ntiers, 2);
	ck_assert_str_eq(c.tiers[0].name, "nvme");
	ck_assert_str_eq(c.tiers[0].path, "/local/nvme/iostage");
	ck_assert_uint_eq(c.tiers[0].capacity, 800ULL << 30);
	ck_assert_int_eq(c.tiers[0].medium, TIER_MEDIUM_NVME);
	ck_assert(!c.tiers[0].shared);
	ck_assert_str_eq(c.tiers[1].name, "bb");
	ck_assert_str_eq(c.tiers[1].path, "/bb/iostage");
	ck_assert_uint_eq(c.tiers[1].capacity, 20ULL << 40);
	ck_assert_int_eq(c.tiers[1].medium, TIER_MEDIUM_SSD);
	ck_assert(c.tiers[1].shared);
	ck_assert_uint_eq(c.default_tier, 1);
	ck_assert_uint_eq(c.stage_timeout, 1200);
	ck_assert_int_eq(c.on_failure, STAGE_FAILURE_FALLBACK);
	ck_assert_uint_eq(c.cache_high_watermark, 90);
	ck_assert_uint_eq(c.cache_low_watermark, 80);
	ck_assert_uint_eq(c.max_connections, 128);
	ck_assert_uint_eq(c.cache_ttl, 120);
	ck_assert_uint_eq(c.stage_parallelism, 8);
	ck_assert_str_eq(c.node_name, "node-01.rack_2");
	ck_assert_uint_eq(c.drain_timeout, 900);

	ck_assert_ptr_eq(conf_find_tier(&c, "bb"), &c.tiers[1]);
	ck_assert_ptr_null(conf_find_tier(&c, "BB"));
	ck_assert_ptr_null(conf_find_tier(&c, NULL));
	ck_assert_ptr_null(conf_find_tier(NULL, "bb"));
}
END_TEST

START_TEST(test_defaults)
{
	struct conf c;
	char err[CONF_ERR_MAX];

	ck_assert_int_eq(
	    conf_parse("Tier=a Path=/a\n", "t.conf", &c, err, sizeof(err)), 0);
	ck_assert_str_eq(c.socket_path, "/run/iostage/iostaged.sock");
	ck_assert_str_eq(c.state_dir, "/var/lib/iostage");
	ck_assert_str_eq(c.profile_dir, IOSTAGE_PROFILE_DIR);
	ck_assert_uint_eq(c.stage_timeout, 600);
	ck_assert_int_eq(c.on_failure, STAGE_FAILURE_FAIL);
	ck_assert_uint_eq(c.cache_high_watermark, 85);
	ck_assert_uint_eq(c.cache_low_watermark, 75);
	ck_assert_uint_eq(c.max_connections, 256);
	ck_assert_uint_eq(c.cache_ttl, 3600);
	ck_assert_uint_eq(c.stage_parallelism, 4);
	ck_assert_uint_eq(c.drain_timeout, 600);
	/* NodeName defaults to the short host name. */
	{
		char host[256] = "";

		ck_assert_int_eq(gethostname(host, sizeof(host) - 1), 0);
		host[strcspn(host, ".")] = '\0';
		ck_assert(conf_is_node_name(c.node_name));
		if (conf_is_node_name(host))
			ck_assert_str_eq(c.node_name, host);
	}
	ck_assert_uint_eq(c.default_tier, 0);
	ck_assert_uint_eq(c.tiers[0].capacity, 0);
	ck_assert_int_eq(c.tiers[0].medium, TIER_MEDIUM_NVME);
	ck_assert(!c.tiers[0].shared);

	/* Values are case-insensitive too, like slurm.conf. */
	ck_assert_int_eq(conf_parse("Tier=a Path=/a Medium=PMEM Shared=YES "
				    "Capacity=1kib\nOnStageFailure=FALLBACK",
				    "t.conf", &c, err, sizeof(err)),
			 0);
	ck_assert_int_eq(c.tiers[0].medium, TIER_MEDIUM_PMEM);
	ck_assert(c.tiers[0].shared);
	ck_assert_uint_eq(c.tiers[0].capacity, 1024);
	ck_assert_int_eq(c.on_failure, STAGE_FAILURE_FALLBACK);

	conf_set_defaults(NULL); /* no crash */
	conf_set_defaults(&c);
	ck_assert_uint_eq(c.ntiers, 0);
	ck_assert_uint_eq(c.stage_timeout, 600);
}
END_TEST

struct err_case {
	const char *text;
	const char *want; /* the exact message */
};

#define T1 "Tier=nvme Path=/local/nvme\n"

static const struct err_case err_cases[] = {
    {T1 "Foo=1\n", "t.conf:2: unknown key 'Foo'"},
    {"Foo\x01=1\n", "t.conf:1: unknown key 'Foo?'"},
    {T1 "StageTimeout=0\n",
     "t.conf:2: key 'StageTimeout': 0 out of range 1..86400"},
    {T1 "StageTimeout=86401\n",
     "t.conf:2: key 'StageTimeout': 86401 out of range 1..86400"},
    {T1 "StageTimeout=99999999999999999999999\n",
     "t.conf:2: key 'StageTimeout': 99999999999999999999999 out of range "
     "1..86400"},
    {T1 "StageTimeout=abc\n",
     "t.conf:2: key 'StageTimeout': 'abc' is not a number"},
    {T1 "StageTimeout=-1\n",
     "t.conf:2: key 'StageTimeout': '-1' is not a number"},
    {T1 "StageTimeout=600\nstagetimeout=700\n",
     "t.conf:3: key 'StageTimeout': duplicate (first set on line 2)"},
    {T1 "OnStageFailure=maybe\n",
     "t.conf:2: key 'OnStageFailure': unknown value 'maybe' (known: fail, "
     "fallback)"},
    {T1 "CacheHighWatermark=101\n",
     "t.conf:2: key 'CacheHighWatermark': 101 out of range 1..100"},
    {T1 "CacheHighWatermark=0\n",
     "t.conf:2: key 'CacheHighWatermark': 0 out of range 1..100"},
    {T1 "CacheLowWatermark=100\n",
     "t.conf:2: key 'CacheLowWatermark': 100 out of range 0..99"},
    {T1 "CacheLowWatermark=90\n",
     "t.conf:2: key 'CacheLowWatermark': 90 is not below "
     "CacheHighWatermark (85)"},
    {T1 "CacheLowWatermark=60\nCacheHighWatermark=60\n",
     "t.conf:2: key 'CacheLowWatermark': 60 is not below "
     "CacheHighWatermark (60)"},
    {T1 "CacheHighWatermark=70\n",
     "t.conf:2: key 'CacheHighWatermark': 70 is not above "
     "CacheLowWatermark (75)"},
    {T1 "CacheTTL=2592001\n",
     "t.conf:2: key 'CacheTTL': 2592001 out of range 0..2592000"},
    {T1 "CacheTTL=1h\n", "t.conf:2: key 'CacheTTL': '1h' is not a number"},
    {T1 "CacheTTL=1\nCacheTTL=2\n",
     "t.conf:3: key 'CacheTTL': duplicate (first set on line 2)"},
    {T1 "StageParallelism=0\n",
     "t.conf:2: key 'StageParallelism': 0 out of range 1..64"},
    {T1 "StageParallelism=65\n",
     "t.conf:2: key 'StageParallelism': 65 out of range 1..64"},
    {T1 "NodeName=.hidden\n",
     "t.conf:2: key 'NodeName': invalid node name '.hidden' (want "
     "[A-Za-z0-9_.-]{1,63}, not starting with '.')"},
    {T1 "NodeName=a/b\n",
     "t.conf:2: key 'NodeName': invalid node name 'a/b' (want "
     "[A-Za-z0-9_.-]{1,63}, not starting with '.')"},
    {T1 "NodeName=a\x01\n",
     "t.conf:2: key 'NodeName': invalid node name 'a?' (want "
     "[A-Za-z0-9_.-]{1,63}, not starting with '.')"},
    {T1 "NodeName=n1\nNodeName=n2\n",
     "t.conf:3: key 'NodeName': duplicate (first set on line 2)"},
    {"Tier=a Path=/a NodeName=n1\n",
     "t.conf:1: key 'NodeName': not valid on a Tier line (put it on its "
     "own line)"},
    {T1 "MaxConnections=0\n",
     "t.conf:2: key 'MaxConnections': 0 out of range 1..4096"},
    {T1 "MaxConnections=4097\n",
     "t.conf:2: key 'MaxConnections': 4097 out of range 1..4096"},
    {T1 "DrainTimeout=0\n",
     "t.conf:2: key 'DrainTimeout': 0 out of range 1..86400"},
    {T1 "DrainTimeout=86401\n",
     "t.conf:2: key 'DrainTimeout': 86401 out of range 1..86400"},
    {T1 "DrainTimeout=10m\n",
     "t.conf:2: key 'DrainTimeout': '10m' is not a number"},
    {T1 "DrainTimeout=60\ndraintimeout=60\n",
     "t.conf:3: key 'DrainTimeout': duplicate (first set on line 2)"},
    {T1 "Trace=maybe\n",
     "t.conf:2: key 'Trace': expected yes or no, not 'maybe'"},
    {T1 "PublicDatasets=1\n",
     "t.conf:2: key 'PublicDatasets': expected yes or no, not '1'"},
    {T1 "PublicUser=\n",
     "t.conf:2: key 'PublicUser': empty value"},
    {T1 "PublicUser=Nobody\n",
     "t.conf:2: key 'PublicUser': 'Nobody' is not a user name "
     "([a-z_][a-z0-9_.-]*, at most 32 characters)"},
    {T1 "PublicUser=../root\n",
     "t.conf:2: key 'PublicUser': '../root' is not a user name "
     "([a-z_][a-z0-9_.-]*, at most 32 characters)"},
    {T1 "PublicUser=a23456789012345678901234567890123\n",
     "t.conf:2: key 'PublicUser': 'a23456789012345678901234567890123' is "
     "not a user name ([a-z_][a-z0-9_.-]*, at most 32 characters)"},
    {T1 "PublicUser=nobody\npublicuser=nobody\n",
     "t.conf:3: key 'PublicUser': duplicate (first set on line 2)"},
    {T1 "TraceLibrary=lib/x.so\n",
     "t.conf:2: key 'TraceLibrary': lib/x.so: not an absolute path"},
    {T1 "TraceLibrary=/a.so:/b.so\n",
     "t.conf:2: key 'TraceLibrary': '/a.so:/b.so' holds ':' or a blank "
     "(LD_PRELOAD separators)"},
    {T1 "SocketPath=run/x.sock\n",
     "t.conf:2: key 'SocketPath': run/x.sock: not an absolute path"},
    {T1 "SocketPath=/run/"
	"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"
	"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\n",
     "t.conf:2: key 'SocketPath': /run/"
     "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx...: "
     "longer than 107 bytes"},
    {T1 "StateDir=/var/../etc\n",
     "t.conf:2: key 'StateDir': /var/../etc: contains a '..' component"},
    {T1 "ProfileDir=/etc/./x\n",
     "t.conf:2: key 'ProfileDir': /etc/./x: contains a '.' component"},
    {T1 "ProfileDir=/etc/\x01x\n",
     "t.conf:2: key 'ProfileDir': /etc/?x: contains a control character"},
    {"Tier=nvme\n", "t.conf:1: key 'Path': required for tier 'nvme'"},
    {"Tier=nvme Capacity=1G\n",
     "t.conf:1: key 'Path': required for tier 'nvme'"},
    {"Tier=NVMe Path=/a\n",
     "t.conf:1: key 'Tier': invalid tier name 'NVMe' (want "
     "[a-z0-9_-]{1,31})"},
    {"Tier=a/b Path=/a\n",
     "t.conf:1: key 'Tier': invalid tier name 'a/b' (want "
     "[a-z0-9_-]{1,31})"},
    {"Tier=..\n", "t.conf:1: key 'Tier': invalid tier name '..' (want "
		  "[a-z0-9_-]{1,31})"},
    {"Tier=abcdefghijabcdefghijabcdefghijab Path=/a\n",
     "t.conf:1: key 'Tier': invalid tier name "
     "'abcdefghijabcdefghijabcdefghijab' (want [a-z0-9_-]{1,31})"},
    {T1 "\n# x\nTier=nvme Path=/other\n",
     "t.conf:4: key 'Tier': duplicate tier 'nvme' (first on line 1)"},
    {T1 "Tier=bb Path=/local//nvme/\n",
     "t.conf:2: key 'Path': /local/nvme overlaps tier 'nvme' "
     "(/local/nvme, line 1)"},
    {T1 "Tier=bb Path=/local/nvme/bb\n",
     "t.conf:2: key 'Path': /local/nvme/bb overlaps tier 'nvme' "
     "(/local/nvme, line 1)"},
    {T1 "Tier=bb Path=/local\n",
     "t.conf:2: key 'Path': /local overlaps tier 'nvme' (/local/nvme, "
     "line 1)"},
    {"Tier=a Path=rel\n", "t.conf:1: key 'Path': rel: not an absolute path"},
    {"Tier=a Path=/a/../b\n",
     "t.conf:1: key 'Path': /a/../b: contains a '..' component"},
    {"Tier=a Path=/a Capacity=12Q\n",
     "t.conf:1: key 'Capacity': invalid size '12Q'"},
    {"Tier=a Path=/a Capacity=99999P\n",
     "t.conf:1: key 'Capacity': size too large '99999P'"},
    {"Tier=a Path=/a Medium=floppy\n",
     "t.conf:1: key 'Medium': unknown medium 'floppy' (known: nvme, ssd, "
     "hdd, pmem, ram)"},
    {"Tier=a Path=/a Shared=maybe\n",
     "t.conf:1: key 'Shared': expected yes or no, not 'maybe'"},
    {"Tier=a Path=/a Path=/b\n",
     "t.conf:1: key 'Path': given twice for tier 'a'"},
    {"Tier=a Path=/a StageTimeout=5\n",
     "t.conf:1: key 'StageTimeout': not valid on a Tier line (put it on "
     "its own line)"},
    {"Tier=a Path=/a Tier=b\n", "t.conf:1: key 'Tier': one tier per line"},
    {"Tier=a Path=/a Foo=1\n", "t.conf:1: unknown key 'Foo'"},
    {"Path=/a\n", "t.conf:1: key 'Path': only valid on a Tier line"},
    {"StageTimeout=5 Tier=a Path=/a\n",
     "t.conf:1: key 'Tier': must start its line"},
    {"", "t.conf: key 'Tier': at least one Tier is required"},
    {"# nothing\n\n", "t.conf: key 'Tier': at least one Tier is required"},
    {"StageTimeout=5\n", "t.conf: key 'Tier': at least one Tier is required"},
    {"DefaultTier=bb\n" T1,
     "t.conf:1: key 'DefaultTier': unknown tier 'bb' (known: nvme)"},
    {T1 "DefaultTier=BAD!\n",
     "t.conf:2: key 'DefaultTier': invalid tier name 'BAD!' (want "
     "[a-z0-9_-]{1,31})"},
    {T1 "StageTimeout\n", "t.conf:2: key 'StageTimeout': expected Key=Value"},
    {"Tier\n", "t.conf:1: key 'Tier': expected Key=Value"},
    {T1 "=5\n", "t.conf:2: key '': expected Key=Value"},
    {T1 "StageTimeout=\n", "t.conf:2: key 'StageTimeout': empty value"},
    {T1 "StageTimeout=60 0\n", "t.conf:2: key '0': expected Key=Value"},
    {T1 "a=1 b=1 c=1 d=1 e=1 f=1 g=1 h=1 i=1 j=1 k=1 l=1 m=1 n=1 o=1 "
	"p=1 q=1\n",
     "t.conf:2: more than 16 Key=Value pairs on one line"},
    {T1 "Fooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooo"
	"oooooooooooooooooooooooooooooooooooo=1\n",
     "t.conf:2: unknown key "
     "'Foooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooo"
     "o...'"},
};

START_TEST(test_errors)
{
	const struct err_case *c = &err_cases[_i];
	struct conf before, after;
	char err[CONF_ERR_MAX] = "";

	memset(&before, 0xa5, sizeof(before));
	after = before;
	errno = 0;
	ck_assert_int_eq(
	    conf_parse(c->text, "t.conf", &after, err, sizeof(err)), -1);
	ck_assert_int_eq(errno, EINVAL);
	ck_assert_str_eq(err, c->want);
	/* *ret_conf untouched on failure. */
	ck_assert(memcmp(&before, &after, sizeof(before)) == 0);
}
END_TEST

START_TEST(test_too_many_tiers)
{
	char text[4096], err[CONF_ERR_MAX];
	struct conf c;
	size_t off = 0;

	for (int i = 0; i < CONF_MAX_TIERS; i++)
		off += (size_t)snprintf(text + off, sizeof(text) - off,
					"Tier=t%d Path=/t%d\n", i, i);
	ck_assert_int_eq(conf_parse(text, "t.conf", &c, err, sizeof(err)), 0);
	ck_assert_uint_eq(c.ntiers, CONF_MAX_TIERS);
	conf_tier_names(&c, err, sizeof(err));
	ck_assert_str_eq(err, "t0, t1, t2, t3, t4, t5, t6, t7, t8, t9, t10, "
			      "t11, t12, t13, t14, t15");
	conf_tier_names(&c, err, 9);
	ck_assert_str_eq(err, "t0, t1, ");
	conf_tier_names(NULL, err, sizeof(err));
	ck_assert_str_eq(err, "");
	conf_tier_names(&c, NULL, 0); /* no crash */

	snprintf(text + off, sizeof(text) - off, "Tier=x Path=/x\n");
	ck_assert_int_eq(conf_parse(text, "t.conf", &c, err, sizeof(err)), -1);
	ck_assert_str_eq(err, "t.conf:17: key 'Tier': more than 16 tiers");
}
END_TEST

START_TEST(test_null_inputs)
{
	struct conf c;
	char err[CONF_ERR_MAX];

	ck_assert_int_eq(conf_parse(NULL, "t.conf", &c, err, sizeof(err)), -1);
	ck_assert_int_eq(errno, EINVAL);
	ck_assert_str_eq(err, "t.conf: no configuration text");
	ck_assert_int_eq(
	    conf_parse("Tier=a Path=/a", "t.conf", NULL, err, sizeof(err)), -1);
	/* NULL origin and NULL err are fine. */
	ck_assert_int_eq(conf_parse("Foo=1", NULL, &c, err, sizeof(err)), -1);
	ck_assert_str_eq(err, "(config):1: unknown key 'Foo'");
	ck_assert_int_eq(conf_parse("Foo=1", NULL, &c, NULL, 0), -1);
	ck_assert_int_eq(conf_parse("Foo=1", NULL, &c, err, 1), -1);
	ck_assert_str_eq(err, "");
	/* No trailing newline. */
	ck_assert_int_eq(conf_parse("Tier=a Path=/a", NULL, &c, NULL, 0), 0);
}
END_TEST

struct size_case {
	const char *in;
	int err; /* 0, EINVAL or ERANGE */
	uint64_t want;
};

static const struct size_case size_cases[] = {
    {"0", 0, 0},
    {"1024", 0, 1024},
    {"1B", 0, 1},
    {"1b", 0, 1},
    {"1K", 0, 1024},
    {"1k", 0, 1024},
    {"1KB", 0, 1024},
    {"1KiB", 0, 1024},
    {"512M", 0, 512ULL << 20},
    {"800G", 0, 800ULL << 30},
    {"20T", 0, 20ULL << 40},
    {"1P", 0, 1ULL << 50},
    {"16383P", 0, 16383ULL << 50},
    {"007", 0, 7},
    {"18446744073709551615", 0, UINT64_MAX},
    {"18446744073709551616", ERANGE, 0},
    {"99999999999999999999999", ERANGE, 0},
    {"99999999999999999999999K", ERANGE, 0},
    {"16384P", ERANGE, 0},
    {"17179869184G", ERANGE, 0},
    {"12Q", EINVAL, 0},
    {"99999999999999999999999Q", EINVAL, 0},
    {"", EINVAL, 0},
    {NULL, EINVAL, 0},
    {"K", EINVAL, 0},
    {"-1", EINVAL, 0},
    {"+1", EINVAL, 0},
    {" 1", EINVAL, 0},
    {"1 ", EINVAL, 0},
    {"1.5G", EINVAL, 0},
    {"1iB", EINVAL, 0},
    {"1KBB", EINVAL, 0},
    {"1KiBx", EINVAL, 0},
    {"1E", EINVAL, 0},
    {"0x10", EINVAL, 0},
};

START_TEST(test_size_table)
{
	const struct size_case *c = &size_cases[_i];
	uint64_t v = 42;

	errno = 0;
	if (c->err == 0) {
		ck_assert_msg(conf_parse_size(c->in, &v) == 0, "case %d '%s'",
			      _i, c->in);
		ck_assert_uint_eq(v, c->want);
	} else {
		ck_assert_msg(conf_parse_size(c->in, &v) == -1, "case %d '%s'",
			      _i, c->in ? c->in : "(null)");
		ck_assert_int_eq(errno, c->err);
		ck_assert_uint_eq(v, 42); /* untouched */
	}
}
END_TEST

START_TEST(test_names)
{
	enum stage_failure_policy p = STAGE_FAILURE_FAIL;

	ck_assert_str_eq(conf_medium_name(TIER_MEDIUM_NVME), "nvme");
	ck_assert_str_eq(conf_medium_name(TIER_MEDIUM_SSD), "ssd");
	ck_assert_str_eq(conf_medium_name(TIER_MEDIUM_HDD), "hdd");
	ck_assert_str_eq(conf_medium_name(TIER_MEDIUM_PMEM), "pmem");
	ck_assert_str_eq(conf_medium_name(TIER_MEDIUM_RAM), "ram");
	ck_assert_str_eq(conf_medium_name((enum tier_medium)99), "unknown");
	ck_assert_str_eq(conf_policy_name(STAGE_FAILURE_FAIL), "fail");
	ck_assert_str_eq(conf_policy_name(STAGE_FAILURE_FALLBACK), "fallback");
	ck_assert_str_eq(conf_policy_name((enum stage_failure_policy) - 1),
			 "unknown");
	ck_assert_int_eq(conf_parse_policy("fallback", &p), 0);
	ck_assert_int_eq(p, STAGE_FAILURE_FALLBACK);
	ck_assert_int_eq(conf_parse_policy("fail", &p), 0);
	ck_assert_int_eq(p, STAGE_FAILURE_FAIL);
	p = STAGE_FAILURE_FALLBACK;
	ck_assert_int_eq(conf_parse_policy("Fail", &p), -1);
	ck_assert_int_eq(conf_parse_policy("", &p), -1);
	ck_assert_int_eq(conf_parse_policy(NULL, &p), -1);
	ck_assert_int_eq(conf_parse_policy("fail", NULL), -1);
	ck_assert_int_eq(p, STAGE_FAILURE_FALLBACK);
}
END_TEST

/* ---- conf_load -------------------------------------------------------- */

static char tmpdir[64];

static void tmp_setup(void)
{
	snprintf(tmpdir, sizeof(tmpdir), "/tmp/check_conf.XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(tmpdir));
}

static void tmp_teardown(void)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
	if (system(cmd) != 0)
		fprintf(stderr, "cannot remove %s\n", tmpdir);
}

static void write_file(const char *path, const char *data, size_t len)
{
	FILE *f = fopen(path, "w");

	ck_assert_ptr_nonnull(f);
	ck_assert_uint_eq(fwrite(data, 1, len, f), len);
	ck_assert_int_eq(fclose(f), 0);
}

struct node_case {
	const char *name;
	bool ok;
};

static const struct node_case node_cases[] = {
    {NULL, false},
    {"", false},
    {".", false},
    {"..", false},
    {".a", false},
    {"a", true},
    {"node1", true},
    {"node-1.rack_2", true},
    {"a b", false},
    {"a/b", false},
    {"a\nb", false},
    {"n\xc3\xa9", false},
    {"123456789012345678901234567890123456789012345678901234567890123",
     true},
    {"1234567890123456789012345678901234567890123456789012345678901234",
     false},
};

START_TEST(test_node_names)
{
	const struct node_case *nc = &node_cases[_i];

	ck_assert_msg(conf_is_node_name(nc->name) == nc->ok, "'%s': want %d",
		      nc->name ? nc->name : "(null)", nc->ok);
}
END_TEST

START_TEST(test_load)
{
	char path[128], err[CONF_ERR_MAX], want[256];
	struct conf c;

	snprintf(path, sizeof(path), "%s/iostage.conf", tmpdir);
	write_file(path, good_conf, strlen(good_conf));
	ck_assert_msg(conf_load(path, &c, err, sizeof(err)) == 0, "%s", err);
	ck_assert_uint_eq(c.ntiers, 2);

	/* Errors name the file. */
	write_file(path, "Tier=a Path=/a\nBogus=1\n", 23);
	ck_assert_int_eq(conf_load(path, &c, err, sizeof(err)), -1);
	snprintf(want, sizeof(want), "%s:2: unknown key 'Bogus'", path);
	ck_assert_str_eq(err, want);

	/* Missing file. */
	snprintf(path, sizeof(path), "%s/missing.conf", tmpdir);
	errno = 0;
	ck_assert_int_eq(conf_load(path, &c, err, sizeof(err)), -1);
	ck_assert_int_eq(errno, ENOENT);
	snprintf(want, sizeof(want),
		 "%s: cannot read: No such file or directory", path);
	ck_assert_str_eq(err, want);

	/* A directory. */
	ck_assert_int_eq(conf_load(tmpdir, &c, err, sizeof(err)), -1);
	ck_assert_int_eq(errno, EISDIR);
	snprintf(want, sizeof(want), "%s: cannot read: Is a directory", tmpdir);
	ck_assert_str_eq(err, want);

	/* A FIFO: refused without blocking. */
	snprintf(path, sizeof(path), "%s/fifo", tmpdir);
	ck_assert_int_eq(mkfifo(path, 0600), 0);
	ck_assert_int_eq(conf_load(path, &c, err, sizeof(err)), -1);
	snprintf(want, sizeof(want), "%s: cannot read: not a regular file",
		 path);
	ck_assert_str_eq(err, want);

	/* A NUL byte would hide the rest of the file from the parser. */
	snprintf(path, sizeof(path), "%s/nul.conf", tmpdir);
	write_file(path, "Tier=a Path=/a\n\0Bogus=1\n", 24);
	ck_assert_int_eq(conf_load(path, &c, err, sizeof(err)), -1);
	snprintf(want, sizeof(want), "%s: cannot read: contains a NUL byte",
		 path);
	ck_assert_str_eq(err, want);
}
END_TEST

START_TEST(test_load_size_limit)
{
	size_t max = 1024 * 1024;
	char *buf = malloc(max + 1);
	char path[128], err[CONF_ERR_MAX], want[256];
	struct conf c;
	const char *tier = "Tier=a Path=/a\n";

	ck_assert_ptr_nonnull(buf);
	/* Exactly 1 MiB: comment lines after a tier. */
	memset(buf, '#', max);
	memcpy(buf, tier, strlen(tier));
	for (size_t i = 100; i < max; i += 100)
		buf[i] = '\n';
	snprintf(path, sizeof(path), "%s/big.conf", tmpdir);
	write_file(path, buf, max);
	ck_assert_msg(conf_load(path, &c, err, sizeof(err)) == 0, "%s", err);

	/* One byte more is refused. */
	buf[max] = '\n';
	write_file(path, buf, max + 1);
	errno = 0;
	ck_assert_int_eq(conf_load(path, &c, err, sizeof(err)), -1);
	ck_assert_int_eq(errno, EFBIG);
	snprintf(want, sizeof(want),
		 "%s: cannot read: larger than 1048576 bytes", path);
	ck_assert_str_eq(err, want);
	free(buf);
}
END_TEST

START_TEST(test_load_default_path)
{
	struct conf c;
	char err[CONF_ERR_MAX] = "";
	int rc = conf_load(NULL, &c, err, sizeof(err));

	/* Whatever the host has, the message names the default path. */
	if (rc < 0)
		ck_assert_ptr_nonnull(strstr(err, IOSTAGE_CONF_PATH));
}
END_TEST

#define N(a) ((int)(sizeof(a) / sizeof((a)[0])))

/* Deep mode (docs/SHIM.md): off by default, the shim where make install
 * puts it; both settable. */
START_TEST(test_trace_keys)
{
	struct conf c;
	char err[CONF_ERR_MAX] = "";

	ck_assert_int_eq(conf_parse(T1, "t.conf", &c, err, sizeof(err)), 0);
	ck_assert(!c.trace);
	ck_assert_str_eq(c.trace_library, IOSTAGE_SHIM_PATH);
	ck_assert_msg(conf_parse(T1 "trace=YES\nTraceLibrary=/opt/s/p.so\n",
				 "t.conf", &c, err, sizeof(err)) == 0,
		      "%s", err);
	ck_assert(c.trace);
	ck_assert_str_eq(c.trace_library, "/opt/s/p.so");
}
END_TEST

/* Public datasets (docs/STAGING.md): on by default, built as nobody. */
START_TEST(test_public_keys)
{
	struct conf c;
	char err[CONF_ERR_MAX] = "";

	ck_assert_int_eq(conf_parse(T1, "t.conf", &c, err, sizeof(err)), 0);
	ck_assert(c.public_datasets);
	ck_assert_str_eq(c.public_user, "nobody");
	ck_assert_msg(conf_parse(T1 "PublicDatasets=no\n"
				    "PublicUser=iostage-pub_1.x\n",
				 "t.conf", &c, err, sizeof(err)) == 0,
		      "%s", err);
	ck_assert(!c.public_datasets);
	ck_assert_str_eq(c.public_user, "iostage-pub_1.x");
	ck_assert(conf_is_user_name("_svc"));
	ck_assert(!conf_is_user_name(NULL));
	ck_assert(!conf_is_user_name(""));
	ck_assert(!conf_is_user_name("1abc"));
	ck_assert(!conf_is_user_name("a b"));
}
END_TEST

static Suite *conf_suite(void)
{
	Suite *s = suite_create("conf");
	TCase *tc = tcase_create("parse");
	TCase *tl = tcase_create("load");

	tcase_add_test(tc, test_good);
	tcase_add_test(tc, test_defaults);
	tcase_add_loop_test(tc, test_errors, 0, N(err_cases));
	tcase_add_test(tc, test_too_many_tiers);
	tcase_add_test(tc, test_null_inputs);
	tcase_add_loop_test(tc, test_size_table, 0, N(size_cases));
	tcase_add_test(tc, test_names);
	tcase_add_test(tc, test_trace_keys);
	tcase_add_test(tc, test_public_keys);
	tcase_add_loop_test(tc, test_node_names, 0, N(node_cases));
	suite_add_tcase(s, tc);

	tcase_add_checked_fixture(tl, tmp_setup, tmp_teardown);
	tcase_add_test(tl, test_load);
	tcase_add_test(tl, test_load_size_limit);
	tcase_add_test(tl, test_load_default_path);
	suite_add_tcase(s, tl);
	return s;
}

int main(void)
{
	return check_run(conf_suite());
}
