/* telrec.c - timeline, counter vocabulary and shim_report checks. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "common/base/jsonset.h"
#include "common/config/pathsafe.h"
#include "common/net/proto.h"
#include "common/telemetry/telrec.h"

static const char *const buckets[] = {
	"0_100", "100_1K", "1K_10K",   "10K_100K", "100K_1M",
	"1M_4M", "4M_10M", "10M_100M", "100M_1G",  "1G_PLUS",
};

static const char *const plain_counters[] = {
	"POSIX_OPENS",
	"POSIX_READS",
	"POSIX_WRITES",
	"POSIX_SEEKS",
	"POSIX_STATS",
	"POSIX_FSYNCS",
	"POSIX_BYTES_READ",
	"POSIX_BYTES_WRITTEN",
	"POSIX_MAX_BYTE_READ",
	"POSIX_MAX_BYTE_WRITTEN",
	"POSIX_CONSEC_READS",
	"POSIX_CONSEC_WRITES",
	"POSIX_SEQ_READS",
	"POSIX_SEQ_WRITES",
	"POSIX_RW_SWITCHES",
	"POSIX_F_READ_TIME",
	"POSIX_F_WRITE_TIME",
	"POSIX_F_META_TIME",
	"IOSTAGE_UNOVERLAPPED_IO_TIME",
};

static const char *const classes[] = { "dataset", "output", "other" };

void telrec_timeline_init(struct telrec_timeline *tl, double interval)
{
	tl->interval = interval > 0 ? interval : 1.0;
	tl->n = 0;
}

static void sample_add(struct telrec_sample *s, const struct telrec_io *d)
{
	s->rb += d->rchar;
	s->wb += d->wchar;
	s->rs += d->syscr;
	s->ws += d->syscw;
}

/* Halve the number of samples: each pair becomes one sample ending at the
 * later time; the interval doubles so the merged samples still tile time. */
static void fold(struct telrec_timeline *tl)
{
	size_t i, n = 0;

	for (i = 0; i < tl->n; i += 2) {
		struct telrec_sample m = tl->s[i];

		if (i + 1 < tl->n) {
			m.t = tl->s[i + 1].t;
			m.rb += tl->s[i + 1].rb;
			m.wb += tl->s[i + 1].wb;
			m.rs += tl->s[i + 1].rs;
			m.ws += tl->s[i + 1].ws;
		}
		tl->s[n++] = m;
	}
	tl->n = n;
	tl->interval *= 2;
}

void telrec_timeline_add(struct telrec_timeline *tl, double t,
			 const struct telrec_io *d)
{
	struct telrec_sample *last = tl->n ? &tl->s[tl->n - 1] : NULL;

	/* After a fold a sample covers several base intervals: keep filling
	 * the last one until its interval is used up. The first sample of a
	 * bucket fixes its end. */
	if (last && t <= last->t) {
		sample_add(last, d);
		return;
	}
	/* (A quarter of slack: sampling times jitter.) */
	if (last && tl->n >= 2 &&
	    t - tl->s[tl->n - 2].t <= tl->interval * 1.25) {
		last->t = t;
		sample_add(last, d);
		return;
	}
	if (tl->n == TELREC_TIMELINE_MAX)
		fold(tl);
	last = &tl->s[tl->n++];
	memset(last, 0, sizeof(*last));
	last->t = t;
	sample_add(last, d);
}

void telrec_timeline_sum(const struct telrec_timeline *tl, double t0, double t1,
			 struct telrec_io *ret)
{
	memset(ret, 0, sizeof(*ret));
	for (size_t i = 0; i < tl->n; i++) {
		const struct telrec_sample *s = &tl->s[i];
		double from = i ? tl->s[i - 1].t : s->t - tl->interval;

		/* The sample covers (from, t]: count it if that overlaps. */
		if (s->t <= t0 || from >= t1)
			continue;
		ret->rchar += s->rb;
		ret->wchar += s->wb;
		ret->syscr += s->rs;
		ret->syscw += s->ws;
	}
}

cJSON *telrec_timeline_to_json(const struct telrec_timeline *tl)
{
	cJSON *arr = cJSON_CreateArray();

	for (size_t i = 0; arr && i < tl->n; i++) {
		const struct telrec_sample *s = &tl->s[i];
		cJSON *e = cJSON_CreateArray();

		if (!e) {
			cJSON_Delete(arr);
			return NULL;
		}
		/* Milliseconds are plenty for a timeline. */
		cJSON_AddItemToArray(
		    e, cJSON_CreateNumber(
			   (double)(long long)(s->t * 1000 + 0.5) / 1000));
		cJSON_AddItemToArray(e, cJSON_CreateNumber((double)s->rb));
		cJSON_AddItemToArray(e, cJSON_CreateNumber((double)s->wb));
		cJSON_AddItemToArray(e, cJSON_CreateNumber((double)s->rs));
		cJSON_AddItemToArray(e, cJSON_CreateNumber((double)s->ws));
		cJSON_AddItemToArray(arr, e);
	}
	return arr;
}

/* The latest sample time read back: the year 33658, far from both
 * today and long long's range once in milliseconds. */
#define TELREC_SAMPLE_T_MAX 1e12

static uint64_t num_at(const cJSON *arr, int i)
{
	const cJSON *v = cJSON_GetArrayItem(arr, i);

	if (!cJSON_IsNumber(v) || !(v->valuedouble >= 0) ||
	    v->valuedouble > 1e18)
		return 0;
	return (uint64_t)v->valuedouble;
}

void telrec_timeline_from_json(struct telrec_timeline *tl, const cJSON *arr,
			       double interval)
{
	const cJSON *e;

	telrec_timeline_init(tl, interval);
	cJSON_ArrayForEach(e, arr) {
		const cJSON *t = cJSON_GetArrayItem(e, 0);
		struct telrec_sample *s;

		if (tl->n == TELREC_TIMELINE_MAX)
			break;
		/* A sample's time is the epoch second it was taken: one
		 * before 1970 or past TELREC_SAMPLE_T_MAX is damage, and
		 * telrec_timeline_to_json's rounding through long long
		 * would overflow on it (undefined behaviour). */
		if (!cJSON_IsArray(e) || cJSON_GetArraySize(e) != 5 ||
		    !cJSON_IsNumber(t) || !(t->valuedouble >= 0) ||
		    t->valuedouble > TELREC_SAMPLE_T_MAX)
			continue;
		s = &tl->s[tl->n++];
		s->t = t->valuedouble;
		s->rb = num_at(e, 1);
		s->wb = num_at(e, 2);
		s->rs = num_at(e, 3);
		s->ws = num_at(e, 4);
	}
}

void telrec_io_add(struct telrec_io *a, const struct telrec_io *b)
{
	a->rchar += b->rchar;
	a->wchar += b->wchar;
	a->syscr += b->syscr;
	a->syscw += b->syscw;
	a->read_bytes += b->read_bytes;
	a->write_bytes += b->write_bytes;
}

bool telrec_counter_known(const char *name)
{
	size_t i;

	if (!name)
		return false;
	for (i = 0; i < sizeof(plain_counters) / sizeof(plain_counters[0]); i++)
		if (!strcmp(name, plain_counters[i]))
			return true;
	for (i = 0; i < sizeof(buckets) / sizeof(buckets[0]); i++) {
		char buf[48];

		snprintf(buf, sizeof(buf), "POSIX_SIZE_READ_%s", buckets[i]);
		if (!strcmp(name, buf))
			return true;
		snprintf(buf, sizeof(buf), "POSIX_SIZE_WRITE_%s", buckets[i]);
		if (!strcmp(name, buf))
			return true;
	}
	return false;
}

bool telrec_phase_name_ok(const char *name)
{
	size_t i;

	if (!name || !name[0])
		return false;
	for (i = 0; name[i]; i++) {
		char c = name[i];

		if (i >= TELREC_PHASE_NAME_MAX - 1)
			return false;
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		      (c >= '0' && c <= '9') || c == '_' || c == '-' ||
		      c == '.'))
			return false;
	}
	return true;
}

static bool is_class(const char *s)
{
	for (size_t i = 0; i < sizeof(classes) / sizeof(classes[0]); i++)
		if (!strcmp(s, classes[i]))
			return true;
	return false;
}

int telrec_counters_merge(cJSON *dst, const cJSON *src)
{
	const cJSON *v;

	cJSON_ArrayForEach(v, src) {
		cJSON *d;
		bool is_max;

		if (!cJSON_IsNumber(v) || !telrec_counter_known(v->string) ||
		    !(v->valuedouble >= 0))
			continue;
		is_max = !strncmp(v->string, "POSIX_MAX_BYTE_", 15);
		d = cJSON_GetObjectItemCaseSensitive(dst, v->string);
		if (!d) {
			if (!cJSON_AddNumberToObject(dst, v->string,
						     v->valuedouble))
				return -1;
			continue;
		}
		if (!is_max)
			cJSON_SetNumberValue(d,
					     d->valuedouble + v->valuedouble);
		else if (v->valuedouble > d->valuedouble)
			cJSON_SetNumberValue(d, v->valuedouble);
	}
	return 0;
}

/* --- shim_report ------------------------------------------------------------ */

static int bad(char *err, size_t errlen, const char *fmt, const char *a,
	       const char *b)
{
	char sa[48], sb[48];

	/* Names from the request are cut and made printable. */
	snprintf(sa, sizeof(sa), "%s", a ? a : "");
	snprintf(sb, sizeof(sb), "%s", b ? b : "");
	for (char *p = sa; *p; p++)
		if ((unsigned char)*p < 0x20 || *p == 0x7f || *p == '\'')
			*p = '?';
	for (char *p = sb; *p; p++)
		if ((unsigned char)*p < 0x20 || *p == 0x7f || *p == '\'')
			*p = '?';
	snprintf(err, errlen, fmt, sa, sb);
	return -1;
}

static bool number_ok(const cJSON *v)
{
	return cJSON_IsNumber(v) && v->valuedouble >= 0 &&
	       v->valuedouble <= 1e18;
}

/* {phase: seconds} */
static int check_seconds(const cJSON *o, const char *key, char *err,
			 size_t errlen)
{
	const cJSON *v;
	int n = 0;

	if (!o)
		return 0;
	if (!cJSON_IsObject(o))
		return bad(err, errlen, "key '%s': must be an object%s", key,
			   "");
	cJSON_ArrayForEach(v, o) {
		if (++n > TELREC_REPORT_PHASES_MAX)
			return bad(err, errlen,
				   "key '%s': more than 32 phases%s", key, "");
		if (!telrec_phase_name_ok(v->string))
			return bad(err, errlen, "key '%s': bad phase name '%s'",
				   key, v->string);
		if (!number_ok(v))
			return bad(err, errlen,
				   "key '%s': phase '%s': must be a number of "
				   "seconds >= 0",
				   key, v->string);
	}
	return 0;
}

static int check_counters(const cJSON *o, char *err, size_t errlen)
{
	const cJSON *ph, *cl, *v;
	int n = 0;

	if (!o)
		return 0;
	if (!cJSON_IsObject(o))
		return bad(err, errlen, "key 'counters': must be an object%s%s",
			   "", "");
	cJSON_ArrayForEach(ph, o) {
		if (++n > TELREC_REPORT_PHASES_MAX)
			return bad(err, errlen,
				   "key 'counters': more than 32 phases%s%s",
				   "", "");
		if (!telrec_phase_name_ok(ph->string))
			return bad(err, errlen,
				   "key 'counters': bad phase name '%s'%s",
				   ph->string, "");
		if (!cJSON_IsObject(ph))
			return bad(err, errlen,
				   "key 'counters': phase '%s': must be an "
				   "object%s",
				   ph->string, "");
		cJSON_ArrayForEach(cl, ph) {
			if (!is_class(cl->string) || !cJSON_IsObject(cl))
				return bad(
				    err, errlen,
				    "key 'counters': phase '%s': unknown "
				    "file class '%s' (known: dataset, "
				    "output, other)",
				    ph->string, cl->string);
			cJSON_ArrayForEach(v, cl) {
				if (!telrec_counter_known(v->string))
					return bad(err, errlen,
						   "key 'counters': unknown "
						   "counter '%s' (class %s)",
						   v->string, cl->string);
				if (!number_ok(v))
					return bad(err, errlen,
						   "key 'counters': counter "
						   "'%s' (class %s): must be a "
						   "number >= 0",
						   v->string, cl->string);
			}
		}
	}
	return 0;
}

/* observed: {root: normalized absolute path, files, bytes, missed} */
static int check_observed(const cJSON *o, char *err, size_t errlen)
{
	const cJSON *v;

	if (!o)
		return 0;
	if (!cJSON_IsObject(o))
		return bad(err, errlen, "key 'observed': must be an object%s%s",
			   "", "");
	cJSON_ArrayForEach(v, o) {
		if (!strcmp(v->string, "root")) {
			char norm[TELREC_REPORT_PATH_MAX], why[128];

			if (!cJSON_IsString(v) || v->valuestring[0] != '/' ||
			    strlen(v->valuestring) >= TELREC_REPORT_PATH_MAX ||
			    pathsafe_normalize(v->valuestring, norm,
					       sizeof(norm), why,
					       sizeof(why)) < 0 ||
			    strcmp(norm, v->valuestring))
				return bad(err, errlen,
					   "key 'observed': 'root' must be a "
					   "normalized absolute path of at "
					   "most 4095 bytes%s%s",
					   "", "");
		} else if (!strcmp(v->string, "files") ||
			   !strcmp(v->string, "bytes") ||
			   !strcmp(v->string, "missed")) {
			if (!number_ok(v))
				return bad(err, errlen,
					   "key 'observed': '%s' must be a "
					   "number >= 0%s",
					   v->string, "");
		} else {
			return bad(err, errlen,
				   "key 'observed': unknown key '%s'%s",
				   v->string, "");
		}
	}
	if (!cJSON_IsString(cJSON_GetObjectItemCaseSensitive(o, "root")))
		return bad(err, errlen, "key 'observed': 'root' is missing%s%s",
			   "", "");
	return 0;
}

static int check_files(const cJSON *o, char *err, size_t errlen)
{
	const cJSON *f, *v;

	if (!o)
		return 0;
	if (!cJSON_IsArray(o))
		return bad(err, errlen, "key 'files': must be an array%s%s", "",
			   "");
	if (cJSON_GetArraySize(o) > TELREC_REPORT_FILES_MAX)
		return bad(err, errlen,
			   "key 'files': more than 256 entries%s%s", "", "");
	cJSON_ArrayForEach(f, o) {
		if (!cJSON_IsObject(f))
			return bad(err, errlen,
				   "key 'files': entries must be objects%s%s",
				   "", "");
		cJSON_ArrayForEach(v, f) {
			if (!strcmp(v->string, "path")) {
				/* Absolute, as the shim normalizes it. */
				if (!cJSON_IsString(v) ||
				    v->valuestring[0] != '/' ||
				    strlen(v->valuestring) >=
					TELREC_REPORT_PATH_MAX)
					return bad(
					    err, errlen,
					    "key 'files': 'path' must be "
					    "an absolute path of at most "
					    "4095 bytes%s%s",
					    "", "");
			} else if (!strcmp(v->string, "class")) {
				if (!cJSON_IsString(v) ||
				    !is_class(v->valuestring))
					return bad(err, errlen,
						   "key 'files': 'class' must "
						   "be dataset, output or "
						   "other%s%s",
						   "", "");
			} else if (!strcmp(v->string, "written")) {
				if (!number_ok(v))
					return bad(
					    err, errlen,
					    "key 'files': 'written' must "
					    "be a number >= 0%s%s",
					    "", "");
			} else {
				return bad(err, errlen,
					   "key 'files': unknown key '%s'%s",
					   v->string, "");
			}
		}
		if (!cJSON_GetObjectItemCaseSensitive(f, "path"))
			return bad(err, errlen,
				   "key 'files': an entry without 'path'%s%s",
				   "", "");
	}
	return 0;
}

int telrec_report_check(const cJSON *req, char *err, size_t errlen)
{
	static const char *const keys[] = {
		"op",         "job",           "pid",
		"ppid",       "step",          "rank",
		"local_rank", "node",          "identity",
		"reason",     "start",         "end",
		"counters",   "io_seconds",    "unoverlapped",
		"files",      "phases_folded", "disabled",
		"observed",
	};
	const cJSON *v;

	if (!cJSON_IsObject(req))
		return bad(err, errlen, "shim_report: must be an object%s%s",
			   "", "");
	cJSON_ArrayForEach(v, req) {
		size_t i;

		for (i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
			if (!strcmp(v->string, keys[i]))
				break;
		if (i == sizeof(keys) / sizeof(keys[0]))
			return bad(err, errlen,
				   "shim_report: unknown key '%s'%s", v->string,
				   "");
		if ((!strcmp(v->string, "start") || !strcmp(v->string, "end") ||
		     !strcmp(v->string, "pid") || !strcmp(v->string, "ppid") ||
		     !strcmp(v->string, "step") || !strcmp(v->string, "rank") ||
		     !strcmp(v->string, "local_rank") ||
		     !strcmp(v->string, "phases_folded")) &&
		    !number_ok(v))
			return bad(err, errlen,
				   "key '%s': must be a number >= 0%s",
				   v->string, "");
		/* Slurm's uint32 (the batch step is 4294967291): a larger
		 * one would be cut to another step's id. */
		if (!strcmp(v->string, "step") &&
		    (v->valuedouble > 4294967295.0 ||
		     v->valuedouble != (double)(uint64_t)v->valuedouble))
			return bad(err, errlen,
				   "key 'step': must be a step id, an integer "
				   "from 0 to 4294967295%s%s",
				   "", "");
		if ((!strcmp(v->string, "node") ||
		     !strcmp(v->string, "identity")) &&
		    (!cJSON_IsString(v) ||
		     strlen(v->valuestring) >= TELREC_NODE_MAX))
			return bad(err, errlen,
				   "key '%s': must be a string of at most 63 "
				   "bytes%s",
				   v->string, "");
		if (!strcmp(v->string, "identity") &&
		    strcmp(v->valuestring, "pmix") &&
		    strcmp(v->valuestring, "slurm"))
			return bad(err, errlen,
				   "key 'identity': must be \"pmix\" or "
				   "\"slurm\"%s%s",
				   "", "");
		if (!strcmp(v->string, "reason") &&
		    (!cJSON_IsString(v) || (strcmp(v->valuestring, "exit") &&
					    strcmp(v->valuestring, "exec"))))
			return bad(err, errlen,
				   "key 'reason': must be \"exit\" or "
				   "\"exec\"%s%s",
				   "", "");
		if (!strcmp(v->string, "disabled") &&
		    (!cJSON_IsString(v) ||
		     strlen(v->valuestring) >= TELREC_REASON_MAX))
			return bad(err, errlen,
				   "key 'disabled': must be a string of at "
				   "most 255 bytes%s%s",
				   "", "");
	}
	if (check_counters(cJSON_GetObjectItemCaseSensitive(req, "counters"),
			   err, errlen) < 0 ||
	    check_seconds(cJSON_GetObjectItemCaseSensitive(req, "io_seconds"),
			  "io_seconds", err, errlen) < 0 ||
	    check_seconds(cJSON_GetObjectItemCaseSensitive(req, "unoverlapped"),
			  "unoverlapped", err, errlen) < 0 ||
	    check_files(cJSON_GetObjectItemCaseSensitive(req, "files"), err,
			errlen) < 0 ||
	    check_observed(cJSON_GetObjectItemCaseSensitive(req, "observed"),
			   err, errlen) < 0)
		return -1;
	return 0;
}

/* --- observed jobs ------------------------------------------------------------ */

/* The length of the deepest directory (whole components) holding both A
 * and B, normalized absolute paths. */
static size_t common_dir_len(const char *a, const char *b)
{
	size_t i = 0, last = 0;

	for (; a[i] && a[i] == b[i]; i++)
		if (a[i] == '/')
			last = i;
	if ((!a[i] || a[i] == '/') && (!b[i] || b[i] == '/'))
		return i;       /* one holds the other, or equal */
	return last ? last : 1; /* "/" */
}

int telrec_observed_merge(cJSON *dst, const cJSON *obs, const char *pfs)
{
	const cJSON *root = cJSON_GetObjectItemCaseSensitive(obs, "root");
	const cJSON *cur = cJSON_GetObjectItemCaseSensitive(dst, "source");
	char buf[TELREC_REPORT_PATH_MAX];
	size_t n = pfs ? strlen(pfs) : 0;
	static const char *const nums[] = { "files", "bytes", "missed" };

	if (!cJSON_IsObject(obs) || !cJSON_IsString(root))
		return 0;
	/* Under the PFS the plugin named, as whole components: a report
	 * cannot make the history advise staging another tree. */
	if (!n || strncmp(root->valuestring, pfs, n) ||
	    (root->valuestring[n] != '/' && root->valuestring[n] != '\0'))
		return 0;
	if (cJSON_IsString(cur)) {
		size_t len = common_dir_len(cur->valuestring,
					    root->valuestring);

		if (len < n)
			len = n;
		snprintf(buf, sizeof(buf), "%.*s", (int)len, cur->valuestring);
	} else {
		snprintf(buf, sizeof(buf), "%s", root->valuestring);
	}
	if (!json_set(dst, "source", cJSON_CreateString(buf)))
		return -1;
	/* Each process counts the distinct files it opened (a forked child
	 * starts from its parent's): the largest is the job's, a lower
	 * bound when processes read disjoint parts. Missed ones add up. */
	for (size_t i = 0; i < 3; i++) {
		const cJSON *v = cJSON_GetObjectItemCaseSensitive(obs, nums[i]);
		cJSON *d = cJSON_GetObjectItemCaseSensitive(dst, nums[i]);
		double x = number_ok(v) ? v->valuedouble : 0;

		if (d)
			cJSON_SetNumberValue(d, i == 2
						    ? d->valuedouble + x
						    : fmax(d->valuedouble, x));
		else if (!cJSON_AddNumberToObject(dst, nums[i], x))
			return -1;
	}
	return 0;
}

/* --- folding reports --------------------------------------------------------- */

int telrec_class_counters_merge(cJSON *dst, const cJSON *by_class)
{
	const cJSON *cl;

	cJSON_ArrayForEach(cl, by_class) {
		cJSON *d;

		if (!cl->string || !is_class(cl->string) || !cJSON_IsObject(cl))
			continue;
		d = cJSON_GetObjectItemCaseSensitive(dst, cl->string);
		if (!d && !(d = cJSON_AddObjectToObject(dst, cl->string)))
			return -1;
		if (telrec_counters_merge(d, cl) < 0)
			return -1;
	}
	return 0;
}

int telrec_counters_fold(cJSON *dst, const cJSON *phases)
{
	const cJSON *ph;

	cJSON_ArrayForEach(ph, phases)
		if (telrec_class_counters_merge(dst, ph) < 0)
			return -1;
	return 0;
}

double telrec_seconds_total(const cJSON *o)
{
	const cJSON *v;
	double t = 0;

	cJSON_ArrayForEach(v, o)
		if (number_ok(v))
			t += v->valuedouble;
	return t;
}

/* Darshan's edges: 0..100, 101..1K, ..., > 1 GiB. */
size_t telrec_size_bucket(uint64_t bytes)
{
	static const uint64_t max[TELREC_NBUCKETS - 1] = {
		100,     1024,     10240,     102400,     1048576,
		4194304, 10485760, 104857600, 1073741824,
	};
	size_t i;

	for (i = 0; i < TELREC_NBUCKETS - 1; i++)
		if (bytes <= max[i])
			break;
	return i;
}

const char *telrec_bucket_name(size_t i)
{
	return i < TELREC_NBUCKETS ? buckets[i] : NULL;
}

cJSON *telrec_size_hist_json(const uint64_t hist[TELREC_NBUCKETS])
{
	cJSON *o = cJSON_CreateObject();

	for (size_t i = 0; o && i < TELREC_NBUCKETS; i++)
		if (!cJSON_AddNumberToObject(o, buckets[i], (double)hist[i])) {
			cJSON_Delete(o);
			return NULL;
		}
	return o;
}

void telrec_size_hist_from_json(uint64_t hist[TELREC_NBUCKETS], const cJSON *o)
{
	for (size_t i = 0; i < TELREC_NBUCKETS; i++) {
		const cJSON *v = cJSON_GetObjectItemCaseSensitive(o,
								  buckets[i]);

		hist[i] = number_ok(v) ? (uint64_t)v->valuedouble : 0;
	}
}

/* --- where the bytes come from -------------------------------------------------- */

void telrec_class_bytes(const cJSON *by_class, uint64_t *ret_read,
			uint64_t *ret_written)
{
	const cJSON *cl;

	*ret_read = *ret_written = 0;
	cJSON_ArrayForEach(cl, by_class) {
		*ret_read += proto_u64(cl, "POSIX_BYTES_READ");
		*ret_written += proto_u64(cl, "POSIX_BYTES_WRITTEN");
	}
}

void telrec_report_bytes(const cJSON *phases, uint64_t *ret_read,
			 uint64_t *ret_written)
{
	const cJSON *ph;

	*ret_read = *ret_written = 0;
	cJSON_ArrayForEach(ph, phases) {
		uint64_t r, w;

		telrec_class_bytes(ph, &r, &w);
		*ret_read += r;
		*ret_written += w;
	}
}

int telrec_phase_bytes(cJSON *ph, const struct telrec_io *io,
		       const cJSON *counters)
{
	uint64_t rb = io->rchar, wb = io->wchar;
	bool shim = counters != NULL;

	if (shim)
		telrec_class_bytes(counters, &rb, &wb);
	if (!cJSON_AddNumberToObject(ph, "read_bytes", (double)rb) ||
	    !cJSON_AddNumberToObject(ph, "write_bytes", (double)wb) ||
	    !cJSON_AddStringToObject(ph, "bytes_source",
				     shim ? TELREC_BYTES_SHIM
					  : TELREC_BYTES_PROC) ||
	    !cJSON_AddNumberToObject(ph, "rchar", (double)io->rchar) ||
	    !cJSON_AddNumberToObject(ph, "wchar", (double)io->wchar) ||
	    !cJSON_AddNumberToObject(ph, "read_syscalls", (double)io->syscr) ||
	    !cJSON_AddNumberToObject(ph, "write_syscalls", (double)io->syscw))
		return -1;
	return 0;
}

const char *telrec_bytes_source(const cJSON *ph)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(ph, "bytes_source");

	if (cJSON_IsString(v) && !strcmp(v->valuestring, TELREC_BYTES_SHIM))
		return TELREC_BYTES_SHIM;
	return TELREC_BYTES_PROC;
}

void telrec_rchar_from_json(const cJSON *ph, struct telrec_io *ret)
{
	bool named = cJSON_GetObjectItemCaseSensitive(ph, "rchar") != NULL;

	ret->rchar = proto_u64(ph, named ? "rchar" : "read_bytes");
	ret->wchar = proto_u64(ph, named ? "wchar" : "write_bytes");
}
