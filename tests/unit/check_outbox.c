/* check_outbox.c - unit tests for common/telemetry/outbox: the node's durable
 * outbox.
 *
 * Each test works in a fresh temp directory. What matters: an entry that
 * was put is listed and read back whole; a torn temporary file is never
 * taken for an entry and is cleaned at the next open; anything that cannot
 * be an entry is moved aside, never deleted; a removal never takes away an
 * entry rewritten since it was read.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <check.h>

#include "common/telemetry/outbox.h"
#include "tests/unit/check_run.h"

static char base[64];
static char dir[128];

static int rm_cb(const char *p, const struct stat *st, int flag,
		 struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(p);
}

static void setup(void)
{
	snprintf(base, sizeof(base), "/tmp/check_outbox.XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(base));
	snprintf(dir, sizeof(dir), "%s/outbox", base);
}

static void teardown(void)
{
	nftw(base, rm_cb, 16, FTW_DEPTH | FTW_PHYS);
}

static void write_file(const char *name, const char *text)
{
	char path[512];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "w");
	ck_assert_ptr_nonnull(f);
	fputs(text, f);
	fclose(f);
}

static char *read_file(const char *path)
{
	static char buf[4096];
	FILE *f = fopen(path, "r");
	size_t n;

	if (!f)
		return NULL;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	buf[n] = '\0';
	fclose(f);
	return buf;
}

static bool exists_in(const char *sub, const char *name)
{
	char path[512];
	struct stat st;

	snprintf(path, sizeof(path), "%s%s%s/%s", dir, sub[0] ? "/" : "", sub,
		 name);
	return lstat(path, &st) == 0;
}

/* How many files DIR/SUB holds whose names start with PREFIX. */
static int count_in(const char *sub, const char *prefix)
{
	char path[512];
	struct dirent *de;
	DIR *d;
	int n = 0;

	snprintf(path, sizeof(path), "%s%s%s", dir, sub[0] ? "/" : "", sub);
	d = opendir(path);
	ck_assert_ptr_nonnull(d);
	while ((de = readdir(d)))
		if (!strncmp(de->d_name, prefix, strlen(prefix)) &&
		    strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
			n++;
	closedir(d);
	return n;
}

static void set_mtime(const char *name, time_t t)
{
	struct timespec ts[2] = { { t, 0 }, { t, 0 } };
	char path[512];

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	ck_assert_int_eq(utimensat(AT_FDCWD, path, ts, 0), 0);
}

static cJSON *record(uint32_t job, const char *node)
{
	cJSON *r = cJSON_CreateObject();

	cJSON_AddNumberToObject(r, "schema", 1);
	cJSON_AddNumberToObject(r, "job", job);
	cJSON_AddStringToObject(r, "node", node);
	cJSON_AddStringToObject(r, "user", "alice");
	cJSON_AddNumberToObject(r, "end", 1700000000);
	return r;
}

static cJSON *entry(uint32_t job, const char *node)
{
	cJSON *r = record(job, node), *e;

	e = outbox_entry_new(job, node, NULL, 0, r, 1700000000);
	cJSON_Delete(r);
	ck_assert_ptr_nonnull(e);
	return e;
}

static struct outbox *xopen(unsigned *cleaned)
{
	char err[CONF_ERR_MAX];
	struct outbox *ob = NULL;

	ck_assert_msg(outbox_open(dir, &ob, cleaned, err, sizeof(err)) == 0,
		      "%s", err);
	return ob;
}

static void xput(struct outbox *ob, uint32_t job, const char *node)
{
	char err[CONF_ERR_MAX];
	cJSON *e = entry(job, node);

	ck_assert_msg(outbox_put(ob, e, err, sizeof(err)) == 0, "%s", err);
	cJSON_Delete(e);
}

START_TEST(test_open_creates_private_dirs)
{
	struct outbox *ob = xopen(NULL);
	struct stat st;
	char path[256];

	ck_assert_int_eq(stat(dir, &st), 0);
	ck_assert(S_ISDIR(st.st_mode));
	ck_assert_int_eq(st.st_mode & 07777, 0700);
	snprintf(path, sizeof(path), "%s/bad", dir);
	ck_assert_int_eq(stat(path, &st), 0);
	ck_assert_int_eq(st.st_mode & 07777, 0700);
	outbox_close(ob);
	/* Reopening an existing outbox is fine; a too open one is fixed. */
	ck_assert_int_eq(chmod(dir, 0755), 0);
	ob = xopen(NULL);
	ck_assert_int_eq(stat(dir, &st), 0);
	ck_assert_int_eq(st.st_mode & 07777, 0700);
	outbox_close(ob);
	outbox_close(NULL);
}
END_TEST

START_TEST(test_open_refuses)
{
	char err[CONF_ERR_MAX], link[256];
	struct outbox *ob = NULL;

	ck_assert_int_eq(outbox_open("rel/outbox", &ob, NULL, err, sizeof(err)),
			 -1);
	ck_assert_int_eq(errno, EINVAL);
	ck_assert_ptr_null(ob);
	ck_assert_int_eq(outbox_open(NULL, &ob, NULL, err, sizeof(err)), -1);
	/* A link in place of the directory is not followed. */
	snprintf(link, sizeof(link), "%s/victim", base);
	ck_assert_int_eq(mkdir(link, 0700), 0);
	ck_assert_int_eq(symlink(link, dir), 0);
	ck_assert_int_eq(outbox_open(dir, &ob, NULL, err, sizeof(err)), -1);
	ck_assert_ptr_nonnull(strstr(err, "not a directory"));
	ck_assert_ptr_null(ob);
}
END_TEST

static const struct {
	const char *json;
	const char *want; /* NULL: valid; else a substring of the error */
} entry_cases[] = {
	{ "{\"job\":7,\"node\":\"n1\",\"nodes\":[\"n1\"],"
	  "\"record\":{\"job\":7,\"node\":\"n1\"}}",
	  NULL },
	{ "{\"job\":7,\"node\":\"n2\",\"nodes\":[\"n1\",\"n2\",\"n3\"],"
	  "\"record\":{\"job\":7,\"node\":\"n2\"}}",
	  NULL },
	{ "[]", "not a JSON object" },
	{ "{}", "key 'job'" },
	{ "{\"job\":0,\"node\":\"n1\",\"nodes\":[\"n1\"],"
	  "\"record\":{\"job\":0,\"node\":\"n1\"}}",
	  "key 'job'" },
	{ "{\"job\":1.5,\"node\":\"n1\",\"nodes\":[\"n1\"],"
	  "\"record\":{}}",
	  "key 'job'" },
	{ "{\"job\":4294967296,\"node\":\"n1\"}", "key 'job'" },
	{ "{\"job\":\"7\",\"node\":\"n1\"}", "key 'job'" },
	{ "{\"job\":7,\"node\":\"../x\",\"nodes\":[\"n1\"]}", "key 'node'" },
	{ "{\"job\":7,\"node\":\"\",\"nodes\":[\"n1\"]}", "key 'node'" },
	{ "{\"job\":7,\"node\":\"n1\"}", "key 'nodes'" },
	{ "{\"job\":7,\"node\":\"n1\",\"nodes\":[]}", "key 'nodes'" },
	{ "{\"job\":7,\"node\":\"n1\",\"nodes\":[\"n2\"]}", "does not name" },
	{ "{\"job\":7,\"node\":\"n1\",\"nodes\":[\"n1\",3]}", "item 1" },
	{ "{\"job\":7,\"node\":\"n1\",\"nodes\":[\"n1\",\"a/b\"]}", "item 1" },
	{ "{\"job\":7,\"node\":\"n1\",\"nodes\":[\"n1\"]}", "key 'record'" },
	{ "{\"job\":7,\"node\":\"n1\",\"nodes\":[\"n1\"],\"record\":[]}",
	  "key 'record'" },
	{ "{\"job\":7,\"node\":\"n1\",\"nodes\":[\"n1\"],"
	  "\"record\":{\"job\":8,\"node\":\"n1\"}}",
	  "key 'record'" },
	{ "{\"job\":7,\"node\":\"n1\",\"nodes\":[\"n1\"],"
	  "\"record\":{\"job\":7,\"node\":\"n2\"}}",
	  "key 'record'" },
	{ "{\"job\":7,\"node\":\"n1\",\"nodes\":[\"n1\"],"
	  "\"record\":{\"job\":7}}",
	  "key 'record'" },
};

START_TEST(test_entry_check)
{
	char err[CONF_ERR_MAX];
	cJSON *e = cJSON_Parse(entry_cases[_i].json);
	int rc;

	ck_assert_ptr_nonnull(e);
	err[0] = '\0';
	rc = outbox_entry_check(e, err, sizeof(err));
	if (!entry_cases[_i].want) {
		ck_assert_msg(rc == 0, "%s: %s", entry_cases[_i].json, err);
	} else {
		ck_assert_int_eq(rc, -1);
		ck_assert_int_eq(errno, EINVAL);
		ck_assert_msg(strstr(err, entry_cases[_i].want), "%s: got '%s'",
			      entry_cases[_i].json, err);
	}
	cJSON_Delete(e);
}
END_TEST

START_TEST(test_entry_check_null_and_many_nodes)
{
	char err[CONF_ERR_MAX];
	cJSON *e, *r = record(9, "n0"), *nodes;
	const char **names = calloc(OUTBOX_NODES_MAX + 1, sizeof(*names));
	char(*buf)[16] = calloc(OUTBOX_NODES_MAX + 1, sizeof(*buf));

	ck_assert_int_eq(outbox_entry_check(NULL, err, sizeof(err)), -1);
	for (int i = 0; i <= OUTBOX_NODES_MAX; i++) {
		snprintf(buf[i], sizeof(buf[i]), "n%d", i);
		names[i] = buf[i];
	}
	e = outbox_entry_new(9, "n0", names, OUTBOX_NODES_MAX, r, 1);
	ck_assert_int_eq(outbox_entry_check(e, err, sizeof(err)), 0);
	nodes = cJSON_GetObjectItem(e, "nodes");
	cJSON_AddItemToArray(nodes, cJSON_CreateString("extra"));
	ck_assert_int_eq(outbox_entry_check(e, err, sizeof(err)), -1);
	ck_assert_ptr_nonnull(strstr(err, "more than"));
	cJSON_Delete(e);
	cJSON_Delete(r);
	free(names);
	free(buf);
}
END_TEST

START_TEST(test_put_list_read_remove)
{
	char err[CONF_ERR_MAX];
	struct outbox_item *items = NULL;
	struct outbox *ob = xopen(NULL);
	size_t n = 99;
	cJSON *e;

	ck_assert_int_eq(outbox_list(ob, &items, &n, err, sizeof(err)), 0);
	ck_assert_uint_eq(n, 0);
	ck_assert_ptr_null(items);
	xput(ob, 12, "n1");
	xput(ob, 11, "n2.cluster");
	ck_assert(exists_in("", "12.n1.json"));
	ck_assert(exists_in("", "11.n2.cluster.json"));
	ck_assert_int_eq(count_in("", "."), 0); /* no temporary left */
	ck_assert_int_eq(outbox_count(ob), 2);
	/* File times are coarse: make 12 the older one for sure. */
	set_mtime("12.n1.json", 1000);
	set_mtime("11.n2.cluster.json", 2000);
	ck_assert_int_eq(outbox_list(ob, &items, &n, err, sizeof(err)), 0);
	ck_assert_uint_eq(n, 2);
	/* Oldest first. */
	ck_assert_str_eq(items[0].name, "12.n1.json");
	ck_assert(items[0].valid_name);
	ck_assert_uint_eq(items[0].job, 12);
	ck_assert_str_eq(items[0].node, "n1");
	ck_assert_uint_eq(items[1].job, 11);
	ck_assert_str_eq(items[1].node, "n2.cluster");
	e = outbox_read(ob, &items[1], err, sizeof(err));
	ck_assert_msg(e != NULL, "%s", err);
	ck_assert_int_eq(cJSON_GetObjectItem(e, "job")->valueint, 11);
	ck_assert_str_eq(cJSON_GetObjectItem(e, "node")->valuestring,
			 "n2.cluster");
	ck_assert_str_eq(
	    cJSON_GetArrayItem(cJSON_GetObjectItem(e, "nodes"), 0)->valuestring,
	    "n2.cluster");
	ck_assert_str_eq(cJSON_GetObjectItem(cJSON_GetObjectItem(e, "record"),
					     "user")
			     ->valuestring,
			 "alice");
	cJSON_Delete(e);
	ck_assert_int_eq(outbox_remove(ob, &items[1], err, sizeof(err)), 0);
	ck_assert(!exists_in("", "11.n2.cluster.json"));
	/* Removing it again: already gone is fine. */
	ck_assert_int_eq(outbox_remove(ob, &items[1], err, sizeof(err)), 0);
	ck_assert_int_eq(outbox_count(ob), 1);
	free(items);
	outbox_close(ob);
}
END_TEST

START_TEST(test_put_replaces_and_remove_keeps_newer)
{
	char err[CONF_ERR_MAX];
	struct outbox_item *items = NULL;
	struct outbox *ob = xopen(NULL);
	cJSON *e, *e2;
	size_t n;

	xput(ob, 5, "n1");
	ck_assert_int_eq(outbox_list(ob, &items, &n, err, sizeof(err)), 0);
	ck_assert_uint_eq(n, 1);
	e = outbox_read(ob, &items[0], err, sizeof(err));
	ck_assert_ptr_nonnull(e);
	/* A newer record of the same job and node while the first was being
	 * sent: the removal of the first must not take it. */
	e2 = entry(5, "n1");
	cJSON_ReplaceItemInObject(cJSON_GetObjectItem(e2, "record"), "user",
				  cJSON_CreateString("bob"));
	ck_assert_int_eq(outbox_put(ob, e2, err, sizeof(err)), 0);
	ck_assert_int_eq(outbox_count(ob), 1);
	ck_assert_int_eq(outbox_remove(ob, &items[0], err, sizeof(err)), 1);
	ck_assert(exists_in("", "5.n1.json"));
	free(items);
	ck_assert_int_eq(outbox_list(ob, &items, &n, err, sizeof(err)), 0);
	ck_assert_uint_eq(n, 1);
	cJSON_Delete(e);
	e = outbox_read(ob, &items[0], err, sizeof(err));
	ck_assert_ptr_nonnull(e);
	ck_assert_str_eq(cJSON_GetObjectItem(cJSON_GetObjectItem(e, "record"),
					     "user")
			     ->valuestring,
			 "bob");
	ck_assert_int_eq(outbox_remove(ob, &items[0], err, sizeof(err)), 0);
	ck_assert_int_eq(outbox_count(ob), 0);
	cJSON_Delete(e);
	cJSON_Delete(e2);
	free(items);
	outbox_close(ob);
}
END_TEST

START_TEST(test_put_refuses_bad_and_big)
{
	char err[CONF_ERR_MAX];
	struct outbox *ob = xopen(NULL);
	cJSON *e = entry(6, "n1"), *rec;
	char *big = malloc(OUTBOX_ENTRY_MAX + 1);

	cJSON_ReplaceItemInObject(e, "node", cJSON_CreateString("../../etc"));
	ck_assert_int_eq(outbox_put(ob, e, err, sizeof(err)), -1);
	ck_assert_int_eq(errno, EINVAL);
	cJSON_Delete(e);
	e = entry(6, "n1");
	memset(big, 'x', OUTBOX_ENTRY_MAX);
	big[OUTBOX_ENTRY_MAX] = '\0';
	rec = cJSON_GetObjectItem(e, "record");
	cJSON_AddStringToObject(rec, "padding", big);
	ck_assert_int_eq(outbox_put(ob, e, err, sizeof(err)), -1);
	ck_assert_int_eq(errno, EMSGSIZE);
	ck_assert_ptr_nonnull(strstr(err, "6.n1.json"));
	ck_assert_int_eq(outbox_count(ob), 0);
	ck_assert_int_eq(count_in("", "."), 0);
	cJSON_Delete(e);
	free(big);
	outbox_close(ob);
}
END_TEST

START_TEST(test_torn_temp_ignored_then_cleaned)
{
	char err[CONF_ERR_MAX];
	struct outbox_item *items = NULL;
	struct outbox *ob = xopen(NULL);
	unsigned cleaned = 99;
	size_t n;

	xput(ob, 20, "n1");
	/* What a crash in the middle of a put leaves: half an entry under a
	 * temporary name. */
	write_file(".21.n1.json.1234.1.tmp", "{\"outbox\":1,\"job\":21,\"no");
	write_file(".22.n1.json.1234.2.tmp", "");
	ck_assert_int_eq(outbox_list(ob, &items, &n, err, sizeof(err)), 0);
	ck_assert_uint_eq(n, 1);
	ck_assert_str_eq(items[0].name, "20.n1.json");
	free(items);
	outbox_close(ob);
	ob = xopen(&cleaned);
	ck_assert_uint_eq(cleaned, 2);
	ck_assert(!exists_in("", ".21.n1.json.1234.1.tmp"));
	ck_assert(!exists_in("", ".22.n1.json.1234.2.tmp"));
	ck_assert(exists_in("", "20.n1.json"));
	outbox_close(ob);
	ob = xopen(&cleaned);
	ck_assert_uint_eq(cleaned, 0);
	outbox_close(ob);
}
END_TEST

START_TEST(test_bad_files_quarantined_never_deleted)
{
	static const struct {
		const char *name;
		const char *text;
	} bad[] = {
		{ "notes.txt", "an admin's note" },
		{ "30.n1.json", "{not json" },
		{ "31.n1.json",
		  "{\"job\":32,\"node\":\"n1\",\"nodes\":[\"n1\"],"
		  "\"record\":{\"job\":32,\"node\":\"n1\"}}" },
		{ "33.n1.json",
		  "{\"job\":33,\"node\":\"n1\",\"nodes\":[\"n1\"]}" },
		{ "0.n1.json", "{}" },
		{ "34..json", "{}" },
	};
	char err[CONF_ERR_MAX], path[512];
	struct outbox_item *items = NULL;
	struct outbox *ob = xopen(NULL);
	size_t n, nbad = sizeof(bad) / sizeof(bad[0]);

	for (size_t i = 0; i < nbad; i++)
		write_file(bad[i].name, bad[i].text);
	snprintf(path, sizeof(path), "%s/35.n1.json", dir);
	ck_assert_int_eq(mkdir(path, 0700), 0); /* not a regular file */
	xput(ob, 36, "n1");
	ck_assert_int_eq(outbox_list(ob, &items, &n, err, sizeof(err)), 0);
	ck_assert_uint_eq(n, nbad + 2);
	for (size_t i = 0; i < n; i++) {
		cJSON *e = outbox_read(ob, &items[i], err, sizeof(err));
		char moved[512];

		if (!strcmp(items[i].name, "36.n1.json")) {
			ck_assert_msg(e != NULL, "%s", err);
			cJSON_Delete(e);
			continue;
		}
		ck_assert_msg(e == NULL, "%s read as an entry", items[i].name);
		ck_assert_int_eq(errno, EINVAL);
		ck_assert_ptr_nonnull(strstr(err, items[i].name));
		ck_assert_int_eq(outbox_quarantine(ob, &items[i], moved,
						   sizeof(moved), err,
						   sizeof(err)),
				 0);
		ck_assert_ptr_nonnull(strstr(moved, "/bad/"));
		ck_assert(!exists_in("", items[i].name));
		ck_assert_int_eq(count_in("bad", items[i].name), 1);
	}
	free(items);
	/* The contents are kept as they were. */
	ck_assert_int_eq(count_in("bad", ""), (int)nbad + 1);
	ck_assert_int_eq(outbox_count(ob), 1);
	{
		DIR *d;
		struct dirent *de;
		char p[1024];

		snprintf(path, sizeof(path), "%s/bad", dir);
		d = opendir(path);
		while ((de = readdir(d)))
			if (!strncmp(de->d_name, "30.n1.json.", 11)) {
				snprintf(p, sizeof(p), "%s/%s", path,
					 de->d_name);
				ck_assert_str_eq(read_file(p), "{not json");
			}
		closedir(d);
	}
	/* The same name quarantined twice: both copies kept. */
	write_file("30.n1.json", "{again");
	ck_assert_int_eq(outbox_list(ob, &items, &n, err, sizeof(err)), 0);
	for (size_t i = 0; i < n; i++)
		if (!strcmp(items[i].name, "30.n1.json"))
			ck_assert_int_eq(outbox_quarantine(ob, &items[i], NULL,
							   0, err, sizeof(err)),
					 0);
	ck_assert_int_eq(count_in("bad", "30.n1.json"), 2);
	free(items);
	outbox_close(ob);
}
END_TEST

START_TEST(test_oversized_file_is_not_an_entry)
{
	char err[CONF_ERR_MAX], path[256];
	struct outbox_item *items = NULL;
	struct outbox *ob = xopen(NULL);
	size_t n;
	FILE *f;
	cJSON *e;

	snprintf(path, sizeof(path), "%s/40.n1.json", dir);
	f = fopen(path, "w");
	ck_assert_ptr_nonnull(f);
	for (int i = 0; i <= OUTBOX_ENTRY_MAX / 1024; i++)
		for (int j = 0; j < 1024; j++)
			fputc(' ', f);
	fclose(f);
	ck_assert_int_eq(outbox_list(ob, &items, &n, err, sizeof(err)), 0);
	ck_assert_uint_eq(n, 1);
	e = outbox_read(ob, &items[0], err, sizeof(err));
	ck_assert_ptr_null(e);
	ck_assert_int_eq(errno, EINVAL);
	free(items);
	outbox_close(ob);
}
END_TEST

START_TEST(test_read_gone_is_enoent)
{
	char err[CONF_ERR_MAX];
	struct outbox_item *items = NULL;
	struct outbox *ob = xopen(NULL);
	size_t n;

	xput(ob, 50, "n1");
	ck_assert_int_eq(outbox_list(ob, &items, &n, err, sizeof(err)), 0);
	ck_assert_int_eq(outbox_remove(ob, &items[0], err, sizeof(err)), 0);
	ck_assert_ptr_null(outbox_read(ob, &items[0], err, sizeof(err)));
	ck_assert_int_eq(errno, ENOENT);
	free(items);
	outbox_close(ob);
}
END_TEST

/* Listings that run at once (the forwarder's pass, and the count that
 * /metrics and status take) each see every entry exactly once: they
 * must not share a directory read position. */
#define MANY 3000
struct lister {
	struct outbox *ob;
	int bad; /* listings that were not exactly MANY distinct entries */
};

static void *list_many(void *arg)
{
	struct lister *l = arg;
	char err[CONF_ERR_MAX];

	for (int round = 0; round < 30; round++) {
		struct outbox_item *items = NULL;
		static __thread unsigned char seen[MANY + 1];
		size_t n = 0, distinct = 0;

		if (outbox_list(l->ob, &items, &n, err, sizeof(err)) < 0) {
			l->bad++;
			continue;
		}
		memset(seen, 0, sizeof(seen));
		for (size_t i = 0; i < n; i++)
			if (items[i].job >= 1 && items[i].job <= MANY &&
			    !seen[items[i].job]++)
				distinct++;
		if (n != MANY || distinct != MANY)
			l->bad++;
		free(items);
	}
	return NULL;
}

START_TEST(test_listings_at_once)
{
	struct outbox *ob = xopen(NULL);
	struct lister l[3];
	pthread_t t[3];

	for (uint32_t j = 1; j <= MANY; j++)
		xput(ob, j, "n1");
	for (int i = 0; i < 3; i++) {
		l[i] = (struct lister){ ob, 0 };
		ck_assert_int_eq(pthread_create(&t[i], NULL, list_many, &l[i]),
				 0);
	}
	for (int i = 0; i < 3; i++) {
		pthread_join(t[i], NULL);
		ck_assert_int_eq(l[i].bad, 0);
	}
	outbox_close(ob);
}
END_TEST

static Suite *outbox_suite(void)
{
	Suite *s = suite_create("outbox");
	TCase *tc = tcase_create("core");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_open_creates_private_dirs);
	tcase_add_test(tc, test_listings_at_once);
	tcase_add_test(tc, test_open_refuses);
	tcase_add_loop_test(tc, test_entry_check, 0,
			    sizeof(entry_cases) / sizeof(entry_cases[0]));
	tcase_add_test(tc, test_entry_check_null_and_many_nodes);
	tcase_add_test(tc, test_put_list_read_remove);
	tcase_add_test(tc, test_put_replaces_and_remove_keeps_newer);
	tcase_add_test(tc, test_put_refuses_bad_and_big);
	tcase_add_test(tc, test_torn_temp_ignored_then_cleaned);
	tcase_add_test(tc, test_bad_files_quarantined_never_deleted);
	tcase_add_test(tc, test_oversized_file_is_not_an_entry);
	tcase_add_test(tc, test_read_gone_is_enoent);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return check_run(outbox_suite());
}
