/* fuzz.h - what the libFuzzer targets share: a private scratch directory,
 * a configuration pointing into it, and the input as a C string.
 *
 * Each target is one fuzz_<parser>.c with LLVMFuzzerTestOneInput; its seed
 * corpus is tests/fuzz/corpus/<parser>/ (real files of the project). A
 * target must never crash, leak, hang or abort on any input: every parser
 * it drives takes outside input and answers bad input with an error.
 */
#ifndef IOSTAGE_FUZZ_H
#define IOSTAGE_FUZZ_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include <errno.h>
#include <ftw.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/base/log.h"
#include "common/config/conf.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

/* Leaks that are not ours. glibc's list of a thread's C++ thread_local
 * destructors (__cxa_thread_atexit_impl) is freed when the thread exits;
 * RocksDB's threads add to it. LeakSanitizer reported one such node
 * once in 140,015 inputs of ctld_request, after the history was reopened
 * (history_renew.h: RocksDB starts threads at open), and not again in
 * 200,000 inputs with ten reopenings: a thread caught starting while the
 * check ran. Our code has no thread_local destructors. */
const char *__lsan_default_suppressions(void);

const char *__lsan_default_suppressions(void)
{
	return "leak:__cxa_thread_atexit_impl\n";
}

static char fuzz_dir[64];

static int fuzz_rm_one(const char *path, const struct stat *st, int flag,
		       struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(path) < 0 && errno != ENOENT ? -1 : 0;
}

/* Remove PATH and everything under it. */
static inline void fuzz_rmtree(const char *path)
{
	nftw(path, fuzz_rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

static void fuzz_cleanup(void)
{
	if (fuzz_dir[0])
		fuzz_rmtree(fuzz_dir);
}

/* A scratch directory of this process, removed at exit. Exits when none
 * can be made (the target cannot run). It is on /dev/shm (tmpfs) when
 * there is one, else in /tmp: the targets that start daemon modules
 * create, fsync and remove files and directories for every input, and on
 * a disk file system (ext4: a new inode searches past recently deleted
 * ones; fsync waits for the device) that was most of an input's time. The
 * code runs the same system calls on either. */
static inline const char *fuzz_scratch(void)
{
	struct stat st;

	if (fuzz_dir[0])
		return fuzz_dir;
	snprintf(fuzz_dir, sizeof(fuzz_dir), "%s/iostage-fuzz.XXXXXX",
		 stat("/dev/shm", &st) == 0 && S_ISDIR(st.st_mode) &&
			 access("/dev/shm", W_OK | X_OK) == 0
		     ? "/dev/shm"
		     : "/tmp");
	if (!mkdtemp(fuzz_dir)) {
		perror("fuzz: mkdtemp");
		exit(2);
	}
	chmod(fuzz_dir, 0755);
	atexit(fuzz_cleanup);
	return fuzz_dir;
}

/* DIR/SUB as a new directory (mode 0700, 0755 for a tier). */
static inline void fuzz_mkdir(char *buf, size_t len, const char *sub,
			      mode_t mode)
{
	snprintf(buf, len, "%s/%s", fuzz_scratch(), sub);
	if (mkdir(buf, mode) < 0 && errno != EEXIST) {
		perror(buf);
		exit(2);
	}
}

/* A configuration with one tier "nvme" and a StateDir in the scratch
 * directory, the site profiles of the source tree, and logging quiet (a
 * target's log lines are its inputs' errors, thousands a second). */
static inline void fuzz_conf(struct conf *conf)
{
	char path[CONF_PATH_MAX];

	log_init("fuzz", false, LOG_LEVEL_ERROR);
	conf_set_defaults(conf);
	fuzz_mkdir(path, sizeof(path), "tier", 0755);
	snprintf(conf->tiers[0].name, sizeof(conf->tiers[0].name), "nvme");
	snprintf(conf->tiers[0].path, sizeof(conf->tiers[0].path), "%s", path);
	conf->ntiers = 1;
	fuzz_mkdir(path, sizeof(path), "state", 0755);
	snprintf(conf->state_dir, sizeof(conf->state_dir), "%s", path);
	fuzz_mkdir(path, sizeof(path), "run", 0755);
	snprintf(conf->socket_path, sizeof(conf->socket_path),
		 "%s/iostaged.sock", path);
	snprintf(conf->profile_dir, sizeof(conf->profile_dir), "%s",
		 FUZZ_SRCDIR "/slurm-conf/profiles");
}

/* DATA as a NUL-terminated string (caller frees); an embedded NUL ends
 * it early, as it would end a line or a C string read from a file. */
static inline char *fuzz_str(const uint8_t *data, size_t size)
{
	char *s = malloc(size + 1);

	if (!s)
		abort();
	memcpy(s, data, size);
	s[size] = '\0';
	return s;
}

/* A target with binary seeds writes them with the project's own writers:
 * FUZZ_WRITE_SEEDS=DIR runs its seeds() (files into DIR) instead of
 * fuzzing (docs/RELIABILITY.md). */
static inline void fuzz_write_seed(const char *name, const void *data,
				   size_t len)
{
	const char *dir = getenv("FUZZ_WRITE_SEEDS");
	char path[4096];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "w");
	if (!f || fwrite(data, 1, len, f) != len || fclose(f) != 0) {
		perror(path);
		exit(2);
	}
}

#endif /* IOSTAGE_FUZZ_H */
