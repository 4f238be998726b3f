/* check_conf.c - unit tests for common/config/conf*.c: iostage.conf.
 *
 * Cases are data: a file's text and the values it must give (ok_cases),
 * or the one line it must be refused with (err_cases); every key's
 * default (default_cases). Then the key table checks itself row by row
 * (each default parses, a value written back reads the same, each key is
 * refused twice and on a Tier line), a dump reads back to the same
 * configuration, and iostage.conf(5) describes exactly the table's keys
 * with the summary `make man` writes. Last the value parsers on their own
 * (sizes, durations, listen addresses, names) and conf_load.
 *
 * Values are compared as text read straight from the field (field_text):
 * numbers in their unit (seconds, ms, bytes), enums by name, bools as
 * yes/no; "nvme.Capacity" is an attribute of the tier named nvme.
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include <check.h>

#include "common/base/smallfile.h"
#include "common/config/conf.h"
#include "common/config/conf_keys.h"
#include "tests/unit/check_run.h"

#ifndef SRCDIR
#define SRCDIR "."
#endif
#define MAN_PAGE SRCDIR "/docs/man/iostage.conf.5"

#define N(a) ((int)(sizeof(a) / sizeof((a)[0])))
#define T1 "Tier=nvme Path=/local/nvme\n"

/* ---- reading a field, independently of the library's formatters ------ */

/* The value of K at BASE as plain text: see the file's comment. */
static void field_text(const struct conf_key *k, const void *base, char *buf,
		       size_t buflen)
{
	const char *field = (const char *)base + k->offset;
	const struct conf *c = base;

	switch (k->type) {
	case CONF_T_BOOL:
		snprintf(buf, buflen, "%s",
			 *(const bool *)field ? "yes" : "no");
		return;
	case CONF_T_UINT:
	case CONF_T_DURATION:
	case CONF_T_MSEC:
		snprintf(buf, buflen, "%u", *(const unsigned *)field);
		return;
	case CONF_T_SIZE:
	case CONF_T_BANDWIDTH:
		snprintf(buf, buflen, "%llu",
			 (unsigned long long)*(const uint64_t *)field);
		return;
	case CONF_T_PATH:
	case CONF_T_LISTEN:
	case CONF_T_NAME:
		snprintf(buf, buflen, "%s", field);
		return;
	case CONF_T_ENUM: {
		unsigned v = *(const unsigned *)field;

		snprintf(buf, buflen, "%s",
			 v < k->nnames ? k->names[v] : "(bad)");
		return;
	}
	case CONF_T_SPECIAL: /* DefaultTier */
		snprintf(buf, buflen, "%s",
			 c->default_tier < c->ntiers
			     ? c->tiers[c->default_tier].name
			     : "");
		return;
	case CONF_T_LINE: { /* Tier: the names, "a,b" */
		size_t off = 0;

		buf[0] = '\0';
		for (size_t i = 0; i < c->ntiers && off < buflen; i++)
			off += (size_t)snprintf(buf + off, buflen - off, "%s%s",
						i ? "," : "", c->tiers[i].name);
		return;
	}
	case CONF_T_COUNT:
		break;
	}
	snprintf(buf, buflen, "(type %d)", (int)k->type);
}

/* KEY ("StageTimeout", "nvme.Capacity") of C as field_text says it; fails
 * the test on an unknown key. */
static void key_text(const struct conf *c, const char *key, char *buf,
		     size_t buflen)
{
	const char *dot = strchr(key, '.');
	const struct conf_key *k;

	if (dot) {
		char tier[CONF_NAME_MAX];
		const struct conf_tier *t;

		snprintf(tier, sizeof(tier), "%.*s", (int)(dot - key), key);
		t = conf_find_tier(c, tier);
		ck_assert_msg(t, "no tier '%s'", tier);
		k = conf_key_find(conf_tier_attrs, conf_ntier_attrs, dot + 1);
		ck_assert_msg(k, "no tier attribute '%s'", dot + 1);
		field_text(k, t, buf, buflen);
		return;
	}
	k = conf_key_find(conf_keys, conf_nkeys, key);
	ck_assert_msg(k, "no key '%s'", key);
	field_text(k, c, buf, buflen);
}

/* Check every "KEY=VALUE" of WANT (space-separated) against C. */
static void assert_values(const struct conf *c, const char *want,
			  const char *text)
{
	char *copy = strdup(want), *save = NULL, *tok, got[CONF_PATH_MAX];

	ck_assert_ptr_nonnull(copy);
	for (tok = strtok_r(copy, " ", &save); tok;
	     tok = strtok_r(NULL, " ", &save)) {
		char *eq = strchr(tok, '=');

		ck_assert_msg(eq, "bad want '%s'", tok);
		*eq = '\0';
		key_text(c, tok, got, sizeof(got));
		ck_assert_msg(strcmp(got, eq + 1) == 0,
			      "%s: got '%s', want '%s' (text: %s)", tok, got,
			      eq + 1, text);
	}
	free(copy);
}

/* ---- files that parse: text -> values ---------------------------------- */

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

struct ok_case {
	const char *text;
	const char *want; /* "KEY=VALUE ..." */
};

static const struct ok_case ok_cases[] = {
	/* A whole file, comments, blank lines, CRLF, keys in any case. */
	{ good_conf, "SocketPath=/run/iostage/test.sock "
		     "StateDir=/var/lib/iostage-test "
		     "ProfileDir=/etc/slurm/iostage.d Tier=nvme,bb" },
	{ good_conf, "nvme.Path=/local/nvme/iostage nvme.Capacity=858993459200 "
		     "nvme.Medium=nvme nvme.Shared=no" },
	{ good_conf, "bb.Path=/bb/iostage bb.Capacity=21990232555520 "
		     "bb.Medium=ssd bb.Shared=yes DefaultTier=bb" },
	{ good_conf, "StageTimeout=1200 OnStageFailure=fallback "
		     "CacheHighWatermark=90 CacheLowWatermark=80 "
		     "MaxConnections=128" },
	{ good_conf, "CacheTTL=120 StageParallelism=8 NodeName=node-01.rack_2 "
		     "DrainTimeout=900" },
	/* Values are case-insensitive too, like slurm.conf. */
	{ "Tier=a Path=/a Medium=PMEM Shared=YES Capacity=1kib\n"
	  "OnStageFailure=FALLBACK",
	  "a.Medium=pmem a.Shared=yes a.Capacity=1024 OnStageFailure=fallback" },
	{ "Tier=a Path=/a", "Tier=a DefaultTier=a" }, /* no trailing newline */
	{ "Tier=a Path=/a\nTier=b Path=/b\nDefaultTier=b\n", "DefaultTier=b" },
	/* Deep mode (docs/SHIM.md). */
	{ T1 "trace=YES\nTraceLibrary=/opt/s/p.so\nViewProgram=/opt/v\n",
	  "Trace=yes TraceLibrary=/opt/s/p.so ViewProgram=/opt/v" },
	/* Public datasets (docs/STAGING.md). */
	{ T1 "PublicDatasets=no\nPublicUser=iostage-pub_1.x\n",
	  "PublicDatasets=no PublicUser=iostage-pub_1.x" },
	/* Telemetry: seconds with decimals, kept in ms. */
	{ T1 "TelemetryInterval=0.25\n", "TelemetryInterval=250" },
	{ T1 "TelemetryInterval=60\n", "TelemetryInterval=60000" },
	{ T1 "TelemetryInterval=0.1\n", "TelemetryInterval=100" },
	/* History and recommendations. */
	{ "Tier=a Path=/a\nHistoryRetention=7d RecommendMinJobs=5\n"
	  "recommendwindow=12h RecommendHint=NO RecommendOSTCount=48\n",
	  "HistoryRetention=604800 RecommendMinJobs=5 RecommendWindow=43200 "
	  "RecommendHint=no RecommendOSTCount=48" },
	{ "Tier=a Path=/a\nHistoryRetention=0\n", "HistoryRetention=0" },
	/* Metrics. */
	{ T1 "MetricsListen=[::1]:20901\nMetricsTextfile=/var/lib/y/i.prom\n"
	     "MetricsInterval=1 MetricsJobGrace=0\n",
	  "MetricsListen=[::1]:20901 MetricsTextfile=/var/lib/y/i.prom "
	  "MetricsInterval=1 MetricsJobGrace=0" },
	{ T1 "MetricsListen=no\nMetricsTextfile=off\n",
	  "MetricsListen= MetricsTextfile=" },
	/* Node to node. */
	{ T1 "PeerPort=7000 PeerListen=10.0.0.2\nPeerPartsTimeout=5\n"
	     "MungeSocket=/run/munge/munge.socket.2\n",
	  "PeerPort=7000 PeerListen=10.0.0.2 PeerPartsTimeout=5 "
	  "MungeSocket=/run/munge/munge.socket.2" },
	{ T1 "PeerPort=0\nPeerListen=::1\n", "PeerPort=0 PeerListen=::1" },
	{ T1 "PeerListen=*\n", "PeerListen=*" },
	/* The cluster service. */
	{ T1 "ControllerHost=ctl.cluster.example\n"
	     "ControllerPort=7000 AdminGroup=hpc-admin\n",
	  "ControllerHost=ctl.cluster.example ControllerPort=7000 "
	  "AdminGroup=hpc-admin" },
	{ T1 "controllerhost=127.0.0.1\n", "ControllerHost=127.0.0.1" },
	{ T1 "ControllerHost=fd00::1\n", "ControllerHost=fd00::1" },
	{ T1 "ControllerHost=no\n", "ControllerHost=" }, /* no service */
#define A63 "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
	{ T1 "ControllerHost=" A63 "a" A63 "a" A63 "a" A63 "\n", /* 255 bytes */
	  "ControllerHost=" A63 "a" A63 "a" A63 "a" A63 },
	{ T1 "ControllerMetricsListen=10.0.0.1:9100\n",
	  "ControllerMetricsListen=10.0.0.1:9100 MetricsListen=127.0.0.1:9464" },
	{ T1 "controllermetricslisten=[::1]:9465\n",
	  "ControllerMetricsListen=[::1]:9465" },
	{ T1 "ControllerMetricsListen=no\n", "ControllerMetricsListen=" },
	/* Scheduling help. */
	{ T1 "Placement=no\nprestage=No\n", "Placement=no Prestage=no" },
	{ T1 "PlacementHold=2m\n", "PlacementHold=120" },
	{ T1 "PlacementHold=1h\n", "PlacementHold=3600" },
	/* Filing through the service. */
	{ T1 "PartsDeadline=5\n",
	  "PartsDeadline=5 OutboxLimit=10000 OutboxRetryMax=60" },
	{ T1 "partsdeadline=2m\n", "PartsDeadline=120" },
	{ T1 "PartsDeadline=1d\n", "PartsDeadline=86400" },
	{ T1 "OutboxLimit=1\n",
	  "PartsDeadline=300 OutboxLimit=1 OutboxRetryMax=60" },
	{ T1 "OutboxLimit=250000 PartsDeadline=30s\n",
	  "PartsDeadline=30 OutboxLimit=250000 OutboxRetryMax=60" },
	{ T1 "OutboxRetryMax=5\n",
	  "PartsDeadline=300 OutboxLimit=10000 OutboxRetryMax=5" },
	{ T1 "OutboxRetryMax=1h\n", "OutboxRetryMax=3600" },
	{ T1 "outboxretrymax=2m OutboxLimit=7\n",
	  "PartsDeadline=300 OutboxLimit=7 OutboxRetryMax=120" },
	/* The PFS as a scheduled resource. */
	{ T1 "StageBandwidth=400M\n",
	  "StageBandwidth=419430400 StageBandwidthFallback=0 PfsLicense= "
	  "PfsLicensePerJob=1" },
	{ T1 "stagebandwidth=1G/s\n", "StageBandwidth=1073741824" },
	{ T1 "StageBandwidth=1048576\n", "StageBandwidth=1048576" },
	{ T1 "StageBandwidth=no\n", "StageBandwidth=0" },
	{ T1 "StageBandwidth=0\n", "StageBandwidth=0" },
	{ T1 "StageBandwidth=2G StageBandwidthFallback=100M/s\n",
	  "StageBandwidth=2147483648 StageBandwidthFallback=104857600" },
	{ T1 "PfsLicense=pfs_bw\n",
	  "StageBandwidth=0 PfsLicense=pfs_bw PfsLicensePerJob=1" },
	{ T1 "PfsLicense=PFS-1 PfsLicensePerJob=4\n",
	  "PfsLicense=PFS-1 PfsLicensePerJob=4" },
	{ T1 "PfsLicense=no\n", "PfsLicense= PfsLicensePerJob=1" },
	{ T1 "PfsPath=/lustre//scratch/\n", "PfsPath=/lustre/scratch" },
	{ T1 "PfsPath=no\n", "PfsPath=" },
};

START_TEST(test_ok)
{
	const struct ok_case *oc = &ok_cases[_i];
	struct conf c;
	char err[CONF_ERR_MAX] = "";

	ck_assert_msg(conf_parse(oc->text, "t.conf", &c, err, sizeof(err)) == 0,
		      "%s", err);
	assert_values(&c, oc->want, oc->text);
}
END_TEST

/* ---- every key's default ------------------------------------------------ */

static const char *const default_cases[] = {
	"SocketPath=/run/iostage/iostaged.sock",
	"StateDir=/var/lib/iostage",
	"ProfileDir=" IOSTAGE_PROFILE_DIR,
	"Tier=nvme",
	"DefaultTier=nvme",
	"nvme.Capacity=0",
	"nvme.Medium=nvme",
	"nvme.Shared=no",
	"StageTimeout=600",
	"OnStageFailure=fail",
	"CacheHighWatermark=85",
	"CacheLowWatermark=75",
	"MaxConnections=256",
	"CacheTTL=3600",
	"StageParallelism=4",
	"DrainTimeout=600",
	"TelemetryInterval=1000",
	"HistoryRetention=7776000",
	"RecommendMinJobs=3",
	"RecommendWindow=2592000",
	"RecommendHint=yes",
	"RecommendOSTCount=0", /* not known */
	"MetricsListen=127.0.0.1:9464",
	"MetricsTextfile=",
	"MetricsInterval=15",
	"MetricsJobGrace=300",
	"Trace=no",
	"TraceLibrary=" IOSTAGE_SHIM_PATH,
	"LocalRead=yes",
	"LocalReadLibrary=" IOSTAGE_LOCALREAD_PATH,
	"ViewProgram=" IOSTAGE_VIEW_PATH,
	"PeerPort=6826",
	"PeerListen=",
	"PeerPartsTimeout=60",
	"NodeFill=parts",
	"PeerFetchSessions=8",
	"PeerFetchRate=0", /* no cap */
	"MungeSocket=",
	"PublicDatasets=yes",
	"PublicUser=nobody",
	"ControllerHost=",
	"ControllerPort=6827",
	/* the service's /metrics: loopback unless the site says where */
	"ControllerMetricsListen=127.0.0.1:9465",
	"AdminGroup=",
	"PartsDeadline=300",
	"OutboxLimit=10000",
	"OutboxRetryMax=60",
	"StageBandwidth=0",         /* unbounded */
	"StageBandwidthFallback=0", /* a share of it */
	"PfsLicense=",
	"PfsLicensePerJob=1",
	"Placement=yes",
	"PlacementHold=0",
	"Prestage=yes",
	"PfsPath=",
};

START_TEST(test_default)
{
	struct conf c;
	char err[CONF_ERR_MAX] = "";

	ck_assert_int_eq(conf_parse(T1, "t.conf", &c, err, sizeof(err)), 0);
	assert_values(&c, default_cases[_i], T1);
}
END_TEST

/* Every row of the table has its line above (or is NodeName's host). */
START_TEST(test_default_listed)
{
	const struct conf_key *k = &conf_keys[_i];
	size_t n = strlen(k->name);
	bool found = !strcmp(k->name, "NodeName");

	for (int i = 0; i < N(default_cases) && !found; i++)
		found = !strncmp(default_cases[i], k->name, n) &&
			default_cases[i][n] == '=';
	ck_assert_msg(found, "no default_cases line for %s", k->name);
}
END_TEST

START_TEST(test_default_node_name)
{
	struct conf c;
	char err[CONF_ERR_MAX], host[256] = "";

	ck_assert_int_eq(conf_parse(T1, "t.conf", &c, err, sizeof(err)), 0);
	/* NodeName defaults to the short host name. */
	ck_assert_int_eq(gethostname(host, sizeof(host) - 1), 0);
	host[strcspn(host, ".")] = '\0';
	ck_assert(conf_is_node_name(c.node_name));
	if (conf_is_node_name(host))
		ck_assert_str_eq(c.node_name, host);

	conf_set_defaults(NULL); /* no crash */
	memset(&c, 0xa5, sizeof(c));
	conf_set_defaults(&c);
	ck_assert_uint_eq(c.ntiers, 0);
	ck_assert_uint_eq(c.stage_timeout, 600);
	ck_assert_str_eq(c.admin_group, "");
}
END_TEST

/* ---- files refused: text -> the one line -------------------------------- */

struct err_case {
	const char *text;
	const char *want; /* the exact message */
};

static const struct err_case err_cases[] = {
	/* Lines and pairs. */
	{ T1 "Foo=1\n", "t.conf:2: unknown key 'Foo'" },
	{ "Foo\x01=1\n", "t.conf:1: unknown key 'Foo?'" },
	{ T1
	  "Fooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooo"
	  "oooooooooooooooooooooooooooooooooooo=1\n",
	  "t.conf:2: unknown key "
	  "'Foooooooooooooooooooooooooooooooooooooooooooooooooooooooooooooo"
	  "o...'" },
	{ T1 "StageTimeout\n",
	  "t.conf:2: key 'StageTimeout': expected Key=Value" },
	{ "Tier\n", "t.conf:1: key 'Tier': expected Key=Value" },
	{ T1 "=5\n", "t.conf:2: key '': expected Key=Value" },
	{ "Tier=a Path=/a =5\n", "t.conf:1: key '': expected Key=Value" },
	{ T1 "StageTimeout=\n", "t.conf:2: key 'StageTimeout': empty value" },
	{ T1 "StageTimeout=60 0\n", "t.conf:2: key '0': expected Key=Value" },
	{ T1 "a=1 b=1 c=1 d=1 e=1 f=1 g=1 h=1 i=1 j=1 k=1 l=1 m=1 n=1 o=1 "
	     "p=1 q=1\n",
	  "t.conf:2: more than 16 Key=Value pairs on one line" },
	{ T1 "PublicUser=\n", "t.conf:2: key 'PublicUser': empty value" },
	{ T1 "PartsDeadline=\n", "t.conf:2: key 'PartsDeadline': empty value" },
	/* Duplicates, any case. */
	{ T1 "StageTimeout=600\nstagetimeout=700\n",
	  "t.conf:3: key 'StageTimeout': duplicate (first set on line 2)" },
	{ T1 "CacheTTL=1\nCacheTTL=2\n",
	  "t.conf:3: key 'CacheTTL': duplicate (first set on line 2)" },
	{ T1 "NodeName=n1\nNodeName=n2\n",
	  "t.conf:3: key 'NodeName': duplicate (first set on line 2)" },
	{ T1 "DrainTimeout=60\ndraintimeout=60\n",
	  "t.conf:3: key 'DrainTimeout': duplicate (first set on line 2)" },
	{ T1 "PublicUser=nobody\npublicuser=nobody\n",
	  "t.conf:3: key 'PublicUser': duplicate (first set on line 2)" },
	{ T1 "MetricsJobGrace=1 MetricsJobGrace=2\n",
	  "t.conf:2: key 'MetricsJobGrace': duplicate (first set on line 2)" },
	{ T1 "RecommendHint=yes RecommendHint=no\n",
	  "t.conf:2: key 'RecommendHint': duplicate (first set on line 2)" },
	{ T1 "PeerPort=0\nPeerListen=*\npeerlisten=::1\n",
	  "t.conf:4: key 'PeerListen': duplicate (first set on line 3)" },
	{ T1 "ControllerHost=a\nControllerHost=b\n",
	  "t.conf:3: key 'ControllerHost': duplicate (first set on line 2)" },
	{ T1 "PartsDeadline=5\nPartsDeadline=6\n",
	  "t.conf:3: key 'PartsDeadline': duplicate (first set on line 2)" },
	{ T1 "StageBandwidth=1M\nStageBandwidth=2M\n",
	  "t.conf:3: key 'StageBandwidth': duplicate (first set on line 2)" },
	{ T1 "MetricsTextfile=/a/b/\nMetricsTextfile=no\n",
	  "t.conf:3: key 'MetricsTextfile': duplicate (first set on line 2)" },
	/* Numbers and their ranges. */
	{ T1 "StageTimeout=0\n",
	  "t.conf:2: key 'StageTimeout': 0 out of range 1..86400" },
	{ T1 "StageTimeout=86401\n",
	  "t.conf:2: key 'StageTimeout': 86401 out of range 1..86400" },
	{ T1 "StageTimeout=99999999999999999999999\n",
	  "t.conf:2: key 'StageTimeout': 99999999999999999999999 out of range "
	  "1..86400" },
	{ T1 "StageTimeout=abc\n",
	  "t.conf:2: key 'StageTimeout': 'abc' is not a number" },
	{ T1 "StageTimeout=-1\n",
	  "t.conf:2: key 'StageTimeout': '-1' is not a number" },
	{ T1 "CacheHighWatermark=101\n",
	  "t.conf:2: key 'CacheHighWatermark': 101 out of range 1..100" },
	{ T1 "CacheHighWatermark=0\n",
	  "t.conf:2: key 'CacheHighWatermark': 0 out of range 1..100" },
	{ T1 "CacheLowWatermark=100\n",
	  "t.conf:2: key 'CacheLowWatermark': 100 out of range 0..99" },
	{ T1 "CacheTTL=2592001\n",
	  "t.conf:2: key 'CacheTTL': 2592001 out of range 0..2592000" },
	{ T1 "CacheTTL=1h\n",
	  "t.conf:2: key 'CacheTTL': '1h' is not a number" },
	{ T1 "StageParallelism=0\n",
	  "t.conf:2: key 'StageParallelism': 0 out of range 1..64" },
	{ T1 "StageParallelism=65\n",
	  "t.conf:2: key 'StageParallelism': 65 out of range 1..64" },
	{ T1 "MaxConnections=0\n",
	  "t.conf:2: key 'MaxConnections': 0 out of range 1..4096" },
	{ T1 "MaxConnections=4097\n",
	  "t.conf:2: key 'MaxConnections': 4097 out of range 1..4096" },
	{ T1 "DrainTimeout=0\n",
	  "t.conf:2: key 'DrainTimeout': 0 out of range 1..86400" },
	{ T1 "DrainTimeout=86401\n",
	  "t.conf:2: key 'DrainTimeout': 86401 out of range 1..86400" },
	{ T1 "DrainTimeout=10m\n",
	  "t.conf:2: key 'DrainTimeout': '10m' is not a number" },
	{ T1 "RecommendMinJobs=0\n",
	  "t.conf:2: key 'RecommendMinJobs': 0 out of range 1..1000" },
	{ T1 "RecommendMinJobs=1001\n",
	  "t.conf:2: key 'RecommendMinJobs': 1001 out of range 1..1000" },
	{ T1 "RecommendOSTCount=65536\n",
	  "t.conf:2: key 'RecommendOSTCount': 65536 out of range 0..65535" },
	{ T1 "RecommendOSTCount=-1\n",
	  "t.conf:2: key 'RecommendOSTCount': '-1' is not a number" },
	{ T1 "MetricsInterval=0\n",
	  "t.conf:2: key 'MetricsInterval': 0 out of range 1..3600" },
	{ T1 "MetricsJobGrace=86401\n",
	  "t.conf:2: key 'MetricsJobGrace': 86401 out of range 0..86400" },
	{ T1 "PeerPort=65536\n",
	  "t.conf:2: key 'PeerPort': 65536 out of range 0..65535" },
	{ T1 "PeerPort=-1\n",
	  "t.conf:2: key 'PeerPort': '-1' is not a number" },
	{ T1 "PeerPort=http\n",
	  "t.conf:2: key 'PeerPort': 'http' is not a number" },
	{ T1 "PeerFetchSessions=257\n",
	  "t.conf:2: key 'PeerFetchSessions': 257 out of range 0..256" },
	{ T1 "PeerFetchRate=fast\n",
	  "t.conf:2: key 'PeerFetchRate': 'fast' is not a bandwidth (bytes "
	  "per second, e.g. 400M or 1G/s)" },
	{ T1 "PeerPartsTimeout=0\n",
	  "t.conf:2: key 'PeerPartsTimeout': 0 out of range 1..86400" },
	{ T1 "PeerPartsTimeout=86401\n",
	  "t.conf:2: key 'PeerPartsTimeout': 86401 out of range 1..86400" },
	{ T1 "ControllerPort=0\n",
	  "t.conf:2: key 'ControllerPort': 0 out of range 1..65535" },
	{ T1 "ControllerPort=65536\n",
	  "t.conf:2: key 'ControllerPort': 65536 out of range 1..65535" },
	{ T1 "ControllerPort=ctl\n",
	  "t.conf:2: key 'ControllerPort': 'ctl' is not a number" },
	{ T1 "OutboxLimit=0\n",
	  "t.conf:2: key 'OutboxLimit': 0 out of range 1..10000000" },
	{ T1 "OutboxLimit=10000001\n",
	  "t.conf:2: key 'OutboxLimit': 10000001 out of range 1..10000000" },
	{ T1 "OutboxLimit=many\n",
	  "t.conf:2: key 'OutboxLimit': 'many' is not a number" },
	{ T1 "OutboxLimit=99999999999999999999999\n",
	  "t.conf:2: key 'OutboxLimit': 99999999999999999999999 out of range "
	  "1..10000000" },
	{ T1 "PfsLicensePerJob=0\n",
	  "t.conf:2: key 'PfsLicensePerJob': 0 out of range 1..100000" },
	{ T1 "PfsLicensePerJob=100001\n",
	  "t.conf:2: key 'PfsLicensePerJob': 100001 out of range 1..100000" },
	{ T1 "PfsLicensePerJob=two\n",
	  "t.conf:2: key 'PfsLicensePerJob': 'two' is not a number" },
	{ T1 "TelemetryInterval=0.05\n",
	  "t.conf:2: key 'TelemetryInterval': '0.05' is not a number of "
	  "seconds from 0.1 to 60" },
	{ T1 "TelemetryInterval=61\n",
	  "t.conf:2: key 'TelemetryInterval': '61' is not a number of seconds "
	  "from 0.1 to 60" },
	{ T1 "TelemetryInterval=x\n",
	  "t.conf:2: key 'TelemetryInterval': 'x' is not a number of seconds "
	  "from 0.1 to 60" },
	/* Durations. */
	{ T1 "HistoryRetention=90y\n",
	  "t.conf:2: key 'HistoryRetention': invalid duration '90y' (want "
	  "N[s|m|h|d|w], e.g. 90d)" },
	{ T1 "HistoryRetention=99999999999\n",
	  "t.conf:2: key 'HistoryRetention': duration too long '99999999999' "
	  "(want N[s|m|h|d|w], e.g. 90d)" },
	{ T1 "RecommendWindow=0\n",
	  "t.conf:2: key 'RecommendWindow': must be longer than 0 seconds" },
	{ T1 "PlacementHold=2h\n",
	  "t.conf:2: key 'PlacementHold': at most 1h, not '2h'" },
	{ T1 "PlacementHold=soon\n",
	  "t.conf:2: key 'PlacementHold': invalid duration 'soon' (want "
	  "N[s|m|h|d|w], e.g. 90d)" },
	{ T1 "PartsDeadline=0\n",
	  "t.conf:2: key 'PartsDeadline': must be 1s to 86400s" },
	{ T1 "PartsDeadline=2d\n",
	  "t.conf:2: key 'PartsDeadline': must be 1s to 86400s" },
	{ T1 "PartsDeadline=soon\n",
	  "t.conf:2: key 'PartsDeadline': invalid duration 'soon' (want "
	  "N[s|m|h|d|w], e.g. 90d)" },
	{ T1 "PartsDeadline=-5\n",
	  "t.conf:2: key 'PartsDeadline': invalid duration '-5' (want "
	  "N[s|m|h|d|w], e.g. 90d)" },
	{ T1 "OutboxRetryMax=0\n",
	  "t.conf:2: key 'OutboxRetryMax': must be 1s to 3600s" },
	{ T1 "OutboxRetryMax=2h\n",
	  "t.conf:2: key 'OutboxRetryMax': must be 1s to 3600s" },
	{ T1 "OutboxRetryMax=later\n",
	  "t.conf:2: key 'OutboxRetryMax': invalid duration 'later' (want "
	  "N[s|m|h|d|w], e.g. 90d)" },
	/* yes or no, and the enums. */
	{ T1 "Trace=maybe\n",
	  "t.conf:2: key 'Trace': expected yes or no, not 'maybe'" },
	{ T1 "PublicDatasets=1\n",
	  "t.conf:2: key 'PublicDatasets': expected yes or no, not '1'" },
	{ T1 "RecommendHint=maybe\n",
	  "t.conf:2: key 'RecommendHint': expected yes or no, not 'maybe'" },
	{ T1 "Prestage=off\n",
	  "t.conf:2: key 'Prestage': expected yes or no, not 'off'" },
	{ T1 "OnStageFailure=maybe\n",
	  "t.conf:2: key 'OnStageFailure': unknown value 'maybe' (known: fail, "
	  "fallback)" },
	/* Names. */
	{ T1 "NodeName=.hidden\n",
	  "t.conf:2: key 'NodeName': invalid node name '.hidden' (want "
	  "[A-Za-z0-9_.-]{1,63}, not starting with '.')" },
	{ T1 "NodeName=a/b\n",
	  "t.conf:2: key 'NodeName': invalid node name 'a/b' (want "
	  "[A-Za-z0-9_.-]{1,63}, not starting with '.')" },
	{ T1 "NodeName=a\x01\n",
	  "t.conf:2: key 'NodeName': invalid node name 'a?' (want "
	  "[A-Za-z0-9_.-]{1,63}, not starting with '.')" },
	{ T1 "PublicUser=Nobody\n",
	  "t.conf:2: key 'PublicUser': 'Nobody' is not a user name "
	  "([a-z_][a-z0-9_.-]*, at most 32 characters)" },
	{ T1 "PublicUser=../root\n",
	  "t.conf:2: key 'PublicUser': '../root' is not a user name "
	  "([a-z_][a-z0-9_.-]*, at most 32 characters)" },
	{ T1 "PublicUser=a23456789012345678901234567890123\n",
	  "t.conf:2: key 'PublicUser': 'a23456789012345678901234567890123' is "
	  "not a user name ([a-z_][a-z0-9_.-]*, at most 32 characters)" },
	{ T1 "ControllerHost=ctl:6827\n",
	  "t.conf:2: key 'ControllerHost': 'ctl:6827' is not a host name or IP "
	  "address" },
	{ T1 "ControllerHost=a..b\n",
	  "t.conf:2: key 'ControllerHost': 'a..b' is not a host name or IP "
	  "address" },
	{ T1 "ControllerHost=ctl$x\n",
	  "t.conf:2: key 'ControllerHost': 'ctl$x' is not a host name or IP "
	  "address" },
	{ T1
	  "ControllerHost="
	  "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
	  "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
	  "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
	  "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\n",
	  "t.conf:2: key 'ControllerHost': "
	  "'aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa...'"
	  " is not a host name or IP address" },
	{ T1 "AdminGroup=-admin\n",
	  "t.conf:2: key 'AdminGroup': '-admin' is not a group name "
	  "([A-Za-z0-9_.-]{1,63}, not starting with '-' or '.')" },
	{ T1 "AdminGroup=a/b\n",
	  "t.conf:2: key 'AdminGroup': 'a/b' is not a group name "
	  "([A-Za-z0-9_.-]{1,63}, not starting with '-' or '.')" },
	{ T1
	  "AdminGroup="
	  "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\n",
	  "t.conf:2: key 'AdminGroup': "
	  "'aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa...'"
	  " is not a group name ([A-Za-z0-9_.-]{1,63}, not starting with '-' "
	  "or '.')" },
	{ T1 "PeerListen=node1\n",
	  "t.conf:2: key 'PeerListen': 'node1' is not an IP address or '*'" },
	{ T1 "PeerListen=10.0.0.300\n",
	  "t.conf:2: key 'PeerListen': '10.0.0.300' is not an IP address or "
	  "'*'" },
	{ T1 "PfsLicense=pfs:bw\n",
	  "t.conf:2: key 'PfsLicense': 'pfs:bw' is not a license name "
	  "([A-Za-z0-9_-]{1,31}, as in slurm.conf Licenses=)" },
	{ T1 "PfsLicense=a,b\n",
	  "t.conf:2: key 'PfsLicense': 'a,b' is not a license name "
	  "([A-Za-z0-9_-]{1,31}, as in slurm.conf Licenses=)" },
	{ T1 "PfsLicense=aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\n",
	  "t.conf:2: key 'PfsLicense': 'aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa' is "
	  "not a license name ([A-Za-z0-9_-]{1,31}, as in slurm.conf "
	  "Licenses=)" },
	/* Listen addresses. */
	{ T1 "MetricsListen=9464\n",
	  "t.conf:2: key 'MetricsListen': '9464' is not ADDR:PORT (an IP "
	  "address such as 127.0.0.1:9464 or [::1]:9464, port 1..65535) or "
	  "'no'" },
	{ T1 "MetricsListen=localhost:9464\n",
	  "t.conf:2: key 'MetricsListen': 'localhost:9464' is not ADDR:PORT "
	  "(an IP address such as 127.0.0.1:9464 or [::1]:9464, port "
	  "1..65535) or 'no'" },
	{ T1 "MetricsListen=127.0.0.1:65536\n",
	  "t.conf:2: key 'MetricsListen': '127.0.0.1:65536' is not ADDR:PORT "
	  "(an IP address such as 127.0.0.1:9464 or [::1]:9464, port "
	  "1..65535) or 'no'" },
	{ T1 "ControllerMetricsListen=9465\n",
	  "t.conf:2: key 'ControllerMetricsListen': '9465' is not ADDR:PORT (an "
	  "IP address such as 127.0.0.1:9464 or [::1]:9464, port 1..65535) or "
	  "'no'" },
	{ T1 "ControllerMetricsListen=ctl:9465\n",
	  "t.conf:2: key 'ControllerMetricsListen': 'ctl:9465' is not "
	  "ADDR:PORT (an IP address such as 127.0.0.1:9464 or [::1]:9464, "
	  "port 1..65535) or 'no'" },
	/* Paths. */
	{ T1 "TraceLibrary=lib/x.so\n",
	  "t.conf:2: key 'TraceLibrary': lib/x.so: not an absolute path" },
	{ T1 "TraceLibrary=/a.so:/b.so\n",
	  "t.conf:2: key 'TraceLibrary': '/a.so:/b.so' holds ':' or a blank "
	  "(LD_PRELOAD separators)" },
	{ T1 "SocketPath=run/x.sock\n",
	  "t.conf:2: key 'SocketPath': run/x.sock: not an absolute path" },
	{ T1 "SocketPath=/run/"
	     "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"
	     "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\n",
	  "t.conf:2: key 'SocketPath': /run/"
	  "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx...: "
	  "longer than 107 bytes" },
	{ T1 "StateDir=/var/../etc\n",
	  "t.conf:2: key 'StateDir': /var/../etc: contains a '..' component" },
	{ T1 "ProfileDir=/etc/./x\n",
	  "t.conf:2: key 'ProfileDir': /etc/./x: contains a '.' component" },
	{ T1 "ProfileDir=/etc/\x01x\n",
	  "t.conf:2: key 'ProfileDir': /etc/?x: contains a control character" },
	{ T1 "MetricsTextfile=relative.prom\n",
	  "t.conf:2: key 'MetricsTextfile': relative.prom: not an absolute "
	  "path" },
	{ T1 "MetricsTextfile=/var/lib/x/../i.prom\n",
	  "t.conf:2: key 'MetricsTextfile': /var/lib/x/../i.prom: contains "
	  "a '..' component" },
	{ T1 "MungeSocket=relative/sock\n",
	  "t.conf:2: key 'MungeSocket': relative/sock: not an absolute path" },
	{ T1 "MungeSocket=/a/../b\n",
	  "t.conf:2: key 'MungeSocket': /a/../b: contains a '..' component" },
	{ T1
	  "MungeSocket=/aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
	  "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\n",
	  "t.conf:2: key 'MungeSocket': longer than 107 bytes" },
	{ T1 "PfsPath=relative\n",
	  "t.conf:2: key 'PfsPath': relative: not an absolute path" },
	{ T1 "PfsPath=/a:/b\n", "t.conf:2: key 'PfsPath': '/a:/b' holds ':'" },
	{ T1 "PfsPath=/\n",
	  "t.conf:2: key 'PfsPath': '/' is not a PFS mount point (every read "
	  "would be observed)" },
	{ T1 "PfsPath=//\n",
	  "t.conf:2: key 'PfsPath': '/' is not a PFS mount point (every read "
	  "would be observed)" },
	{ T1 "PfsPath=/a/../..\n",
	  "t.conf:2: key 'PfsPath': /a/../..: contains a '..' component" },
	/* Bandwidths. */
	{ T1 "StageBandwidth=fast\n",
	  "t.conf:2: key 'StageBandwidth': 'fast' is not a bandwidth (bytes per "
	  "second, e.g. 400M or 1G/s)" },
	{ T1 "StageBandwidth=-1M\n",
	  "t.conf:2: key 'StageBandwidth': '-1M' is not a bandwidth (bytes per "
	  "second, e.g. 400M or 1G/s)" },
	{ T1 "StageBandwidth=1M/h\n",
	  "t.conf:2: key 'StageBandwidth': '1M/h' is not a bandwidth (bytes per "
	  "second, e.g. 400M or 1G/s)" },
	{ T1 "StageBandwidth=99999999999999999999P\n",
	  "t.conf:2: key 'StageBandwidth': '99999999999999999999P' is not a "
	  "bandwidth (bytes per second, e.g. 400M or 1G/s)" },
	{ T1 "StageBandwidth=12345678901234567890123456789012345678901234567890"
	     "12345678901234567890\n",
	  "t.conf:2: key 'StageBandwidth': "
	  "'1234567890123456789012345678901234567890123456789012345678901234...'"
	  " is too long" },
	{ T1 "StageBandwidthFallback=0\n",
	  "t.conf:2: key 'StageBandwidthFallback': must be above 0 (it is the "
	  "share a node takes alone)" },
	{ T1 "StageBandwidthFallback=no\n",
	  "t.conf:2: key 'StageBandwidthFallback': must be above 0 (it is the "
	  "share a node takes alone)" },
	/* Tier lines. */
	{ "Tier=nvme\n", "t.conf:1: key 'Path': required for tier 'nvme'" },
	{ "Tier=nvme Capacity=1G\n",
	  "t.conf:1: key 'Path': required for tier 'nvme'" },
	{ "Tier=\n", "t.conf:1: key 'Tier': empty value" },
	{ "Tier=NVMe Path=/a\n",
	  "t.conf:1: key 'Tier': invalid tier name 'NVMe' (want "
	  "[a-z0-9_-]{1,31})" },
	{ "Tier=a/b Path=/a\n",
	  "t.conf:1: key 'Tier': invalid tier name 'a/b' (want "
	  "[a-z0-9_-]{1,31})" },
	{ "Tier=..\n", "t.conf:1: key 'Tier': invalid tier name '..' (want "
		       "[a-z0-9_-]{1,31})" },
	{ "Tier=abcdefghijabcdefghijabcdefghijab Path=/a\n",
	  "t.conf:1: key 'Tier': invalid tier name "
	  "'abcdefghijabcdefghijabcdefghijab' (want [a-z0-9_-]{1,31})" },
	{ T1 "\n# x\nTier=nvme Path=/other\n",
	  "t.conf:4: key 'Tier': duplicate tier 'nvme' (first on line 1)" },
	{ T1 "Tier=bb Path=/local//nvme/\n",
	  "t.conf:2: key 'Path': /local/nvme overlaps tier 'nvme' "
	  "(/local/nvme, line 1)" },
	{ T1 "Tier=bb Path=/local/nvme/bb\n",
	  "t.conf:2: key 'Path': /local/nvme/bb overlaps tier 'nvme' "
	  "(/local/nvme, line 1)" },
	{ T1 "Tier=bb Path=/local\n",
	  "t.conf:2: key 'Path': /local overlaps tier 'nvme' (/local/nvme, "
	  "line 1)" },
	{ "Tier=a Path=rel\n",
	  "t.conf:1: key 'Path': rel: not an absolute path" },
	{ "Tier=a Path=/a/../b\n",
	  "t.conf:1: key 'Path': /a/../b: contains a '..' component" },
	{ "Tier=a Path=/a Capacity=12Q\n",
	  "t.conf:1: key 'Capacity': invalid size '12Q'" },
	{ "Tier=a Path=/a Capacity=99999P\n",
	  "t.conf:1: key 'Capacity': size too large '99999P'" },
	{ "Tier=a Path=/a Medium=floppy\n",
	  "t.conf:1: key 'Medium': unknown medium 'floppy' (known: nvme, ssd, "
	  "hdd, pmem, ram)" },
	{ "Tier=a Path=/a Shared=maybe\n",
	  "t.conf:1: key 'Shared': expected yes or no, not 'maybe'" },
	{ "Tier=a Path=/a Path=/b\n",
	  "t.conf:1: key 'Path': given twice for tier 'a'" },
	{ T1 "Tier=x Path=/x Shared=yes shared=no\n",
	  "t.conf:2: key 'Shared': given twice for tier 'x'" },
	{ "Tier=a Path=/a NodeName=n1\n",
	  "t.conf:1: key 'NodeName': not valid on a Tier line (put it on its "
	  "own line)" },
	{ "Tier=a Path=/a StageTimeout=5\n",
	  "t.conf:1: key 'StageTimeout': not valid on a Tier line (put it on "
	  "its own line)" },
	{ "Tier=a Path=/a Tier=b\n",
	  "t.conf:1: key 'Tier': one tier per line" },
	{ "Tier=a Path=/a Foo=1\n", "t.conf:1: unknown key 'Foo'" },
	{ "Path=/a\n", "t.conf:1: key 'Path': only valid on a Tier line" },
	{ "StageTimeout=5 Tier=a Path=/a\n",
	  "t.conf:1: key 'Tier': must start its line" },
	/* Rules across keys, after the last line. */
	{ "", "t.conf: key 'Tier': at least one Tier is required" },
	{ "# nothing\n\n",
	  "t.conf: key 'Tier': at least one Tier is required" },
	{ "StageTimeout=5\n",
	  "t.conf: key 'Tier': at least one Tier is required" },
	{ "DefaultTier=bb\n" T1,
	  "t.conf:1: key 'DefaultTier': unknown tier 'bb' (known: nvme)" },
	{ T1 "DefaultTier=BAD!\n",
	  "t.conf:2: key 'DefaultTier': invalid tier name 'BAD!' (want "
	  "[a-z0-9_-]{1,31})" },
	{ T1 "DefaultTier=nvme\nDefaultTier=nvme\n",
	  "t.conf:3: key 'DefaultTier': duplicate (first set on line 2)" },
	{ T1 "CacheLowWatermark=90\n",
	  "t.conf:2: key 'CacheLowWatermark': 90 is not below "
	  "CacheHighWatermark (85)" },
	{ T1 "CacheLowWatermark=60\nCacheHighWatermark=60\n",
	  "t.conf:2: key 'CacheLowWatermark': 60 is not below "
	  "CacheHighWatermark (60)" },
	{ T1 "CacheHighWatermark=70\n",
	  "t.conf:2: key 'CacheHighWatermark': 70 is not above "
	  "CacheLowWatermark (75)" },
};

START_TEST(test_error)
{
	const struct err_case *ec = &err_cases[_i];
	struct conf before, after;
	char err[CONF_ERR_MAX] = "";

	memset(&before, 0xa5, sizeof(before));
	after = before;
	errno = 0;
	ck_assert_int_eq(conf_parse(ec->text, "t.conf", &after, err,
				    sizeof(err)),
			 -1);
	ck_assert_int_eq(errno, EINVAL);
	ck_assert_str_eq(err, ec->want);
	ck_assert_ptr_null(strchr(err, '\n'));
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

START_TEST(test_find_tier)
{
	struct conf c;
	char err[CONF_ERR_MAX] = "";

	ck_assert_int_eq(conf_parse(good_conf, "t.conf", &c, err, sizeof(err)),
			 0);
	ck_assert_ptr_eq(conf_find_tier(&c, "bb"), &c.tiers[1]);
	ck_assert_ptr_null(conf_find_tier(&c, "BB"));
	ck_assert_ptr_null(conf_find_tier(&c, NULL));
	ck_assert_ptr_null(conf_find_tier(NULL, "bb"));
}
END_TEST

START_TEST(test_null_inputs)
{
	struct conf c;
	char err[CONF_ERR_MAX];

	ck_assert_int_eq(conf_parse(NULL, "t.conf", &c, err, sizeof(err)), -1);
	ck_assert_int_eq(errno, EINVAL);
	ck_assert_str_eq(err, "t.conf: no configuration text");
	ck_assert_int_eq(conf_parse("Tier=a Path=/a", "t.conf", NULL, err,
				    sizeof(err)),
			 -1);
	/* NULL origin and NULL err are fine. */
	ck_assert_int_eq(conf_parse("Foo=1", NULL, &c, err, sizeof(err)), -1);
	ck_assert_str_eq(err, "(config):1: unknown key 'Foo'");
	ck_assert_int_eq(conf_parse("Foo=1", NULL, &c, NULL, 0), -1);
	ck_assert_int_eq(conf_parse("Foo=1", NULL, &c, err, 1), -1);
	ck_assert_str_eq(err, "");
	ck_assert_int_eq(conf_dump(NULL, CONF_SCOPE_ALL, stdout), -1);
	ck_assert_int_eq(errno, EINVAL);
	ck_assert_int_eq(conf_dump(&c, CONF_SCOPE_ALL, NULL), -1);
}
END_TEST

/* ---- the table, row by row ---------------------------------------------- */

/* A value the file can say for K: its default written back, or one of
 * these for the keys whose default is no value. */
static const char *sample(const struct conf_key *k, bool tier_attr, char *buf,
			  size_t buflen)
{
	static const char *const samples[][2] = {
		{ "DefaultTier", "nvme" },
		{ "PeerListen", "*" },
		{ "MungeSocket", "/run/m.sock" },
		{ "AdminGroup", "admins" },
		{ "StageBandwidthFallback", "100M/s" },
		{ "Tier", "nvme" },
		{ "Path", "/t" },
	};
	struct conf c;
	char err[CONF_ERR_MAX];

	for (int i = 0; i < N(samples); i++)
		if (!strcmp(k->name, samples[i][0]))
			return samples[i][1];
	ck_assert_int_eq(conf_parse(T1, "t.conf", &c, err, sizeof(err)), 0);
	if (tier_attr)
		conf_key_format(k, &c.tiers[0], buf, buflen);
	else
		conf_key_format(k, &c, buf, buflen);
	ck_assert_msg(buf[0], "%s: no sample value (add one to samples[])",
		      k->name);
	return buf;
}

/* The shape of every row: a field of its type's size inside the struct, a
 * unique name, help, a scope, what its type needs. */
static void assert_row(const struct conf_key *k, size_t struct_size)
{
	size_t want = 0;

	ck_assert_msg(k->name && k->name[0], "a row without a name");
	ck_assert_msg(k->help && k->help[0], "%s: no help", k->name);
	ck_assert_msg(!strchr(k->help, '\n'), "%s: help on one line", k->name);
	ck_assert_msg(k->scope && !(k->scope & ~CONF_SCOPE_ALL),
		      "%s: scope %#x", k->name, k->scope);
	ck_assert_msg(k->def || k->def_doc || k->def_fn,
		      "%s: no default and no words for it", k->name);
	switch (k->type) {
	case CONF_T_BOOL:
		want = sizeof(bool);
		break;
	case CONF_T_UINT:
	case CONF_T_DURATION:
	case CONF_T_MSEC:
	case CONF_T_ENUM:
		want = sizeof(unsigned);
		ck_assert_msg(k->min <= k->max, "%s: min > max", k->name);
		ck_assert_msg(k->max <= UINT_MAX, "%s: max", k->name);
		break;
	case CONF_T_SIZE:
	case CONF_T_BANDWIDTH:
		want = sizeof(uint64_t);
		break;
	default:
		break;
	}
	if (want)
		ck_assert_msg(k->size == want,
			      "%s: field of %zu bytes, type "
			      "wants %zu",
			      k->name, k->size, want);
	if (k->type != CONF_T_SPECIAL && k->type != CONF_T_LINE)
		ck_assert_msg(k->size > 0 && k->offset + k->size <= struct_size,
			      "%s: field outside its struct", k->name);
	if (k->type == CONF_T_NAME)
		ck_assert_msg(k->valid && k->bad && k->values,
			      "%s: NAME needs valid, bad, values", k->name);
	if (k->type == CONF_T_ENUM)
		ck_assert_msg(k->names && k->nnames && k->noun,
			      "%s: ENUM needs names and noun", k->name);
	if (k->type == CONF_T_SPECIAL)
		ck_assert_msg(k->parse && k->format && k->values,
			      "%s: SPECIAL needs parse, format, values",
			      k->name);
	if (k->type == CONF_T_LINE)
		ck_assert_msg(k->line && k->dump && k->values,
			      "%s: LINE needs line, dump, values", k->name);
	if (k->forbid)
		ck_assert_msg(k->forbid_why, "%s: forbid without why", k->name);
	for (size_t i = 0; i < conf_nkeys; i++)
		ck_assert_msg(&conf_keys[i] == k ||
				  strcasecmp(conf_keys[i].name, k->name),
			      "%s: named twice", k->name);
	for (size_t i = 0; i < conf_ntier_attrs; i++)
		ck_assert_msg(&conf_tier_attrs[i] == k ||
				  strcasecmp(conf_tier_attrs[i].name, k->name),
			      "%s: named twice", k->name);
}

START_TEST(test_row_shape)
{
	assert_row(&conf_keys[_i], sizeof(struct conf));
}
END_TEST

START_TEST(test_tier_attr_shape)
{
	assert_row(&conf_tier_attrs[_i], sizeof(struct conf_tier));
}
END_TEST

/* Each default is a value the key takes, and is what the defaults hold. */
START_TEST(test_row_default_parses)
{
	const struct conf_key *k = &conf_keys[_i];
	char text[512], err[CONF_ERR_MAX] = "", got[CONF_PATH_MAX],
			want[CONF_PATH_MAX];
	struct conf c, d;

	if (!k->def || k->type == CONF_T_LINE)
		return;
	snprintf(text, sizeof(text), T1 "%s=%s\n", k->name, k->def);
	ck_assert_msg(conf_parse(text, "t.conf", &c, err, sizeof(err)) == 0,
		      "%s's default: %s", k->name, err);
	conf_set_defaults(&d);
	field_text(k, &c, got, sizeof(got));
	field_text(k, &d, want, sizeof(want));
	ck_assert_str_eq(got, want);
}
END_TEST

/* A value written back by conf_key_format reads the same: for the
 * default, and for the key in lower case. */
START_TEST(test_row_write_back)
{
	const struct conf_key *k = &conf_keys[_i];
	char text[512], err[CONF_ERR_MAX] = "", buf[CONF_PATH_MAX],
			out[CONF_PATH_MAX], lower[64];
	const char *val = sample(k, false, buf, sizeof(buf));
	struct conf c;
	size_t i;

	if (k->type == CONF_T_LINE)
		return;
	for (i = 0; k->name[i] && i + 1 < sizeof(lower); i++)
		lower[i] = (char)tolower((unsigned char)k->name[i]);
	lower[i] = '\0';
	snprintf(text, sizeof(text), T1 "%s=%s\n", lower, val);
	ck_assert_msg(conf_parse(text, "t.conf", &c, err, sizeof(err)) == 0,
		      "%s", err);
	conf_key_format(k, &c, out, sizeof(out));
	ck_assert_str_eq(out, val);
}
END_TEST

/* Every key once per file, and never on a Tier line. */
START_TEST(test_row_refused)
{
	const struct conf_key *k = &conf_keys[_i];
	char text[512], err[CONF_ERR_MAX] = "", want[256], buf[CONF_PATH_MAX];
	const char *val = sample(k, false, buf, sizeof(buf));
	struct conf c;

	snprintf(text, sizeof(text), "Tier=a Path=/a %s=%s\n", k->name, val);
	ck_assert_int_eq(conf_parse(text, "t.conf", &c, err, sizeof(err)), -1);
	if (k->type == CONF_T_LINE)
		snprintf(want, sizeof(want),
			 "t.conf:1: key '%s': one tier per line", k->name);
	else
		snprintf(want, sizeof(want),
			 "t.conf:1: key '%s': not valid on a Tier line (put it "
			 "on its own line)",
			 k->name);
	ck_assert_str_eq(err, want);
	if (k->type == CONF_T_LINE)
		return;
	snprintf(text, sizeof(text), T1 "%s=%s\n%s=%s\n", k->name, val, k->name,
		 val);
	ck_assert_int_eq(conf_parse(text, "t.conf", &c, err, sizeof(err)), -1);
	snprintf(want, sizeof(want),
		 "t.conf:3: key '%s': duplicate (first set on line 2)",
		 k->name);
	ck_assert_str_eq(err, want);
}
END_TEST

START_TEST(test_tier_attr_write_back)
{
	const struct conf_key *k = &conf_tier_attrs[_i];
	char text[512], err[CONF_ERR_MAX] = "", buf[CONF_PATH_MAX],
			out[CONF_PATH_MAX];
	const char *val = sample(k, true, buf, sizeof(buf));
	struct conf c;

	snprintf(text, sizeof(text), "Tier=a Path=/a\nTier=b %s=%s%s\n",
		 k->name, val, strcmp(k->name, "Path") ? " Path=/b" : "");
	ck_assert_msg(conf_parse(text, "t.conf", &c, err, sizeof(err)) == 0,
		      "%s", err);
	conf_key_format(k, &c.tiers[1], out, sizeof(out));
	ck_assert_str_eq(out, val);
	snprintf(text, sizeof(text), "%s=%s\n", k->name, val);
	ck_assert_int_eq(conf_parse(text, "t.conf", &c, err, sizeof(err)), -1);
}
END_TEST

/* ---- conf_dump: --check-config -v --------------------------------------- */

static const char all_changed[] =
    "Tier=nvme Path=/local/nvme Capacity=800G Medium=ssd Shared=yes\n"
    "Tier=bb Path=/bb Capacity=1000\n"
    "SocketPath=/run/x.sock StateDir=/s ProfileDir=/p DefaultTier=bb\n"
    "StageTimeout=5 OnStageFailure=fallback CacheHighWatermark=90\n"
    "CacheLowWatermark=10 MaxConnections=7 CacheTTL=0 StageParallelism=2\n"
    "NodeName=n1 DrainTimeout=9 TelemetryInterval=0.25 HistoryRetention=0\n"
    "RecommendMinJobs=9 RecommendWindow=12h RecommendHint=no\n"
    "RecommendOSTCount=48 MetricsListen=no MetricsTextfile=/m.prom\n"
    "MetricsInterval=2 MetricsJobGrace=0 Trace=yes TraceLibrary=/t.so\n"
    "PeerPort=0 PeerListen=::1 PeerPartsTimeout=5 MungeSocket=/m.sock\n"
    "PublicDatasets=no PublicUser=pub ControllerHost=ctl ControllerPort=7\n"
    "ControllerMetricsListen=[::1]:1 AdminGroup=adm PartsDeadline=1d\n"
    "OutboxLimit=3 OutboxRetryMax=1h StageBandwidth=1G/s\n"
    "StageBandwidthFallback=100M PfsLicense=pfs PfsLicensePerJob=4\n"
    "Placement=no PlacementHold=90 Prestage=no PfsPath=/lustre\n";

static const char *const dump_texts[] = { T1, good_conf, all_changed };

/* C dumped and parsed back is C, field by field. */
START_TEST(test_dump_round_trip)
{
	struct conf c, back;
	char err[CONF_ERR_MAX] = "", *out = NULL, a[CONF_PATH_MAX],
	     b[CONF_PATH_MAX];
	size_t outlen = 0;
	FILE *f;

	ck_assert_msg(conf_parse(dump_texts[_i], "t.conf", &c, err,
				 sizeof(err)) == 0,
		      "%s", err);
	f = open_memstream(&out, &outlen);
	ck_assert_ptr_nonnull(f);
	ck_assert_int_eq(conf_dump(&c, CONF_SCOPE_ALL, f), 0);
	ck_assert_int_eq(fclose(f), 0);
	ck_assert_msg(conf_parse(out, "dump", &back, err, sizeof(err)) == 0,
		      "%s in:\n%s", err, out);
	for (size_t i = 0; i < conf_nkeys; i++) {
		field_text(&conf_keys[i], &c, a, sizeof(a));
		field_text(&conf_keys[i], &back, b, sizeof(b));
		ck_assert_msg(!strcmp(a, b), "%s: '%s' came back as '%s'",
			      conf_keys[i].name, a, b);
	}
	ck_assert_uint_eq(back.ntiers, c.ntiers);
	for (size_t t = 0; t < c.ntiers; t++) {
		ck_assert_str_eq(back.tiers[t].name, c.tiers[t].name);
		for (size_t i = 0; i < conf_ntier_attrs; i++) {
			field_text(&conf_tier_attrs[i], &c.tiers[t], a,
				   sizeof(a));
			field_text(&conf_tier_attrs[i], &back.tiers[t], b,
				   sizeof(b));
			ck_assert_str_eq(a, b);
		}
	}
	free(out);
}
END_TEST

/* What each program's --check-config -v shows: its keys, in words a file
 * would use, unset ones commented out. */
START_TEST(test_dump_scope)
{
	struct conf c;
	char err[CONF_ERR_MAX] = "", *out = NULL;
	size_t outlen = 0;
	FILE *f;

	ck_assert_int_eq(conf_parse(good_conf, "t.conf", &c, err, sizeof(err)),
			 0);
	f = open_memstream(&out, &outlen);
	ck_assert_ptr_nonnull(f);
	ck_assert_int_eq(conf_dump(&c, CONF_SCOPE_NODE, f), 0);
	ck_assert_int_eq(fclose(f), 0);
	ck_assert_ptr_nonnull(strstr(out, "Tier=nvme Path=/local/nvme/iostage "
					  "Capacity=800G Medium=nvme "
					  "Shared=no\n"));
	ck_assert_ptr_nonnull(strstr(out, "\nTier=bb Path=/bb/iostage "
					  "Capacity=20T Medium=ssd "
					  "Shared=yes\n"));
	ck_assert_ptr_nonnull(strstr(out, "\nDefaultTier=bb\n"));
	ck_assert_ptr_nonnull(strstr(out, "\nHistoryRetention=90d\n"));
	ck_assert_ptr_nonnull(strstr(out, "\nTelemetryInterval=1\n"));
	ck_assert_ptr_nonnull(strstr(out, "\nMetricsTextfile=no\n"));
	ck_assert_ptr_nonnull(strstr(out, "\n#PeerListen=\n"));
	ck_assert_ptr_nonnull(strstr(out, "\n#StageBandwidthFallback=\n"));
	ck_assert_ptr_nonnull(strstr(out, "\nStageBandwidth=no\n"));
	ck_assert_ptr_null(strstr(out, "AdminGroup")); /* iostagectld's */
	ck_assert_ptr_null(strstr(out, "PfsLicense")); /* the CLI's */
	free(out);
	out = NULL;
	f = open_memstream(&out, &outlen);
	ck_assert_ptr_nonnull(f);
	ck_assert_int_eq(conf_dump(&c, CONF_SCOPE_CTLD, f), 0);
	ck_assert_int_eq(fclose(f), 0);
	ck_assert_ptr_nonnull(strstr(out, "\n#AdminGroup=\n"));
	ck_assert_ptr_nonnull(strstr(out, "\nPartsDeadline=5m\n"));
	ck_assert_ptr_null(strstr(out, "MetricsTextfile"));
	free(out);
}
END_TEST

START_TEST(test_values_words)
{
	const struct conf_key *k;
	char buf[256];

	k = conf_key_find(conf_keys, conf_nkeys, "stagetimeout");
	ck_assert_ptr_nonnull(k);
	conf_key_values(k, buf, sizeof(buf));
	ck_assert_str_eq(buf, "1..86400 seconds");
	k = conf_key_find(conf_keys, conf_nkeys, "PlacementHold");
	conf_key_values(k, buf, sizeof(buf));
	ck_assert_str_eq(buf, "a duration N[s|m|h|d|w], 0 to 1h");
	k = conf_key_find(conf_keys, conf_nkeys, "MetricsListen");
	conf_key_values(k, buf, sizeof(buf));
	ck_assert_str_eq(buf, "IPv4:PORT or [IPv6]:PORT, or no");
	k = conf_key_find(conf_keys, conf_nkeys, "OnStageFailure");
	conf_key_values(k, buf, sizeof(buf));
	ck_assert_str_eq(buf, "fail or fallback");
	conf_scope_names(CONF_SCOPE_NODE | CONF_SCOPE_USER, buf, sizeof(buf));
	ck_assert_str_eq(buf, "node, user");
	conf_scope_names(CONF_SCOPE_ALL, buf, sizeof(buf));
	ck_assert_str_eq(buf, "node, service, user");
	ck_assert_ptr_null(conf_key_find(conf_keys, conf_nkeys, "Path"));
	ck_assert_ptr_null(conf_key_find(conf_keys, conf_nkeys, ""));
}
END_TEST

/* ---- iostage.conf(5) against the table ----------------------------------- */

static char *read_man(void)
{
	char reason[256];
	char *page = smallfile_read(MAN_PAGE, 1024 * 1024, reason,
				    sizeof(reason));

	ck_assert_msg(page, "%s: %s", MAN_PAGE, reason);
	return page;
}

/* The summary between the marks is what `make man` writes now. */
START_TEST(test_man_summary_current)
{
	char *page = read_man(), *fresh = NULL;

	ck_assert_int_eq(conf_man_splice(page, &fresh), 0);
	ck_assert_msg(strcmp(page, fresh) == 0,
		      "%s: the key summary is stale: run `make man` and commit "
		      "the page",
		      MAN_PAGE);
	free(fresh);
	free(page);
	ck_assert_int_eq(conf_man_splice("no marks\n", &fresh), -1);
	ck_assert_int_eq(errno, EINVAL);
	ck_assert_int_eq(conf_man_splice(CONF_MAN_END "\n" CONF_MAN_BEGIN "\n",
					 &fresh),
			 -1);
	ck_assert_int_eq(conf_man_splice(NULL, &fresh), -1);
}
END_TEST

/* The row NAME ("Key" of a "Key=" in a .TP heading) is, spelled as the
 * table spells it (the page is where users copy keys from), or NULL. */
static const struct conf_key *table_row(const struct conf_key *table, size_t n,
					const char *name)
{
	const struct conf_key *k = conf_key_find(table, n, name);

	return k && !strcmp(k->name, name) ? k : NULL;
}

static bool table_has(const char *name)
{
	return table_row(conf_keys, conf_nkeys, name) ||
	       table_row(conf_tier_attrs, conf_ntier_attrs, name);
}

/* The prose (KEYS, outside the summary) has a .TP entry for every key of
 * the table and for nothing else: the words before '=' on each heading
 * line (".BI StageTimeout= seconds", ".BI Tier= name \" Path=\" dir ..."). */
START_TEST(test_man_prose_keys)
{
	char *page = read_man(), *save = NULL, *line;
	char seen[CONF_KEYS_MAX * 2] = { 0 };
	bool in_summary = false, heading = false;

	for (line = strtok_r(page, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save)) {
		if (!strncmp(line, CONF_MAN_BEGIN, strlen(CONF_MAN_BEGIN)))
			in_summary = true;
		if (!strncmp(line, CONF_MAN_END, strlen(CONF_MAN_END)))
			in_summary = false;
		if (in_summary)
			continue;
		if (!strcmp(line, ".TP")) {
			heading = true;
			continue;
		}
		if (!heading)
			continue;
		heading = false;
		for (char *eq = strchr(line, '='); eq;
		     eq = strchr(eq + 1, '=')) {
			char *start = eq, name[64];
			const struct conf_key *k;

			while (start > line &&
			       isalpha((unsigned char)start[-1]))
				start--;
			if (start == eq)
				continue;
			snprintf(name, sizeof(name), "%.*s", (int)(eq - start),
				 start);
			ck_assert_msg(table_has(name),
				      "%s names %s=, which is no key: '%s'",
				      MAN_PAGE, name, line);
			k = table_row(conf_keys, conf_nkeys, name);
			if (k)
				seen[k - conf_keys] = 1;
			k = table_row(conf_tier_attrs, conf_ntier_attrs, name);
			if (k)
				seen[CONF_KEYS_MAX + (k - conf_tier_attrs)] = 1;
		}
	}
	for (size_t i = 0; i < conf_nkeys; i++)
		ck_assert_msg(seen[i], "%s has no .TP entry for %s", MAN_PAGE,
			      conf_keys[i].name);
	for (size_t i = 0; i < conf_ntier_attrs; i++)
		ck_assert_msg(seen[CONF_KEYS_MAX + i],
			      "%s has no .TP entry for %s", MAN_PAGE,
			      conf_tier_attrs[i].name);
	free(page);
}
END_TEST

/* ---- the value parsers on their own ----------------------------------------
 */

struct size_case {
	const char *in;
	int err; /* 0, EINVAL or ERANGE */
	uint64_t want;
};

static const struct size_case size_cases[] = {
	{ "0", 0, 0 },
	{ "1024", 0, 1024 },
	{ "1B", 0, 1 },
	{ "1b", 0, 1 },
	{ "1K", 0, 1024 },
	{ "1k", 0, 1024 },
	{ "1KB", 0, 1024 },
	{ "1KiB", 0, 1024 },
	{ "512M", 0, 512ULL << 20 },
	{ "800G", 0, 800ULL << 30 },
	{ "20T", 0, 20ULL << 40 },
	{ "1P", 0, 1ULL << 50 },
	{ "16383P", 0, 16383ULL << 50 },
	{ "007", 0, 7 },
	{ "18446744073709551615", 0, UINT64_MAX },
	{ "18446744073709551616", ERANGE, 0 },
	{ "99999999999999999999999", ERANGE, 0 },
	{ "99999999999999999999999K", ERANGE, 0 },
	{ "16384P", ERANGE, 0 },
	{ "17179869184G", ERANGE, 0 },
	{ "12Q", EINVAL, 0 },
	{ "99999999999999999999999Q", EINVAL, 0 },
	{ "", EINVAL, 0 },
	{ NULL, EINVAL, 0 },
	{ "K", EINVAL, 0 },
	{ "-1", EINVAL, 0 },
	{ "+1", EINVAL, 0 },
	{ " 1", EINVAL, 0 },
	{ "1 ", EINVAL, 0 },
	{ "1.5G", EINVAL, 0 },
	{ "1iB", EINVAL, 0 },
	{ "1KBB", EINVAL, 0 },
	{ "1KiBx", EINVAL, 0 },
	{ "1E", EINVAL, 0 },
	{ "0x10", EINVAL, 0 },
};

START_TEST(test_size)
{
	const struct size_case *sc = &size_cases[_i];
	uint64_t v = 42;

	errno = 0;
	if (sc->err == 0) {
		ck_assert_msg(conf_parse_size(sc->in, &v) == 0, "case %d '%s'",
			      _i, sc->in);
		ck_assert_uint_eq(v, sc->want);
	} else {
		ck_assert_msg(conf_parse_size(sc->in, &v) == -1, "case %d '%s'",
			      _i, sc->in ? sc->in : "(null)");
		ck_assert_int_eq(errno, sc->err);
		ck_assert_uint_eq(v, 42); /* untouched */
	}
}
END_TEST

static const struct {
	const char *s;
	int rc;
	unsigned want;
} duration_cases[] = {
	{ "0", 0, 0 },
	{ "45", 0, 45 },
	{ "45s", 0, 45 },
	{ "30m", 0, 1800 },
	{ "12h", 0, 43200 },
	{ "90d", 0, 7776000 },
	{ "2w", 0, 1209600 },
	{ "90D", 0, 7776000 },
	{ "4294967295", 0, UINT_MAX },
	{ "4294967296", -1, 0 },
	{ "49000d", 0, 4233600000U },
	{ "50000d", -1, 0 },
	{ "", -1, 0 },
	{ "d", -1, 0 },
	{ "-1", -1, 0 },
	{ "1x", -1, 0 },
	{ "1dd", -1, 0 },
	{ "1 d", -1, 0 },
	{ "99999999999999999999d", -1, 0 },
	{ NULL, -1, 0 },
};

START_TEST(test_duration)
{
	unsigned v = 12345;

	ck_assert_msg(conf_parse_duration(duration_cases[_i].s, &v) ==
			  duration_cases[_i].rc,
		      "case '%s'",
		      duration_cases[_i].s ? duration_cases[_i].s : "(null)");
	ck_assert_uint_eq(v, duration_cases[_i].rc == 0
				 ? duration_cases[_i].want
				 : 12345);
	ck_assert_int_eq(conf_parse_duration("1", NULL), -1);
}
END_TEST

static const struct {
	const char *s, *addr;
	unsigned port;
} listen_cases[] = {
	{ "127.0.0.1:9464", "127.0.0.1", 9464 },
	{ "0.0.0.0:1", "0.0.0.0", 1 },
	{ "[::1]:65535", "::1", 65535 },
	{ "[fe80::1]:80", "fe80::1", 80 },
	{ "127.0.0.1:0", NULL, 0 },
	{ "127.0.0.1:", NULL, 0 },
	{ "127.0.0.1:99999999999999999999", NULL, 0 },
	{ "127.0.0.1:80x", NULL, 0 },
	{ "::1:80", NULL, 0 },
	{ "[::1]80", NULL, 0 },
	{ "[::1:80", NULL, 0 },
	{ "999.0.0.1:80", NULL, 0 },
	{ "", NULL, 0 },
	{ NULL, NULL, 0 },
	{ "1111111111111111111111111111111111111111111111111111111111111111"
	  "1:80",
	  NULL, 0 },
};

START_TEST(test_parse_listen)
{
	char addr[CONF_LISTEN_MAX] = "untouched";
	unsigned port = 7;
	int r = conf_parse_listen(listen_cases[_i].s, addr, sizeof(addr),
				  &port);

	if (listen_cases[_i].addr) {
		ck_assert_int_eq(r, 0);
		ck_assert_str_eq(addr, listen_cases[_i].addr);
		ck_assert_uint_eq(port, listen_cases[_i].port);
	} else {
		ck_assert_int_eq(r, -1);
		ck_assert_int_eq(errno, EINVAL);
		ck_assert_str_eq(addr, "untouched");
		ck_assert_uint_eq(port, 7);
	}
}
END_TEST

/* Names: which predicate, the input, the verdict. */
enum name_kind { NODE, HOST, GROUP, USER };

static const struct {
	enum name_kind kind;
	const char *s;
	bool ok;
} name_cases[] = {
	{ NODE, NULL, false },
	{ NODE, "", false },
	{ NODE, ".", false },
	{ NODE, "..", false },
	{ NODE, ".a", false },
	{ NODE, "a", true },
	{ NODE, "node1", true },
	{ NODE, "node-1.rack_2", true },
	{ NODE, "a b", false },
	{ NODE, "a/b", false },
	{ NODE, "a\nb", false },
	{ NODE, "n\xc3\xa9", false },
	{ NODE,
	  "123456789012345678901234567890123456789012345678901234567890123",
	  true },
	{ NODE,
	  "1234567890123456789012345678901234567890123456789012345678901234",
	  false },
	{ HOST, "ctl", true },
	{ HOST, "ctl-1.example.org", true },
	{ HOST, "10.0.0.1", true },
	{ HOST, "::1", true },
	{ HOST, NULL, false },
	{ HOST, "", false },
	{ HOST, ".ctl", false },
	{ HOST, "-ctl", false },
	{ HOST, "ctl-", false },
	{ HOST, "a..b", false },
	{ HOST, "ctl:6827", false },
	{ HOST, "ctl;rm", false },
	{ HOST, "ctl/x", false },
	{ GROUP, "admins", true },
	{ GROUP, "hpc_admin.1", true },
	{ GROUP, NULL, false },
	{ GROUP, "", false },
	{ GROUP, "-x", false },
	{ GROUP, "a b", false },
	{ GROUP, "a:b", false },
	{ USER, "_svc", true },
	{ USER, "iostage-pub_1.x", true },
	{ USER, NULL, false },
	{ USER, "", false },
	{ USER, "1abc", false },
	{ USER, "a b", false },
	{ USER, "Nobody", false },
};

START_TEST(test_names)
{
	bool (*const is[])(const char *) = {
		[NODE] = conf_is_node_name,
		[HOST] = conf_is_host,
		[GROUP] = conf_is_group_name,
		[USER] = conf_is_user_name,
	};
	const char *s = name_cases[_i].s;

	ck_assert_msg(is[name_cases[_i].kind](s) == name_cases[_i].ok,
		      "case %d '%s': want %d", _i, s ? s : "(null)",
		      name_cases[_i].ok);
}
END_TEST

START_TEST(test_enum_names)
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

/* ---- conf_load ------------------------------------------------------------
 */

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

static Suite *conf_suite(void)
{
	Suite *s = suite_create("conf");
	TCase *tc = tcase_create("files");
	TCase *tt = tcase_create("table");
	TCase *tv = tcase_create("values");
	TCase *tl = tcase_create("load");

	tcase_add_loop_test(tc, test_ok, 0, N(ok_cases));
	tcase_add_loop_test(tc, test_default, 0, N(default_cases));
	tcase_add_test(tc, test_default_node_name);
	tcase_add_loop_test(tc, test_error, 0, N(err_cases));
	tcase_add_test(tc, test_too_many_tiers);
	tcase_add_test(tc, test_find_tier);
	tcase_add_test(tc, test_null_inputs);
	suite_add_tcase(s, tc);

	tcase_add_loop_test(tt, test_row_shape, 0, (int)conf_nkeys);
	tcase_add_loop_test(tt, test_tier_attr_shape, 0, (int)conf_ntier_attrs);
	tcase_add_loop_test(tt, test_default_listed, 0, (int)conf_nkeys);
	tcase_add_loop_test(tt, test_row_default_parses, 0, (int)conf_nkeys);
	tcase_add_loop_test(tt, test_row_write_back, 0, (int)conf_nkeys);
	tcase_add_loop_test(tt, test_row_refused, 0, (int)conf_nkeys);
	tcase_add_loop_test(tt, test_tier_attr_write_back, 0,
			    (int)conf_ntier_attrs);
	tcase_add_loop_test(tt, test_dump_round_trip, 0, N(dump_texts));
	tcase_add_test(tt, test_dump_scope);
	tcase_add_test(tt, test_values_words);
	tcase_add_test(tt, test_man_summary_current);
	tcase_add_test(tt, test_man_prose_keys);
	suite_add_tcase(s, tt);

	tcase_add_loop_test(tv, test_size, 0, N(size_cases));
	tcase_add_loop_test(tv, test_duration, 0, N(duration_cases));
	tcase_add_loop_test(tv, test_parse_listen, 0, N(listen_cases));
	tcase_add_loop_test(tv, test_names, 0, N(name_cases));
	tcase_add_test(tv, test_enum_names);
	suite_add_tcase(s, tv);

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
