/* iostage.c - the SPANK entry points: dispatch on context, nothing more.
 *
 *   allocator (sbatch, salloc), local (srun): validate --io-profile (submit.c)
 *   remote (slurmstepd): export the staged paths to the tasks (task.c),
 *                        register task pids for telemetry (telemetry.c),
 *                        preload the local chunk reader for a spread
 *                        dataset (localread.c),
 *                        preload the I/O shim in deep mode (trace.c)
 * The plugin never exits a Slurm process; it reports with slurm_error().
 */
#include <slurm/spank.h>

#include "common/slurm/slurmcompat.h"
#include "spank/localread.h"
#include "spank/options.h"
#include "spank/submit.h"
#include "spank/task.h"
#include "spank/telemetry.h"
#include "spank/trace.h"

SPANK_PLUGIN(iostage, 1);

#ifdef SLURMCOMPAT_SPANK_FAILURE_MODE
/* Slurm 25.05+ asks what a failing slurm_spank_init means. Ours fails
 * only when plugstack.conf gives the plugin arguments it does not know
 * or Slurm refuses to register --io-profile: the node's configuration,
 * the same for every job there. Failing each job instead would make the
 * node a black hole that eats the queue; draining it shows the admin.
 * Said here, not left to the default, because it is a decision.
 * Everything about one job (a bad profile, staging that failed) is
 * handled later, per job, and never fails init (docs/ADMIN.md). */
int slurm_spank_init_failure_mode = ESPANK_NODE_FAILURE;
#endif

int slurm_spank_init(spank_t sp, int ac, char **av)
{
	if (options_parse_args(ac, av) < 0)
		return -1;
	switch (spank_context()) {
	case S_CTX_ALLOCATOR:
	case S_CTX_LOCAL:
	case S_CTX_REMOTE:
		return options_register(sp);
	default:
		return 0; /* slurmd, job_script: no option to offer */
	}
}

int slurm_spank_init_post_opt(spank_t sp, int ac, char **av)
{
	(void)ac;
	(void)av;
	switch (spank_context()) {
	case S_CTX_ALLOCATOR:
	case S_CTX_LOCAL:
		return submit_init_post_opt(sp);
	default:
		return 0;
	}
}

int slurm_spank_user_init(spank_t sp, int ac, char **av)
{
	(void)ac;
	(void)av;
	if (!spank_remote(sp))
		return 0;
	telemetry_user_init(sp);
	if (task_user_init(sp) < 0)
		return -1;
	localread_user_init(sp, task_spread());
	return trace_user_init(sp);
}

int slurm_spank_task_init(spank_t sp, int ac, char **av)
{
	(void)ac;
	(void)av;
	return spank_remote(sp) ? task_init(sp) : 0;
}

int slurm_spank_task_post_fork(spank_t sp, int ac, char **av)
{
	(void)ac;
	(void)av;
	return spank_remote(sp) ? telemetry_task_post_fork(sp) : 0;
}

int slurm_spank_task_exit(spank_t sp, int ac, char **av)
{
	(void)ac;
	(void)av;
	return spank_remote(sp) ? telemetry_task_exit(sp) : 0;
}

int slurm_spank_exit(spank_t sp, int ac, char **av)
{
	(void)sp;
	(void)ac;
	(void)av;
	task_fini();
	options_fini();
	return 0;
}
