/* history.c - job records in RocksDB: keys, atomic filing, queries,
 * retention, and what happens when the database is damaged.
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
 * Only this file sees RocksDB's char **errptr; the rest gets -1 and a line.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <rocksdb/c.h>

#include "common/config/conf.h"
#include "common/base/errmsg.h"
#include "common/base/log.h"
#include "common/history/history.h"
#include "common/history/jobfacts.h"
#include "common/base/jsonbuf.h"

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

static const char *const cf_names[CF_COUNT] = {
    [CF_DEFAULT] = "default", [CF_JOBS] = "jobs",
    [CF_PHASES] = "phases",   [CF_APPS] = "apps",
    [CF_DATASETS] = "datasets", [CF_TIMES] = "times",
    [CF_PARTS] = "parts",
};

#define HISTORY_KEY_MAX 4200 /* source path + 12 bytes, user + name + 14 */
#define HISTORY_PHASES_MAX 4096
#define HISTORY_EXPIRE_BATCH 1000
#define HISTORY_EXPIRE_EVERY_S 3600
#define HISTORY_EXPIRE_MAX 100000 /* per pass from the filing path */

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

/* --- small helpers ------------------------------------------------------------ */

/* RocksDB's message, freed; -1 with it in err when there was one. */
static int rocks_err(char *rerr, char *err, size_t errlen, const char *what)
{
	if (!rerr)
		return 0;
	errmsg_fail(err, errlen, EIO, "history: %s: %s", what, rerr);
	free(rerr);
	return -1;
}

static void put_be32(char *p, uint32_t v)
{
	p[0] = (char)(v >> 24);
	p[1] = (char)(v >> 16);
	p[2] = (char)(v >> 8);
	p[3] = (char)v;
}

static void put_be64(char *p, uint64_t v)
{
	put_be32(p, (uint32_t)(v >> 32));
	put_be32(p + 4, (uint32_t)v);
}

static uint32_t get_be32(const char *p)
{
	const unsigned char *u = (const unsigned char *)p;

	return (uint32_t)u[0] << 24 | (uint32_t)u[1] << 16 |
	       (uint32_t)u[2] << 8 | u[3];
}

static uint64_t get_be64(const char *p)
{
	return (uint64_t)get_be32(p) << 32 | get_be32(p + 4);
}

static uint64_t end_us(double end)
{
	return end <= 0 ? 0 : (uint64_t)llround(end * 1e6);
}

static int key_add(struct key *k, const void *p, size_t n)
{
	if (k->len + n > sizeof(k->buf))
		return -1;
	memcpy(k->buf + k->len, p, n);
	k->len += n;
	return 0;
}

/* Strings end with a NUL so that "ab" never prefixes "abc"'s keys. */
static int key_str(struct key *k, const char *s)
{
	return key_add(k, s, strlen(s) + 1);
}

static int key_time_job(struct key *k, uint64_t t, uint32_t job)
{
	char b[12];

	put_be64(b, t);
	put_be32(b + 8, job);
	return key_add(k, b, sizeof(b));
}

static void key_job(struct key *k, uint32_t job)
{
	k->len = 4;
	put_be32(k->buf, job);
}

/* --- open, close, repair -------------------------------------------------------- */

/* Does DIR hold anything? -1 when it does not exist. */
static int dir_entries(const char *dir, bool *ret_current)
{
	struct dirent *de;
	DIR *d = opendir(dir);
	int n = 0;

	*ret_current = false;
	if (!d)
		return -1;
	while ((de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if (!strcmp(de->d_name, "CURRENT"))
			*ret_current = true;
		n++;
	}
	closedir(d);
	return n;
}

void history_close(struct history *h)
{
	if (!h)
		return;
	/* Memtables go to SST files before we leave: SSTs carry their
	 * column family's name, so even RocksDB's last-resort repair (which
	 * cannot place WAL records of families it does not know) keeps
	 * every job recorded before a clean stop. */
	if (h->db && !h->read_only) {
		rocksdb_flushoptions_t *fo = rocksdb_flushoptions_create();
		char *rerr = NULL;

		rocksdb_flushoptions_set_wait(fo, 1);
		for (size_t i = 0; i < CF_COUNT; i++) {
			if (!h->cf[i])
				continue;
			rocksdb_flush_cf(h->db, fo, h->cf[i], &rerr);
			free(rerr);
			rerr = NULL;
		}
		rocksdb_flushoptions_destroy(fo);
	}
	for (size_t i = 0; i < CF_COUNT; i++)
		if (h->cf[i])
			rocksdb_column_family_handle_destroy(h->cf[i]);
	if (h->db)
		rocksdb_close(h->db);
	for (size_t i = 0; i < CF_COUNT; i++)
		if (h->cf_opts[i])
			rocksdb_options_destroy(h->cf_opts[i]);
	if (h->opts)
		rocksdb_options_destroy(h->opts);
	if (h->table)
		rocksdb_block_based_options_destroy(h->table);
	if (h->cache)
		rocksdb_cache_destroy(h->cache);
	if (h->wo)
		rocksdb_writeoptions_destroy(h->wo);
	if (h->wo_sync)
		rocksdb_writeoptions_destroy(h->wo_sync);
	if (h->ro)
		rocksdb_readoptions_destroy(h->ro);
	while (h->free_slots) {
		struct put_slot *s = h->free_slots;

		h->free_slots = s->next;
		rocksdb_writebatch_destroy(s->batch);
		jsonbuf_fini(&s->json);
		free(s);
	}
	pthread_cond_destroy(&h->idle);
	pthread_mutex_destroy(&h->mu);
	free(h);
}

/* Compactions (RocksDB's low-priority pool) run below every thread that
 * answers somebody: a query that landed on a core beside a compaction of
 * the same nice waited out its time slice, the tail of the recommend
 * latency while filing goes on (bench/README.md). They still get the
 * CPU nothing else wants, and a backlog of them slows the writers down
 * (RocksDB's stall triggers), so they are never starved for good. */
static void lower_compaction_priority(void)
{
	rocksdb_env_t *env = rocksdb_create_default_env();

	rocksdb_env_lower_thread_pool_cpu_priority(env);
	rocksdb_env_destroy(env); /* the process's default Env stays */
}

static pthread_once_t compaction_priority_once = PTHREAD_ONCE_INIT;

static rocksdb_options_t *db_options(struct history *h, bool create)
{
	rocksdb_options_t *o = rocksdb_options_create();

	pthread_once(&compaction_priority_once, lower_compaction_priority);

	rocksdb_options_set_create_if_missing(o, create);
	rocksdb_options_set_create_missing_column_families(o, create);
	rocksdb_options_increase_parallelism(o, 2);
	rocksdb_options_set_max_open_files(o, 512);
	rocksdb_options_set_keep_log_file_num(o, 3);
	/* Fresh data stays uncompressed in L0/L1, where it is rewritten
	 * soonest; LZ4 below, where most of a large history lives. */
	{
		int levels[7] = {rocksdb_no_compression, rocksdb_no_compression,
				 rocksdb_lz4_compression, rocksdb_lz4_compression,
				 rocksdb_lz4_compression, rocksdb_lz4_compression,
				 rocksdb_lz4_compression};

		rocksdb_options_set_compression_per_level(o, levels, 7);
	}
	/* Universal compaction: a history is written once and read by
	 * prefix; rewriting it level by level (leveled compaction's ~10x
	 * write amplification) cost more CPU than the ingest itself on a
	 * small node (bench/history.c). */
	rocksdb_options_set_compaction_style(o, rocksdb_universal_compaction);
	rocksdb_options_set_write_buffer_size(o, 64 << 20);
	rocksdb_options_set_max_write_buffer_number(o, 4);
	/* Arena blocks under glibc's mmap threshold are reused from the
	 * heap: memtables stop page-faulting fresh memory in (bench). */
	rocksdb_options_set_arena_block_size(o, 64 << 10);
	/* Readers of a half-written WAL tail stop there (the record in it
	 * never reached the caller as filed); anything else is reported. */
	rocksdb_options_set_wal_recovery_mode(
	    o, rocksdb_tolerate_corrupted_tail_records_recovery);
	rocksdb_options_set_paranoid_checks(o, 1);
	if (h->table)
		rocksdb_options_set_block_based_table_factory(o, h->table);
	return o;
}

static struct history *history_open_cfs(const char *dir,
					enum history_open_mode mode,
					bool create_cfs, char *err,
					size_t errlen);

/* Does the database in DIR have the column family NAME? */
static bool has_family(const rocksdb_options_t *opts, const char *dir,
		       const char *name)
{
	char *rerr = NULL, **names;
	size_t n = 0;
	bool found = false;

	names = rocksdb_list_column_families(opts, dir, &n, &rerr);
	free(rerr);
	for (size_t i = 0; names && i < n; i++)
		if (!strcmp(names[i], name))
			found = true;
	if (names)
		rocksdb_list_column_families_destroy(names, n);
	return found;
}

struct history *history_open(const char *dir, enum history_open_mode mode,
			     char *err, size_t errlen)
{
	return history_open_cfs(dir, mode, false, err, errlen);
}

/* CREATE_CFS: add missing column families to an existing database (after
 * a repair rebuilt it from SST files, a family without data is gone). */
static struct history *history_open_cfs(const char *dir,
					enum history_open_mode mode,
					bool create_cfs, char *err,
					size_t errlen)
{
	const rocksdb_options_t *cf_opts[CF_COUNT];
	struct history *h;
	bool has_current, create;
	char *rerr = NULL;
	size_t ncf;
	int n;

	if (!dir || dir[0] != '/') {
		errmsg_fail(err, errlen, EINVAL,
			    "history: directory must be absolute");
		return NULL;
	}
	n = dir_entries(dir, &has_current);
	if (n > 0 && !has_current) {
		errmsg_fail(
		    err, errlen, EIO,
		    "history: %s holds %d files but no CURRENT: damaged "
		    "database, left untouched",
		    dir, n);
		return NULL;
	}
	if (n < 0 && mode == HISTORY_READ_ONLY) {
		errmsg_fail(err, errlen, ENOENT, "history: %s: no database",
			    dir);
		return NULL;
	}
	create = mode == HISTORY_READ_WRITE && n <= 0;
	h = calloc(1, sizeof(*h));
	if (!h) {
		errmsg_fail(err, errlen, ENOMEM, "history: out of memory");
		return NULL;
	}
	pthread_mutex_init(&h->mu, NULL);
	pthread_cond_init(&h->idle, NULL);
	h->table = rocksdb_block_based_options_create();
	h->filter = rocksdb_filterpolicy_create_bloom(10);
	rocksdb_block_based_options_set_filter_policy(h->table, h->filter);
	h->cache = rocksdb_cache_create_lru(64 << 20);
	rocksdb_block_based_options_set_block_cache(h->table, h->cache);
	h->opts = db_options(h, create);
	if (create_cfs)
		rocksdb_options_set_create_missing_column_families(h->opts, 1);
	for (size_t i = 0; i < CF_COUNT; i++) {
		h->cf_opts[i] = db_options(h, create);
		/* The index families' keys land at random places: a
		 * small memtable is a shallow skip list that stays in the
		 * CPU's caches (8 MiB: 41,000-43,000 -> 50,000-52,000
		 * jobs/s at 300,000, bench). */
		if (i == CF_APPS || i == CF_DATASETS || i == CF_TIMES)
			rocksdb_options_set_write_buffer_size(h->cf_opts[i],
							      8 << 20);
		/* Filing looks up the job's old record first; a new job
		 * is then answered by the memtable's bloom filter instead
		 * of a skip list search. */
		if (i == CF_JOBS) {
			rocksdb_options_set_memtable_prefix_bloom_size_ratio(
			    h->cf_opts[i], 0.1);
			rocksdb_options_set_memtable_whole_key_filtering(
			    h->cf_opts[i], 1);
		}
		cf_opts[i] = h->cf_opts[i];
	}
	h->wo = rocksdb_writeoptions_create();
	h->wo_sync = rocksdb_writeoptions_create();
	rocksdb_writeoptions_set_sync(h->wo_sync, 1);
	h->ro = rocksdb_readoptions_create();
	rocksdb_readoptions_set_verify_checksums(h->ro, 1);
	/* The parts family came later (ctld/filing/partstore.c): a history from
	 * before it (a node's, for --import) gets it when opened for
	 * writing, and is read without it. */
	ncf = CF_COUNT;
	if (!create && !has_family(h->opts, dir, cf_names[CF_PARTS])) {
		if (mode == HISTORY_READ_ONLY)
			ncf = CF_PARTS;
		else
			rocksdb_options_set_create_missing_column_families(
			    h->opts, 1);
	}
	if (mode == HISTORY_READ_ONLY) {
		h->read_only = true;
		h->db = rocksdb_open_for_read_only_column_families(
		    h->opts, dir, (int)ncf, cf_names, cf_opts, h->cf, 0, &rerr);
	} else {
		h->db = rocksdb_open_column_families(
		    h->opts, dir, (int)ncf, cf_names, cf_opts, h->cf, &rerr);
	}
	if (!h->db) {
		errmsg_fail(err, errlen, EIO, "history: cannot open %s: %s",
			    dir, rerr ? rerr : "unknown error");
		free(rerr);
		memset(h->cf, 0, sizeof(h->cf));
		history_close(h);
		return NULL;
	}
	return h;
}

bool history_is_read_only(const struct history *h)
{
	return h && h->read_only;
}

/* Copy the regular files of SRC (a RocksDB directory is flat) into DST. */
static int copy_dir_files(const char *src, const char *dst, char *err,
			  size_t errlen)
{
	char from[4096], to[4096], buf[1 << 16];
	struct dirent *de;
	DIR *d;
	int rc = 0;

	if (mkdir(dst, 0700) < 0)
		return errmsg_fail(err, errlen, errno, "mkdir %s: %s", dst,
				   strerror(errno));
	d = opendir(src);
	if (!d)
		return errmsg_fail(err, errlen, errno, "%s: %s", src,
				   strerror(errno));
	while (rc == 0 && (de = readdir(d))) {
		struct stat st;
		int in, out;
		ssize_t r;

		snprintf(from, sizeof(from), "%s/%s", src, de->d_name);
		snprintf(to, sizeof(to), "%s/%s", dst, de->d_name);
		if (lstat(from, &st) < 0 || !S_ISREG(st.st_mode))
			continue;
		in = open(from, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
		out = open(to, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
		if (in < 0 || out < 0) {
			rc = errmsg_fail(err, errlen, errno, "copy %s: %s",
					 from, strerror(errno));
		} else {
			while ((r = read(in, buf, sizeof(buf))) > 0)
				if (write(out, buf, (size_t)r) != r) {
					r = -1;
					break;
				}
			if (r < 0 || fsync(out) < 0)
				rc = errmsg_fail(err, errlen, errno,
						 "copy %s: %s", from,
						 strerror(errno));
		}
		if (in >= 0)
			close(in);
		if (out >= 0)
			close(out);
	}
	closedir(d);
	return rc;
}

/* A damaged CURRENT is the cheapest damage to undo: point it at the newest
 * MANIFEST again (written to a temporary file, synced, renamed). The
 * MANIFEST knows every column family, so the WAL replays in full.
 * Returns 0 when a MANIFEST was found and CURRENT rewritten. */
static int rewrite_current(const char *dir)
{
	char best[256] = "", path[4096], tmpf[4096], line[300];
	unsigned long long best_n = 0;
	struct dirent *de;
	DIR *d = opendir(dir);
	int fd, rc = -1;

	if (!d)
		return -1;
	while ((de = readdir(d))) {
		char *end;
		unsigned long long n;

		if (strncmp(de->d_name, "MANIFEST-", 9) != 0)
			continue;
		n = strtoull(de->d_name + 9, &end, 10);
		if (*end || n < best_n || strlen(de->d_name) >= sizeof(best))
			continue;
		best_n = n;
		snprintf(best, sizeof(best), "%s", de->d_name);
	}
	closedir(d);
	if (!best[0])
		return -1;
	snprintf(tmpf, sizeof(tmpf), "%s/CURRENT.repair", dir);
	snprintf(path, sizeof(path), "%s/CURRENT", dir);
	snprintf(line, sizeof(line), "%s\n", best);
	fd = open(tmpf, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		return -1;
	if (write(fd, line, strlen(line)) == (ssize_t)strlen(line) &&
	    fsync(fd) == 0 && rename(tmpf, path) == 0)
		rc = 0;
	close(fd);
	if (rc < 0)
		unlink(tmpf);
	return rc;
}

int history_repair(const char *dir, int64_t *ret_jobs, char *ret_copy,
		   size_t copylen, char *err, size_t errlen)
{
	char copy[4096], sub[CONF_ERR_MAX];
	rocksdb_options_t *o;
	struct history *h;
	bool has_current;
	char *rerr = NULL;
	int64_t jobs;

	if (!dir || dir[0] != '/')
		return errmsg_fail(err, errlen, EINVAL,
				   "history: directory must be absolute");
	if (dir_entries(dir, &has_current) <= 0)
		return errmsg_fail(err, errlen, ENOENT,
				   "%s: no database to repair", dir);
	snprintf(copy, sizeof(copy), "%s.damaged.%lld", dir,
		 (long long)time(NULL));
	if (copy_dir_files(dir, copy, sub, sizeof(sub)) < 0)
		return errmsg_fail(err, errlen, errno,
				   "cannot keep a copy before repairing: %s",
				   sub);
	/* First the gentle fix, then RocksDB's rebuild from the SST files. */
	if (rewrite_current(dir) == 0) {
		h = history_open(dir, HISTORY_READ_WRITE, sub, sizeof(sub));
		if (h)
			goto opened;
	}
	o = rocksdb_options_create();
	rocksdb_repair_db(o, dir, &rerr);
	rocksdb_options_destroy(o);
	if (rerr) {
		errmsg_fail(err, errlen, EIO,
			    "repair of %s failed: %s (the damaged "
			    "files are kept in %s)",
			    dir, rerr, copy);
		free(rerr);
		return -1;
	}
	h = history_open_cfs(dir, HISTORY_READ_WRITE, true, sub, sizeof(sub));
	if (!h)
		return errmsg_fail(
		    err, errlen, EIO,
		    "repaired %s but it still does not open: %s (the "
		    "damaged files are kept in %s)",
		    dir, sub, copy);
opened:
	jobs = history_count(h, sub, sizeof(sub));
	history_close(h);
	if (jobs < 0)
		return errmsg_fail(err, errlen, EIO, "%s", sub);
	*ret_jobs = jobs;
	snprintf(ret_copy, copylen, "%s", copy);
	return 0;
}

/* --- filing -------------------------------------------------------------------- */

/* The apps, datasets and times keys of a job (the apps value is VAL, its
 * packed facts; a datasets value is the apps key), from its record or its
 * stored summary (the record without its phases: the same user,
 * job_name, end and dataset sources), so a replaced or expired job loses
 * exactly the keys it had. */
static int index_keys(rocksdb_writebatch_t *b, struct history *h,
		      uint32_t job, const cJSON *rec, const char *val,
		      size_t vlen, bool del)
{
	const char *user = jobfacts_str(rec, "user", "");
	const char *name = jobfacts_str(rec, "job_name", "");
	uint64_t t = end_us(jobfacts_num(rec, "end", 0));
	const char *srcs[JOBFACTS_LIST_MAX];
	size_t nsrcs = jobfacts_sources(rec, srcs, JOBFACTS_LIST_MAX);
	struct key k = {0}, app = {0};

	if (key_str(&app, user) < 0 || key_str(&app, name) < 0 ||
	    key_time_job(&app, ~t, job) < 0)
		return -1;
	if (del)
		rocksdb_writebatch_delete_cf(b, h->cf[CF_APPS], app.buf,
					     app.len);
	else
		rocksdb_writebatch_put_cf(b, h->cf[CF_APPS], app.buf, app.len,
					  val, vlen);
	for (size_t i = 0; i < nsrcs; i++) {
		k.len = 0;
		if (key_str(&k, srcs[i]) < 0 || key_time_job(&k, ~t, job) < 0)
			continue; /* a path too long to index: not a dataset
				     the rules can name */
		/* The value is the job's apps key: its facts are stored
		 * once, and a dataset query looks them up from there. */
		if (del)
			rocksdb_writebatch_delete_cf(b, h->cf[CF_DATASETS],
						     k.buf, k.len);
		else
			rocksdb_writebatch_put_cf(b, h->cf[CF_DATASETS], k.buf,
						  k.len, app.buf, app.len);
	}
	k.len = 0;
	key_time_job(&k, t, job);
	if (del)
		rocksdb_writebatch_delete_cf(b, h->cf[CF_TIMES], k.buf, k.len);
	else
		rocksdb_writebatch_put_cf(b, h->cf[CF_TIMES], k.buf, k.len, "",
					  0);
	return 0;
}

/* Queue the deletion of every key of JOB (as stored in SUMMARY). */
static void delete_job(rocksdb_writebatch_t *b, struct history *h,
		       uint32_t job, const cJSON *summary)
{
	struct key k;

	key_job(&k, job);
	rocksdb_writebatch_delete_cf(b, h->cf[CF_JOBS], k.buf, k.len);
	rocksdb_writebatch_delete_cf(b, h->cf[CF_PHASES], k.buf, k.len);
	index_keys(b, h, job, summary, NULL, 0, true);
}

/* The jobs value, packed (since 2026-11-23): JOBS_PACKED, be32(n), the
 * record without its phases packed in n bytes, then the phases packed
 * (absent when the record had none). Values filed before are the JSON
 * text of the record without phases (first byte '{'), their phases under
 * their own key in the phases family; both are read. The dictionary is
 * the record schema's keys (docs/RECORDS.md) and part of the stored
 * format: only ever append to it; other keys are stored spelled out. */
#define JOBS_PACKED 1
static const char *const record_keys[] = {
    "schema", "job", "user", "uid", "job_name", "node", "profile_origin",
    "state", "start", "end", "datasets", "name", "source", "tier",
    "bytes", "files", "result", "copied_bytes", "copied_files",
    "linked_files", "cached_bytes", "outputs", "dest", "during_files",
    "during_bytes", "end_files", "end_bytes", "failed_files", "size_hist",
    "0_100", "100_1K", "1K_10K", "10K_100K", "100K_1M", "1M_4M", "4M_10M",
    "10M_100M", "100M_1G", "1G_PLUS", "shared_files", "fpp_files",
    "phases", "seconds", "read_bytes", "write_bytes", "counters",
    "dataset", "output", "other", "parent", "io_seconds",
    "unoverlapped_io_seconds", "processes", "pid", "rank", "local_rank",
    "step", "identity", "traced", "timeline", "interval_s", "rate_bps",
    "read_syscalls", "write_syscalls", "end_seconds", "profile", "error",
    "drain", "access", "POSIX_OPENS", "POSIX_READS", "POSIX_WRITES",
    "POSIX_SEEKS", "POSIX_STATS", "POSIX_FSYNCS", "POSIX_BYTES_READ",
    "POSIX_BYTES_WRITTEN", "POSIX_CONSEC_READS", "POSIX_CONSEC_WRITES",
    "POSIX_SEQ_READS", "POSIX_SEQ_WRITES", "POSIX_RW_SWITCHES",
    "POSIX_MAX_BYTE_READ", "POSIX_MAX_BYTE_WRITTEN", "POSIX_F_READ_TIME",
    "POSIX_F_WRITE_TIME", "POSIX_F_META_TIME", "POSIX_FADV_SEQUENTIAL",
    "POSIX_SIZE_READ_0_100", "POSIX_SIZE_READ_100_1K",
    "POSIX_SIZE_READ_1K_10K", "POSIX_SIZE_READ_10K_100K",
    "POSIX_SIZE_READ_100K_1M", "POSIX_SIZE_READ_1M_4M",
    "POSIX_SIZE_READ_4M_10M", "POSIX_SIZE_READ_10M_100M",
    "POSIX_SIZE_READ_100M_1G", "POSIX_SIZE_READ_1G_PLUS",
    "POSIX_SIZE_WRITE_0_100", "POSIX_SIZE_WRITE_100_1K",
    "POSIX_SIZE_WRITE_1K_10K", "POSIX_SIZE_WRITE_10K_100K",
    "POSIX_SIZE_WRITE_100K_1M", "POSIX_SIZE_WRITE_1M_4M",
    "POSIX_SIZE_WRITE_4M_10M", "POSIX_SIZE_WRITE_10M_100M",
    "POSIX_SIZE_WRITE_100M_1G", "POSIX_SIZE_WRITE_1G_PLUS",
    "IOSTAGE_UNOVERLAPPED_IO_TIME", "rchar", "wchar", "syscr", "syscw",
    "storage_read_bytes", "storage_write_bytes", "processes_total",
    "ranks", "stage_in", "run", "checkpoint", "stage_out",
};
static struct jsonbuf_dict record_dict;
static pthread_once_t record_dict_once = PTHREAD_ONCE_INIT;

static void record_dict_init(void)
{
	jsonbuf_dict_init(&record_dict, record_keys,
			  sizeof(record_keys) / sizeof(record_keys[0]));
}

/* RECORD's jobs value into J (PHASES: its phases array or NULL). */
static int pack_jobs_value(struct jsonbuf *j, const cJSON *record,
			   const cJSON *phases)
{
	static const char head[5] = {JOBS_PACKED, 0, 0, 0, 0};
	size_t n;

	pthread_once(&record_dict_once, record_dict_init);
	j->len = 0;
	if (jsonbuf_put_bytes(j, head, sizeof(head)) < 0 ||
	    jsonbuf_pack(j, record, "phases", &record_dict) < 0)
		return -1;
	n = j->len - sizeof(head);
	put_be32(j->data + 1, (uint32_t)n);
	if (phases && jsonbuf_pack(j, phases, NULL, &record_dict) < 0)
		return -1;
	return 0;
}

/* The stored summary of JOB, or NULL (ENOENT, or EIO with err). With
 * RET_PHASES, also the phases stored in the same value (NULL when there
 * were none there) and in *RET_INLINE whether the value had them. */
int history_pack_record(struct jsonbuf *out, const cJSON *record)
{
	pthread_once(&record_dict_once, record_dict_init);
	out->len = 0;
	return jsonbuf_pack(out, record, NULL, &record_dict);
}

cJSON *history_unpack_record(const char *val, size_t len)
{
	if (len > 0 && val[0] == '{')
		return cJSON_ParseWithLength(val, len);
	pthread_once(&record_dict_once, record_dict_init);
	return jsonbuf_unpack(val, len, &record_dict);
}

static cJSON *get_summary_phases(struct history *h, uint32_t job,
				 cJSON **ret_phases, bool *ret_inline,
				 char *err, size_t errlen)
{
	struct key k;
	char *rerr = NULL, *val;
	size_t vlen;
	cJSON *j;

	key_job(&k, job);
	val = rocksdb_get_cf(h->db, h->ro, h->cf[CF_JOBS], k.buf, k.len, &vlen,
			     &rerr);
	if (rocks_err(rerr, err, errlen, "read") < 0)
		return NULL;
	if (!val) {
		errno = ENOENT;
		return NULL;
	}
	if (vlen >= 5 && val[0] == JOBS_PACKED &&
	    get_be32(val + 1) <= vlen - 5) {
		size_t n = get_be32(val + 1);

		pthread_once(&record_dict_once, record_dict_init);
		j = jsonbuf_unpack(val + 5, n, &record_dict);
		if (j && ret_phases) {
			*ret_phases = vlen > 5 + n
					  ? jsonbuf_unpack(val + 5 + n,
							   vlen - 5 - n,
							   &record_dict)
					  : NULL;
			*ret_inline = true;
		}
	} else {
		j = cJSON_ParseWithLength(val, vlen);
		if (j && ret_phases)
			*ret_inline = false;
	}
	free(val);
	if (!j)
		errmsg_fail(err, errlen, EIO,
			    "history: job %u: stored record is "
			    "damaged",
			    job);
	return j;
}

static cJSON *get_summary(struct history *h, uint32_t job, char *err,
			  size_t errlen)
{
	return get_summary_phases(h, job, NULL, NULL, err, errlen);
}

/* Queue the keys of RECORD (checked by jobfacts_check); J is scratch
 * space for the packed values. The caller has JOB registered in flight. */
static int queue_record(rocksdb_writebatch_t *b, struct history *h,
			const cJSON *record, uint32_t job, struct jsonbuf *j,
			char *err, size_t errlen)
{
	const cJSON *phases;
	cJSON *old;
	struct key k;

	phases = cJSON_GetObjectItemCaseSensitive(record, "phases");
	if (phases && !cJSON_IsArray(phases))
		return errmsg_fail(err, errlen, EINVAL,
				   "record %u: key 'phases': must be an array",
				   job);
	if (cJSON_GetArraySize(phases) > HISTORY_PHASES_MAX)
		return errmsg_fail(err, errlen, EINVAL,
				   "record %u: more than %d phases", job,
				   HISTORY_PHASES_MAX);
	old = get_summary(h, job, err, errlen);
	if (!old && errno != ENOENT)
		return -1;
	if (old)
		delete_job(b, h, job, old);
	cJSON_Delete(old);
	/* One jobs value: the record without its phases, then the phases,
	 * packed (see pack_jobs_value): a list or a replacement unpacks
	 * only the first part. */
	key_job(&k, job);
	if (pack_jobs_value(j, record, phases) < 0)
		goto nomem;
	rocksdb_writebatch_put_cf(b, h->cf[CF_JOBS], k.buf, k.len, j->data,
				  j->len);
	if (jobfacts_pack_record(j, record, err, errlen) < 0)
		return -1;
	if (index_keys(b, h, job, record, j->data, j->len, false) < 0)
		return errmsg_fail(err, errlen, EINVAL,
				   "record %u: user or job name too long", job);
	return 0;
nomem:
	return errmsg_fail(err, errlen, ENOMEM, "record %u: out of memory",
			   job);
}

/* --- concurrent filers --------------------------------------------------------- */

static bool inflight_has(const struct history *h, uint32_t job)
{
	if (!h->inflight_count[job % INFLIGHT_FILTER])
		return false;
	for (const struct inflight *t = h->inflight; t; t = t->next)
		for (size_t i = 0; i < t->n; i++)
			if (t->jobs[i] == job)
				return true;
	return false;
}

/* Register T, the N ids in JOBS (h->mu held), once none of them is in
 * flight: a second filing of a job waits for the first. JOBS stays the
 * caller's and must outlive the registration. */
static void inflight_enter(struct history *h, struct inflight *t,
			   const uint32_t *jobs, size_t n)
{
	for (size_t i = 0; i < n;) {
		if (inflight_has(h, jobs[i])) {
			pthread_cond_wait(&h->idle, &h->mu);
			i = 0;
		} else {
			i++;
		}
	}
	t->jobs = jobs;
	t->n = n;
	t->next = h->inflight;
	h->inflight = t;
	for (size_t i = 0; i < n; i++)
		h->inflight_count[jobs[i] % INFLIGHT_FILTER]++;
}

/* Release T (h->mu held) and wake the waiters. */
static void inflight_leave(struct history *h, struct inflight *t)
{
	struct inflight **pp = &h->inflight;

	while (*pp && *pp != t)
		pp = &(*pp)->next;
	if (*pp) {
		*pp = t->next;
		for (size_t i = 0; i < t->n; i++)
			h->inflight_count[t->jobs[i] % INFLIGHT_FILTER]--;
	}
	pthread_cond_broadcast(&h->idle);
}

static struct put_slot *slot_get(struct history *h)
{
	struct put_slot *s;

	pthread_mutex_lock(&h->mu);
	s = h->free_slots;
	if (s)
		h->free_slots = s->next;
	pthread_mutex_unlock(&h->mu);
	if (s)
		return s;
	s = calloc(1, sizeof(*s));
	if (s && !(s->batch = rocksdb_writebatch_create())) {
		free(s);
		s = NULL;
	}
	return s;
}

static void slot_put(struct history *h, struct put_slot *s)
{
	rocksdb_writebatch_clear(s->batch);
	pthread_mutex_lock(&h->mu);
	s->next = h->free_slots;
	h->free_slots = s;
	pthread_mutex_unlock(&h->mu);
}

/* Filing runs in two stages that callers on other threads overlap: the
 * records reduced to facts (no lock), then, with the job ids registered
 * in flight, the old keys read, the JSON printed and the batch written.
 * RocksDB groups concurrent writes and inserts them into the memtables in
 * parallel, so two filers on two cores file nearly twice as fast as one
 * (bench/history.c -t). Nothing is shared but the in-flight set. */
static void queue_aux(rocksdb_writebatch_t *b, struct history *h,
		      const struct history_aux *a)
{
	rocksdb_column_family_handle_t *cf = h->cf[CF_PARTS];

	if (a->op == HISTORY_AUX_PUT)
		rocksdb_writebatch_put_cf(b, cf, a->key, a->klen, a->val,
					  a->vlen);
	else if (a->op == HISTORY_AUX_DELETE)
		rocksdb_writebatch_delete_cf(b, cf, a->key, a->klen);
	else
		rocksdb_writebatch_delete_range_cf(b, cf, a->key, a->klen,
						   a->val, a->vlen);
}

int history_put_aux(struct history *h, const cJSON *const *records,
		    size_t n, const struct history_aux *aux, size_t naux,
		    unsigned flags, char *err, size_t errlen)
{
	struct put_slot *slot = NULL;
	struct inflight ticket;
	uint32_t *jobs = NULL;
	bool entered = false;
	char *rerr = NULL;
	size_t i;
	int rc = -1;

	if (!h)
		return errmsg_fail(err, errlen, EINVAL, "history: not open");
	if (h->read_only)
		return errmsg_fail(
		    err, errlen, EROFS,
		    "history is read-only (damaged database opened "
		    "for reading only)");
	if (n == 0 && naux == 0)
		return 0;
	if (naux && !h->cf[CF_PARTS])
		return errmsg_fail(err, errlen, EROFS,
				   "history: no parts family");
	jobs = calloc(n + 1, sizeof(*jobs));
	slot = slot_get(h);
	if (!jobs || !slot) {
		errmsg_fail(err, errlen, ENOMEM, "history: out of memory");
		goto out;
	}
	for (i = 0; i < n; i++) {
		if (jobfacts_check(records[i], err, errlen) < 0)
			goto out;
		jobs[i] = (uint32_t)jobfacts_num(records[i], "job", 0);
	}
	pthread_mutex_lock(&h->mu);
	inflight_enter(h, &ticket, jobs, n);
	pthread_mutex_unlock(&h->mu);
	entered = true;
	for (i = 0; i < n; i++)
		if (queue_record(slot->batch, h, records[i], jobs[i],
				 &slot->json, err, errlen) < 0)
			goto out;
	/* After the records: the caller's parts keys win over nothing of
	 * theirs, and are written (or not) with them. */
	for (i = 0; i < naux; i++)
		queue_aux(slot->batch, h, &aux[i]);
	rocksdb_write(h->db, (flags & HISTORY_PUT_SYNC) ? h->wo_sync : h->wo,
		      slot->batch, &rerr);
	rc = rocks_err(rerr, err, errlen, "write");
out:
	if (entered) {
		pthread_mutex_lock(&h->mu);
		inflight_leave(h, &ticket);
		pthread_mutex_unlock(&h->mu);
	}
	if (slot)
		slot_put(h, slot);
	free(jobs);
	return rc;
}

int history_put_many(struct history *h, const cJSON *const *records,
		     size_t n, unsigned flags, char *err, size_t errlen)
{
	return history_put_aux(h, records, n, NULL, 0, flags, err, errlen);
}

int history_put(struct history *h, const cJSON *record, unsigned flags,
		char *err, size_t errlen)
{
	return history_put_many(h, &record, 1, flags, err, errlen);
}

char *history_aux_get(struct history *h, const char *key, size_t klen,
		      size_t *ret_vlen, char *err, size_t errlen)
{
	char *rerr = NULL, *val;

	if (!h || !h->cf[CF_PARTS]) {
		errmsg_fail(err, errlen, ENOENT, "history: no parts family");
		return NULL;
	}
	val = rocksdb_get_cf(h->db, h->ro, h->cf[CF_PARTS], key, klen,
			     ret_vlen, &rerr);
	if (rocks_err(rerr, err, errlen, "read") < 0)
		return NULL;
	if (!val)
		errno = ENOENT;
	return val;
}

int history_aux_scan(struct history *h, const char *prefix, size_t plen,
		     int (*fn)(const char *key, size_t klen, const char *val,
			       size_t vlen, void *arg),
		     void *arg, char *err, size_t errlen)
{
	rocksdb_iterator_t *it;
	char *rerr = NULL;
	int rc = 0;

	if (!h || !fn)
		return errmsg_fail(err, errlen, EINVAL, "history: not open");
	if (!h->cf[CF_PARTS])
		return 0; /* an old history, read-only: no parts */
	it = rocksdb_create_iterator_cf(h->db, h->ro, h->cf[CF_PARTS]);
	for (rocksdb_iter_seek(it, prefix, plen); rocksdb_iter_valid(it);
	     rocksdb_iter_next(it)) {
		size_t klen, vlen;
		const char *key = rocksdb_iter_key(it, &klen);
		const char *val;

		if (klen < plen || memcmp(key, prefix, plen))
			break;
		val = rocksdb_iter_value(it, &vlen);
		if ((rc = fn(key, klen, val, vlen, arg)) != 0)
			break;
	}
	rocksdb_iter_get_error(it, &rerr);
	rocksdb_iter_destroy(it);
	if (rocks_err(rerr, err, errlen, "parts scan") < 0)
		return -1;
	return rc < 0 ? -1 : 0;
}

/* --- reading -------------------------------------------------------------------- */

cJSON *history_get(struct history *h, uint32_t job, char *err, size_t errlen)
{
	cJSON *rec, *phases = NULL;
	bool inline_phases = false;
	struct key k;
	char *rerr = NULL, *val;
	size_t vlen;

	if (!h) {
		errmsg_fail(err, errlen, EINVAL, "history: not open");
		return NULL;
	}
	rec = get_summary_phases(h, job, &phases, &inline_phases, err,
				 errlen);
	if (!rec) {
		if (errno == ENOENT)
			errmsg_fail(err, errlen, ENOENT,
				    "job %u: not in the history", job);
		return NULL;
	}
	if (inline_phases)
		goto done;
	/* filed before 2026-11-23: the phases under their own key */
	key_job(&k, job);
	val = rocksdb_get_cf(h->db, h->ro, h->cf[CF_PHASES], k.buf, k.len,
			     &vlen, &rerr);
	if (rocks_err(rerr, err, errlen, "read phases") < 0) {
		cJSON_Delete(rec);
		return NULL;
	}
	if (val)
		phases = cJSON_ParseWithLength(val, vlen);
	free(val);
done:
	cJSON_AddItemToObject(rec, "phases",
			      phases ? phases : cJSON_CreateArray());
	return rec;
}

/* The list form of a stored summary. */
static cJSON *list_entry(const cJSON *s)
{
	static const char *const keys[] = {
	    "job", "user", "uid", "job_name", "node", "state",
	    "profile_origin", "start", "end"};
	cJSON *e = cJSON_CreateObject(), *ds, *d;
	const cJSON *src;

	if (!e)
		return NULL;
	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
		const cJSON *v = cJSON_GetObjectItemCaseSensitive(s, keys[i]);

		if (v)
			cJSON_AddItemToObject(e, keys[i],
					      cJSON_Duplicate(v, 1));
	}
	ds = cJSON_AddArrayToObject(e, "datasets");
	cJSON_ArrayForEach(src, cJSON_GetObjectItemCaseSensitive(s,
								 "datasets"))
	{
		d = cJSON_CreateObject();
		if (!d || !ds)
			break;
		cJSON_AddItemToArray(ds, d);
		cJSON_AddStringToObject(d, "source",
					jobfacts_str(src, "source", ""));
		cJSON_AddNumberToObject(d, "bytes",
					jobfacts_num(src, "bytes", 0));
		cJSON_AddNumberToObject(d, "files",
					jobfacts_num(src, "files", 0));
		cJSON_AddStringToObject(d, "result",
					jobfacts_str(src, "result", ""));
	}
	return e;
}

struct found {
	uint64_t t;
	uint32_t job;
};

static int found_newest_first(const void *a, const void *b)
{
	const struct found *x = a, *y = b;

	if (x->t != y->t)
		return x->t < y->t ? 1 : -1;
	return x->job < y->job ? 1 : x->job > y->job ? -1 : 0;
}

/* Jobs (time, id) of the times index, newest first, or of USER's apps
 * keys; at most LIMIT with t >= SINCE. Returns the count or -1. */
static ssize_t find_jobs(struct history *h, const char *user, uint64_t since,
			 unsigned limit, struct found **ret, char *err,
			 size_t errlen)
{
	rocksdb_iterator_t *it;
	struct found *f;
	size_t n = 0, cap = user ? 1024 : limit, scanned = 0;
	char *rerr = NULL;
	struct key k = {0};

	f = malloc((cap ? cap : 1) * sizeof(*f));
	if (!f)
		return errmsg_fail(err, errlen, ENOMEM,
				   "history: out of memory");
	if (!user) {
		it = rocksdb_create_iterator_cf(h->db, h->ro, h->cf[CF_TIMES]);
		for (rocksdb_iter_seek_to_last(it);
		     rocksdb_iter_valid(it) && n < limit;
		     rocksdb_iter_prev(it)) {
			size_t klen;
			const char *key = rocksdb_iter_key(it, &klen);

			if (klen != 12)
				continue;
			if (get_be64(key) < since)
				break;
			f[n].t = get_be64(key);
			f[n++].job = get_be32(key + 8);
		}
	} else {
		key_str(&k, user);
		it = rocksdb_create_iterator_cf(h->db, h->ro, h->cf[CF_APPS]);
		for (rocksdb_iter_seek(it, k.buf, k.len);
		     rocksdb_iter_valid(it) && scanned < HISTORY_SCAN_MAX;
		     rocksdb_iter_next(it), scanned++) {
			size_t klen;
			const char *key = rocksdb_iter_key(it, &klen);
			uint64_t t;

			if (klen < k.len + 13 || memcmp(key, k.buf, k.len))
				break;
			t = ~get_be64(key + klen - 12);
			if (t < since)
				continue;
			if (n == cap) {
				struct found *g = realloc(f, 2 * cap *
							     sizeof(*f));
				if (!g)
					break;
				f = g;
				cap *= 2;
			}
			f[n].t = t;
			f[n++].job = get_be32(key + klen - 4);
		}
	}
	rocksdb_iter_get_error(it, &rerr);
	rocksdb_iter_destroy(it);
	if (rocks_err(rerr, err, errlen, "scan") < 0) {
		free(f);
		return -1;
	}
	qsort(f, n, sizeof(*f), found_newest_first);
	if (n > limit)
		n = limit;
	*ret = f;
	return (ssize_t)n;
}

cJSON *history_list(struct history *h, const char *user, double since,
		    unsigned limit, char *err, size_t errlen)
{
	struct found *f = NULL;
	cJSON *arr;
	ssize_t n;

	if (!h) {
		errmsg_fail(err, errlen, EINVAL, "history: not open");
		return NULL;
	}
	if (limit > HISTORY_LIST_MAX)
		limit = HISTORY_LIST_MAX;
	n = find_jobs(h, user, end_us(since), limit, &f, err, errlen);
	if (n < 0)
		return NULL;
	arr = cJSON_CreateArray();
	for (ssize_t i = 0; arr && i < n; i++) {
		cJSON *s = get_summary(h, f[i].job, err, errlen), *e;

		if (!s)
			continue; /* replaced between scan and read */
		e = list_entry(s);
		cJSON_Delete(s);
		if (e)
			cJSON_AddItemToArray(arr, e);
	}
	free(f);
	if (!arr)
		errmsg_fail(err, errlen, ENOMEM, "history: out of memory");
	return arr;
}

/* Facts under PREFIX (newest first by key), UID-filtered when UID >= 0,
 * in an arena (history_runs_free). */
static cJSON *scan_facts(struct history *h, enum history_cf cf,
			 const struct key *prefix, int64_t uid, double since,
			 unsigned max, char *err, size_t errlen)
{
	uint64_t since_us = end_us(since);
	rocksdb_iterator_t *it;
	size_t scanned = 0;
	unsigned found = 0;
	char *rerr = NULL;
	cJSON *arr;

	if (!h) {
		errmsg_fail(err, errlen, EINVAL, "history: not open");
		return NULL;
	}
	if (max > HISTORY_RUNS_MAX)
		max = HISTORY_RUNS_MAX;
	arr = jsonbuf_arena_array();
	if (!arr) {
		errmsg_fail(err, errlen, ENOMEM, "history: out of memory");
		return NULL;
	}
	it = rocksdb_create_iterator_cf(h->db, h->ro, h->cf[cf]);
	for (rocksdb_iter_seek(it, prefix->buf, prefix->len);
	     rocksdb_iter_valid(it) && found < max && scanned < HISTORY_SCAN_MAX;
	     rocksdb_iter_next(it), scanned++) {
		size_t klen, vlen;
		const char *key = rocksdb_iter_key(it, &klen);
		const char *val;
		cJSON *f;

		if (klen < prefix->len + 12 ||
		    memcmp(key, prefix->buf, prefix->len))
			break;
		/* by_app and by_dataset prefixes end right before the time:
		 * keys are newest first, the first old one ends the scan. */
		if (klen == prefix->len + 12 &&
		    ~get_be64(key + klen - 12) < since_us)
			break;
		if (~get_be64(key + klen - 12) < since_us)
			continue;
		val = rocksdb_iter_value(it, &vlen);
		if (cf == CF_DATASETS) {
			/* the value names the apps key holding the facts */
			char *fv = rocksdb_get_cf(h->db, h->ro, h->cf[CF_APPS],
						  val, vlen, &vlen, &rerr);

			if (rerr)
				break;
			f = fv ? jobfacts_unpack_into(arr, fv, vlen) : NULL;
			free(fv);
		} else {
			f = jobfacts_unpack_into(arr, val, vlen);
		}
		if (!f)
			continue;
		if (uid >= 0 && jobfacts_num(f, "uid", -1) != (double)uid) {
			cJSON_DetachItemViaPointer(arr, f); /* the arena's */
			continue;
		}
		found++;
	}
	rocksdb_iter_get_error(it, &rerr);
	rocksdb_iter_destroy(it);
	if (rocks_err(rerr, err, errlen, "scan") < 0) {
		jsonbuf_arena_free(arr);
		return NULL;
	}
	return arr;
}

void history_runs_free(cJSON *runs)
{
	jsonbuf_arena_free(runs);
}

cJSON *history_runs_by_app(struct history *h, const char *user,
			   const char *job_name, double since, unsigned max,
			   char *err, size_t errlen)
{
	struct key k = {0};

	if (!user || !job_name || key_str(&k, user) < 0 ||
	    key_str(&k, job_name) < 0) {
		errmsg_fail(err, errlen, EINVAL,
			    "history: user or job name too long");
		return NULL;
	}
	return scan_facts(h, CF_APPS, &k, -1, since, max, err, errlen);
}

cJSON *history_runs_by_dataset(struct history *h, const char *source,
			       int64_t uid, double since, unsigned max,
			       char *err, size_t errlen)
{
	struct key k = {0};

	if (!source || key_str(&k, source) < 0) {
		errmsg_fail(err, errlen, EINVAL,
			    "history: dataset path too long");
		return NULL;
	}
	return scan_facts(h, CF_DATASETS, &k, uid, since, max, err, errlen);
}

cJSON *history_runs_by_user(struct history *h, const char *user,
			    double since, unsigned max, char *err,
			    size_t errlen)
{
	struct key k = {0};

	if (!user || key_str(&k, user) < 0) {
		errmsg_fail(err, errlen, EINVAL, "history: user name too long");
		return NULL;
	}
	return scan_facts(h, CF_APPS, &k, -1, since, max, err, errlen);
}

int64_t history_count(struct history *h, char *err, size_t errlen)
{
	rocksdb_iterator_t *it;
	char *rerr = NULL;
	int64_t n = 0;

	if (!h)
		return errmsg_fail(err, errlen, EINVAL, "history: not open");
	it = rocksdb_create_iterator_cf(h->db, h->ro, h->cf[CF_TIMES]);
	for (rocksdb_iter_seek_to_first(it); rocksdb_iter_valid(it);
	     rocksdb_iter_next(it))
		n++;
	rocksdb_iter_get_error(it, &rerr);
	rocksdb_iter_destroy(it);
	if (rocks_err(rerr, err, errlen, "count") < 0)
		return -1;
	return n;
}

int history_foreach(struct history *h,
		    int (*fn)(cJSON *record, void *arg), void *arg,
		    unsigned *ret_unreadable, char *err, size_t errlen)
{
	rocksdb_iterator_t *it;
	char *rerr = NULL;
	unsigned bad = 0;
	int rc = 0;

	if (!h || !fn)
		return errmsg_fail(err, errlen, EINVAL, "history: not open");
	/* The times index holds every job once; the record is read by its id,
	 * so old histories' separate phases come with it. */
	it = rocksdb_create_iterator_cf(h->db, h->ro, h->cf[CF_TIMES]);
	for (rocksdb_iter_seek_to_first(it); rc == 0 && rocksdb_iter_valid(it);
	     rocksdb_iter_next(it)) {
		size_t klen;
		const char *key = rocksdb_iter_key(it, &klen);
		cJSON *rec;

		if (klen != 12) {
			bad++;
			continue;
		}
		rec = history_get(h, get_be32(key + 8), NULL, 0);
		if (!rec) {
			bad++;
			continue;
		}
		rc = fn(rec, arg);
		if (rc < 0)
			errmsg_fail(err, errlen, errno ? errno : EIO,
				    "history: stopped at job %u",
				    get_be32(key + 8));
	}
	if (rc == 0) {
		rocksdb_iter_get_error(it, &rerr);
		rc = rocks_err(rerr, err, errlen, "walk");
	}
	rocksdb_iter_destroy(it);
	if (ret_unreadable)
		*ret_unreadable = bad;
	return rc < 0 ? -1 : 0;
}

size_t history_parts_prefix(uint32_t job, char *buf)
{
	buf[0] = HISTORY_PARTS_TAG;
	put_be32(buf + 1, job);
	return HISTORY_PARTS_PREFIX_LEN;
}

/* Queue the deletion of every parts key of JOB: [prefix(job),
 * prefix(job + 1)). */
static void delete_parts(rocksdb_writebatch_t *b, struct history *h,
			 uint32_t job)
{
	char from[HISTORY_PARTS_PREFIX_LEN], to[HISTORY_PARTS_PREFIX_LEN];
	size_t tolen = HISTORY_PARTS_PREFIX_LEN;

	history_parts_prefix(job, from);
	if (job < UINT32_MAX) {
		history_parts_prefix(job + 1, to);
	} else {
		to[0] = HISTORY_PARTS_TAG + 1;
		tolen = 1;
	}
	rocksdb_writebatch_delete_range_cf(b, h->cf[CF_PARTS], from,
					   HISTORY_PARTS_PREFIX_LEN, to, tolen);
}

int history_expire(struct history *h, double cutoff, unsigned max,
		   unsigned *ret_deleted, char *err, size_t errlen)
{
	uint64_t cut = end_us(cutoff);
	uint32_t held[HISTORY_EXPIRE_BATCH];
	unsigned deleted = 0;
	int rc = 0;

	if (!h)
		return errmsg_fail(err, errlen, EINVAL, "history: not open");
	if (h->read_only)
		return errmsg_fail(err, errlen, EROFS, "history is read-only");
	while (rc == 0 && deleted < max) {
		rocksdb_iterator_t *it;
		rocksdb_writebatch_t *b = rocksdb_writebatch_create();
		char *rerr = NULL;
		unsigned inbatch = 0;
		struct inflight ticket;
		bool busy;

		/* held[] fills as the batch goes: registered empty first */
		pthread_mutex_lock(&h->mu);
		inflight_enter(h, &ticket, held, 0);
		pthread_mutex_unlock(&h->mu);
		it = rocksdb_create_iterator_cf(h->db, h->ro, h->cf[CF_TIMES]);
		for (rocksdb_iter_seek_to_first(it);
		     rocksdb_iter_valid(it) && inbatch < HISTORY_EXPIRE_BATCH &&
		     deleted + inbatch < max;
		     rocksdb_iter_next(it)) {
			size_t klen;
			const char *key = rocksdb_iter_key(it, &klen);
			uint32_t job;
			cJSON *s;

			if (klen != 12 || get_be64(key) >= cut)
				break;
			job = get_be32(key + 8);
			/* A job being filed right now is left for the next
			 * pass: its old keys are that filer's to replace. */
			pthread_mutex_lock(&h->mu);
			busy = inflight_has(h, job);
			if (!busy) {
				held[ticket.n++] = job;
				h->inflight_count[job % INFLIGHT_FILTER]++;
			}
			pthread_mutex_unlock(&h->mu);
			if (busy)
				continue;
			s = get_summary(h, job, NULL, 0);
			if (s && end_us(jobfacts_num(s, "end", 0)) ==
				     get_be64(key)) {
				delete_job(b, h, job, s);
				/* A multi-node job's parts go with it. */
				if (h->cf[CF_PARTS] &&
				    cJSON_HasObjectItem(s, "nodes"))
					delete_parts(b, h, job);
			} else {
				/* An index key without its job: drop it. */
				rocksdb_writebatch_delete_cf(
				    b, h->cf[CF_TIMES], key, klen);
			}
			cJSON_Delete(s);
			inbatch++;
		}
		rocksdb_iter_get_error(it, &rerr);
		rocksdb_iter_destroy(it);
		rc = rocks_err(rerr, err, errlen, "expire scan");
		if (rc == 0 && inbatch > 0) {
			rocksdb_write(h->db, h->wo, b, &rerr);
			rc = rocks_err(rerr, err, errlen, "expire");
		}
		rocksdb_writebatch_destroy(b);
		pthread_mutex_lock(&h->mu);
		inflight_leave(h, &ticket);
		pthread_mutex_unlock(&h->mu);
		deleted += inbatch;
		if (inbatch < HISTORY_EXPIRE_BATCH)
			break;
	}
	if (ret_deleted)
		*ret_deleted = deleted;
	return rc;
}

/* --- the daemon's history ---------------------------------------------------- */

static struct history *g_history;
static const struct conf *g_conf;
static char g_why[CONF_ERR_MAX] = "not started";
static pthread_mutex_t g_expire_lock = PTHREAD_MUTEX_INITIALIZER;
static time_t g_expired_at;

const struct conf *history_conf(void)
{
	return g_conf;
}

static void history_apply_retention(void)
{
	char err[CONF_ERR_MAX];
	unsigned deleted = 0;
	time_t now = time(NULL);

	if (!g_history || g_history->read_only || !g_conf->history_retention)
		return;
	if (pthread_mutex_trylock(&g_expire_lock) != 0)
		return; /* another thread is at it */
	if (g_expired_at && now - g_expired_at < HISTORY_EXPIRE_EVERY_S)
		goto out;
	g_expired_at = now;
	if (history_expire(g_history,
			   (double)now - (double)g_conf->history_retention,
			   HISTORY_EXPIRE_MAX, &deleted, err, sizeof(err)) < 0)
		log_warningx("%s", err);
	else if (deleted)
		log_info("history: %u job record%s older than "
			 "HistoryRetention removed",
			 deleted, deleted == 1 ? "" : "s");
out:
	pthread_mutex_unlock(&g_expire_lock);
}

void history_dir(const struct conf *conf, char *buf, size_t buflen)
{
	snprintf(buf, buflen, "%s/%s",
		 strcmp(conf->state_dir, "/") ? conf->state_dir : "",
		 HISTORY_DIR_NAME);
}

int history_make_state_dir(const struct conf *conf)
{
	char buf[CONF_PATH_MAX];

	snprintf(buf, sizeof(buf), "%s", conf->state_dir);
	for (char *p = buf + 1;; p++) {
		if (*p == '/' || !*p) {
			char c = *p;

			*p = '\0';
			if (mkdir(buf, 0755) < 0 && errno != EEXIST)
				return -1;
			*p = c;
			if (!c)
				return 0;
		}
	}
}

void history_init_remote(const struct conf *conf)
{
	g_conf = conf;
	snprintf(g_why, sizeof(g_why),
		 "kept by iostagectld at %s port %u (ControllerHost=), not on "
		 "this node",
		 conf->controller_host, conf->controller_port);
	log_info("history: %s", g_why);
}

void history_init(const struct conf *conf)
{
	char dir[CONF_PATH_MAX + 16], err[CONF_ERR_MAX];

	g_conf = conf;
	history_dir(conf, dir, sizeof(dir));
	g_history = history_open(dir, HISTORY_READ_WRITE, err, sizeof(err));
	if (!g_history) {
		char ro_err[CONF_ERR_MAX];

		/* Reading may still work where writing does not (e.g. a
		 * damaged WAL): recorded jobs stay visible. */
		g_history = history_open(dir, HISTORY_READ_ONLY, ro_err,
					 sizeof(ro_err));
		if (g_history) {
			snprintf(g_why, sizeof(g_why), "%s", err);
			log_errorx("%s; opened read-only: recorded jobs stay "
				   "readable, new ones are not filed; staging "
				   "goes on (%s --repair-history "
				   "recovers it)",
				   err, program_invocation_short_name);
			return;
		}
		snprintf(g_why, sizeof(g_why), "%s", err);
		log_errorx("history disabled: %s; staging goes on, nothing "
			   "there was changed (%s --repair-history "
			   "recovers it)",
			   err, program_invocation_short_name);
		return;
	}
	g_why[0] = '\0';
	log_info("history: %s open", dir);
	history_apply_retention();
}

void history_fini(void)
{
	history_close(g_history);
	g_history = NULL;
	snprintf(g_why, sizeof(g_why), "stopped");
}

struct history *history_db(char *why, size_t whylen)
{
	if (!g_history)
		snprintf(why, whylen, "history disabled: %s", g_why);
	return g_history;
}

int history_record_job(const cJSON *record, char *err, size_t errlen)
{
	struct history *h = history_db(err, errlen);

	if (!h)
		return -1;
	if (h->read_only)
		return errmsg_fail(err, errlen, EROFS, "history read-only: %s",
				   g_why);
	if (history_put(h, record, HISTORY_PUT_SYNC, err, errlen) < 0)
		return -1;
	history_apply_retention();
	return 0;
}

int history_repair_main(const char *prog, int argc, char **argv)
{
	char dir[CONF_PATH_MAX + 16], err[CONF_ERR_MAX], copy[4096];
	const char *conf_path = IOSTAGE_CONF_PATH;
	static struct conf conf;
	int64_t jobs = 0;

	for (int i = 1; i < argc; i++) {
		if ((!strcmp(argv[i], "-c") || !strcmp(argv[i], "--config")) &&
		    i + 1 < argc) {
			conf_path = argv[++i];
		} else {
			fprintf(stderr, "usage: %s --repair-history "
					"[-c CONF]\n", prog);
			return 2;
		}
	}
	conf_set_defaults(&conf);
	if (conf_load(conf_path, &conf, err, sizeof(err)) < 0) {
		fprintf(stderr, "%s: %s\n", prog, err);
		return 1;
	}
	history_dir(&conf, dir, sizeof(dir));
	if (history_repair(dir, &jobs, copy, sizeof(copy), err, sizeof(err)) <
	    0) {
		fprintf(stderr, "%s: --repair-history: %s\n", prog, err);
		return 1;
	}
	printf("%s: history %s repaired: %lld job%s readable; the "
	       "damaged files are kept in %s; restart %s to use it\n",
	       prog, dir, (long long)jobs, jobs == 1 ? "" : "s", copy, prog);
	return 0;
}
