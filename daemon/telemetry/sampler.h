/* sampler.h - run-phase I/O of a job's processes, from /proc/PID/io.
 *
 * A job's "tree" holds the task pids the SPANK plugin registered, every
 * descendant found under them (/proc/PID/task/TID/children, walked at each
 * sample), and the task's parent, slurmstepd (the "carrier"). Each sample
 * reads rchar/wchar/syscr/syscw (and read_bytes/write_bytes, storage I/O)
 * of every live process and adds what grew since the last sample.
 *
 * Processes that exit between samples. Linux adds a reaped child's I/O
 * counters (its own and those of its reaped children) to its parent's
 * (kernel/exit.c wait_task_zombie adds them to the parent's signal->ioac,
 * which /proc/PID/io includes). So:
 *   - a child reaped by a process in the tree shows up in the parent's
 *     next delta, whole. We already counted the child's last sample, so
 *     that much is kept as a "credit" and subtracted from the parent's
 *     growth: nothing is counted twice and nothing the child did after
 *     our last look is lost;
 *   - a registered task itself is reaped by slurmstepd, which we do not
 *     count (it forwards stdio, reads config...). When a task disappears,
 *     what slurmstepd's counters grew by, minus the task's last sample, is
 *     the task's unseen tail. slurmstepd exits soon after its tasks, so the
 *     plugin sends task_exit from slurm_spank_task_exit (in slurmstepd,
 *     after the reap) and iostaged samples the job at once;
 *   - a descendant orphaned before it exits is reparented away from the
 *     tree (to init or a subreaper): it is still followed by pid while it
 *     lives, but what it does after our last sample is lost. Daemonized
 *     helpers of a job are the one known gap.
 * A pid is identified with its start time (/proc/PID/stat field 22) so a
 * recycled pid is never mistaken for the process we knew.
 */
#ifndef IOSTAGE_DAEMON_SAMPLER_H
#define IOSTAGE_DAEMON_SAMPLER_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "common/telemetry/telrec.h"

#define SAMPLER_PROCS_MAX 4096  /* processes followed per job */
#define SAMPLER_CARRIERS_MAX 64 /* slurmstepd processes per job (steps) */

struct sampler_proc {
	pid_t pid, ppid;
	unsigned long long starttime;
	pid_t task;              /* the registered task it descends from */
	struct telrec_io last;   /* counters at the last sample */
	struct telrec_io credit; /* reaped children's counted part */
	struct telrec_io cur;    /* this sample's reading */
	bool gone, settled;      /* during a sample */
};

struct sampler_carrier {
	pid_t pid;
	unsigned long long starttime;
	struct telrec_io last, owed;
	pid_t owed_task; /* whose tail the next growth is */
	unsigned rounds; /* samples left to wait for the reap */
};

struct sampler_tree {
	struct sampler_proc *procs;
	size_t nprocs, cap;
	struct sampler_carrier carriers[SAMPLER_CARRIERS_MAX];
	size_t ncarriers;
};

/* Called for the growth D attributed to registered task TASK; with
 * EXITED, TASK is gone (D may be zero). */
typedef void (*sampler_task_fn)(void *arg, pid_t task, bool exited,
				const struct telrec_io *d);

/* /proc/PID/io into *RET. 0, or -1 with errno (ENOENT: gone). */
int sampler_read_io(pid_t pid, struct telrec_io *ret);

/* Start time (clock ticks since boot) and parent of PID. 0, or -1. */
int sampler_read_stat(pid_t pid, unsigned long long *ret_start,
		      pid_t *ret_ppid);

/* Follow registered task PID, whose parent is CARRIER (slurmstepd; 0: its
 * current parent). Counting starts from zero: the task's I/O since its fork.
 * Already followed: 0. 0, or -1 with errno (ESRCH: not running, ENOSPC:
 * too many, ENOMEM). */
int sampler_tree_add_task(struct sampler_tree *tree, pid_t pid, pid_t carrier);

/* Is the registered task PID still followed and alive? */
bool sampler_tree_has(const struct sampler_tree *tree, pid_t pid);

/* One sample: find new descendants, read every process, settle the exits.
 * The growth is added to *RET_TOTAL and reported per task with FN. */
void sampler_tree_sample(struct sampler_tree *tree, sampler_task_fn fn,
			 void *arg, struct telrec_io *ret_total);

/* Free the tree's memory (the struct itself is the caller's). */
void sampler_tree_clear(struct sampler_tree *tree);

#endif /* IOSTAGE_DAEMON_SAMPLER_H */
