/* pending.h - pending jobs with an iostage profile, and their
 * pre-staging (docs/SCHEDULING.md, Pre-staging).
 *
 * How the service learns a job's datasets before it runs: at submit the
 * plugin's `placement` query carries them with "register":true and gets a
 * ticket back (common to that user's submission only); once sbatch knows
 * the job id, slurm-conf/cli_filter.lua's post_submit runs
 * `iostage job-note JOBID TICKET`, which sends `job_note` in the user's
 * MUNGE credential. The ticket binds the datasets to the job; the service
 * then checks with Slurm that the job is that user's before it acts on
 * it (ctld/sched/slurmsched.c). Nothing of this is kept across a restart of the
 * service: a job it forgot is only not pre-staged.
 *
 * Thread safety: every function may be called from any thread.
 */
#ifndef IOSTAGE_CTLD_PENDING_H
#define IOSTAGE_CTLD_PENDING_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#include <cJSON.h>

#include "common/config/conf.h"
#include "ctld/ops.h"

#define PENDING_DS_MAX 8    /* datasets of a job pre-staged */
#define PENDING_NODES_MAX 8 /* nodes of a job pre-staged */
#define PENDING_TICKETS_MAX 16384
#define PENDING_JOBS_MAX 16384
#define PENDING_TICKET_TTL_S 600 /* a ticket not claimed by then goes */
#define PENDING_TICKET_LEN 32    /* hex digits */

enum pending_state {
	PENDING_NONE = 0, /* not asked */
	PENDING_SENT,     /* the node builds it */
	PENDING_STAGED,   /* in the node's cache */
	PENDING_FAILED,   /* refused or failed (tier full, unreadable...) */
};

struct pending_ds {
	char path[CONF_PATH_MAX];
	char tier[CONF_NAME_MAX];
	char verify[16];
};

/* One dataset on one node. */
struct pending_stage {
	enum pending_state state;
	uint32_t id;    /* the node's prestage id (its stage_state job) */
	time_t sent;    /* when asked */
	double seconds; /* how long it took (staged) */
	char error[160];
};

struct pending_node {
	char name[CONF_NODE_MAX];
	struct pending_stage ds[PENDING_DS_MAX];
};

struct pending_job {
	uint32_t job;
	uid_t uid;
	bool verified; /* Slurm says the job is uid's */
	bool started;  /* its start was counted */
	char user[64];
	struct pending_ds ds[PENDING_DS_MAX];
	size_t nds;
	char prefer[256];      /* what placement answered at submit, or
				  * what pre-staging set later */
	bool prefer_set;       /* pre-staging set it (once) */
	time_t start_time;     /* Slurm's expected start (0: none yet) */
	char sched_nodes[256]; /* backfill's planned nodes */
	struct pending_node nodes[PENDING_NODES_MAX];
	size_t nnodes;
	time_t seen; /* last time Slurm listed it */
};

struct pending_counts {
	uint64_t jobs_noted;
	uint64_t requests;    /* datasets asked of nodes */
	uint64_t staged;      /* ... that ended staged */
	uint64_t failed;      /* ... that failed */
	uint64_t bytes;       /* bytes those put in caches */
	uint64_t hits;        /* jobs that started where their data was
				  * pre-staged */
	uint64_t late;        /* jobs that started where their data was
				  * still being pre-staged */
	uint64_t missed;      /* jobs pre-staged elsewhere than they ran */
	double seconds_saved; /* pre-staging time of the hits */
};

/* A new ticket for UID's DS[0..N) (and the PREFER it was given) into
 * ret. 0, or -1 (too many unclaimed tickets: ENOSPC). */
int pending_ticket(uid_t uid, const struct pending_ds *ds, size_t n,
		   const char *prefer, char ret[PENDING_TICKET_LEN + 1],
		   time_t now);

/* op job_note (anyone): {"job":J,"ticket":T}: the ticket must be the
 * caller's, and the job (asked of Slurm through the owner check, when
 * one is set and Slurm answers) too; otherwise that is checked later
 * (ctld/sched/slurmsched.c). */
cJSON *pending_op_note(const struct ctld_caller *c, const cJSON *req);

/* How job_note asks Slurm whose job J is: 0 with *ret_uid, or -1 when
 * it cannot tell now. NULL (tests, no Slurm): no check at note time. */
typedef int (*pending_owner_fn)(uint32_t job, uid_t *ret_uid);
void pending_set_owner_check(pending_owner_fn fn);

/* Copy of job J (0 with *ret, or -1 if unknown). */
int pending_get(uint32_t job, struct pending_job *ret);

/* Put back a changed copy (matched by job id; ignored when gone). */
void pending_put(const struct pending_job *j);

/* Forget job J. */
void pending_drop(uint32_t job);

/* Ids of the jobs kept, into a new array (caller frees); its length in
 * *ret_n. */
uint32_t *pending_ids(size_t *ret_n);

/* Is a dataset being built on NODE for any job (one at a time per node:
 * the bounded share of its staging)? */
bool pending_node_busy(const char *node);

void pending_count(const struct pending_counts *delta);
void pending_counts(struct pending_counts *ret);

/* Forget everything (tests). */
void pending_reset(void);

const char *pending_state_name(enum pending_state s);

#endif /* IOSTAGE_CTLD_PENDING_H */
