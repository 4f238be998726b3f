/* placement.c - cached datasets per node and the --prefer of a new job
 * (see placement.h).
 *
 * Why a node keeps only its wanted features and not its whole report: a
 * submission asks while the user waits for sbatch, and Slurm shows at
 * most PLACEMENT_NODE_FEATURES per node anyway, so a query looks at
 * nodes x 16 entries, never at every file of every cache.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/base/errmsg.h"
#include "common/base/log.h"
#include "common/net/proto.h"
#include "common/sched/cachekey.h"
#include "ctld/sched/pending.h"
#include "ctld/sched/placement.h"

/* Features of ours Slurm may show on one node (ours, or an admin's). */
#define PUBLISHED_MAX (PLACEMENT_NODE_FEATURES * 4)

struct want {
	char key[CACHEKEY_LEN + 1];
	char tier[CONF_NAME_MAX];
	char feature[DSFEATURE_LEN + 1];
	uint64_t bytes;
	double last_used;
};

struct pnode {
	char name[CONF_NODE_MAX];
	struct want want[PLACEMENT_NODE_FEATURES];
	size_t nwant;
	char published[PUBLISHED_MAX][DSFEATURE_LEN + 1];
	size_t npublished;
	time_t reported;
};

/* A feature given to a held submission, and when (placement_set_hold). */
struct handed {
	char feature[DSFEATURE_LEN + 1];
	time_t at;
};

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static unsigned hold_s;
static struct handed handed[PLACEMENT_HANDED_MAX];
static size_t nhanded, handed_next;
/* placement_on_change: told when a report changes what a node shows */
static void (*on_change)(void *arg);
static void *on_change_arg;
static struct pnode *nodes;
static size_t nnodes, cap_nodes;
static struct placement_counts counts;

static struct pnode *find_locked(const char *name)
{
	for (size_t i = 0; i < nnodes; i++)
		if (!strcmp(nodes[i].name, name))
			return &nodes[i];
	return NULL;
}

static struct pnode *find_or_add_locked(const char *name)
{
	struct pnode *n = find_locked(name), *nn;

	if (n)
		return n;
	if (nnodes >= PLACEMENT_NODES_MAX) {
		errno = ENOSPC;
		return NULL;
	}
	if (nnodes == cap_nodes) {
		size_t cap = cap_nodes ? cap_nodes * 2 : 16;

		nn = realloc(nodes, cap * sizeof(*nodes));
		if (!nn)
			return NULL;
		nodes = nn;
		cap_nodes = cap;
	}
	n = &nodes[nnodes++];
	memset(n, 0, sizeof(*n));
	snprintf(n->name, sizeof(n->name), "%s", name);
	return n;
}

static bool is_hex_key(const char *s)
{
	if (!s || strlen(s) != CACHEKEY_LEN)
		return false;
	for (size_t i = 0; i < CACHEKEY_LEN; i++)
		if (!((s[i] >= '0' && s[i] <= '9') ||
		      (s[i] >= 'a' && s[i] <= 'f')))
			return false;
	return true;
}

/* Most recently used first; then the larger (more to save). */
static int want_cmp(const void *a, const void *b)
{
	const struct want *x = a, *y = b;

	if (x->last_used != y->last_used)
		return x->last_used < y->last_used ? 1 : -1;
	if (x->bytes != y->bytes)
		return x->bytes < y->bytes ? 1 : -1;
	return strcmp(x->feature, y->feature);
}

int placement_report(const char *node, const cJSON *entries, time_t now,
		     char *err, size_t errlen)
{
	struct want *all;
	const cJSON *e;
	size_t n = 0, i;
	struct pnode *pn;
	bool differ;

	if (!node || !conf_is_node_name(node))
		return errmsg_fail(err, errlen, EINVAL,
				   "cache_report: bad "
				   "node name");
	if (!cJSON_IsArray(entries))
		return errmsg_fail(err, errlen, EINVAL,
				   "cache_report: node "
				   "%s: 'entries' is not an array",
				   node);
	all = calloc(PLACEMENT_REPORT_MAX, sizeof(*all));
	if (!all)
		return errmsg_fail(err, errlen, ENOMEM, "out of memory");
	cJSON_ArrayForEach(e, entries) {
		const cJSON *k = cJSON_GetObjectItemCaseSensitive(e, "key");
		const cJSON *t = cJSON_GetObjectItemCaseSensitive(e, "tier");
		const cJSON *u = cJSON_GetObjectItemCaseSensitive(e,
								  "last_used");

		if (n >= PLACEMENT_REPORT_MAX)
			break;
		if (!cJSON_IsString(k) || !is_hex_key(k->valuestring) ||
		    !cJSON_IsString(t) || !t->valuestring[0] ||
		    strlen(t->valuestring) >= CONF_NAME_MAX) {
			free(all);
			return errmsg_fail(err, errlen, EINVAL,
					   "cache_report: node %s: entry %zu "
					   "needs a 32-hex 'key' and a 'tier'",
					   node, n);
		}
		snprintf(all[n].key, sizeof(all[n].key), "%s", k->valuestring);
		snprintf(all[n].tier, sizeof(all[n].tier), "%s",
			 t->valuestring);
		dsfeature_name(all[n].key, all[n].tier, all[n].feature);
		all[n].bytes = proto_u64(e, "bytes"); /* 0 if not 0..1e18 */
		all[n].last_used = cJSON_IsNumber(u) ? u->valuedouble : 0;
		n++;
	}
	qsort(all, n, sizeof(*all), want_cmp);
	/* one feature per (key, tier): the report has one current version
	 * each, but never trust that */
	for (i = 1; i < n;) {
		bool dup = false;

		for (size_t j = 0; j < i && !dup; j++)
			dup = !strcmp(all[j].feature, all[i].feature);
		if (dup) {
			memmove(&all[i], &all[i + 1],
				(n - i - 1) * sizeof(*all));
			n--;
		} else {
			i++;
		}
	}
	if (n > PLACEMENT_NODE_FEATURES)
		n = PLACEMENT_NODE_FEATURES;

	pthread_mutex_lock(&mu);
	pn = find_or_add_locked(node);
	if (!pn) {
		pthread_mutex_unlock(&mu);
		free(all);
		return errmsg_fail(err, errlen, ENOSPC,
				   "cache_report: node "
				   "%s: more than %u nodes reported",
				   node, PLACEMENT_NODES_MAX);
	}
	differ = pn->nwant != n;
	for (i = 0; i < n && !differ; i++)
		differ = strcmp(pn->want[i].feature, all[i].feature) != 0;
	memcpy(pn->want, all, n * sizeof(*all));
	pn->nwant = n;
	pn->reported = now;
	counts.reports++;
	if (differ && on_change)
		on_change(on_change_arg);
	pthread_mutex_unlock(&mu);
	free(all);
	return 0;
}

static bool handed_recently_locked(const char *feature, time_t now)
{
	for (size_t i = 0; i < nhanded; i++)
		if (!strcmp(handed[i].feature, feature))
			return now - handed[i].at <= PLACEMENT_LINGER_S &&
			       handed[i].at <= now + PLACEMENT_LINGER_S;
	return false;
}

static bool wanted_locked(const struct pnode *pn, const char *feature)
{
	for (size_t i = 0; i < pn->nwant; i++)
		if (!strcmp(pn->want[i].feature, feature))
			return true;
	return false;
}

size_t placement_wanted(const char *node, char ret[][DSFEATURE_LEN + 1],
			size_t max, time_t now)
{
	struct pnode *pn;
	size_t n = 0;

	pthread_mutex_lock(&mu);
	pn = find_locked(node);
	for (size_t i = 0; pn && i < pn->nwant && n < max; i++)
		snprintf(ret[n++], DSFEATURE_LEN + 1, "%s",
			 pn->want[i].feature);
	for (size_t i = 0; pn && i < pn->npublished && n < max; i++)
		if (!wanted_locked(pn, pn->published[i]) &&
		    handed_recently_locked(pn->published[i], now))
			snprintf(ret[n++], DSFEATURE_LEN + 1, "%s",
				 pn->published[i]);
	pthread_mutex_unlock(&mu);
	return n;
}

void placement_set_hold(unsigned s)
{
	pthread_mutex_lock(&mu);
	hold_s = s;
	pthread_mutex_unlock(&mu);
}

/* Remember each feature of PREFER ("f1&f2") as handed out at NOW. */
static void note_handed_locked(const char *prefer, time_t now)
{
	const char *p = prefer, *e;

	while (*p) {
		size_t len, i, slot;

		e = p + strcspn(p, "&");
		len = (size_t)(e - p);
		if (!dsfeature_is_ours(p, len)) { /* never given: skip it */
			p = *e ? e + 1 : e;
			continue;
		}
		for (i = 0; i < nhanded; i++)
			if (strlen(handed[i].feature) == len &&
			    !strncmp(handed[i].feature, p, len))
				break;
		if (i < nhanded)
			slot = i;
		else if (nhanded < PLACEMENT_HANDED_MAX)
			slot = nhanded++;
		else /* full: in turn, in the order they were written */
			slot = handed_next++ % PLACEMENT_HANDED_MAX;
		snprintf(handed[slot].feature, DSFEATURE_LEN + 1, "%.*s",
			 (int)len, p);
		handed[slot].at = now;
		p = *e ? e + 1 : e;
	}
}

void placement_set_published(const char *node, const char *features)
{
	struct pnode *pn;
	const char *p = features, *e;

	pthread_mutex_lock(&mu);
	pn = find_locked(node);
	if (pn) {
		pn->npublished = 0;
		while (p && *p && pn->npublished < PUBLISHED_MAX) {
			e = strchr(p, ',');
			if (!e)
				e = p + strlen(p);
			if (dsfeature_is_ours(p, (size_t)(e - p)))
				snprintf(pn->published[pn->npublished++],
					 DSFEATURE_LEN + 1, "%.*s",
					 (int)(e - p), p);
			p = *e ? e + 1 : e;
		}
	}
	pthread_mutex_unlock(&mu);
}

static bool published_locked(const struct pnode *pn, const char *feature)
{
	for (size_t i = 0; i < pn->npublished; i++)
		if (!strcmp(pn->published[i], feature))
			return true;
	return false;
}

bool placement_is_published(const char *node, const char *feature)
{
	struct pnode *pn;
	bool r;

	pthread_mutex_lock(&mu);
	pn = find_locked(node);
	r = pn && published_locked(pn, feature);
	pthread_mutex_unlock(&mu);
	return r;
}

uint64_t placement_entry_bytes(const char *node, const char *key,
			       const char *tier)
{
	struct pnode *pn;
	uint64_t b = 0;

	pthread_mutex_lock(&mu);
	pn = find_locked(node);
	for (size_t i = 0; pn && i < pn->nwant; i++)
		if (!strcmp(pn->want[i].key, key) &&
		    !strcmp(pn->want[i].tier, tier))
			b = pn->want[i].bytes ? pn->want[i].bytes : 1;
	pthread_mutex_unlock(&mu);
	return b;
}

struct holder {
	double last_used;
	size_t node;
};

/* The most recently used first: the likeliest to be there still. */
static int holder_cmp(const void *a, const void *b)
{
	const struct holder *x = a, *y = b;

	return (x->last_used < y->last_used) - (x->last_used > y->last_used);
}

size_t placement_holders(const char *key, const char *tier,
			 char (*ret)[CONF_NODE_MAX], size_t max)
{
	struct holder *h;
	size_t n = 0;

	if (max > PLACEMENT_HOLDERS_MAX)
		max = PLACEMENT_HOLDERS_MAX;
	pthread_mutex_lock(&mu);
	h = malloc((nnodes ? nnodes : 1) * sizeof(*h));
	for (size_t i = 0; h && i < nnodes; i++)
		for (size_t k = 0; k < nodes[i].nwant; k++)
			if (!strcmp(nodes[i].want[k].key, key) &&
			    !strcmp(nodes[i].want[k].tier, tier)) {
				h[n++] = (struct holder){
					nodes[i].want[k].last_used, i
				};
				break;
			}
	qsort(h, n, sizeof(*h), holder_cmp);
	if (n > max)
		n = max;
	for (size_t i = 0; i < n; i++)
		snprintf(ret[i], CONF_NODE_MAX, "%s", nodes[h[i].node].name);
	pthread_mutex_unlock(&mu);
	free(h);
	return n;
}

time_t placement_reported_at(const char *node)
{
	struct pnode *pn;
	time_t t;

	pthread_mutex_lock(&mu);
	pn = find_locked(node);
	t = pn ? pn->reported : 0;
	pthread_mutex_unlock(&mu);
	return t;
}

char **placement_nodes(size_t *ret_n)
{
	char **v = NULL;
	size_t n = 0;

	pthread_mutex_lock(&mu);
	if (nnodes)
		v = calloc(nnodes, sizeof(*v));
	for (size_t i = 0; v && i < nnodes; i++) {
		v[n] = strdup(nodes[i].name);
		if (v[n])
			n++;
	}
	pthread_mutex_unlock(&mu);
	*ret_n = n;
	return v;
}

/* Which variant of a dataset (the user's own entry or the public one)
 * node PN holds and shows: its want, or NULL. */
static const struct want *holds_locked(const struct pnode *pn, const char *key,
				       const char *tier)
{
	for (size_t i = 0; i < pn->nwant; i++)
		if (!strcmp(pn->want[i].key, key) &&
		    !strcmp(pn->want[i].tier, tier) &&
		    published_locked(pn, pn->want[i].feature))
			return &pn->want[i];
	return NULL;
}

static void append(char *buf, size_t len, const char *sep, const char *s)
{
	size_t l = strlen(buf);

	if (l + strlen(sep) + strlen(s) + 1 > len)
		return; /* bounded: a shorter preference is still one */
	snprintf(buf + l, len - l, "%s%s", l ? sep : "", s);
}

static void prefer_locked(uid_t uid, const struct placement_ds *ds, size_t n,
			  char *ret, size_t retlen, char *ret_nodes,
			  size_t nodeslen)
{
	char key[PLACEMENT_DATASETS_MAX][CACHEKEY_LEN + 1];
	char feat[PLACEMENT_DATASETS_MAX][DSFEATURE_LEN + 1];
	uint64_t held[PLACEMENT_DATASETS_MAX];
	size_t i, j, all = 0, best = (size_t)-1;

	ret[0] = '\0';
	if (ret_nodes)
		ret_nodes[0] = '\0';
	if (n > PLACEMENT_DATASETS_MAX)
		n = PLACEMENT_DATASETS_MAX;
	/* Per dataset, the variant more nodes hold: a user's own copy, or
	 * the public one everybody shares (usually only one exists). */
	for (i = 0; i < n; i++) {
		char ku[CACHEKEY_LEN + 1], kp[CACHEKEY_LEN + 1];
		size_t cu = 0, cp = 0;
		uint64_t bu = 0, bp = 0;
		const struct want *w;

		cachekey_user(uid, ds[i].path, ku);
		cachekey_public(ds[i].path, kp);
		if (ds[i].spread) {
			char whole[CACHEKEY_LEN + 1];

			snprintf(whole, sizeof(whole), "%s", ku);
			cachekey_part(whole, ku);
			snprintf(whole, sizeof(whole), "%s", kp);
			cachekey_part(whole, kp);
		}
		for (j = 0; j < nnodes; j++) {
			if ((w = holds_locked(&nodes[j], ku, ds[i].tier)))
				cu++, bu = w->bytes;
			if ((w = holds_locked(&nodes[j], kp, ds[i].tier)))
				cp++, bp = w->bytes;
		}
		snprintf(key[i], sizeof(key[i]), "%s", cp > cu ? kp : ku);
		held[i] = cp > cu ? (cp ? bp : 0) : (cu ? bu : 0);
		feat[i][0] = '\0';
		if (cu || cp)
			dsfeature_name(key[i], ds[i].tier, feat[i]);
		if (feat[i][0] && (best == (size_t)-1 || held[i] > held[best]))
			best = i;
	}
	if (best == (size_t)-1)
		return;
	/* Nodes holding every dataset: prefer all of them together. */
	for (j = 0; j < nnodes; j++) {
		bool every = true;

		for (i = 0; i < n && every; i++)
			every = feat[i][0] &&
				holds_locked(&nodes[j], key[i], ds[i].tier);
		if (every) {
			all++;
			if (ret_nodes)
				append(ret_nodes, nodeslen, ",", nodes[j].name);
		}
	}
	if (all) {
		for (i = 0; i < n; i++) {
			bool dup = false;

			for (j = 0; j < i && !dup; j++)
				dup = !strcmp(feat[j], feat[i]);
			if (!dup)
				append(ret, retlen, "&", feat[i]);
		}
		return;
	}
	/* None holds them all: the one with the most bytes to save. */
	append(ret, retlen, "&", feat[best]);
	for (j = 0; ret_nodes && j < nnodes; j++)
		if (holds_locked(&nodes[j], key[best], ds[best].tier))
			append(ret_nodes, nodeslen, ",", nodes[j].name);
}

void placement_prefer(uid_t uid, const struct placement_ds *ds, size_t n,
		      char *ret, size_t retlen, char *ret_nodes,
		      size_t nodeslen)
{
	pthread_mutex_lock(&mu);
	prefer_locked(uid, ds, n, ret, retlen, ret_nodes, nodeslen);
	pthread_mutex_unlock(&mu);
}

cJSON *placement_op_report(const struct ctld_caller *c, const cJSON *req)
{
	char err[CONF_ERR_MAX];
	const char *node;

	if (c->uid != 0)
		return proto_reply_error("cache_report: permission denied: "
					 "only root on a node reports its "
					 "cache");
	if (proto_get_string(req, "node", &node, err, sizeof(err)) < 0)
		return proto_reply_error("cache_report: %s", err);
	if (placement_report(node,
			     cJSON_GetObjectItemCaseSensitive(req, "entries"),
			     time(NULL), err, sizeof(err)) < 0)
		return proto_reply_error("%s", err);
	return proto_reply_ok();
}

cJSON *placement_op_holders(const struct ctld_caller *c, const cJSON *req)
{
	char err[CONF_ERR_MAX], holders[PLACEMENT_HOLDERS_MAX][CONF_NODE_MAX];
	const char *key, *tier;
	cJSON *reply, *arr;
	size_t n;

	if (c->uid != 0)
		return proto_reply_error("cache_holders: permission denied: "
					 "only root on a node asks where an "
					 "entry is");
	if (proto_get_string(req, "key", &key, err, sizeof(err)) < 0 ||
	    proto_get_string(req, "tier", &tier, err, sizeof(err)) < 0)
		return proto_reply_error("cache_holders: %s", err);
	if (strlen(key) != CACHEKEY_LEN || strlen(tier) >= CONF_NAME_MAX)
		return proto_reply_error("cache_holders: bad key or tier");
	n = placement_holders(key, tier, holders, PLACEMENT_HOLDERS_MAX);
	reply = proto_reply_ok();
	arr = reply ? cJSON_AddArrayToObject(reply, "nodes") : NULL;
	for (size_t i = 0; arr && i < n; i++)
		cJSON_AddItemToArray(arr, cJSON_CreateString(holders[i]));
	return reply;
}

cJSON *placement_op_query(const struct ctld_caller *c, const cJSON *req)
{
	struct placement_ds ds[PLACEMENT_DATASETS_MAX];
	struct pending_ds pds[PENDING_DS_MAX];
	char prefer[1024], where[4096], ticket[PENDING_TICKET_LEN + 1] = "";
	const cJSON *arr = cJSON_GetObjectItemCaseSensitive(req, "datasets");
	const cJSON *d;
	size_t n = 0, npds = 0;
	bool hold;
	cJSON *reply;

	if (!cJSON_IsArray(arr))
		return proto_reply_error("placement: 'datasets' must be an "
					 "array of {\"path\",\"tier\"}");
	cJSON_ArrayForEach(d, arr) {
		const cJSON *p = cJSON_GetObjectItemCaseSensitive(d, "path");
		const cJSON *t = cJSON_GetObjectItemCaseSensitive(d, "tier");

		if (n >= PLACEMENT_DATASETS_MAX)
			return proto_reply_error("placement: more than %d "
						 "datasets",
						 PLACEMENT_DATASETS_MAX);
		if (!cJSON_IsString(p) || p->valuestring[0] != '/' ||
		    strlen(p->valuestring) >= CONF_PATH_MAX ||
		    !cJSON_IsString(t) || !t->valuestring[0] ||
		    strlen(t->valuestring) >= CONF_NAME_MAX)
			return proto_reply_error("placement: dataset %zu "
						 "needs an absolute 'path' and "
						 "a 'tier'",
						 n);
		ds[n].path = p->valuestring;
		ds[n].tier = t->valuestring;
		ds[n].spread = cJSON_IsTrue(
		    cJSON_GetObjectItemCaseSensitive(d, "spread"));
		if (npds < PENDING_DS_MAX && !ds[n].spread) {
			const cJSON *v =
			    cJSON_GetObjectItemCaseSensitive(d, "verify");

			memset(&pds[npds], 0, sizeof(pds[npds]));
			snprintf(pds[npds].path, sizeof(pds[npds].path), "%s",
				 ds[n].path);
			snprintf(pds[npds].tier, sizeof(pds[npds].tier), "%s",
				 ds[n].tier);
			snprintf(pds[npds].verify, sizeof(pds[npds].verify),
				 "%s", cJSON_IsString(v) ? v->valuestring : "");
			npds++;
		}
		n++;
	}
	/* one critical section: a feature chosen for a held submission is
	 * noted before any publishing pass can withdraw it */
	pthread_mutex_lock(&mu);
	prefer_locked(c->uid, ds, n, prefer, sizeof(prefer), where,
		      sizeof(where));
	counts.queries++;
	if (prefer[0])
		counts.preferred++;
	hold = prefer[0] && hold_s;
	if (hold)
		note_handed_locked(prefer, time(NULL));
	pthread_mutex_unlock(&mu);
	/* The submission will tell us its job id with this ticket
	 * (pending.h): then its datasets can be staged while it waits. */
	if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(req, "register")) &&
	    npds &&
	    pending_ticket(c->uid, pds, npds, prefer, ticket, time(NULL)) < 0)
		ticket[0] = '\0';
	reply = proto_reply_ok();
	if (!reply)
		return NULL;
	cJSON_AddStringToObject(reply, "prefer", prefer);
	cJSON_AddStringToObject(reply, "nodes", where);
	if (hold)
		cJSON_AddTrueToObject(reply, "hold");
	if (ticket[0])
		cJSON_AddStringToObject(reply, "ticket", ticket);
	return reply;
}

void placement_count_outcome(bool honoured)
{
	pthread_mutex_lock(&mu);
	if (honoured)
		counts.honoured++;
	else
		counts.not_honoured++;
	pthread_mutex_unlock(&mu);
}

void placement_count_publish(bool ok)
{
	pthread_mutex_lock(&mu);
	if (ok)
		counts.publishes++;
	else
		counts.publish_errors++;
	pthread_mutex_unlock(&mu);
}

void placement_counts(struct placement_counts *ret)
{
	pthread_mutex_lock(&mu);
	*ret = counts;
	ret->nodes = (unsigned)nnodes;
	pthread_mutex_unlock(&mu);
}

void placement_reset(void)
{
	pthread_mutex_lock(&mu);
	free(nodes);
	nodes = NULL;
	nnodes = cap_nodes = 0;
	memset(&counts, 0, sizeof(counts));
	hold_s = 0;
	nhanded = handed_next = 0;
	pthread_mutex_unlock(&mu);
}

void placement_on_change(void (*fn)(void *arg), void *arg)
{
	pthread_mutex_lock(&mu);
	on_change = fn;
	on_change_arg = arg;
	pthread_mutex_unlock(&mu);
}
