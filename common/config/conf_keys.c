/* conf_keys.c - every key of iostage.conf, one row each (conf_keys.h).
 *
 * To add a key: a field in struct conf (conf.h), a row here (its place
 * is where the man page should list it), the prose entry in
 * docs/man/iostage.conf.5, `make man`, and the code that reads the field.
 * check_conf walks the table: each default parses, a dump reads back the
 * same, every key is refused twice, on a Tier line, and when the man page
 * does not describe it.
 *
 * Scopes say who reads a key: NODE (iostaged, the Prolog and Epilog),
 * CTLD (iostagectld), USER (the SPANK plugin, iostage(1)). The history
 * and recommendation keys are NODE too: a node without a service keeps
 * its own history (docs/ARCHITECTURE.md).
 */
#include <ctype.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "common/config/conf.h"
#include "common/config/conf_keys.h"
#include "common/config/conf_parse.h"
#include "common/config/conf_tiers.h"

#define NODE CONF_SCOPE_NODE
#define CTLD CONF_SCOPE_CTLD
#define USER CONF_SCOPE_USER
#define CONF_ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

/* PublicUser's refusal names its bound: keep the two together. */
_Static_assert(CONF_USER_MAX == 33, "PublicUser's message says 32");

/* The names of the enums' values, in their order. */
const char *const conf_media[] = {
	[TIER_MEDIUM_NVME] = "nvme", [TIER_MEDIUM_SSD] = "ssd",
	[TIER_MEDIUM_HDD] = "hdd",   [TIER_MEDIUM_PMEM] = "pmem",
	[TIER_MEDIUM_RAM] = "ram",
};
const size_t conf_nmedia = CONF_ARRAY_LEN(conf_media);

const char *const conf_policies[] = {
	[STAGE_FAILURE_FAIL] = "fail",
	[STAGE_FAILURE_FALLBACK] = "fallback",
};
const size_t conf_npolicies = CONF_ARRAY_LEN(conf_policies);

const char *const conf_node_fills[] = {
	[NODE_FILL_PARTS] = "parts",
	[NODE_FILL_HEAD] = "head",
	[NODE_FILL_NO] = "no",
};

/* ---- what a row cannot say with data alone ---------------------------- */

/* DefaultTier names a tier that may come later in the file: kept aside,
 * resolved by conf.c once every line is read. */
static int default_tier_parse(struct conf_parser *cp, const struct conf_key *k,
			      const char *val, void *base)
{
	char show[CONF_SHOW_BUF];

	(void)base;
	if (!conf_is_tier_name(val))
		return conf_fail(cp,
				 "key '%s': invalid tier name '%s' (want "
				 "[a-z0-9_-]{1,31})",
				 k->name, conf_show(val, show, sizeof(show)));
	snprintf(cp->default_tier, sizeof(cp->default_tier), "%s", val);
	return 0;
}

static void default_tier_format(const struct conf_key *k, const void *base,
				char *buf, size_t buflen)
{
	const struct conf *c = base;

	(void)k;
	snprintf(buf, buflen, "%s",
		 c->default_tier < c->ntiers && c->ntiers <= CONF_MAX_TIERS
		     ? c->tiers[c->default_tier].name
		     : "");
}

/* The short host name, made a valid NodeName ("localhost" if none). */
static void node_name_default(void *base)
{
	struct conf *c = base;
	char host[256] = "";
	size_t i;

	if (gethostname(host, sizeof(host) - 1) < 0)
		host[0] = '\0';
	host[sizeof(host) - 1] = '\0';
	host[strcspn(host, ".")] = '\0';
	for (i = 0; host[i]; i++)
		if (!isalnum((unsigned char)host[i]) && host[i] != '_' &&
		    host[i] != '-')
			host[i] = '-';
	/* NodeName is at most CONF_NODE_MAX - 1 bytes: cut longer names. */
	snprintf(c->node_name, sizeof(c->node_name), "%.*s", CONF_NODE_MAX - 1,
		 host[0] ? host : "localhost");
}

/* PfsPath: every read would be observed under "/". */
static int pfs_path_check(struct conf_parser *cp, const struct conf_key *k,
			  const char *val, const void *base)
{
	const struct conf *c = base;

	(void)val;
	if (!strcmp(c->pfs_path, "/"))
		return conf_fail(cp,
				 "key '%s': '/' is not a PFS mount point "
				 "(every read would be observed)",
				 k->name);
	return 0;
}

/* StageBandwidthFallback: 0 is what "unset" means (StageBandwidth/8). */
static int fallback_check(struct conf_parser *cp, const struct conf_key *k,
			  const char *val, const void *base)
{
	const struct conf *c = base;

	(void)val;
	if (!c->stage_bandwidth_fallback)
		return conf_fail(cp,
				 "key '%s': must be above 0 (it is the share "
				 "a node takes alone)",
				 k->name);
	return 0;
}

/* ---- the table ---------------------------------------------------------- */

const struct conf_key conf_keys[] = {
	{ .name = "SocketPath",
	  .type = CONF_T_PATH,
	  CONF_FIELD(socket_path),
	  .def = "/run/iostage/iostaged.sock",
	  .scope = NODE | CTLD | USER,
	  .help = "iostaged's Unix socket (iostagectld's pid file goes beside "
		  "it)" },
	{ .name = "StateDir",
	  .type = CONF_T_PATH,
	  CONF_FIELD(state_dir),
	  .def = "/var/lib/iostage",
	  .scope = NODE | CTLD,
	  .help = "Job records, the build journal, the outbox, the history" },
	{ .name = "ProfileDir",
	  .type = CONF_T_PATH,
	  CONF_FIELD(profile_dir),
	  .def = IOSTAGE_PROFILE_DIR,
	  .scope = USER,
	  .help = "Site profiles: --io-profile=NAME reads DIR/NAME.json" },
	{ .name = "Tier",
	  .type = CONF_T_LINE,
	  .scope = NODE | CTLD | USER,
	  .def_doc = "none (at least one is required)",
	  .values = "a name [a-z0-9_-]{1,31} and its attributes below, on a "
		    "line of its own",
	  .line = conf_tier_line,
	  .dump = conf_tier_dump,
	  .help = "A node-local tier" },
	{ .name = "DefaultTier",
	  .type = CONF_T_SPECIAL,
	  .def_doc = "the first Tier",
	  .scope = NODE | CTLD | USER,
	  .values = "a Tier's name",
	  .parse = default_tier_parse,
	  .format = default_tier_format,
	  .help = "The tier a profile that names none uses" },
	{ .name = "StageTimeout",
	  .type = CONF_T_UINT,
	  CONF_FIELD(stage_timeout),
	  .def = "600",
	  .min = 1,
	  .max = 86400,
	  .unit = "seconds",
	  .scope = NODE | USER,
	  .help = "How long the Prolog waits for staging when the profile "
		  "gives no timeout" },
	{ .name = "OnStageFailure",
	  .type = CONF_T_ENUM,
	  CONF_FIELD(on_failure),
	  .def = "fail",
	  .names = conf_policies,
	  .nnames = CONF_ARRAY_LEN(conf_policies),
	  .noun = "value",
	  .scope = NODE | USER,
	  .help = "A job whose staging failed, when its profile does not say: "
		  "end it, or run it on the PFS paths" },
	{ .name = "CacheHighWatermark",
	  .type = CONF_T_UINT,
	  CONF_FIELD(cache_high_watermark),
	  .def = "85",
	  .min = 1,
	  .max = 100,
	  .unit = "percent",
	  .scope = NODE,
	  .help = "Eviction of unused cached datasets starts when a tier "
		  "would pass this" },
	{ .name = "CacheLowWatermark",
	  .type = CONF_T_UINT,
	  CONF_FIELD(cache_low_watermark),
	  .def = "75",
	  .min = 0,
	  .max = 99,
	  .unit = "percent",
	  .scope = NODE,
	  .help = "Eviction stops below this (below CacheHighWatermark)" },
	/* 64 Prologs at once each hold a connection through their wait, and
     * the jobs they start ask at the same time (test_load.sh). */
	{ .name = "MaxConnections",
	  .type = CONF_T_UINT,
	  CONF_FIELD(max_connections),
	  .def = "256",
	  .min = 1,
	  .max = 4096,
	  .scope = NODE,
	  .help = "Concurrent clients of iostaged" },
	{ .name = "CacheTTL",
	  .type = CONF_T_UINT,
	  CONF_FIELD(cache_ttl),
	  .def = "3600",
	  .min = 0,
	  .max = CONF_CACHE_TTL_MAX,
	  .unit = "seconds",
	  .scope = NODE,
	  .help = "How long a dataset with verify=none is trusted without "
		  "looking at its source" },
	{ .name = "StageParallelism",
	  .type = CONF_T_UINT,
	  CONF_FIELD(stage_parallelism),
	  .def = "4",
	  .min = 1,
	  .max = CONF_STAGE_PARALLELISM_MAX,
	  .scope = NODE,
	  .help = "Datasets copied at once" },
	{ .name = "NodeName",
	  .type = CONF_T_NAME,
	  CONF_FIELD(node_name),
	  .def_fn = node_name_default,
	  .def_doc = "the short host name",
	  .valid = conf_is_node_name,
	  .values = "[A-Za-z0-9_.-]{1,63}, not starting with '.'",
	  .bad = "invalid node name '%s' (want [A-Za-z0-9_.-]{1,63}, not "
		 "starting with '.')",
	  .scope = NODE | USER,
	  .help = "This node's name in cache pins, builds and job records" },
	{ .name = "DrainTimeout",
	  .type = CONF_T_UINT,
	  CONF_FIELD(drain_timeout),
	  .def = "600",
	  .min = 1,
	  .max = CONF_DRAIN_TIMEOUT_MAX,
	  .unit = "seconds",
	  .scope = NODE,
	  .help = "How long the Epilog waits for a job's outputs to reach the "
		  "PFS" },
	{ .name = "TelemetryInterval",
	  .type = CONF_T_MSEC,
	  CONF_FIELD(telemetry_interval_ms),
	  .def = "1",
	  .min = 100,
	  .max = 60000,
	  .scope = NODE,
	  .help =
	      "How often iostaged samples /proc/PID/io of the jobs' tasks" },
	{ .name = "HistoryRetention",
	  .type = CONF_T_DURATION,
	  CONF_FIELD(history_retention),
	  .def = "90d",
	  .min = 0,
	  .max = UINT_MAX,
	  .scope = NODE | CTLD,
	  .help = "How long job records are kept in the history (0: forever)" },
	{ .name = "RecommendMinJobs",
	  .type = CONF_T_UINT,
	  CONF_FIELD(recommend_min_jobs),
	  .def = "3",
	  .min = 1,
	  .max = CONF_RECOMMEND_MIN_JOBS_MAX,
	  .unit = "jobs",
	  .scope = NODE | CTLD,
	  .help = "Jobs that must have read a dataset before the cache rule "
		  "advises keeping it" },
	{ .name = "RecommendWindow",
	  .type = CONF_T_DURATION,
	  CONF_FIELD(recommend_window),
	  .def = "30d",
	  .min = 1,
	  .max = UINT_MAX,
	  .scope = NODE | CTLD,
	  .help = "How far back the recommendation rules look" },
	{ .name = "RecommendHint",
	  .type = CONF_T_BOOL,
	  CONF_FIELD(recommend_hint),
	  .def = "yes",
	  .scope = NODE | CTLD | USER,
	  .help = "sbatch prints one hint line for a job without --io-profile "
		  "the history has advice for" },
	{ .name = "RecommendOSTCount",
	  .type = CONF_T_UINT,
	  CONF_FIELD(recommend_ost_count),
	  .def = "0",
	  .min = 0,
	  .max = CONF_RECOMMEND_OST_MAX,
	  .scope = NODE | CTLD,
	  .help = "The PFS's OST count, which striping advice is capped at "
		  "(0: not known)" },
	/* Loopback only by default: the metrics name users' job ids. */
	{ .name = "MetricsListen",
	  .type = CONF_T_LISTEN,
	  CONF_FIELD(metrics_listen),
	  .def = "127.0.0.1:9464",
	  .flags = CONF_F_OFF,
	  .scope = NODE,
	  .help = "Where iostaged serves /metrics" },
	{ .name = "MetricsTextfile",
	  .type = CONF_T_PATH,
	  CONF_FIELD(metrics_textfile),
	  .def = "no",
	  .flags = CONF_F_OFF,
	  .scope = NODE,
	  .help = "A file for node_exporter's textfile collector" },
	{ .name = "MetricsInterval",
	  .type = CONF_T_UINT,
	  CONF_FIELD(metrics_interval),
	  .def = "15",
	  .min = 1,
	  .max = 3600,
	  .unit = "seconds",
	  .scope = NODE,
	  .help = "How often the textfile is rewritten" },
	{ .name = "MetricsJobGrace",
	  .type = CONF_T_UINT,
	  CONF_FIELD(metrics_job_grace),
	  .def = "300",
	  .min = 0,
	  .max = 86400,
	  .unit = "seconds",
	  .scope = NODE,
	  .help = "How long a finished job's series stay on /metrics" },
	{ .name = "Trace",
	  .type = CONF_T_BOOL,
	  CONF_FIELD(trace),
	  .def = "no",
	  .scope = NODE | USER,
	  .help = "Deep mode (the LD_PRELOAD I/O shim) for every job with "
		  "--io-profile" },
	/* It goes into LD_PRELOAD, whose separators are ':' and blanks: a
     * path holding one would preload something else. */
	{ .name = "TraceLibrary",
	  .type = CONF_T_PATH,
	  CONF_FIELD(trace_library),
	  .def = IOSTAGE_SHIM_PATH,
	  .forbid = ": \t",
	  .forbid_why = "holds ':' or a blank (LD_PRELOAD separators)",
	  .values = "an absolute path without ':' or blanks",
	  .scope = NODE | USER,
	  .help = "The shim deep mode preloads" },
	{ .name = "LocalRead",
	  .type = CONF_T_BOOL,
	  CONF_FIELD(local_read),
	  .def = "yes",
	  .scope = NODE,
	  .help = "A spread job's tasks read this node's chunks of its cut "
		  "files straight from their files (LocalReadLibrary)" },
	/* LD_PRELOAD's separators, as TraceLibrary's */
	{ .name = "LocalReadLibrary",
	  .type = CONF_T_PATH,
	  CONF_FIELD(local_read_library),
	  .def = IOSTAGE_LOCALREAD_PATH,
	  .forbid = ": \t",
	  .forbid_why = "holds ':' or a blank (LD_PRELOAD separators)",
	  .values = "an absolute path without ':' or blanks",
	  .scope = NODE,
	  .help = "The library LocalRead preloads" },
	{ .name = "ViewProgram",
	  .type = CONF_T_PATH,
	  CONF_FIELD(view_program),
	  .def = IOSTAGE_VIEW_PATH,
	  .scope = NODE,
	  .help = "The program that serves a spread dataset's view" },
	{ .name = "PeerPort",
	  .type = CONF_T_UINT,
	  CONF_FIELD(peer_port),
	  .def = "6826",
	  .min = 0,
	  .max = 65535,
	  .scope = NODE | CTLD,
	  .help = "iostaged's TCP port for the other nodes of a job (0: off)" },
	{ .name = "PeerListen",
	  .type = CONF_T_NAME,
	  CONF_FIELD(peer_listen),
	  .def_doc = "every address",
	  .valid = conf_is_listen_addr,
	  .values = "an IP address of this node, or *",
	  .bad = "'%s' is not an IP address or '*'",
	  .scope = NODE,
	  .help = "The address the peer channel listens on" },
	{ .name = "PeerPartsTimeout",
	  .type = CONF_T_UINT,
	  CONF_FIELD(peer_parts_timeout),
	  .def = "60",
	  .min = 1,
	  .max = 86400,
	  .unit = "seconds",
	  .scope = NODE,
	  .help = "How long a multi-node job's head waits for the other "
		  "nodes' parts" },
	{ .name = "NodeFill",
	  .type = CONF_T_ENUM,
	  CONF_FIELD(node_fill),
	  .def = "parts",
	  .names = conf_node_fills,
	  .nnames = CONF_ARRAY_LEN(conf_node_fills),
	  .noun = "value",
	  .scope = NODE,
	  .help = "Where a new copy's files come from besides the PFS: the "
		  "job's nodes each read a share and fill each other (parts), "
		  "the job's head reads it all (head), or none (no)" },
	{ .name = "PeerFetchSessions",
	  .type = CONF_T_UINT,
	  CONF_FIELD(peer_fetch_sessions),
	  .def = "8",
	  .min = 0,
	  .max = 256,
	  .scope = NODE,
	  .help = "Fetch sessions other nodes' stage workers may hold here at "
		  "once (0: none)" },
	{ .name = "PeerFetchRate",
	  .type = CONF_T_BANDWIDTH,
	  CONF_FIELD(peer_fetch_rate),
	  .def = "0",
	  .flags = CONF_F_OFF,
	  .scope = NODE,
	  .help = "The bytes per second all fetch sessions served here send "
		  "together (0: no cap)" },
	{ .name = "MungeSocket",
	  .type = CONF_T_PATH,
	  CONF_FIELD(munge_socket),
	  .def_doc = "libmunge's (/run/munge/munge.socket.2)",
	  .flags = CONF_F_FITS,
	  .scope = NODE | CTLD | USER,
	  .help = "munged's socket" },
	{ .name = "PublicDatasets",
	  .type = CONF_T_BOOL,
	  CONF_FIELD(public_datasets),
	  .def = "yes",
	  .scope = NODE,
	  .help = "A dataset readable by everyone is staged once per tier for "
		  "every user" },
	/* A name only (iostaged resolves it and refuses root): what useradd
     * accepts, in the portable set. */
	{ .name = "PublicUser",
	  .type = CONF_T_NAME,
	  CONF_FIELD(public_user),
	  .def = "nobody",
	  .valid = conf_is_user_name,
	  .values = "a user name [a-z_][a-z0-9_.-]*, not root",
	  .bad = "'%s' is not a user name ([a-z_][a-z0-9_.-]*, at most 32 "
		 "characters)",
	  .scope = NODE,
	  .help = "The unprivileged account that builds public entries" },
	/* "no" says it outright: no service, node-local history. */
	{ .name = "ControllerHost",
	  .type = CONF_T_NAME,
	  CONF_FIELD(controller_host),
	  .def = "no",
	  .flags = CONF_F_OFF,
	  .valid = conf_is_host,
	  .values = "a host name or an IP address, or no",
	  .bad = "'%s' is not a host name or IP address",
	  .scope = NODE | CTLD | USER,
	  .help = "Where iostagectld runs (no: no service, each node keeps "
		  "its own history)" },
	{ .name = "ControllerPort",
	  .type = CONF_T_UINT,
	  CONF_FIELD(controller_port),
	  .def = "6827",
	  .min = 1,
	  .max = 65535,
	  .scope = NODE | CTLD | USER,
	  .help = "iostagectld's TCP port" },
	/* Loopback by default too: a site opens it to its Prometheus. */
	{ .name = "ControllerMetricsListen",
	  .type = CONF_T_LISTEN,
	  CONF_FIELD(controller_metrics_listen),
	  .def = "127.0.0.1:9465",
	  .flags = CONF_F_OFF,
	  .scope = CTLD,
	  .help = "Where iostagectld serves /metrics" },
	{ .name = "AdminGroup",
	  .type = CONF_T_NAME,
	  CONF_FIELD(admin_group),
	  .def_doc = "none (only root)",
	  .valid = conf_is_group_name,
	  .values = "a group name [A-Za-z0-9_.-]{1,63}",
	  .bad = "'%s' is not a group name ([A-Za-z0-9_.-]{1,63}, not "
		 "starting with '-' or '.')",
	  .scope = CTLD,
	  .help =
	      "Members read every user's jobs and advice from iostagectld" },
	/* "5m", "300": the service waits this long for a job's parts. */
	{ .name = "PartsDeadline",
	  .type = CONF_T_DURATION,
	  CONF_FIELD(parts_deadline),
	  .def = "300",
	  .min = 1,
	  .max = CONF_PARTS_DEADLINE_MAX,
	  .scope = CTLD,
	  .help = "How long iostagectld waits for a multi-node job's parts "
		  "before filing it" },
	{ .name = "OutboxLimit",
	  .type = CONF_T_UINT,
	  CONF_FIELD(outbox_limit),
	  .def = "10000",
	  .min = 1,
	  .max = CONF_OUTBOX_LIMIT_MAX,
	  .unit = "entries",
	  .scope = NODE,
	  .help = "Undelivered job records past which iostaged logs an "
		  "error" },
	/* The longest wait between two tries to reach the service: shorter
     * files sooner after an outage, longer spares a service that is
     * down for a while. */
	{ .name = "OutboxRetryMax",
	  .type = CONF_T_DURATION,
	  CONF_FIELD(outbox_retry_max),
	  .def = "60",
	  .min = 1,
	  .max = CONF_OUTBOX_RETRY_MAX_MAX,
	  .scope = NODE,
	  .help = "The longest wait between two tries to deliver the outbox" },
	{ .name = "StageBandwidth",
	  .type = CONF_T_BANDWIDTH,
	  CONF_FIELD(stage_bandwidth),
	  .def = "0",
	  .flags = CONF_F_OFF,
	  .scope = NODE | CTLD | USER,
	  .help = "The bound on all nodes' staging copies together (0: "
		  "unbounded)" },
	{ .name = "StageBandwidthFallback",
	  .type = CONF_T_BANDWIDTH,
	  CONF_FIELD(stage_bandwidth_fallback),
	  .def_doc = "StageBandwidth/8",
	  .flags = CONF_F_OFF,
	  .check = fallback_check,
	  .values = "bytes per second, above 0, as for StageBandwidth",
	  .scope = NODE,
	  .help = "A node's share while iostagectld does not answer" },
	{ .name = "PfsLicense",
	  .type = CONF_T_NAME,
	  CONF_FIELD(pfs_license),
	  .def = "no",
	  .flags = CONF_F_OFF,
	  .valid = conf_is_license_name,
	  .values = "a license name [A-Za-z0-9_-]{1,31}, or no",
	  .bad = "'%s' is not a license name ([A-Za-z0-9_-]{1,31}, as in "
		 "slurm.conf Licenses=)",
	  .scope = USER,
	  .help = "The Slurm license jobs that stream from the PFS request" },
	{ .name = "PfsLicensePerJob",
	  .type = CONF_T_UINT,
	  CONF_FIELD(pfs_license_per_job),
	  .def = "1",
	  .min = 1,
	  .max = CONF_PFS_LICENSE_PER_JOB_MAX,
	  .scope = USER,
	  .help = "How many licenses such a job requests" },
	{ .name = "Placement",
	  .type = CONF_T_BOOL,
	  CONF_FIELD(placement),
	  .def = "yes",
	  .scope = CTLD,
	  .help = "Publish cache features so jobs prefer the nodes holding "
		  "their data" },
	/* A short wait for a node with the job's data: an hour at most (a
     * longer one is a constraint, not a preference). */
	{ .name = "PlacementHold",
	  .type = CONF_T_DURATION,
	  CONF_FIELD(placement_hold),
	  .def = "0",
	  .min = 0,
	  .max = 3600,
	  .scope = CTLD,
	  .help = "How long a job may wait for a node holding its data (0: "
		  "never)" },
	{ .name = "Prestage",
	  .type = CONF_T_BOOL,
	  CONF_FIELD(prestage),
	  .def = "yes",
	  .scope = NODE | CTLD,
	  .help = "Stage pending jobs' datasets on the nodes Slurm plans for "
		  "them" },
	/* It goes into IOSTAGE_TRACE_CLASSES, whose separator is ':'
     * (common/config/traceenv.h). */
	{ .name = "PfsPath",
	  .type = CONF_T_PATH,
	  CONF_FIELD(pfs_path),
	  .def = "no",
	  .flags = CONF_F_OFF,
	  .forbid = ":",
	  .forbid_why = "holds ':'",
	  .check = pfs_path_check,
	  .values = "an absolute path other than /, without ':', or no",
	  .scope = NODE | USER,
	  .help = "The PFS's mount point, under which auto jobs without advice "
		  "are observed" },
};
const size_t conf_nkeys = CONF_ARRAY_LEN(conf_keys);
_Static_assert(CONF_ARRAY_LEN(conf_keys) <= CONF_KEYS_MAX,
	       "raise CONF_KEYS_MAX");

#define TIER_FIELD(m) CONF_FIELD_OF(conf_tier, m)
#define TIER_SCOPE (NODE | CTLD | USER)

const struct conf_key conf_tier_attrs[] = {
	{ .name = "Path",
	  .type = CONF_T_PATH,
	  TIER_FIELD(path),
	  .def_doc = "none (required)",
	  .scope = TIER_SCOPE,
	  .help = "The tier's root, owned by root, not writable by others" },
	{ .name = "Capacity",
	  .type = CONF_T_SIZE,
	  TIER_FIELD(capacity),
	  .def = "0",
	  .def_doc = "0 (the file system's size)",
	  .scope = TIER_SCOPE,
	  .help = "The bytes iostage may use there" },
	{ .name = "Medium",
	  .type = CONF_T_ENUM,
	  TIER_FIELD(medium),
	  .def = "nvme",
	  .names = conf_media,
	  .nnames = CONF_ARRAY_LEN(conf_media),
	  .noun = "medium",
	  .scope = TIER_SCOPE,
	  .help = "The kind of device (PMIx's names)" },
	{ .name = "Shared",
	  .type = CONF_T_BOOL,
	  TIER_FIELD(shared),
	  .def = "no",
	  .scope = TIER_SCOPE,
	  .help =
	      "Several nodes see the tier: builds are locked across nodes" },
};
const size_t conf_ntier_attrs = CONF_ARRAY_LEN(conf_tier_attrs);

const struct conf_key *conf_key_find(const struct conf_key *table, size_t n,
				     const char *name)
{
	for (size_t i = 0; i < n; i++)
		if (strcasecmp(name, table[i].name) == 0)
			return &table[i];
	return NULL;
}
