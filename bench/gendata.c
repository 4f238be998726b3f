/* gendata.c - write a benchmark dataset fast and reproducibly.
 *
 * A bash loop that runs head -c once per file costs a fork and an exec per
 * file: minutes for 100,000 files. This writes every file from one random
 * block made from a seed, so a dataset of the same parameters has the same
 * names, sizes and bytes on every machine, at disk speed.
 *
 * Sizes: COUNT files whose sizes add up to exactly TOTAL bytes. Files come in
 * pairs whose sizes sit SPREAD percent (at most) above and below the mean by
 * the same seeded amount, so the total stays exact and the sizes still vary
 * the way real samples do.
 *
 * Layout: with NDIRS > 0 the files are dealt into NDIRS subdirectories
 * c0000, c0001, ... (class directories, as ImageNet has), otherwise they sit
 * in DIR itself. File I is PREFIX + I (six digits) + SUFFIX.
 *
 * Prints "FILES BYTES" on success. Nothing is fsynced: the caller syncs once.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define GEN_BLOCK (16u << 20) /* the random block every file is cut from */
#define GEN_NAME_MAX 64       /* prefix and suffix, each */
#define GEN_COUNT_MAX 100000000ull
#define GEN_DIRS_MAX 1000000ull

static uint64_t rng_state;

/* splitmix64: tiny, seedable, good enough to make incompressible bytes. */
static uint64_t rng_next(void)
{
	uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static int parse_u64(const char *s, const char *what, uint64_t max,
		     uint64_t *ret)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || end == s || *end || s[0] == '-' || v > max) {
		fprintf(stderr,
			"iostage-gendata: %s: '%s' is not a number "
			"in 0..%" PRIu64 "\n",
			what, s, max);
		return -1;
	}
	*ret = v;
	return 0;
}

static int write_all(int fd, const char *p, size_t len)
{
	while (len > 0) {
		ssize_t n = write(fd, p, len);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

/* Write SIZE bytes of BLOCK, starting at OFF and wrapping, to PATH. */
static int write_file(int dirfd, const char *name, const char *block,
		      uint64_t off, uint64_t size)
{
	int fd = openat(dirfd, name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC,
			0644);

	if (fd < 0)
		return -1;
	while (size > 0) {
		size_t n = GEN_BLOCK - off;

		if (n > size)
			n = (size_t)size;
		if (write_all(fd, block + off, n) < 0) {
			int saved = errno;

			close(fd);
			errno = saved;
			return -1;
		}
		size -= n;
		off = 0;
	}
	return close(fd);
}

static void usage(void)
{
	fprintf(stderr, "usage: iostage-gendata DIR COUNT TOTAL SPREAD NDIRS "
			"PREFIX SUFFIX SEED\n");
}

int main(int argc, char **argv)
{
	uint64_t count, total, spread, ndirs, seed, base, rem, dev = 0;
	uint64_t written = 0, i;
	const char *dir, *prefix, *suffix;
	char name[2 * GEN_NAME_MAX + 32];
	char *block;
	int dfd, sub = -1;

	if (argc != 9) {
		usage();
		return 2;
	}
	dir = argv[1];
	prefix = argv[6];
	suffix = argv[7];
	if (parse_u64(argv[2], "COUNT", GEN_COUNT_MAX, &count) < 0 ||
	    parse_u64(argv[3], "TOTAL", UINT64_MAX / 2, &total) < 0 ||
	    parse_u64(argv[4], "SPREAD", 100, &spread) < 0 ||
	    parse_u64(argv[5], "NDIRS", GEN_DIRS_MAX, &ndirs) < 0 ||
	    parse_u64(argv[8], "SEED", UINT64_MAX, &seed) < 0)
		return 2;
	if (strlen(prefix) >= GEN_NAME_MAX || strlen(suffix) >= GEN_NAME_MAX ||
	    strchr(prefix, '/') || strchr(suffix, '/')) {
		fprintf(stderr,
			"iostage-gendata: PREFIX and SUFFIX must be "
			"under %d characters, without '/'\n",
			GEN_NAME_MAX);
		return 2;
	}
	if (count == 0 || ndirs > count) {
		fprintf(stderr, "iostage-gendata: COUNT must be > 0 and "
				">= NDIRS\n");
		return 2;
	}

	block = malloc(GEN_BLOCK);
	if (!block) {
		perror("iostage-gendata: malloc");
		return 1;
	}
	rng_state = seed;
	for (i = 0; i < GEN_BLOCK / 8; i++) {
		uint64_t v = rng_next();

		memcpy(block + i * 8, &v, 8);
	}

	if (mkdir(dir, 0755) < 0 && errno != EEXIST) {
		fprintf(stderr, "iostage-gendata: cannot create %s: %s\n", dir,
			strerror(errno));
		return 1;
	}
	dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0) {
		fprintf(stderr, "iostage-gendata: cannot open %s: %s\n", dir,
			strerror(errno));
		return 1;
	}

	base = total / count;
	rem = total % count;
	for (i = 0; i < count; i++) {
		uint64_t size = base + (i < rem ? 1 : 0);
		uint64_t off;
		uint64_t per_dir = ndirs ? (count + ndirs - 1) / ndirs : 0;

		/* Pairs move the same amount in opposite directions; an odd
		 * last file keeps the mean. */
		if (spread && i % 2 == 0) {
			uint64_t lim = base * spread / 100;

			dev = (i + 1 < count && lim) ? rng_next() % (lim + 1)
						     : 0;
			size += dev;
		} else if (spread) {
			size -= dev;
		}
		off = rng_next() % GEN_BLOCK;

		if (ndirs && i % per_dir == 0) {
			char dname[32];

			if (sub >= 0)
				close(sub);
			snprintf(dname, sizeof(dname), "c%04" PRIu64,
				 i / per_dir);
			if (mkdirat(dfd, dname, 0755) < 0 && errno != EEXIST) {
				fprintf(stderr,
					"iostage-gendata: cannot "
					"create %s/%s: %s\n",
					dir, dname, strerror(errno));
				return 1;
			}
			sub = openat(dfd, dname,
				     O_RDONLY | O_DIRECTORY | O_CLOEXEC);
			if (sub < 0) {
				fprintf(stderr,
					"iostage-gendata: cannot open "
					"%s/%s: %s\n",
					dir, dname, strerror(errno));
				return 1;
			}
		}
		snprintf(name, sizeof(name), "%s%06" PRIu64 "%s", prefix, i,
			 suffix);
		if (write_file(ndirs ? sub : dfd, name, block, off, size) < 0) {
			fprintf(stderr,
				"iostage-gendata: cannot write %s/%s: "
				"%s\n",
				dir, name, strerror(errno));
			return 1;
		}
		written += size;
	}
	if (sub >= 0)
		close(sub);
	close(dfd);
	free(block);
	printf("%" PRIu64 " %" PRIu64 "\n", count, written);
	return 0;
}
