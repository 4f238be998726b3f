/* outbox.c - a node's durable outbox of job records (outbox.h).
 *
 * Durability is the classic sequence: write a temporary file, fsync it,
 * rename it over the entry's name, fsync the directory. A put returns only
 * after the last step, so the Epilog's reply means "on disk". The lock
 * only orders the renames of puts against the check-and-unlink of
 * removals in this process: the slow part of a put (writing, fsync) runs
 * outside it, under a name of its own.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "common/base/errmsg.h"
#include "common/base/jsonbuf.h"
#include "common/base/smallfile.h"
#include "common/telemetry/outbox.h"

struct outbox {
	int dir_fd;
	int bad_fd;
	char dir[CONF_PATH_MAX];
	pthread_mutex_t lock;
	unsigned long seq; /* temporary names, under lock */
};

static bool is_temp(const char *name)
{
	size_t n = strlen(name);

	return name[0] == '.' && n > 4 && !strcmp(name + n - 4, ".tmp");
}

/* "J.NODE.json" -> job and node; false for any other name. */
static bool parse_name(const char *name, uint32_t *ret_job, char *ret_node)
{
	size_t n = strlen(name), nodelen;
	const char *p = name;
	uint64_t job = 0;

	if (n < 7 || strcmp(name + n - 5, ".json"))
		return false;
	if (*p < '1' || *p > '9')
		return false;
	while (*p >= '0' && *p <= '9') {
		job = job * 10 + (uint64_t)(*p - '0');
		if (job > UINT32_MAX)
			return false;
		p++;
	}
	if (*p != '.')
		return false;
	p++;
	nodelen = (size_t)(name + n - 5 - p);
	if (nodelen == 0 || nodelen >= CONF_NODE_MAX)
		return false;
	memcpy(ret_node, p, nodelen);
	ret_node[nodelen] = '\0';
	if (!conf_is_node_name(ret_node))
		return false;
	*ret_job = (uint32_t)job;
	return true;
}

static int open_dir_at(int at, const char *path, bool create, char *err,
		       size_t errlen, const char *shown)
{
	struct stat st;
	int fd;

	if (create && mkdirat(at, path, 0700) < 0 && errno != EEXIST)
		return errmsg_fail(err, errlen, errno,
				   "outbox %s: cannot "
				   "create it: %s",
				   shown, strerror(errno));
	fd = openat(at, path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return errmsg_fail(err, errlen, errno, "outbox %s: %s", shown,
				   errno == ENOTDIR || errno == ELOOP
				       ? "not a directory (or a link)"
				       : strerror(errno));
	if (fstat(fd, &st) < 0 || (st.st_mode & 0077)) {
		/* Records name users and jobs: not for everyone to read. */
		if (fchmod(fd, 0700) < 0) {
			int e = errno;

			close(fd);
			return errmsg_fail(err, errlen, e,
					   "outbox %s: cannot "
					   "make it 0700: %s",
					   shown, strerror(e));
		}
	}
	return fd;
}

static unsigned clean_temps(int dir_fd)
{
	int fd = dup(dir_fd);
	DIR *d = fd < 0 ? NULL : fdopendir(fd);
	struct dirent *de;
	unsigned n = 0;

	if (!d) {
		if (fd >= 0)
			close(fd);
		return 0;
	}
	while ((de = readdir(d)))
		if (is_temp(de->d_name) && unlinkat(dir_fd, de->d_name, 0) == 0)
			n++;
	closedir(d);
	if (n)
		(void)fsync(dir_fd);
	return n;
}

int outbox_open(const char *dir, struct outbox **ret_ob, unsigned *ret_cleaned,
		char *err, size_t errlen)
{
	struct outbox *ob;
	unsigned cleaned;

	if (!dir || dir[0] != '/' || strlen(dir) >= CONF_PATH_MAX)
		return errmsg_fail(err, errlen, EINVAL,
				   "outbox '%s': not an "
				   "absolute path",
				   dir ? dir : "(null)");
	ob = calloc(1, sizeof(*ob));
	if (!ob)
		return errmsg_fail(err, errlen, ENOMEM,
				   "outbox %s: out of "
				   "memory",
				   dir);
	ob->dir_fd = ob->bad_fd = -1;
	snprintf(ob->dir, sizeof(ob->dir), "%s", dir);
	ob->dir_fd = open_dir_at(AT_FDCWD, dir, true, err, errlen, dir);
	if (ob->dir_fd < 0)
		goto fail;
	ob->bad_fd = open_dir_at(ob->dir_fd, OUTBOX_BAD_DIR, true, err, errlen,
				 dir);
	if (ob->bad_fd < 0)
		goto fail;
	pthread_mutex_init(&ob->lock, NULL);
	cleaned = clean_temps(ob->dir_fd);
	if (ret_cleaned)
		*ret_cleaned = cleaned;
	*ret_ob = ob;
	return 0;
fail : {
	int e = errno;

	if (ob->dir_fd >= 0)
		close(ob->dir_fd);
	free(ob);
	errno = e;
}
	return -1;
}

void outbox_close(struct outbox *ob)
{
	if (!ob)
		return;
	close(ob->dir_fd);
	close(ob->bad_fd);
	pthread_mutex_destroy(&ob->lock);
	free(ob);
}

static const char *str_of(const cJSON *o, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);

	return cJSON_IsString(v) ? v->valuestring : NULL;
}

/* A job id: an integral number 1..UINT32_MAX. */
static bool job_of(const cJSON *o, uint32_t *ret)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, "job");

	if (!cJSON_IsNumber(v) || v->valuedouble < 1 ||
	    v->valuedouble > (double)UINT32_MAX ||
	    v->valuedouble != (double)(uint32_t)v->valuedouble)
		return false;
	*ret = (uint32_t)v->valuedouble;
	return true;
}

int outbox_entry_check(const cJSON *entry, char *err, size_t errlen)
{
	const cJSON *nodes, *rec, *e;
	const char *node, *rnode;
	uint32_t job, rjob;
	bool self = false;
	int n = 0;

	if (!cJSON_IsObject(entry))
		return errmsg_fail(err, errlen, EINVAL, "not a JSON object");
	if (!job_of(entry, &job))
		return errmsg_fail(err, errlen, EINVAL,
				   "key 'job': not a job "
				   "id (1 to 4294967295)");
	node = str_of(entry, "node");
	if (!node || !conf_is_node_name(node))
		return errmsg_fail(err, errlen, EINVAL,
				   "key 'node': not a "
				   "node name");
	nodes = cJSON_GetObjectItemCaseSensitive(entry, "nodes");
	if (!cJSON_IsArray(nodes))
		return errmsg_fail(err, errlen, EINVAL,
				   "key 'nodes': not a "
				   "list of node names");
	cJSON_ArrayForEach(e, nodes) {
		if (!cJSON_IsString(e) || !conf_is_node_name(e->valuestring))
			return errmsg_fail(err, errlen, EINVAL,
					   "key 'nodes': "
					   "item %d is not a node name",
					   n);
		if (++n > OUTBOX_NODES_MAX)
			return errmsg_fail(err, errlen, EINVAL,
					   "key 'nodes': "
					   "more than %d nodes",
					   OUTBOX_NODES_MAX);
		if (!strcmp(e->valuestring, node))
			self = true;
	}
	if (n == 0 || !self)
		return errmsg_fail(err, errlen, EINVAL,
				   "key 'nodes': does not "
				   "name node %s",
				   node);
	rec = cJSON_GetObjectItemCaseSensitive(entry, "record");
	if (!cJSON_IsObject(rec))
		return errmsg_fail(err, errlen, EINVAL,
				   "key 'record': not a "
				   "JSON object");
	rnode = str_of(rec, "node");
	if (!job_of(rec, &rjob) || rjob != job || !rnode || strcmp(rnode, node))
		return errmsg_fail(err, errlen, EINVAL,
				   "key 'record': not the "
				   "record of job %" PRIu32 " on node %s",
				   job, node);
	return 0;
}

cJSON *outbox_entry_new(uint32_t job, const char *node,
			const char *const *nodes, size_t n, const cJSON *rec,
			double written)
{
	cJSON *e = cJSON_CreateObject(), *arr;

	if (!e || !cJSON_AddNumberToObject(e, "outbox", OUTBOX_FORMAT) ||
	    !cJSON_AddNumberToObject(e, "job", job) ||
	    !cJSON_AddStringToObject(e, "node", node) ||
	    !(arr = cJSON_AddArrayToObject(e, "nodes")))
		goto fail;
	if (n == 0) {
		nodes = &node;
		n = 1;
	}
	for (size_t i = 0; i < n; i++) {
		cJSON *s = cJSON_CreateString(nodes[i]);

		if (!s)
			goto fail;
		cJSON_AddItemToArray(arr, s);
	}
	if (!cJSON_AddNumberToObject(e, "written", written) ||
	    !cJSON_AddItemToObject(e, "record", cJSON_Duplicate(rec, true)) ||
	    !cJSON_GetObjectItemCaseSensitive(e, "record"))
		goto fail;
	return e;
fail:
	cJSON_Delete(e);
	errno = ENOMEM;
	return NULL;
}

static int write_all(int fd, const char *p, size_t len)
{
	while (len) {
		ssize_t w = write(fd, p, len);

		if (w < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		p += w;
		len -= (size_t)w;
	}
	return 0;
}

int outbox_put(struct outbox *ob, const cJSON *entry, char *err, size_t errlen)
{
	char name[OUTBOX_NAME_MAX], tmp[OUTBOX_NAME_MAX + 48], *text = NULL;
	unsigned long seq;
	uint32_t job = 0; /* outbox_entry_check vouches for it */
	size_t len;
	int fd = -1, e;

	if (outbox_entry_check(entry, err, errlen) < 0)
		return -1;
	job_of(entry, &job);
	snprintf(name, sizeof(name), "%" PRIu32 ".%s.json", job,
		 str_of(entry, "node"));
	text = jsonbuf_dup(entry);
	if (!text)
		return errmsg_fail(err, errlen, ENOMEM,
				   "outbox %s/%s: out of "
				   "memory",
				   ob->dir, name);
	len = strlen(text);
	if (len > OUTBOX_ENTRY_MAX) {
		free(text);
		return errmsg_fail(err, errlen, EMSGSIZE,
				   "outbox %s/%s: entry "
				   "of %zu bytes, more than %d",
				   ob->dir, name, len, OUTBOX_ENTRY_MAX);
	}
	pthread_mutex_lock(&ob->lock);
	seq = ++ob->seq;
	pthread_mutex_unlock(&ob->lock);
	/* A name of its own: two puts of one entry never share a file. */
	snprintf(tmp, sizeof(tmp), ".%s.%ld.%lu.tmp", name,
		 (long)syscall(SYS_gettid), seq);
	fd = openat(ob->dir_fd, tmp,
		    O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		goto fail;
	if (write_all(fd, text, len) < 0 || fsync(fd) < 0)
		goto fail;
	if (close(fd) < 0) {
		fd = -1;
		goto fail;
	}
	fd = -1;
	pthread_mutex_lock(&ob->lock);
	if (renameat(ob->dir_fd, tmp, ob->dir_fd, name) < 0) {
		pthread_mutex_unlock(&ob->lock);
		goto fail;
	}
	pthread_mutex_unlock(&ob->lock);
	/* The rename is durable only once the directory is. */
	if (fsync(ob->dir_fd) < 0) {
		e = errno;
		free(text);
		return errmsg_fail(err, errlen, e, "outbox %s: fsync: %s",
				   ob->dir, strerror(e));
	}
	free(text);
	return 0;
fail:
	e = errno;
	if (fd >= 0)
		close(fd);
	unlinkat(ob->dir_fd, tmp, 0);
	free(text);
	return errmsg_fail(err, errlen, e, "outbox %s/%s: cannot write it: %s",
			   ob->dir, name, strerror(e));
}

static int item_cmp(const void *a, const void *b)
{
	const struct outbox_item *x = a, *y = b;

	if (x->mtime.tv_sec != y->mtime.tv_sec)
		return x->mtime.tv_sec < y->mtime.tv_sec ? -1 : 1;
	if (x->mtime.tv_nsec != y->mtime.tv_nsec)
		return x->mtime.tv_nsec < y->mtime.tv_nsec ? -1 : 1;
	return strcmp(x->name, y->name);
}

int outbox_list(struct outbox *ob, struct outbox_item **ret_items,
		size_t *ret_n, char *err, size_t errlen)
{
	struct outbox_item *items = NULL, *grown;
	size_t n = 0, cap = 0;
	struct dirent *de;
	/* A directory handle of its own: a dup() of dir_fd would share its
	 * read position with every other listing (the forwarder's, and the
	 * count /metrics and status take meanwhile), and a rewind by one
	 * made the other list entries twice. */
	int fd = openat(ob->dir_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *d = fd < 0 ? NULL : fdopendir(fd);

	if (!d) {
		int e = errno;

		if (fd >= 0)
			close(fd);
		return errmsg_fail(err, errlen, e, "outbox %s: %s", ob->dir,
				   strerror(e));
	}
	rewinddir(d);
	while ((de = readdir(d))) {
		struct outbox_item *it;
		struct stat st;

		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, "..") ||
		    !strcmp(de->d_name, OUTBOX_BAD_DIR) || is_temp(de->d_name))
			continue;
		if (strlen(de->d_name) >= sizeof(items->name))
			continue; /* cannot happen: NAME_MAX is 255 */
		if (fstatat(ob->dir_fd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) <
		    0)
			continue; /* removed meanwhile */
		if (n == cap) {
			cap = cap ? cap * 2 : 64;
			grown = realloc(items, cap * sizeof(*items));
			if (!grown) {
				free(items);
				closedir(d);
				return errmsg_fail(err, errlen, ENOMEM,
						   "outbox %s: out of memory",
						   ob->dir);
			}
			items = grown;
		}
		it = &items[n++];
		memset(it, 0, sizeof(*it));
		snprintf(it->name, sizeof(it->name), "%s", de->d_name);
		it->valid_name = S_ISREG(st.st_mode) &&
				 parse_name(de->d_name, &it->job, it->node);
		it->mtime = st.st_mtim;
		it->ino = st.st_ino;
	}
	closedir(d);
	if (n > 1)
		qsort(items, n, sizeof(*items), item_cmp);
	*ret_items = items;
	*ret_n = n;
	return 0;
}

long outbox_count(struct outbox *ob)
{
	struct outbox_item *items;
	size_t n;

	if (outbox_list(ob, &items, &n, NULL, 0) < 0)
		return -1;
	free(items);
	return (long)n;
}

cJSON *outbox_read(struct outbox *ob, struct outbox_item *it, char *err,
		   size_t errlen)
{
	char reason[128], cerr[CONF_ERR_MAX], *text;
	struct stat st;
	uint32_t job;
	cJSON *e;

	if (!it->valid_name) {
		errmsg_fail(err, errlen, EINVAL,
			    "outbox %s/%s: not an entry's "
			    "name (JOB.NODE.json, a regular file)",
			    ob->dir, it->name);
		return NULL;
	}
	text = smallfile_read_at(ob->dir_fd, it->name, O_NOFOLLOW,
				 OUTBOX_ENTRY_MAX, &st, reason, sizeof(reason));
	if (!text) {
		int e2 = errno;

		/* Too big, a NUL byte, not regular: it is not an entry. */
		if (e2 != ENOENT && e2 != ENOMEM && e2 != EIO && e2 != EMFILE &&
		    e2 != ENFILE)
			e2 = EINVAL;
		errmsg_fail(err, errlen, e2, "outbox %s/%s: %s", ob->dir,
			    it->name, reason);
		return NULL;
	}
	it->ino = st.st_ino;
	it->bytes = (size_t)st.st_size;
	e = cJSON_Parse(text);
	free(text);
	if (!e) {
		errmsg_fail(err, errlen, EINVAL, "outbox %s/%s: not JSON",
			    ob->dir, it->name);
		return NULL;
	}
	if (outbox_entry_check(e, cerr, sizeof(cerr)) < 0)
		goto bad;
	/* Checked: job and node are there. */
	if (!job_of(e, &job) || job != it->job ||
	    strcmp(str_of(e, "node"), it->node)) {
		snprintf(cerr, sizeof(cerr),
			 "its job or node differ from the "
			 "file name");
		goto bad;
	}
	return e;
bad:
	cJSON_Delete(e);
	errmsg_fail(err, errlen, EINVAL, "outbox %s/%s: not an entry: %s",
		    ob->dir, it->name, cerr);
	return NULL;
}

int outbox_remove(struct outbox *ob, const struct outbox_item *it, char *err,
		  size_t errlen)
{
	struct stat st;
	int e;

	pthread_mutex_lock(&ob->lock);
	if (fstatat(ob->dir_fd, it->name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
		e = errno;
		pthread_mutex_unlock(&ob->lock);
		if (e == ENOENT)
			return 0;
		return errmsg_fail(err, errlen, e, "outbox %s/%s: %s", ob->dir,
				   it->name, strerror(e));
	}
	if (st.st_ino != it->ino) {
		pthread_mutex_unlock(&ob->lock);
		return 1; /* a newer entry took its name: it goes next */
	}
	if (unlinkat(ob->dir_fd, it->name, 0) < 0) {
		e = errno;
		pthread_mutex_unlock(&ob->lock);
		return errmsg_fail(err, errlen, e,
				   "outbox %s/%s: cannot remove "
				   "it: %s",
				   ob->dir, it->name, strerror(e));
	}
	pthread_mutex_unlock(&ob->lock);
	return 0;
}

void outbox_sync(struct outbox *ob)
{
	(void)fsync(ob->dir_fd);
}

int outbox_quarantine(struct outbox *ob, const struct outbox_item *it,
		      char *ret_path, size_t pathlen, char *err, size_t errlen)
{
	char dst[sizeof(it->name) + 32];
	struct stat st;
	int e;

	snprintf(dst, sizeof(dst), "%s.%lld", it->name, (long long)time(NULL));
	/* Never over an earlier quarantined file of the same name. */
	for (int i = 1;
	     fstatat(ob->bad_fd, dst, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
	     i < 1000;
	     i++)
		snprintf(dst, sizeof(dst), "%s.%lld.%d", it->name,
			 (long long)time(NULL), i);
	pthread_mutex_lock(&ob->lock);
	if (renameat2(ob->dir_fd, it->name, ob->bad_fd, dst, RENAME_NOREPLACE) <
	    0) {
		e = errno;
		pthread_mutex_unlock(&ob->lock);
		return errmsg_fail(err, errlen, e,
				   "outbox %s/%s: cannot move "
				   "it to %s/: %s",
				   ob->dir, it->name, OUTBOX_BAD_DIR,
				   strerror(e));
	}
	pthread_mutex_unlock(&ob->lock);
	(void)fsync(ob->bad_fd);
	(void)fsync(ob->dir_fd);
	if (ret_path)
		snprintf(ret_path, pathlen, "%s/%s/%s", ob->dir, OUTBOX_BAD_DIR,
			 dst);
	return 0;
}
