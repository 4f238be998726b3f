/* conf.c - parse the site configuration, /etc/slurm/iostage.conf.
 *
 * The format follows slurm.conf: whitespace-separated Key=Value pairs, keys
 * case-insensitive, '#' to end of line is a comment, values never contain
 * whitespace. A line whose first pair is Tier=NAME describes one tier and may
 * only carry tier attributes (Path, Capacity, Medium, Shared); every other
 * line carries global settings, several per line if one likes.
 *
 * The parser fills a private copy and hands it over only when the whole file
 * was good, so a failed reload leaves the running configuration alone.
 * Cross-key rules (DefaultTier names a tier, low < high watermark) are
 * checked after the last line, because the keys may come in any order.
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <sys/socket.h>

#include "common/config/conf.h"
#include "common/base/smallfile.h"
#include "common/config/pathsafe.h"

#define CONF_FILE_MAX (1024 * 1024)
#define CONF_SHOW_MAX 64 /* bytes of a user's token quoted in messages */

/* Global (non-Tier) keys. The order is the index into conf_keys[]. */
enum conf_key {
	CONF_KEY_SOCKET_PATH = 0,
	CONF_KEY_STATE_DIR,
	CONF_KEY_PROFILE_DIR,
	CONF_KEY_DEFAULT_TIER,
	CONF_KEY_STAGE_TIMEOUT,
	CONF_KEY_ON_STAGE_FAILURE,
	CONF_KEY_CACHE_HIGH,
	CONF_KEY_CACHE_LOW,
	CONF_KEY_MAX_CONNECTIONS,
	CONF_KEY_CACHE_TTL,
	CONF_KEY_STAGE_PARALLELISM,
	CONF_KEY_NODE_NAME,
	CONF_KEY_DRAIN_TIMEOUT,
	CONF_KEY_TELEMETRY_INTERVAL,
	CONF_KEY_HISTORY_RETENTION,
	CONF_KEY_RECOMMEND_MIN_JOBS,
	CONF_KEY_RECOMMEND_WINDOW,
	CONF_KEY_RECOMMEND_HINT,
	CONF_KEY_RECOMMEND_OST_COUNT,
	CONF_KEY_METRICS_LISTEN,
	CONF_KEY_METRICS_TEXTFILE,
	CONF_KEY_METRICS_INTERVAL,
	CONF_KEY_METRICS_JOB_GRACE,
	CONF_KEY_TRACE,
	CONF_KEY_TRACE_LIBRARY,
	CONF_KEY_PEER_PORT,
	CONF_KEY_PEER_LISTEN,
	CONF_KEY_PEER_PARTS_TIMEOUT,
	CONF_KEY_MUNGE_SOCKET,
	CONF_KEY_PUBLIC_DATASETS,
	CONF_KEY_PUBLIC_USER,
	CONF_KEY_CONTROLLER_HOST,
	CONF_KEY_CONTROLLER_PORT,
	CONF_KEY_CONTROLLER_METRICS_LISTEN,
	CONF_KEY_ADMIN_GROUP,
	CONF_KEY_PARTS_DEADLINE,
	CONF_KEY_OUTBOX_LIMIT,
	CONF_KEY_OUTBOX_RETRY_MAX,
	CONF_KEY_STAGE_BANDWIDTH,
	CONF_KEY_STAGE_BANDWIDTH_FALLBACK,
	CONF_KEY_PFS_LICENSE,
	CONF_KEY_PFS_LICENSE_PER_JOB,
	CONF_KEY_PLACEMENT,
	CONF_KEY_PRESTAGE,
	CONF_KEY_PLACEMENT_HOLD,
	CONF_KEY_PFS_PATH,
	CONF_KEY_COUNT,
};

static const char *const conf_keys[CONF_KEY_COUNT] = {
    [CONF_KEY_SOCKET_PATH] = "SocketPath",
    [CONF_KEY_STATE_DIR] = "StateDir",
    [CONF_KEY_PROFILE_DIR] = "ProfileDir",
    [CONF_KEY_DEFAULT_TIER] = "DefaultTier",
    [CONF_KEY_STAGE_TIMEOUT] = "StageTimeout",
    [CONF_KEY_ON_STAGE_FAILURE] = "OnStageFailure",
    [CONF_KEY_CACHE_HIGH] = "CacheHighWatermark",
    [CONF_KEY_CACHE_LOW] = "CacheLowWatermark",
    [CONF_KEY_MAX_CONNECTIONS] = "MaxConnections",
    [CONF_KEY_CACHE_TTL] = "CacheTTL",
    [CONF_KEY_STAGE_PARALLELISM] = "StageParallelism",
    [CONF_KEY_NODE_NAME] = "NodeName",
    [CONF_KEY_DRAIN_TIMEOUT] = "DrainTimeout",
    [CONF_KEY_TELEMETRY_INTERVAL] = "TelemetryInterval",
    [CONF_KEY_HISTORY_RETENTION] = "HistoryRetention",
    [CONF_KEY_RECOMMEND_MIN_JOBS] = "RecommendMinJobs",
    [CONF_KEY_RECOMMEND_WINDOW] = "RecommendWindow",
    [CONF_KEY_RECOMMEND_HINT] = "RecommendHint",
    [CONF_KEY_RECOMMEND_OST_COUNT] = "RecommendOSTCount",
    [CONF_KEY_METRICS_LISTEN] = "MetricsListen",
    [CONF_KEY_METRICS_TEXTFILE] = "MetricsTextfile",
    [CONF_KEY_METRICS_INTERVAL] = "MetricsInterval",
    [CONF_KEY_METRICS_JOB_GRACE] = "MetricsJobGrace",
    [CONF_KEY_TRACE] = "Trace",
    [CONF_KEY_TRACE_LIBRARY] = "TraceLibrary",
    [CONF_KEY_PEER_PORT] = "PeerPort",
    [CONF_KEY_PEER_LISTEN] = "PeerListen",
    [CONF_KEY_PEER_PARTS_TIMEOUT] = "PeerPartsTimeout",
    [CONF_KEY_MUNGE_SOCKET] = "MungeSocket",
    [CONF_KEY_PUBLIC_DATASETS] = "PublicDatasets",
    [CONF_KEY_PUBLIC_USER] = "PublicUser",
    [CONF_KEY_CONTROLLER_HOST] = "ControllerHost",
    [CONF_KEY_CONTROLLER_PORT] = "ControllerPort",
    [CONF_KEY_CONTROLLER_METRICS_LISTEN] = "ControllerMetricsListen",
    [CONF_KEY_ADMIN_GROUP] = "AdminGroup",
    [CONF_KEY_PARTS_DEADLINE] = "PartsDeadline",
    [CONF_KEY_OUTBOX_LIMIT] = "OutboxLimit",
    [CONF_KEY_OUTBOX_RETRY_MAX] = "OutboxRetryMax",
    [CONF_KEY_STAGE_BANDWIDTH] = "StageBandwidth",
    [CONF_KEY_STAGE_BANDWIDTH_FALLBACK] = "StageBandwidthFallback",
    [CONF_KEY_PFS_LICENSE] = "PfsLicense",
    [CONF_KEY_PFS_LICENSE_PER_JOB] = "PfsLicensePerJob",
    [CONF_KEY_PLACEMENT] = "Placement",
    [CONF_KEY_PRESTAGE] = "Prestage",
    [CONF_KEY_PLACEMENT_HOLD] = "PlacementHold",
    [CONF_KEY_PFS_PATH] = "PfsPath",
};

/* Attributes on a Tier line, after Tier=NAME itself. */
enum conf_tier_key {
	CONF_TIER_PATH = 0,
	CONF_TIER_CAPACITY,
	CONF_TIER_MEDIUM,
	CONF_TIER_SHARED,
	CONF_TIER_KEY_COUNT,
};

static const char *const conf_tier_keys[CONF_TIER_KEY_COUNT] = {
    [CONF_TIER_PATH] = "Path",
    [CONF_TIER_CAPACITY] = "Capacity",
    [CONF_TIER_MEDIUM] = "Medium",
    [CONF_TIER_SHARED] = "Shared",
};

static const char *const conf_media[] = {
    [TIER_MEDIUM_NVME] = "nvme", [TIER_MEDIUM_SSD] = "ssd",
    [TIER_MEDIUM_HDD] = "hdd",	 [TIER_MEDIUM_PMEM] = "pmem",
    [TIER_MEDIUM_RAM] = "ram",
};

static const char *const conf_policies[] = {
    [STAGE_FAILURE_FAIL] = "fail",
    [STAGE_FAILURE_FALLBACK] = "fallback",
};

#define CONF_ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

struct conf_parser {
	const char *origin;
	unsigned line;
	char *err;
	size_t errlen;
	struct conf *conf;
	unsigned key_line[CONF_KEY_COUNT]; /* 0 = not set by the file */
	unsigned tier_line[CONF_MAX_TIERS];
	char default_tier[CONF_NAME_MAX];
};

/* "ORIGIN:LINE: " + the formatted rest; errno = EINVAL; returns -1. */
static int conf_fail(struct conf_parser *cp, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static int conf_fail(struct conf_parser *cp, const char *fmt, ...)
{
	va_list ap;
	int n = 0;

	if (cp->err && cp->errlen > 0) {
		if (cp->line > 0)
			n = snprintf(cp->err, cp->errlen, "%s:%u: ", cp->origin,
				     cp->line);
		else
			n = snprintf(cp->err, cp->errlen, "%s: ", cp->origin);
		if (n >= 0 && (size_t)n < cp->errlen) {
			va_start(ap, fmt);
			vsnprintf(cp->err + n, cp->errlen - (size_t)n, fmt, ap);
			va_end(ap);
		}
	}
	errno = EINVAL;
	return -1;
}

/* A user's token made safe to quote on one line: control characters become
 * '?', and long tokens are cut with "...". */
static const char *conf_show(const char *s, char *buf, size_t buflen)
{
	size_t i;

	for (i = 0; s[i] && i + 1 < buflen; i++) {
		if (i >= CONF_SHOW_MAX && buflen > i + 4) {
			memcpy(buf + i, "...", 4);
			return buf;
		}
		buf[i] =
		    ((unsigned char)s[i] < 0x20 || s[i] == 0x7f) ? '?' : s[i];
	}
	buf[i] = '\0';
	return buf;
}

bool conf_is_node_name(const char *s)
{
	size_t n;

	if (!s)
		return false;
	n = strlen(s);
	if (n == 0 || n >= CONF_NODE_MAX || s[0] == '.')
		return false;
	for (size_t i = 0; i < n; i++)
		if (!isalnum((unsigned char)s[i]) && s[i] != '_' &&
		    s[i] != '-' && s[i] != '.')
			return false;
	return true;
}

bool conf_is_host(const char *s)
{
	unsigned char buf[16];
	size_t n;

	if (!s)
		return false;
	n = strlen(s);
	if (n == 0 || n >= CONF_HOST_MAX)
		return false;
	if (inet_pton(AF_INET, s, buf) == 1 || inet_pton(AF_INET6, s, buf) == 1)
		return true;
	/* RFC 1123 labels: letters, digits, '-' inside, '.' between. */
	if (s[0] == '.' || s[0] == '-' || s[n - 1] == '-' || strstr(s, ".."))
		return false;
	for (size_t i = 0; i < n; i++)
		if (!isalnum((unsigned char)s[i]) && s[i] != '-' &&
		    s[i] != '.' && s[i] != '_')
			return false;
	return true;
}

bool conf_is_group_name(const char *s)
{
	size_t n;

	if (!s)
		return false;
	n = strlen(s);
	if (n == 0 || n >= CONF_GROUP_MAX || s[0] == '-' || s[0] == '.')
		return false;
	for (size_t i = 0; i < n; i++)
		if (!isalnum((unsigned char)s[i]) && s[i] != '_' &&
		    s[i] != '-' && s[i] != '.')
			return false;
	return true;
}

/* The short host name, made a valid NodeName ("localhost" if none). */
static void conf_default_node_name(char *buf, size_t buflen)
{
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
	snprintf(buf, buflen, "%.*s", CONF_NODE_MAX - 1,
		 host[0] ? host : "localhost");
}

void conf_set_defaults(struct conf *conf)
{
	if (!conf)
		return;
	memset(conf, 0, sizeof(*conf));
	snprintf(conf->socket_path, sizeof(conf->socket_path), "%s",
		 "/run/iostage/iostaged.sock");
	snprintf(conf->state_dir, sizeof(conf->state_dir), "%s",
		 "/var/lib/iostage");
	snprintf(conf->profile_dir, sizeof(conf->profile_dir), "%s",
		 IOSTAGE_PROFILE_DIR);
	conf->stage_timeout = 600;
	conf->on_failure = STAGE_FAILURE_FAIL;
	conf->cache_high_watermark = 85;
	conf->cache_low_watermark = 75;
	/* 64 Prologs at once each hold a connection through their wait, and
	 * the jobs they start ask at the same time (test_load.sh). */
	conf->max_connections = 256;
	conf->cache_ttl = 3600;
	conf->stage_parallelism = 4;
	conf->drain_timeout = 600;
	conf->telemetry_interval_ms = 1000;
	conf->history_retention = 90U * 86400U;
	conf->recommend_min_jobs = 3;
	conf->recommend_window = 30U * 86400U;
	conf->recommend_hint = true;
	/* Loopback only by default: the metrics name users' job ids. */
	snprintf(conf->metrics_listen, sizeof(conf->metrics_listen), "%s",
		 "127.0.0.1:9464");
	conf->metrics_interval = 15;
	conf->metrics_job_grace = 300;
	snprintf(conf->trace_library, sizeof(conf->trace_library), "%s",
		 IOSTAGE_SHIM_PATH);
	conf->public_datasets = true;
	snprintf(conf->public_user, sizeof(conf->public_user), "%s", "nobody");
	conf_default_node_name(conf->node_name, sizeof(conf->node_name));
	conf->peer_port = CONF_PEER_PORT_DEFAULT;
	conf->peer_parts_timeout = 60;
	conf->controller_port = CONF_CONTROLLER_PORT_DEFAULT;
	/* Loopback by default too: a site opens it to its Prometheus. */
	snprintf(conf->controller_metrics_listen,
		 sizeof(conf->controller_metrics_listen), "%s",
		 CONF_CONTROLLER_METRICS_DEFAULT);
	conf->parts_deadline = CONF_PARTS_DEADLINE_DEFAULT;
	conf->outbox_limit = CONF_OUTBOX_LIMIT_DEFAULT;
	conf->outbox_retry_max = CONF_OUTBOX_RETRY_MAX_DEFAULT;
	conf->pfs_license_per_job = 1;
	conf->placement = true;
	conf->prestage = true;
}

bool conf_is_user_name(const char *s)
{
	size_t i;

	if (!s || !((s[0] >= 'a' && s[0] <= 'z') || s[0] == '_'))
		return false;
	for (i = 1; s[i]; i++)
		if (!((s[i] >= 'a' && s[i] <= 'z') ||
		      (s[i] >= '0' && s[i] <= '9') || s[i] == '_' ||
		      s[i] == '.' || s[i] == '-'))
			return false;
	return i < CONF_USER_MAX;
}

int conf_parse_size(const char *s, uint64_t *ret)
{
	uint64_t v = 0;
	unsigned shift = 0;
	static const char units[] = "KMGTP"; /* powers of 1024 */
	const char *p = s, *unit;

	if (!s || !ret || !isdigit((unsigned char)*s)) {
		errno = EINVAL;
		return -1;
	}
	for (; isdigit((unsigned char)*p); p++) {
		unsigned d = (unsigned)(*p - '0');

		if (v > (UINT64_MAX - d) / 10) {
			/* Still insist the rest is well formed: "9...9Q" is
			 * EINVAL, not ERANGE. */
			while (isdigit((unsigned char)*p))
				p++;
			v = UINT64_MAX;
			shift = 64;
			break;
		}
		v = v * 10 + d;
	}
	unit = strchr(units, toupper((unsigned char)*p));
	if (*p && unit) {
		shift += 10 * (unsigned)(unit - units + 1);
		p++;
		if (toupper((unsigned char)*p) == 'I' &&
		    toupper((unsigned char)p[1]) == 'B')
			p++;
	}
	if (toupper((unsigned char)*p) == 'B')
		p++;
	if (*p) {
		errno = EINVAL;
		return -1;
	}
	if (shift >= 64 || (shift > 0 && v > (UINT64_MAX >> shift))) {
		errno = ERANGE;
		return -1;
	}
	*ret = v << shift;
	return 0;
}

int conf_parse_duration(const char *s, unsigned *ret)
{
	static const struct {
		char suffix;
		unsigned long long seconds;
	} units[] = {{'s', 1}, {'m', 60}, {'h', 3600}, {'d', 86400},
		     {'w', 7 * 86400}};
	unsigned long long v = 0, mult = 1;
	const char *p = s;

	if (!s || !ret || !isdigit((unsigned char)*s)) {
		errno = EINVAL;
		return -1;
	}
	for (; isdigit((unsigned char)*p); p++) {
		if (v > UINT_MAX) {
			errno = ERANGE;
			return -1;
		}
		v = v * 10 + (unsigned)(*p - '0');
	}
	if (*p) {
		size_t i;

		for (i = 0; i < CONF_ARRAY_LEN(units); i++)
			if (tolower((unsigned char)*p) == units[i].suffix)
				break;
		if (i == CONF_ARRAY_LEN(units) || p[1]) {
			errno = EINVAL;
			return -1;
		}
		mult = units[i].seconds;
	}
	if (v > UINT_MAX || v * mult > UINT_MAX) {
		errno = ERANGE;
		return -1;
	}
	*ret = (unsigned)(v * mult);
	return 0;
}

/* A Key=Value duration for conf_global. */
static int conf_duration(struct conf_parser *cp, const char *key,
			 const char *val, unsigned *ret)
{
	char show[CONF_SHOW_MAX + 8];

	if (conf_parse_duration(val, ret) < 0)
		return conf_fail(cp,
				 "key '%s': %s '%s' (want N[s|m|h|d|w], e.g. "
				 "90d)",
				 key,
				 errno == ERANGE ? "duration too long"
						 : "invalid duration",
				 conf_show(val, show, sizeof(show)));
	return 0;
}

int conf_parse_listen(const char *s, char *ret_addr, size_t addrlen,
		      unsigned *ret_port)
{
	char addr[CONF_LISTEN_MAX], buf[sizeof(struct in6_addr)];
	const char *colon, *p;
	unsigned long port = 0;
	size_t n;
	int af = AF_INET;

	if (!s || !ret_addr || !ret_port || strlen(s) >= CONF_LISTEN_MAX)
		goto bad;
	if (s[0] == '[') {
		const char *close = strchr(s, ']');

		if (!close || close[1] != ':')
			goto bad;
		n = (size_t)(close - s - 1);
		colon = close + 1;
		memcpy(addr, s + 1, n);
		af = AF_INET6;
	} else {
		colon = strrchr(s, ':');
		if (!colon)
			goto bad;
		n = (size_t)(colon - s);
		memcpy(addr, s, n);
	}
	addr[n] = '\0';
	if (inet_pton(af, addr, buf) != 1 || !colon[1])
		goto bad;
	for (p = colon + 1; *p; p++) {
		if (!isdigit((unsigned char)*p) || port > 65535)
			goto bad;
		port = port * 10 + (unsigned long)(*p - '0');
	}
	if (port == 0 || port > 65535 || n >= addrlen)
		goto bad;
	memcpy(ret_addr, addr, n + 1);
	*ret_port = (unsigned)port;
	return 0;
bad:
	errno = EINVAL;
	return -1;
}

/* "no" and "off" turn an optional feature off. */
static bool conf_is_off(const char *val)
{
	return strcasecmp(val, "no") == 0 || strcasecmp(val, "off") == 0;
}

const char *conf_medium_name(enum tier_medium medium)
{
	if ((unsigned)medium >= CONF_ARRAY_LEN(conf_media))
		return "unknown";
	return conf_media[medium];
}

const char *conf_policy_name(enum stage_failure_policy policy)
{
	if ((unsigned)policy >= CONF_ARRAY_LEN(conf_policies))
		return "unknown";
	return conf_policies[policy];
}

int conf_parse_policy(const char *s, enum stage_failure_policy *ret)
{
	if (s && ret) {
		for (size_t i = 0; i < CONF_ARRAY_LEN(conf_policies); i++) {
			if (strcmp(s, conf_policies[i]) == 0) {
				*ret = (enum stage_failure_policy)i;
				return 0;
			}
		}
	}
	errno = EINVAL;
	return -1;
}

const struct conf_tier *conf_find_tier(const struct conf *conf,
				       const char *name)
{
	if (!conf || !name)
		return NULL;
	for (size_t i = 0; i < conf->ntiers && i < CONF_MAX_TIERS; i++)
		if (strcmp(conf->tiers[i].name, name) == 0)
			return &conf->tiers[i];
	return NULL;
}

void conf_tier_names(const struct conf *conf, char *buf, size_t buflen)
{
	size_t off = 0;

	if (!buf || buflen == 0)
		return;
	buf[0] = '\0';
	if (!conf)
		return;
	for (size_t i = 0; i < conf->ntiers && i < CONF_MAX_TIERS; i++) {
		int n = snprintf(buf + off, buflen - off, "%s%s", i ? ", " : "",
				 conf->tiers[i].name);

		if (n < 0 || (size_t)n >= buflen - off)
			return; /* truncated, still NUL-terminated */
		off += (size_t)n;
	}
}

static int conf_is_tier_name(const char *s)
{
	size_t n = strlen(s);

	if (n == 0 || n >= CONF_NAME_MAX)
		return 0;
	for (size_t i = 0; i < n; i++)
		if (!((s[i] >= 'a' && s[i] <= 'z') ||
		      (s[i] >= '0' && s[i] <= '9') || s[i] == '_' ||
		      s[i] == '-'))
			return 0;
	return 1;
}

/* Decimal digits only, MIN..MAX. */
static int conf_uint(struct conf_parser *cp, const char *key, const char *val,
		     unsigned min, unsigned max, unsigned *ret)
{
	char show[CONF_SHOW_MAX + 8];
	unsigned long v = 0;
	const char *p;

	for (p = val; *p; p++) {
		if (!isdigit((unsigned char)*p))
			return conf_fail(cp, "key '%s': '%s' is not a number",
					 key,
					 conf_show(val, show, sizeof(show)));
		if (v <= max)
			v = v * 10 + (unsigned long)(*p - '0');
	}
	if (v < min || v > max)
		return conf_fail(cp, "key '%s': %s out of range %u..%u", key,
				 conf_show(val, show, sizeof(show)), min, max);
	*ret = (unsigned)v;
	return 0;
}

static int conf_path(struct conf_parser *cp, const char *key, const char *val,
		     char *out, size_t outlen)
{
	char reason[128];
	char show[CONF_SHOW_MAX + 8];

	if (pathsafe_normalize(val, out, outlen, reason, sizeof(reason)) < 0)
		return conf_fail(cp, "key '%s': %s: %s", key,
				 conf_show(val, show, sizeof(show)), reason);
	return 0;
}

/* An HTTP listen address "ADDR:PORT" (MetricsListen and
 * ControllerMetricsListen), or "no": none. OUT has CONF_LISTEN_MAX. */
static int conf_listen(struct conf_parser *cp, const char *key,
		       const char *val, char *out)
{
	char show[CONF_SHOW_MAX + 8], addr[CONF_LISTEN_MAX];
	unsigned port;

	if (conf_is_off(val)) {
		out[0] = '\0';
		return 0;
	}
	if (conf_parse_listen(val, addr, sizeof(addr), &port) < 0)
		return conf_fail(cp,
				 "key '%s': '%s' is not ADDR:PORT (an IP "
				 "address such as 127.0.0.1:9464 or "
				 "[::1]:9464, port 1..65535) or 'no'",
				 key, conf_show(val, show, sizeof(show)));
	snprintf(out, CONF_LISTEN_MAX, "%s", val);
	return 0;
}

/* A license name as slurm.conf's Licenses= takes it; the characters that
 * -L separates on (',', ':', '@', '|') are never in one. */
static bool conf_is_license_name(const char *s)
{
	size_t i;

	for (i = 0; s[i]; i++)
		if (!isalnum((unsigned char)s[i]) && s[i] != '_' &&
		    s[i] != '-')
			return false;
	return i > 0 && i < CONF_NAME_MAX;
}

/* A bandwidth in bytes per second: a size ("400M", "1G") with an optional
 * "/s"; "0", "no" or "off": unbounded (0). */
static int conf_bandwidth(struct conf_parser *cp, const char *key,
			  const char *val, uint64_t *ret)
{
	char buf[64], show[CONF_SHOW_MAX + 8];
	size_t n = strlen(val);

	if (conf_is_off(val)) {
		*ret = 0;
		return 0;
	}
	if (n >= sizeof(buf))
		return conf_fail(cp, "key '%s': '%s' is too long", key,
				 conf_show(val, show, sizeof(show)));
	memcpy(buf, val, n + 1);
	if (n > 2 && !strcmp(buf + n - 2, "/s"))
		buf[n - 2] = '\0';
	if (conf_parse_size(buf, ret) < 0)
		return conf_fail(cp,
				 "key '%s': '%s' is not a bandwidth (bytes per "
				 "second, e.g. 400M or 1G/s)",
				 key, conf_show(val, show, sizeof(show)));
	return 0;
}

static int conf_global(struct conf_parser *cp, enum conf_key k, const char *val)
{
	struct conf *c = cp->conf;
	const char *key = conf_keys[k];
	char show[CONF_SHOW_MAX + 8];

	if (cp->key_line[k])
		return conf_fail(cp,
				 "key '%s': duplicate (first set on line %u)",
				 key, cp->key_line[k]);
	cp->key_line[k] = cp->line;

	switch (k) {
	case CONF_KEY_SOCKET_PATH:
		return conf_path(cp, key, val, c->socket_path,
				 sizeof(c->socket_path));
	case CONF_KEY_STATE_DIR:
		return conf_path(cp, key, val, c->state_dir,
				 sizeof(c->state_dir));
	case CONF_KEY_PROFILE_DIR:
		return conf_path(cp, key, val, c->profile_dir,
				 sizeof(c->profile_dir));
	case CONF_KEY_DEFAULT_TIER:
		if (!conf_is_tier_name(val))
			return conf_fail(cp,
					 "key '%s': invalid tier name '%s' "
					 "(want [a-z0-9_-]{1,31})",
					 key,
					 conf_show(val, show, sizeof(show)));
		snprintf(cp->default_tier, sizeof(cp->default_tier), "%s", val);
		return 0;
	case CONF_KEY_STAGE_TIMEOUT:
		return conf_uint(cp, key, val, 1, 86400, &c->stage_timeout);
	case CONF_KEY_ON_STAGE_FAILURE:
		for (size_t i = 0; i < CONF_ARRAY_LEN(conf_policies); i++) {
			if (strcasecmp(val, conf_policies[i]) == 0) {
				c->on_failure = (enum stage_failure_policy)i;
				return 0;
			}
		}
		return conf_fail(cp,
				 "key '%s': unknown value '%s' (known: fail, "
				 "fallback)",
				 key, conf_show(val, show, sizeof(show)));
	case CONF_KEY_CACHE_HIGH:
		return conf_uint(cp, key, val, 1, 100,
				 &c->cache_high_watermark);
	case CONF_KEY_CACHE_LOW:
		return conf_uint(cp, key, val, 0, 99, &c->cache_low_watermark);
	case CONF_KEY_MAX_CONNECTIONS:
		return conf_uint(cp, key, val, 1, 4096, &c->max_connections);
	case CONF_KEY_CACHE_TTL:
		return conf_uint(cp, key, val, 0, CONF_CACHE_TTL_MAX,
				 &c->cache_ttl);
	case CONF_KEY_STAGE_PARALLELISM:
		return conf_uint(cp, key, val, 1, CONF_STAGE_PARALLELISM_MAX,
				 &c->stage_parallelism);
	case CONF_KEY_NODE_NAME:
		if (!conf_is_node_name(val))
			return conf_fail(cp,
					 "key '%s': invalid node name '%s' "
					 "(want [A-Za-z0-9_.-]{1,63}, not "
					 "starting with '.')",
					 key,
					 conf_show(val, show, sizeof(show)));
		snprintf(c->node_name, sizeof(c->node_name), "%s", val);
		return 0;
	case CONF_KEY_DRAIN_TIMEOUT:
		return conf_uint(cp, key, val, 1, CONF_DRAIN_TIMEOUT_MAX,
				 &c->drain_timeout);
	case CONF_KEY_TELEMETRY_INTERVAL: {
		/* Seconds with decimals: sampling below a second is useful. */
		char *end;
		double v = strtod(val, &end);

		if (end == val || *end || !(v >= 0.1 && v <= 60))
			return conf_fail(cp,
					 "key '%s': '%s' is not a number of "
					 "seconds from 0.1 to 60",
					 key,
					 conf_show(val, show, sizeof(show)));
		c->telemetry_interval_ms = (unsigned)(v * 1000 + 0.5);
		return 0;
	}
	case CONF_KEY_HISTORY_RETENTION:
		return conf_duration(cp, key, val, &c->history_retention);
	case CONF_KEY_RECOMMEND_MIN_JOBS:
		return conf_uint(cp, key, val, 1, CONF_RECOMMEND_MIN_JOBS_MAX,
				 &c->recommend_min_jobs);
	case CONF_KEY_RECOMMEND_WINDOW:
		if (conf_duration(cp, key, val, &c->recommend_window) < 0)
			return -1;
		if (c->recommend_window == 0)
			return conf_fail(cp, "key '%s': must be longer than "
					     "0 seconds", key);
		return 0;
	case CONF_KEY_RECOMMEND_HINT:
		if (strcasecmp(val, "yes") == 0)
			c->recommend_hint = true;
		else if (strcasecmp(val, "no") == 0)
			c->recommend_hint = false;
		else
			return conf_fail(cp, "key '%s': expected yes or no, "
					     "not '%s'",
					 key, conf_show(val, show, sizeof(show)));
		return 0;
	case CONF_KEY_RECOMMEND_OST_COUNT:
		return conf_uint(cp, key, val, 0, CONF_RECOMMEND_OST_MAX,
				 &c->recommend_ost_count);
	case CONF_KEY_METRICS_LISTEN:
		return conf_listen(cp, key, val, c->metrics_listen);
	case CONF_KEY_CONTROLLER_METRICS_LISTEN:
		return conf_listen(cp, key, val, c->controller_metrics_listen);
	case CONF_KEY_METRICS_TEXTFILE:
		if (conf_is_off(val)) {
			c->metrics_textfile[0] = '\0';
			return 0;
		}
		return conf_path(cp, key, val, c->metrics_textfile,
				 sizeof(c->metrics_textfile));
	case CONF_KEY_METRICS_INTERVAL:
		return conf_uint(cp, key, val, 1, 3600, &c->metrics_interval);
	case CONF_KEY_METRICS_JOB_GRACE:
		return conf_uint(cp, key, val, 0, 86400,
				 &c->metrics_job_grace);
	case CONF_KEY_TRACE:
		if (strcasecmp(val, "yes") == 0 || strcasecmp(val, "no") == 0) {
			c->trace = strcasecmp(val, "yes") == 0;
			return 0;
		}
		return conf_fail(cp, "key '%s': expected yes or no, not '%s'",
				 key, conf_show(val, show, sizeof(show)));
	case CONF_KEY_TRACE_LIBRARY:
		/* It goes into LD_PRELOAD, whose separators are ':' and
		 * blanks: a path holding one would preload something else. */
		if (strpbrk(val, ": \t"))
			return conf_fail(cp,
					 "key '%s': '%s' holds ':' or a blank "
					 "(LD_PRELOAD separators)",
					 key,
					 conf_show(val, show, sizeof(show)));
		return conf_path(cp, key, val, c->trace_library,
				 sizeof(c->trace_library));
	case CONF_KEY_PEER_PORT:
		return conf_uint(cp, key, val, 0, 65535, &c->peer_port);
	case CONF_KEY_PEER_LISTEN: {
		unsigned char buf[16];

		/* An address of this host, or every one ("*"). */
		if (strcmp(val, "*") && inet_pton(AF_INET, val, buf) != 1 &&
		    inet_pton(AF_INET6, val, buf) != 1)
			return conf_fail(cp,
					 "key '%s': '%s' is not an IP address "
					 "or '*'",
					 key, conf_show(val, show, sizeof(show)));
		snprintf(c->peer_listen, sizeof(c->peer_listen), "%s", val);
		return 0;
	}
	case CONF_KEY_PEER_PARTS_TIMEOUT:
		return conf_uint(cp, key, val, 1, 86400,
				 &c->peer_parts_timeout);
	case CONF_KEY_MUNGE_SOCKET:
		if (strlen(val) >= sizeof(c->munge_socket))
			return conf_fail(cp, "key '%s': longer than %zu bytes",
					 key, sizeof(c->munge_socket) - 1);
		return conf_path(cp, key, val, c->munge_socket,
				 sizeof(c->munge_socket));
	case CONF_KEY_PUBLIC_DATASETS:
	case CONF_KEY_PLACEMENT:
	case CONF_KEY_PRESTAGE:
		if (strcasecmp(val, "yes") == 0 || strcasecmp(val, "no") == 0) {
			bool yes = strcasecmp(val, "yes") == 0;

			if (k == CONF_KEY_PUBLIC_DATASETS)
				c->public_datasets = yes;
			else if (k == CONF_KEY_PLACEMENT)
				c->placement = yes;
			else
				c->prestage = yes;
			return 0;
		}
		return conf_fail(cp, "key '%s': expected yes or no, not '%s'",
				 key, conf_show(val, show, sizeof(show)));
	case CONF_KEY_PLACEMENT_HOLD:
		/* a short wait for a node with the job's data: an hour at
		 * most (a longer one is a constraint, not a preference) */
		if (conf_duration(cp, key, val, &c->placement_hold) < 0)
			return -1;
		if (c->placement_hold > 3600)
			return conf_fail(cp, "key '%s': at most 1h, not '%s'",
					 key, conf_show(val, show, sizeof(show)));
		return 0;
	case CONF_KEY_PUBLIC_USER:
		/* A name only (resolved by iostaged, which also refuses
		 * root): what useradd accepts, in the portable set. */
		if (!conf_is_user_name(val))
			return conf_fail(cp,
					 "key '%s': '%s' is not a user name "
					 "([a-z_][a-z0-9_.-]*, at most %d "
					 "characters)",
					 key, conf_show(val, show, sizeof(show)),
					 CONF_USER_MAX - 1);
		snprintf(c->public_user, sizeof(c->public_user), "%s", val);
		return 0;
	case CONF_KEY_CONTROLLER_HOST:
		/* "no"/"none" say it outright: no service, node-local history. */
		if (conf_is_off(val)) {
			c->controller_host[0] = '\0';
			return 0;
		}
		if (!conf_is_host(val))
			return conf_fail(cp,
					 "key '%s': '%s' is not a host name or "
					 "IP address",
					 key, conf_show(val, show, sizeof(show)));
		snprintf(c->controller_host, sizeof(c->controller_host), "%s",
			 val);
		return 0;
	case CONF_KEY_CONTROLLER_PORT:
		return conf_uint(cp, key, val, 1, 65535, &c->controller_port);
	case CONF_KEY_ADMIN_GROUP:
		if (!conf_is_group_name(val))
			return conf_fail(cp,
					 "key '%s': '%s' is not a group name "
					 "([A-Za-z0-9_.-]{1,63}, not starting "
					 "with '-' or '.')",
					 key, conf_show(val, show, sizeof(show)));
		snprintf(c->admin_group, sizeof(c->admin_group), "%s", val);
		return 0;
	case CONF_KEY_PARTS_DEADLINE:
		/* "5m", "300": the service waits this long for a job's parts. */
		if (conf_duration(cp, key, val, &c->parts_deadline) < 0)
			return -1;
		if (c->parts_deadline < 1 ||
		    c->parts_deadline > CONF_PARTS_DEADLINE_MAX)
			return conf_fail(cp, "key '%s': must be 1s to %us", key,
					 CONF_PARTS_DEADLINE_MAX);
		return 0;
	case CONF_KEY_OUTBOX_LIMIT:
		return conf_uint(cp, key, val, 1, CONF_OUTBOX_LIMIT_MAX,
				 &c->outbox_limit);
	case CONF_KEY_OUTBOX_RETRY_MAX:
		/* The longest wait between two tries to reach the service:
		 * shorter files sooner after an outage, longer spares a
		 * service that is down for a while. */
		if (conf_duration(cp, key, val, &c->outbox_retry_max) < 0)
			return -1;
		if (c->outbox_retry_max < 1 ||
		    c->outbox_retry_max > CONF_OUTBOX_RETRY_MAX_MAX)
			return conf_fail(cp, "key '%s': must be 1s to %us", key,
					 CONF_OUTBOX_RETRY_MAX_MAX);
		return 0;
	case CONF_KEY_STAGE_BANDWIDTH:
		return conf_bandwidth(cp, key, val, &c->stage_bandwidth);
	case CONF_KEY_STAGE_BANDWIDTH_FALLBACK:
		if (conf_bandwidth(cp, key, val,
				   &c->stage_bandwidth_fallback) < 0)
			return -1;
		if (!c->stage_bandwidth_fallback)
			return conf_fail(cp,
					 "key '%s': must be above 0 (it is "
					 "the share a node takes alone)",
					 key);
		return 0;
	case CONF_KEY_PFS_LICENSE:
		if (conf_is_off(val)) {
			c->pfs_license[0] = '\0';
			return 0;
		}
		if (!conf_is_license_name(val))
			return conf_fail(cp,
					 "key '%s': '%s' is not a license name "
					 "([A-Za-z0-9_-]{1,31}, as in "
					 "slurm.conf Licenses=)",
					 key, conf_show(val, show, sizeof(show)));
		snprintf(c->pfs_license, sizeof(c->pfs_license), "%s", val);
		return 0;
	case CONF_KEY_PFS_LICENSE_PER_JOB:
		return conf_uint(cp, key, val, 1, CONF_PFS_LICENSE_PER_JOB_MAX,
				 &c->pfs_license_per_job);
	case CONF_KEY_PFS_PATH:
		if (conf_is_off(val)) {
			c->pfs_path[0] = '\0';
			return 0;
		}
		/* It goes into IOSTAGE_TRACE_CLASSES, whose separator is
		 * ':' (common/config/traceenv.h). */
		if (strchr(val, ':'))
			return conf_fail(cp, "key '%s': '%s' holds ':'", key,
					 conf_show(val, show, sizeof(show)));
		if (conf_path(cp, key, val, c->pfs_path,
			      sizeof(c->pfs_path)) < 0)
			return -1;
		if (!strcmp(c->pfs_path, "/"))
			return conf_fail(cp,
					 "key '%s': '/' is not a PFS mount "
					 "point (every read would be observed)",
					 key);
		return 0;
	case CONF_KEY_COUNT:
		break;
	}
	return conf_fail(cp, "key '%s': internal error", key);
}

/* Split "Key=Value" in place. Returns 0, or -1 with the message set. */
static int conf_split(struct conf_parser *cp, char *tok, char **ret_val)
{
	char show[CONF_SHOW_MAX + 8];
	char *eq = strchr(tok, '=');

	if (!eq)
		return conf_fail(cp, "key '%s': expected Key=Value",
				 conf_show(tok, show, sizeof(show)));
	*eq = '\0';
	if (!*tok)
		return conf_fail(cp, "key '': expected Key=Value");
	if (!eq[1])
		return conf_fail(cp, "key '%s': empty value",
				 conf_show(tok, show, sizeof(show)));
	*ret_val = eq + 1;
	return 0;
}

static int conf_lookup(const char *const *names, size_t n, const char *key)
{
	for (size_t i = 0; i < n; i++)
		if (strcasecmp(key, names[i]) == 0)
			return (int)i;
	return -1;
}

/* The message for a key that does not belong where it was found. */
static int conf_misplaced(struct conf_parser *cp, const char *key, bool tier)
{
	char show[CONF_SHOW_MAX + 8];
	int k;

	if (tier) {
		k = conf_lookup(conf_keys, CONF_KEY_COUNT, key);
		if (k >= 0)
			return conf_fail(cp,
					 "key '%s': not valid on a Tier line "
					 "(put it on its own line)",
					 conf_keys[k]);
		if (strcasecmp(key, "Tier") == 0)
			return conf_fail(cp, "key 'Tier': one tier per line");
	} else {
		k = conf_lookup(conf_tier_keys, CONF_TIER_KEY_COUNT, key);
		if (k >= 0)
			return conf_fail(cp,
					 "key '%s': only valid on a Tier line",
					 conf_tier_keys[k]);
		if (strcasecmp(key, "Tier") == 0)
			return conf_fail(cp, "key 'Tier': must start its line");
	}
	return conf_fail(cp, "unknown key '%s'",
			 conf_show(key, show, sizeof(show)));
}

/* A Tier line: TOKS[0] is "Tier=NAME". */
static int conf_tier_line(struct conf_parser *cp, char **toks, size_t ntoks)
{
	struct conf *c = cp->conf;
	struct conf_tier t;
	char show[CONF_SHOW_MAX + 8];
	char *name, *val;
	bool seen[CONF_TIER_KEY_COUNT] = {false};

	memset(&t, 0, sizeof(t));
	t.medium = TIER_MEDIUM_NVME;
	if (conf_split(cp, toks[0], &name) < 0)
		return -1;
	if (!conf_is_tier_name(name))
		return conf_fail(cp,
				 "key 'Tier': invalid tier name '%s' (want "
				 "[a-z0-9_-]{1,31})",
				 conf_show(name, show, sizeof(show)));
	for (size_t i = 0; i < c->ntiers; i++)
		if (strcmp(c->tiers[i].name, name) == 0)
			return conf_fail(cp,
					 "key 'Tier': duplicate tier '%s' "
					 "(first on line %u)",
					 name, cp->tier_line[i]);
	if (c->ntiers >= CONF_MAX_TIERS)
		return conf_fail(cp, "key 'Tier': more than %d tiers",
				 CONF_MAX_TIERS);
	snprintf(t.name, sizeof(t.name), "%s", name);

	for (size_t i = 1; i < ntoks; i++) {
		int k;

		if (conf_split(cp, toks[i], &val) < 0)
			return -1;
		k = conf_lookup(conf_tier_keys, CONF_TIER_KEY_COUNT, toks[i]);
		if (k < 0)
			return conf_misplaced(cp, toks[i], true);
		if (seen[k])
			return conf_fail(cp,
					 "key '%s': given twice for tier '%s'",
					 conf_tier_keys[k], t.name);
		seen[k] = true;
		switch ((enum conf_tier_key)k) {
		case CONF_TIER_PATH:
			if (conf_path(cp, "Path", val, t.path, sizeof(t.path)) <
			    0)
				return -1;
			break;
		case CONF_TIER_CAPACITY:
			if (conf_parse_size(val, &t.capacity) < 0)
				return conf_fail(
				    cp, "key 'Capacity': %s '%s'",
				    errno == ERANGE ? "size too large"
						    : "invalid size",
				    conf_show(val, show, sizeof(show)));
			break;
		case CONF_TIER_MEDIUM:
			k = conf_lookup(conf_media, CONF_ARRAY_LEN(conf_media),
					val);
			if (k < 0)
				return conf_fail(
				    cp,
				    "key 'Medium': unknown medium "
				    "'%s' (known: nvme, ssd, hdd, "
				    "pmem, ram)",
				    conf_show(val, show, sizeof(show)));
			t.medium = (enum tier_medium)k;
			break;
		case CONF_TIER_SHARED:
			if (strcasecmp(val, "yes") == 0)
				t.shared = true;
			else if (strcasecmp(val, "no") == 0)
				t.shared = false;
			else
				return conf_fail(
				    cp,
				    "key 'Shared': expected yes or "
				    "no, not '%s'",
				    conf_show(val, show, sizeof(show)));
			break;
		case CONF_TIER_KEY_COUNT:
			break;
		}
	}
	if (!seen[CONF_TIER_PATH])
		return conf_fail(cp, "key 'Path': required for tier '%s'",
				 t.name);
	/* Nested tier roots would let one tier's eviction or cleanup reach
	 * into another's jobs. */
	for (size_t i = 0; i < c->ntiers; i++)
		if (pathsafe_is_under(t.path, c->tiers[i].path) ||
		    pathsafe_is_under(c->tiers[i].path, t.path))
			return conf_fail(cp,
					 "key 'Path': %s overlaps tier '%s' "
					 "(%s, line %u)",
					 t.path, c->tiers[i].name,
					 c->tiers[i].path, cp->tier_line[i]);
	cp->tier_line[c->ntiers] = cp->line;
	c->tiers[c->ntiers++] = t;
	return 0;
}

#define CONF_LINE_TOKENS 16

static int conf_line(struct conf_parser *cp, char *line)
{
	char *toks[CONF_LINE_TOKENS];
	size_t ntoks = 0;
	char *save = NULL, *tok, *hash, *val;

	hash = strchr(line, '#');
	if (hash)
		*hash = '\0';
	for (tok = strtok_r(line, " \t\r\v\f", &save); tok;
	     tok = strtok_r(NULL, " \t\r\v\f", &save)) {
		if (ntoks == CONF_LINE_TOKENS)
			return conf_fail(cp,
					 "more than %d Key=Value pairs on "
					 "one line",
					 CONF_LINE_TOKENS);
		toks[ntoks++] = tok;
	}
	if (ntoks == 0)
		return 0;

	/* The first pair decides what kind of line this is. */
	if (strncasecmp(toks[0], "Tier=", 5) == 0 ||
	    strcasecmp(toks[0], "Tier") == 0)
		return conf_tier_line(cp, toks, ntoks);

	for (size_t i = 0; i < ntoks; i++) {
		int k;

		if (conf_split(cp, toks[i], &val) < 0)
			return -1;
		k = conf_lookup(conf_keys, CONF_KEY_COUNT, toks[i]);
		if (k < 0)
			return conf_misplaced(cp, toks[i], false);
		if (conf_global(cp, (enum conf_key)k, val) < 0)
			return -1;
	}
	return 0;
}

/* Rules that span keys, checked once every line has been read. */
static int conf_finish(struct conf_parser *cp)
{
	struct conf *c = cp->conf;
	char names[CONF_ERR_MAX];

	cp->line = 0;
	if (c->ntiers == 0)
		return conf_fail(cp, "key 'Tier': at least one Tier is "
				     "required");
	c->default_tier = 0;
	if (cp->key_line[CONF_KEY_DEFAULT_TIER]) {
		const struct conf_tier *t = conf_find_tier(c, cp->default_tier);

		cp->line = cp->key_line[CONF_KEY_DEFAULT_TIER];
		if (!t) {
			conf_tier_names(c, names, sizeof(names));
			return conf_fail(cp,
					 "key 'DefaultTier': unknown tier '%s' "
					 "(known: %s)",
					 cp->default_tier, names);
		}
		c->default_tier = (size_t)(t - c->tiers);
	}
	if (c->cache_low_watermark >= c->cache_high_watermark) {
		if (cp->key_line[CONF_KEY_CACHE_LOW]) {
			cp->line = cp->key_line[CONF_KEY_CACHE_LOW];
			return conf_fail(cp,
					 "key 'CacheLowWatermark': %u is not "
					 "below CacheHighWatermark (%u)",
					 c->cache_low_watermark,
					 c->cache_high_watermark);
		}
		cp->line = cp->key_line[CONF_KEY_CACHE_HIGH];
		return conf_fail(cp,
				 "key 'CacheHighWatermark': %u is not above "
				 "CacheLowWatermark (%u)",
				 c->cache_high_watermark,
				 c->cache_low_watermark);
	}
	return 0;
}

int conf_parse(const char *text, const char *origin, struct conf *ret_conf,
	       char *err, size_t errlen)
{
	struct conf_parser cp;
	char *copy = NULL, *line, *next;
	int rc = -1, saved;

	memset(&cp, 0, sizeof(cp));
	cp.origin = origin ? origin : "(config)";
	cp.err = err;
	cp.errlen = errlen;
	if (!text || !ret_conf)
		return conf_fail(&cp, "no configuration text");

	cp.conf = malloc(sizeof(*cp.conf));
	copy = strdup(text);
	if (!cp.conf || !copy) {
		conf_fail(&cp, "out of memory");
		errno = ENOMEM;
		goto out;
	}
	conf_set_defaults(cp.conf);

	for (line = copy; line; line = next) {
		next = strchr(line, '\n');
		if (next)
			*next++ = '\0';
		cp.line++;
		if (conf_line(&cp, line) < 0)
			goto out;
	}
	if (conf_finish(&cp) < 0)
		goto out;
	*ret_conf = *cp.conf;
	rc = 0;
out:
	saved = errno;
	free(copy);
	free(cp.conf);
	errno = saved;
	return rc;
}

static void conf_msg(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void conf_msg(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	if (!err || errlen == 0)
		return;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
}

int conf_load(const char *path, struct conf *ret_conf, char *err, size_t errlen)
{
	char reason[256], *text;
	int rc, saved;

	if (!path)
		path = IOSTAGE_CONF_PATH;
	text = smallfile_read(path, CONF_FILE_MAX, reason, sizeof(reason));
	if (!text) {
		saved = errno;
		conf_msg(err, errlen, "%s: cannot read: %s", path, reason);
		errno = saved;
		return -1;
	}
	rc = conf_parse(text, path, ret_conf, err, errlen);
	saved = errno;
	free(text);
	errno = saved;
	return rc;
}
