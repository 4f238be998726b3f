/* recgen.h - synthetic job records of realistic size and shape for the
 * history benches (bench/history.c, bench/ctldload.c).
 *
 * DLIO-shaped: RECGEN_USERS users x RECGEN_APPS applications, a dataset
 * each, read counters, a checkpoint phase and an output; ~2.5 KB of JSON.
 */
#ifndef IOSTAGE_BENCH_RECGEN_H
#define IOSTAGE_BENCH_RECGEN_H

#include <stddef.h>

#include <cJSON.h>

#define RECGEN_USERS 1000
#define RECGEN_APPS 10
#define RECGEN_SPAN_S (60 * 86400.0) /* jobs end over the last 60 days */

/* A template record (caller deletes), filled per job by recgen_set_job. */
cJSON *recgen_template(void);

/* Fill REC as job JOB of TOTAL: user and application from SEED; records
 * are filed at each job's Epilog, so in end order; jobs end over the last
 * RECGEN_SPAN_S seconds before T0, a little out of order. */
void recgen_set_job(cJSON *rec, unsigned job, unsigned total, double t0,
		    unsigned seed);

/* User USER's name (of RECGEN_USERS): "u0042", or the table's entry when
 * recgen_use_names gave one (a service resolves user names: it must know
 * them). NAMES must outlive the benches' use. */
void recgen_user_name(unsigned user, char *buf, size_t len);
void recgen_use_names(const char *const *names, unsigned n);

#endif /* IOSTAGE_BENCH_RECGEN_H */
