/* telemetry_finish.c - a record asked for (live, or finished from its
 * file) and a job's record finished at its Epilog, with stage_out from the
 * drain record (telemetry_internal.h). */
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
#include "common/base/smallfile.h"
#include "common/net/proto.h"
#include "daemon/agent.h"
#include "daemon/jobs.h"
#include "daemon/staging/spread_view.h"
#include "daemon/staging/tiers.h"
#include "daemon/telemetry/telemetry_internal.h"

cJSON *telemetry_record(struct telemetry *tel, uint32_t id, uid_t peer_uid,
			char *err, size_t errlen)
{
	struct tjob *t;
	cJSON *rec = NULL;

	if (!tel) {
		snprintf(err, errlen, "telemetry is not running");
		return NULL;
	}
	pthread_mutex_lock(&tel->lock);
	t = telemetry_find_locked(tel, id);
	if (t || (tel->agent && tel->agent->jobs &&
		  jobs_known(tel->agent->jobs, id))) {
		t = telemetry_get_locked(tel, id, peer_uid, err, errlen);
		if (t || errno != EALREADY) {
			if (t)
				rec = telemetry_build_locked(t, false, 0);
			pthread_mutex_unlock(&tel->lock);
			if (t && !rec)
				snprintf(err, errlen, "out of memory");
			return rec;
		}
		/* Finished, the job not yet out of the table: from disk. */
	}
	pthread_mutex_unlock(&tel->lock);
	rec = telemetry_read_record(tel, id);
	if (!rec) {
		snprintf(err, errlen, "unknown job %u", id);
		return NULL;
	}
	if (peer_uid != 0 && proto_u64(rec, "uid") != peer_uid) {
		snprintf(err, errlen,
			 "permission denied: job %u belongs to another user "
			 "(peer uid %u)",
			 id, (unsigned)peer_uid);
		cJSON_Delete(rec);
		return NULL;
	}
	return rec;
}

/* Per-output drain figures of drain record D into the record's outputs[]
 * (by name). */
static void outputs_from_drain(struct tjob *t, const cJSON *d)
{
	static const char *const keys[] = {
		"files",     "bytes",     "during_files", "during_bytes",
		"end_files", "end_bytes", "failed_files",
	};
	cJSON *outs = cJSON_GetObjectItemCaseSensitive(t->base, "outputs"), *o;
	const cJSON *e;

	cJSON_ArrayForEach(e, cJSON_GetObjectItemCaseSensitive(d, "outputs")) {
		const char *name = telemetry_str(e, "name", NULL);
		const cJSON *hist;

		if (!name)
			continue;
		cJSON_ArrayForEach(o, outs)
			if (!strcmp(telemetry_str(o, "name", ""), name))
				break;
		/* Figures are there only from a drain that counts them. */
		if (!o || !cJSON_GetObjectItemCaseSensitive(e, "files"))
			continue;
		for (size_t k = 0; k < sizeof(keys) / sizeof(keys[0]); k++)
			json_set_number(o, keys[k],
					(double)proto_u64(e, keys[k]));
		/* The largest file: only from a drain that records it. */
		if (cJSON_IsNumber(
			cJSON_GetObjectItemCaseSensitive(e, "max_file_bytes")))
			json_set_number(o, "max_file_bytes",
					(double)proto_u64(e, "max_file_bytes"));
		hist = cJSON_GetObjectItemCaseSensitive(e, "size_hist");
		if (cJSON_IsObject(hist)) {
			uint64_t h[TELREC_NBUCKETS];

			telrec_size_hist_from_json(h, hist);
			cJSON_DeleteItemFromObjectCaseSensitive(o, "size_hist");
			cJSON_AddItemToObject(o, "size_hist",
					      telrec_size_hist_json(h));
		}
	}
}

/* stage_out from StateDir/drain/J.json, written by drain.c at finish; its
 * per-output figures go to T's outputs[]. */
static cJSON *stage_out_phase(struct tjob *t, uint32_t id, double run_start,
			      double end)
{
	char path[CONF_PATH_MAX + 48], reason[128], *text;
	cJSON *d, *ph;
	double end_s;
	uint64_t db, df, eb, ef;

	snprintf(path, sizeof(path), "%s/drain/%" PRIu32 ".json",
		 t->tel->conf->state_dir, id);
	text = smallfile_read(path, 1024 * 1024, reason, sizeof(reason));
	d = text ? cJSON_Parse(text) : NULL;
	free(text);
	ph = cJSON_CreateObject();
	if (!ph) {
		cJSON_Delete(d);
		return NULL;
	}
	db = proto_u64(d, "during_bytes");
	df = proto_u64(d, "during_files");
	eb = proto_u64(d, "end_bytes");
	ef = proto_u64(d, "end_files");
	end_s = telemetry_num(d, "end_seconds");
	cJSON_AddStringToObject(ph, "name", "stage_out");
	/* Outputs drain from the start of the run (overlapped with it). */
	cJSON_AddNumberToObject(ph, "start", run_start > 0 ? run_start : end);
	cJSON_AddNumberToObject(ph, "end", end);
	cJSON_AddNumberToObject(ph, "seconds",
				end - (run_start > 0 ? run_start : end));
	cJSON_AddNumberToObject(ph, "bytes", (double)(db + eb));
	cJSON_AddNumberToObject(ph, "files", (double)(df + ef));
	cJSON_AddNumberToObject(ph, "during_bytes", (double)db);
	cJSON_AddNumberToObject(ph, "during_files", (double)df);
	cJSON_AddNumberToObject(ph, "end_bytes", (double)eb);
	cJSON_AddNumberToObject(ph, "end_files", (double)ef);
	cJSON_AddNumberToObject(ph, "end_seconds", end_s);
	if (d)
		cJSON_AddNumberToObject(ph, "failed_files",
					(double)proto_u64(d, "failed_files"));
	outputs_from_drain(t, d);
	cJSON_Delete(d);
	return ph;
}

/* Each spread dataset's view: what it served from other nodes and the
 * PFS (and from this node's part through FUSE: the overlay serves the
 * part without the view), read from its figures before the job's
 * directory goes. */
static void spread_from_views(struct tjob *t, uint32_t id)
{
	const cJSON *ds = cJSON_GetObjectItemCaseSensitive(t->base, "datasets");
	cJSON *e;

	cJSON_ArrayForEach(e, ds) {
		cJSON *sp = cJSON_GetObjectItemCaseSensitive(e, "spread");
		struct spread_view_stats st;
		int tier = t->tel->agent->tiers
			       ? tiers_index(t->tel->agent->tiers,
					     telemetry_str(e, "tier", ""))
			       : -1;

		if (!cJSON_IsObject(sp) || tier < 0 ||
		    spread_view_stats_read(t->tel->agent, id, tier,
					   telemetry_str(e, "name", ""),
					   &st) < 0)
			continue;
		json_set_number(sp, "peer_bytes", (double)st.peer_bytes);
		json_set_number(sp, "pfs_bytes", (double)st.pfs_bytes);
		json_set_number(sp, "view_local_bytes", (double)st.local_bytes);
		json_set_number(sp, "peer_failures", (double)st.peer_failures);
	}
}

cJSON *telemetry_finish_job(struct telemetry *tel, uint32_t id)
{
	char err[CONF_ERR_MAX];
	struct tjob *t, **pp;
	cJSON *rec = NULL;
	double end = telemetry_now_s();

	if (!tel || id >= JOBS_PRESTAGE_ID_MIN)
		return NULL;
	pthread_mutex_lock(&tel->lock);
	t = telemetry_get_locked(tel, id, 0, err, sizeof(err));
	if (!t) {
		pthread_mutex_unlock(&tel->lock);
		return telemetry_read_record(
		    tel, id); /* finished before (a retried finish) */
	}
	telemetry_sample_locked(t);
	/* A job whose tasks were never registered still ran: from the end
	 * of staging to now. */
	if (!t->run_start && t->stage_in)
		t->run_start = telemetry_num(t->stage_in, "end");
	/* A job whose staging failed (and did not fall back) did not run:
	 * its record has only stage_in. */
	if (!strcmp(telemetry_str(t->base, "state", ""), "stage_failed"))
		t->run_start = 0;
	if (t->run_start > 0)
		t->run_end = end;
	for (size_t i = 0; i < t->nprocs; i++)
		if (!t->procs[i].end)
			t->procs[i].end = end;
	spread_from_views(t, id);
	if (strcmp(telemetry_str(t->base, "state", ""), "stage_failed")) {
		cJSON_Delete(t->stage_out);
		t->stage_out = stage_out_phase(t, id, t->run_start, end);
	}
	rec = telemetry_build_locked(t, true, end);
	if (!rec || telemetry_write_record(tel, id, rec) < 0)
		log_warning("job %u: cannot write its telemetry record", id);
	for (pp = &tel->jobs; *pp; pp = &(*pp)->next)
		if (*pp == t) {
			*pp = t->next;
			break;
		}
	pthread_mutex_unlock(&tel->lock);
	telemetry_tjob_free(t);
	return rec;
}
