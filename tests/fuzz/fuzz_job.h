/* fuzz_job.h - a job in iostaged's table for the fuzz targets that drive
 * its handlers (fuzz_shim_report): job ID of uid 1000
 * ("alice") with an empty profile, staging, inserted as a Prolog's stage
 * request inserts it. The caller holds a reference (jobs_put). Exits 2
 * when it cannot be made: the target cannot run. */
#ifndef IOSTAGE_FUZZ_JOB_H
#define IOSTAGE_FUZZ_JOB_H

/* First, in a block of its own: it defines _GNU_SOURCE (ftw.h's FTW_*),
 * which must come before any system header. */
#include "tests/fuzz/fuzz.h"

#include "common/config/profile.h"
#include "daemon/jobs.h"

static struct job *fuzz_job(struct jobs *js, const struct conf *conf,
			    uint32_t id)
{
	char err[CONF_ERR_MAX];
	struct profile *p;
	struct job *job, *old;

	p = profile_parse_json("{\"datasets\":[]}", "fuzz", err, sizeof(err));
	if (!p || profile_normalize(p, conf, err, sizeof(err)) < 0)
		goto fail;
	job = jobs_new_job(js, id, 1000, 1000, "alice", p, err, sizeof(err));
	if (!job || jobs_insert(js, job, &old, err, sizeof(err)) != 0)
		goto fail;
	return job;
fail:
	fprintf(stderr, "fuzz: job %u: %s\n", id, err);
	exit(2);
}

#endif /* IOSTAGE_FUZZ_JOB_H */
