/* check_forward.c - unit tests for the cluster parts that run a thread
 * (daemon/cluster/forward.c, cachereport.c) as objects of their agent:
 * none without a service (ControllerHost= empty); with one that does not
 * answer, a record put is on disk in that agent's outbox before
 * forward_put returns and stays there, each agent keeps its own outbox,
 * and destroying stops the thread (a ticker) whatever it was doing.
 *
 * The service is 127.0.0.1 on a port nobody listens on (found by binding
 * and closing it), so every send fails at connect and nothing leaves the
 * outbox; the tests assert only on what is on disk and on the return of
 * the calls, never on how long anything takes. Unprivileged.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <dirent.h>
#include <ftw.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <check.h>

#include "common/config/conf.h"
#include "daemon/agent.h"
#include "daemon/cluster/cachereport.h"
#include "daemon/cluster/forward.h"
#include "daemon/staging/cache.h"
#include "tests/unit/check_run.h"

struct node {
	char root[64];
	struct conf conf;
	struct agent agent;
};

static struct node n1, n2;

/* A local TCP port nothing listens on. */
static unsigned closed_port(void)
{
	struct sockaddr_in a = { .sin_family = AF_INET };
	socklen_t len = sizeof(a);
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	ck_assert_int_ge(fd, 0);
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	ck_assert_int_eq(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	ck_assert_int_eq(getsockname(fd, (struct sockaddr *)&a, &len), 0);
	close(fd);
	return ntohs(a.sin_port);
}

static void node_init(struct node *n, const char *name, bool service)
{
	memset(n, 0, sizeof(*n));
	snprintf(n->root, sizeof(n->root), "/tmp/check_forward.XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(n->root));
	conf_set_defaults(&n->conf);
	snprintf(n->conf.node_name, sizeof(n->conf.node_name), "%s", name);
	snprintf(n->conf.state_dir, sizeof(n->conf.state_dir), "%s/state",
		 n->root);
	ck_assert_int_eq(mkdir(n->conf.state_dir, 0700), 0);
	if (service) {
		snprintf(n->conf.controller_host,
			 sizeof(n->conf.controller_host), "127.0.0.1");
		n->conf.controller_port = closed_port();
	}
	n->agent.conf = &n->conf;
}

static int rm_one(const char *path, const struct stat *st, int flag,
		  struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(path);
}

static void node_fini(struct node *n)
{
	forward_destroy(n->agent.forward);
	cachereport_destroy(n->agent.cachereport);
	nftw(n->root, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

/* Entries (not directories, not dot files) in NODE's outbox. */
static int outbox_files(const struct node *n)
{
	char path[CONF_PATH_MAX + 16];
	struct dirent *de;
	DIR *d;
	int k = 0;

	snprintf(path, sizeof(path), "%s/outbox", n->conf.state_dir);
	d = opendir(path);
	if (!d)
		return -1;
	while ((de = readdir(d)))
		k += de->d_name[0] != '.' && de->d_type == DT_REG;
	closedir(d);
	return k;
}

static cJSON *record(uint32_t job, const char *node)
{
	cJSON *r = cJSON_CreateObject();

	cJSON_AddNumberToObject(r, "job", job);
	cJSON_AddStringToObject(r, "node", node);
	cJSON_AddNumberToObject(r, "end", 1700000000);
	return r;
}

START_TEST(test_no_service_no_forward)
{
	char err[CONF_ERR_MAX];
	struct forward *f = (struct forward *)&err; /* must be reset */

	node_init(&n1, "n1", false);
	ck_assert_int_eq(forward_create(&n1.agent, &f, err, sizeof(err)), 0);
	ck_assert_ptr_null(f);
	ck_assert(!forward_enabled(NULL));
	ck_assert_int_eq(forward_pending(NULL), 0);
	ck_assert_ptr_null(cachereport_create(&n1.agent));
	cachereport_now(NULL); /* a peer asking a node without one */
	ck_assert_int_eq(outbox_files(&n1), -1); /* no outbox made */
	node_fini(&n1);
}
END_TEST

/* A record put is in this agent's outbox when forward_put returns, and
 * stays while the service does not answer; the other agent's outbox is
 * its own. */
START_TEST(test_put_kept_per_agent)
{
	char err[CONF_ERR_MAX];
	cJSON *r1 = record(41, "n1"), *r2 = record(42, "n2");
	cJSON *r3 = record(43, "n2");

	node_init(&n1, "n1", true);
	node_init(&n2, "n2", true);
	ck_assert_msg(forward_create(&n1.agent, &n1.agent.forward, err,
				     sizeof(err)) == 0,
		      "forward_create: %s", err);
	ck_assert_msg(forward_create(&n2.agent, &n2.agent.forward, err,
				     sizeof(err)) == 0,
		      "forward_create: %s", err);
	ck_assert(forward_enabled(n1.agent.forward));
	ck_assert_int_eq(forward_put(n1.agent.forward, 41, r1, err,
				     sizeof(err)),
			 0);
	ck_assert_int_eq(forward_put(n2.agent.forward, 42, r2, err,
				     sizeof(err)),
			 0);
	ck_assert_int_eq(forward_put(n2.agent.forward, 43, r3, err,
				     sizeof(err)),
			 0);
	ck_assert_int_eq(forward_pending(n1.agent.forward), 1);
	ck_assert_int_eq(forward_pending(n2.agent.forward), 2);
	ck_assert_int_eq(outbox_files(&n1), 1);
	ck_assert_int_eq(outbox_files(&n2), 2);
	/* stopping leaves them for the next start */
	forward_destroy(n1.agent.forward);
	n1.agent.forward = NULL;
	ck_assert_int_eq(outbox_files(&n1), 1);
	/* which finds them again */
	ck_assert_int_eq(forward_create(&n1.agent, &n1.agent.forward, err,
					sizeof(err)),
			 0);
	ck_assert_int_eq(forward_pending(n1.agent.forward), 1);
	cJSON_Delete(r1);
	cJSON_Delete(r2);
	cJSON_Delete(r3);
	node_fini(&n1);
	node_fini(&n2);
}
END_TEST

/* An empty cache's space (it has no tiers). */
static int no_usage(void *arg, int tier, struct tiers_usage *ret)
{
	(void)arg;
	(void)tier;
	memset(ret, 0, sizeof(*ret));
	return 0;
}

static int no_reserve(void *arg, int tier, const char *dsname, uint64_t size,
		      char *err, size_t errlen)
{
	(void)arg;
	(void)tier;
	(void)size;
	snprintf(err, errlen, "no space for '%s'", dsname);
	return -1;
}

static void no_account(void *arg, int tier, int64_t delta)
{
	(void)arg;
	(void)tier;
	(void)delta;
}

/* Destroy right after create, and after pokes: the tickers stop. */
START_TEST(test_threads_stop)
{
	char err[CONF_ERR_MAX];
	cJSON *r = record(41, "n1");
	struct cache_params cp;

	node_init(&n1, "n1", true);
	memset(&cp, 0, sizeof(cp));
	cp.conf = &n1.conf; /* no tiers: an empty cache */
	for (int t = 0; t < CONF_MAX_TIERS; t++)
		cp.cache_fd[t] = cp.jobs_fd[t] = -1;
	cp.space = (struct cache_space){ .usage = no_usage,
					 .reserve = no_reserve,
					 .account = no_account };
	cp.owner_uid = geteuid();
	cp.owner_gid = getegid();
	n1.agent.cache = cache_create(&cp, err, sizeof(err));
	ck_assert_msg(n1.agent.cache != NULL, "cache_create: %s", err);
	for (int i = 0; i < 3; i++) {
		ck_assert_int_eq(forward_create(&n1.agent, &n1.agent.forward,
						err, sizeof(err)),
				 0);
		n1.agent.cachereport = cachereport_create(&n1.agent);
		ck_assert_ptr_nonnull(n1.agent.cachereport);
		if (i > 0) {
			cachereport_now(n1.agent.cachereport);
			ck_assert_int_eq(forward_put(n1.agent.forward, 41, r,
						     err, sizeof(err)),
					 0);
		}
		cachereport_destroy(n1.agent.cachereport);
		forward_destroy(n1.agent.forward);
		n1.agent.cachereport = NULL;
		n1.agent.forward = NULL;
	}
	/* the same record again: one entry, replaced */
	ck_assert_int_eq(outbox_files(&n1), 1);
	cache_destroy(n1.agent.cache);
	cJSON_Delete(r);
	node_fini(&n1);
}
END_TEST

static Suite *forward_suite(void)
{
	Suite *s = suite_create("forward");
	TCase *tc = tcase_create("forward");

	tcase_add_test(tc, test_no_service_no_forward);
	tcase_add_test(tc, test_put_kept_per_agent);
	tcase_add_test(tc, test_threads_stop);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return check_run(forward_suite());
}
