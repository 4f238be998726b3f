/* history_value.c - the stored form of a job's record: the packed jobs
 * value (a dictionary of the record schema's keys) and the JSON text of
 * values filed before it, and the parts family's per-job prefix.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include <cJSON.h>

#include "common/base/jsonbuf.h"
#include "common/history/history_int.h"

/* The jobs value, packed (since 2026-11-23): JOBS_PACKED, be32(n), the
 * record without its phases packed in n bytes, then the phases packed
 * (absent when the record had none). Values filed before are the JSON
 * text of the record without phases (first byte '{'), their phases under
 * their own key in the phases family; both are read. The dictionary is
 * the record schema's keys (docs/RECORDS.md) and part of the stored
 * format: only ever append to it; other keys are stored spelled out. */
#define JOBS_PACKED 1
static const char *const record_keys[] = {
	"schema",
	"job",
	"user",
	"uid",
	"job_name",
	"node",
	"profile_origin",
	"state",
	"start",
	"end",
	"datasets",
	"name",
	"source",
	"tier",
	"bytes",
	"files",
	"result",
	"copied_bytes",
	"copied_files",
	"linked_files",
	"cached_bytes",
	"outputs",
	"dest",
	"during_files",
	"during_bytes",
	"end_files",
	"end_bytes",
	"failed_files",
	"size_hist",
	"0_100",
	"100_1K",
	"1K_10K",
	"10K_100K",
	"100K_1M",
	"1M_4M",
	"4M_10M",
	"10M_100M",
	"100M_1G",
	"1G_PLUS",
	"shared_files",
	"fpp_files",
	"phases",
	"seconds",
	"read_bytes",
	"write_bytes",
	"counters",
	"dataset",
	"output",
	"other",
	"parent",
	"io_seconds",
	"unoverlapped_io_seconds",
	"processes",
	"pid",
	"rank",
	"local_rank",
	"step",
	"identity",
	"traced",
	"timeline",
	"interval_s",
	"rate_bps",
	"read_syscalls",
	"write_syscalls",
	"end_seconds",
	"profile",
	"error",
	"drain",
	"access",
	"POSIX_OPENS",
	"POSIX_READS",
	"POSIX_WRITES",
	"POSIX_SEEKS",
	"POSIX_STATS",
	"POSIX_FSYNCS",
	"POSIX_BYTES_READ",
	"POSIX_BYTES_WRITTEN",
	"POSIX_CONSEC_READS",
	"POSIX_CONSEC_WRITES",
	"POSIX_SEQ_READS",
	"POSIX_SEQ_WRITES",
	"POSIX_RW_SWITCHES",
	"POSIX_MAX_BYTE_READ",
	"POSIX_MAX_BYTE_WRITTEN",
	"POSIX_F_READ_TIME",
	"POSIX_F_WRITE_TIME",
	"POSIX_F_META_TIME",
	"POSIX_FADV_SEQUENTIAL",
	"POSIX_SIZE_READ_0_100",
	"POSIX_SIZE_READ_100_1K",
	"POSIX_SIZE_READ_1K_10K",
	"POSIX_SIZE_READ_10K_100K",
	"POSIX_SIZE_READ_100K_1M",
	"POSIX_SIZE_READ_1M_4M",
	"POSIX_SIZE_READ_4M_10M",
	"POSIX_SIZE_READ_10M_100M",
	"POSIX_SIZE_READ_100M_1G",
	"POSIX_SIZE_READ_1G_PLUS",
	"POSIX_SIZE_WRITE_0_100",
	"POSIX_SIZE_WRITE_100_1K",
	"POSIX_SIZE_WRITE_1K_10K",
	"POSIX_SIZE_WRITE_10K_100K",
	"POSIX_SIZE_WRITE_100K_1M",
	"POSIX_SIZE_WRITE_1M_4M",
	"POSIX_SIZE_WRITE_4M_10M",
	"POSIX_SIZE_WRITE_10M_100M",
	"POSIX_SIZE_WRITE_100M_1G",
	"POSIX_SIZE_WRITE_1G_PLUS",
	"IOSTAGE_UNOVERLAPPED_IO_TIME",
	"rchar",
	"wchar",
	"syscr",
	"syscw",
	"storage_read_bytes",
	"storage_write_bytes",
	"processes_total",
	"ranks",
	"stage_in",
	"run",
	"checkpoint",
	"stage_out",
};
static struct jsonbuf_dict record_dict;
static pthread_once_t record_dict_once = PTHREAD_ONCE_INIT;

static void record_dict_init(void)
{
	jsonbuf_dict_init(&record_dict, record_keys,
			  sizeof(record_keys) / sizeof(record_keys[0]));
}

const struct jsonbuf_dict *hist_record_dict(void)
{
	pthread_once(&record_dict_once, record_dict_init);
	return &record_dict;
}

int hist_pack_jobs_value(struct jsonbuf *j, const cJSON *record,
			 const cJSON *phases)
{
	static const char head[5] = { JOBS_PACKED, 0, 0, 0, 0 };
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

cJSON *hist_unpack_jobs_value(const char *val, size_t vlen, cJSON **ret_phases,
			      bool *ret_inline)
{
	cJSON *j;

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
	return j;
}

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

size_t history_parts_prefix(uint32_t job, char *buf)
{
	buf[0] = HISTORY_PARTS_TAG;
	put_be32(buf + 1, job);
	return HISTORY_PARTS_PREFIX_LEN;
}
