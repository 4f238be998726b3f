/* pending.c - pending jobs and their pre-staging (see pending.h).
 *
 * Small tables behind one mutex: the Slurm thread copies a job out,
 * decides and asks nodes without the lock, and puts it back.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "common/net/proto.h"
#include "ctld/sched/pending.h"

struct ticket {
	char id[PENDING_TICKET_LEN + 1];
	uid_t uid;
	struct pending_ds ds[PENDING_DS_MAX];
	size_t nds;
	char prefer[256];
	time_t created;
};

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static struct ticket *tickets;
static size_t ntickets, cap_tickets;
static struct pending_job *jobs;
static size_t njobs, cap_jobs;
static struct pending_counts counts;
static pending_owner_fn owner_check;

void pending_set_owner_check(pending_owner_fn fn)
{
	pthread_mutex_lock(&mu);
	owner_check = fn;
	pthread_mutex_unlock(&mu);
}

const char *pending_state_name(enum pending_state s)
{
	switch (s) {
	case PENDING_SENT:
		return "staging";
	case PENDING_STAGED:
		return "staged";
	case PENDING_FAILED:
		return "failed";
	default:
		return "none";
	}
}

static void expire_locked(time_t now)
{
	size_t i = 0;

	while (i < ntickets) {
		if (now - tickets[i].created > PENDING_TICKET_TTL_S ||
		    tickets[i].created > now + 60)
			tickets[i] = tickets[--ntickets];
		else
			i++;
	}
}

int pending_ticket(uid_t uid, const struct pending_ds *ds, size_t n,
		   const char *prefer, char ret[PENDING_TICKET_LEN + 1],
		   time_t now)
{
	static const char hex[] = "0123456789abcdef";
	unsigned char rnd[PENDING_TICKET_LEN / 2];
	struct ticket *t;

	if (getrandom(rnd, sizeof(rnd), 0) != (ssize_t)sizeof(rnd))
		return -1;
	pthread_mutex_lock(&mu);
	expire_locked(now);
	if (ntickets >= PENDING_TICKETS_MAX) {
		pthread_mutex_unlock(&mu);
		errno = ENOSPC;
		return -1;
	}
	if (ntickets == cap_tickets) {
		size_t cap = cap_tickets ? cap_tickets * 2 : 64;
		struct ticket *nt = realloc(tickets, cap * sizeof(*nt));

		if (!nt) {
			pthread_mutex_unlock(&mu);
			return -1;
		}
		tickets = nt;
		cap_tickets = cap;
	}
	t = &tickets[ntickets++];
	memset(t, 0, sizeof(*t));
	for (size_t i = 0; i < sizeof(rnd); i++) {
		t->id[2 * i] = hex[rnd[i] >> 4];
		t->id[2 * i + 1] = hex[rnd[i] & 15];
	}
	t->uid = uid;
	t->nds = n > PENDING_DS_MAX ? PENDING_DS_MAX : n;
	memcpy(t->ds, ds, t->nds * sizeof(*ds));
	snprintf(t->prefer, sizeof(t->prefer), "%s", prefer ? prefer : "");
	t->created = now;
	memcpy(ret, t->id, sizeof(t->id));
	pthread_mutex_unlock(&mu);
	return 0;
}

static struct pending_job *find_job_locked(uint32_t job)
{
	for (size_t i = 0; i < njobs; i++)
		if (jobs[i].job == job)
			return &jobs[i];
	return NULL;
}

cJSON *pending_op_note(const struct ctld_caller *c, const cJSON *req)
{
	char err[CONF_ERR_MAX];
	const char *tid;
	struct ticket *t = NULL;
	struct pending_job *j;
	uint32_t job;
	size_t i;

	pending_owner_fn check;
	bool verified = false;
	uid_t owner;

	if (proto_get_job_id(req, &job, err, sizeof(err)) < 0 ||
	    proto_get_string(req, "ticket", &tid, err, sizeof(err)) < 0)
		return proto_reply_error("job_note: %s", err);
	/* Whose job it is, from Slurm, before anything is kept: a note for
	 * someone else's job must not take its place. */
	pthread_mutex_lock(&mu);
	check = owner_check;
	pthread_mutex_unlock(&mu);
	if (check && check(job, &owner) == 0) {
		if (owner != c->uid)
			return proto_reply_error("job_note: job %u: no such "
						 "job of yours",
						 job);
		verified = true;
	}
	pthread_mutex_lock(&mu);
	expire_locked(time(NULL));
	for (i = 0; i < ntickets; i++)
		if (!strcmp(tickets[i].id, tid) && tickets[i].uid == c->uid) {
			t = &tickets[i];
			break;
		}
	if (!t) {
		pthread_mutex_unlock(&mu);
		/* someone else's ticket is answered as a missing one */
		return proto_reply_error("job_note: job %u: no such ticket "
					 "(expired after %d s, or not yours)",
					 job, PENDING_TICKET_TTL_S);
	}
	j = find_job_locked(job);
	if (!j) {
		if (njobs >= PENDING_JOBS_MAX) {
			pthread_mutex_unlock(&mu);
			return proto_reply_error("job_note: job %u: %d jobs "
						 "already wait for pre-staging",
						 job, PENDING_JOBS_MAX);
		}
		if (njobs == cap_jobs) {
			size_t cap = cap_jobs ? cap_jobs * 2 : 64;
			struct pending_job *nj = realloc(jobs,
							 cap * sizeof(*nj));

			if (!nj) {
				pthread_mutex_unlock(&mu);
				return NULL;
			}
			jobs = nj;
			cap_jobs = cap;
		}
		j = &jobs[njobs++];
	} else if (j->uid != c->uid && (j->verified || !verified)) {
		pthread_mutex_unlock(&mu);
		return proto_reply_error("job_note: job %u: no such job of "
					 "yours",
					 job);
	}
	memset(j, 0, sizeof(*j));
	j->job = job;
	j->uid = c->uid;
	j->verified = verified;
	j->nds = t->nds;
	memcpy(j->ds, t->ds, t->nds * sizeof(t->ds[0]));
	snprintf(j->prefer, sizeof(j->prefer), "%s", t->prefer);
	j->seen = time(NULL);
	*t = tickets[--ntickets]; /* used once */
	counts.jobs_noted++;
	pthread_mutex_unlock(&mu);
	return proto_reply_ok();
}

int pending_get(uint32_t job, struct pending_job *ret)
{
	struct pending_job *j;

	pthread_mutex_lock(&mu);
	j = find_job_locked(job);
	if (j)
		*ret = *j;
	pthread_mutex_unlock(&mu);
	return j ? 0 : -1;
}

void pending_put(const struct pending_job *p)
{
	struct pending_job *j;

	pthread_mutex_lock(&mu);
	j = find_job_locked(p->job);
	if (j)
		*j = *p;
	pthread_mutex_unlock(&mu);
}

void pending_drop(uint32_t job)
{
	pthread_mutex_lock(&mu);
	for (size_t i = 0; i < njobs; i++)
		if (jobs[i].job == job) {
			jobs[i] = jobs[--njobs];
			break;
		}
	pthread_mutex_unlock(&mu);
}

uint32_t *pending_ids(size_t *ret_n)
{
	uint32_t *v = NULL;

	pthread_mutex_lock(&mu);
	*ret_n = 0;
	if (njobs && (v = calloc(njobs, sizeof(*v)))) {
		for (size_t i = 0; i < njobs; i++)
			v[i] = jobs[i].job;
		*ret_n = njobs;
	}
	pthread_mutex_unlock(&mu);
	return v;
}

bool pending_node_busy(const char *node)
{
	bool busy = false;

	pthread_mutex_lock(&mu);
	for (size_t i = 0; i < njobs && !busy; i++)
		for (size_t k = 0; k < jobs[i].nnodes && !busy; k++)
			if (!strcmp(jobs[i].nodes[k].name, node))
				for (size_t d = 0; d < jobs[i].nds && !busy;
				     d++)
					busy = jobs[i].nodes[k].ds[d].state ==
					       PENDING_SENT;
	pthread_mutex_unlock(&mu);
	return busy;
}

void pending_count(const struct pending_counts *d)
{
	pthread_mutex_lock(&mu);
	counts.requests += d->requests;
	counts.staged += d->staged;
	counts.failed += d->failed;
	counts.bytes += d->bytes;
	counts.hits += d->hits;
	counts.late += d->late;
	counts.missed += d->missed;
	counts.seconds_saved += d->seconds_saved;
	pthread_mutex_unlock(&mu);
}

void pending_counts(struct pending_counts *ret)
{
	pthread_mutex_lock(&mu);
	*ret = counts;
	pthread_mutex_unlock(&mu);
}

void pending_reset(void)
{
	pthread_mutex_lock(&mu);
	free(tickets);
	free(jobs);
	tickets = NULL;
	jobs = NULL;
	ntickets = cap_tickets = njobs = cap_jobs = 0;
	memset(&counts, 0, sizeof(counts));
	pthread_mutex_unlock(&mu);
}
