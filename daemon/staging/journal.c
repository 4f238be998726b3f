/* journal.c - the build journal in StateDir/journal.
 *
 * One small file per build in flight, named TIER.build.K.vN.NODE (the tier
 * name followed by the build directory's name, which starts with ".build"),
 * so adding and dropping a record are one atomic write and one unlink. The
 * file's content repeats the tier and the build name; replay trusts only
 * the content, and only a build name of the expected shape.
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

#include <cJSON.h>

#include "common/base/jsonbuf.h"
#include "common/base/log.h"
#include "daemon/fsutil.h"
#include "daemon/staging/journal.h"

#define JOURNAL_RECORD_MAX 4096

struct journal {
	const struct conf *conf;
	int fd; /* StateDir/journal */
};

/* The journal's directory: a directory of OWNER's that nobody else may
 * write. For root this is fsutil_check_root_dir's rule, word for word. */
static int check_dir(const struct stat *st, uid_t owner, char *err,
		     size_t errlen)
{
	if (owner == 0 || !S_ISDIR(st->st_mode))
		return fsutil_check_root_dir(st, "StateDir/journal", false, err,
					     errlen);
	if (st->st_uid != owner || (st->st_mode & (S_IWGRP | S_IWOTH))) {
		snprintf(err, errlen,
			 "StateDir/journal is uid %u mode %04o, must be uid "
			 "%u and writable by it only",
			 (unsigned)st->st_uid, (unsigned)(st->st_mode & 07777),
			 (unsigned)owner);
		errno = EPERM;
		return -1;
	}
	return 0;
}

struct journal *journal_open(const struct conf *conf, uid_t owner, char *err,
			     size_t errlen)
{
	char why[CONF_ERR_MAX];
	struct journal *j;
	struct stat st;
	int fd;

	j = malloc(sizeof(*j));
	if (!j) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	j->conf = conf;
	j->fd = -1;
	fd = open(conf->state_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0) {
		snprintf(err, errlen, "StateDir: cannot open %s: %s",
			 conf->state_dir, strerror(errno));
		goto fail;
	}
	if (mkdirat(fd, "journal", 0700) < 0 && errno != EEXIST) {
		snprintf(err, errlen, "StateDir: cannot create %s/journal: %s",
			 conf->state_dir, strerror(errno));
		close(fd);
		goto fail;
	}
	j->fd = openat(fd, "journal",
		       O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	close(fd);
	if (j->fd < 0 || fstat(j->fd, &st) < 0) {
		snprintf(err, errlen, "StateDir: cannot open %s/journal: %s",
			 conf->state_dir, strerror(errno));
		goto fail;
	}
	if (check_dir(&st, owner, why, sizeof(why)) < 0) {
		snprintf(err, errlen, "StateDir: %s", why);
		goto fail;
	}
	return j;
fail:
	journal_close(j);
	return NULL;
}

void journal_close(struct journal *j)
{
	if (!j)
		return;
	if (j->fd >= 0)
		close(j->fd);
	free(j);
}

static bool build_name_ok(const char *build)
{
	size_t len = strlen(build);

	return len > 7 && len < JOURNAL_NAME_MAX &&
	       !strncmp(build, ".build.", 7) && !strchr(build, '/');
}

static int record_name(const struct journal *j, int tier, const char *build,
		       char *buf, size_t len)
{
	int n = snprintf(buf, len, "%s%s", j->conf->tiers[tier].name, build);

	if (n < 0 || (size_t)n >= len || !build_name_ok(build)) {
		errno = EINVAL;
		return -1;
	}
	return 0;
}

int journal_add(struct journal *j, int tier, const char *build, char *err,
		size_t errlen)
{
	char name[CONF_NAME_MAX + JOURNAL_NAME_MAX], *text = NULL;
	cJSON *o = cJSON_CreateObject();
	int r = -1, saved;

	if (record_name(j, tier, build, name, sizeof(name)) < 0) {
		snprintf(err, errlen, "journal: bad build name '%.64s'", build);
		goto out;
	}
	if (o) {
		cJSON_AddStringToObject(o, "tier", j->conf->tiers[tier].name);
		cJSON_AddStringToObject(o, "build", build);
		cJSON_AddNumberToObject(o, "created", (double)time(NULL));
		text = jsonbuf_dup(o);
	}
	if (!text) {
		errno = ENOMEM;
		snprintf(err, errlen, "journal: out of memory");
		goto out;
	}
	r = fsutil_write_atomic(j->fd, name, text, strlen(text), 0600);
	if (r < 0) {
		saved = errno;
		snprintf(err, errlen, "cannot write %s/journal/%s: %s",
			 j->conf->state_dir, name, strerror(saved));
		errno = saved;
	}
out:
	cJSON_Delete(o);
	free(text);
	return r;
}

void journal_remove(struct journal *j, int tier, const char *build)
{
	char name[CONF_NAME_MAX + JOURNAL_NAME_MAX];

	if (record_name(j, tier, build, name, sizeof(name)) < 0)
		return;
	if (unlinkat(j->fd, name, 0) < 0 && errno != ENOENT)
		log_warning("cannot remove %s/journal/%s", j->conf->state_dir,
			    name);
	else
		(void)fsync(j->fd);
}

/* Read a record (small, regular, ours). NULL on any problem. */
static cJSON *read_record(const struct journal *j, const char *name)
{
	char buf[JOURNAL_RECORD_MAX + 1];
	struct stat st;
	ssize_t n;
	int fd;

	fd = openat(j->fd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) ||
	    st.st_size > JOURNAL_RECORD_MAX) {
		close(fd);
		return NULL;
	}
	n = read(fd, buf, JOURNAL_RECORD_MAX);
	close(fd);
	if (n <= 0)
		return NULL;
	buf[n] = '\0';
	return cJSON_Parse(buf);
}

/* The index of the tier NAME in the journal's conf, or -1. */
static int tier_index(const struct journal *j, const char *name)
{
	size_t i;

	for (i = 0; i < j->conf->ntiers; i++)
		if (!strcmp(j->conf->tiers[i].name, name))
			return (int)i;
	return -1;
}

unsigned journal_replay(struct journal *j,
			int (*remove)(int tier, const char *build, void *arg),
			void *arg)
{
	struct dirent *de;
	unsigned removed = 0;
	DIR *dir;
	int fd;

	fd = fcntl(j->fd, F_DUPFD_CLOEXEC, 0);
	dir = fd >= 0 ? fdopendir(fd) : NULL;
	if (!dir) {
		log_warning("cannot read %s/journal", j->conf->state_dir);
		if (fd >= 0)
			close(fd);
		return 0;
	}
	while ((de = readdir(dir))) {
		const cJSON *tier, *build;
		cJSON *o;
		int t;

		if (de->d_name[0] == '.') {
			/* An interrupted atomic write: not a record. */
			if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
				unlinkat(j->fd, de->d_name, 0);
			continue;
		}
		o = read_record(j, de->d_name);
		tier = cJSON_GetObjectItemCaseSensitive(o, "tier");
		build = cJSON_GetObjectItemCaseSensitive(o, "build");
		if (!cJSON_IsString(tier) || !cJSON_IsString(build) ||
		    !build_name_ok(build->valuestring)) {
			log_warningx("journal record %s is unreadable; dropped",
				     de->d_name);
			unlinkat(j->fd, de->d_name, 0);
			cJSON_Delete(o);
			continue;
		}
		t = tier_index(j, tier->valuestring);
		if (t < 0) {
			log_warningx("journal record %s names tier '%.32s', no "
				     "longer configured; dropped",
				     de->d_name, tier->valuestring);
			unlinkat(j->fd, de->d_name, 0);
		} else if (remove(t, build->valuestring, arg) == 0) {
			unlinkat(j->fd, de->d_name, 0);
			removed++;
		}
		cJSON_Delete(o);
	}
	closedir(dir);
	(void)fsync(j->fd);
	return removed;
}
