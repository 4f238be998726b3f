/* pathsafe.h - checks on paths that came from users.
 *
 * Nothing a user typed reaches open() in a root process before passing
 * these: absolute, no ".." or "." components, no empty components after
 * normalization, bounded length, no control characters.
 */
#ifndef IOSTAGE_PATHSAFE_H
#define IOSTAGE_PATHSAFE_H

#include <stddef.h>

/* Check PATH and write its normalized form (duplicate and trailing '/'
 * removed) to out (size outlen). Returns 0, or -1 with a reason in err such
 * as "not an absolute path", "contains a '..' component",
 * "longer than 1023 bytes", "contains a control character". */
int pathsafe_normalize(const char *path, char *out, size_t outlen, char *err,
		       size_t errlen);

/* Is NAME usable as one path component (dataset/output names, job ids)?
 * [A-Za-z0-9_.-], not "." or "..", 1..maxlen-1 bytes. Returns 1 or 0. */
int pathsafe_is_component(const char *name, size_t maxlen);

/* Is REL a path that stays below whatever directory it is resolved from:
 * relative (no leading '/'), every component non-empty and neither "." nor
 * "..", no control characters, 1..maxlen-1 bytes? Used for the relative
 * paths of files under a job's output directory. Returns 1 or 0. */
int pathsafe_is_relative(const char *rel, size_t maxlen);

/* Does PATH lie inside ROOT (both normalized)? Returns 1 or 0. */
int pathsafe_is_under(const char *path, const char *root);

#endif /* IOSTAGE_PATHSAFE_H */
