/* check_cache_lock.c - unit tests for K.lock (daemon/staging/cache_lock.c):
 * one holder of a key at a time, giving up when asked, and a key's lock
 * file removed with its last version on a node-local tier (kept on a
 * Shared one, removed at start when a crash left it) without ever letting
 * two holders in: a waiter that gets the flock of a file its last holder
 * removed must notice and take the new one.
 *
 * Unprivileged (tests/unit/cache_fixture.h).
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>

#include "tests/unit/cache_fixture.h"
#include "tests/unit/check_run.h"

#include <sys/file.h>

static void key_of(const char *src, char k[CACHE_KEY_LEN + 1])
{
	cache_key(getuid(), src, k);
}

START_TEST(test_one_holder_at_a_time)
{
	char k[CACHE_KEY_LEN + 1], k2[CACHE_KEY_LEN + 1], err[CONF_ERR_MAX];
	struct cache_lock *a, *b;
	struct fx f;

	fx_init(&f, "node1", 1, false);
	key_of("/pfs/a", k);
	ck_assert_int_eq(cache_lock_acquire(f.c, 0, k, NULL, NULL, &a, err,
					    sizeof(err)),
			 0);
	ck_assert_ptr_null(cache_lock_try(f.c, 0, k));
	/* another key is another lock */
	key_of("/pfs/b", k2);
	b = cache_lock_try(f.c, 0, k2);
	ck_assert_ptr_nonnull(b);
	cache_lock_release(b);
	cache_lock_release(a);
	b = cache_lock_try(f.c, 0, k);
	ck_assert_ptr_nonnull(b);
	cache_lock_release(b);
	cache_lock_release(NULL);
	fx_fini(&f);
}
END_TEST

struct stopper {
	unsigned asked, answer_at;
};

static bool stop_after(void *arg, char *why, size_t len)
{
	struct stopper *s = arg;

	if (++s->asked < s->answer_at)
		return false;
	snprintf(why, len, "job 7 cancelled");
	return true;
}

START_TEST(test_waiting_gives_up_when_told)
{
	char k[CACHE_KEY_LEN + 1], err[CONF_ERR_MAX];
	struct stopper st = { 0, 2 };
	struct cache_lock *a, *b = NULL;
	struct fx f;

	fx_init(&f, "node1", 1, false);
	key_of("/pfs/a", k);
	ck_assert_int_eq(cache_lock_acquire(f.c, 0, k, NULL, NULL, &a, err,
					    sizeof(err)),
			 0);
	ck_assert_int_eq(cache_lock_acquire(f.c, 0, k, stop_after, &st, &b, err,
					    sizeof(err)),
			 -1);
	ck_assert_ptr_null(b);
	ck_assert_uint_eq(st.asked, 2);
	ck_assert_str_eq(err, "job 7 cancelled");
	/* the holder still holds it */
	ck_assert_ptr_null(cache_lock_try(f.c, 0, k));
	cache_lock_release(a);
	fx_fini(&f);
}
END_TEST

/* A K.lock that is not a regular file of the cache's owner is refused,
 * never followed. */
START_TEST(test_foreign_lock_file_refused)
{
	char k[CACHE_KEY_LEN + 1], name[CACHE_LOCK_NAME_MAX], err[CONF_ERR_MAX];
	struct cache_lock *lk = NULL;
	struct fx f;

	fx_init(&f, "node1", 1, false);
	key_of("/pfs/a", k);
	cache_lock_name(k, name, sizeof(name));
	ck_assert_int_eq(symlinkat("/tmp/elsewhere", f.cache_fd[0], name), 0);
	ck_assert_int_eq(cache_lock_acquire(f.c, 0, k, NULL, NULL, &lk, err,
					    sizeof(err)),
			 -1);
	ck_assert_ptr_nonnull(strstr(err, "cannot use"));
	ck_assert_ptr_null(cache_lock_try(f.c, 0, k));
	ck_assert_int_eq(unlinkat(f.cache_fd[0], name, 0), 0);
	ck_assert_int_eq(mkdirat(f.cache_fd[0], name, 0700), 0);
	ck_assert_int_eq(cache_lock_acquire(f.c, 0, k, NULL, NULL, &lk, err,
					    sizeof(err)),
			 -1);
	ck_assert_ptr_nonnull(strstr(err, "cannot use"));
	fx_fini(&f);
}
END_TEST

/* Issue 28: lock files went on piling up, one per dataset ever staged.
 * The holder removes K.lock when K has no version left. */
START_TEST(test_lock_file_goes_with_the_last_version)
{
	char k[CACHE_KEY_LEN + 1], err[CONF_ERR_MAX];
	struct cache_lock *lk;
	struct fx f;
	cJSON *ev;

	fx_init(&f, "node1", 1, false);
	key_of("/pfs/a", k);
	/* a stage that built nothing (failed) */
	ck_assert_int_eq(cache_lock_acquire(f.c, 0, k, NULL, NULL, &lk, err,
					    sizeof(err)),
			 0);
	ck_assert(fx_lock_exists(&f, 0, k));
	cache_lock_release(lk);
	ck_assert(!fx_lock_exists(&f, 0, k));
	/* a key with a version keeps it */
	fx_build(&f, 0, "/pfs/a", 10, false, NULL);
	ck_assert(fx_lock_exists(&f, 0, k));
	/* the last version evicted: gone with it */
	ev = cache_evict(f.c, getuid(), k, NULL, getuid(), false, 0, err,
			 sizeof(err));
	ck_assert_msg(ev != NULL, "%s", err);
	cJSON_Delete(ev);
	ck_assert(!fx_lock_exists(&f, 0, k));
	/* unpinning a key never staged leaves nothing either */
	cache_unpin_job(f.c, 0, k, 4);
	ck_assert_uint_eq(fx_count(&f, 0, ".lock"), 0);
	fx_fini(&f);
}
END_TEST

/* On a Shared tier other nodes may wait on it, out of sight: kept. */
START_TEST(test_lock_file_kept_on_shared_tier)
{
	char k[CACHE_KEY_LEN + 1], err[CONF_ERR_MAX];
	struct cache_lock *lk;
	struct fx f;

	fx_init(&f, "node1", 1, true);
	key_of("/pfs/a", k);
	ck_assert_int_eq(cache_lock_acquire(f.c, 0, k, NULL, NULL, &lk, err,
					    sizeof(err)),
			 0);
	cache_lock_release(lk);
	ck_assert(fx_lock_exists(&f, 0, k));
	fx_fini(&f);
}
END_TEST

/* The classic race, step by step: W opened K.lock and waits; the holder
 * removes it and unlocks; N creates and locks a new K.lock; W now gets
 * the flock of the old file. It must see that the name leads elsewhere
 * -- even when the old file is still linked somewhere, so that nlink
 * alone would not tell. */
START_TEST(test_waiter_of_a_removed_lock_file_sees_it)
{
	char k[CACHE_KEY_LEN + 1], name[CACHE_LOCK_NAME_MAX], err[CONF_ERR_MAX];
	struct cache_lock *holder, *newcomer;
	struct fx f;
	int waiter;

	fx_init(&f, "node1", 1, false);
	key_of("/pfs/race", k);
	cache_lock_name(k, name, sizeof(name));
	ck_assert_int_eq(cache_lock_acquire(f.c, 0, k, NULL, NULL, &holder, err,
					    sizeof(err)),
			 0);
	waiter = openat(f.cache_fd[0], name, O_RDWR | O_CLOEXEC);
	ck_assert_int_ge(waiter, 0);
	ck_assert_int_eq(flock(waiter, LOCK_EX | LOCK_NB), -1);
	ck_assert(cache_lock_still_named(f.c, 0, k, waiter));
	/* kept linked elsewhere: nlink stays 1 after the removal */
	ck_assert_int_eq(linkat(f.cache_fd[0], name, f.cache_fd[0], "keep", 0),
			 0);
	cache_lock_release(holder); /* no version: removes K.lock */
	ck_assert(!fx_lock_exists(&f, 0, k));
	ck_assert_int_eq(cache_lock_acquire(f.c, 0, k, NULL, NULL, &newcomer,
					    err, sizeof(err)),
			 0);
	ck_assert_int_eq(flock(waiter, LOCK_EX | LOCK_NB), 0);
	ck_assert(!cache_lock_still_named(f.c, 0, k, waiter));
	ck_assert(cache_lock_still_named(f.c, 0, k, newcomer->fd));
	/* so the real waiter reopens and waits on the newcomer's file */
	ck_assert_ptr_null(cache_lock_try(f.c, 0, k));
	close(waiter);
	cache_lock_release(newcomer);
	fx_fini(&f);
}
END_TEST

/* Many threads locking one key whose file every release removes (no
 * version): never two holders, and no file left at the end. */
#define RACE_THREADS 6
#define RACE_ROUNDS 300

struct race {
	struct fx *f;
	char key[CACHE_KEY_LEN + 1];
	int inside, max_inside;
	unsigned taken;
	pthread_mutex_t mu;
};

static void *racer(void *arg)
{
	struct race *r = arg;
	struct cache_lock *lk;
	char err[CONF_ERR_MAX];
	unsigned i;

	for (i = 0; i < RACE_ROUNDS; i++) {
		if (i % 50 == 0) {
			if (cache_lock_acquire(r->f->c, 0, r->key, NULL, NULL,
					       &lk, err, sizeof(err)) < 0)
				lk = NULL;
		} else {
			lk = cache_lock_try(r->f->c, 0, r->key);
		}
		if (!lk) {
			sched_yield();
			continue;
		}
		pthread_mutex_lock(&r->mu);
		r->inside++;
		if (r->inside > r->max_inside)
			r->max_inside = r->inside;
		r->taken++;
		pthread_mutex_unlock(&r->mu);
		sched_yield();
		pthread_mutex_lock(&r->mu);
		r->inside--;
		pthread_mutex_unlock(&r->mu);
		cache_lock_release(lk);
	}
	return NULL;
}

START_TEST(test_concurrent_lockers_never_both_hold)
{
	pthread_t th[RACE_THREADS];
	struct race r;
	struct fx f;
	int i;

	fx_init(&f, "node1", 1, false);
	memset(&r, 0, sizeof(r));
	r.f = &f;
	key_of("/pfs/busy", r.key);
	pthread_mutex_init(&r.mu, NULL);
	for (i = 0; i < RACE_THREADS; i++)
		ck_assert_int_eq(pthread_create(&th[i], NULL, racer, &r), 0);
	for (i = 0; i < RACE_THREADS; i++)
		pthread_join(th[i], NULL);
	ck_assert_int_eq(r.max_inside, 1);
	ck_assert_uint_gt(r.taken, RACE_THREADS);
	ck_assert(!fx_lock_exists(&f, 0, r.key));
	fx_fini(&f);
}
END_TEST

/* A crash leaves the lock files it held; the next start removes those of
 * keys with no version, on a node-local tier only. */
START_TEST(test_idle_lock_files_removed_at_start)
{
	char kept[CACHE_KEY_LEN + 1], idle[CACHE_KEY_LEN + 1],
	    name[CACHE_LOCK_NAME_MAX];
	struct fx local, shared;

	fx_init(&local, "node1", 1, false);
	fx_init(&shared, "node1", 1, true);
	fx_build(&local, 0, "/pfs/kept", 10, false, kept);
	fx_build(&shared, 0, "/pfs/kept", 10, false, NULL);
	key_of("/pfs/idle", idle);
	cache_lock_name(idle, name, sizeof(name));
	fx_write(&local, 0, name, "", 0600);
	fx_write(&shared, 0, name, "", 0600);
	fx_write(&local, 0, "not-a-key.lock", "", 0600);
	fx_restart(&local);
	fx_restart(&shared);
	ck_assert(!fx_lock_exists(&local, 0, idle));
	ck_assert(fx_lock_exists(&local, 0, kept));
	ck_assert(fx_exists(&local, 0, "not-a-key.lock"));
	ck_assert(fx_lock_exists(&shared, 0, idle));
	ck_assert(fx_lock_exists(&shared, 0, kept));
	fx_fini(&shared);
	fx_fini(&local);
}
END_TEST

static Suite *cache_lock_suite(void)
{
	Suite *s = suite_create("cache_lock");
	TCase *tc = tcase_create("core");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_one_holder_at_a_time);
	tcase_add_test(tc, test_waiting_gives_up_when_told);
	tcase_add_test(tc, test_foreign_lock_file_refused);
	tcase_add_test(tc, test_lock_file_goes_with_the_last_version);
	tcase_add_test(tc, test_lock_file_kept_on_shared_tier);
	tcase_add_test(tc, test_waiter_of_a_removed_lock_file_sees_it);
	tcase_add_test(tc, test_concurrent_lockers_never_both_hold);
	tcase_add_test(tc, test_idle_lock_files_removed_at_start);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return check_run(cache_lock_suite());
}
