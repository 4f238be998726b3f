/* pfslicense.h - the PFS bandwidth a streaming job asks Slurm for.
 *
 * A site gives the PFS a bandwidth budget as a Slurm license
 * (slurm.conf `Licenses=pfs_bw:N`, N units of a bandwidth the site
 * chooses, e.g. 100 MB/s each) and names it in iostage.conf
 * (`PfsLicense=pfs_bw`, `PfsLicensePerJob=K`). A job that reads a
 * dataset from the PFS in place rather than staging it (its profile's
 * "streams", or with --io-profile=auto the history's `stream` advice)
 * then asks for K of them at submit (`-L pfs_bw:K`, set by the shipped
 * cli_filter.lua through `iostage pfs-license`), and Slurm keeps the
 * total within N: a job beyond it waits with reason Licenses.
 * Staging jobs take none: their copies are bounded by StageBandwidth=
 * (daemon/staging/bwgov.h). docs/SCHEDULING.md.
 */
#ifndef IOSTAGE_PFSLICENSE_H
#define IOSTAGE_PFSLICENSE_H

#include <stddef.h>

#include <cJSON.h>

#include "common/config/conf.h"
#include "common/config/profile.h"

#define PFSLICENSE_MAX 1024       /* a --licenses value we build */
#define PFSLICENSE_CONFIDENCE 0.5 /* advice auto applies, as spank/auto */

/* "NAME:K" for a job with PROFILE under CONF into BUF, or "" when the job
 * streams nothing or CONF names no PfsLicense. PROFILE may be NULL (no
 * profile: ""). 0, or -1 with errno ENAMETOOLONG (BUF too small). */
int pfslicense_for(const struct profile *profile, const struct conf *conf,
		   char *buf, size_t buflen);

/* The history's `stream` advice (a recommend reply: rule "stream",
 * confidence >= PFSLICENSE_CONFIDENCE) added to PROFILE's streams, for
 * datasets it neither stages nor streams already, up to
 * PROFILE_MAX_STREAMS. Returns how many were added (the reply is not
 * trusted: targets that are not clean absolute paths are skipped). */
size_t pfslicense_add_advice(struct profile *profile, const cJSON *reply);

/* EXISTING (a user's own --licenses value, may be NULL or "") with
 * LICENSE ("NAME:K", or "" for nothing) added, into BUF: the user's value
 * when it already names NAME (theirs wins), else "EXISTING,LICENSE".
 * 0, or -1 with errno ENAMETOOLONG. */
int pfslicense_merge(const char *existing, const char *license, char *buf,
		     size_t buflen);

#endif /* IOSTAGE_PFSLICENSE_H */
