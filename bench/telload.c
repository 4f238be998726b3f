/* telload.c - the load for bench/sampler.sh: N processes that each read
 * 64 KiB from /dev/zero every 10 ms (a task doing light I/O, no forks).
 * Prints the children's pids, one a line, then waits for SIGTERM or
 * SIGINT and takes the children with it. */
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 100;
	pid_t *pids;
	sigset_t set, old;

	if (n < 1 || n > 10000) {
		fprintf(stderr, "usage: telload N (1..10000)\n");
		return 2;
	}
	pids = calloc((size_t)n, sizeof(*pids));
	if (!pids)
		return 1;
	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	sigprocmask(SIG_BLOCK, &set, &old);
	signal(SIGTERM, on_signal);
	signal(SIGINT, on_signal);
	for (int i = 0; i < n; i++) {
		pids[i] = fork();
		if (pids[i] == 0) {
			static char buf[65536];
			struct timespec ts = { 0, 10 * 1000 * 1000 };
			int fd = open("/dev/zero", O_RDONLY);

			signal(SIGTERM, SIG_DFL);
			sigprocmask(SIG_SETMASK, &old, NULL);
			for (;;) {
				if (read(fd, buf, sizeof(buf)) < 0)
					_exit(1);
				nanosleep(&ts, NULL);
			}
		}
		printf("%d\n", (int)pids[i]);
	}
	fflush(stdout);
	while (!stop)
		sigsuspend(&old);
	for (int i = 0; i < n; i++)
		if (pids[i] > 0)
			kill(pids[i], SIGTERM);
	while (wait(NULL) > 0)
		;
	return 0;
}
