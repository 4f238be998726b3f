/* fuzz_history_value.c - values read back from the history database
 * (common/history/history_value.c, history_query.c, jobfacts.c,
 * common/base/jsonbuf.c): a damaged or foreign database must answer
 * "damaged", never crash the service.
 * The first byte picks the path: 0 a packed record (jsonbuf_unpack with the
 * record dictionary; what unpacks must pack and unpack to the same tree,
 * compared as printed JSON: cJSON_Compare finds two equal objects with a
 * repeated key unequal; a record's facts packed straight must be the bytes of
 * its facts tree packed), 1 a job's facts (jobfacts_unpack, and into a query's
 * arena: the same tree), 2 the whole read of a job's stored value (history_get
 * on a real RocksDB in the scratch directory). history_int.h gives the
 * dictionary, the key helpers and the handle's insides; the history's
 * modules are linked, not included. */
#include "tests/fuzz/fuzz.h"

#include "common/base/smallfile.h"
#include "common/history/history_int.h"
#include "common/history/jobfacts.h"

static struct history *db;

/* Seeds: the records of tests/unit/fixtures/records.json as the history
 * stores them (packed record, packed facts, the whole jobs value). */
static void seeds(void)
{
	char reason[128], err[CONF_ERR_MAX], name[32], *text;
	struct jsonbuf b = { 0 };
	const cJSON *rec;
	cJSON *all;
	int i = 0;

	text = smallfile_read(FUZZ_SRCDIR "/tests/unit/fixtures/records.json",
			      1 << 20, reason, sizeof(reason));
	all = text ? cJSON_Parse(text) : NULL;
	if (!all)
		exit(2);
	cJSON_ArrayForEach(rec, all) {
		cJSON *facts = jobfacts_from_record(rec, err, sizeof(err));
		const cJSON *ph = cJSON_GetObjectItemCaseSensitive(rec,
								   "phases");
		char *v;

		b.len = 0;
		if (jsonbuf_put_bytes(&b, "\0", 1) < 0 ||
		    jsonbuf_pack(&b, rec, "phases", hist_record_dict()) < 0)
			exit(2);
		snprintf(name, sizeof(name), "record%d", i);
		fuzz_write_seed(name, b.data, b.len);
		if (facts) {
			jsonbuf_fini(&b);
			if (jobfacts_pack(&b, facts) < 0 ||
			    !(v = malloc(b.len + 1)))
				exit(2);
			v[0] = 1;
			memcpy(v + 1, b.data, b.len);
			snprintf(name, sizeof(name), "facts%d", i);
			fuzz_write_seed(name, v, b.len + 1);
			free(v);
			cJSON_Delete(facts);
		}
		if (hist_pack_jobs_value(&b, rec, ph) < 0 ||
		    !(v = malloc(b.len + 1)))
			exit(2);
		v[0] = 2;
		memcpy(v + 1, b.data, b.len);
		snprintf(name, sizeof(name), "stored%d", i);
		fuzz_write_seed(name, v, b.len + 1);
		free(v);
		i++;
	}
	cJSON_Delete(all);
	free(text);
	jsonbuf_fini(&b);
	exit(0);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	char err[CONF_ERR_MAX], dir[CONF_PATH_MAX];

	(void)argc;
	(void)argv;
	if (getenv("FUZZ_WRITE_SEEDS"))
		seeds();
	log_init("fuzz", false, LOG_LEVEL_ERROR);
	snprintf(dir, sizeof(dir), "%s/history", fuzz_scratch());
	db = history_open(dir, HISTORY_READ_WRITE, err, sizeof(err));
	if (!db) {
		fprintf(stderr, "fuzz: %s\n", err);
		exit(2);
	}
	return 0;
}

/* A record's facts, written straight in packed form at filing, must be
 * the very bytes of the facts tree's packing, and refused alike. */
static void facts_both_ways(const cJSON *rec)
{
	char err[CONF_ERR_MAX], err2[CONF_ERR_MAX];
	struct jsonbuf direct = { 0 }, via_tree = { 0 };
	cJSON *facts = jobfacts_from_record(rec, err, sizeof(err));
	int rc = jobfacts_pack_record(&direct, rec, err2, sizeof(err2));

	if (!facts != (rc < 0))
		abort(); /* one path refused what the other took */
	if (facts && (jobfacts_pack(&via_tree, facts) < 0 ||
		      via_tree.len != direct.len ||
		      memcmp(via_tree.data, direct.data, direct.len))) {
		fprintf(stderr, "packed facts differ from the tree's\n");
		abort();
	}
	cJSON_Delete(facts);
	jsonbuf_fini(&direct);
	jsonbuf_fini(&via_tree);
}

/* Stored facts read into a query's arena must read as the heap's. */
static void facts_in_arena(const char *val, size_t len)
{
	cJSON *heap = jobfacts_unpack(val, len);
	cJSON *runs = jsonbuf_arena_array();
	cJSON *f = runs ? jobfacts_unpack_into(runs, val, len) : NULL;
	char *t1, *t2;

	if (!runs) {
		cJSON_Delete(heap);
		return;
	}
	if (!heap != !f)
		abort();
	if (heap) {
		t1 = cJSON_PrintUnformatted(heap);
		t2 = cJSON_PrintUnformatted(f);
		if (t1 && t2 && strcmp(t1, t2))
			abort();
		free(t1);
		free(t2);
	}
	cJSON_Delete(heap);
	history_runs_free(runs);
}

static void packed(const uint8_t *data, size_t size)
{
	const struct jsonbuf_dict *dict = hist_record_dict();
	struct jsonbuf b = { 0 };
	cJSON *j, *back;
	char *t1, *t2;

	j = jsonbuf_unpack(data, size, dict);
	if (!j)
		return;
	if (jsonbuf_pack(&b, j, NULL, dict) < 0) {
		/* Only a tree too deep to pack may fail (ELOOP). */
		if (errno != ELOOP)
			abort();
		cJSON_Delete(j);
		jsonbuf_fini(&b);
		return;
	}
	back = jsonbuf_unpack(b.data, b.len, dict);
	t1 = cJSON_PrintUnformatted(j);
	t2 = back ? cJSON_PrintUnformatted(back) : NULL;
	if (!t1 || !t2 || strcmp(t1, t2)) {
		fprintf(stderr,
			"packed tree changes on a round trip:\n%s\n%s\n",
			t1 ? t1 : "?", t2 ? t2 : "?");
		abort();
	}
	free(t1);
	free(t2);
	facts_both_ways(j);
	cJSON_Delete(back);
	cJSON_Delete(j);
	jsonbuf_fini(&b);
}

static void stored(const uint8_t *data, size_t size)
{
	char err[CONF_ERR_MAX], *rerr = NULL;
	struct key k;
	cJSON *rec;

	key_job(&k, 7);
	rocksdb_put_cf(db->db, db->wo, db->cf[CF_JOBS], k.buf, k.len,
		       (const char *)data, size, &rerr);
	if (rerr) {
		fprintf(stderr, "fuzz: put: %s\n", rerr);
		abort();
	}
	rec = history_get(db, 7, err, sizeof(err));
	cJSON_Delete(rec);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	cJSON *f;

	if (size < 1)
		return 0;
	switch (data[0] % 3) {
	case 0:
		packed(data + 1, size - 1);
		break;
	case 1:
		f = jobfacts_unpack((const char *)data + 1, size - 1);
		cJSON_Delete(f);
		facts_in_arena((const char *)data + 1, size - 1);
		break;
	default:
		stored(data + 1, size - 1);
		break;
	}
	return 0;
}
