/* worker.h - `iostaged --stage-worker SRC DSTDIR NAME`: copy one dataset.
 *
 * Runs as the job's user (started by stage.c with dropped privileges; it
 * can also be run by hand). Copies SRC (a directory tree or one file) to
 * DSTDIR/.NAME.partial, fsyncing every file, and renames it to DSTDIR/NAME
 * only when everything succeeded; on failure the partial copy is removed.
 * DSTDIR is created (0700) if missing.
 *
 * Talks JSON lines on stdout:
 *   {"total_bytes":N,"total_files":N}        after walking SRC
 *   {"bytes":N,"files":N}                    progress, at most ~4 per second
 *   {"note":"SRC/x: fifo skipped"}           entries that are not copied
 *   {"ok":true,"bytes":N,"files":N,...}      or
 *   {"ok":false,"error":"cannot read /pfs/ds/a.bin: Permission denied"}
 * With IOSTAGE_STAGE_GATE set in the environment it waits, after the totals
 * line, for "go" on stdin before writing anything (the daemon's capacity
 * check); anything else cancels. Exit status 0 on success, 1 on failure, 2
 * on bad usage.
 */
#ifndef IOSTAGE_DAEMON_WORKER_H
#define IOSTAGE_DAEMON_WORKER_H

/* ARGV[0] is "--stage-worker", then SRC DSTDIR NAME. Returns the exit
 * status. */
int worker_main(int argc, char **argv);

#endif /* IOSTAGE_DAEMON_WORKER_H */
