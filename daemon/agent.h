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
 * daemon/agent_life.h makes and frees the parts in their order; this
 * header is only the struct, which every part includes (and so includes
 * none of them).
 *
 * A field is NULL when its part is not running (no ControllerHost=: no
 * forward; a test agent: no server, no metrics, no peer).
 */
#ifndef IOSTAGE_DAEMON_AGENT_H
#define IOSTAGE_DAEMON_AGENT_H

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

#endif /* IOSTAGE_DAEMON_AGENT_H */
