/* stage_plan.h - the stager's decisions, as functions of their inputs:
 * whose cache entry a dataset goes to (public or the user's) and under
 * which key, whether the current version is a hit, must be checked by a
 * worker or rebuilt, whether a build links from it, and the worker's
 * command line. stage.c acts on them; tests/unit/check_stage_plan.c
 * checks them without a worker, a cache or root.
 */
#ifndef IOSTAGE_DAEMON_STAGE_PLAN_H
#define IOSTAGE_DAEMON_STAGE_PLAN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#include "common/config/profile.h"
#include "daemon/staging/cache.h"

/* PublicUser, resolved (stage_public_account, stage.h). */
struct stage_account {
	bool ok; /* PublicDatasets=yes and the account is usable */
	uid_t uid;
	gid_t gid;
	char name[CONF_USER_MAX];
};

/* Whose cache entry a dataset goes to, and whom its workers run as: the
 * job's user (a per-user entry), or PublicUser for a public entry (built
 * by an account that is not the requesting user, so that no user can
 * ever write into a copy other users will read). */
struct stage_owner {
	uid_t uid;
	gid_t gid;
	const char *user;
	bool public;
	char key[CACHE_KEY_LEN + 1]; /* the entry's key */
};

/* The entries to try for a dataset of source PATH of user UID:GID (USER),
 * in order, into RET[2]: the public entry first when PUB is usable and the
 * user is neither PublicUser nor root (the builder must not be the
 * requester), then the user's own. Returns how many (1 or 2). */
size_t stage_plan_owners(const struct stage_account *pub, uid_t uid, gid_t gid,
			 const char *user, const char *path,
			 struct stage_owner ret[2]);

/* What to do with the current version of a dataset's entry. */
enum stage_verdict {
	STAGE_BUILD = 0, /* build a new version */
	STAGE_HIT,       /* use it as it is */
	STAGE_CHECK,     /* a worker compares it with the source first */
};

/* The current version CUR of a dataset asking for WANT, for a staging
 * that began at STARTED_NS (CLOCK_REALTIME ns), NOW, with CacheTTL
 * CACHE_TTL: a hit when a walk that began after the request proved it,
 * or when WANT is none and it was verified less than CACHE_TTL ago (HOW
 * says why, for the log); a build when a checksum is asked of a version
 * whose manifest has none; else a check. */
enum stage_verdict stage_plan_current(const struct cache_version *cur,
				      enum profile_verify want,
				      int64_t started_ns, time_t now,
				      unsigned cache_ttl, char *how,
				      size_t howlen);

/* How a worker verifies for WANT: checksum, or stat (for stat and none). */
enum profile_verify stage_plan_worker_verify(enum profile_verify want);

/* Whether a build for WANT links unchanged files from the current version
 * CUR (NULL: none): not when its manifest cannot tell (a checksum asked of
 * a stat version). */
bool stage_plan_link_previous(const struct cache_version *cur,
			      enum profile_verify want);

/* What a worker is asked to do. */
enum stage_worker_mode {
	STAGE_WORKER_CHECK = 0,
	STAGE_WORKER_BUILD,
};

struct stage_task {
	enum stage_worker_mode mode;
	const struct stage_owner *owner; /* who the worker runs as; --public */
	const char *src;
	const char *dstdir;
	const char *previous; /* K.vN/data of the previous version, or NULL */
	int manifest_in;      /* -1 or its manifest */
	int manifest_out;     /* -1 or the new manifest's file */
	enum profile_verify verify;
	/* Another node's copy to fill from (daemon/cluster/fill.h), or
	 * NULL: "HOST:PORT" and "TIER/KEY.vN"; never with PREVIOUS. */
	const char *peer, *peer_entry;
	const char *munge_socket; /* for the peer's session; NULL: default */
	/* A spread dataset: this node's part only (--spread PLAN
	 * --spread-self SELF), and the whole dataset's listing written to
	 * LISTING_OUT (-1: none); NULL: the whole dataset. */
	const char *spread_plan, *spread_self;
	int listing_out;
	/* With SPREAD_PLAN, a build: at most this many bytes of the part,
	 * in decimal (--part-budget: its best-placed files first, the rest
	 * read from the PFS through the view); NULL: no bound. */
	const char *part_budget;
	/* Instead of PEER, several: a fill by parts, "HOST:PORT=TIER/KEY.vN,
	 * ..." (the worker's --peers), with PREVIOUS this node's own share
	 * (linked from) or NULL; MUNGE_SOCKET as for PEER. */
	const char *peers;
	/* With PEERS, the job every session names ("J": --peer-job): the
	 * nodes serve their parts only for it. NULL: none. */
	const char *peer_job;
};

#define STAGE_ARGV_MAX 32

/* Fill ARGV[STAGE_ARGV_MAX] for TASK (pointers into TASK); RATE: a rate
 * page is passed as fd 5. The manifest in is fd 3, the manifest out fd 4,
 * a spread dataset's listing fd 6.
 * Returns the number of arguments (ARGV[n] is NULL). */
size_t stage_plan_argv(const struct stage_task *task, bool rate, char **argv);

/* --- the worker's lines (stage_proto.c) ------------------------------------
 */

enum stage_msg_kind {
	STAGE_MSG_OTHER = 0, /* unknown keys: a newer worker, ignored */
	STAGE_MSG_RESULT,    /* {"ok":BOOL,...}: the last line */
	STAGE_MSG_NOTE,      /* {"note":"..."} */
	STAGE_MSG_TOTALS,    /* {"total_bytes":N,...} after the walk */
	STAGE_MSG_PROGRESS,  /* {"bytes":N,"files":N} */
};

/* One line of a worker, parsed. Strings are made printable (one line). */
struct stage_msg {
	enum stage_msg_kind kind;
	bool ok;                 /* RESULT */
	char text[CONF_ERR_MAX]; /* RESULT's error ("copy failed" if none),
				  * NOTE's note */
	uint64_t bytes, files, linked; /* RESULT, PROGRESS */
	uint64_t linked_bytes;         /* RESULT: the linked files' bytes */
	/* RESULT: files (bytes) copied from the node's own previous copy
	 * where they could not be linked (a fill by parts) */
	uint64_t copied_previous, copied_previous_bytes;
	/* RESULT: files and bytes another node's copy gave, and the files
	 * it could not give (copied from the source instead) */
	uint64_t fetched, fetched_bytes, fallbacks;
	/* RESULT of a part: its chunks another node gave */
	uint64_t chunks_fetched, chunks_fetched_bytes;
	uint64_t total_bytes, total_files, copy_bytes, copy_files; /* TOTALS */
	/* TOTALS: what the copy reads from the source (copy_bytes without a
	 * peer; with one, copy_* is what the copy writes) */
	uint64_t source_bytes;
	/* TOTALS of a spread dataset's part (--spread): the whole
	 * dataset's size (total_* is then this node's part), and what
	 * did not fit the node's budget */
	uint64_t dataset_bytes, dataset_files;
	uint64_t over_budget_bytes, over_budget_files;
	/* TOTALS of a part: the chunks it holds of files too large for one
	 * node (in total_bytes), of how many such files */
	uint64_t chunks, chunk_bytes, chunked_files;
	bool unchanged; /* TOTALS */
};

/* Parse LINE (one line a worker wrote, without its newline; untrusted:
 * it runs as the user). 0 with *RET, or -1 (EPROTO) when LINE is not a
 * JSON object: the worker is then killed. */
int stage_parse_line(const char *line, struct stage_msg *ret);

/* Make S one printable line in place: control bytes become '?'. */
void stage_sanitize(char *s);

#endif /* IOSTAGE_DAEMON_STAGE_PLAN_H */
