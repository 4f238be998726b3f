/* check_bwgov.c - unit tests for daemon/staging/bwgov.c, the node's share
 * of StageBandwidth= among its copies: unbounded without a budget, the
 * whole budget without a service, a starting job's copy weighing 4 to a
 * pre-stage's 1, the share given back as copies end, the rate page sealed
 * against the worker, two governors in one process, and NULL. Without
 * ControllerHost= no thread runs and nothing is asked of the network. */
#define _GNU_SOURCE
#include <stdatomic.h>
#include <stdint.h>
#include <sys/mman.h>
#include <unistd.h>

#include <check.h>

#include "common/base/log.h"
#include "common/config/conf.h"
#include "common/sched/bwshare.h"
#include "daemon/staging/bwgov.h"
#include "tests/unit/check_run.h"

#define BUDGET 1000000ULL /* bytes/s, a multiple of 5 and of 4 */

static struct conf conf;

static void setup(void)
{
	log_init("check_bwgov", false, LOG_LEVEL_ERROR);
	conf_set_defaults(&conf);
	conf.stage_bandwidth = BUDGET;
	conf.controller_host[0] = '\0'; /* the node is the cluster */
}

/* The rate the worker of the copy whose page is FD reads. */
struct page {
	int fd;
	const _Atomic uint64_t *rate;
};

static void page_map(struct page *p, int fd)
{
	void *m;

	ck_assert_int_ge(fd, 0);
	m = mmap(NULL, (size_t)sysconf(_SC_PAGESIZE), PROT_READ, MAP_SHARED, fd,
		 0);
	ck_assert(m != MAP_FAILED);
	p->fd = fd;
	p->rate = m;
}

static void page_unmap(struct page *p)
{
	munmap((void *)p->rate, (size_t)sysconf(_SC_PAGESIZE));
	close(p->fd);
}

static uint64_t rate(const struct page *p)
{
	return atomic_load(p->rate);
}

START_TEST(test_unbounded)
{
	struct bwgov_slot *slot = (void *)1;
	struct bwgov_status st;
	struct bwgov *g;

	conf.stage_bandwidth = 0;
	g = bwgov_create(NULL, &conf);
	ck_assert_ptr_nonnull(g);
	ck_assert_int_eq(bwgov_begin(g, false, &slot), -1);
	ck_assert_ptr_null(slot);
	bwgov_end(g, slot);
	bwgov_status(g, &st);
	ck_assert(!st.bounded);
	ck_assert_uint_eq(st.copies, 0);
	bwgov_destroy(g);
}
END_TEST

/* One copy takes the node's whole share; a pre-stage joining takes one
 * part in five, the job's copy four; when the job's copy ends the
 * pre-stage has it all. */
START_TEST(test_weights)
{
	struct bwgov_slot *job, *pre;
	struct bwgov_status st;
	struct page pj, pp;
	struct bwgov *g = bwgov_create(NULL, &conf);

	ck_assert_ptr_nonnull(g);
	page_map(&pj, bwgov_begin(g, false, &job));
	ck_assert_ptr_nonnull(job);
	ck_assert_uint_eq(rate(&pj), BUDGET);
	page_map(&pp, bwgov_begin(g, true, &pre));
	ck_assert_ptr_nonnull(pre);
	ck_assert_uint_eq(rate(&pj), BUDGET /
					 (BWSHARE_WEIGHT_STAGING +
					  BWSHARE_WEIGHT_PRESTAGE) *
					 BWSHARE_WEIGHT_STAGING);
	ck_assert_uint_eq(rate(&pp), BUDGET /
					 (BWSHARE_WEIGHT_STAGING +
					  BWSHARE_WEIGHT_PRESTAGE) *
					 BWSHARE_WEIGHT_PRESTAGE);
	ck_assert_uint_gt(rate(&pj), rate(&pp));
	bwgov_status(g, &st);
	ck_assert(st.bounded);
	ck_assert(!st.fallback);
	ck_assert_uint_eq(st.budget, BUDGET);
	ck_assert_uint_eq(st.node_share, BUDGET);
	ck_assert_uint_eq(st.copies, 2);
	bwgov_end(g, job);
	ck_assert_uint_eq(rate(&pp), BUDGET);
	bwgov_end(g, pre);
	bwgov_status(g, &st);
	ck_assert_uint_eq(st.copies, 0);
	ck_assert_uint_eq(st.node_share, 0); /* not copying: none shown */
	page_unmap(&pj);
	page_unmap(&pp);
	bwgov_destroy(g);
}
END_TEST

/* Equal copies share equally, and never above the budget in sum. */
START_TEST(test_equal_copies)
{
	struct bwgov_slot *s[4];
	struct page p[4];
	struct bwgov *g = bwgov_create(NULL, &conf);
	uint64_t sum = 0;
	int i;

	for (i = 0; i < 4; i++)
		page_map(&p[i], bwgov_begin(g, false, &s[i]));
	for (i = 0; i < 4; i++) {
		ck_assert_uint_eq(rate(&p[i]), BUDGET / 4);
		sum += rate(&p[i]);
	}
	ck_assert_uint_le(sum, BUDGET);
	for (i = 0; i < 4; i++) {
		bwgov_end(g, s[i]);
		page_unmap(&p[i]);
	}
	bwgov_destroy(g);
}
END_TEST

/* The worker's copy of the page can never be made writable: the daemon
 * never acts on what a job's user could write. */
START_TEST(test_page_sealed)
{
	struct bwgov_slot *slot;
	struct bwgov *g = bwgov_create(NULL, &conf);
	int fd = bwgov_begin(g, false, &slot);

	ck_assert_int_ge(fd, 0);
	ck_assert(mmap(NULL, (size_t)sysconf(_SC_PAGESIZE),
		       PROT_READ | PROT_WRITE, MAP_SHARED, fd,
		       0) == MAP_FAILED);
	ck_assert_int_eq(ftruncate(fd, 0), -1);
	close(fd);
	bwgov_end(g, slot);
	bwgov_destroy(g);
}
END_TEST

/* Two governors (two agents) do not share copies; NULL is "unbounded". */
START_TEST(test_two_and_null)
{
	struct conf conf2 = conf;
	struct bwgov *a, *b;
	struct bwgov_slot *sa, *sb, *sn = (void *)1;
	struct bwgov_status st;
	struct page pa, pb;

	conf2.stage_bandwidth = 2 * BUDGET;
	a = bwgov_create(NULL, &conf);
	b = bwgov_create(NULL, &conf2);
	page_map(&pa, bwgov_begin(a, false, &sa));
	page_map(&pb, bwgov_begin(b, true, &sb));
	ck_assert_uint_eq(rate(&pa), BUDGET);
	ck_assert_uint_eq(rate(&pb), 2 * BUDGET);
	bwgov_status(a, &st);
	ck_assert_uint_eq(st.copies, 1);
	ck_assert_int_eq(bwgov_begin(NULL, false, &sn), -1);
	ck_assert_ptr_null(sn);
	bwgov_end(NULL, sa); /* no-op */
	bwgov_status(NULL, &st);
	ck_assert(!st.bounded);
	ck_assert_uint_eq(st.copies, 0);
	bwgov_end(a, sa);
	bwgov_end(b, sb);
	page_unmap(&pa);
	page_unmap(&pb);
	bwgov_destroy(a);
	bwgov_destroy(b);
	bwgov_destroy(NULL);
}
END_TEST

static Suite *bwgov_suite(void)
{
	Suite *s = suite_create("bwgov");
	TCase *tc = tcase_create("core");

	tcase_add_checked_fixture(tc, setup, NULL);
	tcase_add_test(tc, test_unbounded);
	tcase_add_test(tc, test_weights);
	tcase_add_test(tc, test_equal_copies);
	tcase_add_test(tc, test_page_sealed);
	tcase_add_test(tc, test_two_and_null);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return check_run(bwgov_suite());
}
