/* recgen.c - the synthetic job records of the history benches
 * (recgen.h). */
#include <stdio.h>

#include "bench/recgen.h"

static const char *const *gen_names;
static unsigned gen_nnames;

cJSON *recgen_template(void)
{
	static const char text[] =
	    "{\"schema\":1,\"job\":1,\"user\":\"u\",\"uid\":1,"
	    "\"job_name\":\"a\",\"node\":\"node1\",\"profile_origin\":"
	    "\"dl-train\",\"state\":\"completed\",\"start\":0,\"end\":0,"
	    "\"datasets\":[{\"name\":\"data\",\"source\":\"/pfs/x\","
	    "\"tier\":\"nvme\",\"bytes\":1130000000,\"files\":10000,"
	    "\"result\":\"hit\",\"copied_bytes\":0,\"copied_files\":0,"
	    "\"linked_files\":0,\"cached_bytes\":1130000000}],"
	    "\"outputs\":[{\"name\":\"ckpt\",\"dest\":\"/pfs/x-ckpt\","
	    "\"tier\":\"nvme\",\"files\":4,\"bytes\":4030000000,"
	    "\"during_files\":3,\"during_bytes\":3000000000,\"end_files\":1,"
	    "\"end_bytes\":1030000000,\"failed_files\":0,\"size_hist\":"
	    "{\"0_100\":0,\"100_1K\":0,\"1K_10K\":0,\"10K_100K\":0,"
	    "\"100K_1M\":0,\"1M_4M\":0,\"4M_10M\":0,\"10M_100M\":0,"
	    "\"100M_1G\":4,\"1G_PLUS\":0},\"shared_files\":0,"
	    "\"fpp_files\":4}],"
	    "\"phases\":[{\"name\":\"stage_in\",\"seconds\":0.4,"
	    "\"bytes\":1130000000,\"files\":10000},"
	    "{\"name\":\"run\",\"seconds\":290,\"read_bytes\":1130000000,"
	    "\"write_bytes\":4030000000,\"counters\":{\"dataset\":"
	    "{\"POSIX_OPENS\":10000,\"POSIX_READS\":12000,"
	    "\"POSIX_BYTES_READ\":1130000000,\"POSIX_SEQ_READS\":1200,"
	    "\"POSIX_CONSEC_READS\":1000,\"POSIX_SIZE_READ_100K_1M\":12000,"
	    "\"POSIX_F_READ_TIME\":40.0,\"POSIX_F_META_TIME\":5.0},"
	    "\"output\":{\"POSIX_WRITES\":1000,\"POSIX_BYTES_WRITTEN\":"
	    "4030000000,\"POSIX_SIZE_WRITE_1M_4M\":1000}}},"
	    "{\"name\":\"checkpoint\",\"parent\":\"run\",\"seconds\":35,"
	    "\"io_seconds\":35,\"unoverlapped_io_seconds\":30},"
	    "{\"name\":\"stage_out\",\"seconds\":12,\"bytes\":4030000000,"
	    "\"files\":4}],\"processes\":[]}";

	return cJSON_Parse(text);
}

static void set_str(cJSON *obj, const char *key, const char *v)
{
	cJSON_ReplaceItemInObjectCaseSensitive(obj, key, cJSON_CreateString(v));
}

static void set_num(cJSON *obj, const char *key, double v)
{
	cJSON_SetNumberValue(cJSON_GetObjectItemCaseSensitive(obj, key), v);
}

void recgen_user_name(unsigned user, char *buf, size_t len)
{
	if (gen_names && gen_nnames)
		snprintf(buf, len, "%s", gen_names[user % gen_nnames]);
	else
		snprintf(buf, len, "u%04u", user);
}

void recgen_use_names(const char *const *names, unsigned n)
{
	gen_names = names;
	gen_nnames = n;
}

void recgen_set_job(cJSON *rec, unsigned job, unsigned total, double t0,
		    unsigned seed)
{
	unsigned user = seed % RECGEN_USERS,
		 app = (seed / RECGEN_USERS) % RECGEN_APPS;
	char u[64], a[32], src[128], dest[128];
	double end = t0 - RECGEN_SPAN_S * (1.0 - (double)job / (double)total) -
		     (double)(seed % 600);
	cJSON *ds = cJSON_GetArrayItem(cJSON_GetObjectItem(rec, "datasets"), 0);
	cJSON *out = cJSON_GetArrayItem(cJSON_GetObjectItem(rec, "outputs"), 0);

	recgen_user_name(user, u, sizeof(u));
	snprintf(a, sizeof(a), "app-%u", app);
	snprintf(src, sizeof(src), "/pfs/%s/ds%u", u, app);
	snprintf(dest, sizeof(dest), "/pfs/%s/ckpt%u", u, app);
	set_num(rec, "job", job);
	set_num(rec, "uid", 10000 + user);
	set_num(rec, "start", end - 300);
	set_num(rec, "end", end);
	set_str(rec, "user", u);
	set_str(rec, "job_name", a);
	set_str(ds, "source", src);
	set_str(out, "dest", dest);
}
