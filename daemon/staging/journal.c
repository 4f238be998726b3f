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
#include "daemon/staging/tiers.h"

#define JOURNAL_RECORD_MAX 4096

static const struct conf *journal_conf;
static int journal_fd = -1;

int journal_init(const struct conf *conf, char *err, size_t errlen)
{
	char why[CONF_ERR_MAX];
	struct stat st;
	int fd;

	fd = open(conf->state_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0) {
		snprintf(err, errlen, "StateDir: cannot open %s: %s",
			 conf->state_dir, strerror(errno));
		return -1;
	}
	if (mkdirat(fd, "journal", 0700) < 0 && errno != EEXIST) {
		snprintf(err, errlen, "StateDir: cannot create %s/journal: %s",
			 conf->state_dir, strerror(errno));
		close(fd);
		return -1;
	}
	journal_fd = openat(fd, "journal",
			    O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	close(fd);
	if (journal_fd < 0 || fstat(journal_fd, &st) < 0) {
		snprintf(err, errlen, "StateDir: cannot open %s/journal: %s",
			 conf->state_dir, strerror(errno));
		goto fail;
	}
	if (fsutil_check_root_dir(&st, "StateDir/journal", false, why,
				  sizeof(why)) < 0) {
		snprintf(err, errlen, "StateDir: %s", why);
		goto fail;
	}
	journal_conf = conf;
	return 0;
fail:
	if (journal_fd >= 0)
		close(journal_fd);
	journal_fd = -1;
	return -1;
}

void journal_fini(void)
{
	if (journal_fd >= 0)
		close(journal_fd);
	journal_fd = -1;
}

static bool build_name_ok(const char *build)
{
	size_t len = strlen(build);

	return len > 7 && len < JOURNAL_NAME_MAX &&
	       !strncmp(build, ".build.", 7) && !strchr(build, '/');
}

static int record_name(int tier, const char *build, char *buf, size_t len)
{
	int n =
	    snprintf(buf, len, "%s%s", journal_conf->tiers[tier].name, build);

	if (n < 0 || (size_t)n >= len || !build_name_ok(build)) {
		errno = EINVAL;
		return -1;
	}
	return 0;
}

int journal_add(int tier, const char *build, char *err, size_t errlen)
{
	char name[CONF_NAME_MAX + JOURNAL_NAME_MAX], *text = NULL;
	cJSON *o = cJSON_CreateObject();
	int r = -1, saved;

	if (record_name(tier, build, name, sizeof(name)) < 0) {
		snprintf(err, errlen, "journal: bad build name '%.64s'", build);
		goto out;
	}
	if (o) {
		cJSON_AddStringToObject(o, "tier",
					journal_conf->tiers[tier].name);
		cJSON_AddStringToObject(o, "build", build);
		cJSON_AddNumberToObject(o, "created", (double)time(NULL));
		text = jsonbuf_dup(o);
	}
	if (!text) {
		errno = ENOMEM;
		snprintf(err, errlen, "journal: out of memory");
		goto out;
	}
	r = fsutil_write_atomic(journal_fd, name, text, strlen(text), 0600);
	if (r < 0) {
		saved = errno;
		snprintf(err, errlen, "cannot write %s/journal/%s: %s",
			 journal_conf->state_dir, name, strerror(saved));
		errno = saved;
	}
out:
	cJSON_Delete(o);
	free(text);
	return r;
}

void journal_remove(int tier, const char *build)
{
	char name[CONF_NAME_MAX + JOURNAL_NAME_MAX];

	if (record_name(tier, build, name, sizeof(name)) < 0)
		return;
	if (unlinkat(journal_fd, name, 0) < 0 && errno != ENOENT)
		log_warning("cannot remove %s/journal/%s",
			    journal_conf->state_dir, name);
	else
		(void)fsync(journal_fd);
}

/* Read a record (small, regular, ours). NULL on any problem. */
static cJSON *read_record(const char *name)
{
	char buf[JOURNAL_RECORD_MAX + 1];
	struct stat st;
	ssize_t n;
	int fd;

	fd = openat(journal_fd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
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

unsigned journal_replay(int (*remove)(int tier, const char *build, void *arg),
			void *arg)
{
	struct dirent *de;
	unsigned removed = 0;
	DIR *dir;
	int fd;

	fd = fcntl(journal_fd, F_DUPFD_CLOEXEC, 0);
	dir = fd >= 0 ? fdopendir(fd) : NULL;
	if (!dir) {
		log_warning("cannot read %s/journal", journal_conf->state_dir);
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
				unlinkat(journal_fd, de->d_name, 0);
			continue;
		}
		o = read_record(de->d_name);
		tier = cJSON_GetObjectItemCaseSensitive(o, "tier");
		build = cJSON_GetObjectItemCaseSensitive(o, "build");
		if (!cJSON_IsString(tier) || !cJSON_IsString(build) ||
		    !build_name_ok(build->valuestring)) {
			log_warningx("journal record %s is unreadable; dropped",
				     de->d_name);
			unlinkat(journal_fd, de->d_name, 0);
			cJSON_Delete(o);
			continue;
		}
		t = tiers_index(tier->valuestring);
		if (t < 0) {
			log_warningx("journal record %s names tier '%.32s', no "
				     "longer configured; dropped",
				     de->d_name, tier->valuestring);
			unlinkat(journal_fd, de->d_name, 0);
		} else if (remove(t, build->valuestring, arg) == 0) {
			unlinkat(journal_fd, de->d_name, 0);
			removed++;
		}
		cJSON_Delete(o);
	}
	closedir(dir);
	(void)fsync(journal_fd);
	return removed;
}
