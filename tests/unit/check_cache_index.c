/* check_cache_index.c - unit tests for the cache's keys, version names and
 * index (daemon/staging/cache_names.c, cache_index.c, cache_request.c's
 * listing): what a key is, which names are versions, what the current
 * version is and which number the next one gets, what a restart reloads,
 * what a Shared tier's rescan sees of another node, and that two caches
 * in one process know nothing of each other.
 *
 * Unprivileged: every cache is over tiers in a temporary directory and
 * owned by the test's own uid (tests/unit/cache_fixture.h).
 */
#define _GNU_SOURCE
#include <xxhash.h>

#include "tests/unit/cache_fixture.h"
#include "tests/unit/check_run.h"

#include "common/sched/cachekey.h"

/* K computed here, independently of cachekey.c: xxh3-128 of TEXT in
 * canonical (big-endian) hex. */
static void key_of_text(const char *text, char ret[CACHE_KEY_LEN + 1])
{
	XXH128_canonical_t c;
	size_t i;

	XXH128_canonicalFromHash(&c, XXH3_128bits(text, strlen(text)));
	for (i = 0; i < sizeof(c.digest); i++)
		snprintf(ret + 2 * i, 3, "%02x", c.digest[i]);
}

START_TEST(test_keys_per_user_and_public)
{
	char k[CACHE_KEY_LEN + 1], want[CACHE_KEY_LEN + 1],
	    other[CACHE_KEY_LEN + 1];

	cache_key(1000, "/pfs/imagenet", k);
	key_of_text("1000:/pfs/imagenet", want);
	ck_assert_str_eq(k, want);
	ck_assert(cache_is_key(k, strlen(k)));
	/* another user, another source: another entry */
	cache_key(1001, "/pfs/imagenet", other);
	ck_assert_str_ne(k, other);
	cache_key(1000, "/pfs/imagenet2", other);
	ck_assert_str_ne(k, other);
	/* the public key is the same for everyone, and nobody's own */
	cache_key_public("/pfs/imagenet", other);
	key_of_text("public:/pfs/imagenet", want);
	ck_assert_str_eq(other, want);
	ck_assert_str_ne(other, k);
	/* iostagectld computes the same (common/sched/cachekey.h) */
	cachekey_user(1000, "/pfs/imagenet", want);
	ck_assert_str_eq(k, want);
}
END_TEST

static const struct {
	const char *name;
	bool ok;
	unsigned version;
} version_names[] = {
	{ "0123456789abcdef0123456789abcdef.v1", true, 1 },
	{ "0123456789abcdef0123456789abcdef.v42", true, 42 },
	{ "0123456789abcdef0123456789abcdef.v999999999", true, 999999999 },
	{ "0123456789abcdef0123456789abcdef.v0", false, 0 },
	{ "0123456789abcdef0123456789abcdef.v01", false, 0 },
	{ "0123456789abcdef0123456789abcdef.v1234567890", false, 0 },
	{ "0123456789abcdef0123456789abcdef.v", false, 0 },
	{ "0123456789abcdef0123456789abcdef.v1x", false, 0 },
	{ "0123456789abcdef0123456789abcdef.v-1", false, 0 },
	{ "0123456789abcdef0123456789abcdef.w1", false, 0 },
	{ "0123456789ABCDEF0123456789abcdef.v1", false, 0 },
	{ "0123456789abcdef0123456789abcde.v1", false, 0 },
	{ "0123456789abcdef0123456789abcdefa.v1", false, 0 },
	{ "0123456789abcdef0123456789abcdef.lock", false, 0 },
	{ ".build.0123456789abcdef0123456789abcdef.v1.n1", false, 0 },
	{ "", false, 0 },
};

START_TEST(test_version_names_parsed_strictly)
{
	char key[CACHE_KEY_LEN + 1], back[CACHE_ENTRY_NAME_MAX];
	unsigned v = 0;
	bool ok;

	ok = cache_parse_version_name(version_names[_i].name, key, &v);
	ck_assert_msg(ok == version_names[_i].ok, "%s: %s",
		      version_names[_i].name, ok ? "taken" : "refused");
	if (!ok)
		return;
	ck_assert_uint_eq(v, version_names[_i].version);
	cache_version_name(key, v, back, sizeof(back));
	ck_assert_str_eq(back, version_names[_i].name);
}
END_TEST

START_TEST(test_temp_names_mine_by_node)
{
	struct fx f;

	fx_init(&f, "node1", 1, false);
	ck_assert(
	    cache_is_temp_name(f.c, ".build.K.v1.node1", ".build.", true));
	ck_assert(
	    !cache_is_temp_name(f.c, ".build.K.v1.node2", ".build.", true));
	/* a node whose name ends another's is not that node */
	ck_assert(
	    !cache_is_temp_name(f.c, ".build.K.v1.xnode1", ".build.", true));
	ck_assert(
	    cache_is_temp_name(f.c, ".build.K.v1.node2", ".build.", false));
	ck_assert(
	    !cache_is_temp_name(f.c, ".evict.K.v1.node1", ".build.", false));
	fx_fini(&f);
}
END_TEST

START_TEST(test_empty_key_has_no_version)
{
	struct cache_version cur;
	char k[CACHE_KEY_LEN + 1];
	unsigned next = 0;
	struct fx f;

	fx_init(&f, "node1", 1, false);
	cache_key(getuid(), "/pfs/none", k);
	ck_assert_int_eq(cache_current(f.c, 0, k, &cur, &next), 0);
	ck_assert_uint_eq(next, 1);
	fx_fini(&f);
}
END_TEST

START_TEST(test_versions_count_up_and_current_is_highest)
{
	struct cache_version cur;
	char k[CACHE_KEY_LEN + 1];
	unsigned next;
	struct fx f;

	fx_init(&f, "node1", 1, false);
	ck_assert_uint_eq(fx_build(&f, 0, "/pfs/a", 100, false, k), 1);
	ck_assert_uint_eq(fx_build(&f, 0, "/pfs/a", 250, false, NULL), 2);
	ck_assert_int_eq(cache_current(f.c, 0, k, &cur, &next), 1);
	ck_assert_uint_eq(cur.version, 2);
	ck_assert_uint_eq(cur.bytes, 250);
	ck_assert_uint_eq(cur.files, 1);
	ck_assert_int_eq(cur.verify, PROFILE_VERIFY_STAT);
	ck_assert_uint_eq(next, 3);
	/* both are indexed and accounted until v1 is collected */
	ck_assert_uint_eq(f.space.cache[0], 350);
	fx_fini(&f);
}
END_TEST

/* A number seen on disk under any name, complete or not, is never used
 * again: the next version goes above it. */
START_TEST(test_next_version_skips_numbers_on_disk)
{
	char k[CACHE_KEY_LEN + 1], name[CACHE_ENTRY_NAME_MAX];
	struct cache_version cur;
	unsigned next;
	struct fx f;

	fx_init(&f, "node1", 1, false);
	fx_build(&f, 0, "/pfs/a", 10, false, k);
	cache_version_name(k, 7, name, sizeof(name));
	ck_assert_int_eq(mkdirat(f.cache_fd[0], name, 0700), 0);
	ck_assert_int_eq(cache_current(f.c, 0, k, &cur, &next), 1);
	ck_assert_uint_eq(cur.version, 1); /* v7 is no version: no meta */
	ck_assert_uint_eq(next, 8);
	fx_fini(&f);
}
END_TEST

START_TEST(test_restart_reloads_the_index)
{
	char k[CACHE_KEY_LEN + 1];
	struct cache_version cur;
	unsigned next, n;
	struct fx f;
	/* a walk after the build (a verification is never older) */
	int64_t walk = cache_now_ns() + 5000000123LL;

	fx_init(&f, "node1", 2, false);
	fx_build(&f, 1, "/pfs/a", 300, false, k);
	cache_mark_verified(f.c, 1, k, 1, walk);
	ck_assert_int_eq(cache_current(f.c, 1, k, &cur, &next), 1);
	ck_assert_int_eq(cur.verified_ns, walk);
	fx_restart(&f);
	ck_assert_int_eq(cache_current(f.c, 1, k, &cur, &next), 1);
	ck_assert_uint_eq(cur.version, 1);
	ck_assert_uint_eq(cur.bytes, 300);
	ck_assert_int_eq(cur.verified, walk / 1000000000);
	/* meta.json's verified_ns (above proto_u64's 1e18) does not come
	 * back: the second is kept, never a later time */
	ck_assert_int_eq(cur.verified_ns, cur.verified * 1000000000LL);
	/* on its tier only */
	ck_assert_int_eq(cache_current(f.c, 0, k, &cur, &next), 0);
	cache_tier_counts(f.c, 1, &n, NULL);
	ck_assert_uint_eq(n, 1);
	cache_tier_counts(f.c, 0, &n, NULL);
	ck_assert_uint_eq(n, 0);
	ck_assert_uint_eq(f.space.cache[1], 300);
	ck_assert_uint_eq(f.space.cache[0], 0);
	fx_fini(&f);
}
END_TEST

/* Two nodes on one Shared tier: each sees what the other built or
 * removed at its next decision, without a restart. */
START_TEST(test_shared_tier_rescan_sees_other_nodes)
{
	char k[CACHE_KEY_LEN + 1], err[CONF_ERR_MAX];
	struct fx a, b;
	cJSON *ev;

	fx_init(&a, "n1", 1, true);
	fx_init_peer(&b, &a, "n2");
	ck_assert_uint_eq(fx_build(&a, 0, "/pfs/s", 64, false, k), 1);
	ck_assert_uint_eq(fx_current(&b, 0, k), 1);
	/* b's next build goes above a's */
	ck_assert_uint_eq(fx_build(&b, 0, "/pfs/s", 64, false, NULL), 2);
	ck_assert_uint_eq(fx_current(&a, 0, k), 2);
	ev = cache_evict(a.c, getuid(), k, NULL, getuid(), false, 0, err,
			 sizeof(err));
	ck_assert_msg(ev != NULL, "%s", err);
	ck_assert_int_eq(cJSON_GetArraySize(ev), 2);
	cJSON_Delete(ev);
	ck_assert_uint_eq(fx_current(&b, 0, k), 0);
	fx_fini(&b);
	fx_fini(&a);
}
END_TEST

/* A node-local tier's index is the truth between restarts: no listing
 * per decision (two nodes on one such tier are a misconfiguration). */
START_TEST(test_local_tier_is_not_rescanned)
{
	char k[CACHE_KEY_LEN + 1];
	struct fx a, b;

	fx_init(&a, "n1", 1, false);
	fx_init_peer(&b, &a, "n2");
	fx_build(&a, 0, "/pfs/l", 64, false, k);
	ck_assert_uint_eq(fx_current(&b, 0, k), 0);
	fx_restart(&b);
	ck_assert_uint_eq(fx_current(&b, 0, k), 1);
	fx_fini(&b);
	fx_fini(&a);
}
END_TEST

START_TEST(test_two_caches_are_independent)
{
	char k[CACHE_KEY_LEN + 1];
	uint64_t ga, gb;
	unsigned n;
	struct fx a, b;

	fx_init(&a, "node1", 1, false);
	fx_init(&b, "node1", 1, false);
	ga = cache_generation(a.c);
	gb = cache_generation(b.c);
	fx_build(&a, 0, "/pfs/a", 100, false, k);
	ck_assert_uint_eq(fx_current(&a, 0, k), 1);
	ck_assert_uint_eq(fx_current(&b, 0, k), 0);
	ck_assert_uint_gt(cache_generation(a.c), ga);
	ck_assert_uint_eq(cache_generation(b.c), gb);
	ck_assert_uint_eq(b.space.cache[0], 0);
	/* the same dataset built in b is b's own version 1 */
	fx_build(&b, 0, "/pfs/a", 7, false, NULL);
	fx_fini(&a);
	ck_assert_uint_eq(fx_current(&b, 0, k), 1);
	cache_tier_counts(b.c, 0, &n, NULL);
	ck_assert_uint_eq(n, 1);
	ck_assert_uint_eq(b.space.cache[0], 7);
	fx_fini(&b);
}
END_TEST

START_TEST(test_generation_moves_with_the_index_only)
{
	char k[CACHE_KEY_LEN + 1], err[CONF_ERR_MAX];
	uint64_t g0, g1, g2;
	struct fx f;
	cJSON *ev;

	fx_init(&f, "node1", 1, false);
	g0 = cache_generation(f.c);
	fx_build(&f, 0, "/pfs/a", 100, false, k);
	g1 = cache_generation(f.c);
	ck_assert_uint_ne(g1, g0);
	fx_pin(&f, 0, k, 1, 9);
	cache_mark_verified(f.c, 0, k, 1, cache_now_ns());
	ck_assert_uint_eq(cache_generation(f.c), g1);
	cache_unpin_job(f.c, 0, k, 9);
	ev = cache_evict(f.c, getuid(), k, NULL, getuid(), false, -1, err,
			 sizeof(err));
	ck_assert_msg(ev != NULL, "%s", err);
	cJSON_Delete(ev);
	g2 = cache_generation(f.c);
	ck_assert_uint_ne(g2, g1);
	fx_fini(&f);
}
END_TEST

/* The entry of KEY in a cache_ls array, or NULL. */
static const cJSON *ls_entry(const cJSON *ls, const char *key)
{
	const cJSON *e;

	cJSON_ArrayForEach(e, ls) {
		const cJSON *k = cJSON_GetObjectItemCaseSensitive(e, "key");

		if (cJSON_IsString(k) && !strcmp(k->valuestring, key))
			return e;
	}
	return NULL;
}

START_TEST(test_ls_shows_own_and_public_entries)
{
	char mine[CACHE_KEY_LEN + 1], pub[CACHE_KEY_LEN + 1];
	uid_t other = getuid() + 1;
	const cJSON *e, *pins;
	struct fx f;
	cJSON *ls;

	fx_init(&f, "node1", 1, false);
	fx_build(&f, 0, "/pfs/mine", 10, false, mine);
	fx_build(&f, 0, "/pfs/pub", 20, true, pub);
	fx_pin(&f, 0, pub, 1, 5);
	/* the owner: both */
	ls = cache_ls_json(f.c, getuid());
	ck_assert_ptr_nonnull(ls_entry(ls, mine));
	e = ls_entry(ls, pub);
	ck_assert_ptr_nonnull(e);
	ck_assert(cJSON_IsTrue(cJSON_GetObjectItem(e, "public")));
	ck_assert_str_eq(cJSON_GetObjectItem(e, "user")->valuestring,
			 CACHE_PUBLIC_USER);
	ck_assert_int_eq(cJSON_GetObjectItem(e, "pins")->valueint, 1);
	cJSON_Delete(ls);
	/* another user: the public one only, and not whose jobs pin it */
	ls = cache_ls_json(f.c, other);
	ck_assert_ptr_null(ls_entry(ls, mine));
	e = ls_entry(ls, pub);
	ck_assert_ptr_nonnull(e);
	ck_assert_int_eq(cJSON_GetObjectItem(e, "pins")->valueint, 1);
	pins = cJSON_GetObjectItem(e, "pinned_by");
	ck_assert_int_eq(cJSON_GetArraySize(pins), 0);
	cJSON_Delete(ls);
	/* root: everything, with the pins' names */
	ls = cache_ls_json(f.c, 0);
	ck_assert_ptr_nonnull(ls_entry(ls, mine));
	pins = cJSON_GetObjectItem(ls_entry(ls, pub), "pinned_by");
	ck_assert_int_eq(cJSON_GetArraySize(pins), 1);
	ck_assert_str_eq(cJSON_GetArrayItem(pins, 0)->valuestring, "node1.5");
	cJSON_Delete(ls);
	fx_fini(&f);
}
END_TEST

START_TEST(test_ls_marks_the_current_version)
{
	char k[CACHE_KEY_LEN + 1], name[CACHE_ENTRY_NAME_MAX];
	const cJSON *e;
	struct fx f;
	cJSON *ls;
	int seen = 0;

	fx_init(&f, "node1", 1, false);
	fx_build(&f, 0, "/pfs/a", 10, false, k);
	fx_pin(&f, 0, k, 1, 3); /* keeps v1 when v2 comes */
	fx_build(&f, 0, "/pfs/a", 10, false, NULL);
	ls = cache_ls_json(f.c, getuid());
	cJSON_ArrayForEach(e, ls) {
		unsigned v =
		    (unsigned)cJSON_GetObjectItem(e, "version")->valueint;

		cache_version_name(k, v, name, sizeof(name));
		ck_assert_str_eq(cJSON_GetObjectItem(e, "entry")->valuestring,
				 name);
		ck_assert(cJSON_IsTrue(cJSON_GetObjectItem(e, "current")) ==
			  (v == 2));
		seen++;
	}
	ck_assert_int_eq(seen, 2);
	cJSON_Delete(ls);
	fx_fini(&f);
}
END_TEST

static Suite *cache_index_suite(void)
{
	Suite *s = suite_create("cache_index");
	TCase *tc = tcase_create("core");

	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, test_keys_per_user_and_public);
	tcase_add_loop_test(tc, test_version_names_parsed_strictly, 0,
			    sizeof(version_names) / sizeof(version_names[0]));
	tcase_add_test(tc, test_temp_names_mine_by_node);
	tcase_add_test(tc, test_empty_key_has_no_version);
	tcase_add_test(tc, test_versions_count_up_and_current_is_highest);
	tcase_add_test(tc, test_next_version_skips_numbers_on_disk);
	tcase_add_test(tc, test_restart_reloads_the_index);
	tcase_add_test(tc, test_shared_tier_rescan_sees_other_nodes);
	tcase_add_test(tc, test_local_tier_is_not_rescanned);
	tcase_add_test(tc, test_two_caches_are_independent);
	tcase_add_test(tc, test_generation_moves_with_the_index_only);
	tcase_add_test(tc, test_ls_shows_own_and_public_entries);
	tcase_add_test(tc, test_ls_marks_the_current_version);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return check_run(cache_index_suite());
}
