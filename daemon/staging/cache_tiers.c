/* cache_tiers.c - iostaged's cache over its own tiers (tiers.c): their
 * directory fds, their space accounting, root as the owner. Kept apart so
 * that the rest of the cache never calls tiers.c, and a test gives a cache
 * tiers of its own.
 */
#include <string.h>

#include "daemon/staging/cache.h"
#include "daemon/staging/tiers.h"

static int space_usage(void *arg, int tier, struct tiers_usage *ret)
{
	return tiers_usage(arg, tier, ret);
}

static int space_reserve(void *arg, int tier, const char *dsname, uint64_t size,
			 char *err, size_t errlen)
{
	return tiers_reserve(arg, tier, dsname, size, err, errlen);
}

static void space_account(void *arg, int tier, int64_t delta)
{
	tiers_cache_account(arg, tier, delta);
}

void cache_params_tiers(struct tiers *ts, const struct conf *conf,
			struct cache_params *ret)
{
	size_t t;

	memset(ret, 0, sizeof(*ret));
	ret->conf = conf;
	for (t = 0; t < CONF_MAX_TIERS; t++) {
		ret->cache_fd[t] = t < conf->ntiers ? tiers_cache_fd(ts, (int)t)
						    : -1;
		ret->jobs_fd[t] = t < conf->ntiers ? tiers_jobs_fd(ts, (int)t)
						   : -1;
	}
	ret->space = (struct cache_space){
		.usage = space_usage,
		.reserve = space_reserve,
		.account = space_account,
		.arg = ts,
	};
	ret->owner_uid = 0;
	ret->owner_gid = 0;
}
