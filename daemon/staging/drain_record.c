/* drain_record.c - StateDir/drain/J.json, the record of a job's drain.
 *
 * Apart because it is the drain's one on-disk format (docs/RECORDS.md),
 * read by others too (telemetry.c's stage_out, metrics.c): rewritten while
 * the job runs (at most every DRAIN_RECORD_EVERY_S), at finish, kept 30
 * days; read back after a restart so that a resumed job's counters go on
 * from where they were. Written by root, 0600, atomically (a reader sees
 * the old or the new file); read with a bound and leniently.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cJSON.h>

#include "common/base/jsonbuf.h"
#include "common/base/log.h"
#include "common/net/proto.h"
#include "daemon/fsutil.h"
#include "daemon/staging/drain_internal.h"

const char *const drain_phase_names[] = {
	[DRAIN_RUNNING] = "running",
	[DRAIN_ENDING] = "ending",
	[DRAIN_DONE] = "done",
};

void drain_add_counters(cJSON *o, const struct djob *dj)
{
	cJSON_AddStringToObject(o, "phase", drain_phase_names[dj->phase]);
	cJSON_AddNumberToObject(o, "during_bytes", (double)dj->during_bytes);
	cJSON_AddNumberToObject(o, "during_files", (double)dj->during_files);
	cJSON_AddNumberToObject(o, "end_bytes", (double)dj->end_bytes);
	cJSON_AddNumberToObject(o, "end_files", (double)dj->end_files);
	cJSON_AddNumberToObject(o, "end_seconds", dj->end_seconds);
	cJSON_AddNumberToObject(o, "backlog_files", (double)drain_backlog(dj));
	cJSON_AddNumberToObject(o, "failed_files", (double)dj->failed_files);
	cJSON_AddBoolToObject(o, "timed_out", dj->timed_out);
	if (dj->timed_out)
		cJSON_AddNumberToObject(o, "left_files",
					(double)dj->left_files);
	if (dj->kept[0])
		cJSON_AddStringToObject(o, "kept", dj->kept);
	else
		cJSON_AddNullToObject(o, "kept");
}

/* One output's figures, as RECORDS.md's outputs[] names them. */
static void add_out_counters(cJSON *e, const struct dout *o)
{
	cJSON_AddNumberToObject(e, "files",
				(double)(o->during_files + o->end_files));
	cJSON_AddNumberToObject(e, "bytes",
				(double)(o->during_bytes + o->end_bytes));
	cJSON_AddNumberToObject(e, "during_files", (double)o->during_files);
	cJSON_AddNumberToObject(e, "during_bytes", (double)o->during_bytes);
	cJSON_AddNumberToObject(e, "end_files", (double)o->end_files);
	cJSON_AddNumberToObject(e, "end_bytes", (double)o->end_bytes);
	cJSON_AddNumberToObject(e, "failed_files", (double)o->failed_files);
	cJSON_AddItemToObject(e, "size_hist",
			      telrec_size_hist_json(o->size_hist));
	cJSON_AddNumberToObject(e, "max_file_bytes", (double)o->max_file);
}

void drain_record_write_locked(struct djob *dj)
{
	int record_fd = dj->drain->record_fd;
	cJSON *o = cJSON_CreateObject(), *outs;
	char name[32], *text = NULL;

	if (record_fd < 0 || !o)
		goto out;
	cJSON_AddNumberToObject(o, "job", dj->id);
	cJSON_AddStringToObject(o, "user", dj->user);
	cJSON_AddNumberToObject(o, "uid", dj->uid);
	cJSON_AddNumberToObject(o, "updated", (double)time(NULL));
	drain_add_counters(o, dj);
	outs = cJSON_AddArrayToObject(o, "outputs");
	for (size_t i = 0; outs && i < dj->nouts; i++) {
		cJSON *e = cJSON_CreateObject();

		if (!e)
			break;
		cJSON_AddStringToObject(e, "name", dj->outs[i].name);
		cJSON_AddStringToObject(e, "local", dj->outs[i].local);
		cJSON_AddStringToObject(e, "path", dj->outs[i].pfs);
		add_out_counters(e, &dj->outs[i]);
		cJSON_AddItemToArray(outs, e);
	}
	text = jsonbuf_dup(o);
	if (!text)
		goto out;
	snprintf(name, sizeof(name), "%" PRIu32 ".json", dj->id);
	if (fsutil_write_atomic(record_fd, name, text, strlen(text), 0600) < 0)
		log_warning("job %u: cannot write its drain record", dj->id);
	dj->dirty = false;
	dj->recorded = time(NULL);
out:
	free(text);
	cJSON_Delete(o);
}

void drain_record_resume(struct djob *dj)
{
	int record_fd = dj->drain->record_fd;
	char name[32], buf[DRAIN_RECORD_MAX + 1];
	const cJSON *phase;
	cJSON *o;
	ssize_t n;
	int fd;

	snprintf(name, sizeof(name), "%" PRIu32 ".json", dj->id);
	fd = record_fd < 0
		 ? -1
		 : openat(record_fd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return;
	n = read(fd, buf, DRAIN_RECORD_MAX);
	close(fd);
	if (n <= 0)
		return;
	buf[n] = '\0';
	o = cJSON_Parse(buf);
	phase = cJSON_GetObjectItemCaseSensitive(o, "phase");
	if (cJSON_IsString(phase) && strcmp(phase->valuestring, "done") &&
	    proto_u64(o, "uid") == dj->uid) {
		const cJSON *e;

		dj->during_bytes = proto_u64(o, "during_bytes");
		dj->during_files = proto_u64(o, "during_files");
		dj->failed_files = proto_u64(o, "failed_files");
		/* Per output, by name (a record written before outputs had
		 * figures has none: they start at 0); like the job's, the
		 * end counts start again from 0. */
		cJSON_ArrayForEach(
		    e, cJSON_GetObjectItemCaseSensitive(o, "outputs")) {
			const cJSON *nm =
			    cJSON_GetObjectItemCaseSensitive(e, "name");

			for (size_t i = 0; cJSON_IsString(nm) && i < dj->nouts;
			     i++) {
				struct dout *d = &dj->outs[i];

				if (strcmp(d->name, nm->valuestring))
					continue;
				d->during_bytes = proto_u64(e, "during_bytes");
				d->during_files = proto_u64(e, "during_files");
				d->failed_files = proto_u64(e, "failed_files");
				telrec_size_hist_from_json(
				    d->size_hist,
				    cJSON_GetObjectItemCaseSensitive(
					e, "size_hist"));
				d->max_file = proto_u64(e, "max_file_bytes");
				break;
			}
		}
	}
	cJSON_Delete(o);
}

int drain_records_open(const char *state_dir, uid_t owner, char *err,
		       size_t errlen)
{
	char why[CONF_ERR_MAX];
	struct dirent *de;
	struct stat st;
	time_t now = time(NULL);
	DIR *d;
	int fd = -1, rfd = -1, dup_fd;

	if (fsutil_mkdir_p(state_dir, 0700) < 0 ||
	    (fd = open(state_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0) {
		snprintf(err, errlen, "StateDir: cannot create %s: %s",
			 state_dir, strerror(errno));
		goto fail;
	}
	if (mkdirat(fd, "drain", 0700) < 0 && errno != EEXIST) {
		snprintf(err, errlen, "StateDir: cannot create %s/drain: %s",
			 state_dir, strerror(errno));
		goto fail;
	}
	rfd = openat(fd, "drain",
		     O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (rfd < 0 || fstat(rfd, &st) < 0) {
		snprintf(err, errlen, "StateDir: cannot open %s/drain: %s",
			 state_dir, strerror(errno));
		goto fail;
	}
	if (fsutil_check_owned_dir(&st, "StateDir/drain", owner, false, why,
				   sizeof(why)) < 0) {
		snprintf(err, errlen, "StateDir: %s", why);
		goto fail;
	}
	close(fd);
	dup_fd = fcntl(rfd, F_DUPFD_CLOEXEC, 0);
	d = dup_fd >= 0 ? fdopendir(dup_fd) : NULL;
	while (d && (de = readdir(d))) {
		size_t len = strlen(de->d_name);
		struct stat rst;

		if (de->d_name[0] == '.' && len > 4 &&
		    !strcmp(de->d_name + len - 4, ".tmp")) {
			unlinkat(rfd, de->d_name, 0);
			continue;
		}
		if (len > 5 && !strcmp(de->d_name + len - 5, ".json") &&
		    fstatat(rfd, de->d_name, &rst, AT_SYMLINK_NOFOLLOW) == 0 &&
		    now - rst.st_mtime > DRAIN_RECORD_KEEP_S)
			unlinkat(rfd, de->d_name, 0);
	}
	if (d)
		closedir(d);
	else if (dup_fd >= 0)
		close(dup_fd);
	return rfd;
fail:
	if (rfd >= 0)
		close(rfd);
	if (fd >= 0)
		close(fd);
	return -1;
}
