/* profile_int.h - what the profile*.c files share (not the programs: they
 * use profile.h): the enums' names, quoting a user's value, the helpers
 * every reader of a profile needs. Each returns as profile.h's functions
 * do: 0, or -1 with the one-line message in err (errmsg_fail). */
#ifndef IOSTAGE_PROFILE_INT_H
#define IOSTAGE_PROFILE_INT_H

#include <stdbool.h>
#include <stddef.h>

#include "common/config/conf.h"
#include "common/config/profile.h"

#define PROFILE_SHOW_MAX 64 /* bytes of a user's value quoted in errors */
#define PROFILE_KEY_MAX 48  /* "datasets[15].verify" and friends */

#define PROFILE_ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

/* The names of the enums' values, in their order (profile.c). */
#define PROFILE_NACCESS (PROFILE_ACCESS_SEQUENTIAL + 1)
#define PROFILE_NVERIFY (PROFILE_VERIFY_CHECKSUM + 1)
#define PROFILE_NDRAIN (PROFILE_DRAIN_END + 1)
#define PROFILE_NSPREAD (PROFILE_SPREAD_YES + 1)
#define PROFILE_NPOLICY (STAGE_FAILURE_FALLBACK + 1)
extern const char *const profile_access_names[PROFILE_NACCESS];
extern const char *const profile_verify_names[PROFILE_NVERIFY];
extern const char *const profile_drain_names[PROFILE_NDRAIN];
extern const char *const profile_spread_names[PROFILE_NSPREAD];
extern const char *const profile_policy_names[PROFILE_NPOLICY];

/* S (NULL: "(null)") made safe to quote on one line in BUF: control
 * characters become '?', long values are cut with "...". Returns BUF. */
const char *profile_show(const char *s, char *buf, size_t buflen);
#define SHOW(s, buf) profile_show((s), (buf), sizeof(buf))

/* A new empty profile from ORIGIN ("auto" sets is_auto), or NULL (ENOMEM). */
struct profile *profile_new(const char *origin);

/* Free what one dataset/output holds and zero it. */
void profile_free_dataset(struct profile_dataset *ds);
void profile_free_output(struct profile_output *out);

/* Dataset/output names: a path component without dots, [A-Za-z0-9_-]. */
bool profile_name_ok(const char *name);

/* Tier names as conf.h defines them: [a-z0-9_-]{1,31}. */
bool profile_tier_ok(const char *s);

/* The character C may stand in a name, or '_' in its place. */
char profile_name_char(char c);

/* Names given explicitly are distinct (as environment variables too). */
int profile_check_names(const struct profile *p, char *err, size_t errlen);

/* Give every unnamed dataset/output a name derived from its path. All or
 * nothing: on failure the profile is unchanged. */
int profile_assign_names(struct profile *p, char *err, size_t errlen);

/* The index of S in NAMES (N of them), or -1. */
int profile_lookup(const char *const *names, size_t n, const char *s);

/* A normalized copy of a user's path (the caller frees), or NULL with err
 * naming KEY. */
char *profile_path_dup(const char *path, const char *key, char *err,
		       size_t errlen);

/* A copy of a valid tier name (the caller frees), or NULL with err. */
char *profile_tier_dup(const char *tier, const char *key, char *err,
		       size_t errlen);

/* Is PATH already used by another dataset (OUTPUT: output) of P? */
bool profile_path_taken(const struct profile *p, bool output, const char *path);

/* Add PATH (a user's, normalized here) to P's streams; KEY for messages. */
int profile_add_stream(struct profile *p, const char *path, const char *key,
		       char *err, size_t errlen);

#endif /* IOSTAGE_PROFILE_INT_H */
