/* forward.h - job records from this node to iostagectld, never lost.
 *
 * With ControllerHost= set, the Epilog's `finish` puts the job's closed
 * record (this node's part of it, for a multi-node job) in the durable
 * outbox StateDir/outbox (common/telemetry/outbox.h) before it replies, and one
 * forwarding thread sends each entry to the service with the `file` op
 * (common/net/ctlclient.h). An entry leaves the outbox only after the
 * service's ok ("duplicate" included: it was filed before). While the
 * service is unreachable the thread retries with exponential backoff,
 * FORWARD_BACKOFF_MIN_MS doubling up to OutboxRetryMax= (60 s), each wait
 * a random half to all of it (jitter); a new entry wakes it at once. At start-up it resumes with whatever the outbox holds,
 * so a kill -9 between the outbox write and the forward loses nothing.
 * Past OutboxLimit= entries it logs an error (at most every
 * FORWARD_ALARM_S); it never drops one. A file in the outbox that is not
 * an entry is moved to StateDir/outbox/bad/ with a log line.
 */
#ifndef IOSTAGE_DAEMON_FORWARD_H
#define IOSTAGE_DAEMON_FORWARD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cJSON.h>

#include "common/config/conf.h"

#define FORWARD_DIR_NAME "outbox"
#define FORWARD_BACKOFF_MIN_MS 1000
#define FORWARD_IDLE_LOOK_S 60 /* an empty pass looks again after */
#define FORWARD_ALARM_S 600    /* between two "outbox over its limit" */
#define FORWARD_BATCH_MAX 64   /* entries per request (file_batch) */
#define FORWARD_BATCH_BYTES                                                    \
	(512 * 1024) /* entry bytes per request, well
					  * under PEERNET_LINE_MAX */

#define FORWARD_TICK_MS                                                        \
	250 /* how often the thread looks at its
				  * backoff: the granularity of a wait */

struct agent;
struct forward;

/* With a service configured: open A->conf->state_dir/outbox (the conf
 * must outlive it) and start the forwarding thread; *RET the forward.
 * Without one: *RET NULL (a warning if an old outbox still holds
 * records). 0, or -1 with err (the outbox cannot be opened: records
 * would be lost, so the daemon does not start). */
int forward_create(struct agent *a, struct forward **ret, char *err,
		   size_t errlen);

/* Stop the thread (it finishes the request in flight), close the outbox
 * and free F. Entries not sent stay for the next start. NULL: no-op. */
void forward_destroy(struct forward *f);

/* Is filing through the service on (F was made: a service is set)? */
bool forward_enabled(const struct forward *f);

/* finish: put job ID's closed record REC (not taken; its "nodes" name a
 * multi-node job's nodes, head first) in the outbox and wake the thread.
 * When this returns 0 the record is on disk. When the outbox cannot take
 * it (disk full) the record is sent to the service once, directly.
 * -1 with err when both failed: the record is lost (the caller logs). */
int forward_put(struct forward *f, uint32_t id, const cJSON *rec, char *err,
		size_t errlen);

/* How many entries wait in the outbox (0 when off: F NULL), for
 * `status`. */
long forward_pending(const struct forward *f);

#endif /* IOSTAGE_DAEMON_FORWARD_H */
