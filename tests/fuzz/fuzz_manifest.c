/* fuzz_manifest.c - a cache version's manifest (common/fs/manifest.c), read
 * back from a tier at start and at every hit: a damaged or hostile file
 * must be refused, never trusted. A manifest that parses must write out
 * and parse back to the same entries. */
#include "tests/fuzz/fuzz.h"

#include <fcntl.h>

#include "common/fs/copyengine.h"
#include "common/fs/manifest.h"

/* Seeds: the manifests of two real trees of the source (as a stage
 * worker writes them, without and with a previous manifest). */
static void seeds(void)
{
	static const char *const trees[] = { "slurm-conf", "tests/fuzz" };
	char err[CONF_ERR_MAX], path[4096], name[64];

	for (size_t i = 0; i < 2; i++) {
		struct copyengine *ce;
		struct manifest *m;
		struct stat st;
		char *buf;
		size_t len;
		int fd;

		snprintf(path, sizeof(path), "%s/%s", FUZZ_SRCDIR, trees[i]);
		if (copyengine_walk(path, NULL, &ce, err, sizeof(err)) < 0 ||
		    copyengine_manifest(ce, &m) < 0) {
			fprintf(stderr, "fuzz: %s: %s\n", path, err);
			exit(2);
		}
		snprintf(path, sizeof(path), "%s/seed", fuzz_scratch());
		fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
		if (fd < 0 || manifest_write(m, fd) < 0 || fstat(fd, &st) < 0)
			exit(2);
		len = (size_t)st.st_size;
		buf = malloc(len + 1);
		if (!buf || pread(fd, buf, len, 0) != (ssize_t)len)
			exit(2);
		close(fd);
		snprintf(name, sizeof(name), "tree%zu", i);
		fuzz_write_seed(name, buf, len);
		free(buf);
		manifest_destroy(m);
		copyengine_destroy(ce);
	}
	exit(0);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	if (getenv("FUZZ_WRITE_SEEDS"))
		seeds();
	return 0;
}

/* Every field (manifest_entry_same compares what a verify mode needs: a
 * checksum compare of entries without hashes says "different"). */
static bool same(const struct manifest_entry *a, const struct manifest_entry *b)
{
	return a->path_len == b->path_len && !strcmp(a->path, b->path) &&
	       a->size == b->size && a->mtime_ns == b->mtime_ns &&
	       a->mode == b->mode && a->type == b->type &&
	       a->has_hash == b->has_hash &&
	       (!a->has_hash || !memcmp(a->hash, b->hash, MANIFEST_HASH_LEN));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct manifest *m = NULL, *back = NULL;
	char err[CONF_ERR_MAX], path[128];
	int fd;

	if (manifest_parse(data, size, &m, err, sizeof(err)) < 0)
		return 0;
	for (size_t i = 0; i < manifest_count(m); i++) {
		const struct manifest_entry *e = manifest_get(m, i);

		if (manifest_find(m, e->path, e->path_len) != e)
			abort();
	}
	snprintf(path, sizeof(path), "%s/manifest", fuzz_scratch());
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0 || manifest_write(m, fd) < 0 || lseek(fd, 0, SEEK_SET) < 0)
		abort();
	if (manifest_read(fd, &back, err, sizeof(err)) < 0) {
		fprintf(stderr, "a parsed manifest does not read back: %s\n",
			err);
		abort();
	}
	if (manifest_count(back) != manifest_count(m))
		abort();
	for (size_t i = 0; i < manifest_count(m); i++)
		if (!same(manifest_get(m, i), manifest_get(back, i)))
			abort();
	close(fd);
	manifest_destroy(back);
	manifest_destroy(m);
	return 0;
}
