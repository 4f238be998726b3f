/* conf.h - the site configuration, /etc/slurm/iostage.conf.
 *
 * Slurm-style "Key=Value" lines; '#' starts a comment; keys are
 * case-insensitive like slurm.conf. A Tier line carries several pairs:
 *   Tier=nvme Path=/local/nvme/iostage Capacity=800G Medium=nvme [Shared=yes]
 * Unknown keys, duplicate scalar keys, bad values and missing required
 * settings are errors reported as one line: "FILE:LINE: key 'K': reason".
 *
 * Every key is one row of the table in conf_keys.c (name, type, field,
 * default, bounds, who reads it, one line of help): the parser, the
 * defaults, `--check-config -v` (conf_dump) and the key summary of
 * iostage.conf(5) all come from it. The rest of the tree sees only this
 * header and struct conf.
 */
#ifndef IOSTAGE_CONF_H
#define IOSTAGE_CONF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define CONF_MAX_TIERS 16
#define CONF_NAME_MAX 32    /* tier names: [a-z0-9_-]{1,31} */
#define CONF_PATH_MAX 1024  /* absolute, normalized, no ".." */
#define CONF_SOCKET_MAX 108 /* sizeof(sockaddr_un.sun_path) */
#define CONF_ERR_MAX 512    /* size for error buffers everywhere */
#define CONF_NODE_MAX 64    /* NodeName: [A-Za-z0-9_.-]{1,63}, no leading '.' */
#define CONF_CACHE_TTL_MAX (30U * 86400U) /* CacheTTL upper bound, seconds */
#define CONF_STAGE_PARALLELISM_MAX 64
#define CONF_DRAIN_TIMEOUT_MAX 86400 /* DrainTimeout upper bound, seconds */
#define CONF_RECOMMEND_MIN_JOBS_MAX 1000
#define CONF_USER_MAX 33 /* PublicUser: a login name, NUL included */
#define CONF_RECOMMEND_OST_MAX 65535 /* Lustre's OST index limit */
#define CONF_LISTEN_MAX 64 /* MetricsListen: "127.0.0.1:9464", "[::1]:9464" */
#define CONF_HOST_MAX 256  /* ControllerHost: a DNS name or IP literal */
#define CONF_GROUP_MAX 64  /* AdminGroup: a group name */
#define CONF_PARTS_DEADLINE_MAX 86400
#define CONF_OUTBOX_LIMIT_MAX 10000000
#define CONF_OUTBOX_RETRY_MAX_MAX 3600
#define CONF_PFS_LICENSE_PER_JOB_MAX 100000

/* Where the installed files are: the Makefile compiles these in from its
 * prefix and sysconfdir (and rebuilds what names them when those change:
 * $(BUILD)/paths.stamp); the values here are a plain `make`'s. The shim
 * deep mode preloads (TraceLibrary=), iostage.conf, and the site profiles
 * when iostage.conf sets no ProfileDir=. */
#ifndef IOSTAGE_SHIM_PATH
#define IOSTAGE_SHIM_PATH "/usr/local/lib/iostage/libiostage-preload.so"
#endif

/* libiostage-localread.so (localread/), which the plugin preloads into
 * the tasks of a job with a spread dataset (LocalReadLibrary=). */
#ifndef IOSTAGE_LOCALREAD_PATH
#define IOSTAGE_LOCALREAD_PATH "/usr/local/lib/iostage/libiostage-localread.so"
#endif

/* iostage-view (view/), the spread view iostaged starts as a job's user
 * (docs/STAGING.md, "The spread view"). */
#ifndef IOSTAGE_VIEW_PATH
#define IOSTAGE_VIEW_PATH "/usr/local/libexec/iostage/iostage-view"
#endif

#ifndef IOSTAGE_CONF_PATH
#define IOSTAGE_CONF_PATH "/etc/slurm/iostage.conf"
#endif

#ifndef IOSTAGE_PROFILE_DIR
#define IOSTAGE_PROFILE_DIR "/etc/slurm/iostage.d"
#endif

enum tier_medium {
	TIER_MEDIUM_NVME = 0,
	TIER_MEDIUM_SSD,
	TIER_MEDIUM_HDD,
	TIER_MEDIUM_PMEM,
	TIER_MEDIUM_RAM,
};

/* What to do when staging fails: end the job, or run it on the PFS paths. */
enum stage_failure_policy {
	STAGE_FAILURE_FAIL = 0,
	STAGE_FAILURE_FALLBACK,
};

/* Where a node's new copy of a dataset comes from besides the PFS
 * (NodeFill=, daemon/cluster/fill.h). */
enum node_fill {
	/* each node of a job reads a share of the PFS, then takes the rest
	 * from the others' shares; another job's node that holds it */
	NODE_FILL_PARTS = 0,
	/* the job's head reads it all, the others fill from it; another
	 * job's node that holds it */
	NODE_FILL_HEAD,
	/* every node reads the PFS itself */
	NODE_FILL_NO,
};

struct conf_tier {
	char name[CONF_NAME_MAX];
	char path[CONF_PATH_MAX];
	uint64_t capacity; /* bytes; 0 = the file system's size */
	enum tier_medium medium;
	bool shared; /* visible from several nodes */
};

struct conf {
	char socket_path[CONF_SOCKET_MAX];
	char state_dir[CONF_PATH_MAX];
	char profile_dir[CONF_PATH_MAX];
	struct conf_tier tiers[CONF_MAX_TIERS];
	size_t ntiers;
	size_t default_tier;    /* index into tiers[] */
	unsigned stage_timeout; /* seconds, 1..86400 */
	enum stage_failure_policy on_failure;
	unsigned cache_high_watermark; /* percent, low < high <= 100 */
	unsigned cache_low_watermark;
	unsigned max_connections;      /* daemon: concurrent clients */
	unsigned cache_ttl;            /* seconds verify=none trusts an entry */
	unsigned stage_parallelism;    /* datasets copied at once, 1..64 */
	char node_name[CONF_NODE_MAX]; /* in cache pins and build names */
	unsigned drain_timeout;        /* seconds finish waits for outputs */
	unsigned telemetry_interval_ms; /* /proc sampling period */
	/* History and recommendations (ctld/history/). */
	unsigned
	    history_retention; /* seconds a job record is kept; 0 = forever */
	unsigned recommend_min_jobs; /* cache rule: jobs reading a dataset */
	unsigned recommend_window;   /* seconds of history the rules look at */
	bool recommend_hint; /* sbatch hint line for jobs without a profile */
	unsigned
	    recommend_ost_count; /* striping advice caps counts here; 0 = unknown */
	/* Metrics (daemon/telemetry/metrics.c, common/net/httpmetrics.c). */
	char metrics_listen[CONF_LISTEN_MAX]; /* "ADDR:PORT", "" = no HTTP */
	char
	    metrics_textfile[CONF_PATH_MAX]; /* node_exporter file, "" = none */
	unsigned metrics_interval;  /* seconds between textfile writes */
	unsigned metrics_job_grace; /* seconds a finished job's series stay */
	bool trace;                 /* Trace=yes: deep mode for every job */
	char trace_library
	    [CONF_PATH_MAX]; /* the LD_PRELOAD shim (TraceLibrary) */
	char view_program[CONF_PATH_MAX]; /* iostage-view (ViewProgram) */
	/* LocalRead=: a spread job's tasks read this node's chunks with
	 * libiostage-localread.so (LocalReadLibrary=) */
	bool local_read;
	char local_read_library[CONF_PATH_MAX];
	/* Node to node (daemon/cluster/peer.c): multi-node jobs. */
	unsigned peer_port;                /* TCP port, 0 = no peer channel */
	char peer_listen[CONF_LISTEN_MAX]; /* address to listen on, "" = all */
	unsigned peer_parts_timeout; /* seconds the head waits for parts */
	enum node_fill node_fill;    /* NodeFill= */
	/* Cache versions served to other nodes' stage workers
	 * (daemon/cluster/peer_fetch.c). */
	unsigned peer_fetch_sessions; /* sessions at once, 0 = none */
	uint64_t peer_fetch_rate;     /* bytes/s all of them, 0 = no cap */
	char munge_socket[CONF_SOCKET_MAX]; /* munged's socket, "" = default */
	/* Public datasets shared across users (docs/STAGING.md). */
	bool public_datasets;            /* PublicDatasets=yes */
	char public_user[CONF_USER_MAX]; /* builds them; never root */
	/* The cluster service (iostagectld, common/net/ctlclient.h). */
	char controller_host[CONF_HOST_MAX]; /* "" = no service: node-local */
	unsigned controller_port;            /* TCP port, 1..65535 */
	char controller_metrics_listen[CONF_LISTEN_MAX]; /* iostagectld's
							  * /metrics, "" = none */
	char admin_group[CONF_GROUP_MAX]; /* reads every job, "" = root only */
	/* Filing through the service (daemon/cluster/forward.c,
	 * ctld/filing/partstore.c). */
	unsigned parts_deadline;   /* seconds the service waits for parts */
	unsigned outbox_limit;     /* entries before the outbox alarms */
	unsigned outbox_retry_max; /* seconds: the longest retry backoff */
	/* The PFS as a scheduled resource (docs/SCHEDULING.md). */
	uint64_t stage_bandwidth;          /* bytes/s all nodes' staging copies
					 * share; 0 = unbounded */
	uint64_t stage_bandwidth_fallback; /* a node's share without the
					    * service; 0 = StageBandwidth/8 */
	char pfs_license[CONF_NAME_MAX];   /* Slurm license streaming jobs
					  * request, "" = none */
	unsigned pfs_license_per_job;      /* licenses such a job requests */
	/* iostagectld's scheduling help (docs/SCHEDULING.md). */
	bool placement;          /* publish cache features (--prefer) */
	bool prestage;           /* stage pending jobs' datasets */
	unsigned placement_hold; /* s a job may wait for its data's node */
	/* The PFS's mount point: a job run with --io-profile=auto and no
	 * advice yet is observed (traced) reading under it, so the history
	 * learns the trees it reads (docs/HISTORY.md); "" = none. */
	char pfs_path[CONF_PATH_MAX];
};

/* Every key's default (the table in conf_keys.c; iostage.conf(5) lists
 * them), no tiers. NodeName defaults to the short host name (cut at the
 * first '.', other characters outside [A-Za-z0-9_-] made '-'). NULL: no-op. */
void conf_set_defaults(struct conf *conf);

/* Parse TEXT (named ORIGIN in messages) into *ret_conf. At least one Tier is
 * required; DefaultTier defaults to the first. Returns 0, or -1 with a
 * one-line message in err (size errlen); *ret_conf is untouched on failure. */
int conf_parse(const char *text, const char *origin, struct conf *ret_conf,
	       char *err, size_t errlen);

/* Read and parse PATH (NULL = IOSTAGE_CONF_PATH). Files over 1 MiB are
 * refused. Same return convention as conf_parse. */
int conf_load(const char *path, struct conf *ret_conf, char *err,
	      size_t errlen);

/* The tier named NAME, or NULL. */
const struct conf_tier *conf_find_tier(const struct conf *conf,
				       const char *name);

/* Write the tier names as "a, b, c" into buf (for "known: ..." messages). */
void conf_tier_names(const struct conf *conf, char *buf, size_t buflen);

/* Is S a portable user name ([a-z_][a-z0-9_.-]*, shorter than
 * CONF_USER_MAX)? Only the form: whether the account exists is iostaged's
 * question (conf_public_account in daemon/main.c). */
bool conf_is_user_name(const char *s);

/* Is S a valid NodeName ([A-Za-z0-9_.-]{1,63}, not starting with '.')? */
bool conf_is_node_name(const char *s);

/* Is S a host name ([A-Za-z0-9_.-], no leading '.'/'-', no "..") or an
 * IPv4/IPv6 literal, shorter than CONF_HOST_MAX? */
bool conf_is_host(const char *s);

/* Is S a group name ([A-Za-z0-9_.-]{1,63}, not starting with '-' or '.')? */
bool conf_is_group_name(const char *s);

/* Parse "800G", "20T", "512M", "1024" (bytes; K/M/G/T/P are powers of 1024,
 * an optional trailing 'B'/'iB' is accepted). Returns 0 or -1 (EINVAL,
 * ERANGE); *ret untouched on failure. */
int conf_parse_size(const char *s, uint64_t *ret);

/* Split a valid MetricsListen value "ADDR:PORT" (IPv4 literal, or an IPv6
 * literal in brackets) into ADDR (without brackets) and PORT. 0, or -1 with
 * errno EINVAL; ret_* untouched on failure. */
int conf_parse_listen(const char *s, char *ret_addr, size_t addrlen,
		      unsigned *ret_port);

const char *conf_medium_name(enum tier_medium medium);
const char *conf_policy_name(enum stage_failure_policy policy);

/* Parse a duration "90d", "12h", "30m", "45s", "2w" or plain seconds into
 * *ret (seconds, at most UINT_MAX). Returns 0 or -1 (EINVAL, ERANGE); *ret
 * untouched on failure. */
int conf_parse_duration(const char *s, unsigned *ret);

/* "fail" / "fallback" -> policy. Returns 0 or -1. */
int conf_parse_policy(const char *s, enum stage_failure_policy *ret);

/* Who reads a key: each row of the table says which of these do. */
enum conf_scope {
	CONF_SCOPE_NODE = 1U << 0, /* iostaged, the Prolog and Epilog */
	CONF_SCOPE_CTLD = 1U << 1, /* iostagectld */
	CONF_SCOPE_USER = 1U << 2, /* the SPANK plugin, iostage(1) */
	CONF_SCOPE_ALL = 7U,
};

/* Write the settings of CONF read by any of SCOPE's programs to F as
 * iostage.conf lines, one key per line in the table's order (a Tier line
 * per tier): "Key=Value", or "#Key=" for a key with no value (AdminGroup=
 * unset). Parsing the output gives CONF back. 0, or -1 with errno when F
 * fails. */
int conf_dump(const struct conf *conf, unsigned scope, FILE *f);

#endif /* IOSTAGE_CONF_H */
