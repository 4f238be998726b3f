/* nodelist.c - SLURM_JOB_NODELIST expanded (libslurm's hostlist). */
#include <stdio.h>
#include <stdlib.h>

#include <slurm/slurm.h>

#include "common/config/conf.h"
#include "prolog/nodelist.h"

cJSON *nodelist_expand(const char *hostlist, char *err, size_t errlen)
{
	hostlist_t hl = slurm_hostlist_create(hostlist);
	cJSON *arr = cJSON_CreateArray();
	char *h;
	int n = 0;

	if (!hl || !arr) {
		snprintf(err, errlen, "SLURM_JOB_NODELIST '%.64s': %s",
			 hostlist, hl ? "out of memory" : "malformed");
		goto fail;
	}
	while ((h = slurm_hostlist_shift(hl))) {
		if (++n > NODELIST_MAX || !conf_is_node_name(h)) {
			snprintf(err, errlen, "SLURM_JOB_NODELIST: %s",
				 n > NODELIST_MAX ? "more than 4096 nodes"
						  : "not a node name");
			free(h);
			goto fail;
		}
		cJSON_AddItemToArray(arr, cJSON_CreateString(h));
		free(h);
	}
	slurm_hostlist_destroy(hl);
	return arr;
fail:
	if (hl)
		slurm_hostlist_destroy(hl);
	cJSON_Delete(arr);
	return NULL;
}
