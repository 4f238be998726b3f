/* iostage.h - mark the phases of an iostage job from inside the application.
 *
 *   #include <iostage.h>        link with -liostage
 *   iostage_phase_begin("checkpoint");
 *   ... write the checkpoint ...
 *   iostage_phase_end("checkpoint");
 *
 * The node's iostaged records each marked phase as a sub-phase of the job's
 * run, with the I/O the job's processes did in it (`iostage telemetry
 * JOBID`). With the LD_PRELOAD shim loaded (profile trace=true), the
 * shim's per-call counters are attributed to the marked phase too.
 *
 * These functions never abort or block the application for long: each
 * talks to the daemon with a short timeout and returns -1 with errno on
 * any failure (ENOENT: not in a Slurm job; EINVAL: bad name; ECONNREFUSED,
 * ENOENT, ETIMEDOUT: no daemon; EPERM/EPROTO: the daemon refused).
 * Thread-safe, and safe across fork() (a DataLoader's worker processes).
 * Phase names are 1 to 31 characters of [A-Za-z0-9_.-]; "read",
 * "compute", "checkpoint" and "write" are the conventional ones.
 *
 * The Python module `iostage` (docs/PYTHON.md) is a layer over this
 * library: it loads it with ctypes and calls these functions.
 */
#ifndef IOSTAGE_H
#define IOSTAGE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Who this process is in the job. */
struct iostage_identity {
	uint32_t job;       /* Slurm job id */
	uint32_t step;      /* Slurm step id: 0, 1, ... for srun's steps,
			     * 4294967291 in the batch script and what it
			     * runs outside srun (SLURM_BATCH_SCRIPT),
			     * 4294967290 in an interactive step; 0 if
			     * unknown */
	int64_t rank;       /* global rank, -1 if unknown */
	int64_t local_rank; /* rank on this node, -1 if unknown */
	char node[64];      /* node name */
	char source[8];     /* "pmix" (a PMIx client) or "slurm" (env) */
};

/* Fill *RET: from PMIx when the process is a PMIx client
 * (PMIX_NAMESPACE set, e.g. srun --mpi=pmix; PMIx_Init is reference
 * counted, so this is safe in an MPI application), else from Slurm's
 * environment (SLURM_JOB_ID, SLURM_PROCID, SLURM_LOCALID,
 * SLURMD_NODENAME); the step from IOSTAGE_STEP (set by the iostage plugin
 * in each step), else SLURM_STEP_ID, else the batch step when ENVIRONMENT
 * is BATCH. Cached after the first call. 0, or -1 with errno (ENOENT: not
 * in a Slurm job). */
int iostage_identity(struct iostage_identity *ret);

/* Begin / end the phase NAME for this process. 0, or -1 with errno. */
int iostage_phase_begin(const char *name);
int iostage_phase_end(const char *name);

/* The same with the daemon's reason: on failure ERR (ERRLEN bytes) gets
 * one line saying why. BEGIN: 1 begin, 0 end. */
int iostage_phase(const char *name, int begin, char *err, size_t errlen);

/* Where the job's data is, from the environment the iostage plugin gives
 * its tasks: the local path of the dataset NAME (IOSTAGE_DATA_<NAME>), or
 * of the job's first dataset when NAME is NULL or "" (IOSTAGE_DATA), into
 * BUF. NAME is the dataset's name: its "name" in a JSON profile, else
 * its path's last component (README.md, "Task environment"); the
 * variable is NAME upper-cased with '-' as '_' ("val-set" is
 * IOSTAGE_DATA_VAL_SET). When the job runs on the PFS
 * paths (staging fell back), the path is the PFS one. 0, or -1 with errno
 * (EINVAL: NAME is not a dataset name; ENOENT: the job has no such
 * dataset; ENAMETOOLONG: BUFLEN too small). */
int iostage_data_path(const char *name, char *buf, size_t buflen);

/* The same for an output directory (IOSTAGE_OUTPUT, IOSTAGE_OUTPUT_<NAME>):
 * where the job writes what iostage drains to the PFS. */
int iostage_output_path(const char *name, char *buf, size_t buflen);

#ifdef __cplusplus
}
#endif

#endif /* IOSTAGE_H */
