/* preload_counters.c - where the shim's counts live while the process runs.
 *
 * Each thread adds into its own block of counters (no atomics, no locks:
 * only the owner writes), and the summary sums the blocks at exit. A block
 * is handed back when its thread exits and reused by the next new thread:
 * the counts in it stay (sums don't care which thread made them), so a
 * program that churns through short-lived threads uses as many blocks as it
 * ever had threads at once, not one per thread it ever started.
 *
 * Busy time is the one process-wide quantity: wall time during which at
 * least one thread is inside an I/O call. One 64-bit word counts the
 * threads inside a call, overall and per class, 16 bits each, so entering
 * is one atomic add and leaving one compare-and-swap; the thread that
 * brings a count to zero closes that span (see busy_leave for why it reads
 * the span's start before it swaps) and credits it to its own counters.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include "shim/preload.h"

struct shim_block {
	uint64_t c[SHIM_MAX_PHASES][SHIM_NCLASSES][SHIM_NCOUNTERS];
	atomic_int in_use;
	struct shim_block *next; /* immutable once published */
};

static _Atomic(struct shim_block *) blocks;
static atomic_uint nblocks;
static pthread_key_t block_key;

/* Threads inside an I/O call: bits 0-15 all of them, then 16 bits per
 * class. 65535 threads in I/O at once would overflow a field. */
#define BUSY_BITS 16
#define BUSY_MASK 0xffffULL
static _Atomic uint64_t busy_word;
/* When each count last left zero: [0] all, [1 + class] per class. Written
 * only by the thread that made the count leave zero. */
static _Atomic shim_ticks busy_since[1 + SHIM_NCLASSES];

/* ---- the clock ------------------------------------------------------------ */

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static uint64_t clock_mono0;
static shim_ticks clock_tick0;

#if !defined(__x86_64__)
shim_ticks shim_clock_now(void)
{
	return mono_ns();
}
#endif

void shim_clock_start(void)
{
	clock_mono0 = mono_ns();
	clock_tick0 = shim_clock_now();
}

double shim_clock_seconds_per_tick(void)
{
#if defined(__x86_64__)
	uint64_t ns = mono_ns() - clock_mono0;
	shim_ticks ticks;

	/* A process that lived a few microseconds gives a coarse ratio:
	 * stretch the interval to 200 us (once, at exit). */
	while (ns < 200000)
		ns = mono_ns() - clock_mono0;
	ticks = shim_clock_now() - clock_tick0;
	return ticks ? (double)ns / 1e9 / (double)ticks : 1e-9;
#else
	return 1e-9;
#endif
}

/* ---- counter blocks ------------------------------------------------------- */

static void block_release(void *arg)
{
	struct shim_block *b = arg;

	if (b)
		atomic_store_explicit(&b->in_use, 0, memory_order_release);
}

int shim_counters_init(void)
{
	return pthread_key_create(&block_key, block_release) == 0 ? 0 : -1;
}

static struct shim_block *block_claim(void)
{
	struct shim_block *b;
	int expect;

	for (b = atomic_load(&blocks); b; b = b->next) {
		expect = 0;
		if (atomic_load_explicit(&b->in_use, memory_order_relaxed) ==
			0 &&
		    atomic_compare_exchange_strong(&b->in_use, &expect, 1))
			return b;
	}
	if (atomic_fetch_add(&nblocks, 1) >= SHIM_MAX_BLOCKS)
		return NULL;
	/* mmap, not malloc: this may run inside a signal handler. */
	b = mmap(NULL, sizeof(*b), PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (b == MAP_FAILED)
		return NULL;
	atomic_init(&b->in_use, 1);
	b->next = atomic_load(&blocks);
	while (!atomic_compare_exchange_weak(&blocks, &b->next, b))
		;
	return b;
}

__thread shim_row *shim_my_counters __attribute__((tls_model("initial-exec")));

shim_row *shim_counters_claim(void)
{
	int saved = errno;
	struct shim_block *b = block_claim();

	if (!b) {
		shim_disable("no memory for counters");
		errno = saved;
		return NULL;
	}
	pthread_setspecific(block_key, b);
	errno = saved;
	shim_my_counters = b->c;
	return shim_my_counters;
}

void shim_counters_merge(
    uint64_t out[SHIM_MAX_PHASES][SHIM_NCLASSES][SHIM_NCOUNTERS])
{
	memset(out, 0,
	       sizeof(uint64_t) * SHIM_MAX_PHASES * SHIM_NCLASSES *
		   SHIM_NCOUNTERS);
	for (struct shim_block *b = atomic_load(&blocks); b; b = b->next)
		for (unsigned p = 0; p < SHIM_MAX_PHASES; p++)
			for (unsigned c = 0; c < SHIM_NCLASSES; c++)
				for (unsigned k = 0; k < SHIM_NCOUNTERS; k++) {
					/* Other threads may still run: a
					 * relaxed load, never a torn one. */
					uint64_t v = __atomic_load_n(
					    &b->c[p][c][k], __ATOMIC_RELAXED);
					if (k == SHIM_MAX_BYTE_READ ||
					    k == SHIM_MAX_BYTE_WRITTEN) {
						if (v > out[p][c][k])
							out[p][c][k] = v;
					} else {
						out[p][c][k] += v;
					}
				}
}

void shim_counters_reset(void)
{
	for (struct shim_block *b = atomic_load(&blocks); b; b = b->next) {
		memset(b->c, 0, sizeof(b->c));
		/* In a forked child only this thread exists. */
		if (b->c != shim_my_counters)
			atomic_store(&b->in_use, 0);
	}
	atomic_store(&busy_word, 0);
}

/* ---- busy time ------------------------------------------------------------ */

static inline uint64_t busy_delta(enum shim_class cls)
{
	return 1ULL | (1ULL << (BUSY_BITS * (1 + (unsigned)cls)));
}

void shim_busy_enter(enum shim_class cls, shim_ticks now)
{
	uint64_t prev = atomic_fetch_add(&busy_word, busy_delta(cls));

	if ((prev & BUSY_MASK) == 0)
		atomic_store_explicit(&busy_since[0], now,
				      memory_order_relaxed);
	if (((prev >> (BUSY_BITS * (1 + (unsigned)cls))) & BUSY_MASK) == 0)
		atomic_store_explicit(&busy_since[1 + cls], now,
				      memory_order_relaxed);
}

/* A span closes when its count goes from 1 to 0. The closing thread reads
 * the span's start BEFORE its swap: while the count is 1 (this thread) no
 * one else may write that start (only a 0 -> 1 transition does), so the
 * value read belongs to the span being closed; the swap then fails if
 * anyone entered meanwhile, and the loop looks again. */
void shim_busy_leave(enum shim_class cls, shim_ticks now, uint64_t *ret_all,
		     uint64_t *ret_cls)
{
	unsigned shift = BUSY_BITS * (1 + (unsigned)cls);
	uint64_t cur = atomic_load(&busy_word);
	shim_ticks s_all, s_cls;
	bool last_all, last_cls;

	do {
		if ((cur & BUSY_MASK) == 0 ||
		    ((cur >> shift) & BUSY_MASK) == 0) {
			*ret_all = *ret_cls = 0; /* reset by a fork meanwhile */
			return;
		}
		last_all = (cur & BUSY_MASK) == 1;
		last_cls = ((cur >> shift) & BUSY_MASK) == 1;
		s_all = last_all ? atomic_load(&busy_since[0]) : now;
		s_cls = last_cls ? atomic_load(&busy_since[1 + cls]) : now;
	} while (!atomic_compare_exchange_weak(&busy_word, &cur,
					       cur - busy_delta(cls)));
	*ret_all = now > s_all ? now - s_all : 0;
	*ret_cls = now > s_cls ? now - s_cls : 0;
}
