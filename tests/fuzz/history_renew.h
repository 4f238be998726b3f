/* history_renew.h - the history a fuzz target's ops run against, afresh
 * every FUZZ_HISTORY_INPUTS inputs (fuzz_agent_request, fuzz_ctld_request).
 *
 * What the file and history ops put accumulates (mostly new versions of
 * the same few jobs and parts, all in RocksDB's memtable), and each read
 * walks past more of it: after a million inputs that walk was half of
 * agent_request's time, and the rate fell with the run. A node's or the
 * service's history gets one record per job, not thousands of one job's.
 * Not per input: a read must be able to meet what an earlier input put.
 */
#ifndef IOSTAGE_FUZZ_HISTORY_RENEW_H
#define IOSTAGE_FUZZ_HISTORY_RENEW_H

/* First, in a block of its own: it defines _GNU_SOURCE (ftw.h's FTW_*),
 * which must come before any system header. */
#include "tests/fuzz/fuzz.h"

#include "common/history/history.h"

#define FUZZ_HISTORY_INPUTS 20000

/* Call once per input; CONF is the one history_init was given. */
static void fuzz_history_renew(const struct conf *conf)
{
	static unsigned long inputs;
	char dir[CONF_PATH_MAX + 16];

	if (++inputs % FUZZ_HISTORY_INPUTS)
		return;
	history_fini();
	history_dir(conf, dir, sizeof(dir));
	fuzz_rmtree(dir);
	history_init(conf);
}

#endif /* IOSTAGE_FUZZ_HISTORY_RENEW_H */
