/* slurmcompat.h - every difference in libslurm's and spank.h's API
 * between the Slurm releases iostage builds against (22.05 to 26.05).
 *
 * This is the only file in the tree that tests SLURM_VERSION_NUMBER
 * (slurmcompat.c holds the calls; docs/ADMIN.md, "Slurm releases", says
 * what each release changes for a site). The programs call these
 * functions and feature macros and never look at the release
 * themselves, so a new release is one edit here and a run of `make
 * check-slurm SLURM=X`.
 *
 * The differences, by release:
 *   23.02  a pending job's sched_nodes/start_time are also given to
 *          burst_buffer/lua (nothing to change for iostagectld, which reads
 *          them through slurm_load_jobs on every release)
 *   24.05  hostlist_t is the struct, not a pointer to it
 *   24.05  slurm_get_errno() is gone: libslurm sets errno
 *   24.11  slurm_update_job() refuses a job named by job_id_str (checked
 *          on 24.11.5): slurm_update_job2() on every release
 *   25.05  slurm_spank_init_failure_mode (SLURMCOMPAT_SPANK_FAILURE_MODE)
 *   26.05  slurm_free_ctl_conf() is slurm_free_conf()
 *   26.05  job_desc_msg_t has no job_id (the update names the job by
 *          job_id_str, which every release reads); slurm_load_job and
 *          slurm_kill_job take a slurm_step_id_t
 */
#ifndef IOSTAGE_SLURMCOMPAT_H
#define IOSTAGE_SLURMCOMPAT_H

#include <stdint.h>

#include <slurm/slurm.h>
#include <slurm/spank.h>

/* 25.05 lets a SPANK plugin say whether a failing slurm_spank_init is
 * the node's fault (drain it) or the job's (fail the job, keep the
 * node). Defined when the release reads the variable; the plugin then
 * sets it (spank/iostage.c). */
#if SLURM_VERSION_NUMBER >= SLURM_VERSION_NUM(25, 5, 0)
#define SLURMCOMPAT_SPANK_FAILURE_MODE 1
#endif

/* slurm_strerror() of the error the last libslurm call left (errno on
 * releases that set it, slurm_get_errno() on those that do not). */
const char *slurmcompat_last_error(void);

/* Calls FN(host, ARG) for each host of the Slurm host list LIST
 * ("n[1-3],gpu7"), in Slurm's order, until FN returns nonzero.
 * Returns 0 when every host was visited, FN's nonzero return when it
 * stopped, or -1 with errno EINVAL (no list or FN, or a malformed
 * list). */
typedef int (*slurmcompat_host_fn)(const char *host, void *arg);
int slurmcompat_hostlist_each(const char *list, slurmcompat_host_fn fn,
			      void *arg);

/* What slurmcompat_update_job changes: the fields iostage sets, NULL
 * for unchanged ("" clears a string). */
struct slurmcompat_job_update {
	const char *comment;
	const char *features; /* the job's constraint */
	const char *prefer;
};

/* Updates job JOB (SlurmUser or root rights). Returns SLURM_SUCCESS, or
 * SLURM_ERROR with slurmcompat_last_error() saying why. */
int slurmcompat_update_job(uint32_t job,
			   const struct slurmcompat_job_update *u);

/* Loads job JOB into *ret (free with slurmcompat_free_jobs). Returns
 * SLURM_SUCCESS, or SLURM_ERROR with slurmcompat_last_error(). */
int slurmcompat_load_job(uint32_t job, job_info_msg_t **ret);

/* Frees what slurm_load_jobs/slurmcompat_load_job returned, with every
 * string in it (see slurmcompat.c for the one 22.05 forgets). NULL is a
 * no-op. */
void slurmcompat_free_jobs(job_info_msg_t *m);

/* Frees what slurm_load_ctl_conf returned. NULL is a no-op. */
void slurmcompat_free_conf(slurm_conf_t *c);

#endif /* IOSTAGE_SLURMCOMPAT_H */
