/* worker.c - the stage worker: one dataset, copied as the job's user.
 *
 * This is a separate exec of iostaged rather than code in the daemon's
 * address space so that it holds nothing of root's: no sockets, no job
 * table, no privileges. It speaks only through its stdout (JSON lines) and
 * reads a single "go" from stdin. See worker.h for the protocol.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cJSON.h>

#include "common/conf.h"
#include "common/copytree.h"
#include "common/rmtree.h"
#include "daemon/fsutil.h"
#include "daemon/worker.h"

#define WORKER_PROGRESS_NS 250000000L /* between progress lines */
#define WORKER_NAME_MAX 64
#define WORKER_ERR_MAX 4096 /* the daemon keeps the first CONF_ERR_MAX */

struct progress_state {
	struct timespec last;
};

/* Print O as one line on stdout; the daemon gone means we stop. */
static void emit(cJSON *o)
{
	char *text = o ? cJSON_PrintUnformatted(o) : NULL;
	size_t len;

	if (!text)
		exit(1);
	len = strlen(text);
	text[len] = '\n';
	if (fsutil_write_all(STDOUT_FILENO, text, len + 1) < 0)
		exit(1);
	free(text);
	cJSON_Delete(o);
}

static int fail(const char *msg)
{
	cJSON *o = cJSON_CreateObject();

	cJSON_AddFalseToObject(o, "ok");
	cJSON_AddStringToObject(o, "error", msg);
	emit(o);
	return 1;
}

static void on_progress(const struct copytree_stats *st, void *arg)
{
	struct progress_state *ps = arg;
	struct timespec now;
	cJSON *o;

	clock_gettime(CLOCK_MONOTONIC, &now);
	if ((now.tv_sec - ps->last.tv_sec) * 1000000000L +
		    (now.tv_nsec - ps->last.tv_nsec) <
	    WORKER_PROGRESS_NS)
		return;
	ps->last = now;
	o = cJSON_CreateObject();
	cJSON_AddNumberToObject(o, "bytes", (double)st->bytes);
	cJSON_AddNumberToObject(o, "files", (double)st->files);
	emit(o);
}

static void on_note(const char *path, const char *what, void *arg)
{
	char buf[WORKER_ERR_MAX];
	cJSON *o = cJSON_CreateObject();

	(void)arg;
	snprintf(buf, sizeof(buf), "%s: %s", path, what);
	cJSON_AddStringToObject(o, "note", buf);
	emit(o);
}

/* Wait for the daemon's "go" (its capacity check passed). */
static bool gate_open(void)
{
	char buf[8];
	size_t len = 0;

	while (len < sizeof(buf)) {
		ssize_t n = read(STDIN_FILENO, buf + len, sizeof(buf) - len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		len += (size_t)n;
		if (memchr(buf, '\n', len))
			break;
	}
	return len >= 3 && !memcmp(buf, "go\n", 3);
}

static bool is_component(const char *s)
{
	return *s && !strchr(s, '/') && strcmp(s, ".") && strcmp(s, "..") &&
	       strlen(s) < WORKER_NAME_MAX;
}

/* Turn a write failure for lack of space into the message users should
 * see: "tier full while writing X: No space left on device". */
static void space_message(int errnum, char *err, size_t errlen)
{
	static const char prefix[] = "cannot write ";
	char buf[WORKER_ERR_MAX + 32];

	if ((errnum != ENOSPC && errnum != EDQUOT) ||
	    strncmp(err, prefix, sizeof(prefix) - 1))
		return;
	snprintf(buf, sizeof(buf), "tier full while writing %.*s",
		 (int)(WORKER_ERR_MAX - 1), err + sizeof(prefix) - 1);
	snprintf(err, errlen, "%.*s", (int)errlen - 1, buf);
}

int worker_main(int argc, char **argv)
{
	struct progress_state ps;
	struct copytree_opts opts;
	struct copytree_stats total, st;
	char err[WORKER_ERR_MAX], partial[WORKER_NAME_MAX + 16];
	char label[CONF_PATH_MAX * 2];
	const char *src, *dstdir, *name;
	cJSON *o;
	int dfd, saved;

	if (argc != 4) {
		fprintf(stderr,
			"usage: iostaged --stage-worker SRC DSTDIR NAME\n");
		return 2;
	}
	src = argv[1];
	dstdir = argv[2];
	name = argv[3];
	if (src[0] != '/' || dstdir[0] != '/' || !is_component(name)) {
		fprintf(stderr, "iostaged --stage-worker: SRC and DSTDIR must "
				"be absolute, NAME one path component\n");
		return 2;
	}
	snprintf(partial, sizeof(partial), ".%s.partial", name);
	snprintf(label, sizeof(label), "%s/%s", dstdir, name);

	if (copytree_measure(src, &total, err, sizeof(err)) < 0)
		return fail(err);
	o = cJSON_CreateObject();
	cJSON_AddNumberToObject(o, "total_bytes", (double)total.bytes);
	cJSON_AddNumberToObject(o, "total_files", (double)total.files);
	emit(o);
	if (getenv("IOSTAGE_STAGE_GATE") && !gate_open())
		return fail("cancelled before copying");

	if (mkdir(dstdir, 0700) < 0 && errno != EEXIST) {
		snprintf(err, sizeof(err), "cannot write %s: %s", dstdir,
			 strerror(errno));
		return fail(err);
	}
	dfd = open(dstdir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0) {
		snprintf(err, sizeof(err), "cannot write %s: %s", dstdir,
			 strerror(errno));
		return fail(err);
	}
	/* A leftover from an interrupted attempt is never reused. */
	if (rmtree_at(dfd, partial, err, sizeof(err)) < 0)
		return fail(err);

	memset(&ps, 0, sizeof(ps));
	clock_gettime(CLOCK_MONOTONIC, &ps.last);
	memset(&opts, 0, sizeof(opts));
	opts.progress = on_progress;
	opts.note = on_note;
	opts.arg = &ps;
	opts.dst_label = label;
	if (copytree_copy(src, dfd, partial, &opts, &st, err, sizeof(err)) < 0) {
		char rmerr[WORKER_ERR_MAX];

		saved = errno;
		rmtree_at(dfd, partial, rmerr, sizeof(rmerr));
		space_message(saved, err, sizeof(err));
		return fail(err);
	}
	/* Publish: the final name appears only now, complete and synced. */
	if (renameat2(dfd, partial, dfd, name, RENAME_NOREPLACE) < 0) {
		char rmerr[WORKER_ERR_MAX];

		snprintf(err, sizeof(err), "cannot write %s: %s", label,
			 strerror(errno));
		rmtree_at(dfd, partial, rmerr, sizeof(rmerr));
		return fail(err);
	}
	if (fsync(dfd) < 0) {
		snprintf(err, sizeof(err), "cannot write %s: %s", dstdir,
			 strerror(errno));
		return fail(err);
	}
	close(dfd);
	o = cJSON_CreateObject();
	cJSON_AddTrueToObject(o, "ok");
	cJSON_AddNumberToObject(o, "bytes", (double)st.bytes);
	cJSON_AddNumberToObject(o, "files", (double)st.files);
	cJSON_AddNumberToObject(o, "dirs", (double)st.dirs);
	cJSON_AddNumberToObject(o, "symlinks", (double)st.symlinks);
	cJSON_AddNumberToObject(o, "skipped", (double)st.skipped);
	emit(o);
	return 0;
}
