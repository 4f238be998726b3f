/* check_manifest.c - unit tests for common/fs/manifest: entries, lookups,
 * comparison, and the on-disk format (round trips through files and pipes;
 * truncated, garbage and crafted input refused without crashing).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <check.h>
#include <xxhash.h>

#include "common/fs/manifest.h"
#include "tests/unit/check_run.h"

#define N(a) (sizeof(a) / sizeof((a)[0]))

static struct manifest_entry ent(const char *path, int type, uint64_t size,
				 int64_t mtime, uint32_t mode)
{
	struct manifest_entry e;

	memset(&e, 0, sizeof(e));
	e.path = path;
	e.type = (uint8_t)type;
	e.size = size;
	e.mtime_ns = mtime;
	e.mode = mode;
	return e;
}

static int add(struct manifest *m, const char *path, int type, uint64_t size,
	       int64_t mtime)
{
	struct manifest_entry e = ent(path, type, size, mtime, 0644);

	return manifest_add(m, &e);
}

/* A small manifest: the top, a dir, files, a symlink, one with a hash. */
static struct manifest *sample(void)
{
	struct manifest *m = manifest_create();
	struct manifest_entry e;

	ck_assert_ptr_nonnull(m);
	ck_assert_int_eq(add(m, "", MANIFEST_DIR, 0, 5), 0);
	ck_assert_int_eq(add(m, "a", MANIFEST_DIR, 0, 6), 0);
	ck_assert_int_eq(add(m, "a/f1", MANIFEST_FILE, 10, 7), 0);
	ck_assert_int_eq(add(m, "a/f2", MANIFEST_FILE, 0, -8), 0);
	e = ent("a/l", MANIFEST_SYMLINK, 3, 9, 0777);
	ck_assert_int_eq(manifest_add(m, &e), 0);
	e = ent("b", MANIFEST_FILE, (uint64_t)5 << 32, 1234567890123456789LL,
		04755);
	e.has_hash = 1;
	for (int i = 0; i < MANIFEST_HASH_LEN; i++)
		e.hash[i] = (uint8_t)(i * 7 + 1);
	ck_assert_int_eq(manifest_add(m, &e), 0);
	return m;
}

static void assert_equal(const struct manifest *a, const struct manifest *b)
{
	ck_assert_uint_eq(manifest_count(a), manifest_count(b));
	for (size_t i = 0; i < manifest_count(a); i++) {
		const struct manifest_entry *x = manifest_get(a, i);
		const struct manifest_entry *y = manifest_get(b, i);

		ck_assert_str_eq(x->path, y->path);
		ck_assert_uint_eq(x->path_len, y->path_len);
		ck_assert_uint_eq(x->type, y->type);
		ck_assert_uint_eq(x->size, y->size);
		ck_assert(x->mtime_ns == y->mtime_ns);
		ck_assert_uint_eq(x->mode, y->mode);
		ck_assert_uint_eq(x->has_hash, y->has_hash);
		ck_assert(!memcmp(x->hash, y->hash, MANIFEST_HASH_LEN));
	}
}

/* M serialized, in memory (*len bytes; caller frees). */
static unsigned char *serialize(const struct manifest *m, size_t *len)
{
	char name[] = "/tmp/check_manifest.XXXXXX";
	int fd = mkstemp(name);
	unsigned char *buf;
	off_t size;

	ck_assert_int_ge(fd, 0);
	unlink(name);
	ck_assert_int_eq(manifest_write(m, fd), 0);
	size = lseek(fd, 0, SEEK_END);
	ck_assert_int_gt(size, 0);
	buf = malloc((size_t)size);
	ck_assert_ptr_nonnull(buf);
	ck_assert_int_eq(pread(fd, buf, (size_t)size, 0), size);
	close(fd);
	*len = (size_t)size;
	return buf;
}

/* Recompute the trailer of a crafted manifest so only the content is
 * wrong, not the checksum. */
static void reseal(unsigned char *buf, size_t len)
{
	XXH128_canonical_t c;

	XXH128_canonicalFromHash(&c, XXH3_128bits(buf, len - 16));
	memcpy(buf + len - 16, c.digest, 16);
}

static void assert_refused(const unsigned char *buf, size_t len,
			   const char *want)
{
	struct manifest *m = (struct manifest *)0x1;
	char err[256] = "";

	errno = 0;
	ck_assert_int_eq(manifest_parse(buf, len, &m, err, sizeof(err)), -1);
	ck_assert_ptr_eq(m, (struct manifest *)0x1); /* untouched */
	ck_assert(errno == EBADMSG || errno == EFBIG);
	ck_assert_msg(!strncmp(err, "manifest: ", 10), "err: %s", err);
	if (want)
		ck_assert_msg(strstr(err, want), "'%s' not in '%s'", want, err);
}

/* --- entries and lookups ------------------------------------------------ */

START_TEST(test_add_get_find)
{
	struct manifest *m = sample();
	const struct manifest_entry *e;

	ck_assert_uint_eq(manifest_count(m), 6);
	ck_assert_str_eq(manifest_get(m, 0)->path, "");
	ck_assert_str_eq(manifest_get(m, 5)->path, "b");
	ck_assert_ptr_null(manifest_get(m, 6));
	e = manifest_find(m, "a/f1", 4);
	ck_assert_ptr_nonnull(e);
	ck_assert_uint_eq(e->size, 10);
	ck_assert_uint_eq(manifest_index(m, e), 2);
	/* LEN bytes count, not the NUL. */
	e = manifest_find(m, "a/f1xyz", 4);
	ck_assert_ptr_nonnull(e);
	ck_assert_str_eq(e->path, "a/f1");
	ck_assert_ptr_nonnull(manifest_find(m, "", 0));
	ck_assert_ptr_null(manifest_find(m, "a/f3", 4));
	ck_assert_ptr_null(manifest_find(m, "a/", 2));
	ck_assert_ptr_null(manifest_find(m, NULL, 0));
	ck_assert_ptr_null(manifest_find(NULL, "a", 1));
	manifest_destroy(m);
	manifest_destroy(NULL);
}
END_TEST

START_TEST(test_many_entries_found)
{
	struct manifest *m = manifest_create();
	char path[64];

	for (int i = 0; i < 20000; i++) {
		snprintf(path, sizeof(path), "d%02d/file%06d", i / 1000, i);
		ck_assert_int_eq(add(m, path, MANIFEST_FILE, (uint64_t)i, i),
				 0);
	}
	for (int i = 0; i < 20000; i += 7) {
		const struct manifest_entry *e;

		snprintf(path, sizeof(path), "d%02d/file%06d", i / 1000, i);
		e = manifest_find(m, path, strlen(path));
		ck_assert_ptr_nonnull(e);
		ck_assert_uint_eq(e->size, (uint64_t)i);
	}
	ck_assert_ptr_null(manifest_find(m, "d00/file999999", 14));
	manifest_destroy(m);
}
END_TEST

static const char *bad_paths[] = {
	"/a", "a/", "a//b", ".", "..", "./a", "a/.", "a/../b", "a/./b", "../a",
};

START_TEST(test_add_refuses_bad_paths)
{
	struct manifest *m = manifest_create();

	errno = 0;
	ck_assert_int_eq(add(m, bad_paths[_i], MANIFEST_FILE, 1, 1), -1);
	ck_assert_int_eq(errno, EINVAL);
	ck_assert_uint_eq(manifest_count(m), 0);
	manifest_destroy(m);
}
END_TEST

START_TEST(test_add_refuses_bad_entries)
{
	struct manifest *m = manifest_create();
	struct manifest_entry e;
	char *longp = malloc(MANIFEST_PATH_MAX + 2);

	ck_assert_int_eq(add(m, "b", MANIFEST_FILE, 1, 1), 0);
	/* Order: equal, smaller, and "" after the first. */
	ck_assert_int_eq(add(m, "b", MANIFEST_FILE, 1, 1), -1);
	ck_assert_int_eq(add(m, "a", MANIFEST_FILE, 1, 1), -1);
	ck_assert_int_eq(add(m, "", MANIFEST_DIR, 0, 1), -1);
	/* Type and mode. */
	e = ent("c", 0, 1, 1, 0644);
	ck_assert_int_eq(manifest_add(m, &e), -1);
	e = ent("c", 4, 1, 1, 0644);
	ck_assert_int_eq(manifest_add(m, &e), -1);
	e = ent("c", MANIFEST_FILE, 1, 1, 0100644);
	ck_assert_int_eq(manifest_add(m, &e), -1);
	/* Path length: MANIFEST_PATH_MAX fits, one more does not. */
	memset(longp, 'x', MANIFEST_PATH_MAX + 1);
	longp[MANIFEST_PATH_MAX + 1] = '\0';
	ck_assert_int_eq(add(m, longp, MANIFEST_FILE, 1, 1), -1);
	longp[MANIFEST_PATH_MAX] = '\0';
	ck_assert_int_eq(add(m, longp, MANIFEST_FILE, 1, 1), 0);
	ck_assert_int_eq(manifest_add(m, NULL), -1);
	ck_assert_int_eq(manifest_add(NULL, &e), -1);
	ck_assert_uint_eq(manifest_count(m), 2);
	free(longp);
	manifest_destroy(m);
}
END_TEST

/* --- comparing ------------------------------------------------------------- */

START_TEST(test_compare)
{
	struct manifest *old = manifest_create(), *cur = manifest_create();
	struct manifest_diff d;
	uint8_t dec[8];

	ck_assert_int_eq(add(old, "", MANIFEST_DIR, 0, 1), 0);
	ck_assert_int_eq(add(old, "gone", MANIFEST_FILE, 1, 1), 0);
	ck_assert_int_eq(add(old, "same", MANIFEST_FILE, 5, 1), 0);
	ck_assert_int_eq(add(old, "size", MANIFEST_FILE, 5, 1), 0);
	ck_assert_int_eq(add(old, "time", MANIFEST_FILE, 5, 1), 0);
	ck_assert_int_eq(add(old, "type", MANIFEST_FILE, 5, 1), 0);

	ck_assert_int_eq(add(cur, "", MANIFEST_DIR, 0, 1), 0);
	ck_assert_int_eq(add(cur, "new", MANIFEST_FILE, 1, 1), 0);
	ck_assert_int_eq(add(cur, "same", MANIFEST_FILE, 5, 1), 0);
	ck_assert_int_eq(add(cur, "size", MANIFEST_FILE, 6, 1), 0);
	ck_assert_int_eq(add(cur, "time", MANIFEST_FILE, 5, 2), 0);
	ck_assert_int_eq(add(cur, "type", MANIFEST_SYMLINK, 5, 1), 0);

	memset(dec, 0xff, sizeof(dec));
	ck_assert_int_eq(manifest_compare(old, cur, MANIFEST_VERIFY_STAT, &d,
					  dec),
			 0);
	ck_assert_uint_eq(d.added, 1);
	ck_assert_uint_eq(d.removed, 1);
	ck_assert_uint_eq(d.changed, 3);
	ck_assert_uint_eq(d.same, 2);
	ck_assert_uint_eq(dec[0], MANIFEST_COPY); /* a dir is made anew */
	ck_assert_uint_eq(dec[1], MANIFEST_COPY);
	ck_assert_uint_eq(dec[2], MANIFEST_LINK);
	ck_assert_uint_eq(dec[3], MANIFEST_COPY);
	ck_assert_uint_eq(dec[4], MANIFEST_COPY);
	ck_assert_uint_eq(dec[5], MANIFEST_COPY);
	ck_assert_uint_eq(dec[6], 0xff);

	/* Checksum: entries without hashes never match. */
	ck_assert_int_eq(manifest_compare(old, cur, MANIFEST_VERIFY_CHECKSUM,
					  &d, NULL),
			 0);
	ck_assert_uint_eq(d.same, 1); /* only the top dir */
	ck_assert_int_eq(manifest_compare(cur, cur, MANIFEST_VERIFY_STAT, &d,
					  NULL),
			 0);
	ck_assert_uint_eq(d.same, 6);
	ck_assert_uint_eq(d.added + d.removed + d.changed, 0);
	ck_assert_int_eq(manifest_compare(NULL, cur, MANIFEST_VERIFY_STAT, &d,
					  NULL),
			 -1);
	manifest_destroy(old);
	manifest_destroy(cur);
}
END_TEST

START_TEST(test_entry_same_checksum)
{
	struct manifest_entry a = ent("x", MANIFEST_FILE, 3, 4, 0600), b = a;

	ck_assert(manifest_entry_same(&a, &b, MANIFEST_VERIFY_STAT));
	ck_assert(!manifest_entry_same(&a, &b, MANIFEST_VERIFY_CHECKSUM));
	a.has_hash = b.has_hash = 1;
	a.hash[3] = b.hash[3] = 9;
	ck_assert(manifest_entry_same(&a, &b, MANIFEST_VERIFY_CHECKSUM));
	b.hash[15] = 1;
	ck_assert(!manifest_entry_same(&a, &b, MANIFEST_VERIFY_CHECKSUM));
	ck_assert(manifest_entry_same(&a, &b, MANIFEST_VERIFY_STAT));
	b = a;
	b.mode = 0644;
	ck_assert(!manifest_entry_same(&a, &b, MANIFEST_VERIFY_STAT));
	/* A directory's size is not compared. */
	a = ent("d", MANIFEST_DIR, 0, 4, 0700);
	b = a;
	b.size = 4096;
	ck_assert(manifest_entry_same(&a, &b, MANIFEST_VERIFY_STAT));
}
END_TEST

/* --- the on-disk format ------------------------------------------------------ */

START_TEST(test_roundtrip_file)
{
	struct manifest *m = sample(), *r = NULL;
	char err[256];
	size_t len;
	unsigned char *buf = serialize(m, &len);

	ck_assert_int_eq(manifest_parse(buf, len, &r, err, sizeof(err)), 0);
	assert_equal(m, r);
	ck_assert_ptr_nonnull(manifest_find(r, "a/l", 3));
	manifest_destroy(r);
	free(buf);
	manifest_destroy(m);
}
END_TEST

START_TEST(test_roundtrip_pipe_large)
{
	struct manifest *m = manifest_create(), *r = NULL;
	char path[80], err[256];
	int p[2];
	pid_t pid;

	/* Larger than a pipe's buffer: the writer must be concurrent. */
	ck_assert_int_eq(add(m, "", MANIFEST_DIR, 0, 1), 0);
	for (int i = 0; i < 30000; i++) {
		snprintf(path, sizeof(path), "class_%03d/sample_%07d.jpg",
			 i / 300, i);
		ck_assert_int_eq(add(m, path, MANIFEST_FILE, (uint64_t)i * 31,
				     (int64_t)i * 1000000007LL),
				 0);
	}
	ck_assert_int_eq(pipe(p), 0);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		close(p[0]);
		_exit(manifest_write(m, p[1]) == 0 ? 0 : 1);
	}
	close(p[1]);
	ck_assert_int_eq(manifest_read(p[0], &r, err, sizeof(err)), 0);
	close(p[0]);
	assert_equal(m, r);
	manifest_destroy(r);
	manifest_destroy(m);
}
END_TEST

START_TEST(test_roundtrip_empty)
{
	struct manifest *m = manifest_create(), *r = NULL;
	char err[256];
	size_t len;
	unsigned char *buf = serialize(m, &len);

	ck_assert_uint_eq(len, 24 + 16);
	ck_assert_int_eq(manifest_parse(buf, len, &r, err, sizeof(err)), 0);
	ck_assert_uint_eq(manifest_count(r), 0);
	ck_assert_ptr_null(manifest_find(r, "", 0));
	manifest_destroy(r);
	free(buf);
	manifest_destroy(m);
}
END_TEST

START_TEST(test_compact)
{
	struct manifest *m = manifest_create();
	char path[128];
	size_t len, paths = 0;
	unsigned char *buf;

	for (int i = 0; i < 1000; i++) {
		snprintf(path, sizeof(path),
			 "train/some_long_class_directory_name/image_%06d.jpg",
			 i);
		paths += strlen(path);
		ck_assert_int_eq(add(m, path, MANIFEST_FILE, 1, 1), 0);
	}
	buf = serialize(m, &len);
	/* Front coding: far less than the paths themselves. */
	ck_assert_uint_lt(len, 24 + 16 + 1000 * (26 + 12));
	ck_assert_uint_gt(paths, 50000);
	free(buf);
	manifest_destroy(m);
}
END_TEST

START_TEST(test_every_truncation_refused)
{
	struct manifest *m = sample();
	size_t len;
	unsigned char *buf = serialize(m, &len);

	for (size_t n = 0; n < len; n++) {
		unsigned char *cut = malloc(n ? n : 1);

		memcpy(cut, buf, n);
		assert_refused(cut, n, NULL);
		free(cut);
	}
	free(buf);
	manifest_destroy(m);
}
END_TEST

START_TEST(test_every_flipped_byte_refused)
{
	struct manifest *m = sample();
	size_t len;
	unsigned char *buf = serialize(m, &len);

	for (size_t i = 0; i < len; i++) {
		buf[i] ^= 0x20;
		assert_refused(buf, len, i < 8 ? "magic" : NULL);
		buf[i] ^= 0x20;
	}
	free(buf);
	manifest_destroy(m);
}
END_TEST

START_TEST(test_garbage_refused)
{
	unsigned char buf[4096];
	unsigned int seed = 42;

	for (int round = 0; round < 200; round++) {
		size_t len = (size_t)(rand_r(&seed) % sizeof(buf));

		for (size_t i = 0; i < len; i++)
			buf[i] = (unsigned char)rand_r(&seed);
		/* Half of them get the right magic and a valid checksum:
		 * the parser itself must hold. */
		if (round % 2 && len >= 40) {
			memcpy(buf, "IOSTMANF\1\0\0\0\0\0\0\0", 16);
			reseal(buf, len);
		}
		assert_refused(buf, len, NULL);
	}
}
END_TEST

/* Crafted manifests with a valid checksum but wrong content. */
START_TEST(test_crafted_refused)
{
	struct manifest *m = sample();
	size_t len;
	unsigned char *base = serialize(m, &len), *buf = malloc(len + 64);

	/* Version 2. */
	memcpy(buf, base, len);
	buf[8] = 2;
	reseal(buf, len);
	assert_refused(buf, len, "version");
	/* Header flags. */
	memcpy(buf, base, len);
	buf[12] = 1;
	reseal(buf, len);
	assert_refused(buf, len, "flags");
	/* An absurd count (2^40) and one just too large for the file. */
	memcpy(buf, base, len);
	buf[21] = 1;
	reseal(buf, len);
	assert_refused(buf, len, "count");
	memcpy(buf, base, len);
	buf[16] = 7;
	reseal(buf, len);
	assert_refused(buf, len, NULL);
	/* One entry fewer: the last record becomes trailing garbage. */
	memcpy(buf, base, len);
	buf[16] = 5;
	reseal(buf, len);
	assert_refused(buf, len, "garbage");
	/* First record: type 9; then a prefix longer than the previous
	 * path; then a mode with type bits. Record 0 starts at 24. */
	memcpy(buf, base, len);
	buf[24] = 9;
	reseal(buf, len);
	assert_refused(buf, len, "entry 0");
	memcpy(buf, base, len);
	buf[24 + 2] = 5;
	reseal(buf, len);
	assert_refused(buf, len, "entry 0");
	memcpy(buf, base, len);
	buf[24 + 9] = 0x80;
	reseal(buf, len);
	assert_refused(buf, len, "entry 0");
	/* Record flags other than the hash bit. */
	memcpy(buf, base, len);
	buf[25] = 0x80;
	reseal(buf, len);
	assert_refused(buf, len, "entry 0");
	/* The top path "" in second place: out of order. Record 1 ("a")
	 * has suffix length 1 at offset 24+26+4 = 54 and its byte at 76;
	 * make its path "" by a zero suffix, dropping the byte. */
	memcpy(buf, base, len);
	ck_assert_uint_eq(buf[54], 1);
	buf[54] = 0;
	memmove(buf + 76, buf + 77, len - 77);
	reseal(buf, len - 1);
	assert_refused(buf, len - 1, "entry 1");
	/* Larger than MANIFEST_MAX_FILE is refused before anything else. */
	ck_assert_int_eq(manifest_parse(base, MANIFEST_MAX_FILE + 1, &m, NULL,
					0),
			 -1);
	ck_assert_int_eq(errno, EFBIG);
	free(buf);
	free(base);
	manifest_destroy(m);
}
END_TEST

START_TEST(test_read_errors)
{
	struct manifest *r = NULL;
	char err[256];
	int fd = open("/dev/null", O_RDONLY);

	/* An empty input is not a manifest. */
	ck_assert_int_eq(manifest_read(fd, &r, err, sizeof(err)), -1);
	ck_assert_int_eq(errno, EBADMSG);
	ck_assert_ptr_null(r);
	close(fd);
	/* A read error names itself. */
	ck_assert_int_eq(manifest_read(-1, &r, err, sizeof(err)), -1);
	ck_assert_int_eq(errno, EBADF);
	ck_assert_ptr_nonnull(strstr(err, "cannot read"));
	/* NULL arguments. */
	ck_assert_int_eq(manifest_write(NULL, 1), -1);
	ck_assert_int_eq(manifest_parse(NULL, 10, &r, err, sizeof(err)), -1);
}
END_TEST

/* Three nodes' parts of one tree: each has the directories and its own
 * files; the union has every path once, in order, the first part's entry
 * where two disagree; NULL parts are skipped. */
START_TEST(test_union)
{
	struct manifest *p[4] = { manifest_create(), NULL, manifest_create(),
				  manifest_create() };
	struct manifest *u = NULL;
	const char *want[] = { "", "a", "a/1", "a/2", "a/3", "b", "b/x" };
	const struct manifest_entry *e;

	for (int k = 0; k < 4; k++) {
		if (!p[k])
			continue;
		ck_assert_int_eq(add(p[k], "", MANIFEST_DIR, 0, 1), 0);
		ck_assert_int_eq(add(p[k], "a", MANIFEST_DIR, 0, 1), 0);
	}
	ck_assert_int_eq(add(p[0], "a/2", MANIFEST_FILE, 20, 1), 0);
	ck_assert_int_eq(add(p[0], "b", MANIFEST_DIR, 0, 1), 0);
	ck_assert_int_eq(add(p[2], "a/1", MANIFEST_FILE, 10, 1), 0);
	ck_assert_int_eq(add(p[2], "a/2", MANIFEST_FILE, 99, 1), 0);
	ck_assert_int_eq(add(p[2], "b", MANIFEST_DIR, 0, 1), 0);
	ck_assert_int_eq(add(p[2], "b/x", MANIFEST_FILE, 5, 1), 0);
	ck_assert_int_eq(add(p[3], "a/3", MANIFEST_FILE, 30, 1), 0);
	ck_assert_int_eq(manifest_union((const struct manifest *const *)p, 4,
					&u),
			 0);
	ck_assert_uint_eq(manifest_count(u), 7);
	for (size_t i = 0; i < 7; i++)
		ck_assert_str_eq(manifest_get(u, i)->path, want[i]);
	e = manifest_find(u, "a/2", 3);
	ck_assert_ptr_nonnull(e);
	ck_assert_uint_eq(e->size, 20); /* the first part's, not 99 */
	ck_assert_ptr_nonnull(manifest_find(u, "b/x", 3));
	manifest_destroy(u);
	/* nothing at all: an empty union */
	ck_assert_int_eq(manifest_union(NULL, 0, &u), 0);
	ck_assert_uint_eq(manifest_count(u), 0);
	manifest_destroy(u);
	u = NULL;
	ck_assert_int_eq(manifest_union((const struct manifest *const *)p,
					MANIFEST_UNION_MAX + 1, &u),
			 -1);
	ck_assert_int_eq(errno, EINVAL);
	ck_assert_ptr_null(u);
	for (int k = 0; k < 4; k++)
		manifest_destroy(p[k]);
}
END_TEST

static Suite *manifest_suite(void)
{
	Suite *s = suite_create("manifest");
	TCase *tc = tcase_create("core");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_add_get_find);
	tcase_add_test(tc, test_many_entries_found);
	tcase_add_loop_test(tc, test_add_refuses_bad_paths, 0, N(bad_paths));
	tcase_add_test(tc, test_add_refuses_bad_entries);
	tcase_add_test(tc, test_compare);
	tcase_add_test(tc, test_entry_same_checksum);
	tcase_add_test(tc, test_roundtrip_file);
	tcase_add_test(tc, test_roundtrip_pipe_large);
	tcase_add_test(tc, test_roundtrip_empty);
	tcase_add_test(tc, test_compact);
	tcase_add_test(tc, test_every_truncation_refused);
	tcase_add_test(tc, test_every_flipped_byte_refused);
	tcase_add_test(tc, test_garbage_refused);
	tcase_add_test(tc, test_crafted_refused);
	tcase_add_test(tc, test_read_errors);
	tcase_add_test(tc, test_union);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return check_run(manifest_suite());
}
