/* outfiles.h - which processes of a job wrote which output file.
 *
 * Every traced process lists, in its shim_report, the output files it
 * wrote (docs/RECORDS.md). A file listed by more than one process of the
 * job is shared; by exactly one, file-per-process. This table remembers,
 * per distinct path, the first writer's pid, whether another pid wrote it
 * too and the bytes written, and counts shared and fpp files per output
 * (a path under the output's node-local directory or its PFS
 * destination). It is bounded: past MAX distinct paths new paths are not
 * remembered, only counted as dropped. Pure and single-threaded: the
 * caller locks.
 */
#ifndef IOSTAGE_OUTFILES_H
#define IOSTAGE_OUTFILES_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define OUTFILES_MAX_DEFAULT 4096 /* distinct paths per job */

struct outfiles;

/* Per output (or for the paths under none of them). */
struct outfiles_count {
	uint64_t shared, fpp; /* files written by > 1 / exactly 1 process */
	uint64_t written;     /* bytes the processes said they wrote */
};

/* An empty table of at most MAX (>= 1) paths; NULL on ENOMEM/EINVAL. */
struct outfiles *outfiles_create(size_t max);

/* Free T; NULL is a no-op. */
void outfiles_destroy(struct outfiles *t);

/* Process PID wrote WRITTEN bytes to PATH (absolute, normalized). The
 * same pid again (a report per exec image) adds bytes, not a writer.
 * 0; 1 when PATH was new but the table is full (not remembered, counted
 * in outfiles_dropped); -1 on EINVAL (NULL or relative path) or ENOMEM. */
int outfiles_add(struct outfiles *t, const char *path, pid_t pid,
		 uint64_t written);

/* Distinct paths remembered / not remembered because the table was full. */
size_t outfiles_size(const struct outfiles *t);
uint64_t outfiles_dropped(const struct outfiles *t);

/* Count the remembered paths per output: PREFIXES[2*i] and [2*i+1] are
 * output i's directories (either may be NULL or ""); a path belongs to the
 * first output with a prefix that is the path or one of its parent
 * directories. RET has NOUT + 1 entries (zeroed here); RET[NOUT] counts
 * the paths under no output. */
void outfiles_count(const struct outfiles *t, const char *const *prefixes,
		    size_t nout, struct outfiles_count *ret);

/* Is PREFIX (without a trailing '/', except "/") PATH or a parent
 * directory of it? Lexical. */
int outfiles_under(const char *path, const char *prefix);

#endif /* IOSTAGE_OUTFILES_H */
