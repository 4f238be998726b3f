/* check_cache_reconcile.c - unit tests for the cache's start-up after a
 * crash (daemon/staging/cache_reconcile.c, the journal): a crash is played
 * by leaving on disk what each step of a build leaves (the journal record
 * alone, the builder's directory, each step of publication) and starting
 * a fresh cache on the same directories. Before the rename nothing may
 * survive, after it the version must; either way the journal ends empty.
 * Then the other leftovers: other builds and removals (all of them on a
 * node-local tier, this node's only on a Shared one), incomplete or
 * damaged versions, pins of jobs the node no longer knows, old versions,
 * journal records that name no tier.
 *
 * Unprivileged (tests/unit/cache_fixture.h), but for a version whose data
 * belongs to another user (root: chown).
 */
#define _GNU_SOURCE
#include "tests/unit/cache_fixture.h"
#include "tests/unit/check_run.h"

/* How far a build got before the crash. */
enum crash_point {
	CRASH_JOURNALED, /* the record written, nothing else */
	CRASH_BEGUN,     /* the builder's directory, the worker's copy */
	CRASH_TAKEN,     /* publication's steps (cache_publish_step) */
	CRASH_STRIPPED,
	CRASH_WRITTEN,
	CRASH_RENAMED,
	CRASH_POINTS,
};

START_TEST(test_crash_at_each_step_of_a_build)
{
	enum crash_point at = (enum crash_point)_i;
	static const enum cache_publish_step step[] = {
		[CRASH_TAKEN] = CACHE_PUBLISH_TAKEN,
		[CRASH_STRIPPED] = CACHE_PUBLISH_STRIPPED,
		[CRASH_WRITTEN] = CACHE_PUBLISH_WRITTEN,
		[CRASH_RENAMED] = CACHE_PUBLISH_RENAMED,
	};
	char k[CACHE_KEY_LEN + 1], err[CONF_ERR_MAX], build[JOURNAL_NAME_MAX];
	struct cache_meta meta = fx_meta("/pfs/a", 5, false);
	struct cache_build b;
	struct cache_lock *lk;
	struct fx f;

	fx_init(&f, "node1", 2, false);
	cache_key(getuid(), "/pfs/a", k);
	ck_assert_int_eq(cache_lock_acquire(f.c, 1, k, NULL, NULL, &lk, err,
					    sizeof(err)),
			 0);
	snprintf(build, sizeof(build), ".build.%s.v1.node1", k);
	if (at == CRASH_JOURNALED) {
		ck_assert_int_eq(journal_add(f.c->journal, 1, build, err,
					     sizeof(err)),
				 0);
	} else {
		fx_begin(&f, 1, k, &b, 5);
		if (at >= CRASH_TAKEN)
			ck_assert_int_eq(cache_build_publish_upto(&b, &meta,
								  step[at], err,
								  sizeof(err)),
					 0);
		close(b.manifest_fd);
	}
	/* the crash: the lock goes with the process, nothing is cleaned */
	close(lk->fd);
	free(lk);
	ck_assert_uint_eq(fx_journal_records(&f), 1);
	fx_restart(&f);
	ck_assert_uint_eq(fx_journal_records(&f), 0);
	ck_assert(!fx_exists(&f, 1, build));
	ck_assert_uint_eq(fx_count(&f, 1, ".build."), 0);
	ck_assert_uint_eq(fx_current(&f, 1, k), at == CRASH_RENAMED ? 1 : 0);
	ck_assert(fx_version_exists(&f, 1, k, 1) == (at == CRASH_RENAMED));
	ck_assert_uint_eq(f.space.cache[1], at == CRASH_RENAMED ? 5 : 0);
	/* nothing left of a key without a version, its K.lock included */
	ck_assert(fx_lock_exists(&f, 1, k) == (at == CRASH_RENAMED));
	/* and the next build goes on as if nothing happened */
	ck_assert_uint_eq(fx_build(&f, 1, "/pfs/a", 6, false, NULL),
			  at == CRASH_RENAMED ? 2 : 1);
	fx_fini(&f);
}
END_TEST

/* A removal interrupted after its rename leaves .evict.K.vN.NODE: never
 * served, removed at start. */
START_TEST(test_crash_during_a_removal)
{
	char k[CACHE_KEY_LEN + 1], name[CACHE_ENTRY_NAME_MAX],
	    gone[JOURNAL_NAME_MAX];
	struct fx f;

	fx_init(&f, "node1", 1, false);
	fx_build(&f, 0, "/pfs/a", 5, false, k);
	cache_version_name(k, 1, name, sizeof(name));
	snprintf(gone, sizeof(gone), ".evict.%s.node1", name);
	ck_assert_int_eq(renameat(f.cache_fd[0], name, f.cache_fd[0], gone), 0);
	fx_restart(&f);
	ck_assert(!fx_exists(&f, 0, gone));
	ck_assert_uint_eq(fx_current(&f, 0, k), 0);
	ck_assert_uint_eq(f.space.cache[0], 0);
	fx_fini(&f);
}
END_TEST

/* Leftovers the journal does not list (another node's, or a journal that
 * was lost): all removed on a node-local tier; on a Shared one only this
 * node's, since another node may be building right now. */
START_TEST(test_leftovers_by_tier_kind)
{
	static const char *const names[] = {
		".build.0123456789abcdef0123456789abcdef.v1.node1",
		".evict.0123456789abcdef0123456789abcdef.v2.node1",
		".build.0123456789abcdef0123456789abcdef.v3.node2",
		".evict.0123456789abcdef0123456789abcdef.v4.node2",
	};
	bool shared = _i == 1;
	struct fx f;
	size_t i;

	fx_init(&f, "node1", 1, shared);
	for (i = 0; i < 4; i++)
		ck_assert_int_eq(mkdirat(f.cache_fd[0], names[i], 0700), 0);
	fx_write(&f, 0, "y", "", 0600);
	fx_restart(&f);
	for (i = 0; i < 4; i++) {
		bool mine = strstr(names[i], "node1") != NULL;

		ck_assert_msg(fx_exists(&f, 0, names[i]) == (shared && !mine),
			      "%s %s", names[i],
			      fx_exists(&f, 0, names[i]) ? "kept" : "removed");
	}
	ck_assert(fx_exists(&f, 0, "y")); /* not the cache's: left alone */
	fx_fini(&f);
}
END_TEST

/* How a version can be damaged: each must go at start, and only it. */
enum damage {
	NO_META,
	META_NOT_JSON,
	META_NO_SOURCE,
	META_RELATIVE_SOURCE,
	NO_MANIFEST,
	MANIFEST_A_DIRECTORY,
	NO_DATA,
	DATA_A_SYMLINK,
	PUBLIC_DATA_WRITABLE,
	DAMAGES,
};

static void damage(struct fx *f, const char *v, enum damage d)
{
	char path[256];
	int vfd = openat(f->cache_fd[0], v, O_RDONLY | O_DIRECTORY);

	ck_assert_int_ge(vfd, 0);
	switch (d) {
	case NO_META:
		ck_assert_int_eq(unlinkat(vfd, "meta.json", 0), 0);
		break;
	case META_NOT_JSON:
		snprintf(path, sizeof(path), "%s/meta.json", v);
		fx_write(f, 0, path, "{\"src\":", 0644);
		break;
	case META_NO_SOURCE:
		snprintf(path, sizeof(path), "%s/meta.json", v);
		fx_write(f, 0, path, "{\"uid\":0,\"bytes\":5}", 0644);
		break;
	case META_RELATIVE_SOURCE:
		snprintf(path, sizeof(path), "%s/meta.json", v);
		fx_write(f, 0, path, "{\"src\":\"pfs/a\",\"bytes\":5}", 0644);
		break;
	case NO_MANIFEST:
		ck_assert_int_eq(unlinkat(vfd, "manifest", 0), 0);
		break;
	case MANIFEST_A_DIRECTORY:
		ck_assert_int_eq(unlinkat(vfd, "manifest", 0), 0);
		ck_assert_int_eq(mkdirat(vfd, "manifest", 0700), 0);
		break;
	case NO_DATA:
	case DATA_A_SYMLINK:
		ck_assert_int_eq(renameat(vfd, "data", vfd, "old"), 0);
		if (d == DATA_A_SYMLINK)
			ck_assert_int_eq(symlinkat("old", vfd, "data"), 0);
		break;
	case PUBLIC_DATA_WRITABLE:
		ck_assert_int_eq(fchmodat(vfd, "data", 0755, 0), 0);
		break;
	case DAMAGES:
		break;
	}
	close(vfd);
}

START_TEST(test_damaged_versions_removed)
{
	enum damage d = (enum damage)_i;
	char bad[CACHE_KEY_LEN + 1], good[CACHE_KEY_LEN + 1],
	    name[CACHE_ENTRY_NAME_MAX];
	struct fx f;

	fx_init(&f, "node1", 1, false);
	fx_build(&f, 0, "/pfs/good", 7, false, good);
	fx_build(&f, 0, "/pfs/bad", 5, d == PUBLIC_DATA_WRITABLE, bad);
	cache_version_name(bad, 1, name, sizeof(name));
	damage(&f, name, d);
	fx_restart(&f);
	ck_assert(!fx_exists(&f, 0, name));
	ck_assert_uint_eq(fx_current(&f, 0, bad), 0);
	ck_assert_uint_eq(fx_current(&f, 0, good), 1);
	ck_assert_uint_eq(f.space.cache[0], 7);
	fx_fini(&f);
}
END_TEST

/* Data that is not the entry's user's is not served to that user (root:
 * the data given to another uid). */
START_TEST(test_data_of_another_user_removed)
{
	char k[CACHE_KEY_LEN + 1], name[CACHE_ENTRY_NAME_MAX + 8];
	struct fx f;

	fx_init(&f, "node1", 1, false);
	fx_build(&f, 0, "/pfs/a", 5, false, k);
	cache_version_name(k, 1, name, sizeof(name));
	strcat(name, "/data");
	ck_assert_int_eq(fchownat(f.cache_fd[0], name, 65534, 65534,
				  AT_SYMLINK_NOFOLLOW),
			 0);
	fx_restart(&f);
	ck_assert_uint_eq(fx_current(&f, 0, k), 0);
	ck_assert(!fx_version_exists(&f, 0, k, 1));
	fx_fini(&f);
}
END_TEST

/* This node's pins of jobs it no longer knows go; those of jobs it knows
 * and other nodes' pins stay. */
START_TEST(test_stale_pins_dropped)
{
	static const char *const pins[] = { "node1.1", "node1.2", "node1.x",
					    "node2.2", "node12.2" };
	static const bool kept[] = { true, false, false, true, true };
	char k[CACHE_KEY_LEN + 1], path[256];
	struct fx f;
	size_t i;

	fx_init(&f, "node1", 1, false);
	fx_build(&f, 0, "/pfs/a", 5, false, k);
	for (i = 0; i < 5; i++) {
		snprintf(path, sizeof(path), "%s.v1/pins/%s", k, pins[i]);
		fx_write(&f, 0, path, "", 0644);
	}
	fx_known_jobs[fx_nknown++] = 1;
	fx_restart(&f);
	for (i = 0; i < 5; i++) {
		snprintf(path, sizeof(path), "%s.v1/pins/%s", k, pins[i]);
		ck_assert_msg(fx_exists(&f, 0, path) == kept[i], "%s %s",
			      pins[i], kept[i] ? "dropped" : "kept");
	}
	fx_fini(&f);
}
END_TEST

/* Versions older than their key's current one that nobody pins go at
 * start (a crash between a build and its collection). */
START_TEST(test_old_versions_go_at_start)
{
	char k[CACHE_KEY_LEN + 1];
	struct fx f;

	fx_init(&f, "node1", 1, false);
	fx_build(&f, 0, "/pfs/a", 5, false, k);
	fx_pin(&f, 0, k, 1, 3);
	fx_build(&f, 0, "/pfs/a", 6, false, NULL);
	fx_build(&f, 0, "/pfs/a", 7, false, NULL);
	fx_known_jobs[fx_nknown++] = 3;
	fx_restart(&f);
	ck_assert(fx_version_exists(&f, 0, k, 1)); /* job 3 runs on */
	ck_assert(!fx_version_exists(&f, 0, k, 2));
	ck_assert(fx_version_exists(&f, 0, k, 3));
	ck_assert_uint_eq(f.space.cache[0], 12);
	/* job 3 was gone: its pin and then v1 go too */
	fx_nknown = 0;
	fx_restart(&f);
	ck_assert(!fx_version_exists(&f, 0, k, 1));
	ck_assert(fx_version_exists(&f, 0, k, 3));
	fx_fini(&f);
}
END_TEST

/* Records that name no configured tier, or are no records, are dropped
 * without touching anything; an interrupted write's temporary too. */
START_TEST(test_journal_records_that_name_nothing)
{
	char path[PATH_MAX + 64], k[CACHE_KEY_LEN + 1];
	int fd;
	struct fx f;

	fx_init(&f, "node1", 1, false);
	fx_build(&f, 0, "/pfs/a", 5, false, k);
	snprintf(path, sizeof(path), "%s/journal/gone.build.x",
		 f.conf.state_dir);
	fd = open(path, O_WRONLY | O_CREAT, 0600);
	ck_assert_int_ge(fd, 0);
	dprintf(fd, "{\"tier\":\"gone\",\"build\":\".build.%s.v1.node1\"}", k);
	close(fd);
	snprintf(path, sizeof(path), "%s/journal/t0.junk", f.conf.state_dir);
	fd = open(path, O_WRONLY | O_CREAT, 0600);
	ck_assert_int_ge(fd, 0);
	dprintf(fd, "{\"tier\":\"t0\",\"build\":\"%s.v1\"}", k);
	close(fd);
	snprintf(path, sizeof(path), "%s/journal/.t0.x.tmp", f.conf.state_dir);
	fd = open(path, O_WRONLY | O_CREAT, 0600);
	ck_assert_int_ge(fd, 0);
	close(fd);
	fx_restart(&f);
	ck_assert_uint_eq(fx_journal_records(&f), 0);
	ck_assert_int_ne(access(path, F_OK), 0);
	/* a record naming a version, not a build, removed nothing */
	ck_assert_uint_eq(fx_current(&f, 0, k), 1);
	fx_fini(&f);
}
END_TEST

/* The journal's directory must be the cache owner's alone. */
START_TEST(test_journal_directory_checked)
{
	char path[PATH_MAX + 16], err[CONF_ERR_MAX];
	struct fx f;

	fx_init(&f, "node1", 1, false);
	cache_destroy(f.c);
	snprintf(path, sizeof(path), "%s/journal", f.conf.state_dir);
	ck_assert_int_eq(chmod(path, 0777), 0);
	{
		struct cache_params p;
		size_t t;

		memset(&p, 0, sizeof(p));
		p.conf = &f.conf;
		for (t = 0; t < CONF_MAX_TIERS; t++) {
			p.cache_fd[t] = f.cache_fd[t];
			p.jobs_fd[t] = f.jobs_fd[t];
		}
		p.space = (struct cache_space){ .usage = fx_usage,
						.reserve = fx_reserve,
						.account = fx_account,
						.arg = &f.space };
		p.owner_uid = geteuid();
		p.owner_gid = getegid();
		f.c = cache_create(&p, err, sizeof(err));
		ck_assert_ptr_nonnull(f.c);
		ck_assert_int_eq(cache_recover(f.c, fx_job_known, NULL, err,
					       sizeof(err)),
				 -1);
		ck_assert_ptr_nonnull(strstr(err, "StateDir: "));
		ck_assert_ptr_nonnull(strstr(err, "0777"));
		/* nor is a cache made without its tiers */
		p.cache_fd[0] = -1;
		ck_assert_ptr_null(cache_create(&p, err, sizeof(err)));
		ck_assert_str_eq(err,
				 "cache: tier 't0' has no cache directory");
	}
	fx_fini(&f);
}
END_TEST

static Suite *cache_reconcile_suite(void)
{
	Suite *s = suite_create("cache_reconcile");
	TCase *tc = tcase_create("core");

	tcase_set_timeout(tc, 30);
	tcase_add_loop_test(tc, test_crash_at_each_step_of_a_build, 0,
			    CRASH_POINTS);
	tcase_add_test(tc, test_crash_during_a_removal);
	tcase_add_loop_test(tc, test_leftovers_by_tier_kind, 0, 2);
	tcase_add_loop_test(tc, test_damaged_versions_removed, 0, DAMAGES);
	tcase_add_root_test(tc, test_data_of_another_user_removed);
	tcase_add_test(tc, test_stale_pins_dropped);
	tcase_add_test(tc, test_old_versions_go_at_start);
	tcase_add_test(tc, test_journal_records_that_name_nothing);
	tcase_add_test(tc, test_journal_directory_checked);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return check_run(cache_reconcile_suite());
}
