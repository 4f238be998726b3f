/* ticker.h - a background thread that runs one function every period, or
 * at once when poked, until it is stopped.
 *
 * iostaged and iostagectld keep several such threads (the sampler, the
 * metrics textfile, the cache report, the bandwidth lease, the scheduler
 * feed...). The part that is easy to get wrong is the same in each: a
 * stop that is never missed (the flag is read under the lock the wait
 * releases), a period on CLOCK_MONOTONIC (a clock step neither stalls nor
 * races the loop), a join before the state goes away. It is written once
 * here; each module keeps only what it does per turn.
 */
#ifndef IOSTAGE_TICKER_H
#define IOSTAGE_TICKER_H

#include <stdbool.h>

struct ticker;

/* One turn. POKED: ticker_poke() was called since the last turn (the
 * turn may also be due by the period). ARG as given to ticker_start(). */
typedef void (*ticker_fn)(void *arg, bool poked);

/* Start a thread calling FN(ARG, ...) every PERIOD_MS milliseconds (0:
 * 1000), the first turn one period from now (or at once when FIRST_NOW).
 * Returns the ticker, or NULL with errno set (nothing started). */
struct ticker *ticker_start(unsigned period_ms, bool first_now, ticker_fn fn,
			    void *arg);

/* Have the next turn run now rather than at its time (a turn in progress
 * is followed by another at once). Safe from any thread, and from FN. */
void ticker_poke(struct ticker *t);

/* Stop: no turn starts after this is called; a turn in progress ends
 * first. Joins the thread and frees T. NULL is a no-op. Not from FN. */
void ticker_stop(struct ticker *t);

/* From FN only: the next turn is due MS milliseconds after this one ends,
 * instead of one period (once; the turn after that is back on the
 * period). For loops whose own work says when to look again: a lease's
 * renewal time, the next deadline in a store. A poke still runs it at
 * once. */
void ticker_next(struct ticker *t, unsigned ms);

/* Whether ticker_stop() has been called: for a turn that loops over much
 * work and should give up early. */
bool ticker_stopping(struct ticker *t);

#endif /* IOSTAGE_TICKER_H */
