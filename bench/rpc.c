/* rpc.c - send iostaged protocol requests and time them.
 *
 * socat either half-closes the socket after the request (which a daemon may
 * take as a hang-up before a long "wait" answers) or lingers for its -t
 * timeout after the reply, which would swamp a sub-second measurement. This
 * sends each REQUEST as one line on a fresh connection, reads exactly one
 * reply line, and prints it; the last line printed is the wall time of all
 * round trips, "elapsed SECONDS".
 *
 * Exit status: 0 when every reply arrived and contains "ok":true, 1
 * otherwise, 2 on bad usage.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#define RPC_LINE_MAX (256 * 1024)

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* One round trip. Returns 0 and fills LINE, or -1 with a message on stderr. */
static int call(const char *sock, const char *req, int timeout_ms, char *line,
		size_t linelen)
{
	struct sockaddr_un sa;
	size_t len = 0, reqlen = strlen(req);
	int fd;

	memset(&sa, 0, sizeof(sa));
	sa.sun_family = AF_UNIX;
	if (strlen(sock) >= sizeof(sa.sun_path)) {
		fprintf(stderr, "iostage-rpc: socket path too long: %s\n",
			sock);
		return -1;
	}
	strcpy(sa.sun_path, sock);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		fprintf(stderr, "iostage-rpc: cannot connect to %s: %s\n", sock,
			strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	if (write(fd, req, reqlen) != (ssize_t)reqlen ||
	    write(fd, "\n", 1) != 1) {
		fprintf(stderr, "iostage-rpc: cannot send to %s: %s\n", sock,
			strerror(errno));
		close(fd);
		return -1;
	}
	for (;;) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		ssize_t n;
		char *nl;

		if (poll(&p, 1, timeout_ms) == 0) {
			fprintf(stderr, "iostage-rpc: no reply within %d ms\n",
				timeout_ms);
			close(fd);
			return -1;
		}
		n = read(fd, line + len, linelen - 1 - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			fprintf(stderr, "iostage-rpc: connection closed before "
					"a reply\n");
			close(fd);
			return -1;
		}
		len += (size_t)n;
		line[len] = '\0';
		nl = strchr(line, '\n');
		if (nl) {
			*nl = '\0';
			break;
		}
		if (len == linelen - 1) {
			fprintf(stderr, "iostage-rpc: reply too long\n");
			close(fd);
			return -1;
		}
	}
	close(fd);
	return 0;
}

int main(int argc, char **argv)
{
	static char line[RPC_LINE_MAX];
	double t0;
	int i, timeout_s, rc = 0;

	if (argc < 4) {
		fprintf(stderr,
			"usage: iostage-rpc SOCKET TIMEOUT_S REQUEST...\n");
		return 2;
	}
	timeout_s = atoi(argv[2]);
	if (timeout_s <= 0 || timeout_s > 86400) {
		fprintf(stderr, "iostage-rpc: TIMEOUT_S must be 1..86400\n");
		return 2;
	}
	t0 = now_s();
	for (i = 3; i < argc; i++) {
		if (call(argv[1], argv[i], timeout_s * 1000, line,
			 sizeof(line)) < 0)
			return 1;
		printf("%s\n", line);
		if (!strstr(line, "\"ok\":true"))
			rc = 1;
	}
	printf("elapsed %.6f\n", now_s() - t0);
	return rc;
}
