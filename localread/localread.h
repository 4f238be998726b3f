/* localread.h - the inside of libiostage-localread.so: a task reads this
 * node's chunks of a spread dataset's cut files straight from their
 * files, not through the view (docs/STAGING.md, "Reading a node's own
 * chunks").
 *
 * The spread view serves every byte of a cut file through FUSE: the
 * task's read is copied from the chunk file into the view, from the view
 * into the FUSE file's page cache and from there to the task, in 4 KiB
 * pages on one of the view's threads. This library, preloaded by the
 * SPANK plugin into the tasks of a job with a spread dataset, asks each
 * large file the task opens read-only whether it is such a file (the
 * view's user.iostage.chunks, common/fs/chunkxattr.h); for one that is,
 * read() and pread() take the bytes of this node's chunks from the
 * chunk files (opened as the task's user, beneath the directory the view
 * named, checked regular and of the chunk's length) and everything else
 * from the view, as before. mmap, readv, stdio and fds it did not see
 * opened are left to the view: the same bytes, only not faster.
 *
 *   interpose.c  the exported libc functions, start-up and fork
 *   fdtable.c    which fds are such files, and each one's state
 *   chunkread.c  a read cut at chunk boundaries, each piece from its
 *                chunk file or the view
 *
 * Rules: never a wrong byte, never an error the view would not have
 * given (a chunk that cannot be read here is read through the view);
 * never change errno or a result the application sees; the library's
 * own I/O is raw system calls, so it never re-enters its interposers.
 * IOSTAGE_LOCALREAD=0 in the environment turns it off.
 */
#ifndef IOSTAGE_LOCALREAD_H
#define IOSTAGE_LOCALREAD_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "common/fs/chunkxattr.h"

#define LR_EXPORT __attribute__((visibility("default")))

#define LR_MAX_FDS 65536 /* fds above are read through the view */
/* Files smaller are read through the view: a cut file's chunks are at
 * least a MiB (SPREAD_CHUNK_MIN), and asking a small file costs its
 * open a FUSE round trip. */
#define LR_MIN_SIZE (UINT64_C(1) << 20)
#define LR_SLOTS 4 /* chunk files kept open per file */

/* A chunk file kept open, and the reads using it right now. */
struct lr_slot {
	uint64_t index;
	int fd; /* -1: empty */
	unsigned users;
};

/* A cut file of a view, open on one fd of the task. */
struct lr_file {
	atomic_uint refs;    /* the table's, and each read's */
	dev_t dev;           /* of the fd when opened: a read checks it is */
	ino_t ino;           /* still that file (an fd reused unseen) */
	pthread_mutex_t pos; /* read(): the fd's offset, read and advanced */
	char *value;         /* the attribute's value; x points into it */
	struct chunkxattr x;
	int dirfd; /* x.dir, O_PATH */
	pthread_mutex_t slots_mu;
	struct lr_slot slots[LR_SLOTS];
	unsigned next_slot;        /* the next to reuse */
	_Atomic uint8_t *unusable; /* [nchunks]: 1 once a chunk failed here */
};

/* fdtable.c */

/* The app opened FD with FLAGS: forget what FD was before and, when it
 * is a cut file of a view opened read-only, remember it. Keeps errno. */
void lr_opened(int fd, int flags);
/* FD is closed (or replaced by dup2): forget it. Keeps errno. */
void lr_closed(int fd);
/* Every fd from LO to HI, both included. Keeps errno. */
void lr_closed_range(unsigned lo, unsigned hi);
/* FD's file, referenced (lr_put), when FD is a remembered cut file and
 * still the same file; else NULL. Keeps errno. */
struct lr_file *lr_get(int fd);
void lr_put(struct lr_file *f);
/* Around fork (pthread_atfork): the table whole in the child. */
void lr_fork_prepare(void);
void lr_fork_parent(void);
void lr_fork_child(void);
/* The library is on (set once at start-up). */
extern bool lr_enabled;

/* chunkread.c */

/* Up to N bytes at OFF of F, open on FD: the pieces in this node's
 * chunks from their files, the rest from FD (the view). As pread(2):
 * the bytes read (fewer only at the file's end), or -1 with errno from
 * the view's read. errno is kept when it succeeds. */
ssize_t lr_pread(struct lr_file *f, int fd, char *buf, size_t n, uint64_t off);
/* Close F's chunk files (its last reference went). */
void lr_release_chunks(struct lr_file *f);

#endif /* IOSTAGE_LOCALREAD_H */
