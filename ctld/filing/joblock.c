/* joblock.c - exclusive locks on job ids (see joblock.h). */
#include <pthread.h>
#include <stdbool.h>

#include "ctld/filing/joblock.h"

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t released = PTHREAD_COND_INITIALIZER;
static bool held[JOBLOCK_SLOTS];

static size_t slot(uint32_t job)
{
	/* Fibonacci hashing: consecutive ids (a batch's usual jobs) spread
	 * over the slots rather than sit next to each other. */
	return (size_t)((job * UINT32_C(2654435769)) >> 16) % JOBLOCK_SLOTS;
}

static bool any_held(const uint32_t *jobs, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (held[slot(jobs[i])])
			return true;
	return false;
}

void joblock_lock(const uint32_t *jobs, size_t n)
{
	if (n == 0)
		return;
	pthread_mutex_lock(&lock);
	while (any_held(jobs, n))
		pthread_cond_wait(&released, &lock);
	for (size_t i = 0; i < n; i++)
		held[slot(jobs[i])] = true;
	pthread_mutex_unlock(&lock);
}

bool joblock_trylock(const uint32_t *jobs, size_t n)
{
	bool free_now;

	pthread_mutex_lock(&lock);
	free_now = !any_held(jobs, n);
	if (free_now)
		for (size_t i = 0; i < n; i++)
			held[slot(jobs[i])] = true;
	pthread_mutex_unlock(&lock);
	return free_now;
}

void joblock_unlock(const uint32_t *jobs, size_t n)
{
	if (n == 0)
		return;
	pthread_mutex_lock(&lock);
	for (size_t i = 0; i < n; i++)
		held[slot(jobs[i])] = false;
	pthread_cond_broadcast(&released);
	pthread_mutex_unlock(&lock);
}
