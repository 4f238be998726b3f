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

/* Read PATH (at most MAX bytes) as the calling process. Returns the
 * NUL-terminated contents (caller frees), or NULL with errno and a short
 * REASON: strerror(errno), "not a regular file", "contains a NUL byte" or
 * "larger than MAX bytes". */
char *smallfile_read(const char *path, size_t max, char *reason,
		     size_t reasonlen);

#endif /* IOSTAGE_SMALLFILE_H */
