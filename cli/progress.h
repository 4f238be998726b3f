/* progress.h - a one-line progress bar for terminals. */
#ifndef IOSTAGE_CLI_PROGRESS_H
#define IOSTAGE_CLI_PROGRESS_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

/* Redraw "\r[=====>    ]  45%  1.2/2.6 GiB  1200/3000 files  350 MiB/s  ETA 4 s"
 * on OUT. RATE is bytes per second (0 = unknown), ETA seconds (<0 =
 * unknown). Does nothing when OUT is not a terminal. */
void progress_draw(FILE *out, uint64_t done_bytes, uint64_t total_bytes,
		   uint64_t done_files, uint64_t total_files, double rate,
		   double eta);

/* End the bar's line (a newline if anything was drawn). */
void progress_end(FILE *out);

#endif /* IOSTAGE_CLI_PROGRESS_H */
