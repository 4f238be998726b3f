/* history_store.c - opening and closing the history's RocksDB database:
 * its options (compaction, memtables, caches), its column families, and
 * the refusal to open over a directory that looks damaged.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include <rocksdb/c.h>

#include "common/base/errmsg.h"
#include "common/history/history_int.h"

static const char *const cf_names[CF_COUNT] = {
	[CF_DEFAULT] = "default",   [CF_JOBS] = "jobs",
	[CF_PHASES] = "phases",     [CF_APPS] = "apps",
	[CF_DATASETS] = "datasets", [CF_TIMES] = "times",
	[CF_PARTS] = "parts",
};

int hist_rocks_err(char *rerr, char *err, size_t errlen, const char *what)
{
	if (!rerr)
		return 0;
	errmsg_fail(err, errlen, EIO, "history: %s: %s", what, rerr);
	free(rerr);
	return -1;
}

int hist_dir_entries(const char *dir, bool *ret_current)
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
		int levels[7] = {
			rocksdb_no_compression,  rocksdb_no_compression,
			rocksdb_lz4_compression, rocksdb_lz4_compression,
			rocksdb_lz4_compression, rocksdb_lz4_compression,
			rocksdb_lz4_compression
		};

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
	return hist_open_cfs(dir, mode, false, err, errlen);
}

struct history *hist_open_cfs(const char *dir, enum history_open_mode mode,
			      bool create_cfs, char *err, size_t errlen)
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
	n = hist_dir_entries(dir, &has_current);
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
		h->db = rocksdb_open_column_families(h->opts, dir, (int)ncf,
						     cf_names, cf_opts, h->cf,
						     &rerr);
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
