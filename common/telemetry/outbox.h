/* outbox.h - a node's durable outbox of job records for iostagectld.
 *
 * At the Epilog iostaged puts the job's record (this node's part of it,
 * for a multi-node job) here BEFORE the Epilog returns, and a forwarding
 * thread (daemon/cluster/forward.c) sends each entry to the service with the
 * `file` op, removing it only once the service said ok. So a service
 * that is down, a network that drops, or a kill -9 of iostaged between
 * the two steps costs nothing: the entry is still on disk and the next
 * pass (or the next start) sends it again; the service's `file` is
 * idempotent by (job, node).
 *
 * On disk: one file per (job, node), DIR/J.NODE.json, root 0600, holding
 * one JSON object (docs/ARCHITECTURE.md):
 *   {"outbox":1,"job":J,"node":"n1","nodes":["n1","n2"],
 *    "written":UNIX_S,"record":{...}}
 * "nodes" is the job's node list, the head first ([node] for a one-node
 * job); "record" is the closed telemetry record (docs/RECORDS.md) whose
 * "job" and "node" match. A file is written as ".J.NODE.json.<tid>.tmp"
 * (O_EXCL, fsync), renamed over its name and the directory fsynced, so a
 * reader sees a whole entry or none. A temporary file left by a crash is
 * torn by definition: it is ignored by outbox_list and removed by
 * outbox_open. A file that cannot be an entry (bad name, not JSON, wrong
 * shape) is never deleted: outbox_quarantine moves it to DIR/bad/ where an
 * admin can look at it.
 *
 * Library code: no logging; errors are one line in err. Thread-safe: puts,
 * removals and quarantines of one outbox may run in parallel (a removal
 * never takes away an entry rewritten since it was read).
 */
#ifndef IOSTAGE_OUTBOX_H
#define IOSTAGE_OUTBOX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#include <cJSON.h>

#include "common/config/conf.h"

#define OUTBOX_FORMAT 1
#define OUTBOX_ENTRY_MAX (1024 * 1024) /* bytes of one entry file */
#define OUTBOX_NODES_MAX 4096          /* nodes of one job (recmerge's) */
#define OUTBOX_NAME_MAX (CONF_NODE_MAX + 24)
#define OUTBOX_BAD_DIR "bad"

struct outbox;

/* One file of the outbox, as outbox_list saw it. */
struct outbox_item {
	char name[256];  /* the file name in the outbox */
	bool valid_name; /* J.NODE.json: job and node below are set */
	uint32_t job;
	char node[CONF_NODE_MAX];
	struct timespec mtime; /* when it was written (list order) */
	ino_t ino;             /* the file listed/read: outbox_remove's check */
	size_t bytes;          /* its size when read (outbox_read) */
};

/* Open the outbox directory DIR (absolute), creating it (0700) and DIR/bad
 * when missing; DIR must be a directory, not a link. Temporary files left
 * by a crash are removed; *ret_cleaned (may be NULL) gets how many.
 * Returns 0 with *ret_ob (caller closes), or -1 with err. */
int outbox_open(const char *dir, struct outbox **ret_ob, unsigned *ret_cleaned,
		char *err, size_t errlen);

/* NULL is a no-op. */
void outbox_close(struct outbox *ob);

/* Check that ENTRY has the shape above ("outbox" and "written" optional):
 * job 1..2^32-1, node a NodeName, nodes 1..OUTBOX_NODES_MAX NodeNames
 * including node, record an object with the same job and node. Also the
 * service's check of a `file` request. 0, or -1 with errno EINVAL and one
 * line in err naming the key. */
int outbox_entry_check(const cJSON *entry, char *err, size_t errlen);

/* Build an entry for JOB's record REC (not taken) from NODE, the job's
 * NODES (N names, head first; N == 0 means [NODE]), written at WRITTEN
 * (unix s). Caller deletes; NULL with errno ENOMEM. */
cJSON *outbox_entry_new(uint32_t job, const char *node,
			const char *const *nodes, size_t n, const cJSON *rec,
			double written);

/* Write ENTRY (checked with outbox_entry_check) durably as J.NODE.json,
 * replacing an entry of the same job and node. When this returns 0 the
 * entry survives a crash of the machine. -1 with err (errno EINVAL bad
 * entry, EMSGSIZE over OUTBOX_ENTRY_MAX, else the file system's); nothing
 * is left behind on failure. */
int outbox_put(struct outbox *ob, const cJSON *entry, char *err, size_t errlen);

/* The files of the outbox (temporary files and DIR/bad excluded), oldest
 * first (mtime, then name). *ret_items (caller frees; NULL when none) and
 * *ret_n. 0, or -1 with err. */
int outbox_list(struct outbox *ob, struct outbox_item **ret_items,
		size_t *ret_n, char *err, size_t errlen);

/* How many files the outbox holds (as outbox_list counts them), or -1. */
long outbox_count(struct outbox *ob);

/* Read and check the entry IT names (it->ino is updated to the file
 * read). Returns it (caller deletes), or NULL with err and errno: ENOENT
 * (gone meanwhile: not an error), EINVAL (not an entry: quarantine it),
 * else the file system's. */
cJSON *outbox_read(struct outbox *ob, struct outbox_item *it, char *err,
		   size_t errlen);

/* Remove the entry IT names, unless the file was replaced since it was
 * read (a newer record of the same job and node: it stays). Returns 0
 * removed (or already gone), 1 kept (replaced), -1 with err. The removal
 * is made durable by outbox_sync, once for many: one that a crash undoes
 * only sends the entry again, which the service answers as a duplicate. */
int outbox_remove(struct outbox *ob, const struct outbox_item *it, char *err,
		  size_t errlen);

/* fsync the outbox directory (after removals). */
void outbox_sync(struct outbox *ob);

/* Move the file IT names to DIR/bad/NAME.UNIXTIME (never deleted). The
 * new path goes to ret_path (may be NULL). 0, or -1 with err. */
int outbox_quarantine(struct outbox *ob, const struct outbox_item *it,
		      char *ret_path, size_t pathlen, char *err, size_t errlen);

#endif /* IOSTAGE_OUTBOX_H */
