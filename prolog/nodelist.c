/* nodelist.c - SLURM_JOB_NODELIST expanded (libslurm's hostlist). */
#include <stdio.h>
#include <stdlib.h>

#include <slurm/slurm.h>

#include "common/config/conf.h"
#include "common/slurm/slurmcompat.h"
#include "prolog/nodelist.h"

struct expand {
	cJSON *arr;
	int n;
	const char *why; /* set when a host was refused */
};

static int add_host(const char *h, void *arg)
{
	struct expand *e = arg;
	cJSON *s;

	if (++e->n > NODELIST_MAX) {
		e->why = "more than 4096 nodes";
		return 1;
	}
	if (!conf_is_node_name(h)) {
		e->why = "not a node name";
		return 1;
	}
	s = cJSON_CreateString(h);
	if (!s) {
		e->why = "out of memory";
		return 1;
	}
	cJSON_AddItemToArray(e->arr, s);
	return 0;
}

cJSON *nodelist_expand(const char *hostlist, char *err, size_t errlen)
{
	struct expand e = { cJSON_CreateArray(), 0, NULL };
	int rc;

	if (!e.arr) {
		snprintf(err, errlen, "SLURM_JOB_NODELIST: out of memory");
		return NULL;
	}
	rc = slurmcompat_hostlist_each(hostlist, add_host, &e);
	if (rc < 0) {
		snprintf(err, errlen, "SLURM_JOB_NODELIST '%.64s': malformed",
			 hostlist ? hostlist : "");
		goto fail;
	}
	if (rc > 0) {
		snprintf(err, errlen, "SLURM_JOB_NODELIST: %s", e.why);
		goto fail;
	}
	return e.arr;
fail:
	cJSON_Delete(e.arr);
	return NULL;
}
