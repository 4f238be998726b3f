/* check_cache_build.c - unit tests for building, publishing and pinning a
 * version (daemon/staging/cache_build.c, cache_pin.c): the publication
 * order on disk step by step (journal record, the builder's directory,
 * taken back, stripped to data, manifest and meta.json written, renamed,
 * journal record dropped), what meta.json records (a spread dataset's
 * part marked as one), a public version taken
 * over, a build that fails or is given up leaving nothing, and pins: the
 * last use, the promotion at a second job, this node's pins only.
 *
 * The worker is played by the fixture (tests/unit/cache_fixture.h).
 * Unprivileged but for the job's view (a bind mount, in a private mount
 * namespace).
 */
#define _GNU_SOURCE
#include <sched.h>
#include <sys/mount.h>

#include "common/sched/cachekey.h"
#include "tests/unit/cache_fixture.h"
#include "tests/unit/check_run.h"

static struct stat stat_of(const struct fx *f, const char *name)
{
	struct stat st;

	ck_assert_msg(fstatat(f->cache_fd[0], name, &st, AT_SYMLINK_NOFOLLOW) ==
			  0,
		      "%s: %s", name, strerror(errno));
	return st;
}

static char *read_file(const struct fx *f, const char *name)
{
	char why[128];
	char *text = smallfile_read_at(f->cache_fd[0], name, O_NOFOLLOW, 65536,
				       NULL, why, sizeof(why));

	ck_assert_msg(text != NULL, "%s: %s", name, why);
	return text;
}

/* Every step of cache_build_publish, stopped after it: what is on disk,
 * and what is served (the index). */
START_TEST(test_publication_order)
{
	enum cache_publish_step step = (enum cache_publish_step)_i;
	char k[CACHE_KEY_LEN + 1], err[CONF_ERR_MAX], name[256], *text;
	struct cache_meta meta = fx_meta("/pfs/a", 5, false);
	struct cache_build b;
	struct cache_lock *lk;
	struct stat st;
	struct fx f;

	fx_init(&f, "node1", 1, false);
	cache_key(getuid(), "/pfs/a", k);
	ck_assert_int_eq(cache_lock_acquire(f.c, 0, k, NULL, NULL, &lk, err,
					    sizeof(err)),
			 0);
	fx_begin(&f, 0, k, &b, 5);
	/* begun: journaled first, then the builder's own directory */
	snprintf(name, sizeof(name), ".build.%s.v1.node1", k);
	ck_assert_str_eq(b.name, name);
	ck_assert_uint_eq(fx_journal_records(&f), 1);
	st = stat_of(&f, b.name);
	ck_assert_uint_eq(st.st_mode & 07777, 0700);
	ck_assert_uint_eq(st.st_uid, getuid());
	/* what a worker may leave beside data */
	snprintf(name, sizeof(name), "%s/junk", b.name);
	fx_write(&f, 0, name, "junk", 0600);
	ck_assert_int_eq(cache_build_publish_upto(&b, &meta, step, err,
						  sizeof(err)),
			 0);
	if (step < CACHE_PUBLISH_RENAMED) {
		st = stat_of(&f, b.name);
		ck_assert_uint_eq(st.st_mode & 07777, 0711);
		ck_assert_uint_eq(st.st_uid, geteuid());
		ck_assert(!fx_version_exists(&f, 0, k, 1));
		snprintf(name, sizeof(name), "%s/junk", b.name);
		ck_assert(fx_exists(&f, 0, name) ==
			  (step < CACHE_PUBLISH_STRIPPED));
		snprintf(name, sizeof(name), "%s/meta.json", b.name);
		ck_assert(fx_exists(&f, 0, name) ==
			  (step >= CACHE_PUBLISH_WRITTEN));
		if (step >= CACHE_PUBLISH_WRITTEN) {
			snprintf(name, sizeof(name), "%s/manifest", b.name);
			text = read_file(&f, name);
			ck_assert_str_eq(text, "MANIFEST");
			free(text);
			snprintf(name, sizeof(name), "%s/pins", b.name);
			ck_assert(S_ISDIR(stat_of(&f, name).st_mode));
		}
	} else {
		ck_assert(!fx_exists(&f, 0, b.name));
		ck_assert(fx_version_exists(&f, 0, k, 1));
	}
	/* served only once published and indexed */
	ck_assert_uint_eq(fx_current(&f, 0, k),
			  step == CACHE_PUBLISH_DONE ? 1 : 0);
	ck_assert_uint_eq(fx_journal_records(&f),
			  step == CACHE_PUBLISH_DONE ? 0 : 1);
	ck_assert_uint_eq(f.space.cache[0], step == CACHE_PUBLISH_DONE ? 5 : 0);
	if (b.manifest_fd >= 0)
		close(b.manifest_fd);
	cache_lock_release(lk);
	fx_fini(&f);
}
END_TEST

START_TEST(test_meta_records_the_build)
{
	char k[CACHE_KEY_LEN + 1], name[CACHE_ENTRY_NAME_MAX + 16], *text;
	cJSON *m;
	struct fx f;

	fx_init(&f, "node7", 1, false);
	fx_build(&f, 0, "/pfs/data set", 1234, false, k);
	cache_version_name(k, 1, name, sizeof(name));
	strcat(name, "/meta.json");
	text = read_file(&f, name);
	m = cJSON_Parse(text);
	free(text);
	ck_assert_ptr_nonnull(m);
	ck_assert_str_eq(cJSON_GetObjectItem(m, "key")->valuestring, k);
	ck_assert_int_eq(cJSON_GetObjectItem(m, "version")->valueint, 1);
	ck_assert_str_eq(cJSON_GetObjectItem(m, "src")->valuestring,
			 "/pfs/data set");
	ck_assert_int_eq(cJSON_GetObjectItem(m, "uid")->valueint,
			 (int)getuid());
	ck_assert_str_eq(cJSON_GetObjectItem(m, "user")->valuestring, "tester");
	ck_assert_int_eq(cJSON_GetObjectItem(m, "bytes")->valueint, 1234);
	ck_assert_str_eq(cJSON_GetObjectItem(m, "verify")->valuestring, "stat");
	ck_assert_str_eq(cJSON_GetObjectItem(m, "node")->valuestring, "node7");
	ck_assert_ptr_null(cJSON_GetObjectItem(m, "public"));
	ck_assert_ptr_null(cJSON_GetObjectItem(m, "reused"));
	cJSON_Delete(m);
	fx_fini(&f);
}
END_TEST

/* Whether version 1 of KEY on tier t0 opens for a peer as a part. */
static bool served_as_part(struct fx *f, const char *key)
{
	struct cache_served s;
	char err[CONF_ERR_MAX];
	bool part;

	ck_assert_msg(cache_open_served(f->c, "t0", key, 1, getuid(), &s, err,
					sizeof(err)) == 0,
		      "cache_open_served: %s", err);
	part = s.part;
	cache_served_close(&s);
	return part;
}

/* Whether KEY.v1's meta.json says "part":true (absent: false). */
static bool meta_says_part(struct fx *f, const char *key)
{
	char name[CACHE_ENTRY_NAME_MAX + 16], *text;
	const cJSON *v;
	bool part;
	cJSON *m;

	cache_version_name(key, 1, name, sizeof(name));
	strcat(name, "/meta.json");
	text = read_file(f, name);
	m = cJSON_Parse(text);
	free(text);
	ck_assert_ptr_nonnull(m);
	v = cJSON_GetObjectItem(m, "part");
	ck_assert(!v || cJSON_IsTrue(v)); /* written only when true */
	part = v != NULL;
	cJSON_Delete(m);
	return part;
}

/* A spread dataset's part is marked as one in its meta.json, and stays
 * marked when meta.json is rewritten (a verification) and across a
 * restart; a whole copy, as every version written before parts were
 * marked, is not one. */
START_TEST(test_part_marked_in_meta)
{
	char whole[CACHE_KEY_LEN + 1], k[CACHE_KEY_LEN + 1];
	char err[CONF_ERR_MAX];
	struct cache_meta meta = fx_meta("/pfs/spread", 7, false);
	struct cache_build b;
	struct cache_lock *lk;
	struct fx f;

	fx_init(&f, "node1", 1, false);
	cache_key(getuid(), "/pfs/spread", whole);
	cachekey_part(whole, k);
	meta.part = true;
	ck_assert_int_eq(cache_lock_acquire(f.c, 0, k, NULL, NULL, &lk, err,
					    sizeof(err)),
			 0);
	fx_begin(&f, 0, k, &b, 7);
	ck_assert_msg(cache_build_publish(&b, &meta, err, sizeof(err)) == 0,
		      "%s", err);
	cache_mark_verified(f.c, 0, k, 1, cache_now_ns());
	cache_lock_release(lk);
	ck_assert(meta_says_part(&f, k));
	ck_assert(served_as_part(&f, k));
	fx_restart(&f);
	ck_assert(served_as_part(&f, k));
	/* the whole copy of the same source */
	fx_build(&f, 0, "/pfs/spread", 7, false, whole);
	ck_assert(!meta_says_part(&f, whole));
	ck_assert(!served_as_part(&f, whole));
	fx_fini(&f);
}
END_TEST

/* A public version: its data taken over by the cache's owner, without a
 * write or set-id bit, before anyone is served it. */
START_TEST(test_public_version_taken_over)
{
	char k[CACHE_KEY_LEN + 1], err[CONF_ERR_MAX], path[PATH_MAX];
	struct cache_meta meta = fx_meta("/pfs/pub", 3, true);
	struct cache_build b;
	struct cache_lock *lk;
	struct stat st;
	struct fx f;
	cJSON *ls;

	fx_init(&f, "node1", 1, false);
	cache_key_public("/pfs/pub", k);
	ck_assert_int_eq(cache_lock_acquire(f.c, 0, k, NULL, NULL, &lk, err,
					    sizeof(err)),
			 0);
	fx_begin(&f, 0, k, &b, 3);
	/* the builder left writable, set-gid things in it */
	snprintf(path, sizeof(path), "%s/data", b.path);
	ck_assert_int_eq(chmod(path, 02777), 0);
	snprintf(path, sizeof(path), "%s/data/f", b.path);
	ck_assert_int_eq(chmod(path, 0666), 0);
	ck_assert_int_eq(cache_build_publish(&b, &meta, err, sizeof(err)), 0);
	cache_lock_release(lk);
	cache_version_path(f.c, 0, k, 1, true, path, sizeof(path));
	ck_assert_int_eq(lstat(path, &st), 0);
	ck_assert_uint_eq(st.st_mode & 07777, 0555);
	ck_assert_uint_eq(st.st_uid, geteuid());
	strcat(path, "/f");
	ck_assert_int_eq(lstat(path, &st), 0);
	ck_assert_uint_eq(st.st_mode & 07777, 0444);
	ls = cache_ls_json(f.c, getuid() + 1); /* listed to anyone */
	ck_assert_int_eq(cJSON_GetArraySize(ls), 1);
	ck_assert(cJSON_IsTrue(
	    cJSON_GetObjectItem(cJSON_GetArrayItem(ls, 0), "public")));
	cJSON_Delete(ls);
	fx_fini(&f);
}
END_TEST

/* The worker left no data: nothing is published, nothing stays. */
START_TEST(test_build_without_data_not_published)
{
	char k[CACHE_KEY_LEN + 1], err[CONF_ERR_MAX], path[PATH_MAX];
	struct cache_meta meta = fx_meta("/pfs/a", 5, false);
	struct cache_build b;
	struct cache_lock *lk;
	struct fx f;

	fx_init(&f, "node1", 1, false);
	cache_key(getuid(), "/pfs/a", k);
	ck_assert_int_eq(cache_lock_acquire(f.c, 0, k, NULL, NULL, &lk, err,
					    sizeof(err)),
			 0);
	fx_begin(&f, 0, k, &b, 5);
	snprintf(path, sizeof(path), "%s/data", b.path);
	chmod(path, 0700);
	snprintf(path, sizeof(path), "%s/data/f", b.path);
	ck_assert_int_eq(unlink(path), 0);
	snprintf(path, sizeof(path), "%s/data", b.path);
	ck_assert_int_eq(rmdir(path), 0);
	ck_assert_int_eq(cache_build_publish(&b, &meta, err, sizeof(err)), -1);
	ck_assert_ptr_nonnull(strstr(err, "the worker left no data"));
	ck_assert(!fx_exists(&f, 0, b.name));
	ck_assert(!fx_version_exists(&f, 0, k, 1));
	ck_assert_uint_eq(fx_journal_records(&f), 0);
	ck_assert_int_eq(b.manifest_fd, -1);
	cache_lock_release(lk);
	ck_assert_uint_eq(fx_count(&f, 0, ""), 0); /* K.lock gone too */
	fx_fini(&f);
}
END_TEST

START_TEST(test_abort_leaves_nothing)
{
	char k[CACHE_KEY_LEN + 1], err[CONF_ERR_MAX];
	struct cache_build b;
	struct cache_lock *lk;
	struct fx f;

	fx_init(&f, "node1", 1, false);
	cache_key(getuid(), "/pfs/a", k);
	ck_assert_int_eq(cache_lock_acquire(f.c, 0, k, NULL, NULL, &lk, err,
					    sizeof(err)),
			 0);
	fx_begin(&f, 0, k, &b, 5);
	cache_build_abort(&b);
	ck_assert(!fx_exists(&f, 0, b.name));
	ck_assert_uint_eq(fx_journal_records(&f), 0);
	ck_assert_int_eq(b.manifest_fd, -1);
	cache_lock_release(lk);
	fx_fini(&f);
}
END_TEST

/* Whether the cache_ls entry of KEY says reused. */
static bool listed_reused(struct fx *f, const char *key)
{
	const cJSON *e;
	bool reused = false, seen = false;
	cJSON *ls = cache_ls_json(f->c, 0);

	cJSON_ArrayForEach(e, ls) {
		if (strcmp(cJSON_GetObjectItem(e, "key")->valuestring, key))
			continue;
		seen = true;
		reused = cJSON_IsTrue(cJSON_GetObjectItem(e, "reused"));
	}
	cJSON_Delete(ls);
	ck_assert(seen);
	return reused;
}

/* A pin marks the last use (meta.json's mtime); a second job's promotes
 * the version, and meta.json keeps that across a restart. */
START_TEST(test_pins_mark_use_and_promote)
{
	char k[CACHE_KEY_LEN + 1], name[64 + CACHE_PIN_NAME_MAX];
	time_t long_ago = time(NULL) - 100000;
	struct stat st;
	struct fx f;

	fx_init(&f, "node1", 1, false);
	fx_build(&f, 0, "/pfs/a", 5, false, k);
	ck_assert(!listed_reused(&f, k));
	fx_set_last_used(&f, 0, k, 1, long_ago);
	fx_pin(&f, 0, k, 1, 11);
	snprintf(name, sizeof(name), "%s.v1/pins/node1.11", k);
	ck_assert(fx_exists(&f, 0, name));
	snprintf(name, sizeof(name), "%s.v1/meta.json", k);
	st = stat_of(&f, name);
	ck_assert_int_gt(st.st_mtime, long_ago);
	ck_assert(!listed_reused(&f, k)); /* one job so far */
	fx_pin(&f, 0, k, 1, 12);
	ck_assert(listed_reused(&f, k));
	fx_known_jobs[fx_nknown++] = 11;
	fx_known_jobs[fx_nknown++] = 12;
	fx_restart(&f);
	ck_assert(listed_reused(&f, k));
	fx_fini(&f);
}
END_TEST

/* A node unpins its own job's pin, never another node's of the same job
 * id (a Shared tier). */
START_TEST(test_unpin_only_this_nodes_pin)
{
	char k[CACHE_KEY_LEN + 1], mine[128], theirs[128];
	struct fx a, b;

	fx_init(&a, "n1", 1, true);
	fx_init_peer(&b, &a, "n2");
	fx_build(&a, 0, "/pfs/s", 5, false, k);
	fx_pin(&a, 0, k, 1, 9);
	fx_pin(&b, 0, k, 1, 9);
	snprintf(mine, sizeof(mine), "%s.v1/pins/n1.9", k);
	snprintf(theirs, sizeof(theirs), "%s.v1/pins/n2.9", k);
	cache_unpin_job(a.c, 0, k, 9);
	ck_assert(!fx_exists(&a, 0, mine));
	ck_assert(fx_exists(&a, 0, theirs));
	fx_fini(&b);
	fx_fini(&a);
}
END_TEST

/* The job's view: a read-only bind mount of the version's data, made in
 * root's TIER/jobs/J/data (root: a mount, in a private namespace). */
START_TEST(test_view_is_a_read_only_mount)
{
	char k[CACHE_KEY_LEN + 1], err[CONF_ERR_MAX], path[PATH_MAX];
	struct fx f;
	int fd;

	ck_assert_int_eq(unshare(CLONE_NEWNS), 0);
	ck_assert_int_eq(mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL), 0);
	fx_init(&f, "node1", 1, false);
	fx_build(&f, 0, "/pfs/a", 5, false, k);
	ck_assert_int_eq(mkdirat(f.jobs_fd[0], "42", 0700), 0);
	ck_assert_int_eq(mkdirat(f.jobs_fd[0], "42/data", 0755), 0);
	ck_assert_msg(cache_mount_job(f.c, 0, 42, "ds", k, 1, err,
				      sizeof(err)) == 0,
		      "%s", err);
	snprintf(path, sizeof(path), "%s/jobs/42/data/ds/f",
		 f.conf.tiers[0].path);
	fd = open(path, O_RDONLY);
	ck_assert_int_ge(fd, 0);
	close(fd);
	errno = 0;
	ck_assert_int_lt(open(path, O_WRONLY), 0);
	ck_assert_int_eq(errno, EROFS);
	snprintf(path, sizeof(path), "%s/jobs/42/data/ds",
		 f.conf.tiers[0].path);
	ck_assert_int_eq(umount2(path, MNT_DETACH), 0);
	/* a data/ that is not the cache owner's is refused */
	ck_assert_int_eq(fchownat(f.jobs_fd[0], "42/data", 65534, 65534, 0), 0);
	ck_assert_int_eq(cache_mount_job(f.c, 0, 42, "ds2", k, 1, err,
					 sizeof(err)),
			 -1);
	ck_assert_ptr_nonnull(strstr(err, "not root's any more"));
	fx_fini(&f);
}
END_TEST

static Suite *cache_build_suite(void)
{
	Suite *s = suite_create("cache_build");
	TCase *tc = tcase_create("core");

	tcase_set_timeout(tc, 30);
	tcase_add_loop_test(tc, test_publication_order, CACHE_PUBLISH_TAKEN,
			    CACHE_PUBLISH_DONE + 1);
	tcase_add_test(tc, test_meta_records_the_build);
	tcase_add_test(tc, test_part_marked_in_meta);
	tcase_add_test(tc, test_public_version_taken_over);
	tcase_add_test(tc, test_build_without_data_not_published);
	tcase_add_test(tc, test_abort_leaves_nothing);
	tcase_add_test(tc, test_pins_mark_use_and_promote);
	tcase_add_test(tc, test_unpin_only_this_nodes_pin);
	tcase_add_root_test(tc, test_view_is_a_read_only_mount);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return check_run(cache_build_suite());
}
