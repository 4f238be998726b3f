/* telemetry_store.c - a record's file, StateDir/telemetry/J.json (root
 * 0600, written atomically), and what a restarted daemon reads back: old
 * records removed, live ones resumed (telemetry_internal.h). */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/base/jsonbuf.h"
#include "common/base/log.h"
#include "common/base/smallfile.h"
#include "common/net/proto.h"
#include "daemon/fsutil.h"
#include "daemon/telemetry/telemetry_internal.h"

/* --- persistence
 * ------------------------------------------------------------------ */

int telemetry_write_record(struct telemetry *tel, uint32_t id, const cJSON *rec)
{
	char name[32], *text;
	int r;

	if (tel->dir_fd < 0)
		return -1;
	text = jsonbuf_dup(rec);
	if (!text)
		return -1;
	snprintf(name, sizeof(name), "%" PRIu32 ".json", id);
	r = fsutil_write_atomic(tel->dir_fd, name, text, strlen(text), 0600);
	free(text);
	return r;
}

void telemetry_persist_locked(struct tjob *t)
{
	struct telemetry *tel = t->tel;
	cJSON *rec = telemetry_build_locked(t, false, 0);

	if (!rec || telemetry_write_record(tel, t->id, rec) < 0)
		log_warning("job %u: cannot write its telemetry record", t->id);
	else
		t->dirty = false;
	t->persisted = time(NULL);
	cJSON_Delete(rec);
}

cJSON *telemetry_read_record(struct telemetry *tel, uint32_t id)
{
	char name[32], reason[128], *text;
	cJSON *o;

	if (tel->dir_fd < 0)
		return NULL;
	snprintf(name, sizeof(name), "%" PRIu32 ".json", id);
	text = smallfile_read_at(tel->dir_fd, name, O_NOFOLLOW, TEL_RECORD_MAX,
				 NULL, reason, sizeof(reason));
	if (!text)
		return NULL;
	o = cJSON_Parse(text);
	free(text);
	if (!cJSON_IsObject(o)) {
		cJSON_Delete(o);
		return NULL;
	}
	return o;
}

/* A live record back from its file (after a restart): its tasks are
 * followed again from their current counters (what they did while we were
 * down is lost). Takes REC. */
static void resume_record(struct telemetry *tel, cJSON *rec)
{
	struct tjob *t = calloc(1, sizeof(*t));
	const cJSON *ph, *p;
	bool new_rec = false; /* written with bytes_source (RECORDS.md) */

	if (!t || !(t->tl = malloc(sizeof(*t->tl)))) {
		telemetry_tjob_free(t);
		cJSON_Delete(rec);
		return;
	}
	t->id = (uint32_t)proto_u64(rec, "job");
	t->uid = (uid_t)proto_u64(rec, "uid");
	telrec_timeline_init(t->tl, tel->conf->telemetry_interval_ms / 1000.0);
	cJSON_ArrayForEach(ph,
			   cJSON_GetObjectItemCaseSensitive(rec, "phases")) {
		const char *name = telemetry_str(ph, "name", "");

		/* A damaged file may name a phase twice: the last one is
		 * taken, for these as for every field below (the first's
		 * copies leaked, found by fuzz_agent_state). */
		if (!strcmp(name, "stage_in")) {
			cJSON_Delete(t->stage_in);
			t->stage_in = cJSON_Duplicate(ph, true);
		} else if (!strcmp(name, "run")) {
			new_rec = cJSON_GetObjectItemCaseSensitive(
				      ph, "bytes_source") != NULL;
			t->run_start = telemetry_num(ph, "start");
			telrec_rchar_from_json(ph, &t->run_io);
			t->run_io.syscr = proto_u64(ph, "read_syscalls");
			t->run_io.syscw = proto_u64(ph, "write_syscalls");
			t->run_io.read_bytes = proto_u64(ph,
							 "storage_read_bytes");
			t->run_io.write_bytes =
			    proto_u64(ph, "storage_write_bytes");
			telrec_timeline_from_json(
			    t->tl,
			    cJSON_GetObjectItemCaseSensitive(ph, "timeline"),
			    telemetry_num(ph, "interval_s"));
			cJSON_Delete(t->run_counters);
			t->run_counters = NULL;
			if (cJSON_GetObjectItemCaseSensitive(ph, "counters"))
				t->run_counters = cJSON_Duplicate(
				    cJSON_GetObjectItemCaseSensitive(
					ph, "counters"),
				    true);
			if (cJSON_GetObjectItemCaseSensitive(ph,
							     "io_seconds")) {
				t->has_run_io_s = true;
				t->run_io_s = telemetry_num(ph, "io_seconds");
				t->run_unov_s = telemetry_num(
				    ph, "unoverlapped_io_seconds");
			}
			if (cJSON_GetObjectItemCaseSensitive(ph,
							     "shared_files")) {
				t->has_files = true;
				t->base_shared[PROFILE_MAX_OUTPUTS] =
				    proto_u64(ph, "shared_files");
				t->base_fpp[PROFILE_MAX_OUTPUTS] =
				    proto_u64(ph, "fpp_files");
			}
		} else if (cJSON_IsString(
			       cJSON_GetObjectItemCaseSensitive(ph,
								"parent")) &&
			   t->nmarks < TELEMETRY_MARKS_MAX &&
			   telrec_phase_name_ok(name)) {
			struct tmark *m = &t->marks[t->nmarks++];
			const cJSON *rk;

			snprintf(m->name, sizeof(m->name), "%s", name);
			m->source = strcmp(telemetry_str(ph, "source", ""),
					   "auto")
					? "marker"
					: "auto";
			m->start = telemetry_num(ph, "start");
			m->end = telemetry_num(ph, "end");
			/* What it had when persisted; I/O while iostaged was
			 * down is lost, as for the run. */
			if (!strcmp(m->source, "marker")) {
				m->exact = true;
				telrec_rchar_from_json(ph, &m->io);
				m->io.syscr = proto_u64(ph, "read_syscalls");
				m->io.syscw = proto_u64(ph, "write_syscalls");
			}
			if (cJSON_GetObjectItemCaseSensitive(ph, "counters"))
				m->counters = cJSON_Duplicate(
				    cJSON_GetObjectItemCaseSensitive(
					ph, "counters"),
				    true);
			if (cJSON_GetObjectItemCaseSensitive(ph,
							     "io_seconds")) {
				m->has_io_s = true;
				m->io_s = telemetry_num(ph, "io_seconds");
				m->unov_s = telemetry_num(
				    ph, "unoverlapped_io_seconds");
			}
			cJSON_ArrayForEach(
			    rk, cJSON_GetObjectItemCaseSensitive(ph, "ranks"))
				if (telemetry_rank_of(rk) >= 0 &&
				    m->nranks < TEL_RANKS_MAX)
					m->ranks[m->nranks++] =
					    telemetry_rank_of(rk);
		}
	}
	cJSON_ArrayForEach(p,
			   cJSON_GetObjectItemCaseSensitive(rec, "processes")) {
		struct telemetry_task id = { .rank = -1, .local_rank = -1 };
		struct tproc *tp;

		id.pid = (pid_t)proto_u64(p, "pid");
		id.step = telemetry_step_of(
		    cJSON_GetObjectItemCaseSensitive(p, "step"));
		id.rank = telemetry_rank_of(
		    cJSON_GetObjectItemCaseSensitive(p, "rank"));
		id.local_rank = telemetry_rank_of(
		    cJSON_GetObjectItemCaseSensitive(p, "local_rank"));
		snprintf(id.node, sizeof(id.node), "%s",
			 telemetry_str(p, "node", ""));
		snprintf(id.identity, sizeof(id.identity), "%s",
			 telemetry_str(p, "identity", "slurm"));
		tp = telemetry_add_proc(t, &id);
		if (!tp)
			break;
		tp->start = telemetry_num(p, "start");
		tp->end = telemetry_num(p, "end");
		/* Since bytes_source, a process's read_bytes is its shim's
		 * file I/O and rchar its /proc figure (when sampled); before,
		 * read_bytes was rchar. */
		if (new_rec) {
			tp->sampled = cJSON_GetObjectItemCaseSensitive(
					  p, "rchar") != NULL;
			if (tp->sampled)
				telrec_rchar_from_json(p, &tp->io);
			if (cJSON_GetObjectItemCaseSensitive(p, "read_bytes")) {
				tp->has_file_bytes = true;
				tp->file_rb = proto_u64(p, "read_bytes");
				tp->file_wb = proto_u64(p, "write_bytes");
			}
		} else {
			tp->sampled = true;
			telrec_rchar_from_json(p, &tp->io);
		}
		tp->traced = cJSON_IsTrue(
		    cJSON_GetObjectItemCaseSensitive(p, "traced"));
		tp->shim_disabled = cJSON_IsTrue(
		    cJSON_GetObjectItemCaseSensitive(p, "shim_disabled"));
		if (!tp->end && id.pid > 0 &&
		    sampler_tree_add_task(&t->tree, id.pid, 0) == 0) {
			/* Counted up to the record: start from now. */
			for (size_t i = 0; i < t->tree.nprocs; i++)
				if (t->tree.procs[i].pid == id.pid)
					sampler_read_io(id.pid,
							&t->tree.procs[i].last);
		} else if (!tp->end) {
			tp->end =
			    telemetry_now_s(); /* ended while we were down */
		}
	}
	cJSON_DeleteItemFromObjectCaseSensitive(rec, "phases");
	cJSON_DeleteItemFromObjectCaseSensitive(rec, "processes");
	/* The output file table is not persisted: what was counted before
	 * the restart stays, later reports add to it (a file written both
	 * before and after counts twice). */
	{
		size_t i = 0;

		cJSON_ArrayForEach(
		    p, cJSON_GetObjectItemCaseSensitive(rec, "outputs")) {
			if (i == PROFILE_MAX_OUTPUTS)
				break;
			t->base_shared[i] = proto_u64(p, "shared_files");
			t->base_fpp[i] = proto_u64(p, "fpp_files");
			i++;
		}
	}
	t->base = rec;
	t->tel = tel;
	t->next = tel->jobs;
	tel->jobs = t;
	log_info("job %u: telemetry resumed (%zu processes)", t->id, t->nprocs);
}

/* StateDir/telemetry: old records removed, live ones resumed. */
void telemetry_load_records(struct telemetry *tel)
{
	time_t cutoff = time(NULL) - (time_t)TELEMETRY_KEEP_DAYS * 86400;
	struct dirent *de;
	int fd = dup(tel->dir_fd);
	DIR *d = fd < 0 ? NULL : fdopendir(fd);

	if (!d) {
		if (fd >= 0)
			close(fd);
		return;
	}
	while ((de = readdir(d))) {
		struct stat st;
		char *end;
		unsigned long id;
		cJSON *rec;

		if (de->d_name[0] == '.' && strstr(de->d_name, ".tmp")) {
			unlinkat(tel->dir_fd, de->d_name, 0);
			continue;
		}
		id = strtoul(de->d_name, &end, 10);
		if (!id || id > UINT32_MAX || strcmp(end, ".json") ||
		    fstatat(tel->dir_fd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) <
			0 ||
		    !S_ISREG(st.st_mode))
			continue;
		if (st.st_mtime < cutoff) {
			unlinkat(tel->dir_fd, de->d_name, 0);
			continue;
		}
		rec = telemetry_read_record(tel, (uint32_t)id);
		if (!rec || cJSON_GetObjectItemCaseSensitive(rec, "end") ||
		    proto_u64(rec, "job") != id) {
			cJSON_Delete(rec);
			continue;
		}
		resume_record(tel, rec);
	}
	closedir(d);
}
