/*
 * dlio_reader - a DLIO-shaped training reader: N reader threads feed batches
 * to one modelled accelerator that computes for a fixed time per batch.
 *
 *   iostage-dlio_reader [-t THREADS] [-b BATCH] [-c COMPUTE_MS] [-e EPOCHS]
 *                       [-p PREFETCH] [-s SAMPLE_BYTES] [-r RANK -w WORLD] DIR
 *
 * Whole-file mode (default): every regular file under DIR is one sample;
 * each epoch reads all of them in a new shuffled order (seeded by the epoch).
 * With -w WORLD (and -r RANK, 0..WORLD-1), as PyTorch's DistributedSampler
 * does: every rank shuffles the same list the same way (the files sorted by
 * path, then the epoch's seed) and reads every WORLD-th sample from RANK
 * on, so the ranks of a multi-node job read disjoint shares that together
 * are the whole dataset, a different share each epoch.
 * Sample mode (-s): the samples are SAMPLE_BYTES preads at random offsets of
 * the files (large-file shapes such as unet3d); an epoch reads as many
 * samples as the files hold bytes.
 *
 * The readers take samples in order and may run at most PREFETCH batches
 * ahead of the accelerator (DLIO's prefetch queue). The accelerator waits
 * for batch k to be complete, then sleeps COMPUTE_MS. Accelerator
 * utilization (AU, MLPerf Storage) = compute time / epoch time.
 *
 * Prints one JSON object: per-epoch seconds and AU, time to first batch,
 * time to solution.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

struct file {
	char *path;
	off_t size;
};

static struct file *files;
static size_t nfiles, capfiles;
static uint64_t total_bytes;

static long threads = 8, batch = 32, compute_ms = 20, epochs = 3, prefetch = 4;
static long sample_bytes;    /* 0: whole files */
static long rank, world = 1; /* whole-file mode: this rank's share */

static size_t nitems;          /* samples per epoch */
static size_t *order;          /* whole-file mode: the epoch's shuffled order */
static uint64_t *soffs;        /* sample mode: file index << 40 | offset */
static atomic_size_t next;     /* next sample to read */
static atomic_size_t *done;    /* samples read per batch */
static atomic_size_t consumed; /* batches the accelerator has finished */
static atomic_uint_fast64_t bytes_read;
static atomic_int failed;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int add_file(const char *path, const struct stat *st, int type,
		    struct FTW *ftw)
{
	(void)ftw;
	if (type != FTW_F || !S_ISREG(st->st_mode))
		return 0;
	if (nfiles == capfiles) {
		capfiles = capfiles ? capfiles * 2 : 1024;
		files = realloc(files, capfiles * sizeof *files);
		if (!files)
			return -1;
	}
	files[nfiles].path = strdup(path);
	files[nfiles].size = st->st_size;
	total_bytes += (uint64_t)st->st_size;
	nfiles++;
	return 0;
}

static uint64_t rng(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

/* The same list on every node whatever the directory order of its copy. */
static int cmp_path(const void *a, const void *b)
{
	return strcmp(((const struct file *)a)->path,
		      ((const struct file *)b)->path);
}

static void plan_epoch(long e)
{
	uint64_t s = 0x9e3779b97f4a7c15u ^ (uint64_t)(e + 1);
	if (!sample_bytes) {
		/* the whole list shuffled, as every rank shuffles it; this
		 * rank reads order[rank], order[rank + world], ... */
		for (size_t i = 0; i < nfiles; i++)
			order[i] = i;
		for (size_t i = nfiles; i > 1; i--) {
			size_t j = rng(&s) % i, t = order[i - 1];
			order[i - 1] = order[j];
			order[j] = t;
		}
		return;
	}
	for (size_t i = 0; i < nitems; i++) {
		size_t f;
		do
			f = rng(&s) % nfiles;
		while (files[f].size < sample_bytes);
		uint64_t off = rng(&s) %
			       (uint64_t)(files[f].size - sample_bytes + 1);
		soffs[i] = (uint64_t)f << 40 | (off & ~(uint64_t)4095);
	}
}

static void *reader(void *arg)
{
	(void)arg;
	size_t bufsz = sample_bytes ? (size_t)sample_bytes : 1 << 20;
	char *buf = malloc(bufsz);
	for (;;) {
		size_t i = atomic_fetch_add(&next, 1);
		if (i >= nitems)
			break;
		size_t b = i / (size_t)batch;
		pthread_mutex_lock(&mu);
		while (b >= atomic_load(&consumed) + (size_t)prefetch)
			pthread_cond_wait(&cv, &mu);
		pthread_mutex_unlock(&mu);
		if (!sample_bytes) {
			size_t k = (size_t)rank + i * (size_t)world;
			int fd = open(files[order[k]].path, O_RDONLY);
			if (fd < 0) {
				atomic_store(&failed, errno);
			} else {
				ssize_t n;
				while ((n = read(fd, buf, bufsz)) > 0)
					atomic_fetch_add(&bytes_read,
							 (uint64_t)n);
				close(fd);
			}
		} else {
			size_t f = (size_t)(soffs[i] >> 40);
			off_t off = (off_t)(soffs[i] & ((1ull << 40) - 1));
			int fd = open(files[f].path, O_RDONLY);
			ssize_t n = fd < 0 ? -1 : pread(fd, buf, bufsz, off);
			if (n < 0)
				atomic_store(&failed, errno);
			else
				atomic_fetch_add(&bytes_read, (uint64_t)n);
			if (fd >= 0)
				close(fd);
		}
		pthread_mutex_lock(&mu);
		atomic_fetch_add(&done[b], 1);
		pthread_cond_broadcast(&cv);
		pthread_mutex_unlock(&mu);
	}
	free(buf);
	return NULL;
}

int main(int argc, char **argv)
{
	int opt;
	while ((opt = getopt(argc, argv, "t:b:c:e:p:s:r:w:")) != -1) {
		long v = atol(optarg);
		switch (opt) {
		case 't':
			threads = v;
			break;
		case 'b':
			batch = v;
			break;
		case 'c':
			compute_ms = v;
			break;
		case 'e':
			epochs = v;
			break;
		case 'p':
			prefetch = v;
			break;
		case 's':
			sample_bytes = v;
			break;
		case 'r':
			rank = v;
			break;
		case 'w':
			world = v;
			break;
		default:
			goto usage;
		}
	}
	if (optind != argc - 1 || threads < 1 || threads > 1024 || batch < 1 ||
	    compute_ms < 0 || epochs < 1 || prefetch < 1 || sample_bytes < 0 ||
	    world < 1 || world > 65536 || rank < 0 || rank >= world ||
	    (world > 1 && sample_bytes))
		goto usage;
	if (nftw(argv[optind], add_file, 64, FTW_PHYS) != 0 || nfiles == 0) {
		fprintf(stderr, "dlio_reader: %s: no files to read (%s)\n",
			argv[optind], errno ? strerror(errno) : "empty");
		return 1;
	}
	qsort(files, nfiles, sizeof *files, cmp_path);
	nitems = sample_bytes ? (size_t)(total_bytes / (uint64_t)sample_bytes)
			      : (nfiles - (size_t)rank + (size_t)world - 1) /
				    (size_t)world;
	if (nitems == 0) {
		fprintf(stderr, "dlio_reader: %s: smaller than one sample\n",
			argv[optind]);
		return 1;
	}
	size_t nbatches = (nitems + (size_t)batch - 1) / (size_t)batch;
	order = calloc(nfiles, sizeof *order);
	soffs = calloc(nitems, sizeof *soffs);
	done = calloc(nbatches, sizeof *done);
	pthread_t *tid = calloc((size_t)threads, sizeof *tid);

	double t_start = now(), first_batch = -1;
	printf(
	    "{\"dir\":\"%s\",\"files\":%zu,\"bytes\":%llu,\"threads\":%ld,\"batch\":%ld,"
	    "\"compute_ms\":%ld,\"prefetch\":%ld,\"sample_bytes\":%ld,"
	    "\"rank\":%ld,\"world\":%ld,\"samples_per_epoch\":%zu,\"epochs\":[",
	    argv[optind], nfiles, (unsigned long long)total_bytes, threads,
	    batch, compute_ms, prefetch, sample_bytes, rank, world, nitems);
	for (long e = 0; e < epochs; e++) {
		plan_epoch(e);
		atomic_store(&next, 0);
		atomic_store(&consumed, 0);
		for (size_t b = 0; b < nbatches; b++)
			atomic_store(&done[b], 0);
		double t0 = now(), computed = 0, wait = 0;
		for (long t = 0; t < threads; t++)
			pthread_create(&tid[t], NULL, reader, NULL);
		for (size_t b = 0; b < nbatches; b++) {
			size_t want = b + 1 < nbatches
					  ? (size_t)batch
					  : nitems - b * (size_t)batch;
			double w0 = now();
			pthread_mutex_lock(&mu);
			while (atomic_load(&done[b]) < want)
				pthread_cond_wait(&cv, &mu);
			pthread_mutex_unlock(&mu);
			double w1 = now();
			wait += w1 - w0;
			if (first_batch < 0)
				first_batch = w1 - t_start;
			struct timespec ts = { compute_ms / 1000,
					       (compute_ms % 1000) * 1000000 };
			nanosleep(&ts, NULL);
			computed += now() - w1;
			pthread_mutex_lock(&mu);
			atomic_fetch_add(&consumed, 1);
			pthread_cond_broadcast(&cv);
			pthread_mutex_unlock(&mu);
		}
		for (long t = 0; t < threads; t++)
			pthread_join(tid[t], NULL);
		double s = now() - t0;
		printf("%s{\"seconds\":%.3f,\"au\":%.4f,\"io_wait_s\":%.3f}",
		       e ? "," : "", s, computed / s, wait);
	}
	printf(
	    "],\"first_batch_s\":%.3f,\"total_s\":%.3f,\"bytes_read\":%llu,\"error\":%d}\n",
	    first_batch, now() - t_start,
	    (unsigned long long)atomic_load(&bytes_read), atomic_load(&failed));
	return atomic_load(&failed) ? 1 : 0;

usage:
	fprintf(
	    stderr,
	    "usage: %s [-t THREADS] [-b BATCH] [-c COMPUTE_MS] [-e EPOCHS] [-p PREFETCH] "
	    "[-s SAMPLE_BYTES] [-r RANK -w WORLD] DIR\n",
	    argv[0]);
	return 2;
}
