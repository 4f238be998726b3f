/* worker.h - `iostaged --stage-worker`: stage one dataset as the job's user.
 *
 * The contract is docs/STAGING.md, "The worker". Started by stage.c with
 * the job user's uid, gid and groups (it can also be run by hand):
 *
 *   iostaged --stage-worker [--threads N] [--verify stat|checksum]
 *            [--previous DIR --manifest-in FD] [--manifest-out FD]
 *            [--check] [--public] [--rate-fd FD]
 *            [--peer HOST:PORT --peer-entry TIER/KEY.vN |
 *             --peers HOST:PORT=TIER/KEY.vN,...
 *             [--munge-socket PATH] [--peer-job J]]
 *            [--spread PLAN --spread-self NAME [--part-budget BYTES]]
 *            [--listing-out FD] SRC DSTDIR
 *
 *   SRC              the dataset (a tree or one file), absolute; walked
 *                    without following symlinks (only SRC itself may be
 *                    one).
 *   DSTDIR           an existing directory; the copy goes to DSTDIR/data
 *                    (which must not exist), its top made 0700 (a single
 *                    file: mode & 0700). Not touched with --check.
 *   --threads N      walk and copy with N threads (1-256, default 16).
 *   --verify V       stat (default): an entry is unchanged when its type,
 *                    size, mtime and mode are; checksum: its content hash
 *                    (xxh3-128, computed during the walk) too.
 *   --previous DIR   an earlier complete copy (its data); files unchanged
 *                    against --manifest-in are hard-linked from DIR.
 *   --manifest-in FD the previous copy's manifest, read to EOF from the
 *                    inherited FD (3 or more). Needs --previous or --check.
 *   --manifest-out FD write the new copy's manifest to FD after the copy.
 *   --check          only compare SRC with --manifest-in; create nothing.
 *   --public         a public entry (run as PublicUser): fail, before
 *                    creating anything, unless every directory above SRC
 *                    is a+x and every entry of SRC is readable by everyone
 *                    (common/fs/publictree.h); the copy's top keeps its mode
 *                    minus write bits instead of being made private.
 *   --rate-fd FD     the page iostaged writes this copy's bytes/s from
 *                    SRC in (daemon/staging/bwgov.h).
 *   --peer HOST:PORT --peer-entry TIER/KEY.vN
 *                    fill from another node: HOST's iostaged (its
 *                    PeerPort) holds version N of this entry on its tier
 *                    TIER. Its manifest (common/net/peerfetch.h, with this
 *                    process's own MUNGE credential, from munged at
 *                    --munge-socket PATH or libmunge's default) is what
 *                    SRC is compared with, and the files equal in it are
 *                    fetched from HOST, one session per copy thread
 *                    (worker_peer.h), instead of read from SRC; a file
 *                    HOST does not give is copied from SRC. Not with
 *                    --previous, --manifest-in or --check. HOST not
 *                    usable at all (down, refusing, no such version):
 *                    a note, then everything from SRC; not a failure.
 *   --peers LIST     the same from several nodes at once (a fill by
 *                    parts, or a spread dataset's part under a new plan;
 *                    worker_peer.h): each file from the first node whose
 *                    manifest lists it; with --previous and --manifest-in.
 *   --peer-job J     with --peer(s): the sessions name job J ("job" in
 *                    fetch_open), which HOST must run, with this user
 *                    and a dataset of this entry, asked from one of its
 *                    nodes; a spread dataset's part is served only so.
 *   --spread PLAN --spread-self NAME
 *                    stage only NAME's part of the tree SRC (a one-file
 *                    SRC is a usage error): the regular files
 *                    spread_owner(PLAN) gives NAME (common/sched/spread.h;
 *                    PLAN as spread_plan_parse reads it, NAME one of its
 *                    nodes), every directory and every symlink. The part
 *                    is what the other options see: the manifests, the
 *                    check, --previous, --peer (a node holding the same
 *                    part), the totals (docs/STAGING.md, "A node's part
 *                    of a spread dataset").
 *   --part-budget BYTES
 *                    with --spread: keep the part's files by descending
 *                    spread_score of NAME until the next would take them
 *                    above BYTES; the rest stay on the PFS.
 *   --listing-out FD write the whole dataset's manifest (no hashes) to FD
 *                    after the walk, before the totals line; --check too.
 *
 * stdout, one JSON object per line, numbers exact (integers):
 *   {"total_bytes":N,"total_files":N,"copy_bytes":N,"copy_files":N,
 *    "unchanged":BOOL}                               after the walk
 *       files = regular files (each path); bytes = their sizes, a
 *       hard-linked inode once; copy_* = what must be copied, i.e. not
 *       unchanged against the manifest (all without one) and not a second
 *       name of a hard-linked inode; unchanged = a manifest was given and
 *       SRC matches it exactly (no entry added, removed or changed).
 *   {"total_bytes":N,"total_files":N,"copy_bytes":N,"copy_files":N,
 *    "source_bytes":N,"unchanged":BOOL}              the same with --peer:
 *       copy_* = what the copy writes (fetched files take space as copied
 *       ones do): every file but the second names of an inode;
 *       source_bytes = what is read from SRC (the files that differ from
 *       the peer's manifest; all of them when the peer cannot be used).
 *   with --spread both end in ,"dataset_bytes":N,"dataset_files":N (the
 *       whole dataset; total_* and copy_* are this node's part), and with
 *       --part-budget in ,"over_budget_files":N,"over_budget_bytes":N
 *       (this node's files the budget leaves out). A part with chunks
 *       of files too large for one node (worker_chunks.h) adds
 *       ,"chunked_files":N,"chunks":N,"chunk_bytes":N (in total_bytes),
 *       and with --part-budget ,"over_budget_chunks":N.
 *   then, with IOSTAGE_STAGE_GATE in the environment (not with --check):
 *       wait for "go\n" on stdin; EOF or anything else: stop, create
 *       nothing, end with {"ok":false,"error":"cancelled before copying"}.
 *   {"note":"SRC/x: fifo skipped"}                   special files, before
 *                                                    copying; with --peer
 *       also "cannot fill from node H:P (REASON): copying everything from
 *       the source" before the totals, and after the copy one line saying
 *       how many files came from SRC instead and the first reason.
 *   {"bytes":N,"files":N}                            progress, ~4 a second:
 *                                                    placed so far
 *   {"ok":true,"bytes":N,"files":N,"linked":N}       last line: bytes and
 *       files placed in the copy (copied or linked: equal to the totals),
 *       linked = files hard-linked from --previous; with --check all 0.
 *   {"ok":true,"bytes":N,"files":N,"linked":0,"fetched":N,
 *    "fetched_bytes":N,"fallbacks":N}                the same with --peer:
 *       fetched = files (and their bytes) that came from the peer,
 *       fallbacks = files the peer did not give, copied from SRC.
 *   A part with chunks ends either in ,"chunks_linked":N,
 *       "chunks_fetched":N,"chunks_fetched_bytes":N,"chunks_copied":N,
 *       "chunks_copied_bytes":N: linked from --previous, given by
 *       another node's part (--peers), copied from SRC.
 *   {"ok":false,"error":"cannot read /pfs/ds/a.bin: Permission denied"}
 *       or the last line on failure; DSTDIR/data is then removed.
 * Exit status 0 on success, 1 on failure, 2 on bad usage (message on
 * stderr).
 */
#ifndef IOSTAGE_DAEMON_WORKER_H
#define IOSTAGE_DAEMON_WORKER_H

/* ARGV[0] is "--stage-worker", then the options and arguments above.
 * Returns the exit status. */
int worker_main(int argc, char **argv);

#endif /* IOSTAGE_DAEMON_WORKER_H */
