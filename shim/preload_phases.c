/* preload_phases.c - which phase an I/O call belongs to.
 *
 * Markers first: when the application marks a phase (libiostage's
 * iostage_phase_begin/end reach iostage_shim_phase through dlsym), every
 * call of every thread counts in it until it ends; markers nest. Without a
 * marker the phase is automatic (docs/SHIM.md): dataset reads and their
 * opens, stats and seeks are "read", writes to an output are "checkpoint"
 * when its path says ckpt/checkpoint else "write", everything else "run".
 *
 * The table holds SHIM_MAX_PHASES names; markers beyond it count in the
 * last slot, "other", and are reported as folded. The table and the marker
 * stack change only in iostage_shim_phase, under a try-lock that never
 * waits unboundedly: a marker that cannot get it is dropped, not waited
 * for, so a signal handler marking phases cannot deadlock.
 *
 * The choice itself, shim_phase_for, is inline in preload.h: it runs on
 * every counted call; this file keeps the marker it reads up to date.
 */
#define _GNU_SOURCE
#include <stdatomic.h>
#include <string.h>

#include "shim/preload.h"

#define MARKER_DEPTH 8
#define LOCK_SPINS 100000

static char names[SHIM_MAX_PHASES][SHIM_PHASE_NAME_MAX] = {
	[SHIM_PHASE_RUN] = "run",
	[SHIM_PHASE_READ] = "read",
	[SHIM_PHASE_CHECKPOINT] = "checkpoint",
	[SHIM_PHASE_WRITE] = "write",
	[SHIM_PHASE_OVERFLOW] = "other",
};
static atomic_uint nnames = SHIM_PHASE_FIRST_MARKER;
static atomic_uint folded;

atomic_int shim_phase_marked = -1;
static int stack[MARKER_DEPTH];
static unsigned depth;
static atomic_flag lock = ATOMIC_FLAG_INIT;

static bool lock_try(void)
{
	for (unsigned i = 0; i < LOCK_SPINS; i++)
		if (!atomic_flag_test_and_set_explicit(&lock,
						       memory_order_acquire))
			return true;
	return false;
}

static void unlock(void)
{
	atomic_flag_clear_explicit(&lock, memory_order_release);
}

/* Marker names go into JSON keys: keep [A-Za-z0-9_.-], map the rest. */
static void clean_name(const char *in, char *out)
{
	size_t i;

	for (i = 0; in[i] && i < SHIM_PHASE_NAME_MAX - 1; i++) {
		char c = in[i];
		bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
			  (c >= '0' && c <= '9') || c == '_' || c == '.' ||
			  c == '-';
		out[i] = ok ? c : '_';
	}
	out[i] = '\0';
}

/* The slot for NAME, claiming one if new; the overflow slot when full.
 * Called with the lock held. */
static int slot_for(const char *name, bool claim)
{
	unsigned n = atomic_load(&nnames);

	for (unsigned i = 0; i < n; i++)
		if (strcmp(names[i], name) == 0)
			return (int)i;
	if (strcmp(names[SHIM_PHASE_OVERFLOW], name) == 0)
		return SHIM_PHASE_OVERFLOW;
	if (!claim)
		return -1;
	if (n >= SHIM_PHASE_OVERFLOW) {
		atomic_fetch_add(&folded, 1);
		return SHIM_PHASE_OVERFLOW;
	}
	memcpy(names[n], name, SHIM_PHASE_NAME_MAX);
	atomic_store(&nnames, n + 1);
	return (int)n;
}

SHIM_EXPORT void iostage_shim_phase(const char *name, int begin);

void iostage_shim_phase(const char *name, int begin)
{
	char clean[SHIM_PHASE_NAME_MAX];
	int slot;

	if (!name || !*name || !lock_try())
		return;
	clean_name(name, clean);
	slot = slot_for(clean, begin != 0);
	if (begin) {
		if (depth < MARKER_DEPTH)
			stack[depth++] = slot;
		else
			stack[MARKER_DEPTH - 1] = slot; /* deeper: replace */
	} else if (slot >= 0) {
		/* End the innermost marker of that name (ends may come out
		 * of order across threads). */
		for (unsigned i = depth; i-- > 0;)
			if (stack[i] == slot) {
				memmove(&stack[i], &stack[i + 1],
					(depth - i - 1) * sizeof(stack[0]));
				depth--;
				break;
			}
	}
	atomic_store(&shim_phase_marked, depth ? stack[depth - 1] : -1);
	unlock();
}

const char *shim_phase_name(unsigned i)
{
	if (i == SHIM_PHASE_OVERFLOW)
		return names[i];
	return i < atomic_load(&nnames) ? names[i] : NULL;
}

unsigned shim_phases_folded(void)
{
	return atomic_load(&folded);
}

void shim_phases_reset(void)
{
	depth = 0;
	atomic_store(&shim_phase_marked, -1);
	atomic_flag_clear(&lock);
}
