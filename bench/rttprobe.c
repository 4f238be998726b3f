/*
 * rttprobe - the round trip of a small request to HOST:PORT: the median of
 * N TCP connects (SYN out, SYN-ACK back: one round trip each), in ms.
 * bench/pfs.sh selftest uses it to check that the added delay is in effect.
 *
 *   iostage-rttprobe HOST PORT [N]
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: %s HOST PORT [N]\n", argv[0]);
		return 2;
	}
	int n = argc > 3 ? atoi(argv[3]) : 20;
	if (n < 1 || n > 10000)
		n = 20;
	struct sockaddr_in sa = { .sin_family = AF_INET,
				  .sin_port = htons((uint16_t)atoi(argv[2])) };
	if (inet_pton(AF_INET, argv[1], &sa.sin_addr) != 1) {
		fprintf(stderr, "rttprobe: '%s' is not an IPv4 address\n",
			argv[1]);
		return 2;
	}
	double *v = calloc((size_t)n, sizeof *v);
	for (int i = 0; i < n; i++) {
		int fd = socket(AF_INET, SOCK_STREAM, 0);
		struct timespec a, b;
		clock_gettime(CLOCK_MONOTONIC, &a);
		if (connect(fd, (struct sockaddr *)&sa, sizeof sa) < 0) {
			perror("rttprobe: connect");
			return 1;
		}
		clock_gettime(CLOCK_MONOTONIC, &b);
		close(fd);
		v[i] = (double)(b.tv_sec - a.tv_sec) * 1e3 +
		       (double)(b.tv_nsec - a.tv_nsec) / 1e6;
	}
	qsort(v, (size_t)n, sizeof *v, cmp);
	printf("%.3f\n", v[n / 2]);
	return 0;
}
