/* peerfetch.h - the files of a cached dataset version, fetched from the
 * node that holds it (issue 29: nodes fill each other; docs/STAGING.md,
 * "Filling from another node").
 *
 * A stage worker (running as the job's user) that is told another node
 * holds a version of the entry it builds opens one session per copy
 * thread to that node's iostaged, on its PeerPort:
 *
 *   client -> {"cred":"MUNGE:..."}           a peernet request
 *             (common/net/peernet.h) whose JSON is
 *             {"op":"fetch_open","tier":T,"key":K,"version":N} and
 *             optionally "manifest":false and "job":J (the job the
 *             session reads for); the credential is the
 *             worker's own, i.e. the job's user. Without "version"
 *             (or with 0): the entry's current version on the server,
 *             the highest complete K.vN (the spread view, view/, asks
 *             for a job's part that way: every node names it alike)
 *   server -> {"ok":true,"manifest_bytes":M,"version":N}\n then M bytes:
 *             the version's manifest as manifest_write wrote it (M is
 *             0 with "manifest":false: the client's other sessions do
 *             not need it again; a manifest of a million files is tens
 *             of MB); N the version opened
 *             or {"ok":false,"error":"..."}\n and the connection closes
 *   then any number of
 *   client -> {"path":"REL","size":S}\n      a regular file of the version,
 *                                            relative to its data (for a
 *                                            one-file dataset: ""), of S
 *                                            bytes as the manifest says
 *   server -> {"ok":true,"size":S}\n then S raw bytes (sendfile)
 *             or {"ok":false,"error":"..."}\n (the session goes on): a
 *             path that is not clean and relative (no "." or ".."
 *             components), not a regular file of the version, or one of
 *             another size than S
 *   client -> {"path":"REL","size":S,"off":O,"len":L}\n   a range of it
 *   server -> {"ok":true,"size":S,"off":O,"len":L2}\n then L2 raw bytes,
 *             L2 = min(L, S - O, PEERFETCH_RANGE_MAX); O past S, or one
 *             of "off"/"len" without the other, is refused. A range is
 *             authorized and checked as a whole file is (it is one,
 *             read in part), refusals the same
 *   client -> {"path":"REL","chunk":I,"size":CS,"mtime_ns":"T",
 *              "off":O,"len":L}\n
 *             a range of chunk I of file REL (a spread dataset's file
 *             too large for one node: common/fs/partchunks.h), CS being
 *             the chunk's length (partchunk_extent of the listing's
 *             size) and O, L within it; I a whole number, and only with
 *             "off" and "len"; T, optional, the file's mtime in the
 *             client's listing, in ns since the epoch, as a decimal
 *             string (past 2^53: no JSON number holds it)
 *   server -> {"ok":true,"chunk":I,"size":CS,"off":O,"len":L2}\n then
 *             L2 raw bytes, L2 as for a range, read from the file
 *             partchunk_name(REL, I) of the version's PARTCHUNKS_DIR;
 *             or a refusal (the session goes on) naming the path and
 *             the chunk: REL not clean, a chunk the version does not
 *             hold ("'big.bin' chunk 3: not held here"; a version
 *             without a chunks directory holds none), of another
 *             length ("... 1048576 bytes here, not 999") or, with T, cut
 *             from another state of the file ("... cut from the file
 *             as of mtime 1700000000.000000000, not ..."). The chunk's
 *             file is opened, checked and counted as a file's range is
 *   EOF from the client, PEERFETCH_IDLE_MS without a request, a line
 *   over PEERFETCH_LINE_MAX, or the server stopping ends it (the server
 *   closes the connection: a transfer cut short is the client's sign).
 *
 * The first request is read to its '\n' and no further
 * (peernet_read_line_exact), so the session's lines that follow are
 * never lost with it. Sessions over the server's PeerFetchSessions get
 * the usual one-line refusal at fetch_open: the stage worker makes do
 * with the sessions it has, or copies from the source
 * (daemon/staging/worker_peer.c).
 *
 * The server serves only a published version (K.vN, root's, read-only:
 * never a .build. directory, never one being evicted) of an entry whose
 * owner is the credential's uid, or a public entry (root: any), on a
 * tier of its own (not Shared=yes); another user's entry is answered
 * like a missing one (daemon/staging/cache_serve.c). A spread dataset's
 * part is served only for a job J named: the credential's uid's (or the
 * entry public, or root), asked from an address of one of its nodes, and
 * either one the server runs, holding that entry as one of its
 * datasets, or one Slurm says is running (asked through iostagectld: a
 * node that held the part for an earlier job); a whole entry is checked
 * so when a job is named (daemon/cluster/peer_fetch.c). Files are
 * opened beneath the version's data (chunks beneath its chunks
 * directory) with RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS and must be
 * regular files. Sessions served at once and the bytes per second they
 * send are bounded by the server's configuration.
 *
 * Library code: nothing here logs; errors are one line in err naming the
 * node and the file.
 */
#ifndef IOSTAGE_PEERFETCH_H
#define IOSTAGE_PEERFETCH_H

#include <stddef.h>
#include <stdint.h>

#include "common/net/mauth.h"

#define PEERFETCH_IDLE_MS 30000 /* a session without a request ends */
#define PEERFETCH_PATH_MAX 4096 /* a request's path */
/* A request, escaped: the path, and the other keys of a chunk's range
 * with their figures as cJSON prints them (up to 23 characters each)
 * and a chunk's mtime (20 digits and a sign). */
#define PEERFETCH_LINE_MAX (6 * PEERFETCH_PATH_MAX + 224)
#define PEERFETCH_RANGE_MAX (16u << 20) /* bytes of one range reply */
/* In a refusal for the server's bound on sessions (PeerFetchSessions,
 * whose default is PEERFETCH_SESSIONS_DEFAULT): a wait, not a no. */
#define PEERFETCH_BUSY_MARK "(PeerFetchSessions="
#define PEERFETCH_SESSIONS_DEFAULT 8

struct peerfetch; /* one client session: one connection */

/* Open a session to HOST:PORT for version VERSION of entry KEY on tier
 * TIER (0: its current version, peerfetch_version says which), with a credential from munged at MUNGE_SOCKET (NULL: default),
 * within TIMEOUT_MS (connect, credential, reply and manifest). Returns 0
 * with *ret (free with peerfetch_close), or -1 with one line in err
 * ("node n1: entry ... not found", "node n1 (10.0.0.2:6826): connection
 * refused"). */
int peerfetch_open(const char *host, unsigned port, const char *munge_socket,
		   const char *tier, const char *key, unsigned version,
		   int timeout_ms, struct peerfetch **ret, char *err,
		   size_t errlen);

/* peerfetch_open_by's FLAGS. */
enum peerfetch_flags {
	/* Do not send the manifest (the caller has it from another
	 * session): peerfetch_manifest is then empty. */
	PEERFETCH_NO_MANIFEST = 1 << 0,
};

/* The same with ENCODE in place of mauth_encode (NULL: mauth_encode),
 * the unit tests' stand-in for munged (tests/unit/check_peerfetch.c),
 * and FLAGS (enum peerfetch_flags, 0: none). */
int peerfetch_open_by(mauth_encode_fn encode, unsigned flags, const char *host,
		      unsigned port, const char *munge_socket, const char *tier,
		      const char *key, unsigned version, int timeout_ms,
		      struct peerfetch **ret, char *err, size_t errlen);

/* How a session is opened, beyond where to and which entry. */
struct peerfetch_opts {
	mauth_encode_fn encode;   /* NULL: mauth_encode (munged) */
	unsigned flags;           /* enum peerfetch_flags, 0: none */
	const char *munge_socket; /* NULL: munged's default */
	/* The job the session reads for ("job": J), 0: none. A node
	 * serves a spread dataset's part only to a job it runs whose
	 * dataset it is, asked from one of the job's nodes; a whole
	 * entry is checked the same way when a job is named. */
	uint32_t job;
};

/* peerfetch_open with everything O says (peerfetch_open and
 * peerfetch_open_by are this with no job). */
int peerfetch_open_with(const char *host, unsigned port,
			const struct peerfetch_opts *o, const char *tier,
			const char *key, unsigned version, int timeout_ms,
			struct peerfetch **ret, char *err, size_t errlen);

/* The version's manifest as the server sent it (LEN bytes, not
 * NUL-terminated; manifest_parse reads it). Valid until the session is
 * closed. */
const void *peerfetch_manifest(const struct peerfetch *pf, size_t *len);

/* Fetch file REL of the version into DST_FD (written from its current
 * offset, exactly SIZE bytes), each read bounded by TIMEOUT_MS. SIZE is
 * what the caller's manifest says: a file of another size on the server
 * is refused before any byte is written. Returns 0, or -1 with one line
 * in err; after -1, peerfetch_usable says whether the session can take
 * another request (a refusal: yes; a broken connection or a short
 * transfer: no). */
int peerfetch_file(struct peerfetch *pf, const char *rel, int dst_fd,
		   uint64_t size, int timeout_ms, char *err, size_t errlen);

/* Read LEN bytes (at most PEERFETCH_RANGE_MAX are sent at once) of file
 * REL of the version from offset OFF into BUF, REL being SIZE bytes as
 * the caller's listing says; the reply bounded by TIMEOUT_MS per read.
 * Returns 0 with *ret_got the bytes read (min(LEN, SIZE - OFF,
 * PEERFETCH_RANGE_MAX): fewer than LEN only at the end of the file or
 * past the cap), or -1 with one line in err (a file the server does not
 * hold at that size, OFF past SIZE: refused, the session goes on; a
 * broken connection or a short transfer: peerfetch_usable is then 0).
 * *ret_got is untouched on failure; BUF may hold part of the bytes. */
int peerfetch_range(struct peerfetch *pf, const char *rel, uint64_t size,
		    uint64_t off, void *buf, size_t len, int timeout_ms,
		    size_t *ret_got, char *err, size_t errlen);

/* Read LEN bytes from offset OFF of chunk INDEX of file REL into BUF,
 * the chunk being CHUNK_SIZE bytes (partchunk_extent of the file's size
 * in the caller's listing) cut from the file as it was at MTIME_NS (the
 * listing's; a chunk file bears its file's mtime): as peerfetch_range
 * in every other way, with OFF and the bytes read within the chunk
 * (min(LEN, CHUNK_SIZE - OFF, PEERFETCH_RANGE_MAX)). A chunk the server
 * does not hold at that size and mtime is refused and the session goes
 * on. Returns 0 with *ret_got, or -1 with one line in err; *ret_got
 * untouched on failure. */
int peerfetch_chunk_range(struct peerfetch *pf, const char *rel, uint64_t index,
			  uint64_t chunk_size, int64_t mtime_ns, uint64_t off,
			  void *buf, size_t len, int timeout_ms,
			  size_t *ret_got, char *err, size_t errlen);

/* The version the session reads (the server's answer for version 0). */
unsigned peerfetch_version(const struct peerfetch *pf);

/* Can PF take another request? */
int peerfetch_usable(const struct peerfetch *pf);

/* Bytes received as file contents over the session's life. */
uint64_t peerfetch_bytes(const struct peerfetch *pf);

/* End the session (NULL: no-op). */
void peerfetch_close(struct peerfetch *pf);

#endif /* IOSTAGE_PEERFETCH_H */
