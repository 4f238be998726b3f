/* spawn_stub.h - a stand-in for daemon/spawn.c in the fuzz targets that
 * drive iostaged's handlers: workers are never started. spawn_as_user
 * refuses, so a stage, prestage or drain runs up to the fork and takes its
 * failure path (what a node out of processes does). Defining all of
 * spawn.c's symbols keeps the real one out of the link. */
#ifndef IOSTAGE_FUZZ_SPAWN_STUB_H
#define IOSTAGE_FUZZ_SPAWN_STUB_H

#include <errno.h>
#include <stdio.h>

#include "daemon/spawn.h"

int spawn_init(char *err, size_t errlen)
{
	(void)err;
	(void)errlen;
	return 0;
}

void spawn_fini(void)
{
}

int spawn_as_user(uid_t uid, gid_t gid, const char *user, char *const argv[],
		  char *const envp[], const int *pass_fds, size_t npass,
		  const char *what, struct spawn_proc *ret, char *err,
		  size_t errlen)
{
	(void)uid;
	(void)gid;
	(void)user;
	(void)argv;
	(void)envp;
	(void)pass_fds;
	(void)npass;
	(void)ret;
	snprintf(err, errlen, "cannot start a %s: not in the fuzzer", what);
	errno = EAGAIN;
	return -1;
}

#endif /* IOSTAGE_FUZZ_SPAWN_STUB_H */
