/* copytree.h - copy a file or a directory tree, fd-relative and faithfully.
 *
 * Used by the stage worker (iostaged --stage-worker), which runs as the job's
 * user; the code itself assumes nothing about privileges.
 *
 * What is copied:
 *   - regular files: contents (copy_file_range, falling back to read/write
 *     with a 1 MiB buffer), fsync'ed; mode (07777) and mtime/atime kept;
 *   - directories: recursively; mode and times applied after the contents;
 *   - symlinks: re-created as symlinks with the same target, never followed;
 *   - fifos, sockets and devices: skipped, each reported through ->note.
 * Hard links are copied as separate files; ownership is whoever runs the
 * copy. Only the top-level SRC may be a symlink (it is followed, like
 * `cp -r SRC`): the tree below is walked with O_NOFOLLOW, and a directory
 * swapped for a symlink while we walk makes the copy fail, never escape.
 *
 * Error messages are one line naming the file, in two shapes callers may
 * rely on: "cannot read SRCPATH: REASON" for anything on the source side and
 * "cannot write DSTPATH: REASON" for the destination (errno is kept, so
 * ENOSPC/EDQUOT can be told apart), where DSTPATH starts with opts->dst_label.
 */
#ifndef IOSTAGE_COPYTREE_H
#define IOSTAGE_COPYTREE_H

#include <stddef.h>
#include <stdint.h>

#define COPYTREE_MAX_DEPTH 256          /* directory levels below SRC */
#define COPYTREE_PATH_MAX 4096          /* longest relative path copied */
#define COPYTREE_BUF_SIZE (1024 * 1024) /* read/write fallback buffer */

struct copytree_stats {
	uint64_t bytes;    /* regular file bytes */
	uint64_t files;    /* regular files */
	uint64_t dirs;     /* directories, SRC included when it is one */
	uint64_t symlinks;
	uint64_t skipped;  /* fifos, sockets, devices */
};

struct copytree_opts {
	/* Called after every chunk (at most 1 MiB) and every entry with the
	 * running totals; keep it cheap (throttle inside). May be NULL. */
	void (*progress)(const struct copytree_stats *stats, void *arg);
	/* Called for each skipped entry with its source path and a short
	 * reason ("fifo skipped"). May be NULL. */
	void (*note)(const char *src_path, const char *what, void *arg);
	void *arg;
	/* How destination paths are named in messages (e.g. the final,
	 * published path instead of the temporary name). NULL: dst_name. */
	const char *dst_label;
};

/* Walk SRC without copying: count what copytree_copy would copy. Returns 0
 * with *ret filled, or -1 with errno and "cannot read PATH: REASON" in err;
 * *ret untouched on failure. */
int copytree_measure(const char *src, struct copytree_stats *ret, char *err,
		     size_t errlen);

/* Copy SRC (a file or a directory tree) to the new entry DST_NAME (one path
 * component, must not exist) under the directory DST_DIRFD. OPTS may be
 * NULL. Returns 0 with *ret_stats (may be NULL) filled, or -1 with errno and
 * a one-line message in err. On failure whatever was created under DST_NAME
 * is left for the caller to remove (rmtree_at), because the caller decides
 * where partial copies go. */
int copytree_copy(const char *src, int dst_dirfd, const char *dst_name,
		  const struct copytree_opts *opts,
		  struct copytree_stats *ret_stats, char *err, size_t errlen);

#endif /* IOSTAGE_COPYTREE_H */
