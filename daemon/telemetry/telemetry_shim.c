/* telemetry_shim.c - the shim's reports merged into a live record: its
 * counters and I/O times per phase, the output files it wrote, the tree
 * it observed (telemetry_internal.h). */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/base/log.h"
#include "common/net/proto.h"
#include "common/telemetry/outfiles.h"
#include "daemon/telemetry/telemetry_internal.h"

/* Add one phase's {class:{...}} counters into *SLOT (created). */
static void merge_class_counters(cJSON **slot, const cJSON *by_class)
{
	if (!*slot && !(*slot = cJSON_CreateObject()))
		return;
	if (telrec_class_counters_merge(*slot, by_class) < 0)
		log_warning("telemetry: out of memory merging shim counters");
}

/* A shim_report's counters and times: each process sends one summary per
 * exec image (and one after a failed exec), so everything adds up. The
 * shim counts a call in one phase: "run" when no marker or automatic
 * phase applies, else the sub-phase. The run phase's counters and times
 * are the totals over all of them (RECORDS.md: the run covers its
 * sub-phases); each sub-phase keeps its own. */
static void merge_report_locked(struct tjob *t, const cJSON *req)
{
	const cJSON *counters = cJSON_GetObjectItemCaseSensitive(req,
								 "counters");
	const cJSON *io = cJSON_GetObjectItemCaseSensitive(req, "io_seconds");
	const cJSON *unov = cJSON_GetObjectItemCaseSensitive(req,
							     "unoverlapped");
	const cJSON *ph;

	if (counters && !t->run_counters)
		t->run_counters = cJSON_CreateObject();
	if (t->run_counters &&
	    telrec_counters_fold(t->run_counters, counters) < 0)
		log_warning("job %u: out of memory merging shim counters",
			    t->id);
	cJSON_ArrayForEach(ph, counters) {
		struct tmark *m;

		if (!strcmp(ph->string, "run"))
			continue;
		m = telemetry_mark_get(t, ph->string, "auto");
		if (!m)
			continue;
		/* The shim says when the process ran; without that, the
		 * phase spans the run so far. */
		if (!m->start) {
			m->start = telemetry_num(req, "start") > 0
				       ? telemetry_num(req, "start")
				       : t->run_start;
			m->end = telemetry_num(req, "end") > m->start
				     ? telemetry_num(req, "end")
				     : 0;
		} else if (!strcmp(m->source, "auto")) {
			/* An automatic phase spans the processes that
			 * reported it. */
			if (telemetry_num(req, "start") > 0 &&
			    telemetry_num(req, "start") < m->start)
				m->start = telemetry_num(req, "start");
			if (telemetry_num(req, "end") > m->end)
				m->end = telemetry_num(req, "end");
		}
		merge_class_counters(&m->counters, ph);
	}
	if (io || unov) {
		t->run_io_s += telrec_seconds_total(io);
		t->run_unov_s += telrec_seconds_total(unov);
		t->has_run_io_s = true;
	}
	/* Per sub-phase: a phase with only unoverlapped time (or only I/O
	 * time) still gets both keys. */
	for (int pass = 0; pass < 2; pass++) {
		const cJSON *secs = pass ? unov : io;

		cJSON_ArrayForEach(ph, secs) {
			struct tmark *m;

			if (!strcmp(ph->string, "run") || !cJSON_IsNumber(ph))
				continue;
			m = telemetry_mark_get(t, ph->string, "auto");
			if (!m)
				continue;
			if (!m->start)
				m->start = telemetry_num(req, "start") > 0
					       ? telemetry_num(req, "start")
					       : t->run_start;
			if (pass)
				m->unov_s += ph->valuedouble;
			else
				m->io_s += ph->valuedouble;
			m->has_io_s = true;
		}
	}
}

/* The output files PID wrote: who else wrote them decides shared/fpp. */
static void merge_files_locked(struct tjob *t, pid_t pid, const cJSON *req)
{
	const cJSON *files = cJSON_GetObjectItemCaseSensitive(req, "files");
	const cJSON *f;

	if (!files)
		return;
	if (!t->files && !(t->files = outfiles_create(TELEMETRY_FILES_MAX))) {
		log_warning("job %u: out of memory for its output files",
			    t->id);
		return;
	}
	t->has_files = true;
	cJSON_ArrayForEach(f, files) {
		const char *path = telemetry_str(f, "path", NULL);

		/* files[] lists output files; the class says so (a path
		 * under no output is still counted for the job). */
		if (!path ||
		    strcmp(telemetry_str(f, "class", "output"), "output"))
			continue;
		if (outfiles_add(t->files, path, pid,
				 proto_u64(f, "written")) == 1 &&
		    outfiles_dropped(t->files) == 1)
			log_info("job %u: more than %d distinct output files "
				 "reported: further ones are not counted as "
				 "shared or file-per-process",
				 t->id, TELEMETRY_FILES_MAX);
	}
}

int telemetry_shim_report(struct telemetry *tel, uint32_t id, uid_t peer_uid,
			  pid_t pid, const cJSON *req, char *err, size_t errlen)
{
	struct tproc *p;
	struct tjob *t;
	int rc = -1;

	if (!tel) {
		snprintf(err, errlen, "telemetry is not running");
		return -1;
	}
	pthread_mutex_lock(&tel->lock);
	t = telemetry_running_locked(tel, id, peer_uid, err, errlen);
	if (!t)
		goto out;
	if (!t->run_start)
		t->run_start = telemetry_num(req, "start") > 0
				   ? telemetry_num(req, "start")
				   : telemetry_now_s();
	merge_report_locked(t, req);
	merge_files_locked(t, pid, req);
	if (cJSON_GetObjectItemCaseSensitive(req, "observed") &&
	    ((!t->observed && !(t->observed = cJSON_CreateObject())) ||
	     telrec_observed_merge(
		 t->observed, cJSON_GetObjectItemCaseSensitive(req, "observed"),
		 tel->conf->pfs_path) < 0))
		log_warning("job %u: out of memory noting the tree it read",
			    t->id);
	p = telemetry_find_proc(t, pid);
	if (!p) {
		struct telemetry_task id2 = { .pid = pid,
					      .rank = -1,
					      .local_rank = -1 };

		id2.step = telemetry_step_of(
		    cJSON_GetObjectItemCaseSensitive(req, "step"));
		id2.rank = telemetry_rank_of(
		    cJSON_GetObjectItemCaseSensitive(req, "rank"));
		id2.local_rank = telemetry_rank_of(
		    cJSON_GetObjectItemCaseSensitive(req, "local_rank"));
		snprintf(id2.node, sizeof(id2.node), "%s",
			 telemetry_str(req, "node", tel->conf->node_name));
		snprintf(id2.identity, sizeof(id2.identity), "%s",
			 strcmp(telemetry_str(req, "identity", "slurm"), "pmix")
			     ? "slurm"
			     : "pmix");
		p = telemetry_add_proc(t, &id2);
	}
	if (p) {
		const cJSON *counters =
		    cJSON_GetObjectItemCaseSensitive(req, "counters");

		/* A registered task keeps the step slurmstepd gave it. */
		if (p->id.step < 0)
			p->id.step = telemetry_step_of(
			    cJSON_GetObjectItemCaseSensitive(req, "step"));
		p->traced = true;
		if (cJSON_GetObjectItemCaseSensitive(req, "disabled"))
			p->shim_disabled = true;
		if (counters) {
			uint64_t rb, wb;

			telrec_report_bytes(counters, &rb, &wb);
			p->file_rb += rb;
			p->file_wb += wb;
			p->has_file_bytes = true;
		}
	}
	t->dirty = true;
	rc = 0;
out:
	pthread_mutex_unlock(&tel->lock);
	return rc;
}
