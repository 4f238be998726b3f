/* profile.h - a job's I/O hints: parsing, validation, normalization.
 *
 * Three inputs meet here:
 *   - the --io-profile SPEC: NAME | PATH.json | auto, then ",key=value"
 *     overrides (data=PATH[:TIER] repeatable, out=PATH repeatable,
 *     stream=PATH repeatable (read from the PFS in place, never staged:
 *     it takes the PFS license, docs/SCHEDULING.md), tier=,
 *     on-failure=fail|fallback, timeout=SECONDS, trace=true|false);
 *   - profile JSON, from a site profile (ProfileDir/NAME.json) or a user file;
 *   - the normalized profile: compact JSON with every default resolved, as
 *     passed to the Prolog (SPANK_IOSTAGE_PROFILE) and to iostaged.
 * Every error is one line naming the key and the reason, e.g.
 *   "key 'tier': unknown tier 'nvm' (known: nvme, bb)"
 * Callers prefix it with where it came from ("iostage: --io-profile: ").
 */
#ifndef IOSTAGE_PROFILE_H
#define IOSTAGE_PROFILE_H

#include <stdbool.h>
#include <stddef.h>

#include "common/config/conf.h"

#define PROFILE_SPEC_MAX 4096        /* whole --io-profile value */
#define PROFILE_JSON_MAX (64 * 1024) /* a profile file or normalized JSON */
#define PROFILE_MAX_DATASETS 16
#define PROFILE_MAX_OUTPUTS 16
#define PROFILE_MAX_STREAMS 16
#define PROFILE_NAME_MAX 32       /* dataset/output names [A-Za-z0-9_-] */
#define PROFILE_TIMEOUT_MAX 86400 /* seconds */

enum profile_access {
	PROFILE_ACCESS_UNKNOWN = 0,
	PROFILE_ACCESS_RANDOM,
	PROFILE_ACCESS_SEQUENTIAL,
};

enum profile_verify {
	PROFILE_VERIFY_STAT = 0,
	PROFILE_VERIFY_NONE,
	PROFILE_VERIFY_CHECKSUM,
};

enum profile_drain {
	PROFILE_DRAIN_ASYNC = 0,
	PROFILE_DRAIN_END,
};

/* A dataset copied whole onto every node (no), or spread over the job's
 * nodes, each staging its part and every task seeing the whole tree
 * (yes; docs/STAGING.md, "Spread datasets"). */
enum profile_spread {
	PROFILE_SPREAD_NO = 0,
	PROFILE_SPREAD_YES,
};

struct profile_dataset {
	char *name; /* unique within the profile; default: basename of path */
	char *path; /* absolute, normalized */
	char *tier; /* NULL until normalized: then always set */
	enum profile_access access;
	enum profile_verify verify;
	enum profile_spread spread;
};

struct profile_output {
	char *name;
	char *path;
	char *tier;
	enum profile_drain drain;
};

struct profile {
	char *origin; /* "dl-train", "/home/u/p.json", "auto", "" */
	char *tier;   /* profile-wide default tier, may be NULL */
	enum profile_access access; /* default for datasets without one */
	struct profile_dataset datasets[PROFILE_MAX_DATASETS];
	size_t ndatasets;
	struct profile_output outputs[PROFILE_MAX_OUTPUTS];
	size_t noutputs;
	/* Datasets the job reads from the PFS where they are ("streams":
	 * [PATH...], stream=PATH): nothing is staged for them; they make the
	 * job ask for its share of the PFS bandwidth (PfsLicense=). */
	char *streams[PROFILE_MAX_STREAMS];
	size_t nstreams;
	bool trace;
	unsigned timeout; /* 0 = not set (conf StageTimeout applies) */
	bool has_on_failure;
	enum stage_failure_policy on_failure;
	bool is_auto; /* SPEC was "auto": resolved by the history */
	/* "observe": true: an auto job the history had no advice for runs
	 * from the PFS, traced, with conf PfsPath= as its dataset class, so
	 * that its record says which tree it read (profile_observe). */
	bool observe;
};

/* What profile_validate checks beyond structure. */
enum profile_check {
	PROFILE_CHECK_STRUCTURE = 0,
	/* Datasets exist and are readable, outputs writable (or creatable), by
	 * the calling process's real uid: use at submit, as the user. */
	PROFILE_CHECK_ACCESS = 1,
};

/* Parse profile JSON (strict: unknown keys, wrong types, bad values are
 * errors; malformed JSON reports line and column). ORIGIN names the source
 * in messages and is stored in ->origin. Returns a new profile (free with
 * profile_destroy) or NULL with the reason in err. */
struct profile *profile_parse_json(const char *json, const char *origin,
				   char *err, size_t errlen);

/* Resolve a --io-profile SPEC: load the site profile from conf->profile_dir
 * or the user's JSON file (read as the calling process), then apply the
 * overrides. Does not validate against the tiers or the file system: call
 * profile_normalize and profile_validate next. NULL + err on failure. */
struct profile *profile_from_spec(const char *spec, const struct conf *conf,
				  char *err, size_t errlen);

/* Fill every default from CONF (tiers, timeout, policy) so the profile stands
 * alone. Returns 0, or -1 with err (e.g. unknown tier). */
int profile_normalize(struct profile *profile, const struct conf *conf,
		      char *err, size_t errlen);

/* Check a normalized profile against CONF (tiers exist, timeout in range,
 * names unique, paths absolute without "..") and, with PROFILE_CHECK_ACCESS,
 * against the file system as the calling user. 0 or -1 with err. */
int profile_validate(const struct profile *profile, const struct conf *conf,
		     enum profile_check checks, char *err, size_t errlen);

/* Compact normalized JSON; caller frees. NULL on ENOMEM. */
char *profile_to_json(const struct profile *profile);

/* An --io-profile=auto job with nothing to stage (no advice yet, no
 * overrides): when the site names its PFS (conf PfsPath=), make it an
 * observed job: "observe" and "trace" set, so the plugin traces it with
 * the PFS as its dataset class and the history learns what it reads.
 * True when PROFILE was made observed; false (unchanged) otherwise. */
bool profile_observe(struct profile *profile, const struct conf *conf);

/* The environment-variable form of a dataset/output name: upper-cased,
 * '-' -> '_'. Writes at most buflen bytes including NUL. */
void profile_env_name(const char *name, char *buf, size_t buflen);

/* NULL is a no-op. */
void profile_destroy(struct profile *profile);

const char *profile_access_name(enum profile_access access);
const char *profile_verify_name(enum profile_verify verify);
const char *profile_drain_name(enum profile_drain drain);
const char *profile_spread_name(enum profile_spread spread);

#endif /* IOSTAGE_PROFILE_H */
