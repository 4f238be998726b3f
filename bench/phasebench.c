/* phasebench.c - what one phase marker costs through libiostage's C API:
 * N begin/end pairs against the iostaged named by IOSTAGE_SOCKET, timed
 * per call. Prints one line: "c_api CALLS SECONDS USEC_PER_CALL FAILED".
 * bench/phase.sh runs it beside the Python module and `iostage phase`.
 *
 *   phasebench N
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "shim/iostage.h"

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? strtol(argv[1], NULL, 10) : 0;
	long failed = 0;
	double t0, dt;

	if (n <= 0) {
		fprintf(stderr, "usage: phasebench N\n");
		return 2;
	}
	t0 = now_s();
	for (long i = 0; i < n; i++) {
		failed += iostage_phase_begin("read") != 0;
		failed += iostage_phase_end("read") != 0;
	}
	dt = now_s() - t0;
	printf("c_api %ld %.6f %.2f %ld\n", 2 * n, dt, dt * 1e6 / (2.0 * n),
	       failed);
	return failed ? 1 : 0;
}
