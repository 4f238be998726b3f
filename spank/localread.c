/* localread.c - the tasks of a job with a spread dataset read this node's
 * chunks of its cut files from their files (localread/localread.h).
 *
 * Runs after task.c, which learnt from iostaged whether the job reads a
 * spread view here, and before trace.c, so that deep mode's shim comes
 * first in LD_PRELOAD and counts the reads the application makes, not
 * the library's. A user turns it off for a job with IOSTAGE_LOCALREAD=0
 * in the job's environment (the library reads it).
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/config/conf.h"
#include "common/config/traceenv.h"
#include "spank/localread.h"
#include "spank/siteconf.h"

#define LOCALREAD_PRELOAD_MAX 8192

int localread_user_init(spank_t sp, bool spread)
{
	const struct conf *conf = siteconf_get(NULL, 0);
	char *preload = NULL, *old = NULL;
	uint32_t jobid = 0;

	if (!spread || !conf || !conf->local_read)
		return 0;
	spank_get_item(sp, S_JOB_ID, &jobid);
	/* checked here: one line in slurmd's log, not a loader warning in
	 * every task's stderr */
	if (access(conf->local_read_library, R_OK) < 0) {
		slurm_error("iostage: LocalReadLibrary %s: %s; job %u reads "
			    "its spread dataset through the view only",
			    conf->local_read_library, strerror(errno), jobid);
		return 0;
	}
	preload = malloc(LOCALREAD_PRELOAD_MAX);
	old = malloc(LOCALREAD_PRELOAD_MAX);
	if (!preload || !old) {
		slurm_error("iostage: localread: out of memory; job %u reads "
			    "its spread dataset through the view only",
			    jobid);
		goto out;
	}
	if (spank_getenv(sp, "LD_PRELOAD", old, LOCALREAD_PRELOAD_MAX) !=
	    ESPANK_SUCCESS)
		old[0] = '\0';
	if (traceenv_preload(conf->local_read_library, old, preload,
			     LOCALREAD_PRELOAD_MAX) < 0 ||
	    spank_setenv(sp, "LD_PRELOAD", preload, 1) != ESPANK_SUCCESS)
		slurm_error("iostage: localread: job %u: cannot set "
			    "LD_PRELOAD; it reads its spread dataset through "
			    "the view only",
			    jobid);
out:
	free(preload);
	free(old);
	return 0;
}
