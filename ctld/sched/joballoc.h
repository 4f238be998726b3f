/* joballoc.h - op `job_nodes`: a job's state, user and nodes as
 * slurmctld has them, for the iostaged of a node outside the job that is
 * asked for its part of a spread dataset (daemon/cluster/peer_fetch.c:
 * a part is served only to a node of the job it is read for, and a node
 * that does not run the job cannot tell its nodes by itself; docs/
 * STAGING.md, "Filling from another node").
 *
 *   {"op":"job_nodes","job":J}
 *   -> {"ok":true,"job":J,"running":BOOL,"uid":U,"nodes":["n1",...]}
 *
 * Root only (a node's iostaged). The answer comes from slurmctld at each
 * request, through the source slurmsched.c sets (NULL in tests without
 * Slurm: "no Slurm here"); a job Slurm does not know is refused.
 */
#ifndef IOSTAGE_CTLD_JOBALLOC_H
#define IOSTAGE_CTLD_JOBALLOC_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include <cJSON.h>

#include "ctld/ops.h"

/* What Slurm says of job JOB: whether it runs, whose it is, and its
 * nodes (host names appended to the array NODES). 0, or -1 when Slurm
 * does not know the job or cannot be asked (one line in err). */
typedef int (*joballoc_source_fn)(uint32_t job, bool *ret_running,
				  uid_t *ret_uid, cJSON *nodes, char *err,
				  size_t errlen);
void joballoc_set_source(joballoc_source_fn fn);

cJSON *joballoc_op(const struct ctld_caller *c, const cJSON *req);

#endif /* IOSTAGE_CTLD_JOBALLOC_H */
