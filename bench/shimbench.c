/* shimbench.c - the workloads bench/shim.sh times with the shim on and off.
 *
 *   shimbench meta DIR N     open, read to EOF (4 KiB buffer), close
 *                            DIR/d<i/1000>/f<i> for i < N
 *   shimbench bulk FILE [P]  read FILE to EOF in 1 MiB requests, P times
 *                            (default 1; one pass of a cached GiB is
 *                            too short to time a 2% difference)
 *   shimbench calls FILE N   N preads of 1 byte at offset 0 (the cost of
 *                            one intercepted call, with the least I/O)
 *
 * Prints "WALL CPU BYTES": the seconds the loop took (CLOCK_MONOTONIC),
 * the CPU seconds it used (user + system, CLOCK_PROCESS_CPUTIME_ID) and the
 * bytes read. The process's start-up and the shim's exit summary are not
 * part of either figure, only the per-call cost the application feels.
 * On a warm cache the loop never waits for the disk, so CPU time is the
 * same cost as wall time without the noise of other processes' load.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static double cpu_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static char buf[1 << 20];

static int read_to_eof(const char *path, size_t chunk,
		       unsigned long long *bytes)
{
	ssize_t n;
	int fd = open(path, O_RDONLY);

	if (fd < 0) {
		perror(path);
		return -1;
	}
	while ((n = read(fd, buf, chunk)) > 0)
		*bytes += (unsigned long long)n;
	close(fd);
	return n < 0 ? -1 : 0;
}

int main(int argc, char **argv)
{
	unsigned long long bytes = 0;
	char path[4096];
	double t0, c0;

	if (argc == 4 && strcmp(argv[1], "meta") == 0) {
		long n = atol(argv[3]);

		t0 = now();
		c0 = cpu_now();
		for (long i = 0; i < n; i++) {
			snprintf(path, sizeof(path), "%s/d%ld/f%ld", argv[2],
				 i / 1000, i);
			if (read_to_eof(path, 4096, &bytes) < 0)
				return 1;
		}
	} else if ((argc == 3 || argc == 4) && strcmp(argv[1], "bulk") == 0) {
		long passes = argc == 4 ? atol(argv[3]) : 1;

		t0 = now();
		c0 = cpu_now();
		for (long i = 0; i < passes; i++)
			if (read_to_eof(argv[2], sizeof(buf), &bytes) < 0)
				return 1;
	} else if (argc == 4 && strcmp(argv[1], "calls") == 0) {
		long n = atol(argv[3]);
		int fd = open(argv[2], O_RDONLY);

		if (fd < 0) {
			perror(argv[2]);
			return 1;
		}
		t0 = now();
		c0 = cpu_now();
		for (long i = 0; i < n; i++)
			bytes += (unsigned long long)pread(fd, buf, 1, 0);
		close(fd);
	} else {
		fprintf(
		    stderr,
		    "usage: shimbench meta DIR N | bulk FILE [PASSES] | calls FILE N\n");
		return 2;
	}
	printf("%.6f %.6f %llu\n", now() - t0, cpu_now() - c0, bytes);
	return 0;
}
