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
 *
 * A journal is an object (struct journal) its cache opens and closes
 * (daemon/staging/cache.h), so that two caches in one process (a unit
 * test's) keep two journals.
 */
#ifndef IOSTAGE_DAEMON_JOURNAL_H
#define IOSTAGE_DAEMON_JOURNAL_H

#include <stddef.h>
#include <sys/types.h>

#include "common/config/conf.h"

#define JOURNAL_NAME_MAX 128 /* a build directory's name */

struct journal;

/* Create CONF's StateDir/journal (0700) and open it; it must be OWNER's
 * (root in iostaged) and writable by OWNER alone. CONF (the tiers' names)
 * must outlive the journal. The journal, or NULL with err; the caller
 * closes it with journal_close. */
struct journal *journal_open(const struct conf *conf, uid_t owner, char *err,
			     size_t errlen);

/* Close the journal directory and free J. NULL is a no-op. */
void journal_close(struct journal *j);

/* Record that BUILD (a directory name under TIER's cache) is being built.
 * Durable when it returns 0; -1 with errno and err otherwise. */
int journal_add(struct journal *j, int tier, const char *build, char *err,
		size_t errlen);

/* Drop the record of BUILD on TIER (published or removed). Logs failures. */
void journal_remove(struct journal *j, int tier, const char *build);

/* Start-up: for every record, call REMOVE(tier, build, arg) (which should
 * remove the build directory; a missing one is fine) and delete the record
 * when it returns 0. Records naming tiers the journal's conf does not know
 * are dropped with a warning. Returns the number of builds removed. */
unsigned journal_replay(struct journal *j,
			int (*remove)(int tier, const char *build, void *arg),
			void *arg);

#endif /* IOSTAGE_DAEMON_JOURNAL_H */
