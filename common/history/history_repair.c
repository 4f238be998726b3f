/* history_repair.c - recovering a damaged history database
 * (`iostagectld --repair-history`, `iostaged --repair-history`): a copy
 * of the damaged files kept first, then the gentlest fix that opens it.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <rocksdb/c.h>

#include "common/base/errmsg.h"
#include "common/config/conf.h"
#include "common/history/history_int.h"

/* Copy the regular files of SRC (a RocksDB directory is flat) into DST. */
static int copy_dir_files(const char *src, const char *dst, char *err,
			  size_t errlen)
{
	char from[4096], to[4096], buf[1 << 16];
	struct dirent *de;
	DIR *d;
	int rc = 0;

	if (mkdir(dst, 0700) < 0)
		return errmsg_fail(err, errlen, errno, "mkdir %s: %s", dst,
				   strerror(errno));
	d = opendir(src);
	if (!d)
		return errmsg_fail(err, errlen, errno, "%s: %s", src,
				   strerror(errno));
	while (rc == 0 && (de = readdir(d))) {
		struct stat st;
		int in, out;
		ssize_t r;

		snprintf(from, sizeof(from), "%s/%s", src, de->d_name);
		snprintf(to, sizeof(to), "%s/%s", dst, de->d_name);
		if (lstat(from, &st) < 0 || !S_ISREG(st.st_mode))
			continue;
		in = open(from, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
		out = open(to, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
		if (in < 0 || out < 0) {
			rc = errmsg_fail(err, errlen, errno, "copy %s: %s",
					 from, strerror(errno));
		} else {
			while ((r = read(in, buf, sizeof(buf))) > 0)
				if (write(out, buf, (size_t)r) != r) {
					r = -1;
					break;
				}
			if (r < 0 || fsync(out) < 0)
				rc = errmsg_fail(err, errlen, errno,
						 "copy %s: %s", from,
						 strerror(errno));
		}
		if (in >= 0)
			close(in);
		if (out >= 0)
			close(out);
	}
	closedir(d);
	return rc;
}

/* A damaged CURRENT is the cheapest damage to undo: point it at the newest
 * MANIFEST again (written to a temporary file, synced, renamed). The
 * MANIFEST knows every column family, so the WAL replays in full.
 * Returns 0 when a MANIFEST was found and CURRENT rewritten. */
static int rewrite_current(const char *dir)
{
	char best[256] = "", path[4096], tmpf[4096], line[300];
	unsigned long long best_n = 0;
	struct dirent *de;
	DIR *d = opendir(dir);
	int fd, rc = -1;

	if (!d)
		return -1;
	while ((de = readdir(d))) {
		char *end;
		unsigned long long n;

		if (strncmp(de->d_name, "MANIFEST-", 9) != 0)
			continue;
		n = strtoull(de->d_name + 9, &end, 10);
		if (*end || n < best_n || strlen(de->d_name) >= sizeof(best))
			continue;
		best_n = n;
		snprintf(best, sizeof(best), "%s", de->d_name);
	}
	closedir(d);
	if (!best[0])
		return -1;
	snprintf(tmpf, sizeof(tmpf), "%s/CURRENT.repair", dir);
	snprintf(path, sizeof(path), "%s/CURRENT", dir);
	snprintf(line, sizeof(line), "%s\n", best);
	fd = open(tmpf, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		return -1;
	if (write(fd, line, strlen(line)) == (ssize_t)strlen(line) &&
	    fsync(fd) == 0 && rename(tmpf, path) == 0)
		rc = 0;
	close(fd);
	if (rc < 0)
		unlink(tmpf);
	return rc;
}

int history_repair(const char *dir, int64_t *ret_jobs, char *ret_copy,
		   size_t copylen, char *err, size_t errlen)
{
	char copy[4096], sub[CONF_ERR_MAX];
	rocksdb_options_t *o;
	struct history *h;
	bool has_current;
	char *rerr = NULL;
	int64_t jobs;

	if (!dir || dir[0] != '/')
		return errmsg_fail(err, errlen, EINVAL,
				   "history: directory must be absolute");
	if (hist_dir_entries(dir, &has_current) <= 0)
		return errmsg_fail(err, errlen, ENOENT,
				   "%s: no database to repair", dir);
	snprintf(copy, sizeof(copy), "%s.damaged.%lld", dir,
		 (long long)time(NULL));
	if (copy_dir_files(dir, copy, sub, sizeof(sub)) < 0)
		return errmsg_fail(err, errlen, errno,
				   "cannot keep a copy before repairing: %s",
				   sub);
	/* First the gentle fix, then RocksDB's rebuild from the SST files. */
	if (rewrite_current(dir) == 0) {
		h = history_open(dir, HISTORY_READ_WRITE, sub, sizeof(sub));
		if (h)
			goto opened;
	}
	o = rocksdb_options_create();
	rocksdb_repair_db(o, dir, &rerr);
	rocksdb_options_destroy(o);
	if (rerr) {
		errmsg_fail(err, errlen, EIO,
			    "repair of %s failed: %s (the damaged "
			    "files are kept in %s)",
			    dir, rerr, copy);
		free(rerr);
		return -1;
	}
	h = hist_open_cfs(dir, HISTORY_READ_WRITE, true, sub, sizeof(sub));
	if (!h)
		return errmsg_fail(
		    err, errlen, EIO,
		    "repaired %s but it still does not open: %s (the "
		    "damaged files are kept in %s)",
		    dir, sub, copy);
opened:
	jobs = history_count(h, sub, sizeof(sub));
	history_close(h);
	if (jobs < 0)
		return errmsg_fail(err, errlen, EIO, "%s", sub);
	*ret_jobs = jobs;
	snprintf(ret_copy, copylen, "%s", copy);
	return 0;
}

int history_repair_main(const char *prog, int argc, char **argv)
{
	char dir[CONF_PATH_MAX + 16], err[CONF_ERR_MAX], copy[4096];
	const char *conf_path = IOSTAGE_CONF_PATH;
	static struct conf conf;
	int64_t jobs = 0;

	for (int i = 1; i < argc; i++) {
		if ((!strcmp(argv[i], "-c") || !strcmp(argv[i], "--config")) &&
		    i + 1 < argc) {
			conf_path = argv[++i];
		} else {
			fprintf(stderr,
				"usage: %s --repair-history "
				"[-c CONF]\n",
				prog);
			return 2;
		}
	}
	conf_set_defaults(&conf);
	if (conf_load(conf_path, &conf, err, sizeof(err)) < 0) {
		fprintf(stderr, "%s: %s\n", prog, err);
		return 1;
	}
	history_dir(&conf, dir, sizeof(dir));
	if (history_repair(dir, &jobs, copy, sizeof(copy), err, sizeof(err)) <
	    0) {
		fprintf(stderr, "%s: --repair-history: %s\n", prog, err);
		return 1;
	}
	printf("%s: history %s repaired: %lld job%s readable; the "
	       "damaged files are kept in %s; restart %s to use it\n",
	       prog, dir, (long long)jobs, jobs == 1 ? "" : "s", copy, prog);
	return 0;
}
