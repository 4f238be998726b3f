/* drain_queue.c - per output, what is waiting to be drained, and what its
 * worker does next.
 *
 * Kept apart from the loop so that the scheduling rules are functions of
 * the output and the time alone, which a unit test checks without a
 * thread, a worker or a clock of its own: a file waits DRAIN_SETTLE_MS
 * after it was closed (written under a temporary name and renamed at once,
 * it is copied only under its final name); items go in the order they
 * came; at the end nothing waits; a scan queued covers the files below it;
 * a burst beyond DRAIN_QUEUE_MAX becomes one scan of everything. One
 * command is in flight per worker, so a file rewritten while it is copied
 * is queued again and copied once more after that copy ends.
 */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>

#include "common/base/log.h"
#include "daemon/staging/drain_internal.h"

long drain_ms_until(const struct timespec *t, const struct timespec *now)
{
	return (long)(t->tv_sec - now->tv_sec) * 1000 +
	       (t->tv_nsec - now->tv_nsec) / 1000000;
}

void drain_queue_clear(struct dout *o)
{
	struct drain_item *it, *next;

	for (it = o->head; it; it = next) {
		next = it->next;
		free(it);
	}
	o->head = o->tail = NULL;
	o->nqueued = 0;
}

struct drain_item *drain_dequeue(struct dout *o)
{
	struct drain_item *it = o->head;

	if (!it)
		return NULL;
	o->head = it->next;
	if (!o->head)
		o->tail = NULL;
	o->nqueued--;
	it->next = NULL;
	return it;
}

/* Does the queued scan IT cover REL? */
static bool covers(const struct drain_item *it, const char *rel)
{
	size_t len = strlen(it->rel);

	if (!it->scan || it->final)
		return false;
	if (len == 0)
		return true;
	return strncmp(rel, it->rel, len) == 0 &&
	       (rel[len] == '\0' || rel[len] == '/');
}

void drain_enqueue(struct dout *o, const char *rel, bool scan, bool final)
{
	struct djob *dj = o->job;
	struct drain_item *it;
	size_t len = strlen(rel);

	if (o->failed || o->done)
		return;
	if (!final) {
		for (it = o->head; it; it = it->next)
			if ((it->scan == scan && !it->final &&
			     !strcmp(it->rel, rel)) ||
			    covers(it, rel))
				return;
		if (o->nqueued >= DRAIN_QUEUE_MAX) {
			/* A burst: one scan replaces the lot. */
			if (!dj->queue_full_logged) {
				dj->queue_full_logged = true;
				log_info("job %u: output '%s': more than %d "
					 "files waiting; scanning instead",
					 dj->id, o->name, DRAIN_QUEUE_MAX);
			}
			drain_queue_clear(o);
			rel = "";
			len = 0;
			scan = true;
		}
	}
	it = malloc(sizeof(*it) + len + 1);
	if (!it) {
		log_errorx("job %u: out of memory queueing an output", dj->id);
		return;
	}
	it->next = NULL;
	it->scan = scan;
	it->final = final;
	memcpy(it->rel, rel, len + 1);
	clock_gettime(CLOCK_MONOTONIC, &it->ready);
	if (!final) {
		it->ready.tv_nsec += (long)DRAIN_SETTLE_MS * 1000000L;
		it->ready.tv_sec += it->ready.tv_nsec / 1000000000L;
		it->ready.tv_nsec %= 1000000000L;
	}
	if (o->tail)
		o->tail->next = it;
	else
		o->head = it;
	o->tail = it;
	o->nqueued++;
	dj->dirty = true;
}

enum drain_action drain_next_action(const struct dout *o,
				    const struct timespec *now)
{
	bool ending = o->job->phase == DRAIN_ENDING;

	if (o->failed || o->done || o->busy || o->stdin_closed)
		return DRAIN_ACT_NONE;
	if (o->head)
		return ending || drain_ms_until(&o->head->ready, now) <= 0
			   ? DRAIN_ACT_SEND
			   : DRAIN_ACT_NONE;
	if (ending && o->final_done)
		return o->pid > 0 ? DRAIN_ACT_CLOSE : DRAIN_ACT_DONE;
	return DRAIN_ACT_NONE;
}

long drain_out_wait_ms(const struct dout *o, const struct timespec *now)
{
	long left;

	if (!o->head || o->busy || o->failed || o->done || o->stdin_closed)
		return -1;
	if (o->job->phase == DRAIN_ENDING)
		return 0;
	left = drain_ms_until(&o->head->ready, now);
	return left < 0 ? 0 : left;
}

uint64_t drain_backlog(const struct djob *dj)
{
	uint64_t n = 0;

	for (size_t i = 0; i < dj->nouts; i++)
		n += dj->outs[i].nqueued + (dj->outs[i].busy ? 1 : 0);
	return n;
}
