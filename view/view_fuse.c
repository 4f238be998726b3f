/* view_fuse.c - the libfuse callbacks of the spread view (see
 * view_fuse.h).
 *
 * Paths come from libfuse as "/a/b" and are looked up in the listing's
 * hash index as "a/b"; readdir hands out offsets (".", "..", then the
 * children in order) so a large directory is listed in as many calls as
 * the kernel's buffer needs rather than held whole. The inode numbers
 * are the listing's indexes + 1 (use_ino), stable for the job.
 */
#define FUSE_USE_VERSION 35
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fuse.h>

#include "view/view_fuse.h"
#include "view/view_xattr.h"

struct view_fuse {
	const struct view_tree *tree;
	struct view_source *vs;
	const struct view_xattr *xattr; /* NULL: no attributes */
	uid_t uid;
	gid_t gid;
};

static struct view_fuse *ctx(void)
{
	return fuse_get_context()->private_data;
}

/* PATH's index in the tree, or -1. */
static long lookup(const struct view_fuse *v, const char *path)
{
	if (*path == '/')
		path++;
	return view_tree_find(v->tree, path, strlen(path));
}

static void fill_stat(const struct view_fuse *v, size_t i, struct stat *st)
{
	const struct manifest_entry *e = view_tree_entry(v->tree, i);

	memset(st, 0, sizeof(*st));
	st->st_ino = (ino_t)i + 1;
	st->st_uid = v->uid;
	st->st_gid = v->gid;
	st->st_blksize = 4096;
	switch (e->type) {
	case MANIFEST_DIR:
		st->st_mode = S_IFDIR | (e->mode & 0555);
		st->st_nlink = 2 + view_tree_subdirs(v->tree, i);
		st->st_size = 4096;
		break;
	case MANIFEST_SYMLINK:
		st->st_mode = S_IFLNK | 0777;
		st->st_nlink = 1;
		st->st_size = (off_t)e->size;
		break;
	default:
		st->st_mode = S_IFREG | (e->mode & 0555);
		st->st_nlink = 1;
		st->st_size = (off_t)e->size;
		break;
	}
	st->st_blocks = (blkcnt_t)((e->size + 511) / 512);
	st->st_mtim.tv_sec = (time_t)(e->mtime_ns / 1000000000);
	st->st_mtim.tv_nsec = (long)(e->mtime_ns % 1000000000);
	if (st->st_mtim.tv_nsec < 0) {
		st->st_mtim.tv_sec--;
		st->st_mtim.tv_nsec += 1000000000;
	}
	st->st_atim = st->st_ctim = st->st_mtim;
}

static void *vf_init(struct fuse_conn_info *conn, struct fuse_config *cfg)
{
	/* Reads of up to a megabyte (the kernel sizes its requests by
	 * max_pages, which libfuse derives from max_write): a peer's range
	 * costs a round trip each, better few and large. */
	conn->max_write = VIEW_FUSE_IO_MAX;
	conn->max_readahead = VIEW_FUSE_IO_MAX;
	cfg->use_ino = 1;
	cfg->entry_timeout = VIEW_FUSE_TIMEOUT_S;
	cfg->attr_timeout = VIEW_FUSE_TIMEOUT_S;
	cfg->negative_timeout = VIEW_FUSE_TIMEOUT_S;
	cfg->kernel_cache = 1;
	cfg->direct_io = 0;
	/* iostaged waits for this line before it stacks the overlay, whose
	 * mount asks us for the root: a view that never answers then fails
	 * the dataset instead of holding iostaged in mount(2). */
	if (write(STDOUT_FILENO, "ready\n", 6) != 6)
		(void)0; /* nobody listens (started by hand): fine */
	return ctx();
}

static int vf_getattr(const char *path, struct stat *st,
		      struct fuse_file_info *fi)
{
	struct view_fuse *v = ctx();
	long i = lookup(v, path);

	(void)fi;
	if (i < 0)
		return -ENOENT;
	fill_stat(v, (size_t)i, st);
	return 0;
}

static int vf_readdir(const char *path, void *buf, fuse_fill_dir_t filler,
		      off_t off, struct fuse_file_info *fi,
		      enum fuse_readdir_flags flags)
{
	struct view_fuse *v = ctx();
	long i = lookup(v, path);
	const uint32_t *kids;
	struct stat st;
	size_t n;

	(void)fi;
	(void)flags;
	if (i < 0)
		return -ENOENT;
	if (view_tree_entry(v->tree, (size_t)i)->type != MANIFEST_DIR)
		return -ENOTDIR;
	view_tree_children(v->tree, (size_t)i, &kids, &n);
	for (off_t k = off < 0 ? 0 : off; (size_t)k < n + 2; k++) {
		const char *name;

		if (k < 2) {
			memset(&st, 0, sizeof(st));
			st.st_mode = S_IFDIR;
			name = k == 0 ? "." : "..";
		} else {
			fill_stat(v, kids[k - 2], &st);
			name = view_tree_name(v->tree, kids[k - 2]);
		}
		if (filler(buf, name, &st, k + 1, 0))
			break;
	}
	return 0;
}

static int vf_open(const char *path, struct fuse_file_info *fi)
{
	struct view_fuse *v = ctx();
	struct view_file *f;
	long i;
	int r;

	if ((fi->flags & O_ACCMODE) != O_RDONLY ||
	    (fi->flags & (O_TRUNC | O_CREAT)))
		return -EROFS;
	i = lookup(v, path);
	if (i < 0)
		return -ENOENT;
	r = view_source_open(v->vs, (size_t)i, &f);
	if (r < 0)
		return r;
	fi->fh = (uint64_t)(uintptr_t)f;
	fi->keep_cache = 1;
	return 0;
}

static int vf_read(const char *path, char *buf, size_t size, off_t off,
		   struct fuse_file_info *fi)
{
	struct view_file *f = (struct view_file *)(uintptr_t)fi->fh;

	(void)path;
	if (off < 0)
		return -EINVAL;
	return (int)view_source_read(ctx()->vs, f, buf, size, (uint64_t)off);
}

static int vf_release(const char *path, struct fuse_file_info *fi)
{
	(void)path;
	view_source_release(ctx()->vs, (struct view_file *)(uintptr_t)fi->fh);
	return 0;
}

static int vf_readlink(const char *path, char *buf, size_t size)
{
	struct view_fuse *v = ctx();
	long i = lookup(v, path);

	if (i < 0)
		return -ENOENT;
	return view_source_readlink(v->vs, (size_t)i, buf, size);
}

/* The one attribute a file may have: where this node's chunks of a cut
 * file are (view_xattr.h). Not listed by listxattr, which the view does
 * not answer: a copy of the tree (cp -a, rsync -X) must not carry it. */
static int vf_getxattr(const char *path, const char *name, char *value,
		       size_t size)
{
	struct view_fuse *v = ctx();
	long i = lookup(v, path);

	if (i < 0)
		return -ENOENT;
	if (!v->xattr)
		return -ENODATA;
	return view_xattr_get(v->xattr, (size_t)i, name, value, size);
}

/* Everything that would change the tree. The kernel refuses most of it
 * already (MS_RDONLY); this is for a mount made without it. */
static int vf_rofs_mode(const char *path, mode_t mode)
{
	(void)path;
	(void)mode;
	return -EROFS;
}

static int vf_rofs_path(const char *path)
{
	(void)path;
	return -EROFS;
}

static int vf_rofs_two(const char *from, const char *to)
{
	(void)from;
	(void)to;
	return -EROFS;
}

static int vf_rofs_rename(const char *from, const char *to, unsigned flags)
{
	(void)flags;
	return vf_rofs_two(from, to);
}

static int vf_rofs_chmod(const char *path, mode_t mode,
			 struct fuse_file_info *fi)
{
	(void)fi;
	return vf_rofs_mode(path, mode);
}

static int vf_rofs_chown(const char *path, uid_t uid, gid_t gid,
			 struct fuse_file_info *fi)
{
	(void)uid;
	(void)gid;
	(void)fi;
	return vf_rofs_path(path);
}

static int vf_rofs_truncate(const char *path, off_t size,
			    struct fuse_file_info *fi)
{
	(void)size;
	(void)fi;
	return vf_rofs_path(path);
}

static int vf_rofs_create(const char *path, mode_t mode,
			  struct fuse_file_info *fi)
{
	(void)fi;
	return vf_rofs_mode(path, mode);
}

static int vf_rofs_mknod(const char *path, mode_t mode, dev_t dev)
{
	(void)dev;
	return vf_rofs_mode(path, mode);
}

static const struct fuse_operations view_ops = {
	.init = vf_init,
	.getattr = vf_getattr,
	.readdir = vf_readdir,
	.open = vf_open,
	.read = vf_read,
	.release = vf_release,
	.readlink = vf_readlink,
	.getxattr = vf_getxattr,
	.mkdir = vf_rofs_mode,
	.mknod = vf_rofs_mknod,
	.create = vf_rofs_create,
	.unlink = vf_rofs_path,
	.rmdir = vf_rofs_path,
	.symlink = vf_rofs_two,
	.link = vf_rofs_two,
	.rename = vf_rofs_rename,
	.chmod = vf_rofs_chmod,
	.chown = vf_rofs_chown,
	.truncate = vf_rofs_truncate,
};

int view_fuse_run(int fuse_fd, const struct view_tree *t,
		  struct view_source *vs, const struct view_xattr *xattr,
		  bool signals, char *err, size_t errlen)
{
	struct view_fuse v = { .tree = t,
			       .vs = vs,
			       .xattr = xattr,
			       .uid = getuid(),
			       .gid = getgid() };
	struct fuse_args args = FUSE_ARGS_INIT(0, NULL);
	struct fuse_loop_config loop = { .clone_fd = 0,
					 .max_idle_threads = 10 };
	char mountpoint[32];
	struct fuse *f;
	int r = -1;

	snprintf(mountpoint, sizeof(mountpoint), "/dev/fd/%d", fuse_fd);
	if (fuse_opt_add_arg(&args, "iostage-view") < 0) {
		snprintf(err, errlen, "out of memory");
		close(fuse_fd);
		return -1;
	}
	f = fuse_new(&args, &view_ops, sizeof(view_ops), &v);
	if (!f) {
		snprintf(err, errlen, "fuse_new failed");
		close(fuse_fd);
		goto out;
	}
	/* libfuse takes /dev/fd/N as the fd root mounted: no mount here */
	if (fuse_mount(f, mountpoint) < 0) {
		snprintf(err, errlen, "--fuse-fd %d: not an open /dev/fuse",
			 fuse_fd);
		close(fuse_fd);
		goto destroy;
	}
	if (signals && fuse_set_signal_handlers(fuse_get_session(f)) < 0) {
		snprintf(err, errlen, "cannot set signal handlers");
		goto unmount;
	}
	/* 0 at unmount, the signal's number after one: both are the end
	 * asked for */
	r = fuse_loop_mt(f, &loop);
	if (r < 0)
		snprintf(err, errlen, "fuse session: %s", strerror(-r));
	r = r < 0 ? -1 : 0;
	if (signals)
		fuse_remove_signal_handlers(fuse_get_session(f));
unmount:
	fuse_unmount(f);
destroy:
	fuse_destroy(f);
out:
	fuse_opt_free_args(&args);
	return r;
}
