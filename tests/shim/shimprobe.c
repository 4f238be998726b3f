/* shimprobe.c - a program whose I/O is known exactly, for the shim's tests.
 *
 *   shimprobe MODE DIR [ARGS]
 *
 * tests/unit/check_shim.c prepares DIR (data/f0..f9 of FILE_SIZE bytes,
 * data/big of 1 MiB, out/ckpt/, out/results/), runs this under LD_PRELOAD
 * with IOSTAGE_TRACE_CLASSES naming DIR/data as a dataset and DIR/out as
 * an output, and compares the summary with the counts documented at each
 * mode. Every mode prints one line on stdout ("MODE ok read=N") and exits
 * 0, so a test can also check that the shim changed neither.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#define FILE_SIZE 10000
#define NFILES 10
#define CHUNK 4096

static char buf[256 * 1024];
static const char *dir;
static unsigned long long total_read;

static void die(const char *what)
{
	fprintf(stderr, "shimprobe: %s: %s\n", what, strerror(errno));
	exit(99);
}

static void path_of(char *out, size_t len, const char *rel)
{
	snprintf(out, len, "%s/%s", dir, rel);
}

/* open, read CHUNK at a time until EOF, close: for a FILE_SIZE file that
 * is reads of 4096, 4096, 1808 and 0 bytes, all consecutive. */
static void read_whole(const char *rel)
{
	char path[4096], b[CHUNK];
	ssize_t n;
	int fd;

	path_of(path, sizeof(path), rel);
	fd = open(path, O_RDONLY);
	if (fd < 0)
		die(path);
	while ((n = read(fd, b, sizeof(b))) > 0)
		__atomic_add_fetch(&total_read, (unsigned long long)n,
				   __ATOMIC_RELAXED);
	if (n < 0)
		die("read");
	close(fd);
}

static int open_rel(const char *rel, int flags)
{
	char path[4096];
	int fd;

	path_of(path, sizeof(path), rel);
	fd = open(path, flags, 0644);
	if (fd < 0)
		die(path);
	return fd;
}

/* basic: in phase read/dataset: 10 whole files (opens 10, reads 40, bytes
 * 100000), then data/big: 5 preads of 4096 at 8192, 0, 4096, 65536, 12288
 * (consecutive 1, sequential 3), lseek to 50 bytes before its end, a read
 * that returns 50, an fstat, close; stat of data/f0 and of a missing file
 * (not counted); data/rw opened O_RDWR: read 10, write 10 (phase run),
 * read 10 (one switch counted in each phase). In checkpoint/output:
 * fopen out/ckpt/model.ckpt, fwrite 3 x 1000 and 1 x 50, fflush, fsync,
 * fclose. In write/output: out/results/r.txt, write 200000 at 0, pwrite
 * 10 at 0. In run/other: other.txt, one write of 5 bytes. */
static void mode_basic(void)
{
	static const off_t offs[] = { 8192, 0, 4096, 65536, 12288 };
	char name[64], path[4096];
	struct stat st;
	FILE *fp;
	int fd;

	for (int i = 0; i < NFILES; i++) {
		snprintf(name, sizeof(name), "data/f%d", i);
		read_whole(name);
	}
	fd = open_rel("data/big", O_RDONLY);
	for (size_t i = 0; i < sizeof(offs) / sizeof(offs[0]); i++)
		total_read += (unsigned long long)pread(fd, buf, CHUNK,
							offs[i]);
	if (lseek(fd, 1048576 - 50, SEEK_SET) < 0)
		die("lseek");
	total_read += (unsigned long long)read(fd, buf, CHUNK);
	if (fstat(fd, &st) < 0)
		die("fstat");
	close(fd);
	path_of(path, sizeof(path), "data/f0");
	if (stat(path, &st) < 0)
		die("stat");
	path_of(path, sizeof(path), "data/missing");
	if (stat(path, &st) == 0 || errno != ENOENT)
		die("stat of a missing file");

	fd = open_rel("data/rw", O_RDWR);
	total_read += (unsigned long long)read(fd, buf, 10);
	if (write(fd, buf, 10) != 10)
		die("write rw");
	total_read += (unsigned long long)read(fd, buf, 10);
	close(fd);

	path_of(path, sizeof(path), "out/ckpt/model.ckpt");
	fp = fopen(path, "w");
	if (!fp)
		die(path);
	if (fwrite(buf, 1000, 3, fp) != 3 || fwrite(buf, 1, 50, fp) != 50 ||
	    fflush(fp) != 0 || fsync(fileno(fp)) != 0)
		die("fwrite");
	fclose(fp);

	fd = open_rel("out/results/r.txt", O_WRONLY | O_CREAT | O_TRUNC);
	if (write(fd, buf, 200000) != 200000 || pwrite(fd, buf, 10, 0) != 10)
		die("write results");
	close(fd);

	fd = open_rel("other.txt", O_WRONLY | O_CREAT | O_TRUNC);
	if (write(fd, "hello", 5) != 5)
		die("write other");
	close(fd);
}

/* fork: parent reads f0, forks; the child reads f1 and exits; the parent
 * waits and reads f2. Parent: 2 files (reads 8), child: 1 (reads 4). */
static void mode_fork(void)
{
	pid_t pid;
	int status;

	read_whole("data/f0");
	pid = fork();
	if (pid < 0)
		die("fork");
	if (pid == 0) {
		read_whole("data/f1");
		exit(0);
	}
	if (waitpid(pid, &status, 0) < 0 || !WIFEXITED(status) ||
	    WEXITSTATUS(status) != 0)
		die("child");
	read_whole("data/f2");
}

/* exec: read f0, then exec ourselves in mode "one" (reads f1) with an
 * environment that has no LD_PRELOAD: the shim must put itself back.
 * One pid, two summaries: "exec" (reads 4) and "exit" (reads 4). */
static void mode_exec(const char *self)
{
	char *argv[] = { (char *)self, "one", (char *)dir, NULL };
	char *envp[64];
	size_t n = 0;
	extern char **environ;

	read_whole("data/f0");
	for (char **e = environ; *e && n < 62; e++)
		if (strncmp(*e, "LD_PRELOAD=", 11) != 0)
			envp[n++] = *e;
	envp[n] = NULL;
	execve(self, argv, envp);
	die("execve");
}

/* execl: the same as exec, through execl and the inherited environment. */
static void mode_execl(const char *self)
{
	read_whole("data/f0");
	execl(self, self, "one", dir, (char *)NULL);
	die("execl");
}

/* vfork: read f0, vfork a child that execs mode "one" (reads f1) with our
 * environment, wait, read f2. The vfork child shares our memory: it must
 * send no summary of its own (it would report ours); the image it execs
 * reports itself. Parent: reads 8; the new image: reads 4; no "exec". */
static void mode_vfork(const char *self)
{
	char *args[] = { (char *)self, "one", (char *)dir, NULL };
	extern char **environ;
	pid_t pid;
	int status;

	read_whole("data/f0");
	pid = vfork();
	if (pid == 0) {
		execve(self, args, environ);
		_exit(127);
	}
	if (pid < 0 || waitpid(pid, &status, 0) < 0 || !WIFEXITED(status) ||
	    WEXITSTATUS(status) != 0)
		die("vfork child");
	read_whole("data/f2");
}

/* system: sh -c 'dd ...' reads data/f3 (10000 bytes in 4 KiB requests);
 * posix_spawn passes our environment, so sh and dd are traced: dd sends
 * a summary with those bytes in read/dataset. */
static void mode_system(void)
{
	char cmd[4200];

	snprintf(cmd, sizeof(cmd),
		 "dd if='%s/data/f3' of=/dev/null bs=4096 status=none", dir);
	if (system(cmd) != 0)
		die("system");
}

static void mode_one(void)
{
	read_whole("data/f1");
}

/* threads: 8 threads each read f0..f9 whole: reads 320, bytes 800000. */
static void *thread_main(void *arg)
{
	char name[64];

	(void)arg;
	for (int i = 0; i < NFILES; i++) {
		snprintf(name, sizeof(name), "data/f%d", i);
		read_whole(name);
	}
	return NULL;
}

static void mode_threads(void)
{
	pthread_t t[8];

	for (int i = 0; i < 8; i++)
		if (pthread_create(&t[i], NULL, thread_main, NULL) != 0)
			die("pthread_create");
	for (int i = 0; i < 8; i++)
		pthread_join(t[i], NULL);
}

/* signal: a 200 us interval timer whose handler write()s a byte to
 * /dev/null while the main thread opens, reads and closes f0 20000 times:
 * reads 80000 in read/dataset; the writes to /dev/null are not counted. */
static int null_fd = -1;
static volatile sig_atomic_t handled;

static void on_alarm(int sig)
{
	int saved = errno;

	(void)sig;
	if (write(null_fd, "x", 1) == 1)
		handled++;
	errno = saved;
}

static void mode_signal(void)
{
	struct sigaction sa = { .sa_handler = on_alarm,
				.sa_flags = SA_RESTART };
	struct itimerval it = { { 0, 200 }, { 0, 200 } };

	null_fd = open("/dev/null", O_WRONLY);
	if (null_fd < 0 || sigaction(SIGALRM, &sa, NULL) < 0 ||
	    setitimer(ITIMER_REAL, &it, NULL) < 0)
		die("timer");
	for (int i = 0; i < 20000; i++)
		read_whole("data/f0");
	memset(&it, 0, sizeof(it));
	setitimer(ITIMER_REAL, &it, NULL);
	if (!handled)
		die("no signal was handled");
}

/* phases: marker "epoch1" around reading f0 (reads 4 in epoch1/dataset),
 * then f1 without a marker (reads 4 in read/dataset), then 20 markers
 * m0..m19, each around one stat of data/f0: the table has room for 10 of
 * them after epoch1, the other 10 count in "other" (phases_folded 10). */
static void mode_phases(void)
{
	void (*phase)(const char *, int) = (void (*)(const char *, int))
	    dlsym(RTLD_DEFAULT, "iostage_shim_phase");
	char name[16], path[4096];
	struct stat st;

	if (!phase)
		die("iostage_shim_phase not found");
	phase("epoch1", 1);
	read_whole("data/f0");
	phase("epoch1", 0);
	read_whole("data/f1");
	path_of(path, sizeof(path), "data/f0");
	for (int i = 0; i < 20; i++) {
		snprintf(name, sizeof(name), "m%d", i);
		phase(name, 1);
		stat(path, &st);
		phase(name, 0);
	}
}

/* paths: how paths find their class. In read/dataset, 5 opens: data/f0
 * relative to the cwd (after chdir), DIR//data/./f1, DIR/out/../data/f2,
 * data/ itself and f3 by openat on it; and 1 stat of data/f4 relative to
 * the cwd after an fchdir to DIR. In run/other, 2 opens: data2/x (a
 * sibling whose name starts like data/) and DIR itself. */
static void mode_paths(void)
{
	char path[4096];
	struct stat st;
	int dfd, fd, top;

	if (chdir(dir) < 0)
		die("chdir");
	close(open("data/f0", O_RDONLY));
	snprintf(path, sizeof(path), "%s//data/./f1", dir);
	close(open(path, O_RDONLY));
	snprintf(path, sizeof(path), "%s/out/../data/f2", dir);
	close(open(path, O_RDONLY));
	snprintf(path, sizeof(path), "%s/data", dir);
	dfd = open(path, O_RDONLY | O_DIRECTORY);
	fd = openat(dfd, "f3", O_RDONLY);
	if (dfd < 0 || fd < 0)
		die("openat");
	close(fd);
	close(dfd);
	close(open_rel("data2/x", O_RDONLY));
	/* Spelt under data/, but it is data2/x. */
	snprintf(path, sizeof(path), "%s/data/../data2/x", dir);
	close(open(path, O_RDONLY));
	if (chdir("/") < 0)
		die("chdir /");
	top = open(dir, O_RDONLY | O_DIRECTORY);
	if (top < 0 || fchdir(top) < 0)
		die("fchdir");
	close(top);
	if (stat("data/f4", &st) < 0)
		die("stat f4");
}

/* stdio: fopen data/f0, fread 100 twice (consecutive), fseek to 5000,
 * fread 100 (sequential only), rewind, fread 100 (neither), fclose; in
 * read/dataset: opens 3 (with f1 and f2 below), reads 4, bytes 400,
 * consec 2, seq 3, seeks 2. out/results/log.txt opened "a" and 3 fwrites
 * of 10 (write/output: all consecutive and sequential, no max byte).
 * f1 and f2 opened, then closed by close_range; a pipe reuses their fds
 * and a 5-byte write to it is not counted (not a dataset, not a file). */
static void mode_stdio(void)
{
	char path[4096], b[100];
	int fa, fb, p[2];
	FILE *fp;

	path_of(path, sizeof(path), "data/f0");
	fp = fopen(path, "r");
	if (!fp || fread(b, 1, 100, fp) != 100 || fread(b, 100, 1, fp) != 1 ||
	    fseek(fp, 5000, SEEK_SET) != 0 || fread(b, 1, 100, fp) != 100)
		die("stdio read");
	rewind(fp);
	if (fread(b, 1, 100, fp) != 100)
		die("fread after rewind");
	fclose(fp);
	path_of(path, sizeof(path), "out/results/log.txt");
	fp = fopen(path, "a");
	for (int i = 0; i < 3; i++)
		if (!fp || fwrite(b, 1, 10, fp) != 10)
			die("append");
	fclose(fp);
	fa = open_rel("data/f1", O_RDONLY);
	fb = open_rel("data/f2", O_RDONLY);
	if (fb != fa + 1 || close_range((unsigned)fa, (unsigned)fb, 0) < 0)
		die("close_range");
	/* A pipe the shim does not see made: only the closed entries keep
	 * it from being taken for the files. */
	if (syscall(SYS_pipe2, p, 0) < 0 || p[0] != fa ||
	    write(p[1], "hello", 5) != 5)
		die("pipe");
	close(p[0]);
	close(p[1]);
}

static void must_write(int fd, size_t n, const char *what)
{
	if (write(fd, buf, n) != (ssize_t)n)
		die(what);
}

static void must_read(int fd, size_t n, const char *what)
{
	if (read(fd, buf, n) != (ssize_t)n)
		die(what);
}

/* kinds: only file I/O is counted. Counted:
 *   read/dataset: data/f0 opened, read 10000; a dup of it, pread 100 at
 *     0; data/f3 opened by a raw system call (the shim does not see it
 *     opened), read 10000: opens 1, reads 3, bytes 20100.
 *   write/output: out/results/k.txt opened, 1000 bytes through an
 *     fcntl(F_DUPFD) copy, 300 through stdout dup2'ed onto it: opens 1,
 *     writes 2, bytes 1300 (k.txt listed in files with 1300).
 *   run/other: other.txt opened, 7 bytes written: opens 1, writes 1.
 * Not counted at all (not file I/O): stdout put back (a pipe), /dev/null
 * and /dev/zero, a pipe, a socketpair, /proc/self/status (a regular file
 * of procfs), a FIFO in DIR opened by its path, a pipe made by a raw
 * system call. */
static void mode_kinds(void)
{
	char path[4096];
	int fd, d, o, o2, saved, n, p[2], q[2];

	fd = open_rel("data/f0", O_RDONLY);
	must_read(fd, FILE_SIZE, "read f0");
	d = dup(fd);
	if (d < 0 || pread(d, buf, 100, 0) != 100)
		die("pread dup");
	close(d);
	close(fd);
	path_of(path, sizeof(path), "data/f3");
	fd = (int)syscall(SYS_openat, AT_FDCWD, path, O_RDONLY);
	if (fd < 0)
		die("raw open");
	must_read(fd, FILE_SIZE, "read raw f3");
	close(fd);

	o = open_rel("out/results/k.txt", O_WRONLY | O_CREAT | O_TRUNC);
	o2 = fcntl(o, F_DUPFD, 20);
	if (o2 < 20)
		die("F_DUPFD");
	must_write(o2, 1000, "write dupfd");
	close(o2);
	fflush(stdout);
	saved = fcntl(1, F_DUPFD_CLOEXEC, 30);
	if (saved < 30 || dup2(o, 1) != 1)
		die("redirect stdout");
	must_write(1, 300, "write stdout to file");
	if (dup2(saved, 1) != 1)
		die("restore stdout");
	close(saved);
	close(o);
	if (write(1, "kinds: stdout is a pipe again\n", 30) != 30)
		die("write stdout");

	n = open("/dev/null", O_WRONLY);
	if (n < 0)
		die("/dev/null");
	must_write(n, 100, "write /dev/null");
	close(n);
	n = open("/dev/zero", O_RDONLY);
	if (n < 0)
		die("/dev/zero");
	must_read(n, 1000, "read /dev/zero");
	close(n);
	if (pipe(p) < 0)
		die("pipe");
	must_write(p[1], 5, "write pipe");
	must_read(p[0], 5, "read pipe");
	close(p[0]);
	close(p[1]);
	if (socketpair(AF_UNIX, SOCK_STREAM, 0, p) < 0)
		die("socketpair");
	must_write(p[0], 5, "write socket");
	must_read(p[1], 5, "read socket");
	close(p[0]);
	close(p[1]);
	n = open("/proc/self/status", O_RDONLY);
	if (n < 0 || read(n, buf, 100) <= 0)
		die("/proc/self/status");
	close(n);
	path_of(path, sizeof(path), "fifo");
	if (mkfifo(path, 0600) < 0)
		die("mkfifo");
	n = open(path, O_RDWR);
	if (n < 0)
		die("open fifo");
	must_write(n, 5, "write fifo");
	must_read(n, 5, "read fifo");
	close(n);
	if (syscall(SYS_pipe2, q, 0) < 0)
		die("raw pipe");
	must_write(q[1], 5, "write raw pipe");
	must_read(q[0], 5, "read raw pipe");
	close(q[0]);
	close(q[1]);

	o = open_rel("other.txt", O_WRONLY | O_CREAT | O_TRUNC);
	must_write(o, 7, "write other");
	close(o);
}

/* inherit: run by mode "redirect" with stdin on data/f2 and stdout on
 * out/results/redir.txt, both opened by the shell: reads stdin to its
 * end (read/dataset: bytes 10000, no open) and writes 123 bytes to stdout
 * (write/output: bytes 123, listed in files), then 4 bytes to stderr
 * (/dev/null: not counted). */
static void mode_inherit(void)
{
	ssize_t n;

	while ((n = read(0, buf, CHUNK)) > 0)
		total_read += (unsigned long long)n;
	if (n < 0 || total_read != FILE_SIZE)
		die("read stdin");
	must_write(1, 123, "write stdout");
	must_write(2, 4, "write stderr");
}

/* redirect: sh -c 'exec shimprobe inherit DIR <DIR/data/f2
 * >DIR/out/results/redir.txt 2>/dev/null': the image after the exec
 * sees only fds it did not open (mode inherit). */
static void mode_redirect(const char *self)
{
	char cmd[12800];

	snprintf(cmd, sizeof(cmd),
		 "exec '%s' inherit '%s' <'%s/data/f2' "
		 ">'%s/out/results/redir.txt' 2>/dev/null",
		 self, dir, dir, dir);
	if (system(cmd) != 0)
		die("system");
}

/* copy: in-kernel copies. copy_file_range data/f0 -> out/results/c.bin,
 * sendfile data/f1 -> out/results/s.bin (at an explicit offset 0),
 * sendfile data/f2 -> a pipe. read/dataset: reads 3, bytes 30000 (the
 * opens 3); write/output: opens 2, writes 2, bytes 20000, c.bin and
 * s.bin listed with 10000 each; the pipe's side is not counted. */
static void mode_copy(void)
{
	int in, out, p[2];
	off_t off = 0;

	in = open_rel("data/f0", O_RDONLY);
	out = open_rel("out/results/c.bin", O_WRONLY | O_CREAT | O_TRUNC);
	if (copy_file_range(in, NULL, out, NULL, FILE_SIZE, 0) != FILE_SIZE)
		die("copy_file_range");
	close(in);
	close(out);
	in = open_rel("data/f1", O_RDONLY);
	out = open_rel("out/results/s.bin", O_WRONLY | O_CREAT | O_TRUNC);
	if (sendfile(out, in, &off, FILE_SIZE) != FILE_SIZE || off != FILE_SIZE)
		die("sendfile");
	close(in);
	close(out);
	in = open_rel("data/f2", O_RDONLY);
	if (pipe(p) < 0 || sendfile(p[1], in, NULL, FILE_SIZE) != FILE_SIZE)
		die("sendfile to a pipe");
	close(in);
	close(p[0]);
	close(p[1]);
}

/* highfd: fds beyond the shim's table (4096). data/f0 dup2'ed to fd 5000,
 * 100 bytes read there: run/other, reads 1, bytes 100 (no entry: class
 * other); a pipe's end dup2'ed to 5001, 5 bytes written: not counted.
 * Prints "highfd skipped" instead when the fd limit cannot be raised. */
static int mode_highfd(void)
{
	struct rlimit rl;
	int fd, p[2];

	if (getrlimit(RLIMIT_NOFILE, &rl) < 0 || rl.rlim_max < 5002)
		return 1;
	rl.rlim_cur = 5002;
	if (setrlimit(RLIMIT_NOFILE, &rl) < 0)
		return 1;
	fd = open_rel("data/f0", O_RDONLY);
	if (dup2(fd, 5000) != 5000 || pread(5000, buf, 100, 0) != 100)
		die("high fd read");
	close(5000);
	close(fd);
	if (pipe(p) < 0 || dup2(p[1], 5001) != 5001)
		die("high pipe");
	must_write(5001, 5, "high pipe write");
	close(5001);
	close(p[0]);
	close(p[1]);
	return 0;
}

/* errno: what failing calls leave in errno, printed; the test compares a
 * run with the shim against one without. */
static void mode_errno(void)
{
	char path[4096];
	struct stat st;
	int fd;

	path_of(path, sizeof(path), "data/missing");
	fd = open(path, O_RDONLY);
	printf("open=%d/%d ", fd, errno);
	errno = 0;
	printf("read=%zd/%d ", read(-1, buf, 1), errno);
	errno = 0;
	printf("stat=%d/%d ", stat(path, &st), errno);
	errno = 0;
	printf("fopen=%d/%d ", fopen(path, "r") != NULL, errno);
	errno = 0;
	printf("close=%d/%d ", close(12345), errno);
	/* A success leaves errno as it was. */
	errno = 42;
	fd = open_rel("data/f0", O_RDONLY);
	printf("kept=%d ", errno);
	close(fd);
}

int main(int argc, char **argv)
{
	const char *mode;

	if (argc < 3) {
		fprintf(stderr, "usage: shimprobe MODE DIR\n");
		return 2;
	}
	mode = argv[1];
	dir = argv[2];
	if (strcmp(mode, "basic") == 0)
		mode_basic();
	else if (strcmp(mode, "fork") == 0)
		mode_fork();
	else if (strcmp(mode, "exec") == 0)
		mode_exec(argv[0]);
	else if (strcmp(mode, "execl") == 0)
		mode_execl(argv[0]);
	else if (strcmp(mode, "vfork") == 0)
		mode_vfork(argv[0]);
	else if (strcmp(mode, "system") == 0)
		mode_system();
	else if (strcmp(mode, "one") == 0)
		mode_one();
	else if (strcmp(mode, "threads") == 0)
		mode_threads();
	else if (strcmp(mode, "signal") == 0)
		mode_signal();
	else if (strcmp(mode, "phases") == 0)
		mode_phases();
	else if (strcmp(mode, "stdio") == 0)
		mode_stdio();
	else if (strcmp(mode, "paths") == 0)
		mode_paths();
	else if (strcmp(mode, "errno") == 0)
		mode_errno();
	else if (strcmp(mode, "kinds") == 0)
		mode_kinds();
	else if (strcmp(mode, "copy") == 0)
		mode_copy();
	else if (strcmp(mode, "highfd") == 0) {
		if (mode_highfd() != 0) {
			printf("highfd skipped\n");
			return 0;
		}
	} else if (strcmp(mode, "inherit") == 0)
		mode_inherit();
	else if (strcmp(mode, "redirect") == 0)
		mode_redirect(argv[0]);
	else {
		fprintf(stderr, "shimprobe: unknown mode '%s'\n", mode);
		return 2;
	}
	printf("%s ok read=%llu\n", mode, total_read);
	return 0;
}
