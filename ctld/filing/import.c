/* import.c - a node's old history into the service's (see import.h).
 *
 * Records go in batches of IMPORT_BATCH through history_put_many: one
 * WriteBatch each, so an import cut short (kill, full disk) leaves whole
 * jobs, and running it again files the rest.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/base/log.h"
#include "common/config/conf.h"
#include "common/history/jobfacts.h"
#include "ctld/filing/import.h"

#define IMPORT_BATCH 256

struct import_ctx {
	struct history *dst;
	cJSON *batch[IMPORT_BATCH];
	size_t n;
	struct ctld_import_stats st;
	char *err;
	size_t errlen;
};

/* File the batch; a batch the history refuses is filed one by one so one
 * bad record does not keep the others out. */
static int flush(struct import_ctx *x)
{
	char err[CONF_ERR_MAX];
	int rc = 0;

	if (x->n == 0)
		return 0;
	if (history_put_many(x->dst, (const cJSON *const *)x->batch, x->n,
			     HISTORY_PUT_SYNC, err, sizeof(err)) == 0) {
		x->st.imported += (unsigned)x->n;
	} else if (errno != EINVAL) {
		snprintf(x->err, x->errlen, "%s", err);
		rc = -1;
	} else {
		for (size_t i = 0; i < x->n; i++) {
			if (history_put(x->dst, x->batch[i], HISTORY_PUT_SYNC,
					err, sizeof(err)) == 0) {
				x->st.imported++;
			} else if (errno == EINVAL) {
				x->st.invalid++;
				log_warningx("import: job %.0f skipped: %s",
					     jobfacts_num(x->batch[i], "job",
							  0),
					     err);
			} else {
				snprintf(x->err, x->errlen, "%s", err);
				rc = -1;
				break;
			}
		}
	}
	for (size_t i = 0; i < x->n; i++)
		cJSON_Delete(x->batch[i]);
	x->n = 0;
	return rc;
}

static int import_one(cJSON *rec, void *arg)
{
	struct import_ctx *x = arg;
	double job = jobfacts_num(rec, "job", 0);
	cJSON *have = NULL;

	if (job >= 1 && job <= UINT32_MAX)
		have = history_get(x->dst, (uint32_t)job, NULL, 0);
	if (have) {
		/* The service's own record wins: never replaced. */
		x->st.present++;
		cJSON_Delete(have);
		cJSON_Delete(rec);
		return 0;
	}
	x->batch[x->n++] = rec;
	if (x->n == IMPORT_BATCH)
		return flush(x);
	return 0;
}

/* SRC or SRC/history, whichever holds a database (CURRENT). */
static void source_dir(const char *src, char *buf, size_t len)
{
	struct stat st;
	char probe[PATH_MAX + 32];

	snprintf(probe, sizeof(probe), "%s/CURRENT", src);
	if (stat(probe, &st) == 0) {
		snprintf(buf, len, "%s", src);
		return;
	}
	snprintf(buf, len, "%s/%s", src, HISTORY_DIR_NAME);
}

int ctld_import(struct history *dst, const char *dst_dir, const char *src,
		struct ctld_import_stats *ret_stats, char *err, size_t errlen)
{
	char dir[PATH_MAX + 16], a[PATH_MAX], b[PATH_MAX];
	struct import_ctx x = { .dst = dst, .err = err, .errlen = errlen };
	struct history *h;
	unsigned bad = 0;
	int rc;

	source_dir(src, dir, sizeof(dir));
	if (dst_dir && realpath(dir, a) && realpath(dst_dir, b) &&
	    !strcmp(a, b)) {
		snprintf(err, errlen,
			 "import %s: that is the service's own "
			 "history",
			 dir);
		return -1;
	}
	h = history_open(dir, HISTORY_READ_ONLY, err, errlen);
	if (!h)
		return -1;
	rc = history_foreach(h, import_one, &x, &bad, err, errlen);
	if (rc == 0)
		rc = flush(&x);
	for (size_t i = 0; i < x.n; i++)
		cJSON_Delete(x.batch[i]);
	history_close(h);
	if (rc < 0)
		return -1;
	x.st.unreadable = bad;
	*ret_stats = x.st;
	return 0;
}

int ctld_import_main(int argc, char **argv)
{
	char dir[CONF_PATH_MAX + 16], err[CONF_ERR_MAX];
	const char *conf_path = IOSTAGE_CONF_PATH, *src = NULL;
	static struct conf conf;
	struct ctld_import_stats st;
	struct history *h;
	int rc;

	for (int i = 1; i < argc; i++) {
		if ((!strcmp(argv[i], "-c") || !strcmp(argv[i], "--config")) &&
		    i + 1 < argc)
			conf_path = argv[++i];
		else if (!src && argv[i][0] != '-')
			src = argv[i];
		else
			goto usage;
	}
	if (!src) {
usage:
		fprintf(stderr, "usage: iostagectld --import PATH [-c CONF]\n");
		return 2;
	}
	conf_set_defaults(&conf);
	if (conf_load(conf_path, &conf, err, sizeof(err)) < 0) {
		fprintf(stderr, "iostagectld: %s\n", err);
		return 1;
	}
	history_dir(&conf, dir, sizeof(dir));
	/* A service that never ran has no StateDir yet. */
	if (history_make_state_dir(&conf) < 0) {
		fprintf(stderr,
			"iostagectld: --import: cannot create StateDir "
			"%s: %s\n",
			conf.state_dir, strerror(errno));
		return 1;
	}
	h = history_open(dir, HISTORY_READ_WRITE, err, sizeof(err));
	if (!h) {
		/* RocksDB's LOCK: the running service holds its database. */
		fprintf(stderr, "iostagectld: --import: %s%s\n", err,
			strstr(err, "LOCK") ? " (is iostagectld running? stop "
					      "it first)"
					    : "");
		return 1;
	}
	rc = ctld_import(h, dir, src, &st, err, sizeof(err));
	history_close(h);
	if (rc < 0) {
		fprintf(stderr, "iostagectld: --import %s: %s\n", src, err);
		return 1;
	}
	printf("iostagectld: imported %s into %s: %u job%s imported, %u "
	       "already recorded, %u unreadable, %u refused\n",
	       src, dir, st.imported, st.imported == 1 ? "" : "s", st.present,
	       st.unreadable, st.invalid);
	return 0;
}
