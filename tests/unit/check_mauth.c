/* check_mauth.c - MUNGE credentials around requests, with a private munged:
 * a round trip, replay, tampering, garbage, another user's credential, an
 * oversized payload, no daemon. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <check.h>

#include "common/net/mauth.h"
#include "tests/unit/check_run.h"
#include "tests/unit/testmunge.h"

static const char *sock;

START_TEST(test_round_trip)
{
	const char *msg = "{\"op\":\"stage_state\",\"job\":42}";
	char err[512], *cred, *payload = NULL;
	size_t len = 0;
	uid_t uid = 99;
	gid_t gid = 99;

	cred = mauth_encode(sock, msg, strlen(msg), err, sizeof(err));
	ck_assert_msg(cred != NULL, "%s", err);
	ck_assert(strncmp(cred, "MUNGE:", 6) == 0);
	ck_assert_int_eq(mauth_decode(sock, cred, &payload, &len, &uid, &gid,
				      err, sizeof(err)),
			 MAUTH_OK);
	ck_assert_str_eq(payload, msg);
	ck_assert_uint_eq(len, strlen(msg));
	ck_assert_uint_eq(uid, getuid());
	ck_assert_uint_eq(gid, getgid());
	free(payload);
	free(cred);
}
END_TEST

START_TEST(test_empty_payload)
{
	char err[512], *cred, *payload = NULL;
	size_t len = 7;
	uid_t uid;
	gid_t gid;

	cred = mauth_encode(sock, "", 0, err, sizeof(err));
	ck_assert_msg(cred != NULL, "%s", err);
	ck_assert_int_eq(mauth_decode(sock, cred, &payload, &len, &uid, &gid,
				      err, sizeof(err)),
			 MAUTH_OK);
	ck_assert_str_eq(payload, "");
	ck_assert_uint_eq(len, 0);
	free(payload);
	free(cred);
}
END_TEST

START_TEST(test_replayed)
{
	char err[512], *cred, *payload = NULL;
	size_t len;
	uid_t uid = 77;
	gid_t gid;

	cred = mauth_encode(sock, "x", 1, err, sizeof(err));
	ck_assert_ptr_nonnull(cred);
	ck_assert_int_eq(mauth_decode(sock, cred, &payload, &len, &uid, &gid,
				      err, sizeof(err)),
			 MAUTH_OK);
	free(payload);
	payload = NULL;
	uid = 77;
	ck_assert_int_eq(mauth_decode(sock, cred, &payload, &len, &uid, &gid,
				      err, sizeof(err)),
			 MAUTH_REPLAYED);
	ck_assert_ptr_null(payload); /* untouched */
	ck_assert_uint_eq(uid, 77);
	ck_assert_ptr_nonnull(strstr(err, "replayed"));
	free(cred);
}
END_TEST

/* Credentials made invalid in several ways. */
START_TEST(test_tampered)
{
	char err[512], *cred, *payload = NULL;
	size_t len, n;
	uid_t uid;
	gid_t gid;

	cred = mauth_encode(sock, "{\"op\":\"a\"}", 10, err, sizeof(err));
	ck_assert_ptr_nonnull(cred);
	n = strlen(cred);
	/* one character in the middle of the base64 text */
	cred[n / 2] = cred[n / 2] == 'A' ? 'B' : 'A';
	ck_assert_int_eq(mauth_decode(sock, cred, &payload, &len, &uid, &gid,
				      err, sizeof(err)),
			 MAUTH_INVALID);
	ck_assert_ptr_null(payload);
	ck_assert_ptr_nonnull(strstr(err, "credential refused"));
	free(cred);
}
END_TEST

static const char *const garbage[] = {
	"",
	"hello",
	"MUNGE:",
	"MUNGE:AAAA:",
	"MUNGE:!!!!notbase64!!!!:",
	"munge:lowercase:",
};

START_TEST(test_garbage)
{
	char err[512], *payload = NULL;
	size_t len;
	uid_t uid;
	gid_t gid;

	ck_assert_int_eq(mauth_decode(sock, garbage[_i], &payload, &len, &uid,
				      &gid, err, sizeof(err)),
			 MAUTH_INVALID);
	ck_assert_ptr_null(payload);
	ck_assert_int_eq(mauth_decode(sock, NULL, &payload, &len, &uid, &gid,
				      err, sizeof(err)),
			 MAUTH_INVALID);
}
END_TEST

/* A credential encoded by another uid says so. */
START_TEST(test_other_user)
{
	char err[512], *cred = NULL, *payload = NULL, buf[4096];
	int fds[2], status;
	ssize_t n = 0, r;
	size_t len;
	uid_t uid = 0;
	gid_t gid = 0;
	pid_t pid;

	if (getuid() != 0)
		return; /* cannot become another user */
	ck_assert_int_eq(pipe(fds), 0);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		close(fds[0]);
		if (setgid(65534) < 0 || setuid(65534) < 0)
			_exit(1);
		cred = mauth_encode(sock, "hi", 2, err, sizeof(err));
		if (!cred || write(fds[1], cred, strlen(cred)) < 0)
			_exit(2);
		_exit(0);
	}
	close(fds[1]);
	while ((r = read(fds[0], buf + n, sizeof(buf) - 1 - (size_t)n)) > 0)
		n += r;
	buf[n] = '\0';
	close(fds[0]);
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	ck_assert_int_eq(mauth_decode(sock, buf, &payload, &len, &uid, &gid,
				      err, sizeof(err)),
			 MAUTH_OK);
	ck_assert_uint_eq(uid, 65534);
	ck_assert_uint_eq(gid, 65534);
	ck_assert_str_eq(payload, "hi");
	free(payload);
}
END_TEST

START_TEST(test_oversized)
{
	size_t n = MAUTH_PAYLOAD_MAX + 1;
	char err[512], *big = calloc(1, n);

	ck_assert_ptr_nonnull(big);
	ck_assert_ptr_null(mauth_encode(sock, big, n, err, sizeof(err)));
	ck_assert_ptr_nonnull(strstr(err, "over"));
	free(big);
}
END_TEST

START_TEST(test_no_daemon)
{
	char err[512], *payload = NULL;
	size_t len;
	uid_t uid;
	gid_t gid;

	ck_assert_ptr_null(
	    mauth_encode("/nonexistent/munge.sock", "x", 1, err, sizeof(err)));
	ck_assert_ptr_nonnull(strstr(err, "munge"));
	ck_assert_int_eq(mauth_decode("/nonexistent/munge.sock",
				      "MUNGE:AAAA:", &payload, &len, &uid, &gid,
				      err, sizeof(err)),
			 MAUTH_NO_DAEMON);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("mauth");
	TCase *tc = tcase_create("core");
	int rc;

	if (testmunge_start() < 0) {
		/* Counted by run.sh as a pass with nothing run: say so. */
		printf("100%%: Checks: 0, Failures: 0, Errors: 0 "
		       "(skipped: no munged)\n");
		return EXIT_SUCCESS;
	}
	sock = testmunge_socket;
	tcase_add_test(tc, test_round_trip);
	tcase_add_test(tc, test_empty_payload);
	tcase_add_test(tc, test_replayed);
	tcase_add_test(tc, test_tampered);
	tcase_add_loop_test(tc, test_garbage, 0,
			    sizeof(garbage) / sizeof(garbage[0]));
	tcase_add_test(tc, test_other_user);
	tcase_add_test(tc, test_oversized);
	tcase_add_test(tc, test_no_daemon);
	suite_add_tcase(s, tc);
	rc = check_run(s);
	testmunge_stop();
	return rc;
}
