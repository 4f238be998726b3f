/* drain_worker.c - the drain worker: a job's outputs, copied to the PFS as
 * the job's user.
 *
 * Like the stage worker this is a separate exec of iostaged, holding
 * nothing of root's: the daemon tells it which relative paths changed and
 * it does every open itself, with the user's credentials. So a symlink the
 * user plants in the output directory (say, to /etc/shadow) is at worst
 * re-created as a symlink on the PFS: nothing reads through it, and the
 * user could not have read the target anyway. See drain_worker.h for the
 * protocol.
 *
 * Everything below the two roots goes through directory fds: LOCALDIR is
 * walked with openat(O_NOFOLLOW) one component at a time, so a directory
 * swapped for a symlink mid-walk fails instead of leading elsewhere, and on
 * the PFS side directories are created and opened the same way.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cJSON.h>

#include "common/base/jsonbuf.h"
#include "common/config/pathsafe.h"
#include "common/net/proto.h"
#include "daemon/fsutil.h"
#include "daemon/staging/drain_worker.h"

#define DW_REL_MAX 4096           /* longest relative path handled */
#define DW_DEPTH_MAX 256          /* directory levels below LOCALDIR */
#define DW_BUF_SIZE (1024 * 1024) /* read/write fallback buffer */
#define DW_ERR_MAX 2048
#define DW_TMP_PREFIX ".iostage-drain."

struct dw {
	const char *local, *pfs;
	int lfd;         /* LOCALDIR; -1 until opened */
	int pfd;         /* PFSDIR; -1 until created and opened */
	bool local_gone; /* LOCALDIR does not exist */
	unsigned seq;    /* temporary names */
	char *buf;       /* fallback copy buffer, allocated on first use */
	uint64_t files, bytes, failed; /* of the current command */
};

/* --- output ------------------------------------------------------------------ */

/* Print O as one line on stdout; the daemon gone means we stop. */
static void emit(cJSON *o)
{
	char *text = o ? jsonbuf_dup(o) : NULL;
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

static cJSON *result(const char *rel, bool ok)
{
	cJSON *o = cJSON_CreateObject();

	if (!o)
		exit(1);
	cJSON_AddStringToObject(o, "path", rel);
	cJSON_AddBoolToObject(o, "ok", ok);
	return o;
}

static void res_file(struct dw *w, const char *rel, uint64_t bytes)
{
	cJSON *o = result(rel, true);

	cJSON_AddNumberToObject(o, "bytes", (double)bytes);
	emit(o);
	w->files++;
	w->bytes += bytes;
}

static void res_flag(const char *rel, const char *key)
{
	cJSON *o = result(rel, true);

	cJSON_AddTrueToObject(o, key);
	emit(o);
}

static void res_skipped(const char *rel, const char *what)
{
	cJSON *o = result(rel, true);

	cJSON_AddStringToObject(o, "skipped", what);
	emit(o);
}

static void res_fail(struct dw *w, const char *rel, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void res_fail(struct dw *w, const char *rel, const char *fmt, ...)
{
	char msg[DW_ERR_MAX];
	cJSON *o = result(rel, false);
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	cJSON_AddStringToObject(o, "error", msg);
	emit(o);
	w->failed++;
}

static void res_done(struct dw *w)
{
	cJSON *o = cJSON_CreateObject();

	if (!o)
		exit(1);
	cJSON_AddTrueToObject(o, "done");
	cJSON_AddNumberToObject(o, "files", (double)w->files);
	cJSON_AddNumberToObject(o, "bytes", (double)w->bytes);
	cJSON_AddNumberToObject(o, "failed", (double)w->failed);
	emit(o);
	w->files = w->bytes = w->failed = 0;
}

/* --- the two roots ------------------------------------------------------------ */

/* LOCALDIR, opened once. 0, 1 if it does not exist, -1 on error (err). */
static int local_root(struct dw *w, char *err, size_t errlen)
{
	if (w->lfd >= 0)
		return 0;
	if (w->local_gone)
		return 1;
	w->lfd = open(w->local,
		      O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (w->lfd >= 0)
		return 0;
	if (errno == ENOENT) {
		w->local_gone = true;
		return 1;
	}
	snprintf(err, errlen, "cannot read %s: %s", w->local, strerror(errno));
	return -1;
}

/* mkdir -p PATH (absolute) with MODE for what is created, as the user. */
static int mkdir_p(const char *path, mode_t mode)
{
	char buf[PATH_MAX];
	size_t len = strlen(path);

	if (len >= sizeof(buf)) {
		errno = ENAMETOOLONG;
		return -1;
	}
	memcpy(buf, path, len + 1);
	for (char *p = buf + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(buf, mode) < 0 && errno != EEXIST)
			return -1;
		*p = '/';
	}
	if (mkdir(buf, mode) < 0 && errno != EEXIST)
		return -1;
	return 0;
}

/* PFSDIR, created (0700, the user's umask in the job is unknown) and
 * opened once. It is the user's own path, checked at submit: followed
 * like any path the user would type. 0, or -1 with err. */
static int pfs_root(struct dw *w, char *err, size_t errlen)
{
	if (w->pfd >= 0)
		return 0;
	if (mkdir_p(w->pfs, 0700) < 0) {
		snprintf(err, errlen, "cannot create %s: %s", w->pfs,
			 strerror(errno));
		return -1;
	}
	w->pfd = open(w->pfs, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (w->pfd < 0) {
		snprintf(err, errlen, "cannot open %s: %s", w->pfs,
			 strerror(errno));
		return -1;
	}
	return 0;
}

/* The PFS directory NAME under PDIR, created with MODE (plus u+rwx, so
 * that we can keep writing into it) when missing. fd or -1 (errno). */
static int pfs_subdir(int pdir, const char *name, mode_t mode)
{
	bool made = false;
	int fd;

	if (mkdirat(pdir, name, 0700) == 0)
		made = true;
	else if (errno != EEXIST)
		return -1;
	fd = openat(pdir, name,
		    O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd >= 0 && made)
		(void)fchmod(fd, (mode & 07777) | S_IRWXU);
	return fd;
}

/* --- one entry ---------------------------------------------------------------- */

static bool same_mtime(const struct timespec *local, const struct timespec *pfs)
{
	if (local->tv_sec != pfs->tv_sec)
		return false;
	if (local->tv_nsec == pfs->tv_nsec)
		return true;
	/* A PFS that keeps only seconds or microseconds. */
	return pfs->tv_nsec == 0 ||
	       (pfs->tv_nsec % 1000 == 0 &&
		local->tv_nsec / 1000 == pfs->tv_nsec / 1000);
}

/* A temporary name in the PFS directory PDIR, unused so far. */
static void tmp_name(struct dw *w, char *buf, size_t len)
{
	snprintf(buf, len, DW_TMP_PREFIX "%d.%u", (int)getpid(), ++w->seq);
}

/* Copy IN to OUT from their current offsets to EOF. Returns the bytes
 * copied, or -1 with errno. */
static int64_t copy_data(struct dw *w, int in, int out)
{
	int64_t total = 0;

	for (;;) {
		ssize_t n = copy_file_range(in, NULL, out, NULL, 1 << 30, 0);

		if (n > 0) {
			total += n;
			continue;
		}
		if (n == 0)
			return total;
		if (errno == EINTR)
			continue;
		if (total == 0 && (errno == EXDEV || errno == EINVAL ||
				   errno == ENOSYS || errno == EOPNOTSUPP))
			break; /* not between these files: read/write */
		return -1;
	}
	if (!w->buf && !(w->buf = malloc(DW_BUF_SIZE)))
		return -1;
	for (;;) {
		ssize_t n = read(in, w->buf, DW_BUF_SIZE);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -1;
		if (n == 0)
			return total;
		if (fsutil_write_all(out, w->buf, (size_t)n) < 0)
			return -1;
		total += n;
	}
}

static void copy_file(struct dw *w, int ldir, int pdir, const char *name,
		      const char *rel, bool only_changed)
{
	char tmp[64];
	struct stat st, cur;
	struct timespec times[2];
	int in, out = -1;
	int64_t n;

	in = openat(ldir, name,
		    O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	if (in < 0) {
		if (errno == ENOENT)
			res_flag(rel, "gone");
		else
			res_fail(w, rel, "cannot read %s/%s: %s", w->local, rel,
				 strerror(errno));
		return;
	}
	if (fstat(in, &st) < 0 || !S_ISREG(st.st_mode)) {
		/* Replaced between the stat and the open: the next scan
		 * sees what it is now. */
		res_flag(rel, "gone");
		goto out;
	}
	if (only_changed &&
	    fstatat(pdir, name, &cur, AT_SYMLINK_NOFOLLOW) == 0 &&
	    S_ISREG(cur.st_mode) && cur.st_size == st.st_size &&
	    same_mtime(&st.st_mtim, &cur.st_mtim))
		goto out;
	for (;;) {
		tmp_name(w, tmp, sizeof(tmp));
		out = openat(pdir, tmp,
			     O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW |
				 O_CLOEXEC,
			     0600);
		if (out >= 0 || errno != EEXIST)
			break;
	}
	if (out < 0) {
		res_fail(w, rel, "cannot write %s/%s: %s", w->pfs, rel,
			 strerror(errno));
		goto out;
	}
	n = copy_data(w, in, out);
	if (n < 0) {
		res_fail(w, rel, "cannot copy %s/%s to %s/%s: %s", w->local,
			 rel, w->pfs, rel, strerror(errno));
		goto fail_tmp;
	}
	times[0] = st.st_atim;
	times[1] = st.st_mtim;
	if (fchmod(out, st.st_mode & 07777) < 0 || futimens(out, times) < 0 ||
	    fsync(out) < 0) {
		res_fail(w, rel, "cannot write %s/%s: %s", w->pfs, rel,
			 strerror(errno));
		goto fail_tmp;
	}
	if (close(out) < 0) {
		out = -1;
		res_fail(w, rel, "cannot write %s/%s: %s", w->pfs, rel,
			 strerror(errno));
		goto fail_tmp;
	}
	out = -1;
	if (renameat(pdir, tmp, pdir, name) < 0) {
		res_fail(w, rel, "cannot write %s/%s: %s", w->pfs, rel,
			 strerror(errno));
		goto fail_tmp;
	}
	res_file(w, rel, (uint64_t)n);
	goto out;
fail_tmp:
	if (out >= 0)
		close(out);
	unlinkat(pdir, tmp, 0);
out:
	close(in);
}

static void copy_link(struct dw *w, int ldir, int pdir, const char *name,
		      const char *rel, bool only_changed)
{
	char target[PATH_MAX], cur[PATH_MAX], tmp[64];
	ssize_t n, m;

	n = readlinkat(ldir, name, target, sizeof(target));
	if (n < 0) {
		if (errno == ENOENT || errno == EINVAL)
			res_flag(rel, "gone");
		else
			res_fail(w, rel, "cannot read %s/%s: %s", w->local, rel,
				 strerror(errno));
		return;
	}
	if ((size_t)n >= sizeof(target)) {
		res_fail(w, rel, "cannot read %s/%s: link target too long",
			 w->local, rel);
		return;
	}
	target[n] = '\0';
	if (only_changed) {
		m = readlinkat(pdir, name, cur, sizeof(cur));
		if (m == n && !memcmp(cur, target, (size_t)n))
			return;
	}
	for (;;) {
		tmp_name(w, tmp, sizeof(tmp));
		if (symlinkat(target, pdir, tmp) == 0)
			break;
		if (errno != EEXIST) {
			res_fail(w, rel, "cannot write %s/%s: %s", w->pfs, rel,
				 strerror(errno));
			return;
		}
	}
	if (renameat(pdir, tmp, pdir, name) < 0) {
		res_fail(w, rel, "cannot write %s/%s: %s", w->pfs, rel,
			 strerror(errno));
		unlinkat(pdir, tmp, 0);
		return;
	}
	res_flag(rel, "link");
}

static void walk(struct dw *w, int ldir, int pdir, const char *rel,
		 unsigned depth);

/* Copy the entry NAME of LDIR (known as REL) into PDIR. Directories are
 * walked, copying only what changed; ONLY_CHANGED applies to the entry
 * itself. */
static void copy_entry(struct dw *w, int ldir, int pdir, const char *name,
		       const char *rel, bool only_changed, unsigned depth)
{
	struct stat st;
	int lsub, psub;

	if (fstatat(ldir, name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
		if (errno == ENOENT)
			res_flag(rel, "gone");
		else
			res_fail(w, rel, "cannot read %s/%s: %s", w->local, rel,
				 strerror(errno));
		return;
	}
	switch (st.st_mode & S_IFMT) {
	case S_IFREG:
		copy_file(w, ldir, pdir, name, rel, only_changed);
		return;
	case S_IFLNK:
		copy_link(w, ldir, pdir, name, rel, only_changed);
		return;
	case S_IFDIR:
		break;
	case S_IFIFO:
		res_skipped(rel, "fifo");
		return;
	case S_IFSOCK:
		res_skipped(rel, "socket");
		return;
	default:
		res_skipped(rel, "device");
		return;
	}
	if (depth >= DW_DEPTH_MAX) {
		res_fail(w, rel, "cannot read %s/%s: deeper than %d levels",
			 w->local, rel, DW_DEPTH_MAX);
		return;
	}
	lsub = openat(ldir, name,
		      O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (lsub < 0) {
		if (errno == ENOENT)
			res_flag(rel, "gone");
		else
			res_fail(w, rel, "cannot read %s/%s: %s", w->local, rel,
				 strerror(errno));
		return;
	}
	psub = pfs_subdir(pdir, name, st.st_mode);
	if (psub < 0) {
		res_fail(w, rel, "cannot write %s/%s: %s", w->pfs, rel,
			 strerror(errno));
		close(lsub);
		return;
	}
	walk(w, lsub, psub, rel, depth + 1);
	close(psub);
	close(lsub);
}

/* Every entry of the directory LDIR (REL; "" for the root) into PDIR,
 * skipping what the PFS already has. */
static void walk(struct dw *w, int ldir, int pdir, const char *rel,
		 unsigned depth)
{
	char child[DW_REL_MAX];
	struct dirent *de;
	DIR *d;
	int fd;

	fd = fcntl(ldir, F_DUPFD_CLOEXEC, 0);
	d = fd >= 0 ? fdopendir(fd) : NULL;
	if (!d) {
		res_fail(w, rel, "cannot read %s/%s: %s", w->local, rel,
			 strerror(errno));
		if (fd >= 0)
			close(fd);
		return;
	}
	while ((errno = 0, de = readdir(d))) {
		int n;

		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		n = rel[0] ? snprintf(child, sizeof(child), "%s/%s", rel,
				      de->d_name)
			   : snprintf(child, sizeof(child), "%s", de->d_name);
		if (n < 0 || (size_t)n >= sizeof(child)) {
			res_fail(w, rel,
				 "cannot read %s/%s/%s: path longer "
				 "than %d bytes",
				 w->local, rel, de->d_name, DW_REL_MAX - 1);
			continue;
		}
		copy_entry(w, ldir, pdir, de->d_name, child, true, depth);
	}
	if (errno)
		res_fail(w, rel, "cannot read %s/%s: %s", w->local, rel,
			 strerror(errno));
	closedir(d);
}

/* --- commands ------------------------------------------------------------------ */

/* Open the directories that lead to REL's last component, creating them on
 * the PFS; the last component goes to NAME. 0 with both fds (the caller
 * closes them; they may be the roots, which it must not), 1 if a local
 * directory on the way is gone, -1 after reporting a failure. */
static int open_parents(struct dw *w, const char *rel, int *ret_l, int *ret_p,
			char *name, size_t namelen)
{
	char buf[DW_REL_MAX], *comp, *next;
	int l = w->lfd, p = w->pfd;
	unsigned depth = 0;

	snprintf(buf, sizeof(buf), "%s", rel);
	comp = buf;
	while ((next = strchr(comp, '/'))) {
		struct stat st;
		int l2, p2;

		*next = '\0';
		if (++depth >= DW_DEPTH_MAX) {
			res_fail(w, rel,
				 "cannot read %s/%s: deeper than %d "
				 "levels",
				 w->local, rel, DW_DEPTH_MAX);
			goto fail;
		}
		l2 = openat(l, comp,
			    O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (l2 < 0 || fstat(l2, &st) < 0) {
			int e = errno;

			if (l2 >= 0)
				close(l2);
			if (e == ENOENT || e == ENOTDIR || e == ELOOP) {
				res_flag(rel, "gone");
				goto gone;
			}
			res_fail(w, rel, "cannot read %s/%s: %s", w->local, rel,
				 strerror(e));
			goto fail;
		}
		p2 = pfs_subdir(p, comp, st.st_mode);
		if (p2 < 0) {
			res_fail(w, rel, "cannot write %s/%s: %s", w->pfs, rel,
				 strerror(errno));
			close(l2);
			goto fail;
		}
		if (l != w->lfd) {
			close(l);
			close(p);
		}
		l = l2;
		p = p2;
		comp = next + 1;
	}
	if (strlen(comp) >= namelen) {
		res_fail(w, rel, "cannot read %s/%s: %s", w->local, rel,
			 strerror(ENAMETOOLONG));
		goto fail;
	}
	memcpy(name, comp, strlen(comp) + 1);
	*ret_l = l;
	*ret_p = p;
	return 0;
gone:
	if (l != w->lfd) {
		close(l);
		close(p);
	}
	return 1;
fail:
	if (l != w->lfd) {
		close(l);
		close(p);
	}
	return -1;
}

/* {"file":REL} or {"scan":REL}. */
static void run_command(struct dw *w, const char *rel, bool scan)
{
	char err[DW_ERR_MAX], name[NAME_MAX + 1];
	int l, p, r;

	if (scan ? (rel[0] && !pathsafe_is_relative(rel, DW_REL_MAX))
		 : !pathsafe_is_relative(rel, DW_REL_MAX)) {
		res_fail(w, "",
			 "refused path: not a relative path below the "
			 "output directory");
		return;
	}
	r = local_root(w, err, sizeof(err));
	if (r == 1) {
		if (!scan)
			res_flag(rel, "gone");
		return; /* nothing left to drain */
	}
	if (r < 0 || pfs_root(w, err, sizeof(err)) < 0) {
		res_fail(w, rel, "%s", err);
		return;
	}
	if (scan && !rel[0]) {
		walk(w, w->lfd, w->pfd, "", 0);
		return;
	}
	if (open_parents(w, rel, &l, &p, name, sizeof(name)) != 0)
		return;
	copy_entry(w, l, p, name, rel, scan, 0);
	if (l != w->lfd) {
		close(l);
		close(p);
	}
}

int drain_worker_main(int argc, char **argv)
{
	struct proto_reader *rd;
	struct dw w = { .lfd = -1, .pfd = -1 };
	char *line;
	int r;

	if (argc != 3 || argv[1][0] != '/' || argv[2][0] != '/') {
		fprintf(stderr,
			"usage: iostaged --drain-worker LOCALDIR PFSDIR "
			"(both absolute)\n");
		return 2;
	}
	w.local = argv[1];
	w.pfs = argv[2];
	rd = proto_reader_create(STDIN_FILENO);
	if (!rd)
		return 1;
	while ((r = proto_read_line(rd, -1, &line)) != 0) {
		const cJSON *file, *scan;
		cJSON *cmd;

		if (r < 0) {
			if (errno == EMSGSIZE) {
				res_fail(&w, "",
					 "refused command: line too long");
				res_done(&w);
				continue;
			}
			break;
		}
		cmd = cJSON_Parse(line);
		file = cJSON_GetObjectItemCaseSensitive(cmd, "file");
		scan = cJSON_GetObjectItemCaseSensitive(cmd, "scan");
		if (cJSON_IsString(file))
			run_command(&w, file->valuestring, false);
		else if (cJSON_IsString(scan))
			run_command(&w, scan->valuestring, true);
		else
			res_fail(&w, "",
				 "refused command: want {\"file\":REL} "
				 "or {\"scan\":REL}");
		cJSON_Delete(cmd);
		res_done(&w);
	}
	proto_reader_destroy(rd);
	/* The renames above are durable once the file system says so. */
	if (w.pfd >= 0 && syncfs(w.pfd) < 0)
		fprintf(stderr, "iostaged --drain-worker: syncfs %s: %s\n",
			w.pfs, strerror(errno));
	free(w.buf);
	return r == 0 ? 0 : 1;
}
