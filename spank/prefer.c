/* prefer.c - the job's placement preference (see prefer.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cJSON.h>
#include <slurm/spank.h>

#include "common/net/ctlclient.h"
#include "spank/prefer.h"

static cJSON *query(const struct profile *profile)
{
	cJSON *req = cJSON_CreateObject(), *arr, *d;

	if (!req || !cJSON_AddStringToObject(req, "op", "placement") ||
	    !(arr = cJSON_AddArrayToObject(req, "datasets")))
		goto fail;
	for (size_t i = 0; i < profile->ndatasets; i++) {
		const struct profile_dataset *ds = &profile->datasets[i];

		if (!ds->path || !ds->tier)
			continue;
		d = cJSON_CreateObject();
		if (!d || !cJSON_AddItemToArray(arr, d)) {
			cJSON_Delete(d);
			goto fail;
		}
		cJSON_AddStringToObject(d, "path", ds->path);
		cJSON_AddStringToObject(d, "tier", ds->tier);
		cJSON_AddStringToObject(d, "verify",
					profile_verify_name(ds->verify));
		if (ds->spread == PROFILE_SPREAD_YES)
			cJSON_AddTrueToObject(d, "spread");
	}
	/* sbatch and salloc: pre-staging while the job waits, once
	 * cli_filter.lua tells the service the job id with the ticket */
	if (spank_context() == S_CTX_ALLOCATOR &&
	    !cJSON_AddTrueToObject(req, "register"))
		goto fail;
	return req;
fail:
	cJSON_Delete(req);
	return NULL;
}

void prefer_apply(spank_t sp, const struct profile *profile,
		  const struct conf *conf)
{
	char err[CONF_ERR_MAX];
	cJSON *req, *reply = NULL;
	const cJSON *p, *t;

	/* A step inside an allocation is placed already. */
	if (!ctl_configured(conf) || !profile->ndatasets ||
	    (spank_context() == S_CTX_LOCAL && getenv("SLURM_JOB_ID")))
		return;
	req = query(profile);
	if (!req)
		return;
	if (ctl_request_timeout(conf, req, PREFER_TIMEOUT_MS, &reply, err,
				sizeof(err)) < 0) {
		slurm_debug("iostage: placement: %s", err);
		goto out;
	}
	p = cJSON_GetObjectItemCaseSensitive(reply, "prefer");
	if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(reply, "ok")) &&
	    cJSON_IsString(p) && p->valuestring[0]) {
		if (spank_job_control_setenv(sp, PREFER_ENV, p->valuestring,
					     1) != ESPANK_SUCCESS)
			slurm_debug("iostage: placement: cannot pass the "
				    "preference");
		/* PlacementHold= is on: job_submit.lua holds the job for
		 * those nodes from its submission (ctld/sched/hold.h) */
		else if (cJSON_IsTrue(
			     cJSON_GetObjectItemCaseSensitive(reply, "hold")) &&
			 spank_job_control_setenv(sp, PREFER_HOLD_ENV, "1",
						  1) != ESPANK_SUCCESS)
			slurm_debug("iostage: placement: cannot pass the hold");
	}
	/* For cli_filter.lua's post_submit, in this process only: sbatch
	 * copies its environment into the job's before that, so the job
	 * sees it too (harmless: it is good once, for this user). */
	t = cJSON_GetObjectItemCaseSensitive(reply, "ticket");
	if (cJSON_IsString(t) && strlen(t->valuestring) == 32 &&
	    strspn(t->valuestring, "0123456789abcdef") == 32)
		setenv(PREFER_TICKET_ENV, t->valuestring, 1);
out:
	cJSON_Delete(req);
	cJSON_Delete(reply);
}
