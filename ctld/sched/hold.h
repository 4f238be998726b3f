/* hold.h - a bounded wait for the nodes that hold a job's data
 * (PlacementHold=, docs/SCHEDULING.md "Placement: the bounded hold").
 *
 * A --prefer alone never delays a job: when a queue forms, the head job
 * takes whichever node frees first, though the job behind it may be the
 * one whose data is there. Delay scheduling (Zaharia et al., EuroSys
 * 2010; Spark's spark.locality.wait) lets the head job wait a short,
 * bounded time for a node with its data while jobs whose data is on the
 * freed node start there. With PlacementHold=N the service turns a
 * pending job's preference (only ours) into its constraint for at most N
 * seconds, then gives the job back its empty constraint: after that it
 * starts anywhere, as without iostage. A job the user constrained is
 * never held, and a job is held at most once.
 *
 * A job may also come constrained from its submission (job_submit.lua,
 * when the service's placement answer said so): then it is held from its
 * submit time, so a job that arrives while its data's node is busy and
 * another idle waits for the busy one too, not only a queued job.
 *
 * This file only decides; ctld/sched/slurmsched.c asks Slurm. Thread safety:
 * one mutex, every function may be called from any thread.
 */
#ifndef IOSTAGE_CTLD_HOLD_H
#define IOSTAGE_CTLD_HOLD_H

#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#define HOLD_JOBS_MAX 16384 /* jobs remembered (beyond: not held) */
#define HOLD_FORGET_S 600   /* a job not seen pending that long goes */

enum hold_action {
	HOLD_NONE = 0, /* leave the job as it is */
	HOLD_SET,      /* set its constraint to its --prefer */
	HOLD_RELEASE,  /* clear its constraint: it may start anywhere */
};

/* What to do with pending job JOB at NOW, given Slurm's view of it: its
 * --prefer PREFER and its constraint FEATURES (either NULL or ""),
 * whether it waits only for nodes (ELIGIBLE: reason Resources, Priority
 * or none, one node; a job waiting on a dependency or a begin time is
 * not held) and when it was SUBMITTED. HOLD_S is PlacementHold= (0:
 * never hold, and release what is held). A constraint made only of our
 * features on a job this table does not know was set at submission
 * (job_submit.lua) or by a service that restarted during a hold: the
 * job counts as held since SUBMITTED, and is released once that is
 * HOLD_S ago. */
enum hold_action hold_decide(uint32_t job, const char *prefer,
			     const char *features, bool eligible,
			     time_t submitted, unsigned hold_s, time_t now);

/* Slurm took ACTION for JOB at NOW (HOLD_SET: held since NOW;
 * HOLD_RELEASE: never held again). An update Slurm refused is reported
 * as HOLD_RELEASE too, so the service does not insist. */
void hold_applied(uint32_t job, enum hold_action action, time_t now);

/* JOB is no longer pending (started, ended, gone): whether it was held
 * (then it ran where its data was, or its hold was released). */
bool hold_done(uint32_t job);

/* Whether JOB is held now; then *RET_UNTIL is when its hold ends with
 * PlacementHold=HOLD_S (it is released on the first pass after). */
bool hold_until(uint32_t job, unsigned hold_s, time_t *ret_until);

/* Drop jobs not decided on for HOLD_FORGET_S. */
void hold_expire(time_t now);

/* Counters: jobs held, holds released at their bound, held jobs that
 * started within their hold (where their data was). */
struct hold_counts {
	uint64_t held, released, started_held;
};
void hold_counts(struct hold_counts *ret);

/* Tests: forget everything. */
void hold_reset(void);

#endif
