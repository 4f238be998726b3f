/* joblock.h - exclusive locks on job ids, a set of them taken at once.
 *
 * Filing a multi-node job's part reads what its other nodes sent, decides
 * and writes: two parts of one job must not do that at the same time. A
 * batch (ctld/filing/file_batch.c) holds the locks of all its parts' jobs from
 * the decision until its one WriteBatch and fsync are done. With 64
 * striped mutexes, two batches of ~20 parts almost always shared a
 * stripe, so batches ran one at a time and the service used one core of
 * two (bench/README.md). Here a set waits only for the jobs it really
 * shares with another holder (a job's id maps to one of JOBLOCK_SLOTS
 * slots: 1 in 65,536 unrelated jobs share one), and it is taken whole
 * or not at all, so no two holders ever wait for each other.
 */
#ifndef IOSTAGE_CTLD_JOBLOCK_H
#define IOSTAGE_CTLD_JOBLOCK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define JOBLOCK_SLOTS 65536

/* Wait until no other holder has any of JOBS[0..N), then hold them all.
 * The same job twice in JOBS is one lock. N == 0 takes nothing. */
void joblock_lock(const uint32_t *jobs, size_t n);

/* The same without waiting: true when it took them all, false (taking
 * none) when another holder has any. */
bool joblock_trylock(const uint32_t *jobs, size_t n);

/* Let go of what joblock_lock(JOBS, N) took. */
void joblock_unlock(const uint32_t *jobs, size_t n);

#endif /* IOSTAGE_CTLD_JOBLOCK_H */
