/* nodelist.h - a job's node list, expanded with libslurm's hostlist. */
#ifndef IOSTAGE_PROLOG_NODELIST_H
#define IOSTAGE_PROLOG_NODELIST_H

#include <stddef.h>

#include <cJSON.h>

#define NODELIST_MAX 4096 /* nodes we pass on (daemon: JOBS_NODES_MAX) */

/* "n[1-3],gpu7" -> ["n1","n2","n3","gpu7"] in Slurm's order (the first is
 * the job's head node). A new array (caller deletes), or NULL with one
 * line in err (malformed, too many nodes, out of memory). */
cJSON *nodelist_expand(const char *hostlist, char *err, size_t errlen);

#endif /* IOSTAGE_PROLOG_NODELIST_H */
