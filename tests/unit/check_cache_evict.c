/* check_cache_evict.c - unit tests for removing versions
 * (daemon/staging/cache_evict.c, cache_request.c's cache_evict): the
 * eviction order (a segmented LRU: one-use versions first, each class
 * least recently used first), the watermarks' slack (to CacheLowWatermark
 * with one-use versions only, to CacheHighWatermark for reused ones),
 * what is never evicted (pinned, being staged; for a pre-stage, anything
 * a job used), old versions collected, and eviction on request (all or
 * nothing, only one's own).
 *
 * The order and the stopping rule are tested as the pure functions they
 * are; cache_reserve on real versions of a tier whose size the fixture
 * sets (tests/unit/cache_fixture.h). Unprivileged.
 */
#define _GNU_SOURCE
#include "tests/unit/cache_fixture.h"
#include "tests/unit/check_run.h"

static struct cache_cand cand(const char *key, unsigned v, time_t last_used,
			      bool reused)
{
	struct cache_cand c;

	memset(&c, 0, sizeof(c));
	snprintf(c.key, sizeof(c.key), "%s", key);
	c.version = v;
	c.bytes = 100;
	c.last_used = last_used;
	c.reused = reused;
	return c;
}

START_TEST(test_order_one_use_first_then_least_recent)
{
	struct cache_cand c[] = {
		cand("reused-recent", 1, 5000, true),
		cand("once-recent", 1, 4000, false),
		cand("reused-old", 1, 1000, true),
		cand("once-old", 1, 2000, false),
		cand("once-old", 2, 2000, false), /* a tie: by version */
	};
	const char *want[] = { "once-old", "once-old", "once-recent",
			       "reused-old", "reused-recent" };
	size_t i;

	cache_evict_order(c, sizeof(c) / sizeof(c[0]));
	for (i = 0; i < sizeof(c) / sizeof(c[0]); i++)
		ck_assert_msg(!strcmp(c[i].key, want[i]), "%zu: %s, not %s", i,
			      c[i].key, want[i]);
	ck_assert_uint_eq(c[0].version, 1);
	ck_assert_uint_eq(c[1].version, 2);
	cache_evict_order(c, 0); /* nothing to order */
}
END_TEST

/* Capacity 1000, high 900, low 700. */
static const struct {
	bool reused;
	uint64_t used, free, size;
	bool enough;
} enough_cases[] = {
	{ false, 500, 500, 200, true },  /* 700 <= low */
	{ false, 600, 400, 200, false }, /* 800: above low, one-use goes */
	{ true, 600, 400, 200, true },   /* 800 <= high: reused ones stay */
	{ true, 800, 200, 200, false },  /* 1000 > high */
	{ true, 700, 300, 200, true },   /* exactly high */
	{ false, 100, 100, 200, false }, /* below both, but does not fit */
	{ true, 0, 0, 1, false },
};

START_TEST(test_enough_is_low_for_one_use_high_for_reused)
{
	struct cache_cand c = cand("k", 1, 0, enough_cases[_i].reused);

	ck_assert_msg(cache_evict_enough(&c, enough_cases[_i].used,
					 enough_cases[_i].free,
					 enough_cases[_i].size, 900,
					 700) == enough_cases[_i].enough,
		      "case %d", _i);
}
END_TEST

/* A tier of 1000 bytes, watermarks 90 and 70 %. */
static void small_tier(struct fx *f)
{
	f->space.capacity[0] = 1000;
	f->conf.cache_high_watermark = 90;
	f->conf.cache_low_watermark = 70;
}

/* A version of SRC, BYTES bytes, used by JOBS jobs (pinned, then
 * unpinned). */
static void version_used(struct fx *f, const char *src, uint64_t bytes,
			 unsigned jobs, char *key)
{
	unsigned j;

	fx_build(f, 0, src, bytes, false, key);
	for (j = 0; j < jobs; j++) {
		fx_pin(f, 0, key, 1, 100 + j);
		cache_unpin_job(f->c, 0, key, 100 + j);
	}
}

START_TEST(test_below_high_watermark_nothing_is_evicted)
{
	char a[CACHE_KEY_LEN + 1], err[CONF_ERR_MAX];
	struct fx f;

	fx_init(&f, "node1", 1, false);
	small_tier(&f);
	version_used(&f, "/pfs/a", 500, 1, a);
	ck_assert_int_eq(cache_reserve(f.c, 0, "d", 300, false, err,
				       sizeof(err)),
			 0);
	ck_assert(fx_version_exists(&f, 0, a, 1));
	ck_assert_uint_eq(f.space.reserved[0], 300);
	ck_assert_uint_eq(f.space.reserves, 1);
	fx_fini(&f);
}
END_TEST

/* Above the high watermark one-use versions go, least recently used
 * first, down to the low watermark; the reused one stays. */
START_TEST(test_one_use_versions_go_first_down_to_low)
{
	char old[CACHE_KEY_LEN + 1], recent[CACHE_KEY_LEN + 1],
	    reused[CACHE_KEY_LEN + 1], third[CACHE_KEY_LEN + 1],
	    err[CONF_ERR_MAX];
	time_t now = time(NULL);
	struct fx f;

	fx_init(&f, "node1", 1, false);
	small_tier(&f);
	version_used(&f, "/pfs/reused", 200, 2, reused);
	version_used(&f, "/pfs/recent", 200, 1, recent);
	version_used(&f, "/pfs/old", 200, 1, old);
	version_used(&f, "/pfs/third", 200, 1, third);
	/* the reused one is the least recently used of all */
	fx_set_last_used(&f, 0, reused, 1, now - 4000);
	fx_set_last_used(&f, 0, old, 1, now - 3000);
	fx_set_last_used(&f, 0, third, 1, now - 2000);
	fx_set_last_used(&f, 0, recent, 1, now - 1000);
	fx_restart(&f);
	ck_assert_uint_eq(f.space.cache[0], 800);
	/* 800 + 300 > 900: evict old (600 + 300 > 700), third (400 + 300
	 * <= 700): stop */
	ck_assert_int_eq(cache_reserve(f.c, 0, "d", 300, false, err,
				       sizeof(err)),
			 0);
	ck_assert(!fx_version_exists(&f, 0, old, 1));
	ck_assert(!fx_version_exists(&f, 0, third, 1));
	ck_assert(fx_version_exists(&f, 0, recent, 1));
	ck_assert(fx_version_exists(&f, 0, reused, 1));
	ck_assert_uint_eq(fx_count(&f, 0, ".evict."), 0);
	ck_assert_uint_eq(f.space.cache[0], 400);
	ck_assert_uint_eq(f.space.reserved[0], 300);
	fx_fini(&f);
}
END_TEST

/* The slack below the high watermark is made of one-use versions only:
 * a reused version goes only as far as the reservation needs. */
START_TEST(test_reused_versions_evicted_only_to_high)
{
	char once[CACHE_KEY_LEN + 1], r1[CACHE_KEY_LEN + 1],
	    r2[CACHE_KEY_LEN + 1], err[CONF_ERR_MAX];
	time_t now = time(NULL);
	struct fx f;

	fx_init(&f, "node1", 1, false);
	small_tier(&f);
	version_used(&f, "/pfs/once", 200, 1, once);
	version_used(&f, "/pfs/r1", 300, 2, r1);
	version_used(&f, "/pfs/r2", 300, 3, r2);
	fx_set_last_used(&f, 0, r1, 1, now - 3000);
	fx_set_last_used(&f, 0, r2, 1, now - 2000);
	fx_set_last_used(&f, 0, once, 1, now - 1000);
	fx_restart(&f);
	/* 800 + 300 > 900: once goes (600 + 300 > 700), then r1 would be
	 * next, but 600 + 300 <= 900 for a reused one: stop */
	ck_assert_int_eq(cache_reserve(f.c, 0, "d", 300, false, err,
				       sizeof(err)),
			 0);
	ck_assert(!fx_version_exists(&f, 0, once, 1));
	ck_assert(fx_version_exists(&f, 0, r1, 1));
	ck_assert(fx_version_exists(&f, 0, r2, 1));
	/* more than high allows: r1, the least recent reused, goes */
	ck_assert_int_eq(cache_reserve(f.c, 0, "e", 100, false, err,
				       sizeof(err)),
			 0);
	ck_assert(!fx_version_exists(&f, 0, r1, 1));
	ck_assert(fx_version_exists(&f, 0, r2, 1));
	fx_fini(&f);
}
END_TEST

/* What a job pins is never evicted, however old; a dataset that cannot
 * fit without it is refused. */
START_TEST(test_pinned_never_evicted)
{
	char pinned[CACHE_KEY_LEN + 1], other[CACHE_KEY_LEN + 1],
	    err[CONF_ERR_MAX];
	time_t now = time(NULL);
	struct fx f;

	fx_init(&f, "node1", 1, false);
	small_tier(&f);
	fx_build(&f, 0, "/pfs/pinned", 500, false, pinned);
	fx_pin(&f, 0, pinned, 1, 1);
	version_used(&f, "/pfs/other", 300, 1, other);
	fx_set_last_used(&f, 0, pinned, 1, now - 5000);
	fx_known_jobs[fx_nknown++] = 1; /* job 1 still runs */
	fx_restart(&f);
	ck_assert_int_eq(cache_reserve(f.c, 0, "d", 400, false, err,
				       sizeof(err)),
			 0);
	ck_assert(fx_version_exists(&f, 0, pinned, 1));
	ck_assert(!fx_version_exists(&f, 0, other, 1));
	/* 500 pinned + 400 reserved: 100 left, nothing to evict */
	errno = 0;
	ck_assert_int_eq(cache_reserve(f.c, 0, "big", 200, false, err,
				       sizeof(err)),
			 -1);
	ck_assert_int_eq(errno, ENOSPC);
	ck_assert_str_eq(err, "tier 't0' full: dataset 'big' needs 200 B, "
			      "100 B free after eviction");
	ck_assert(fx_version_exists(&f, 0, pinned, 1));
	ck_assert_uint_eq(f.space.reserved[0], 400);
	fx_fini(&f);
}
END_TEST

/* A version whose K.lock is held (being staged or verified) is skipped:
 * the next one goes instead. */
START_TEST(test_busy_version_skipped)
{
	char busy[CACHE_KEY_LEN + 1], next[CACHE_KEY_LEN + 1],
	    err[CONF_ERR_MAX];
	time_t now = time(NULL);
	struct cache_lock *lk;
	struct fx f;

	fx_init(&f, "node1", 1, false);
	small_tier(&f);
	version_used(&f, "/pfs/busy", 400, 1, busy);
	version_used(&f, "/pfs/next", 400, 1, next);
	fx_set_last_used(&f, 0, busy, 1, now - 2000);
	fx_set_last_used(&f, 0, next, 1, now - 1000);
	fx_restart(&f);
	ck_assert_int_eq(cache_lock_acquire(f.c, 0, busy, NULL, NULL, &lk, err,
					    sizeof(err)),
			 0);
	ck_assert_int_eq(cache_reserve(f.c, 0, "d", 300, false, err,
				       sizeof(err)),
			 0);
	ck_assert(fx_version_exists(&f, 0, busy, 1));
	ck_assert(!fx_version_exists(&f, 0, next, 1));
	cache_lock_release(lk);
	fx_fini(&f);
}
END_TEST

/* A pre-stage (a prediction) evicts only what no job has used. */
START_TEST(test_prestage_evicts_only_unused)
{
	char unused[CACHE_KEY_LEN + 1], used[CACHE_KEY_LEN + 1],
	    err[CONF_ERR_MAX];
	struct fx f;

	fx_init(&f, "node1", 1, false);
	small_tier(&f);
	version_used(&f, "/pfs/used", 400, 1, used);
	version_used(&f, "/pfs/unused", 400, 0, unused); /* a warm-up */
	ck_assert_int_eq(cache_reserve(f.c, 0, "p", 300, true, err,
				       sizeof(err)),
			 0);
	ck_assert(!fx_version_exists(&f, 0, unused, 1));
	ck_assert(fx_version_exists(&f, 0, used, 1));
	/* one that needs the used one too is refused, saying why */
	ck_assert_int_eq(cache_reserve(f.c, 0, "q", 400, true, err,
				       sizeof(err)),
			 -1);
	ck_assert_ptr_nonnull(
	    strstr(err, "(a pre-stage evicts only data no job has used)"));
	ck_assert(fx_version_exists(&f, 0, used, 1));
	/* a job's own staging may */
	ck_assert_int_eq(cache_reserve(f.c, 0, "j", 400, false, err,
				       sizeof(err)),
			 0);
	ck_assert(!fx_version_exists(&f, 0, used, 1));
	fx_fini(&f);
}
END_TEST

START_TEST(test_candidates_leave_out_pinned)
{
	char a[CACHE_KEY_LEN + 1], b[CACHE_KEY_LEN + 1], c[CACHE_KEY_LEN + 1];
	struct cache_cand *cs;
	uint64_t bytes;
	size_t n;
	struct fx f;

	fx_init(&f, "node1", 1, false);
	version_used(&f, "/pfs/a", 10, 0, a);
	version_used(&f, "/pfs/b", 20, 2, b);
	fx_build(&f, 0, "/pfs/c", 40, false, c);
	fx_pin(&f, 0, c, 1, 77);
	cs = cache_evict_candidates(f.c, 0, false, &n, &bytes);
	ck_assert_uint_eq(n, 2);
	ck_assert_uint_eq(bytes, 30);
	ck_assert_str_eq(cs[0].key, a); /* one-use (never used) first */
	ck_assert(!cs[0].reused);
	ck_assert_str_eq(cs[1].key, b);
	ck_assert(cs[1].reused);
	free(cs);
	cs = cache_evict_candidates(f.c, 0, true, &n, &bytes);
	ck_assert_uint_eq(n, 1);
	ck_assert_str_eq(cs[0].key, a);
	free(cs);
	fx_fini(&f);
}
END_TEST

/* Old versions go once nobody pins them; the current one stays. */
START_TEST(test_old_versions_collected_when_unpinned)
{
	char k[CACHE_KEY_LEN + 1];
	struct fx f;

	fx_init(&f, "node1", 1, false);
	fx_build(&f, 0, "/pfs/a", 10, false, k);
	fx_pin(&f, 0, k, 1, 1);
	fx_build(&f, 0, "/pfs/a", 10, false, NULL);
	fx_build(&f, 0, "/pfs/a", 10, false, NULL);
	cache_gc_key(f.c, 0, k);
	ck_assert(fx_version_exists(&f, 0, k, 1)); /* pinned */
	ck_assert(!fx_version_exists(&f, 0, k, 2));
	ck_assert(fx_version_exists(&f, 0, k, 3)); /* current */
	cache_unpin_job(f.c, 0, k, 1);
	ck_assert(!fx_version_exists(&f, 0, k, 1));
	ck_assert(fx_version_exists(&f, 0, k, 3));
	ck_assert_uint_eq(f.space.cache[0], 10);
	fx_fini(&f);
}
END_TEST

/* On request: all or nothing, one's own only, public ones by root. */
START_TEST(test_evict_on_request)
{
	char k[CACHE_KEY_LEN + 1], pub[CACHE_KEY_LEN + 1], err[CONF_ERR_MAX];
	uid_t me = getuid(), other = getuid() + 1;
	struct fx f;
	cJSON *ev;

	fx_init(&f, "node1", 1, false);
	fx_build(&f, 0, "/pfs/a", 10, false, k);
	fx_pin(&f, 0, k, 1, 1);
	fx_build(&f, 0, "/pfs/a", 20, false, NULL);
	fx_build(&f, 0, "/pfs/p", 30, true, pub);
	/* v1 is pinned: neither goes */
	ev = cache_evict(f.c, me, NULL, "/pfs/a", me, false, -1, err,
			 sizeof(err));
	ck_assert_ptr_null(ev);
	ck_assert_ptr_nonnull(strstr(err, "is pinned by node1.1"));
	ck_assert(fx_version_exists(&f, 0, k, 2));
	/* somebody else's */
	ev = cache_evict(f.c, other, k, NULL, other, false, -1, err,
			 sizeof(err));
	ck_assert_ptr_null(ev);
	ck_assert_ptr_nonnull(strstr(err, "permission denied"));
	/* a public one, by a user */
	ev = cache_evict(f.c, other, pub, NULL, other, false, -1, err,
			 sizeof(err));
	ck_assert_ptr_null(ev);
	ck_assert_ptr_nonnull(strstr(err, "only root may evict it"));
	ck_assert(fx_version_exists(&f, 0, pub, 1));
	/* nothing of that source */
	ev = cache_evict(f.c, me, NULL, "/pfs/none", me, false, 0, err,
			 sizeof(err));
	ck_assert_ptr_null(ev);
	ck_assert_str_eq(err, "no cache entry for source /pfs/none on tier t0");
	/* unpinned, the old version goes by itself; then the current */
	cache_unpin_job(f.c, 0, k, 1);
	ck_assert(!fx_version_exists(&f, 0, k, 1));
	ev = cache_evict(f.c, me, NULL, "/pfs/a", me, false, -1, err,
			 sizeof(err));
	ck_assert_msg(ev != NULL, "%s", err);
	ck_assert_int_eq(cJSON_GetArraySize(ev), 1);
	ck_assert_int_eq(
	    cJSON_GetObjectItem(cJSON_GetArrayItem(ev, 0), "bytes")->valueint,
	    20);
	cJSON_Delete(ev);
	ck_assert_uint_eq(fx_current(&f, 0, k), 0);
	ck_assert_uint_eq(fx_count(&f, 0, k), 0); /* nor its K.lock */
	ck_assert_uint_eq(f.space.cache[0], 30);
	fx_fini(&f);
}
END_TEST

static Suite *cache_evict_suite(void)
{
	Suite *s = suite_create("cache_evict");
	TCase *tc = tcase_create("core");

	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, test_order_one_use_first_then_least_recent);
	tcase_add_loop_test(tc, test_enough_is_low_for_one_use_high_for_reused,
			    0, sizeof(enough_cases) / sizeof(enough_cases[0]));
	tcase_add_test(tc, test_below_high_watermark_nothing_is_evicted);
	tcase_add_test(tc, test_one_use_versions_go_first_down_to_low);
	tcase_add_test(tc, test_reused_versions_evicted_only_to_high);
	tcase_add_test(tc, test_pinned_never_evicted);
	tcase_add_test(tc, test_busy_version_skipped);
	tcase_add_test(tc, test_prestage_evicts_only_unused);
	tcase_add_test(tc, test_candidates_leave_out_pinned);
	tcase_add_test(tc, test_old_versions_collected_when_unpinned);
	tcase_add_test(tc, test_evict_on_request);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return check_run(cache_evict_suite());
}
