/* export_prom.c - records as Prometheus text: the same per-job phase
 * series iostaged serves (common/telemetry/promtext.c), e.g. for a textfile. */
#include <errno.h>

#include "cli/export.h"
#include "common/telemetry/promtext.h"

int export_prom(const cJSON *records, FILE *out)
{
	struct promtext *pt = promtext_create();
	const char *text;
	size_t len;
	int r = -1;

	if (!pt) {
		errno = ENOMEM;
		return -1;
	}
	if (promtext_job_phases(pt, records) == 0 &&
	    (text = promtext_text(pt, &len))) {
		fwrite(text, 1, len, out);
		r = 0;
	}
	promtext_destroy(pt);
	return r;
}
