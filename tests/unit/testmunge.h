/* testmunge.h - a private munged for the unit tests that need one.
 *
 * testmunge_start() runs munged on a socket in a fresh directory with its
 * own key, so the tests never depend on (or disturb) a munged the machine
 * may run. When munged cannot be started the tests say so and skip. */
#ifndef IOSTAGE_TESTMUNGE_H
#define IOSTAGE_TESTMUNGE_H

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char testmunge_dir[64];
static char testmunge_socket[128];

/* 0 with testmunge_socket set, or -1 (reason printed). */
static int testmunge_start(void)
{
	char cmd[1024];
	struct stat st;

	snprintf(testmunge_dir, sizeof(testmunge_dir), "/tmp/tmunge.XXXXXX");
	if (!mkdtemp(testmunge_dir))
		return -1;
	/* munged wants every directory above its socket searchable. */
	chmod(testmunge_dir, 0755);
	snprintf(testmunge_socket, sizeof(testmunge_socket), "%s/sock",
		 testmunge_dir);
	snprintf(cmd, sizeof(cmd),
		 "dd if=/dev/urandom of=%1$s/key bs=1024 count=1 "
		 "status=none && chmod 0400 %1$s/key && "
		 "munged --socket=%1$s/sock --key-file=%1$s/key "
		 "--pid-file=%1$s/pid --log-file=%1$s/log "
		 "--seed-file=%1$s/seed >%1$s/out 2>&1",
		 testmunge_dir);
	if (system(cmd) != 0 || stat(testmunge_socket, &st) < 0) {
		fprintf(stderr,
			"testmunge: cannot start a private munged "
			"(see %s/out); MUNGE tests skipped\n",
			testmunge_dir);
		return -1;
	}
	return 0;
}

static void testmunge_stop(void)
{
	char path[160], buf[32] = "";
	FILE *f;

	snprintf(path, sizeof(path), "%s/pid", testmunge_dir);
	f = fopen(path, "r");
	if (f) {
		if (fgets(buf, sizeof(buf), f) && atoi(buf) > 1)
			kill(atoi(buf), SIGTERM);
		fclose(f);
	}
	snprintf(path, sizeof(path), "sleep 0.2; rm -rf %s", testmunge_dir);
	if (testmunge_dir[0] && system(path) != 0)
		fprintf(stderr, "testmunge: cannot remove %s\n", testmunge_dir);
}

#endif /* IOSTAGE_TESTMUNGE_H */
