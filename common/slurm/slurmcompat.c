/* slurmcompat.c - libslurm calls whose form differs between releases
 * (slurmcompat.h lists the differences). Nothing else in the tree
 * tests SLURM_VERSION_NUMBER. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include <slurm/slurm.h>
#include <slurm/slurm_errno.h>

#include "common/slurm/slurmcompat.h"

/* 24.05 made hostlist_t the struct (a handle is hostlist_t *); before,
 * hostlist_t was the pointer. */
#if SLURM_VERSION_NUMBER >= SLURM_VERSION_NUM(24, 5, 0)
typedef hostlist_t *compat_hostlist;
#else
typedef hostlist_t compat_hostlist;
#endif

const char *slurmcompat_last_error(void)
{
#if SLURM_VERSION_NUMBER >= SLURM_VERSION_NUM(24, 5, 0)
	return slurm_strerror(errno);
#else
	return slurm_strerror(slurm_get_errno());
#endif
}

int slurmcompat_hostlist_each(const char *list, slurmcompat_host_fn fn,
			      void *arg)
{
	compat_hostlist hl;
	char *h;
	int rc = 0;

	if (!list || !fn) {
		errno = EINVAL;
		return -1;
	}
	hl = slurm_hostlist_create(list);
	if (!hl) {
		errno = EINVAL;
		return -1;
	}
	while (rc == 0 && (h = slurm_hostlist_shift(hl))) {
		rc = fn(h, arg);
		free(h); /* libslurm's hostlist strings are malloc'd */
	}
	slurm_hostlist_destroy(hl);
	return rc;
}

int slurmcompat_update_job(uint32_t job, const struct slurmcompat_job_update *u)
{
	job_array_resp_msg_t *resp = NULL;
	job_desc_msg_t m;
	char id[16];
	int rc;

	/* Every release reads job_id_str (scontrol uses it) and 26.05 has no
	 * numeric job_id here any more. A job named by string must be
	 * updated with slurm_update_job2 (24.11's slurm_update_job refuses
	 * it: "Use slurm_update_job2() ..."), which answers per array task. */
	snprintf(id, sizeof(id), "%u", job);
	slurm_init_job_desc_msg(&m);
	m.job_id_str = id;
	/* job_desc_msg_t's strings are not const on any release; libslurm
	 * only packs them */
	m.comment = (char *)u->comment;
	m.features = (char *)u->features;
	m.prefer = (char *)u->prefer;
	rc = slurm_update_job2(&m, &resp);
	for (uint32_t i = 0;
	     rc == SLURM_SUCCESS && resp && i < resp->job_array_count; i++)
		if (resp->error_code[i] != SLURM_SUCCESS) {
			errno = (int)resp->error_code[i];
			rc = SLURM_ERROR;
		}
	if (resp)
		slurm_free_job_array_resp(resp);
	return rc;
}

int slurmcompat_load_job(uint32_t job, job_info_msg_t **ret)
{
#if SLURM_VERSION_NUMBER >= SLURM_VERSION_NUM(26, 5, 0)
	slurm_step_id_t id = SLURM_STEP_ID_INITIALIZER;

	id.job_id = job;
	return slurm_load_job(ret, id, SHOW_ALL);
#else
	return slurm_load_job(ret, job, SHOW_ALL);
#endif
}

void slurmcompat_free_conf(slurm_conf_t *c)
{
	if (!c)
		return;
		/* renamed slurm_free_conf by 26.05 (checked on 26.05.5; 24.11.5 has
	 * the old name; 25.05 and 25.11 not checked here) */
#if SLURM_VERSION_NUMBER >= SLURM_VERSION_NUM(26, 5, 0)
	slurm_free_conf(c);
#else
	slurm_free_ctl_conf(c);
#endif
}

/* libslurm's allocator: what it allocates, only it frees. */
extern void slurm_xfree(void **item);

void slurmcompat_free_jobs(job_info_msg_t *m)
{
	if (!m)
		return;
	/* slurm_free_job_info_msg() of 22.05 (checked on 22.05.8) frees
	 * every string of a job but `prefer`, new in 22.05: iostagectld,
	 * which loads the queue every 2 s, lost a string per job with
	 * --prefer each time (LeakSanitizer found it). Freed here on every
	 * release: xfree leaves NULL, so a libslurm that frees it too finds
	 * nothing to free. */
	for (uint32_t i = 0; i < m->record_count; i++)
		slurm_xfree((void **)&m->job_array[i].prefer);
	slurm_free_job_info_msg(m);
}
