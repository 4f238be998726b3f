/* lrprobe.c - reads of a spread view's cut file whose right answer is
 * known, for libiostage-localread.so's tests.
 *
 *   lrprobe MODE FILE PFSFILE
 *
 * tests/unit/check_localread.c mounts a view over a "PFS" and runs this
 * under LD_PRELOAD of the library, on FILE (the view's, through the
 * overlay) against PFSFILE (the same bytes, straight). Each mode prints
 * "MODE ok" and exits 0, or one line saying what differed and exits 1:
 *
 *   read    read() in odd steps to the end, then pread at offsets that
 *           straddle chunks, past the end and of 0 bytes, read() after
 *           lseek (and the offset read() leaves), from four threads at
 *           once, and in a forked child
 *   mmap    the file mapped (left to the view) equals the PFS's
 *   reuse   the fd closed behind the library's back (a raw close) and its
 *           number given to a pipe: read() reads the pipe
 *   dup     dup2 of a pipe over the fd: read() reads the pipe
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#define MIB (1 << 20)

static char *want;  /* the PFS file's bytes */
static size_t size; /* its size */
static const char *file;

static void fail(const char *what)
{
	printf("%s\n", what);
	exit(1);
}

static void load(const char *pfs)
{
	struct stat st;
	int fd = open(pfs, O_RDONLY | O_CLOEXEC);

	if (fd < 0 || fstat(fd, &st) < 0)
		fail("cannot open the PFS file");
	size = (size_t)st.st_size;
	want = malloc(size + 1);
	if (!want || pread(fd, want, size, 0) != (ssize_t)size)
		fail("cannot read the PFS file");
	close(fd);
}

static int open_file(void)
{
	int fd = open(file, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		fail("cannot open the view's file");
	return fd;
}

/* LEN bytes at OFF by pread, checked: the count pread must return is
 * what lies before the end. */
static void check_pread(int fd, size_t off, size_t len)
{
	char *b = malloc(len + 1);
	size_t expect = off >= size ? 0 : size - off < len ? size - off : len;
	ssize_t n = pread(fd, b, len, (off_t)off);

	if (n != (ssize_t)expect) {
		printf("pread at %zu of %zu: %zd, not %zu\n", off, len, n,
		       expect);
		exit(1);
	}
	if (expect && memcmp(b, want + off, expect)) {
		printf("pread at %zu of %zu: bytes differ\n", off, len);
		exit(1);
	}
	free(b);
}

/* The whole file by read() in STEP bytes at a time. */
static void check_read_all(int fd, size_t step)
{
	char *b = malloc(size + step);
	size_t done = 0;
	ssize_t n;

	while ((n = read(fd, b + done, step)) > 0)
		done += (size_t)n;
	if (n < 0 || done != size || memcmp(b, want, size)) {
		printf("read in steps of %zu: %zu bytes, %s\n", step, done,
		       n < 0 ? strerror(errno) : "bytes differ");
		exit(1);
	}
	free(b);
}

static void *thread_main(void *arg)
{
	int fd = *(int *)arg;

	for (size_t off = 0; off < size; off += 3 * MIB / 4 + 17)
		check_pread(fd, off, MIB / 3);
	return NULL;
}

static void mode_read(void)
{
	int fd = open_file();
	char b[64];
	pthread_t t[4];
	pid_t pid;
	int status;

	check_read_all(fd, 333333);
	if (read(fd, b, sizeof(b)) != 0)
		fail("read at the end: not 0");
	check_pread(fd, 0, size);
	check_pread(fd, MIB - 10, 20);
	check_pread(fd, 3 * MIB - 1, 2 * MIB + 5);
	check_pread(fd, size - 7, 100);
	check_pread(fd, size + 5, 10);
	check_pread(fd, 12345, 0);
	/* read() after lseek, and where it leaves the offset */
	if (size < 4 * MIB) {
		close(fd); /* a small file: the reads above are all */
		return;
	}
	if (lseek(fd, 2 * MIB - 3, SEEK_SET) != 2 * MIB - 3)
		fail("lseek");
	if (read(fd, b, sizeof(b)) != sizeof(b) ||
	    memcmp(b, want + 2 * MIB - 3, sizeof(b)))
		fail("read after lseek differs");
	if (lseek(fd, 0, SEEK_CUR) != 2 * MIB - 3 + (off_t)sizeof(b))
		fail("read() left the offset elsewhere");
	for (int i = 0; i < 4; i++)
		pthread_create(&t[i], NULL, thread_main, &fd);
	for (int i = 0; i < 4; i++)
		pthread_join(t[i], NULL);
	/* a child reads on the fd it inherited */
	lseek(fd, 0, SEEK_SET);
	pid = fork();
	if (pid == 0) {
		check_read_all(fd, MIB + 1);
		_exit(0);
	}
	if (pid < 0 || waitpid(pid, &status, 0) != pid || status != 0)
		fail("the child's reads differ");
	close(fd);
}

static void mode_mmap(void)
{
	int fd = open_file();
	void *m = mmap(NULL, size, PROT_READ, MAP_SHARED, fd, 0);

	if (m == MAP_FAILED || memcmp(m, want, size))
		fail("mmap differs");
	munmap(m, size);
	close(fd);
}

static void mode_reuse(void)
{
	int fd = open_file(), p[2];
	char b[16];

	check_pread(fd, 0, 100); /* the library knows the fd now */
	syscall(SYS_close, fd);  /* and does not see it go */
	if (pipe(p) < 0 || p[0] != fd)
		fail("the pipe did not get the fd's number");
	if (write(p[1], "hello", 5) != 5)
		fail("write to the pipe");
	if (read(fd, b, sizeof(b)) != 5 || memcmp(b, "hello", 5))
		fail("read() on the reused fd did not read the pipe");
	close(p[0]);
	close(p[1]);
}

static void mode_dup(void)
{
	int fd = open_file(), p[2];
	char b[16];

	check_pread(fd, 0, 100);
	if (pipe(p) < 0 || dup2(p[0], fd) != fd)
		fail("dup2");
	if (write(p[1], "hello", 5) != 5)
		fail("write to the pipe");
	if (read(fd, b, sizeof(b)) != 5 || memcmp(b, "hello", 5))
		fail("read() after dup2 did not read the pipe");
	close(p[0]);
	close(p[1]);
	close(fd);
}

int main(int argc, char **argv)
{
	if (argc != 4) {
		fprintf(stderr, "usage: lrprobe MODE FILE PFSFILE\n");
		return 2;
	}
	file = argv[2];
	load(argv[3]);
	if (!strcmp(argv[1], "read"))
		mode_read();
	else if (!strcmp(argv[1], "mmap"))
		mode_mmap();
	else if (!strcmp(argv[1], "reuse"))
		mode_reuse();
	else if (!strcmp(argv[1], "dup"))
		mode_dup();
	else
		fail("unknown mode");
	printf("%s ok\n", argv[1]);
	return 0;
}
