/* drain_worker.h - `iostaged --drain-worker LOCALDIR PFSDIR`: copy a job's
 * output files from the tier to the PFS, as the job's user.
 *
 * Started by daemon/staging/drain.c through spawn_as_user (uid, gid and groups
 * of the job's user, nothing of root's). LOCALDIR is TIER/jobs/J/out/NAME,
 * PFSDIR the output's PFS directory (created, 0700, with missing parents when
 * there is something to put in it). Each entry is copied to PFSDIR/REL through
 * a temporary name in the same directory (".iostage-drain.PID.N"), fsync'ed,
 * then renamed over REL, so the PFS never shows a half-written file under its
 * real name. Regular files keep their mode and mtime (the mtime is what makes a
 * later scan skip them); symlinks are re-created as symlinks with the same
 * target and never followed; directories are created with their local mode plus
 * u+rwx; fifos, sockets and devices are skipped. Nothing is ever deleted on the
 * PFS. LOCALDIR is walked with openat(O_NOFOLLOW) one component at a time.
 *
 * Commands on stdin, one JSON object per line, executed in order:
 *   {"file":"REL"}    copy the entry REL (whatever it is now)
 *   {"scan":"REL"}    walk REL ("" = all of LOCALDIR) and copy every entry
 *                     whose PFS copy differs (type, size, mtime, link target)
 * REL must be relative without "." or ".." components (pathsafe); anything
 * else is refused. EOF on stdin: syncfs the PFS and exit 0.
 *
 * Output on stdout, one JSON object per line:
 *   {"path":"REL","ok":true,"bytes":N}          a regular file copied
 *   {"path":"REL","ok":true,"link":true}        a symlink re-created
 *   {"path":"REL","ok":true,"skipped":"fifo"}   not copied, by design
 *   {"path":"REL","ok":true,"gone":true}        vanished before the copy
 *   {"path":"REL","ok":false,"error":"one line naming the file and why"}
 *   {"done":true,"files":N,"bytes":N,"failed":N} after each command
 */
#ifndef IOSTAGE_DAEMON_DRAIN_WORKER_H
#define IOSTAGE_DAEMON_DRAIN_WORKER_H

/* ARGV[0] is "--drain-worker", then LOCALDIR PFSDIR. Returns the exit
 * status: 0, 1 on a fatal error (stdout gone), 2 on bad usage. */
int drain_worker_main(int argc, char **argv);

#endif /* IOSTAGE_DAEMON_DRAIN_WORKER_H */
