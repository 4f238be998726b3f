/* bindmount.c - read-only bind mounts made and removed through fds.
 *
 * Why /proc/self/fd/N: mount(2) and umount2(2) take paths, and a path
 * below a user's job directory can be changed by that user between the
 * moment root checks it and the moment the kernel resolves it. A
 * /proc/self/fd/N "magic link" resolves to exactly the object and mount
 * the fd holds, whatever happened to the names since.
 *
 * Why the remount goes through a second fd: after MS_BIND the first fd
 * still names the directory underneath the new mount, and a remount on it
 * fails (EINVAL: not a mount root). Opening NAME again from DIRFD walks
 * onto the new mount's root, which is what MS_REMOUNT needs; that open is
 * relative to a directory only root can write, so it finds our mount.
 *
 * Why mount ids and not st_dev: a bind mount of a directory of the same
 * file system has the same st_dev as its mount point's parent. Only the
 * mount id tells that a directory is the root of another mount.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/base/units.h"
#include "common/fs/bindmount.h"

#define BINDMOUNT_STACK_MAX 16 /* mounts detached from one name */
#define BINDMOUNT_ROUNDS 8     /* mountinfo passes of detach_under */

/* Put one line in ERR and return -1 with errno SAVED. */
static int set_err(char *err, size_t errlen, int saved, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static int set_err(char *err, size_t errlen, int saved, const char *fmt, ...)
{
	va_list ap;

	if (err && errlen) {
		va_start(ap, fmt);
		vsnprintf(err, errlen, fmt, ap);
		va_end(ap);
	}
	errno = saved;
	return -1;
}

int bindmount_id(int fd, uint64_t *ret_id)
{
	struct statx sx;
	struct {
		struct file_handle fh;
		unsigned char room[MAX_HANDLE_SZ];
	} h;
	int mnt_id;

	if (statx(fd, "", AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW, STATX_MNT_ID,
		  &sx) == 0 &&
	    (sx.stx_mask & STATX_MNT_ID)) {
		*ret_id = sx.stx_mnt_id;
		return 0;
	}
	/* Kernels before 5.8: the handle call reports the mount id too. */
	h.fh.handle_bytes = MAX_HANDLE_SZ;
	if (name_to_handle_at(fd, "", &h.fh, &mnt_id, AT_EMPTY_PATH) == 0) {
		*ret_id = (uint64_t)(unsigned)mnt_id;
		return 0;
	}
	errno = ENOSYS;
	return -1;
}

/* --- mountinfo ---------------------------------------------------------------
 */

/* Decode mountinfo's octal escapes in place. */
static void unescape(char *s)
{
	char *w = s;

	while (*s) {
		if (s[0] == '\\' && s[1] >= '0' && s[1] <= '3' && s[2] >= '0' &&
		    s[2] <= '7' && s[3] >= '0' && s[3] <= '7') {
			*w++ = (char)((s[1] - '0') << 6 | (s[2] - '0') << 3 |
				      (s[3] - '0'));
			s += 4;
		} else {
			*w++ = *s++;
		}
	}
	*w = '\0';
}

/* The next space-separated field of *P (NUL-terminated in place), or NULL. */
static char *field(char **p)
{
	char *s = *p, *e;

	if (!s || !*s)
		return NULL;
	e = strchr(s, ' ');
	if (e) {
		*e = '\0';
		*p = e + 1;
	} else {
		*p = s + strlen(s);
	}
	return s;
}

int bindmount_parse_line(char *line, struct bindmount_info *ret)
{
	char *p = line, *id, *parent, *point;
	struct bindmount_info info;

	if (!line || !ret)
		goto bad;
	id = field(&p);
	parent = field(&p);
	(void)field(&p); /* major:minor */
	(void)field(&p); /* root within its file system */
	point = field(&p);
	if (!point || units_parse_u64(id, &info.id) < 0 ||
	    units_parse_u64(parent, &info.parent) < 0 || point[0] != '/')
		goto bad;
	unescape(point);
	info.point = point;
	*ret = info;
	return 0;
bad:
	errno = EINVAL;
	return -1;
}

const char *bindmount_below(const char *dir, const char *path)
{
	size_t len;

	if (!dir || !path || dir[0] != '/')
		return NULL;
	if (!strcmp(dir, "/"))
		return path[0] == '/' && path[1] ? path + 1 : NULL;
	len = strlen(dir);
	if (strncmp(path, dir, len) || path[len] != '/' || !path[len + 1])
		return NULL;
	return path + len + 1;
}

/* The whole of /proc/self/mountinfo, NUL-terminated; caller frees. */
static char *read_mountinfo(void)
{
	size_t cap = 65536, len = 0;
	char *buf = NULL, *nb;
	int fd = open("/proc/self/mountinfo", O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return NULL;
	for (;;) {
		ssize_t n;

		if (!buf || len + 1 >= cap) {
			if (buf)
				cap *= 2;
			if (cap > BINDMOUNT_MOUNTINFO_MAX) {
				errno = EFBIG;
				goto fail;
			}
			nb = realloc(buf, cap);
			if (!nb)
				goto fail;
			buf = nb;
		}
		n = read(fd, buf + len, cap - len - 1);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			goto fail;
		if (n == 0)
			break;
		len += (size_t)n;
	}
	close(fd);
	buf[len] = '\0';
	return buf;
fail:
	free(buf);
	close(fd);
	return NULL;
}

/* --- one name ----------------------------------------------------------------
 */

static void fd_path(int fd, char *buf, size_t len)
{
	snprintf(buf, len, "/proc/self/fd/%d", fd);
}

/* Detach the mount whose root FD holds. */
static int detach_fd(int fd)
{
	char p[32];

	fd_path(fd, p, sizeof(p));
	return umount2(p, MNT_DETACH);
}

int bindmount_detach_at(int dirfd, const char *name, char *err, size_t errlen)
{
	uint64_t dir_id, id;
	int n, fd;

	if (!name || !*name || strchr(name, '/') || !strcmp(name, ".") ||
	    !strcmp(name, ".."))
		return set_err(err, errlen, EINVAL,
			       "'%s' is not a single path component",
			       name ? name : "(null)");
	if (bindmount_id(dirfd, &dir_id) < 0)
		return set_err(err, errlen, errno,
			       "cannot tell mounts apart here: %s",
			       strerror(errno));
	for (n = 0; n < BINDMOUNT_STACK_MAX; n++) {
		fd = openat(dirfd, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
		if (fd < 0) {
			if (errno == ENOENT)
				return n;
			return set_err(err, errlen, errno, "cannot open %s: %s",
				       name, strerror(errno));
		}
		if (bindmount_id(fd, &id) < 0 || id == dir_id) {
			close(fd);
			return n; /* nothing (more) mounted on it */
		}
		if (detach_fd(fd) < 0) {
			int saved = errno;

			close(fd);
			return set_err(err, errlen, saved,
				       "cannot unmount %s: %s", name,
				       strerror(saved));
		}
		close(fd);
	}
	return set_err(err, errlen, EBUSY,
		       "%s: more than %d mounts stacked "
		       "on it",
		       name, BINDMOUNT_STACK_MAX);
}

int bindmount_ro_at(int src_fd, int dirfd, const char *name, char *err,
		    size_t errlen)
{
	char sp[32], tp[32];
	struct stat src, st;
	uint64_t dir_id, id;
	int tfd = -1, mfd = -1, saved;
	bool is_dir;

	if (fstat(src_fd, &src) < 0)
		return set_err(err, errlen, errno, "cannot stat the source: %s",
			       strerror(errno));
	if (!S_ISDIR(src.st_mode) && !S_ISREG(src.st_mode))
		return set_err(err, errlen, EINVAL,
			       "the source is neither a directory nor a "
			       "file");
	is_dir = S_ISDIR(src.st_mode);
	if (bindmount_detach_at(dirfd, name, err, errlen) < 0 ||
	    bindmount_id(dirfd, &dir_id) < 0)
		return -1;
	/* A leftover of another type (a symlink of the old layout, a file
	 * where a tree goes) makes way. */
	if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
	    (is_dir ? !S_ISDIR(st.st_mode) : !S_ISREG(st.st_mode)) &&
	    unlinkat(dirfd, name, S_ISDIR(st.st_mode) ? AT_REMOVEDIR : 0) < 0)
		return set_err(err, errlen, errno, "cannot replace %s: %s",
			       name, strerror(errno));
	if ((is_dir ? mkdirat(dirfd, name, 0755)
		    : mknodat(dirfd, name, S_IFREG | 0444, 0)) < 0 &&
	    errno != EEXIST)
		return set_err(err, errlen, errno, "cannot create %s: %s", name,
			       strerror(errno));
	tfd = openat(dirfd, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
	if (tfd < 0 || fstat(tfd, &st) < 0) {
		saved = errno;
		goto fail_open;
	}
	if ((is_dir ? !S_ISDIR(st.st_mode) : !S_ISREG(st.st_mode)) ||
	    bindmount_id(tfd, &id) < 0 || id != dir_id) {
		saved = EEXIST;
		goto fail_open;
	}
	fd_path(src_fd, sp, sizeof(sp));
	fd_path(tfd, tp, sizeof(tp));
	if (mount(sp, tp, NULL, MS_BIND, NULL) < 0) {
		saved = errno;
		close(tfd);
		return set_err(err, errlen, saved, "cannot bind-mount %s: %s",
			       name, strerror(saved));
	}
	close(tfd);
	mfd = openat(dirfd, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
	if (mfd < 0 || fstat(mfd, &st) < 0 || bindmount_id(mfd, &id) < 0 ||
	    id == dir_id || st.st_ino != src.st_ino ||
	    st.st_dev != src.st_dev) {
		saved = mfd < 0 ? errno : EBUSY;
		if (mfd >= 0)
			close(mfd);
		bindmount_detach_at(dirfd, name, NULL, 0);
		return set_err(err, errlen, saved,
			       "%s: the new mount is not where it was made: %s",
			       name, strerror(saved));
	}
	fd_path(mfd, tp, sizeof(tp));
	if (mount(NULL, tp, NULL,
		  MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV,
		  NULL) < 0) {
		saved = errno;
		detach_fd(mfd);
		close(mfd);
		return set_err(err, errlen, saved,
			       "cannot make %s read-only: %s", name,
			       strerror(saved));
	}
	close(mfd);
	return 0;
fail_open:
	if (tfd >= 0)
		close(tfd);
	return set_err(err, errlen, saved, "cannot use %s as a mount point: %s",
		       name, strerror(saved));
}

/* --- everything below a directory ---------------------------------------------
 */

/* Open REL (components separated by '/') below BASE_FD, never following a
 * symlink; the last component O_PATH (a mount on it is crossed into). */
static int walk(int base_fd, const char *rel)
{
	char buf[PATH_MAX], *comp, *next;
	int cur, fd;

	if (snprintf(buf, sizeof(buf), "%s", rel) >= (int)sizeof(buf)) {
		errno = ENAMETOOLONG;
		return -1;
	}
	cur = fcntl(base_fd, F_DUPFD_CLOEXEC, 0);
	for (comp = buf; cur >= 0 && comp; comp = next) {
		next = strchr(comp, '/');
		if (next)
			*next++ = '\0';
		if (!*comp || !strcmp(comp, ".") || !strcmp(comp, "..")) {
			close(cur);
			errno = EINVAL;
			return -1;
		}
		fd = openat(cur, comp,
			    O_PATH | O_NOFOLLOW | O_CLOEXEC |
				(next ? O_DIRECTORY : 0));
		close(cur);
		cur = fd;
	}
	return cur;
}

struct listed {
	uint64_t id;
	char *rel;
};

/* The mounts below BPATH that SELECT picks, in mountinfo's order. */
static struct listed *list_below(const char *bpath,
				 bool (*select)(const char *, void *),
				 void *arg, size_t *ret_n)
{
	struct listed *l = NULL, *nl;
	char *text = read_mountinfo(), *line, *save = NULL;
	size_t n = 0;

	if (!text)
		return NULL;
	for (line = strtok_r(text, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save)) {
		struct bindmount_info info;
		const char *rel;

		if (bindmount_parse_line(line, &info) < 0)
			continue;
		rel = bindmount_below(bpath, info.point);
		if (!rel || (select && !select(rel, arg)))
			continue;
		nl = realloc(l, sizeof(*l) * (n + 1));
		if (!nl)
			goto fail;
		l = nl;
		l[n].id = info.id;
		l[n].rel = strdup(rel);
		if (!l[n].rel)
			goto fail;
		n++;
	}
	free(text);
	*ret_n = n;
	if (!l)
		l = calloc(1, sizeof(*l)); /* empty, not an error */
	return l;
fail:
	while (n-- > 0)
		free(l[n].rel);
	free(l);
	free(text);
	errno = ENOMEM;
	return NULL;
}

static void listed_free(struct listed *l, size_t n)
{
	size_t i;

	for (i = 0; l && i < n; i++)
		free(l[i].rel);
	free(l);
}

int bindmount_detach_under(int base_fd,
			   bool (*select)(const char *rel, void *arg),
			   void *arg, char *err, size_t errlen)
{
	char p[32], bpath[PATH_MAX], left[PATH_MAX] = "";
	struct listed *l;
	ssize_t len;
	size_t n, i;
	int round, total = 0, saved = 0;

	fd_path(base_fd, p, sizeof(p));
	len = readlink(p, bpath, sizeof(bpath) - 1);
	if (len <= 0 || bpath[0] != '/')
		return set_err(err, errlen, len < 0 ? errno : EINVAL,
			       "cannot tell where the directory is: %s",
			       len < 0 ? strerror(errno) : "not a path");
	bpath[len] = '\0';
	for (round = 0; round < BINDMOUNT_ROUNDS; round++) {
		int progress = 0;

		l = list_below(bpath, select, arg, &n);
		if (!l)
			return set_err(err, errlen, errno,
				       "cannot read /proc/self/mountinfo: %s",
				       strerror(errno));
		if (n == 0) {
			listed_free(l, n);
			return total;
		}
		/* Later lines are mounts made later: those stacked on or
		 * nested in earlier ones. */
		for (i = n; i-- > 0;) {
			uint64_t id;
			int fd = walk(base_fd, l[i].rel);

			if (fd < 0) {
				saved = errno;
				snprintf(left, sizeof(left), "%s", l[i].rel);
				continue;
			}
			if (bindmount_id(fd, &id) == 0 && id == l[i].id) {
				if (detach_fd(fd) == 0) {
					progress++;
					total++;
				} else {
					saved = errno;
					snprintf(left, sizeof(left), "%s",
						 l[i].rel);
				}
			} else {
				saved = EAGAIN; /* moved, or under another */
				snprintf(left, sizeof(left), "%s", l[i].rel);
			}
			close(fd);
		}
		listed_free(l, n);
		if (!progress)
			break;
	}
	return set_err(err, errlen, saved ? saved : EBUSY,
		       "cannot unmount %s: %s", left[0] ? left : "a mount",
		       strerror(saved ? saved : EBUSY));
}
