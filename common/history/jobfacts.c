/* jobfacts.c - reduce a job record to the figures the rules read. */
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/history/jobfacts.h"

#define JOBFACTS_NAME_MAX 256   /* user and job name bytes in keys */
#define JOBFACTS_SMALL_MAX 4    /* buckets 0..4 hold requests < 1 MiB */
#define JOBFACTS_PROCS_MAX 4096 /* processes a record lists at most */

const char *const jobfacts_buckets[JOBFACTS_NBUCKETS] = {
	"0_100", "100_1K", "1K_10K",   "10K_100K", "100K_1M",
	"1M_4M", "4M_10M", "10M_100M", "100M_1G",  "1G_PLUS",
};

/* The counters' names for the buckets, spelled out: building them with
 * snprintf for every record was a few percent of filing (bench). */
static const char *const write_size_keys[JOBFACTS_NBUCKETS] = {
	"POSIX_SIZE_WRITE_0_100",   "POSIX_SIZE_WRITE_100_1K",
	"POSIX_SIZE_WRITE_1K_10K",  "POSIX_SIZE_WRITE_10K_100K",
	"POSIX_SIZE_WRITE_100K_1M", "POSIX_SIZE_WRITE_1M_4M",
	"POSIX_SIZE_WRITE_4M_10M",  "POSIX_SIZE_WRITE_10M_100M",
	"POSIX_SIZE_WRITE_100M_1G", "POSIX_SIZE_WRITE_1G_PLUS",
};

double jobfacts_bucket_max(size_t i)
{
	static const double max[JOBFACTS_NBUCKETS] = {
		100,     1024,     10240,     102400,     1048576,
		4194304, 10485760, 104857600, 1073741824, 1.8e19
	};

	return i < JOBFACTS_NBUCKETS ? max[i] : 1.8e19;
}

/* The packed facts' key dictionary: part of the stored format, so only
 * ever append (a key not listed is stored spelled out). */
static const char *const pack_keys[] = {
	"job",     "user",      "uid",   "job_name", "end",    "run_s",
	"ds",      "src",       "bytes", "files",    "tier",   "result",
	"stage_s", "rd",        "ops",   "small",    "seq",    "consec",
	"time",    "meta_time", "ck",    "n",        "io_s",   "unov_s",
	"out",     "dest",      "name",  "drain",    "shared", "fpp",
	"hist",    "wr",        "sizes", "maxf",     "tasks",  "nodes",
	"spread",
};

static struct jsonbuf_dict pack_dict;
static pthread_once_t pack_dict_once = PTHREAD_ONCE_INIT;

static void pack_dict_init(void)
{
	jsonbuf_dict_init(&pack_dict, pack_keys,
			  sizeof(pack_keys) / sizeof(pack_keys[0]));
}

int jobfacts_pack(struct jsonbuf *out, const cJSON *facts)
{
	pthread_once(&pack_dict_once, pack_dict_init);
	out->len = 0;
	return jsonbuf_pack(out, facts, NULL, &pack_dict);
}

cJSON *jobfacts_unpack(const char *val, size_t len)
{
	cJSON *f;

	if (!val || len == 0) {
		errno = EINVAL;
		return NULL;
	}
	if (val[0] == '{') {
		f = cJSON_ParseWithLength(val, len);
		if (!f)
			errno = EINVAL;
		return f;
	}
	pthread_once(&pack_dict_once, pack_dict_init);
	return jsonbuf_unpack(val, len, &pack_dict);
}

cJSON *jobfacts_unpack_into(cJSON *runs, const char *val, size_t len)
{
	struct jsonbuf b = { 0 };
	cJSON *f;

	if (!val || len == 0) {
		errno = EINVAL;
		return NULL;
	}
	pthread_once(&pack_dict_once, pack_dict_init);
	if (val[0] != '{')
		return jsonbuf_arena_unpack(runs, val, len, &pack_dict);
	/* JSON text of a history before the packed form: packed first */
	f = jobfacts_unpack(val, len);
	if (!f || jobfacts_pack(&b, f) < 0) {
		cJSON_Delete(f);
		jsonbuf_fini(&b);
		errno = EINVAL;
		return NULL;
	}
	cJSON_Delete(f);
	f = jsonbuf_arena_unpack(runs, b.data, b.len, &pack_dict);
	jsonbuf_fini(&b);
	return f;
}

double jobfacts_num(const cJSON *obj, const char *key, double def)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);

	return cJSON_IsNumber(v) && isfinite(v->valuedouble) ? v->valuedouble
							     : def;
}

const char *jobfacts_str(const cJSON *obj, const char *key, const char *def)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);

	return cJSON_IsString(v) && v->valuestring ? v->valuestring : def;
}

/* --- many members at once ----------------------------------------------------- *
 *
 * A record's counters are an object of ~60 Darshan names; looking up a
 * dozen of them one by one compared each against half the object
 * (cJSON's members are a list): strcmp was the top cost of filing a
 * record (bench/README.md). nums_of walks the object once and matches
 * each member by a hash of its name, comparing strings only on a hash
 * match. */

#define NUMS_MAX 24 /* keys one call looks up */

static uint32_t name_hash(const char *s)
{
	uint32_t h = 2166136261u; /* FNV-1a */

	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 16777619u;
	return h;
}

/* OUT[i]: OBJ's number named KEYS[i] (N <= NUMS_MAX), or DEF when absent,
 * not a number or not finite, as jobfacts_num gives it. */
static void nums_of(const cJSON *obj, const char *const *keys, size_t n,
		    double *out, double def)
{
	uint32_t want[NUMS_MAX];
	bool seen[NUMS_MAX] = { false };
	const cJSON *c;

	for (size_t i = 0; i < n; i++) {
		want[i] = name_hash(keys[i]);
		out[i] = def;
	}
	if (!cJSON_IsObject(obj))
		return;
	cJSON_ArrayForEach(c, obj) {
		uint32_t h;

		if (!c->string)
			continue;
		h = name_hash(c->string);
		for (size_t i = 0; i < n; i++)
			if (want[i] == h && !seen[i] &&
			    !strcmp(keys[i], c->string)) {
				/* the first of equal names counts, as with
				 * cJSON's lookup */
				seen[i] = true;
				if (cJSON_IsNumber(c) &&
				    isfinite(c->valuedouble))
					out[i] = c->valuedouble;
				break;
			}
	}
}

/* A non-negative measured number, or -1 when it was not measured. */
static double measured(const cJSON *obj, const char *key)
{
	double v = jobfacts_num(obj, key, -1);

	return v >= 0 ? v : -1;
}

/* --- where the facts go ------------------------------------------------------- *
 *
 * One walk of the record writes the facts either as a cJSON tree
 * (jobfacts_from_record: the rules' tests, the CLI) or straight in the
 * packed form the history stores (jobfacts_pack_record: filing, where
 * building and freeing the tree only to pack it was a tenth of the
 * service's CPU per job). The sink keeps the open containers; the first
 * failure sticks and is reported at the end. */

#define SINK_DEPTH 4 /* facts, a list, an entry, its histogram */

struct sink {
	struct jsonbuf *out;     /* packed; NULL for the tree */
	cJSON *tree[SINK_DEPTH]; /* the tree's open containers */
	size_t at[SINK_DEPTH];   /* packed: where each count goes */
	uint64_t n[SINK_DEPTH];  /* packed: values written in each */
	bool object[SINK_DEPTH];
	int depth; /* open containers */
	bool failed;
};

/* Packed: KEY (inside an object) before a value, counted. */
static void sink_key(struct sink *s, const char *key)
{
	if (s->depth == 0)
		return; /* the facts object itself */
	s->n[s->depth - 1]++;
	if (s->object[s->depth - 1] &&
	    jsonbuf_pack_key(s->out, key, &pack_dict) < 0)
		s->failed = true;
}

/* Tree: ITEM into the open container, under KEY in an object. */
static void sink_add(struct sink *s, const char *key, cJSON *item)
{
	cJSON *top = s->tree[s->depth - 1];

	if (!item ||
	    !(s->object[s->depth - 1] ? cJSON_AddItemToObject(top, key, item)
				      : cJSON_AddItemToArray(top, item))) {
		cJSON_Delete(item);
		s->failed = true;
	}
}

static void sink_num(struct sink *s, const char *key, double v)
{
	if (s->failed)
		return;
	if (s->out) {
		sink_key(s, key);
		if (jsonbuf_pack_number(s->out, v) < 0)
			s->failed = true;
	} else {
		sink_add(s, key, cJSON_CreateNumber(v));
	}
}

static void sink_str(struct sink *s, const char *key, const char *v)
{
	if (s->failed)
		return;
	if (s->out) {
		sink_key(s, key);
		if (jsonbuf_pack_string(s->out, v) < 0)
			s->failed = true;
	} else {
		sink_add(s, key, cJSON_CreateString(v));
	}
}

/* Open an object (OBJECT) or array under KEY (NULL in an array and for
 * the facts object itself). */
static void sink_open(struct sink *s, const char *key, bool object)
{
	if (s->failed)
		return;
	if (s->depth == SINK_DEPTH) {
		s->failed = true;
		return;
	}
	if (s->out) {
		sink_key(s, key);
		if (jsonbuf_pack_open(s->out, object, &s->at[s->depth]) < 0)
			s->failed = true;
		s->n[s->depth] = 0;
	} else {
		cJSON *c = object ? cJSON_CreateObject() : cJSON_CreateArray();

		if (s->depth > 0)
			sink_add(s, key, c);
		else if (!c)
			s->failed = true;
		s->tree[s->depth] = c;
	}
	s->object[s->depth++] = object;
}

static void sink_close(struct sink *s)
{
	if (s->failed)
		return;
	s->depth--;
	if (s->out &&
	    jsonbuf_pack_close(s->out, s->at[s->depth], s->n[s->depth]) < 0)
		s->failed = true;
}

/* An array of N numbers under KEY. */
static void sink_nums(struct sink *s, const char *key, const double *v,
		      size_t n)
{
	sink_open(s, key, false);
	for (size_t i = 0; i < n; i++)
		sink_num(s, NULL, v[i]);
	sink_close(s);
}

/* KEY of SRC as NEWKEY when it was measured. */
static void copy_measured(struct sink *s, const char *newkey, const cJSON *src,
			  const char *key)
{
	double v = measured(src, key);

	if (v >= 0)
		sink_num(s, newkey, v);
}

static const cJSON *find_phase(const cJSON *phases, const char *name)
{
	const cJSON *p;

	cJSON_ArrayForEach(p, phases)
		if (strcmp(jobfacts_str(p, "name", ""), name) == 0)
			return p;
	return NULL;
}

/* "rd": the run phase's dataset-class shim counters. */
static void add_reads(struct sink *s, const cJSON *counters)
{
	enum { OPS, BYTES, SEQ, CONSEC, TIME, META, SMALL0 };
	static const char *const keys[SMALL0 + JOBFACTS_SMALL_MAX + 1] = {
		"POSIX_READS",
		"POSIX_BYTES_READ",
		"POSIX_SEQ_READS",
		"POSIX_CONSEC_READS",
		"POSIX_F_READ_TIME",
		"POSIX_F_META_TIME",
		/* SMALL0...: the read size buckets 0..JOBFACTS_SMALL_MAX */
		"POSIX_SIZE_READ_0_100",
		"POSIX_SIZE_READ_100_1K",
		"POSIX_SIZE_READ_1K_10K",
		"POSIX_SIZE_READ_10K_100K",
		"POSIX_SIZE_READ_100K_1M",
	};
	double v[sizeof(keys) / sizeof(keys[0])], small = 0;

	if (!cJSON_IsObject(counters))
		return;
	/* absent is NaN: not >= 0, and fmax(0, NaN) is 0 */
	nums_of(counters, keys, sizeof(keys) / sizeof(keys[0]), v, NAN);
	if (!(v[OPS] >= 0))
		return; /* no shim counters: no read facts */
	for (size_t i = 0; i <= JOBFACTS_SMALL_MAX; i++)
		small += fmax(0, v[SMALL0 + i]);
	sink_open(s, "rd", true);
	sink_num(s, "ops", v[OPS]);
	sink_num(s, "bytes", fmax(0, v[BYTES]));
	sink_num(s, "small", small);
	sink_num(s, "seq", fmax(0, v[SEQ]));
	sink_num(s, "consec", fmax(0, v[CONSEC]));
	if (v[TIME] >= 0)
		sink_num(s, "time", v[TIME]);
	if (v[META] >= 0)
		sink_num(s, "meta_time", v[META]);
	sink_close(s);
}

/* "wr": the run phase's output-class write counters. */
static void add_writes(struct sink *s, const cJSON *counters)
{
	enum { OPS, BYTES, SIZE0 };
	const char *keys[SIZE0 + JOBFACTS_NBUCKETS] = { "POSIX_WRITES",
							"POSIX_BYTES_WRITTEN" };
	double v[SIZE0 + JOBFACTS_NBUCKETS], sizes[JOBFACTS_NBUCKETS];

	if (!cJSON_IsObject(counters))
		return;
	for (size_t i = 0; i < JOBFACTS_NBUCKETS; i++)
		keys[SIZE0 + i] = write_size_keys[i];
	nums_of(counters, keys, SIZE0 + JOBFACTS_NBUCKETS, v, NAN);
	if (!(v[OPS] >= 0))
		return;
	for (size_t i = 0; i < JOBFACTS_NBUCKETS; i++)
		sizes[i] = fmax(0, v[SIZE0 + i]);
	sink_open(s, "wr", true);
	sink_num(s, "ops", v[OPS]);
	sink_num(s, "bytes", fmax(0, v[BYTES]));
	sink_nums(s, "sizes", sizes, JOBFACTS_NBUCKETS);
	sink_close(s);
}

/* "ck": checkpoint sub-phases that measured their unoverlapped I/O. */
static void add_checkpoints(struct sink *s, const cJSON *phases)
{
	double io = 0, unov = 0, n = 0;
	const cJSON *p;

	cJSON_ArrayForEach(p, phases) {
		double u;

		if (strcmp(jobfacts_str(p, "name", ""), "checkpoint") != 0)
			continue;
		u = measured(p, "unoverlapped_io_seconds");
		if (u < 0)
			continue;
		unov += u;
		io += fmax(0, jobfacts_num(p, "io_seconds", u));
		n++;
	}
	if (n == 0)
		return;
	sink_open(s, "ck", true);
	sink_num(s, "n", n);
	sink_num(s, "io_s", io);
	sink_num(s, "unov_s", unov);
	sink_close(s);
}

/* The drain policy the job's profile gave output NAME, or NULL. */
static const char *output_drain(const cJSON *record, const char *name)
{
	const cJSON *profile = cJSON_GetObjectItemCaseSensitive(record,
								"profile");
	const cJSON *o;

	cJSON_ArrayForEach(o,
			   cJSON_GetObjectItemCaseSensitive(profile, "outputs"))
		if (strcmp(jobfacts_str(o, "name", ""), name) == 0)
			return jobfacts_str(o, "drain", NULL);
	return NULL;
}

static void add_outputs(struct sink *s, const cJSON *record)
{
	const cJSON *o, *hist;
	size_t n = 0;

	sink_open(s, "out", false);
	cJSON_ArrayForEach(o, cJSON_GetObjectItemCaseSensitive(record,
							       "outputs")) {
		const char *dest = jobfacts_str(o, "dest", NULL);
		const char *name = jobfacts_str(o, "name", "");
		const char *drain = output_drain(record, name);

		if (!dest || n++ >= JOBFACTS_LIST_MAX)
			continue;
		sink_open(s, NULL, true);
		sink_str(s, "dest", dest);
		sink_str(s, "name", name);
		sink_str(s, "tier", jobfacts_str(o, "tier", ""));
		if (drain)
			sink_str(s, "drain", drain);
		sink_num(s, "bytes", fmax(0, jobfacts_num(o, "bytes", 0)));
		sink_num(s, "files", fmax(0, jobfacts_num(o, "files", 0)));
		copy_measured(s, "shared", o, "shared_files");
		copy_measured(s, "fpp", o, "fpp_files");
		copy_measured(s, "maxf", o, "max_file_bytes");
		hist = cJSON_GetObjectItemCaseSensitive(o, "size_hist");
		if (cJSON_IsObject(hist)) {
			double h[JOBFACTS_NBUCKETS];

			nums_of(hist, jobfacts_buckets, JOBFACTS_NBUCKETS, h,
				0);
			for (size_t i = 0; i < JOBFACTS_NBUCKETS; i++)
				h[i] = fmax(0, h[i]);
			sink_nums(s, "hist", h, JOBFACTS_NBUCKETS);
		}
		sink_close(s);
	}
	sink_close(s);
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* "tasks": the most tasks one step of the job had (distinct ranks among
 * its processes: a task's children share its rank), the figure the
 * striping rule weighs a file count against when the shim did not say
 * which files were shared. Absent when no process has a rank. */
static void add_tasks(struct sink *s, const cJSON *record)
{
	const cJSON *procs = cJSON_GetObjectItemCaseSensitive(record,
							      "processes");
	size_t n = 0, max, best = 0, run = 0;
	const cJSON *p;
	uint64_t *ids;

	max = (size_t)cJSON_GetArraySize(procs);
	if (max == 0)
		return;
	if (max > JOBFACTS_PROCS_MAX)
		max = JOBFACTS_PROCS_MAX;
	ids = malloc(max * sizeof(*ids));
	if (!ids) {
		s->failed = true;
		return;
	}
	cJSON_ArrayForEach(p, procs) {
		double step = jobfacts_num(p, "step", -1);
		double rank = jobfacts_num(p, "rank", -1);

		if (n == max)
			break;
		if (step < 0 || step > 4294967295.0 || rank < 0 ||
		    rank > 4294967295.0)
			continue;
		ids[n++] = (uint64_t)step << 32 | (uint64_t)rank;
	}
	qsort(ids, n, sizeof(*ids), cmp_u64);
	for (size_t i = 0; i < n; i++) {
		if (i == 0 || ids[i] >> 32 != ids[i - 1] >> 32)
			run = 0;
		if (i == 0 || ids[i] != ids[i - 1])
			run++;
		if (run > best)
			best = run;
	}
	if (best > 0)
		sink_num(s, "tasks", (double)best);
	free(ids);
}

/* The rule of the facts' "ds" list, for the facts and the index keys
 * alike: the record's datasets with an absolute source, at most
 * JOBFACTS_LIST_MAX, into DS; their count. */
static size_t listed_datasets(const cJSON *record, const cJSON **ds)
{
	const cJSON *d;
	size_t n = 0;

	cJSON_ArrayForEach(d, cJSON_GetObjectItemCaseSensitive(record,
							       "datasets")) {
		const char *src = jobfacts_str(d, "source", "");

		if (src[0] == '/' && n < JOBFACTS_LIST_MAX)
			ds[n++] = d;
	}
	return n;
}

/* An observed job (--io-profile=auto with no advice yet) staged nothing:
 * the tree it read from the PFS is its dataset, listed after the others
 * when there is room. Its "observed" object, or NULL. */
static const cJSON *observed_dataset(const cJSON *record, size_t listed)
{
	const cJSON *d = cJSON_GetObjectItemCaseSensitive(record, "observed");

	return jobfacts_str(d, "source", "")[0] == '/' &&
		       listed < JOBFACTS_LIST_MAX
		   ? d
		   : NULL;
}

size_t jobfacts_sources(const cJSON *record, const char **srcs, size_t max)
{
	const cJSON *ds[JOBFACTS_LIST_MAX], *obs;
	size_t n = listed_datasets(record, ds), out = 0;

	obs = observed_dataset(record, n);
	for (size_t i = 0; i < n && out < max; i++)
		srcs[out++] = jobfacts_str(ds[i], "source", "");
	if (obs && out < max)
		srcs[out++] = jobfacts_str(obs, "source", "");
	return out;
}

static void add_datasets(struct sink *s, const cJSON *record,
			 const cJSON *stage_in)
{
	const cJSON *ds[JOBFACTS_LIST_MAX], *obs;
	size_t n = listed_datasets(record, ds);
	double stage_s = measured(stage_in, "seconds");

	sink_open(s, "ds", false);
	for (size_t i = 0; i < n; i++) {
		const cJSON *sp = cJSON_GetObjectItemCaseSensitive(ds[i],
								   "spread");
		double bytes = fmax(0, jobfacts_num(ds[i], "bytes", 0));

		sink_open(s, NULL, true);
		sink_str(s, "src", jobfacts_str(ds[i], "source", ""));
		/* A spread dataset's bytes are a node's part; the parts of
		 * every node add up to the dataset (recmerge). */
		if (cJSON_IsObject(sp)) {
			bytes = fmax(bytes, jobfacts_num(sp, "part_bytes", 0));
			sink_num(s, "spread", 1);
		}
		sink_num(s, "bytes", bytes);
		sink_num(s, "files", fmax(0, jobfacts_num(ds[i], "files", 0)));
		sink_str(s, "tier", jobfacts_str(ds[i], "tier", ""));
		sink_str(s, "result", jobfacts_str(ds[i], "result", ""));
		if (stage_s >= 0)
			sink_num(s, "stage_s", stage_s);
		sink_close(s);
	}
	/* read in place (result "pfs"), of the distinct files' size it
	 * read */
	obs = observed_dataset(record, n);
	if (obs) {
		sink_open(s, NULL, true);
		sink_str(s, "src", jobfacts_str(obs, "source", ""));
		sink_num(s, "bytes", fmax(0, jobfacts_num(obs, "bytes", 0)));
		sink_num(s, "files", fmax(0, jobfacts_num(obs, "files", 0)));
		sink_str(s, "tier", "");
		sink_str(s, "result", "pfs");
		sink_close(s);
	}
	sink_close(s);
}

/* User and job names become parts of keys split by NUL bytes. */
static int name_ok(const char *s, size_t min)
{
	size_t n = strlen(s);

	return n >= min && n < JOBFACTS_NAME_MAX;
}

int jobfacts_check(const cJSON *record, char *err, size_t errlen)
{
	const char *user, *job_name;
	double job, uid, end;

	if (!cJSON_IsObject(record)) {
		snprintf(err, errlen, "record: must be a JSON object");
		errno = EINVAL;
		return -1;
	}
	job = jobfacts_num(record, "job", -1);
	uid = jobfacts_num(record, "uid", -1);
	end = jobfacts_num(record, "end", -1);
	user = jobfacts_str(record, "user", NULL);
	job_name = jobfacts_str(record, "job_name", "");
	if (job < 1 || job > 4294967295.0 || job != floor(job)) {
		snprintf(err, errlen,
			 "record: key 'job': must be a job id 1..4294967295");
		errno = EINVAL;
		return -1;
	}
	if (!user || !name_ok(user, 1) || !name_ok(job_name, 0)) {
		snprintf(err, errlen,
			 "record %.0f: key '%s': must be a string of at most "
			 "%d bytes",
			 job, user && name_ok(user, 1) ? "job_name" : "user",
			 JOBFACTS_NAME_MAX - 1);
		errno = EINVAL;
		return -1;
	}
	if (uid < 0 || uid > 4294967294.0 || end <= 0 || end > 1e11) {
		snprintf(err, errlen,
			 "record %.0f: key '%s': missing or out of range", job,
			 uid < 0 || uid > 4294967294.0 ? "uid" : "end");
		errno = EINVAL;
		return -1;
	}
	return 0;
}

/* The facts of RECORD into S (checked by jobfacts_check first). */
static void walk(struct sink *s, const cJSON *record)
{
	const cJSON *phases = cJSON_GetObjectItemCaseSensitive(record,
							       "phases");
	const cJSON *run = find_phase(phases, "run");
	const cJSON *counters = cJSON_GetObjectItemCaseSensitive(run,
								 "counters");

	sink_open(s, NULL, true);
	sink_num(s, "job", jobfacts_num(record, "job", -1));
	sink_str(s, "user", jobfacts_str(record, "user", ""));
	sink_num(s, "uid", jobfacts_num(record, "uid", -1));
	sink_str(s, "job_name", jobfacts_str(record, "job_name", ""));
	sink_num(s, "end", jobfacts_num(record, "end", -1));
	copy_measured(s, "run_s", run, "seconds");
	add_datasets(s, record, find_phase(phases, "stage_in"));
	add_reads(s, cJSON_GetObjectItemCaseSensitive(counters, "dataset"));
	add_checkpoints(s, phases);
	add_outputs(s, record);
	add_tasks(s, record);
	/* a multi-node job's nodes: a dataset larger than a node may fit
	 * them together (the spread advice) */
	if (cJSON_GetArraySize(
		cJSON_GetObjectItemCaseSensitive(record, "nodes")) > 1)
		sink_num(s, "nodes",
			 (double)cJSON_GetArraySize(
			     cJSON_GetObjectItemCaseSensitive(record,
							      "nodes")));
	add_writes(s, cJSON_GetObjectItemCaseSensitive(counters, "output"));
	sink_close(s);
}

cJSON *jobfacts_from_record(const cJSON *record, char *err, size_t errlen)
{
	struct sink s = { 0 };

	if (jobfacts_check(record, err, errlen) < 0)
		return NULL;
	walk(&s, record);
	if (s.failed) {
		cJSON_Delete(s.tree[0]);
		snprintf(err, errlen, "record %.0f: out of memory",
			 jobfacts_num(record, "job", -1));
		errno = ENOMEM;
		return NULL;
	}
	return s.tree[0];
}

int jobfacts_pack_record(struct jsonbuf *out, const cJSON *record, char *err,
			 size_t errlen)
{
	struct sink s = { .out = out };

	pthread_once(&pack_dict_once, pack_dict_init);
	out->len = 0;
	if (jobfacts_check(record, err, errlen) < 0)
		return -1;
	walk(&s, record);
	if (s.failed) {
		snprintf(err, errlen, "record %.0f: out of memory",
			 jobfacts_num(record, "job", -1));
		errno = ENOMEM;
		return -1;
	}
	return 0;
}
