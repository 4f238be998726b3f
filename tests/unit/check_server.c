/* check_server.c - unit tests for iostaged's socket as an object
 * (daemon/server.c): where it refuses to start (a SocketPath that is
 * relative, a socket directory that is not root's or that
 * others may write, a file in the socket's place, a daemon already
 * there), what it leaves behind when it stops (its own socket removed,
 * never one that replaced it), and one request served over a real
 * connection and dispatched with the agent it was made for.
 *
 * The socket lives in a temporary directory. The directory's checks
 * want it root's, so most tests run as root (skipped otherwise, with a
 * line); refusals that come before that check run as anyone.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <ftw.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <check.h>

#include "common/config/conf.h"
#include "common/net/proto.h"
#include "daemon/agent.h"
#include "daemon/server.h"
#include "tests/unit/check_run.h"

static char root[64];
static struct conf conf;
static struct agent agent;

static void setup(void)
{
	snprintf(root, sizeof(root), "/tmp/check_server.XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(root));
	chmod(root, 0755);
	conf_set_defaults(&conf);
	snprintf(conf.socket_path, sizeof(conf.socket_path),
		 "%s/run/iostaged.sock", root);
	conf.max_connections = 16;
	memset(&agent, 0, sizeof(agent));
	agent.conf = &conf;
	agent.conf_path = "/etc/slurm/iostage.conf";
}

static int rm_one(const char *path, const struct stat *st, int flag,
		  struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(path);
}

static void teardown(void)
{
	nftw(root, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

static void create_fails(const char *want)
{
	char err[CONF_ERR_MAX] = "";
	struct server *s = server_create(&agent, err, sizeof(err));

	ck_assert_msg(s == NULL, "made a server (wanted '%s')", want);
	ck_assert_msg(strstr(err, want) != NULL, "'%s', not '%s'", err, want);
}

START_TEST(test_socket_path_refused)
{
	snprintf(conf.socket_path, sizeof(conf.socket_path), "iostaged.sock");
	create_fails("SocketPath iostaged.sock is not absolute");
}
END_TEST

/* The directory must be root's: refused when the test runs as a user
 * (the directory is theirs) and, as root, when it is given away. */
START_TEST(test_dir_not_roots)
{
	char dir[128];

	snprintf(dir, sizeof(dir), "%s/run", root);
	ck_assert_int_eq(mkdir(dir, 0755), 0);
	if (geteuid() == 0)
		ck_assert_int_eq(chown(dir, 65534, 65534), 0);
	create_fails("must be root");
}
END_TEST

START_TEST(test_dir_writable_by_others)
{
	char dir[128];

	snprintf(dir, sizeof(dir), "%s/run", root);
	ck_assert_int_eq(mkdir(dir, 0755), 0);
	ck_assert_int_eq(chmod(dir, 0775), 0);
	create_fails("group/other-writable");
}
END_TEST

START_TEST(test_not_a_socket)
{
	char dir[128];
	FILE *f;

	snprintf(dir, sizeof(dir), "%s/run", root);
	ck_assert_int_eq(mkdir(dir, 0755), 0);
	f = fopen(conf.socket_path, "w");
	ck_assert_ptr_nonnull(f);
	fclose(f);
	create_fails("exists and is not a socket; remove it");
}
END_TEST

/* Made: the socket 0666 in a directory made root's 0755; a second
 * server on the same path is refused while the first holds it (it does
 * not answer: nothing serves); closed, its socket is gone. */
START_TEST(test_create_second_close)
{
	char err[CONF_ERR_MAX], dir[128];
	struct server *s = server_create(&agent, err, sizeof(err));
	struct stat st;

	ck_assert_msg(s != NULL, "server_create: %s", err);
	snprintf(dir, sizeof(dir), "%s/run", root);
	ck_assert_str_eq(server_dir(s), dir);
	ck_assert_int_eq(stat(dir, &st), 0);
	ck_assert_uint_eq(st.st_mode & 07777, 0755);
	ck_assert_int_eq(lstat(conf.socket_path, &st), 0);
	ck_assert(S_ISSOCK(st.st_mode));
	ck_assert_uint_eq(st.st_mode & 0777, 0666);
	create_fails("is already in use by a process that does not answer");
	server_close(s);
	ck_assert_int_eq(lstat(conf.socket_path, &st), -1);
	server_close(s); /* again: nothing */
	ck_assert(server_fini(s, 1));
	server_destroy(s);
	server_destroy(NULL);
	ck_assert(server_fini(NULL, 1));
}
END_TEST

/* A socket that replaced ours (a newer daemon's) is not removed. */
START_TEST(test_close_keeps_a_newer_socket)
{
	char err[CONF_ERR_MAX], moved[160];
	struct server *s = server_create(&agent, err, sizeof(err));
	struct stat st;

	ck_assert_msg(s != NULL, "server_create: %s", err);
	snprintf(moved, sizeof(moved), "%s/old.sock", root);
	ck_assert_int_eq(rename(conf.socket_path, moved), 0);
	{
		struct server *newer = server_create(&agent, err, sizeof(err));

		ck_assert_msg(newer != NULL, "second: %s", err);
		server_close(s);
		ck_assert_int_eq(lstat(conf.socket_path, &st), 0);
		server_destroy(newer);
	}
	ck_assert_int_eq(lstat(conf.socket_path, &st), -1);
	server_destroy(s);
}
END_TEST

static volatile sig_atomic_t stop;

static void on_usr1(int sig)
{
	(void)sig;
	stop = 1;
}

struct runner {
	struct server *s;
	sigset_t waitmask;
	int rc;
};

static void *run_server(void *arg)
{
	struct runner *r = arg;

	r->rc = server_run(r->s, &stop, &r->waitmask);
	return NULL;
}

/* One request over a real connection: the caller's SO_PEERCRED decides
 * (root here), the op runs with the server's agent. A stop signal ends
 * server_run with 0. */
START_TEST(test_serves_a_request)
{
	struct sigaction sa = { .sa_handler = on_usr1 };
	char err[CONF_ERR_MAX];
	struct runner r = { 0 };
	sigset_t block;
	pthread_t t;
	cJSON *req, *reply;

	r.s = server_create(&agent, err, sizeof(err));
	ck_assert_msg(r.s != NULL, "server_create: %s", err);
	/* as main() does: the signal only while waiting in ppoll */
	sigaction(SIGUSR1, &sa, NULL);
	sigemptyset(&block);
	sigaddset(&block, SIGUSR1);
	pthread_sigmask(SIG_BLOCK, &block, &r.waitmask);
	sigdelset(&r.waitmask, SIGUSR1);
	ck_assert_int_eq(pthread_create(&t, NULL, run_server, &r), 0);

	req = cJSON_Parse("{\"op\":\"ping\"}");
	reply = proto_call(conf.socket_path, req, 10000, err, sizeof(err));
	ck_assert_msg(reply != NULL, "ping: %s", err);
	ck_assert(cJSON_IsTrue(cJSON_GetObjectItem(reply, "ok")));
	ck_assert_str_eq(cJSON_GetStringValue(
			     cJSON_GetObjectItem(reply, "version")),
			 IOSTAGE_VERSION);
	cJSON_Delete(reply);
	cJSON_Delete(req);
	/* an unknown op: answered, and the connection's thread goes on */
	req = cJSON_Parse("{\"op\":\"nope\"}");
	reply = proto_call(conf.socket_path, req, 10000, err, sizeof(err));
	ck_assert_msg(reply != NULL, "nope: %s", err);
	ck_assert(!cJSON_IsTrue(cJSON_GetObjectItem(reply, "ok")));
	cJSON_Delete(reply);
	cJSON_Delete(req);

	pthread_kill(t, SIGUSR1);
	pthread_join(t, NULL);
	ck_assert_int_eq(r.rc, 0);
	server_close(r.s);
	ck_assert(server_fini(r.s, 10));
	server_destroy(r.s);
}
END_TEST

static Suite *server_suite(void)
{
	Suite *s = suite_create("server");
	TCase *tc = tcase_create("socket");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, test_socket_path_refused);
	tcase_add_test(tc, test_dir_not_roots);
	tcase_add_root_test(tc, test_dir_writable_by_others);
	tcase_add_root_test(tc, test_not_a_socket);
	tcase_add_root_test(tc, test_create_second_close);
	tcase_add_root_test(tc, test_close_keeps_a_newer_socket);
	tcase_add_root_test(tc, test_serves_a_request);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return check_run(server_suite());
}
