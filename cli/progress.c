/* progress.c - a one-line progress bar for terminals. */
#include <string.h>
#include <unistd.h>

#include "cli/progress.h"
#include "common/base/units.h"

#define PROGRESS_WIDTH 30

static bool drawn;

void progress_draw(FILE *out, uint64_t done_bytes, uint64_t total_bytes,
		   uint64_t done_files, uint64_t total_files, double rate,
		   double eta)
{
	char bar[PROGRESS_WIDTH + 1], done[32], total[32], speed[32], left[32];
	double frac = total_bytes ? (double)done_bytes / (double)total_bytes
				  : 0;
	int fill;

	if (!isatty(fileno(out)))
		return;
	if (frac > 1)
		frac = 1;
	fill = (int)(frac * PROGRESS_WIDTH);
	memset(bar, '=', (size_t)fill);
	memset(bar + fill, ' ', (size_t)(PROGRESS_WIDTH - fill));
	if (fill < PROGRESS_WIDTH && fill > 0)
		bar[fill - 1] = '>';
	bar[PROGRESS_WIDTH] = '\0';
	fprintf(out, "\r[%s] %3.0f%%  %s/%s  %llu/%llu files", bar, frac * 100,
		units_bytes(done_bytes, done, sizeof(done)),
		units_bytes(total_bytes, total, sizeof(total)),
		(unsigned long long)done_files,
		(unsigned long long)total_files);
	if (rate > 0)
		fprintf(out, "  %s/s",
			units_bytes((uint64_t)rate, speed, sizeof(speed)));
	if (eta >= 0)
		fprintf(out, "  ETA %s",
			units_seconds(eta, left, sizeof(left)));
	fputs("\033[K", out); /* clear what a longer line left behind */
	fflush(out);
	drawn = true;
}

void progress_end(FILE *out)
{
	if (drawn)
		fputc('\n', out);
	drawn = false;
}
