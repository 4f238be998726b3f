/* preload_fds.c - what the shim knows about each open file descriptor.
 *
 * A fixed table indexed by fd (SHIM_MAX_FDS entries, zero pages until
 * touched): the file's class, whether it is a checkpoint, and the offsets
 * that tell consecutive and sequential accesses apart. Entries are written
 * by whichever thread opens, reads or closes the fd; two threads using one
 * fd at once may blur its CONSEC/SEQ counts, never the byte counts.
 *
 * Output files written through the shim are also listed by path (bounded:
 * SHIM_MAX_FILES paths in a SHIM_FILE_ARENA arena, claimed with atomic
 * bumps), for the daemon's shared vs file-per-process counts.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdatomic.h>
#include <string.h>

#include "shim/preload.h"

struct shim_fd shim_fds[SHIM_MAX_FDS];

struct shim_file {
	uint32_t path_off;
	uint32_t path_len;
	uint8_t cls;
	atomic_bool ready;              /* path copied: readable */
	_Atomic uint64_t written;
};

static struct shim_file files[SHIM_MAX_FILES];
static atomic_uint nfiles;
static atomic_ushort files_gen;
static char arena[SHIM_FILE_ARENA];
static atomic_uint arena_used;

static int16_t file_entry(const char *path, enum shim_class cls)
{
	size_t len = strlen(path);
	unsigned n = atomic_load(&nfiles), off, i;

	if (n > SHIM_MAX_FILES)
		n = SHIM_MAX_FILES;
	for (i = 0; i < n; i++)
		if (atomic_load(&files[i].ready) &&
		    files[i].path_len == len &&
		    memcmp(arena + files[i].path_off, path, len) == 0)
			return (int16_t)i;
	if (len >= SHIM_FILE_ARENA)
		return -1;
	i = atomic_fetch_add(&nfiles, 1);
	if (i >= SHIM_MAX_FILES)
		return -1;
	off = atomic_fetch_add(&arena_used, (unsigned)len + 1);
	if (off + len + 1 > SHIM_FILE_ARENA) {
		/* No room for the path: the slot stays unready (skipped). */
		return -1;
	}
	memcpy(arena + off, path, len + 1);
	files[i].path_off = off;
	files[i].path_len = (uint32_t)len;
	files[i].cls = (uint8_t)cls;
	atomic_store(&files[i].ready, true);
	return (int16_t)i;
}

enum shim_class shim_fd_classify(int dirfd, const char *path, bool *ret_ckpt,
				 const char **ret_abs)
{
	const struct shim_fd *dir;

	*ret_ckpt = false;
	*ret_abs = NULL;
	if (path[0] == '/' || dirfd == AT_FDCWD)
		return shim_classify(path, ret_ckpt, ret_abs);
	/* openat(dirfd, "rel"): the directory's class, if we saw it open. */
	dir = shim_fd_get(dirfd);
	if (!dir || !dir->open)
		return SHIM_CLASS_OTHER;
	*ret_ckpt = dir->ckpt;
	return (enum shim_class)dir->cls;
}

void shim_fd_opened(int fd, enum shim_class cls, bool ckpt, const char *abs,
		    int flags)
{
	struct shim_fd *e = shim_fd_get(fd);

	if (!e)
		return;
	e->cls = (uint8_t)cls;
	e->ckpt = ckpt;
	e->last_op = 0;
	e->pos = 0;
	e->read_end = 0;
	e->write_end = 0;
	e->append = (flags & O_APPEND) != 0;
	e->file = -1;
	e->file_gen = atomic_load(&files_gen);
	if (cls == SHIM_CLASS_OUTPUT && abs && (flags & (O_WRONLY | O_RDWR)))
		e->file = file_entry(abs, cls);
	e->open = 1;
}

void shim_fd_dup(int oldfd, int newfd)
{
	struct shim_fd *from = shim_fd_get(oldfd), *to = shim_fd_get(newfd);

	if (!to)
		return;
	if (from && from->open)
		*to = *from;
	else
		memset(to, 0, sizeof(*to));
}

void shim_fd_closed(int fd)
{
	struct shim_fd *e = shim_fd_get(fd);

	if (e)
		e->open = 0;
}

void shim_fd_closed_range(unsigned first, unsigned last)
{
	for (unsigned fd = first; fd <= last && fd < SHIM_MAX_FDS; fd++)
		if (shim_fds[fd].open) /* read first: no needless page copy */
			shim_fds[fd].open = 0;
}

void shim_fd_reset_files(void)
{
	atomic_store(&nfiles, 0);
	atomic_store(&arena_used, 0);
	atomic_fetch_add(&files_gen, 1);
	for (unsigned i = 0; i < SHIM_MAX_FILES; i++) {
		atomic_store(&files[i].ready, false);
		atomic_store(&files[i].written, 0);
	}
}

void shim_fd_file_written(const struct shim_fd *e, uint64_t n)
{
	if (e->file >= 0 && e->file < SHIM_MAX_FILES &&
	    e->file_gen == atomic_load_explicit(&files_gen,
						memory_order_relaxed))
		atomic_fetch_add_explicit(&files[e->file].written, n,
					  memory_order_relaxed);
}

size_t shim_files_count(void)
{
	unsigned n = atomic_load(&nfiles);

	return n > SHIM_MAX_FILES ? SHIM_MAX_FILES : n;
}

bool shim_files_get(size_t i, const char **ret_path, enum shim_class *ret_cls,
		    uint64_t *ret_written)
{
	if (i >= SHIM_MAX_FILES || !atomic_load(&files[i].ready))
		return false;
	*ret_path = arena + files[i].path_off;
	*ret_cls = (enum shim_class)files[i].cls;
	*ret_written = atomic_load(&files[i].written);
	return true;
}
