/* spread.h - which node of a job holds which file of a spread dataset
 * (issue 29: a dataset larger than one node, placed over the job's nodes;
 * docs/STAGING.md, "Spread datasets").
 *
 * Weighted rendezvous (highest-random-weight) hashing: every node scores
 * every file, score = -weight / ln(u), with u in (0,1) a 64-bit hash of
 * the node's name and the file's relative path; the highest score holds the
 * file. Every node of the job, the view (view/) and iostagectld compute the
 * same owner from the same plan with no exchange beyond the plan itself.
 * Why rendezvous and not modulo or a ring: a node that joins or leaves the
 * set moves only the files it gains or held (each file's score at the other
 * nodes does not change), with no virtual nodes to tune, and a weight
 * changes a node's expected share proportionally (a node with twice the
 * free space holds about twice the bytes).
 *
 * A plan is a list of nodes with weights, written as one line
 * "NAME=WEIGHT,NAME=WEIGHT,..." (spread_plan_parse/format): the names are
 * Slurm node names, the weights positive integers (the head of the job
 * gives each node's free space in MiB, docs/STAGING.md). Library code: no
 * logging, no allocation.
 */
#ifndef IOSTAGE_SPREAD_H
#define IOSTAGE_SPREAD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SPREAD_NODES_MAX 256 /* nodes a dataset is spread over */
#define SPREAD_NAME_MAX 64   /* bytes of a node name, NUL included */
#define SPREAD_WEIGHT_MAX (UINT64_C(1) << 40)
#define SPREAD_SPEC_MAX (SPREAD_NODES_MAX * (SPREAD_NAME_MAX + 16))

struct spread_node {
	char name[SPREAD_NAME_MAX];
	uint64_t weight; /* > 0 */
};

struct spread_plan {
	unsigned n; /* nodes, 1..SPREAD_NODES_MAX */
	struct spread_node nodes[SPREAD_NODES_MAX];
};

/* Parse SPEC ("n1=100,n2=80") into *ret. Names: 1..SPREAD_NAME_MAX-1 bytes
 * of [A-Za-z0-9._-], no two alike; weights: decimal 1..SPREAD_WEIGHT_MAX.
 * Returns 0, or -1 with EINVAL and one line in ERR ("spread plan: node 3:
 * weight '0' is not 1..2^40"); *ret untouched on failure. */
int spread_plan_parse(const char *spec, struct spread_plan *ret, char *err,
		      size_t errlen);

/* Write PLAN as a spec into BUF (LEN bytes). Returns the length written
 * (without the NUL), or -1 with ENOSPC if it does not fit. */
int spread_plan_format(const struct spread_plan *plan, char *buf, size_t len);

/* Index of NAME in PLAN, or -1. */
int spread_plan_find(const struct spread_plan *plan, const char *name);

/* Index of the node of PLAN that holds the file at relative path PATH (LEN
 * bytes, not necessarily NUL-terminated; "" for a one-file dataset). Never
 * fails for a valid plan. */
unsigned spread_owner(const struct spread_plan *plan, const char *path,
		      size_t len);

/* The score of node I for PATH (exposed for the tests and for ordering a
 * node's files when only some of them fit: higher = held more firmly). */
double spread_score(const struct spread_plan *plan, unsigned i,
		    const char *path, size_t len);

/* Weight from free bytes: MiB, at least 1 (a full node still gets a tiny
 * share rather than a weight of 0, which the plan refuses), at most
 * SPREAD_WEIGHT_MAX. */
uint64_t spread_weight_of_bytes(uint64_t free_bytes);

/* --- chunks of files too large for one node ---------------------------------
 *
 * A file larger than half its owner's room (the owner's weight, in MiB) is
 * held whole by no node: it is cut into chunks, chunk I being the bytes
 * [I * C, min(size, (I + 1) * C)), and each chunk is placed as a file is,
 * by the same weighted rendezvous hashing over (path, I). Half, not all,
 * of the room: a file that takes most of a node would push that node's
 * other files out of its part, and only the files and chunks that fit are
 * held (the rest is read from the PFS). C depends on the file's size
 * alone, not on the plan, so that a chunk stays the same bytes when the
 * job's nodes change and a later job finds it cached: size / 64 rounded
 * down to a power of two, between SPREAD_CHUNK_MIN and SPREAD_CHUNK_MAX
 * (a 1 GiB file: 64 chunks of 16 MiB; a 100 GB one: 1,491 of 64 MiB). */
#define SPREAD_CHUNK_MIN (UINT64_C(1) << 20)
#define SPREAD_CHUNK_MAX (UINT64_C(64) << 20)

/* Is a file of SIZE bytes, owned by node OWNER of PLAN (spread_owner),
 * cut into chunks? */
bool spread_chunked(const struct spread_plan *plan, unsigned owner,
		    uint64_t size);

/* The chunk size of a file of SIZE bytes, and how many chunks it has (a
 * file of 0 bytes: none). */
uint64_t spread_chunk_bytes(uint64_t size);
uint64_t spread_chunk_count(uint64_t size);

/* Node I's score for chunk INDEX of the file at PATH (LEN bytes), and the
 * chunk's owner: as spread_score and spread_owner for files, with a score
 * drawn independently of the file's and of every other chunk's. */
double spread_chunk_score(const struct spread_plan *plan, unsigned i,
			  const char *path, size_t len, uint64_t index);
unsigned spread_chunk_owner(const struct spread_plan *plan, const char *path,
			    size_t len, uint64_t index);

#endif /* IOSTAGE_SPREAD_H */
