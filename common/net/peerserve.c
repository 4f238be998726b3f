/* peerserve.c - a bounded TCP server for common/net/peernet requests (see
 * peerserve.h). */
#define _GNU_SOURCE
#include "common/net/peerserve.h"

#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "common/net/peernet.h"
#include "common/net/proto.h"

cJSON peerserve_taken;

struct conn {
	struct peerserve *s;
	int fd;
};

static void warn(const struct peerserve *s, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void warn(const struct peerserve *s, const char *fmt, ...)
{
	char line[256];
	va_list ap;

	if (!s->warn)
		return;
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	s->warn(line);
}

void peerserve_reply_and_close(int fd, cJSON *reply, int send_ms)
{
	if (!reply)
		reply = proto_reply_error("out of memory");
	if (reply && peernet_send(fd, reply, send_ms) < 0 &&
	    errno == EMSGSIZE) {
		cJSON_Delete(reply);
		reply = proto_reply_error("reply longer than %d bytes",
					  PEERNET_LINE_MAX);
		if (reply)
			peernet_send(fd, reply, send_ms);
	}
	cJSON_Delete(reply);
	close(fd);
}

/* One connection: one request, one reply (or a session the callback
 * answered itself). */
static void serve_one(struct peerserve *s, int fd)
{
	cJSON *reply = s->serve(fd, s->arg);

	if (reply == PEERSERVE_TAKEN)
		close(fd);
	else
		peerserve_reply_and_close(fd, reply, s->send_ms);
}

/* A connection thread: its first connection, then the ones handed to it
 * while it waits idle, until none comes for PEERSERVE_IDLE_S or the
 * server stops. */
static void *conn_thread(void *arg)
{
	struct conn c = *(struct conn *)arg;
	struct peerserve *s = c.s;
	int fd = c.fd;

	free(arg);
	for (;;) {
		struct timespec until;

		serve_one(s, fd);
		pthread_mutex_lock(&s->lock);
		s->nconn--;
		pthread_cond_broadcast(&s->cond);
		clock_gettime(CLOCK_REALTIME, &until);
		until.tv_sec += PEERSERVE_IDLE_S;
		if (s->nidle >= PEERSERVE_IDLE_MAX) {
			/* enough wait already: after a burst of a thousand
			 * connections, a thousand idle threads would hold
			 * their memory for nothing */
			s->nthreads--;
			pthread_cond_broadcast(&s->cond);
			pthread_mutex_unlock(&s->lock);
			return NULL;
		}
		s->nidle++;
		while (!s->qlen && !s->stopping)
			if (pthread_cond_timedwait(&s->idle_cond, &s->lock,
						   &until) == ETIMEDOUT)
				break;
		s->nidle--;
		if (!s->qlen) {
			/* idle too long, or stopping */
			s->nthreads--;
			pthread_cond_broadcast(&s->cond);
			pthread_mutex_unlock(&s->lock);
			return NULL;
		}
		fd = s->queue[s->qhead];
		s->qhead = (s->qhead + 1) % s->conn_max;
		s->qlen--;
		pthread_mutex_unlock(&s->lock);
	}
}

static void accept_one(struct peerserve *s)
{
	struct timeval tv = { .tv_sec = s->send_ms / 1000 };
	pthread_attr_t attr;
	pthread_t t;
	struct conn *c;
	int fd = accept4(s->listen_fd, NULL, NULL, SOCK_CLOEXEC), r;

	if (fd < 0) {
		if (errno == EMFILE || errno == ENFILE) {
			struct timespec ts = { 0, 100 * 1000 * 1000 };

			warn(s, "accept: %s", strerror(errno));
			nanosleep(&ts, NULL);
		}
		return;
	}
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	/* Replies are small lines and file bodies that must leave at once:
	 * with Nagle, a body waited for the ACK of its header, which the
	 * client delays (~4 ms per file of a fill, measured). */
	r = 1;
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &r, sizeof(r));
	pthread_mutex_lock(&s->lock);
	if (s->nconn >= s->conn_max) {
		pthread_mutex_unlock(&s->lock);
		warn(s, "connection refused: %u already served", s->conn_max);
		peerserve_reply_and_close(fd,
					  proto_reply_error(s->busy_fmt,
							    s->conn_max),
					  s->send_ms);
		return;
	}
	s->nconn++;
	if (s->nidle > s->qlen) {
		/* a thread waits for work: hand it over */
		s->queue[(s->qhead + s->qlen) % s->conn_max] = fd;
		s->qlen++;
		pthread_cond_signal(&s->idle_cond);
		pthread_mutex_unlock(&s->lock);
		return;
	}
	s->nthreads++;
	pthread_mutex_unlock(&s->lock);
	c = malloc(sizeof(*c));
	if (!c) {
		r = ENOMEM;
	} else {
		*c = (struct conn){ s, fd };
		pthread_attr_init(&attr);
		pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
		if (s->stack_size)
			pthread_attr_setstacksize(&attr, s->stack_size);
		r = pthread_create(&t, &attr, conn_thread, c);
		pthread_attr_destroy(&attr);
	}
	if (r != 0) {
		free(c);
		warn(s, "cannot start a connection thread: %s", strerror(r));
		pthread_mutex_lock(&s->lock);
		s->nconn--;
		s->nthreads--;
		pthread_cond_broadcast(&s->cond);
		pthread_mutex_unlock(&s->lock);
		peerserve_reply_and_close(
		    fd, proto_reply_error("%s", s->nothread_error), s->send_ms);
	}
}

static void *accept_loop(void *arg)
{
	struct peerserve *s = arg;
	struct pollfd pfd[2] = { { .fd = s->listen_fd, .events = POLLIN },
				 { .fd = s->stop_pipe[0], .events = POLLIN } };

	for (;;) {
		int n = poll(pfd, 2, -1);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 || pfd[1].revents)
			break;
		if (pfd[0].revents)
			accept_one(s);
	}
	return NULL;
}

static void close_pipe(struct peerserve *s)
{
	for (int i = 0; i < 2; i++)
		if (s->stop_pipe[i] >= 0)
			close(s->stop_pipe[i]);
	s->stop_pipe[0] = s->stop_pipe[1] = -1;
}

int peerserve_start(struct peerserve *s, int listen_fd, char *err,
		    size_t errlen)
{
	sigset_t all, old;
	int r;

	s->listen_fd = listen_fd;
	s->stop_pipe[0] = s->stop_pipe[1] = -1;
	s->running = false;
	s->stopping = false;
	s->nconn = s->nthreads = s->nidle = 0;
	s->qhead = s->qlen = 0;
	s->queue = NULL;
	pthread_mutex_init(&s->lock, NULL);
	pthread_cond_init(&s->cond, NULL);
	pthread_cond_init(&s->idle_cond, NULL);
	if (listen_fd < 0) {
		snprintf(err, errlen, "not listening");
		return -1;
	}
	if (s->conn_max == 0 ||
	    !(s->queue = calloc(s->conn_max, sizeof(*s->queue)))) {
		snprintf(err, errlen, "no room for %u connections",
			 s->conn_max);
		close(s->listen_fd);
		s->listen_fd = -1;
		return -1;
	}
	if (pipe2(s->stop_pipe, O_CLOEXEC) < 0) {
		snprintf(err, errlen, "pipe: %s", strerror(errno));
		goto fail;
	}
	/* Signals stay with the main thread. */
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	r = pthread_create(&s->accept_thread, NULL, accept_loop, s);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (r != 0) {
		snprintf(err, errlen, "cannot start the listener thread: %s",
			 strerror(r));
		goto fail;
	}
	s->running = true;
	return 0;
fail:
	close_pipe(s);
	close(s->listen_fd);
	s->listen_fd = -1;
	free(s->queue);
	s->queue = NULL;
	return -1;
}

bool peerserve_stop(struct peerserve *s, int wait_s)
{
	struct timespec deadline;
	bool gone;

	if (!s->running)
		return true;
	if (write(s->stop_pipe[1], "x", 1) < 0)
		warn(s, "cannot stop the listener: %s", strerror(errno));
	pthread_join(s->accept_thread, NULL);
	s->running = false;
	close(s->listen_fd);
	s->listen_fd = -1;
	close_pipe(s);
	clock_gettime(CLOCK_REALTIME, &deadline);
	deadline.tv_sec += wait_s;
	pthread_mutex_lock(&s->lock);
	/* idle threads end now; busy ones when their connection is done */
	s->stopping = true;
	pthread_cond_broadcast(&s->idle_cond);
	while (s->nthreads > 0)
		if (pthread_cond_timedwait(&s->cond, &s->lock, &deadline) ==
		    ETIMEDOUT)
			break;
	gone = s->nthreads == 0;
	pthread_mutex_unlock(&s->lock);
	if (gone) {
		free(s->queue);
		s->queue = NULL;
	}
	return gone;
}
