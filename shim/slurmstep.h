/* slurmstep.h - which Slurm job step a process is in, from its environment.
 *
 * Header-only, pure functions: the preload shim (which includes no Slurm
 * header and links nothing but libc) and libiostage both read the step
 * with it, so a process's shim summaries and its phase markers agree.
 *
 * A step id is Slurm's uint32: 0, 1, ... for srun's steps, and above
 * SLURM_MAX_NORMAL_STEP_ID (0xfffffff0) the special ones of slurm.h, the
 * same in 22.05, 24.11 and 26.05. What the environment holds differs by
 * release (src/common/env.c, setup_env(), run by slurmstepd in every task):
 *
 *   - 22.05, 24.11: env_t.stepid is an int and SLURM_STEP_ID/SLURM_STEPID
 *     are set only when it is >= 0, so the batch step (SLURM_BATCH_SCRIPT,
 *     -5 as an int) gets none; its environment comes from
 *     env_array_for_batch_job(), which sets ENVIRONMENT=BATCH. An
 *     interactive step has SLURM_STEP_ID=4294967290 from srun's launch
 *     environment (env_array_for_step(), "%u"), which slurmstepd leaves.
 *     A batch script submitted from inside a step inherits that step's
 *     SLURM_STEP_ID (sbatch exports the environment and nothing clears it).
 *     srun's steps inherit ENVIRONMENT=BATCH from the script, but always
 *     get their own SLURM_STEP_ID, so ENVIRONMENT decides only without it.
 *   - 26.05: env_t holds a slurm_step_id_t and the variables are set
 *     unless the id is NO_VAL, printed with "%d": the batch step has
 *     SLURM_STEP_ID=-5, an interactive step -6.
 *
 * The iostage SPANK plugin knows the step exactly (S_JOB_STEPID in
 * slurmstepd, the same on every release) and exports IOSTAGE_STEP=JOB.STEP
 * in each step of an iostage job; that wins when its JOB is this
 * process's SLURM_JOB_ID (not a value inherited from another job). Only
 * without it is Slurm's environment read, by the rules above.
 */
#ifndef IOSTAGE_SHIM_SLURMSTEP_H
#define IOSTAGE_SHIM_SLURMSTEP_H

#include <string.h>

#define SLURMSTEP_INTERACTIVE 4294967290LL /* SLURM_INTERACTIVE_STEP */
#define SLURMSTEP_BATCH 4294967291LL       /* SLURM_BATCH_SCRIPT */
#define SLURMSTEP_EXTERN 4294967292LL      /* SLURM_EXTERN_CONT */
#define SLURMSTEP_SPECIAL_MIN 4294967281LL /* SLURM_MAX_NORMAL_STEP_ID + 1 */

/* The unsigned decimal S[0..LEN) (LEN < 0: to the end of S), at most
 * 4294967295; -1 when empty, not all digits, or larger. */
static inline long long slurmstep_u32(const char *s, long len)
{
	long long n = 0;
	long i;

	if (!s)
		return -1;
	for (i = 0; len < 0 ? s[i] != '\0' : i < len; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -1;
		n = n * 10 + (s[i] - '0');
		if (n > 4294967295LL)
			return -1;
	}
	return i > 0 ? n : -1;
}

/* Slurm's SLURM_STEP_ID value V as a step id: a uint32 in decimal, or
 * (26.05) a special id printed as a negative int ("-5": 4294967291). -1
 * for anything else. */
static inline long long slurmstep_slurm_value(const char *v)
{
	long long n;

	if (!v)
		return -1;
	if (v[0] != '-')
		return slurmstep_u32(v, -1);
	n = slurmstep_u32(v + 1, -1);
	if (n < 1 || 4294967296LL - n < SLURMSTEP_SPECIAL_MIN)
		return -1;
	return 4294967296LL - n;
}

/* The step of a process whose environment holds these values (NULL:
 * unset): JOB = SLURM_JOB_ID, OURS = IOSTAGE_STEP, SLURM = SLURM_STEP_ID,
 * ENVIRONMENT = ENVIRONMENT. Returns the step id (0..4294967295), or -1
 * when unknown: no valid SLURM_JOB_ID (no job, no step), or nothing that
 * names a step. Pure: reads nothing else. */
static inline long long slurmstep_from_env(const char *job, const char *ours,
					   const char *slurm,
					   const char *environment)
{
	long long j = slurmstep_u32(job, -1);
	const char *dot = ours;

	if (j <= 0)
		return -1;
	while (dot && *dot && *dot != '.')
		dot++;
	if (dot && *dot == '.' && slurmstep_u32(ours, dot - ours) == j &&
	    slurmstep_u32(dot + 1, -1) >= 0)
		return slurmstep_u32(dot + 1, -1);
	if (slurm && *slurm)
		return slurmstep_slurm_value(slurm);
	if (environment && !strcmp(environment, "BATCH"))
		return SLURMSTEP_BATCH;
	return -1;
}

#endif /* IOSTAGE_SHIM_SLURMSTEP_H */
