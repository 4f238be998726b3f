/* smallfile.h - read a small regular file whole, with a size limit.
 *
 * For configuration and profile files: they are read in one piece, must be
 * regular files, may not exceed a limit (checked while reading, since a
 * file can grow after fstat) and may not contain NUL bytes, which would hide
 * the rest of the text from a parser.
 */
#ifndef IOSTAGE_SMALLFILE_H
#define IOSTAGE_SMALLFILE_H

#include <stddef.h>
#include <sys/stat.h>

/* Read PATH (at most MAX bytes) as the calling process. Returns the
 * NUL-terminated contents (caller frees), or NULL with errno and a short
 * REASON: strerror(errno), "not a regular file", "contains a NUL byte" or
 * "larger than MAX bytes". */
char *smallfile_read(const char *path, size_t max, char *reason,
		     size_t reasonlen);

/* The same for NAME relative to the directory DIRFD (or AT_FDCWD), opened
 * with OPEN_FLAGS added (e.g. O_NOFOLLOW for files in directories a user
 * could reach). With RET_ST non-NULL, the file's stat is stored there on
 * success, so callers can check its owner. */
char *smallfile_read_at(int dirfd, const char *name, int open_flags, size_t max,
			struct stat *ret_st, char *reason, size_t reasonlen);

#endif /* IOSTAGE_SMALLFILE_H */
