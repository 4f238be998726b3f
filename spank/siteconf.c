/* siteconf.c - see siteconf.h. */
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>

#include "common/config/conf.h"
#include "spank/options.h"
#include "spank/siteconf.h"

static pthread_once_t siteconf_once = PTHREAD_ONCE_INIT;
static struct conf siteconf; /* ~20 KiB: one, off every stack */
static char siteconf_err[CONF_ERR_MAX];
static bool siteconf_ok;

static void siteconf_load(void)
{
	siteconf_ok = conf_load(options.conf_path, &siteconf, siteconf_err,
				sizeof(siteconf_err)) == 0;
}

const struct conf *siteconf_get(char *err, size_t errlen)
{
	pthread_once(&siteconf_once, siteconf_load);
	if (siteconf_ok)
		return &siteconf;
	if (err && errlen)
		snprintf(err, errlen, "%s", siteconf_err);
	return NULL;
}
