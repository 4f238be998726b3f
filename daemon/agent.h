/* agent.h - one node agent: every part of iostaged, created, passed and
 * destroyed together.
 *
 * Each module of daemon/ keeps its state in its own struct, made by
 * MOD_create() and freed by MOD_destroy(), and reaches the others through
 * the agent it was created with (as flux-core's job-manager parts reach
 * theirs through the manager). Nothing in daemon/ keeps per-agent state
 * in file-scope variables, so a test can hold two agents in one process
 * (tiers in temporary directories, no root, no Slurm, no socket). What is
 * per process stays per process and says so where it is declared: the
 * signal flag in main.c, the executable spawn.c re-executes, the log.
 *
 * A field is NULL when its part is not running (no ControllerHost=: no
 * forward; a test agent: no server, no metrics, no peer).
 */
#ifndef IOSTAGE_DAEMON_AGENT_H
#define IOSTAGE_DAEMON_AGENT_H

#include <stddef.h>
#include <sys/types.h>

struct conf;
struct tiers;
struct cache;
struct stage;
struct jobs;
struct drain;
struct telemetry;
struct stats;
struct bwgov;
struct server;
struct parts;
struct forward;
struct peer_channel;
struct cachereport;
struct metrics;
struct sampler;

struct agent {
	const struct conf *conf;
	const char *conf_path; /* the file conf was read from */
	/* Who owns StateDir, the tiers' roots and the cache: root in
	 * iostaged, a unit test's own uid (set by agent_create). */
	uid_t owner;

	/* staging/ */
	struct tiers *tiers;
	struct cache *cache;
	struct stage *stage;
	struct drain *drain;
	struct bwgov *bwgov;

	/* the job table */
	struct jobs *jobs;

	/* telemetry/ */
	struct telemetry *telemetry;
	struct stats *stats;
	struct metrics *metrics;

	/* cluster/ */
	struct parts *parts;
	struct forward *forward;
	struct peer_channel *peer;
	struct cachereport *cachereport;

	/* the socket */
	struct server *server;
};

/* The parts that hold no job state yet, over A->conf (set by the
 * caller, with conf_path): the tiers, the cache over them, the stager and
 * the figures. OWNER owns the tiers' roots, StateDir and the cache (root in
 * iostaged; a unit test's own uid). 0, or -1 with err and whatever was
 * made freed (the fields NULL again). */
int agent_create(struct agent *a, uid_t owner, char *err, size_t errlen);

/* Then the state the last run left, read back in this order: the job
 * table (StateDir/jobs), the drain (before the jobs are loaded: it
 * resumes their outputs), the jobs, the views of jobs no longer known
 * detached, the cache reconciled against the jobs, telemetry's live
 * records, a multi-node job's parts. iostaged claims its socket between
 * agent_create and this, so that a second daemon stops at "already
 * running" before it touches the first one's state. 0, or -1 with err
 * (what was made stays, for agent_destroy). */
int agent_load(struct agent *a, uid_t owner, char *err, size_t errlen);

/* Free what agent_create and agent_load made, in the reverse order, and
 * set those fields to NULL. The parts the caller made (socket, peer,
 * forward, metrics, bandwidth, cache report) must be gone; so must every
 * connection thread. */
void agent_destroy(struct agent *a);

#endif /* IOSTAGE_DAEMON_AGENT_H */
