/* sampler.c - /proc/PID/io of a job's process tree. The accounting of
 * exits is explained in sampler.h; the thread that samples every job is
 * telemetry's ticker (telemetry.c). */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "daemon/telemetry/sampler.h"

#define SAMPLER_CARRIER_ROUNDS 3 /* samples to wait for slurmstepd's reap */

/* Read a small /proc file whole into BUF. Returns its length or -1. */
static ssize_t read_small(const char *path, char *buf, size_t len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return -1;
	n = read(fd, buf, len - 1);
	close(fd);
	if (n < 0)
		return -1;
	buf[n] = '\0';
	return n;
}

int sampler_read_io(pid_t pid, struct telrec_io *ret)
{
	char path[64], buf[512], *line, *save = NULL;
	struct telrec_io io = { 0 };

	snprintf(path, sizeof(path), "/proc/%d/io", (int)pid);
	if (read_small(path, buf, sizeof(buf)) < 0)
		return -1;
	for (line = strtok_r(buf, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save)) {
		char *colon = strchr(line, ':');
		unsigned long long v;

		if (!colon)
			continue;
		*colon = '\0';
		v = strtoull(colon + 1, NULL, 10);
		if (!strcmp(line, "rchar"))
			io.rchar = v;
		else if (!strcmp(line, "wchar"))
			io.wchar = v;
		else if (!strcmp(line, "syscr"))
			io.syscr = v;
		else if (!strcmp(line, "syscw"))
			io.syscw = v;
		else if (!strcmp(line, "read_bytes"))
			io.read_bytes = v;
		else if (!strcmp(line, "write_bytes"))
			io.write_bytes = v;
	}
	*ret = io;
	return 0;
}

int sampler_read_stat(pid_t pid, unsigned long long *ret_start, pid_t *ret_ppid)
{
	char path[64], buf[1024], *p;
	unsigned long long start = 0;
	int ppid = 0, field;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	if (read_small(path, buf, sizeof(buf)) < 0)
		return -1;
	/* comm may hold spaces and ')': fields start after the last ')'. */
	p = strrchr(buf, ')');
	if (!p)
		return -1;
	p += 2; /* field 3, state */
	for (field = 3; *p && field < 22; field++) {
		if (field == 4)
			ppid = atoi(p);
		p = strchr(p, ' ');
		if (!p)
			return -1;
		p++;
	}
	start = strtoull(p, NULL, 10);
	*ret_start = start;
	*ret_ppid = ppid;
	return 0;
}

/* Per-field a - b, never negative (a counter never goes down, but a
 * recycled pid we failed to notice would). */
static void io_sub(struct telrec_io *r, const struct telrec_io *a,
		   const struct telrec_io *b)
{
#define SUB(f) r->f = a->f > b->f ? a->f - b->f : 0
	SUB(rchar);
	SUB(wchar);
	SUB(syscr);
	SUB(syscw);
	SUB(read_bytes);
	SUB(write_bytes);
#undef SUB
}

static bool io_ge(const struct telrec_io *a, const struct telrec_io *b)
{
	return a->rchar >= b->rchar && a->wchar >= b->wchar &&
	       a->syscr >= b->syscr && a->syscw >= b->syscw;
}

static struct sampler_proc *find_proc(struct sampler_tree *tree, pid_t pid)
{
	for (size_t i = 0; i < tree->nprocs; i++)
		if (tree->procs[i].pid == pid)
			return &tree->procs[i];
	return NULL;
}

static struct sampler_carrier *find_carrier(struct sampler_tree *tree,
					    pid_t pid)
{
	for (size_t i = 0; i < tree->ncarriers; i++)
		if (tree->carriers[i].pid == pid)
			return &tree->carriers[i];
	return NULL;
}

static struct sampler_proc *add_proc(struct sampler_tree *tree, pid_t pid,
				     pid_t task)
{
	struct sampler_proc *p;
	unsigned long long start;
	pid_t ppid;

	if (sampler_read_stat(pid, &start, &ppid) < 0) {
		errno = ESRCH;
		return NULL;
	}
	if (tree->nprocs == tree->cap) {
		size_t cap = tree->cap ? tree->cap * 2 : 16;
		void *n;

		if (tree->nprocs >= SAMPLER_PROCS_MAX) {
			errno = ENOSPC;
			return NULL;
		}
		n = realloc(tree->procs, cap * sizeof(*tree->procs));
		if (!n)
			return NULL;
		tree->procs = n;
		tree->cap = cap;
	}
	p = &tree->procs[tree->nprocs++];
	memset(p, 0, sizeof(*p));
	p->pid = pid;
	p->ppid = ppid;
	p->starttime = start;
	p->task = task;
	return p;
}

int sampler_tree_add_task(struct sampler_tree *tree, pid_t pid, pid_t carrier)
{
	struct sampler_carrier *c;

	struct sampler_proc *p;

	if (find_proc(tree, pid))
		return 0;
	p = add_proc(tree, pid, pid);
	if (!p)
		return -1;
	if (!carrier)
		carrier = p->ppid; /* resumed after a restart: slurmstepd */
	if (carrier <= 1 || find_carrier(tree, carrier) ||
	    tree->ncarriers == SAMPLER_CARRIERS_MAX)
		return 0;
	c = &tree->carriers[tree->ncarriers];
	memset(c, 0, sizeof(*c));
	c->pid = carrier;
	/* Its counters so far are its own: the baseline. */
	if (sampler_read_stat(carrier, &c->starttime, &(pid_t){ 0 }) < 0 ||
	    sampler_read_io(carrier, &c->last) < 0)
		return 0;
	tree->ncarriers++;
	return 0;
}

bool sampler_tree_has(const struct sampler_tree *tree, pid_t pid)
{
	for (size_t i = 0; i < tree->nprocs; i++)
		if (tree->procs[i].pid == pid)
			return true;
	return false;
}

/* Add the children of every thread of P that we do not follow yet. */
static void discover(struct sampler_tree *tree, size_t i)
{
	char path[64];
	struct dirent *de;
	DIR *d;

	snprintf(path, sizeof(path), "/proc/%d/task", (int)tree->procs[i].pid);
	d = opendir(path);
	if (!d)
		return;
	while ((de = readdir(d))) {
		char cpath[96], buf[4096], *tok, *save = NULL;

		if (de->d_name[0] == '.')
			continue;
		snprintf(cpath, sizeof(cpath), "/proc/%d/task/%.16s/children",
			 (int)tree->procs[i].pid, de->d_name);
		if (read_small(cpath, buf, sizeof(buf)) <= 0)
			continue;
		for (tok = strtok_r(buf, " \n", &save); tok;
		     tok = strtok_r(NULL, " \n", &save)) {
			pid_t child = (pid_t)atoi(tok);

			/* add_proc may move the array: index, not pointer. */
			if (child > 0 && !find_proc(tree, child))
				add_proc(tree, child, tree->procs[i].task);
		}
	}
	closedir(d);
}

/* P is gone: its parent (if we follow it) will show P's whole counters, of
 * which we counted LAST already. */
static void settle_exit(struct sampler_tree *tree, struct sampler_proc *p)
{
	struct sampler_proc *parent = find_proc(tree, p->ppid);
	struct sampler_carrier *c;

	/* Children it reaped after our last look are in its final counters
	 * but were counted on their own: its pending credit goes up too. */
	if (parent) {
		telrec_io_add(&parent->credit, &p->last);
		telrec_io_add(&parent->credit, &p->credit);
		return;
	}
	c = find_carrier(tree, p->ppid);
	if (c) {
		telrec_io_add(&c->owed, &p->last);
		telrec_io_add(&c->owed, &p->credit);
		c->owed_task = p->pid == p->task ? p->pid : p->task;
		c->rounds = SAMPLER_CARRIER_ROUNDS;
	}
}

static void sample_carrier(struct sampler_carrier *c, sampler_task_fn fn,
			   void *arg, struct telrec_io *total)
{
	struct telrec_io cur, grew, tail;
	unsigned long long start;
	pid_t ppid;

	if (sampler_read_stat(c->pid, &start, &ppid) < 0 ||
	    start != c->starttime || sampler_read_io(c->pid, &cur) < 0) {
		c->rounds = 0;
		c->pid = 0; /* gone: nothing more to learn from it */
		return;
	}
	io_sub(&grew, &cur, &c->last);
	c->last = cur;
	if (!c->rounds)
		return;
	/* Its growth is its own I/O plus the whole of any task it reaped:
	 * once it covers what we counted of the task, the rest is the
	 * task's tail (with at most one interval of slurmstepd's own I/O). */
	if (io_ge(&grew, &c->owed)) {
		io_sub(&tail, &grew, &c->owed);
		tail.read_bytes = tail.write_bytes = 0;
		telrec_io_add(total, &tail);
		if (fn)
			fn(arg, c->owed_task, false, &tail);
		memset(&c->owed, 0, sizeof(c->owed));
		c->rounds = 0;
		return;
	}
	if (--c->rounds == 0)
		memset(&c->owed, 0, sizeof(c->owed));
}

/* Does a gone, unsettled process have PID as its parent? */
static bool has_unsettled_child(const struct sampler_tree *tree, pid_t pid)
{
	for (size_t i = 0; i < tree->nprocs; i++)
		if (tree->procs[i].gone && !tree->procs[i].settled &&
		    tree->procs[i].ppid == pid)
			return true;
	return false;
}

void sampler_tree_sample(struct sampler_tree *tree, sampler_task_fn fn,
			 void *arg, struct telrec_io *ret_total)
{
	size_t i, n, left;

	for (i = 0; i < tree->nprocs; i++)
		discover(tree, i);
	/* Read everything first, then settle the exits (children before
	 * their parents, so credits travel up), then count growth: a credit
	 * must be in place before its parent's growth is counted. */
	for (i = 0; i < tree->nprocs; i++) {
		struct sampler_proc *p = &tree->procs[i];
		unsigned long long start;
		pid_t ppid;

		p->gone = sampler_read_stat(p->pid, &start, &ppid) < 0 ||
			  start != p->starttime ||
			  sampler_read_io(p->pid, &p->cur) < 0;
		p->settled = false;
		if (!p->gone)
			p->ppid = ppid;
	}
	for (left = tree->nprocs; left > 0; left--) {
		bool progress = false;

		for (i = 0; i < tree->nprocs; i++) {
			struct sampler_proc *p = &tree->procs[i];

			if (!p->gone || p->settled ||
			    (left > 1 && has_unsettled_child(tree, p->pid)))
				continue;
			settle_exit(tree, p);
			p->settled = progress = true;
			if (fn && p->pid == p->task)
				fn(arg, p->pid, true, &(struct telrec_io){ 0 });
		}
		if (!progress)
			break;
	}
	for (i = 0; i < tree->nprocs; i++) {
		struct sampler_proc *p = &tree->procs[i];
		struct telrec_io grew;

		if (p->gone) {
			if (!p->settled) {
				settle_exit(tree, p);
				if (fn && p->pid == p->task)
					fn(arg, p->pid, true,
					   &(struct telrec_io){ 0 });
			}
			p->pid = 0; /* removed below */
			continue;
		}
		io_sub(&grew, &p->cur, &p->last);
		p->last = p->cur;
		/* What reaped children brought that we had counted. */
#define TAKE(f)                                                                \
	do {                                                                   \
		uint64_t use = grew.f < p->credit.f ? grew.f : p->credit.f;    \
		p->credit.f -= use;                                            \
		grew.f -= use;                                                 \
	} while (0)
		TAKE(rchar);
		TAKE(wchar);
		TAKE(syscr);
		TAKE(syscw);
		TAKE(read_bytes);
		TAKE(write_bytes);
#undef TAKE
		telrec_io_add(ret_total, &grew);
		if (fn)
			fn(arg, p->task, false, &grew);
	}
	for (i = 0; i < tree->ncarriers; i++)
		if (tree->carriers[i].pid)
			sample_carrier(&tree->carriers[i], fn, arg, ret_total);
	/* Drop the processes that are gone. */
	for (i = n = 0; i < tree->nprocs; i++)
		if (tree->procs[i].pid)
			tree->procs[n++] = tree->procs[i];
	tree->nprocs = n;
}

void sampler_tree_clear(struct sampler_tree *tree)
{
	free(tree->procs);
	memset(tree, 0, sizeof(*tree));
}
