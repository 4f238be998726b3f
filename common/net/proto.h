/* proto.h - the iostaged wire protocol.
 *
 * A Unix stream socket; one JSON object per line each way. Every request has
 * "op"; every reply is {"ok":true,...} or {"ok":false,"error":"<one line>"}.
 * Lines over PROTO_LINE_MAX are refused. Peers are identified by SO_PEERCRED.
 *
 * Ops (root = peer uid 0; owner = the job's uid):
 *   ping                                   anyone -> version, pid
 *   stage   job uid gid user profile{} [nodes[]]
 *                                          root   -> state (nodes: a
 *                                             multi-node job's node names,
 *                                             the head first)
 *   wait    job timeout(s)                 root/owner -> state [error]
 *                                             [bytes files] (blocks until
 *                                             the job leaves "staging" or
 *                                             the timeout passes; a
 *                                             multi-node job: until every
 *                                             node's staging ended, the
 *                                             job-wide state, with
 *                                             [failed_node] or
 *                                             [waiting_for])
 *   abort   job reason                     root   -> state
 *   job_env job                            root/owner -> state [error] env{}
 *   finish  job                            root   -> (private dirs removed,
 *                                             cache pins released)
 *   status                                 anyone -> daemon{} tiers[] jobs[]
 *                                             (non-root peers see only
 *                                             their own jobs)
 *      tiers[]: name path medium shared capacity_bytes used_bytes
 *               free_bytes jobs cache_entries cache_bytes reserved_bytes
 *      jobs[]:  job user uid state error bytes files total_bytes
 *               total_files rate_bps eta_s(null unless staging) prestage
 *               datasets[names] cache[{dataset tier result("pending",
 *               "hit", "built", "failed") entry("K.vN"|null) copied_files
 *               copied_bytes linked_files}]
 *   prestage path [tier] [user] [verify]   anyone -> id state tier user
 *                                             (stages PATH into the cache,
 *                                             asynchronously, as the peer,
 *                                             or as USER when the peer is
 *                                             root; ID is a job id >=
 *                                             0x80000000 for wait/status,
 *                                             forgotten 600 s after it
 *                                             ends; errors start
 *                                             "prestage refused: ")
 *   cache_ls [tier]                        anyone -> entries[{tier key
 *                                             entry version current source
 *                                             uid user bytes files verify
 *                                             created verified last_used
 *                                             pins pinned_by["NODE.JOB"]}]
 *                                             (non-root: own entries only;
 *                                             times in seconds since the
 *                                             epoch)
 *   cache_evict key|path [tier] [user]     root or the entry's owner
 *                                             -> evicted[{tier entry source
 *                                             uid bytes}] bytes
 *                                             (key: 32 hex digits, every
 *                                             version; path: the peer's
 *                                             entry of that source, root:
 *                                             every user's, or USER's with
 *                                             user; all or nothing: a
 *                                             pinned or busy version fails
 *                                             the request: "cache entry
 *                                             K.vN on tier 'nvme' (/src) is
 *                                             pinned by node1.42; not
 *                                             evicted")
 * Telemetry (daemon/telemetry/telemetry_ops.c; records as in docs/RECORDS.md):
 *   task_register job pid [parent] [step] [rank] [local_rank] [node]
 *           [identity("slurm"|"pmix")] [job_name]
 *                                          root   -> (slurmstepd, from
 *                                             task_post_fork: follow the
 *                                             task's /proc/PID/io and its
 *                                             descendants'; PARENT is
 *                                             slurmstepd itself)
 *   task_exit job pid                      root   -> (slurmstepd, from
 *                                             task_exit: sample the job
 *                                             now, while slurmstepd still
 *                                             holds the reaped task's
 *                                             counters)
 *   phase   job name event("begin"|"end") [ts] [step] [rank]
 *           [local_rank] [node] [identity] root/owner -> (a marker; a
 *                                             user's is the sending
 *                                             process's (SO_PEERCRED pid);
 *                                             name [A-Za-z0-9_.-]{1,31})
 *   shim_report job [pid] [step] [rank] [local_rank] [node] [identity]
 *           [start] [end] [counters{phase:{class:{COUNTER:n}}}]
 *           [io_seconds{phase:s}] [unoverlapped{phase:s}]
 *           [files[{path_class written shared}]]
 *                                          root/owner -> (checked
 *                                             strictly: known keys,
 *                                             classes and Darshan counter
 *                                             names only, numbers >= 0, at
 *                                             most 32 phases and 256
 *                                             files; a user's pid must be
 *                                             the sender's; errors start
 *                                             "shim_report refused: ")
 *   telemetry job                          root/owner -> record{} (live,
 *                                             or from StateDir/telemetry
 *                                             for 30 days after the job)
 *   history_put record{}                   root   -> job (files a job
 *                                             record, docs/RECORDS.md, as
 *                                             the Epilog does: one synced
 *                                             WriteBatch; replay and tests)
 *   history_get job                        root/owner -> record{} (with
 *                                             phases; another user's job
 *                                             answers "job J: not in your
 *                                             history")
 *   history_list [since] [user] [limit]    anyone -> records[{job user uid
 *                                             job_name node state
 *                                             profile_origin start end
 *                                             datasets[{source bytes files
 *                                             result}]}] newest first
 *                                             (limit 1..1000, default 100;
 *                                             non-root: own jobs only, user
 *                                             = self; root: all or USER's)
 *   recommend [user] [job_name] [script] [dataset]
 *                                          anyone -> query{user job_name
 *                                             dataset window_s} runs
 *                                             recommendations[{rule target
 *                                             action profile? commands?
 *                                             evidence{jobs figures}
 *                                             confidence expected_gain}]
 *                                             skipped[{rule target reason}]
 *                                             profile{datasets outputs}
 *                                             (what --io-profile=auto
 *                                             applies) hint(bool)
 *                                             (own history; root: USER's;
 *                                             script: only its file name is
 *                                             used, the daemon never opens
 *                                             it; clients read its #SBATCH
 *                                             --job-name and send job_name)
 *   Every history op answers "history disabled: <why>" when the database
 *   could not be opened (docs/HISTORY.md).
 * Job states: "staging", "staged", "failed".
 */
#ifndef IOSTAGE_PROTO_H
#define IOSTAGE_PROTO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cJSON.h>

#define PROTO_LINE_MAX (256 * 1024)

struct proto_reader;

/* Connect to the daemon's socket. Returns an fd (CLOEXEC), or -1 with errno.
 */
int proto_connect(const char *socket_path);

/* Write MSG as one compact line. Returns 0 or -1 with errno (EPIPE...). */
int proto_send(int fd, const cJSON *msg);

/* A buffered line reader over FD (not owned). NULL on ENOMEM. */
struct proto_reader *proto_reader_create(int fd);
void proto_reader_destroy(struct proto_reader *reader); /* NULL ok */

/* Read one line, waiting at most timeout_ms (-1 = forever). Returns 1 with
 * *ret_line pointing into the reader's buffer (NUL-terminated, valid until
 * the next call), 0 on a clean EOF, -1 with errno: ETIMEDOUT, EMSGSIZE (the
 * line was longer than PROTO_LINE_MAX; it is skipped), or a read error. */
int proto_read_line(struct proto_reader *reader, int timeout_ms,
		    char **ret_line);

/* Parse a request line: an object whose "op" is a string. Returns the object
 * (caller deletes) with *ret_op pointing into it, or NULL with err. */
cJSON *proto_parse_request(const char *line, const char **ret_op, char *err,
			   size_t errlen);

/* Replies. Both return a new object (caller deletes), NULL on ENOMEM. */
cJSON *proto_reply_ok(void);
cJSON *proto_reply_error(const char *fmt, ...)
    __attribute__((format(printf, 1, 2)));

/* How the daemon's refusal of a connection for want of a slot begins
 * (daemon/server.c): the request was not looked at. */
#define PROTO_BUSY "too many connections"

/* Is REPLY that refusal? */
bool proto_reply_busy(const cJSON *reply);

/* Client round trip: connect, send REQ, read one reply within timeout_ms.
 * A PROTO_BUSY refusal is retried (jittered backoff, 5 to 200 ms) until
 * timeout_ms is spent; the last one is returned then. Returns the reply
 * (caller deletes; check "ok"), or NULL with a one-line reason in err
 * ("iostaged not reachable at PATH: ..."). */
cJSON *proto_call(const char *socket_path, const cJSON *req, int timeout_ms,
		  char *err, size_t errlen);

/* Field helpers for handlers. Each returns 0 and sets *ret, or -1 with err
 * "key 'K': missing" / "key 'K': must be ..." and leaves *ret untouched. */
int proto_get_string(const cJSON *obj, const char *key, const char **ret,
		     char *err, size_t errlen);
int proto_get_u32(const cJSON *obj, const char *key, uint32_t *ret, char *err,
		  size_t errlen);
/* The request's "job", a Slurm job ID (> 0): "key 'job': must be > 0". */
int proto_get_job_id(const cJSON *req, uint32_t *ret, char *err, size_t errlen);

/* Lenient reader for records we wrote ourselves or a worker's counters:
 * the non-negative integer at KEY, or 0 when it is missing, not a number,
 * negative or absurd (over 1e18). */
uint64_t proto_u64(const cJSON *obj, const char *key);
/* The same bound for a figure we computed (a rate, a sum): V truncated to a
 * whole number, or 0 when V is negative, NaN or over 1e18, where converting
 * it to an integer would be undefined or meaningless. */
uint64_t proto_u64_of(double v);

#endif /* IOSTAGE_PROTO_H */
