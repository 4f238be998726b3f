/* history_int.h - what the history's own files (common/history/history_*.c)
 * share and nobody else sees: the handle's insides, the column families,
 * the byte layout of keys. The interface is history.h. (fuzz_history_value
 * includes it too, to write raw values into a database.)
 *
 * Keys are built so that every query is one seek and a forward scan:
 * big-endian numbers sort as numbers, and times in the apps and datasets
 * families are inverted (~end) so the newest run comes first and a query
 * stops at its window or its limit. The "times" family orders jobs by end
 * time: retention walks it from the oldest and stops at the cutoff, so
 * expiring is proportional to what expires, not to the database.
 *
 * Retention is a periodic delete of whole jobs (at start and at most once
 * an hour, from the filing path) rather than a compaction filter: a job's
 * keys live in five families and must go together, which a per-key filter
 * cannot know. Deletes are tombstones that compaction reclaims later.
 *
 * The files: history_store.c opens and closes the database (the one place
 * that sets RocksDB's options), history_value.c is the stored form of a
 * record, history_put.c files and expires, history_query.c reads,
 * history_repair.c recovers a damaged database, history_global.c is the
 * process's one history (history_init ...).
 *
 * Only these files see RocksDB's char **errptr; the rest gets -1 and a line.
 */
#ifndef IOSTAGE_HISTORY_INT_H
#define IOSTAGE_HISTORY_INT_H

#include <math.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cJSON.h>
#include <rocksdb/c.h>

#include "common/base/jsonbuf.h"
#include "common/history/history.h"

enum history_cf {
	CF_DEFAULT = 0,
	CF_JOBS,
	CF_PHASES,
	CF_APPS,
	CF_DATASETS,
	CF_TIMES,
	CF_PARTS, /* last: histories from before it lack it (see open) */
	CF_COUNT,
};

#define HISTORY_KEY_MAX 4200 /* source path + 12 bytes, user + name + 14 */
#define HISTORY_PHASES_MAX 4096
#define HISTORY_EXPIRE_BATCH 1000 /* jobs per expiry WriteBatch */

#define INFLIGHT_FILTER 65536 /* slots of the in-flight counts */

struct history {
	rocksdb_t *db;
	rocksdb_options_t *opts;
	rocksdb_block_based_table_options_t *table;
	rocksdb_filterpolicy_t *filter; /* owned by table */
	rocksdb_cache_t *cache;         /* the table's block cache */
	rocksdb_options_t *cf_opts[CF_COUNT];
	rocksdb_column_family_handle_t *cf[CF_COUNT];
	rocksdb_writeoptions_t *wo, *wo_sync;
	rocksdb_readoptions_t *ro;
	bool read_only;
	/* Filers run concurrently: each takes a slot (a WriteBatch and a
	 * JSON buffer, kept between calls: clearing keeps their buffers, so
	 * a million jobs do not page-fault fresh ones in each time), and
	 * registers the job ids it files in the in-flight set, so two
	 * filings of one job (or a filing and its expiry) never interleave
	 * their read of the old keys with the write of the new ones. */
	pthread_mutex_t mu;
	pthread_cond_t idle; /* an in-flight id was released */
	struct put_slot *free_slots;
	struct inflight *inflight; /* registered filings */
	/* How many in-flight ids fall on each slot (id % INFLIGHT_FILTER):
	 * a zero answers "not in flight" without walking the tickets, which
	 * with hundreds of concurrent filings of many records each (the
	 * service's file_batch) cost a quarter of its CPU (perf). */
	uint32_t inflight_count[INFLIGHT_FILTER];
};

/* The job ids one filing (or one retention batch) has in flight. */
struct inflight {
	const uint32_t *jobs;
	size_t n;
	struct inflight *next;
};

struct put_slot {
	struct put_slot *next;
	rocksdb_writebatch_t *batch;
	struct jsonbuf json;
};

struct key {
	size_t len;
	char buf[HISTORY_KEY_MAX];
};

/* --- keys: big-endian numbers, NUL-ended strings -------------------------------- */

static inline void put_be32(char *p, uint32_t v)
{
	p[0] = (char)(v >> 24);
	p[1] = (char)(v >> 16);
	p[2] = (char)(v >> 8);
	p[3] = (char)v;
}

static inline void put_be64(char *p, uint64_t v)
{
	put_be32(p, (uint32_t)(v >> 32));
	put_be32(p + 4, (uint32_t)v);
}

static inline uint32_t get_be32(const char *p)
{
	const unsigned char *u = (const unsigned char *)p;

	return (uint32_t)u[0] << 24 | (uint32_t)u[1] << 16 |
	       (uint32_t)u[2] << 8 | u[3];
}

static inline uint64_t get_be64(const char *p)
{
	return (uint64_t)get_be32(p) << 32 | get_be32(p + 4);
}

static inline uint64_t end_us(double end)
{
	return end <= 0 ? 0 : (uint64_t)llround(end * 1e6);
}

static inline int key_add(struct key *k, const void *p, size_t n)
{
	if (k->len + n > sizeof(k->buf))
		return -1;
	memcpy(k->buf + k->len, p, n);
	k->len += n;
	return 0;
}

/* Strings end with a NUL so that "ab" never prefixes "abc"'s keys. */
static inline int key_str(struct key *k, const char *s)
{
	return key_add(k, s, strlen(s) + 1);
}

static inline int key_time_job(struct key *k, uint64_t t, uint32_t job)
{
	char b[12];

	put_be64(b, t);
	put_be32(b + 8, job);
	return key_add(k, b, sizeof(b));
}

static inline void key_job(struct key *k, uint32_t job)
{
	k->len = 4;
	put_be32(k->buf, job);
}

/* --- shared between the files -------------------------------------------------- */

/* RocksDB's message RERR, freed; -1 with it in err when there was one
 * (WHAT says what failed), else 0. (history_store.c) */
int hist_rocks_err(char *rerr, char *err, size_t errlen, const char *what);

/* How many entries DIR holds, -1 when it does not exist; *ret_current
 * says whether one is CURRENT. (history_store.c) */
int hist_dir_entries(const char *dir, bool *ret_current);

/* history_open, and with CREATE_CFS the missing column families added to
 * an existing database (after a repair rebuilt it from SST files, a
 * family without data is gone). (history_store.c) */
struct history *hist_open_cfs(const char *dir, enum history_open_mode mode,
			      bool create_cfs, char *err, size_t errlen);

/* The dictionary of the packed jobs values (the record schema's keys).
 * (history_value.c) */
const struct jsonbuf_dict *hist_record_dict(void);

/* RECORD's jobs value into J, replacing what J held (PHASES: its phases
 * array or NULL). 0, or -1 with errno. (history_value.c) */
int hist_pack_jobs_value(struct jsonbuf *j, const cJSON *record,
			 const cJSON *phases);

/* A stored jobs value VAL (VLEN bytes), packed or the JSON text of older
 * histories: the summary (the record without its phases; caller deletes),
 * or NULL when damaged. With RET_PHASES, also the phases packed in the
 * same value (NULL when there were none there) and in *RET_INLINE whether
 * the value had them (older values keep them in the phases family).
 * (history_value.c) */
cJSON *hist_unpack_jobs_value(const char *val, size_t vlen, cJSON **ret_phases,
			      bool *ret_inline);

/* The stored summary of JOB, or NULL (errno ENOENT, or EIO with err).
 * RET_PHASES and RET_INLINE (both NULL, or both set) as
 * hist_unpack_jobs_value's. (history_query.c) */
cJSON *hist_get_summary(struct history *h, uint32_t job, cJSON **ret_phases,
			bool *ret_inline, char *err, size_t errlen);

#endif /* IOSTAGE_HISTORY_INT_H */
