/* loadgen.c - load on iostaged for tests/integration/test_load.sh.
 *
 *   loadgen unix SOCKET COUNT CONC LINE...   COUNT requests, one per
 *       connection, CONC at a time, cycling through the LINEs
 *   loadgen http HOST PORT COUNT CONC         COUNT GET /metrics
 *   loadgen hostile SOCKET COUNT SECONDS      COUNT connections held open
 *       for SECONDS: a third send garbage lines (and read the errors), a
 *       third trickle a line that never ends, a third stay silent
 *   loadgen hostile HOST:PORT COUNT SECONDS   the same over TCP (/metrics)
 *
 * A shell loop of socat or curl forks twice per request, which on two
 * shared cores is slower than the daemon: the figures would be the
 * loop's. Each mode prints one line of key=value figures on stdout:
 *   unix/http: sent ok answered refused lost elapsed_s
 *     ok: "ok":true (HTTP 200); answered: any reply line (any status);
 *     refused: "too many connections" (HTTP 503); lost: no reply at all
 *   hostile: opened refused closed_by_server held
 * Exit status: 0 when every request was answered with ok (hostile: when
 * every connection was made), 1 otherwise, 2 on bad usage.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#define LG_REPLY_MAX (4 * 1024 * 1024)
#define LG_TIMEOUT_MS 60000

static const char *sock_path;
static struct sockaddr_in http_addr;
static char **lines;
static int nlines;
static atomic_long next_req, n_ok, n_answered, n_refused, n_lost;
static long count;
static int is_http;

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int connect_unix(const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return -1;
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		close(fd);
		return -1;
	}
	return fd;
}

static int connect_http(void)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return -1;
	if (connect(fd, (struct sockaddr *)&http_addr, sizeof(http_addr)) < 0) {
		close(fd);
		return -1;
	}
	return fd;
}

static int write_all(int fd, const char *p, size_t len)
{
	while (len) {
		ssize_t n = write(fd, p, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

/* Read into BUF until a newline (unix) or EOF (http); bytes read. */
static size_t read_reply(int fd, char *buf, size_t cap, int until_eof)
{
	size_t len = 0;
	struct pollfd p = { .fd = fd, .events = POLLIN };

	while (len + 1 < cap) {
		ssize_t n;

		if (poll(&p, 1, LG_TIMEOUT_MS) <= 0)
			break;
		n = read(fd, buf + len, cap - 1 - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		len += (size_t)n;
		if (!until_eof && memchr(buf + len - n, '\n', (size_t)n))
			break;
	}
	buf[len] = '\0';
	return len;
}

static void one_request(long i, char *buf)
{
	const char *req = lines[i % nlines];
	int fd = is_http ? connect_http() : connect_unix(sock_path);
	size_t len;

	if (fd < 0) {
		atomic_fetch_add(&n_lost, 1);
		return;
	}
	if (is_http) {
		static const char get[] =
		    "GET /metrics HTTP/1.0\r\nHost: loadgen\r\n\r\n";

		if (write_all(fd, get, sizeof(get) - 1) < 0) {
			close(fd);
			atomic_fetch_add(&n_lost, 1);
			return;
		}
	} else if (write_all(fd, req, strlen(req)) < 0 ||
		   write_all(fd, "\n", 1) < 0) {
		close(fd);
		atomic_fetch_add(&n_lost, 1);
		return;
	}
	len = read_reply(fd, buf, LG_REPLY_MAX, is_http);
	close(fd);
	if (len == 0) {
		atomic_fetch_add(&n_lost, 1);
		return;
	}
	atomic_fetch_add(&n_answered, 1);
	if (is_http ? strncmp(buf + 8, " 200", 4) == 0
		    : strstr(buf, "\"ok\":true") != NULL)
		atomic_fetch_add(&n_ok, 1);
	else if (is_http ? strncmp(buf + 8, " 503", 4) == 0
			 : strstr(buf, "too many connections") != NULL)
		atomic_fetch_add(&n_refused, 1);
	else if (atomic_load(&n_answered) - atomic_load(&n_ok) <= 3)
		fprintf(stderr, "loadgen: reply not ok: %.200s\n", buf);
}

static void *worker(void *arg)
{
	char *buf = malloc(LG_REPLY_MAX);
	long i;

	(void)arg;
	if (!buf)
		return NULL;
	while ((i = atomic_fetch_add(&next_req, 1)) < count)
		one_request(i, buf);
	free(buf);
	return NULL;
}

static int run_requests(int conc)
{
	pthread_t *th = calloc((size_t)conc, sizeof(*th));
	double t0 = now_s();
	int i, started = 0;

	if (!th)
		return 1;
	for (i = 0; i < conc; i++)
		if (pthread_create(&th[i], NULL, worker, NULL) == 0)
			started++;
		else
			break;
	for (i = 0; i < started; i++)
		pthread_join(th[i], NULL);
	free(th);
	if (!started)
		worker(NULL);
	printf("sent=%ld ok=%ld answered=%ld refused=%ld lost=%ld "
	       "elapsed_s=%.2f\n",
	       count, atomic_load(&n_ok), atomic_load(&n_answered),
	       atomic_load(&n_refused), atomic_load(&n_lost), now_s() - t0);
	return atomic_load(&n_ok) == count ? 0 : 1;
}

/* SOCK is a Unix socket path, or HOST:PORT. */
static int connect_target(const char *sock)
{
	const char *colon = strrchr(sock, ':');
	char host[64];

	if (sock[0] == '/' || !colon || (size_t)(colon - sock) >= sizeof(host))
		return connect_unix(sock);
	memcpy(host, sock, (size_t)(colon - sock));
	host[colon - sock] = '\0';
	http_addr.sin_family = AF_INET;
	http_addr.sin_port = htons((uint16_t)atoi(colon + 1));
	if (inet_pton(AF_INET, host, &http_addr.sin_addr) != 1)
		return -1;
	return connect_http();
}

/* Connections that use up slots: garbage, an endless line, silence. */
static int run_hostile(const char *sock, long n, int seconds)
{
	int *fds = calloc((size_t)n, sizeof(int));
	long i, opened = 0, refused = 0, closed = 0, held = 0;
	double end;
	char buf[4096];

	if (!fds)
		return 1;
	for (i = 0; i < n; i++) {
		fds[i] = connect_target(sock);
		if (fds[i] >= 0) {
			fcntl(fds[i], F_SETFL, O_NONBLOCK);
			opened++;
		}
	}
	end = now_s() + seconds;
	while (now_s() < end) {
		struct timespec ts = { 0, 200 * 1000 * 1000 };

		for (i = 0; i < n; i++) {
			ssize_t r;

			if (fds[i] < 0)
				continue;
			/* read what the daemon says (errors, refusals) */
			while ((r = read(fds[i], buf, sizeof(buf) - 1)) > 0) {
				buf[r] = '\0';
				if (strstr(buf, "too many connections"))
					refused++;
			}
			if (r == 0) {
				close(fds[i]);
				fds[i] = -1;
				closed++;
				continue;
			}
			if (i % 3 == 0) {
				static const char junk[] =
				    "\x01\xff{not json at all]]\n";

				if (write(fds[i], junk, sizeof(junk) - 1) < 0 &&
				    errno != EAGAIN) {
					close(fds[i]);
					fds[i] = -1;
					closed++;
				}
			} else if (i % 3 == 1) {
				if (write(fds[i], "{", 1) < 0 &&
				    errno != EAGAIN) {
					close(fds[i]);
					fds[i] = -1;
					closed++;
				}
			}
		}
		nanosleep(&ts, NULL);
	}
	for (i = 0; i < n; i++)
		if (fds[i] >= 0) {
			held++;
			close(fds[i]);
		}
	free(fds);
	printf("opened=%ld refused=%ld closed_by_server=%ld held=%ld\n", opened,
	       refused, closed, held);
	return opened == n ? 0 : 1;
}

static int usage(void)
{
	fprintf(stderr, "usage: loadgen unix SOCKET COUNT CONC LINE...\n"
			"       loadgen http HOST PORT COUNT CONC\n"
			"       loadgen hostile SOCKET COUNT SECONDS\n");
	return 2;
}

int main(int argc, char **argv)
{
	/* A refused connection is closed under our writes: EPIPE, counted. */
	signal(SIGPIPE, SIG_IGN);
	if (argc >= 6 && !strcmp(argv[1], "unix")) {
		sock_path = argv[2];
		count = atol(argv[3]);
		lines = argv + 5;
		nlines = argc - 5;
		return run_requests(atoi(argv[4]) > 0 ? atoi(argv[4]) : 1);
	}
	if (argc == 6 && !strcmp(argv[1], "http")) {
		static char *none[] = { "" };

		is_http = 1;
		http_addr.sin_family = AF_INET;
		http_addr.sin_port = htons((uint16_t)atoi(argv[3]));
		if (inet_pton(AF_INET, argv[2], &http_addr.sin_addr) != 1)
			return usage();
		count = atol(argv[4]);
		lines = none;
		nlines = 1;
		return run_requests(atoi(argv[5]) > 0 ? atoi(argv[5]) : 1);
	}
	if (argc == 5 && !strcmp(argv[1], "hostile"))
		return run_hostile(argv[2], atol(argv[3]), atoi(argv[4]));
	return usage();
}
