/* telemetry_build.c - a live record as docs/RECORDS.md shows it: its
 * phases (stage_in, run and its sub-phases, stage_out), the output files'
 * counts and the processes (telemetry_internal.h). */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/base/jsonset.h"
#include "common/base/log.h"
#include "common/config/joblayout.h"
#include "common/telemetry/outfiles.h"
#include "daemon/telemetry/telemetry_internal.h"

static cJSON *ranks_json(const struct tmark *m)
{
	cJSON *a = cJSON_CreateArray();

	for (size_t i = 0; a && i < m->nranks; i++)
		cJSON_AddItemToArray(a,
				     cJSON_CreateNumber((double)m->ranks[i]));
	return a;
}

/* A phase's bytes (RECORDS.md "bytes_source"): a phase with shim
 * COUNTERS has the shim's file I/O as read_bytes/write_bytes; one without
 * (an untraced job; a marker the shim did not see, as `iostage phase`
 * from another process) has /proc's rchar/wchar, which count every
 * read(2) and write(2), pipes, sockets and devices included. Either way
 * the /proc figures stay under their own names. */
static void add_io_fields(cJSON *ph, const struct tjob *t,
			  const struct telrec_io *io, const cJSON *counters)
{
	if (telrec_phase_bytes(ph, io, counters) < 0)
		log_warning("job %u: out of memory building its record", t->id);
}

/* shared_files/fpp_files per output of record R (a file belongs to the
 * output whose node-local directory TIER/jobs/J/out/NAME or PFS
 * destination holds it), and the job's totals (files under no output
 * included) on the run phase RUN. */
static void add_file_counts(const struct tjob *t, cJSON *r, cJSON *run)
{
	struct outfiles_count c[PROFILE_MAX_OUTPUTS + 1];
	const char *pfx[2 * PROFILE_MAX_OUTPUTS];
	cJSON *outs = cJSON_GetObjectItemCaseSensitive(r, "outputs"), *o;
	char(*local)[CONF_PATH_MAX + 64];
	uint64_t shared = 0, fpp = 0;
	size_t n = 0, i;

	if (!t->has_files)
		return;
	local = malloc(PROFILE_MAX_OUTPUTS * sizeof(*local));
	if (!local)
		return;
	cJSON_ArrayForEach(o, outs) {
		struct profile_output po = { 0 };

		if (n == PROFILE_MAX_OUTPUTS)
			break;
		po.name = (char *)telemetry_str(o, "name", "");
		po.tier = (char *)telemetry_str(o, "tier", "");
		if (joblayout_output_path(t->tel->conf, &po, t->id, local[n],
					  sizeof(local[n])) < 0)
			local[n][0] = '\0';
		pfx[2 * n] = local[n];
		pfx[2 * n + 1] = telemetry_str(o, "dest", "");
		n++;
	}
	outfiles_count(t->files, pfx, n, c);
	i = 0;
	cJSON_ArrayForEach(o, outs) {
		if (i == n)
			break;
		json_set_number(o, "shared_files",
				(double)(c[i].shared + t->base_shared[i]));
		json_set_number(o, "fpp_files",
				(double)(c[i].fpp + t->base_fpp[i]));
		i++;
	}
	for (i = 0; i <= n; i++) {
		shared += c[i].shared;
		fpp += c[i].fpp;
	}
	cJSON_AddNumberToObject(run, "shared_files",
				(double)(shared +
					 t->base_shared[PROFILE_MAX_OUTPUTS]));
	cJSON_AddNumberToObject(run, "fpp_files",
				(double)(fpp +
					 t->base_fpp[PROFILE_MAX_OUTPUTS]));
	if (outfiles_dropped(t->files))
		cJSON_AddNumberToObject(run, "untracked_file_reports",
					(double)outfiles_dropped(t->files));
	free(local);
}

/* The whole record as RECORDS.md describes it. NULL on ENOMEM. */
cJSON *telemetry_build_locked(struct tjob *t, bool finished, double end)
{
	cJSON *r = cJSON_Duplicate(t->base, true), *phases, *procs, *ph;
	double now = telemetry_now_s(), run_end;

	if (!r)
		return NULL;
	if (finished)
		cJSON_AddNumberToObject(r, "end", end);
	phases = cJSON_AddArrayToObject(r, "phases");
	if (t->stage_in)
		cJSON_AddItemToArray(phases,
				     cJSON_Duplicate(t->stage_in, true));
	if (t->run_start > 0) {
		run_end = t->run_end > 0 ? t->run_end : now;
		ph = cJSON_CreateObject();
		cJSON_AddStringToObject(ph, "name", "run");
		cJSON_AddNumberToObject(ph, "start", t->run_start);
		cJSON_AddNumberToObject(ph, "end", run_end);
		cJSON_AddNumberToObject(ph, "seconds", run_end - t->run_start);
		add_io_fields(ph, t, &t->run_io, t->run_counters);
		cJSON_AddNumberToObject(ph, "storage_read_bytes",
					(double)t->run_io.read_bytes);
		cJSON_AddNumberToObject(ph, "storage_write_bytes",
					(double)t->run_io.write_bytes);
		cJSON_AddNumberToObject(ph, "interval_s", t->tl->interval);
		cJSON_AddItemToObject(ph, "timeline",
				      telrec_timeline_to_json(t->tl));
		if (t->run_counters)
			cJSON_AddItemToObject(ph, "counters",
					      cJSON_Duplicate(t->run_counters,
							      true));
		if (t->has_run_io_s) {
			cJSON_AddNumberToObject(ph, "io_seconds", t->run_io_s);
			cJSON_AddNumberToObject(ph, "unoverlapped_io_seconds",
						t->run_unov_s);
		}
		add_file_counts(t, r, ph);
		if (!t->run_end)
			cJSON_AddBoolToObject(ph, "live", true);
		cJSON_AddItemToArray(phases, ph);
		for (size_t i = 0; i < t->nmarks; i++) {
			const struct tmark *m = &t->marks[i];
			double mend = m->end > m->start ? m->end : run_end;
			struct telrec_io io;

			if (m->open && !t->run_end)
				mend = now;
			ph = cJSON_CreateObject();
			cJSON_AddStringToObject(ph, "name", m->name);
			cJSON_AddStringToObject(ph, "parent", "run");
			cJSON_AddStringToObject(ph, "source", m->source);
			cJSON_AddNumberToObject(ph, "start", m->start);
			cJSON_AddNumberToObject(ph, "end", mend);
			cJSON_AddNumberToObject(ph, "seconds", mend - m->start);
			if (m->exact) {
				io = m->io;
				if (m->open && !t->run_end)
					telemetry_io_add_since(&io, &t->run_io,
							       &m->at_open);
			} else {
				telrec_timeline_sum(t->tl, m->start, mend, &io);
			}
			add_io_fields(ph, t, &io, m->counters);
			cJSON_AddItemToObject(ph, "ranks", ranks_json(m));
			if (m->counters)
				cJSON_AddItemToObject(
				    ph, "counters",
				    cJSON_Duplicate(m->counters, true));
			if (m->has_io_s) {
				cJSON_AddNumberToObject(ph, "io_seconds",
							m->io_s);
				cJSON_AddNumberToObject(
				    ph, "unoverlapped_io_seconds", m->unov_s);
			}
			cJSON_AddItemToArray(phases, ph);
		}
	}
	if (t->stage_out)
		cJSON_AddItemToArray(phases,
				     cJSON_Duplicate(t->stage_out, true));
	if (t->observed &&
	    cJSON_GetObjectItemCaseSensitive(t->observed, "source"))
		cJSON_AddItemToObject(r, "observed",
				      cJSON_Duplicate(t->observed, true));
	procs = cJSON_AddArrayToObject(r, "processes");
	for (size_t i = 0; procs && i < t->nprocs; i++) {
		const struct tproc *p = &t->procs[i];
		cJSON *o = cJSON_CreateObject();

		if (!o)
			break;
		cJSON_AddNumberToObject(o, "pid", p->id.pid);
		if (p->id.step >= 0)
			cJSON_AddNumberToObject(o, "step", (double)p->id.step);
		if (p->id.rank >= 0)
			cJSON_AddNumberToObject(o, "rank", (double)p->id.rank);
		if (p->id.local_rank >= 0)
			cJSON_AddNumberToObject(o, "local_rank",
						(double)p->id.local_rank);
		cJSON_AddStringToObject(o, "node", p->id.node);
		cJSON_AddStringToObject(o, "identity", p->id.identity);
		cJSON_AddNumberToObject(o, "start", p->start);
		if (p->end > 0)
			cJSON_AddNumberToObject(o, "end", p->end);
		/* File I/O only from the process's own shim counters. */
		if (p->has_file_bytes) {
			cJSON_AddNumberToObject(o, "read_bytes",
						(double)p->file_rb);
			cJSON_AddNumberToObject(o, "write_bytes",
						(double)p->file_wb);
		}
		/* /proc's, for the tasks sampled (with their descendants);
		 * a process known only from its shim summary has none. */
		if (p->sampled) {
			cJSON_AddNumberToObject(o, "rchar",
						(double)p->io.rchar);
			cJSON_AddNumberToObject(o, "wchar",
						(double)p->io.wchar);
		}
		cJSON_AddBoolToObject(o, "traced", p->traced);
		if (p->shim_disabled)
			cJSON_AddBoolToObject(o, "shim_disabled", true);
		cJSON_AddItemToArray(procs, o);
	}
	return r;
}
