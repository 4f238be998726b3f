/* journal.h - the build journal: which cache versions this node is building.
 *
 * Before iostaged creates TIER/cache/.build.K.vN.NODE it writes a record
 * StateDir/journal/TIER.K.vN (root 0600, written atomically and fsynced);
 * once the build is published as K.vN, or removed after a failure, the
 * record is deleted. A daemon that died in between finds the record at its
 * next start and removes the build directory it names, so a half-copied
 * dataset never survives a crash. StateDir is node-local, so on a Shared
 * tier a node only ever removes the builds it started itself.
 *
 * Record: {"tier":"nvme","build":".build.K.vN.NODE","created":1700000000}
 */
#ifndef IOSTAGE_DAEMON_JOURNAL_H
#define IOSTAGE_DAEMON_JOURNAL_H

#include <stddef.h>

#include "common/config/conf.h"

#define JOURNAL_NAME_MAX 128 /* a build directory's name */

/* Create StateDir/journal (root 0700) and open it. CONF must outlive the
 * daemon. 0, or -1 with err. */
int journal_init(const struct conf *conf, char *err, size_t errlen);

/* Close the journal directory. Safe without journal_init. */
void journal_fini(void);

/* Record that BUILD (a directory name under TIER's cache) is being built.
 * Durable when it returns 0; -1 with errno and err otherwise. */
int journal_add(int tier, const char *build, char *err, size_t errlen);

/* Drop the record of BUILD on TIER (published or removed). Logs failures. */
void journal_remove(int tier, const char *build);

/* Start-up: for every record, call REMOVE(tier, build, arg) (which should
 * remove the build directory; a missing one is fine) and delete the record
 * when it returns 0. Records naming unknown tiers are dropped with a
 * warning. Returns the number of builds removed. */
unsigned journal_replay(int (*remove)(int tier, const char *build, void *arg),
			void *arg);

#endif /* IOSTAGE_DAEMON_JOURNAL_H */
