/* hold.c - a bounded wait for the nodes that hold a job's data (see
 * hold.h). A small table behind one mutex: the queue the service sees
 * at once is what it holds, so a linear search is enough.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "common/sched/dsfeature.h"
#include "ctld/sched/hold.h"

enum hold_state { HELD = 1, RELEASED };

struct held {
	uint32_t job;
	enum hold_state state;
	time_t since; /* HELD: when the constraint was set */
	time_t seen;  /* last decided on */
};

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static struct held *tab;
static size_t ntab, captab;
static struct hold_counts counts;

/* Only "ios_" names joined by '&', and at least one. */
static bool only_ours(const char *s)
{
	const char *p = s, *e;

	if (!s || !*s)
		return false;
	while (*p) {
		e = p + strcspn(p, "&");
		if (!dsfeature_is_ours(p, (size_t)(e - p)))
			return false;
		p = *e ? e + 1 : e;
	}
	return true;
}

static struct held *find_locked(uint32_t job)
{
	for (size_t i = 0; i < ntab; i++)
		if (tab[i].job == job)
			return &tab[i];
	return NULL;
}

static struct held *add_locked(uint32_t job)
{
	if (ntab >= HOLD_JOBS_MAX)
		return NULL;
	if (ntab == captab) {
		size_t cap = captab ? captab * 2 : 64;
		struct held *nt = realloc(tab, cap * sizeof(*nt));

		if (!nt)
			return NULL;
		tab = nt;
		captab = cap;
	}
	memset(&tab[ntab], 0, sizeof(tab[ntab]));
	tab[ntab].job = job;
	return &tab[ntab++];
}

enum hold_action hold_decide(uint32_t job, const char *prefer,
			     const char *features, bool eligible,
			     time_t submitted, unsigned hold_s, time_t now)
{
	enum hold_action a = HOLD_NONE;
	bool constrained = features && *features;
	struct held *h;

	pthread_mutex_lock(&mu);
	h = find_locked(job);
	if (h)
		h->seen = now;
	if (h && h->state == HELD) {
		/* the bound, a switched-off hold, or a constraint that is
		 * no longer ours (an admin changed it: theirs now) */
		if (!only_ours(features))
			h->state = RELEASED;
		else if (!hold_s || now - h->since >= (time_t)hold_s ||
			 now < h->since)
			a = HOLD_RELEASE;
	} else if (!h && constrained) {
		/* ours without a record: held at submission, or by a
		 * service that restarted; the bound counts from submission */
		time_t since = submitted < now ? submitted : now; /* skew */

		if (only_ours(features)) {
			if (hold_s && now - since < (time_t)hold_s &&
			    (h = add_locked(job))) {
				h->state = HELD;
				h->since = since;
				h->seen = now;
				counts.held++;
			} else {
				a = HOLD_RELEASE;
			}
		}
	} else if (!h && hold_s && eligible && only_ours(prefer)) {
		a = HOLD_SET;
	}
	pthread_mutex_unlock(&mu);
	return a;
}

void hold_applied(uint32_t job, enum hold_action action, time_t now)
{
	struct held *h;

	if (action == HOLD_NONE)
		return;
	pthread_mutex_lock(&mu);
	h = find_locked(job);
	if (!h)
		h = add_locked(job);
	if (h) {
		h->seen = now;
		if (action == HOLD_SET && h->state != HELD) {
			h->state = HELD;
			h->since = now;
			counts.held++;
		} else if (action == HOLD_RELEASE) {
			if (h->state == HELD)
				counts.released++;
			h->state = RELEASED;
		}
	}
	pthread_mutex_unlock(&mu);
}

bool hold_done(uint32_t job)
{
	struct held *h;
	bool held = false;

	pthread_mutex_lock(&mu);
	h = find_locked(job);
	if (h) {
		held = h->state == HELD;
		if (held)
			counts.started_held++;
		*h = tab[--ntab];
	}
	pthread_mutex_unlock(&mu);
	return held;
}

bool hold_until(uint32_t job, unsigned hold_s, time_t *ret_until)
{
	struct held *h;
	bool held;

	pthread_mutex_lock(&mu);
	h = find_locked(job);
	held = h && h->state == HELD && hold_s;
	if (held)
		*ret_until = h->since + (time_t)hold_s;
	pthread_mutex_unlock(&mu);
	return held;
}

void hold_expire(time_t now)
{
	size_t i = 0;

	pthread_mutex_lock(&mu);
	while (i < ntab) {
		if (now - tab[i].seen > HOLD_FORGET_S || tab[i].seen > now + 60)
			tab[i] = tab[--ntab];
		else
			i++;
	}
	pthread_mutex_unlock(&mu);
}

void hold_counts(struct hold_counts *ret)
{
	pthread_mutex_lock(&mu);
	*ret = counts;
	pthread_mutex_unlock(&mu);
}

void hold_reset(void)
{
	pthread_mutex_lock(&mu);
	free(tab);
	tab = NULL;
	ntab = captab = 0;
	memset(&counts, 0, sizeof(counts));
	pthread_mutex_unlock(&mu);
}
