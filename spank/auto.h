/* auto.h - --io-profile=auto and the submit-time hint, from the history.
 *
 * Allocator/local context, as the submitting user. Both ask the history
 * for the recommendations for this user + job name (common/config/jobname.h)
 * with a short timeout: iostagectld when iostage.conf sets ControllerHost=
 * (over TCP, in the user's own MUNGE credential: a login node needs no
 * iostaged), else the node's iostaged. A service or daemon that cannot be
 * reached never makes sbatch wait long or fail.
 */
#ifndef IOSTAGE_SPANK_AUTO_H
#define IOSTAGE_SPANK_AUTO_H

#include <stddef.h>

#include "common/config/conf.h"
#include "common/config/profile.h"

#define AUTO_DAEMON_TIMEOUT_MS 2000
#define AUTO_HINT_TIMEOUT_MS 1000

/* Fill *PROFILE (SPEC was "auto", maybe with overrides) from the history's
 * confident recommendations; datasets and outputs the user named win.
 * Prints one info line saying what was applied, that there is no history
 * yet, or that the history cannot be reached. Without advice and without
 * overrides the job is observed when the site names its PFS
 * (profile_observe: traced, so the history learns what it reads). Returns
 * 1 when the profile now has something to stage or to observe, 0 when the
 * job runs without a profile, -1 with
 * err when the history's fragment does not parse. */
int auto_apply(struct profile *profile, const struct conf *conf, char *err,
	       size_t errlen);

/* For a job submitted without --io-profile: one hint line when the
 * history has confident advice for it and RecommendHint=yes. Never
 * fails. */
void auto_hint(const struct conf *conf);

#endif /* IOSTAGE_SPANK_AUTO_H */
